"""Timings for the β-base page: digit expansions, the bound, RoPE phases, figures and a whole page rerun."""

from __future__ import annotations

import math

import torch

from benchmarks import Case
from figures.beta_base import export_figures
from pe_core import default_inv_freq
from pe_core.beta_base import (
    digit_views,
    greedy_digits,
    log_stretch_bound,
    pair_phases,
    sample_numbers,
)

_NUMBERS = sample_numbers(math.log(2.0**52))  # 2000 numbers spread up to 2^52
_FACTORS = torch.logspace(0, 12, 200, dtype=torch.float64)
_HEAVIEST = {"beta": 1.001, "places": 32, "factor": 1e6, "number": 10**12, "head_dim": 256, "base": 10_000_000.0,
             "train_length": 131_072, "scale": 8.0, "position_in_l": 128.0, "max_factor": 1e12}


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
    return log_stretch_bound(_FACTORS, 10_000 ** (2 / 128), 64)


def _bound_loop():
    beta_p = 10_000.0
    return [math.log(k - (k - 1) / beta_p) / 64 for k in _FACTORS.tolist()]


def _phases_big():
    inv_freq = default_inv_freq(10_000.0, 256)
    return torch.stack([pair_phases(inv_freq, n) for n in (1_000, 100_000, 1_000_000)])


def _page_rerun_factory(query: dict):
    """A warm AppTest of the page: each call is one script rerun with every cache already filled."""
    state = {}

    def rerun():
        if "at" not in state:
            from tests.conftest import run_page

            state["at"] = run_page("pages/beta_base.py", query)
        state["at"].run()
        assert not state["at"].exception

    return rerun


CASES = [
    Case("beta_base", "greedy_digits: 2000 numbers × 64 places, β = 1.1547", _greedy, _greedy_loop),
    Case("beta_base", "digit_views: defaults (β = 10, P = 3, k = 2), 2000 samples",
         lambda: digit_views(sample_numbers(math.log(2000)), 10.0, 3, 2.0)),
    Case("beta_base", "digit_views: β = 1.001, P = 32, k = 1e6 (64 places)",
         lambda: digit_views(sample_numbers(32 * math.log(1.001) + math.log(1e6)), 1.001, 32, 1e6)),
    Case("beta_base", "log_stretch_bound: 200 values of k up to 1e12", _bound, _bound_loop),
    Case("beta_base", "pair_phases: d = 256 at three positions", _phases_big),
    Case("page: beta_base", "computation + all 5 figures, defaults", export_figures),
    Case("page: beta_base", "computation + all 5 figures, heaviest settings", lambda: export_figures(**_HEAVIEST)),
    Case("page: beta_base", "page script rerun (AppTest, warm caches), defaults", _page_rerun_factory({}), repeats=5),
    Case("page: beta_base", "page script rerun (AppTest, warm caches), heaviest",
         _page_rerun_factory({"beta": "1.001", "P": "32", "k": "1e6×", "n": str(10**12), "d": "256",
                              "base": "10,000,000", "L": "131,072", "s": "128×", "pos": "128 L", "kmax": "1e12×"}),
         repeats=5),
]
