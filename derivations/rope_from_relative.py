"""Deriving RoPE: ask for a score that depends on m − n only, and the rotation e^{imθ} is forced."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numeric_witness, truth
from i18n import N_, Latex
from references import cite

TOPIC = N_("Deriving RoPE from relative positions")

m, n, theta = sp.symbols("m n theta", real=True)
rho_q, rho_k = sp.symbols("rho_q rho_k", positive=True)
alpha, beta = sp.symbols("alpha beta", real=True)
phase = sp.Function("phi")


def encode(radius: sp.Expr, angle: sp.Expr, position: sp.Expr, position_phase) -> sp.Expr:
    """f(q, m) = |q| e^{i(Θ(q) + φ(m))}: keep the length, add a position-dependent phase."""
    return radius * sp.exp(sp.I * (angle + position_phase(position)))


def _relative_only(position_phase) -> sp.Expr:
    """(∂_m + ∂_n) of f(q,m) f*(k,n): zero exactly when the product depends on m − n only."""
    product = encode(rho_q, alpha, m, position_phase) * sp.conjugate(encode(rho_k, beta, n, position_phase))
    return sp.simplify(sp.diff(product, m) + sp.diff(product, n))


def _linear_phase():
    solved = sp.rsolve(phase(m) - phase(m - 1) - theta, phase(m), {phase(0): 0})
    recurrence = identity(solved, m * theta, N_("the recurrence φ(m) − φ(m−1) = θ with φ(0) = 0 solves to φ(m) = mθ;"))
    linear = lambda position: position * theta  # noqa: E731 - the phase the recurrence produced
    relative = truth(_relative_only(linear) == 0, _relative_only(linear),
                     N_("(∂_m + ∂_n)[f(q,m) f*(k,n)] = 0, so the product depends on m − n only;"))
    start = identity(encode(rho_q, alpha, 0, linear), rho_q * sp.exp(sp.I * alpha), N_("f(q, 0) = q;"))
    length = identity(sp.Abs(encode(rho_q, alpha, m, linear)), rho_q, N_("and |f(q, m)| = |q|."),
                      simplifier=sp.simplify)
    return all_of([recurrence, relative, start, length])


def _quadratic_phase():
    residual = _relative_only(lambda position: theta * position**2)
    return truth(residual == 0, residual, N_("sympy computes (∂_m + ∂_n)[f(q,m) f*(k,n)] with φ(m) = θm²."),
                 numeric_witness(residual))


LINEAR_PHASE = Derivation(
    slug="relative_linear_phase",
    title=N_("Requiring f(q,m)·f*(k,n) = g(q,k,m−n) forces φ(m) = mθ, i.e. RoPE"),
    topic=TOPIC,
    claim=r"f(q,m)\,f^{*}(k,n) = g(q,k,m-n),\; f(q,0) = q \quad\Longrightarrow\quad f(q,m) = q\,e^{im\theta}",
    steps=(
        Step(N_("Write every complex number in polar form: a length R and an angle Θ."),
             r"f(q,m) = R_f(q,m)\,e^{i\Theta_f(q,m)},\qquad g(q,k,m-n) = R_g(q,k,m-n)\,e^{i\Theta_g(q,k,m-n)}"),
        Step(N_("The conjugate flips the sign of k's angle, so lengths multiply and angles subtract."),
             r"R_f(q,m)R_f(k,n) = R_g(q,k,m-n),\qquad \Theta_f(q,m) - \Theta_f(k,n) = \Theta_g(q,k,m-n)"),
        Step(N_("Set n = m and use the initial condition f(q,0) = q: the length never changes."),
             r"R_f(q,m)R_f(k,m) = R_g(q,k,0) = \lVert q\rVert\,\lVert k\rVert \;\Rightarrow\; "
             r"R_f(q,m) = \lVert q\rVert"),
        Step(N_("With n = m the angles give a quantity that is the same for q and for k: call it φ(m)."),
             r"\Theta_f(q,m) - \Theta(q) = \Theta_f(k,m) - \Theta(k) =: \varphi(m),\qquad \varphi(0) = 0"),
        Step(N_("Now take n = m − 1: the step φ(m) − φ(m−1) does not depend on m, so φ is arithmetic."),
             r"\varphi(m) - \varphi(m-1) = \Theta_g(q,k,1) + \Theta(k) - \Theta(q) =: \theta"),
        Step(N_("Solve the recurrence, and put length and angle back together."),
             r"\varphi(m) = m\theta \;\Rightarrow\; f(q,m) = \lVert q\rVert e^{i(\Theta(q) + m\theta)} = "
             r"q\,e^{im\theta}"),
    ),
    check=N_("Solve the recurrence with sympy's rsolve; then, for f(q,m) = q e^{imθ}, check that (∂_m + ∂_n) of "
          "f(q,m)f*(k,n) vanishes, that f(q,0) = q and that |f(q,m)| = |q| (q, k in polar form with free symbols)."),
    check_function=_linear_phase,
    source=f"{cite('roformer', '§3.4.1')}; {cite('su_rope')}.",
)

QUADRATIC_PHASE = Derivation(
    slug="relative_quadratic_phase",
    title=N_("What if the phase grew like m²?"),
    topic=TOPIC,
    claim=Latex(r"f(q,m) = q\,e^{i\theta m^2}\ \ \text{also gives}\ \ f(q,m)f^{*}(k,n) = g(q,k,m-n)",
                N_("also gives")),
    steps=(),
    check=N_("Differentiate the product along m = n (∂_m + ∂_n) with φ(m) = θm²."),
    check_function=_quadratic_phase,
    source=N_("A counterfactual, to show why the arithmetic-sequence step matters."),
    refutes="relative_linear_phase",
    said=N_("any phase that grows with position would do, for example $\\varphi(m) = \\theta m^2$."),
    shows=N_("$\\theta m^2 - \\theta n^2 = \\theta(m-n)(m+n)$ depends on $m + n$ too, so the score would change when both "
             "tokens move together; only a linear phase is relative."),
    counterfactual=True,
)

DERIVATIONS = (LINEAR_PHASE,)
WRONG_VARIANTS = (QUADRATIC_PHASE,)
