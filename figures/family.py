"""Figures for "The wider family": sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, DCA and logit scaling.

Every function takes values already computed by ``pe_core`` (through ``lessons.family``) and
returns a figure in the project's visual language: an encoding's trace carries its key
(``keyed(..., kind="encoding")``), a method's its method key, other series ``series_colour``.
Traces are plain dicts, validated once by plotly: these figures are rebuilt on every setting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from figures.theme import DIVERGING, LEGEND_BELOW, MUTED, SEQUENTIAL, keyed, new_figure, series_colour
from figures.values import as_array
from i18n import N_, _

MAX_HEATMAP_SIDE = 300  # cells per side actually sent to the browser
MAX_ALIBI_PANELS = 4

SINUSOIDAL_TITLE = N_("Sinusoidal position encodings PE(pos, j)")
PERIODS_TITLE = N_("Sinusoidal periods per dimension")
LEARNED_TITLE = N_("Learned position embeddings: cosine similarity between positions")
ALIBI_SLOPES_TITLE = N_("ALiBi slopes per head")
ALIBI_BIAS_TITLE = N_("ALiBi bias matrices −m·(i − j)")
T5_TITLE = N_("T5 relative-position buckets")
RELATIVE_TITLE = N_("Relative position used by attention")
CURVES_TITLE = N_("Position used vs true distance")
DCA_TITLE = N_("Dual Chunk Attention relative positions")
LOG_N_TITLE = N_("Log-n logit scale vs length")
TEMPERATURE_TITLE = N_("Attention temperature vs scale s = L′/L: YaRN and log-n")

# How each relative scheme is drawn in the curves figure: plain i − j is what RoPE itself uses.
SCHEME_STYLES = {"plain": ("rope", "encoding"), "shaw": 5, "rerope": 1, "leaky": 0, "dca": 3}
DCA_RULE_COLOURS = (series_colour(2), series_colour(4), series_colour(3))  # intra, successive, inter


def decimated_indices(count: int, limit: int = MAX_HEATMAP_SIDE) -> np.ndarray:
    """Evenly spread indices (first and last included) so at most ``limit`` of ``count`` rows are drawn."""
    if count <= limit:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, limit).round().astype(np.int64))


def _figure(title: str, traces: Sequence[dict], **layout) -> go.Figure:
    """A project-template figure with its traces, built with one layout update and one trace batch."""
    figure = new_figure(title, **layout)
    figure.add_traces(list(traces))
    return figure


def _axis_suffix(column: int) -> str:
    return "" if column == 1 else str(column)


def _square_heatmap(matrix, column: int = 1, positions=None, **trace) -> dict:
    """A [query, key] matrix as a heatmap trace, decimated to what a screen shows, with true indices on the axes.

    ``positions`` labels rows and columns when the matrix is itself a sample (default: 0 .. n − 1).
    """
    keep = decimated_indices(matrix.shape[0])
    labels = keep if positions is None else as_array(positions, np.int64)[keep]
    suffix = _axis_suffix(column)
    return dict(type="heatmap", z=as_array(matrix, np.float32)[np.ix_(keep, keep)], x=labels, y=labels,
                xaxis=f"x{suffix}", yaxis=f"y{suffix}", **trace)


def _matrix_panels(titles: Sequence[str], length: int, gap: float = 0.04, x_title: str | None = None,
                   y_title: str | None = None) -> dict:
    """Layout for side-by-side square-matrix panels (a plain dict: make_subplots is slow on every rerun)."""
    count = len(titles)
    width = (1.0 - gap * (count - 1)) / count
    x_title = _("key position j") if x_title is None else x_title
    y_title = _("query position i") if y_title is None else y_title
    layout: dict = {"annotations": [], "margin": dict(t=90)}  # room for the panel titles under the title
    for column in range(1, count + 1):
        start = (column - 1) * (width + gap)
        suffix = _axis_suffix(column)
        layout[f"xaxis{suffix}"] = dict(domain=[start, start + width], anchor=f"y{suffix}", title=dict(text=x_title),
                                        range=[-0.5, length - 0.5])
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", autorange="reversed",
                                        title=dict(text=y_title if column == 1 else None))
        layout["annotations"].append(dict(
            text=titles[column - 1], x=start + width / 2, y=1.0, xref="paper", yref="paper",
            xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14)))
    return layout


def _line_shape(*, x=None, y=None, column: int = 1, colour: str = MUTED, dash: str | None = "dot",
                width: float = 1) -> dict:
    """A vertical (x given) or horizontal (y given) line across one panel, as a plain shape dict."""
    suffix = _axis_suffix(column)
    line = dict(color=colour, width=width, dash=dash)
    if x is not None:
        return dict(type="line", x0=x, x1=x, y0=0, y1=1, xref=f"x{suffix}", yref=f"y{suffix} domain", line=line)
    return dict(type="line", y0=y, y1=y, x0=0, x1=1, yref=f"y{suffix}", xref=f"x{suffix} domain", line=line)


def _note(text: str, **position) -> dict:
    return dict(text=text, showarrow=False, font=dict(size=12, color=MUTED), **position)


def _line(x, y, name: str, hover: str, style: dict) -> dict:
    """A scatter trace as a dict; ``style`` is ``keyed(...)`` or a plain line/marker/mode dict."""
    return dict(type="scatter", x=x, y=y, name=name, hovertemplate=hover, **style)


def _series(index: int, *, dash: str = "solid", **extra) -> dict:
    """The look of a series that is neither a method nor an encoding."""
    colour = series_colour(index)
    line = {"color": colour, "dash": dash, **extra.pop("line", {})}
    return {"mode": extra.pop("mode", "lines"), "line": line, **extra}


def _legend_below(bottom: int = 130) -> dict:
    return dict(showlegend=True, legend=LEGEND_BELOW, margin=dict(b=bottom))


# --- sinusoidal and learned ---------------------------------------------------------------------


def sinusoidal_matrix_figure(encoding, base: float) -> go.Figure:
    """The PE matrix: fast stripes at low dimensions, slow ones at high dimensions."""
    positions, dim = encoding.shape
    rows = decimated_indices(positions)
    columns = decimated_indices(dim)
    heatmap = dict(
        type="heatmap", z=as_array(encoding, np.float32)[np.ix_(rows, columns)], x=columns, y=rows, colorscale=DIVERGING,
        zmin=-1, zmax=1, colorbar=dict(title=dict(text="PE")), meta={"encoding": "sinusoidal"},
        hovertemplate=_("position %{y}<br>dimension %{x}<br>PE %{z:.3f}") + "<extra></extra>",
    )
    title = _("{title}, d = {dim}, base {base}").format(title=_(SINUSOIDAL_TITLE), dim=dim, base=f"{base:,.0f}")
    return _figure(
        title, [heatmap],
        xaxis=dict(title=dict(text=_("dimension j (even: sin, odd: cos)"))),
        yaxis=dict(title=dict(text=_("position pos (tokens)")), autorange="reversed"),
    )


def sinusoidal_periods_figure(periods, base: float, length: int) -> go.Figure:
    """Period of every dimension on a log axis, with the number of positions shown as a reference line."""
    dims = np.arange(len(periods))
    traces = [
        _line(dims, as_array(periods, np.float64), _("period of dimension j"),
              _("dimension %{x}<br>period %{y:,.1f} tokens") + "<extra></extra>",
              keyed("sinusoidal", kind="encoding", markers=True, line=dict(shape="hv"), marker=dict(size=4))),
        _line([dims[0], dims[-1]], [length, length], _("positions shown ({count})").format(count=f"{length:,}"),
              "%{y:,}<extra></extra>", dict(mode="lines", line=dict(color=MUTED, dash="dash", width=1.5))),
    ]
    return _figure(
        _("{title} (base {base})").format(title=_(PERIODS_TITLE), base=f"{base:,.0f}"), traces,
        xaxis=dict(title=dict(text=_("dimension j"))),
        yaxis=dict(title=dict(text=_("period 2π·b<sup>2⌊j/2⌋/d</sup> (tokens, log scale)")), type="log"),
        height=460, **_legend_below(120),
    )


def learned_similarity_figure(learned_similarity, sinusoidal_similarity=None, positions=None) -> go.Figure:
    """Cosine similarity between the learned position vectors, next to the sinusoidal ones of the same size.

    ``positions`` are the positions the rows stand for (when a long table was sampled).
    """
    span = learned_similarity.shape[0] if positions is None else int(positions[-1]) + 1
    panels = [(_("learned (trained model)"), "learned", learned_similarity)]
    if sinusoidal_similarity is not None:
        panels.append((_("sinusoidal, same d and length"), "sinusoidal", sinusoidal_similarity))
    hover = _("position %{y} · position %{x}<br>cosine %{z:.3f}") + "<extra></extra>"
    traces = [
        _square_heatmap(matrix, column, positions, coloraxis="coloraxis", name=title, hovertemplate=hover,
                        meta={"encoding": key})
        for column, (title, key, matrix) in enumerate(panels, start=1)
    ]
    return _figure(
        _(LEARNED_TITLE), traces,
        coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, colorbar=dict(title=dict(text="cos"))),
        **_matrix_panels([title for title, _key, _matrix in panels], span, gap=0.08,
                         x_title=_("position"), y_title=_("position")),
    )


# --- ALiBi -------------------------------------------------------------------------------------


def _power_of_two_ticks(values: np.ndarray) -> dict:
    low = math.floor(math.log2(max(values.min(), 1e-300)))
    high = math.ceil(math.log2(values.max()))
    exponents = range(low, high + 1)
    return dict(tickvals=[2.0**e for e in exponents],
                ticktext=[f"1/{2 ** -e:g}" if e < 0 else f"{2**e:g}" for e in exponents])


def alibi_slopes_figure(slopes, misquoted=None) -> go.Figure:
    """ALiBi's slopes per head on a log₂ axis (a straight line: a geometric sequence)."""
    heads = np.arange(1, len(slopes) + 1)
    values = as_array(slopes, np.float64)
    traces = [_line(heads, values, _("ALiBi paper's slopes 2<sup>−8n/N</sup>"),
                    _("head %{x}<br>m = %{y:.6g}") + "<extra></extra>",
                    keyed("alibi", kind="encoding", markers=True, marker=dict(size=8)))]
    everything = values
    if misquoted is not None:
        wrong = as_array(misquoted, np.float64)
        everything = np.concatenate([values, wrong])
        traces.append(_line(heads, wrong, _("2<sup>−8/n</sup>, a common misquote"),
                            _("head %{x}<br>2<sup>−8/n</sup> = %{y:.6g}") + "<extra></extra>",
                            dict(mode="lines+markers", line=dict(color=MUTED, dash="dot", width=1.5),
                                 marker=dict(color=MUTED, size=6, symbol="x"))))
    return _figure(
        _("{title} ({count} heads)").format(title=_(ALIBI_SLOPES_TITLE), count=len(slopes)), traces,
        xaxis=dict(title=dict(text=_("head n")), dtick=1 if len(slopes) <= 16 else None),
        yaxis=dict(title=dict(text=_("slope m (log₂ scale)")), type="log", **_power_of_two_ticks(everything)),
        height=460, **_legend_below(120),
    )


def alibi_bias_figure(bias, slopes, heads: Sequence[int]) -> go.Figure:
    """The causal bias −m·(i − j) added to the logits, for a few heads on one colour scale.

    ``bias[k]`` is the matrix of zero-based head ``heads[k]``; ``slopes`` lists every head's slope.
    """
    length = bias.shape[-1]
    values = as_array(slopes, np.float64)
    titles = [_("head {head}: m = {slope}").format(head=h + 1, slope=f"{values[h]:.4g}") for h in heads]
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    hover = _("i %{y}, j %{x}<br>bias %{z:.3f}") + "<extra></extra>"
    traces = []
    for column in range(1, len(heads) + 1):
        matrix = as_array(bias[column - 1], np.float32)
        matrix[future] = np.nan  # masked: a decoder never attends to the future
        traces.append(_square_heatmap(matrix, column, coloraxis="coloraxis", name=titles[column - 1],
                                      hovertemplate=hover, meta={"encoding": "alibi"}))
    return _figure(
        _("{title}, length {length}").format(title=_(ALIBI_BIAS_TITLE), length=length), traces,
        coloraxis=dict(colorscale="Blues_r", colorbar=dict(title=dict(text=_("bias")))),
        **_matrix_panels(titles, length),
    )


# --- T5 ----------------------------------------------------------------------------------------


def t5_bucket_figure(relative_positions, bidirectional_buckets, causal_buckets, num_buckets: int,
                     max_distance: int) -> go.Figure:
    """Bucket index against j − i: exact near zero, logarithmic further out, flat beyond max_distance."""
    x = as_array(relative_positions, np.int64)
    series = (
        (_("bidirectional (encoder)"), bidirectional_buckets, keyed("t5", kind="encoding", line=dict(shape="hv"))),
        (_("causal (decoder)"), causal_buckets, keyed("t5", kind="encoding", line=dict(shape="hv", dash="solid",
                                                                                        width=1.5))),
    )
    traces = [_line(x, as_array(buckets, np.int64), name, _("j − i = %{x}<br>bucket %{y}") + f"<extra>{name}</extra>",
                    style) for name, buckets, style in series]
    return _figure(
        _("{title} ({count} buckets, max_distance {distance})").format(title=_(T5_TITLE), count=num_buckets,
                                                                       distance=max_distance), traces,
        xaxis=dict(title=dict(text=_("relative position j − i (key minus query; negative: key in the past)"))),
        yaxis=dict(title=dict(text=_("bucket index"))),
        shapes=[_line_shape(x=edge) for edge in (-max_distance, max_distance)],
        annotations=[_note("±max_distance", x=max_distance, y=1, yref="paper", xanchor="center", yanchor="bottom")],
        height=460, **_legend_below(130),
    )


# --- relative-position matrices -----------------------------------------------------------------


def scheme_titles(shaw_clip: int, window: int, leaky_k: float) -> dict[str, str]:
    """Legend and panel names for the keys of ``pe_core.family.relative_position_schemes``."""
    return {
        "plain": _("plain (RoPE): i − j"),
        "shaw": _("Shaw: clip ±{clip}").format(clip=shaw_clip),
        "rerope": _("ReRoPE: w = {window}").format(window=window),
        "leaky": _("Leaky: w = {window}, k = {k}").format(window=window, k=f"{leaky_k:g}"),
    }


def dca_curve_title(chunk_size: int, train_length: int) -> str:
    return _("DCA: s = {chunk}, c = {train} (last query)").format(chunk=chunk_size, train=train_length)


def _scheme_meta(key: str) -> dict:
    style = SCHEME_STYLES[key]
    return {style[1]: style[0]} if isinstance(style, tuple) else {}


def relative_matrices_figure(matrices: Mapping[str, object], titles: Mapping[str, str], length: int) -> go.Figure:
    """The relative position each (query, key) pair is given, one panel per scheme, one colour scale."""
    keys = list(matrices)
    hover = _("i %{y}, j %{x}<br>position %{z:.2f}") + "<extra></extra>"
    traces = [
        _square_heatmap(matrices[key], column, coloraxis="coloraxis", name=titles[key], hovertemplate=hover,
                        meta=_scheme_meta(key))
        for column, key in enumerate(keys, start=1)
    ]
    return _figure(
        _("{title}, length {length}").format(title=_(RELATIVE_TITLE), length=length), traces, height=430,
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, colorbar=dict(title=dict(text=_("position")))),
        **_matrix_panels([titles[key] for key in keys], length, gap=0.035),
    )


def position_curves_figure(distances, curves: Mapping[str, object], titles: Mapping[str, str],
                           window: int | None = None) -> go.Figure:
    """One row of the matrices: the position each scheme uses against the true distance i − j."""
    x = as_array(distances, np.float64)
    keep = decimated_indices(len(x), 2000)
    traces = []
    for key, values in curves.items():
        style = SCHEME_STYLES[key]
        look = keyed(style[0], kind=style[1]) if isinstance(style, tuple) else _series(style, dash="dash"
                                                                                      if key == "shaw" else "solid")
        name = titles[key]
        traces.append(_line(x[keep], as_array(values, np.float64)[keep], name,
                            _("i − j = %{x}<br>used %{y:.2f}") + f"<extra>{name}</extra>", look))
    marks: dict = {}
    if window is not None:
        marks = dict(shapes=[_line_shape(y=window)],
                     annotations=[_note(_("window w = {window}").format(window=window), x=0.01, xref="paper",
                                        y=window, xanchor="left", yanchor="bottom")])
    return _figure(
        _(CURVES_TITLE), traces,
        xaxis=dict(title=dict(text=_("true distance i − j (tokens)"))),
        yaxis=dict(title=dict(text=_("position used (tokens)"))),
        height=480, **_legend_below(150), **marks,
    )


def dual_chunk_figure(relative, kind, chunk_size: int, train_length: int, kind_names: Sequence[str]) -> go.Figure:
    """DCA's relative-position matrix next to a map of which of its three rules set each entry."""
    length = relative.shape[0]
    kinds = as_array(kind, np.float32).copy()
    kinds[kinds < 0] = np.nan
    stops = [(0.0, 1 / 3), (1 / 3, 2 / 3), (2 / 3, 1.0)]
    colorscale = [[edge, colour] for (low, high), colour in zip(stops, DCA_RULE_COLOURS, strict=True)
                  for edge in (low, high)]
    traces = [
        _square_heatmap(relative, 1, coloraxis="coloraxis", name="M",
                        hovertemplate=_("i %{y}, j %{x}<br>M = %{z:.0f}") + "<extra></extra>"),
        _square_heatmap(kinds, 2, coloraxis="coloraxis2", name=_("rule"),
                        hovertemplate=_("i %{y}, j %{x}<br>rule %{z}") + "<extra></extra>"),
    ]
    # the rule map's key is a legend (a colour bar for three categories would read as a scale)
    traces += [dict(type="scatter", x=[None], y=[None], mode="markers", name=_(name), xaxis="x2", yaxis="y2",
                    marker=dict(symbol="square", size=14, color=colour), showlegend=True)
               for name, colour in zip(kind_names, DCA_RULE_COLOURS, strict=True)]
    layout = _matrix_panels([_("relative position M[i, j]"), _("which rule sets M[i, j]")], length, gap=0.1)
    layout["margin"] = dict(t=90, b=120)
    boundaries = [b - 0.5 for b in range(chunk_size, length, chunk_size)]
    layout["shapes"] = [_line_shape(**{axis: boundary}, column=column, colour="white", dash=None)
                        for boundary in boundaries for column in (1, 2) for axis in ("x", "y")]
    return _figure(
        _("{title} (chunk s = {chunk}, pretraining c = {train})").format(title=_(DCA_TITLE), chunk=chunk_size,
                                                                        train=train_length),
        traces, height=560,
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=train_length - 1,
                       colorbar=dict(title=dict(text="M", side="right"), orientation="h", x=0.225, xanchor="center",
                                     y=0, yanchor="bottom", yref="container", len=0.45, thickness=14)),
        coloraxis2=dict(colorscale=colorscale, cmin=-0.5, cmax=2.5, showscale=False),
        showlegend=True, legend={**LEGEND_BELOW, "x": 0.775, "xanchor": "center"},
        **layout,
    )


# --- logit scaling --------------------------------------------------------------------------------


def log_n_figure(lengths, log_n, clipped, train_length: int) -> go.Figure:
    """log_L(n) against the number of tokens attended to, and the clipped form max(1, log_L n)."""
    x = as_array(lengths, np.float64)
    hover = _("n %{x:,.0f}<br>× %{y:.3f}") + "<extra></extra>"
    traces = [
        _line(x, as_array(log_n, np.float64), _("log-n scaling: log<sub>L</sub> n"), hover, _series(0)),
        _line(x, as_array(clipped, np.float64), _("clipped: max(1, log<sub>L</sub> n), as in Qwen"), hover,
              _series(1, dash="dash")),
    ]
    return _figure(
        _("{title}, trained at L = {length}").format(title=_(LOG_N_TITLE), length=f"{train_length:,}"), traces,
        xaxis=dict(title=dict(text=_("tokens attended to, n (log scale)")), type="log"),
        yaxis=dict(title=dict(text=_("logit multiplier"))),
        shapes=[_line_shape(x=train_length)],
        annotations=[_note("n = L ", x=math.log10(train_length), y=1, yref="paper", xanchor="right",
                           yanchor="top")],
        height=460, **_legend_below(120),
    )


def temperature_figure(scales, yarn_sqrt, yarn_logit, log_n_logit, train_length: int) -> go.Figure:
    """YaRN's √(1/t) and 1/t against s, with log-n written in s for the same L for comparison."""
    x = as_array(scales, np.float64)
    hover = _("s %{x:.3g}<br>× %{y:.3f}") + "<extra></extra>"
    traces = [
        _line(x, as_array(yarn_sqrt, np.float64), _("YaRN √(1/t) = 0.1·ln s + 1 (on q and on k)"), hover,
              keyed("yarn", line=dict(dash="dot", width=1.5))),
        _line(x, as_array(yarn_logit, np.float64), _("YaRN 1/t = (0.1·ln s + 1)² (on the logits)"), hover,
              keyed("yarn")),
        _line(x, as_array(log_n_logit, np.float64),
              _("log-n on the logits: 1 + ln s / ln L, L = {length}").format(length=f"{train_length:,}"), hover,
              _series(0, dash="dash")),
    ]
    return _figure(
        _(TEMPERATURE_TITLE), traces,
        xaxis=dict(title=dict(text=_("scale s = L′/L (log scale)")), type="log",
                   tickvals=[2**k for k in range(8)], ticktext=[f"{2**k}" for k in range(8)]),
        yaxis=dict(title=dict(text=_("multiplier"))),
        height=480, **_legend_below(150),
    )
