"""Long-range decay: RoFormer's bound, sinusoidal dot products, and what real q·k scores do with distance."""

import streamlit as st

from ui.formula import in_a_row, show_formula
from ui.lesson import LessonPage
from ui.rope import layer_map_part, rope_sidebar

import derivations
from i18n import N_, _, full_stop, sentences, translated_latex
from lessons import decay as lesson
from lessons.derivations import verification
from lessons.format import base_text, length_text, superscript
from references import cite

page = LessonPage(lesson.LESSON)
marks = lesson.roformer_landmarks()


def show_derivation(slug: str) -> None:
    """The claim of a sympy-checked derivation, and whether the check passed on this run of the app."""
    derivation = derivations.get(slug)
    st.latex(translated_latex(derivation.claim))
    if verification(slug).holds:
        st.caption(_("✓ Verified by sympy when this page loaded: {check}").format(check=full_stop(_(derivation.check))))
    else:
        st.error(_("The sympy check of “{title}” failed.").format(title=_(derivation.title)), icon=":material/warning:")


st.title(_("Long-range decay"))
st.markdown(_(
    "Does attention fade with distance? Under RoPE the score of a query at position *m* and a key at *n* depends "
    "only on **r = m − n**. RoFormer argues that it tends to shrink as *r* grows, through an upper bound that "
    "depends on *r* alone ({roformer}). This page computes that bound exactly at every distance (up to 2{exponent}), "
    "shows what the base and the context-extension methods do to it, compares sinusoidal encodings, and then checks "
    "how much of the decay is left in real q·k scores."
).format(roformer=cite("roformer", "§3.4.3"), exponent=superscript(lesson.LONGEST_EXPONENT)))
page.symbols()

with st.sidebar:
    st.subheader(_("RoPE set-up"))
    st.caption(_("Used by the context-extension chart and the random q·k chart."))
    setup = rope_sidebar(page)

def bound_part() -> None:
    page.controls(lesson.BOUND, columns=2)
    st.markdown(_(
        "**What to notice.** At *r* = 0 every phase is 0, so |Sⱼ| = j and the bound is (N + 1)/2 = **{at_zero:g}** for "
        "d = {d} (N = d/2 = {pairs} pairs). It falls fast: **{at_distance:.2f}** at *r* = {distance} with base {base}, "
        "as in {figure}. But it is **not monotone**: the line is the bound averaged over what one pixel spans, and the "
        "shaded band is its minimum-to-maximum there. Even after first reaching the level it settles at, it bounces "
        "back up to **{rebound:.1f}×** that level (d = {d}, base {base}, r ≤ {range}). It **flattens** once the phases "
        "r·θᵢ look random: the dotted line is the level random phases give, and the circle marks the first distance the "
        "bound reaches it (r = {first} for d = {d}, base {base}). A **larger base stretches** the curve: the slow pairs "
        "stay in phase for longer, so the same drop takes more tokens (λₘₐₓ = 2π·b^(1−2/d) is where even the slowest "
        "pair has completed a turn)."
    ).format(at_zero=marks.at_zero, d=marks.head_dim, pairs=marks.pairs, at_distance=marks.at_distance,
             distance=marks.distance, base=base_text(marks.base), figure=cite("roformer", "Fig. 2"),
             rebound=marks.rebound, range=length_text(marks.range), first=length_text(marks.first_at_level)))
    chosen = page.settings()
    if not chosen.bound_head_dims or not chosen.bound_bases:
        st.info(_("Pick at least one head dim and one base."))
    else:
        page.figure("bound")

    st.markdown(_(
        "**Where it comes from.** Split q and k into the N = d/2 pairs and write each pair as a complex number. The "
        "score is a sum of N rotating terms; summation by parts moves the rotation onto the partial sums Sⱼ, which "
        "depend on *r* alone ({roformer}):"
    ).format(roformer=cite("roformer", "§3.4.3")))
    st.latex(in_a_row(r"(R_m q)\cdot(R_n k) = \operatorname{Re}\Big[\sum_{i=0}^{N-1} h_i\, e^{\mathrm{i} r\theta_i}"
                      r"\Big],", r"r = m - n"))
    st.latex(r"h_i = (q_{2i} + \mathrm{i}\,q_{2i+1})(k_{2i} - \mathrm{i}\,k_{2i+1})")
    show_derivation("decay_abel_summation")
    st.markdown(_("Plotted:"))
    st.latex(r"B(r) = \frac{1}{N}\sum_{j=1}^{N}\big|S_j(r)\big|,\qquad "
             r"S_j(r) = \sum_{i=0}^{j-1} e^{\mathrm{i} r\theta_i}")
    st.markdown(_("Random-phase level:"))
    st.latex(r"\lim_{R\to\infty}\frac{1}{R}\int_0^R B(r)\,dr = "
             r"\frac{1}{N}\sum_{j=1}^{N}\mathbb{E}\Big|\sum_{i<j} e^{\mathrm{i}\phi_i}\Big|,\quad \phi_i \sim \mathcal{U}[0, 2\pi)")
    flipped = derivations.get("decay_abel_sign")
    if not verification("decay_abel_sign").holds:
        st.caption(_("A note on the sign: the identity is sometimes restated as {said} sympy refutes that when this page "
                     "loads: {shows}").format(said=_(flipped.said), shows=_(flipped.shows)))
    st.caption(_(
        "The random-phase level uses Kluyver's formula $\\mathbb{{E}}|S_j| = \\int_0^\\infty \\frac{{1 - J_0(t)^j}}{{t^2}}\\,dt$ ({kluyver}). Remember that B is an "
        "**upper bound** (times maxᵢ|hᵢ₊₁ − hᵢ|): it says how large a score *can* be, not that every score decays - the "
        "last part shows that."
    ).format(kluyver=cite("kluyver")))


def methods_part() -> None:
    if not page.settings().methods and (setup is None or setup.model is None):
        st.info(_("Pick at least one method in the sidebar."))
    else:
        rope_result = page.result(("rope",))
        rope = rope_result.setup
        st.markdown(_(
            "The model was trained at L = {L} and runs at L′ = {target} (s = {s}). **Position Interpolation** divides "
            "every θᵢ by *s* ({pi}), so its curve is direct extrapolation's stretched *s* times to the right - "
            "its bound at *r* is direct extrapolation's at *r*/*s*: tokens look *s* times closer. **NTK-aware** scaling ({ntk}) keeps the fastest pair exactly "
            "and the next ones nearly, so over the nearest tokens it stays closer to direct extrapolation than PI does, "
            "while its slowest pair is interpolated exactly like PI's; the stretch grows towards the tail. **YaRN** "
            "({yarn}) leaves every pair that turned many times in training untouched, so its curve follows direct "
            "extrapolation further (the caption says how far) and departs where the slow, interpolated pairs matter. A "
            "**base change** (ABF) is plain RoPE with a bigger base - compare the first part's chart. YaRN's temperature "
            "√(1/t) = 0.1 ln s + 1 multiplies every score by (0.1 ln s + 1)² = {factor:.3f} at s = {s}; the bound is "
            "about the phases, so it is not drawn here."
        ).format(L=length_text(rope.train_length), target=length_text(rope.target_length), s=f"{rope.scale:g}",
                 pi=cite("pi"), ntk=cite("ntk_aware"), yarn=cite("yarn"),
                 factor=rope_result.yarn_score_factor))
        page.controls(lesson.METHODS)
        page.figure("bound-methods")


def sinusoidal_part() -> None:
    page.controls(lesson.SINUSOIDAL, columns=4)
    sinusoidal = page.result((lesson.SINUSOIDAL,))
    s = sinusoidal.settings
    st.latex(r"PE(t) = \big(\sin t\omega_0,\ \cos t\omega_0,\ \dots,\ \sin t\omega_{d/2-1},\ \cos t\omega_{d/2-1}\big),"
             r"\qquad \omega_i = b^{-2i/d}")
    parts = [_(
        "The original Transformer adds PE(t) to the token embedding ({vaswani}), with the same ladder of frequencies "
        "RoPE uses. **What to notice:** the dot product of two position vectors depends on the offset *k* only, not on "
        "*t*; it is **symmetric** in *k* (it cannot tell before from after); it is **d/2 = {half} at k = 0** and decays "
        "**with oscillation**, not monotonically ({su})."
    ).format(vaswani=cite("vaswani", "§3.5"), half=s.d_model // 2, su=cite("su_sinusoidal"))]
    rise = sinusoidal.first_rise
    if rise is not None:
        parts.append(_("It already rises from {before:.3f} at k = {k} to {after:.3f} at k = {next}.").format(
            before=rise.value, k=rise.offset, after=rise.next_value, next=rise.offset + 1))
    crossing = sinusoidal.first_negative
    if crossing is None:
        parts.append(_("The slow pairs, with kωᵢ still small, hold it up: it stays at or above zero for every offset up "
                       "to {limit}.").format(limit=length_text(lesson.NEGATIVE_SEARCH)))
    elif sinusoidal.negative_in_range:
        parts.append(_("The slow pairs, with kωᵢ still small, hold it up for a while: it first drops below zero at "
                       "k = {k} ({value:.2f}), within this chart's ±{range}.").format(
            k=length_text(crossing.offset), value=crossing.value, range=length_text(s.max_offset)))
    else:
        parts.append(_("The slow pairs, with kωᵢ still small, hold it up for a long way: it first drops below zero at "
                       "k = {k}, beyond this chart's ±{range}.").format(k=length_text(crossing.offset),
                                                                        range=length_text(s.max_offset)))
    parts.append(_("RoPE with q = k = (1, …, 1) gives exactly twice this curve (see the last part)."))
    st.markdown(sentences(parts))
    page.figure("sinusoidal-dot")
    show_derivation("sinusoidal_dot_product")
    monotone = derivations.get("sinusoidal_monotone_decay")
    if rise is not None:
        st.caption(_("It is sometimes said that {said} The rise above shows it does not: the decay is an oscillating "
                     "one.").format(said=_(monotone.said)))

    st.markdown(_(
        "The same numbers as a matrix: entry (m, n) is PE(m)·PE(n). It is constant along every diagonal (a Toeplitz "
        "matrix) because it depends on m − n only. On the right the positions first go through random query and key "
        "projections $W_q$, $W_k$, as attention does ({vaswani}): the diagonal structure is gone."
    ).format(vaswani=cite("vaswani", "§3.2.2")))
    with st.columns([1, 3])[0]:
        page.controls(lesson.SEED)
    left, right = st.columns(2)
    with left:
        page.figure("similarity")
    with right:
        page.figure("similarity-projected")


def real_scores_part() -> None:
    page.controls(lesson.SCORES, columns=2)
    scores = page.result(("rope", lesson.SCORES))
    s = page.working_settings((lesson.SINUSOIDAL,))  # set in the sinusoidal part
    st.markdown(_(
        "RoPE with d = {d}, base {base} (from the sidebar). **(a)** q = k = (1, …, 1): every pair contributes 2cos(rθᵢ), "
        "so the score is 2Σcos(rθᵢ) - twice the sinusoidal curve, decaying the same way. **(b)** Random q, k ~ N(0, I) "
        "with k = ρq + √(1 − ρ²)ε: averaged over the draws, the score follows 2ρΣcos(rθᵢ) - it decays only as far as "
        "the key **resembles** the query, and with ρ = 0 the average is flat at zero. The band (±1 standard deviation "
        "over the draws) hardly narrows with distance, and a single draw wanders far from the mean: the decay is a "
        "property of an average, not of each score."
    ).format(d=scores.setup.head_dim, base=base_text(scores.setup.base)))
    page.figure("rope-scores")
    st.latex(r"q = k = \mathbf{1}:\quad (R_m q)\cdot(R_n k) = 2\sum_{i=0}^{N-1}\cos(r\theta_i)")
    st.latex(r"k = \rho q + \sqrt{1-\rho^2}\,\varepsilon:\quad \mathbb{E}\big[(R_m q)\cdot(R_n k)\big] = "
             r"\rho\,\operatorname{tr} R_{r} = 2\rho\sum_{i=0}^{N-1}\cos(r\theta_i)")

    st.markdown(_(
        "**(c)** Sinusoidal PEs (d = {d}, base {base}) through random $W_q$, $W_k$, the query at position t = {t} and "
        "keys at t + k. The clean curve of PE(t)·PE(t+k) is gone: each draw is a random mix of sinusoids in *k*, neither "
        "symmetric nor peaked at k = 0, and the mean over draws is 0 at every offset. So the sinusoidal dot product's "
        "decay says little about a trained model's scores, and RoPE applies its rotation *after* the projections "
        "({roformer})."
    ).format(d=s.d_model, base=base_text(s.sinusoidal_base), t=length_text(s.max_offset),
             roformer=cite("roformer", "§3.2.2")))
    page.figure("projected-scores")
    show_formula(r"\text{score}(t, k) = \big(W_q\,PE(t)\big)\cdot\big(W_k\,PE(t+k)\big) = PE(t)^{\top} W_q^{\top} W_k\, PE(t+k)",
                 N_("score"))
    show_formula(r"\mathbb{E}_{W}\big[W_q^{\top}W_k\big] = 0 \quad\Rightarrow\quad \mathbb{E}_W[\text{score}(t, k)] = 0",
                 N_("score"))


page.parts({"bound": bound_part, "methods": methods_part, "sinusoidal": sinusoidal_part,
            "real-scores": real_scores_part, "layers": lambda: layer_map_part(page)})
