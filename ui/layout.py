"""What every page shares: the sidebar and the start of a script run."""

from __future__ import annotations

import streamlit as st

from i18n import _
from pe_core.device import device_label
from ui.export import sidebar_controls
from ui.figure import reset_page_figures
from ui.language import BOUND_VALUES, language_switch, use_session_language


def start_page() -> None:
    """Call first in app.py on every run: the reader's language, per-run state, the shared sidebar."""
    use_session_language()
    reset_page_figures()
    st.session_state[BOUND_VALUES] = {}
    with st.sidebar:
        language_switch()
        st.caption(_("Compute device: **{device}**").format(device=device_label()))
    sidebar_controls()
