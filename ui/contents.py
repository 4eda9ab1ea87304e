"""A long page's table of contents: links at the top to its sections' headers."""

from __future__ import annotations

import streamlit as st

from i18n import _


class Contents:
    """The sections of a page (slug -> ``N_()``-marked title), in order. ``show()`` writes the links;
    ``header(slug)`` writes the section's header with that anchor, so a link (and a shared ``#slug``) lands there."""

    def __init__(self, sections: dict[str, str]) -> None:
        self.sections = sections

    def show(self) -> None:
        links = " · ".join(f"[{_(title)}](#{slug})" for slug, title in self.sections.items())
        st.caption(_("On this page: {links}").format(links=links))

    def header(self, slug: str) -> None:
        st.header(_(self.sections[slug]), anchor=slug)
