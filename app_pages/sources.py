"""References: every public source the app cites, one entry each."""

import streamlit as st

import ui  # noqa: F401 - a fresh server's first visit here goes through app.py's navigation

from i18n import _
from references import REFERENCES, full_entry

st.title(_("References"))
st.markdown(_(
    "Every claim, figure and derivation in this app cites one of these sources. Papers link to arXiv or their "
    "venue; blog posts are listed by title and date; code links to the file whose behaviour the app reproduces."
))

GROUPS = (
    (_("Papers"), lambda r: bool(r.arxiv)),
    (_("Blog posts and threads"), lambda r: not r.arxiv and bool(r.date)),
    (_("Code, standards and other sources"), lambda r: not r.arxiv and not r.date),
)
for title, belongs in GROUPS:
    chosen = sorted((r for r in REFERENCES.values() if belongs(r)), key=lambda r: (r.year, r.short))
    st.header(title)
    st.markdown("\n".join(f"{number}. {full_entry(r.key)}" for number, r in enumerate(chosen, start=1)))
