"""Links from a page to the Glossary entries of the symbols it uses."""

from __future__ import annotations

import streamlit as st

from i18n import _
from references.glossary import symbols_of


def symbol_links(lesson: str) -> None:
    """One caption line: each symbol the lesson uses, linked to its Glossary entry."""
    symbols = symbols_of(lesson)
    if symbols:
        links = " · ".join(f"[{s.symbol}](/glossary#{s.anchor})" for s in symbols)
        st.caption(_("Symbols on this page: {links}").format(links=links))
