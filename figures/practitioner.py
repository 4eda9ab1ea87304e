"""Figures for the practitioner pages: checking an implementation, planning an extension, comparing two configs.

Plain values in, ``go.Figure`` out. The reference (transformers' θᵢ, model A) is drawn in the
"model" key's style; the user's numbers (or model B) in a distinct dotted style; where they part,
``HIGHLIGHT``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.frequencies import power_of_two_ticks
from figures.theme import (
    HIGHLIGHT,
    LEGEND_BELOW,
    MUTED,
    colour_of,
    keyed,
    new_figure,
    reference_line,
    series_colour,
    translucent,
)
from figures.values import as_array
from i18n import N_, _

CHECK_THETA_TITLE = N_("Expected θᵢ and yours")
CHECK_ERROR_TITLE = N_("Relative error of your θᵢ, entry by entry")
PLAN_RATIO_TITLE = N_("What each method does to θᵢ: θ′ᵢ / θᵢ per pair")
PLAN_UNSEEN_TITLE = N_("Unseen at L′: share of pairs and of rotation angles")
PLAN_SIMILARITY_TITLE = N_("Men et al.'s criterion: Σᵢ cos(m·θ′ᵢ) must stay ≥ 0 up to L′")
PLAN_BASES_TITLE = N_("Bases against context length: the lower bound b*, NTK, dynamic NTK and ABF")
COMPARE_WAVELENGTH_TITLE = N_("Wavelength λᵢ per pair, model A and model B")
COMPARE_RATIO_TITLE = N_("θᵢ of B / θᵢ of A, pair by pair")

YOURS = dict(color=series_colour(0), dash="dot")
YOURS_MARKER = dict(color=series_colour(0), symbol="x", size=7)
ERROR_FLOOR = 1e-18  # exact agreement drawn at the bottom of the log axis


def _assemble(title: str, traces: list, layout: dict) -> go.Figure:
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


def _length(value: float) -> str:
    return f"{value:,.0f}"


def _entry_axis(per_dimension: bool) -> str:
    return _("dimension j (in your code's order)") if per_dimension else _("pair index i")


def check_theta_figure(*, expected, given, ok: Sequence[bool], per_dimension: bool, first_part: int | None,
                       verdict: str, seq_len: int | None, attention: tuple[float, float | None, bool | None]
                       ) -> go.Figure:
    """Expected θ (transformers, float64) and the user's, per entry, on a log axis; parted entries ringed."""
    expected, given = as_array(expected), as_array(given)
    index = np.arange(len(given))
    entry = _("dimension %{x}") if per_dimension else _("pair %{x}")
    traces = [
        go.Scatter(x=index[: len(expected)], y=expected, name=_("expected (transformers)"),
                   hovertemplate=entry + "<br>" + _("expected θ = %{y:.9g}") + "<extra></extra>",
                   **keyed("model", markers=True)),
        go.Scatter(x=index, y=given, name=_("yours"), mode="lines+markers", line=YOURS, marker=YOURS_MARKER,
                   hovertemplate=entry + "<br>" + _("your θ = %{y:.9g}") + "<extra></extra>"),
    ]
    parted = np.flatnonzero(~np.asarray(ok, dtype=bool))
    annotations = []
    if len(parted):
        traces.append(go.Scatter(
            x=parted, y=given[parted], mode="markers", name=_("beyond float32 tolerance"),
            marker=dict(symbol="circle-open", size=13, color=HIGHLIGHT, line=dict(width=2)),
            hovertemplate=entry + "<br>" + _("your θ = %{y:.9g}") + "<extra></extra>"))
    if first_part is not None and given[first_part] > 0:
        annotations.append(dict(x=first_part, y=math.log10(given[first_part]), text=_("the curves part here"),
                                showarrow=True, arrowhead=2, arrowcolor=HIGHLIGHT, ax=40, ay=-40,
                                font=dict(color=HIGHLIGHT, size=13)))
    expected_af, given_af, attention_ok = attention
    if given_af is None:
        note = _("attention factor: expected {expected:.6g} (yours not given)").format(expected=expected_af)
    else:
        mark = "✓" if attention_ok else "✗"
        note = _("attention factor: expected {expected:.6g}, yours {given:.6g} {mark}").format(
            expected=expected_af, given=given_af, mark=mark)
    annotations.append(dict(xref="paper", yref="paper", x=1, y=1.02, xanchor="right", yanchor="bottom", text=note,
                            showarrow=False, font=dict(size=12, color=MUTED if attention_ok is not False else HIGHLIGHT)))
    outcome = _("match") if verdict == "match" else _("mismatch")
    title = _("{title}: {outcome}").format(title=_(CHECK_THETA_TITLE), outcome=outcome)
    if seq_len is not None:
        title += " · " + _("length {length}").format(length=_length(seq_len))
    return _assemble(title, traces, dict(
        height=480, legend=LEGEND_BELOW, margin=dict(t=90, b=150), annotations=annotations,
        xaxis=dict(title=dict(text=_entry_axis(per_dimension))),
        yaxis=dict(type="log", title=dict(text=_("θ (rad/token, log)")), exponentformat="power"),
    ))


def check_error_figure(*, errors: Sequence[float | None], tolerances: Sequence[float], ok: Sequence[bool],
                       per_dimension: bool) -> go.Figure:
    """|yours − expected| / expected per entry (log), with the float32 tolerance as a dashed line."""
    index = np.arange(len(errors))
    known = np.array([e is not None for e in errors])
    error = np.array([max(e, ERROR_FLOOR) if e is not None else np.nan for e in errors], dtype=np.float64)
    tolerance = as_array(tolerances)
    good = np.asarray(ok, dtype=bool) & known
    bad = ~np.asarray(ok, dtype=bool) & known
    entry = _("dimension %{x}") if per_dimension else _("pair %{x}")
    traces = [
        go.Scatter(x=index, y=tolerance, mode="lines", name=_("float32 tolerance 8·ε₃₂·(1 + |ln θ|)"),
                   line=dict(color=MUTED, dash="dash", width=1.5), hovertemplate=entry + "<br>%{y:.2e}<extra></extra>"),
        go.Scatter(x=index[good], y=error[good], mode="markers", name=_("within tolerance"),
                   marker=dict(color=series_colour(0), symbol="circle", size=6),
                   hovertemplate=entry + "<br>" + _("relative error %{y:.2e}") + "<extra></extra>"),
        go.Scatter(x=index[bad], y=error[bad], mode="markers", name=_("beyond tolerance"),
                   marker=dict(color=HIGHLIGHT, symbol="diamond", size=8),
                   hovertemplate=entry + "<br>" + _("relative error %{y:.2e}") + "<extra></extra>"),
    ]
    return _assemble(_(CHECK_ERROR_TITLE), traces, dict(
        height=420, legend=LEGEND_BELOW, margin=dict(b=150),
        xaxis=dict(title=dict(text=_entry_axis(per_dimension))),
        yaxis=dict(type="log", title=dict(text=_("relative error (log)")), exponentformat="power"),
    ))


# ---- plan ----------------------------------------------------------------------------------------


def plan_ratio_figure(methods: Sequence[tuple[str, str, torch.Tensor]], *, scale: float) -> go.Figure:
    """θ′ᵢ/θᵢ per pair for each method (key, title, ratio): 1 keeps a pair, 1/s interpolates it."""
    traces = []
    lowest, highest = 1 / scale, 1.0
    for key, title, ratio in methods:
        values = as_array(ratio)
        finite = values[np.isfinite(values) & (values > 0)]
        if finite.size:
            lowest, highest = min(lowest, float(finite.min())), max(highest, float(finite.max()))
        name = _(title)
        traces.append(go.Scatter(x=np.arange(len(values)), y=values, name=name,
                                 hovertemplate=name + "<br>" + _("pair %{x}") + ": θ′/θ = %{y:.4g}<extra></extra>",
                                 **keyed(key)))
    lines = [reference_line(1.0, _("1: θ kept"), dash="dash", log_axis=True),
             reference_line(1 / scale, _("1/s = 1/{scale}: interpolated").format(scale=f"{scale:g}"), dash="dot",
                             log_axis=True, below=True)]
    return _assemble(_(PLAN_RATIO_TITLE), traces, dict(
        height=460, legend=LEGEND_BELOW, margin=dict(b=150), shapes=[s for s, _l in lines],
        annotations=[label for _s, label in lines], xaxis=dict(title=dict(text=_("pair index i"))),
        yaxis=dict(type="log", title=dict(text=_("θ′ᵢ / θᵢ (log)")), **power_of_two_ticks(lowest, highest)),
    ))


def plan_unseen_figure(methods: Sequence[tuple[str, str, float, float]], *, train_length: int,
                       target: int) -> go.Figure:
    """Two bars per method (key, title, share of pairs, share of angles) unseen at L′."""
    categories = [_("pairs with unseen angles"), _("(position, pair) angles unseen")]
    traces = []
    for key, title, pairs, angles in methods:
        name = _(title)
        traces.append(go.Bar(x=categories, y=[100 * pairs, 100 * angles], name=name,
                             marker=dict(color=colour_of(key)), meta={"method": key},
                             text=[f"{100 * pairs:.0f}%", f"{100 * angles:.1f}%"], textposition="outside",
                             textfont=dict(size=11),
                             hovertemplate=name + "<br>%{x}: %{y:.2f}%<extra></extra>"))
    title = _(PLAN_UNSEEN_TITLE) + f" (L = {_length(train_length)} → L′ = {_length(target)})"
    return _assemble(title, traces, dict(
        height=440, barmode="group", legend=LEGEND_BELOW, margin=dict(b=150),
        yaxis=dict(title=dict(text=_("share unseen (%)")), rangemode="tozero"),
    ))


def plan_similarity_figure(methods: Sequence[tuple[str, str, torch.Tensor, torch.Tensor]], *, pairs: int,
                           train_length: int, target: int) -> go.Figure:
    """Per method (key, title, bin starts, bin minima of Σᵢ cos(m·θ′ᵢ)): the lowest value in each bin of distances."""
    traces = []
    lowest = 0.0
    for key, title, starts, minima in methods:
        values = as_array(minima) / pairs
        lowest = min(lowest, float(np.nanmin(values)) if values.size else 0.0)
        name = _(title)
        traces.append(go.Scatter(x=as_array(starts), y=values, name=name,
                                 hovertemplate=name + "<br>m ≥ %{x:,}: " + _("lowest %{y:.3f}") + "<extra></extra>",
                                 **keyed(key)))
    shapes = [dict(type="rect", xref="x domain", yref="y", x0=0, x1=1, y0=min(lowest * 1.1, -0.05), y1=0,
                   fillcolor=translucent(HIGHLIGHT, 0.08), line=dict(width=0), layer="below"),
              dict(type="line", xref="x domain", x0=0, x1=1, y0=0, y1=0, line=dict(color=MUTED, width=1)),
              dict(type="line", yref="y domain", x0=train_length, x1=train_length, y0=0, y1=1,
                   line=dict(color=MUTED, width=1, dash="dash"))]
    annotations = [dict(x=train_length, yref="y domain", y=1, text=f"L = {_length(train_length)}", showarrow=False,
                        xanchor="left", yanchor="top", font=dict(size=12)),
                   dict(xref="x domain", x=0.99, y=min(lowest * 1.1, -0.05) / 2, xanchor="right",
                        text=_("below 0: similar keys lose to random ones"), showarrow=False,
                        font=dict(size=12, color=HIGHLIGHT))]
    return _assemble(_(PLAN_SIMILARITY_TITLE), traces, dict(
        height=460, legend=LEGEND_BELOW, margin=dict(b=150), shapes=shapes, annotations=annotations,
        xaxis=dict(title=dict(text=_("relative distance m (each point: the lowest value over a bin)")),
                   range=[0, target]),
        yaxis=dict(title=dict(text=_("Σᵢ cos(m·θ′ᵢ) / (d/2)"))),
    ))


def plan_bases_figure(*, lengths: Sequence[int], bounds: Sequence[float | None], base: float,
                      methods: Sequence[tuple[str, str, Sequence[int], Sequence[float]]], train_length: int,
                      target: int) -> go.Figure:
    """b*(l) against l (log-log) with each method's base: constant lines, or a curve for dynamic NTK."""
    traces = []
    known = [(length, bound) for length, bound in zip(lengths, bounds, strict=True)
             if bound is not None and math.isfinite(bound)]
    if known:
        traces.append(go.Scatter(x=[k for k, _b in known], y=[b for _k, b in known], mode="lines+markers",
                                 name=_("lower bound b*(l), Men et al. 2024"),
                                 line=dict(color=HIGHLIGHT, dash="dash", width=2),
                                 marker=dict(color=HIGHLIGHT, symbol="triangle-up", size=9),
                                 hovertemplate="l = %{x:,}<br>b* ≈ %{y:.3g}<extra></extra>"))
    for key, title, xs, ys in methods:
        name = _("the model's base, {base}").format(base=f"{base:,.0f}") if key == "direct" else _(title)
        traces.append(go.Scatter(x=list(xs), y=list(ys), name=name,
                                 hovertemplate=name + "<br>l = %{x:,}<br>" + _("base %{y:.4g}") + "<extra></extra>",
                                 **keyed(key, markers=True)))
    shapes = [dict(type="line", yref="y domain", x0=length, x1=length, y0=0, y1=1,
                   line=dict(color=MUTED, width=1, dash=dash)) for length, dash in ((train_length, "dash"),
                                                                                     (target, "dot"))]
    annotations = [dict(x=math.log10(length), yref="y domain", y=1, text=text, showarrow=False, xanchor="left",
                        yanchor="top", font=dict(size=12))
                   for length, text in ((train_length, f"L = {_length(train_length)}"),
                                        (target, f"L′ = {_length(target)}"))]
    xs_all = [train_length, target, *(k for k, _b in known), *(x for *_k, xs, _y in methods for x in xs)]
    ys_all = [*(b for _k, b in known), *(y for *_k, ys in methods for y in ys)]
    title = _(PLAN_BASES_TITLE)
    return _assemble(title, traces, dict(
        height=480, legend=LEGEND_BELOW, margin=dict(b=170), shapes=shapes, annotations=annotations,
        xaxis=dict(type="log", title=dict(text=_("context length l (tokens, log)")), **_log_ticks(xs_all)),
        yaxis=dict(type="log", title=dict(text=_("RoPE base (log)")), **_log_ticks(ys_all)),
    ))


def _log_ticks(values: Sequence[float]) -> dict:
    """Ticks at 1, 2 and 5 × 10ᵏ across the values, written out in full (200,000), for short log ranges."""
    positive = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not positive:
        return {}
    low, high = min(positive), max(positive)
    ticks = [m * 10.0**k for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
             for m in (1, 2, 5) if low / 1.5 <= m * 10.0**k <= high * 1.5]
    if len(ticks) > 12:
        ticks = [t for t in ticks if f"{t:.0e}".startswith("1")]
    return dict(tickvals=ticks, ticktext=[f"{t:,.0f}" if t < 1e7 else f"{t:.0e}".replace("e+0", "e") for t in ticks])


# ---- compare -------------------------------------------------------------------------------------


def compare_wavelength_figure(first: tuple[str, torch.Tensor, int, int], second: tuple[str, torch.Tensor, int, int]
                              ) -> go.Figure:
    """λᵢ per pair for model A (the model style) and B (dotted), each (label, θ, training length, length
    evaluated at), with each one's training length marked."""
    traces, shapes, annotations = [], [], []
    for number, (name, inv_freq, _train, evaluated) in enumerate((first, second)):
        label = _("{model} at length {length}").format(model=name, length=_length(evaluated))
        wavelength = 2 * math.pi / as_array(inv_freq)
        style = keyed("model", markers=True) if number == 0 else dict(mode="lines+markers", line=YOURS,
                                                                       marker=YOURS_MARKER)
        traces.append(go.Scatter(x=np.arange(len(wavelength)), y=wavelength, name=label,
                                 hovertemplate=label + "<br>" + _("pair %{x}") + ": λ = %{y:,.4g}<extra></extra>",
                                 **style))
    lengths = (first[2], second[2])
    marks = [(lengths[0], f"A, B: L = {_length(lengths[0])}", "dash")] if lengths[0] == lengths[1] else \
        [(lengths[0], f"A: L = {_length(lengths[0])}", "dash"), (lengths[1], f"B: L = {_length(lengths[1])}", "dot")]
    for length, text, dash in marks:
        shapes.append(dict(type="line", xref="x domain", x0=0, x1=1, y0=length, y1=length,
                           line=dict(color=MUTED, width=1, dash=dash)))
        annotations.append(dict(xref="x domain", x=0.01, xanchor="left", y=math.log10(length),
                                yanchor="top" if dash == "dot" else "bottom", text=text, showarrow=False,
                                font=dict(size=12)))
    return _assemble(_(COMPARE_WAVELENGTH_TITLE), traces, dict(
        height=460, legend=LEGEND_BELOW, margin=dict(b=150), shapes=shapes, annotations=annotations,
        xaxis=dict(title=dict(text=_("pair index i"))),
        yaxis=dict(type="log", title=dict(text=_("λᵢ = 2π/θᵢ (tokens, log)")), exponentformat="power"),
    ))


def compare_ratio_figure(ratio: torch.Tensor | None, *, differs: Sequence[bool], label: str) -> go.Figure:
    """θ_B/θ_A per pair; pairs whose θ differ beyond float32 tolerance highlighted."""
    if ratio is None:
        figure = _assemble(_(COMPARE_RATIO_TITLE), [], dict(height=300))
        figure.add_annotation(text=_("The two models rotate different numbers of pairs: there is no pair-by-pair "
                                     "ratio."), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False)
        return figure
    values = as_array(ratio)
    index = np.arange(len(values))
    changed = np.asarray(differs, dtype=bool)
    traces = [go.Scatter(x=index, y=values, name=label, mode="lines+markers", line=YOURS, marker=YOURS_MARKER,
                         hovertemplate=_("pair %{x}") + ": θ<sub>B</sub>/θ<sub>A</sub> = %{y:.6g}<extra></extra>")]
    if changed.any():
        traces.append(go.Scatter(x=index[changed], y=values[changed], mode="markers", name=_("differ"),
                                 marker=dict(symbol="circle-open", size=12, color=HIGHLIGHT, line=dict(width=2)),
                                 hoverinfo="skip"))
    finite = values[np.isfinite(values) & (values > 0)]
    lowest = min(float(finite.min()) if finite.size else 1.0, 0.5)
    highest = max(float(finite.max()) if finite.size else 1.0, 2.0)
    shape, annotation = reference_line(1.0, _("1: same θ"), dash="dash", log_axis=True)
    return _assemble(_(COMPARE_RATIO_TITLE), traces, dict(
        height=420, legend=LEGEND_BELOW, margin=dict(b=150), shapes=[shape], annotations=[annotation],
        xaxis=dict(title=dict(text=_("pair index i"))),
        yaxis=dict(type="log", title=dict(text=_("θᵢ of B / θᵢ of A (log)")), **power_of_two_ticks(lowest, highest)),
    ))
