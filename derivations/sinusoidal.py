"""The sinusoidal encoding of "Attention is all you need": shifts are rotations, dot products see only k."""

from __future__ import annotations

import math

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, truth
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("Sinusoidal encoding")

t, k = sp.symbols("t k", real=True)
omega = sp.Symbol("omega", positive=True)
i = sp.Symbol("i", integer=True, nonnegative=True)
pairs = sp.Symbol("N", integer=True, positive=True)  # N = d/2
omegas = sp.IndexedBase("omega", positive=True)
base = sp.Symbol("b", positive=True)
head_dim = sp.Symbol("d", positive=True)
excess = sp.Symbol("epsilon", positive=True)  # b = 1 + ε > 1


def encoding_pair(position: sp.Expr, frequency: sp.Expr) -> sp.Matrix:
    """(PE(t, 2i), PE(t, 2i+1)) = (sin tω_i, cos tω_i)."""
    return sp.Matrix([sp.sin(position * frequency), sp.cos(position * frequency)])


def shift_matrix(offset: sp.Expr, frequency: sp.Expr) -> sp.Matrix:
    """The 2 × 2 map taking PE(t) to PE(t + k) in one pair; its entries are PE(k)'s."""
    sin_k, cos_k = sp.sin(offset * frequency), sp.cos(offset * frequency)
    return sp.Matrix([[cos_k, sin_k], [-sin_k, cos_k]])


def _linear_shift():
    shift = shift_matrix(k, omega)
    maps = identity(encoding_pair(t + k, omega), shift * encoding_pair(t, omega),
                    N_("PE(t+k) − M_k PE(t) is the zero vector for symbolic t, k, ω;"))
    rotation = identity(shift.T * shift, sp.eye(2), N_("M_kᵀM_k = I (a rotation);"))
    independent = truth(t not in shift.free_symbols, sp.S.Zero, N_("and M_k contains no t."))
    return all_of([maps, rotation, independent])


def _dot_product():
    left, right = encoding_pair(t, omegas[i]), encoding_pair(t + k, omegas[i])
    summand = (left.T * right)[0] - sp.cos(k * omegas[i])
    residual = sp.Sum(identity(summand, sp.S.Zero, "").residual, (i, 0, pairs - 1)).doit()
    even = identity(sp.cos(-k * omegas[i]), sp.cos(k * omegas[i]), "")
    holds = residual == 0 and even.holds
    return truth(holds, residual, N_("For a symbolic number of pairs N = d/2 and free frequencies ω_i, sympy reduces "
                 "Σ_i [PE(t,2i)PE(t+k,2i) + PE(t,2i+1)PE(t+k,2i+1) − cos kω_i] to 0, and cos(−kω_i) = cos kω_i."))


def wavelength(pair_index: sp.Expr, base_value: sp.Expr = base) -> sp.Expr:
    """λ_i = 2π b^{2i/d}: tokens per full turn of pair i (both dimensions 2i and 2i + 1)."""
    return 2 * sp.pi * base_value ** (2 * pair_index / head_dim)


def _periods():
    larger_base = 1 + excess
    growth = sp.diff(wavelength(i, larger_base), i)
    increasing = truth(growth.is_positive, growth, N_("dλ_i/di > 0 when b > 1;"))
    shortest = identity(wavelength(0), 2 * sp.pi, N_("λ_0 = 2π;"))
    longest = identity(wavelength(head_dim / 2 - 1), 2 * sp.pi * base ** (1 - 2 / head_dim),
                       N_("λ_{d/2−1} = 2π b^{1−2/d};"), simplifier=sp.simplify)
    ratio = sp.simplify(wavelength(head_dim / 2 - 1, larger_base) / (2 * sp.pi * larger_base))
    below_2pi_b = truth(sp.expand_log(sp.log(ratio)).is_negative, ratio,
                        N_("and λ_{d/2−1} / (2πb) = b^{−2/d} < 1 for b > 1."))
    return all_of([increasing, shortest, longest, below_2pi_b])


def _period_range():
    return identity(wavelength(head_dim / 2 - 1), 2 * sp.pi * base,
                    N_("sympy subtracts 2πb from the longest wavelength 2π b^{(d−2)/d}."), simplifier=sp.simplify,
                    witness={base: 10_000, head_dim: 512})


def _period_shrinks():
    growth = sp.diff(wavelength(i, 1 + excess), i)
    opposite = N_("sympy proves dλ_i/di > 0: λ_i grows with i for every b > 1") if growth.is_positive else None
    return truth(growth.is_negative, growth, N_("sympy decides the sign of dλ_i/di for b = 1 + ε > 1."), opposite)


def _first_increase(head_dim_value: int, base_value: float, search: int = 200) -> int | None:
    """First offset k where Σ cos(kω_i) goes up, found in floating point (then confirmed exactly)."""
    frequencies = [base_value ** (-2 * p / head_dim_value) for p in range(head_dim_value // 2)]

    def total(offset: int) -> float:
        return math.fsum(math.cos(offset * w) for w in frequencies)

    return next((offset for offset in range(search) if total(offset + 1) > total(offset)), None)


def _monotone_decay():
    head_dim_value, base_value = 128, 10_000
    offset = _first_increase(head_dim_value, base_value)
    if offset is None:
        return truth(True, sp.S.Zero, N_("No increase found among the first 200 offsets."))
    frequencies = [sp.Integer(base_value) ** sp.Rational(-2 * p, head_dim_value) for p in range(head_dim_value // 2)]
    value = [sp.Add(*[sp.cos(off * w) for w in frequencies]) for off in (offset, offset + 1)]
    rise = sp.N(value[1] - value[0], 30)
    return truth(rise <= 0, rise,
                 Deferred(N_("With d = {d}, b = {base}: sympy evaluates Σ cos(kω_i) at k = {k} and k = {next} to 30 "
                             "digits."), d=head_dim_value, base=base_value, k=offset, next=offset + 1),
                 Deferred(N_("at d = {d}, b = {base}: Σcos(kω_i) is {first} at k = {k} and {second} at k = {next}"),
                          d=head_dim_value, base=base_value, first=sp.N(value[0], 8), k=offset,
                          second=sp.N(value[1], 8), next=offset + 1))


LINEAR_SHIFT = Derivation(
    slug="sinusoidal_linear_shift",
    title=N_("PE(t + k) is a fixed rotation of PE(t)"),
    topic=TOPIC,
    claim=r"\begin{gathered}\begin{pmatrix}PE(t+k,2i)\\ PE(t+k,2i+1)\end{pmatrix} = \begin{pmatrix}\cos k\omega_i "
          r"& \sin k\omega_i\\ -\sin k\omega_i & \cos k\omega_i\end{pmatrix}\begin{pmatrix}PE(t,2i)\\ "
          r"PE(t,2i+1)\end{pmatrix}\\ PE(t,2i)=\sin t\omega_i,\quad PE(t,2i+1)=\cos t\omega_i,\quad "
          r"\omega_i = b^{-2i/d}\end{gathered}",
    steps=(
        Step(N_("Expand the sine and cosine of a sum."),
             r"\sin((t+k)\omega) = \sin t\omega\cos k\omega + \cos t\omega\sin k\omega,\quad "
             r"\cos((t+k)\omega) = \cos t\omega\cos k\omega - \sin t\omega\sin k\omega"),
        Step(N_("Read off the coefficients: they depend on k only, so the map is the same 2 × 2 matrix for every t; "
                "it is a rotation by −kω_i."),
             r"M_k = \begin{pmatrix}\cos k\omega & \sin k\omega\\ -\sin k\omega & \cos k\omega\end{pmatrix} = "
             r"\begin{pmatrix}PE(k,2i+1) & PE(k,2i)\\ -PE(k,2i) & PE(k,2i+1)\end{pmatrix}"),
        Step(N_("Stacking the d/2 pairs gives a block-diagonal matrix: PE(t + k) is a linear function of PE(t).")),
    ),
    check=N_("Subtract M_k PE(t) from PE(t + k) for one pair with symbolic t, k, ω; check M_k is orthogonal and free "
          "of t. Pairs are independent, so one generic pair covers every d."),
    check_function=_linear_shift,
    source=cite("vaswani", "§3.5"),
    notes=(
        N_("A common objection is that the usual statement is misread and that $p_{t+k}$ \"needs $p_t$ and $p_k$ "
           "jointly\". "
           "Both readings meet: the coefficients of the map are the entries of $p_k$, and for a fixed offset $k$ the "
           "map $p_t \\mapsto p_{t+k}$ is linear (a rotation), which is what the original paper claims."),
    ),
)

DOT_PRODUCT = Derivation(
    slug="sinusoidal_dot_product",
    title=N_("PE(t)·PE(t + k) depends on k only, and is even in k"),
    topic=TOPIC,
    claim=r"PE(t)\cdot PE(t+k) = \sum_{i=0}^{d/2-1}\cos(k\,\omega_i) = PE(t)\cdot PE(t-k)",
    steps=(
        Step(N_("Group the dot product by pairs."),
             r"PE(t)\cdot PE(t+k) = \sum_i \big[\sin t\omega_i \sin(t+k)\omega_i + "
             r"\cos t\omega_i\cos(t+k)\omega_i\big]"),
        Step(N_("Each bracket is the cosine of a difference of angles."),
             r"\cos\alpha\cos\beta + \sin\alpha\sin\beta = \cos(\beta - \alpha)"),
        Step(N_("The position t has cancelled; cosine is even, so the offsets k and −k give the same value."),
             r"\sum_i \cos(k\omega_i) = \sum_i \cos(-k\omega_i)"),
    ),
    check=N_("Sum the per-pair residual over i = 0 … N − 1 for a symbolic N and free ω_i, and let sympy evaluate it."),
    check_function=_dot_product,
    source=f"{cite('vaswani', '§3.5')}; {cite('su_sinusoidal')}.",
    notes=(
        N_("A common restatement says the dot product \"decreases as k grows\". It decays on average but not "
           "monotonically: an oscillating decay; the refuted claim below shows a concrete rise."),
    ),
)

MONOTONE_DECAY = Derivation(
    slug="sinusoidal_monotone_decay",
    title=N_("The sinusoidal dot product falls steadily with k"),
    topic=TOPIC,
    claim=Latex(r"k \mapsto \sum_{i}\cos(k\,\omega_i)\ \ \text{is decreasing}", N_("is decreasing")),
    steps=(),
    check=N_("Find the first offset where the sum rises (floating point), then confirm it exactly with sympy."),
    check_function=_monotone_decay,
    source=Deferred(N_("a common restatement (compare {source})"), source=cite("su_sinusoidal")),
    refutes="sinusoidal_dot_product",
    said=N_("as $k$ grows, $PE(t)\\cdot PE(t+k)$ decreases."),
    shows=N_("the sum only decays on average; with $d = 128$, $b = 10\\,000$ it already rises between two neighbouring "
             "offsets below 20 (the residual is the rise)."),
)

PERIODS = Derivation(
    slug="sinusoidal_periods",
    title=N_("Pair i has period λᵢ = 2π·b^(2i/d): from 2π up to 2π·b^(1−2/d), growing with i"),
    topic=TOPIC,
    claim=r"\lambda_i = \frac{2\pi}{\omega_i} = 2\pi\, b^{2i/d},\qquad \frac{d\lambda_i}{di} > 0,\qquad "
          r"\lambda_i \in \big[\,2\pi,\; 2\pi\, b^{1-2/d}\,\big] \subsetneq [2\pi, 2\pi b)",
    steps=(
        Step(N_("Dimensions 2i and 2i + 1 share the angular frequency ω_i = b^{−2i/d} (radians per token); "
                "the angle at position t is tω_i, and one full turn takes λ_i tokens."),
             r"\lambda_i = 2\pi/\omega_i = 2\pi b^{2i/d}"),
        Step(N_("The exponent grows with i, so later pairs turn more slowly: lower frequency, longer period."),
             r"\frac{d\lambda_i}{di} = \lambda_i\,\frac{2\ln b}{d} > 0 \quad (b > 1)"),
        Step(N_("The last pair is i = d/2 − 1, so the longest period stops short of 2πb."),
             r"\lambda_{d/2-1} = 2\pi b^{(d-2)/d} = 2\pi b\cdot b^{-2/d} < 2\pi b"),
    ),
    check=N_("Differentiate λ_i with b = 1 + ε (ε > 0) and let sympy decide the sign; evaluate λ at i = 0 and "
          "i = d/2 − 1; decide the sign of ln(λ_{d/2−1}/(2πb))."),
    check_function=_periods,
    source=cite("vaswani", "§3.5"),
    notes=(
        N_("Some write-ups call the angle $m/10000^{2(i-1)/d}$ a \"frequency\" and writes $\\omega_i = \\theta_i = "
           "m/10000^{2i/d}$. The app keeps three names apart: the **frequency** $\\theta_i$ (radians per token), the "
           "**angle** $m\\theta_i$ at position $m$, and the **period** (wavelength) $2\\pi/\\theta_i$ in tokens."),
    ),
)

PERIOD_RANGE = Derivation(
    slug="sinusoidal_period_range",
    title=N_("The periods reach 2π·base"),
    topic=TOPIC,
    claim=r"\max_i \lambda_i = 2\pi b",
    steps=(),
    check=N_("Subtract 2πb from the longest period."),
    check_function=_period_range,
    source=Deferred(N_("a common restatement (the periods: {source})"), source=cite("vaswani", "§3.5")),
    refutes="sinusoidal_periods",
    said=N_("the period $T = \\text{base}^{i/d}\\cdot 2\\pi$ ranges over $[2\\pi,\\ \\text{base}\\cdot 2\\pi]$."),
    shows=N_("the last pair is $i = d/2 - 1$, so the longest period is $2\\pi b^{(d-2)/d}$, a factor $b^{-2/d}$ short of "
             "$2\\pi b$ (for $d = 512$, $b = 10^4$: about $2\\pi\\cdot 9{,}647$ rather than $2\\pi\\cdot 10{,}000$)."),
)

PERIOD_SHRINKS = Derivation(
    slug="sinusoidal_period_shrinks",
    title=N_("Higher dimensions have shorter periods"),
    topic=TOPIC,
    claim=r"\frac{d\lambda_i}{di} < 0",
    steps=(),
    check=N_("Let sympy decide the sign of dλ_i/di for b > 1."),
    check_function=_period_shrinks,
    source=Deferred(N_("a common slip (the periods: {source})"), source=cite("vaswani", "§3.5")),
    refutes="sinusoidal_periods",
    said=N_("the higher the dimension index $i$, the lower the frequency and the *shorter* the period."),
    shows=N_("lower frequency means a *longer* period: $d\\lambda_i/di = \\lambda_i\\, 2\\ln b/d > 0$. The first half of "
             "the sentence is right; \"shorter\" should read \"longer\"."),
)

DERIVATIONS = (LINEAR_SHIFT, DOT_PRODUCT, PERIODS)
WRONG_VARIANTS = (MONOTONE_DECAY, PERIOD_RANGE, PERIOD_SHRINKS)
