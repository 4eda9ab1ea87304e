"""Low-precision positions: the collision analysis at 2^20 positions, RoPE's error analysis, and the page."""

from __future__ import annotations

import functools
import struct

from benchmarks import Case
from pe_core import RopeSpec, rope_frequencies
from pe_core import precision as pp

MILLION = 1 << 20
GROUP = "precision"
PAGE_GROUP = "page: Low-precision positions"[:28]
PAGE_DEFAULTS: dict = {}
PAGE_HEAVIEST = {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "lp": "float16",
                 "zw": "256", "zn": "65400", "zdt": "float16"}
FIGURES_HEAVIEST = dict(head_dim=256, base=10_000_000.0, train_length=131_072, length=MILLION, low_dtype="float16",
                        zoom_start=65_400, zoom_width=256, zoom_dtype="float16")


def _bfloat16_exact_count_loop(length: int) -> int:
    """Naive: one position at a time. Integers below 2^24 are exact in float32, and exact in bfloat16
    exactly when the float32's low 16 bits are zero."""
    return sum(1 for m in range(length) if struct.unpack("<I", struct.pack("<f", m))[0] & 0xFFFF == 0)


def _summaries(length: int):
    return [pp.collision_summary(length, name) for name in pp.PRECISION_DTYPES]


@functools.cache
def _inv_freq(head_dim: int, base: float):
    return rope_frequencies(RopeSpec(head_dim=head_dim, base=base)).inv_freq


def _page_work(summary_length: int, **settings) -> None:
    """What the page computes and draws on a cold cache (table, every figure, serialised for the browser)."""
    from figures.precision import export_figures

    _summaries(summary_length)
    for figure in export_figures(**settings).values():
        figure.to_json()


@functools.cache
def _page_at(query: tuple):
    from tests.conftest import run_page

    return run_page("pages/precision.py", dict(query))


def _rerun(query: dict) -> None:
    at = _page_at(tuple((k, v) for k, v in query.items()))
    at.run()
    assert not at.exception, at.exception


CASES = [
    Case(GROUP, "exact count, bfloat16, L = 2^20", lambda: pp.exact_position_counts([MILLION], "bfloat16"),
         lambda: _bfloat16_exact_count_loop(MILLION)),
    Case(GROUP, "collision_summary, bfloat16, L = 2^20", lambda: pp.collision_summary(MILLION, "bfloat16")),
    Case(GROUP, "collision_summary, 4 dtypes, L = 2^20", lambda: _summaries(MILLION)),
    Case(GROUP, "first_inexact_position, 4 dtypes", lambda: [pp.first_inexact_position(n) for n in pp.PRECISION_DTYPES],
         repeats=20),
    Case(GROUP, "exact_fraction_curve, 4 dtypes, to 2^26", pp.exact_fraction_curve, repeats=20),
    Case(GROUP, "rope_precision_error d=128 L'=8192 bf16",
         lambda: pp.rope_precision_error(_inv_freq(128, 10_000.0), 8192, "bfloat16")),
    Case(GROUP, "rope_precision_error d=256 L'=2^20 fp16",
         lambda: pp.rope_precision_error(_inv_freq(256, 1e7), MILLION, "float16"), repeats=3),
    Case(PAGE_GROUP, "compute + figures, defaults (cold)", lambda: _page_work(8192), repeats=3),
    Case(PAGE_GROUP, "compute + figures, heaviest (cold)", lambda: _page_work(MILLION, **FIGURES_HEAVIEST),
         repeats=3),
    Case(PAGE_GROUP, "script rerun, defaults (warm)", lambda: _rerun(PAGE_DEFAULTS), repeats=10),
    Case(PAGE_GROUP, "script rerun, heaviest (warm)", lambda: _rerun(PAGE_HEAVIEST), repeats=10),
]
