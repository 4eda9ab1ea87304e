"""ALiBi's head slopes: a geometric sequence for 2^k heads, and the interleaving rule for other counts."""

from __future__ import annotations

import sympy as sp

from derivations.base import Derivation, Step, all_of, identity, numbers_match, power_zero
from i18n import N_, Deferred, Latex
from references import cite

TOPIC = N_("ALiBi slopes")

heads = sp.Symbol("n", positive=True)
head = sp.Symbol("h", positive=True)
block = sp.Symbol("c", positive=True)  # the largest power of two ≤ the head count
extra = sp.Symbol("j", nonnegative=True)

_CHECKED_HEAD_COUNTS = range(1, 65)


def slope(head_index: sp.Expr, head_count: sp.Expr = heads) -> sp.Expr:
    """m_h = 2^{−8h/n} for heads h = 1 … n (Press et al. 2022)."""
    return sp.Integer(2) ** (sp.Integer(-8) * head_index / head_count)


def paper_slopes(head_count: int) -> list[sp.Expr]:
    """Exact slopes for any head count, by the reference code's rule."""
    closest = 1 << (head_count.bit_length() - 1)
    slopes = [slope(h, closest) for h in range(1, closest + 1)]
    slopes += [slope(2 * j + 1, 2 * closest) for j in range(head_count - closest)]
    return slopes


def _power_of_two():
    ratio = identity(slope(head + 1) / slope(head), slope(1), N_("m_{h+1}/m_h = 2^{−8/n} = m_1 (so the sequence starts "
                     "at its own ratio);"), simplifier=power_zero)
    last = identity(slope(heads), sp.Rational(1, 256), N_("m_n = 2^{−8} = 1/256 for every n;"), simplifier=power_zero)
    from pe_core.biases import alibi_slopes

    eight = numbers_match(alibi_slopes(8).tolist(), [sp.Rational(1, 2**h) for h in range(1, 9)],
                          N_("and pe_core.alibi_slopes(8) is exactly 1/2, 1/4, …, 1/256."), rtol=0.0)
    return all_of([ratio, last, eight])


def _other_counts():
    midpoint = identity(slope(2 * extra + 1, 2 * block), sp.sqrt(slope(extra, block) * slope(extra + 1, block)),
                        N_("each added slope 2^{−8(2j+1)/(2c)} is the geometric mean of 2^{−8j/c} and 2^{−8(j+1)/c};"),
                        simplifier=power_zero)
    from pe_core.biases import alibi_slopes

    computed, exact = [], []
    for count in _CHECKED_HEAD_COUNTS:
        computed += alibi_slopes(count).tolist()
        exact += paper_slopes(count)
    # The code raises a rounded ratio to the h-th power, so its relative error grows like h·2^{-53}.
    code = numbers_match(computed, exact, Deferred(N_("and pe_core.alibi_slopes matches the exact rule for every "
                         "head count {first} … {last} (to 1e-13)."), first=_CHECKED_HEAD_COUNTS.start,
                         last=_CHECKED_HEAD_COUNTS.stop - 1), rtol=1e-13)
    return all_of([midpoint, code])


def _misquoted_formula():
    misquoted = [sp.Integer(2) ** sp.Rational(-8, h) for h in range(1, 9)]  # m_n = 2^(-8/n), a common misquote
    paper = [slope(h, 8) for h in range(1, 9)]
    return identity(misquoted, paper, N_("sympy subtracts the paper's slopes from the misquoted ones for 8 heads."),
                    simplifier=power_zero)


POWER_OF_TWO = Derivation(
    slug="alibi_power_of_two",
    title=N_("For 2ᵏ heads the slopes 2^(−8h/n) form a geometric sequence from 2^(−8/n) down to 1/256"),
    topic=TOPIC,
    claim=r"m_h = 2^{-8h/n}\ (h = 1,\dots,n):\qquad \frac{m_{h+1}}{m_h} = 2^{-8/n} = m_1,\qquad m_n = 2^{-8}",
    steps=(
        Step(N_("ALiBi adds −m_h·(i − j) to the score of query i and key j in head h; each head gets its own slope."),
             r"\operatorname{softmax}\!\big(q_i K^\top + m_h\,[-(i-1), \dots, -1, 0]\big)"),
        Step(N_("The paper picks a geometric sequence that starts at 2^{−8/n} and uses that same number as its ratio."),
             r"m_h = \big(2^{-8/n}\big)^{h} = 2^{-8h/n}"),
        Step(N_("So the last head always has slope 2^{−8} = 1/256, and 8 heads get 1/2, 1/4, …, 1/256."),
             r"m_n = 2^{-8}"),
    ),
    check=N_("Simplify m_{h+1}/m_h − m_1 and m_n − 1/256 for symbolic n, h, and compare pe_core.alibi_slopes(8) exactly."),
    check_function=_power_of_two,
    source=Deferred(N_("{source} and its reference code."), source=cite("alibi", "§3")),
)

OTHER_COUNTS = Derivation(
    slug="alibi_other_counts",
    title=N_("Other head counts: the slopes of the nearest smaller power of two, then in-between slopes"),
    topic=TOPIC,
    claim=r"\begin{gathered}n = c + r,\quad c = 2^{\lfloor\log_2 n\rfloor}:\qquad m = \big(2^{-8h/c}\big)_{h=1}^{c}"
          r"\ \Vert\ \big(2^{-8(2j+1)/(2c)}\big)_{j=0}^{r-1}\\ 2^{-8(2j+1)/(2c)} = \sqrt{2^{-8j/c}\,2^{-8(j+1)/c}}"
          r"\end{gathered}",
    steps=(
        Step(N_("Take the c = 2^{⌊log₂ n⌋} slopes of the largest power of two that fits.")),
        Step(N_("The 2c-head sequence interleaves new slopes between those: take its odd-numbered ones, as many as "
                "needed (the reference code's `[0::2]`)."), r"2^{-8(2j+1)/(2c)},\quad j = 0, 1, \dots, n - c - 1"),
        Step(N_("Each new slope sits half-way, in log scale, between two neighbouring slopes of the c-head sequence "
                "(with 2^0 = 1 before the first)."), r"2^{-4(2j+1)/c} = \sqrt{2^{-8j/c}\cdot 2^{-8(j+1)/c}}"),
    ),
    check=N_("Simplify the geometric-mean identity for symbolic c, j; build the exact slopes for every head count "
          "1 … 64 and compare pe_core.alibi_slopes."),
    check_function=_other_counts,
    source=N_("ALiBi reference code (`get_slopes`), as in transformers' `build_alibi_tensor`."),
)

MISQUOTED_SLOPE = Derivation(
    slug="alibi_misquoted_slope",
    title=N_("The n-th head's slope is 2^(−8/n)"),
    topic=TOPIC,
    claim=Latex(r"m_n = 2^{-8/n}\quad(\text{head}\ n)", N_("head")),
    steps=(),
    check=N_("Compare the misquoted slopes with the paper's for 8 heads."),
    check_function=_misquoted_formula,
    source=Deferred(N_("a common misquote (the paper: {source})"), source=cite("alibi", "§3")),
    refutes="alibi_power_of_two",
    said=N_("for $N$ heads, head $n$ has slope $m_n = 2^{-8/n}$."),
    shows=N_("that formula makes the slopes *grow* with the head index (1/256, 1/16, 0.157, …, 0.5 for 8 heads) and "
             "ignores the head count. The paper's slope is $m_h = 2^{-8h/N}$: 1/2, 1/4, …, 1/256 for 8 heads."),
)

DERIVATIONS = (POWER_OF_TWO, OTHER_COUNTS)
WRONG_VARIANTS = (MISQUOTED_SLOPE,)
