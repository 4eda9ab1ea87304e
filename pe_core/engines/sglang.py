"""SGLang 0.5 (rotary code forked from vLLM 0.6.6): one handler per rope type (``TYPES``) and its context length."""

from __future__ import annotations

import math

import torch

from i18n import N_, _
from pe_core.engines.common import (
    Call,
    Computed,
    Engine,
    EngineInput,
    EngineResult,
    _divergence,
    _longrope_inv_freq,
    _pairs_apart,
    _reference,
    _scaled_block,
    _unsupported,
    longrope_scale,
    mla_softmax_scale,
    plain_block,
    reference_computed,
    static_dynamic_inv_freq,
    yarn_inv_freq,
)
from pe_core.layers import LayerKind
from pe_core.rope import yarn_get_mscale

SGLANG_ROPE = "python/sglang/srt/layers/rotary_embedding.py"
# get_context_length's block types whose max_position_embeddings is taken as it is (not × factor).
CONTEXT_KEPT = {"llama3": True}


def sglang_context_length(data: EngineInput) -> int | None:
    """SGLang's ``get_context_length`` (python/sglang/srt/utils/hf_transformers_utils.py): max_position_embeddings
    × rope_scaling's factor, unless the block names original_max_position_embeddings or is llama3."""
    derived = data.max_position_embeddings
    block = _scaled_block(data)
    if derived is None or block is None or plain_block(block):
        return derived
    if "original_max_position_embeddings" in block or CONTEXT_KEPT.get(block.get("rope_type"), False):
        return derived
    return int(float(block.get("factor", 1)) * derived)


def _dynamic(call: Call) -> Computed:
    spec, seq_len = call.spec, call.seq_len
    reference, _factor = _reference(spec, seq_len)
    inv_freq = static_dynamic_inv_freq(spec)
    divergences = ()
    if not torch.allclose(inv_freq, reference, rtol=1e-12, atol=0):
        divergences = (_divergence(
            "sglang.dynamic_static",
            N_("\"Dynamic\" NTK is static, as in vLLM (SGLang's rotary code is vLLM 0.6.6's): one table for s·L "
               "tokens at every length; at {seq_len:,} tokens it differs from transformers on {pairs} of {total} "
               "pairs."),
            SGLANG_ROPE + " (DynamicNTKScalingRotaryEmbedding); sglang #6030",
            seq_len=seq_len, pairs=_pairs_apart(inv_freq, reference), total=spec.num_pairs),)
    return Computed(inv_freq, 1.0, divergences=divergences)


def _yarn(call: Call) -> Computed:
    spec, block = call.spec, call.block
    reference, reference_factor = _reference(spec, call.seq_len)
    inv_freq = yarn_inv_freq(spec, truncate=True)
    if call.data.mla:
        mscale = float(block.get("mscale", 1.0) or 0.0) if "mscale" in block else 1.0
        attention = yarn_get_mscale(spec.factor, mscale) / yarn_get_mscale(spec.factor,
                                                                         float(block.get("mscale_all_dim") or 0))
        source = SGLANG_ROPE + " (DeepseekScalingRotaryEmbedding)"
    else:
        attention = yarn_get_mscale(spec.factor) * float(block.get("attn_factor", 1.0))
        source = SGLANG_ROPE + " (YaRNScalingRotaryEmbedding: reads attn_factor, not attention_factor)"
    divergences = []
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
    return Computed(inv_freq, attention, divergences=tuple(divergences))


def _longrope(call: Call) -> Computed:
    spec, seq_len = call.spec, call.seq_len
    original = spec.original_max_position_embeddings
    long = seq_len - 1 > original  # any position > original in the batch (positions 0 .. seq_len − 1)
    choice = "long" if long else "short"
    rule = _("long factors for the whole batch once any position exceeds original_max_position_embeddings "
             "({original:,}), i.e. from {first:,} tokens").format(original=original, first=original + 2)
    inv_freq = _longrope_inv_freq(spec, long)
    attention = longrope_scale(call.data.max_position_embeddings or 1, original)
    divergences = ()
    if long != (seq_len > original):
        divergences = (_divergence(
            "sglang.longrope_position",
            N_("LongRoPE switches to the long factors when a position exceeds {original:,} (from {first:,} "
               "tokens); transformers switches when the sequence is longer than {original:,} (from {reference:,} "
               "tokens): at {seq_len:,} tokens SGLang still uses the short ones. Any long sequence in a batch "
               "also switches the others."),
            SGLANG_ROPE + " (Phi3LongRoPEScaledRotaryEmbedding.forward)", original=original, first=original + 2,
            reference=original + 1, seq_len=seq_len),)
    return Computed(inv_freq, attention, choice, rule, divergences)


def _unknown(call: Call) -> EngineResult:
    return _unsupported(call.engine, call.kind, call.seq_len, _(
        "SGLang's get_rope raises \"Unknown RoPE scaling type\" for {rope_type!r}.").format(
        rope_type=call.spec.rope_type))


# Rope type -> what SGLang computes for it (a type not named: get_rope refuses it).
TYPES = {"default": reference_computed, "linear": reference_computed, "llama3": reference_computed,
         "dynamic": _dynamic, "yarn": _yarn, "longrope": _longrope}


def sglang_result(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int,
                  context: int | None) -> EngineResult:
    call = Call(engine, data, kind, seq_len, context)
    out = TYPES.get(kind.spec.rope_type, _unknown)(call)
    if isinstance(out, EngineResult):
        return out
    limit = sglang_context_length(data)
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, out.inv_freq, out.attention,
                        mla_softmax_scale(call.block) if data.mla else 1.0, kind.layout, limit,
                        _("context_length: max_position_embeddings × factor unless the block names "
                          "original_max_position_embeddings or is llama3 (--context-length overrides it)"),
                        out.choice, out.rule, tuple(out.divergences))
