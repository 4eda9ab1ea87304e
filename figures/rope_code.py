"""Figures for "RoPE in code": each pair turned by m·θᵢ, the two code forms coordinate by coordinate, and the scores
of the two pairings with and without permuted weights."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from figures.theme import HIGHLIGHT, LEGEND_BELOW, MUTED, keyed, new_figure, series_colour
from figures.values import as_array
from i18n import N_, _

PAIRS_TITLE = N_("Each pair (x₂ᵢ, x₂ᵢ₊₁) turned by m·θᵢ")
FORMS_TITLE = N_("The two code forms, coordinate by coordinate")
PAIRING_TITLE = N_("Attention scores of one query: the pairing must match the weights")
COMPLEX_COLOUR, HALF_COLOUR, DIFFERENCE_COLOUR = series_colour(0), series_colour(1), series_colour(2)
WRONG_COLOUR = HIGHLIGHT  # a porting bug is a warning


def pairs_figure(pairs: Sequence[int], before: np.ndarray, after: np.ndarray, angles: Sequence[float],
                 position: int) -> go.Figure:
    """One small plane per pair: the input pair (grey) and the rotated pair (coloured), with the turn as an arc."""
    count = len(pairs)
    columns = min(4, count)
    rows = math.ceil(count / columns)
    # two short lines (the figure's title names the angle, m·θᵢ): four titles side by side fit a phone's width
    titles = [_("pair {i}<br>{angle:.3g}").format(i=i, angle=a) for i, a in zip(pairs, angles, strict=True)]
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=titles, horizontal_spacing=0.06,
                           vertical_spacing=0.16 if rows > 1 else 0.1)
    figure.update_annotations(font_size=12)
    before, after = as_array(before), as_array(after)
    for k, (start, end, angle) in enumerate(zip(before, after, angles, strict=True)):
        r, c = divmod(k, columns)
        radius = float(np.hypot(*start)) or 1.0
        first = math.atan2(start[1], start[0])
        sweep = np.linspace(first, first + math.fmod(angle, 2 * math.pi), 60)
        legend = k == 0
        figure.add_trace(go.Scatter(x=0.55 * radius * np.cos(sweep), y=0.55 * radius * np.sin(sweep), mode="lines",
                                    line=dict(color=MUTED, width=1, dash="dot"), name=_("turn (mod 2π)"),
                                    legendgroup="arc", showlegend=legend, hoverinfo="skip"), row=r + 1, col=c + 1)
        figure.add_trace(go.Scatter(x=[0, start[0]], y=[0, start[1]], mode="lines+markers", name=_("input pair"),
                                    line=dict(color="#999999", width=2), marker=dict(size=[0, 8], color="#999999"),
                                    legendgroup="in", showlegend=legend,
                                    hovertemplate=_("input (%{x:.4f}, %{y:.4f})") + "<extra></extra>"),
                         row=r + 1, col=c + 1)
        figure.add_trace(go.Scatter(x=[0, end[0]], y=[0, end[1]], mode="lines+markers", name=_("after RoPE"),
                                    line=dict(color=COMPLEX_COLOUR, width=2.5),
                                    marker=dict(size=[0, 9], color=COMPLEX_COLOUR), legendgroup="out",
                                    showlegend=legend,
                                    hovertemplate=_("rotated (%{x:.4f}, %{y:.4f})") + "<extra></extra>"),
                         row=r + 1, col=c + 1)
        limit = 1.15 * radius
        figure.update_xaxes(range=[-limit, limit], showticklabels=False, ticks="", zeroline=True, zerolinecolor="#dddddd",
                            row=r + 1, col=c + 1)
        figure.update_yaxes(range=[-limit, limit], showticklabels=False, ticks="", zeroline=True, zerolinecolor="#dddddd",
                            scaleanchor=f"x{'' if k == 0 else k + 1}", row=r + 1, col=c + 1)
    figure.update_layout(template="pe_explorer", title=dict(text=_(PAIRS_TITLE) + f" (m = {position:,})"),
                         height=130 + 230 * rows, legend=LEGEND_BELOW, margin=dict(t=90, b=90))
    return figure


def forms_figure(complex_out: torch.Tensor, half_out: torch.Tensor, x: torch.Tensor) -> go.Figure:
    """Top: every output coordinate from LLaMA's complex form and from rotate_half (put back in the same order).
    Bottom: their difference, in units of 10⁻¹⁶."""
    coordinates = np.arange(len(as_array(x)))
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.08)
    figure.add_trace(go.Bar(x=coordinates, y=as_array(x), name=_("input x"), marker_color="#cccccc",
                            hovertemplate=_("x[%{x}] = %{y:.17g}") + "<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(x=coordinates, y=as_array(complex_out), name=_("apply_rotary_emb (complex)"),
                                mode="markers", marker=dict(symbol="circle", size=11, color=COMPLEX_COLOUR),
                                hovertemplate=_("coordinate %{x}: %{y:.17g}") + "<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(x=coordinates, y=as_array(half_out), name=_("apply_rotary_pos_emb (rotate_half)"),
                                mode="markers", marker=dict(symbol="x-thin", size=12, color=HALF_COLOUR,
                                                            line=dict(width=2.5, color=HALF_COLOUR)),
                                hovertemplate=_("coordinate %{x}: %{y:.17g}") + "<extra></extra>"), row=1, col=1)
    difference = (as_array(complex_out) - as_array(half_out)) / 1e-16
    figure.add_trace(go.Bar(x=coordinates, y=difference, name=_("difference"), marker_color=DIFFERENCE_COLOUR,
                            hovertemplate=_("coordinate %{x}: %{y:.3g} × 10⁻¹⁶") + "<extra></extra>"), row=2, col=1)
    if not np.abs(difference).max() > 0:
        figure.add_annotation(text=_("every coordinate identical: difference 0"), xref="x2 domain", yref="y2 domain",
                              x=0.5, y=0.5, showarrow=False, font=dict(size=13, color=MUTED))
    figure.update_yaxes(title=dict(text=_("value")), row=1, col=1)
    figure.update_yaxes(title=dict(text=_("difference (× 10⁻¹⁶)")), row=2, col=1,
                        range=[-max(1.0, float(np.abs(difference).max()) * 1.2),
                               max(1.0, float(np.abs(difference).max()) * 1.2)])
    figure.update_xaxes(title=dict(text=_("coordinate (interleaved order: x₀, x₁ form pair 0)")), row=2, col=1,
                        dtick=1 if len(coordinates) <= 32 else None)
    figure.update_layout(template="pe_explorer", title=dict(text=_(FORMS_TITLE)), height=520, legend=LEGEND_BELOW,
                         margin=dict(b=130), barmode="overlay")
    return figure


def pairing_figure(positions: torch.Tensor, interleaved: torch.Tensor, permuted: torch.Tensor,
                   unpermuted: torch.Tensor, query_position: int) -> go.Figure:
    x = as_array(positions)
    traces = [
        go.Scatter(x=x, y=as_array(interleaved), name=_("LLaMA form, weights W"), **keyed("rope", kind="encoding")),
        go.Scatter(x=x, y=as_array(permuted), name=_("rotate_half, rows of W reordered"), mode="markers",
                   marker=dict(symbol="circle-open", size=8, color=HALF_COLOUR, line=dict(width=1.5))),
        go.Scatter(x=x, y=as_array(unpermuted), name=_("rotate_half, same W (porting bug)"), mode="lines",
                   line=dict(color=WRONG_COLOUR, dash="dash")),
    ]
    figure = new_figure(_(PAIRING_TITLE))
    figure.add_traces(traces)
    figure.update_layout(height=460, legend={**LEGEND_BELOW, "y": -0.26}, margin=dict(b=140),
                         xaxis=dict(title=dict(text=_("key position n (query at m = {m})").format(m=query_position))),
                         yaxis=dict(title=dict(text=_("score q·k"))))
    return figure
