"""Long-range decay: RoFormer's bound, sinusoidal dot products, and real q·k scores against distance.

RoFormer (Su et al. 2021, §3.4.3) writes the RoPE score of one query/key pair as
Re[Σ_i h_i e^{i r θ_i}] with h_i = q_[2i:2i+1] k*_[2i:2i+1] and, by Abel summation,
bounds its size by max_i |h_{i+1} − h_i| · Σ_j |S_j|, S_j = Σ_{i<j} e^{i r θ_i}. The paper's
decay figure plots the mean of |S_j| over j = 1 .. d/2 (32.5 at r = 0 for d = 128).

Everything is float64 and vectorised over distances and pairs; long distance ranges are
processed in chunks so 10^6 distances at d = 256 stay within a few tens of MB.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.device import compute_device
from pe_core.family import sinusoidal_encoding, sinusoidal_frequencies  # the one sinusoidal table
from pe_core.rope import check_length, positions_tensor, wavelengths

PROJECTION_HEAD_DIM = 64
# Complex elements per chunk (16 bytes each): ~8 MB, which keeps each chunk in cache-friendly sizes.
_CHUNK_ELEMENTS = 1 << 19


def _analysis_device() -> torch.device:
    # MPS has no float64, so only CUDA is worth leaving the CPU for.
    device = compute_device()
    return device if device.type == "cuda" else torch.device("cpu")


def _is_evenly_spaced(distances: torch.Tensor) -> bool:
    if distances.numel() < 3:
        return True
    steps = distances[1:] - distances[:-1]
    return bool(torch.all(steps == steps[0]))


def rope_decay_bound(inv_freq: torch.Tensor, distances) -> torch.Tensor:
    """RoFormer's relative upper bound: (1/n) Σ_{j=1..n} |S_j(r)|, S_j(r) = Σ_{i<j} e^{i r θ_i}, n = len(θ).

    ``distances`` (tensor, sequence or range; any real values) gives r. Returns float64 values,
    one per distance. Evenly spaced distances (the usual case) reuse one table of cos and sin and
    rotate it per chunk, e^{i(r0 + t·Δ)θ} = e^{i r0 θ}·e^{i t Δ θ}, instead of evaluating cos and
    sin for every (r, i); exact to ~1e-10 at r = 10^6. Real and imaginary parts are kept as real
    tensors because torch's complex polar/abs are several times slower than cos/sin/hypot.
    """
    device = _analysis_device()
    theta = inv_freq.to(device=device, dtype=torch.float64)
    r = positions_tensor(distances).to(device)
    out = torch.empty(r.shape[0], dtype=torch.float64, device=device)
    if r.numel() == 0:
        return out.cpu()
    chunk = max(1, _CHUNK_ELEMENTS // theta.numel())
    evenly_spaced = _is_evenly_spaced(r)
    if evenly_spaced:
        step = (r[1] - r[0]) if r.numel() > 1 else torch.zeros((), dtype=torch.float64, device=device)
        table = torch.outer(torch.arange(min(chunk, r.numel()), dtype=torch.float64, device=device) * step, theta)
        table_cos, table_sin = torch.cos(table), torch.sin(table)
    for start in range(0, r.numel(), chunk):
        stop = min(start + chunk, r.numel())
        if evenly_spaced:
            shift_cos, shift_sin = torch.cos(r[start] * theta), torch.sin(r[start] * theta)
            cos, sin = table_cos[: stop - start], table_sin[: stop - start]
            real = cos * shift_cos - sin * shift_sin
            imaginary = cos * shift_sin + sin * shift_cos
        else:
            angles = torch.outer(r[start:stop], theta)
            real, imaginary = torch.cos(angles), torch.sin(angles)
        out[start:stop] = torch.hypot(real.cumsum_(dim=1), imaginary.cumsum_(dim=1)).mean(dim=1)
    return out.cpu()


@functools.lru_cache(maxsize=64)
def random_phase_level(num_pairs: int) -> float:
    """The bound's long-run level: (1/n) Σ_{j=1..n} E|S_j| when the n phases are independent and uniform.

    Far beyond every wavelength the phases r·θ_i behave like independent uniform angles (Weyl
    equidistribution; the θ_i are rationally independent), so the bound oscillates around this
    value. Uses Kluyver's formula E|S_j| = ∫_0^∞ (1 − J0(t)^j) / t² dt with the geometric sum
    (1/n) Σ_j J0^j = J0 (1 − J0^n) / (n (1 − J0)), midpoint rule on (0, T] plus the tail ≈ 1/T.
    """
    check_length("num_pairs", num_pairs)
    span, step = 2000.0, 0.01
    t = torch.arange(step / 2, span, step, dtype=torch.float64)
    j0 = torch.special.bessel_j0(t)
    mean_power = j0 * (1 - j0**num_pairs) / (num_pairs * (1 - j0))
    return float(((1 - mean_power) / t**2).sum() * step + 1 / span)


def first_distance_at_or_below(distances: torch.Tensor, values: torch.Tensor, level: float) -> float | None:
    """The first distance whose value is ≤ ``level`` (None if it never gets there)."""
    hits = torch.nonzero(values <= level)
    return None if hits.numel() == 0 else float(distances[hits[0, 0]])


# --- decimation for drawing -------------------------------------------------------------------


def envelope_indices(x: torch.Tensor, y: torch.Tensor, bins: int, log_axis: bool = False) -> torch.Tensor:
    """Indices of the points to draw so an oscillating curve keeps its envelope on screen.

    ``x`` must be increasing. The x range is cut into ``bins`` bins (equal width, or equal width
    in log x); from each bin the first minimum and the first maximum are kept, plus both end
    points, so at most 2·bins + 2 points remain and every local extreme a screen could show
    survives. On a log axis points with x ≤ 0 are dropped.
    """
    index = torch.arange(x.numel())
    if log_axis:
        index = index[x > 0]
    if index.numel() <= 2 * bins + 2:
        return index
    xs, ys = x[index].to(torch.float64), y[index].to(torch.float64)
    if log_axis:
        position = torch.log(xs / xs[0]) / math.log(float(xs[-1] / xs[0]))
    else:
        position = (xs - xs[0]) / (xs[-1] - xs[0])
    which = (position * bins).long().clamp_(0, bins - 1)
    local = torch.arange(xs.numel())
    outside = torch.full((bins,), xs.numel(), dtype=torch.long)
    keep = [torch.tensor([0, xs.numel() - 1])]
    for reduce in ("amin", "amax"):
        extreme = torch.full((bins,), math.inf if reduce == "amin" else -math.inf, dtype=torch.float64)
        extreme = extreme.scatter_reduce(0, which, ys, reduce=reduce)
        at_extreme = torch.where(ys == extreme[which], local, xs.numel())
        keep.append(outside.scatter_reduce(0, which, at_extreme, reduce="amin"))
    chosen = torch.unique(torch.cat(keep))
    return index[chosen[chosen < xs.numel()]]


class Curve(NamedTuple):
    x: torch.Tensor  # float64, decimated for drawing
    y: torch.Tensor


def decimated(x: torch.Tensor, y: torch.Tensor, bins: int = 900, log_axis: bool = False) -> Curve:
    """The points of ``envelope_indices``: the curve as a full-resolution plot would look."""
    keep = envelope_indices(x, y, bins, log_axis)
    return Curve(x[keep], y[keep])


class BinnedCurve(NamedTuple):
    x: torch.Tensor  # mean distance of the points in each non-empty bin
    mean: torch.Tensor  # mean value in the bin: the trend, without the oscillation
    low: torch.Tensor  # smallest value in the bin
    high: torch.Tensor  # largest value in the bin


def binned(x: torch.Tensor, y: torch.Tensor, bins: int = 900, log_axis: bool = False) -> BinnedCurve:
    """Mean, min and max of ``y`` over ``bins`` bins of x (equal width, or equal width in log x).

    Up to 2·bins points are returned as they are. For a longer curve that oscillates faster than
    a screen can show, the mean is its trend and [min, max] the band it fills. Bins holding one
    point give that point exactly, so the start of a log axis is drawn point by point. On a log
    axis points with x ≤ 0 are dropped.
    """
    x, y = x.to(torch.float64), y.to(torch.float64)
    if log_axis:
        x, y = x[x > 0], y[x > 0]
    if x.numel() <= 2 * bins:  # as many points as the bins would draw (mean plus band): draw them all
        return BinnedCurve(x, y, y, y)
    if log_axis:
        position = torch.log(x / x[0]) / math.log(float(x[-1] / x[0]))
    else:
        position = (x - x[0]) / (x[-1] - x[0])
    which = (position * bins).long().clamp_(0, bins - 1)
    counts = torch.bincount(which, minlength=bins)
    filled = counts > 0

    def reduce(values: torch.Tensor, how: str, start: float) -> torch.Tensor:
        return torch.full((bins,), start, dtype=torch.float64).scatter_reduce(0, which, values, reduce=how)[filled]

    count = counts[filled].to(torch.float64)
    return BinnedCurve(reduce(x, "sum", 0.0) / count, reduce(y, "sum", 0.0) / count,
                       reduce(y, "amin", math.inf), reduce(y, "amax", -math.inf))


# --- the bound as the page draws it -----------------------------------------------------------


class BoundCurve(NamedTuple):
    curve: BinnedCurve  # the bound, binned for drawing (every integer distance computed exactly)
    at_zero: float  # exact value at r = 0: (n + 1) / 2
    level: float  # random-phase level the curve settles around
    first_at_level: float | None  # first distance where the bound reaches that level
    longest_wavelength: float  # 2π / min θ: beyond it every pair has turned at least once
    max_distance: int


def decay_bound_curve(inv_freq: torch.Tensor, max_distance: int, log_axis: bool = False,
                      bins: int = 700) -> BoundCurve:
    """The bound at every integer distance 0 .. max_distance (exact), decimated for a plot."""
    check_length("max_distance", max_distance)
    distances = torch.arange(max_distance + 1, dtype=torch.float64)
    values = rope_decay_bound(inv_freq, distances)
    level = random_phase_level(inv_freq.numel())
    return BoundCurve(
        curve=binned(distances, values, bins, log_axis),
        at_zero=float(values[0]),
        level=level,
        first_at_level=first_distance_at_or_below(distances, values, level),
        longest_wavelength=float(wavelengths(inv_freq).max()),
        max_distance=max_distance,
    )


# --- sinusoidal encodings (Vaswani et al. 2017) -----------------------------------------------


def sinusoidal_dot_products(offsets, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """PE(t)·PE(t+k) = Σ_i cos(k·ω_i), the same for every t (sin a sin b + cos a cos b = cos(a − b))."""
    omega = sinusoidal_frequencies(d_model, base)
    k = positions_tensor(offsets)
    chunk = max(1, _CHUNK_ELEMENTS // omega.numel())
    return torch.cat([torch.cos(torch.outer(k[s:s + chunk], omega)).sum(dim=1) for s in range(0, k.numel(), chunk)]
                     or [torch.empty(0, dtype=torch.float64)])


def first_negative_dot_product(d_model: int, base: float = 10000.0, limit: int = 1 << 20) -> int | None:
    """The first offset k ≥ 0 with PE(t)·PE(t+k) = Σ_i cos(k·ω_i) < 0, or None if there is none up to ``limit``.

    The slow pairs keep the sum positive for a long way, so where it first dips below zero depends
    strongly on d and the base (d = 128, base 10^4: k = 1707). The offsets are searched in chunks
    that double in size, so an early crossing costs little and a late one at most ``limit`` sums.
    """
    check_length("limit", limit)
    sinusoidal_frequencies(d_model, base)  # validates d_model and base before any work
    start, size = 0, 4096
    while start <= limit:
        stop = min(start + size, limit + 1)
        values = sinusoidal_dot_products(torch.arange(start, stop, dtype=torch.float64), d_model, base)
        below = torch.nonzero(values < 0)
        if below.numel():
            return start + int(below[0, 0])
        start, size = stop, 2 * size
    return None


def sinusoidal_similarity(num_positions: int, d_model: int, base: float = 10000.0,
                          projection: torch.Tensor | None = None) -> torch.Tensor:
    """[N, N] matrix PE(i)·PE(j) for positions 0 .. N−1, or PE(i)ᵀ·M·PE(j) with M = W_qᵀ W_k."""
    check_length("num_positions", num_positions)
    encoding = sinusoidal_encoding(range(num_positions), d_model, base)
    if projection is None:
        return encoding @ encoding.T
    return encoding @ projection.to(torch.float64) @ encoding.T


# --- real q·k scores ------------------------------------------------------------------------


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def correlated_queries_keys(draws: int, head_dim: int, correlation: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``draws`` pairs q, k ~ N(0, I_d) with corr(q_a, k_a) = ρ: k = ρ·q + √(1 − ρ²)·ε (reproducible by seed)."""
    check_length("draws", draws)
    if not -1 <= correlation <= 1:
        raise ValueError(_("correlation must be between −1 and 1 (got {correlation!r}).").format(correlation=correlation))
    generator = _generator(seed)
    q = torch.randn(draws, head_dim, generator=generator, dtype=torch.float64)
    noise = torch.randn(draws, head_dim, generator=generator, dtype=torch.float64)
    return q, correlation * q + math.sqrt(1 - correlation**2) * noise


def _rope_features(inv_freq: torch.Tensor, distances) -> torch.Tensor:
    """[R, 2n] = [cos(rθ), sin(rθ)]: the score at distance r is linear in these."""
    angles = torch.outer(positions_tensor(distances), inv_freq.to(torch.float64))
    return torch.cat((torch.cos(angles), torch.sin(angles)), dim=1)


def _rope_coefficients(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Per draw, the weights of [cos(rθ_i), sin(rθ_i)] in the score (interleaved pairs, RoFormer's layout).

    Query at m, key at n = m − r: (R_m q)·(R_n k) = qᵀ R_{−r} k, and for one pair
    (q0, q1)·R(−φ)(k0, k1) = (q0 k0 + q1 k1) cos φ + (q0 k1 − q1 k0) sin φ.
    """
    q0, q1 = q[..., 0::2], q[..., 1::2]
    k0, k1 = k[..., 0::2], k[..., 1::2]
    return torch.cat((q0 * k0 + q1 * k1, q0 * k1 - q1 * k0), dim=-1)


def rope_scores(q: torch.Tensor, k: torch.Tensor, inv_freq: torch.Tensor, distances) -> torch.Tensor:
    """(R_m q)·(R_{m−r} k) for each draw (rows of q, k) and distance r: a float64 [draws, R] matrix."""
    q = torch.atleast_2d(q.to(torch.float64))
    k = torch.atleast_2d(k.to(torch.float64))
    return _rope_coefficients(q, k) @ _rope_features(inv_freq, distances).T


class ScoreStatistics(NamedTuple):
    mean: torch.Tensor  # over draws, per distance
    std: torch.Tensor  # population standard deviation over draws, per distance
    draws: torch.Tensor  # the first few draws' curves, [shown, R]


def _linear_score_statistics(coefficients: torch.Tensor, features: torch.Tensor, shown: int) -> ScoreStatistics:
    """Mean and spread over draws of scores = coefficients @ featuresᵀ, without always forming the matrix.

    A score is linear in the coefficients, so its mean uses their mean and its variance their
    covariance C (xᵀ C x per distance). That costs R·F² instead of R·F·draws; take the cheaper.
    """
    draws, width = coefficients.shape
    mean = features @ coefficients.mean(dim=0)
    if draws <= width:
        variance = (features @ coefficients.T).var(dim=1, correction=0)
    else:
        centred = coefficients - coefficients.mean(dim=0)
        covariance = centred.T @ centred / draws
        variance = ((features @ covariance) * features).sum(dim=1)
    return ScoreStatistics(mean, variance.clamp_min(0).sqrt(), coefficients[:shown] @ features.T)


def rope_score_statistics(inv_freq: torch.Tensor, distances, draws: int, correlation: float, seed: int,
                          shown: int = 3) -> ScoreStatistics:
    """Random q, k (correlation ρ) through RoPE: mean and spread of the score over draws, per distance."""
    q, k = correlated_queries_keys(draws, 2 * inv_freq.numel(), correlation, seed)
    return _linear_score_statistics(_rope_coefficients(q, k), _rope_features(inv_freq, distances), shown)


def expected_rope_score(inv_freq: torch.Tensor, distances, correlation: float) -> torch.Tensor:
    """E[(R_m q)·(R_{m−r} k)] = ρ·tr(R_r) = 2ρ Σ_i cos(rθ_i) for q, k as in ``correlated_queries_keys``."""
    angles = torch.outer(positions_tensor(distances), inv_freq.to(torch.float64))
    return 2 * correlation * torch.cos(angles).sum(dim=1)


def all_ones_rope_score(inv_freq: torch.Tensor, distances) -> torch.Tensor:
    """q = k = (1, …, 1) through RoPE, computed by rotating the vectors."""
    ones = torch.ones(1, 2 * inv_freq.numel(), dtype=torch.float64)
    return rope_scores(ones, ones, inv_freq, distances)[0]


def projection_head_dim(d_model: int) -> int:
    """The width of one attention head the projections map to: 64 as in most models, or d_model if smaller."""
    return min(PROJECTION_HEAD_DIM, d_model)


def random_projections(draws: int, d_model: int, seed: int, head_dim: int | None = None):
    """Yield (W_q, W_k) batches, entries N(0, 1/d_model), shape [batch, head_dim, d_model]; same seed, same draws."""
    check_length("draws", draws)
    head_dim = projection_head_dim(d_model) if head_dim is None else head_dim
    generator = _generator(seed)
    batch = max(1, _CHUNK_ELEMENTS // (head_dim * d_model))
    scale = 1 / math.sqrt(d_model)
    for start in range(0, draws, batch):
        size = min(batch, draws - start)
        w_q = torch.randn(size, head_dim, d_model, generator=generator, dtype=torch.float64) * scale
        w_k = torch.randn(size, head_dim, d_model, generator=generator, dtype=torch.float64) * scale
        yield w_q, w_k


def projection_matrix(d_model: int, seed: int) -> torch.Tensor:
    """M = W_qᵀ W_k of the first draw for ``seed``: PE(i)ᵀ M PE(j) is the projected score."""
    w_q, w_k = next(random_projections(1, d_model, seed))
    return w_q[0].T @ w_k[0]


def projected_sinusoidal_statistics(offsets, d_model: int, base: float, query_position: int, draws: int,
                                    seed: int, shown: int = 3) -> ScoreStatistics:
    """(W_q PE(t))·(W_k PE(t+k)) over random projections: mean and spread over draws, per offset k.

    For each draw the score is v·PE(t+k) with v = W_kᵀ W_q PE(t), so only v is kept per draw.
    """
    query = sinusoidal_encoding([query_position], d_model, base)[0]
    coefficients = torch.cat([torch.einsum("bhd,bh->bd", w_k, w_q @ query)
                              for w_q, w_k in random_projections(draws, d_model, seed)])
    keys = sinusoidal_encoding(query_position + positions_tensor(offsets), d_model, base)
    return _linear_score_statistics(coefficients, keys, shown)
