"""The app's own CSS, in one stylesheet every page draws first, hidden, and the same on every run.

A ``<style>`` element added to a page makes the browser work out the style of every element again. The number
tables each carried their rules and the hidden containers theirs, so a move that redrew them added them again:
three tables on the RoPE-in-code page cost its slider move about 30 ms of its first visible change (measured
alternately against a page drawing one sheet). A sheet that is the same on every run is left alone by Streamlit,
so the browser adds it once a page.
"""

from __future__ import annotations

import streamlit as st

from ui.table import TABLE_CSS

STYLESHEET_KEY = "pe-stylesheet"
# A container keyed with this prefix runs its widgets (they keep their values and URL parameters) but is not shown.
HIDDEN_KEY_PREFIX = "pe-hidden-"

APP_CSS = "\n".join((
    f'.st-key-{STYLESHEET_KEY}, [class*="st-key-{HIDDEN_KEY_PREFIX}"] {{display: none}}',
    TABLE_CSS,
))


def draw_stylesheet() -> None:
    """The stylesheet, at the top of the page (call before the page draws anything). The empty element beside it
    keeps Streamlit from moving a style-only element to its event container, which it fills again on every run."""
    with st.container(key=STYLESHEET_KEY):
        st.html(f"<style>\n{APP_CSS}\n</style><span></span>")
