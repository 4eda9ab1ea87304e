"""Caveats of context extension: PI's position map, how large NTK's s must be, dynamic NTK with a
KV cache, and what ReRoPE costs at inference."""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match, truth
from derivations.rope_2d import rotation
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("Caveats of context extension")

m = sp.Symbol("m", nonnegative=True)
length, scale, ratio = sp.symbols("L s rho", positive=True)  # ρ = L′/L, the real extension
theta, base, head_dim = sp.symbols("theta b d", positive=True)
pair = sp.Symbol("i", positive=True)
alpha_angle, beta_angle, gamma_angle = sp.symbols("alpha beta gamma", real=True)
width, tokens = sp.symbols("D n", positive=True)

# the setting every number below is checked at (the YaRN paper's LLaMA set-up)
CHECK_DIM, CHECK_BASE, CHECK_LENGTH, CHECK_RATIO = 128, 10_000, 4096, 8


def gaussian_expectation(polynomial: sp.Expr, variables: Sequence[sp.Symbol]) -> sp.Expr:
    """E[polynomial] for independent standard normal ``variables``: E[zⁿ] = (n − 1)!! for even n, 0 for odd."""
    poly = sp.Poly(sp.expand(polynomial), *variables)
    total = sp.S.Zero
    for exponents, coefficient in poly.terms():
        moment = sp.S.One
        for power in exponents:
            moment *= 0 if power % 2 else sp.factorial2(power - 1)
        total += coefficient * moment
    return sp.expand(total)


# --- PI ------------------------------------------------------------------------------------------------


def _pi_map():
    g = m / scale
    ends = identity(g.subs(m, scale * length), length, N_("g(L′) = g(sL) = L;"), simplifier=sp.simplify)
    angle = identity(g * theta, m * (theta / scale), N_("g(m)·θ = m·(θ/s);"), simplifier=sp.simplify)
    from pe_core.caveats import pi_positions

    interpolated, _ = pi_positions([0, CHECK_RATIO * CHECK_LENGTH - 1, CHECK_RATIO * CHECK_LENGTH], float(CHECK_RATIO))
    code = numbers_match(interpolated.tolist()[1:], [sp.Rational(CHECK_RATIO * CHECK_LENGTH - 1, CHECK_RATIO),
                                                     sp.Integer(CHECK_LENGTH)],
                         Deferred(N_("and pe_core.caveats.pi_positions maps L′ = {target} to L = {length} (s = {scale})."),
                                  target=f"{CHECK_RATIO * CHECK_LENGTH:,}", length=f"{CHECK_LENGTH:,}", scale=CHECK_RATIO))
    return all_of([ends, angle, code])


def _pi_times_s():
    longest = scale * (scale * length)
    return identity(longest, length, N_("sympy evaluates g(L′) with g(m) = s·m and subtracts L."), simplifier=sp.factor,
                    witness={scale: CHECK_RATIO, length: CHECK_LENGTH})


PI_MAP = Derivation(
    slug="caveat_pi_map",
    title=N_("Position Interpolation feeds g(m) = m/s: the positions 0 … L′ land inside 0 … L"),
    topic=TOPIC,
    claim=r"s = \frac{L'}{L},\qquad g(m) = \frac{m}{s},\qquad g(L') = L,\qquad g(m)\,\theta_d = m\,\frac{\theta_d}{s}",
    steps=(
        Step(N_("The YaRN paper writes every method as RoPE at a remapped position g(m) with remapped frequencies "
             "h(θ_d); PI keeps the frequencies and compresses the positions."),
             r"f'(x_m, m, \theta_d) = f\big(x_m, g(m), h(\theta_d)\big),\quad h(\theta_d) = \theta_d"),
        Step(N_("Compressing by s = L′/L sends the longest new position to the longest trained one."),
             r"g(L') = \frac{sL}{s} = L"),
        Step(N_("Since the angle is a product, dividing the position by s is the same as dividing every frequency "
             "by s."), r"g(m)\,\theta_d = m\,\frac{\theta_d}{s}"),
    ),
    check=N_("Substitute m = sL; rewrite the angle; run pe_core.caveats.pi_positions at L′ = 32,768, s = 8."),
    check_function=_pi_map,
    source=cite("pi") + "; " + cite("yarn", "§2"),
)

PI_TIMES_S = Derivation(
    slug="caveat_pi_times_s",
    title=N_("PI as g(m) = s·m"),
    topic=TOPIC,
    claim=r"g(m) = s\cdot m,\qquad s = \frac{L'}{L}",
    steps=(),
    check=N_("Evaluate g(L′) and compare with L."),
    check_function=_pi_times_s,
    source=Deferred(N_("a common slip when restating the notation of {source}"), source=cite("yarn", "§2")),
    refutes="caveat_pi_map",
    said=N_("for PI, $g(m) = s\\cdot m$ with $s = L'/L$."),
    shows=N_("with $s > 1$ that stretches positions instead of compressing them: $g(L') = s^2L$, e.g. $262{,}144$ for "
          "$L = 4{,}096$, $s = 8$, far beyond training. PI divides: $g(m) = m/s$ (the residual is $L(s^2 - 1)$)."),
)


# --- NTK-aware: s above the real ratio -----------------------------------------------------------------------


def ntk_ratio_at(pair_index: sp.Expr, set_scale: sp.Expr = scale) -> sp.Expr:
    """L′θ′ᵢ/(Lθᵢ) = ρ·s^(−2i/(d−2)) under NTK-aware scaling with s, run at L′ = ρL."""
    return ratio * set_scale ** (-2 * pair_index / (head_dim - 2))


def _check_numbers():
    """i₀ and the required s at the check setting, from sympy's exact wavelengths."""
    inv_freq = [sp.Integer(CHECK_BASE) ** sp.Rational(-2 * p, CHECK_DIM) for p in range(CHECK_DIM // 2)]
    first = next(p for p, t in enumerate(inv_freq) if sp.N(CHECK_LENGTH * t - 2 * sp.pi, 30) < 0)
    required = sp.Integer(CHECK_RATIO) ** sp.Rational(CHECK_DIM - 2, 2 * first)
    return first, required


def _ntk_required():
    set_scale = ratio ** ((head_dim - 2) / (2 * pair))
    boundary = identity(ntk_ratio_at(pair, set_scale), 1, N_("with s = ρ^((d−2)/(2i)) pair i ends exactly at its trained "
                        "angle;"), simplifier=lambda e: sp.simplify(sp.powsimp(sp.powdenest(e, force=True), force=True)))
    exponent = (head_dim - 2) / (2 * pair)
    above_two = sp.Symbol("epsilon", positive=True)  # d = 2 + ε: NTK's exponent needs d > 2
    slope = sp.simplify(sp.diff(exponent, pair).subs(head_dim, 2 + above_two))
    decreasing = truth(slope.is_negative, slope,
                       N_("the exponent (d − 2)/(2i) falls as i grows, so the first pair that never turns, i₀, binds;"))
    above = truth(sp.simplify(exponent.subs(pair, (head_dim - 2) / 2)) == 1, exponent,
                  N_("and the exponent is 1 only at the last pair i = (d − 2)/2, so s > ρ whenever i₀ is below it;"))
    first, required = _check_numbers()
    from pe_core.caveats import first_partial_pair, ntk_required_scale

    code = numbers_match([first_partial_pair(CHECK_DIM, float(CHECK_BASE), CHECK_LENGTH),
                          float(ntk_required_scale(CHECK_DIM, float(CHECK_BASE), CHECK_LENGTH, float(CHECK_RATIO)))],
                         [sp.Integer(first), required],
                         Deferred(N_("pe_core finds i₀ = {first} and s = {scale} for d = {d}, b = {base}, L = {length}, "
                                     "L′/L = {ratio}, as sympy does."), first=first, scale=f"{float(required):.4g}",
                                  d=CHECK_DIM, base=f"{CHECK_BASE:,}", length=f"{CHECK_LENGTH:,}", ratio=CHECK_RATIO))
    return all_of([boundary, decreasing, above, code])


def _ntk_real_ratio():
    first, _ = _check_numbers()
    value = ntk_ratio_at(sp.Integer(first), sp.Integer(CHECK_RATIO)).subs({ratio: CHECK_RATIO, head_dim: CHECK_DIM})
    excess = sp.nsimplify(value) - 1
    shown = Deferred(N_("at d = {d}, b = {base}, L = {length}, s = L′/L = {ratio}: pair i₀ = {first} reaches "
                        "{value}× its largest trained angle"), d=CHECK_DIM, base=f"{CHECK_BASE:,}",
                     length=f"{CHECK_LENGTH:,}", ratio=CHECK_RATIO, first=first, value=f"{float(value):.4g}")
    return truth(excess <= 0, excess, N_("sympy evaluates L′θ′ᵢ/(Lθᵢ) − 1 for the first pair that never turns in "
                 "training, with s set to the real ratio."), shown)


NTK_REQUIRED = Derivation(
    slug="caveat_ntk_required_scale",
    title=N_("NTK-aware scaling needs s = ρ^((d−2)/(2i₀)) > L′/L to keep every pair within its trained angles"),
    topic=TOPIC,
    claim=Latex(r"\begin{gathered}\frac{L'\theta'_i}{L\theta_i} = \rho\, s^{-2i/(d-2)} \le 1 \iff "
                r"s \ge \rho^{(d-2)/(2i)},\\ s_{\text{needed}} = \rho^{(d-2)/(2i_0)},\quad "
                r"i_0 = \min\{\,i : L\theta_i < 2\pi\,\},\quad \rho = L'/L\end{gathered}", N_("needed")),
    steps=(
        Step(N_("NTK-aware scaling with factor s multiplies θᵢ by s^(−2i/(d−2)); running at L′ = ρL the largest angle "
             "of pair i, relative to training, is"), r"\frac{L'\theta'_i}{L\theta_i} = \rho\,s^{-2i/(d-2)}"),
        Step(N_("Pairs that completed a full turn in training (Lθᵢ ≥ 2π) have seen every angle. For the others the "
             "ratio must stay ≤ 1, which needs s ≥ ρ^((d−2)/(2i)); the exponent falls with i, so the first such "
             "pair i₀ is the one that binds."), r"s \ge \rho^{(d-2)/(2i_0)}"),
        Step(N_("The exponent equals 1 only at the last pair: setting s to the real ratio ρ is enough for the lowest "
             "frequency alone, and the pairs between i₀ and d/2 − 1 overshoot. For LLaMA's d = 128, b = 10⁴, "
             "L = 4,096 and ρ = 8: i₀ = 46 and s ≈ 17.25. The YaRN paper observes the same in practice: s must be "
             "set higher than the expected extension.")),
    ),
    check=N_("Substitute s = ρ^((d−2)/(2i)); take the sign of the exponent's derivative; find i₀ and s with exact "
          "wavelengths and compare pe_core."),
    check_function=_ntk_required,
    source=cite("yarn", "§3.1") + "; " + cite("ntk_aware"),
)

NTK_REAL_RATIO = Derivation(
    slug="caveat_ntk_real_ratio",
    title=N_("NTK-aware with s = L′/L keeps every pair within its trained angles"),
    topic=TOPIC,
    claim=r"s = \frac{L'}{L}\ \Rightarrow\ L'\theta'_i \le L\theta_i\quad \forall\, i : L\theta_i < 2\pi",
    steps=(),
    check=N_("Evaluate the ratio of the first pair that never turns in training at s = L′/L."),
    check_function=_ntk_real_ratio,
    source=Deferred(N_("the natural reading of the factor s = L′/L in {source}"), source=cite("ntk_aware")),
    refutes="caveat_ntk_required_scale",
    said=N_("setting NTK-aware's factor to the real extension $s = L'/L$ keeps every pair within the angles it saw in "
         "training (it does for PI)."),
    shows=N_("only the lowest-frequency pair lands exactly on its trained range; with $d = 128$, $b = 10^4$, "
          "$L = 4{,}096$, $s = 8$ the first pair that never turns in training, $i_0 = 46$, reaches about $1.75\\times$ "
          "its largest trained angle (the residual is that excess), and 17 pairs go beyond. Keeping all of them "
          "inside needs $s \\approx 17.25$."),
)


# --- dynamic NTK and the KV cache ---------------------------------------------------------------------------


def _cache_error():
    difference = rotation(alpha_angle) - rotation(beta_angle)
    frobenius = identity(sum(entry**2 for entry in difference), 4 - 4 * sp.cos(alpha_angle - beta_angle),
                         N_("‖R(α) − R(β)‖²_F = 4 − 4cos(α − β);"))
    qs, ks = sp.symbols("q_0:2", real=True), sp.symbols("k_0:2", real=True)
    block = rotation(-gamma_angle) * difference
    error = (sp.Matrix([qs]) * block * sp.Matrix(ks))[0]
    expectation = identity(gaussian_expectation(sp.expand(error**2), qs + ks), 4 - 4 * sp.cos(alpha_angle - beta_angle),
                           N_("for standard normal q, k the Gaussian moments of (qᵀR(−γ)[R(α) − R(β)]k)² give the same, "
                           "whatever the query's angle γ;"))
    from pe_core.caveats import cache_angle_error, expected_relative_error

    dim, b, train, prompt, key, current = 8, 10_000, 64, 64, 40, 160
    computed = expected_relative_error(cache_angle_error(float(b), dim, train, prompt, [key], current), dim)
    written_base = sp.Integer(b) * sp.Rational(prompt, train) ** sp.Rational(dim, dim - 2)
    current_base = sp.Integer(b) * sp.Rational(current, train) ** sp.Rational(dim, dim - 2)
    angles = [key * (written_base ** sp.Rational(-2 * p, dim) - current_base ** sp.Rational(-2 * p, dim))
              for p in range(dim // 2)]
    exact = sp.sqrt(sum(4 * (1 - sp.cos(angle)) for angle in angles) / dim)
    code = numbers_match(computed.tolist(), [exact], Deferred(N_("and pe_core's closed form matches sympy for d = {d}, "
                         "L = {length}, key {key} read at length {current}."), d=dim, length=train, key=key,
                                  current=current))
    return all_of([frobenius, expectation, code])


CACHE_ERROR = Derivation(
    slug="caveat_dynamic_cache_error",
    title=N_("Dynamic NTK with cached rotated keys: pair i of key j is off by j·(θᵢ(written) − θᵢ(now))"),
    topic=TOPIC,
    claim=Latex(r"\begin{gathered}s_{\text{cached}} - s_{\text{fresh}} = \sum_i q_i^{\top}R(-t\theta'_i)\big["
                r"R(j\theta^w_i) - R(j\theta'_i)\big]k_i,\\ \mathbb{E}\big[(s_{\text{cached}} - s_{\text{fresh}})^2\big] = "
                r"\sum_i 4\big(1 - \cos\Delta_i\big),\quad \Delta_i = j\,(\theta^w_i - \theta'_i),\quad "
                r"\mathbb{E}[s^2] = d\end{gathered}", N_("cached"), N_("fresh")),
    steps=(
        Step(N_("Dynamic NTK recomputes the base from the current length ℓ. A cache of rotated keys keeps key j as it "
             "was rotated when written, with θʷ (the base of that moment); the query at t uses the current θ′."),
             Latex(r"s_{\text{cached}} = \sum_i \big(R(t\theta'_i)q_i\big)^{\top}R(j\theta^w_i)k_i,\qquad "
                   r"s_{\text{fresh}} = \sum_i \big(R(t\theta'_i)q_i\big)^{\top}R(j\theta'_i)k_i",
                   N_("cached"), N_("fresh"))),
        Step(N_("Pair by pair the difference is qᵀR(−tθ′)[R(jθʷ) − R(jθ′)]k. For independent standard normal q and k, "
             "E[(qᵀMk)²] = ‖M‖²_F, and the rotation in front does not change it."),
             r"\big\lVert R(\alpha) - R(\beta)\big\rVert_F^2 = 4 - 4\cos(\alpha - \beta)"),
        Step(N_("So the expected squared error is Σ 4(1 − cos Δᵢ) against E[s²] = d. It vanishes for keys written at "
             "the current base and for j = 0; for the fast pairs even a small change of base, times a large j, gives "
             "an angle error of radians. The fix (YaRN paper §3.3): cache keys before RoPE and rotate them at read "
             "time.")),
    ),
    check=N_("Expand ‖R(α) − R(β)‖²_F; take Gaussian moments of the squared error for one pair; compare pe_core's "
          "closed form with sympy at one key."),
    check_function=_cache_error,
    source=cite("yarn", "§3.3") + "; " + cite("dynamic_ntk"),
)


# --- ReRoPE's cost --------------------------------------------------------------------------------------------


def prefill_ratio() -> sp.Expr:
    """(24D + 6n + 9)/(24D + 4n + 6): ReRoPE's prefill FLOPs per layer over RoPE's (see pe_core.caveats)."""
    return (24 * width * tokens * width + 6 * tokens**2 * width + 9 * tokens * width) / (
        24 * tokens * width**2 + 4 * tokens**2 * width + 6 * tokens * width)


def decode_ratio() -> sp.Expr:
    return (24 * width**2 + 7 * tokens * width) / (24 * width**2 + 4 * tokens * width + 6 * width)


def _rerope_cost():
    simplified = identity(prefill_ratio(), (24 * width + 6 * tokens + 9) / (24 * width + 4 * tokens + 6),
                          N_("the prefill ratio reduces to (24D + 6n + 9)/(24D + 4n + 6);"), simplifier=sp.simplify)
    limits = truth(sp.limit(prefill_ratio(), tokens, sp.oo) == sp.Rational(3, 2)
                   and sp.limit(decode_ratio(), tokens, sp.oo) == sp.Rational(7, 4),
                   sp.S.Zero, N_("as n → ∞ the ratios tend to 3/2 (prefill) and 7/4 (decode);"))
    rising = truth(sp.factor(sp.numer(sp.together(sp.diff(prefill_ratio(), tokens)))).is_positive
                   and sp.factor(sp.numer(sp.together(sp.diff(decode_ratio(), tokens)))).is_positive,
                   sp.S.Zero, N_("both rise with n (their derivatives have positive numerators);"))
    from pe_core.caveats import rerope_cost

    cost = rerope_cost(4096, [32768])
    point = {width: 4096, tokens: 32768}
    code = numbers_match([float(cost.prefill_ratio["rerope"][0]), float(cost.decode_ratio["rerope"][0])],
                         [prefill_ratio().subs(point), decode_ratio().subs(point)],
                         N_("and pe_core.caveats.rerope_cost gives the same ratios at D = 4,096, n = 32,768."))
    return all_of([simplified, limits, rising, code])


REROPE_COST = Derivation(
    slug="caveat_rerope_cost",
    title=N_("ReRoPE costs up to 1.5× RoPE's FLOPs to encode a prompt and 1.75× per generated token"),
    topic=TOPIC,
    claim=Latex(r"\frac{F_{\text{ReRoPE}}}{F_{\text{RoPE}}}\Big|_{\text{prefill}} = \frac{24D + 6n + 9}{24D + 4n + 6}"
                r"\ \xrightarrow{n\to\infty}\ \frac32,\qquad \frac{F_{\text{ReRoPE}}}{F_{\text{RoPE}}}\Big|_{\text{decode}}"
                r" = \frac{24D + 7n}{24D + 4n + 6}\ \xrightarrow{n\to\infty}\ \frac74", N_("prefill"), N_("decode")),
    steps=(
        Step(N_("Per layer and n tokens of width D, the projections and MLP cost 24nD² either way; RoPE's attention "
             "costs 2n²D for Q·Kᵀ, 2n²D for A·V and 6nD to rotate q and k (3 FLOPs per element)."),
             r"F_{\text{RoPE}} = 24nD^2 + 4n^2D + 6nD"),
        Step(N_("ReRoPE's reference code builds two score matrices, one with the trained positions and one with every "
             "distance set to the window w, and picks per entry: a second Q·Kᵀ and a third rotation."),
             r"F_{\text{ReRoPE}} = 24nD^2 + 6n^2D + 9nD"),
        Step(N_("When generating, its cache holds unrotated keys (their rotation depends on the distance to the new "
             "query), so all n keys are rotated again at every step."),
             Latex(r"F^{\text{step}}_{\text{RoPE}} = 24D^2 + 4nD + 6D,\qquad F^{\text{step}}_{\text{ReRoPE}} = "
                   r"24D^2 + 7nD", N_("step"))),
        Step(N_("Leaky ReRoPE has the same structure (one more rotation in prefill). Training with Leaky ReRoPE and "
             "running plain RoPE (Su 2023c) costs exactly RoPE's at inference.")),
    ),
    check=N_("Simplify the prefill ratio, take both limits, check the sign of the derivatives, and compare "
          "pe_core.caveats.rerope_cost."),
    check_function=_rerope_cost,
    source=cite("rerope") + "; " + cite("leaky_rerope_inverse"),
)

DERIVATIONS = (PI_MAP, NTK_REQUIRED, CACHE_ERROR, REROPE_COST)
WRONG_VARIANTS = (PI_TIMES_S, NTK_REAL_RATIO)
