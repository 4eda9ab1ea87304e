"""Figures for "Hybrid models": each pair's wavelength against what a sliding window sees, how each model's layers
split by what they do with position, and Llama 4's attention temperature and what it does to a softmax.

Every function takes values already computed by ``pe_core.hybrid`` (through ``lessons.hybrid``) and only draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import INK, LEGEND_BELOW, MUTED, PALETTE, new_figure, reference_line
from i18n import N_, _

WINDOW_TITLE = N_("Which pairs turn within a sliding window")
ROLES_TITLE = N_("What each model's layers do with position")
TEMPERATURE_TITLE = N_("Llama 4's attention temperature on its layers without RoPE")
NEEDLE_TITLE = N_("One matching key among n: its share of the softmax")

ROLE_COLOURS = {"rope_full": PALETTE[0], "rope_local": PALETTE[5], "nope": PALETTE[1], "linear": "#999999"}


class BaseWavelengths(NamedTuple):
    label: str  # translated legend entry
    wavelengths: torch.Tensor  # per pair, tokens


def window_wavelengths_figure(series: Sequence[BaseWavelengths], farthest: int) -> go.Figure:
    """λᵢ per pair for each base (log axis), with the farthest distance the window sees as a dashed line: the
    pairs above it never complete a turn inside the window."""
    figure = new_figure(
        _(WINDOW_TITLE), legend=LEGEND_BELOW,
        xaxis=dict(title=dict(text=_("rotary pair i"))),
        yaxis=dict(title=dict(text=_("wavelength λᵢ = 2π/θᵢ (tokens), log scale")), type="log",
                   exponentformat="power"),
    )
    for index, item in enumerate(series):
        pairs = np.arange(item.wavelengths.numel())
        figure.add_trace(go.Scatter(
            x=pairs, y=item.wavelengths.numpy(), mode="lines+markers", name=item.label,
            line=dict(color=PALETTE[index], dash=("solid", "dash")[index % 2]),
            marker=dict(color=PALETTE[index], size=5, symbol=("circle", "square")[index % 2]),
            hovertemplate=_("pair %{x}: λ = %{y:,.0f}") + "<extra></extra>", meta={"series": index},
        ))
    shape, label = reference_line(farthest, _("W − 1 = {distance}").format(
        distance=f"{farthest:,}"), dash="dash", log_axis=True, below=True)
    figure.add_shape(shape)
    # under the line at the right, where the slow pairs' wavelengths are all above it: the label hides no point
    figure.add_annotation({**label, "x": 0.99, "xanchor": "right"})
    figure.update_layout(height=480, margin=dict(b=120))
    return figure


class ModelRoles(NamedTuple):
    name: str
    counts: Mapping[str, int]  # role -> layers
    total: int


def layer_roles_figure(models: Sequence[ModelRoles], role_titles: Mapping[str, str], chosen: str | None = None
                       ) -> go.Figure:
    """One bar per model: the share of its layers in each role, the count written in each segment; the ``chosen``
    model's bar outlined and its name in bold (the model the page's text describes)."""
    names = [model.name for model in models]
    outline = [2.5 if name == chosen else 0 for name in names]
    figure = new_figure(
        _(ROLES_TITLE), barmode="stack", legend=LEGEND_BELOW,
        xaxis=dict(title=dict(text=_("share of the model's layers (%)")), range=[0, 100]),
        yaxis=dict(autorange="reversed", showgrid=False, ticks=""),
    )
    for role, title in role_titles.items():
        counts = [model.counts.get(role, 0) for model in models]
        shares = [100 * count / model.total if model.total else 0 for count, model in zip(counts, models, strict=True)]
        figure.add_trace(go.Bar(
            x=shares, y=names, orientation="h", name=title,
            marker=dict(color=ROLE_COLOURS[role], line=dict(color=INK, width=outline)),
            text=[str(count) if count else "" for count in counts], textposition="inside", insidetextanchor="middle",
            customdata=[[count, model.total] for count, model in zip(counts, models, strict=True)],
            hovertemplate="%{y}<br>" + title + ": %{customdata[0]} / %{customdata[1]}<extra></extra>",
            meta={"role": role},
        ))
    figure.update_yaxes(tickmode="array", tickvals=names,
                        ticktext=[f"<b>{name}</b>" if name == chosen else name for name in names])
    figure.update_layout(height=180 + 50 * len(models), margin=dict(l=40, b=140))
    return figure


class Landmark(NamedTuple):
    position: int
    value: float


def temperature_figure(positions: torch.Tensor, scales: torch.Tensor, landmarks: Sequence[Landmark],
                       floor_scale: int) -> go.Figure:
    """The factor on a NoPE layer's queries against the query's position (log axis), a step every floor_scale."""
    figure = new_figure(
        _(TEMPERATURE_TITLE), showlegend=False,
        xaxis=dict(title=dict(text=_("query position m, log scale")), type="log", exponentformat="power"),
        yaxis=dict(title=dict(text=_("factor on the query"))),
    )
    figure.add_trace(go.Scatter(
        x=positions.numpy(), y=scales.numpy(), mode="lines", line=dict(color=PALETTE[1], shape="hv"),
        name=_("factor"), hovertemplate=_("m = %{x:,.0f}: ×%{y:.4f}") + "<extra></extra>"))
    figure.add_trace(go.Scatter(
        x=[mark.position for mark in landmarks], y=[mark.value for mark in landmarks], mode="markers+text",
        marker=dict(color=PALETTE[1], size=8), text=[f"×{mark.value:.3f}" for mark in landmarks],
        textposition="top left", textfont=dict(size=12), hoverinfo="skip", name=_("landmarks")))
    figure.add_vline(x=floor_scale, line=dict(color=MUTED, dash="dot", width=1))
    figure.add_annotation(x=math.log10(floor_scale), y=0.98, yref="paper", xanchor="left", yanchor="top",
                          showarrow=False, text=_("floor_scale = {value}").format(value=f"{floor_scale:,}"),
                          font=dict(size=12, color=MUTED), xshift=4)
    top = float(scales.max())
    figure.update_layout(height=440, yaxis_range=[0.97, top + 0.12 * (top - 0.97) + 0.02])
    return figure


def needle_figure(lengths: torch.Tensor, plain: torch.Tensor, tuned: torch.Tensor, gap: float) -> go.Figure:
    """The softmax weight of one key Δ above the rest, against the number of keys n, without and with the factor."""
    figure = new_figure(
        _(NEEDLE_TITLE), legend=LEGEND_BELOW,
        xaxis=dict(title=dict(text=_("keys attended to, n (log scale)")), type="log", exponentformat="power"),
        yaxis=dict(title=dict(text=_("weight on the matching key")), range=[0, 1.02]),
    )
    figure.add_trace(go.Scatter(
        x=lengths.numpy(), y=plain.numpy(), mode="lines", name=_("plain softmax (logit gap Δ = {gap:g})").format(
            gap=gap), line=dict(color=MUTED, dash="dash"), hovertemplate="n = %{x:,.0f}: %{y:.4f}<extra></extra>"))
    figure.add_trace(go.Scatter(
        x=lengths.numpy(), y=tuned.numpy(), mode="lines", name=_("with Llama 4's factor on the query"),
        line=dict(color=PALETTE[1]), hovertemplate="n = %{x:,.0f}: %{y:.4f}<extra></extra>"))
    figure.update_layout(height=440, margin=dict(b=120))
    return figure
