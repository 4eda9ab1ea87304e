"""llama.cpp, through the GGUF keys its converter writes: per rope type (``TYPES``) the keys it writes and the
differences it makes; ggml's ``rope_yarn`` on those keys (``llamacpp_inv_freq``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.engines.common import (
    Call,
    Divergence,
    Engine,
    EngineInput,
    EngineResult,
    _choice,
    _divergence,
    _pairs_apart,
    _reference,
    _unsupported,
    longrope_scale,
    mla_softmax_scale,
)
from pe_core.layers import SLIDING, LayerKind
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies, rope_type_entry

LLAMA_CONVERTER = "convert_hf_to_gguf.py (TextModel.set_gguf_parameters)"
GGML_ROPE = "ggml/src/ggml-cpu/ops.cpp (rope_yarn, ggml_rope_yarn_corr_dims)"
LLAMA_SHARED = "llama.cpp-b5731"
# Architectures whose loader copies the trained frequency scale to the sliding layers (others rotate them unscaled).
_SWA_SCALED = ("gemma2", "gpt_oss", "cohere2")


@dataclass
class _Layer:
    """One kind of layer as llama.cpp computes it, and what it is compared with; the per-type steps fill it in."""

    call: Call
    keys: Mapping
    n_ctx: int
    sliding: bool
    scale_sliding: bool
    inv_freq: torch.Tensor
    attention: float
    choice: str | None
    softmax: float = 1.0
    rule: str | None = None
    reference_inv: torch.Tensor | None = None
    reference_factor: float | None = None
    own: torch.Tensor | None = None  # the θᵢ the sliding layers' own class computes (None: no comparison)
    divergences: list[Divergence] = field(default_factory=list)


def _write_nothing(spec: RopeSpec, block: Mapping, data: EngineInput, keys: dict, tensors: dict) -> None:
    return None


def _write_linear(spec: RopeSpec, block: Mapping, data: EngineInput, keys: dict, tensors: dict) -> None:
    keys.update({"rope.scaling.type": "linear", "rope.scaling.factor": float(spec.factor)})


def _write_yarn(spec: RopeSpec, block: Mapping, data: EngineInput, keys: dict, tensors: dict) -> None:
    keys.update({"rope.scaling.type": "yarn", "rope.scaling.factor": float(spec.factor),
                 "rope.scaling.original_context_length": spec.original_max_position_embeddings,
                 "rope.scaling.yarn_beta_fast": float(spec.beta_fast),
                 "rope.scaling.yarn_beta_slow": float(spec.beta_slow)})
    given = block.get("attention_factor", block.get("attn_factor"))
    if given is not None:
        keys["rope.scaling.yarn_attn_factor"] = float(given)
    if data.mla and block.get("mscale_all_dim") is not None:
        keys["rope.scaling.yarn_log_multiplier"] = 0.1 * float(block["mscale_all_dim"])


def _write_longrope(spec: RopeSpec, block: Mapping, data: EngineInput, keys: dict, tensors: dict) -> None:
    keys.update({"rope.scaling.type": "longrope",
                 "rope.scaling.original_context_length": spec.original_max_position_embeddings,
                 "rope.scaling.attn_factor": longrope_scale(data.max_position_embeddings or 1,
                                                            spec.original_max_position_embeddings)})
    tensors["rope_factors_long"] = list(spec.long_factor)
    tensors["rope_factors_short"] = list(spec.short_factor)


def _write_llama3(spec: RopeSpec, block: Mapping, data: EngineInput, keys: dict, tensors: dict) -> None:
    reference = rope_frequencies(spec).inv_freq
    tensors["rope_freqs"] = (default_inv_freq(spec.base, spec.rotary_dim) / reference).tolist()


def _compare_nothing(layer: _Layer) -> None:
    return None


def _compare_dynamic(layer: _Layer) -> None:
    layer.divergences.append(_divergence(
        "llamacpp.dynamic_dropped",
        N_("\"Dynamic\" NTK is not converted: the GGUF gets no scaling keys, so llama.cpp rotates with the "
           "trained θᵢ at every length (transformers grows the base past L = {original:,})."),
        LLAMA_CONVERTER + " (rope_type == \"dynamic\": nothing written)",
        original=layer.call.spec.original_max_position_embeddings))


def _compare_longrope(layer: _Layer) -> None:
    spec, seq_len, n_ctx = layer.call.spec, layer.call.seq_len, layer.n_ctx
    layer.rule = _("long factors when the context allocated to each sequence (--ctx-size / --parallel = {n_ctx:,}) "
                   "exceeds original_max_position_embeddings ({original:,}), for every sequence").format(
        n_ctx=n_ctx, original=spec.original_max_position_embeddings)
    if layer.choice != ("long" if seq_len > spec.original_max_position_embeddings else "short"):
        layer.divergences.append(_divergence(
            "llamacpp.longrope_by_context",
            N_("LongRoPE's factors follow the allocated context, not the sequence: with --ctx-size {n_ctx:,} "
               "llama.cpp uses the {engine_choice} factors for a {seq_len:,}-token sequence, where transformers "
               "uses the {reference_choice} ones."),
            "src/llama-graph.cpp (build_rope_factors: n_ctx_per_seq > n_ctx_orig_yarn); llama.cpp #24823, "
            "PR #24875", n_ctx=n_ctx, seq_len=seq_len, engine_choice=_choice(layer.choice),
            reference_choice=_choice("long" if seq_len > spec.original_max_position_embeddings else "short")))


def _compare_yarn(layer: _Layer) -> None:
    call = layer.call
    spec, block, data = call.spec, call.block, call.data
    if data.mla:  # deepseek2's graph: cos/sin factor 1, mscale² into kq_scale
        log_mul = float(layer.keys.get("rope.scaling.yarn_log_multiplier", 0.0))
        mscale = 1.0 + log_mul * math.log(spec.factor)
        layer.softmax = mscale * mscale
        layer.attention = 1.0
        ref_inv, ref_factor = _reference(spec, call.seq_len)
        ref_softmax = mla_softmax_scale(block)
        attention, softmax = layer.attention, layer.softmax
        if not math.isclose(attention ** 2 * softmax, ref_factor ** 2 * ref_softmax, rel_tol=1e-6):
            layer.divergences.append(_divergence(
                "llamacpp.mla_scale",
                N_("q·k is scaled by {engine:.5f} in llama.cpp (cos/sin factor 1, softmax × mscale² from "
                   "yarn_log_multiplier = 0.1·mscale_all_dim) and by {reference:.5f} in transformers (cos/sin factor "
                   "{factor:.5f} squared, softmax × {softmax:.5f})."),
                "src/models/deepseek2.cpp (kq_scale, attn_factor); " + LLAMA_CONVERTER + "; llama.cpp PR #17945",
                engine=attention ** 2 * softmax, reference=ref_factor ** 2 * ref_softmax, factor=ref_factor,
                softmax=ref_softmax))
    if not spec.truncate:
        layer.divergences.append(_divergence(
            "llamacpp.yarn_truncate",
            N_("truncate = false has no GGUF key: ggml floors and ceils YaRN's correction range, so {pairs} of "
               "{total} pairs differ from transformers."),
            LLAMA_CONVERTER + "; " + GGML_ROPE, pairs=_pairs_apart(layer.inv_freq, layer.reference_inv),
            total=spec.num_pairs))
    attention, reference_factor = layer.attention, layer.reference_factor
    mismatch = not data.mla and reference_factor is not None \
        and not math.isclose(attention, reference_factor, rel_tol=1e-6)
    if mismatch and block.get("attention_factor") is None:
        layer.divergences.append(_divergence(
            "llamacpp.yarn_mscale_dropped",
            N_("mscale = {mscale} and mscale_all_dim = {mscale_all_dim} have no GGUF key outside DeepSeek's "
               "converter, so ggml's cos/sin factor is 1 + 0.1·ln s = {engine:.5f} where transformers takes "
               "mscale(s, mscale)/mscale(s, mscale_all_dim) = {reference:.5f}."),
            LLAMA_CONVERTER + "; " + GGML_ROPE, mscale=block.get("mscale"), mscale_all_dim=block.get("mscale_all_dim"),
            engine=attention, reference=reference_factor))
    elif mismatch:
        layer.divergences.append(_divergence(
            "llamacpp.yarn_attn_factor",
            N_("The config's attention_factor ({given}) is written as rope.scaling.yarn_attn_factor, and ggml "
               "multiplies it by 1 + 0.1·ln s again: cos/sin factor {engine:.5f} where transformers has "
               "{reference:.5f}."),
            LLAMA_CONVERTER + "; " + GGML_ROPE + "; ik_llama.cpp #1298", given=block.get("attention_factor"),
            engine=attention, reference=reference_factor))
    layer.own = _reference(spec.replace(truncate=True), call.seq_len)[0]


class LlamaType(NamedTuple):
    """How llama.cpp handles one rope type: the GGUF keys its converter writes, and the differences it then makes
    (run after the reference is computed; the yarn step also sets DeepSeek's softmax scale)."""

    write: Callable[[RopeSpec, Mapping, EngineInput, dict, dict], None]
    compare: Callable[[_Layer], None] = _compare_nothing


# Rope type -> llama.cpp's handling (a type not named: this entry does not model it).
TYPES = {"default": LlamaType(_write_nothing), "linear": LlamaType(_write_linear),
         "dynamic": LlamaType(_write_nothing, _compare_dynamic), "yarn": LlamaType(_write_yarn, _compare_yarn),
         "longrope": LlamaType(_write_longrope, _compare_longrope), "llama3": LlamaType(_write_llama3)}


def gguf_keys(data: EngineInput) -> tuple[dict, dict]:
    """The RoPE keys (without the ``{arch}.`` prefix) and tensors llama.cpp's converter writes for this config.

    One block for the model: the default kind's (the layers context extension scales), plus ``rope.freq_base_swa``
    where the sliding layers have their own base. Tensors: ``rope_freqs`` (Llama 3's per-pair divisors),
    ``rope_factors_long`` / ``rope_factors_short`` (LongRoPE)."""
    model = data.model
    kind = model.default_kind
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    keys: dict = {"rope.dimension_count": spec.rotary_dim, "rope.freq_base": float(spec.base)}
    if data.max_position_embeddings is not None:
        keys["context_length"] = data.max_position_embeddings
    tensors: dict = {}
    handling = TYPES.get(spec.rope_type)
    (_write_nothing if handling is None else handling.write)(spec, block, data, keys, tensors)
    sliding = next((k for k in model.rotary_kinds if k.layer_type == SLIDING), None)
    if sliding is not None and sliding.spec.base != spec.base:
        keys["rope.freq_base_swa"] = float(sliding.spec.base)
    if sliding is not None and sliding.spec.rotary_dim != spec.rotary_dim:
        keys["rope.dimension_count_swa"] = sliding.spec.rotary_dim
    return keys, tensors


def llamacpp_inv_freq(keys: Mapping, tensors: Mapping, sliding: bool, scale_sliding: bool, n_ctx_per_seq: int,
                      ) -> tuple[torch.Tensor, float, str | None]:
    """θᵢ and the cos/sin factor llama.cpp computes from GGUF keys: ggml's ``rope_yarn`` (θ_extrap = p·b^(−2i/d) /
    freq_factor, θ_interp = freq_scale·θ_extrap, blended over ``ggml_rope_yarn_corr_dims``' floor/ceil range, cos
    and sin times attn_factor·(1 + 0.1·ln(1/freq_scale)) when YaRN is on). Also the LongRoPE factors chosen."""
    dim = int(keys.get("rope.dimension_count_swa", keys["rope.dimension_count"]) if sliding
              else keys["rope.dimension_count"])
    base = float(keys.get("rope.freq_base_swa", keys["rope.freq_base"]) if sliding else keys["rope.freq_base"])
    kind = keys.get("rope.scaling.type", "none")
    factor = float(keys.get("rope.scaling.factor", 1.0) or 1.0)
    if sliding and not scale_sliding:
        factor = 1.0
    theta = default_inv_freq(base, dim)
    choice = None
    if "rope_freqs" in tensors:
        theta = theta / torch.tensor(tensors["rope_freqs"], dtype=torch.float64)
    if kind == "longrope":
        original = int(keys["rope.scaling.original_context_length"])
        choice = "long" if n_ctx_per_seq > original else "short"
        theta = theta / torch.tensor(tensors[f"rope_factors_{choice}"], dtype=torch.float64)
        return theta, float(keys.get("rope.scaling.attn_factor", 1.0)), choice
    if kind == "linear":
        return theta / factor, 1.0, None
    if kind == "yarn":
        attn_factor = float(keys.get("rope.scaling.yarn_attn_factor", 1.0))
        if factor == 1.0:
            return theta, attn_factor, None
        spec = RopeSpec(head_dim=dim, base=base, rope_type="yarn", factor=factor,
                        original_max_position_embeddings=int(keys["rope.scaling.original_context_length"]),
                        beta_fast=float(keys.get("rope.scaling.yarn_beta_fast", 32.0)),
                        beta_slow=float(keys.get("rope.scaling.yarn_beta_slow", 1.0)), truncate=True)
        blended = rope_frequencies(spec).inv_freq * (theta / default_inv_freq(base, dim))
        return blended, attn_factor * (1 + 0.1 * math.log(factor)), None
    return theta, 1.0, None


def llamacpp_result(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int,
                    context: int | None) -> EngineResult:
    spec = kind.spec
    default = data.model.default_kind
    handling = TYPES.get(spec.rope_type)
    if handling is None or TYPES.get(default.spec.rope_type) is None:
        return _unsupported(engine, kind, seq_len, _("This entry does not model llama.cpp for {rope_type!r}.").format(
            rope_type=default.spec.rope_type))
    keys, tensors = gguf_keys(data)
    n_ctx = context if context is not None else data.max_position_embeddings or seq_len
    sliding = kind.layer_type == SLIDING and kind is not default
    scale_sliding = (data.model_type or "") in _SWA_SCALED
    if engine.name == LLAMA_SHARED:  # before per-layer SWA frequencies: one base and one scale for every layer
        keys = {k: v for k, v in keys.items() if k != "rope.freq_base_swa"}
        scale_sliding = True
    inv_freq, attention, choice = llamacpp_inv_freq(keys, tensors, sliding, scale_sliding, n_ctx)
    layer = _Layer(Call(engine, data, kind, seq_len, context), keys, n_ctx, sliding, scale_sliding, inv_freq,
                   attention, choice)
    if rope_type_entry(spec.rope_type).factor_from != "none" or kind is default or sliding:
        layer.reference_inv, layer.reference_factor = _reference(spec, seq_len)
    layer.own = layer.reference_inv
    handling.compare(layer)
    _compare_sliding(layer)
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, layer.inv_freq,
                        layer.attention, layer.softmax, kind.layout, None,
                        _("none enforced: --ctx-size (default: the GGUF's context_length, {limit}) allocates the cache; "
                          "a longer one only warns").format(limit=keys.get("context_length", "?")),
                        layer.choice, layer.rule, tuple(layer.divergences))


def _compare_sliding(layer: _Layer) -> None:
    """The differences of sliding-window layers, which take the GGUF's one factor and, where the loader shares it,
    its one base and scale."""
    spec, data, keys = layer.call.spec, layer.call.data, layer.keys
    attention, reference_factor, inv_freq = layer.attention, layer.reference_factor, layer.inv_freq
    if layer.sliding and reference_factor is not None and not data.mla \
            and not math.isclose(attention, reference_factor, rel_tol=1e-6):
        layer.divergences.append(_divergence(
            "llamacpp.attn_factor_all_layers",
            N_("llama.cpp multiplies cos and sin by one factor for every layer ({engine:.5f}, from "
               "rope.scaling.yarn_attn_factor); these layers' own class uses {reference:.5f}."),
            "src/llama-context.cpp (cparams.yarn_attn_factor); " + GGML_ROPE, engine=attention,
            reference=reference_factor))
    own = layer.own
    if layer.sliding and own is not None and _pairs_apart(inv_freq, own, 1e-6):
        layer.divergences.append(_divergence(
            "llamacpp.sliding_shared",
            N_("The sliding-window layers take the GGUF's one RoPE block (base {base:g}, scale {scale}) where their own "
               "class has base {reference_base:g} and {reference_type}: {pairs} of {total} pairs differ."),
            "src/llama-model.cpp (rope_freq_base_train_swa, rope_freq_scale_train_swa); llama.cpp #14367",
            base=float(keys.get("rope.freq_base_swa", keys["rope.freq_base"])),
            scale="1" if not layer.scale_sliding else keys.get("rope.scaling.factor", 1),
            reference_base=spec.base, reference_type=spec.rope_type, pairs=_pairs_apart(inv_freq, own, 1e-6),
            total=spec.num_pairs))
