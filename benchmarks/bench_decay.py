"""Long-range decay timings: RoFormer's bound (against a plain Python loop), random q·k, and the page's work."""

from __future__ import annotations

import math

import torch

import pe_core.decay as decay
from benchmarks import Case
from figures.decay import DEFAULTS, export_figures
from pe_core import METHODS, default_inv_freq

HEAVIEST = {
    "head_dims": (256,),
    "bases": (100.0, 10_000.0, 500_000.0, 1_000_000.0, 10_000_000.0),
    "max_distance": 1 << 20,
    "head_dim": 256,
    "methods": METHODS,
    "d_model": 256,
    "max_offset": 4096,
    "positions": 256,
    "draws": 1024,
}


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


def _curve_1m_log():
    return decay.decay_bound_curve(default_inv_freq(10_000.0, 128), 1 << 20, log_axis=True)


CASES = [
    Case("decay", "rope_decay_bound: d=128, 10^4 distances", _bound(128, 10_000), _bound_loop(128, 10_000), repeats=10),
    Case("decay", "rope_decay_bound: d=128, 10^6 distances", _bound(128, 1_000_000), _bound_loop(128, 1_000_000),
         repeats=3),
    Case("decay", "rope_decay_bound: d=256, 2^20 distances", _bound(256, 1 << 20), repeats=3),
    Case("decay", "decay_bound_curve (bound + binning): d=128, 2^20", _curve_1m_log, repeats=3),
    Case("decay", "random_phase_level(64) (Kluyver integral)", _level, repeats=5),
    Case("decay", "rope_score_statistics: d=128, 1024 draws, 4097 r", _rope_scores, repeats=3),
    Case("decay", "projected sinusoidal: d=256, 1024 draws, ±4096", _projected, repeats=3),
    Case("page: decay", "compute + build all 7 figures, defaults (cold)", lambda: export_figures(), repeats=3),
    Case("page: decay", "compute + build all 7 figures, heaviest (cold)", lambda: export_figures(**HEAVIEST),
         repeats=1),
]

assert set(HEAVIEST) <= set(DEFAULTS)
