"""RoPE in the code people read: LLaMA's complex multiplication, transformers' rotate_half, and why the two
agree only once the projection weights are permuted."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Parameter, Step, all_of, identity, numbers_match
from derivations.rope_blocks import block_rotation, frequencies, half_split_form, m, n, vector
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("RoPE in code: complex numbers and rotate_half")

# the subscripts that name the two pairings in the formulas: transformers' rotate_half and Meta's complex form
PAIRINGS = (N_("half"), N_("complex"))
HEAD_DIM = Parameter("d", N_("Head dimension d (for the code-form proofs)"), (2, 4, 6, 8), 4)

_EXAMPLE_DIM, _EXAMPLE_BASE = 8, 10_000


def half_split_order(d: int) -> list[int]:
    """y = x[order]: (x₀, x₂, …, x₁, x₃, …), the layout rotate_half expects for pair i at (i, i + d/2)."""
    return list(range(0, d, 2)) + list(range(1, d, 2))


def complex_form(x: sp.Matrix, position: sp.Expr, d: int) -> sp.Matrix:
    """LLaMA's apply_rotary_emb: (x₂ᵢ + i·x₂ᵢ₊₁)·e^{i·m·θᵢ}, read back as (real, imaginary) pairs."""
    out = []
    for pair, theta in enumerate(frequencies(d)):
        product = sp.expand_complex((x[2 * pair] + sp.I * x[2 * pair + 1]) * sp.exp(sp.I * position * theta))
        out += [sp.re(product), sp.im(product)]
    return sp.Matrix(out)


def _permute(x: sp.Matrix, order: list[int]) -> sp.Matrix:
    return sp.Matrix([x[k] for k in order])


def _forms_agree(d: int):
    x = vector("x", d)
    order = half_split_order(d)
    rotation = identity(complex_form(x, m, d), block_rotation(m, d) * x,
                        Deferred(N_("With d = {d}: the complex form minus R_m x is the zero vector;"), d=d))
    permuted = identity(half_split_form(_permute(x, order), m, d), _permute(complex_form(x, m, d), order),
                        N_("rotate_half's form of x[order] minus the complex form's output reordered the same way is "
                        "the zero vector;"))
    return all_of([rotation, permuted])


def _permuted_weights(d: int):
    z, w = vector("z", d), vector("w", d)  # z = W_q x and w = W_k y: any vectors the projections produce
    order = half_split_order(d)
    scores = identity((half_split_form(_permute(z, order), m, d).T * half_split_form(_permute(w, order), n, d))[0],
                      (complex_form(z, m, d).T * complex_form(w, n, d))[0],
                      Deferred(N_("With d = {d}: rotate_half's score with the rows of W_q, W_k reordered minus the "
                                  "complex form's score with the original rows is 0."), d=d))
    return scores


def _same_weights():
    d = 4  # d = 2 hides the difference: with one pair both layouts coincide
    z, w = vector("z", d), vector("w", d)
    return identity((half_split_form(z, m, d).T * half_split_form(w, n, d))[0],
                    (complex_form(z, m, d).T * complex_form(w, n, d))[0],
                    N_("With d = 4, sympy subtracts the complex form's score from rotate_half's score with the same, "
                    "unpermuted rows of W_q and W_k."))


def _example():
    exact = [sp.Integer(_EXAMPLE_BASE) ** sp.Rational(-2 * i, _EXAMPLE_DIM) for i in range(_EXAMPLE_DIM // 2)]
    powers = identity(exact, [sp.Rational(1, 10**i) for i in range(_EXAMPLE_DIM // 2)],
                      N_("10000^(−2i/8) = 10^(−i): θ = 1, 0.1, 0.01, 0.001;"), simplifier=sp.simplify)
    from pe_core.rope_code import precompute_freqs_cis

    cis = precompute_freqs_cis(_EXAMPLE_DIM, 4, float(_EXAMPLE_BASE))
    computed = [v for z in cis.reshape(-1).tolist() for v in (z.real, z.imag)]
    expected = [f(position * theta) for position in range(4) for theta in exact for f in (sp.cos, sp.sin)]
    code = numbers_match([c for c, e in zip(computed, expected, strict=True) if e != 0],
                         [e for e in expected if e != 0],
                         N_("and pe_core.rope_code.precompute_freqs_cis(8, 4, 10000) holds e^{i·m·θᵢ} for m = 0 … 3 "
                         "to 1e-12 (exact zeros at m = 0 aside)."))
    zeros = all(abs(c) < 1e-300 for c, e in zip(computed, expected, strict=True) if e == 0)
    from derivations.base import truth

    return all_of([powers, code, truth(zeros, sp.S.Zero, N_("sin 0 is exactly 0 in the code."))])


FORMS_AGREE = Derivation(
    slug="code_complex_equals_rotate_half",
    title=N_("LLaMA's complex multiplication and rotate_half compute the same rotation, in different coordinate orders"),
    topic=TOPIC,
    claim=r"\begin{gathered}\big(x_{2i} + \mathrm{i}\,x_{2i+1}\big)e^{\mathrm{i}m\theta_i} = "
          r"(R_mx)_{2i} + \mathrm{i}\,(R_mx)_{2i+1},\\ y = x[\,0, 2, \dots, d-2,\ 1, 3, \dots, d-1\,]:\quad "
          r"y\otimes\cos + \operatorname{rotate\_half}(y)\otimes\sin = (R_mx)[\,0, 2, \dots,\ 1, 3, \dots\,]\end{gathered}",
    steps=(
        Step(N_("LLaMA's `apply_rotary_emb` views the last dimension as d/2 complex numbers, neighbours paired "
             "(x₀ + i·x₁, x₂ + i·x₃, …), multiplies by `freqs_cis` = e^{i·m·θᵢ} and views the result as real again."),
             r"(a + \mathrm{i}b)(\cos\phi + \mathrm{i}\sin\phi) = (a\cos\phi - b\sin\phi) + "
             r"\mathrm{i}\,(a\sin\phi + b\cos\phi)"),
        Step(N_("That is the 2 × 2 rotation of each neighbouring pair: interleaved RoPE."), r"R_m x"),
        Step(N_("transformers' `rotate_half` pairs coordinate i with i + d/2. Reorder x so that pair i sits there "
             "(evens first, then odds) and the same rotation comes out, in that order."),
             r"\operatorname{rotate\_half}(y) = (-y_{d/2}, \dots, -y_{d-1}, y_0, \dots, y_{d/2-1})"),
    ),
    check=N_("Build the complex form, R_m x and rotate_half's form of the reordered x for the chosen d with free θᵢ, "
          "and subtract."),
    check_function=_forms_agree,
    parameter=HEAD_DIM,
    source=cite("llama_code") + "; " + cite("transformers_rope"),
)

PERMUTED_WEIGHTS = Derivation(
    slug="code_permuted_weights",
    title=N_("The two pairings give the same attention scores once the rows of W_q and W_k are reordered"),
    topic=TOPIC,
    claim=Latex(r"\begin{gathered}\big\langle \operatorname{RoPE}_{\text{half}}(P W_q x, m),\ "
                r"\operatorname{RoPE}_{\text{half}}(P W_k y, n)\big\rangle = \big\langle "
                r"\operatorname{RoPE}_{\text{complex}}(W_q x, m),\ \operatorname{RoPE}_{\text{complex}}(W_k y, n)"
                r"\big\rangle,\\ (Pz) = z[\,0, 2, \dots,\ 1, 3, \dots\,]\end{gathered}", *PAIRINGS),
    steps=(
        Step(N_("Reordering the rows of W_q reorders the coordinates of q = W_q x; by the previous claim rotate_half "
             "then returns the complex form's output in that order."),
             Latex(r"\operatorname{RoPE}_{\text{half}}(Pz, m) = P\,\operatorname{RoPE}_{\text{complex}}(z, m)",
                   *PAIRINGS)),
        Step(N_("A reordering is orthogonal (PᵀP = I), so it cancels in every dot product: the scores agree. This is "
             "the permutation the LLaMA-to-transformers conversion script applies to W_q and W_k (not to W_v)."),
             r"(Pa)^{\top}(Pb) = a^{\top}b"),
    ),
    check=N_("Build both scores for the chosen d with free vectors z = W_q x, w = W_k y and free θᵢ, and subtract."),
    check_function=_permuted_weights,
    parameter=HEAD_DIM,
    source=cite("llama_conversion") + "; " + cite("llama_code"),
)

SAME_WEIGHTS = Derivation(
    slug="code_same_weights",
    title=N_("A checkpoint works unchanged under either pairing"),
    topic=TOPIC,
    claim=Latex(r"\big\langle \operatorname{RoPE}_{\text{half}}(W_q x, m),\ \operatorname{RoPE}_{\text{half}}(W_k y, n)"
                r"\big\rangle = \big\langle \operatorname{RoPE}_{\text{complex}}(W_q x, m),\ "
                r"\operatorname{RoPE}_{\text{complex}}(W_k y, n)\big\rangle", *PAIRINGS),
    steps=(),
    check=N_("Subtract the two scores with the same weights at d = 4."),
    check_function=_same_weights,
    source=N_("a porting mistake, made up here to show what the permutation is for"),
    refutes="code_permuted_weights",
    said=N_("weights trained with LLaMA's interleaved pairs can be run with `rotate_half` as they are."),
    shows=N_("without the permutation `rotate_half` rotates the pairs $(z_0, z_2)$ and $(z_1, z_3)$ where the model learnt "
          "$(z_0, z_1)$ and $(z_2, z_3)$: the scores differ at every $d \\ge 4$ ($d = 2$ has one pair and hides it)."),
    counterfactual=True,
)

EXAMPLE = Derivation(
    slug="code_d8_example",
    title=N_("The worked example: d = 8 and base 10,000 give θ = 1, 0.1, 0.01, 0.001"),
    topic=TOPIC,
    claim=r"\theta_i = 10000^{-2i/8} = 10^{-i},\quad i = 0, 1, 2, 3,\qquad "
          r"\texttt{freqs\_cis}[m, i] = e^{\mathrm{i}\,m\theta_i}",
    steps=(
        Step(N_("precompute_freqs_cis(dim = 8, end, theta = 10000) takes arange(0, 8, 2)/8 = 0, 1/4, 1/2, 3/4 as "
             "exponents."), r"\theta_i = 10000^{-(0,\,1/4,\,1/2,\,3/4)} = (1,\ 0.1,\ 0.01,\ 0.001)"),
        Step(N_("It then takes the outer product with the positions and `torch.polar(1, angle)`: one unit complex number "
             "per position and pair."), r"\texttt{freqs\_cis}[m, i] = \cos m\theta_i + \mathrm{i}\sin m\theta_i"),
    ),
    check=N_("Simplify 10000^(−2i/8) exactly and compare pe_core's precompute_freqs_cis with sympy's cos and sin."),
    check_function=_example,
    source=cite("llama_code"),
)

DERIVATIONS = (EXAMPLE, FORMS_AGREE, PERMUTED_WEIGHTS)
WRONG_VARIANTS = (SAME_WEIGHTS,)
