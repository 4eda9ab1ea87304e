"""RoFormer's long-range decay bound rests on Abel summation (summation by parts); here is its sign."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, truth
from i18n import N_, Deferred
from references import cite

TOPIC = N_("Long-range decay")

i = sp.Symbol("i", integer=True, nonnegative=True)
pairs = sp.Symbol("N", integer=True, positive=True)  # N = d/2, symbolic
h, partial = sp.IndexedBase("h"), sp.IndexedBase("S")

_EXPLICIT_LENGTHS = range(1, 7)


def _conventions(expr: sp.Expr, count) -> sp.Expr:
    """Apply S_0 = 0 and h_N = 0."""
    return expr.subs({partial[0]: 0, h[count]: 0})


def _abel_residual(sign: int, count) -> sp.Expr:
    """Σ h_i (S_{i+1} − S_i) minus Σ S_{i+1}·sign·(h_i − h_{i+1}), summed as one sum and evaluated."""
    summand = h[i] * (partial[i + 1] - partial[i]) - partial[i + 1] * sign * (h[i] - h[i + 1])
    return _conventions(sp.Sum(sp.expand(summand), (i, 0, count - 1)).doit(), count)


def _explicit_residual(sign: int, count: int) -> sp.Expr:
    left = sum(h[j] * (partial[j + 1] - partial[j]) for j in range(count))
    right = sum(partial[j + 1] * sign * (h[j] - h[j + 1]) for j in range(count))
    return sp.expand(_conventions(left - right, count))


def _abel():
    symbolic = _abel_residual(+1, pairs)
    explicit = [_explicit_residual(+1, count) for count in _EXPLICIT_LENGTHS]
    holds = symbolic == 0 and all(r == 0 for r in explicit)
    return truth(holds, symbolic,
                 Deferred(N_("For a symbolic length N, sympy merges both sides into one sum, whose summand "
                             "h_{{i+1}}S_{{i+1}} − h_iS_i telescopes to h_N S_N − h_0 S_0 = 0 under S_0 = 0, h_N = 0; "
                             "the sums are also expanded term by term for N = {first} … {last}."),
                          first=_EXPLICIT_LENGTHS.start, last=_EXPLICIT_LENGTHS.stop - 1))


def _flipped_sign():
    symbolic = _abel_residual(-1, pairs)
    explicit = _explicit_residual(-1, 2)
    return truth(symbolic == 0, symbolic,
                 N_("sympy merges both sides into one sum for a symbolic N and evaluates it; also expands N = 2."),
                 Deferred(N_("for N = 2 the two sides differ by {difference}"), difference=f"${sp.latex(explicit)}$")
                 if explicit != 0 else None)


ABEL = Derivation(
    slug="decay_abel_summation",
    title=N_("Abel summation: Σ hᵢ(Sᵢ₊₁ − Sᵢ) = Σ Sᵢ₊₁(hᵢ − hᵢ₊₁), behind RoFormer's decay bound"),
    topic=TOPIC,
    claim=r"\begin{gathered}\sum_{i=0}^{N-1} h_i\,(S_{i+1}-S_i) = \sum_{i=0}^{N-1} S_{i+1}\,(h_i - h_{i+1})\\ "
          r"h_i = q_{[2i:2i+1]}k^{*}_{[2i:2i+1]},\quad S_j = \sum_{l=0}^{j-1} e^{i(m-n)\theta_l},\quad S_0 = 0,\quad "
          r"h_N = 0\end{gathered}",
    steps=(
        Step(N_("Write the complex score as a sum over the N = d/2 pairs; each term is h_i times the increment of the "
                "partial sums S_j of the unit phases."),
             r"\sum_{i=0}^{N-1} h_i e^{i(m-n)\theta_i} = \sum_{i=0}^{N-1} h_i (S_{i+1} - S_i)"),
        Step(N_("Move the difference from S onto h (summation by parts). The product rule for differences says"),
             r"h_{i+1}S_{i+1} - h_iS_i = h_i(S_{i+1}-S_i) + S_{i+1}(h_{i+1}-h_i)"),
        Step(N_("Sum over i: the left side telescopes to h_N S_N − h_0 S_0 = 0, so"),
             r"\sum_{i=0}^{N-1} h_i (S_{i+1}-S_i) = -\sum_{i=0}^{N-1} S_{i+1}(h_{i+1}-h_i) = "
             r"\sum_{i=0}^{N-1} S_{i+1}(h_i - h_{i+1})"),
        Step(N_("Take absolute values. The sign disappears, which is why the bound below is right even where the sign "
                "above is printed the other way round."),
             r"\Big|\sum_i h_i e^{i(m-n)\theta_i}\Big| \le \Big(\max_i |h_{i+1}-h_i|\Big)\sum_{j=1}^{N} |S_j|"),
        Step(N_("So the mean of |S_j| over j, a function of the distance m − n alone, bounds how large the score can be; "
                "the decay page plots it.")),
    ),
    check=N_("Evaluate the difference of the two sides as one sympy Sum for a symbolic N (it telescopes), and expand "
          "both sides explicitly for N = 1 … 6."),
    check_function=_abel,
    source=f"{cite('roformer', '§3.4.3')}; {cite('su_rope')}.",
)

FLIPPED_SIGN = Derivation(
    slug="decay_abel_sign",
    title=N_("Abel summation with (hᵢ₊₁ − hᵢ)"),
    topic=TOPIC,
    claim=r"\sum_{i=0}^{N-1} h_i\,(S_{i+1}-S_i) = \sum_{i=0}^{N-1} S_{i+1}\,(h_{i+1} - h_i)",
    steps=(),
    check=N_("Evaluate the difference of the two sides as one Sum for a symbolic N, and expand N = 2."),
    check_function=_flipped_sign,
    source=Deferred(N_("a common restatement (the derivation: {source})"), source=cite("roformer", "§3.4.3")),
    refutes="decay_abel_summation",
    said=N_("$\\sum_i h_i(S_{i+1}-S_i) = \\sum_i S_{i+1}(h_{i+1}-h_i)$."),
    shows=N_("summation by parts gives $\\sum_i S_{i+1}(h_i - h_{i+1})$, the negative of the printed sum. The "
             "inequality that follows takes absolute values, so the decay bound itself is unaffected."),
)

DERIVATIONS = (ABEL,)
WRONG_VARIANTS = (FLIPPED_SIGN,)
