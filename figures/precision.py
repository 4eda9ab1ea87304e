"""Figures for "Low-precision positions": exact positions per dtype, collision groups, RoPE errors.

Every function takes values already computed by ``pe_core.precision`` and returns a figure in the
project's visual language (a dtype keeps its colour, dash and marker from ``SERIES_STYLES``);
``lessons.precision`` decides what to draw.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from figures.theme import (
    DASHES,
    HIGHLIGHT,
    LEGEND_BELOW,
    MUTED,
    PALETTE,
    SEQUENTIAL,
    SERIES_STYLES,
    new_figure,
    series_colour,
    translucent,
)
from figures.values import as_array
from i18n import N_, _

FRACTION_TITLE = N_("Share of positions 0 … L′ − 1 that each dtype stores exactly")
SPACING_TITLE = N_("Gap between neighbouring representable numbers, binade by binade")
WINDOW_TITLE = N_("Which positions collide: a window of positions and the values they are stored as")
ANGLE_TITLE = N_("RoPE angle error: the worst pair at each position")
HEATMAP_TITLE = N_("Angle error per pair and position")
LOGIT_TITLE = N_("Attention-logit error q·k/√d")

# How each order of operations is named: (legend, short) with the low-precision dtype put in.
ORDER_TITLES = {
    "safe": (N_("safe: float32 positions, θ and angles"), N_("safe float32 order")),
    "positions": (N_("positions cast to {dtype}"), N_("positions in {dtype}")),
    "inv_freq": (N_("θ (inv_freq) cast to {dtype} before m·θ"), N_("θ in {dtype}")),
    "cos_sin": (N_("cos/sin rounded to {dtype}"), N_("cos/sin in {dtype}")),
    "all_low": (N_("everything in {dtype} (arange(dtype=inv_freq.dtype))"), N_("everything in {dtype}")),
}
# One colour per stored value in the collision window, cycling: Okabe-Ito without black, yellow and grey
# (black, grey and red mean "exact", "no collision" and "overflow" there).
VALUE_COLOURS = PALETTE[:6]
MAX_VALUES_IN_LEGEND = 12
MAX_LINE_POINTS = 1500  # per line actually sent to the browser
SMALLEST_SHOWN_ERROR = 1e-9  # rad; exact zeros are drawn at this floor on log axes


def order_title(order: str, dtype: str | None = None, *, short: bool = False) -> str:
    """The name of an order of operations with the low-precision dtype in it (no dtype: generic)."""
    if order not in ORDER_TITLES:
        raise ValueError(f"order must be one of {', '.join(ORDER_TITLES)} (got {order!r}).")
    return _(ORDER_TITLES[order][short]).format(dtype=dtype if dtype is not None else _("low precision"))


def dtype_look(name: str, *, markers: bool = False) -> dict:
    """A dtype's colour, dash and marker (``SERIES_STYLES``), tagged in ``meta``."""
    style = SERIES_STYLES[name]
    look = {"line": dict(color=style.colour, dash=style.dash), "meta": {"dtype": name}}
    if markers:
        look["marker"] = dict(color=style.colour, symbol=style.marker)
    return look


def max_envelope(x, y, max_points: int = MAX_LINE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points that keep every peak: the maximum of each equal slice of the line.

    Non-finite values (overflow) become NaN, so the line breaks there instead of spiking to inf.
    """
    x, y = as_array(x).astype(np.float32), as_array(y)  # float32: what a screen can tell apart, half the bytes
    y = np.where(np.isfinite(y), y, np.nan).astype(np.float32)
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
    return dict(tickvals=[2.0**k for k in exponents], ticktext=[f"{2**k:,}" for k in exponents])


def _overflow_band(figure: go.Figure, start: float, end: float, text: str, *, log_x: bool = False) -> None:
    """Shade [start, end] on x and label it (annotations on a log axis take log10 of the value)."""
    if end <= start:
        return
    figure.add_vrect(x0=start, x1=end, fillcolor=translucent(HIGHLIGHT, 0.08), line_width=0, layer="below")
    figure.add_annotation(x=math.log10(start) if log_x else start, xref="x", y=0.55, yref="paper", text=text,
                          xanchor="left", xshift=6, showarrow=False, font=dict(size=12, color=HIGHLIGHT))


def _level_line(figure: go.Figure, y: float, text: str, *, log_y: bool = False, left: bool = False) -> None:
    """A dashed horizontal reference line, labelled just above it at its right (or left) end."""
    figure.add_hline(y=y, line=dict(color=MUTED, dash="dash", width=1.2))
    figure.add_annotation(x=0.01 if left else 0.99, xref="paper", y=math.log10(y) if log_y else y, yref="y", text=text,
                          xanchor="left" if left else "right", yanchor="bottom", showarrow=False,
                          font=dict(size=12, color=MUTED))


# --- how many positions survive -----------------------------------------------------------------


def exact_fraction_figure(lengths, fractions: Mapping[str, object], *, marked_length: int | None = None,
                          marked_fractions: Mapping[str, float] | None = None,
                          first_inexact: Mapping[str, int] | None = None,
                          float16_overflow: int | None = None) -> go.Figure:
    """Share of positions 0 .. L−1 stored exactly against L (log axis), one line per dtype.

    ``marked_fractions`` (dtype -> exact fraction at ``marked_length``) are drawn as labelled points.
    """
    lengths = as_array(lengths)
    figure = new_figure(
        _(FRACTION_TITLE),
        xaxis=dict(title=dict(text=_("sequence length L′ (positions 0 … L′ − 1), log scale")), type="log",
                   **_power_of_two_ticks(0, int(math.log2(lengths.max())))),
        yaxis=dict(title=dict(text=_("positions stored exactly (%)")), range=[0, 108]),
        legend=LEGEND_BELOW, height=560, margin=dict(b=150),
    )
    for name, fraction in fractions.items():
        label = _("{dtype} (first inexact: {position})").format(dtype=name, position=f"{first_inexact[name]:,}") \
            if first_inexact and name in first_inexact else name
        figure.add_trace(go.Scatter(
            x=lengths, y=100 * as_array(fraction), mode="lines", name=label,
            hovertemplate=f"{name}<br>L′ = %{{x:,.0f}}<br>" + _("%{y:.2f}% exact") + "<extra></extra>",
            **dtype_look(name),
        ))
    if float16_overflow is not None and "float16" in fractions:
        _overflow_band(figure, float16_overflow, float(lengths.max()),
                       _("float16: ≥ {position} → inf").format(position=f"{float16_overflow:,}"), log_x=True)
    if marked_length is not None:
        figure.add_vline(x=marked_length, line=dict(color=MUTED, dash="dash", width=1.2))
        for name, fraction in (marked_fractions or {}).items():
            at = 100 * fraction
            figure.add_trace(go.Scatter(
                x=[marked_length], y=[at], mode="markers+text", showlegend=False,
                text=[f"{at:.1f}%" if at < 99.95 else ""], textposition="middle right",
                textfont=dict(color=SERIES_STYLES[name].colour),
                hovertemplate=_("{dtype} at L′ = {length}: %{{y:.2f}}%").format(dtype=name,
                                                                                length=f"{marked_length:,}")
                + "<extra></extra>",
                marker=dict(color=SERIES_STYLES[name].colour, symbol=SERIES_STYLES[name].marker, size=9),
                meta={"dtype": name},
            ))
        figure.add_annotation(x=math.log10(marked_length), y=104, text=f"L′ = {marked_length:,}",
                              showarrow=False, xanchor="right", xshift=-4, font=dict(size=12))
    return figure


def binade_spacing_figure(exponents, spacings: Mapping[str, object], *,
                          float16_overflow: int | None = None) -> go.Figure:
    """The gap between neighbouring representable numbers in each binade [2^k, 2^(k+1)), per dtype."""
    exponents = as_array(exponents, np.int64)
    top = int(exponents.max()) + 1
    figure = new_figure(
        _(SPACING_TITLE),
        xaxis=dict(title=dict(text=_("value (each binade [2<sup>k</sup>, 2<sup>k+1</sup>) starts at a tick), log "
                                     "scale")), type="log", **_power_of_two_ticks(0, top)),
        yaxis=dict(title=dict(text=_("gap to the next number (log)")), type="log", exponentformat="power"),
        legend=LEGEND_BELOW, height=520, margin=dict(b=150),
    )
    _level_line(figure, 1.0, _("gap 1: above this line neighbouring positions collide"), log_y=True, left=True)
    for name, spacing in spacings.items():
        gaps = as_array(spacing)
        finite = np.isfinite(gaps)
        starts = 2.0 ** exponents[finite]
        # Each binade's gap holds until the next binade starts: a step line with an explicit end point.
        x = np.append(starts, 2.0 ** (exponents[finite][-1] + 1))
        y = np.append(gaps[finite], gaps[finite][-1])
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", line_shape="hv", name=name,
            hovertemplate=f"{name}<br>" + _("from %{x:,.0f}: gap %{y:.3g}") + "<extra></extra>", **dtype_look(name),
        ))
    if float16_overflow is not None and "float16" in spacings:
        _overflow_band(figure, float16_overflow, 2.0**top,
                       _("float16: ≥ {position} → inf").format(position=f"{float16_overflow:,}"), log_x=True)
    return figure


def collision_window_figure(positions, stored, dtype: str) -> go.Figure:
    """Positions n … n+w−1 against the value each becomes in ``dtype``.

    Every stored value that several positions share is one colour (cycling through ``VALUE_COLOURS``,
    so neighbouring values always differ), drawn as a bar through its positions at its height; the
    legend (when it fits) and the hover name the value. Positions that keep a value of their own are
    grey rings on the diagonal; overflow is a red cross at the top.
    """
    positions, stored = as_array(positions, np.int64), as_array(stored)
    finite = np.isfinite(stored)
    first, last = int(positions[0]), int(positions[-1])
    figure = new_figure(
        _("Positions {first}…{last} stored in {dtype}").format(first=f"{first:,}", last=f"{last:,}", dtype=dtype),
        xaxis=dict(title=dict(text=_("position m")), tickformat=",d"),
        yaxis=dict(title=dict(text=_("value stored in {dtype}").format(dtype=dtype)), tickformat=",d"),
        legend=LEGEND_BELOW, height=560, margin=dict(b=170),
    )
    figure.add_trace(go.Scatter(
        x=[first, last], y=[first, last], mode="lines", name=_("stored = position (no error)"),
        line=dict(color=MUTED, dash="dot", width=1.5), hoverinfo="skip",
    ))
    values, starts, counts = np.unique(stored[finite], return_index=True, return_counts=True)
    shared = counts > 1
    in_legend = int(shared.sum()) <= MAX_VALUES_IN_LEGEND
    finite_positions = positions[finite]
    if shared.any() and not in_legend:  # one legend entry explains the colours; the hover names each value
        figure.add_trace(go.Scatter(
            x=[None], y=[None], mode="lines+markers", marker=dict(color=VALUE_COLOURS[0], size=9),
            line=dict(color=VALUE_COLOURS[0], width=3),
            name=_("{count} stored values shared by several positions: one colour each (hover for the value)").format(
                count=int(shared.sum())),
        ))
    for rank, (value, start, count) in enumerate(zip(values[shared], starts[shared], counts[shared], strict=True)):
        members = finite_positions[start:start + count]  # rounding is monotone: a group is one run
        colour = VALUE_COLOURS[rank % len(VALUE_COLOURS)]
        span = f"{int(members[0]):,}–{int(members[-1]):,}"
        figure.add_trace(go.Scatter(
            x=members, y=np.full(count, value), mode="lines+markers", name=_("{value} ← positions {span}").format(
                value=f"{value:,.0f}", span=span),
            line=dict(color=colour, width=3), marker=dict(color=colour, size=9), legendgroup="shared",
            showlegend=in_legend, meta={"stored": float(value)},
            hovertemplate=_("position %{{x:,}} → stored {value}<br>{count} positions share it ({span})").format(
                value=f"{value:,.0f}", count=int(count), span=span) + "<extra></extra>",
        ))
    alone = np.isin(stored, values[~shared]) & finite
    if alone.any():
        figure.add_trace(go.Scatter(
            x=positions[alone], y=stored[alone], mode="markers", name=_("a value of its own (no collision)"),
            marker=dict(color=MUTED, size=7, symbol="circle-open", line=dict(width=2)),
            hovertemplate=_("position %{x:,} → stored %{y:,}") + "<extra></extra>",
        ))
    if (~finite).any():
        ceiling = max(float(values.max()) if len(values) else float(last), float(last))
        figure.add_trace(go.Scatter(
            x=positions[~finite], y=np.full(int((~finite).sum()), ceiling), mode="markers",
            name=_("overflow: stored as inf (drawn at the top)"), marker=dict(color=HIGHLIGHT, size=9, symbol="x"),
            hovertemplate=_("position %{x:,} → inf") + "<extra></extra>",
        ))
    return figure


# --- what it does to RoPE ---------------------------------------------------------------------


def _first_infinite_position(positions, values) -> int | None:
    """The first position whose value (any order) is inf: where float16 overflow starts."""
    positions, values = as_array(positions, np.int64), as_array(values)
    bad = ~np.isfinite(values)
    if values.ndim > 1:
        bad = bad.any(0)
    return int(positions[bad][0]) if bad.any() else None


def _order_look(index: int) -> dict:
    return dict(line=dict(color=series_colour(index), dash=DASHES[index % len(DASHES)], width=1.8))


def angle_error_figure(positions, max_angle_error, order_titles: Mapping[str, str]) -> go.Figure:
    """Worst angle error over the pairs at each position, one line per order of operations (log y)."""
    errors = as_array(max_angle_error)
    figure = new_figure(
        _(ANGLE_TITLE),
        xaxis=dict(title=dict(text=_("position m")), tickformat=",d"),
        yaxis=dict(title=dict(text=_("worst |angle error| (rad, log)")), type="log", dtick=1,
                   exponentformat="power", range=[math.log10(SMALLEST_SHOWN_ERROR), math.log10(2 * math.pi)]),
        legend=LEGEND_BELOW, height=580, margin=dict(b=170),
    )
    for index, ((order, title), row) in enumerate(zip(order_titles.items(), errors, strict=True)):
        x, y = max_envelope(positions, np.maximum(row, SMALLEST_SHOWN_ERROR))
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=title, meta={"order": order},
            hovertemplate=f"{title}<br>m ≈ %{{x:,}}<br>%{{y:.3g}} rad<extra></extra>", **_order_look(index),
        ))
    _level_line(figure, math.pi, _("π: no information left in the angle"), log_y=True)
    overflow = _first_infinite_position(positions, errors)
    if overflow is not None:
        _overflow_band(figure, overflow, float(as_array(positions).max()), _("overflow: cos/sin are NaN"))
    return figure


def angle_error_heatmap(bucket_starts, angle_error_map, order_title_text: str) -> go.Figure:
    """|angle error| per pair (x) and position range (y) for one order of operations, log colour scale."""
    errors = as_array(angle_error_map)
    finite = np.isfinite(errors)
    shown = np.log10(np.maximum(np.where(finite, errors, np.nan), SMALLEST_SHOWN_ERROR))
    low, high = int(math.log10(SMALLEST_SHOWN_ERROR)), 1
    ticks = list(range(low, high + 1, 2))
    figure = new_figure(
        _("Angle error per pair and position: {order}").format(order=order_title_text),
        xaxis=dict(title=dict(text=_("pair i (θᵢ = b<sup>−2i/d</sup>: fast → slow)"))),
        yaxis=dict(title=dict(text=_("position m (start of each row's range)")), tickformat=",d"),
        height=480,
    )
    figure.add_trace(go.Heatmap(
        z=shown.astype(np.float32), x=np.arange(errors.shape[1]), y=as_array(bucket_starts, np.int64),
        zmin=low, zmax=math.log10(math.pi), colorscale=SEQUENTIAL,
        colorbar=dict(title=dict(text=_("|error| (rad)")), tickvals=ticks, ticktext=[f"10<sup>{t}</sup>" for t in ticks]),
        hovertemplate=_("pair %{x}<br>positions from %{y:,}<br>log₁₀ error %{z:.2f}") + "<extra></extra>",
    ))
    return figure


def logit_error_figure(positions, logit_error, order_titles: Mapping[str, str], query_position: int) -> go.Figure:
    """|q·k/√d − exact| for the query at the last position and keys at every position, per order (log y)."""
    errors = as_array(logit_error)
    figure = new_figure(
        _("Attention-logit error q·k/√d, query at position {position}").format(position=f"{query_position:,}"),
        xaxis=dict(title=dict(text=_("key position n")), tickformat=",d"),
        yaxis=dict(title=dict(text=_("|logit error| (log)")), type="log", exponentformat="power", dtick=1),
        legend=LEGEND_BELOW, height=560, margin=dict(b=170),
    )
    for index, ((order, title), row) in enumerate(zip(order_titles.items(), errors, strict=True)):
        # The query sits at the last position, so if any position overflowed the query did too: then no logit
        # of that order is finite, and the legend says why its line is missing.
        name = title if np.isfinite(row).any() else _("{order}: no finite logit (the query position overflowed)"
                                                      ).format(order=title)
        x, y = max_envelope(positions, np.maximum(row, 1e-12))
        figure.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=name, meta={"order": order},
            hovertemplate=f"{title}<br>n ≈ %{{x:,}}<br>%{{y:.3g}}<extra></extra>", **_order_look(index),
        ))
    return figure
