"""Figures for "Long-range decay": RoFormer's bound, sinusoidal dot products, real q·k against distance.

Every function takes values already computed (``pe_core.decay`` curves, tensors, numbers) and
returns a figure in the project's visual language; ``lessons.decay`` decides what to draw. A
method's bound keeps its colour, dash and marker from the theme; bases, head sizes and random
draws are series; reference lines (levels, L and L′) are muted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures.theme import DASHES, LEGEND_BELOW, MUTED, colour_of, keyed, new_figure, series_colour, translucent
from i18n import N_, _, ngettext
from pe_core.decay import BoundCurve, Curve

BOUND_TITLE = N_("RoFormer's decay bound against relative distance")
METHODS_TITLE = N_("The decay bound under context-extension methods")
SINUSOIDAL_TITLE = N_("Sinusoidal encodings: PE(t)·PE(t+k) against offset k")
SIMILARITY_TITLE = N_("Similarity of positions PE(m)·PE(n)")
PROJECTED_SIMILARITY_TITLE = N_("Through random W<sub>q</sub>, W<sub>k</sub>")
ROPE_SCORES_TITLE = N_("RoPE q·k against distance: fixed and random vectors")
PROJECTED_SCORES_TITLE = N_("Sinusoidal PEs through random W<sub>q</sub>, W<sub>k</sub>: no clean decay")

BAND_ALPHA = 0.16  # a bound's min–max band, in the line's own colour
SPREAD_ALPHA = 0.18  # mean ± 1 s.d. over random draws
MEAN_COLOUR = series_colour(0)
DRAW_COLOURS = (series_colour(8), series_colour(3), series_colour(4), series_colour(5))
BOTTOM_MARGIN = 130  # room for the legend below the plot


class BaseBound(NamedTuple):
    """RoFormer's bound for plain RoPE with one head size and base."""

    head_dim: int
    base: float
    bound: BoundCurve


class MethodBound(NamedTuple):
    """The bound for one method's θ′ (or a model's own RoPE)."""

    method: str  # a theme method key
    title: str  # N_()-marked, or a model's name
    bound: BoundCurve


class ScoreCurves(NamedTuple):
    """Scores against distance, decimated for drawing: a fixed reference, the mean and spread of random draws."""

    reference: Curve  # RoPE with q = k = (1, …, 1), or PE(t)·PE(t+k) without projections
    mean: Curve
    upper: Curve  # mean + 1 s.d.
    lower: Curve  # mean − 1 s.d.
    draws: tuple[Curve, ...]  # the first few draws
    expected: Curve | None = None  # 2ρ Σ cos(rθᵢ), where there is a closed form


class Crossing(NamedTuple):
    """Where the sinusoidal dot product first dips below zero."""

    offset: int
    value: float


def number_text(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def base_label(head_dim: int, base: float, with_head_dim: bool) -> str:
    """A line of the bound chart: 'base 10,000', or 'base 10,000, d = 128' when head sizes differ."""
    if with_head_dim:
        return _("base {base}, d = {d}").format(base=f"{base:,.0f}", d=head_dim)
    return _("base {base}").format(base=f"{base:,.0f}")


def draws_text(count: int) -> str:
    return ngettext("{count} draw", "{count} draws", count).format(count=f"{count:,}")


def _screen(values: torch.Tensor):
    """What the browser receives: float32 is more than a screen (or a hover label) can show, at half the bytes."""
    return values.to(torch.float32).numpy()


def _line(curve: Curve, name: str, **style) -> go.Scatter:
    return go.Scatter(x=_screen(curve.x), y=_screen(curve.y), name=name, **{"mode": "lines", **style})


def _band(x_upper: torch.Tensor, upper: torch.Tensor, x_lower: torch.Tensor, lower: torch.Tensor, name: str,
          colour: str, **style) -> go.Scatter:
    """One filled polygon: the upper edge left to right, then the lower edge back. Its edge has width 0, so
    only the fill shows (on a slide too)."""
    x = torch.cat((x_upper, x_lower.flip(0)))
    y = torch.cat((upper, lower.flip(0)))
    return go.Scatter(x=_screen(x), y=_screen(y), name=name, mode="lines", fill="toself", fillcolor=colour,
                      line=dict(width=0, color=colour), hoverinfo="skip", **style)


class _Mark(NamedTuple):
    """A labelled vertical line: a length (L, L′) or a wavelength (λₘₐₓ)."""

    x: float
    label: str
    colour: str
    dash: str


MARK_STEP = 0.09  # each further mark's label sits this share of the y range lower, so labels never collide


def _vertical_lines(marks: Sequence[_Mark], y_low: float, y_high: float, right_edge: float,
                    log_axis: bool) -> list[go.Scatter]:
    """Vertical lines drawn as traces, so they land right on log axes too (annotations would not). Labels sit at
    the top, each lower than the one to its left; a line in the right fifth of the axis has its label on its left."""
    drawn = []
    for index, mark in enumerate(sorted(marks, key=lambda m: m.x)):
        top = y_high - index * MARK_STEP * (y_high - y_low)
        where = math.log(max(mark.x, 1.0)) / math.log(right_edge) if log_axis else mark.x / right_edge
        left = where > 0.8
        text = f"{mark.label}\u2002" if left else f"\u2002{mark.label}"
        drawn.append(go.Scatter(x=[mark.x, mark.x], y=[y_low, top], mode="lines+text", text=["", text],
                                textposition="bottom left" if left else "bottom right",
                                textfont=dict(size=12, color=mark.colour),
                                line=dict(color=mark.colour, dash=mark.dash, width=1.3), showlegend=False,
                                hoverinfo="skip", name=mark.label))
    return drawn


def _horizontal_line(y: float, dash: str = "dot") -> dict:
    """A full-width reference line as a layout shape (plotly's add_hline costs tens of ms per call)."""
    return dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=y, y1=y, layer="below",
                line=dict(color=MUTED, dash=dash, width=1.2))


def _distance_axis(log_axis: bool) -> dict:
    if log_axis:
        return dict(title=_("relative distance r = m − n (tokens) · log scale"), type="log", exponentformat="power",
                    dtick=1)
    return dict(title=_("relative distance r = m − n (tokens)"))


# --- RoFormer's bound ---------------------------------------------------------------------------


class _Drawn(NamedTuple):
    name: str
    bound: BoundCurve
    look: dict  # trace keyword arguments for the line (colour, dash, and the key in meta for a method)
    colour: str


def _bound_traces(lines: Sequence[_Drawn], log_axis: bool, lengths: Sequence[_Mark] = ()) -> list[go.Scatter]:
    y_high = max(float(line.bound.curve.high.max()) for line in lines)
    y_low = min(float(line.bound.curve.low.min()) for line in lines)
    drawn: list[go.Scatter] = []
    marks = list(lengths)
    for name, bound, look, colour in lines:
        curve = bound.curve
        if bool((curve.high > curve.low).any()):
            drawn.append(_band(curve.x, curve.high, curve.x, curve.low, _("{name}: min–max").format(name=name),
                               translucent(colour, BAND_ALPHA), legendgroup=name, showlegend=False))
        drawn.append(go.Scatter(x=_screen(curve.x), y=_screen(curve.mean), name=name, legendgroup=name,
                                **{"mode": "lines", **look}))
        if bound.first_at_level is not None and (bound.first_at_level > 0 or not log_axis):
            drawn.append(go.Scatter(
                x=[bound.first_at_level], y=[bound.level], mode="markers", legendgroup=name, showlegend=False,
                name=_("{name}: reaches the level").format(name=name),
                marker=dict(symbol="circle-open", size=13, color=colour, line=dict(width=2.5)),
                hovertemplate=name + "<br>" + _("first at the random-phase level: r = %{x:,.0f}") + "<extra></extra>",
            ))
        if bound.longest_wavelength <= bound.max_distance:
            marks.append(_Mark(bound.longest_wavelength,
                               _("λₘₐₓ = {value}").format(value=number_text(bound.longest_wavelength)), colour, "dot"))
    right_edge = max(line.bound.max_distance for line in lines)
    return drawn + _vertical_lines(marks, y_low, y_high, right_edge, log_axis)


def _level_marks(lines: Sequence[_Drawn]) -> tuple[list[dict], list[dict]]:
    """The random-phase level of each head size: a dotted line and its label (paper x, so log axes are fine)."""
    levels = sorted({round(line.bound.level, 9) for line in lines})
    shapes = [_horizontal_line(level) for level in levels]
    annotations = [dict(xref="paper", x=0.005, xanchor="left", yref="y", y=level,
                        yanchor="top" if index == 0 else "bottom", showarrow=False, font=dict(size=12, color=MUTED),
                        bgcolor="rgba(255, 255, 255, 0.8)",
                        text=_("random-phase level {level:.2f}").format(level=level))
                   for index, level in enumerate(levels)]
    return shapes, annotations


def _bound_figure(lines: Sequence[_Drawn], *, log_axis: bool, title: str, lengths: Sequence[_Mark] = ()) -> go.Figure:
    shapes, annotations = _level_marks(lines)
    figure = new_figure(
        title,
        xaxis=_distance_axis(log_axis),
        yaxis_title=_("bound (1/N) Σⱼ |Sⱼ(r)|"),
        legend=LEGEND_BELOW, margin=dict(b=BOTTOM_MARGIN),
        height=520,
        shapes=shapes,
        annotations=annotations,
    )
    if lines:
        figure.add_traces(_bound_traces(lines, log_axis, lengths))
    return figure


def decay_bound_figure(lines: Sequence[BaseBound], *, log_axis: bool = True) -> go.Figure:
    """The bound (1/N)Σ|Sⱼ| against r for plain RoPE: one colour per base, one dash per head size, with the
    random-phase level and where each curve first reaches it."""
    bases = list(dict.fromkeys(line.base for line in lines))
    head_dims = list(dict.fromkeys(line.head_dim for line in lines))
    drawn = []
    for line in lines:
        colour = series_colour(bases.index(line.base))
        dash = DASHES[head_dims.index(line.head_dim) % len(DASHES)]
        drawn.append(_Drawn(base_label(line.head_dim, line.base, len(head_dims) > 1), line.bound,
                            {"line": {"color": colour, "dash": dash}}, colour))
    return _bound_figure(drawn, log_axis=log_axis, title=_(BOUND_TITLE))


def methods_bound_figure(lines: Sequence[MethodBound], *, train_length: int, target_length: int, head_dim: int,
                         base: float, log_axis: bool = True) -> go.Figure:
    """The bound for each method's θ′, in the method's own look, with the training length L and the target L′."""
    details = _("d = {d}, base {base}, L = {L}, s = {s}").format(
        d=head_dim, base=f"{base:,.0f}", L=f"{train_length:,}", s=f"{target_length / train_length:g}")
    drawn = [_Drawn(_(line.title), line.bound, keyed(line.method), colour_of(line.method)) for line in lines]
    lengths = [_Mark(train_length, _("L = {L}").format(L=f"{train_length:,}"), MUTED, "dash"),
               _Mark(target_length, _("L′ = {target}").format(target=f"{target_length:,}"), MUTED, "dash")]
    if target_length == train_length:
        lengths = [_Mark(train_length, _("L = L′ = {L}").format(L=f"{train_length:,}"), MUTED, "dash")]
    return _bound_figure(drawn, log_axis=log_axis, title=f"{_(METHODS_TITLE)}<br><sup>{details}</sup>",
                         lengths=lengths)


# --- sinusoidal encodings -----------------------------------------------------------------------


def sinusoidal_dot_figure(curve: Curve, *, d_model: int, base: float, crossing: Crossing | None) -> go.Figure:
    """Σ cos(k ωᵢ) against k ∈ [−K, K]: d/2 at 0, symmetric, oscillating; where it first dips below zero."""
    details = _("d = {d}, base {base}").format(d=d_model, base=f"{base:,.0f}")
    annotations = [dict(x=0, y=d_model / 2, text=_("k = 0: d/2 = {half}").format(half=d_model // 2), showarrow=True,
                        ax=30, ay=12, xanchor="left")]
    shown = len(curve.x) > 0 and crossing is not None and crossing.offset <= float(curve.x[-1])
    if shown:
        annotations.append(dict(x=crossing.offset, y=crossing.value, showarrow=True, ax=0, ay=40,
                                text=_("first below zero: k = {k}").format(k=f"{crossing.offset:,}")))
    elif crossing is not None:
        details = _("d = {d}, base {base} · first below zero at k = {k}, beyond this range").format(
            d=d_model, base=f"{base:,.0f}", k=f"{crossing.offset:,}")
    figure = new_figure(
        f"{_(SINUSOIDAL_TITLE)}<br><sup>{details}</sup>",
        xaxis_title=_("offset k (tokens)"),
        yaxis_title="PE(t)·PE(t+k) = Σᵢ cos(k ωᵢ)",
        showlegend=False,
        height=420,
        shapes=[_horizontal_line(0.0, dash="solid")],
        annotations=annotations,
    )
    # One dense, oscillating curve alone on its chart: drawn solid (a dash-dot breaks it up), in the key's colour.
    figure.add_trace(_line(curve, "PE(t)·PE(t+k)", **keyed("sinusoidal", "encoding", line=dict(dash="solid"))))
    return figure


def similarity_figure(matrix: torch.Tensor, *, title: str, colour_title: str) -> go.Figure:
    """An N × N heatmap of position-to-position scores, centred on 0 (blue +, red −)."""
    size = matrix.shape[0]
    limit = float(matrix.abs().max())
    figure = new_figure(title, height=520, width=620,
                        xaxis=dict(title=_("key position n"), range=[-0.5, size - 0.5], constrain="domain"),
                        yaxis=dict(title=_("query position m"), autorange="reversed", scaleanchor="x",
                                   constrain="domain"))
    figure.add_trace(go.Heatmap(z=_screen(matrix), x0=0, dx=1, y0=0, dy=1, colorscale="RdBu", zmin=-limit,
                                zmax=limit, colorbar=dict(title=dict(text=colour_title, side="right"))))
    return figure


# --- real q·k scores ----------------------------------------------------------------------------


def _spread(curves: ScoreCurves, name: str) -> go.Scatter:
    upper, lower = curves.upper, curves.lower
    return _band(upper.x, upper.y, lower.x, lower.y, name, translucent(MEAN_COLOUR, SPREAD_ALPHA))


def rope_scores_figure(curves: ScoreCurves, *, correlation: float, draws: int, head_dim: int,
                       base: float) -> go.Figure:
    """(a) q = k = 1, (b) random q, k with correlation ρ: mean ± one standard deviation over draws, and one draw."""
    details = _("d = {d}, base {base}").format(d=head_dim, base=f"{base:,.0f}")
    figure = new_figure(
        f"{_(ROPE_SCORES_TITLE)}<br><sup>{details}</sup>",
        xaxis_title=_("relative distance r = m − n (tokens)"),
        yaxis_title=_("score (R<sub>m</sub>q)·(R<sub>n</sub>k)"),
        legend=LEGEND_BELOW, margin=dict(b=BOTTOM_MARGIN),
        height=540,
        shapes=[_horizontal_line(0.0, dash="solid")],
    )
    drawn = [_spread(curves, _("(b) mean ± 1 s.d. over {draws}").format(draws=draws_text(draws)))]
    if curves.draws:
        drawn.append(_line(curves.draws[0], _("(b) a single draw"), line=dict(color=DRAW_COLOURS[0], width=1)))
    drawn.append(_line(curves.reference, _("(a) q = k = (1, …, 1)"), **keyed("rope", "encoding")))
    drawn.append(_line(curves.mean, _("(b) mean over draws, ρ = {rho}").format(rho=f"{correlation:g}"),
                       line=dict(color=MEAN_COLOUR)))
    if curves.expected is not None:
        drawn.append(_line(curves.expected, _("expected 2ρ Σ cos(rθᵢ), ρ = {rho}").format(rho=f"{correlation:g}"),
                           line=dict(color=MUTED, dash="dash", width=1.5)))
    figure.add_traces(drawn)
    return figure


def projected_scores_figure(curves: ScoreCurves, *, draws: int, d_model: int, base: float,
                            head_width: int) -> go.Figure:
    """(c) (W_q PE(t))·(W_k PE(t+k)): a few draws, the mean and spread over all draws, and PE·PE for reference."""
    details = _("d = {d}, base {base}, head width {width}").format(d=d_model, base=f"{base:,.0f}", width=head_width)
    figure = new_figure(
        f"{_(PROJECTED_SCORES_TITLE)}<br><sup>{details}</sup>",
        xaxis_title=_("offset k of the key from the query (tokens)"),
        yaxis_title=_("score (W<sub>q</sub>PE(t))·(W<sub>k</sub>PE(t+k))"),
        legend=LEGEND_BELOW, margin=dict(b=BOTTOM_MARGIN),
        height=540,
    )
    drawn = [_spread(curves, _("mean ± 1 s.d. over {draws}").format(draws=draws_text(draws)))]
    for index, curve in enumerate(curves.draws):
        drawn.append(_line(curve, _("draw {number}").format(number=index + 1),
                           line=dict(color=DRAW_COLOURS[(index + 1) % len(DRAW_COLOURS)], width=1.2)))
    drawn.append(_line(curves.mean, _("mean over draws"), line=dict(color=MEAN_COLOUR, width=2.5)))
    drawn.append(_line(curves.reference, _("no projection: PE(t)·PE(t+k)"),
                       **keyed("sinusoidal", "encoding", width=1.5)))
    figure.add_traces(drawn)
    return figure
