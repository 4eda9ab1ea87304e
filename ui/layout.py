"""What every page shares: the sidebar and the start of a script run."""

from __future__ import annotations

import streamlit as st

from pe_core.device import device_label
from ui.export import sidebar_controls
from ui.figure import reset_page_figures


def start_page() -> None:
    """Call first in app.py on every run: resets per-run state and draws the shared sidebar."""
    reset_page_figures()
    with st.sidebar:
        st.caption(f"Compute device: **{device_label()}**")
    sidebar_controls()
