"""Make every URL go through app.py's navigation, even the first deep link a fresh server sees.

Streamlit treats a folder named ``pages/`` next to the main script as old-style (v1) pages until
the main script first calls ``st.navigation``. On a fresh server the first visitor who opens a
shared link such as ``/decay`` would therefore get the page run on its own: Streamlit's file-name
sidebar, no wide layout, no shared sidebar. Every page imports ``ui`` before the rest of the app
(``pages/ruff.toml`` keeps it first), so on that first run this switches Streamlit to app.py's navigation
and reruns, which then resolves the same URL properly - before the page has imported torch.
"""

from __future__ import annotations

from urllib.parse import urlparse

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

REQUESTED_PATH_KEY = "_requested_path"


def adopt_app_navigation() -> None:
    if PagesManager.uses_pages_directory and get_script_run_ctx() is not None:
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
