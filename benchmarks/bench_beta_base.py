"""β-base core timings against naive loops (the lesson and page are timed by bench_lessons / bench_pages)."""

from __future__ import annotations

import math

import torch

from benchmarks import Case
from pe_core import default_inv_freq
from pe_core.beta_base import greedy_digits, log_stretch_bound, pair_phases

GROUP = "core: beta_base"
_NUMBERS = torch.floor(torch.linspace(0, 2.0**52 - 1, 2000, dtype=torch.float64))  # 2000 numbers up to 2^52
_SCALES = torch.logspace(0, 12, 200, dtype=torch.float64)
_POSITIONS = (1_000, 100_000, 1_000_000)


def _greedy():
    return greedy_digits(_NUMBERS, 1.1547, 64)


def _greedy_loop():
    beta, places = 1.1547, 64
    rows = []
    for value in _NUMBERS.tolist():
        digits, remainder = [0.0] * places, value
        for place in range(places - 1, 0, -1):
            digit = math.floor(remainder / beta**place)
            digits[place] = digit
            remainder -= digit * beta**place
        digits[0] = remainder
        rows.append(digits)
    return rows


def _bound():
    return log_stretch_bound(_SCALES, 10_000 ** (2 / 128), 64)


def _bound_loop():
    beta_p = 10_000.0
    return [math.log(s - (s - 1) / beta_p) / 64 for s in _SCALES.tolist()]


def _phases():
    inv_freq = default_inv_freq(10_000.0, 256)
    return torch.stack([pair_phases(inv_freq, n) for n in _POSITIONS])


def _phases_loop():
    theta = [10_000.0 ** (-2 * i / 256) for i in range(128)]
    return [[math.fmod(n * t, 2 * math.pi) for t in theta] for n in _POSITIONS]


CASES = [
    Case(GROUP, "greedy_digits: 2000 numbers × 64 places, β = 1.1547", _greedy, _greedy_loop),
    Case(GROUP, "log_stretch_bound: 200 values of s up to 1e12", _bound, _bound_loop),
    Case(GROUP, "pair_phases: d = 256 at three positions", _phases, _phases_loop),
]
