"""Glossary: every symbol the app shows, with its name, formula, meaning and the pages that use it."""

import streamlit as st

import ui  # noqa: F401 - a fresh server's first visit here goes through app.py's navigation

from i18n import _, translated_latex
from lessons import all_lessons
from references.glossary import SYMBOLS

st.title(_("Glossary of symbols"))
st.markdown(_("The symbols every page uses, in the order a lesson meets them. Each page links here."))

lessons = all_lessons()
for symbol in SYMBOLS:
    st.subheader(f"{symbol.symbol} · {_(symbol.name)}", anchor=symbol.anchor)
    st.latex(translated_latex(symbol.formula))
    st.markdown(_(symbol.meaning))
    used = [_(lessons[name].title) for name in symbol.lessons if name in lessons]
    if used:
        st.caption(_("Used on: {pages}").format(pages=", ".join(used)))
