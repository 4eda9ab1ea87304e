"""RoPE in d dimensions: d/2 independent 2-D rotations, and the two ways code lays them out."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Parameter, Step, all_of, identity
from derivations.rope_2d import rotation
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("Block-diagonal RoPE in d dimensions")

HEAD_DIM = Parameter("d", N_("Head dimension d (for the block-diagonal proofs)"), (2, 4, 6, 8), 4)

m, n = sp.symbols("m n", real=True)


def frequencies(d: int) -> list[sp.Symbol]:
    """θ_0 … θ_{d/2−1} as free positive symbols: the identities hold for any frequencies."""
    return list(sp.symbols(f"theta_0:{d // 2}", positive=True))


def vector(name: str, d: int) -> sp.Matrix:
    return sp.Matrix(sp.symbols(f"{name}_0:{d}", real=True))


def block_rotation(position: sp.Expr, d: int) -> sp.Matrix:
    """R_m: d/2 rotations by mθ_i on the diagonal (pairs (0,1), (2,3), …)."""
    return sp.diag(*[rotation(position * t) for t in frequencies(d)])


def interleaved_form(x: sp.Matrix, position: sp.Expr, d: int) -> sp.Matrix:
    """x ⊗ cos + rotate_pairs(x) ⊗ sin with each angle repeated for its pair (RoFormer eq. 34)."""
    angles = [position * t for t in frequencies(d) for _ in range(2)]
    turned = sp.Matrix([-x[j + 1] if j % 2 == 0 else x[j - 1] for j in range(d)])
    cos = sp.Matrix([sp.cos(a) for a in angles])
    sin = sp.Matrix([sp.sin(a) for a in angles])
    return x.multiply_elementwise(cos) + turned.multiply_elementwise(sin)


def half_split_form(x: sp.Matrix, position: sp.Expr, d: int) -> sp.Matrix:
    """LLaMA/transformers: x ⊗ cos + rotate_half(x) ⊗ sin, angles listed once per half."""
    half = d // 2
    angles = [position * t for t in frequencies(d)] * 2
    turned = sp.Matrix([-x[j + half] for j in range(half)] + [x[j] for j in range(half)])
    cos = sp.Matrix([sp.cos(a) for a in angles])
    sin = sp.Matrix([sp.sin(a) for a in angles])
    return x.multiply_elementwise(cos) + turned.multiply_elementwise(sin)


def half_split_permutation(d: int) -> sp.Matrix:
    """P with (P x)_{2i} = x_i and (P x)_{2i+1} = x_{i+d/2}: the half-split layout, interleaved."""
    half = d // 2
    permutation = sp.zeros(d, d)
    for i in range(half):
        permutation[2 * i, i] = 1
        permutation[2 * i + 1, i + half] = 1
    return permutation


def _relative(d: int):
    lhs = block_rotation(m, d).T * block_rotation(n, d)
    rhs = block_rotation(n - m, d)
    return all_of([
        identity(lhs, rhs, Deferred(N_("R_mᵀR_n − R_(n−m) is the zero {d}×{d} matrix;"), d=d)),
        identity(block_rotation(m, d).T * block_rotation(m, d), sp.eye(d), N_("and R_mᵀR_m = I,")),
    ], Deferred(N_("With d = {d}, symbolic m, n and free frequencies θ_0 … θ_{last}: R_mᵀR_n − R_(n−m) is the "
                   "zero {d}×{d} matrix and R_mᵀR_m = I."), d=d, last=d // 2 - 1))


def _interleaved(d: int):
    x = vector("x", d)
    return identity(interleaved_form(x, m, d), block_rotation(m, d) * x,
                    Deferred(N_("With d = {d}: the element-wise form minus R_m x, for a symbolic x and free θ_i, "
                                "is the zero vector."), d=d))


def _half_split(d: int):
    x = vector("x", d)
    permutation = half_split_permutation(d)
    same_rotation = identity(half_split_form(x, m, d), permutation.T * block_rotation(m, d) * permutation * x,
                             Deferred(N_("With d = {d}: rotate_half's form minus Pᵀ R_m P x is the zero vector;"), d=d))
    orthogonal = identity(permutation.T * permutation, sp.eye(d), N_("P is a permutation (PᵀP = I), so scores are "
                          "unchanged when W_q and W_k are permuted the same way."))
    return all_of([same_rotation, orthogonal])


def _missing_transpose():
    d = 2
    w_q = sp.Matrix(2, 2, sp.symbols("a_0:4", real=True))
    w_k = sp.Matrix(2, 2, sp.symbols("b_0:4", real=True))
    x, y = vector("x", d), vector("y", d)
    lhs = ((block_rotation(m, d) * w_q * x).T * (block_rotation(n, d) * w_k * y))[0]
    restated = (x.T * w_q * block_rotation(n - m, d) * w_k * y)[0]
    return identity(lhs, restated, N_("sympy subtracts the restated form from the rotated score for general 2×2 W_q, "
                    "W_k."))


BLOCK_RELATIVE = Derivation(
    slug="blocks_relative",
    title=N_("In d dimensions Rₘᵀ Rₙ = Rₙ₋ₘ, block by block"),
    topic=TOPIC,
    claim=r"R^{d}_{\Theta,m} = \operatorname{diag}\big(R(m\theta_0), \dots, R(m\theta_{d/2-1})\big),\qquad "
          r"(R^{d}_{\Theta,m})^{\top} R^{d}_{\Theta,n} = R^{d}_{\Theta,n-m}",
    steps=(
        Step(N_("Split q and k into d/2 pairs; pair i is rotated by its own angle mθ_i and pairs never mix."),
             r"R^{d}_{\Theta,m} = \begin{pmatrix} R(m\theta_0) & & \\ & \ddots & \\ & & "
             r"R(m\theta_{d/2-1})\end{pmatrix}"),
        Step(N_("A product of block-diagonal matrices is block-diagonal, block by block."),
             r"(R^{d}_{\Theta,m})^{\top} R^{d}_{\Theta,n} = "
             r"\operatorname{diag}\big(R(m\theta_i)^\top R(n\theta_i)\big)_i"),
        Step(N_("Each block is the 2-D identity from above, so the whole score depends on n − m only."),
             r"q^\top (R^{d}_{\Theta,m})^{\top} R^{d}_{\Theta,n} k = \sum_{i=0}^{d/2-1} q_{[2i:2i+1]}^{\top} "
             r"R((n-m)\theta_i)\, k_{[2i:2i+1]}"),
    ),
    check=N_("Build the d × d matrices for the chosen d with free symbols θ_i and subtract."),
    check_function=_relative,
    parameter=HEAD_DIM,
    source=cite("roformer", "eq. 14–15"),
)

MISSING_TRANSPOSE = Derivation(
    slug="blocks_missing_transpose",
    title=N_("Leaving out the transpose of W_q"),
    topic=TOPIC,
    claim=r"(R_m W_q x_m)^{\top}(R_n W_k x_n) = x_m^{\top} W_q\, R_{n-m} W_k\, x_n",
    steps=(),
    check=N_("Subtract the restated form from the rotated score with general (non-symmetric) W_q and W_k."),
    check_function=_missing_transpose,
    source=Deferred(N_("a common restatement (the score: {source})"), source=cite("roformer", "eq. 14–15")),
    refutes="blocks_relative",
    said=N_(r"$q_m^\top k_n = x_m^\top W_q R_{n-m} W_k x_n$."),
    shows=N_(r"a transpose is missing: $q_m^\top k_n = x_m^\top W_q^{\top} R_{n-m} W_k x_n$. The two agree only when "
             r"$W_q$ is symmetric, which a learned projection is not."),
)

INTERLEAVED = Derivation(
    slug="blocks_interleaved",
    title=N_("The element-wise form x ⊗ cos + rotate(x) ⊗ sin equals Rₘx (interleaved pairs)"),
    topic=TOPIC,
    claim=r"R^{d}_{\Theta,m}x = \begin{pmatrix}x_0\\x_1\\x_2\\x_3\\ \vdots\end{pmatrix}\otimes"
          r"\begin{pmatrix}\cos m\theta_0\\ \cos m\theta_0\\ \cos m\theta_1\\ \cos m\theta_1\\ \vdots\end{pmatrix} + "
          r"\begin{pmatrix}-x_1\\x_0\\-x_3\\x_2\\ \vdots\end{pmatrix}\otimes"
          r"\begin{pmatrix}\sin m\theta_0\\ \sin m\theta_0\\ \sin m\theta_1\\ \sin m\theta_1\\ \vdots\end{pmatrix}",
    steps=(
        Step(N_("Row 2i of R_m x only involves x_{2i} and x_{2i+1}."),
             r"(R_m x)_{2i} = x_{2i}\cos m\theta_i - x_{2i+1}\sin m\theta_i,\quad "
             r"(R_m x)_{2i+1} = x_{2i+1}\cos m\theta_i + x_{2i}\sin m\theta_i"),
        Step(N_("Collect the cosine terms and the sine terms into two element-wise products; no d × d matrix is ever "
                "built, which is how every implementation computes RoPE (O(d) instead of O(d²) per vector).")),
    ),
    check=N_("Build both sides for the chosen d with a symbolic vector x and free θ_i, and subtract."),
    check_function=_interleaved,
    parameter=HEAD_DIM,
    source=cite("roformer", "eq. 34"),
)

HALF_SPLIT = Derivation(
    slug="blocks_half_split",
    title=N_("LLaMA's rotate_half pairs dimension i with i + d/2: the same rotation, up to a permutation"),
    topic=TOPIC,
    claim=r"\begin{gathered}x\otimes\begin{pmatrix}\cos m\theta\\ \cos m\theta\end{pmatrix} + "
          r"\begin{pmatrix}-x_{[d/2:d]}\\ x_{[0:d/2]}\end{pmatrix}\otimes\begin{pmatrix}\sin m\theta\\ "
          r"\sin m\theta\end{pmatrix} = P^{\top}R^{d}_{\Theta,m}P\,x\\ (Px)_{2i} = x_i,\quad "
          r"(Px)_{2i+1} = x_{i+d/2}\end{gathered}",
    steps=(
        Step(N_("transformers' `rotate_half` splits x into halves and pairs coordinate i with i + d/2; "
                "cos and sin list the d/2 angles once for each half."),
             r"\operatorname{rotate\_half}(x) = (-x_{d/2}, \dots, -x_{d-1},\; x_0, \dots, x_{d/2-1})"),
        Step(N_("Permute the coordinates so that each pair sits side by side: P is exactly that shuffle."),
             r"Px = (x_0, x_{d/2}, x_1, x_{d/2+1}, \dots)"),
        Step(N_("In the shuffled coordinates the half-split form is the interleaved RoPE, so it is Pᵀ R_m P."),
             Latex(r"\text{half-split}(x) = P^\top R_m P x", N_("half-split"))),
        Step(N_("P is orthogonal, so if the rows of W_q and W_k are permuted the same way (as the LLaMA "
                "conversion scripts do) the attention scores are identical."),
             r"(P^\top R_m P q)^\top (P^\top R_n P k) = (Pq)^\top R_{n-m} (Pk)"),
    ),
    check=N_("Build rotate_half's form, the permutation P and Pᵀ R_m P x for the chosen d, and subtract."),
    check_function=_half_split,
    parameter=HEAD_DIM,
    source=Deferred(N_("transformers' `apply_rotary_pos_emb` and `rotate_half`; {source}."),
                    source=cite("roformer", "eq. 34")),
)

DERIVATIONS = (BLOCK_RELATIVE, INTERLEAVED, HALF_SPLIT)
WRONG_VARIANTS = (MISSING_TRANSPOSE,)
