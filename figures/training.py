"""Figures of the tiny-transformer experiment: the toy's spectrum, loss curves, accuracy over seeds,
per-position losses, fine-tuning, and how each encoding represents position.

Pure drawing: every function takes plain values (numbers, tuples, tensors already computed by
``pe_core``) and returns a figure in the project's visual language; ``lessons.training``
decides what to draw. A trace that shows one method or encoding takes its look from the theme.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures.text import text_width
from figures.theme import HIGHLIGHT, LEGEND_BELOW, MUTED, TABLE_WIDTH, keyed, new_figure, series_colour, style_of
from i18n import N_, _

MAX_LINE_POINTS = 2000
POSITION_BINS = 64  # per-position curves are averaged over bins of positions: readable, ≤ 64 points

SPECTRUM_TITLE = N_("Does the toy turn like a real model? Turns per pair within the training length")
LOSS_TITLE = N_("Training loss")
TABLE_TITLE = N_("Every encoding: accuracy (%) by length, and what training costs")
METHODS_TABLE_TITLE = N_("RoPE past its training length: every method (accuracy %, mean ± sd over seeds)")
SEEDS_TITLE = N_("Accuracy at the longest length, every encoding")
METHODS_SEEDS_TITLE = N_("RoPE at the longest length, every method")
PER_POSITION_TITLE = N_("Loss at each position")
PER_LENGTH_TITLE = N_("Accuracy against evaluation length")
FINE_TUNE_TITLE = N_("A short fine-tune at the longest length")
TUNE_CURVE_TITLE = N_("Accuracy at the longest length along the fine-tune")
SU_TITLE = N_("Su's published extrapolation table beside this toy")
POSITION_TITLE = N_("How the encoding represents position")
COMPARE_TITLE = N_("Two stored runs compared")

class Keyed(NamedTuple):
    """A series that shows one method or one encoding (its look comes from the theme)."""

    key: str
    kind: str  # "method" or "encoding"
    name: str  # already translated
    values: Sequence[float] | torch.Tensor
    spread: Sequence[float] | None = None  # ± per value (error bars), if any
    logn: bool = False  # the method with log-n scaling


class StepCurve(NamedTuple):
    """A method's accuracy against fine-tuning steps, mean ± sd over seeds."""

    key: str
    kind: str
    name: str  # already translated
    steps: Sequence[int]
    mean: Sequence[float]
    sd: Sequence[float]
    logn: bool = False


class SpectrumLine(NamedTuple):
    name: str  # already translated, with its numbers
    turns: Sequence[float] | torch.Tensor  # L/λᵢ per pair


class SeedRow(NamedTuple):
    """One row of the seed chart: mean ± sd at the longest length, and the mean at L."""

    key: str
    kind: str
    name: str  # already translated
    mean: float
    sd: float
    n: int
    at_train_length: float | None
    fine_tuned: bool = False
    logn: bool = False


def _decimate(xs: Sequence[float], ys: Sequence[float], limit: int = MAX_LINE_POINTS) -> tuple[list, list]:
    if len(xs) <= limit:
        return list(xs), list(ys)
    stride = math.ceil(len(xs) / limit)
    keep = list(range(0, len(xs), stride))
    if keep[-1] != len(xs) - 1:
        keep.append(len(xs) - 1)  # always keep the latest point
    return [xs[i] for i in keep], [ys[i] for i in keep]


def binned(values: Sequence[float] | torch.Tensor, bins: int = POSITION_BINS) -> tuple[list[float], list[float]]:
    """(bin centre position, mean value) over equal bins of consecutive positions (width ≥ 1)."""
    values = torch.as_tensor(values, dtype=torch.float64)
    width = max(1, math.ceil(values.numel() / bins))
    usable = values.numel() // width * width
    means = values[:usable].view(-1, width).mean(1)
    centres = torch.arange(means.numel(), dtype=torch.float64) * width + (width - 1) / 2
    if usable < values.numel():  # the last, shorter bin
        means = torch.cat((means, values[usable:].mean().view(1)))
        centres = torch.cat((centres, torch.tensor([(usable + values.numel() - 1) / 2], dtype=torch.float64)))
    return centres.tolist(), means.tolist()


LEGEND_ROW = 23  # px per row of a legend below the plot (two entries a row at the usual widths)


def _legend_below(figure: go.Figure, bottom: int = 130, entries: int = 0) -> go.Figure:
    """The legend under the x axis's ticks and title.

    With ``entries`` legend items, the bottom margin (and the figure) grows so that about two items a row
    fit under the axis without squeezing the plot.
    """
    layout = figure.layout
    below_axis = 62 if layout.xaxis.title.text else 34
    needed = below_axis + LEGEND_ROW * math.ceil(entries / 2) + 20
    if needed > bottom:
        figure.update_layout(height=(layout.height or 450) + needed - bottom)
        bottom = needed
    figure.update_layout(legend=LEGEND_BELOW, margin=dict(b=bottom))
    return figure


def spectrum_figure(lines: Sequence[SpectrumLine], scale: int) -> go.Figure:
    """L/λᵢ per pair for the toy and real models (pair index as a fraction of the pairs, so sizes compare).

    Above 1: the pair turns fully within L (every angle seen). Below 1: only an arc is seen, and at
    s·L the pair goes past it. Below 1/s: even at s·L the pair does not complete one turn.
    """
    figure = new_figure(_(SPECTRUM_TITLE), height=480,
                        xaxis_title=_("pair i / number of pairs (fast → slow)"),
                        yaxis_title=_("turns within L: L / λᵢ"))
    for index, line in enumerate(lines):
        turns = torch.as_tensor(line.turns, dtype=torch.float64)
        count = turns.numel()
        x = ((torch.arange(count, dtype=torch.float64) + 0.5) / count).tolist()
        figure.add_scatter(x=x, y=turns.tolist(), mode="lines+markers", name=line.name,
                           line=dict(color=series_colour(index), width=3 if index == 0 else 2,
                                     dash="solid" if index == 0 else ("dash", "dot", "dashdot")[index % 3]),
                           marker=dict(size=7 if index == 0 else 4, color=series_colour(index)),
                           hovertemplate=_("pair %{x:.2f} of the spectrum: %{y:.3g} turns within L") + "<extra></extra>")
    for level, label in ((1.0, _("one turn within L: every angle seen")),
                         (1.0 / scale, _("one turn within {scale}·L").format(scale=scale))):
        figure.add_scatter(x=[0, 1], y=[level, level], mode="lines", name=label, hoverinfo="skip",
                           line=dict(color=MUTED if level == 1 else HIGHLIGHT, dash="dot", width=1.5))
    figure.update_yaxes(type="log", exponentformat="power", dtick=1)  # powers of ten only: minor labels crowd
    figure.update_xaxes(range=[0, 1])
    return _legend_below(figure, 170)


def loss_curve_figure(steps: Sequence[int], losses: Sequence[float], validation: Sequence[tuple[int, float]] = (),
                      unigram_baseline: float | None = None, *, total_steps: int | None = None,
                      title: str | None = None) -> go.Figure:
    """Training loss per step, validation loss where measured, and the unigram baseline."""
    figure = new_figure(title or _(LOSS_TITLE), xaxis_title=_("optimiser step"),
                        yaxis_title=_("loss (nats per character)"), height=380)
    x, y = _decimate(list(steps), list(losses))
    figure.add_scatter(x=x, y=y, mode="lines", name=_("training batch"), line=dict(color=series_colour(0), width=1.6))
    if validation:
        figure.add_scatter(x=[s for s, _v in validation], y=[v for _s, v in validation], mode="lines+markers",
                           name=_("validation"), line=dict(color=series_colour(1)))
    if unigram_baseline is not None:
        figure.add_scatter(x=[0, total_steps or (max(steps) if steps else 1)], y=[unigram_baseline] * 2, mode="lines",
                           name=_("letter frequencies only (unigram baseline)"), hoverinfo="skip",
                           line=dict(color=MUTED, dash="dash", width=1.5))
    if total_steps:
        figure.update_xaxes(range=[0, total_steps])
    return _legend_below(figure, 110)


LINE_HEIGHT = 20  # px each further line of a wrapped cell adds
CELL_PADDING = 16  # px a plotly table cell keeps free beside its text


def _wrapped_lines(text: str, width_px: float, font_size: float) -> int:
    """About how many lines ``text`` takes in a column ``width_px`` wide (words are not broken; plotly breaks
    lines only at spaces, so a Chinese cell is one word up to its next space)."""
    room = width_px - CELL_PADDING
    lines, used = 1, 0.0
    for word in str(text).replace("<b>", "").replace("</b>", "").split():
        width = text_width(word, font_size)
        gap = text_width(" ", font_size) if used else 0.0
        if used and used + gap + width > room:
            lines, used = lines + 1, width
        else:
            used += gap + width
    return lines


CELL_FONT_SIZE = 13  # "51.0 ± 0.9" fits a 94 px column on one line, so eight columns fit a desktop page
HEADER_FONT_SIZE = 14


def accuracy_table_figure(header: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None,
                          note: str = "", widths: Sequence[float] | None = None) -> go.Figure:
    """One row per encoding or method, one column per evaluation length (cells already formatted).

    ``widths``: relative column widths (default: a wide first column, a narrow second, the rest equal). The
    figure is as tall as its rows once long cells wrap, so no row is cut off.
    """
    widths = list(widths or [3.6, 0.8] + [1.5] * (len(header) - 2))
    columns = [TABLE_WIDTH * w / sum(widths) for w in widths]
    header_lines = max((_wrapped_lines(h, w, HEADER_FONT_SIZE) for h, w in zip(header, columns, strict=True)),
                       default=1)
    row_lines = [max(_wrapped_lines(c, w, CELL_FONT_SIZE) for c, w in zip(row, columns, strict=True)) for row in rows]
    height = 60 + 30 + LINE_HEIGHT * (header_lines - 1) + sum(30 + LINE_HEIGHT * (n - 1) for n in row_lines)
    figure = new_figure(title or _(TABLE_TITLE), height=height + 15 + (30 if note else 5),
                        margin=dict(l=10, r=10, t=60, b=30 if note else 5))
    table_columns = list(zip(*rows, strict=True)) if rows else [[] for _h in header]
    figure.add_trace(go.Table(
        header=dict(values=[f"<b>{h}</b>" for h in header], fill_color="#eef2f7", align="left",
                    font=dict(size=HEADER_FONT_SIZE)),
        cells=dict(values=table_columns, align=["left"] * 2 + ["right"] * (len(header) - 2), height=30,
                   font=dict(size=CELL_FONT_SIZE), fill_color="white"),
        columnwidth=widths,
    ))
    if note:
        figure.add_annotation(text=note, x=0, y=0, xref="paper", yref="paper", yanchor="top", xanchor="left",
                              showarrow=False, font=dict(size=12, color=MUTED))
    return figure


def seed_chart_figure(rows: Sequence[SeedRow], *, longest_label: str, train_label: str,
                      title: str | None = None) -> go.Figure:
    """Mean ± sd over seeds at the longest length (one row each), with the mean at L as an open marker."""
    names = [row.name for row in rows]
    figure = new_figure(title or _(SEEDS_TITLE), height=190 + 34 * len(rows), xaxis_title=_("next-character accuracy"),
                        margin=dict(l=10, r=20, t=60, b=120))
    for row in rows:
        colour = style_of(row.key, row.kind).colour
        symbol = style_of(row.key, row.kind).marker.replace("-open", "")
        trace = keyed(row.key, row.kind, logn=row.logn, lines=False, markers=True,
                     marker=dict(size=12, symbol=symbol + "-open" if row.logn else symbol,
                                 line=dict(width=2.5, color=colour)))  # line-only symbols (x-thin) need a line
        hover = _("{name}: {mean:.1%} ± {sd:.1%} over {n} seeds").format(name=row.name, mean=row.mean, sd=row.sd,
                                                                       n=row.n)
        figure.add_scatter(x=[row.mean], y=[row.name], name=row.name, showlegend=False,
                           error_x=dict(type="data", array=[row.sd], color=colour, thickness=2, width=6),
                           hovertemplate=hover + "<extra></extra>", **trace)
    trained = [(row.name, row.at_train_length) for row in rows if row.at_train_length is not None]
    if trained:
        figure.add_scatter(x=[v for _n, v in trained], y=[n for n, _v in trained], mode="markers",
                           name=train_label, marker=dict(symbol="line-ns-open", size=16, color=MUTED, line_width=2),
                           hovertemplate="%{y}: %{x:.1%}<extra></extra>")
    figure.add_scatter(x=[None], y=[None], mode="markers", name=longest_label,
                       marker=dict(symbol="circle", size=10, color=MUTED), hoverinfo="skip")
    figure.update_yaxes(categoryorder="array", categoryarray=list(reversed(names)), automargin=True, title=None)
    figure.update_xaxes(tickformat=".0%", rangemode="tozero")
    return _legend_below(figure, 120)


def per_position_figure(curves: Sequence[Keyed], train_length: int, length: int, *,
                        title: str | None = None, bins: int = POSITION_BINS) -> go.Figure:
    """One line per method: the loss at each position (binned), with the training length marked."""
    figure = new_figure(title or _("Loss at each position, evaluated at L′ = {length} ({scale}× L)").format(
        length=f"{length:,}", scale=length // train_length),
        xaxis_title=_("position in the sequence (characters)"), yaxis_title=_("loss at the position (nats)"),
        height=460)
    top = 0.0
    for curve in curves:
        x, y = binned(curve.values, bins)
        top = max(top, max(y, default=0.0))
        figure.add_scatter(x=x, y=y, name=curve.name, **keyed(curve.key, curve.kind, logn=curve.logn))
    if length > train_length:
        figure.add_vrect(x0=train_length, x1=length, fillcolor=HIGHLIGHT, opacity=0.05, line_width=0)
    figure.add_scatter(x=[train_length, train_length], y=[0, top * 1.05], mode="lines",
                       name=_("training length L = {length}").format(length=train_length), hoverinfo="skip",
                       line=dict(color=MUTED, dash="dot", width=1.5))
    return _legend_below(figure, 140, entries=len(curves) + 1)


def per_length_figure(multiples: Sequence[int], curves: Sequence[Keyed], *, title: str | None = None,
                      seeds: int | None = None) -> go.Figure:
    """Mean accuracy over whole sequences of each length (± sd over seeds), x: L′/L on a log scale."""
    if title is None and seeds is not None:
        title = (_("{title} (one seed so far)") if seeds == 1 else _("{title} (mean ± sd over {n} seeds)")).format(
            title=_(PER_LENGTH_TITLE), n=seeds)
    figure = new_figure(title or _(PER_LENGTH_TITLE), xaxis_title=_("evaluation length L′ / training length L"),
                        yaxis_title=_("next-character accuracy"), height=460)
    for curve in curves:
        extra = {}
        if curve.spread is not None:
            extra["error_y"] = dict(type="data", array=list(curve.spread), color=style_of(curve.key, curve.kind).colour,
                                    thickness=1.5, width=5)
        figure.add_scatter(x=list(multiples), y=list(curve.values), name=curve.name,
                           **keyed(curve.key, curve.kind, logn=curve.logn, markers=True), **extra)
    figure.update_xaxes(type="log", tickvals=list(multiples), ticktext=[f"{m:g}×" for m in multiples])
    figure.update_yaxes(tickformat=".0%")
    return _legend_below(figure, 150, entries=len(curves))


def fine_tune_figure(curves: Sequence[Keyed], train_length: int, length: int, steps: int) -> go.Figure:
    """Per-position loss at L′ before (dotted) and after (solid) fine-tuning, for each fine-tuned method."""
    figure = new_figure(_("{title}: {steps} steps at L′ = {length}").format(title=_(FINE_TUNE_TITLE), steps=steps,
                                                                           length=f"{length:,}"),
                        xaxis_title=_("position in the sequence (characters)"),
                        yaxis_title=_("loss at the position (nats)"), height=460)
    top = 0.0
    for curve in curves:
        x, y = binned(curve.values, POSITION_BINS)
        top = max(top, max(y, default=0.0))
        after = curve.spread is None
        figure.add_scatter(x=x, y=y, name=curve.name,
                           **keyed(curve.key, curve.kind, line=dict(dash="solid" if after else "dot"),
                                  opacity=1.0 if after else 0.7))
    figure.add_scatter(x=[train_length, train_length], y=[0, top * 1.05], mode="lines",
                       name=_("training length L = {length}").format(length=train_length), hoverinfo="skip",
                       line=dict(color=MUTED, dash="dot", width=1.5))
    return _legend_below(figure, 150, entries=len(curves) + 1)


def fine_tune_curve_figure(curves: Sequence[StepCurve], steps: int, *, longest_label: str, scale: int, seeds: int,
                           target: float | None, target_label: str) -> go.Figure:
    """Accuracy at L′ against fine-tuning steps, one line per method (± sd over seeds), and the level to reach."""
    title = (_("Accuracy at L′ = {length} ({scale}× L) along the fine-tune, one seed") if seeds == 1 else
             _("Accuracy at L′ = {length} ({scale}× L) along the fine-tune, mean ± sd over {n} seeds")).format(
        length=longest_label, scale=scale, n=seeds)
    figure = new_figure(title, xaxis_title=_("fine-tuning steps at L′"), yaxis_title=_("next-character accuracy"),
                        height=440)
    for curve in curves:
        figure.add_scatter(x=list(curve.steps), y=list(curve.mean), name=curve.name,
                           error_y=dict(type="data", array=list(curve.sd), color=style_of(curve.key, curve.kind).colour,
                                        thickness=1.5, width=5),
                           **keyed(curve.key, curve.kind, logn=curve.logn, markers=True, marker=dict(size=9)))
    if target is not None:
        figure.add_scatter(x=[0, steps], y=[target, target], mode="lines", name=target_label, hoverinfo="skip",
                           line=dict(color=MUTED, dash="dash", width=1.5))
    figure.update_xaxes(range=[-0.03 * steps, 1.03 * steps], rangemode="tozero")
    figure.update_yaxes(tickformat=".0%")
    return _legend_below(figure, 140, entries=len(curves) + (target is not None))


def pair_wavelength_figure(wavelengths: Sequence[float] | torch.Tensor, train_length: int, longest: int, *,
                           title: str, xaxis_title: str) -> go.Figure:
    """λᵢ per pair (log scale) against L and the longest evaluation length L′."""
    wavelengths = torch.as_tensor(wavelengths, dtype=torch.float64)
    index = list(range(wavelengths.numel()))
    turns = wavelengths <= train_length
    figure = new_figure(title, xaxis_title=xaxis_title, yaxis_title=_("wavelength λᵢ (characters)"), height=400)
    for name, mask, colour in ((_("completes a turn within L"), turns, series_colour(2)),
                               (_("never completes a turn within L"), ~turns, HIGHLIGHT)):
        figure.add_scatter(x=[i for i in index if mask[i]], y=wavelengths[mask].tolist(), mode="markers",
                           name=name, marker=dict(color=colour, size=9))
    span = [-0.5, len(index) - 0.5]  # reference lengths as traces: shapes on a log axis take exponents
    figure.add_scatter(x=span, y=[train_length] * 2, mode="lines", hoverinfo="skip",
                       name=_("training length L = {length}").format(length=f"{train_length:,}"),
                       line=dict(color=MUTED, dash="dot", width=1.5))
    if longest > train_length:
        figure.add_scatter(x=span, y=[longest] * 2, mode="lines", hoverinfo="skip",
                           name=_("longest evaluation L′ = {length}").format(length=f"{longest:,}"),
                           line=dict(color=MUTED, dash="dash", width=1.5))
    figure.update_yaxes(type="log", exponentformat="power", dtick=1)
    return _legend_below(figure, 130)


def alibi_bias_figure(slopes: Sequence[float] | torch.Tensor, train_length: int, longest: int) -> go.Figure:
    """−m_h·distance for each head: straight lines, so two points per head are exact."""
    slopes = torch.as_tensor(slopes, dtype=torch.float64)
    figure = new_figure(_("ALiBi's penalty on attention scores, per head"), xaxis_title=_("distance i − j (characters)"),
                        yaxis_title=_("bias added to the score"), height=380)
    for head, slope in enumerate(slopes.tolist()):
        inverse = 1 / slope
        shown = f"1/{inverse:.0f}" if abs(inverse - round(inverse)) < 1e-9 else f"{slope:.4g}"
        figure.add_scatter(x=[0, longest], y=[0.0, -slope * longest], mode="lines",
                           name=_("head {head}: m = {slope}").format(head=head + 1, slope=shown),
                           line=dict(color=series_colour(head)))
    figure.add_scatter(x=[train_length, train_length], y=[-float(slopes.max()) * longest, 0], mode="lines",
                       name=_("training length L = {length}").format(length=f"{train_length:,}"), hoverinfo="skip",
                       line=dict(color=MUTED, dash="dot", width=1.5))
    return _legend_below(figure, 130)


def t5_bucket_figure(buckets: Sequence[int] | torch.Tensor, train_length: int, *, title: str | None = None,
                     yaxis_title: str | None = None, name: str | None = None) -> go.Figure:
    """Bucket (or table row) against distance; beyond the last one every distance shares it (T5, DeBERTa)."""
    buckets = torch.as_tensor(buckets)
    x, y = _decimate(list(range(buckets.numel())), buckets.tolist())
    figure = new_figure(title or _("T5's distance buckets (one learned bias per bucket and head)"),
                        xaxis_title=_("distance i − j (characters)"), yaxis_title=yaxis_title or _("bucket"),
                        height=380)
    figure.add_scatter(x=x, y=y, mode="lines", line=dict(shape="hv", color=series_colour(0)), name=name or _("bucket"))
    figure.add_scatter(x=[train_length, train_length], y=[0, max(y, default=0)], mode="lines", hoverinfo="skip",
                       name=_("training length L = {length}").format(length=f"{train_length:,}"),
                       line=dict(color=MUTED, dash="dot", width=1.5))
    return _legend_below(figure, 110)


def no_position_figure(text: str) -> go.Figure:
    """For encodings with nothing to draw (NoPE, a learned table): the reason, as a note."""
    figure = new_figure(_(POSITION_TITLE), height=220, xaxis=dict(visible=False), yaxis=dict(visible=False))
    figure.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                          font=dict(size=15, color=MUTED))
    return figure


def compare_figure(multiples: Sequence[int], first: Sequence[Keyed], second: Sequence[Keyed], *,
                   first_label: str, second_label: str) -> go.Figure:
    """Accuracy against length for two runs: the first solid and filled, the second dotted and open."""
    figure = new_figure(_(COMPARE_TITLE), xaxis_title=_("evaluation length L′ / training length L"),
                        yaxis_title=_("next-character accuracy"), height=460)
    for curves, label, solid in ((first, first_label, True), (second, second_label, False)):
        for curve in curves:
            trace = keyed(curve.key, curve.kind, logn=curve.logn, markers=True,
                         line=dict(dash="solid" if solid else "dot"),
                         marker=dict(symbol="circle" if solid else "circle-open", size=9))
            figure.add_scatter(x=list(multiples), y=list(curve.values), name=f"{label}: {curve.name}",
                               legendgroup=label, **trace)
    figure.update_xaxes(type="log", tickvals=list(multiples), ticktext=[f"{m:g}×" for m in multiples])
    figure.update_yaxes(tickformat=".0%")
    return _legend_below(figure, 170, entries=len(first) + len(second))


def log_binned(values: Sequence[float] | torch.Tensor, bins: int = POSITION_BINS) -> tuple[list[float], list[float]]:
    """(n, mean value) over bins of n = 1, 2, … evenly spaced on a log axis (each bin at least one n wide), for a
    curve against n drawn on a log axis: one point per n at small n, averages of many where they crowd."""
    values = torch.as_tensor(values, dtype=torch.float64)
    xs, ys = [], []
    for low, high in log_bins(values.numel(), bins):
        xs.append(math.sqrt(low * high))
        ys.append(float(values[low - 1:high].mean()))
    return xs, ys


def log_bins(count: int, bins: int = POSITION_BINS) -> list[tuple[int, int]]:
    """The bins ``log_binned`` averages over: (first n, last n) of each, for n = 1 … count."""
    edges = sorted({round(x) for x in torch.logspace(0, math.log10(count + 1), bins + 1, dtype=torch.float64).tolist()})
    return [(low, high - 1) for low, high in itertools.pairwise(edges)]


ATTENTION_MAPS_TITLE = N_("Where each head looks, at L and at 8× L, per method")
ATTENTION_ENTROPY_TITLE = N_("How spread out attention is, against the number of keys a query sees")
ATTENTION_FLOOR = 1e-4  # the colour scale's floor: attention below it shows as the palest colour


class AttentionPanel(NamedTuple):
    """One head's mean attention with one method at one length, pooled to what a screen shows."""

    row: str  # the head, already translated ("layer 1, head 2")
    column: str  # the method and length, already translated
    method: str  # the theme's key of the method (meta)
    values: torch.Tensor  # [queries, keys] mean attention, pooled
    length: int  # L' the panel covers, in characters


def attention_maps_figure(panels: Sequence[AttentionPanel], train_length: int) -> go.Figure:
    """A grid of attention maps, one row per head and one column per method and length, on one log colour
    scale (so the diffuse attention past L shows, not only the diagonal); the future (above the diagonal) is
    blank."""
    rows = list(dict.fromkeys(p.row for p in panels))
    columns = list(dict.fromkeys(p.column for p in panels))
    share = 0.9 / len(columns)  # the right tenth for the colour bar, clear of the last column's labels
    x_domains = [(c * share + 0.02, (c + 1) * share - 0.02) for c in range(len(columns))]
    # rows in pixels: each panel's plot, and under it room for its tick labels and the next panel's two-line label
    plot, gap, top, bottom = 230, 84, 90, 70
    area = plot * len(rows) + gap * (len(rows) - 1)
    y_domains = [(1 - (r * (plot + gap) + plot) / area, 1 - r * (plot + gap) / area) for r in range(len(rows))]
    hover = _("query at %{y:,.0f}, key at %{x:,.0f}<br>attention %{customdata:.2g}") + "<extra>%{fullData.name}</extra>"
    traces, layout = [], {"annotations": []}
    for number, panel in enumerate(panels, start=1):
        r, c = rows.index(panel.row), columns.index(panel.column)
        suffix = "" if number == 1 else str(number)
        values = panel.values.double()
        cells = values.shape[-1]
        centres = ((torch.arange(cells, dtype=torch.float64) + 0.5) * panel.length / cells).float().numpy()
        shown = values.clamp(min=ATTENTION_FLOOR).log10().masked_fill(values.tril() == 0, float("nan"))
        traces.append(go.Heatmap(  # float32 arrays: sent to the browser as compact binary, not JSON numbers
            z=shown.float().numpy(), x=centres, y=centres, customdata=values.float().numpy(), coloraxis="coloraxis",
            name=f"{panel.row} · {panel.column}", hovertemplate=hover, meta={"method": panel.method},
            xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        layout[f"xaxis{suffix}"] = dict(domain=x_domains[c], anchor=f"y{suffix}", range=[0, panel.length],
                                        title=dict(text=_("key position")) if r == len(rows) - 1 else None)
        layout[f"yaxis{suffix}"] = dict(domain=y_domains[r], anchor=f"x{suffix}", range=[panel.length, 0],
                                        title=dict(text=_("query position")) if c == 0 else None)
        if panel.length > train_length:  # queries past L (below the across line), keys past L (right of the down one)
            for x0, y0, x1, y1 in ((0, train_length, train_length, train_length),
                                   (train_length, train_length, train_length, panel.length)):
                layout.setdefault("shapes", []).append(dict(
                    type="line", x0=x0, y0=y0, x1=x1, y1=y1, xref=f"x{suffix}", yref=f"y{suffix}",
                    line=dict(color=HIGHLIGHT, dash="dot", width=1.5)))
        layout["annotations"].append(dict(
            text=f"{panel.column}<br>{panel.row}", x=sum(x_domains[c]) / 2, y=y_domains[r][1], xref="paper",
            yref="paper", xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=13)))
    layout.update(
        coloraxis=dict(colorscale="Viridis", cmin=math.log10(ATTENTION_FLOOR), cmax=0,
                       # a bar of fixed length at the top: on a phone the page stacks the panels into one tall column
                       colorbar=dict(title=dict(text=_("attention"), side="right"), thickness=14, lenmode="pixels",
                                     len=min(400, area), y=1, yanchor="top",
                                     tickvals=[-4, -3, -2, -1, 0], ticktext=["10⁻⁴", "0.001", "0.01", "0.1", "1"])),
        margin=dict(t=top, b=bottom), height=top + area + bottom)
    figure = new_figure(_(ATTENTION_MAPS_TITLE))
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


def attention_entropy_figure(curves: Sequence[Keyed], train_length: int) -> go.Figure:
    """One line per method: the mean entropy of a query's attention against the keys it sees (its position + 1),
    beside ln n, the entropy of attention spread evenly over n keys."""
    length = max(len(curve.values) for curve in curves)
    figure = new_figure(_(ATTENTION_ENTROPY_TITLE), xaxis_title=_("keys the query sees, n"),
                        yaxis_title=_("entropy of its attention (nats)"), height=480,
                        xaxis=dict(type="log"))
    keys = list(range(1, length + 1))
    for curve in curves:
        x, y = log_binned(curve.values)
        figure.add_scatter(x=x, y=y, name=curve.name, **keyed(curve.key, curve.kind, logn=curve.logn))
    figure.add_scatter(x=keys, y=[math.log(n) for n in keys], mode="lines", hoverinfo="skip",
                       name=_("attention spread evenly: ln n"), line=dict(color=MUTED, dash="dash", width=1.5))
    figure.add_vline(x=train_length, line=dict(color=HIGHLIGHT, dash="dot", width=1.5))
    figure.add_annotation(x=math.log10(train_length), y=1, yref="paper", text=_("L = {length}").format(
        length=train_length), showarrow=False, xanchor="right", yanchor="top", font=dict(color=HIGHLIGHT))
    return _legend_below(figure, 140, entries=len(curves) + 1)


NEEDLE_TITLE = N_("Needle in a haystack: passkey retrieval by depth and length, per method")
TRAP_TITLE = N_("The perplexity trap: next-character accuracy against retrieval at the longest length")


class NeedlePanel(NamedTuple):
    """One method's exact retrieval accuracy, mean over seeds: ``values[depth][length]``."""

    name: str  # already translated
    depths: Sequence[float]
    lengths: Sequence[int]
    values: Sequence[Sequence[float]]


def needle_figure(panels: Sequence[NeedlePanel], train_length: int, *, columns: int = 4) -> go.Figure:
    """A depth × length heatmap of retrieval accuracy per method (white 0, dark 1), the share printed in each cell;
    a dotted line after the training length."""
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    plot, gap, top, bottom = 150, 70, 80, 60
    area = plot * rows + gap * (rows - 1)
    share = 1 / columns
    layout: dict = {"annotations": []}
    traces = []
    hover = _("needle at depth %{y:.0%}, length %{x}<br>retrieved %{z:.0%}") + "<extra>%{fullData.name}</extra>"
    for number, panel in enumerate(panels, start=1):
        r, c = divmod(number - 1, columns)
        suffix = "" if number == 1 else str(number)
        labels = [f"{n // train_length}×" for n in panel.lengths]
        z = [list(row) for row in panel.values]
        traces.append(go.Heatmap(
            z=z, x=labels, y=[float(d) for d in panel.depths], coloraxis="coloraxis", name=panel.name,
            text=[[f"{v:.0%}" for v in row] for row in z], texttemplate="%{text}", textfont=dict(size=11),
            hovertemplate=hover, xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        x_domain = (c * share + 0.05 * share + (0.06 if c == 0 else 0.0) * share, (c + 1) * share - 0.05 * share)
        y_domain = (1 - (r * (plot + gap) + plot) / area, 1 - r * (plot + gap) / area)
        bottom_row = r == rows - 1 or number + columns > len(panels)  # no panel below it
        # the lengths are every panel's: named under the bottom row only, so no panel title meets a row's ticks
        layout[f"xaxis{suffix}"] = dict(domain=x_domain, anchor=f"y{suffix}", type="category",
                                        showticklabels=bottom_row,
                                        title=dict(text=_("length")) if bottom_row else None)
        layout[f"yaxis{suffix}"] = dict(domain=y_domain, anchor=f"x{suffix}", autorange="reversed",
                                        tickformat=".0%", tickvals=[float(d) for d in panel.depths],
                                        title=dict(text=_("depth")) if c == 0 else None)
        layout["annotations"].append(dict(text=panel.name, x=sum(x_domain) / 2, y=y_domain[1], xref="paper",
                                          yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
                                          font=dict(size=12)))
    layout.update(coloraxis=dict(colorscale="Blues", cmin=0, cmax=1, showscale=False),
                  margin=dict(t=top, b=bottom, l=20, r=10), height=top + area + bottom)
    figure = new_figure(_(NEEDLE_TITLE))
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


class TrapPoint(NamedTuple):
    """One method at the longest length: next-character accuracy and exact retrieval, mean ± sd over seeds."""

    key: str
    kind: str
    name: str  # already translated
    accuracy: float
    accuracy_sd: float
    retrieval: float
    retrieval_sd: float
    open_marker: bool = False  # fine-tuned: an open marker in the method's colour


def trap_figure(points: Sequence[TrapPoint], *, chance: float, highlight: str | None = None) -> go.Figure:
    """Each method's next-character accuracy (x) against its exact retrieval (y) at the longest length, with error
    bars (sd over seeds); the method ``highlight`` names is ringed."""
    figure = new_figure(_(TRAP_TITLE), height=560, xaxis_title=_("next-character accuracy at the longest length"),
                        yaxis_title=_("passkey retrieved at the longest length"), margin=dict(l=10, r=20, t=60, b=150))
    for point in points:
        style = style_of(point.key, point.kind)
        symbol = style.marker.replace("-open", "")
        marker = dict(size=12, symbol=symbol + "-open" if point.open_marker else symbol,
                      color=style.colour, line=dict(width=2, color=style.colour))
        hover = _("{name}: accuracy {accuracy:.1%} ± {asd:.1%}, retrieval {retrieval:.0%} ± {rsd:.0%}").format(
            name=point.name, accuracy=point.accuracy, asd=point.accuracy_sd, retrieval=point.retrieval,
            rsd=point.retrieval_sd)
        figure.add_scatter(x=[point.accuracy], y=[point.retrieval], mode="markers", name=point.name, marker=marker,
                           error_x=dict(type="data", array=[point.accuracy_sd], color=style.colour, thickness=1.5),
                           error_y=dict(type="data", array=[point.retrieval_sd], color=style.colour, thickness=1.5),
                           hovertemplate=hover + "<extra></extra>", meta={"key": point.key, "kind": point.kind})
        if point.name == highlight:
            figure.add_scatter(x=[point.accuracy], y=[point.retrieval], mode="markers", showlegend=False,
                               marker=dict(size=26, symbol="circle-open", color=HIGHLIGHT, line=dict(width=2.5)),
                               hoverinfo="skip")
    figure.add_hline(y=chance, line=dict(color=MUTED, dash="dot", width=1))
    figure.update_xaxes(tickformat=".0%")
    figure.update_yaxes(tickformat=".0%", range=[-0.05, 1.05])
    return _legend_below(figure, 150, entries=len(points))
