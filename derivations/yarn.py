"""NTK-by-parts and YaRN: where the ramp sits, how it blends θ, and what the attention scaling does."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match, power_zero, truth
from i18n import N_, Deferred
from references import cite

TOPIC = N_("NTK-by-parts and YaRN")

base, dims, length, rotations = sp.symbols("b d L r", positive=True)  # d: the head size, as on every page
index = sp.Symbol("i", real=True)  # the (fractional) pair index, which the YaRN paper calls d (and the head |D|)
theta, scale, wavelength = sp.symbols("theta s lambda", positive=True)
gamma = sp.Symbol("gamma", nonnegative=True)
scale_factor = sp.Symbol("a", positive=True)  # √(1/t)
temperature = sp.Symbol("t", positive=True)
i = sp.Symbol("i", integer=True, nonnegative=True)
size = sp.Symbol("d", integer=True, positive=True)
q, k = sp.IndexedBase("q", real=True), sp.IndexedBase("k", real=True)


def correction_index(turns: sp.Expr = rotations) -> sp.Expr:
    """i = d·ln(L/(2πr)) / (2 ln b): the pair whose wavelength fits r times into L."""
    return dims * sp.log(length / (2 * sp.pi * turns)) / (2 * sp.log(base))


def blended_frequency(frequency: sp.Expr = theta) -> sp.Expr:
    """h(θ) = (1 − γ)θ/s + γθ: the YaRN paper's eq. 19 and every implementation."""
    return (1 - gamma) * frequency / scale + gamma * frequency


def yarn_mscale(factor: sp.Expr = scale) -> sp.Expr:
    """√(1/t) = 0.1·ln s + 1 (YaRN paper eq. 22)."""
    return sp.Rational(1, 10) * sp.log(factor) + 1


def _correction_dim():
    wavelength_at = 2 * sp.pi * base ** (2 * index / dims)
    logged = sp.Eq(sp.log(rotations), sp.expand_log(sp.log(length / wavelength_at), force=True))
    solved = sp.solve(logged, index)
    unique = truth(len(solved) == 1, sp.Integer(len(solved)), N_("taking logs makes r = L/λᵢ linear in i; sympy solves "
                   "it and finds one solution;"))
    matches = identity(solved[0] if solved else sp.S.Zero, correction_index(), N_("it equals d ln(L/(2πr))/(2 ln b);"),
                       simplifier=power_zero)
    back = identity(length / wavelength_at.subs(index, correction_index()), rotations,
                    N_("substituting it back gives r = L/λ;"), simplifier=power_zero)
    from pe_core.rope import yarn_correction_dim

    settings = [(32, 128, 10_000, 4096), (1, 128, 10_000, 4096), (32, 64, 500_000, 8192)]
    computed = [yarn_correction_dim(r, d, float(b), n) for r, d, b, n in settings]
    exact = [correction_index().subs({rotations: r, dims: d, base: b, length: n}) for r, d, b, n in settings]
    code = numbers_match(computed, exact, N_("and pe_core.rope.yarn_correction_dim agrees for three settings."))
    return all_of([unique, matches, back, code])


def _ramp_blend():
    blended_wavelength = 2 * sp.pi / blended_frequency(2 * sp.pi / wavelength)
    form = identity(blended_wavelength, wavelength * scale / (1 - gamma + gamma * scale),
                    N_("2π/h(θ) = λs/(1 − γ + γs);"), simplifier=sp.simplify)
    ends = identity([blended_frequency().subs(gamma, 0), blended_frequency().subs(gamma, 1)], [theta / scale, theta],
                    N_("h = θ/s at γ = 0 and h = θ at γ = 1."))
    return all_of([form, ends])


def _paper_wavelength_blend():
    paper = (1 - gamma) * scale * wavelength + gamma * wavelength
    implemented = 2 * sp.pi / blended_frequency(2 * sp.pi / wavelength)
    residual = sp.factor(sp.simplify(paper - implemented))
    point = {gamma: sp.Rational(1, 2), scale: 4, wavelength: 1}
    example = Deferred(N_("at γ = 1/2, s = 4 the paper's λ' is {paper}λ, the implemented wavelength {implemented}λ"),
                       paper=f"{float(paper.subs(point)):g}", implemented=f"{float(implemented.subs(point)):g}")
    return truth(residual == 0, residual, N_("sympy factors λ'(paper) − 2π/h(θ)."), example)


def _attention_scaling():
    dot = sp.Sum(q[i] * k[i], (i, 0, size - 1))
    scaled = sp.Sum((scale_factor * q[i]) * (scale_factor * k[i]), (i, 0, size - 1))
    divides = identity(scaled.subs(scale_factor, sp.sqrt(1 / temperature)), dot / temperature,
                       N_("Σ(√(1/t) q_i)(√(1/t) k_i) − (Σ q_i k_i)/t = 0 for a symbolic dimension d;"),
                       simplifier=lambda e: sp.simplify(sp.factor_terms(sp.expand(e.doit()))))
    solved_t = sp.solve(sp.Eq(sp.sqrt(1 / temperature), yarn_mscale()), temperature)
    t_value = identity(solved_t[0] if len(solved_t) == 1 else sp.S.Zero, 1 / yarn_mscale() ** 2,
                       N_("√(1/t) = 0.1 ln s + 1 gives t = (0.1 ln s + 1)^{−2};"), simplifier=sp.simplify)
    region = sp.solve_univariate_inequality(yarn_mscale() > 1, scale, relational=False)
    sharpen = truth(region == sp.Interval.open(1, sp.oo), region,
                    N_("the factor exceeds 1 (so t < 1 and logits grow) exactly for s > 1;"))
    from pe_core import yarn_get_mscale

    scales = (2, 4, 8, 16, 32)
    code = numbers_match([yarn_get_mscale(float(s)) for s in scales], [yarn_mscale(sp.Integer(s)) for s in scales],
                         N_("and pe_core.yarn_get_mscale agrees for s = 2 … 32."))
    return all_of([divides, t_value, sharpen, code])


def _threshold_e():
    region = sp.solve_univariate_inequality(yarn_mscale() > 1, scale, relational=False)
    stated = sp.Interval.open(sp.E, sp.oo)
    difference = region - stated
    at_two = yarn_mscale(sp.Integer(2))
    example = Deferred(N_("at s = 2 < e: √(1/t) = 0.1·ln 2 + 1 ≈ {value} > 1"),
                       value=f"{float(at_two):.4f}") if at_two > 1 else None
    return truth(difference == sp.EmptySet and stated - region == sp.EmptySet, difference,
                 N_("sympy solves 0.1 ln s + 1 > 1 for s > 0 and compares the solution set with (e, ∞)."), example)


CORRECTION_DIM = Derivation(
    slug="yarn_correction_dim",
    title=N_("The pair that turns r times within L is i = d·ln(L/(2πr)) / (2 ln b)"),
    topic=TOPIC,
    claim=r"\lambda_i = 2\pi b^{2i/d},\quad r = \frac{L}{\lambda_i}\quad\Longrightarrow\quad "
          r"i = \frac{d\,\ln\!\big(L/(2\pi r)\big)}{2\ln b}",
    steps=(
        Step(N_("Pair i (of d/2 pairs; the YaRN paper calls the pair d and the head dimension |D|) has wavelength "
                "λᵢ; in a context of L tokens it makes r = L/λᵢ full turns."), r"r = \frac{L}{2\pi b^{2i/d}}"),
        Step(N_("Take logarithms: the unknown i appears linearly."),
             r"\ln r = \ln L - \ln 2\pi - \frac{2i}{d}\ln b"),
        Step(N_("Solve for i. NTK-by-parts ramps between the pairs with r = β (32) and r = α (1)."),
             r"i(r) = \frac{d\,\ln\!\big(L/(2\pi r)\big)}{2\ln b}"),
    ),
    check=N_("Solve the logged equation for i with sympy, compare with the formula, substitute back, and compare "
          "pe_core.rope.yarn_correction_dim at three settings."),
    check_function=_correction_dim,
    source=Deferred(N_("{paper} and the correction-range code ({code})."), paper=cite("yarn", "eq. 14"),
                    code=cite("transformers_rope")),
)

RAMP_BLEND = Derivation(
    slug="yarn_ramp_blend",
    title=N_("NTK-by-parts blends frequencies: h(θ) = (1−γ)θ/s + γθ, whose wavelength is λs/(1 − γ + γs)"),
    topic=TOPIC,
    claim=r"h(\theta_d) = (1-\gamma_d)\frac{\theta_d}{s} + \gamma_d\,\theta_d\quad\Longrightarrow\quad "
          r"\frac{2\pi}{h(\theta_d)} = \frac{\lambda_d\, s}{1-\gamma_d+\gamma_d s}",
    steps=(
        Step(N_("γ(r) is 0 for pairs that turn fewer than α times in L (interpolate), 1 above β (keep), linear between."),
             r"\gamma(r) = \operatorname{clamp}\!\left(\frac{r-\alpha}{\beta-\alpha}, 0, 1\right)"),
        Step(N_("The frequency is a straight blend between PI's θ/s and the original θ."),
             r"h(\theta) = (1-\gamma)\frac{\theta}{s} + \gamma\theta = \frac{\theta}{s}(1 - \gamma + \gamma s)"),
        Step(N_("Its wavelength is therefore a harmonic, not a straight, blend of sλ and λ."),
             r"\lambda' = \frac{2\pi}{h(\theta)} = \frac{\lambda s}{1-\gamma+\gamma s}"),
    ),
    check=N_("Simplify 2π/h(2π/λ) − λs/(1 − γ + γs) to 0 and evaluate h at γ = 0 and γ = 1."),
    check_function=_ramp_blend,
    source=Deferred(N_("{paper}; transformers' `_compute_yarn_parameters` ({code})."), paper=cite("yarn", "eq. 18–19"),
                    code=cite("transformers_rope")),
)

PAPER_WAVELENGTH_BLEND = Derivation(
    slug="yarn_paper_wavelength_blend",
    title=N_("Blending wavelengths is the same as blending frequencies"),
    topic=TOPIC,
    claim=r"(1-\gamma)\,s\lambda + \gamma\lambda = \frac{2\pi}{h(\theta)}",
    steps=(),
    check=N_("Factor the difference between the paper's λ' and the wavelength of h(θ)."),
    check_function=_paper_wavelength_blend,
    source=f"{cite('yarn', 'eq. 17 vs eq. 19')}",
    refutes="yarn_ramp_blend",
    said=N_("the new wavelength is $\\lambda'_d = (1-\\gamma_d)s\\lambda_d + \\gamma_d\\lambda_d$ and, after converting "
            "to "
            "frequencies, $h(\\theta_d) = (1-\\gamma_d)\\theta_d/s + \\gamma_d\\theta_d$."),
    shows=N_("the two differ by $\\lambda\\gamma(1-\\gamma)(s-1)^2/(1-\\gamma+\\gamma s)$: they agree only where the ramp "
             "is flat (γ = 0 or 1). Implementations, and this app, use the frequency blend $h(\\theta)$."),
)

ATTENTION_SCALING = Derivation(
    slug="yarn_attention_scaling",
    title=N_("Scaling q and k by √(1/t) divides the logits by t; YaRN's factor makes t < 1 (sharper attention)"),
    topic=TOPIC,
    claim=r"\begin{gathered}(\sqrt{1/t}\,q)^{\top}(\sqrt{1/t}\,k) = \frac{q^{\top}k}{t}\\ \sqrt{1/t} = 0.1\ln s "
          r"+ 1 \;\Longrightarrow\; t = (0.1\ln s + 1)^{-2} < 1\quad \forall\, s > 1\end{gathered}",
    steps=(
        Step(N_("A dot product is bilinear, so a common factor on q and k comes out squared."),
             r"\sum_i (a q_i)(a k_i) = a^2 \sum_i q_i k_i,\qquad a = \sqrt{1/t} \Rightarrow a^2 = 1/t"),
        Step(N_("Implementations multiply cos and sin by a (transformers' attention_factor): the rotated q and k are "
                "linear in (cos, sin), so this is the same as scaling q and k, with no change to the attention code."),
             r"a\,(q\otimes\cos + \operatorname{rot}(q)\otimes\sin) = "
             r"(a q)\otimes\cos + \operatorname{rot}(aq)\otimes\sin"),
        Step(N_("With the fitted factor, t < 1 whenever s > 1: the logits are multiplied by (0.1 ln s + 1)² > 1, which "
                "sharpens the softmax."), r"t = \frac{1}{(0.1\ln s + 1)^2}"),
    ),
    check=N_("Simplify the scaled sum for a symbolic dimension, solve √(1/t) = 0.1 ln s + 1 for t, solve the inequality "
          "0.1 ln s + 1 > 1, and compare pe_core.yarn_get_mscale."),
    check_function=_attention_scaling,
    source=cite("yarn", "eq. 21–22"),
    notes=(
        N_("Some retellings of YaRN speak of multiplying the logits by a temperature $t > 1$ to \"increase "
           "the temperature\". With $\\sqrt{1/t} = 0.1\\ln s + 1$ as implemented, $t < 1$ for every $s > 1$: the logits "
           "are divided by $t$, i.e. enlarged, and the attention becomes more concentrated."),
    ),
)

THRESHOLD_E = Derivation(
    slug="yarn_threshold_e",
    title=N_("The YaRN factor exceeds 1 only when s > e"),
    topic=TOPIC,
    claim=r"0.1\ln s + 1 > 1 \iff s > e",
    steps=(),
    check=N_("Solve the inequality for s and compare the solution set with (e, ∞)."),
    check_function=_threshold_e,
    source=Deferred(N_("a common restatement (the factor: {source})"), source=cite("yarn", "eq. 21–22")),
    refutes="yarn_attention_scaling",
    said=N_("when $k > e$, $\\sqrt{1/t} = 0.1\\ln k + 1 > 1$, so $t < 1$."),
    shows=N_("$0.1\\ln s + 1 > 1$ holds for every $s > 1$ (the residual is the part of the solution set the statement "
             "misses, $(1, e]$); the conclusion $t < 1$ is right for any extension at all."),
)

DERIVATIONS = (CORRECTION_DIM, RAMP_BLEND, ATTENTION_SCALING)
WRONG_VARIANTS = (PAPER_WAVELENGTH_BLEND, THRESHOLD_E)
