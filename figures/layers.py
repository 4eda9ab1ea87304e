"""The layer map: a model's layers along one axis, each bar as tall as the tokens that layer can attend to
(its window or chunk, or the whole context), coloured by kind, hollow and hatched where the layer has no
position encoding (NoPE); the kind the page describes is outlined. One legend entry per kind says its span, base, rotated dimensions and scaling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go

from figures.theme import GRID, INK, MUTED, new_figure, series_colour
from i18n import N_, _

TITLE = N_("Layer map: what each layer attends to, and its RoPE")


class KindRow(NamedTuple):
    """One kind of layer, in plain values."""

    label: str  # the legend entry: kind, span, base, rotated dims, scaling (or "no position encoding")
    layers: tuple[int, ...]
    reach: int  # tokens a layer of this kind can attend to
    rotary: bool
    chosen: bool  # the kind the page's other figures describe


def layer_map_figure(kinds: Sequence[KindRow], *, num_layers: int, context: int) -> go.Figure:
    figure = new_figure(_(TITLE))
    for index, kind in enumerate(kinds):
        colour = series_colour(index)
        layers = list(kind.layers) or [0]
        figure.add_trace(go.Bar(
            x=layers, y=[kind.reach] * len(layers), name=kind.label,
            marker_color=colour if kind.rotary else "white",
            marker_line=dict(color=INK if kind.chosen else (colour if kind.rotary else MUTED),
                             width=2.5 if kind.chosen else 1),
            marker_pattern=dict(shape="" if kind.rotary else "/", fgcolor=MUTED, solidity=0.3), width=0.85,
            hovertemplate=_("layer %{x}") + "<br>" + kind.label.replace("%", "%%") + "<extra></extra>",
            meta={"layer_kind": kind.label},
        ))
    figure.update_layout(
        barmode="overlay", bargap=0.1, showlegend=True,
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.28, yanchor="top", font=dict(size=12)),
        margin=dict(b=110),
    )
    figure.update_xaxes(title_text=_("layer"), range=[-0.6, max(num_layers, 1) - 0.4], showgrid=False,
                        zeroline=False)
    figure.update_yaxes(title_text=_("tokens it can attend to"), type="log", gridcolor=GRID,
                        range=[max(0.0, _log10(min(k.reach for k in kinds)) - 1), _log10(max(context, *(k.reach for k in kinds))) + 0.35])
    return figure


def _log10(value: float) -> float:
    import math

    return math.log10(max(value, 1))
