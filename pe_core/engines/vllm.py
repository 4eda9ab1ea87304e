"""vLLM 0.32: one handler per rope type (``TYPES``), its YaRN and DeepSeek paths, and its default max_model_len."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from i18n import N_, _
from pe_core.engines.common import (
    Call,
    Computed,
    Divergence,
    Engine,
    EngineInput,
    EngineResult,
    _attention_factor_key,
    _choice,
    _divergence,
    _longrope_inv_freq,
    _pairs_apart,
    _reference,
    _unsupported,
    fixed_ntk_inv_freq,
    longrope_scale,
    mla_softmax_scale,
    reference_computed,
    vllm_dynamic_inv_freq,
    yarn_inv_freq,
)
from pe_core.layers import LayerKind
from pe_core.rope import RopeSpec, rope_frequencies, yarn_get_mscale

VLLM_ROPE = "vllm/model_executor/layers/rotary_embedding/"

# vLLM's ``_get_and_verify_max_len``, per block rope type: "original" (LongRoPE: original_max_position_embeddings),
# "kept" (max_position_embeddings as it is); every type not named multiplies it by the block's factor.
MAX_LEN_RULES = {"longrope": "original", "su": "kept", "llama3": "kept", "yarn": "kept", "deepseek_yarn": "kept",
                 "deepseek_llama_scaling": "kept"}


def vllm_max_model_len(data: EngineInput) -> int | None:
    """vLLM's default max_model_len (``vllm/config/model.py``, ``_get_and_verify_max_len``): max_position_embeddings,
    times the factor of the last rotary block whose type is not su/longrope/llama3/yarn/deepseek_yarn (YaRN's
    max_position_embeddings is taken as already scaled); Gemma 3's kept as it is; with LongRoPE,
    original_max_position_embeddings (short factors) unless --max-model-len says more."""
    derived = data.max_position_embeddings
    if derived is None:
        return None
    blocks = [data.blocks[kind.layer_type] for kind in data.model.rotary_kinds if kind.layer_type in data.blocks]
    if any(MAX_LEN_RULES.get(block.get("rope_type")) == "original" for block in blocks):
        original = data.text.get("original_max_position_embeddings")
        return int(original) if isinstance(original, int) else derived
    if "gemma3" in (data.model.model_type or "") or "gemma3" in (data.model_type or ""):
        return derived
    factor = 1.0
    for block in blocks:
        if MAX_LEN_RULES.get(block.get("rope_type", "default")) is None:
            factor = float(block.get("factor", factor) or 1.0)
    return int(derived * factor)


def _proportional(call: Call) -> Computed:
    spec = call.spec
    inv_freq, attention = _reference(spec.replace(factor=1.0), call.seq_len)
    divergences = ()
    if spec.factor != 1:
        divergences = (_divergence(
            "vllm.proportional_factor",
            N_("Proportional RoPE's factor ({factor:g}) is not read: vLLM keeps θᵢ = b^(−2i/head_dim)."),
            VLLM_ROPE + "gemma4_rope.py (Gemma4RotaryEmbedding)", factor=spec.factor),)
    return Computed(inv_freq, attention, divergences=divergences)


def _dynamic(call: Call) -> Computed:
    spec, data, seq_len = call.spec, call.data, call.seq_len
    trained = int(call.block.get("max_trained_positions",
                                 data.max_position_embeddings or spec.original_max_position_embeddings))
    inv_freq = vllm_dynamic_inv_freq(spec, data.max_position_embeddings or trained, trained)
    reference, _factor = _reference(spec, seq_len)
    divergences = ()
    if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
        divergences = (_divergence(
            "vllm.dynamic_static",
            N_("\"Dynamic\" NTK is static: vLLM builds one table, at base b·(s·P/T − (s − 1))^(d/(d−2)) with "
               "P = max_position_embeddings ({positions:,}) and T = max_trained_positions ({trained:,}), for every "
               "length; transformers keeps the trained θᵢ up to L = {original:,} and grows the base with the "
               "sequence: at {seq_len:,} tokens they differ on {pairs} of {total} pairs."),
            VLLM_ROPE + "dynamic_ntk_scaling_rope.py (DynamicNTKScalingRotaryEmbedding); vllm #3488, #41236",
            positions=data.max_position_embeddings or trained, trained=trained,
            original=spec.original_max_position_embeddings, seq_len=seq_len,
            pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs),)
    return Computed(inv_freq, 1.0, divergences=divergences)


def _ntk(call: Call) -> Computed:
    spec = call.spec
    inv_freq = fixed_ntk_inv_freq(spec)
    reference = rope_frequencies(spec).inv_freq
    return Computed(inv_freq, 1.0, divergences=(_divergence(
        "vllm.fixed_ntk",
        N_("\"NTK\" is vLLM's fixed NTK, θᵢ = (b·s)^(−2i/d)/s^(2/d), not bloc97's NTK-aware base b·s^(d/(d−2)) "
           "that the app follows: they differ on {pairs} of {total} pairs (both give PI's θ/s on the last)."),
        VLLM_ROPE + "ntk_scaling_rope.py (NTKScalingRotaryEmbedding, mixed_b unset)",
        pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs),))


def _yarn(call: Call) -> Computed:
    inv_freq, attention, divergences = _vllm_yarn(call.spec, call.block, call.data, call.seq_len)
    return Computed(inv_freq, attention, divergences=tuple(divergences))


def _longrope(call: Call) -> Computed:
    spec, data, seq_len, block = call.spec, call.data, call.seq_len, call.block
    limit = call.context if call.context is not None else vllm_max_model_len(data)
    long = limit is not None and limit > spec.original_max_position_embeddings
    choice = "long" if long else "short"
    rule = _("long factors for every sequence when max_model_len ({limit}) exceeds "
             "original_max_position_embeddings ({original:,}), else short").format(
        limit="?" if limit is None else f"{limit:,}", original=spec.original_max_position_embeddings)
    inv_freq = _longrope_inv_freq(spec, long)
    attention = _attention_factor_key(block) or longrope_scale(data.max_position_embeddings or 1,
                                                               spec.original_max_position_embeddings)
    reference_long = seq_len > spec.original_max_position_embeddings
    divergences = ()
    if long != reference_long:
        divergences = (_divergence(
            "vllm.longrope_by_context",
            N_("LongRoPE's factors follow the allocated context, not the sequence: with max_model_len {limit} "
               "vLLM uses the {engine_choice} factors at {seq_len:,} tokens, where transformers uses the "
               "{reference_choice} ones."),
            VLLM_ROPE + "phi3_long_rope_scaled_rope.py (Phi3LongRoPEScaledRotaryEmbedding); vllm PR #27431",
            limit="?" if limit is None else f"{limit:,}", seq_len=seq_len, engine_choice=_choice(choice),
            reference_choice=_choice("long" if reference_long else "short")),)
    return Computed(inv_freq, attention, choice, rule, divergences)


def _not_modelled(call: Call) -> EngineResult:
    return _unsupported(call.engine, call.kind, call.seq_len, _("This entry does not model vLLM's {rope_type!r}.").format(
        rope_type=call.spec.rope_type))


# Rope type -> what vLLM computes for it (a type not named: not modelled).
TYPES = {"default": reference_computed, "linear": reference_computed, "llama3": reference_computed,
         "proportional": _proportional, "dynamic": _dynamic, "ntk": _ntk, "yarn": _yarn, "longrope": _longrope}


def vllm_result(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    call = Call(engine, data, kind, seq_len, context)
    out = TYPES.get(kind.spec.rope_type, _not_modelled)(call)
    if isinstance(out, EngineResult):
        return out
    softmax = mla_softmax_scale(call.block) if data.mla else 1.0
    limit = vllm_max_model_len(data)
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, out.inv_freq, out.attention,
                        softmax, kind.layout, limit, _("max_model_len, derived from the config (--max-model-len "
                                                       "overrides it; a longer request is refused)"),
                        out.choice, out.rule, tuple(out.divergences))


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
