"""Core RoPE engine timings."""

from __future__ import annotations

from benchmarks import Case
from pe_core import METHODS, RopeSpec, method_setup, rope_frequencies, rotation_angles


def _all_methods():
    for method in METHODS:
        method_setup(method, 128, 10000.0, 4096, 32768).frequencies()


def _angles_big():
    inv_freq = rope_frequencies(RopeSpec(head_dim=256)).inv_freq
    return rotation_angles(inv_freq, range(0, 1_048_576, 64))


def _angles_big_loop():
    inv_freq = rope_frequencies(RopeSpec(head_dim=256)).inv_freq.tolist()
    return [[m * t for t in inv_freq] for m in range(0, 1_048_576, 64)]


CASES = [
    Case("core", "rope_frequencies: all 9 methods, d=128", _all_methods, repeats=20),
    Case("core", "rotation_angles: d=256, 16k sampled positions of 2^20", _angles_big, _angles_big_loop),
]
