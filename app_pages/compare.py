"""Compare two RoPE configs side by side: θ ratio per pair, wavelengths, attention factors, what differs."""

import streamlit as st

from ui.formula import show_formula
from ui.lesson import LessonPage
from ui.uploads import config_text, upload_into

from i18n import N_, _
from lessons import compare as lesson

page = LessonPage(lesson.LESSON)

st.title(_("Compare two RoPE configs"))
st.markdown(_(
    "A base model and its long-context variant, a checkpoint and its port, two releases of one family: put their "
    "config.json side by side and see, pair by pair, what the second does to the first's rotation frequencies."
))

first, second = st.columns(2)
with first:
    st.subheader(_("Model A"))
    page.controls(lesson.FIRST)
    upload_into(_("… or upload A's config.json"), "compare_file_a", ["json"], "config_a", config_text,
                also={"src_a": "config"})
with second:
    st.subheader(_("Model B"))
    page.controls(lesson.SECOND)
    upload_into(_("… or upload B's config.json"), "compare_file_b", ["json"], "config_b", config_text,
                also={"src_b": "config"})
page.controls(lesson.LENGTH)

result = page.result()
st.info(result.summary(), icon=":material/search:")
st.dataframe(result.table(), hide_index=True)
page.figure("ratio")
page.figure("wavelengths")
page.figure("layer-maps")
show_formula(r"\lambda_i = \frac{2\pi}{\theta_i},\qquad \text{ratio}_i = \frac{\theta^{B}_i}{\theta^{A}_i}", N_("ratio"))
