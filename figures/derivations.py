"""Figures for the derivations page: the two checked claims that are clearest as a picture."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import torch

from figures.theme import method_colour, new_figure

NTK_TITLE = "NTK-aware vs PI: how much each pair's frequency is scaled"
BLEND_TITLE = "NTK-by-parts: blending frequencies is not blending wavelengths"


def frequency_ratio_figure(pi_ratio: torch.Tensor, ntk_ratio: torch.Tensor, scale: float, head_dim: int) -> go.Figure:
    """θ'_i/θ_i against pair index for PI (flat at 1/s) and NTK-aware (1 at i = 0, 1/s at the last pair)."""
    pairs = list(range(len(pi_ratio)))
    # Powers of two from 1 down to 1/s label a log axis far better than plotly's minor digits.
    halvings = range(int(math.floor(math.log2(scale))) + 1)
    figure = new_figure(
        f"{NTK_TITLE} (d = {head_dim}, s = {scale:g})",
        xaxis_title="pair index i (0 = highest frequency)",
        yaxis=dict(title="θ'ᵢ / θᵢ (log scale)", type="log", tickvals=[2.0**-k for k in halvings],
                   ticktext=["1" if k == 0 else f"1/{2**k}" for k in halvings]),
        legend=dict(x=0.98, y=0.98, xanchor="right", yanchor="top"),
    )
    figure.add_trace(go.Scatter(x=pairs, y=pi_ratio.tolist(), name="Position Interpolation: 1/s",
                                mode="lines", line=dict(color=method_colour(1))))
    figure.add_trace(go.Scatter(x=pairs, y=ntk_ratio.tolist(), name="NTK-aware: s^(−2i/(d−2))",
                                mode="lines", line=dict(color=method_colour(2))))
    last = len(pairs) - 1
    figure.add_trace(go.Scatter(x=[0, last], y=[float(ntk_ratio[0]), float(ntk_ratio[last])], mode="markers",
                                name="checked: θ'₀ = θ₀ and θ'_(d/2−1) = θ_(d/2−1)/s",
                                marker=dict(size=11, color=method_colour(6), symbol="circle-open",
                                            line=dict(width=2.5))))
    return figure


def blend_figure(gamma: torch.Tensor, frequency_blend: torch.Tensor, wavelength_blend: torch.Tensor,
                 scale: float) -> go.Figure:
    """New wavelength λ'/λ across the ramp γ: implemented frequency blend vs the paper's wavelength blend."""
    figure = new_figure(
        f"{BLEND_TITLE} (s = {scale:g})",
        xaxis_title="ramp value γ (0 = interpolate, 1 = keep)",
        yaxis_title="new wavelength λ' / λ",
        legend=dict(x=0.98, y=0.98, xanchor="right", yanchor="top"),
    )
    figure.add_trace(go.Scatter(x=gamma.tolist(), y=frequency_blend.tolist(), mode="lines",
                                name="implemented: 2π / h(θ) = s / (1 − γ + γs)", line=dict(color=method_colour(0))))
    figure.add_trace(go.Scatter(x=gamma.tolist(), y=wavelength_blend.tolist(), mode="lines",
                                name="paper's eq. 17: (1 − γ)s + γ", line=dict(color=method_colour(1), dash="dash")))
    return figure


def blend_curves(scale: float, points: int = 101) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """γ on [0, 1] and the two wavelength ratios λ'/λ (a closed form, evaluated in float64)."""
    gamma = torch.linspace(0.0, 1.0, points, dtype=torch.float64)
    return gamma, scale / (1 - gamma + gamma * scale), (1 - gamma) * scale + gamma


def frequency_ratios(head_dim: int, base: float, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """θ'_i/θ_i for PI and NTK-aware, computed through pe_core's rope_frequencies."""
    from pe_core import RopeSpec, rope_frequencies

    plain = rope_frequencies(RopeSpec(head_dim=head_dim, base=base)).inv_freq
    pi = rope_frequencies(RopeSpec(head_dim=head_dim, base=base, rope_type="linear", factor=scale)).inv_freq
    ntk = rope_frequencies(RopeSpec(head_dim=head_dim, base=base, rope_type="ntk", factor=scale)).inv_freq
    return pi / plain, ntk / plain


def export_figures(head_dim: int = 128, base: float = 10_000.0, scale: float = 8.0,
                   blend_scale: float = 4.0) -> dict[str, go.Figure]:
    """Every figure of the derivations page at its default parameters."""
    pi_ratio, ntk_ratio = frequency_ratios(head_dim, base, scale)
    gamma, frequency_blend, wavelength_blend = blend_curves(blend_scale)
    return {
        "ntk_vs_pi_ratio": frequency_ratio_figure(pi_ratio, ntk_ratio, scale, head_dim),
        "yarn_blend": blend_figure(gamma, frequency_blend, wavelength_blend, blend_scale),
    }


__all__ = ["BLEND_TITLE", "NTK_TITLE", "blend_curves", "blend_figure", "export_figures", "frequency_ratio_figure",
           "frequency_ratios"]
