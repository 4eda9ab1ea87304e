"""The lower bound on RoPE's base for a context length (Men et al. 2024, "Base of RoPE Bounds Context Length").

Men et al. ask RoPE for one more property besides long-term decay: a key similar to the query
should, on average, get more attention than a random key, at every distance the context holds.
With q's components i.i.d. (mean μ, variance σ²), k̃ = q + ε and an independent k, the expected gap
at relative distance m is

    E[qᵀR_m k̃ − qᵀR_m k] = 2σ² · B(m),      B(m) = Σ_{i=0}^{d/2−1} cos(m·θᵢ),   θᵢ = b^(−2i/d),

so the property holds up to length L exactly when B(m) ≥ 0 for m = 0, 1, …, L − 1, and the bound is

    b*(L) = inf { b : B_b(m) ≥ 0 for every m < L }.

Dimensions a model does not rotate (``partial_rotary_factor`` < 1) add cos(0) = 1 each, as in the
same paper's discussion of partial rotation: with half or more of the pairs unrotated, B(m) ≥ 0 for
every base.

B_b is not monotone in b: the set of valid bases has narrow islands (Su 2024 found the same when
checking the paper's table), so bisection is wrong. ``base_lower_bound`` scans b upward on a fixed
geometric grid and returns the first grid base at which the inequality holds for every m < L; each
base it tests is checked exactly (every integer distance, float64). An island narrower than the grid
step can lie below the returned value; the paper's own table and Su's finer search differ for the
same reason. We confirmed the definition against the paper (arXiv:2405.14591, its eq. for B_{m,θ}
and Table 1) and Su Jianlin's reading with reference code (kexue.fm/archives/10122), whose
inequality and index range m ∈ {0 … L−1} this module follows.

Evaluating B at all L distances is a matrix product: with m = jK + k,
cos((jK + k)θ) = cos(jKθ)cos(kθ) − sin(jKθ)sin(kθ), so one block of K·J distances costs a
(K × 2P)·(2P × J) product instead of K·J·P cosines.
"""

from __future__ import annotations

import functools
import math

import torch

from pe_core.rope import check_length, default_inv_freq

GRID_STEPS_PER_DECADE = 200  # the scan's grid: b = 10^(k/200), steps of 1.16 %
MAX_BASE = 1e15  # beyond this no base is reported (a 4-dim head, say, needs an absurd one)
_NEGATIVE = -1e-9  # B(m) below this is negative (float64 sums of ≤ 512 cosines are good to ~1e-13)
_COLUMNS_PER_CHUNK = 64  # blocks of K·64 distances between early-exit checks


def similarity_sums(inv_freq: torch.Tensor, positions, constant: float = 0.0) -> torch.Tensor:
    """B(m) = Σᵢ cos(m·θᵢ) + constant at the given distances (float64; the direct sum, for checks)."""
    positions = torch.as_tensor(positions, dtype=torch.float64)
    return torch.cos(torch.outer(positions, inv_freq.to(torch.float64))).sum(1) + constant


def _block_width(length: int) -> int:
    return max(64, min(4096, math.isqrt(length) + 1))


def _chunks(inv_freq: torch.Tensor, length: int):
    """(first distance, B at distances first … first + len − 1) for consecutive chunks covering 0 … length − 1."""
    theta = inv_freq.to(torch.float64)
    width = _block_width(length)
    inner = torch.outer(torch.arange(width, dtype=torch.float64), theta)
    left = torch.cat([inner.cos(), inner.sin()], dim=1)  # K × 2P
    columns = -(-length // width)
    for start in range(0, columns, _COLUMNS_PER_CHUNK):
        stop = min(columns, start + _COLUMNS_PER_CHUNK)
        outer = torch.outer(torch.arange(start, stop, dtype=torch.float64) * width, theta)
        right = torch.cat([outer.cos(), -outer.sin()], dim=1)  # J × 2P
        sums = (right @ left.T).reshape(-1)  # distance (start + j)·K + k, row by row
        first = start * width
        yield first, sums[: min(sums.numel(), length - first)]


def first_negative_distance(inv_freq: torch.Tensor, length: int, constant: float = 0.0) -> int | None:
    """The smallest m < length with Σᵢ cos(m·θᵢ) + constant < 0, or None if there is none."""
    check_length("length", length)
    for first, sums in _chunks(inv_freq, length):
        negative = torch.nonzero(sums + constant < _NEGATIVE)
        if len(negative):
            return first + int(negative[0])
    return None


def similarity_envelope(inv_freq: torch.Tensor, length: int, bins: int, constant: float = 0.0
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(bin start distances, min of B in each bin, max of B in each bin) over m = 0 … length − 1.

    Exact over every distance; only the drawing is binned, and the minimum keeps every dip below 0.
    """
    check_length("length", length)
    check_length("bins", bins)
    bins = min(bins, length)
    edges = torch.linspace(0, length, bins + 1, dtype=torch.float64).floor().to(torch.int64)
    low = torch.full((bins,), math.inf, dtype=torch.float64)
    high = torch.full((bins,), -math.inf, dtype=torch.float64)
    for first, sums in _chunks(inv_freq, length):
        distances = torch.arange(first, first + sums.numel())
        which = torch.bucketize(distances, edges[1:], right=True).clamp(max=bins - 1)
        low.scatter_reduce_(0, which, sums + constant, reduce="amin")
        high.scatter_reduce_(0, which, sums + constant, reduce="amax")
    return edges[:-1], low, high


def criterion_holds(base: float, length: int, rotary_dim: int, constant_pairs: int = 0) -> bool:
    """Whether B_b(m) ≥ 0 for every m < length, with θᵢ = base^(−2i/rotary_dim)."""
    theta = default_inv_freq(base, rotary_dim)
    return first_negative_distance(theta, length, float(constant_pairs)) is None


def grid_base(step: int, steps_per_decade: int = GRID_STEPS_PER_DECADE) -> float:
    return 10.0 ** (step / steps_per_decade)


@functools.lru_cache(maxsize=256)
def base_lower_bound(length: int, rotary_dim: int, constant_pairs: int = 0,
                     steps_per_decade: int = GRID_STEPS_PER_DECADE, start: float | None = None) -> float | None:
    """Men et al.'s lower bound b*(L) on the RoPE base: the first base of the grid 10^(k/steps_per_decade)
    at which Σᵢ cos(m·b^(−2i/d)) + constant_pairs ≥ 0 for every m = 0 … length − 1.

    ``rotary_dim`` is d (the rotated dimensions); ``constant_pairs`` counts the pairs of a head that
    are not rotated (each adds cos 0 = 1). Returns None when the inequality holds for every base
    (as many unrotated pairs as rotated ones), ``math.inf`` when no base up to 10^15 satisfies it.
    The scan starts at ``start`` (default max(2, L/4)): every bound in the paper's table, in Su's and here is above
    1.5·L, and the d → ∞ limit of the inequality gives b ≥ L/0.6165 (Su 2024).
    """
    check_length("length", length)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ValueError(f"rotary_dim must be an even integer ≥ 2 (got {rotary_dim!r}).")
    pairs = rotary_dim // 2
    if constant_pairs >= pairs:
        return None
    step = math.floor(steps_per_decade * math.log10(start if start is not None else max(2.0, length / 4)))
    while grid_base(step, steps_per_decade) <= MAX_BASE:
        base = grid_base(step, steps_per_decade)
        if criterion_holds(base, length, rotary_dim, constant_pairs):
            return base
        step += 1
    return math.inf
