"""Figures for "RoPE as a β-base number": digits against n, dials of RoPE phases, the base-stretch bound."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import PALETTE, new_figure
from pe_core.beta_base import STRATEGIES, STRATEGY_TITLES, DigitViews

SEEN_COLOUR = "rgba(0, 158, 115, 0.35)"
UNSEEN_COLOUR = "#D55E00"
TRAINING_COLOUR = "#444"
# A sawtooth with more teeth than this across a panel is a smear, not a digit: such places are left out.
MAX_TEETH = 60
MAX_LINES_PER_PANEL = 8  # the top places; lower ones are listed as omitted when there are more


def _number_text(value: float) -> str:
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return f"{round(value):,}"
    return f"{value:,.4g}" if abs(value) >= 1e6 else f"{value:,.3f}".rstrip("0").rstrip(".")


def digit_period(base: float, place: int, factor: float = 1.0) -> float:
    """How many steps of n one cycle of place j takes: k·base^(j+1) (k = 1 except for interpolation)."""
    return factor * math.exp((place + 1) * math.log(base))


def resolvable_places(base: float, places: int, span: float, factor: float = 1.0) -> list[int]:
    """Places whose digit cycles at most ``MAX_TEETH`` times across a span of n (the rest would smear)."""
    return [j for j in range(places) if span / digit_period(base, j, factor) <= MAX_TEETH]


def _stacked_axes(rows: int, gap: float = 0.08) -> tuple[dict, list[tuple[float, float]]]:
    """Layout for ``rows`` panels stacked on one shared x axis (cheaper than make_subplots)."""
    height = (1 - gap * (rows - 1)) / rows
    domains = [(1 - r * (height + gap) - height, 1 - r * (height + gap)) for r in range(rows)]
    layout: dict = {}
    for r, domain in enumerate(domains):
        suffix = "" if r == 0 else str(r + 1)
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", showticklabels=r == rows - 1,
                                        **({} if r == 0 else {"matches": "x"}))
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=list(domain))
    return layout, domains


def digits_against_n_figure(numbers: torch.Tensor, views: DigitViews, position: float | None = None) -> go.Figure:
    """One panel per strategy: the value of each place against n, with β and the trained range β^P dashed."""
    n = numbers.numpy()
    span = float(n[-1] - n[0]) if len(n) > 1 else 1.0
    trained_range = math.exp(min(views.places * math.log(views.beta), 700.0))
    title = (f"Digits of n in base β = {_number_text(views.beta)}: three ways to reach k = "
             f"{_number_text(views.factor)}× the range")
    layout, domains = _stacked_axes(len(STRATEGIES))
    traces, shapes, annotations = [], [], []
    omitted: dict[str, list[int]] = {}
    for row, strategy in enumerate(STRATEGIES):
        suffix = "" if row == 0 else str(row + 1)
        table = views.table(strategy).numpy()
        base = views.base_of(strategy)
        factor = views.factor if strategy == "interpolate" else 1.0
        shown = resolvable_places(base, table.shape[1], span, factor)[-MAX_LINES_PER_PANEL:]
        omitted[strategy] = [j for j in range(table.shape[1]) if j not in shown]
        for place in reversed(shown):
            is_new = strategy == "direct" and place >= views.places
            steps_x, steps_y = step_corners(n, table[:, place])
            traces.append(go.Scatter(
                x=steps_x, y=steps_y, mode="lines", line_shape="hv", xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                name=f"place {place} (×{_number_text(base)}^{place})" + (" - new" if is_new else ""),
                legendgroup=strategy, legendgrouptitle_text=STRATEGY_TITLES[strategy],
                line=dict(color=PALETTE[place % len(PALETTE)], width=2.6 if is_new else 1.6,
                          dash="dot" if is_new else "solid"),
                hovertemplate=f"n = %{{x:,.0f}}<br>place {place}: %{{y:.4g}}<extra></extra>",
            ))
        dashed = dict(color=TRAINING_COLOUR, dash="dash", width=1)
        shapes.append(dict(type="line", xref=f"x{suffix} domain", x0=0, x1=1, yref=f"y{suffix}",
                           y0=views.beta, y1=views.beta, line=dashed))
        lines_x = [(trained_range, dashed)]
        if position is not None:
            lines_x.append((position, dict(color="#000", width=2)))
        for x, line in lines_x:
            shapes.append(dict(type="line", xref=f"x{suffix}", x0=x, x1=x, yref=f"y{suffix} domain", y0=0, y1=1,
                               line=line))
        layout[f"yaxis{suffix}"].update(title_text="digit value", rangemode="tozero")
        annotations.append(dict(text=_strategy_subtitle(strategy, views), xref="paper", yref="paper", x=0.5,
                                y=domains[row][1], xanchor="center", yanchor="bottom", showarrow=False,
                                font=dict(size=14)))
    layout[f"xaxis{len(STRATEGIES)}"]["title_text"] = "n (the number written)"
    notes = ["dashed: β (every digit stays below it in training) and the trained range β^P"
             + ("; solid black: the n in the table" if position is not None else "")]
    if len({tuple(p) for p in omitted.values()}) == 1 and omitted[STRATEGIES[0]]:
        notes.append(f"not drawn, too fast to see at this scale (see the zoom): {_place_list(omitted[STRATEGIES[0]])}")
    elif any(omitted.values()):
        skipped = [f"{STRATEGY_TITLES[s].split(' (')[0].lower()}: {_place_list(p)}" for s, p in omitted.items() if p]
        notes.append("not drawn, too fast to see at this scale (see the zoom):<br>" + "; ".join(skipped))
    annotations.append(dict(text="<br>".join(notes), xref="paper", yref="paper", x=0, y=-0.13, showarrow=False,
                            xanchor="left", yanchor="top", font=dict(size=12, color="#555"), align="left"))
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(**layout, shapes=shapes, annotations=annotations, height=720,
                         legend=dict(groupclick="toggleitem"), margin=dict(b=110))
    return figure


def step_corners(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Only the samples where a step function changes (plus the last): the same 'hv' line, far fewer points."""
    if len(y) < 3:
        return x, y
    keep = np.ones(len(y), dtype=bool)
    keep[1:] = y[1:] != y[:-1]
    keep[-1] = True
    return x[keep], y[keep]


def _place_list(places: Sequence[int]) -> str:
    if len(places) == 1:
        return f"place {places[0]}"
    if len(places) > 3 and list(places) == list(range(places[0], places[-1] + 1)):
        return f"places {places[0]}-{places[-1]}"
    return "places " + ", ".join(map(str, places))


def _strategy_subtitle(strategy: str, views: DigitViews) -> str:
    if strategy == "direct":
        return f"Direct extrapolation: base {_number_text(views.beta)}, {views.direct_places_needed:,} places"
    if strategy == "interpolate":
        return f"Linear interpolation: n/{_number_text(views.factor)} in base {_number_text(views.beta)}, " \
               f"{views.places} places"
    return f"Base conversion: base λβ = {_number_text(views.new_base)}, {views.places} places"


def units_digit_zoom_figure(numbers: torch.Tensor, views: DigitViews) -> go.Figure:
    """The units digit of each strategy for the numbers around n: interpolation's steps shrink to 1/k."""
    n = numbers.numpy()
    figure = new_figure(
        title=f"Zoom near n: the units digit moves by 1 per step, except under interpolation (1/{_number_text(views.factor)})",
        xaxis_title="n (the number written)", yaxis_title="units digit (place 0)", height=380,
    )
    for index, strategy in enumerate(STRATEGIES):
        figure.add_trace(go.Scatter(
            x=n, y=views.table(strategy)[:, 0].numpy(), mode="lines+markers", line_shape="hv",
            name=STRATEGY_TITLES[strategy], line=dict(color=PALETTE[index]), marker=dict(size=5),
            hovertemplate="n = %{x:,.0f}<br>units digit: %{y:.4g}<extra></extra>",
        ))
    figure.update_layout(
        shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=views.beta, y1=views.beta,
                     line=dict(color=TRAINING_COLOUR, dash="dash", width=1))],
        annotations=[dict(xref="x domain", x=1, y=views.beta, yanchor="bottom", xanchor="right", showarrow=False,
                          text="β: no units digit reached this in training", font=dict(size=12, color="#555"),
                          bgcolor="rgba(255,255,255,0.8)")],
        yaxis_rangemode="tozero",
    )
    return figure


def _circle(samples: int = 49) -> tuple[np.ndarray, np.ndarray]:
    angle = np.linspace(0, 2 * np.pi, samples)
    return np.cos(angle), np.sin(angle)


def _with_gaps(pieces: list[np.ndarray]) -> np.ndarray:
    """Concatenate polylines with NaN breaks so many shapes ride in one trace (small payload)."""
    out: list[float] = []
    for piece in pieces:
        out.extend(piece.tolist())
        out.append(np.nan)
    return np.asarray(out, dtype=np.float64)


def phase_dials_figure(
    method_titles: Sequence[str],
    pair_indices: torch.Tensor,
    phases: torch.Tensor,
    seen_limit: torch.Tensor,
    unseen: torch.Tensor,
    position: int,
    wavelengths: torch.Tensor | None = None,
) -> go.Figure:
    """A row of dials per method: each hand points at pair i's phase n·θ_i mod 2π (0 at 3 o'clock, anticlockwise).

    ``phases`` and ``unseen`` are [methods, pairs shown]; ``seen_limit`` [pairs shown] is the arc the
    hand swept in training (green). Hands flagged in ``unseen`` point where training never did (ringed).
    """
    rows, cols = phases.shape
    dx, dy = 2.5, 2.6
    circle_x, circle_y = _circle()
    centres_x = np.arange(cols) * dx
    centres_y = -np.arange(rows) * dy
    traces = []
    traces.append(go.Scatter(
        x=_with_gaps([circle_x + cx for _ in centres_y for cx in centres_x]),
        y=_with_gaps([circle_y + cy for cy in centres_y for _ in centres_x]),
        mode="lines", line=dict(color="#bbb", width=1), hoverinfo="skip", showlegend=False,
    ))
    arcs = [np.linspace(0, float(limit), 25) for limit in seen_limit]
    traces.append(go.Scatter(
        x=_with_gaps([np.cos(arc) + cx for _ in centres_y for arc, cx in zip(arcs, centres_x, strict=True)]),
        y=_with_gaps([np.sin(arc) + cy for cy in centres_y for arc in arcs]),
        mode="lines", name="phases seen in training", line=dict(color=SEEN_COLOUR, width=7), hoverinfo="skip",
    ))
    phase = phases.numpy()
    outside = unseen.numpy().astype(bool)
    first_row_with_unseen = int(np.argmax(outside.any(axis=1))) if outside.any() else -1
    for r, (title, cy) in enumerate(zip(method_titles, centres_y, strict=True)):
        tip_x = np.cos(phase[r]) * 0.92 + centres_x
        tip_y = np.sin(phase[r]) * 0.92 + cy
        colour = PALETTE[r % len(PALETTE)]
        traces.append(go.Scatter(
            x=_with_gaps([np.array([cx, tx]) for cx, tx in zip(centres_x, tip_x, strict=True)]),
            y=_with_gaps([np.array([cy, ty]) for ty in tip_y]),
            mode="lines", line=dict(color=colour, width=2.5), name=title, legendgroup=title, hoverinfo="skip",
        ))
        hover = [
            f"{title}<br>pair {int(i)}<br>phase {p:.3f} rad ({p / (2 * np.pi):.3f} turn)"
            + (f"<br>wavelength {float(wavelengths[c]):,.1f} tokens" if wavelengths is not None else "")
            + ("<br><b>never pointed here in training</b>" if u else "")
            for c, (i, p, u) in enumerate(zip(pair_indices.tolist(), phase[r], outside[r], strict=True))
        ]
        traces.append(go.Scatter(
            x=tip_x, y=tip_y, mode="markers", marker=dict(color=colour, size=6), legendgroup=title,
            showlegend=False, hovertext=hover, hoverinfo="text",
        ))
        if outside[r].any():
            traces.append(go.Scatter(
                x=tip_x[outside[r]], y=tip_y[outside[r]], mode="markers", legendgroup="unseen",
                name="hand outside the training arc", showlegend=r == first_row_with_unseen, hoverinfo="skip",
                marker=dict(symbol="circle-open", size=15, line=dict(width=2.5), color=UNSEEN_COLOUR),
            ))
    figure = new_figure(title=f"RoPE phases at position n = {position:,} as clock hands (one dial per pair)")
    figure.add_traces(traces)
    figure.update_layout(
        annotations=[dict(x=cx, y=1.4, text=f"i = {pair}", showarrow=False, font=dict(size=12))
                     for cx, pair in zip(centres_x, pair_indices.tolist(), strict=True)],
        xaxis=dict(visible=False, range=[-1.3, centres_x[-1] + 1.3]),
        yaxis=dict(range=[centres_y[-1] - 1.3, 1.75], scaleanchor="x", scaleratio=1, tickvals=centres_y.tolist(),
                   ticktext=list(method_titles), showline=False, ticks="", showgrid=False, zeroline=False),
        height=120 + 85 * rows, legend=dict(orientation="h", y=-0.02, yanchor="top", x=0),
        margin=dict(l=10, r=10, t=60, b=30),
    )
    return figure


def pair_turns_figure(
    method_titles: Sequence[str],
    turns: torch.Tensor,
    training_turns: torch.Tensor,
    position: int,
    train_length: int,
) -> go.Figure:
    """Turns n·θ_i/2π of every pair at position n (log scale) against the most turns seen in training.

    The shaded zone lies above the training line and below one turn: a pair whose line enters it
    points in a direction it never pointed in training.
    """
    pairs = np.arange(turns.shape[1])
    figure = new_figure(
        title=f"Turns made by each pair at n = {position:,}, against the most turns seen in training",
        xaxis_title="pair index i (low i: fast, high i: slow)", yaxis_title="n·θ_i / 2π (turns, log scale)",
        yaxis_type="log", height=500, legend=dict(orientation="h", y=-0.2, yanchor="top", x=0),
    )
    trained = training_turns.numpy()
    short = trained < 1
    if short.any():
        zone_x = np.concatenate([pairs[short], pairs[short][::-1]])
        zone_y = np.concatenate([trained[short], np.ones(int(short.sum()))])
        figure.add_trace(go.Scatter(x=zone_x, y=zone_y, fill="toself", fillcolor="rgba(213, 94, 0, 0.12)",
                                    line=dict(width=0), name="never reached in training", hoverinfo="skip"))
    for r, title in enumerate(method_titles):
        figure.add_trace(go.Scatter(x=pairs, y=turns[r].numpy(), mode="lines", name=title,
                                    line=dict(color=PALETTE[r % len(PALETTE)]),
                                    hovertemplate="pair %{x}<br>%{y:.4g} turns<extra>" + title + "</extra>"))
    figure.add_trace(go.Scatter(
        x=pairs, y=trained, mode="lines", name=f"most turns in training: (L−1)·θ_i/2π, L = {train_length:,}",
        line=dict(color=TRAINING_COLOUR, dash="dash", width=3),
    ))
    figure.update_layout(
        shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=1, y1=1,
                     line=dict(color="#999", dash="dot"))],
        # annotation positions on a log axis are given as log10 of the value
        annotations=[dict(x=0, y=0, xanchor="left", yanchor="bottom", showarrow=False,
                          text="one full turn: beyond it every phase has been seen", font=dict(size=12, color="#555"))],
    )
    return figure


def stretch_bound_figure(
    factors: torch.Tensor,
    log_bound: torch.Tensor,
    log_conversion: torch.Tensor,
    log_ntk: torch.Tensor | None,
    label: str,
    marked_factor: float | None = None,
) -> go.Figure:
    """λ − 1 against k for the exact bound, base conversion k^(1/P) and NTK k^(1/(P−1)), plus their excess."""
    k = factors.numpy()
    curves = [("smallest λ: (k − (k−1)/β^P)^(1/P)", log_bound, PALETTE[4], "solid"),
              ("base conversion: k^(1/P)", log_conversion, PALETTE[2], "dash")]
    if log_ntk is not None:
        curves.append(("NTK-aware: k^(1/(P−1))", log_ntk, PALETTE[1], "dot"))
    traces = []
    for name, log_values, colour, dash in curves:
        line = dict(color=colour, dash=dash)
        traces.append(go.Scatter(x=k, y=torch.expm1(log_values).numpy(), mode="lines", name=name, line=line,
                                 legendgroup=name, hovertemplate="k = %{x:.4g}<br>λ − 1 = %{y:.4g}<extra></extra>"))
        if log_values is not log_bound:
            traces.append(go.Scatter(x=k, y=torch.expm1(log_values - log_bound).numpy(), mode="lines", name=name,
                                     line=line, legendgroup=name, showlegend=False, xaxis="x2", yaxis="y2",
                                     hovertemplate="k = %{x:.4g}<br>excess %{y:.3g}<extra></extra>"))
    shapes = []
    if marked_factor is not None:
        shapes = [dict(type="line", xref=axis, x0=marked_factor, x1=marked_factor, yref=f"{axis.replace('x', 'y')} domain",
                       y0=0, y1=1, line=dict(color="#999", dash="dot")) for axis in ("x", "x2")]
    k_axis = dict(type="log", title_text="extension factor k (log scale)")
    figure = new_figure(f"Base stretch λ needed for k× the range ({label})")
    figure.add_traces(traces)
    figure.update_layout(
        xaxis=dict(domain=[0, 0.44], anchor="y", **k_axis), xaxis2=dict(domain=[0.56, 1], anchor="y2", **k_axis),
        yaxis=dict(type="log", exponentformat="power", title_text="λ − 1 (log scale)", anchor="x"),
        yaxis2=dict(type="log", exponentformat="power", title_text="relative excess (log scale)", anchor="x2"),
        annotations=[dict(text=text, xref="paper", yref="paper", x=x, y=1.0, xanchor="center", yanchor="bottom",
                          showarrow=False, font=dict(size=14))
                     for text, x in (("stretch per place λ − 1", 0.22), ("excess over the bound: λ/λ_min − 1", 0.78))],
        shapes=shapes, height=440, legend=dict(orientation="h", y=-0.25, yanchor="top", x=0), margin=dict(b=120),
    )
    return figure


# --- export ---------------------------------------------------------------------------------


def export_figures(**overrides) -> dict[str, go.Figure]:
    """Every figure of the page at its default parameters (keyword overrides: see ``DEFAULTS``)."""
    from pe_core.beta_base import (
        conversion_stretch,
        dial_pairs,
        digit_views,
        log_range,
        log_stretch_bound,
        ntk_stretch,
        outside_seen_arc,
        pair_phases,
        pair_turns,
        rope_beta,
        sample_numbers,
        seen_phase_limit,
    )
    from pe_core.methods import method_setup
    from pe_core.rope import default_inv_freq, wavelengths

    settings = {**DEFAULTS, **overrides}
    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown settings for the β-base figures: {', '.join(sorted(unknown))}")
    beta, places, factor, number = settings["beta"], settings["places"], settings["factor"], settings["number"]
    numbers = sample_numbers(log_range(beta, places) + math.log(factor))
    views = digit_views(numbers, beta, places, factor, whole_base=settings["whole_base"])
    zoom = zoom_numbers(number, views.new_base)
    zoom_views = digit_views(zoom, beta, places, factor, whole_base=settings["whole_base"])

    head_dim, base = settings["head_dim"], settings["base"]
    train_length, scale = settings["train_length"], settings["scale"]
    target = int(train_length * scale)
    position = max(1, int(round(settings["position_in_l"] * train_length)) - 1)
    setups = [method_setup(m, head_dim, base, train_length, target) for m in ("direct", "pi", "ntk")]
    inv_freqs = torch.stack([s.frequencies().inv_freq for s in setups])
    train_inv_freq = default_inv_freq(base, head_dim)
    shown = dial_pairs(head_dim // 2)
    titles = [s.title for s in setups]
    phases = pair_phases(inv_freqs[:, shown], position)
    dials = phase_dials_figure(titles, shown, phases, seen_phase_limit(train_inv_freq[shown], train_length),
                               outside_seen_arc(phases, train_inv_freq[shown], train_length), position,
                               wavelengths(train_inv_freq[shown]))
    turns = pair_turns_figure(titles, pair_turns(inv_freqs, position),
                              pair_turns(train_inv_freq, train_length - 1), position, train_length)

    ks = bound_factors(settings["max_factor"])
    pairs = head_dim // 2
    bound = stretch_bound_figure(ks, log_stretch_bound(ks, rope_beta(base, head_dim), pairs),
                                 torch.log(conversion_stretch(ks, pairs)), torch.log(ntk_stretch(ks, pairs)),
                                 f"RoPE: d = {head_dim}, b = {base:,.0f}, P = d/2 = {pairs}", scale)
    return {
        "digits_against_n": digits_against_n_figure(numbers, views, number),
        "units_digit_zoom": units_digit_zoom_figure(zoom, zoom_views),
        "phase_dials": dials,
        "pair_turns": turns,
        "stretch_bound": bound,
    }


DEFAULTS = {
    "beta": 10.0, "places": 3, "factor": 2.0, "number": 1749, "whole_base": False,
    "head_dim": 128, "base": 10_000.0, "train_length": 4096, "scale": 4.0, "position_in_l": 4.0,
    "max_factor": 1e6,
}


def zoom_numbers(number: float, largest_base: float, at_most: int = 121) -> torch.Tensor:
    """Whole numbers around ``number`` spanning about three cycles of the widest units digit."""
    half = int(min(max(10, math.ceil(1.5 * largest_base)), (at_most - 1) // 2))
    start = max(0, int(number) - half)
    return torch.arange(start, start + 2 * half + 1, dtype=torch.float64)


def bound_factors(max_factor: float, samples: int = 200) -> torch.Tensor:
    """k from just above 1 to ``max_factor`` on a log grid (k = 1 needs no stretch at all)."""
    return torch.logspace(math.log10(1.01), math.log10(max_factor), samples, dtype=torch.float64)
