"""Figures for "The wider family": sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, DCA and logit scaling.

Every function takes values already computed by ``pe_core`` and returns a slide-ready figure;
``export_figures`` computes and draws them all at the page's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import DIVERGING, PALETTE, SEQUENTIAL, method_colour, new_figure

# The page's defaults (its widgets start here, and the export CLI draws these).
DEFAULTS = {
    "sin_dim": 128,
    "sin_base": 10000.0,
    "sin_length": 256,
    "alibi_heads": 8,
    "alibi_length": 64,
    "t5_buckets": 32,
    "t5_max_distance": 128,
    "rel_length": 64,
    "shaw_clip": 8,
    "rerope_window": 16,
    "leaky_k": 4.0,
    "dca_length": 128,
    "dca_train_length": 32,
    "dca_chunk": 24,
    "logn_train_length": 512,
}

MAX_HEATMAP_SIDE = 300  # cells per side actually sent to the browser
MAX_ALIBI_PANELS = 4

MISQUOTED_COLOUR = "#999999"


def decimated_indices(count: int, limit: int = MAX_HEATMAP_SIDE) -> np.ndarray:
    """Evenly spread indices (first and last included) so at most ``limit`` of ``count`` rows are drawn."""
    if count <= limit:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, limit).round().astype(np.int64))


def _array(values, dtype=np.float32) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=dtype)


def _figure(title: str, traces: Sequence[dict], **layout) -> go.Figure:
    """A project-template figure with its traces, built with one layout update and one trace batch.

    Traces are plain dicts so plotly validates each once; this keeps a page rerun cheap.
    """
    figure = new_figure(title, **layout)
    figure.add_traces(list(traces))
    return figure


def _square_heatmap(matrix, column: int = 1, positions=None, **trace) -> dict:
    """A [query, key] matrix as a heatmap trace, decimated to what a screen shows, with true indices on the axes.

    ``positions`` labels rows and columns when the matrix is itself a sample (default: 0 .. n − 1).
    """
    keep = decimated_indices(matrix.shape[0])
    labels = keep if positions is None else _array(positions, np.int64)[keep]
    suffix = _axis_suffix(column)
    return dict(type="heatmap", z=_array(matrix)[np.ix_(keep, keep)], x=labels, y=labels,
                xaxis=f"x{suffix}", yaxis=f"y{suffix}", **trace)


def _axis_suffix(column: int) -> str:
    return "" if column == 1 else str(column)


def _matrix_panels(titles: Sequence[str], length: int, gap: float = 0.04, right: float = 1.0,
                   x_title: str = "key position j", y_title: str = "query position i") -> dict:
    """Layout for side-by-side square-matrix panels (a plain dict: make_subplots is slow on every rerun)."""
    count = len(titles)
    width = (right - gap * (count - 1)) / count
    layout: dict = {"annotations": []}
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


def _line_shape(*, x=None, y=None, column: int = 1, colour: str = "#888", dash: str | None = "dot",
                width: float = 1) -> dict:
    """A vertical (x given) or horizontal (y given) line across one panel, as a plain shape dict."""
    suffix = _axis_suffix(column)
    line = dict(color=colour, width=width, dash=dash)
    if x is not None:
        return dict(type="line", x0=x, x1=x, y0=0, y1=1, xref=f"x{suffix}", yref=f"y{suffix} domain", line=line)
    return dict(type="line", y0=y, y1=y, x0=0, x1=1, yref=f"y{suffix}", xref=f"x{suffix} domain", line=line)


def _note(text: str, **position) -> dict:
    return dict(text=text, showarrow=False, font=dict(size=12, color="#666"), **position)


def _line(x, y, name: str, colour: str, hover: str, dash: str | None = None, **extra) -> dict:
    return dict(type="scatter", x=x, y=y, mode=extra.pop("mode", "lines"), name=name,
                line=dict(color=colour, dash=dash, **extra.pop("line", {})), hovertemplate=hover, **extra)


# --- sinusoidal and learned ---------------------------------------------------------------------


def sinusoidal_matrix_figure(encoding, base: float) -> go.Figure:
    """The PE matrix: fast stripes at low dimensions, slow ones at high dimensions."""
    positions, dim = encoding.shape
    rows = decimated_indices(positions)
    columns = decimated_indices(dim)
    heatmap = dict(
        type="heatmap", z=_array(encoding)[np.ix_(rows, columns)], x=columns, y=rows, colorscale=DIVERGING,
        zmin=-1, zmax=1, colorbar=dict(title=dict(text="PE")),
        hovertemplate="pos %{y}<br>dim %{x}<br>PE %{z:.3f}<extra></extra>",
    )
    return _figure(
        f"Sinusoidal position encodings PE(pos, j), d = {dim}, base {base:,.0f}", [heatmap],
        xaxis=dict(title=dict(text="dimension j (even: sin, odd: cos)")),
        yaxis=dict(title=dict(text="position pos (tokens)"), autorange="reversed"),
    )


def sinusoidal_periods_figure(periods, base: float, length: int) -> go.Figure:
    """Period of every dimension on a log axis, with the length shown as a reference line."""
    dims = np.arange(len(periods))
    traces = [
        _line(dims, _array(periods, np.float64), "period of dimension j", PALETTE[0],
              "dim %{x}<br>period %{y:,.1f} tokens<extra></extra>", mode="lines+markers", line=dict(shape="hv"),
              marker=dict(size=4)),
        _line([dims[0], dims[-1]], [length, length], f"positions shown ({length:,})", PALETTE[1],
              "%{y:,} positions<extra></extra>", dash="dash"),
    ]
    return _figure(
        f"Sinusoidal periods per dimension (base {base:,.0f})", traces,
        xaxis=dict(title=dict(text="dimension j")),
        yaxis=dict(title=dict(text="period 2π·base^(2⌊j/2⌋/d) (tokens, log scale)"), type="log"),
        showlegend=True, legend=dict(x=0.02, y=0.98),
    )


def learned_similarity_figure(learned_similarity, sinusoidal_similarity=None, positions=None) -> go.Figure:
    """Cosine similarity between the learned position vectors, next to the sinusoidal ones of the same size.

    ``positions`` are the positions the rows stand for (when a long table was sampled).
    """
    span = learned_similarity.shape[0] if positions is None else int(positions[-1]) + 1
    panels = [("learned (trained model)", learned_similarity)]
    if sinusoidal_similarity is not None:
        panels.append(("sinusoidal, same d and length", sinusoidal_similarity))
    traces = [
        _square_heatmap(matrix, column, positions, coloraxis="coloraxis", name=title,
                        hovertemplate="pos %{y} · pos %{x}<br>cos sim %{z:.3f}<extra></extra>")
        for column, (title, matrix) in enumerate(panels, start=1)
    ]
    return _figure(
        "Learned position embeddings: cosine similarity between positions", traces,
        coloraxis=dict(colorscale=DIVERGING, cmin=-1, cmax=1, colorbar=dict(title=dict(text="cos"))),
        **_matrix_panels([title for title, _ in panels], span, gap=0.08,
                         x_title="position", y_title="position"),
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
    values = _array(slopes, np.float64)
    traces = [_line(heads, values, "ALiBi paper's slopes (reference code)", PALETTE[0],
                    "head %{x}<br>m = %{y:.6g}<extra></extra>", mode="markers+lines", marker=dict(size=8))]
    everything = values
    if misquoted is not None:
        wrong = _array(misquoted, np.float64)
        everything = np.concatenate([values, wrong])
        traces.append(_line(heads, wrong, "2^(−8/n), as some notes write it", MISQUOTED_COLOUR,
                            "head %{x}<br>2^(−8/n) = %{y:.6g}<extra></extra>", dash="dot", mode="markers+lines",
                            marker=dict(size=6, symbol="x")))
    return _figure(
        f"ALiBi slopes per head ({len(slopes)} heads)", traces,
        xaxis=dict(title=dict(text="head n"), dtick=1 if len(slopes) <= 16 else None),
        yaxis=dict(title=dict(text="slope m (log₂ scale)"), type="log", **_power_of_two_ticks(everything)),
        showlegend=True, legend=dict(orientation="h", x=0, y=-0.22, yanchor="top"),
    )


def alibi_heads_to_show(num_heads: int, limit: int = MAX_ALIBI_PANELS) -> list[int]:
    """Zero-based heads to draw: all of them up to ``limit``, else evenly spread, first and last included."""
    return sorted({int(h) for h in np.linspace(0, num_heads - 1, min(limit, num_heads)).round()})


def alibi_bias_figure(bias, slopes, heads: Sequence[int]) -> go.Figure:
    """The causal bias −m·(i − j) added to the logits, for a few heads on one colour scale.

    ``bias[k]`` is the matrix of zero-based head ``heads[k]``; ``slopes`` lists every head's slope.
    """
    length = bias.shape[-1]
    values = _array(slopes, np.float64)
    titles = [f"head {h + 1}: m = {values[h]:.4g}" for h in heads]
    future = np.triu(np.ones((length, length), dtype=bool), k=1)
    traces = []
    for column in range(1, len(heads) + 1):
        matrix = _array(bias[column - 1])
        matrix[future] = np.nan  # masked: a decoder never attends to the future
        traces.append(_square_heatmap(matrix, column, coloraxis="coloraxis", name=titles[column - 1],
                                      hovertemplate="i %{y}, j %{x}<br>bias %{z:.3f}<extra></extra>"))
    return _figure(
        f"ALiBi bias matrices −m·(i − j), length {length}", traces,
        coloraxis=dict(colorscale="Blues_r", colorbar=dict(title=dict(text="bias"))),
        **_matrix_panels(titles, length),
    )


# --- T5 ----------------------------------------------------------------------------------------


def t5_bucket_figure(relative_positions, bidirectional_buckets, causal_buckets, num_buckets: int,
                     max_distance: int) -> go.Figure:
    """Bucket index against j − i: exact near zero, logarithmic further out, flat beyond max_distance."""
    x = _array(relative_positions, np.int64)
    traces = [
        _line(x, _array(buckets, np.int64), name, method_colour(index),
              "j − i = %{x}<br>bucket %{y}<extra>" + name + "</extra>", line=dict(shape="hv"))
        for index, (name, buckets) in enumerate((("bidirectional (encoder)", bidirectional_buckets),
                                                 ("causal (decoder)", causal_buckets)))
    ]
    return _figure(
        f"T5 relative-position buckets ({num_buckets} buckets, max_distance {max_distance})", traces,
        xaxis=dict(title=dict(text="relative position j − i (key minus query, tokens; negative = key in the past)")),
        yaxis=dict(title=dict(text="bucket index")),
        showlegend=True, legend=dict(x=0.02, y=0.98),
        shapes=[_line_shape(x=edge) for edge in (-max_distance, max_distance)],
        annotations=[_note(" ±max_distance", x=max_distance, y=1, yref="paper", xanchor="left", yanchor="top")],
    )


# --- relative-position matrices -----------------------------------------------------------------


def relative_matrices_figure(matrices: Mapping[str, object], length: int) -> go.Figure:
    """The relative position each (query, key) pair is given, one panel per scheme, one colour scale."""
    titles = list(matrices)
    traces = [
        _square_heatmap(matrices[title], column, coloraxis="coloraxis", name=title,
                        hovertemplate="i %{y}, j %{x}<br>position %{z:.2f}<extra></extra>")
        for column, title in enumerate(titles, start=1)
    ]
    return _figure(
        f"Relative position used by attention, length {length}", traces, height=430,
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, colorbar=dict(title=dict(text="position"))),
        **_matrix_panels(titles, length, gap=0.035),
    )


def position_curves_figure(distances, curves: Mapping[str, object], window: int | None = None) -> go.Figure:
    """One row of the matrices: the position each scheme uses against the true distance i − j."""
    x = _array(distances, np.float64)
    keep = decimated_indices(len(x), 2000)
    traces = [
        _line(x[keep], _array(values, np.float64)[keep], name, method_colour(index),
              "i − j = %{x}<br>used %{y:.2f}<extra>" + name + "</extra>", dash="dash" if index == 0 else None)
        for index, (name, values) in enumerate(curves.items())
    ]
    marks: dict = {}
    if window is not None:
        marks = dict(shapes=[_line_shape(y=window)],
                     annotations=[_note(f"window w = {window}", x=1, xref="paper", y=window, xanchor="right",
                                        yanchor="top")])
    return _figure(
        "Position used vs true distance", traces,
        xaxis=dict(title=dict(text="true distance i − j (tokens)")),
        yaxis=dict(title=dict(text="relative position given to attention (tokens)")),
        showlegend=True, legend=dict(x=0.02, y=0.98), **marks,
    )


_DCA_KIND_COLOURS = ((0.0, PALETTE[2]), (1 / 3, PALETTE[2]), (1 / 3, PALETTE[4]), (2 / 3, PALETTE[4]),
                     (2 / 3, PALETTE[3]), (1.0, PALETTE[3]))


def dual_chunk_figure(relative, kind, chunk_size: int, train_length: int, kind_names: Sequence[str]) -> go.Figure:
    """DCA's relative-position matrix next to a map of which of its three rules set each entry."""
    length = relative.shape[0]
    kinds = _array(kind).copy()
    kinds[kinds < 0] = np.nan
    colours = [colour for stop, colour in _DCA_KIND_COLOURS[::2]]
    traces = [
        _square_heatmap(relative, 1, coloraxis="coloraxis", name="M",
                        hovertemplate="i %{y}, j %{x}<br>M = %{z:.0f}<extra></extra>"),
        _square_heatmap(
            kinds, 2, colorscale=[[stop, colour] for stop, colour in _DCA_KIND_COLOURS], zmin=-0.5, zmax=2.5,
            showscale=False, name="rule", hovertemplate="i %{y}, j %{x}<br>rule %{z}<extra></extra>",
        ),
    ]
    # the rule map's key is a legend (a colour bar for three categories would read as a scale)
    traces += [dict(type="scatter", x=[None], y=[None], mode="markers", name=name, xaxis="x2", yaxis="y2",
                    marker=dict(symbol="square", size=14, color=colour), showlegend=True)
               for name, colour in zip(kind_names, colours, strict=True)]
    layout = _matrix_panels(["relative position M[i, j]", "which rule sets M[i, j]"], length, gap=0.1)
    boundaries = [b - 0.5 for b in range(chunk_size, length, chunk_size)]
    layout["shapes"] = [_line_shape(**{axis: boundary}, column=column, colour="white", dash=None)
                        for boundary in boundaries for column in (1, 2) for axis in ("x", "y")]
    return _figure(
        f"Dual Chunk Attention relative positions (chunk s = {chunk_size}, pretraining c = {train_length})",
        traces, height=560, margin=dict(b=120),
        coloraxis=dict(colorscale=SEQUENTIAL, cmin=0, cmax=train_length - 1,
                       colorbar=dict(title=dict(text="M", side="right"), orientation="h", x=0.225, xanchor="center",
                                     y=-0.2, yanchor="top", len=0.45, thickness=14)),
        showlegend=True, legend=dict(orientation="h", x=0.775, xanchor="center", y=-0.2, yanchor="top"),
        **layout,
    )


# --- logit scaling --------------------------------------------------------------------------------


def log_n_figure(lengths, attention_e, clipped, train_length: int) -> go.Figure:
    """log_L(n) against the number of tokens attended to."""
    x = _array(lengths, np.float64)
    hover = "n %{x:,.0f}<br>× %{y:.3f}<extra></extra>"
    traces = [
        _line(x, _array(attention_e, np.float64), "Attention-E: log_L n", PALETTE[0], hover),
        _line(x, _array(clipped, np.float64), "max(1, log_L n), as Qwen uses it", PALETTE[1], hover, dash="dash"),
    ]
    return _figure(
        f"Log-n (Attention-E) logit scale vs length, trained at L = {train_length:,}", traces,
        xaxis=dict(title=dict(text="tokens attended to, n (log scale)"), type="log"),
        yaxis=dict(title=dict(text="logit multiplier")),
        showlegend=True, legend=dict(x=0.02, y=0.98),
        shapes=[_line_shape(x=train_length)],
        annotations=[_note("n = L ", x=math.log10(train_length), y=1, yref="paper", xanchor="right",
                           yanchor="top")],
    )


def temperature_figure(scales, yarn_sqrt, yarn_logit, log_n_logit, train_length: int) -> go.Figure:
    """YaRN's √(1/t) and 1/t against s, with log-n written in s for the same L for comparison."""
    x = _array(scales, np.float64)
    hover = "s %{x:.3g}<br>× %{y:.3f}<extra></extra>"
    series = (
        ("YaRN √(1/t) = 0.1·ln s + 1 (on q and on k)", yarn_sqrt, "dot"),
        ("YaRN 1/t = (0.1·ln s + 1)² (on the logits)", yarn_logit, None),
        (f"log-n on the logits: 1 + ln s / ln L, L = {train_length:,}", log_n_logit, "dash"),
    )
    traces = [_line(x, _array(values, np.float64), name, method_colour(index), hover, dash=dash)
              for index, (name, values, dash) in enumerate(series)]
    return _figure(
        "Attention temperature vs scale s = L'/L: YaRN and log-n", traces,
        xaxis=dict(title=dict(text="scale s = L'/L (log scale)"), type="log"),
        yaxis=dict(title=dict(text="multiplier")),
        showlegend=True, legend=dict(x=0.02, y=0.98),
    )


# --- export --------------------------------------------------------------------------------------


def scheme_titles(shaw_clip: int, window: int, leaky_k: float) -> dict[str, str]:
    """Legend and panel names for pe_core.family.relative_position_schemes' keys."""
    return {
        "plain": "plain: i − j",
        "shaw": f"Shaw: clip ±{shaw_clip}",
        "rerope": f"ReRoPE: w = {window}",
        "leaky": f"Leaky: w = {window}, k = {leaky_k:g}",
    }


def labelled(values: Mapping[str, object], titles: Mapping[str, str]) -> dict[str, object]:
    return {titles[key]: value for key, value in values.items()}


def export_figures(**overrides) -> dict[str, go.Figure]:
    """Every figure of the page at its defaults (override any DEFAULTS key, or pass learned_embeddings)."""
    from pe_core import family
    from pe_core.biases import alibi_slopes

    unknown = set(overrides) - set(DEFAULTS) - {"learned_embeddings"}
    if unknown:
        raise ValueError(f"Unknown figure settings: {', '.join(sorted(unknown))}.")
    p = {**DEFAULTS, **{k: v for k, v in overrides.items() if k in DEFAULTS}}
    figures: dict[str, go.Figure] = {}

    encoding = family.sinusoidal_encoding(p["sin_length"], p["sin_dim"], p["sin_base"])
    figures["sinusoidal_matrix"] = sinusoidal_matrix_figure(encoding, p["sin_base"])
    figures["sinusoidal_periods"] = sinusoidal_periods_figure(
        family.sinusoidal_periods(p["sin_dim"], p["sin_base"]), p["sin_base"], p["sin_length"])

    learned = overrides.get("learned_embeddings")
    if learned is not None:
        similarity = family.learned_and_sinusoidal_similarity(learned)
        figures["learned_similarity"] = learned_similarity_figure(similarity.learned, similarity.sinusoidal,
                                                                  similarity.positions)

    heads = p["alibi_heads"]
    slopes = alibi_slopes(heads)
    figures["alibi_slopes"] = alibi_slopes_figure(slopes, family.misquoted_alibi_slopes(heads))
    shown = alibi_heads_to_show(heads)
    figures["alibi_bias"] = alibi_bias_figure(family.alibi_head_biases(heads, p["alibi_length"], shown), slopes, shown)

    figures["t5_buckets"] = t5_bucket_figure(*family.t5_bucket_curves(p["t5_buckets"], p["t5_max_distance"]),
                                             p["t5_buckets"], p["t5_max_distance"])

    titles = scheme_titles(p["shaw_clip"], p["rerope_window"], p["leaky_k"])
    schemes = family.relative_position_schemes(
        family.relative_distances(p["rel_length"]), p["shaw_clip"], p["rerope_window"], p["leaky_k"])
    figures["relative_matrices"] = relative_matrices_figure(labelled(schemes, titles), p["rel_length"])

    dca = family.dual_chunk_positions(p["dca_length"], p["dca_chunk"], p["dca_train_length"])
    figures["dual_chunk"] = dual_chunk_figure(dca.relative, dca.kind, p["dca_chunk"], p["dca_train_length"],
                                              family.DCA_KINDS)

    curve_length = max(p["rel_length"], p["dca_length"])
    distance = torch.arange(curve_length, dtype=torch.float64)
    curves = labelled(family.relative_position_schemes(distance, p["shaw_clip"], p["rerope_window"], p["leaky_k"]),
                      titles)
    curves[dca_curve_title(p["dca_chunk"], p["dca_train_length"])] = family.dual_chunk_last_query(
        curve_length, p["dca_chunk"], p["dca_train_length"])
    figures["position_curves"] = position_curves_figure(distance, curves, p["rerope_window"])

    train_length = p["logn_train_length"]
    lengths = family.log_spaced(1, 64 * train_length)
    figures["log_n"] = log_n_figure(lengths, family.attention_e_scale(lengths, train_length),
                                    family.clipped_log_n_scale(lengths, train_length), train_length)
    scales = family.log_spaced(1, 128)
    figures["temperature"] = temperature_figure(
        scales, family.yarn_sqrt_inverse_temperature(scales), family.yarn_logit_scale(scales),
        family.attention_e_scale(scales * train_length, train_length), train_length)
    return figures


def dca_curve_title(chunk_size: int, train_length: int) -> str:
    return f"DCA: s = {chunk_size}, c = {train_length} (last query)"
