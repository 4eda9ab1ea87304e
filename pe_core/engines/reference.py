"""transformers: the reference entry, the model's own classes (``pe_core.rope`` computes what they compute)."""

from __future__ import annotations

from i18n import _
from pe_core.engines.common import (
    Call,
    Computed,
    Engine,
    EngineInput,
    EngineResult,
    _unsupported,
    mla_softmax_scale,
    reference_computed,
)
from pe_core.layers import LayerKind


def _missing(call: Call) -> EngineResult:
    return _unsupported(call.engine, call.kind, call.seq_len, _(
        "transformers has no {rope_type!r} rope type; the app computes it from its paper.").format(
        rope_type=call.spec.rope_type))


def _longrope(call: Call) -> Computed:
    spec = call.spec
    computed = reference_computed(call)
    return computed._replace(
        choice="long" if call.seq_len > spec.original_max_position_embeddings else "short",
        rule=_("long factors once the sequence is longer than original_max_position_embeddings ({original:,}), "
               "recomputed as it grows").format(original=spec.original_max_position_embeddings))


# Rope type -> how transformers computes it (every type not named: as ``pe_core.rope`` does, no choice to make).
TYPES = {"ntk": _missing, "ntk_by_parts": _missing, "longrope": _longrope}


def transformers_result(engine: Engine, data: EngineInput, kind: LayerKind, seq_len: int,
                        context: int | None) -> EngineResult:
    call = Call(engine, data, kind, seq_len, context)
    out = TYPES.get(kind.spec.rope_type, reference_computed)(call)
    if isinstance(out, EngineResult):
        return out
    limit = data.max_position_embeddings
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, True, out.inv_freq, out.attention,
                        mla_softmax_scale(call.block) if data.mla else 1.0, kind.layout, None,
                        _("none enforced; max_position_embeddings is {limit}").format(
                            limit="?" if limit is None else f"{limit:,}"),
                        out.choice, out.rule, ())
