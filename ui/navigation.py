"""Make every URL go through app.py's navigation, even the first deep link a fresh server sees.

Streamlit treats a folder named ``pages/`` next to the main script as old-style (v1) pages until
the main script first calls ``st.navigation``. On a fresh server the first visitor who opens a
shared link such as ``/decay`` would therefore get the page run on its own: Streamlit's file-name
sidebar, no wide layout, no shared sidebar. Every page imports ``ui``, so on that first run this
switches Streamlit to app.py's navigation and reruns, which then resolves the same URL properly.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx


def adopt_app_navigation() -> None:
    if PagesManager.uses_pages_directory and get_script_run_ctx() is not None:
        PagesManager.uses_pages_directory = False
        st.rerun()
