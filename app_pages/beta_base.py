"""RoPE as a β-base number: positions as digits; extrapolate, interpolate, or change the base."""

import streamlit as st

from ui.formula import show_formula
from ui.layout import lazy_expander
from ui.lesson import LessonPage
from ui.rope import layer_map_part, rope_sidebar
from ui.table import number_table

from figures.theme import HIGHLIGHT, translucent
from i18n import N_, _
from lessons import beta_base as lesson
from lessons.format import base_text, length_text, number_text, superscript
from references import cite

page = LessonPage(lesson.LESSON)
UNSEEN = translucent(HIGHLIGHT, 0.18)  # table cells holding a digit training never produced

st.title(_("RoPE as a β-base number"))
st.markdown(_(
    "A reading of RoPE due to Su Jianlin ({source}): the angles n·θᵢ are the **digits of the position n "
    "written in base** $\\beta = b^{{2/d}}$. Seen that way, the three ways to run a model past its training length are the "
    "three ways to make a fixed number of digits count s times further: add a digit, divide the number, or change "
    "the base."
).format(source=cite("su_beta_base")))

with st.sidebar:
    st.subheader(_("RoPE set-up (parts 2 and 3)"))
    rope_sidebar(page)
    page.controls(lesson.DIALS)


def plain_number_part() -> None:
    st.markdown(_(
        "A model trained on numbers below βᴾ written with P digits must now take numbers s times larger. "
        "**Direct extrapolation** writes them with more places: the new top place was 0 throughout training. "
        "**Linear interpolation** writes n/s: nothing new on top, but the units digit is now a fraction that moves "
        "by 1/s per step, so neighbours crowd together. **Base conversion** keeps P places and enlarges the base "
        "to λβ with $\\lambda = s^{1/P}$: every digit runs a little higher than before, and neighbours still differ "
        "by 1."
    ))
    page.controls(lesson.DIGITS, columns=4)
    digits = page.result((lesson.DIGITS,))
    st.caption(_("Training covers n < βᴾ = {trained}; s times that is {extended}. Converted base λβ = {base}.").format(
        trained=lesson.count_text(digits.log_trained), extended=lesson.count_text(digits.log_extended),
        base=number_text(digits.views.new_base)))
    if digits.beyond_range:
        st.warning(_("n = {n} is beyond s·βᴾ, so even the converted base overflows its top place.").format(
            n=f"{digits.settings.number:,}"), icon=":material/straighten:")
    if digits.direct_places_cut:
        st.info(_("Direct extrapolation needs {needed} places in base {beta}; the table shows {shown} and its top column "
                  "holds everything above.").format(needed=f"{digits.views.direct_places_needed:,}",
                                                    beta=number_text(digits.settings.beta),
                                                    shown=digits.views.direct.shape[1]), icon=":material/content_cut:")
    columns = [_("place {place}").format(place=j) for j in digits.table_places] + [_("base"), _("value Σ dⱼ·baseʲ")]
    number_table(columns, [row.cells + (row.base, row.value) for row in digits.digit_rows],
                 index=[_(row.title) for row in digits.digit_rows],
                 shaded=[row.unseen + (False, False) for row in digits.digit_rows], shade=UNSEEN)
    st.caption(_("Shaded: a digit no number in training had (a non-zero new place, or a digit ≥ β)."))
    page.figure("digits-against-n")
    page.figure("units-digit-zoom")

    st.markdown(_("What a digit means here, for any real base β > 1 (βʲ is the weight of place j):"))
    st.latex(r"n=\sum_{j=0}^{P-1} d_j\,\beta^{j},\qquad d_{j}=\Big\lfloor \tfrac{r_{j}}{\beta^{j}}\Big\rfloor\ (j\ge 1),"
             r"\quad d_0=r_0,\qquad r_{P-1}=n,\ \ r_{j-1}=r_j-d_j\beta^{j}")
    st.markdown(_(
        "The top place takes as many whole βᴾ⁻¹ as fit, the next place as many βᴾ⁻² as fit in what is left, and the "
        "units place keeps the rest - a fraction when β or n is not whole. For a whole-number base this is the familiar "
        "⌊n/βʲ⌋ mod β; for other bases that shortcut no longer adds up to n (see the end of part 3)."
    ))


def digits_part() -> None:
    rope = page.result(("rope", lesson.DIALS))
    setup = rope.setup
    st.markdown(_(
        "Pair i turns by n·θᵢ = n/βⁱ radians with $\\beta = b^{{2/d}}$ = {beta} (d = {d}, b = {base}): pair 0 is the "
        "units digit, turning a full radian per position; pair {top} is the top digit, turning β{top_power} = {slowdown} "
        "times slower. "
        "Below: every pair's hand at position **{where}** (L = {L}, L′ = s·L = {target}). The green arc is what the "
        "hand swept in training; fast pairs swept the whole dial, slow ones only a sliver. Direct extrapolation pushes "
        "the slow hands off their arcs (a new top digit); interpolation keeps every hand on its arc but slows the fast "
        "ones (crowding); NTK-aware ({ntk}) and base conversion keep the fast hands as they were and pull the slowest "
        "ones back - with some middle pairs still past their arcs, which is what NTK-by-parts fixes."
    ).format(beta=f"{rope.rope_beta:.5f}", d=setup.head_dim, base=base_text(setup.base), top=rope.num_pairs - 1,
             top_power=superscript(rope.num_pairs - 1),
             slowdown=f"{rope.slowest_ratio:,.1f}", where=rope.position_text, L=length_text(setup.train_length),
             target=length_text(setup.target_length), ntk=cite("ntk_aware")))
    if rope.shown_setups:
        page.figure("phase-dials")
        page.figure("pair-turns")
    else:
        st.info(_("Pick at least one method in the sidebar, or add the β-base conversion, to see the dials."))
    st.latex(r"\theta_i=b^{-2i/d}=\beta^{-i},\quad \beta=b^{2/d}\qquad\Longrightarrow\qquad "
             r"n\,\theta_i \bmod 2\pi=\frac{n}{\beta^{i}} \bmod 2\pi")
    st.markdown(_("Compare the digit of a whole-number base:"))
    st.latex(r"d_i=\Big\lfloor\frac{n}{\beta^{i}}\Big\rfloor \bmod \beta")


def base_growth_part() -> None:
    rope = page.result(("rope", lesson.DIALS))
    setup = rope.setup
    st.markdown(_("With P digits in base β the largest number is βᴾ − 1. To reach s times as far with the same P "
                  "digits, the new base λβ needs"))
    st.latex(r"(\lambda\beta)^{P}-1\;\ge\;s\,(\beta^{P}-1)\quad\Longleftrightarrow\quad"
             r"\lambda\;\ge\;\lambda_{\min}=\Big(s-\frac{s-1}{\beta^{P}}\Big)^{1/P}")
    st.markdown(_(
        "For RoPE, P = d/2 and $\\beta^{d/2} = b$, so "
        "$\\lambda \\ge \\big(s - \\frac{s-1}{\\beta^{d/2}}\\big)^{2/d} = \\big(s - \\frac{s-1}{b}\\big)^{2/d}$, "
        "and the smallest new base is exactly $b\\,\\lambda_{\\min}^{d/2} = s(b-1) + 1$. The simple choice "
        "$\\lambda = s^{2/d}$ (new base b·s) always meets the bound. NTK-aware scaling uses $\\lambda = s^{2/(d-2)}$ "
        "(new base $b\\,s^{d/(d-2)}$): it asks the **slowest pair's period** $2\\pi\\beta^{d/2-1}$, not "
        "$\\beta^{d/2}$, to grow s-fold - the same base conversion with RoPE's range counted by its top digit's period, "
        "because RoPE's digits wrap at 2π rather than at β. The two β differ by the factor $s^{4/(d(d-2))}$, which is "
        "close to 1 for large d."
    ))
    show_formula(r"\underbrace{(\lambda\beta)^{d/2-1}=s\,\beta^{d/2-1}}_{\text{slowest pair matches interpolation}}"
                 r"\;\Rightarrow\;\lambda=s^{2/(d-2)},\quad b'=b\,\lambda^{d/2}=b\,s^{d/(d-2)}",
                 N_("slowest pair matches interpolation"))
    page.controls(lesson.BOUND, columns=2)
    page.figure("stretch-bound")
    bound_result = page.result(("rope", lesson.DIGITS, lesson.BOUND))
    bound = bound_result.bound
    st.caption(_("At s = {scale} ({label}):").format(scale=number_text(bound.scale), label=bound_result.bound_label))
    metrics = st.columns(3)
    metrics[0].metric(_("smallest λₘᵢₙ"), f"{bound.smallest:.6f}")
    metrics[1].metric(_("base conversion $s^{1/P}$"), f"{bound.conversion:.6f}")
    if bound.ntk is not None:
        metrics[2].metric(_("NTK-aware $s^{1/(P-1)}$"), f"{bound.ntk:.6f}")
    bases = rope.rope_bases
    st.caption(_(
        "New RoPE bases at the sidebar's s = {scale}: smallest s(b − 1) + 1 = {smallest} · β-conversion b·s = "
        "{conversion} · NTK-aware $b\\,s^{{d/(d-2)}}$ = {ntk}; NTK's β is $s^{{4/(d(d-2))}}$ = {ratio} times the β of b·s."
    ).format(scale=number_text(setup.scale), smallest=number_text(bases.smallest),
             conversion=number_text(bases.conversion), ntk=number_text(bases.ntk), ratio=f"{bases.ntk_over_conversion:.6f}"))

    st.subheader(_("Why base conversion works without fine-tuning"))
    st.markdown(_(
        "A model that uses positions mostly to compare them has learnt rules like 875 > 874 digit by digit. Base "
        "conversion keeps those rules: no place is new, neighbours still differ by one in the units place, and each digit "
        "only runs a little past the values it was trained on - by the factor $\\lambda = s^{{2/d}}$ = {stretch} for the "
        "sidebar's "
        "d = {d} and s = {scale} - a small extrapolation spread over every digit instead of a large one in the top digit "
        "(direct) or a squeeze of the units digit (interpolation). The fastest pair, n/β⁰ = n, is kept exactly (λ⁰ = 1); "
        "NTK-aware moves the next one, n/β, by $\\lambda = s^{{2/(d-2)}}$ = {second}. That is why NTK-aware RoPE extends context "
        "reasonably without training, while interpolation ({pi}) needs fine-tuning to get used to its crowded fast pairs."
    ).format(stretch=f"{rope.rope_conversion_stretch:.4f}", d=setup.head_dim, scale=number_text(setup.scale),
             second=f"{rope.second_pair_stretch:.4f}", pi=cite("pi")))

    checks = lesson.formula_checks()
    if all(checks.values()):
        st.success(_("All {count} formulas on this page verified by sympy: {formulas}").format(
            count=len(checks), formulas="; ".join(checks)), icon=":material/check_circle:")
    else:
        st.error(_("sympy could not verify: {formulas}").format(
            formulas="; ".join(k for k, ok in checks.items() if not ok)), icon=":material/cancel:")

    def shortcut_and_examples() -> None:
        shortcut, examples = lesson.shortcut_example(), lesson.worked_examples()
        st.markdown(_(
            "- Digit j is often defined as ⌊n/βʲ⌋ mod β ({source}). That is right for whole-number bases, but the base "
            "conversion it motivates is to a base like $\\beta\\,s^{{1/P}}$, which is rarely whole. There the shortcut's digits of "
            "{n} in base {base} are [{shortcut}], which stand for {shortcut_value}, not {n}; the greedy expansion used "
            "here gives [{greedy}], which adds back up to {greedy_value}.\n"
            "- RoPE's digits are not floored and wrap at 2π, not at β. The analogy is the common n/βⁱ; it is also why "
            "NTK's exponent is d/(d−2) rather than the d the digit count suggests (part 3).\n"
            "- Worked examples: 1749 = [{hex}] in base 16; three hex places reach 16³ − 1 = {hex_top} ≥ {needed}; and "
            "three places reach s = 2 times 1,000 in base $\\lceil 2000^{{1/3}} \\rceil$ = {whole}, since {whole}³ − 1 ≥ {needed} > "
            "{below} = {smaller}³ − 1."
        ).format(source=cite("su_beta_base"), n=f"{shortcut.number:,}", base=f"{shortcut.base:.4f}",
                 shortcut=", ".join(f"{v:.4g}" for v in shortcut.shortcut), shortcut_value=f"{shortcut.shortcut_value:,.2f}",
                 greedy=", ".join(f"{v:.4g}" for v in shortcut.greedy), greedy_value=number_text(shortcut.greedy_value),
                 hex=", ".join(map(str, examples.base16_digits)), hex_top=f"{examples.base16_top:,}",
                 needed=f"{examples.needed:,}", whole=examples.whole_base, below=f"{examples.below:,}",
                 smaller=examples.whole_base - 1))
    lazy_expander(_("The ⌊n/βʲ⌋ mod β shortcut, and the worked examples"), "shortcut", shortcut_and_examples)


page.parts({"plain-number": plain_number_part, "digits": digits_part, "base-growth": base_growth_part, "layers": lambda: layer_map_part(page)})
