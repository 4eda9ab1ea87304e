"""Figures for "θ heatmaps & scaling methods": how each context-extension method reshapes m·θ_i.

Every function takes values already computed by ``pe_core`` (tensors, tuples, numbers) and
returns a figure in the project's visual language; ``lessons.frequencies`` decides what to draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.theme import (
    CYCLIC,
    DIVERGING,
    HIGHLIGHT,
    LEGEND_BELOW,
    MUTED,
    SEQUENTIAL,
    colour_of,
    keyed,
    new_figure,
    reference_line,
)
from figures.values import as_array
from i18n import N_, _
from pe_core.angles import FrequencyProfile, HeatmapPanel, RampComparison

MAX_COLUMNS = 4

HEATMAP_TITLE = N_("Rotation angle m·θᵢ by pair and position")
UNSEEN_TITLE = N_("Pairs that reach angles never seen in training")
WAVELENGTH_TITLE = N_("Wavelength λᵢ = 2π/θᵢ per pair")
FREQUENCY_TITLE = N_("Frequency θᵢ per pair")
RATIO_TITLE = N_("Interpolation ratio θ′ᵢ / θᵢ per pair")
RAMP_TITLE = N_("NTK-by-parts: the YaRN paper's γ(r) against the reference code's ramp")

VIEW_TITLES = {"trained": N_("log₂ of m·θ′ᵢ / L·θᵢ"), "log": N_("log₁₀ angle (rad)"), "angle": N_("angle m·θ (rad)"), "mod": N_("angle mod 2π (rad)"),
               "cos": N_("cos(m·θ)")}
REACH_TITLES = (N_("full turn seen in training"), N_("within the trained range"), N_("beyond any trained angle"))
REACH_COLOURS = ("#E8E8E8", "#56B4E9", HIGHLIGHT)
# the trained share runs from blue (inside the angles training turned) through white (its end) to red (beyond)
VIEW_COLOURSCALES = {"trained": DIVERGING + "_r", "log": SEQUENTIAL, "angle": SEQUENTIAL, "mod": CYCLIC,
                     "cos": DIVERGING}
PAPER_COLOUR = "#E69F00"
CODE_COLOUR = "#0072B2"


def _length(value: float) -> str:
    return f"{value:,.0f}"


def panel_label(panel: HeatmapPanel, show_scale: bool) -> str:
    title = _(panel.title)
    return f"{title} · s = {panel.scale:g}" if show_scale else title


def _grid_domains(count: int, spacing: float) -> list[tuple[float, float]]:
    """``count`` equal [start, end] fractions of the plot area with ``spacing`` between them."""
    width = (1 - spacing * (count - 1)) / count
    return [(k * (width + spacing), min(1.0, k * (width + spacing) + width)) for k in range(count)]


def angle_heatmaps(
    panels: Sequence[HeatmapPanel],
    *,
    view: str,
    train_length: int,
    mark_unseen: bool = True,
    columns: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """Side-by-side heatmaps of the angle view (x: pair i, y: position m) with one shared colour scale.

    Panels of different scales start a new grid row each (so the seed-000 layout, s = 2 above
    s = 4, comes out as two rows). Rows m ≥ L are hatched: those positions were never trained on.
    The grid is laid out by hand in one layout dict: plotly's make_subplots plus per-axis updates
    cost ~10× more, and this figure is rebuilt on every rerun.
    """
    scales = list(dict.fromkeys(p.scale for p in panels))
    by_scale = [[p for p in panels if p.scale == s] for s in scales]
    if columns is None:  # at most MAX_COLUMNS, and rows as even as possible (9 panels: 3 × 3, not 4 + 4 + 1)
        widest = max((len(group) for group in by_scale), default=1)
        columns = max(1, math.ceil(widest / math.ceil(widest / MAX_COLUMNS)))
    grid: list[tuple[int, int, HeatmapPanel]] = []  # (row, column) from the top left, 0-based
    rows = 0
    for group in by_scale:
        grid.extend((rows + index // columns, index % columns, panel) for index, panel in enumerate(group))
        rows += max(1, math.ceil(len(group) / columns))
    rows = max(1, rows)
    show_scale = len(scales) > 1
    height = 150 + 290 * rows
    x_domains = _grid_domains(columns, 0.06)
    plot_height = height - 80 - 110  # less the top and bottom margins set below
    y_domains = _grid_domains(rows, 75 / plot_height if rows > 1 else 0.0)[::-1]  # first grid row at the top

    low, high = panels[0].colour_range if panels else (0.0, 1.0)
    hover = (_("pair i = %{x}<br>position m = %{y:,}") + "<br>" + _(VIEW_TITLES[view])
             + " = %{z:.5g}<extra>%{fullData.name}</extra>")
    traces: list[go.BaseTraceType] = []
    layout: dict = {"annotations": []}
    if any(len(p.positions) and train_length <= int(p.positions[-1]) for p in panels):
        # The hatch is white on the heatmap; this legend-only twin shows the same hatch in grey.
        traces.append(go.Scatter(
            x=[None], y=[None], mode="lines", fill="toself", line=dict(color="#666", width=1, dash="dash"),
            fillpattern=dict(shape="/", fgcolor="#666", size=8, solidity=0.2), name=_("beyond training (m ≥ L)"),
        ))
    unseen_in_legend = False
    for number, (r, c, panel) in enumerate(grid, start=1):
        suffix = "" if number == 1 else str(number)
        axes = dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        positions = as_array(panel.positions, np.int64)
        pairs = np.arange(panel.values.shape[1])
        label = panel_label(panel, show_scale)
        traces.append(go.Heatmap(z=as_array(panel.values, np.float32), x=pairs, y=positions, coloraxis="coloraxis", zmin=low,
                                 zmax=high, name=label, hovertemplate=hover, meta={"method": panel.method}, **axes))
        top = float(positions[-1]) if len(positions) else 0.0
        step = float(np.diff(positions).min()) if len(positions) > 1 else 1.0
        bottom, ceiling = -step / 2, top + step / 2
        headroom = 0.07 * (ceiling - bottom) if mark_unseen else 0.0  # room for the unseen-pair markers
        if train_length <= top:
            traces.append(_beyond_training_hatch(train_length - 0.5, ceiling, len(pairs), axes, view))
        unseen = np.flatnonzero(as_array(panel.unseen, bool))
        if mark_unseen and len(unseen):
            traces.append(go.Scatter(
                x=unseen, y=np.full(len(unseen), ceiling + headroom / 2), mode="markers",
                marker=dict(symbol="triangle-down", size=8, color=HIGHLIGHT),
                name=_("pair reaches angles unseen in training"), legendgroup="unseen",
                showlegend=not unseen_in_legend, hovertemplate=_("pair %{x}: unseen angles at L′") + "<extra></extra>",
                **axes,
            ))
            unseen_in_legend = True
        layout[f"xaxis{suffix}"] = dict(domain=x_domains[c], anchor=f"y{suffix}", range=[-0.5, len(pairs) - 0.5],
                                        title=dict(text=_("pair index i")) if r == rows - 1 or _last_in_column(
                                            grid, r, c) else None)
        layout[f"yaxis{suffix}"] = dict(domain=y_domains[r], anchor=f"x{suffix}", range=[bottom, ceiling + headroom],
                                        title=dict(text=_("position m")) if c == 0 else None)
        layout["annotations"].append(dict(
            text=label, x=sum(x_domains[c]) / 2, y=y_domains[r][1], xref="paper", yref="paper", xanchor="center",
            yanchor="bottom", showarrow=False, font=dict(size=14),
        ))
    colorbar = dict(title=dict(text=_(VIEW_TITLES[view]), side="right"), thickness=14)
    if view == "mod":
        colorbar.update(tickvals=[0, math.pi / 2, math.pi, 3 * math.pi / 2, 2 * math.pi],
                        ticktext=["0", "π/2", "π", "3π/2", "2π"])
    layout.update(
        coloraxis=dict(colorscale=VIEW_COLOURSCALES[view], cmin=low, cmax=high, colorbar=colorbar),
        legend=LEGEND_BELOW,
        margin=dict(t=80, b=110), height=height,
    )
    figure = new_figure(title if title is not None else _(HEATMAP_TITLE))
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


def _last_in_column(grid: list[tuple[int, int, HeatmapPanel]], row: int, col: int) -> bool:
    return all(r <= row for r, c, _ in grid if c == col)


# The hatch over positions m ≥ L: white on the dark colour scales; grey on the trained share, which is white at 0.
HATCH_COLOURS = {"trained": ("#777777", "rgba(90,90,90,0.35)")}
WHITE_HATCH = ("white", "rgba(255,255,255,0.45)")


def _beyond_training_hatch(start: float, stop: float, pairs: int, axes: dict, view: str = "log") -> go.Scatter:
    """Hatch positions m ≥ L and outline the boundary, so the untrained region shows in every view."""
    line, hatch = HATCH_COLOURS.get(view, WHITE_HATCH)
    return go.Scatter(
        x=[-0.5, pairs - 0.5, pairs - 0.5, -0.5, -0.5], y=[start, start, stop, stop, start],
        mode="lines", fill="toself", line=dict(color=line, width=2, dash="dash"), fillcolor="rgba(0,0,0,0)",
        fillpattern=dict(shape="/", fgcolor=hatch, size=14, solidity=0.12),
        name=_("beyond training (m ≥ L)"), showlegend=False, hoverinfo="skip", **axes,
    )


def _assemble(title: str, traces: list, layout: dict) -> go.Figure:
    """One figure from its traces and one layout dict: plotly validates each update, so do a single one."""
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


def unseen_angles_figure(profile: FrequencyProfile, *, train_length: int, target_length: int) -> go.Figure:
    """Methods × pairs: did training sweep a full turn, does L' stay within training's range, or go beyond it."""
    state = as_array(profile.reach_state, np.int8)
    reach = as_array(profile.reach_ratio, np.float32)
    count = len(profile.titles)
    scale = [(0.0, REACH_COLOURS[0]), (1 / 3, REACH_COLOURS[0]), (1 / 3, REACH_COLOURS[1]),
             (2 / 3, REACH_COLOURS[1]), (2 / 3, REACH_COLOURS[2]), (1.0, REACH_COLOURS[2])]
    heatmap = go.Heatmap(
        z=state, x=np.arange(state.shape[1] if state.ndim == 2 else 0), y=[_(t) for t in profile.titles],
        customdata=reach, zmin=-0.5, zmax=2.5, colorscale=scale, xgap=1, ygap=2,
        colorbar=dict(tickvals=[0, 1, 2], ticktext=[_(t) for t in REACH_TITLES], thickness=14, len=1.0),
        hovertemplate=_("%{y}, pair %{x}") + "<br>L′·θ′/(L·θ) = %{customdata:.3g}<extra></extra>",
    )
    return _assemble(
        _(UNSEEN_TITLE) + f" (L = {_length(train_length)} → L′ = {_length(target_length)})", [heatmap],
        dict(height=160 + 34 * max(count, 1),
             xaxis=dict(title=dict(text=_("pair index i (high frequency → low frequency)"))),
             yaxis=dict(autorange="reversed")),
    )


# NTK-by-parts and YaRN sort the pairs by the same turns r = L/λ but blend them differently: the method the app calls
# NTK-by-parts is the YaRN paper's γ(r), linear in r; YaRN is the reference code's ramp, linear in the pair index.
# A line chart that draws them says which is which.
LINE_NOTES = {"ntk_by_parts": N_("{method}: the paper's γ(r)"), "yarn": N_("{method}: the reference code's ramp")}


def line_name(method: str, title: str) -> str:
    """A method's name on a per-pair line chart (``LINE_NOTES`` names the blend of NTK-by-parts and YaRN)."""
    note = LINE_NOTES.get(method)
    return _(note).format(method=_(title)) if note else _(title)


def _method_lines(profile: FrequencyProfile, values, hover: str) -> list[go.Scatter]:
    """One line per method. Each pair also carries an invisible marker: plotly picks (clicks) only markers, and
    a pair picked here is marked on the page's other figures; the picked one shows in its method's marker."""
    lines = []
    for row_values, title, method in zip(values, profile.titles, profile.methods, strict=True):
        name = line_name(method, title)
        lines.append(go.Scatter(x=np.arange(row_values.shape[0]), y=row_values, name=name,
                                hovertemplate=f"{name}<br>" + _("pair %{x}") + f": {hover}<extra></extra>",
                                selected=dict(marker=dict(color=colour_of(method))),
                                **keyed(method, markers=True, marker=dict(size=9, color=INVISIBLE))))
    return lines


def wavelength_figure(profile: FrequencyProfile, *, train_length: int, target_length: int,
                      as_frequency: bool = False) -> go.Figure:
    """log λ_i (or log θ_i) per pair for every method on one chart; λ = L and λ = L' marked."""
    inv_freq = as_array(profile.inv_freq, np.float64)
    if as_frequency:
        traces = _method_lines(profile, inv_freq, _("θ = %{y:.4g} rad/token"))
        lines = []
    else:
        traces = _method_lines(profile, 2 * math.pi / inv_freq, _("λ = %{y:,.4g} tokens"))
        marks = [(train_length, "L", "dash")]
        if target_length != train_length:
            marks.append((target_length, "L′", "dot"))
        lines = [reference_line(length, f"λ = {label} = {_length(length)}", dash=dash, log_axis=True)
                 for length, label, dash in marks]
    return _assemble(_(FREQUENCY_TITLE if as_frequency else WAVELENGTH_TITLE), traces, dict(
        height=480, legend=LEGEND_BELOW, margin=dict(b=150), shapes=[shape for shape, _label in lines],
        annotations=[label for _shape, label in lines],
        xaxis=dict(title=dict(text=_("pair index i"))),
        yaxis=dict(type="log", title=dict(text=_("θᵢ (rad per token, log)") if as_frequency
                                          else _("wavelength λᵢ (tokens, log)"))),
    ))


def ratio_figure(profile: FrequencyProfile, *, scale: float) -> go.Figure:
    """θ′ᵢ/θᵢ per pair: 1 is extrapolation (θ kept), 1/s is interpolation (PI)."""
    traces = _method_lines(profile, as_array(profile.ratio, np.float64), "θ′/θ = %{y:.4g}")
    lines = [reference_line(1.0, _("1: extrapolate (θ kept)"), dash="dash", log_axis=True)]
    if scale > 1:
        lines.append(reference_line(1 / scale, _("1/s = 1/{scale}: interpolate (PI)").format(scale=f"{scale:g}"),
                                     dash="dot", log_axis=True, below=True))
    ratio = as_array(profile.ratio, np.float64)
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    lowest = min(float(finite.min()) if finite.size else 1.0, 1 / scale)
    highest = max(float(finite.max()) if finite.size else 1.0, 1.0)
    return _assemble(_(RATIO_TITLE), traces, dict(
        height=480, legend=LEGEND_BELOW, margin=dict(b=150),
        shapes=[shape for shape, _label in lines], annotations=[label for _shape, label in lines],
        xaxis=dict(title=dict(text=_("pair index i"))),
        yaxis=dict(type="log", title=dict(text=_("θ′ᵢ / θᵢ (log)")), **power_of_two_ticks(lowest, highest)),
    ))


def power_of_two_ticks(lowest: float, highest: float, most: int = 9) -> dict:
    """Log-axis ticks at 1/2^k (labelled as fractions) - plotly's own labels drop the digits on short ranges."""
    low_exp = math.floor(math.log2(lowest) + 1e-9)
    high_exp = math.ceil(math.log2(highest) - 1e-9)
    stride = max(1, math.ceil((high_exp - low_exp + 1) / most))
    exponents = list(range(high_exp, low_exp - 1, -stride))
    values = [2.0**e for e in exponents]
    labels = [f"{2**e:g}" if e >= 0 else f"1/{2**-e:g}" for e in exponents]
    pad = 0.15 * max(1, high_exp - low_exp) ** 0.5
    return dict(tickvals=values, ticktext=labels, range=[math.log10(lowest) - pad * 0.301, math.log10(highest)
                                                         + pad * 0.301])


def ramp_figure(ramp: RampComparison, *, beta_fast: float, beta_slow: float, truncate: bool) -> go.Figure:
    """γ(rᵢ) of the paper (linear in r) and 1 − ramp(i) of the code (linear in i) over the pair index."""
    pairs = np.arange(len(ramp.paper_kept))
    rotations = as_array(ramp.rotations, np.float64)
    low, high = ramp.code_range
    paper, code = _("paper"), _("code")
    traces = [
        go.Scatter(
            x=pairs, y=as_array(ramp.paper_kept, np.float64), customdata=rotations, mode="lines+markers",
            name=_("paper: γ(r), linear in r = L/λ"), line=dict(color=PAPER_COLOUR), marker=dict(size=5),
            hovertemplate=_("pair %{x}, r = %{customdata:.3g}") + f"<br>γ = %{{y:.3f}}<extra>{paper}</extra>",
        ),
        go.Scatter(
            x=pairs, y=as_array(ramp.code_kept, np.float64), customdata=rotations, mode="lines+markers",
            name=_("code: 1 − ramp(i), linear in i"), line=dict(color=CODE_COLOUR, dash="dash"),
            marker=dict(size=5, symbol="square"),
            hovertemplate=_("pair %{x}, r = %{customdata:.3g}") + f"<br>1 − ramp = %{{y:.3f}}<extra>{code}</extra>",
        ),
    ]
    shapes = [dict(type="rect", xref="x", yref="y domain", x0=low, x1=high, y0=0, y1=1, fillcolor="#cccccc",
                   opacity=0.25, line=dict(width=0), layer="below")]
    ramp_label = _("code's ramp (floor/ceil)") if truncate else _("code's ramp")
    annotations = [dict(x=(low + high) / 2, y=1.12, text=ramp_label, showarrow=False, font=dict(size=12))]
    for index, label, side in ((ramp.beta_fast_index, f"r = β = {beta_fast:g}", "right"),
                               (ramp.beta_slow_index, f"r = α = {beta_slow:g}", "left")):
        if 0 <= index <= len(pairs) - 1:
            shapes.append(dict(type="line", xref="x", yref="y domain", x0=index, x1=index, y0=0, y1=1,
                               line=dict(color=MUTED, width=1, dash="dot")))
            annotations.append(dict(x=index, y=0.5, text=label, showarrow=False, textangle=-90, xanchor=side,
                                    font=dict(size=12)))
    return _assemble(_(RAMP_TITLE), traces, dict(
        height=480, shapes=shapes, annotations=annotations, legend=LEGEND_BELOW, margin=dict(b=150),
        xaxis=dict(title=dict(text=_("pair index i")), range=[-0.5, len(pairs) - 0.5]),
        yaxis=dict(title=dict(text=_("fraction of θᵢ kept")), range=[-0.05, 1.2],
                   tickvals=[0, 0.25, 0.5, 0.75, 1]),
    ))


# ---- linked highlighting: the pair picked on one chart, marked on the others ----------------------

INVISIBLE = "rgba(0,0,0,0)"
PICKED_COLOUR = "#000000"  # a picked pair: black on white (with a white halo on the heatmaps' colours)
PICKED_TITLE = N_("pair i = {pair} (picked)")


def _picked_legend_entry(pair: int, **extra) -> go.Scatter:
    return go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=PICKED_COLOUR, width=2),
                      name=_(PICKED_TITLE).format(pair=pair), hoverinfo="skip", **extra)


def mark_pair_columns(figure: go.Figure, pair: int, *, legend: bool = True) -> None:
    """Outline column ``pair`` on every heatmap of ``figure`` (a white halo under a black frame, so it shows on
    every colour), named by a legend entry (``legend``) or a label above the column."""
    shapes = []
    for trace in figure.data:
        if trace.type != "heatmap" or trace.x is None or not 0 <= pair < len(trace.x):
            continue
        xref, yref = trace.xaxis or "x", f"{trace.yaxis or 'y'} domain"
        for colour, width in (("white", 5), (PICKED_COLOUR, 2)):
            shapes.append(dict(type="rect", xref=xref, yref=yref, x0=pair - 0.5, x1=pair + 0.5, y0=0, y1=1,
                               line=dict(color=colour, width=width), fillcolor="rgba(0,0,0,0)"))
    if not shapes:
        return
    figure.update_layout(shapes=[*figure.layout.shapes, *shapes])
    if legend:
        figure.add_trace(_picked_legend_entry(pair))
    else:
        first = next(t for t in figure.data if t.type == "heatmap")
        figure.add_annotation(x=pair, xref=first.xaxis or "x", y=1, yref=f"{first.yaxis or 'y'} domain",
                              yanchor="bottom", text=f"i = {pair}", showarrow=False, font=dict(size=12))


def mark_pair_points(figure: go.Figure, pair: int, values: Sequence[float]) -> None:
    """Mark pair ``pair`` on a per-pair line chart: a dotted vertical line and a ring on every curve's value
    there (``values``: one per curve, in the curves' order)."""
    figure.update_layout(shapes=[*figure.layout.shapes, dict(
        type="line", xref="x", yref="y domain", x0=pair, x1=pair, y0=0, y1=1,
        line=dict(color=PICKED_COLOUR, width=1.5, dash="dot"))])
    figure.add_trace(go.Scatter(
        x=[pair] * len(values), y=list(values), mode="markers", name=_(PICKED_TITLE).format(pair=pair),
        marker=dict(symbol="circle-open", size=14, color=PICKED_COLOUR, line=dict(width=2.5)),
        hovertemplate=_("pair %{x}") + ": %{y:.4g}<extra></extra>",
    ))
