"""Figures for "Multimodal RoPE": which pairs carry time, height and width, the wavelengths each axis gets, and
the three positions of every token of a text + image sequence.

Each function takes values already computed by ``pe_core.mrope`` (through ``lessons.mrope``) and only draws.
An axis keeps one colour on every figure (``AXIS_COLOURS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import LEGEND_BELOW, MUTED, PALETTE, new_figure, translucent
from i18n import N_, _

PAIRS_TITLE = N_("Which pairs rotate by time, height and width")
WAVELENGTHS_TITLE = N_("The wavelengths each axis gets")
SEQUENCE_TITLE = N_("Three positions per token: text, then an image, then text")
GRID_TITLE = N_("The image's tokens: height and width positions")

AXIS_COLOURS = (PALETTE[0], PALETTE[1], PALETTE[2])  # time, height, width
AXIS_SYMBOLS = ("circle", "square", "diamond")
MAX_LABELLED_CELLS = 144  # a grid with more tokens shows no numbers in its cells (they would not fit)


class ModelPairs(NamedTuple):
    """One model's head: the axis of each pair (0 time, 1 height, 2 width) and each pair's wavelength."""

    name: str
    layout: str  # translated: "in blocks" / "alternating"
    axes: tuple[int, ...]
    wavelengths: tuple[float, ...]


def _axis_scale() -> list:
    scale = []
    for index, colour in enumerate(AXIS_COLOURS):
        scale += [(index / 3, colour), ((index + 1) / 3, colour)]
    return scale


def pair_axes_figure(models: Sequence[ModelPairs], axis_titles: Sequence[str]) -> go.Figure:
    """One row per model, one cell per rotary pair (fastest on the left), coloured by the axis it rotates by."""
    width = max(len(model.axes) for model in models)
    z = np.full((len(models), width), np.nan)
    hover = [[""] * width for _ in models]
    for row, model in enumerate(models):
        z[row, : len(model.axes)] = model.axes
        for pair, (axis, wavelength) in enumerate(zip(model.axes, model.wavelengths, strict=True)):
            hover[row][pair] = _("pair {pair} · {axis} · λ = {length}").format(
                pair=pair, axis=axis_titles[axis], length=f"{wavelength:,.1f}")
    rows = [_("{name} ({layout})").format(name=model.name, layout=model.layout) for model in models]
    figure = new_figure(_(PAIRS_TITLE))
    figure.add_trace(go.Heatmap(
        z=z, x=np.arange(width), y=rows, zmin=-0.5, zmax=2.5, colorscale=_axis_scale(), ygap=6,
        text=hover, hovertemplate="%{y}<br>%{text}<extra></extra>",
        colorbar=dict(tickvals=[0, 1, 2], ticktext=list(axis_titles), thickness=14, len=1.0),
    ))
    figure.update_layout(
        height=170 + 70 * len(models), margin=dict(l=40, t=70, b=70),
        xaxis=dict(title=dict(text=_("rotary pair i (θᵢ falls from left to right)")), showgrid=False),
        yaxis=dict(autorange="reversed", showline=False, ticks="", showgrid=False),
    )
    return figure


def axis_wavelengths_figure(models: Sequence[ModelPairs], axis_titles: Sequence[str]) -> go.Figure:
    """Each axis's pairs as points on a log wavelength axis, model by model: the band of wavelengths it can use."""
    figure = new_figure(
        _(WAVELENGTHS_TITLE), legend=LEGEND_BELOW,
        xaxis=dict(title=dict(text=_("wavelength λᵢ = 2π/θᵢ (tokens), log scale")), type="log"),
        yaxis=dict(autorange="reversed", showgrid=False),
    )
    for axis, title in enumerate(axis_titles):
        names, axes, wavelengths = [], [], []
        for model in models:
            for pair_axis, wavelength in zip(model.axes, model.wavelengths, strict=True):
                if pair_axis == axis:
                    names.append(model.name)
                    axes.append(title)
                    wavelengths.append(wavelength)
        figure.add_trace(go.Scatter(
            x=wavelengths, y=[names, axes], mode="markers", name=title,
            marker=dict(color=AXIS_COLOURS[axis], symbol=AXIS_SYMBOLS[axis], size=8,
                        line=dict(width=0.5, color="white")),
            hovertemplate="%{y}<br>λ = %{x:,.1f}<extra></extra>", meta={"axis": axis},
        ))
    figure.update_layout(height=200 + 34 * 3 * len(models), margin=dict(t=80, b=110))
    return figure


def sequence_positions_figure(positions: torch.Tensor, kinds: torch.Tensor, axis_titles: Sequence[str]) -> go.Figure:
    """Position on each axis against the token's place in the sequence; image tokens shaded; the dashed line is
    the position plain (1-D) RoPE would give."""
    index = np.arange(positions.shape[1])
    values = positions.numpy()
    figure = new_figure(
        _(SEQUENCE_TITLE), legend={**LEGEND_BELOW, "traceorder": "reversed"},
        xaxis=dict(title=dict(text=_("token's place in the sequence"))),
        yaxis=dict(title=dict(text=_("position fed to RoPE"))),
    )
    image = kinds.numpy() > 0
    if image.any():
        starts = np.flatnonzero(np.diff(np.concatenate([[0], image.astype(int)])) == 1)
        ends = np.flatnonzero(np.diff(np.concatenate([image.astype(int), [0]])) == -1)
        for start, end in zip(starts, ends, strict=True):
            figure.add_vrect(x0=start - 0.5, x1=end + 0.5, fillcolor=translucent(MUTED, 0.08), line_width=0,
                             layer="below")
    figure.add_trace(go.Scatter(
        x=index, y=index, mode="lines", name=_("plain RoPE: position = place"),
        line=dict(color=MUTED, dash="dash", width=1.4), hovertemplate="%{x} → %{y}<extra></extra>"))
    for axis in (2, 1, 0):  # time drawn last: on text tokens the three coincide and time's marker stays on top
        figure.add_trace(go.Scatter(
            x=index, y=values[axis], mode="markers", name=axis_titles[axis],
            marker=dict(color=AXIS_COLOURS[axis], symbol=AXIS_SYMBOLS[axis], size=7 if axis else 6,
                        line=dict(width=0.5, color="white")),
            hovertemplate=axis_titles[axis] + ": %{y}<br>" + _("token %{x}") + "<extra></extra>",
            meta={"axis": axis}))
    figure.add_annotation(x=float(index[-1]), y=float(values[:, -1].max()), text=_("last: {position}").format(
        position=int(values[:, -1].max())), showarrow=False, xanchor="right", yanchor="bottom", yshift=6,
        font=dict(size=12))
    figure.update_layout(height=460, margin=dict(b=110))
    return figure


def image_grid_figure(height_positions: torch.Tensor, width_positions: torch.Tensor, first_token: int) -> go.Figure:
    """The image's tokens as its grid: each cell shaded by its place in the sequence (darker later: row by row)
    and labelled with its (height, width) positions."""
    rows, columns = height_positions.shape
    order = first_token + np.arange(rows * columns).reshape(rows, columns)
    labels = [[f"{int(h)},{int(w)}" for h, w in zip(hrow, wrow, strict=True)]
              for hrow, wrow in zip(height_positions.tolist(), width_positions.tolist(), strict=True)]
    figure = new_figure(_(GRID_TITLE))
    figure.add_trace(go.Heatmap(
        z=order, x=width_positions[0].numpy(), y=height_positions[:, 0].numpy(), coloraxis="coloraxis", xgap=2,
        ygap=2, text=labels, texttemplate="%{text}" if rows * columns <= MAX_LABELLED_CELLS else None,
        textfont=dict(size=11),
        hovertemplate=_("height %{y}, width %{x}<br>token %{z} of the sequence") + "<extra></extra>",
    ))
    # No colour bar: the shade only orders the cells (the caption says so), and a bar took half a phone's width.
    figure.update_layout(coloraxis=dict(colorscale="Blues", cmin=first_token - 0.25 * rows * columns,
                                        cmax=first_token + rows * columns - 1, showscale=False))
    figure.update_layout(
        height=min(560, 200 + 30 * rows), margin=dict(t=70, b=70),
        xaxis=dict(title=dict(text=_("width position")), showgrid=False, dtick=1 if columns <= 16 else None),
        yaxis=dict(title=dict(text=_("height position")), autorange="reversed", showgrid=False,
                   dtick=1 if rows <= 16 else None),
    )
    return figure
