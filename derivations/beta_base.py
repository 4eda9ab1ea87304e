"""RoPE as a β-base number: pair j reads the j-th "digit" of the position, and how far the digits reach."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, power_zero, truth
from i18n import N_
from references import cite

TOPIC = N_("RoPE as a β-base number")

position = sp.Symbol("n", positive=True)
base, head_dim = sp.symbols("b d", positive=True)
digit = sp.Symbol("j", nonnegative=True)
beta = sp.Symbol("beta", positive=True)
stretch = sp.Symbol("lambda", positive=True)  # λ: the factor that turns base β into λβ
growth = sp.Symbol("kappa", positive=True)  # s = 1 + κ > 1: how many times longer the context becomes
beta_excess = sp.Symbol("epsilon", positive=True)  # β = 1 + ε > 1


def smallest_stretch(factor: sp.Expr, radix: sp.Expr = beta) -> sp.Expr:
    """λ_min = (s − (s − 1)/β^{d/2})^{2/d}."""
    return (factor - (factor - 1) / radix ** (head_dim / 2)) ** (2 / head_dim)


def _digits():
    radix = base ** (2 / head_dim)
    return identity(position / radix**digit, position * base ** (-2 * digit / head_dim),
                    N_("n/β^j − n·b^{−2j/d} simplifies to 0 with β = b^{2/d}, for symbolic n, b, d, j."),
                    simplifier=power_zero)


def _bound():
    factor = 1 + growth
    radix = 1 + beta_excess
    reach = (stretch * radix) ** (head_dim / 2) - 1 - factor * (radix ** (head_dim / 2) - 1)
    inside = factor - (factor - 1) / radix ** (head_dim / 2)
    at_least_one = identity(sp.factor(inside - 1), growth * (1 - radix ** (-head_dim / 2)),
                            N_("the bracket s − (s−1)/β^{d/2} equals 1 + (s−1)(1 − β^{−d/2}) ≥ 1, so its 2/d-th power "
                            "is a positive real;"), simplifier=power_zero)
    boundary = identity(reach.subs(stretch, smallest_stretch(factor, radix)), 0,
                        N_("at λ = λ_min the reach condition holds with equality;"), simplifier=power_zero)
    slope = sp.diff(reach, stretch)
    monotone = truth(slope.is_positive, slope, N_("its left side grows with λ, so it holds exactly for λ ≥ λ_min;"))
    simple_choice = identity((factor ** (2 / head_dim) * radix) ** (head_dim / 2), factor * radix ** (head_dim / 2),
                             N_("λ = s^{2/d} gives (λβ)^{d/2} = s·β^{d/2}, i.e. base s·b;"), simplifier=power_zero)
    covers = truth(sp.simplify(factor - inside - growth / radix ** (head_dim / 2)) == 0 and growth.is_positive,
                   sp.S.Zero, N_("and s^{2/d} ≥ λ_min because s ≥ s − (s−1)/β^{d/2}."))
    return all_of([at_least_one, boundary, monotone, simple_choice, covers],
                  N_("With s = 1 + κ and β = 1 + ε (κ, ε > 0) and symbolic d: the bracket is ≥ 1, the condition is an "
                  "equality at λ_min, its left side increases with λ (sympy decides the sign of the derivative), and "
                  "λ = s^{2/d} satisfies it with new base s·b."))


DIGITS = Derivation(
    slug="beta_digits",
    title=N_("Pair j of RoPE reads position n like the j-th digit in base β = b^(2/d)"),
    topic=TOPIC,
    claim=r"\frac{n}{\beta^{\,j}} = n\,\theta_j,\qquad \beta = b^{2/d},\quad \theta_j = b^{-2j/d}",
    steps=(
        Step(N_("The j-th digit of n in base β (counting from 0 on the right) divides, then wraps around."),
             r"\Big\lfloor \frac{n}{\beta^{j}} \Big\rfloor \bmod \beta"),
        Step(N_("RoPE's pair j feeds n·θ_j into cos and sin, which also wrap around (every 2π)."),
             r"\big(\cos n\theta_j,\ \sin n\theta_j\big)"),
        Step(N_("With β = b^{2/d} the two arguments are the same number: RoPE is a base-β positional system without "
                "the floor, d/2 digits long."), r"n\,\theta_j = n\, b^{-2j/d} = \frac{n}{(b^{2/d})^{j}}"),
    ),
    check=N_("Simplify n/β^j − n·b^{−2j/d} with β = b^{2/d} (positive symbols)."),
    check_function=_digits,
    source=cite("su_beta_base"),
)

BOUND = Derivation(
    slug="beta_bound",
    title=N_("Reaching s times further with d/2 digits needs λ ≥ (s − (s−1)/β^(d/2))^(2/d)"),
    topic=TOPIC,
    claim=r"(\lambda\beta)^{d/2} - 1 \ge s\left(\beta^{d/2} - 1\right) \iff "
          r"\lambda \ge \left(s - \frac{s-1}{\beta^{d/2}}\right)^{2/d}",
    steps=(
        Step(N_("d/2 digits in base β count up to β^{d/2} − 1. To count s times as far in base λβ:"),
             r"(\lambda\beta)^{d/2} - 1 \ge s\left(\beta^{d/2} - 1\right)"),
        Step(N_("Move the 1 across and divide by β^{d/2}."),
             r"\lambda^{d/2} \ge s - \frac{s-1}{\beta^{d/2}}"),
        Step(N_("Both sides are positive and t ↦ t^{2/d} is increasing, so take the 2/d-th power."),
             r"\lambda \ge \left(s - \frac{s-1}{\beta^{d/2}}\right)^{2/d}"),
        Step(N_("β^{d/2} = b is large, so the bound is close to s^{2/d}; choosing λ = s^{2/d} turns the base b into s·b. "
                "NTK-aware scaling instead matches the lowest digit to PI, λ = s^{2/(d−2)}, giving b·s^{d/(d−2)}."),
             r"\lambda = s^{2/d} \;\Rightarrow\; b' = (\lambda\beta)^{d/2} = s\,b"),
    ),
    check=N_("Substitute λ_min into the reach condition, decide the sign of its λ-derivative, check the bracket is ≥ 1, "
          "and evaluate the choice λ = s^{2/d}, all with positive symbols."),
    check_function=_bound,
    source=cite("su_beta_base"),
)

DERIVATIONS = (DIGITS, BOUND)
WRONG_VARIANTS = ()
