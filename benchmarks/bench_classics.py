"""Timings of the core functions behind the lineage, RoPE-in-code and caveats lessons, against naive loops.

(The lessons and pages themselves are timed from the registry by bench_lessons and bench_pages.)
"""

from __future__ import annotations

import math

import torch

from benchmarks import Case
from pe_core.caveats import kv_cache_error
from pe_core.relative import deberta_index, scheme_parameters, scheme_scores, shaw_attention
from pe_core.rope_code import walkthrough

_PARAMS = scheme_parameters(64, 64, seed=0, repeated_token=False, shaw_distance=16, deberta_span=32)


def _shaw_loop():
    p = _PARAMS
    n, d = p.x.shape
    k = p.shaw_k.shape[0] // 2
    q, key = (p.x @ p.w_q).tolist(), (p.x @ p.w_k).tolist()
    rel = p.shaw_k.tolist()
    return [[sum(q[i][c] * (key[j][c] + rel[max(-k, min(k, j - i)) + k][c]) for c in range(d)) / math.sqrt(d)
             for j in range(n)] for i in range(n)]


def _shaw_vectorised():
    p = _PARAMS
    return shaw_attention(p.x, p.w_q, p.w_k, p.w_v, p.shaw_k, p.shaw_v)


def _deberta_loop():
    out = []
    for r in range(-1000, 1001):
        mid = 128
        magnitude = mid - 1 if -mid < r < mid else abs(r)
        bucket = r if magnitude <= mid else int(math.copysign(
            math.ceil(math.log(magnitude / mid) / math.log(511 / mid) * (mid - 1)) + mid, r))
        out.append(min(max(bucket + 256, 0), 511))
    return out


def _rotation_loop(dim: int = 128, position: int = 4095, base: float = 10_000.0):
    x = list(range(1, dim + 1))
    out = []
    for i in range(dim // 2):
        angle = position * base ** (-2 * i / dim)
        c, s = math.cos(angle), math.sin(angle)
        out += [x[2 * i] * c - x[2 * i + 1] * s, x[2 * i] * s + x[2 * i + 1] * c]
    return out


CASES = [
    Case("classics", "all six scheme scores, n = 64, d = 64", lambda: scheme_scores(_PARAMS)),
    Case("classics", "Shaw attention keys + values, n = 64, d = 64", _shaw_vectorised, _shaw_loop),
    Case("classics", "DeBERTa-v2 log-bucket index on ±1000", lambda: deberta_index(torch.arange(-1000, 1001), 0, 256,
                                                                                    512), _deberta_loop),
    Case("classics", "RoPE walk-through, both code forms, d = 128", lambda: walkthrough(128, 4095), _rotation_loop),
    Case("classics", "dynamic-NTK cache error, d = 128, 4,096 → 32,768, 33 lengths",
         lambda: kv_cache_error(128, 10_000.0, 4096, 4096, 32_768), repeats=3),
]
