"""Timings for the sympy derivations against plain simplification.

"Cold" cases clear sympy's own expression cache first, so they measure what a first page load
after a server start pays; ``lessons.derivations.verification`` caches every verdict after that.
The lesson's figures are timed by ``bench_lessons`` and the page by ``bench_pages``.
"""

from __future__ import annotations

from functools import partial

import sympy as sp
from sympy.core.cache import clear_cache

import derivations
from benchmarks import Case
from derivations import base, rope_blocks

GROUP = "derivations"


def _verify_all() -> None:
    clear_cache()
    for derivation in derivations.DERIVATIONS + derivations.WRONG_VARIANTS:
        derivation.verify()


def _verify_topic(topic: str) -> None:
    clear_cache()
    for derivation in derivations.REGISTRY[topic]:
        derivation.verify()
        for variant in derivations.variants_of(derivation.slug):
            variant.verify()


def _block_residual(simplifier, d: int = 8) -> None:
    clear_cache()
    m, n = rope_blocks.m, rope_blocks.n
    rotate = rope_blocks.block_rotation
    residual = rotate(m, d).T * rotate(n, d) - rotate(n - m, d)
    assert residual.applyfunc(simplifier).is_zero_matrix


CASES = [
    Case(GROUP, f"verify all {len(derivations.DERIVATIONS)} claims + {len(derivations.WRONG_VARIANTS)} variants (cold)",
         _verify_all, repeats=1),
    *[Case(GROUP, f"verify topic: {topic}"[:52], partial(_verify_topic, topic), repeats=2)
      for topic in derivations.TOPICS],
    Case(GROUP, "R_mᵀR_n = R_(n−m), d = 8: expand_trig vs simplify", partial(_block_residual, base.trig_zero),
         baseline=partial(_block_residual, sp.simplify), repeats=3),
]
