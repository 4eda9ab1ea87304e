"""Figures for "Long-range decay": RoFormer's bound, sinusoidal dot products, real q·k against distance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures.theme import PALETTE, method_colour, new_figure
from pe_core.decay import (
    BoundCurve,
    Curve,
    ScoreStatistics,
    all_ones_rope_score,
    decay_bound_curve,
    decimated,
    expected_rope_score,
    projected_sinusoidal_statistics,
    projection_head_dim,
    projection_matrix,
    rope_score_statistics,
    sinusoidal_dot_products,
    sinusoidal_similarity,
)
from pe_core.methods import method_setup
from pe_core.rope import RopeSpec, rope_frequencies

BOUND_TITLE = "RoFormer's decay bound against relative distance"
METHODS_TITLE = "The decay bound under context-extension methods"
SINUSOIDAL_TITLE = "Sinusoidal encodings: PE(t)·PE(t+k) against offset k"
SIMILARITY_TITLE = "Similarity of positions PE(i)·PE(j)"
PROJECTED_SIMILARITY_TITLE = "Through random W_q, W_k"
ROPE_SCORES_TITLE = "RoPE q·k against distance: fixed and random vectors"
PROJECTED_SCORES_TITLE = "Sinusoidal PEs through random W_q, W_k: no clean decay"

DEFAULTS = {
    "head_dims": (128,),
    "bases": (10_000.0, 500_000.0, 1_000_000.0),
    "max_distance": 65_536,
    "log_axis": True,
    "head_dim": 128,
    "base": 10_000.0,
    "train_length": 4096,
    "scale": 4.0,
    "methods": ("direct", "pi", "ntk", "yarn"),
    "d_model": 128,
    "sinusoidal_base": 10_000.0,
    "max_offset": 1024,
    "positions": 128,
    "correlation": 0.5,
    "draws": 256,
    "seed": 0,
}

LEGEND_ON_TOP = dict(orientation="h", x=0, xanchor="left", y=1.01, yanchor="bottom")
LEGEND_BELOW = dict(orientation="h", x=0, xanchor="left", y=-0.17, yanchor="top")
DASHES = ("solid", "dash", "dot", "dashdot")
BAND_COLOUR = "rgba(0, 114, 178, 0.18)"
REFERENCE_COLOUR = "#555"
DRAW_COLOURS = ("#999999", "#CC79A7", "#E69F00", "#56B4E9")


class BoundTrace(NamedTuple):
    label: str
    bound: BoundCurve
    colour: str
    dash: str = "solid"


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def _draws(count: int) -> str:
    return f"{count:,} draw" + ("" if count == 1 else "s")


def _distance_axis(log_axis: bool, title: str) -> dict:
    axis: dict = {"title": title + (" · log scale" if log_axis else "")}
    if log_axis:
        axis.update(type="log", exponentformat="power", dtick=1)
    return axis


def _screen(values: torch.Tensor):
    """What the browser receives: float32 is more than a screen (or a hover label) can show, at half the bytes."""
    return values.to(torch.float32).numpy()


def _line(x: torch.Tensor, y: torch.Tensor, name: str, **style) -> go.Scatter:
    return go.Scatter(x=_screen(x), y=_screen(y), name=name, mode="lines", **style)


def _band(upper: Curve, lower: Curve, name: str, colour: str = BAND_COLOUR, **style) -> go.Scatter:
    """One closed polygon: the upper edge left to right, then the lower edge back."""
    x = torch.cat((upper.x, lower.x.flip(0)))
    y = torch.cat((upper.y, lower.y.flip(0)))
    return go.Scatter(x=_screen(x), y=_screen(y), name=name, mode="lines", fill="toself", fillcolor=colour,
                      line=dict(width=0), hoverinfo="skip", **style)


def _translucent(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _vertical_line(x: float, y_low: float, y_high: float, label: str, colour: str, dash: str = "dot",
                   side: str = "right") -> go.Scatter:
    """A labelled vertical line drawn as a trace, so it lands right on log axes too (annotations would not)."""
    return go.Scatter(x=[x, x], y=[y_low, y_high], mode="lines+text", text=["", label], textposition=f"bottom {side}",
                      textfont=dict(size=11, color=colour), line=dict(color=colour, dash=dash, width=1.3),
                      showlegend=False, hoverinfo="skip", name=label)


def _horizontal_line(y: float, colour: str = REFERENCE_COLOUR, dash: str = "dot") -> dict:
    """A full-width line as a layout shape (plotly's add_hline costs tens of ms per call)."""
    return dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=y, y1=y, layer="below",
                line=dict(color=colour, dash=dash, width=1.2))


def _bound_traces(traces: Sequence[BoundTrace], log_axis: bool) -> list[go.Scatter]:
    y_high = max(float(t.bound.curve.high.max()) for t in traces)
    y_low = min(float(t.bound.curve.low.min()) for t in traces)
    drawn: list[go.Scatter] = []
    for trace in traces:
        bound, curve = trace.bound, trace.bound.curve
        if bool((curve.high > curve.low).any()):
            drawn.append(_band(Curve(curve.x, curve.high), Curve(curve.x, curve.low), f"{trace.label}: min–max",
                               _translucent(trace.colour, 0.16), legendgroup=trace.label, showlegend=False))
        drawn.append(_line(curve.x, curve.mean, trace.label, legendgroup=trace.label,
                           line=dict(color=trace.colour, dash=trace.dash)))
        if bound.first_at_level is not None and (bound.first_at_level > 0 or not log_axis):
            drawn.append(go.Scatter(
                x=[bound.first_at_level], y=[bound.level], mode="markers", legendgroup=trace.label,
                showlegend=False, name=f"{trace.label}: reaches the level",
                marker=dict(symbol="circle-open", size=13, color=trace.colour, line=dict(width=2.5)),
                hovertemplate=f"{trace.label}<br>first at the random-phase level: r = %{{x:,.0f}}<extra></extra>",
            ))
        if bound.longest_wavelength <= bound.max_distance:  # label lower than L and L' so they do not collide
            drawn.append(_vertical_line(bound.longest_wavelength, y_low, y_low + 0.86 * (y_high - y_low),
                                        f"λ_max = {_number(bound.longest_wavelength)} ", trace.colour, side="left"))
    return drawn


def _level_marks(traces: Sequence[BoundTrace]) -> tuple[list[dict], list[dict]]:
    """The random-phase level of each head size: a dotted line and its label (paper x, so log axes are fine)."""
    levels = sorted({round(t.bound.level, 9) for t in traces})
    shapes = [_horizontal_line(level) for level in levels]
    annotations = [dict(xref="paper", x=0.005, xanchor="left", yref="y", y=level,
                        yanchor="top" if index == 0 else "bottom", showarrow=False, font=dict(size=11),
                        text=f"random-phase level {level:.2f}") for index, level in enumerate(levels)]
    return shapes, annotations


def decay_bound_figure(traces: Sequence[BoundTrace], *, log_axis: bool = True, title: str = BOUND_TITLE,
                       extra_traces: Sequence[go.Scatter] = ()) -> go.Figure:
    """The bound (1/N)Σ|S_j| against r, one line per set-up, with the random-phase level and where it is reached."""
    shapes, annotations = _level_marks(traces)
    figure = new_figure(
        title,
        xaxis=_distance_axis(log_axis, "relative distance r = m − n (tokens)"),
        yaxis_title="bound (1/N) Σⱼ |Sⱼ(r)|",
        legend=LEGEND_ON_TOP, margin=dict(t=110),
        height=480,
        shapes=shapes,
        annotations=annotations,
    )
    if traces:
        figure.add_traces([*_bound_traces(traces, log_axis), *extra_traces])
    return figure


def methods_bound_figure(traces: Sequence[BoundTrace], *, train_length: int, target_length: int, head_dim: int,
                         base: float, log_axis: bool = True, title: str = METHODS_TITLE) -> go.Figure:
    """The bound for each method's θ', with the training length L and the target L' marked."""
    details = f"<br><sup>d = {head_dim}, base {base:,.0f}, L = {train_length:,}, s = {target_length / train_length:g}</sup>"
    marks = []
    if traces:
        y_high = max(float(t.bound.curve.high.max()) for t in traces)
        y_low = min(float(t.bound.curve.low.min()) for t in traces)
        lengths = {train_length: f"L = {train_length:,}", target_length: f"L' = {target_length:,}"}
        if target_length == train_length:
            lengths = {train_length: f"L = L' = {train_length:,}"}
        marks = [_vertical_line(length, y_low, y_high - index * 0.07 * (y_high - y_low), label, "#222", dash="dash")
                 for index, (length, label) in enumerate(lengths.items())]
    return decay_bound_figure(traces, log_axis=log_axis, title=title + details, extra_traces=marks)


def sinusoidal_dot_figure(offsets: torch.Tensor, values: torch.Tensor, *, d_model: int, base: float,
                          title: str = SINUSOIDAL_TITLE) -> go.Figure:
    """Σ cos(k ω_i) against k ∈ [−K, K]: maximal (d/2) at 0, symmetric, oscillating towards 0."""
    curve = decimated(offsets, values, bins=900)
    annotations = [dict(x=0, y=d_model / 2, text=f"k = 0: d/2 = {d_model // 2}", showarrow=True, ax=60, ay=10)]
    negative = int(values.argmin())
    if values[negative] < 0:
        annotations.append(dict(x=float(offsets[negative]), y=float(values[negative]), showarrow=True, ax=0, ay=35,
                                text=f"negative: {float(values[negative]):.1f} at k = {float(offsets[negative]):,.0f}"))
    figure = new_figure(
        f"{title}<br><sup>d = {d_model}, base {base:,.0f}</sup>",
        xaxis_title="offset k (tokens)",
        yaxis_title="PE(t)·PE(t+k) = Σᵢ cos(k ωᵢ)",
        showlegend=False,
        height=420,
        shapes=[_horizontal_line(0.0, dash="solid")],
        annotations=annotations,
    )
    figure.add_trace(_line(curve.x, curve.y, "PE(t)·PE(t+k)", line=dict(color=PALETTE[0])))
    return figure


def similarity_figure(matrix: torch.Tensor, *, title: str, colour_title: str) -> go.Figure:
    """An N × N heatmap of position-to-position scores, centred on 0 (blue +, red −)."""
    size = matrix.shape[0]
    limit = float(matrix.abs().max())
    figure = new_figure(title, height=520, width=620,
                        xaxis=dict(title="key position j", range=[-0.5, size - 0.5], constrain="domain"),
                        yaxis=dict(title="query position i", autorange="reversed", scaleanchor="x", constrain="domain"))
    figure.add_trace(go.Heatmap(z=_screen(matrix), x0=0, dx=1, y0=0, dy=1, colorscale="RdBu", zmin=-limit,
                                zmax=limit, colorbar=dict(title=dict(text=colour_title, side="right"))))
    return figure


def rope_scores_figure(distances: torch.Tensor, ones: torch.Tensor, expected: torch.Tensor, statistics: ScoreStatistics,
                       *, correlation: float, draws: int, head_dim: int, base: float,
                       title: str = ROPE_SCORES_TITLE) -> go.Figure:
    """(a) q = k = 1, (b) random q, k with correlation ρ: mean ± one standard deviation over draws, and one draw."""
    figure = new_figure(
        f"{title}<br><sup>d = {head_dim}, base {base:,.0f}</sup>",
        xaxis_title="relative distance r = m − n (tokens)",
        yaxis_title="score (R_m q)·(R_n k)",
        legend=LEGEND_BELOW, margin=dict(b=130),
        height=540,
        shapes=[_horizontal_line(0.0, dash="solid")],
    )
    upper = decimated(distances, statistics.mean + statistics.std, bins=600)
    lower = decimated(distances, statistics.mean - statistics.std, bins=600)
    drawn = [_band(upper, lower, f"(b) mean ± 1 s.d. over {_draws(draws)}")]
    if statistics.draws.shape[0]:
        one = decimated(distances, statistics.draws[0], bins=600)
        drawn.append(_line(one.x, one.y, "(b) a single draw", line=dict(color=DRAW_COLOURS[0], width=1)))
    ones_curve = decimated(distances, ones, bins=600)
    drawn.append(_line(ones_curve.x, ones_curve.y, "(a) q = k = (1, …, 1)", line=dict(color=PALETTE[1])))
    mean = decimated(distances, statistics.mean, bins=600)
    drawn.append(_line(mean.x, mean.y, f"(b) mean over draws, ρ = {correlation:g}", line=dict(color=PALETTE[0])))
    theory = decimated(distances, expected, bins=600)
    drawn.append(_line(theory.x, theory.y, f"expected 2ρ Σ cos(rθᵢ), ρ = {correlation:g}",
                       line=dict(color="#222", dash="dash", width=1.5)))
    figure.add_traces(drawn)
    return figure


def projected_scores_figure(offsets: torch.Tensor, plain: torch.Tensor, statistics: ScoreStatistics, *, draws: int,
                            d_model: int, base: float, title: str = PROJECTED_SCORES_TITLE) -> go.Figure:
    """(c) (W_q PE(t))·(W_k PE(t+k)): a few draws, the mean and spread over all draws, and PE·PE for reference."""
    figure = new_figure(
        f"{title}<br><sup>d = {d_model}, base {base:,.0f}, head width {projection_head_dim(d_model)}</sup>",
        xaxis_title="offset k of the key from the query (tokens)",
        yaxis_title="score (W_q PE(t))·(W_k PE(t+k))",
        legend=LEGEND_BELOW, margin=dict(b=130),
        height=540,
    )
    upper = decimated(offsets, statistics.mean + statistics.std, bins=600)
    lower = decimated(offsets, statistics.mean - statistics.std, bins=600)
    drawn = [_band(upper, lower, f"mean ± 1 s.d. over {_draws(draws)}")]
    for index in range(statistics.draws.shape[0]):
        curve = decimated(offsets, statistics.draws[index], bins=600)
        drawn.append(_line(curve.x, curve.y, f"draw {index + 1}",
                           line=dict(color=DRAW_COLOURS[(index + 1) % len(DRAW_COLOURS)], width=1.2)))
    mean = decimated(offsets, statistics.mean, bins=600)
    drawn.append(_line(mean.x, mean.y, "mean over draws", line=dict(color=PALETTE[0], width=2.5)))
    reference = decimated(offsets, plain, bins=600)
    drawn.append(_line(reference.x, reference.y, "no projection: PE(t)·PE(t+k)",
                       line=dict(color="#222", dash="dash", width=1.5)))
    figure.add_traces(drawn)
    return figure


# --- computing what the figures show (shared by the page's cached calls and the export CLI) ------


def bound_traces_for_bases(head_dims: Sequence[int], bases: Sequence[float], max_distance: int, log_axis: bool,
                           bound=None) -> list[BoundTrace]:
    """One trace per (head dim, base): colour by base, dash by head dim. ``bound`` may be a cached version."""
    bound = bound or spec_bound
    traces = []
    for dim_index, head_dim in enumerate(head_dims):
        for base_index, base in enumerate(bases):
            spec = RopeSpec(head_dim=int(head_dim), base=float(base))
            label = f"base {base:,.0f}" + (f", d = {head_dim}" if len(head_dims) > 1 else "")
            traces.append(BoundTrace(label, bound(spec, None, max_distance, log_axis), method_colour(base_index),
                                     DASHES[dim_index % len(DASHES)]))
    return traces


def bound_traces_for_setups(setups, max_distance: int, log_axis: bool, bound=None) -> list[BoundTrace]:
    bound = bound or spec_bound
    return [BoundTrace(setup.title, bound(setup.spec, setup.seq_len, max_distance, log_axis), method_colour(index))
            for index, setup in enumerate(setups)]


def spec_bound(spec: RopeSpec, seq_len: int | None, max_distance: int, log_axis: bool) -> BoundCurve:
    """The bound curve for a spec."""
    return decay_bound_curve(rope_frequencies(spec, seq_len).inv_freq, max_distance, log_axis)


def frequencies_of(spec: RopeSpec, seq_len: int | None) -> tuple[float, ...]:
    """θ as plain floats (exact): a cache key under which specs with equal frequencies share one curve."""
    return tuple(rope_frequencies(spec, seq_len).inv_freq.tolist())


def bound_of_frequencies(frequencies: tuple[float, ...], max_distance: int, log_axis: bool) -> BoundCurve:
    return decay_bound_curve(torch.tensor(frequencies, dtype=torch.float64), max_distance, log_axis)


def rope_scores_data(head_dim: int, base: float, max_offset: int, draws: int, correlation: float, seed: int):
    inv_freq = rope_frequencies(RopeSpec(head_dim=head_dim, base=base)).inv_freq
    distances = torch.arange(max_offset + 1, dtype=torch.float64)
    return (distances, all_ones_rope_score(inv_freq, distances), expected_rope_score(inv_freq, distances, correlation),
            rope_score_statistics(inv_freq, distances, draws, correlation, seed))


def projected_scores_data(d_model: int, base: float, max_offset: int, draws: int, seed: int):
    offsets = torch.arange(-max_offset, max_offset + 1, dtype=torch.float64)
    statistics = projected_sinusoidal_statistics(offsets, d_model, base, max_offset, draws, seed)
    return offsets, sinusoidal_dot_products(offsets, d_model, base), statistics


def sinusoidal_data(d_model: int, base: float, max_offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    offsets = torch.arange(-max_offset, max_offset + 1, dtype=torch.float64)
    return offsets, sinusoidal_dot_products(offsets, d_model, base)


def similarity_data(positions: int, d_model: int, base: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    return (sinusoidal_similarity(positions, d_model, base),
            sinusoidal_similarity(positions, d_model, base, projection_matrix(d_model, seed)))


def export_figures(**overrides) -> dict[str, go.Figure]:
    """Every figure of the page at its defaults (override any key of ``DEFAULTS``)."""
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(sorted(unknown))}; choose from {', '.join(DEFAULTS)}.")
    p = {**DEFAULTS, **overrides}
    target = min(int(round(p["train_length"] * p["scale"])), 1 << 20)
    setups = [method_setup(m, p["head_dim"], p["base"], p["train_length"], target) for m in p["methods"]]
    offsets, dots = sinusoidal_data(p["d_model"], p["sinusoidal_base"], p["max_offset"])
    plain, projected = similarity_data(p["positions"], p["d_model"], p["sinusoidal_base"], p["seed"])
    distances, ones, expected, statistics = rope_scores_data(p["head_dim"], p["base"], p["max_offset"], p["draws"],
                                                             p["correlation"], p["seed"])
    projected_offsets, reference, projected_statistics = projected_scores_data(
        p["d_model"], p["sinusoidal_base"], p["max_offset"], p["draws"], p["seed"])
    return {
        "bound": decay_bound_figure(bound_traces_for_bases(p["head_dims"], p["bases"], p["max_distance"],
                                                           p["log_axis"], spec_bound), log_axis=p["log_axis"]),
        "bound-methods": methods_bound_figure(
            bound_traces_for_setups(setups, p["max_distance"], p["log_axis"], spec_bound),
            train_length=p["train_length"], target_length=target, head_dim=p["head_dim"], base=p["base"],
            log_axis=p["log_axis"]),
        "sinusoidal-dot": sinusoidal_dot_figure(offsets, dots, d_model=p["d_model"], base=p["sinusoidal_base"]),
        "similarity": similarity_figure(plain, title=SIMILARITY_TITLE, colour_title="PE(i)·PE(j)"),
        "similarity-projected": similarity_figure(projected, title=PROJECTED_SIMILARITY_TITLE,
                                                  colour_title="score"),
        "rope-scores": rope_scores_figure(distances, ones, expected, statistics, correlation=p["correlation"],
                                          draws=p["draws"], head_dim=p["head_dim"], base=p["base"]),
        "projected-scores": projected_scores_figure(projected_offsets, reference, projected_statistics,
                                                    draws=p["draws"], d_model=p["d_model"],
                                                    base=p["sinusoidal_base"]),
    }
