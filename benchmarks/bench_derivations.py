"""Timings for the sympy derivations and their page.

"Cold" cases clear sympy's own expression cache first, so they measure what a first page load
after a server start pays; the page's st.cache_data makes every later load a cache hit.
"""

from __future__ import annotations

from functools import partial

import sympy as sp
from sympy.core.cache import clear_cache

import derivations
from benchmarks import Case
from derivations import base, rope_blocks

GROUP = "derivations"
PAGE_GROUP = "page: derivations"
PAGE = "pages/maths.py"


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


def _figures() -> None:
    from figures.derivations import export_figures

    export_figures()


def _page_cases() -> list[Case]:
    import streamlit as st

    from tests.conftest import run_page

    default = run_page(PAGE)
    heaviest = run_page(PAGE, {"d": "8"})

    def rerun(at) -> None:
        at.run()
        assert not at.exception, at.exception

    def cold() -> None:
        st.cache_data.clear()
        clear_cache()
        at = run_page(PAGE)
        assert not at.exception, at.exception

    return [
        Case(PAGE_GROUP, "script rerun at defaults (caches warm)", partial(rerun, default), repeats=10),
        Case(PAGE_GROUP, "script rerun at d = 8 (caches warm)", partial(rerun, heaviest), repeats=10),
        Case(PAGE_GROUP, "first load: st + sympy caches cleared", cold, repeats=1),
    ]


CASES = [
    Case(GROUP, f"verify all {len(derivations.DERIVATIONS)} claims + {len(derivations.WRONG_VARIANTS)} variants (cold)",
         _verify_all, repeats=1),
    *[Case(GROUP, f"verify topic: {topic}"[:52], partial(_verify_topic, topic), repeats=2)
      for topic in derivations.TOPICS],
    Case(GROUP, "R_mᵀR_n = R_(n−m), d = 8: expand_trig vs simplify", partial(_block_residual, base.trig_zero),
         baseline=partial(_block_residual, sp.simplify), repeats=3),
    Case(GROUP, "figures: export_figures() at defaults", _figures, repeats=5),
    *_page_cases(),
]
