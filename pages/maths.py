"""Derivations (sympy-checked): every formula the app teaches, derived step by step and verified on load."""

from __future__ import annotations

import time

import streamlit as st

import derivations
from derivations import Derivation
from derivations.rope_blocks import HEAD_DIM
from figures import derivations as derivation_figures
from ui import params, show_figure

VERIFIED_MARK = ":green-badge[:material/check_circle: verified by sympy]"
FAILED_MARK = ":red-badge[:material/error: not verified]"
REFUTED_MARK = ":orange-badge[:material/block: refuted by sympy]"
FIGURE_SCALE, FIGURE_HEAD_DIM, FIGURE_BASE, BLEND_SCALE = 8.0, 128, 10_000.0, 4.0
_LONG_RESIDUAL = 400  # characters of LaTeX beyond which a residual is summarised instead of typeset


@st.cache_data(max_entries=128, show_spinner=False)
def verification(slug: str, head_dim: int | None) -> dict:
    """Run one sympy check (seconds) once per server process and keep plain values for the page."""
    derivation = derivations.get(slug)
    start = time.perf_counter()
    result = derivation.verify(**({} if head_dim is None else {derivation.parameter.name: head_dim}))
    return {
        "holds": result.holds,
        "residual": result.residual_latex,
        "checked": result.checked,
        "counterexample": result.counterexample,
        "seconds": time.perf_counter() - start,
    }


# Figures do not depend on any widget, so each is built once per process; nothing mutates them afterwards
# (the slide style works on a copy), so sharing one object between sessions is safe.
@st.cache_resource(max_entries=2, show_spinner=False)
def ntk_figure(head_dim: int, base: float, scale: float):
    pi_ratio, ntk_ratio = derivation_figures.frequency_ratios(head_dim, base, scale)
    return derivation_figures.frequency_ratio_figure(pi_ratio, ntk_ratio, scale, head_dim)


@st.cache_resource(max_entries=2, show_spinner=False)
def blend_figure(scale: float):
    return derivation_figures.blend_figure(*derivation_figures.blend_curves(scale), scale)


def markdown_text(text: str) -> str:
    """Plain text for st.markdown: titles contain * and _ (k*, rotate_half) that must not turn into emphasis."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def result_for(derivation: Derivation, head_dim: int) -> dict:
    return verification(derivation.slug, head_dim if derivation.parameter is not None else None)


def residual_text(residual: str) -> str:
    if len(residual) > _LONG_RESIDUAL:
        return f"a {len(residual)}-character expression that does not vanish"
    return f"${residual}$"


def show_variant(variant: Derivation, head_dim: int) -> dict:
    """A claim as a write-up states it, with sympy's verdict."""
    result = result_for(variant, head_dim)
    lead = "**What if**" if variant.counterfactual else "**A widely copied write-up says**"
    with st.container(border=True):
        mark = REFUTED_MARK if not result["holds"] else FAILED_MARK
        st.markdown(f"{mark} {markdown_text(variant.title)} — *{markdown_text(variant.source)}*")
        st.markdown(f"{lead} {variant.said} **sympy shows** {variant.shows}")
        st.latex(variant.claim)
        detail = f"{markdown_text(result['checked'])} Residual: {residual_text(result['residual'])}."
        if result["counterexample"]:
            detail += f" Counterexample: {result['counterexample']}."
        st.caption(detail)
        if result["holds"]:
            st.error("This claim was expected to fail but sympy could not refute it; please report it.")
    return result


def show_extra(derivation: Derivation) -> None:
    """The few derivations that are clearest as a picture get one under their check."""
    if derivation.slug == "ntk_aware_base":
        show_figure(ntk_figure(FIGURE_HEAD_DIM, FIGURE_BASE, FIGURE_SCALE), key="ntk_vs_pi",
                    caption="Computed with the app's own RoPE code (pe_core): the checked end points are circled. "
                    "NTK-aware scaling leaves the fast pairs alone and interpolates the slowest like PI.")
    elif derivation.slug == "yarn_ramp_blend":
        show_figure(blend_figure(BLEND_SCALE), key="yarn_blend",
                    caption="The two blends agree at γ = 0 and γ = 1 only; in between the implemented frequency "
                    "blend gives shorter wavelengths.")


def show_derivation(derivation: Derivation, head_dim: int) -> dict:
    result = result_for(derivation, head_dim)
    with st.container(border=True):
        where = f" (d = {head_dim})" if derivation.parameter is not None else ""
        mark = VERIFIED_MARK if result["holds"] else FAILED_MARK
        st.markdown(f"**{markdown_text(derivation.title)}**{where} {mark}")
        st.latex(derivation.claim)
        with st.expander("Derivation, step by step"):
            for number, step in enumerate(derivation.steps, start=1):
                st.markdown(f"{number}. {step.text}")
                if step.latex:
                    st.latex(step.latex)
            if derivation.source:
                st.caption(f"Source: {derivation.source}")
        residual = "0" if result["holds"] else residual_text(result["residual"])
        st.caption(f"**What sympy checked:** {markdown_text(result['checked'])} Residual: {residual}.")
        if not result["holds"]:
            st.error(f"sympy could not confirm this claim. {result['counterexample'] or ''}")
        for note in derivation.notes:
            st.info(note, icon=":material/menu_book:")
        show_extra(derivation)
    return result


st.title("Derivations, checked by sympy")
st.markdown(
    "Every formula the other pages use, derived step by step. Each claim below is **checked by sympy when the "
    "page loads**: both sides are built from symbols, their difference is simplified, and the claim counts as "
    "verified only if that residual is exactly zero (a few also compare the app's own RoPE code against the exact "
    "values). Where a widely shared write-up states something different, its version is checked too, and sympy's "
    "verdict is shown next to it."
)
summary = st.empty()

with st.sidebar:
    head_dim = params.select_slider(HEAD_DIM.label, "d", HEAD_DIM.options, HEAD_DIM.default)
    st.caption("The block-diagonal proofs are built as explicit d × d matrices for this d.")

start = time.perf_counter()
claims, variants = [], []
for topic, members in derivations.REGISTRY.items():
    st.header(topic, divider="gray")
    for derivation in members:
        claims.append(show_derivation(derivation, head_dim))
        variants += [show_variant(variant, head_dim) for variant in derivations.variants_of(derivation.slug)]

verified = sum(result["holds"] for result in claims)
refuted = sum(not result["holds"] for result in variants)
symbolic_seconds = sum(result["seconds"] for result in claims + variants)
counterfactuals = sum(variant.counterfactual for variant in derivations.WRONG_VARIANTS)
status = (f"**{verified} of {len(claims)} claims verified by sympy**; {refuted} of {len(variants)} wrong variants "
          f"refuted ({len(variants) - counterfactuals} as write-ups state them, {counterfactuals} counterfactual). "
          f"The symbolic work took {symbolic_seconds:.1f} s once and is cached; this view took "
          f"{1000 * (time.perf_counter() - start):.0f} ms.")
if verified == len(claims) and refuted == len(variants):
    summary.success(status, icon=":material/verified:")
else:
    summary.error(status, icon=":material/error:")
