"""θ-heatmap core timings against a naive loop (the lesson and page are timed by bench_lessons / bench_pages)."""

from __future__ import annotations

from benchmarks import Case
from pe_core import method_setup, rope_frequencies
from pe_core.angles import method_angles, sampled_positions

GROUP = "core: frequencies"


def _dynamic_setup():
    return method_setup("dynamic", 256, 10_000.0, 131_072, 1 << 20)


def _dynamic_rows():
    return method_angles(_dynamic_setup(), sampled_positions(1 << 20, 300), length_so_far=True)


def _dynamic_rows_loop():
    """One rope_frequencies call per row and Python loops over pairs, as a first attempt would do."""
    spec = _dynamic_setup().spec
    rows = []
    for m in sampled_positions(1 << 20, 300).tolist():
        theta = rope_frequencies(spec, m + 1).inv_freq.tolist()
        rows.append([m * t for t in theta])
    return rows


CASES = [
    Case(GROUP, "dynamic NTK rows as generated: d=256, 300 of 2^20", _dynamic_rows, _dynamic_rows_loop, repeats=10),
]
