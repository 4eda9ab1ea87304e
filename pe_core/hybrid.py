"""Hybrid models' numbers: what a sliding window lets RoPE see, how a model's layers split by what they do with
position, and Llama 4's attention temperature on its layers without RoPE.

- A sliding window of W tokens (transformers' mask: key index > query index − W) sees relative distances
  0 … W − 1 at any context length, so a pair whose wavelength 2π/θᵢ exceeds W − 1 never completes a turn there.
- ``LayerMap`` kinds fall into four roles: RoPE over the whole context, RoPE within a window or chunk, attention
  without position encoding (NoPE), and linear attention (no positions).
- Llama 4's NoPE layers multiply the query at position m by 1 + attn_scale · ln(1 + ⌊(m + 1) / floor_scale⌋)
  (transformers' ``Llama4TextAttention``), which sharpens their softmax as the context grows; with one key
  whose logit is Δ above n − 1 equal others, softmax gives it e^(sΔ) / (e^(sΔ) + n − 1).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import N_
from pe_core.layers import LayerKind, LayerMap

ROLES = ("rope_full", "rope_local", "nope", "linear")
ROLE_TITLES = {
    "rope_full": N_("RoPE, whole context"), "rope_local": N_("RoPE, window or chunk"),
    "nope": N_("attention without position encoding (NoPE)"), "linear": N_("linear attention (no positions)"),
}
LLAMA4_FLOOR_SCALE = 8192  # Llama4TextConfig defaults
LLAMA4_ATTN_SCALE = 0.1


def farthest_distance(window: int) -> int:
    """The largest query − key distance a sliding window of ``window`` tokens attends to."""
    if window < 1:
        raise ValueError(f"a window holds at least one token (got {window})")
    return window - 1


def full_turns(inv_freq: torch.Tensor, distance: int) -> torch.Tensor:
    """Per pair: how many whole-or-part turns it makes over ``distance`` tokens (distance · θᵢ / 2π)."""
    return distance * inv_freq.to(torch.float64) / (2 * math.pi)


def turning_pairs(inv_freq: torch.Tensor, window: int) -> int:
    """How many pairs complete at least one turn within the distances a window of ``window`` tokens sees."""
    return int((full_turns(inv_freq, farthest_distance(window)) >= 1).sum())


def role_of(kind: LayerKind) -> str:
    if not kind.has_rope:
        return "linear" if kind.span_kind == "linear" else "nope"
    return "rope_full" if kind.span_kind == "full" else "rope_local"


class LayerShares(NamedTuple):
    counts: dict  # role -> layers
    total: int

    def share(self, role: str) -> float:
        return self.counts.get(role, 0) / self.total if self.total else 0.0


def layer_shares(layers: LayerMap) -> LayerShares:
    """How many of the model's layers play each role (``ROLES``)."""
    counts = dict.fromkeys(ROLES, 0)
    for kind in layers.kinds:
        counts[role_of(kind)] += len(kind.layers)
    return LayerShares(counts, sum(counts.values()))


def llama4_attention_scale(positions: torch.Tensor, floor_scale: int = LLAMA4_FLOOR_SCALE,
                           attn_scale: float = LLAMA4_ATTN_SCALE) -> torch.Tensor:
    """What Llama 4 multiplies a NoPE layer's query at position m by: 1 + attn_scale·ln(1 + ⌊(m + 1)/floor_scale⌋)."""
    positions = positions.to(torch.float64)
    return 1.0 + attn_scale * torch.log1p(torch.floor((positions + 1.0) / floor_scale))


def needle_weight(context: torch.Tensor, gap: float, scale: torch.Tensor | float = 1.0) -> torch.Tensor:
    """Softmax weight of one key whose logit is ``gap`` above those of the other n − 1 keys, with every logit
    multiplied by ``scale``: e^(scale·gap) / (e^(scale·gap) + n − 1), computed stably in float64."""
    n = context.to(torch.float64)
    lifted = torch.as_tensor(scale, dtype=torch.float64) * gap
    return torch.sigmoid(lifted - torch.log(n - 1))  # = 1 / (1 + (n − 1)·e^(−scale·gap)); n = 1 gives 1
