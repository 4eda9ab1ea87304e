"""Timings for "The wider family": its core functions (with naive loop baselines) and the page's work."""

from __future__ import annotations

import math

from benchmarks import Case
from figures.family import DEFAULTS, export_figures
from pe_core import family
from pe_core.biases import alibi_bias

HEAVIEST = {
    "sin_dim": 256, "sin_base": 1_000_000.0, "sin_length": 2048, "alibi_heads": 64, "alibi_length": 256,
    "t5_buckets": 128, "t5_max_distance": 1024, "rel_length": 256, "shaw_clip": 128, "rerope_window": 128,
    "leaky_k": 64.0, "dca_length": 256, "dca_train_length": 128, "dca_chunk": 96, "logn_train_length": 131072,
}


def _sinusoidal_loop(length: int = 2048, dim: int = 256, base: float = 10000.0) -> list[list[float]]:
    rows = []
    for pos in range(length):
        row = []
        for i in range(dim // 2):
            angle = pos / base ** (2 * i / dim)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return rows


def _dual_chunk_loop(length: int = 256, s: int = 96, c: int = 128) -> list[list[float]]:
    w = c - s
    matrix = []
    for i in range(length):
        row = []
        for j in range(length):
            if j > i:
                row.append(math.nan)
                continue
            if i // s == j // s:
                query = i % s
            elif i // s - j // s == 1:
                query = s + i % s if i % s < w else c - 1
            else:
                query = c - 1
            row.append(float(query - j % s))
        matrix.append(row)
    return matrix


def _leaky_loop(length: int = 256, window: int = 128, k: float = 64.0) -> list[list[float]]:
    return [[(d if d <= window else window + (d - window) / k) if (d := i - j) >= 0 else math.nan
             for j in range(length)] for i in range(length)]


def _schemes_heaviest():
    return family.relative_position_schemes(family.relative_distances(256), 128, 128, 64.0)


def _page_rerun(query: dict[str, str]):
    """A warm AppTest rerun of the page script (widgets, cached compute, figures, serialisation)."""
    from tests.conftest import run_page

    app = run_page("pages/family.py", query)
    return app.run


_DEFAULT_QUERY: dict[str, str] = {}
_HEAVY_QUERY = {"sd": "256", "sb": "1,000,000", "sL": "2048", "ah": "64", "aL": "256", "tb": "128", "tm": "1024",
                "rL": "256", "rc": "128", "rw": "128", "rk": "64", "dl": "256", "dc": "128", "ds": "0.75",
                "nL": "131072"}


class _LazyRerun:
    """Builds the AppTest on first call, so importing this module stays cheap."""

    def __init__(self, query: dict[str, str]):
        self.query, self.rerun = query, None

    def __call__(self):
        if self.rerun is None:
            self.rerun = _page_rerun(self.query)
        return self.rerun()


CASES = [
    Case("family", "sinusoidal_encoding 2048 × 256", lambda: family.sinusoidal_encoding(2048, 256), _sinusoidal_loop),
    Case("family", "dual_chunk_positions 256², s = 96, c = 128", lambda: family.dual_chunk_positions(256, 96, 128),
         _dual_chunk_loop),
    Case("family", "relative schemes (plain/Shaw/ReRoPE/Leaky) 256²", _schemes_heaviest, _leaky_loop),
    Case("family", "T5 bucket curves, 128 buckets, max_distance 1024", lambda: family.t5_bucket_curves(128, 1024)),
    Case("family", "ALiBi bias, 4 of 64 heads × 256² (what the page draws)",
         lambda: family.alibi_head_biases(64, 256, (0, 21, 42, 63)), lambda: alibi_bias(64, 256)),
    Case("page: family", "compute + build all figures, defaults", lambda: export_figures(**DEFAULTS)),
    Case("page: family", "compute + build all figures, heaviest", lambda: export_figures(**HEAVIEST)),
    Case("page: family", "page rerun (AppTest, warm caches), defaults", _LazyRerun(_DEFAULT_QUERY), repeats=5),
    Case("page: family", "page rerun (AppTest, warm caches), heaviest", _LazyRerun(_HEAVY_QUERY), repeats=5),
]
