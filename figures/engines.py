"""The engines page's figure: where each serving engine's θᵢ part from the model's own transformers classes.

Plain values in, ``go.Figure`` out: one trace per engine, θᵢ(engine) / θᵢ(transformers) pair by pair on a log axis,
the pairs where it differs marked.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from figures.frequencies import power_of_two_ticks
from figures.theme import HIGHLIGHT, LEGEND_BELOW, new_figure, reference_line, series_colour
from i18n import N_, _

RECIPE_TITLE = N_("The recipe's θᵢ against the config's own, per pair")
ENGINES_RATIO_TITLE = N_("Where the engines' θᵢ part from transformers': θᵢ(engine) / θᵢ(transformers) per pair")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
APART = 1e-6  # a pair whose ratio is further than this from 1 is marked


def engines_ratio_figure(curves: Sequence[tuple[str, str, torch.Tensor | None]], *, layer_type: str,
                         seq_len: int, context: int | None) -> go.Figure:
    """One trace per engine (key, title, ratio to transformers' θᵢ; None: the engine refuses the config)."""
    figure = new_figure(_(ENGINES_RATIO_TITLE))
    low, high = 1.0, 1.0
    for index, (key, title, ratio) in enumerate(curves):
        if ratio is None:
            continue
        values = ratio.detach().cpu().numpy().astype(np.float64) if isinstance(ratio, torch.Tensor) else \
            np.asarray(ratio, dtype=np.float64)
        low, high = min(low, float(values.min())), max(high, float(values.max()))
        apart = np.abs(values - 1) > APART
        name = _("{engine}: {count} of {total} pairs differ").format(engine=title, count=int(apart.sum()),
                                                                     total=len(values))
        colour = series_colour(index)
        figure.add_trace(go.Scatter(
            x=np.arange(len(values)), y=values, name=name, mode="lines", meta={"engine": key},
            line=dict(color=colour, dash=DASHES[index % len(DASHES)], width=2),
            hovertemplate=title + "<br>" + _("pair %{x}") + ": θ ÷ θ(transformers) = %{y:.6g}<extra></extra>"))
        if apart.any():
            figure.add_trace(go.Scatter(
                x=np.flatnonzero(apart), y=values[apart], mode="markers", showlegend=False,
                meta={"engine": key, "apart": True}, marker=dict(color=HIGHLIGHT, size=6, symbol="x"),
                hovertemplate=title + "<br>" + _("pair %{x} differs") + ": %{y:.6g}<extra></extra>"))
    shape, label = reference_line(1.0, _("1: as transformers"), dash="dash", log_axis=True)
    span = max(high / low, 1.0001)
    pad = span ** 0.08
    figure.update_layout(
        height=460, legend=LEGEND_BELOW, margin=dict(b=170), shapes=[shape], annotations=[label],
        xaxis=dict(title=dict(text=_("pair i · {seq_len:,} tokens · context {context}").format(
            seq_len=seq_len, context=_("default") if context is None else f"{context:,}"))),
        yaxis=dict(type="log", title=dict(text=_("θ ratio (log)")),
                   range=[float(np.log10(low / pad)), float(np.log10(high * pad))]))
    return figure


def recipe_figure(own: torch.Tensor, patched: torch.Tensor, *, layer_type: str, target: int) -> go.Figure:
    """θᵢ / b^(−2i/d) per pair: the config as shipped and with the recipe for ``target`` tokens."""
    figure = new_figure(_(RECIPE_TITLE))
    low, high = 1.0, 1.0
    for index, (name, values) in enumerate(((_("the config as shipped"), own),
                                            (_("with the recipe for {target:,} tokens").format(target=target),
                                             patched))):
        array = values.detach().cpu().numpy().astype(np.float64)
        low, high = min(low, float(array.min())), max(high, float(array.max()))
        figure.add_trace(go.Scatter(x=np.arange(len(array)), y=array, name=name, mode="lines+markers",
                                    meta={"series": index}, marker=dict(size=4),
                                    line=dict(color=series_colour(index), dash=DASHES[index]),
                                    hovertemplate=name + "<br>" + _("pair %{x}") + ": θ ÷ θ(plain) = %{y:.4g}"
                                    "<extra></extra>"))
    shape, label = reference_line(1.0, _("1: plain RoPE"), dash="dash", log_axis=True)
    figure.update_layout(
        height=420, legend=LEGEND_BELOW, margin=dict(b=130), shapes=[shape], annotations=[label],
        xaxis=dict(title=dict(text=_("pair i ({layer_type})").format(layer_type=layer_type))),
        yaxis=dict(type="log", title=dict(text=_("θᵢ / b^(−2i/d) (log)")), **power_of_two_ticks(low, high)))
    return figure
