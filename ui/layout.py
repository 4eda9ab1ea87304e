"""What every page shares: the sidebar, the start and end of a script run, and an expander that runs its content
only while open."""

from __future__ import annotations

import sys
from collections.abc import Callable

import streamlit as st

from i18n import _
from ui import warmup
from ui.chart import preload_library
from ui.export import sidebar_controls
from ui.figure import reset_page_figures
from ui.language import BOUND_VALUES, language_switch, use_session_language
from ui.stylesheet import draw_stylesheet

_DEVICE_SLOT = "_device_slot"


def start_page(*, charts: bool) -> None:
    """Call first in app.py on every run: the reader's language, the app's stylesheet, per-run state, the shared
    sidebar; on a page that draws ``charts``, the browser starts loading the chart library while the page
    computes."""
    use_session_language()
    draw_stylesheet()
    reset_page_figures()
    st.session_state[BOUND_VALUES] = {}
    with st.sidebar:
        language_switch()
        if charts:
            preload_library()
        st.session_state[_DEVICE_SLOT] = st.empty()
    sidebar_controls()
    warmup.page_started()  # the background warm-up waits while a page runs


def lazy_expander(label: str, key: str, draw: Callable[[], None], **kwargs) -> None:
    """An expander whose content ``draw`` runs only while it is open (opening or closing it reruns the page): a
    closed one sends nothing, where Streamlit's own sends its content on every run, and every element a run sends
    costs a slider move time in the browser. ``key`` names it; it stays open across runs."""
    box = st.expander(label, key=f"_expander_{key}", on_change="rerun", **kwargs)
    if box.open:
        with box:
            draw()


def finish_page() -> None:
    """Call last in app.py (also when the run stopped early): say where the page computed, and warm the other pages'
    caches once per server.

    Pages that compute nothing (Home, the Glossary) never import torch, so a cold server shows them
    without paying for it; the device is named once a page has computed with it.
    """
    warmup.page_finished()
    if "torch" in sys.modules:
        from pe_core.device import device_label

        slot = st.session_state.get(_DEVICE_SLOT)
        if slot is not None:
            slot.caption(_("Compute device: **{device}**").format(device=device_label()))
    warmup.warm_up_in_background()
