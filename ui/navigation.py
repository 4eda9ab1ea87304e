"""Links between the app's pages: the URL parameters every page shares."""

from __future__ import annotations

import streamlit as st


def shared_query() -> dict[str, str]:
    """The URL parameters every page shares, for a link to another page: the reader's language (always, so a
    projector whose browser speaks another language keeps the class's) and the sidebar's slide style."""
    from ui.export import SLIDE_KEY, TITLES_KEY
    from ui.language import URL_KEY, chosen_language

    query = {key: st.query_params[key] for key in (SLIDE_KEY, TITLES_KEY) if key in st.query_params}
    return {URL_KEY: chosen_language(), **query}
