"""Derivations (sympy-checked): every formula the app teaches, derived step by step and verified by sympy, in parts
(one tab each) whose claims are checked when the part opens."""

import time

import streamlit as st

from ui import params
from ui.lesson import LessonPage

import derivations
from derivations.rope_blocks import HEAD_DIM
from i18n import _, full_stop, translated_latex
from lessons import derivations as lesson

VERIFIED_MARK = ":green-badge[:material/check_circle: {text}]"
FAILED_MARK = ":red-badge[:material/error: {text}]"
REFUTED_MARK = ":orange-badge[:material/block: {text}]"
LONG_RESIDUAL = 400  # characters of LaTeX beyond which a residual is summarised instead of typeset

page = LessonPage(lesson.LESSON)


def markdown_text(text: str) -> str:
    """Plain text for st.markdown: titles contain * and _ (k*, rotate_half) that must not turn into emphasis."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def residual_text(residual: str) -> str:
    if len(residual) > LONG_RESIDUAL:
        return _("a {count}-character expression that does not vanish").format(count=len(residual))
    return f"${residual}$"


def show_variant(variant: derivations.Derivation, head_dim: int) -> lesson.Verdict:
    """A claim as a write-up states it, with sympy's verdict."""
    verdict = lesson.verdict(variant, head_dim)
    lead = _("**What if**") if variant.counterfactual else _("**A widely copied write-up says**")
    with st.container(border=True):
        mark = FAILED_MARK.format(text=_("not verified")) if verdict.holds else REFUTED_MARK.format(
            text=_("refuted by sympy"))
        st.markdown(f"{mark} {markdown_text(_(variant.title))} — *{_(variant.source)}*")
        st.markdown(_("{lead} {said} **sympy shows** {shows}").format(lead=lead, said=_(variant.said),
                                                                       shows=_(variant.shows)))
        st.latex(translated_latex(variant.claim))
        detail = _("{checked} Residual: {residual}.").format(checked=full_stop(markdown_text(_(verdict.checked))),
                                                            residual=residual_text(verdict.residual))
        if verdict.counterexample:
            detail += " " + _("Counterexample: {example}.").format(example=_(verdict.counterexample))
        st.caption(detail)
        if verdict.holds:
            st.error(_("This claim was expected to fail but sympy could not refute it; please report it."))
    return verdict


def show_derivation(derivation: derivations.Derivation, head_dim: int) -> lesson.Verdict:
    verdict = lesson.verdict(derivation, head_dim)
    with st.container(border=True):
        where = f" (d = {head_dim})" if derivation.parameter is not None else ""
        mark = VERIFIED_MARK.format(text=_("verified by sympy")) if verdict.holds else FAILED_MARK.format(
            text=_("not verified"))
        st.markdown(f"**{markdown_text(_(derivation.title))}**{where} {mark}")
        st.latex(translated_latex(derivation.claim))
        with st.expander(_("Derivation, step by step")):
            for number, step in enumerate(derivation.steps, start=1):
                st.markdown(f"{number}. {_(step.text)}")
                if step.latex:
                    st.latex(translated_latex(step.latex))
            if derivation.source:
                st.caption(_("Source: {source}").format(source=_(derivation.source)))
        residual = "0" if verdict.holds else residual_text(verdict.residual)
        st.caption(_("**What sympy checked:** {checked} Residual: {residual}.").format(
            checked=full_stop(markdown_text(_(verdict.checked))), residual=residual))
        if not verdict.holds:
            st.error(_("sympy could not confirm this claim. {example}").format(example=_(verdict.counterexample or "")))
        for note in derivation.notes:
            st.info(_(note), icon=":material/menu_book:")
        if derivation.slug in lesson.FIGURE_OF:  # the few claims that are clearest as a picture
            figure, group = lesson.FIGURE_OF[derivation.slug]
            page.controls(group, columns=3)
            page.figure(figure)
    return verdict


st.title(_("Derivations, checked by sympy"))
st.markdown(_(
    "Every formula the other pages use, derived step by step. Each claim below is **checked by sympy when its "
    "part opens**: both sides are built from symbols, their difference is simplified, and the claim counts as "
    "verified only if that residual is exactly zero (a few also compare the app's own RoPE code against the exact "
    "values). Where a widely shared write-up states something different, its version is checked too, and sympy's "
    "verdict is shown next to it."
))
summary_box = st.empty()

with st.sidebar:
    head_dim = params.select_slider(_(HEAD_DIM.label), "d", HEAD_DIM.options, HEAD_DIM.default)
    st.caption(_("The block-diagonal proofs are built as explicit d × d matrices for this d."))

start = time.perf_counter()
claims: list[lesson.Verdict] = []
variants: list[lesson.Verdict] = []
shown_variants: list[derivations.Derivation] = []


def draw_part(slug: str) -> None:
    """The part's topics, each claim with its check and the write-ups that state it otherwise."""
    part = next(part for part in lesson.PARTS if part.slug == slug)
    for topic, members in lesson.part_topics(slug):
        if topic != part.title:  # a part of one topic is headed by it already
            st.subheader(_(topic), divider="gray")
        for derivation in members:
            claims.append(show_derivation(derivation, head_dim))
            for variant in derivations.variants_of(derivation.slug):
                variants.append(show_variant(variant, head_dim))
                shown_variants.append(variant)


page.parts({part.slug: lambda slug=part.slug: draw_part(slug) for part in lesson.PARTS})

summary = lesson.summary(claims, variants, sum(variant.counterfactual for variant in shown_variants))
status = _("**{verified} of {claims} claims verified by sympy**; {refuted} of {variants} wrong variants refuted "
           "({stated} as write-ups state them, {counterfactual} counterfactual). The symbolic work took {seconds:.1f} s "
           "once and is cached; this view took {ms:.0f} ms.").format(
    verified=summary.verified, claims=summary.claims, refuted=summary.refuted, variants=summary.variants,
    stated=summary.variants - summary.counterfactuals, counterfactual=summary.counterfactuals,
    seconds=summary.seconds, ms=1000 * (time.perf_counter() - start))
if summary.all_good:
    summary_box.success(status, icon=":material/verified:")
else:
    summary_box.error(status, icon=":material/error:")
