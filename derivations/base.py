"""What a derivation is, what verifying it returns, and the few sympy helpers every topic shares.

A derivation states a claim, shows the steps that lead to it, and checks the claim with sympy:
``verify()`` builds the two sides from symbols (never from text), simplifies their difference
and reports whether it vanished, together with that residual. When the residual does not
vanish, a numeric witness is searched so a refuted claim comes with a concrete counterexample.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import sympy as sp

from i18n import N_, Deferred, _


@dataclass(frozen=True)
class Step:
    """One step of a derivation: a sentence saying what happens, and usually the formula."""

    text: str
    latex: str = ""


@dataclass(frozen=True)
class Parameter:
    """A small integer the reader may choose (e.g. the head dimension d of a block-diagonal proof)."""

    name: str
    label: str
    options: tuple[int, ...]
    default: int


@dataclass(frozen=True)
class Verification:
    """The result of checking a claim: whether it holds, what was left over, and what was checked."""

    holds: bool
    residual: object  # a sympy expression, matrix or set; 0 (or empty) when the claim holds
    checked: str
    counterexample: str | None = None

    @property
    def residual_latex(self) -> str:
        residual = self.residual
        if isinstance(residual, sp.MatrixBase) and residual.cols == 1 and residual.rows > 1:
            # a column of residuals reads better as a transposed row
            return r"\left(" + ",\\; ".join(sp.latex(entry) for entry in residual) + r"\right)^{\top}"
        return sp.latex(residual)


@dataclass(frozen=True)
class Derivation:
    """A claim, its steps, and a sympy check of it.

    A *wrong variant* (``refutes`` set) is a claim as some write-up states it; its ``verify()``
    is expected to return ``holds=False``, and the page shows it next to the claim it gets wrong.
    """

    slug: str
    title: str
    topic: str
    claim: str  # LaTeX
    steps: tuple[Step, ...]
    check: str  # what sympy checks, in words
    check_function: Callable[..., Verification] = field(repr=False, compare=False)
    parameter: Parameter | None = None
    source: str = ""
    notes: tuple[str, ...] = ()  # polite remarks on how popular write-ups state this (markdown)
    refutes: str | None = None  # for a wrong variant: the slug of the claim it gets wrong
    said: str = ""  # for a wrong variant: what the write-up says (markdown)
    shows: str = ""  # for a wrong variant: what sympy shows instead (markdown)
    counterfactual: bool = False  # a wrong variant made up to show why the claim needs its assumption

    @property
    def is_wrong_variant(self) -> bool:
        return self.refutes is not None

    def parameter_value(self, values: Mapping[str, int] | None = None) -> int | None:
        if self.parameter is None:
            return None
        value = (values or {}).get(self.parameter.name, self.parameter.default)
        if value not in self.parameter.options:
            options = ", ".join(map(str, self.parameter.options))
            raise ValueError(_("{label} must be one of {options} (got {value!r}).").format(
                label=_(self.parameter.label), options=options, value=value))
        return value

    def verify(self, **values: int) -> Verification:
        """Check the claim with sympy (``values`` sets the parameter, e.g. ``d=6``)."""
        if self.parameter is None:
            if values:
                raise ValueError(f"{self.title!r} takes no parameter (got {', '.join(values)}).")
            return self.check_function()
        return self.check_function(**{self.parameter.name: self.parameter_value(values)})


# --- simplification ------------------------------------------------------------------------------


def _pythagoras(expr: sp.Expr) -> sp.Expr:
    """Replace sin(a)² by 1 − cos(a)², so sin² + cos² = 1 cancels under plain expansion."""
    squares = {power: 1 - sp.cos(power.base.args[0]) ** 2
               for power in expr.atoms(sp.Pow) if isinstance(power.base, sp.sin) and power.exp == 2}
    return sp.expand(expr.xreplace(squares)) if squares else expr


def trig_zero(expr: sp.Expr) -> sp.Expr:
    """Expand angle sums and products, then use sin² + cos² = 1: fast, and decisive for rotation algebra."""
    expanded = sp.expand(sp.expand_trig(sp.expand(expr)))
    return _pythagoras(expanded)


def power_zero(expr: sp.Expr) -> sp.Expr:
    """Combine powers and logarithms, then simplify.

    Every base these derivations raise to a power is a positive real (a RoPE base, a scale, a
    length), where (x^a)^b = x^{ab} always holds; ``force`` applies that rule even when sympy
    cannot tell that an exponent such as d/(d − 2) is real.
    """
    combined = sp.powdenest(sp.expand_power_base(sp.expand_log(expr, force=True), force=True), force=True)
    return sp.simplify(sp.powsimp(combined, force=True))


def _apply(simplifier: Callable[[sp.Expr], sp.Expr], expr):
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(simplifier)
    return simplifier(expr)


def _is_zero(residual) -> bool:
    if isinstance(residual, sp.MatrixBase):
        return bool(residual.is_zero_matrix)
    return residual == 0


# --- numeric witnesses ---------------------------------------------------------------------------

# Values with no special relations between them (not multiples of π, all > 1 so logarithms stay
# positive), used to evaluate a residual that did not simplify to zero.
_WITNESS_VALUES = (sp.Rational(7, 3), sp.Rational(11, 5), sp.Rational(13, 4), sp.Rational(17, 6),
                   sp.Rational(19, 7), sp.Rational(23, 9), sp.Rational(29, 8), sp.Rational(31, 10),
                   sp.Rational(37, 11), sp.Rational(41, 12), sp.Rational(43, 13), sp.Rational(47, 14))


def _free_symbols(expr) -> list[sp.Symbol]:
    return sorted(getattr(expr, "free_symbols", set()), key=lambda s: s.name)


def _witness_value(symbol: sp.Symbol, index: int):
    if symbol.is_integer:
        return 3 + 2 * index  # odd integers ≥ 3: clear of the edge cases 0, 1, 2
    return _WITNESS_VALUES[index % len(_WITNESS_VALUES)]


def numeric_witness(residual, substitutions: Mapping | None = None) -> str | None:
    """A point where the residual is clearly non-zero, described in words; None if none was found."""
    point = dict(substitutions or {})
    for index, symbol in enumerate(s for s in _free_symbols(residual) if s not in point):
        point[symbol] = _witness_value(symbol, index)
    try:
        value = residual.xreplace(point) if point else residual
        if isinstance(value, sp.MatrixBase):
            entries = [complex(sp.N(v, 30)) for v in value]
            size = max((abs(v) for v in entries), default=0.0)
            shown = Deferred(N_("largest entry of the residual ≈ {value}"), value=f"{size:.4g}")
        else:
            number = complex(sp.N(value, 30))
            size = abs(number)
            shown = Deferred(N_("residual ≈ {value}"), value=_format_number(number))
    except (TypeError, ValueError, AttributeError):
        return None
    if size < 1e-12:
        return None
    where = ", ".join(f"{sp.latex(k)} = {sp.latex(v)}" for k, v in sorted(point.items(), key=lambda kv: kv[0].name))
    return Deferred(N_("at {where}: {shown}"), where=f"${where}$", shown=shown) if where else shown


def _format_number(number: complex) -> str:
    if abs(number.imag) < 1e-15 * max(1.0, abs(number.real)):
        return f"{number.real:.6g}"
    return f"{number.real:.6g} {'+' if number.imag >= 0 else '−'} {abs(number.imag):.6g}i"


# --- building verifications ---------------------------------------------------------------------


def identity(lhs, rhs, checked: str, *, simplifier: Callable[[sp.Expr], sp.Expr] = trig_zero,
             witness: Mapping | None = None) -> Verification:
    """Check ``lhs == rhs`` (expressions or matrices) by simplifying their difference to zero."""
    if isinstance(lhs, (list, tuple)):
        lhs, rhs = sp.Matrix(lhs), sp.Matrix(rhs)
    residual = _apply(simplifier, lhs - rhs)
    if _is_zero(residual):
        return Verification(True, sp.S.Zero, checked)
    return Verification(False, _tidy(residual), checked, numeric_witness(residual, witness))


def _tidy(residual):
    """A shorter form of a non-zero residual for display (only small ones: simplify can be slow)."""
    if isinstance(residual, sp.MatrixBase) or sp.count_ops(residual) > 40:
        return residual
    tidier = sp.factor(sp.trigsimp(residual) if residual.has(sp.sin, sp.cos) else residual)
    return tidier if sp.count_ops(tidier) < sp.count_ops(residual) else residual


def all_of(parts: Iterable[Verification], checked: str | None = None) -> Verification:
    """Several checks that together make one claim: it holds when every part does."""
    parts = list(parts)
    holds = all(p.holds for p in parts)
    failing = [p for p in parts if not p.holds]
    residual = sp.Matrix([sp.S.Zero if p.holds else _scalar(p.residual) for p in parts])
    if holds:
        residual = sp.S.Zero
    counterexample = next((p.counterexample for p in failing if p.counterexample), None)
    text = checked or Deferred.join(p.checked for p in parts)
    return Verification(holds, residual, text, counterexample)


def _scalar(residual):
    if isinstance(residual, sp.MatrixBase):
        nonzero = [entry for entry in residual if entry != 0]
        return nonzero[0] if nonzero else sp.S.Zero
    if isinstance(residual, sp.Set):
        return sp.Symbol(r"\text{" + _plain(sp.latex(residual)) + "}")
    return residual


def _plain(text: str) -> str:
    return re.sub(r"[{}\\]", "", text)


def truth(holds: bool, residual, checked: str, counterexample: str | None = None) -> Verification:
    """A verification for checks that are not an identity (inequalities, solved equations, sets)."""
    return Verification(bool(holds), residual, checked, None if holds else counterexample)


def numbers_match(computed: Iterable[float], exact: Iterable, checked: str, *, rtol: float = 1e-12) -> Verification:
    """Compare numbers from the app's own code (pe_core) with sympy's exact values, to ``rtol``."""
    computed = [float(v) for v in computed]
    exact = list(exact)
    values = {e: float(sp.N(e, 30)) for e in set(exact)}  # many entries repeat (e.g. ALiBi slopes)
    expected = [values[e] for e in exact]
    if len(computed) != len(expected):
        return Verification(False, sp.Integer(len(computed) - len(expected)), checked,
                            Deferred(N_("{computed} values computed, {expected} expected"), computed=len(computed),
                                     expected=len(expected)))
    errors = [abs(c - e) / max(abs(e), 1e-300) for c, e in zip(computed, expected, strict=True)]
    worst = max(errors, default=0.0)
    if worst <= rtol:
        return Verification(True, sp.S.Zero, checked)
    index = errors.index(worst)
    return Verification(False, sp.Float(worst, 6), checked,
                        Deferred(N_("entry {index}: the code gives {code}, sympy {exact}"), index=index,
                                 code=f"{computed[index]:.17g}", exact=f"{expected[index]:.17g}"))
