"""RoPE in two dimensions: a rotation by mθ, seen as a matrix and as a complex number."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity
from i18n import N_, Deferred
from references import cite

TOPIC = N_("RoPE in two dimensions")

m, n, theta = sp.symbols("m n theta", real=True)
q1, q2, k1, k2 = sp.symbols("q_1 q_2 k_1 k_2", real=True)
q = sp.Matrix([q1, q2])
k = sp.Matrix([k1, k2])

ROTATION_LATEX = r"R_{m} = \begin{pmatrix}\cos m\theta & -\sin m\theta\\ \sin m\theta & \cos m\theta\end{pmatrix}"


def rotation(angle: sp.Expr) -> sp.Matrix:
    """The 2 × 2 matrix that turns a vector anticlockwise by ``angle``."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def score(position_q: sp.Expr, position_k: sp.Expr) -> sp.Expr:
    """(R_m q)ᵀ (R_n k): the attention score after rotating q at m and k at n."""
    return ((rotation(position_q * theta) * q).T * (rotation(position_k * theta) * k))[0]


def _relative():
    lhs = score(m, n)
    rhs = (q.T * rotation((n - m) * theta) * k)[0]
    return identity(lhs, rhs, N_("With m, n, θ, q₁, q₂, k₁, k₂ symbolic reals, sympy expands (R_m q)ᵀ(R_n k) − qᵀR_{n−m}k "
                    "(angle-sum formulas, then sin² + cos² = 1) and gets exactly 0."))


def _relative_sign_flip():
    lhs = score(m, n)
    rhs = (q.T * rotation((m - n) * theta) * k)[0]
    return identity(lhs, rhs, N_("sympy expands (R_m q)ᵀ(R_n k) − qᵀR_{m−n}k with every symbol free."))


def _norm():
    rotated = rotation(m * theta) * q
    orthogonal = identity(rotation(m * theta).T * rotation(m * theta), sp.eye(2),
                          N_("R_mᵀR_m − I simplifies to the zero matrix;"))
    length = identity((rotated.T * rotated)[0], (q.T * q)[0], N_("‖R_m q‖² − ‖q‖² simplifies to 0 for symbolic m, θ, q."))
    return all_of([orthogonal, length])


def _complex_form():
    q_complex = q1 + sp.I * q2
    k_complex = k1 + sp.I * k2
    complex_score = sp.re(sp.expand_complex(q_complex * sp.conjugate(k_complex) * sp.exp(sp.I * (m - n) * theta)))
    expanded = (q1 * k1 + q2 * k2) * sp.cos((m - n) * theta) - (q2 * k1 - q1 * k2) * sp.sin((m - n) * theta)
    rotated = sp.expand_complex(q_complex * sp.exp(sp.I * m * theta))
    as_vector = rotation(m * theta) * q
    return all_of([
        identity(complex_score, expanded, N_("Re[q k* e^{i(m−n)θ}] minus the expanded real form is 0;")),
        identity(expanded, score(m, n), N_("the expanded form minus (R_m q)ᵀ(R_n k) is 0;")),
        identity([sp.re(rotated), sp.im(rotated)], list(as_vector),
                 N_("and (Re, Im) of q·e^{imθ} equals R_m q, for symbolic reals m, n, θ, q, k.")),
    ])


def _complex_sign_flip():
    restated = [sp.cos(m * theta) * q1 - sp.sin(m * theta) * q2, sp.sin(m * theta) * q1 - sp.cos(m * theta) * q2]
    return identity(restated, list(rotation(m * theta) * q), N_("sympy subtracts R_m q from the restated vector."))


RELATIVE = Derivation(
    slug="rope2d_relative",
    title=N_("Rotating q by mθ and k by nθ leaves a score that depends only on n − m"),
    topic=TOPIC,
    claim=r"(R_{m}\,q)^{\top}(R_{n}\,k) \;=\; q^{\top} R_{n-m}\, k,\qquad " + ROTATION_LATEX,
    steps=(
        Step(N_("Transpose the rotated query. A rotation's transpose turns the other way, so it is the rotation by −mθ."),
             r"(R_m q)^\top = q^\top R_m^\top = q^\top R_{-m}"),
        Step(N_("Two rotations in a row add their angles (multiply the matrices and use the angle-sum formulas)."),
             r"R_{-m}R_{n} = \begin{pmatrix}\cos m\theta\cos n\theta+\sin m\theta\sin n\theta & "
             r"\sin m\theta\cos n\theta-\cos m\theta\sin n\theta\\ \cos m\theta\sin n\theta-\sin m\theta\cos n\theta & "
             r"\cos m\theta\cos n\theta+\sin m\theta\sin n\theta\end{pmatrix} = R_{n-m}"),
        Step(N_("So the score sees only the offset n − m: moving both tokens by the same amount changes nothing."),
             r"(R_m q)^\top (R_n k) = q^\top R_{n-m} k"),
    ),
    check=N_("Expand both sides symbolically (m, n, θ and the four coordinates free) and subtract."),
    check_function=_relative,
    source=f"{cite('roformer', 'eq. 14')}; {cite('su_rope')}.",
)

RELATIVE_SIGN_FLIP = Derivation(
    slug="rope2d_relative_sign_flip",
    title=N_("Writing the middle matrix as Rₘ₋ₙ"),
    topic=TOPIC,
    claim=r"(R_{m}\,q)^{\top}(R_{n}\,k) \;=\; q^{\top} R_{m-n}\, k",
    steps=(),
    check=N_("Subtract qᵀR_{m−n}k from the rotated score."),
    check_function=_relative_sign_flip,
    source=Deferred(N_("a common restatement (the identity: {source})"), source=cite("roformer", "eq. 14")),
    refutes="rope2d_relative",
    said=N_(r"the matrix between $q^\top$ and $k$ is $\begin{pmatrix}\cos((m-n)\theta) & -\sin((m-n)\theta)\\ "
            r"\sin((m-n)\theta) & \cos((m-n)\theta)\end{pmatrix}$, i.e. $R_{m-n}$."),
    shows=N_(r"the product $R_m^\top R_n$ has $+\sin((m-n)\theta)$ in its top-right corner, so it is $R_{n-m}$; "
             r"the two scores differ by $2(q_1k_2-q_2k_1)\sin((m-n)\theta)$. The write-up's own expanded sum is right; "
             r"only the matrix it packs it into has the sign flipped."),
)

NORM = Derivation(
    slug="rope2d_norm",
    title=N_("A rotation keeps every vector's length"),
    topic=TOPIC,
    claim=r"R_m^{\top}R_m = I \quad\Longrightarrow\quad \lVert R_m\, q\rVert = \lVert q\rVert",
    steps=(
        Step(N_("Multiply the matrix by its transpose; the off-diagonal terms cancel and the diagonal is sin² + cos²."),
             r"R_m^\top R_m = \begin{pmatrix}\cos^2 m\theta+\sin^2 m\theta & 0\\ 0 & \sin^2 m\theta+\cos^2 m\theta"
             r"\end{pmatrix} = I"),
        Step(N_("Then the squared length is unchanged."),
             r"\lVert R_m q\rVert^2 = q^\top R_m^\top R_m q = q^\top q = \lVert q\rVert^2"),
        Step(N_("This is why RoPE does not change the scale of q or k, only their direction, at any position.")),
    ),
    check=N_("Simplify R_mᵀR_m − I and ‖R_m q‖² − ‖q‖² to zero with every symbol free."),
    check_function=_norm,
    source=cite("roformer"),
)

COMPLEX_FORM = Derivation(
    slug="rope2d_complex",
    title=N_("The complex form Re[q·k*·e^(i(m−n)θ)] is the same score"),
    topic=TOPIC,
    claim=r"\begin{aligned}\operatorname{Re}\!\left[q\,k^{*}e^{\,i(m-n)\theta}\right] &= (q_1k_1+q_2k_2)"
          r"\cos((m-n)\theta) - (q_2k_1-q_1k_2)\sin((m-n)\theta)\\ &= (R_m q)^{\top}(R_n k)\end{aligned}",
    steps=(
        Step(N_("Read the 2-D vectors as complex numbers; multiplying by e^{imθ} is the rotation R_m."),
             r"q = q_1 + i q_2,\qquad q\,e^{im\theta} = (q_1\cos m\theta - q_2\sin m\theta) + "
             r"i\,(q_2\cos m\theta + q_1\sin m\theta)"),
        Step(N_("Multiply q by the conjugate of k."),
             r"q\,k^{*} = (q_1k_1 + q_2k_2) + i\,(q_2k_1 - q_1k_2)"),
        Step(N_("Multiply by e^{i(m−n)θ} = cos((m−n)θ) + i sin((m−n)θ) and keep the real part."),
             r"\operatorname{Re}[q k^{*} e^{i(m-n)\theta}] = (q_1k_1+q_2k_2)\cos((m-n)\theta) - "
             r"(q_2k_1-q_1k_2)\sin((m-n)\theta)"),
        Step(N_("Since Re[z w*] is the dot product of z and w as 2-D vectors, this is the rotated score."),
             r"\operatorname{Re}[(q e^{im\theta})(k e^{in\theta})^{*}] = (R_m q)^\top (R_n k)"),
    ),
    check=N_("Compute the real part with sympy's complex expansion (real symbols), subtract the expanded form and the "
          "rotated score, and compare (Re, Im) of q·e^{imθ} with R_m q."),
    check_function=_complex_form,
    source=cite("roformer", "eq. 12–13"),
)

COMPLEX_SIGN_FLIP = Derivation(
    slug="rope2d_complex_sign_flip",
    title=N_("The second coordinate of Rₘq with a minus sign"),
    topic=TOPIC,
    claim=r"R_m q = \left(\cos m\theta\, q_1 - \sin m\theta\, q_2,\;\; \sin m\theta\, q_1 - \cos m\theta\, q_2\right)",
    steps=(),
    check=N_("Subtract R_m q from the restated vector."),
    check_function=_complex_sign_flip,
    source=Deferred(N_("a common restatement (the complex form: {source})"), source=cite("roformer", "eq. 12–13")),
    refutes="rope2d_complex",
    said=N_(r"$R_m q = (\cos m\theta\,q_1 - \sin m\theta\,q_2,\; \sin m\theta\,q_1 - \cos m\theta\,q_2)$."),
    shows=N_(r"the second coordinate is $\sin m\theta\,q_1 + \cos m\theta\,q_2$ (the imaginary part of "
             r"$(q_1+iq_2)e^{im\theta}$); the restated version is off by $2\cos m\theta\,q_2$."),
)

DERIVATIONS = (RELATIVE, NORM, COMPLEX_FORM)
WRONG_VARIANTS = (RELATIVE_SIGN_FLIP, COMPLEX_SIGN_FLIP)
