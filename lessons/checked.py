"""Sympy-checked formulas for the lesson pages: a derivation's claim and whether its check passed.

Every check runs once per process (cached) and returns plain values, so a page can show a formula
with its verdict without running sympy itself. Wrong variants (claims as write-ups state them)
come back with sympy's verdict too.
"""

from __future__ import annotations

from typing import NamedTuple

import derivations
from lessons.base import cached


class CheckedFormula(NamedTuple):
    slug: str
    title: str
    claim: str  # LaTeX
    holds: bool  # the check passed (for a wrong variant: False means sympy refuted it, as expected)
    check: str  # what sympy checked, in words
    source: str
    said: str = ""  # wrong variants: what the write-up says (markdown)
    shows: str = ""  # wrong variants: what sympy shows instead (markdown)
    counterexample: str = ""
    counterfactual: bool = False

    @property
    def is_wrong_variant(self) -> bool:
        return bool(self.said)


@cached(max_entries=256)
def checked(slug: str, head_dim: int | None = None) -> CheckedFormula:
    """Derivation ``slug`` verified by sympy (at ``head_dim`` when it takes one; its default otherwise)."""
    derivation = derivations.get(slug)
    if derivation.parameter is not None:
        result = derivation.verify(**{derivation.parameter.name: head_dim or derivation.parameter.default})
    else:
        result = derivation.verify()
    return CheckedFormula(slug, derivation.title, derivation.claim, result.holds, result.checked, derivation.source,
                          derivation.said, derivation.shows, result.counterexample or "", derivation.counterfactual)


def variants(slug: str) -> tuple[CheckedFormula, ...]:
    """The wrong variants that refute-test claim ``slug``, each checked."""
    return tuple(checked(variant.slug) for variant in derivations.variants_of(slug))
