"""Figures of the tiny-transformer experiment: live loss curve, per-position loss, results table.

Pure functions of plain values (lists, tensors); ``export_figures`` runs the experiment through
``pe_core.train`` at the default settings to build every figure of the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures.theme import method_colour, new_figure

MAX_LINE_POINTS = 2000
POSITION_BINS = 64  # per-position curves are averaged over bins of positions: readable, ≤ 64 points


class Curve(NamedTuple):
    name: str
    values: Sequence[float] | torch.Tensor  # one value per position (or per step)
    colour_index: int = 0
    dash: str | None = None


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


def loss_curve_figure(
    steps: Sequence[int],
    losses: Sequence[float],
    validation: Sequence[tuple[int, float]] = (),
    unigram_baseline: float | None = None,
    *,
    total_steps: int | None = None,
    title: str = "Training loss (live)",
) -> go.Figure:
    """Training loss per step, validation loss where measured, and the unigram baseline."""
    figure = new_figure(title, xaxis_title="optimiser step", yaxis_title="loss (nats/char)",
                        height=360, legend=dict(orientation="h", y=-0.25))
    x, y = _decimate(list(steps), list(losses))
    figure.add_scatter(x=x, y=y, mode="lines", name="training batch", line=dict(color=method_colour(0), width=1.6))
    if validation:
        figure.add_scatter(x=[s for s, _ in validation], y=[v for _, v in validation], mode="lines+markers",
                           name="validation", line=dict(color=method_colour(1)))
    if unigram_baseline is not None:
        figure.add_hline(y=unigram_baseline, line=dict(color="#888", dash="dash"),
                         annotation_text="unigram baseline (letter frequencies only)",
                         annotation_position="top right")
    if total_steps:
        figure.update_xaxes(range=[0, total_steps])
    return figure


def per_position_figure(
    curves: Sequence[Curve],
    train_length: int,
    *,
    title: str,
    yaxis_title: str = "loss at position (nats)",
    bins: int = POSITION_BINS,
) -> go.Figure:
    """One line per method: the value at each position (binned), with the training length marked."""
    figure = new_figure(title, xaxis_title="position in the sequence (tokens)", yaxis_title=yaxis_title,
                        height=440, legend=dict(orientation="h", y=-0.22))
    longest = 0
    for curve in curves:
        x, y = binned(curve.values, bins)
        longest = max(longest, len(curve.values))
        figure.add_scatter(x=x, y=y, mode="lines", name=curve.name,
                           line=dict(color=method_colour(curve.colour_index), dash=curve.dash))
    if longest > train_length:
        figure.add_vrect(x0=train_length, x1=longest, fillcolor="#999", opacity=0.08, line_width=0)
    figure.add_vline(x=train_length, line=dict(color="#444", dash="dot"),
                     annotation_text=f"training length L = {train_length}", annotation_position="top left")
    return figure


def length_figure(
    multiples: Sequence[int],
    curves: Sequence[Curve],
    *,
    title: str = "Mean loss against evaluation length",
    yaxis_title: str = "mean loss (nats/char)",
) -> go.Figure:
    """Mean loss over whole sequences of each length (x: multiple of the training length, log scale)."""
    figure = new_figure(title, xaxis_title="evaluation length L' / training length L", yaxis_title=yaxis_title,
                        height=400, legend=dict(orientation="h", y=-0.25))
    for curve in curves:
        figure.add_scatter(x=list(multiples), y=list(curve.values), mode="lines+markers", name=curve.name,
                           line=dict(color=method_colour(curve.colour_index), dash=curve.dash))
    figure.update_xaxes(type="log", tickvals=list(multiples), ticktext=[f"{m:g}×" for m in multiples])
    return figure


def results_table_figure(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, title: str = "Next-character accuracy by length"
) -> go.Figure:
    """A table in the style of Su's (seed 001): one row per method, one column per evaluation length."""
    figure = new_figure(title, height=70 + 31 * (len(rows) + 1), margin=dict(l=10, r=10, t=50, b=0))
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in header]
    figure.add_trace(go.Table(
        header=dict(values=[f"<b>{h}</b>" for h in header], fill_color="#eef2f7", align="left",
                    font=dict(size=14)),
        cells=dict(values=columns, align=["left"] + ["right"] * (len(header) - 1), height=30, font=dict(size=14),
                   fill_color="white"),
    ))
    return figure


def fine_tune_figure(
    before: Sequence[float] | torch.Tensor,
    after: Sequence[float] | torch.Tensor,
    train_length: int,
    *,
    method_title: str,
    steps: int,
    reference: Sequence[float] | torch.Tensor | None = None,
    reference_name: str = "",
    title: str | None = None,
) -> go.Figure:
    """Per-position loss of one method at L' before and after a short fine-tune at L'."""
    curves = [Curve(f"{method_title}, no fine-tuning", before, 1, "dot"),
              Curve(f"{method_title}, after {steps} fine-tuning steps at L'", after, 1)]
    if reference is not None:
        curves.append(Curve(reference_name, reference, 0, "dash"))
    return per_position_figure(
        curves, train_length, title=title or f"Fine-tuning {method_title} at L' = {len(before)}"
    )


def pair_wavelength_figure(
    wavelengths: Sequence[float] | torch.Tensor,
    train_length: int,
    longest: int,
    *,
    title: str,
    xaxis_title: str = "RoPE pair i (fast → slow)",
) -> go.Figure:
    """λ_i per pair (log scale) against L and the longest evaluation length L'.

    Pairs with λ_i > L never complete a turn in training, so at L' they meet angles never seen.
    """
    wavelengths = torch.as_tensor(wavelengths, dtype=torch.float64)
    index = list(range(wavelengths.numel()))
    turns = wavelengths <= train_length
    figure = new_figure(title, xaxis_title=xaxis_title, yaxis_title="wavelength λ (tokens)",
                        height=380, legend=dict(orientation="h", y=-0.3))
    for name, mask, colour in (("completes a turn within L", turns, method_colour(2)),
                               ("never completes a turn within L", ~turns, method_colour(1))):
        figure.add_scatter(x=[i for i in index if mask[i]], y=wavelengths[mask].tolist(), mode="markers",
                           name=name, marker=dict(color=colour, size=9))
    # reference lengths as traces, not shapes: shapes on a log axis take exponents, not lengths
    span = [-0.5, len(index) - 0.5]
    figure.add_scatter(x=span, y=[train_length] * 2, mode="lines", name=f"training length L = {train_length:,}",
                       line=dict(color="#444", dash="dot", width=1.5))
    if longest > train_length:
        figure.add_scatter(x=span, y=[longest] * 2, mode="lines", name=f"longest evaluation L' = {longest:,}",
                           line=dict(color="#888", dash="dash", width=1.5))
    figure.update_yaxes(type="log", exponentformat="power")
    return figure


def alibi_bias_figure(slopes: Sequence[float] | torch.Tensor, train_length: int, longest: int,
                      *, title: str = "ALiBi's penalty on attention scores, per head") -> go.Figure:
    """−m_h·distance for each head: straight lines, so two points per head are exact."""
    slopes = torch.as_tensor(slopes, dtype=torch.float64)
    figure = new_figure(title, xaxis_title="distance i − j (tokens)", yaxis_title="bias added to the score",
                        height=340, legend=dict(orientation="h", y=-0.3))
    for head, slope in enumerate(slopes.tolist()):
        inverse = 1 / slope
        shown = f"1/{inverse:.0f}" if abs(inverse - round(inverse)) < 1e-9 else f"{slope:.4g}"
        figure.add_scatter(x=[0, longest], y=[0.0, -slope * longest], mode="lines",
                           name=f"head {head + 1}: m = {shown}", line=dict(color=method_colour(head)))
    figure.add_vline(x=train_length, line=dict(color="#444", dash="dot"),
                     annotation_text=f"L = {train_length:,}", annotation_position="top right")
    return figure


def t5_bucket_figure(buckets: Sequence[int] | torch.Tensor, train_length: int,
                     *, title: str = "T5's distance buckets (one learned bias per bucket and head)") -> go.Figure:
    """Bucket index against distance; beyond max_distance every distance shares the last bucket."""
    buckets = torch.as_tensor(buckets)
    distances = list(range(buckets.numel()))
    x, y = _decimate(distances, buckets.tolist())
    figure = new_figure(title, xaxis_title="distance i − j (tokens)", yaxis_title="bucket", height=340)
    figure.add_scatter(x=x, y=y, mode="lines", line=dict(shape="hv", color=method_colour(0)), name="bucket",
                       showlegend=False)
    figure.add_vline(x=train_length, line=dict(color="#444", dash="dot"),
                     annotation_text=f"L = {train_length:,}", annotation_position="bottom right")
    return figure


def position_figure(config, longest: int) -> go.Figure | None:
    """The figure of how ``config``'s encoding represents position (None for learned and NoPE)."""
    from pe_core.biases import alibi_slopes
    from pe_core.model import position_wavelengths, t5_buckets_by_distance

    wavelengths = position_wavelengths(config)
    if wavelengths is not None:
        rope = config.position == "rope"
        kind, size = ("RoPE pair", f"head size {config.head_dim}") if rope else ("sin/cos pair",
                                                                                 f"d_model {config.d_model}")
        return pair_wavelength_figure(wavelengths, config.train_length, longest, xaxis_title=f"{kind} i (fast → slow)",
                                      title=f"Wavelength of each {kind} ({size}, base {config.rope_base:,.0f})")
    if config.position == "alibi":
        return alibi_bias_figure(alibi_slopes(config.n_head), config.train_length, longest)
    if config.position == "t5":
        return t5_bucket_figure(t5_buckets_by_distance(config, longest), config.train_length)
    return None


# --- export ---------------------------------------------------------------------------------


def experiment_figures(experiment, *, shown_length: int | None = None) -> dict[str, go.Figure]:
    """Every result figure of a finished ``pe_core.train.Experiment`` (keyed by slug)."""
    from pe_core.train import method_title, summary_table

    run, evaluation = experiment.run, experiment.evaluation
    figures = {
        "loss": loss_curve_figure(
            [p.step for p in run.history], [p.loss for p in run.history],
            [(p.step, p.validation_loss) for p in run.history if p.validation_loss is not None],
            experiment.unigram_baseline, total_steps=run.train_config.steps, title="Training loss",
        )
    }
    position = position_figure(run.model_config, run.model_config.train_length * max(experiment.multiples))
    if position is not None:
        figures["position"] = position
    if evaluation is None or not evaluation.results:
        return figures
    train_length = evaluation.train_length
    methods = evaluation.methods
    lengths = evaluation.lengths
    length = shown_length if shown_length in lengths else max(lengths)
    header, rows = summary_table(evaluation)
    figures["table"] = results_table_figure(header, rows)
    figures["per_position"] = per_position_figure(
        [Curve(method_title(m), evaluation.get(m, length).loss, i) for i, m in enumerate(methods)
         if (m, length) in evaluation],
        train_length, title=f"Loss at each position, evaluated at L' = {length} ({length // train_length}× L)",
    )
    figures["per_length"] = length_figure(
        [n // train_length for n in lengths],
        [Curve(method_title(m), [evaluation.get(m, n).mean_loss for n in lengths], i) for i, m in enumerate(methods)
         if all((m, n) in evaluation for n in lengths)],
    )
    for tune in experiment.fine_tunes:
        if tune.after is not None and tune.before is not None:
            figures[f"fine_tune_{tune.method}"] = fine_tune_figure(
                tune.before.loss, tune.after.loss, train_length, method_title=method_title(tune.method),
                steps=tune.steps,
            )
    return figures


# What export_figures() returns at DEFAULTS, so `python -m figures.export --list` need not train a model.
FIGURE_SLUGS = ("loss", "position", "table", "per_position", "per_length", "fine_tune_pi", "fine_tune_yarn")

# What ``python -m figures.export --set key=value`` can change for this topic (the page's defaults).
DEFAULTS = {
    "encoding": "rope",
    "pairing": "half",
    "base": 10_000.0,
    "train_length": 64,
    "width": 128,
    "heads": 4,
    "layers": 2,
    "steps": 600,
    "seed": 0,
    "multiples": (1, 2, 4, 8),
    "methods": ("direct", "pi", "ntk", "dynamic", "yarn"),
    "fine_tune": ("pi", "yarn"),
    "fine_tune_steps": 50,
}


def export_figures(**overrides) -> dict[str, go.Figure]:
    """Train the page's default experiment and return its figures (about a minute on a 2-core CPU).

    Keys of ``DEFAULTS`` override the settings, e.g. ``encoding="alibi"``, ``steps=100``.
    """
    from pe_core.train import default_experiment

    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown setting(s) for the training figures: {', '.join(sorted(unknown))}.")
    settings = {**DEFAULTS, **overrides}
    experiment = default_experiment(
        position=settings["encoding"], rope_pairing=settings["pairing"], rope_base=float(settings["base"]),
        train_length=int(settings["train_length"]), d_model=int(settings["width"]), n_head=int(settings["heads"]),
        n_layer=int(settings["layers"]), steps=int(settings["steps"]), seed=int(settings["seed"]),
        multiples=tuple(int(m) for m in settings["multiples"]), methods=tuple(settings["methods"]),
    )
    experiment.run_to_end(tuple(settings["fine_tune"]), int(settings["fine_tune_steps"]))
    return experiment_figures(experiment)
