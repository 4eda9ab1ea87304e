"""Figures for "Caveats of context extension": dynamic NTK's cached keys, how large NTK's s must be, PI's position
map and the slip g(m) = s·m, and ReRoPE's cost against RoPE."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from figures.frequencies import power_of_two_ticks
from figures.theme import HIGHLIGHT, LEGEND_BELOW, MUTED, keyed, new_figure, series_colour
from figures.values import as_array
from i18n import N_, _

KV_TITLE = N_("Dynamic NTK with cached rotated keys: error of the last query's scores")
KV_KEYS_TITLE = N_("Which cached keys are off, at the longest length")
NTK_ANGLES_TITLE = N_("NTK-aware at L′: each pair's largest angle over its largest trained angle")
NTK_SAFE_TITLE = N_("How far each setting of s really reaches")
PI_TITLE = N_("The position PI feeds the model: g(m) = m/s, not s·m")
COST_TITLE = N_("ReRoPE's FLOPs per layer against RoPE's")


def _vertical(x: float, text: str, *, dash: str = "dash", yref: str = "y domain", xref: str = "x",
              colour: str = MUTED) -> tuple[dict, dict]:
    shape = dict(type="line", xref=xref, yref=yref, x0=x, x1=x, y0=0, y1=1, line=dict(color=colour, width=1, dash=dash))
    label = dict(xref=xref, yref=yref, x=x, y=1.0, text=text, showarrow=False, xanchor="left", yanchor="top",
                 font=dict(size=12, color=colour), xshift=4)
    return shape, label


def _horizontal(y: float, text: str, *, dash: str = "dot", colour: str = MUTED, log_axis: bool = False,
                below: bool = False) -> tuple[dict, dict]:
    shape = dict(type="line", xref="x domain", yref="y", x0=0, x1=1, y0=y, y1=y,
                 line=dict(color=colour, width=1, dash=dash))
    label = dict(xref="x domain", yref="y", x=0.01, y=float(np.log10(y)) if log_axis else y, text=text,
                 showarrow=False, xanchor="left", yanchor="top" if below else "bottom", font=dict(size=12, color=colour))
    return shape, label


def kv_error_figure(lengths: torch.Tensor, expected: torch.Tensor, measured: torch.Tensor, train_length: int,
                    prompt_length: int) -> go.Figure:
    x = as_array(lengths)
    traces = [
        go.Scatter(x=x, y=as_array(expected), name=_("expected (closed form)"), **keyed("dynamic"),
                   hovertemplate=_("length %{x:,}: %{y:.3f}") + "<extra></extra>"),
        go.Scatter(x=x, y=as_array(measured), name=_("measured on random q, k"),
                   **keyed("dynamic", lines=False, markers=True, marker=dict(size=8)),
                   hovertemplate=_("length %{x:,}: %{y:.3f}") + "<extra></extra>"),
        go.Scatter(x=[x[0], x[-1]], y=[0, 0], name=_("keys re-rotated with the current base: 0"), mode="lines",
                   line=dict(color="#000000", width=1.5)),
    ]
    marks = [_vertical(train_length, _("L = {length:,}").format(length=train_length))]
    if prompt_length != train_length:
        marks.append(_vertical(prompt_length, _("prompt {length:,}").format(length=prompt_length), dash="dot"))
    figure = new_figure(_(KV_TITLE))
    figure.add_traces(traces)
    figure.update_layout(height=460, legend=LEGEND_BELOW, margin=dict(b=140), shapes=[s for s, _label in marks],
                         annotations=[label for _shape, label in marks],
                         xaxis=dict(title=dict(text=_("current length ℓ (the query sits at ℓ − 1)"))),
                         yaxis=dict(title=dict(text=_("RMS score error ÷ RMS score")), rangemode="tozero"))
    return figure


def kv_keys_figure(keys: torch.Tensor, error: torch.Tensor, key_base: torch.Tensor, current_base: float,
                   longest: int) -> go.Figure:
    x = as_array(keys)
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.1)
    figure.add_trace(go.Scatter(x=x, y=as_array(error), name=_("expected error of the key's score"), **keyed("dynamic"),
                                hovertemplate=_("key %{x:,}: %{y:.3f}") + "<extra></extra>"), row=1, col=1)
    figure.add_trace(go.Scatter(x=x, y=as_array(key_base), name=_("base the key was rotated with"), mode="lines",
                                line=dict(color=series_colour(1)),
                                hovertemplate=_("key %{x:,}: base %{y:,.0f}") + "<extra></extra>"), row=2, col=1)
    figure.add_trace(go.Scatter(x=[x[0], x[-1]], y=[current_base, current_base], mode="lines",
                                name=_("current base {base:,.0f}").format(base=current_base),
                                line=dict(color=MUTED, dash="dash", width=1.5)), row=2, col=1)
    figure.update_yaxes(title=dict(text=_("error ÷ RMS score")), rangemode="tozero", row=1, col=1)
    figure.update_yaxes(title=dict(text=_("base")), row=2, col=1)
    figure.update_xaxes(title=dict(text=_("key position j (query at {query:,})").format(query=longest - 1)),
                        row=2, col=1)
    figure.update_layout(template="pe_explorer", title=dict(text=_(KV_KEYS_TITLE)), height=520, legend=LEGEND_BELOW,
                         margin=dict(b=140))
    return figure


def ntk_angles_figure(ratios: Sequence[tuple[str, str, torch.Tensor, str | None]], full_turn: torch.Tensor,
                      unseen: torch.Tensor) -> go.Figure:
    """Per pair L′θ′ᵢ/(Lθᵢ) for each setting; pairs that turned fully in training are shaded (nothing is new)."""
    pairs = np.arange(len(as_array(full_turn)))
    turned = np.flatnonzero(as_array(full_turn) > 0)
    shapes = []
    if len(turned):
        shapes.append(dict(type="rect", xref="x", yref="y domain", x0=-0.5, x1=turned.max() + 0.5, y0=0, y1=1,
                           fillcolor="#e6e6e6", opacity=0.6, line=dict(width=0), layer="below"))
    traces = []
    for name, method, values, dash in ratios:
        extra = {"line": dict(dash=dash)} if dash else {}
        traces.append(go.Scatter(x=pairs, y=as_array(values), name=name, **keyed(method, **extra),
                                 hovertemplate=_("pair %{x}: %{y:.4g}") + f"<extra>{name}</extra>"))
    beyond = np.flatnonzero(as_array(unseen) > 0)
    if len(beyond):
        traces.append(go.Scatter(x=beyond, y=as_array(ratios[0][2])[beyond], mode="markers",
                                 name=_("beyond any trained angle"),
                                 marker=dict(symbol="triangle-up", size=10, color=HIGHLIGHT),
                                 hovertemplate=_("pair %{x}: %{y:.4g}") + "<extra></extra>"))
    one, label = _horizontal(1.0, _("1: the largest trained angle"), log_axis=True, below=True)
    annotations = [label]
    if len(turned):
        annotations.append(dict(xref="x", yref="y domain", x=turned.max() / 2, y=0.98, yanchor="top",
                                text=_("full turn in training"), showarrow=False, font=dict(size=12, color=MUTED)))
    values = np.concatenate([as_array(v) for _name, _method, v, _dash in ratios])
    figure = new_figure(_(NTK_ANGLES_TITLE))
    figure.add_traces(traces)
    figure.update_layout(height=480, legend=LEGEND_BELOW, margin=dict(b=150), shapes=shapes + [one],
                         annotations=annotations, xaxis=dict(title=dict(text=_("pair index i"))),
                         yaxis=dict(type="log", title=dict(text=_("L′·θ′ᵢ ÷ (L·θᵢ) (log)")),
                                    **power_of_two_ticks(float(values.min()), float(values.max()))))
    return figure


def ntk_safe_figure(scales: torch.Tensor, ntk_reach: torch.Tensor, ratio: float, needed: float) -> go.Figure:
    x = as_array(scales)
    traces = [
        go.Scatter(x=x, y=x, name=_("PI: reaches exactly s"), **keyed("pi"),
                   hovertemplate=_("s = %{x:.3g}: L′/L = %{y:.3g}") + "<extra></extra>"),
        go.Scatter(x=x, y=as_array(ntk_reach), name=_("NTK-aware: reaches s^(2i₀/(d−2))"), **keyed("ntk"),
                   hovertemplate=_("s = %{x:.3g}: L′/L = %{y:.3g}") + "<extra></extra>"),
        go.Scatter(x=[needed], y=[ratio], mode="markers", name=_("s needed for L′/L = {ratio:g}: {needed:.3g}").format(
            ratio=ratio, needed=needed), marker=dict(symbol="star", size=14, color=HIGHLIGHT)),
    ]
    line, label = _horizontal(ratio, _("real L′/L = {ratio:g}").format(ratio=ratio), log_axis=True)
    reach = as_array(ntk_reach)
    top = float(max(x.max(), reach[np.isfinite(reach)].max(initial=1.0)))
    figure = new_figure(_(NTK_SAFE_TITLE))
    figure.add_traces(traces)
    figure.update_layout(height=460, legend=LEGEND_BELOW, margin=dict(b=140), shapes=[line], annotations=[label],
                         xaxis=dict(type="log", title=dict(text=_("s set in the config (log)")),
                                    **power_of_two_ticks(1.0, float(x.max()))),
                         yaxis=dict(type="log", title=dict(text=_("L′/L reached safely (log)")),
                                    **power_of_two_ticks(1.0, top)))
    return figure


def pi_map_figure(positions: torch.Tensor, interpolated: torch.Tensor, slipped: torch.Tensor, train_length: int,
                  scale: float) -> go.Figure:
    x = as_array(positions)
    traces = [
        go.Scatter(x=x, y=x, name=_("direct: g(m) = m"), **keyed("direct"),
                   hovertemplate=_("m = %{x:,}: g = %{y:,.0f}") + "<extra></extra>"),
        go.Scatter(x=x, y=as_array(interpolated), name=_("PI: g(m) = m/s"), **keyed("pi"),
                   hovertemplate=_("m = %{x:,}: g = %{y:,.1f}") + "<extra></extra>"),
        go.Scatter(x=x, y=as_array(slipped), name=_("the slip: g(m) = s·m"), mode="lines",
                   line=dict(color=HIGHLIGHT, dash="dash"),
                   hovertemplate=_("m = %{x:,}: g = %{y:,.0f}") + "<extra></extra>"),
    ]
    line, label = _horizontal(train_length, _("L = {length:,}: trained positions end here").format(
        length=train_length), log_axis=True)
    label = {**label, "x": 0.99, "xanchor": "right"}
    figure = new_figure(_(PI_TITLE) + f" (s = {scale:g})")
    figure.add_traces(traces)
    figure.update_layout(height=460, legend=LEGEND_BELOW, margin=dict(b=140), shapes=[line], annotations=[label],
                         xaxis=dict(title=dict(text=_("position m in the long sequence"))),
                         yaxis=dict(type="log", title=dict(text=_("position fed to RoPE, g(m) (log)"))))
    return figure


def cost_figure(lengths: torch.Tensor, series: Sequence[tuple[str, torch.Tensor, str, str]], reach: float,
                limits: Sequence[tuple[float, str]]) -> go.Figure:
    """Ratios to RoPE against the length; ``series`` = (name, ratio, colour, dash)."""
    x = as_array(lengths)
    traces = [go.Scatter(x=x, y=as_array(values), name=name, mode="lines", line=dict(color=colour, dash=dash),
                         hovertemplate=_("n = %{x:,}: %{y:.4f}× RoPE") + f"<extra>{name}</extra>")
              for name, values, colour, dash in series]
    shapes, annotations = [], []
    for value, text in limits:
        shape, label = _horizontal(value, text)
        shapes.append(shape)
        annotations.append(label)
    shape, label = _vertical(reach, _("trained with Leaky ReRoPE: plain RoPE up to {reach:,.0f}").format(
        reach=reach), dash="dot")
    shapes.append(shape)
    annotations.append({**label, "x": float(np.log10(reach)), "y": 0.14, "yanchor": "bottom"})
    figure = new_figure(_(COST_TITLE))
    figure.add_traces(traces)
    figure.update_layout(height=480, legend=LEGEND_BELOW, margin=dict(b=160), shapes=shapes, annotations=annotations,
                         xaxis=dict(type="log", title=dict(text=_("sequence length n (log)"))),
                         yaxis=dict(title=dict(text=_("FLOPs ÷ RoPE's FLOPs")), range=[0.95, 1.85]))
    return figure
