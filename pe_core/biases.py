"""Additive attention biases: ALiBi's per-head slopes and T5's relative-position buckets."""

from __future__ import annotations

import math

import torch

from i18n import _
from pe_core.rope import check_length


def _power_of_two_slopes(num_heads: int) -> list[float]:
    # Geometric sequence starting at and with ratio 2^(-8/n) (Press et al. 2022, §3).
    start = 2 ** (-8 / num_heads)
    return [start ** (i + 1) for i in range(num_heads)]


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi slopes (float64), following the paper's reference code for any head count.

    For 2^k heads: 2^(-8/n), 2^(-16/n), ..., 2^(-8). Otherwise: the slopes of the closest
    smaller power of two, then every other slope of twice that many heads.
    """
    check_length("num_heads", num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = _power_of_two_slopes(closest)
    if closest < num_heads:
        slopes += _power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float64)


def alibi_bias(num_heads: int, length: int) -> torch.Tensor:
    """Bias matrices [heads, query, key] = −slope·(i − j) for j ≤ i (causal), 0 above the diagonal."""
    check_length("length", length)
    positions = torch.arange(length, dtype=torch.float64)
    distance = (positions[:, None] - positions[None, :]).clamp(min=0)
    return -alibi_slopes(num_heads)[:, None, None] * distance


def t5_relative_bucket(
    relative_position: torch.Tensor,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """T5's bucket index for relative_position = key − query (Raffel et al. 2020; HF's T5 code).

    Half the buckets (per direction) are exact small distances; the rest grow logarithmically
    up to ``max_distance``, beyond which everything shares the last bucket.
    """
    check_length("num_buckets", num_buckets)
    check_length("max_distance", max_distance)
    if bidirectional and num_buckets < 4 or not bidirectional and num_buckets < 2:
        raise ValueError(_("num_buckets must be ≥ {least} here (got {num_buckets}).").format(
            least=4 if bidirectional else 2, num_buckets=num_buckets))
    relative_position = torch.as_tensor(relative_position, dtype=torch.long)
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = -torch.clamp(relative_position, max=0)
    max_exact = num_buckets // 2
    if max_distance <= max_exact:
        raise ValueError(_("max_distance ({max_distance}) must exceed the {max_exact} exactly-kept distances.").format(max_distance=max_distance, max_exact=max_exact))
    is_small = distance < max_exact
    # float32, as in the reference, so bucket boundaries match it exactly
    scaled = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (scaled * (num_buckets - max_exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, large)
