"""The layer map: a model's layers along one axis, each bar as tall as the tokens that layer can attend to
(its window or chunk, or the whole context), coloured by kind, hollow and hatched where the layer has no
position encoding (NoPE); the kind the page describes is outlined. One legend entry per kind says its span,
base, rotated dimensions and scaling."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go

from figures.theme import GRID, INK, LEGEND_BELOW, MUTED, TEMPLATE_NAME, new_figure, series_colour
from i18n import N_, _

TITLE = N_("Layer map: what each layer attends to, and its RoPE")
COMPARE_TITLE = N_("Layer maps of A and B")


class KindRow(NamedTuple):
    """One kind of layer, in plain values."""

    label: str  # the legend entry: kind, span, base, rotated dims, scaling (or "no position encoding")
    layers: tuple[int, ...]
    reach: int  # tokens a layer of this kind can attend to
    rotary: bool
    chosen: bool  # the kind the page's other figures describe


class ModelLayers(NamedTuple):
    """One model's layer map, in plain values (for the side-by-side figure)."""

    label: str
    kinds: Sequence[KindRow]
    num_layers: int
    context: int


def layer_map_figure(kinds: Sequence[KindRow], *, num_layers: int, context: int, note: str | None = None) -> go.Figure:
    """``note``: why the outlined kind is not the one the reader asked for, under the title."""
    figure = new_figure(_(TITLE) + (f"<br><sup>{note}</sup>" if note else ""))
    _add_bars(figure, kinds)
    _axes(figure, kinds, num_layers=num_layers, context=context)
    figure.update_layout(barmode="overlay", bargap=0.1, showlegend=True, margin=dict(b=110),
                         legend=dict(orientation="h", x=0, xanchor="left", y=-0.28, yanchor="top", font=dict(size=12)))
    return figure


def layer_maps_figure(first: ModelLayers, second: ModelLayers) -> go.Figure:
    """Two layer maps, one above the other, each with its own layer axis."""
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=2, cols=1, subplot_titles=(first.label, second.label), vertical_spacing=0.3)
    figure.update_layout(template=TEMPLATE_NAME, title_text=_(COMPARE_TITLE))
    offset = 0
    for row, model in enumerate((first, second), start=1):
        _add_bars(figure, model.kinds, row=row, group=model.label, first_colour=offset)
        _axes(figure, model.kinds, num_layers=model.num_layers, context=model.context, row=row)
        offset += len(model.kinds)
    figure.update_xaxes(title_text=None, row=1, col=1)  # the lower plot's "layer" names both axes
    figure.update_yaxes(title_text=_("tokens"))
    figure.update_layout(barmode="overlay", bargap=0.1, showlegend=True, height=800, margin=dict(b=230),
                         legend={**LEGEND_BELOW, "font": dict(size=12)})
    return figure


def _add_bars(figure: go.Figure, kinds: Sequence[KindRow], *, row: int | None = None, group: str | None = None,
              first_colour: int = 0) -> None:
    where = {"row": row, "col": 1} if row else {}
    for index, kind in enumerate(kinds, start=first_colour):
        colour = series_colour(index)
        layers = list(kind.layers) or [0]
        figure.add_trace(go.Bar(
            x=layers, y=[kind.reach] * len(layers), name=kind.label,
            marker_color=colour if kind.rotary else "white",
            marker_line=dict(color=INK if kind.chosen else (colour if kind.rotary else MUTED),
                             width=2 if kind.chosen else 1),
            marker_pattern=dict(shape="" if kind.rotary else "/", fgcolor=MUTED, solidity=0.3), width=0.85,
            hovertemplate=_("layer %{x}") + "<br>" + kind.label.replace("%", "%%") + "<extra></extra>",
            meta={"layer_kind": kind.label}, legendgroup=group, legendgrouptitle_text=group,
        ), **where)


def _axes(figure: go.Figure, kinds: Sequence[KindRow], *, num_layers: int, context: int,
          row: int | None = None) -> None:
    where = {"row": row, "col": 1} if row else {}
    reaches = [kind.reach for kind in kinds]
    if num_layers <= 1:  # one RoPE for every layer, or a config without a layer count: no layer numbers to show
        figure.update_xaxes(title_text=_("every layer"), range=[-0.6, 0.6], showticklabels=False, showgrid=False,
                            zeroline=False, **where)
    else:  # whole layer numbers, about eight of them
        step = next(step for step in (1, 2, 5, 10, 20, 50, 100, 1000) if step * 8 >= num_layers)
        figure.update_xaxes(title_text=_("layer"), range=[-0.6, num_layers - 0.4], tick0=0, dtick=step,
                            showgrid=False, zeroline=False, **where)
    figure.update_yaxes(title_text=_("tokens it can attend to"), type="log", gridcolor=GRID, dtick=1,
                        range=[max(0.0, min(_log10(min(reaches)) - 1, 2)), _log10(max(context, *reaches)) + 0.35], **where)


def _log10(value: float) -> float:
    return math.log10(max(value, 1))
