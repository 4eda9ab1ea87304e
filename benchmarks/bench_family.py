"""Timings for "The wider family"'s core functions against naive loops.

The lesson's compute and figures are timed by ``bench_lessons`` and the page by ``bench_pages``,
both from the registry.
"""

from __future__ import annotations

import math

from benchmarks import Case
from pe_core import family
from pe_core.biases import alibi_bias


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


CASES = [
    Case("family", "sinusoidal_encoding 2048 × 256", lambda: family.sinusoidal_encoding(range(2048), 256), _sinusoidal_loop),
    Case("family", "dual_chunk_positions 256², s = 96, c = 128", lambda: family.dual_chunk_positions(256, 96, 128),
         _dual_chunk_loop),
    Case("family", "relative schemes (plain/Shaw/ReRoPE/Leaky) 256²", _schemes_heaviest, _leaky_loop),
    Case("family", "T5 bucket curves, 128 buckets, max_distance 1024", lambda: family.t5_bucket_curves(128, 1024)),
    Case("family", "ALiBi bias, 4 of 64 heads × 256² (what the page draws)",
         lambda: family.alibi_head_biases(64, 256, (0, 21, 42, 63)), lambda: alibi_bias(64, 256)),
]
