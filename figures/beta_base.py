"""Figures for "RoPE as a β-base number": digits against n, dials of RoPE phases, the base-stretch bound.

Every function takes values already computed (``pe_core.beta_base`` tensors, numbers) and returns a
figure in the project's visual language; ``lessons.beta_base`` decides what to draw. Direct
extrapolation and interpolation look like the methods of the same name everywhere; base conversion
(b → b·s, or β → λβ for a plain number) has one look of its own on every figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import HIGHLIGHT, INK, LEGEND_BELOW, MUTED, TraceStyle, keyed, new_figure, series_colour, translucent
from i18n import N_, _
from pe_core.beta_base import STRATEGIES, DigitViews

DIGITS_TITLE = N_("Digits of n in base β: three ways to reach s times the range")
ZOOM_TITLE = N_("Zoom near n: the units digit")
DIALS_TITLE = N_("RoPE phases at position n as clock hands")
TURNS_TITLE = N_("Turns made by each pair at position n")
BOUND_TITLE = N_("Base stretch λ needed for s times the range")

STRATEGY_TITLES = {
    "direct": N_("Direct extrapolation"),
    "interpolate": N_("Linear interpolation (n/s)"),
    "convert": N_("Base conversion (β → λβ)"),
}
# The key a plain-number strategy shares with a RoPE method (its colour, dash and marker).
STRATEGY_METHODS = {"direct": "direct", "interpolate": "pi"}
CONVERSION = "beta_conversion"
CONVERSION_TITLE = N_("β-base conversion (b·s)")
# Base conversion is not one of the theme's method keys: its own look, which no key uses.
CONVERSION_STYLE = TraceStyle("#EE3377", "dashdot", "triangle-down")
SEEN_COLOUR = translucent("#009E73", 0.35)
DIAL_COLOUR = "#bbbbbb"
# A sawtooth with more teeth than this across a panel is a smear, not a digit: such places are left out.
MAX_TEETH = 60
MAX_LINES_PER_PANEL = 8  # the top places; lower ones are listed as omitted when there are more


def number_text(value: float) -> str:
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return f"{round(value):,}"
    return f"{value:,.4g}" if abs(value) >= 1e6 else f"{value:,.3f}".rstrip("0").rstrip(".")


def styled(key: str, *, lines: bool = True, markers: bool = False, **extra) -> dict:
    """``keyed(key)`` for a method; the conversion's own look (tagged as a series) for ``CONVERSION``."""
    markers = markers or not lines
    if key != CONVERSION:
        return keyed(key, lines=lines, markers=markers, **extra)
    style = CONVERSION_STYLE
    out = {"mode": "+".join(p for p, on in (("lines", lines), ("markers", markers)) if on) or "lines",
           "meta": {"series": CONVERSION}}
    if lines:
        out["line"] = {"color": style.colour, "dash": style.dash, **extra.pop("line", {})}
    if markers:
        out["marker"] = {"color": style.colour, "symbol": style.marker, **extra.pop("marker", {})}
    return {**out, **extra}


def strategy_key(strategy: str) -> str:
    return STRATEGY_METHODS.get(strategy, CONVERSION)



# --- plain numbers ------------------------------------------------------------------------------


def digit_period(base: float, place: int, factor: float = 1.0) -> float:
    """How many steps of n one cycle of place j takes: s·base^(j+1) (s = 1 except for interpolation)."""
    return factor * math.exp((place + 1) * math.log(base))


def resolvable_places(base: float, places: int, span: float, factor: float = 1.0) -> list[int]:
    """Places whose digit cycles at most ``MAX_TEETH`` times across a span of n (the rest would smear)."""
    return [j for j in range(places) if span / digit_period(base, j, factor) <= MAX_TEETH]


def step_corners(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Only the samples where a step function changes (plus the last): the same 'hv' line, far fewer points."""
    if len(y) < 3:
        return x, y
    keep = np.ones(len(y), dtype=bool)
    keep[1:] = y[1:] != y[:-1]
    keep[-1] = True
    return x[keep], y[keep]


def _stacked_axes(rows: int, gap: float = 0.09) -> tuple[dict, list[tuple[float, float]]]:
    """Layout for ``rows`` panels stacked on one shared x axis (cheaper than make_subplots)."""
    height = (1 - gap * (rows - 1)) / rows
    domains = [(max(0.0, 1 - r * (height + gap) - height), 1 - r * (height + gap)) for r in range(rows)]
    layout: dict = {}
    for r, domain in enumerate(domains):
        suffix = "" if r == 0 else str(r + 1)
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", showticklabels=r == rows - 1,
                                        **({} if r == 0 else {"matches": "x"}))
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=list(domain))
    return layout, domains


def place_name(place: int, base: float) -> str:
    return _("place {place} (× {base}<sup>{place}</sup>)").format(place=place, base=number_text(base))


def _place_list(places: Sequence[int]) -> str:
    if len(places) == 1:
        return _("place {place}").format(place=places[0])
    if len(places) > 3 and list(places) == list(range(places[0], places[-1] + 1)):
        return _("places {first}–{last}").format(first=places[0], last=places[-1])
    return _("places {places}").format(places=", ".join(map(str, places)))


def _strategy_subtitle(strategy: str, views: DigitViews) -> str:
    if strategy == "direct":
        return _("Direct extrapolation: base {base}, {places} places").format(
            base=number_text(views.beta), places=f"{views.direct_places_needed:,}")
    if strategy == "interpolate":
        return _("Linear interpolation: n/{scale} in base {base}, {places} places").format(
            scale=number_text(views.factor), base=number_text(views.beta), places=views.places)
    return _("Base conversion: base λβ = {base}, {places} places").format(base=number_text(views.new_base),
                                                                          places=views.places)


def omitted_places(numbers: torch.Tensor, views: DigitViews) -> dict[str, list[int]]:
    """Per strategy, the places too fast to draw across these numbers (their digit would smear)."""
    n = numbers.numpy()
    span = float(n[-1] - n[0]) if len(n) > 1 else 1.0
    omitted = {}
    for strategy in STRATEGIES:
        places = views.table(strategy).shape[1]
        factor = views.factor if strategy == "interpolate" else 1.0
        shown = resolvable_places(views.base_of(strategy), places, span, factor)[-MAX_LINES_PER_PANEL:]
        omitted[strategy] = [j for j in range(places) if j not in shown]
    return omitted


def omitted_note(omitted: dict[str, list[int]]) -> str:
    """What the digits figure leaves out, in a sentence ('' if nothing)."""
    if not any(omitted.values()):
        return ""
    if len({tuple(p) for p in omitted.values()}) == 1:
        return _("Not drawn, too fast to see at this scale (see the zoom): {places}.").format(
            places=_place_list(omitted[STRATEGIES[0]]))
    skipped = "; ".join(f"{_(STRATEGY_TITLES[s])}: {_place_list(p)}" for s, p in omitted.items() if p)
    return _("Not drawn, too fast to see at this scale (see the zoom): {places}.").format(places=skipped)


def digits_against_n_figure(numbers: torch.Tensor, views: DigitViews, position: float | None = None) -> go.Figure:
    """One panel per strategy: the value of each place against n, with β, the trained range β^P and n marked."""
    n = numbers.numpy()
    trained_range = math.exp(min(views.places * math.log(views.beta), 700.0))
    if position is not None and len(n) and position > 1.05 * float(n[-1]):
        position = None  # far past the range drawn: its line would squeeze every digit to the left edge
    title = _("Digits of n in base β = {beta}: three ways to reach s = {scale}× the range").format(
        beta=number_text(views.beta), scale=number_text(views.factor))
    layout, domains = _stacked_axes(len(STRATEGIES))
    traces, shapes, annotations = [], [], []
    omitted = omitted_places(numbers, views)
    hover = "n = %{x:,.0f}<br>" + _("digit") + ": %{y:.4g}<extra>%{fullData.name}</extra>"
    beta_line = dict(color=MUTED, dash="dash", width=1)
    range_line = dict(color=MUTED, dash="dot", width=1.5)
    position_line = dict(color=INK, width=2)
    for row, strategy in enumerate(STRATEGIES):
        suffix = "" if row == 0 else str(row + 1)
        table = views.table(strategy).numpy()
        base = views.base_of(strategy)
        for place in reversed([j for j in range(table.shape[1]) if j not in omitted[strategy]]):
            is_new = strategy == "direct" and place >= views.places
            steps_x, steps_y = step_corners(n, table[:, place])
            name = place_name(place, base)
            traces.append(go.Scatter(
                x=steps_x, y=steps_y, mode="lines", line_shape="hv", xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                name=_("{place}, new").format(place=name) if is_new else name,
                legendgroup=strategy, legendgrouptitle_text=_(STRATEGY_TITLES[strategy]),
                line=dict(color=HIGHLIGHT if is_new else series_colour(place), width=2.6 if is_new else 1.6,
                          dash="dot" if is_new else "solid"),
                hovertemplate=hover, meta={"strategy": strategy, "place": place},
            ))
        shapes.append(dict(type="line", xref=f"x{suffix} domain", x0=0, x1=1, yref=f"y{suffix}",
                           y0=views.beta, y1=views.beta, line=beta_line))
        lines_x = [(trained_range, range_line)] + ([(position, position_line)] if position is not None else [])
        for x, line in lines_x:
            shapes.append(dict(type="line", xref=f"x{suffix}", x0=x, x1=x, yref=f"y{suffix} domain", y0=0, y1=1,
                               line=line))
        layout[f"yaxis{suffix}"].update(title_text=_("digit"), rangemode="tozero")
        annotations.append(dict(text=_strategy_subtitle(strategy, views), xref="paper", yref="paper", x=0.5,
                                y=domains[row][1], xanchor="center", yanchor="bottom", showarrow=False,
                                font=dict(size=14)))
    layout[f"xaxis{len(STRATEGIES)}"]["title_text"] = _("n (the number written)")
    # The reference lines are shapes; these legend-only entries say what they are.
    marks = [(_("β: every digit stays below it in training"), beta_line),
             (_("βᴾ: the end of the trained range"), range_line)]
    if position is not None:
        marks.append((_("n in the table"), position_line))
    traces += [go.Scatter(x=[None], y=[None], mode="lines", name=name, line=line, legendgroup="marks",
                          legendgrouptitle_text=_("Marks")) for name, line in marks]
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(**layout, shapes=shapes, annotations=annotations, height=760,
                         legend=dict(groupclick="toggleitem"))
    return figure


def units_digit_zoom_figure(numbers: torch.Tensor, views: DigitViews) -> go.Figure:
    """The units digit of each strategy for the numbers around n: interpolation's steps shrink to 1/s."""
    n = numbers.numpy()
    figure = new_figure(
        _("Zoom near n: the units digit moves by 1 per step, by 1/{scale} under interpolation").format(
            scale=number_text(views.factor)),
        xaxis=dict(title=dict(text=_("n (the number written)"))),
        yaxis=dict(title=dict(text=_("units digit (place 0)")), rangemode="tozero"),
        height=420, legend=LEGEND_BELOW, margin=dict(b=120),
    )
    for strategy in STRATEGIES:
        name = _(STRATEGY_TITLES[strategy])
        figure.add_trace(go.Scatter(
            x=n, y=views.table(strategy)[:, 0].numpy(), line_shape="hv", name=name,
            hovertemplate="n = %{x:,.0f}<br>" + _("units digit") + f": %{{y:.4g}}<extra>{name}</extra>",
            **styled(strategy_key(strategy), markers=True, marker=dict(size=5)),
        ))
    figure.update_layout(
        shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=views.beta, y1=views.beta,
                     line=dict(color=MUTED, dash="dash", width=1))],
        annotations=[dict(xref="x domain", x=1, y=views.beta, yanchor="bottom", xanchor="right", showarrow=False,
                          text=_("β: no units digit reached this in training"), font=dict(size=12, color=MUTED),
                          bgcolor="rgba(255,255,255,0.8)")],
    )
    return figure


# --- RoPE ---------------------------------------------------------------------------------------


def _circle(samples: int = 49) -> tuple[np.ndarray, np.ndarray]:
    angle = np.linspace(0, 2 * np.pi, samples)
    return np.cos(angle), np.sin(angle)


def _with_gaps(pieces: list[np.ndarray]) -> np.ndarray:
    """Concatenate polylines with NaN breaks so many shapes ride in one trace (float32: what a screen shows)."""
    gap = np.array([np.nan])
    return np.concatenate([part for piece in pieces for part in (np.asarray(piece, dtype=np.float64), gap)]
                          ).astype(np.float32)


def phase_dials_figure(
    methods: Sequence[tuple[str, str]],
    pair_indices: torch.Tensor,
    phases: torch.Tensor,
    seen_limit: torch.Tensor,
    unseen: torch.Tensor,
    position: int,
    wavelengths: torch.Tensor | None = None,
) -> go.Figure:
    """A row of dials per method: each hand points at pair i's phase n·θᵢ mod 2π (0 at 3 o'clock, anticlockwise).

    ``methods`` are (key, title) pairs; ``phases`` and ``unseen`` are [methods, pairs shown];
    ``seen_limit`` [pairs shown] is the arc the hand swept in training. Hands flagged in ``unseen``
    point where training never did (ringed).
    """
    rows, cols = phases.shape
    dx, dy = 2.5, 2.6
    circle_x, circle_y = _circle()
    centres_x = np.arange(cols) * dx
    centres_y = -np.arange(rows) * dy
    traces = [go.Scatter(
        x=_with_gaps([circle_x + cx for _row in centres_y for cx in centres_x]),
        y=_with_gaps([circle_y + cy for cy in centres_y for _col in centres_x]),
        mode="lines", line=dict(color=DIAL_COLOUR, width=1), hoverinfo="skip", showlegend=False,
    )]
    arcs = [np.linspace(0, float(limit), 25) for limit in seen_limit]
    traces.append(go.Scatter(
        x=_with_gaps([np.cos(arc) + cx for _row in centres_y for arc, cx in zip(arcs, centres_x, strict=True)]),
        y=_with_gaps([np.sin(arc) + cy for cy in centres_y for arc in arcs]),
        mode="lines", name=_("phases seen in training"), line=dict(color=SEEN_COLOUR, width=7), hoverinfo="skip",
    ))
    phase = phases.numpy()
    outside = unseen.numpy().astype(bool)
    first_row_with_unseen = int(np.argmax(outside.any(axis=1))) if outside.any() else -1
    for r, ((key, title), cy) in enumerate(zip(methods, centres_y, strict=True)):
        name = _(title)
        tip_x = np.cos(phase[r]) * 0.92 + centres_x
        tip_y = np.sin(phase[r]) * 0.92 + cy
        traces.append(go.Scatter(
            x=_with_gaps([np.array([cx, tx]) for cx, tx in zip(centres_x, tip_x, strict=True)]),
            y=_with_gaps([np.array([cy, ty]) for ty in tip_y]),
            name=name, legendgroup=name, hoverinfo="skip", **styled(key, line=dict(width=2.5, dash="solid")),
        ))
        hover = [
            _("pair {pair}<br>phase {phase:.3f} rad ({turns:.3f} turn)").format(pair=int(i), phase=p,
                                                                                turns=p / (2 * np.pi))
            + ("<br>" + _("wavelength λᵢ = {tokens} tokens").format(tokens=f"{float(wavelengths[c]):,.1f}")
               if wavelengths is not None else "")
            + ("<br><b>" + _("never pointed here in training") + "</b>" if u else "")
            for c, (i, p, u) in enumerate(zip(pair_indices.tolist(), phase[r], outside[r], strict=True))
        ]
        traces.append(go.Scatter(
            x=tip_x, y=tip_y, legendgroup=name, name=name, showlegend=False, hovertext=hover,
            hovertemplate=f"{name}<br>%{{hovertext}}<extra></extra>", **styled(key, lines=False, marker=dict(size=7)),
        ))
        if outside[r].any():
            traces.append(go.Scatter(
                x=tip_x[outside[r]], y=tip_y[outside[r]], mode="markers", legendgroup="unseen", uid=f"unseen-{key}",
                name=_("hand outside the training arc"), showlegend=r == first_row_with_unseen, hoverinfo="skip",
                marker=dict(symbol="circle-open", size=15, line=dict(width=2.5), color=HIGHLIGHT),
            ))
    figure = new_figure(_("RoPE phases at position n = {position} as clock hands (one dial per pair)").format(
        position=f"{position:,}"))
    figure.add_traces(traces)
    figure.update_layout(
        # the pairs as tick labels above the dials: plotly thins them where dials are narrow (a phone)
        xaxis=dict(side="top", range=[-1.3, centres_x[-1] + 1.3], tickvals=centres_x.tolist(),
                   ticktext=[str(pair) for pair in pair_indices.tolist()], title=dict(text=_("pair i")),
                   showline=False, ticks="", showgrid=False, zeroline=False, tickfont=dict(size=12)),
        yaxis=dict(range=[centres_y[-1] - 1.3, 1.75], scaleanchor="x", scaleratio=1, tickvals=centres_y.tolist(),
                   ticktext=[_(title) for _key, title in methods], showline=False, ticks="", showgrid=False,
                   zeroline=False),
        height=170 + 85 * rows, legend=LEGEND_BELOW,
        margin=dict(l=10, r=10, t=100, b=40),  # the title, and the pairs' axis above the dials
    )
    return figure


def pair_turns_figure(
    methods: Sequence[tuple[str, str]],
    turns: torch.Tensor,
    training_turns: torch.Tensor,
    position: int,
    train_length: int,
) -> go.Figure:
    """Turns n·θᵢ/2π of every pair at position n (log scale) against the most turns seen in training.

    The shaded zone lies above the training line and below one turn: a pair whose line enters it
    points in a direction it never pointed in training.
    """
    pairs = np.arange(turns.shape[1])
    figure = new_figure(
        _("Turns made by each pair at position n = {position}, against the most turns seen in training").format(
            position=f"{position:,}"),
        xaxis=dict(title=dict(text=_("pair index i (low i: fast, high i: slow)"))),
        yaxis=dict(title=dict(text=_("n·θᵢ / 2π (turns, log scale)")), type="log", dtick=1),
        height=520, legend=LEGEND_BELOW, margin=dict(b=150),
    )
    trained = training_turns.numpy()
    short = trained < 1
    if short.any():
        zone_x = np.concatenate([pairs[short], pairs[short][::-1]])
        zone_y = np.concatenate([trained[short], np.ones(int(short.sum()))])
        figure.add_trace(go.Scatter(x=zone_x, y=zone_y, fill="toself", fillcolor=translucent(HIGHLIGHT, 0.12),
                                    line=dict(width=0), name=_("never reached in training"), hoverinfo="skip"))
    for (key, title), row in zip(methods, turns, strict=True):
        name = _(title)
        figure.add_trace(go.Scatter(x=pairs, y=row.numpy(), name=name,
                                    hovertemplate=_("pair %{x}") + "<br>" + _("%{y:.4g} turns") + f"<extra>{name}</extra>",
                                    **styled(key)))
    figure.add_trace(go.Scatter(
        x=pairs, y=trained, mode="lines",
        name=_("most turns in training: (L − 1)·θᵢ/2π, L = {length}").format(length=f"{train_length:,}"),
        line=dict(color=MUTED, dash="dash", width=3),
        hovertemplate=_("pair %{x}") + "<br>" + _("%{y:.4g} turns") + "<extra></extra>",
    ))
    figure.update_layout(
        shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=1, y1=1,
                     line=dict(color=MUTED, dash="dot", width=1))],
        # annotation positions on a log axis are given as log10 of the value
        annotations=[dict(x=0, y=0, xanchor="left", yanchor="bottom", showarrow=False, font=dict(size=12, color=MUTED),
                          text=_("one full turn: beyond it every phase has been seen"))],
    )
    return figure


# --- the bound ----------------------------------------------------------------------------------


def stretch_bound_figure(
    scales: torch.Tensor,
    log_bound: torch.Tensor,
    log_conversion: torch.Tensor,
    log_ntk: torch.Tensor | None,
    label: str,
    marked_scale: float | None = None,
) -> go.Figure:
    """λ − 1 against s for the exact bound, base conversion s^(1/P) and NTK s^(1/(P−1)), plus their excess."""
    s = scales.numpy()
    curves = [(_("smallest λ: (s − (s−1)/β<sup>P</sup>)<sup>1/P</sup>"), log_bound,
               dict(mode="lines", line=dict(color=INK, width=3), meta={"series": "bound"})),
              (_("base conversion: λ = s<sup>1/P</sup>"), log_conversion, styled(CONVERSION))]
    if log_ntk is not None:
        curves.append((_("NTK-aware: λ = s<sup>1/(P−1)</sup>"), log_ntk, styled("ntk")))
    traces = []
    for name, log_values, look in curves:
        traces.append(go.Scatter(x=s, y=torch.expm1(log_values).numpy(), name=name, legendgroup=name,
                                 hovertemplate="s = %{x:.4g}<br>λ − 1 = %{y:.4g}<extra></extra>", **look))
        if log_values is not log_bound:
            traces.append(go.Scatter(x=s, y=torch.expm1(log_values - log_bound).numpy(), name=name, legendgroup=name,
                                     showlegend=False, xaxis="x2", yaxis="y2",
                                     hovertemplate="s = %{x:.4g}<br>" + _("excess") + " %{y:.3g}<extra></extra>",
                                     **look))
    shapes = []
    if marked_scale is not None:
        shapes = [dict(type="line", xref=axis, x0=marked_scale, x1=marked_scale,
                       yref=f"{axis.replace('x', 'y')} domain", y0=0, y1=1, line=dict(color=MUTED, dash="dot", width=1))
                  for axis in ("x", "x2")]
    scale_axis = dict(type="log", title=dict(text=_("scale s (log)")))
    figure = new_figure(_("Base stretch λ needed for s times the range ({label})").format(label=label))
    figure.add_traces(traces)
    figure.update_layout(
        xaxis=dict(domain=[0, 0.44], anchor="y", **scale_axis), xaxis2=dict(domain=[0.56, 1], anchor="y2", **scale_axis),
        yaxis=dict(type="log", exponentformat="power", dtick=1, title=dict(text=_("λ − 1 (log)")), anchor="x"),
        yaxis2=dict(type="log", exponentformat="power", dtick=1, title=dict(text=_("relative excess (log)")),
                    anchor="x2"),
        annotations=[dict(text=text, xref="paper", yref="paper", x=x, y=1.0, xanchor="center", yanchor="bottom",
                          showarrow=False, font=dict(size=14))
                     for text, x in ((_("stretch per place λ − 1"), 0.22),
                                     (_("excess over the bound: λ/λₘᵢₙ − 1"), 0.78))],
        shapes=shapes, height=480, legend=LEGEND_BELOW, margin=dict(b=150),
    )
    return figure
