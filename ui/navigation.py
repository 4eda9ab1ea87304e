"""Make every URL go through app.py's navigation, even the first deep link a fresh server sees.

Streamlit treats a folder named ``pages/`` next to the main script as old-style (v1) pages until
the main script first calls ``st.navigation``. On a fresh server the first visitor who opens a
shared link such as ``/decay`` would therefore get the page run on its own: Streamlit's file-name
sidebar, no wide layout, no shared sidebar. Every page imports ``ui`` before the rest of the app
(``pages/ruff.toml`` keeps it first), so on that first run this switches Streamlit to app.py's navigation
and reruns, which then resolves the same URL properly - before the page has imported torch.

Several students opening a fresh server at once start several such runs before the first one switches. Each of
them is an old-style run however the switch stands by the time it imports ``ui`` (it decided at its start), so each
is recognised by Streamlit's old-style runner among its callers and reruns too; the rerun raised while importing
``ui`` leaves it unimported, so the next such run imports it again. A run that carried on showed the page without
app.py's shell (no sidebar, language switch or chart preloading) until the student's first move.
"""

from __future__ import annotations

import sys
from urllib.parse import urlparse

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx, script_runner

REQUESTED_PATH_KEY = "_requested_path"


def _old_style_run() -> bool:
    """This run was started as an old-style page run (Streamlit's own navigation over ``pages/`` runs the page)."""
    runner = getattr(script_runner, "_mpa_v1", None)  # Streamlit's function that runs an old-style page
    old_style = getattr(runner, "__code__", None)
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is old_style:
            return True
        frame = frame.f_back
    return False


def adopt_app_navigation() -> None:
    ctx = get_script_run_ctx()
    if ctx is not None and (PagesManager.uses_pages_directory or _old_style_run()):
        PagesManager.uses_pages_directory = False
        # A page whose address differs from its file name (/derivations is pages/maths.py) is unknown to the
        # old-style pages: that first run is app.py's default page, so keep the address for the rerun.
        st.session_state[REQUESTED_PATH_KEY] = urlparse(st.context.url or "").path.strip("/")
        st.rerun()


def requested_page(sections: dict[str, list]):
    """The page (of ``st.navigation``'s sections) a fresh server's first deep link asked for, once; else None."""
    path = st.session_state.pop(REQUESTED_PATH_KEY, None)
    if not path:
        return None
    name = path.rsplit("/", 1)[-1]
    return next((page for pages in sections.values() for page in pages if page.url_path == name), None)


def shared_query() -> dict[str, str]:
    """The URL parameters every page shares, for a link to another page: the reader's language (always, so a
    projector whose browser speaks another language keeps the class's) and the sidebar's slide style."""
    from ui.export import SLIDE_KEY, TITLES_KEY
    from ui.language import URL_KEY, chosen_language

    query = {key: st.query_params[key] for key in (SLIDE_KEY, TITLES_KEY) if key in st.query_params}
    return {URL_KEY: chosen_language(), **query}
