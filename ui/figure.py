"""The single place a figure reaches the page (export controls are added here, for every page)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

_PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 1},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}

_PAGE_FIGURES_KEY = "_figures_on_page"


def show_figure(figure: go.Figure, key: str, *, caption: str | None = None) -> None:
    """Draw ``figure`` exactly as exported: the project template, not Streamlit's theme."""
    st.plotly_chart(figure, theme=None, key=key, config=_PLOTLY_CONFIG, width="stretch")
    if caption:
        st.caption(caption)
    page_figures().append((key, figure))


def page_figures() -> list[tuple[str, go.Figure]]:
    """Figures shown in this script run, in order (cleared at every rerun by ``ui.layout``)."""
    return st.session_state.setdefault(_PAGE_FIGURES_KEY, [])


def reset_page_figures() -> None:
    st.session_state[_PAGE_FIGURES_KEY] = []
