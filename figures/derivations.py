"""Figures for the derivations page: the two checked claims that are clearest as a picture.

Plain values in (ratios already computed by ``pe_core`` through ``lessons.derivations``), a
figure in the project's visual language out.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import INK, LEGEND_BELOW, keyed, new_figure, series_colour
from i18n import N_, _

NTK_TITLE = N_("NTK-aware vs PI: how much each pair's frequency is scaled")
BLEND_TITLE = N_("NTK-by-parts: blending frequencies is not blending wavelengths")


def _values(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.float64)


def frequency_ratio_figure(pi_ratio: torch.Tensor, ntk_ratio: torch.Tensor, scale: float, head_dim: int) -> go.Figure:
    """θ′ᵢ/θᵢ against pair index for PI (flat at 1/s) and NTK-aware (1 at i = 0, 1/s at the last pair)."""
    pairs = np.arange(len(pi_ratio))
    # Powers of two from 1 down to 1/s label a log axis far better than plotly's minor digits.
    halvings = range(int(math.floor(math.log2(scale))) + 1)
    last = len(pairs) - 1
    hover = _("pair %{x}<br>θ′/θ = %{y:.4g}") + "<extra>%{fullData.name}</extra>"
    figure = new_figure(
        _("{title} (d = {dim}, s = {scale})").format(title=_(NTK_TITLE), dim=head_dim, scale=f"{scale:g}"),
        xaxis=dict(title=dict(text=_("pair index i (0 = highest frequency)"))),
        yaxis=dict(title=dict(text=_("θ′ᵢ / θᵢ (log scale)")), type="log", tickvals=[2.0**-k for k in halvings],
                   ticktext=["1" if k == 0 else f"1/{2**k}" for k in halvings]),
        height=460, legend=LEGEND_BELOW, margin=dict(b=130),
    )
    figure.add_traces([
        go.Scatter(x=pairs, y=_values(pi_ratio), name=_("Position Interpolation: 1/s"), hovertemplate=hover,
                   **keyed("pi")),
        go.Scatter(x=pairs, y=_values(ntk_ratio), name=_("NTK-aware: s<sup>−2i/(d−2)</sup>"), hovertemplate=hover,
                   **keyed("ntk")),
        go.Scatter(x=[0, last], y=[float(ntk_ratio[0]), float(ntk_ratio[last])], mode="markers",
                   name=_("checked: θ′₀ = θ₀ and θ′<sub>d/2−1</sub> = θ<sub>d/2−1</sub>/s"), hovertemplate=hover,
                   marker=dict(size=12, color=INK, symbol="circle-open", line=dict(width=2.5))),
    ])
    return figure


def blend_figure(gamma: torch.Tensor, frequency_blend: torch.Tensor, wavelength_blend: torch.Tensor,
                 scale: float) -> go.Figure:
    """New wavelength λ′/λ across the ramp γ: the implemented frequency blend vs the paper's wavelength blend."""
    hover = _("γ = %{x:.2f}<br>λ′/λ = %{y:.4g}") + "<extra>%{fullData.name}</extra>"
    figure = new_figure(
        _("{title} (s = {scale})").format(title=_(BLEND_TITLE), scale=f"{scale:g}"),
        xaxis=dict(title=dict(text=_("ramp value γ (0 = interpolate, 1 = keep)"))),
        yaxis=dict(title=dict(text=_("new wavelength λ′/λ"))),
        height=460, legend=LEGEND_BELOW, margin=dict(b=130),
    )
    figure.add_traces([
        go.Scatter(x=_values(gamma), y=_values(frequency_blend), mode="lines", hovertemplate=hover,
                   name=_("implemented: 2π / h(θ) = s / (1 − γ + γs)"), line=dict(color=series_colour(0))),
        go.Scatter(x=_values(gamma), y=_values(wavelength_blend), mode="lines", hovertemplate=hover,
                   name=_("the paper's wavelength blend: (1 − γ)s + γ"),
                   line=dict(color=series_colour(4), dash="dash")),
    ])
    return figure
