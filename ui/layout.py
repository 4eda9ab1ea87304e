"""What every page shares: the sidebar, and the start and end of a script run."""

from __future__ import annotations

import sys

import streamlit as st

from i18n import _
from ui.chart import preload_library
from ui.export import sidebar_controls
from ui.figure import reset_page_figures
from ui.language import BOUND_VALUES, language_switch, use_session_language
from ui.warmup import warm_up_in_background

_DEVICE_SLOT = "_device_slot"


def start_page(*, charts: bool) -> None:
    """Call first in app.py on every run: the reader's language, per-run state, the shared sidebar; on a page that
    draws ``charts``, the browser starts loading the chart library while the page computes."""
    use_session_language()
    reset_page_figures()
    st.session_state[BOUND_VALUES] = {}
    with st.sidebar:
        language_switch()
        if charts:
            preload_library()
        st.session_state[_DEVICE_SLOT] = st.empty()
    sidebar_controls()


def finish_page() -> None:
    """Call last in app.py: say where the page computed, and warm the other pages' caches once per server.

    Pages that compute nothing (Home, the Glossary) never import torch, so a cold server shows them
    without paying for it; the device is named once a page has computed with it.
    """
    if "torch" in sys.modules:
        from pe_core.device import device_label

        slot = st.session_state.get(_DEVICE_SLOT)
        if slot is not None:
            slot.caption(_("Compute device: **{device}**").format(device=device_label()))
    warm_up_in_background()
