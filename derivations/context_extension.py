"""Position Interpolation, NTK-aware scaling and dynamic NTK: what each does to θ_i = b^{−2i/d}."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match, power_zero, truth
from i18n import N_, Deferred
from references import cite

TOPIC = N_("Position Interpolation and NTK-aware scaling")

m = sp.Symbol("m", real=True)
base, scale, head_dim = sp.symbols("b s d", positive=True)
pair = sp.Symbol("i", positive=True)  # a pair index i ≥ 1 (pair 0 is discussed separately)
new_base = sp.Symbol("b'", positive=True)
length, current = sp.symbols("L ell", positive=True)

# Settings for the cross-checks against the app's own code (pe_core).
_CHECK_DIM, _CHECK_BASE, _CHECK_LENGTH, _CHECK_SCALE = 128, 10_000, 4096, 8


def frequency(pair_index: sp.Expr, base_value: sp.Expr = base, dim: sp.Expr = head_dim) -> sp.Expr:
    """θ_i = b^{−2i/d}."""
    return base_value ** (-2 * pair_index / dim)


def ntk_base(base_value: sp.Expr = base, factor: sp.Expr = scale, dim: sp.Expr = head_dim) -> sp.Expr:
    return base_value * factor ** (dim / (dim - 2))


def dynamic_base(seq_len: sp.Expr, factor: sp.Expr = scale) -> sp.Expr:
    """transformers' dynamic NTK: b·(s·ℓ/L − (s − 1))^{d/(d−2)} at the current length ℓ ≥ L."""
    return base * (factor * seq_len / length - (factor - 1)) ** (head_dim / (head_dim - 2))


def _pi_equivalences():
    positions = identity((m / scale) * frequency(pair), m * (frequency(pair) / scale),
                         N_("(m/s)θ_i − m(θ_i/s) = 0;"), simplifier=sp.expand)
    as_base = identity(frequency(pair, base * scale ** (head_dim / (2 * pair))), frequency(pair) / scale,
                       N_("(b·s^{d/2i})^{−2i/d} − θ_i/s simplifies to 0 for i > 0;"), simplifier=power_zero)
    pair_zero = identity(frequency(0, new_base), 1, N_("and θ_0 = b'^0 = 1 for every base b'."))
    import torch

    from pe_core import RopeSpec, rope_frequencies

    spec = RopeSpec(head_dim=_CHECK_DIM, base=float(_CHECK_BASE), rope_type="linear", factor=float(_CHECK_SCALE))
    computed = rope_frequencies(spec).inv_freq
    exact = [frequency(p, sp.Integer(_CHECK_BASE), _CHECK_DIM) / _CHECK_SCALE for p in range(_CHECK_DIM // 2)]
    code = numbers_match(computed.to(torch.float64).tolist(), exact,
                         Deferred(N_("The app's PI frequencies (d = {d}, s = {scale}) match θ_i/s to 1e-12."),
                                  d=_CHECK_DIM, scale=_CHECK_SCALE))
    return all_of([positions, as_base, pair_zero, code])


def _ntk_base():
    last = head_dim / 2 - 1
    solved = sp.solve(sp.Eq(frequency(last, new_base), frequency(last) / scale), new_base)
    unique = truth(len(solved) == 1, sp.Integer(len(solved)), N_("sympy solves θ'_{d/2−1} = θ_{d/2−1}/s for b' "
                   "and finds one positive solution;"))
    matches = identity(solved[0] if solved else sp.S.Zero, ntk_base(), N_("it equals b·s^{d/(d−2)};"),
                       simplifier=power_zero)
    highest = identity(frequency(0, ntk_base()), frequency(0), N_("θ'_0 = θ_0;"))
    ratio = identity(frequency(pair, ntk_base()) / frequency(pair), scale ** (-2 * pair / (head_dim - 2)),
                     N_("θ'_i/θ_i = s^{−2i/(d−2)};"), simplifier=power_zero)
    from pe_core import ntk_aware_base

    code = numbers_match([ntk_aware_base(float(_CHECK_BASE), float(_CHECK_SCALE), _CHECK_DIM)],
                         [ntk_base(sp.Integer(_CHECK_BASE), sp.Integer(_CHECK_SCALE), sp.Integer(_CHECK_DIM))],
                         N_("and pe_core.ntk_aware_base gives the same number (d = 128, s = 8)."))
    return all_of([unique, matches, highest, ratio, code])


def _base_times_s():
    last = head_dim / 2 - 1
    return identity(frequency(last, base * scale), frequency(last) / scale,
                    N_("sympy compares the lowest frequency under base b·s with PI's θ_{d/2−1}/s."), simplifier=power_zero,
                    witness={base: 10_000, scale: 8, head_dim: 128})


def _dynamic():
    at_training_length = identity(dynamic_base(length), base, N_("b(ℓ = L) = b;"), simplifier=sp.simplify)
    at_target = identity(dynamic_base(scale * length), ntk_base(base, scale**2 - scale + 1),
                         N_("b(ℓ = sL) is NTK's base for scale s² − s + 1;"), simplifier=power_zero)
    gap = sp.factor(scale**2 - scale + 1 - scale)
    only_at_one = identity(gap, (scale - 1) ** 2, N_("(s² − s + 1) − s = (s − 1)², zero only at s = 1;"))
    factor_one = identity(dynamic_base(current, 1), ntk_base(base, current / length),
                          N_("with factor 1 (how this app runs it), b(ℓ) is NTK's base for s = ℓ/L;"),
                          simplifier=power_zero)
    from pe_core import RopeSpec, rope_frequencies

    spec = RopeSpec(head_dim=_CHECK_DIM, base=float(_CHECK_BASE), rope_type="dynamic", factor=float(_CHECK_SCALE),
                    original_max_position_embeddings=_CHECK_LENGTH)
    seq_len = _CHECK_SCALE * _CHECK_LENGTH
    computed = rope_frequencies(spec, seq_len).inv_freq[-1:]
    exact_base = dynamic_base(sp.Integer(seq_len)).subs(
        {base: _CHECK_BASE, scale: _CHECK_SCALE, length: _CHECK_LENGTH, head_dim: _CHECK_DIM})
    expected = [frequency(_CHECK_DIM // 2 - 1, exact_base, _CHECK_DIM)]
    code = numbers_match(computed.tolist(), expected, N_("and pe_core's dynamic RoPE at ℓ = sL has that lowest frequency."))
    return all_of([at_training_length, at_target, only_at_one, factor_one, code])


PI_EQUIVALENCES = Derivation(
    slug="pi_equivalences",
    title=N_("Position Interpolation: positions ÷ s = every θᵢ ÷ s (a different base for each pair)"),
    topic=TOPIC,
    claim=r"\frac{m}{s}\,\theta_i = m\,\frac{\theta_i}{s} = m\,\big(b\,s^{\,d/(2i)}\big)^{-2i/d}\quad(i \ge 1),"
          r"\qquad \theta_0 = b^{0} = 1\ \ \forall\, b",
    steps=(
        Step(N_("PI feeds position m/s instead of m (Chen et al. 2023). The angle is a product, so the 1/s can sit on "
                "the frequency instead."), r"f'(x, m) = f\!\left(x, \tfrac{m}{s}\right),\quad \tfrac{m}{s}\theta_i = "
                                       r"m\,\tfrac{\theta_i}{s}"),
        Step(N_("For one pair i ≥ 1 the same angle comes from a larger base."),
             r"\frac{b^{-2i/d}}{s} = \big(b\, s^{d/(2i)}\big)^{-2i/d}"),
        Step(N_("But that base depends on i, and pair 0 has θ_0 = b^0 = 1 whatever the base: no single base change "
                "can divide θ_0 by s. PI is a uniform frequency scaling, not a base change; NTK-aware scaling is the "
                "base change that keeps θ_0.")),
    ),
    check=N_("Simplify the two equalities with positive symbols, evaluate the pair-0 frequency, and compare the app's "
          "PI frequencies (pe_core, d = 128, s = 8) with θ_i/s."),
    check_function=_pi_equivalences,
    source=cite("pi"),
    notes=(
        N_("Some write-ups rewrite PI as the base $(L'/L)^{d/2i}\\cdot 10000$ and conclude it \"enlarges the base\". The "
           "algebra is right for each $i \\ge 1$, but the exponent $d/2i$ changes with $i$ and is undefined at $i = 0$, "
           "so it is a different base for every pair; read it as \"scales every frequency by $1/s$\"."),
    ),
)

NTK_BASE = Derivation(
    slug="ntk_aware_base",
    title=N_("NTK-aware: b′ = b·s^(d/(d−2)) gives the lowest frequency PI's value and keeps the highest"),
    topic=TOPIC,
    claim=r"b' = b\cdot s^{\,d/(d-2)}\;\Longrightarrow\; \theta'_{d/2-1} = \frac{\theta_{d/2-1}}{s},\quad "
          r"\theta'_0 = \theta_0,\quad \frac{\theta'_i}{\theta_i} = s^{-2i/(d-2)}",
    steps=(
        Step(N_("Ask the lowest-frequency pair i = d/2 − 1 to be interpolated exactly like PI."),
             r"b'^{-(d-2)/d} = \frac{b^{-(d-2)/d}}{s}"),
        Step(N_("Raise both sides to the power −d/(d − 2)."), r"b' = b\, s^{d/(d-2)}"),
        Step(N_("The highest frequency θ_0 = 1 is untouched (the exponent is 0), and in between the scaling moves "
                "smoothly from 1 to 1/s: high frequencies extrapolate, low ones interpolate."),
             r"\theta'_i = b^{-2i/d}\, s^{-\frac{d}{d-2}\cdot\frac{2i}{d}} = \theta_i\, s^{-2i/(d-2)}"),
    ),
    check=N_("Solve the lowest-frequency condition for b' with sympy, compare with b·s^{d/(d−2)}, evaluate θ'_0 and the "
          "ratio θ'_i/θ_i, and check pe_core.ntk_aware_base."),
    check_function=_ntk_base,
    source=f"{cite('ntk_aware')}; {cite('yarn')}.",
)

BASE_TIMES_S = Derivation(
    slug="ntk_base_times_s",
    title=N_("Base b·s is NTK-aware scaling"),
    topic=TOPIC,
    claim=r"b' = b\cdot s \;\Longrightarrow\; \theta'_{d/2-1} = \frac{\theta_{d/2-1}}{s}",
    steps=(),
    check=N_("Compare the lowest frequency under base b·s with PI's."),
    check_function=_base_times_s,
    source=Deferred(N_("a common shortcut (NTK-aware scaling itself: {source})"), source=cite("ntk_aware")),
    refutes="ntk_aware_base",
    said=N_("replacing the base 10000 by $10000\\cdot k$ is \"basically\" NTK-aware scaling."),
    shows=N_("with base $b\\cdot s$ the lowest frequency is $\\theta_{d/2-1}\\,s^{-(d-2)/d}$, not PI's "
             "$\\theta_{d/2-1}/s$; it is the β-base answer $\\lambda = s^{2/d}$. Only the exponent $d/(d-2)$ matches PI "
             "exactly, though the gap $s^{2/d}$ shrinks as $d$ grows, hence \"basically\"."),
)

DYNAMIC = Derivation(
    slug="dynamic_ntk",
    title=N_("Dynamic NTK equals plain RoPE at ℓ = L and grows the base with the current length ℓ"),
    topic=TOPIC,
    claim=r"\begin{gathered}b(\ell) = b\left(\frac{s\,\ell}{L} - (s-1)\right)^{d/(d-2)}\\ b(L) = b,\qquad "
          r"b(sL) = b\,(s^2-s+1)^{d/(d-2)},\qquad b(\ell)\big|_{s=1} = b\left(\tfrac{\ell}{L}\right)^{d/(d-2)}"
          r"\end{gathered}",
    steps=(
        Step(N_("transformers recomputes the NTK base at every forward pass from the current length ℓ ≥ L."),
             r"b(\ell) = b\left(\frac{s\,\ell}{L} - (s-1)\right)^{d/(d-2)}"),
        Step(N_("At ℓ = L the bracket is s − s + 1 = 1: the model runs exactly as trained up to its training length."),
             r"b(L) = b"),
        Step(N_("At ℓ = sL the bracket is s² − s + 1, which exceeds s by (s − 1)²: with factor s the formula overshoots "
                "static NTK at the target length."), r"b(sL) = b\,(s^2 - s + 1)^{d/(d-2)}"),
        Step(N_("With factor 1 (how this app compares methods) it is static NTK with s = ℓ/L at every length."),
             r"b(\ell)\big|_{s=1} = b\left(\tfrac{\ell}{L}\right)^{d/(d-2)}"),
    ),
    check=N_("Substitute ℓ = L and ℓ = sL and simplify; factor (s² − s + 1) − s; set s = 1; compare the lowest frequency "
          "of pe_core's dynamic RoPE at ℓ = sL (d = 128, L = 4096, s = 8) with the formula."),
    check_function=_dynamic,
    source=Deferred(N_("{first}; transformers' `_compute_dynamic_ntk_parameters` ({second}); {third}."),
                    first=cite("dynamic_ntk"), second=cite("transformers_rope"), third=cite("yarn")),
)

DERIVATIONS = (PI_EQUIVALENCES, NTK_BASE, DYNAMIC)
WRONG_VARIANTS = (BASE_TIMES_S,)
