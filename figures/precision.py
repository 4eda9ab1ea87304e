"""Figures for "Low-precision positions": exact positions per dtype, collision groups, RoPE errors.

Every function takes values already computed by ``pe_core.precision`` and returns a slide-ready
figure; ``export_figures`` computes and draws them all at the page's defaults.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import PALETTE, SEQUENTIAL, new_figure

# The page's defaults (its widgets start here, and the export CLI draws these).
DEFAULTS = {
    "head_dim": 128,
    "base": 10_000.0,
    "method": "direct",
    "train_length": 4096,
    "length": 8192,  # L': positions 0 .. L'−1
    "low_dtype": "bfloat16",
    "zoom_dtype": "bfloat16",
    "zoom_start": 248,
    "zoom_width": 32,
    "heatmap_order": "all_low",
}

DTYPE_COLOURS = {"bfloat16": PALETTE[1], "float16": PALETTE[0], "float32": PALETTE[2], "float64": PALETTE[6]}
ORDER_COLOURS = {"safe": PALETTE[2], "positions": PALETTE[1], "inv_freq": PALETTE[4], "cos_sin": PALETTE[5],
                 "all_low": PALETTE[3]}
OVERFLOW_FILL = "rgba(213, 94, 0, 0.10)"
MAX_LINE_POINTS = 1500  # per line actually sent to the browser
GROUP_COLOURS = (PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3], PALETTE[4])
EXACT_COLOUR = "#555555"
SMALLEST_SHOWN_ERROR = 1e-9  # rad; exact zeros are drawn at this floor on log axes


def _array(values, dtype=np.float64) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=dtype)


def max_envelope(x, y, max_points: int = MAX_LINE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points that keep every peak: the maximum of each equal slice of the line.

    Non-finite values (overflow) become NaN, so the line breaks there instead of spiking to inf.
    """
    x, y = _array(x), _array(y)
    y = np.where(np.isfinite(y), y, np.nan).astype(np.float32)  # what a screen can tell apart, half the bytes
    if len(x) <= max_points:
        return x, y
    width = math.ceil(len(x) / max_points)
    count = math.ceil(len(x) / width)
    padded = np.full(count * width, np.nan, dtype=np.float32)
    padded[: len(y)] = y
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice (overflow) stays NaN, as intended
        peaks = np.nanmax(padded.reshape(count, width), axis=1)
    return x[::width], peaks


def _power_of_two_ticks(low_exponent: int, high_exponent: int, step: int = 4) -> dict:
    exponents = range(low_exponent, high_exponent + 1, step)
    return dict(tickvals=[2.0**k for k in exponents], ticktext=[_power_label(k) for k in exponents])


def _power_label(exponent: int) -> str:
    if exponent < 0:
        return f"2<sup>{exponent}</sup>"
    return f"{2**exponent:,}"


def _overflow_band(figure: go.Figure, start: float, end: float, text: str, *, log_x: bool = False) -> None:
    """Shade [start, end] on x and label it (annotations on a log axis take log10 of the value)."""
    if end <= start:
        return
    figure.add_vrect(x0=start, x1=end, fillcolor=OVERFLOW_FILL, line_width=0, layer="below")
    figure.add_annotation(x=math.log10(start) if log_x else start, xref="x", y=0.55, yref="paper", text=text,
                          xanchor="left", xshift=6, showarrow=False, font=dict(size=12, color=PALETTE[1]))


def _level_line(figure: go.Figure, y: float, text: str, *, log_y: bool = False) -> None:
    """A dashed horizontal reference line, labelled at its right end."""
    figure.add_hline(y=y, line=dict(color="#444", dash="dash", width=1.2))
    figure.add_annotation(x=0.99, xref="paper", y=math.log10(y) if log_y else y, yref="y", text=text,
                          xanchor="right", yanchor="bottom", showarrow=False, font=dict(size=12, color="#444"))


LEGEND_BELOW = dict(orientation="h", x=0.0, xanchor="left", y=-0.2, yanchor="top")


# --- how many positions survive -----------------------------------------------------------------


def exact_fraction_figure(lengths, fractions: Mapping[str, object], *, marked_length: int | None = None,
                          marked_fractions: Mapping[str, float] | None = None,
                          first_inexact: Mapping[str, int] | None = None,
                          float16_overflow: int | None = None) -> go.Figure:
    """Share of positions 0 .. L−1 stored exactly against L (log axis), one line per dtype.

    ``marked_fractions`` (dtype -> exact fraction at ``marked_length``) are drawn as labelled points.
    """
    lengths = _array(lengths)
    figure = new_figure(
        "Share of positions 0…L−1 that each dtype stores exactly",
        xaxis=dict(title="sequence length L (positions 0 … L−1), log scale", type="log",
                   **_power_of_two_ticks(0, int(math.log2(lengths.max())))),
        yaxis=dict(title="positions stored exactly (%)", range=[0, 108]),
        legend=LEGEND_BELOW,
        height=540,
    )
    for name, fraction in fractions.items():
        values = 100 * _array(fraction)
        note = f" (first inexact: {first_inexact[name]:,})" if first_inexact and name in first_inexact else ""
        figure.add_trace(go.Scatter(
            x=lengths, y=values, mode="lines", name=f"{name}{note}", line=dict(color=DTYPE_COLOURS.get(name)),
            hovertemplate=f"{name}<br>L = %{{x:,.0f}}<br>%{{y:.2f}}% exact<extra></extra>",
        ))
    if float16_overflow is not None and "float16" in fractions:
        _overflow_band(figure, float16_overflow, float(lengths.max()), f"float16: ≥ {float16_overflow:,} → inf",
                       log_x=True)
    if marked_length is not None:
        figure.add_vline(x=marked_length, line=dict(color="#444", dash="dash", width=1.2))
        for name, fraction in (marked_fractions or {}).items():
            at = 100 * fraction
            figure.add_trace(go.Scatter(
                x=[marked_length], y=[at], mode="markers+text", showlegend=False,
                marker=dict(color=DTYPE_COLOURS.get(name), size=9), text=[f"{at:.1f}%" if at < 99.95 else ""],
                textposition="middle right", textfont=dict(color=DTYPE_COLOURS.get(name)),
                hovertemplate=f"{name} at L = {marked_length:,}: %{{y:.2f}}%<extra></extra>",
            ))
        figure.add_annotation(x=math.log10(marked_length), y=104, text=f"L' = {marked_length:,}",
                              showarrow=False, xanchor="right", xshift=-4, font=dict(size=12))
    return figure


def binade_spacing_figure(exponents, spacings: Mapping[str, object], *,
                          float16_overflow: int | None = None) -> go.Figure:
    """The gap between neighbouring representable numbers in each binade [2^k, 2^(k+1)), per dtype."""
    exponents = _array(exponents, np.int64)
    top = int(exponents.max()) + 1
    figure = new_figure(
        "Gap between neighbouring representable numbers, binade by binade",
        xaxis=dict(title="value (binade [2^k, 2^(k+1)) starts here), log scale", type="log",
                   **_power_of_two_ticks(0, top)),
        yaxis=dict(title="gap to the next representable number, log scale", type="log",
                   exponentformat="power"),
        legend=LEGEND_BELOW,
        height=500,
    )
    _level_line(figure, 1.0, "gap 1: above this line neighbouring positions collide", log_y=True)
    for name, spacing in spacings.items():
        gaps = _array(spacing)
        finite = np.isfinite(gaps)
        starts = 2.0 ** exponents[finite]
        # Each binade's gap holds until the next binade starts: a step line with an explicit end point.
        x = np.append(starts, 2.0 ** (exponents[finite][-1] + 1))
        y = np.append(gaps[finite], gaps[finite][-1])
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", line_shape="hv", name=name, line=dict(color=DTYPE_COLOURS.get(name)),
            hovertemplate=f"{name}<br>from %{{x:,.0f}}: gap %{{y:.3g}}<extra></extra>",
        ))
    if float16_overflow is not None and "float16" in spacings:
        _overflow_band(figure, float16_overflow, 2.0**top, f"float16: ≥ {float16_overflow:,} → inf", log_x=True)
    return figure


def collision_window_figure(positions, stored, group, exact, dtype: str) -> go.Figure:
    """Positions n … n+w−1 against the value each becomes in ``dtype``; collision groups share a colour."""
    positions, stored = _array(positions, np.int64), _array(stored)
    group, exact = _array(group, np.int64), _array(exact, bool)
    finite = np.isfinite(stored)
    first, last = int(positions[0]), int(positions[-1])
    figure = new_figure(
        f"Positions {first:,}…{last:,} stored in {dtype}",
        xaxis=dict(title="position m", tickformat=",d"),
        yaxis=dict(title=f"value stored in {dtype}", tickformat=",d"),
        legend=dict(x=0.01, y=0.99, xanchor="left", yanchor="top"),
        height=460,
    )
    figure.add_trace(go.Scatter(
        x=[first, last], y=[first, last], mode="lines", name="stored = position (no error)",
        line=dict(color="#999", dash="dot", width=1.5), hoverinfo="skip",
    ))
    sizes = np.bincount(group - group.min())[group - group.min()]
    shared = finite & (sizes > 1)
    colours = np.array(GROUP_COLOURS, dtype=object)[group % len(GROUP_COLOURS)]
    if shared.any():
        figure.add_trace(go.Scatter(
            x=positions[shared], y=stored[shared], mode="markers", name="collision group (same colour = same value)",
            marker=dict(color=list(colours[shared]), size=9, symbol="circle"),
            customdata=np.stack([sizes[shared], exact[shared]], axis=1),
            hovertemplate="position %{x:,} → %{y:,}<br>group of %{customdata[0]}<extra></extra>",
        ))
    alone = finite & ~shared
    if alone.any():
        figure.add_trace(go.Scatter(
            x=positions[alone], y=stored[alone], mode="markers", name="no collision",
            marker=dict(color=EXACT_COLOUR, size=7, symbol="circle-open", line=dict(width=2)),
            hovertemplate="position %{x:,} → %{y:,}<extra></extra>",
        ))
    if (~finite).any():
        ceiling = float(np.nanmax(np.where(finite, stored, np.nan))) if finite.any() else float(last)
        ceiling = max(ceiling, float(last))
        figure.add_trace(go.Scatter(
            x=positions[~finite], y=np.full(int((~finite).sum()), ceiling), mode="markers",
            name="overflow: stored as inf (drawn at the top)", marker=dict(color=PALETTE[1], size=9, symbol="x"),
            hovertemplate="position %{x:,} → inf<extra></extra>",
        ))
    return figure


# --- what it does to RoPE ---------------------------------------------------------------------


def _first_infinite_position(positions, values) -> int | None:
    """The first position whose value (any order) is inf: where float16 overflow starts."""
    positions, values = _array(positions, np.int64), _array(values)
    bad = ~np.isfinite(values)
    if values.ndim > 1:
        bad = bad.any(0)
    return int(positions[bad][0]) if bad.any() else None


def angle_error_figure(positions, max_angle_error, order_titles: Mapping[str, str]) -> go.Figure:
    """Worst angle error over the pairs at each position, one line per order of operations (log y)."""
    errors = _array(max_angle_error)
    figure = new_figure(
        "RoPE angle error: the worst pair at each position",
        xaxis=dict(title="position m", tickformat=",d"),
        yaxis=dict(title="max over pairs of |angle error| (rad), log scale", type="log", exponentformat="power",
                   range=[math.log10(SMALLEST_SHOWN_ERROR), math.log10(2 * math.pi)]),
        legend=LEGEND_BELOW,
        height=560,
    )
    for (order, title), row in zip(order_titles.items(), errors, strict=True):
        x, y = max_envelope(positions, np.maximum(row, SMALLEST_SHOWN_ERROR))
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=title, line=dict(color=ORDER_COLOURS.get(order), width=1.8),
            hovertemplate=f"{title}<br>m ≈ %{{x:,}}<br>%{{y:.3g}} rad<extra></extra>",
        ))
    _level_line(figure, math.pi, "π: no information left in the angle", log_y=True)
    overflow = _first_infinite_position(positions, errors)
    if overflow is not None:
        _overflow_band(figure, overflow, float(_array(positions).max()), "overflow: cos/sin are NaN")
    return figure


def angle_error_heatmap(bucket_starts, angle_error_map, order_title: str) -> go.Figure:
    """|angle error| per pair (x) and position range (y) for one order of operations, log colour scale."""
    errors = _array(angle_error_map)
    finite = np.isfinite(errors)
    shown = np.log10(np.maximum(np.where(finite, errors, np.nan), SMALLEST_SHOWN_ERROR))
    low, high = int(math.log10(SMALLEST_SHOWN_ERROR)), 1
    ticks = list(range(low, high + 1, 2))
    figure = new_figure(
        f"Angle error per pair and position: {order_title}",
        xaxis=dict(title="pair i (θ_i = b^(−2i/d): fast → slow)"),
        yaxis=dict(title="position m (start of each row's range)", tickformat=",d"),
        height=480,
    )
    figure.add_trace(go.Heatmap(
        z=shown.astype(np.float32), x=np.arange(errors.shape[1]), y=_array(bucket_starts, np.int64),
        zmin=low, zmax=math.log10(math.pi), colorscale=SEQUENTIAL,
        colorbar=dict(title=dict(text="|error| (rad)"), tickvals=ticks, ticktext=[f"10<sup>{t}</sup>" for t in ticks]),
        hovertemplate="pair %{x}<br>positions from %{y:,}<br>log10 error %{z:.2f}<extra></extra>",
    ))
    return figure


def logit_error_figure(positions, logit_error, order_titles: Mapping[str, str], query_position: int) -> go.Figure:
    """|q·k/√d − exact| for the query at the last position and keys at every position, per order (log y)."""
    errors = _array(logit_error)
    figure = new_figure(
        f"Attention-logit error q·k/√d, query at position {query_position:,}",
        xaxis=dict(title="key position n", tickformat=",d"),
        yaxis=dict(title="|logit error| (logit units), log scale", type="log", exponentformat="power"),
        legend=LEGEND_BELOW,
        height=540,
    )
    for (order, title), row in zip(order_titles.items(), errors, strict=True):
        # The query sits at the last position, so if any position overflowed the query did too: then no logit
        # of that order is finite, and the legend says why its line is missing.
        name = title if np.isfinite(row).any() else f"{title}: no finite logit (the query position overflowed)"
        x, y = max_envelope(positions, np.maximum(row, 1e-12))
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=name, line=dict(color=ORDER_COLOURS.get(order), width=1.8),
            hovertemplate=f"{title}<br>n ≈ %{{x:,}}<br>%{{y:.3g}}<extra></extra>",
        ))
    return figure


def summary_rows(summaries: Sequence) -> list[dict]:
    """The collision summary as table rows (one per dtype), for the page and for export."""
    return [
        {
            "dtype": s.dtype,
            "first inexact position": f"{s.first_inexact:,}",
            "exact positions": f"{s.exact:,} of {s.length:,}",
            "exact (%)": round(100 * s.exact_fraction, 2),
            "distinct stored values": s.distinct,
            "largest collision group": s.largest_group,
            "overflowed to inf": s.overflowed,
        }
        for s in summaries
    ]


def export_figures(**overrides) -> dict[str, go.Figure]:
    """Every figure of the page at its defaults (override any DEFAULTS key)."""
    from pe_core import method_setup
    from pe_core import precision as pp

    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown figure settings: {', '.join(sorted(unknown))}.")
    p = {**DEFAULTS, **overrides}
    figures: dict[str, go.Figure] = {}

    curve = pp.exact_fraction_curve()
    first_inexact = {name: pp.first_inexact_position(name) for name in pp.PRECISION_DTYPES}
    overflow = pp.first_overflow_position("float16")
    marked = {name: pp.exact_position_fraction(p["length"], name) for name in pp.PRECISION_DTYPES}
    figures["exact_fraction"] = exact_fraction_figure(curve.lengths, curve.fractions, marked_length=p["length"],
                                                      marked_fractions=marked, first_inexact=first_inexact,
                                                      float16_overflow=overflow)
    spacing = {name: pp.binade_spacing(name) for name in pp.PRECISION_DTYPES}
    figures["binade_spacing"] = binade_spacing_figure(spacing["bfloat16"].exponents,
                                                      {k: v.spacing for k, v in spacing.items()},
                                                      float16_overflow=overflow)
    window = pp.collision_window(p["zoom_start"], p["zoom_width"], p["zoom_dtype"])
    figures["collision_window"] = collision_window_figure(*window, pp.dtype_name(p["zoom_dtype"]))

    setup = method_setup(p["method"], p["head_dim"], p["base"], p["train_length"], p["length"])
    frequencies = setup.frequencies()
    errors = pp.rope_precision_error(frequencies.inv_freq, p["length"], p["low_dtype"],
                                     frequencies.attention_factor)
    titles = {order: pp.order_title(order, p["low_dtype"]) for order in errors.orders}
    figures["angle_error"] = angle_error_figure(errors.positions, errors.max_angle_error, titles)
    shown = errors.orders.index(p["heatmap_order"])
    figures["angle_error_map"] = angle_error_heatmap(errors.bucket_starts, errors.angle_error_map[shown],
                                                     pp.order_title(p["heatmap_order"], p["low_dtype"], short=True))
    figures["logit_error"] = logit_error_figure(errors.positions, errors.logit_error, titles, errors.query_position)
    return figures
