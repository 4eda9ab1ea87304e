"""From absolute to relative position: the four terms of an absolute-PE score, and what the classic
relative schemes keep of them."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("From absolute to relative position")

i, j = sp.symbols("i j", integer=True)
omega = sp.Symbol("omega", positive=True)
w11, w12, w21, w22 = sp.symbols("w_11 w_12 w_21 w_22", real=True)
d = sp.Symbol("d", positive=True, integer=True)
a, b = sp.symbols("a b", integer=True)

_DIM = 2  # the four-term identity is bilinear algebra: one generic 2-D case with full 2 × 2 matrices covers it


def _vector(name: str) -> sp.Matrix:
    return sp.Matrix([sp.symbols(f"{name}_0:{_DIM}", real=True)])  # a row vector, as the papers write them


def _matrix(name: str) -> sp.Matrix:
    return sp.Matrix(_DIM, _DIM, sp.symbols(f"{name}_0:{_DIM * _DIM}", real=True))


def _four_terms():
    x_i, x_j, p_i, p_j = _vector("x_i"), _vector("x_j"), _vector("p_i"), _vector("p_j")
    w_q, w_k = _matrix("W_Q"), _matrix("W_K")
    score = ((x_i + p_i) * w_q * ((x_j + p_j) * w_k).T)[0]
    m = w_q * w_k.T
    terms = (x_i * m * x_j.T)[0] + (x_i * m * p_j.T)[0] + (p_i * m * x_j.T)[0] + (p_i * m * p_j.T)[0]
    algebra = identity(score, terms, N_("With row vectors xᵢ, xⱼ, pᵢ, pⱼ and full 2 × 2 matrices W_Q, W_K of free symbols, "
                       "((xᵢ+pᵢ)W_Q)((xⱼ+pⱼ)W_K)ᵀ minus the four terms expands to 0;"), simplifier=sp.expand)
    import torch

    from pe_core.relative import four_terms

    # small integer inputs, so sympy's exact score is an integer and the float64 code must hit it
    x = torch.tensor([[1.0, -2.0, 0.0], [3.0, 1.0, -1.0], [0.0, 2.0, 2.0]])
    p = torch.tensor([[0.0, 1.0, -1.0], [2.0, 0.0, 1.0], [-1.0, -1.0, 3.0]])
    wq = torch.tensor([[1.0, 0.0, 2.0], [-1.0, 3.0, 0.0], [0.0, 1.0, 1.0]])
    wk = torch.tensor([[2.0, -1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, -2.0]])
    computed = four_terms(x, p, wq, wk).total.reshape(-1).tolist()
    xs, ps, wqs, wks = (sp.Matrix(t.int().tolist()) for t in (x, p, wq, wk))
    exact = list(((xs + ps) * wqs) * ((xs + ps) * wks).T)
    code = numbers_match(computed, exact, N_("and pe_core.relative.four_terms sums to the exact score of a 3-token "
                         "integer example."))
    return all_of([algebra, code])


def _pair(position: sp.Expr) -> sp.Matrix:
    return sp.Matrix([[sp.sin(position * omega), sp.cos(position * omega)]])


def projected_position_term(matrix: sp.Matrix) -> sp.Expr:
    """pᵢ M pⱼᵀ for one sinusoidal pair pₜ = (sin tω, cos tω)."""
    return (_pair(i) * matrix * _pair(j).T)[0]


def _projected_sinusoid():
    m = sp.Matrix([[w11, w12], [w21, w22]])
    split = (sp.Rational(1, 2) * (w11 + w22) * sp.cos((i - j) * omega)
             + sp.Rational(1, 2) * (w12 - w21) * sp.sin((i - j) * omega)
             + sp.Rational(1, 2) * (w22 - w11) * sp.cos((i + j) * omega)
             + sp.Rational(1, 2) * (w12 + w21) * sp.sin((i + j) * omega))
    form = identity(projected_position_term(m), split, N_("pᵢMpⱼᵀ minus the split into (i − j) and (i + j) parts is 0 "
                    "for a general 2 × 2 M;"))
    rotation = sp.Matrix([[w11, w12], [-w12, w11]])
    shift = sp.Symbol("c", integer=True)
    relative = identity(projected_position_term(rotation).subs({i: i + shift, j: j + shift}),
                        projected_position_term(rotation),
                        N_("when M is a scaled rotation (w₂₂ = w₁₁, w₂₁ = −w₁₂) shifting both positions by c changes "
                        "nothing;"))
    return all_of([form, relative])


def _projected_sinusoid_relative():
    m = sp.Matrix([[w11, w12], [w21, w22]])
    shift = sp.Symbol("c", integer=True)
    return identity(projected_position_term(m).subs({i: i + shift, j: j + shift}), projected_position_term(m),
                    N_("sympy shifts both positions by c in pᵢMpⱼᵀ for a general 2 × 2 M and subtracts."),
                    witness={w11: 1, w12: 0, w21: 0, w22: 0, omega: 1, i: 1, j: 0, shift: 1})


def _logit_scale():
    from derivations.caveats import gaussian_expectation

    k_index = sp.Symbol("k", integer=True, positive=True)
    diagonal = identity(sp.Sum(sp.Integer(1), (k_index, 1, d)).doit(), d,
                        N_("E[(q·k)²] = Σₖ E[qₖ²]E[kₖ²] = d once the cross terms E[qₖqₗ] = 0 (k ≠ l) drop out;"),
                        simplifier=sp.simplify)
    qs, ks = sp.symbols("q_0:3", real=True), sp.symbols("k_0:3", real=True)
    dot = sum(qv * kv for qv, kv in zip(qs, ks, strict=True))
    moments = identity(gaussian_expectation(sp.expand(dot**2), qs + ks), 3,
                       N_("with Gaussian moments at d = 3 the expectation is 3;"))
    deberta = identity(3 * d / sp.sqrt(3 * d) ** 2, 1, N_("three independent terms scaled by 1/√(3d) have variance 1;"),
                       simplifier=sp.simplify)
    tupe = identity(2 * d / sp.sqrt(2 * d) ** 2, 1, N_("two scaled by 1/√(2d) too."), simplifier=sp.simplify)
    return all_of([diagonal, moments, deberta, tupe])


def _deberta_scores(p2c_swapped: bool):
    """Ã and the score with query and key roles exchanged, for 3 positions and span k = 2 (scalar embeddings)."""
    import torch

    from pe_core.relative import deberta_index

    n, span = 3, 2
    rel = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # i − j
    delta = deberta_index(rel, span).tolist()
    qc, kc = sp.symbols(f"Qc_0:{n}", real=True), sp.symbols(f"Kc_0:{n}", real=True)
    qr, kr = sp.symbols(f"Qr_0:{2 * span}", real=True), sp.symbols(f"Kr_0:{2 * span}", real=True)

    def score(q_c, k_c, q_r, k_r):
        def entry(r: int, c: int) -> sp.Expr:
            p2c = delta[r][c] if p2c_swapped else delta[c][r]
            return q_c[r] * k_c[c] + q_c[r] * k_r[delta[r][c]] + k_c[c] * q_r[p2c]
        return sp.Matrix(n, n, lambda r, c: entry(r, c))

    return score(qc, kc, qr, kr), score(kc, qc, kr, qr)


def _deberta_symmetry():
    scores, exchanged = _deberta_scores(p2c_swapped=False)
    return identity(exchanged.T, scores, N_("With 3 positions, span k = 2 (δ from pe_core.relative.deberta_index) and free "
                    "symbols for Q^c, K^c, Q^r, K^r: exchanging the query and key projections and transposing gives "
                    "Ã back, entry for entry."), simplifier=sp.expand)


def _deberta_same_delta():
    scores, exchanged = _deberta_scores(p2c_swapped=True)
    return identity(exchanged.T, scores, N_("The same check with δ(i, j) in the position-to-content term."),
                    simplifier=sp.expand)


FOUR_TERMS = Derivation(
    slug="lineage_four_terms",
    title=N_("An absolute-PE score is four terms: content–content, content–position, position–content, position–position"),
    topic=TOPIC,
    claim=Latex(r"\begin{aligned}q_i k_j^{\top} &= (x_i + p_i)W_Q\,W_K^{\top}(x_j + p_j)^{\top}\\ &= "
                r"\underbrace{x_iW_QW_K^{\top}x_j^{\top}}_{\text{content–content}} + "
                r"\underbrace{x_iW_QW_K^{\top}p_j^{\top}}_{\text{content–position}} + "
                r"\underbrace{p_iW_QW_K^{\top}x_j^{\top}}_{\text{position–content}} + "
                r"\underbrace{p_iW_QW_K^{\top}p_j^{\top}}_{\text{position–position}}\end{aligned}",
                N_("content–content"), N_("content–position"), N_("position–content"), N_("position–position")),
    steps=(
        Step(N_("With absolute encodings the position vector is added to the token before the projections "
             "(row vectors, as in the papers)."), r"q_i = (x_i + p_i)W_Q,\qquad k_j = (x_j + p_j)W_K"),
        Step(N_("The score is bilinear, so it splits into four products. Every relative scheme starts here and "
             "decides what to keep, replace or drop: Shaw et al. keep content–position with a^K_{clip(j−i,k)}; "
             "Transformer-XL replaces pⱼ by R_{i−j} and pᵢW_Q by trainable u, v; T5 drops the two cross terms and "
             "learns a scalar per bucket of j − i; DeBERTa keeps both cross terms with relative embeddings and "
             "drops position–position; TUPE drops the cross terms and unties position–position."),
             r"x_iW_QW_K^{\top}x_j^{\top} + x_iW_QW_K^{\top}p_j^{\top} + p_iW_QW_K^{\top}x_j^{\top} + "
             r"p_iW_QW_K^{\top}p_j^{\top}"),
    ),
    check=N_("Expand both sides with free 2 × 2 matrices and row vectors; compare pe_core.relative.four_terms with the "
          "exact score of an integer example."),
    check_function=_four_terms,
    source=cite("transformer_xl", "§3.3") + "; " + cite("tupe"),
)

PROJECTED_SINUSOID = Derivation(
    slug="lineage_projected_sinusoid",
    title=N_("After W_Q W_Kᵀ, the sinusoidal position–position term depends on i + j as well as on i − j"),
    topic=TOPIC,
    claim=r"\begin{gathered}p_t = (\sin t\omega, \cos t\omega),\quad M = \begin{pmatrix}w_{11} & w_{12}\\ w_{21} & "
          r"w_{22}\end{pmatrix}:\\ p_iMp_j^{\top} = \tfrac{w_{11}+w_{22}}{2}\cos(i-j)\omega + "
          r"\tfrac{w_{12}-w_{21}}{2}\sin(i-j)\omega + \tfrac{w_{22}-w_{11}}{2}\cos(i+j)\omega + "
          r"\tfrac{w_{12}+w_{21}}{2}\sin(i+j)\omega\end{gathered}",
    steps=(
        Step(N_("Take one sinusoidal pair and a general 2 × 2 block M of W_QW_Kᵀ."),
             r"p_iMp_j^{\top} = w_{11}\sin i\omega\sin j\omega + w_{12}\sin i\omega\cos j\omega + "
             r"w_{21}\cos i\omega\sin j\omega + w_{22}\cos i\omega\cos j\omega"),
        Step(N_("Product-to-sum turns each product into a difference part and a sum part."),
             r"\sin\alpha\sin\beta = \tfrac12[\cos(\alpha-\beta) - \cos(\alpha+\beta)],\ "
             r"\sin\alpha\cos\beta = \tfrac12[\sin(\alpha+\beta) + \sin(\alpha-\beta)]"),
        Step(N_("The (i + j) parts vanish only when M is a scaled rotation (w₂₂ = w₁₁, w₂₁ = −w₁₂); a learned W_QW_Kᵀ "
             "is not, so absolute sinusoidal encodings do not give attention a purely relative signal. This is why "
             "Transformer-XL puts R_{i−j} into the score directly, and why RoPE rotates q and k instead of adding p.")),
    ),
    check=N_("Expand pᵢMpⱼᵀ for a general M and subtract the split; for a scaled rotation shift i and j by c."),
    check_function=_projected_sinusoid,
    source=cite("vaswani", "§3.5") + "; " + cite("transformer_xl", "§3.3"),
)

SINUSOID_RELATIVE_ANYWAY = Derivation(
    slug="lineage_sinusoid_relative_anyway",
    title=N_("Attention with sinusoidal encodings sees relative position, since PE(i)·PE(j) depends on i − j"),
    topic=TOPIC,
    claim=r"p_iW_QW_K^{\top}p_j^{\top} = f(i - j)",
    steps=(),
    check=N_("Shift both positions by c in pᵢMpⱼᵀ for a general 2 × 2 M."),
    check_function=_projected_sinusoid_relative,
    source=Deferred(N_("a common reading of {source}"), source=cite("vaswani", "§3.5")),
    refutes="lineage_projected_sinusoid",
    said=N_("because $PE(i)\\cdot PE(j)$ depends only on $i - j$, a Transformer with sinusoidal encodings attends by "
         "relative position."),
    shows=N_("the dot product of the raw encodings does depend on $i - j$ only, but attention multiplies them through "
          "$W_QW_K^{\\top}$: $p_iMp_j^{\\top}$ keeps $\\cos(i+j)\\omega$ and $\\sin(i+j)\\omega$ terms unless $M$ is a "
          "scaled rotation (with $M = \\operatorname{diag}(1, 0)$, $i = 1$, $j = 0$ and a shift of 1 the score "
          "changes)."),
)

LOGIT_SCALE = Derivation(
    slug="lineage_logit_scale",
    title=N_("DeBERTa divides by √(3d) and TUPE by √(2d): one √d per independent term keeps the logits at unit variance"),
    topic=TOPIC,
    claim=r"\operatorname{Var}(q\cdot k) = d\ \Rightarrow\ \operatorname{Var}\Big(\tfrac{1}{\sqrt{3d}}"
          r"\big(Q^c_iK^{c\top}_j + Q^c_iK^{r\top}_{\delta(i,j)} + K^c_jQ^{r\top}_{\delta(j,i)}\big)\Big) = 1,\quad "
          r"\operatorname{Var}\Big(\tfrac{1}{\sqrt{2d}}\big(x_iW_Q(x_jW_K)^{\top} + p_iU_Q(p_jU_K)^{\top}\big)\Big) = 1",
    steps=(
        Step(N_("For independent entries of mean 0 and variance 1, a d-dimensional dot product has variance d; that is "
             "why plain attention divides by √d."),
             r"\mathbb{E}\big[(q\cdot k)^2\big] = \sum_{k,l}\mathbb{E}[q_kq_l]\,\mathbb{E}[k_kk_l] = "
             r"\sum_{k}\mathbb{E}[q_k^2]\,\mathbb{E}[k_k^2] = d"),
        Step(N_("DeBERTa adds three such terms and TUPE two; independent terms add their variances, so the divisor "
             "grows to √(3d) and √(2d)."), r"\frac{3d}{(\sqrt{3d})^2} = \frac{2d}{(\sqrt{2d})^2} = 1"),
    ),
    check=N_("Sum the diagonal over a symbolic d, take Gaussian moments at d = 3, and simplify 3d/(√(3d))² and 2d/(√(2d))²."),
    check_function=_logit_scale,
    source=cite("deberta", "§3.1") + "; " + cite("tupe"),
)

DEBERTA_SYMMETRY = Derivation(
    slug="lineage_deberta_symmetry",
    title=N_("DeBERTa's δ(j, i) in the position-to-content term makes query and key play mirror roles"),
    topic=TOPIC,
    claim=Latex(r"\begin{gathered}\tilde A_{ij} = Q^c_iK^{c\top}_j + Q^c_iK^{r\top}_{\delta(i,j)} + "
                r"K^c_jQ^{r\top}_{\delta(j,i)},\quad \delta(i,j) = \begin{cases}0 & i-j\le -k\\ 2k-1 & i-j\ge k\\ "
                r"i-j+k & \text{otherwise}\end{cases}\\ \tilde A\big|_{Q\leftrightarrow K} = \tilde A^{\top}"
                r"\end{gathered}", N_("otherwise")),
    steps=(
        Step(N_("Content-to-position: the query's content looks up the key's position relative to it, δ(i, j)."),
             r"Q^c_i\,K^{r\top}_{\delta(i,j)}"),
        Step(N_("Position-to-content: the key's content looks up the query's position relative to the key, so the "
             "index is δ(j, i) (He et al. 2021, §3.1)."), r"K^c_j\,Q^{r\top}_{\delta(j,i)}"),
        Step(N_("Exchanging the roles of query and key (Q^c ↔ K^c, Q^r ↔ K^r) then maps the score of (i, j) to the score "
             "of (j, i): the two cross terms swap into each other."),
             r"\tilde A\big|_{Q\leftrightarrow K}(j, i) = K^c_jQ^{c\top}_i + K^c_jQ^{r\top}_{\delta(j,i)} + "
             r"Q^c_iK^{r\top}_{\delta(i,j)} = \tilde A_{ij}"),
    ),
    check=N_("Build Ã for 3 positions and span 2 with free symbols, exchange the projections, transpose and subtract."),
    check_function=_deberta_symmetry,
    source=cite("deberta", "§3.1"),
)

DEBERTA_SAME_DELTA = Derivation(
    slug="lineage_deberta_same_delta",
    title=N_("Position-to-content with δ(i, j), like content-to-position"),
    topic=TOPIC,
    claim=r"\tilde A_{ij} = Q^c_iK^{c\top}_j + Q^c_iK^{r\top}_{\delta(i,j)} + K^c_jQ^{r\top}_{\delta(i,j)}",
    steps=(),
    check=N_("Exchange the query and key projections, transpose and compare."),
    check_function=_deberta_same_delta,
    source=N_("a made-up variant, to show what δ(j, i) is for"),
    refutes="lineage_deberta_symmetry",
    said=N_("both cross terms could use the same index δ(i, j)."),
    shows=N_("then exchanging query and key no longer transposes the score: the position-to-content term would read the "
          "key's offset from the query's side, and the mirror symmetry between the two cross terms is lost."),
    counterfactual=True,
)

DERIVATIONS = (FOUR_TERMS, PROJECTED_SINUSOID, LOGIT_SCALE, DEBERTA_SYMMETRY)
WRONG_VARIANTS = (SINUSOID_RELATIVE_ANYWAY, DEBERTA_SAME_DELTA)
