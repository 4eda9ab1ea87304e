"""MLX-LM 0.29-0.31: one handler per rope type its ``initialize_rope`` accepts (``TYPES``)."""

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
    _attention_factor_key,
    _divergence,
    _longrope_inv_freq,
    _pairs_apart,
    _reference,
    _unsupported,
    longrope_scale,
    mla_softmax_scale,
    reference_computed,
    yarn_inv_freq,
)
from pe_core.layers import LayerKind
from pe_core.rope import yarn_get_mscale

MLX_ROPE = "mlx_lm/models/rope_utils.py"


def _yarn(call: Call) -> Computed:
    spec, block = call.spec, call.block
    reference, reference_factor = _reference(spec, call.seq_len)
    inv_freq = yarn_inv_freq(spec, truncate=True)
    given = _attention_factor_key(block)
    if given is not None:
        attention = given
    else:
        mscale = float(block["mscale"]) if block.get("mscale") is not None else 1.0
        attention = yarn_get_mscale(spec.factor, mscale) / yarn_get_mscale(
            spec.factor, float(block.get("mscale_all_dim") or 0))
    divergences = []
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
    return Computed(inv_freq, attention, divergences=tuple(divergences))


def _longrope(call: Call) -> Computed:
    spec, seq_len = call.spec, call.seq_len
    inv_freq = _longrope_inv_freq(spec, True)
    attention = longrope_scale(call.data.max_position_embeddings or 1, spec.original_max_position_embeddings)
    divergences = ()
    if seq_len <= spec.original_max_position_embeddings:
        divergences = (_divergence(
            "mlx.longrope_always_long",
            N_("LongRoPE always uses the long factors: at {seq_len:,} tokens (not longer than {original:,}) "
               "transformers uses the short ones."),
            MLX_ROPE + " (SuScaledRoPE)", seq_len=seq_len, original=spec.original_max_position_embeddings),)
    return Computed(inv_freq, attention, "long", _("long factors at every length (SuScaledRoPE keeps only long_factor)"),
                    divergences)


def _refused(call: Call) -> EngineResult:
    return _unsupported(call.engine, call.kind, call.seq_len, _(
        "MLX-LM's initialize_rope raises \"Unsupported RoPE type\" for {rope_type!r}.").format(
        rope_type=call.spec.rope_type))


# Rope type -> what MLX-LM computes for it (a type not named: initialize_rope refuses it).
TYPES = {"default": reference_computed, "linear": reference_computed, "llama3": reference_computed,
         "proportional": reference_computed, "yarn": _yarn, "longrope": _longrope}


def mlx_result(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int, context: int | None) -> EngineResult:
    call = Call(engine, data, kind, seq_len, context)
    out = TYPES.get(kind.spec.rope_type, _refused)(call)
    if isinstance(out, EngineResult):
        return out
    softmax = mla_softmax_scale(call.block) if data.mla else 1.0
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, out.inv_freq, out.attention,
                        softmax, kind.layout, None, _("none enforced (--max-kv-size only bounds the cache)"),
                        out.choice, out.rule, tuple(out.divergences))
