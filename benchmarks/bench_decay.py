"""Long-range decay core timings against naive loops (the lesson and page are timed by bench_lessons / bench_pages)."""

from __future__ import annotations

import math

import torch

import pe_core.decay as decay
from benchmarks import Case
from pe_core import default_inv_freq

GROUP = "core: decay"


def bound_loop(inv_freq: list[float], distances) -> list[float]:
    """The same formula as plain Python: (1/n) Σ_j |Σ_{i<j} e^{i r θ_i}|, one distance and one pair at a time."""
    values = []
    for r in distances:
        real = imaginary = total = 0.0
        for frequency in inv_freq:
            real += math.cos(r * frequency)
            imaginary += math.sin(r * frequency)
            total += math.hypot(real, imaginary)
        values.append(total / len(inv_freq))
    return values


def _bound(head_dim: int, count: int):
    inv_freq = default_inv_freq(10_000.0, head_dim)
    return lambda: decay.rope_decay_bound(inv_freq, range(count))


def _bound_loop(head_dim: int, count: int):
    inv_freq = default_inv_freq(10_000.0, head_dim).tolist()
    return lambda: bound_loop(inv_freq, range(count))


def _level():
    decay.random_phase_level.cache_clear()
    return decay.random_phase_level(64)


def _rope_scores():
    distances = torch.arange(4097, dtype=torch.float64)
    return decay.rope_score_statistics(default_inv_freq(10_000.0, 128), distances, 1024, 0.5, seed=0)


def _projected():
    offsets = torch.arange(-4096, 4097, dtype=torch.float64)
    return decay.projected_sinusoidal_statistics(offsets, 256, 10_000.0, 4096, 1024, seed=0)


def first_negative_loop(d_model: int, base: float) -> int:
    """The first k with Σ_i cos(k·ω_i) < 0, one offset and one pair at a time."""
    omega = [base ** (-2 * i / d_model) for i in range(d_model // 2)]
    k = 0
    while sum(math.cos(k * w) for w in omega) >= 0:
        k += 1
    return k


def _curve_1m_log():
    return decay.decay_bound_curve(default_inv_freq(10_000.0, 128), 1 << 20, log_axis=True)


CASES = [
    Case(GROUP, "rope_decay_bound: d=128, 10^4 distances", _bound(128, 10_000), _bound_loop(128, 10_000), repeats=10),
    Case(GROUP, "rope_decay_bound: d=128, 10^6 distances", _bound(128, 1_000_000), _bound_loop(128, 1_000_000),
         repeats=3),
    Case(GROUP, "rope_decay_bound: d=256, 2^20 distances", _bound(256, 1 << 20), repeats=3),
    Case(GROUP, "decay_bound_curve (bound + binning): d=128, 2^20", _curve_1m_log, repeats=3),
    Case(GROUP, "random_phase_level(64) (Kluyver integral)", _level, repeats=5),
    Case(GROUP, "first_negative_dot_product: d=128, base 10^4 (k = 1707)",
         lambda: decay.first_negative_dot_product(128, 10_000.0), lambda: first_negative_loop(128, 10_000.0),
         repeats=10),
    Case(GROUP, "rope_score_statistics: d=128, 1024 draws, 4097 r", _rope_scores, repeats=3),
    Case(GROUP, "projected sinusoidal: d=256, 1024 draws, ±4096", _projected, repeats=3),
]
