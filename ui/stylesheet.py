"""The app's own CSS, in one stylesheet every page draws first, the same on every run.

A ``<style>`` element added to a page makes the browser work out the style of every element again. Each number
table carried its rules, so a move that changed a table added them again with it: three a move on the
RoPE-in-code page, about 10 ms of the 158 ms the browser's main thread spent on each move (Chromium's own count).
A sheet that is the same on every run is left alone by Streamlit, so the browser adds it once a page. The rule
that hides the app's hidden containers is here too, beside the rest of the app's CSS.
"""

from __future__ import annotations

import streamlit as st

from ui.table import TABLE_CSS

# A container keyed with this prefix runs its widgets (they keep their values and URL parameters) but is not shown.
HIDDEN_KEY_PREFIX = "pe-hidden-"

APP_CSS = "\n".join((
    f'[class*="st-key-{HIDDEN_KEY_PREFIX}"] {{display: none}}',
    TABLE_CSS,
))


def draw_stylesheet() -> None:
    """The stylesheet (call on every run, before the page draws anything). Streamlit puts HTML that is only style
    out of the page's flow, where it takes no room."""
    st.html(f"<style>\n{APP_CSS}\n</style>")
