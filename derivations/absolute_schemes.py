"""Absolute encodings beyond the table: FLOATER's ODE, multiplicative position, hierarchical decomposition,
complex-order embeddings."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match
from i18n import N_
from references import cite

TOPIC = N_("Other absolute position encodings")

t = sp.Symbol("t", real=True)
shift = sp.Symbol("n", real=True)
omega = sp.Symbol("omega", positive=True)
alpha = sp.Symbol("alpha", positive=True)
i, j = sp.symbols("i j", integer=True)
amplitude, phase = sp.symbols("r phi", real=True)


def _floater():
    p1, p2 = sp.Function("p_1"), sp.Function("p_2")
    system = [sp.Eq(p1(t).diff(t), omega * p2(t)), sp.Eq(p2(t).diff(t), -omega * p1(t))]
    solved = sp.dsolve(system, [p1(t), p2(t)], ics={p1(0): 0, p2(0): 1})
    values = {s.lhs: s.rhs for s in solved}
    unique = identity([values[p1(t)], values[p2(t)]], [sp.sin(omega * t), sp.cos(omega * t)],
                      N_("sympy's dsolve of dp/dt = A·p with p(0) = (0, 1) returns (sin ωt, cos ωt);"),
                      simplifier=lambda e: sp.simplify(sp.expand_complex(e.rewrite(sp.cos))))
    sinusoid = sp.Matrix([sp.sin(omega * t), sp.cos(omega * t)])
    generator = sp.Matrix([[0, omega], [-omega, 0]])
    solves = identity(sinusoid.diff(t), generator * sinusoid, N_("substituting back, d/dt(sin ωt, cos ωt) − A·(sin ωt, "
                      "cos ωt) is the zero vector;"))
    import torch

    from pe_core.absolute_schemes import floater_linear_positions

    positions = [0, 1, 5, 40, 100]
    computed = floater_linear_positions(torch.tensor(positions), 4, 10_000.0).reshape(-1).tolist()
    freqs = [sp.Integer(1), sp.Integer(10_000) ** sp.Rational(-1, 2)]
    exact = [f(pos * w) for pos in positions for w in freqs for f in (sp.sin, sp.cos)]
    code = numbers_match(computed, exact, N_("and pe_core's matrix-exponential solution matches sin and cos at five "
                         "positions (d = 4)."), rtol=1e-12)
    return all_of([unique, solves, code])


FLOATER = Derivation(
    slug="absolute_floater_sinusoid",
    title=N_("FLOATER: the sinusoidal encoding is the solution of dp/dt = h(p) for a linear h"),
    topic=TOPIC,
    claim=r"\frac{dp}{dt} = h(p, t),\quad h(p, t) = A\,p,\ A = \begin{pmatrix}0 & \omega\\ -\omega & 0\end{pmatrix},"
          r"\ p(0) = \begin{pmatrix}0\\1\end{pmatrix}\ \Longrightarrow\ p(t) = e^{tA}p(0) = "
          r"\begin{pmatrix}\sin\omega t\\ \cos\omega t\end{pmatrix}",
    steps=(
        Step(N_("FLOATER (Liu et al. 2020) makes the position vector a trajectory: p(t) evolves by an ODE whose right-hand "
             "side h is a small neural network, integrated to any position t."), r"p(t) = p(0) + \int_0^t h(p(\tau), \tau)\,d\tau"),
        Step(N_("Take the simplest h: linear, time-free, one 2 × 2 rotation generator per pair. The ODE is linear, so its "
             "solution is a matrix exponential, a rotation by ωt."),
             r"e^{tA} = \begin{pmatrix}\cos\omega t & \sin\omega t\\ -\sin\omega t & \cos\omega t\end{pmatrix}"),
        Step(N_("From p(0) = (0, 1) this is (sin ωt, cos ωt): the sinusoidal pair of Vaswani et al., with ωᵢ = b^(−2i/d) "
             "pair by pair. Sinusoidal encodings are one solution of FLOATER; a learned h can be others.")),
    ),
    check=N_("Solve the linear system with sympy's dsolve, substitute the sinusoid back, and compare pe_core's "
          "matrix-exponential solution with exact sin and cos."),
    check_function=_floater,
    source=cite("floater") + "; " + cite("su_position_survey"),
)


def _multiplicative():
    x0, x1 = sp.symbols("x_0 x_1", real=True)
    pair = {pos: sp.Matrix([x0 * sp.sin(pos * omega), x1 * sp.cos(pos * omega)]) for pos in (i, j)}
    score = (pair[i].T * pair[j])[0]
    split = (sp.Rational(1, 2) * (x0**2 + x1**2) * sp.cos((i - j) * omega)
             + sp.Rational(1, 2) * (x1**2 - x0**2) * sp.cos((i + j) * omega))
    form = identity(score, split, N_("(x ⊙ pᵢ)·(x ⊙ pⱼ) minus the split into (i − j) and (i + j) parts is 0 for one pair;"))
    equal = identity(score.subs(x1, x0).subs({i: i + shift, j: j + shift}), score.subs(x1, x0),
                     N_("with x₀² = x₁² a common shift of both positions changes nothing."))
    return all_of([form, equal])


MULTIPLICATIVE = Derivation(
    slug="absolute_multiplicative",
    title=N_("Multiplicative position x ⊙ p: the content decides how much of the score is relative"),
    topic=TOPIC,
    claim=r"(x\odot p_i)\cdot(x\odot p_j) = \sum_k \tfrac{x_{2k}^2 + x_{2k+1}^2}{2}\cos(i-j)\omega_k + "
          r"\sum_k \tfrac{x_{2k+1}^2 - x_{2k}^2}{2}\cos(i+j)\omega_k",
    steps=(
        Step(N_("Multiply the token by its position vector instead of adding it; with sinusoidal p the pair k of the "
             "result is (x₂ₖ sin tωₖ, x₂ₖ₊₁ cos tωₖ)."), r"x \odot p_t"),
        Step(N_("The dot product of two positions splits, by product-to-sum, into a part in i − j and a part in i + j "
             "whose weight is the difference of the token's two coordinates in that pair."),
             r"x_0^2\sin i\omega\sin j\omega + x_1^2\cos i\omega\cos j\omega = \tfrac{x_0^2+x_1^2}{2}\cos(i-j)\omega "
             r"+ \tfrac{x_1^2-x_0^2}{2}\cos(i+j)\omega"),
        Step(N_("So position and content are entangled: the same two positions look closer or further apart depending "
             "on the token, and the score is relative only for tokens with x₂ₖ² = x₂ₖ₊₁².")),
    ),
    check=N_("Expand one pair with symbolic x₀, x₁, i, j, ω and subtract the split; set x₁ = x₀ and shift both positions."),
    check_function=_multiplicative,
    source=cite("su_position_survey"),
)


def _hierarchical():
    size = 3
    p = [sp.Matrix(sp.symbols(f"p_{k}_0:2", real=True)) for k in range(size)]
    u = [(pk - alpha * p[0]) / (1 - alpha) for pk in p]

    def q(first: int, second: int) -> sp.Matrix:
        return alpha * u[first] + (1 - alpha) * u[second]

    keeps = identity([entry for k in range(size) for entry in q(0, k)], [entry for k in range(size) for entry in p[k]],
                     N_("the first n extended positions q₀ … q_{n−1} equal p₀ … p_{n−1} (n = 3, 2-D vectors);"),
                     simplifier=sp.simplify)
    swap = identity(list(q(1, 2) - q(2, 1)), list((2 * alpha - 1) * (u[1] - u[2])),
                    N_("q_{(i,j)} − q_{(j,i)} = (2α − 1)(uᵢ − uⱼ);"), simplifier=sp.simplify)
    import torch

    from pe_core.absolute_schemes import hierarchical_positions

    table = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, -1.0]])
    computed = hierarchical_positions(table, 0.4, 9).reshape(-1).tolist()
    values = {symbol: sp.Rational(value) for k in range(size)
              for symbol, value in zip(p[k], table[k].tolist(), strict=True)}
    exact = [entry.subs(values).subs(alpha, sp.Rational(2, 5))
             for a in range(size) for b in range(size) for entry in q(a, b)]
    code = numbers_match(computed, exact, N_("and pe_core.absolute_schemes.hierarchical_positions matches at α = 0.4."))
    return all_of([keeps, swap, code])


HIERARCHICAL = Derivation(
    slug="absolute_hierarchical",
    title=N_("Hierarchical decomposition extends n learned positions to n² and keeps the first n exactly"),
    topic=TOPIC,
    claim=r"q_{i\cdot n + j} = \alpha\,u_i + (1-\alpha)\,u_j,\quad u_i = \frac{p_i - \alpha p_0}{1-\alpha}"
          r"\ \Longrightarrow\ q_k = p_k\ (k < n),\qquad q_{(i,j)} - q_{(j,i)} = (2\alpha - 1)(u_i - u_j)",
    steps=(
        Step(N_("Write a position k < n² in base n as k = i·n + j and build its vector from two basis vectors: "
             "α of the 'high digit' and 1 − α of the 'low digit'."), r"q_{i\cdot n+j} = \alpha u_i + (1-\alpha)u_j"),
        Step(N_("Choose the basis so that the positions with high digit 0 are the trained ones: i = 0 gives "
             "αu₀ + (1 − α)uⱼ = pⱼ when u₀ = p₀ and uⱼ = (pⱼ − αp₀)/(1 − α)."),
             r"\alpha p_0 + (1-\alpha)\frac{p_j - \alpha p_0}{1-\alpha} = p_j"),
        Step(N_("Swapping the digits changes the vector by (2α − 1)(uᵢ − uⱼ), so α must not be 1/2 (Su uses α = 0.4). "
             "BERT's 512 positions become 512² = 262,144.")),
    ),
    check=N_("Build q from symbolic p₀, p₁, p₂ and α; compare the first n with p, the swapped digits, and pe_core at "
          "α = 0.4."),
    check_function=_hierarchical,
    source=cite("su_hierarchical"),
)

def _complex_order():
    def f(position: sp.Expr) -> sp.Expr:
        return amplitude * sp.exp(sp.I * (omega * position + phase))

    shifted = identity(sp.expand_complex(f(t + shift)), sp.expand_complex(f(t) * sp.exp(sp.I * omega * shift)),
                       N_("f(t + n) − f(t)·e^{iωn} is 0 (one dimension, symbolic r, ω, φ);"))
    bounded = identity(sp.expand_complex(f(t) * sp.conjugate(f(t))), amplitude**2, N_("|f(t)|² = r²;"),
                       simplifier=lambda e: sp.simplify(sp.expand(e)))
    t2 = sp.Symbol("t_2", real=True)
    inner = identity(sp.re(sp.expand_complex(f(t) * sp.conjugate(f(t2)))), amplitude**2 * sp.cos(omega * (t - t2)),
                     N_("and Re[f(t)·conj f(t₂)] = r² cos ω(t − t₂)."))
    return all_of([shifted, bounded, inner])


COMPLEX_ORDER = Derivation(
    slug="absolute_complex_order",
    title=N_("Complex-order embeddings: moving a word by n multiplies it by e^{iωn}, whatever its position"),
    topic=TOPIC,
    claim=r"f(w, t) = r_w \odot e^{\,i(\omega_w t + \varphi_w)}:\quad f(w, t + n) = f(w, t)\odot e^{\,i\omega_w n},"
          r"\quad |f(w, t)| = r_w,\quad \operatorname{Re}\langle f(w, t), f(w, t_2)\rangle = "
          r"\sum_k r_{w,k}^2\cos\omega_{w,k}(t - t_2)",
    steps=(
        Step(N_("Wang et al. 2020 give every word an amplitude r, a frequency ω and an initial phase φ per dimension; "
             "position t turns each phase by ωt."), r"f(w, t)_k = r_{w,k}\,e^{\,i(\omega_{w,k}t + \varphi_{w,k})}"),
        Step(N_("A shift by n is a multiplication by e^{iωn} that does not depend on t: a position-free linear map, the "
             "property the paper asks for."), r"f(w, t+n) = f(w, t)\odot e^{\,i\omega_w n}"),
        Step(N_("The amplitude is untouched (bounded), and the same word at two positions has a real inner product that "
             "depends on the offset only. Different words have different ω, so across words it is not relative.")),
    ),
    check=N_("Expand the shift, the modulus and the inner product for one dimension with symbolic r, ω, φ."),
    check_function=_complex_order,
    source=cite("complex_order"),
)

DERIVATIONS = (FLOATER, MULTIPLICATIVE, HIERARCHICAL, COMPLEX_ORDER)
WRONG_VARIANTS = ()
