"""RoPE in code: LLaMA's complex multiplication next to rotate_half, number for number."""

import streamlit as st

from ui.formula import show_checked
from ui.lesson import LessonPage
from ui.table import columns_table

from i18n import _
from lessons import rope_code as lesson
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("RoPE in code: complex numbers and rotate_half"))
st.markdown(_(
    "Most people meet RoPE as code, in one of two forms. Meta's LLaMA treats each neighbouring pair of coordinates "
    "as one complex number and multiplies it by $e^{{\\mathrm{{i}}m\\theta_i}}$ ({llama}). transformers instead "
    "pairs coordinate $i$ with $i + d/2$ and writes the rotation with `rotate_half` ({hf}). Pick a head size and a "
    "position: both run below on the same vector, and every number they produce is shown."
).format(llama=cite("llama_code"), hf=cite("transformers_rope")))

page.controls(lesson.CODE, columns=4)
result = page.result((lesson.CODE,))
walk = result.walk
st.caption(_("θᵢ = {base}^(−2i/{d}) for i = 0 … {last}: {values}").format(
    base=f"{walk.base:,.0f}", d=walk.dim, last=walk.dim // 2 - 1,
    values=", ".join(f"{t:.6g}" for t in walk.theta.tolist()[:8]) + (" …" if walk.dim > 16 else "")))


def two_forms_part() -> None:
    page.figure("two-forms")
    page.figure("pairs")
    complex_column, half_column = st.columns(2)
    with complex_column:
        st.subheader(_("LLaMA: complex numbers"))
        st.code(lesson.SOURCES["complex"], language="python")
        st.markdown(_("`freqs_cis[m]` and the pairs as complex numbers, then their product:"))
        columns_table(lesson.complex_form_table(result))
    with half_column:
        st.subheader(_("transformers: rotate_half"))
        st.code(lesson.SOURCES["half"], language="python")
        st.markdown(_("The same vector reordered so pair $i$ sits at $i$ and $i + d/2$, then $y\\cos + "
                      "\\mathrm{rotate\\_half}(y)\\sin$:"))
        columns_table(lesson.half_form_table(result))

    st.subheader(_("Side by side, pair by pair"))
    columns_table(lesson.walkthrough_table(result))
    if walk.largest_difference == 0:
        st.success(_("Every output coordinate agrees exactly: the two forms perform the same multiplications."))
    else:
        st.info(_("Largest difference between the two forms: {gap:.3g} (rounding in the last bit).").format(
            gap=walk.largest_difference))
    show_checked("code_d8_example")
    show_checked("code_complex_equals_rotate_half")


def permuted_weights_part() -> None:
    st.markdown(_(
        "The forms agree only after reordering x. Inside a model x is $W_q$ times a token, so a checkpoint trained with "
        "one pairing runs with the other only if the rows of $W_q$ and $W_k$ are reordered the same way; that is what "
        "{script} does with `permute`. The reorder itself is one line:"
    ).format(script=cite("llama_conversion")))
    st.code(lesson.SOURCES["permute"], language="python")
    page.controls(lesson.PAIRING, columns=2)
    page.figure("pairing-scores")
    pairing = page.result((lesson.CODE, lesson.PAIRING))
    if pairing.porting_error < 1e-9:
        st.markdown(_("With $d = 2$ there is a single pair: both layouts are the same and even the original rows work. "
                      "Pick $d \\ge 4$ to see the difference."))
    else:
        st.markdown(_(
            "With reordered rows the scores match to {gap:.2g}; with the original rows they are off by up to {error:.3g}, "
            "a silent bug: the model runs, but each query–key score is computed from mismatched pairs."
        ).format(gap=pairing.pairing_gap, error=pairing.porting_error))
    show_checked("code_permuted_weights")


page.parts({"two-forms": two_forms_part, "permuted-weights": permuted_weights_part})
