"""A sympy-checked formula on a lesson page: the claim, the verdict, and the wrong variants next to it."""

from __future__ import annotations

import streamlit as st

from i18n import Latex, _, full_stop, translated_latex


def _plain(text: str) -> str:
    """Text for st.markdown where * and _ (rotate_half, k*) must not become emphasis."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def in_a_row(*formulas: str) -> str:
    r"""Several formulas on one line, each kept whole where a phone's line breaks them apart (a braced group does
    not break inside; ``\allowbreak`` lets the line break between them)."""
    return r"\qquad\allowbreak ".join("{" + formula + "}" for formula in formulas)


def show_formula(source: str, *words: str) -> None:
    r"""Typeset ``source`` with its ``\text{...}`` ``words`` (``N_()``-marked) in the reader's language."""
    st.latex(Latex(source, *words).translated())


def show_checked(slug: str, *, with_variants: bool = True) -> None:
    """The claim of derivation ``slug`` typeset, whether sympy verified it on this run, and its refuted variants."""
    # imported here, not with the module: most pages only typeset formulas, and sympy with the derivations takes
    # about half a second to import, on a cold server before its first page shows
    from lessons.checked import checked, variants

    formula = checked(slug)
    st.latex(translated_latex(formula.claim))
    if formula.holds:
        st.caption(_("✓ Verified by sympy on this server: {check}").format(check=_plain(full_stop(_(formula.check)))))
    else:
        st.error(_("The sympy check of “{title}” failed.").format(title=_(formula.title)), icon=":material/warning:")
    if with_variants:
        for variant in variants(slug):
            show_refuted(variant.slug)


def show_refuted(slug: str) -> None:
    """A claim as a write-up states it (or a made-up one), with sympy's counterexample."""
    from lessons.checked import checked

    variant = checked(slug)
    with st.container(border=True):
        lead = _("**What if** {said}") if variant.counterfactual else _("**A common slip:** {said}")
        st.markdown(lead.format(said=_(variant.said)))
        st.latex(translated_latex(variant.claim))
        if variant.holds:
            st.error(_("sympy could not refute this variant; please report it."), icon=":material/warning:")
        else:
            st.markdown(_("**sympy shows** {shows}").format(shows=_(variant.shows)))
            if variant.counterexample:
                st.caption(_("Counterexample: {where}.").format(where=_(variant.counterexample)))
