"""Low-precision core timings against naive loops (the lesson and page are timed by bench_lessons / bench_pages)."""

from __future__ import annotations

import math
import struct

import torch

from benchmarks import Case
from pe_core import RopeSpec, rope_frequencies
from pe_core import precision as pp

GROUP = "core: precision"
MILLION = 1 << 20
_INV_FREQ = rope_frequencies(RopeSpec(head_dim=128, base=10_000.0)).inv_freq


def _bfloat16_exact_count_loop(length: int) -> int:
    """Naive: one position at a time. Integers below 2^24 are exact in float32, and exact in bfloat16
    exactly when the float32's low 16 bits are zero."""
    return sum(1 for m in range(length) if struct.unpack("<I", struct.pack("<f", m))[0] & 0xFFFF == 0)


def _largest_group_loop(length: int) -> int:
    """Naive: round each position to bfloat16 by hand (ties to even) and count runs of equal values."""
    largest = run = 0
    previous = None
    for m in range(length):
        bits = struct.unpack("<I", struct.pack("<f", m))[0]
        value = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        run = run + 1 if value == previous else 1
        largest, previous = max(largest, run), value
    return largest


def _cos_sin_loop():
    """Naive: the 'everything in bfloat16' order position by position, pair by pair (1024 positions)."""
    theta = _INV_FREQ.to(torch.bfloat16).tolist()
    rows = []
    for m in range(1024):
        position = float(torch.tensor(m, dtype=torch.bfloat16))
        rows.append([(math.cos(position * t), math.sin(position * t)) for t in theta])
    return rows


CASES = [
    Case(GROUP, "exact count, bfloat16, L = 2^20", lambda: pp.exact_position_counts([MILLION], "bfloat16"),
         lambda: _bfloat16_exact_count_loop(MILLION)),
    Case(GROUP, "collision_summary, bfloat16, L = 2^20", lambda: pp.collision_summary(MILLION, "bfloat16"),
         lambda: _largest_group_loop(MILLION)),
    Case(GROUP, "rope_cos_sin all_low, d = 128, 1024 positions",
         lambda: pp.rope_cos_sin(_INV_FREQ, torch.arange(1024), "all_low", "bfloat16"), _cos_sin_loop),
]
