"""Every formula the app teaches, derived step by step and verified with sympy.

Each derivation is a :class:`Derivation`: a title, a claim (LaTeX), steps (prose + LaTeX), what
sympy checks, and ``verify()`` returning a :class:`Verification` (holds, residual, checked).
*Wrong variants* are claims as popular write-ups state them; their ``verify()`` returns
``holds=False`` and the page shows them next to the claim they get wrong.

No user text is ever parsed: every expression is built from sympy symbols in code.
"""

from __future__ import annotations

from types import ModuleType

from derivations import (
    absolute_schemes,
    alibi,
    beta_base,
    caveats,
    context_extension,
    decay,
    relative_lineage,
    rope_2d,
    rope_blocks,
    rope_code,
    rope_from_relative,
    sinusoidal,
    yarn,
)
from derivations.base import Derivation, Parameter, Step, Verification

_TOPIC_MODULES: tuple[ModuleType, ...] = (
    rope_2d, rope_blocks, rope_from_relative, sinusoidal, context_extension, yarn, decay, beta_base, alibi,
    relative_lineage, absolute_schemes, rope_code, caveats,
)

TOPICS: tuple[str, ...] = tuple(module.TOPIC for module in _TOPIC_MODULES)

# topic -> the derivations that hold, in reading order
REGISTRY: dict[str, tuple[Derivation, ...]] = {module.TOPIC: module.DERIVATIONS for module in _TOPIC_MODULES}

DERIVATIONS: tuple[Derivation, ...] = tuple(d for module in _TOPIC_MODULES for d in module.DERIVATIONS)
WRONG_VARIANTS: tuple[Derivation, ...] = tuple(d for module in _TOPIC_MODULES for d in module.WRONG_VARIANTS)

_BY_SLUG: dict[str, Derivation] = {d.slug: d for d in DERIVATIONS + WRONG_VARIANTS}


def get(slug: str) -> Derivation:
    """The derivation (or wrong variant) with this slug; other pages use it to show a verified formula."""
    try:
        return _BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"no derivation named {slug!r}; known: {', '.join(sorted(_BY_SLUG))}") from None


def variants_of(slug: str) -> tuple[Derivation, ...]:
    """The wrong variants that refute-test the derivation ``slug``."""
    return tuple(v for v in WRONG_VARIANTS if v.refutes == slug)


__all__ = [
    "DERIVATIONS", "Derivation", "Parameter", "REGISTRY", "Step", "TOPICS", "Verification", "WRONG_VARIANTS", "get",
    "variants_of",
]
