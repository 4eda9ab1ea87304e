"""The single place a figure reaches the page, with its export controls (for every page)."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from ui import export

_PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 1},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}

_PAGE_FIGURES_KEY = "_figures_on_page"


def show_figure(figure: go.Figure, key: str, *, caption: str | None = None, styled: bool = False,
                on_select: Callable[[], None] | None = None, buttons: bool = True,
                width: int | str = "stretch", height: int | str = "content") -> None:
    """Draw ``figure`` exactly as exported (the project template, not Streamlit's theme), with
    PNG / SVG / PDF download buttons; in slide style the figure is shown as the slide will look
    (``styled``: the figure is already in the sidebar's style).

    ``on_select``: the figure takes a picked point (one click) and calls this, which reads the selection from
    ``st.session_state[key]``. ``buttons=False`` leaves out the download buttons (a presentation has no room);
    ``width`` and ``height`` as ``st.plotly_chart`` takes them ("content": the figure's own size).
    """
    shown = figure if styled else export.styled(figure, export.current_style())
    stem = export.figure_stem(key)
    picking = {"on_select": on_select, "selection_mode": ("points",)} if on_select is not None else {}
    st.plotly_chart(shown, theme=None, key=key, config=export.modebar_config(_PLOTLY_CONFIG, shown, stem),
                    width=width, height=height, **picking)
    if caption:
        st.caption(caption)
    if buttons:
        export.figure_buttons(shown, key, stem)
    figures = page_figures()
    # A fragment rerun shows a figure again without a fresh list: replace it, do not add a copy.
    figures[:] = [(k, f) for k, f in figures if k != key]
    figures.append((key, shown))
    export.remember(key, stem, figures)


def page_figures() -> list[tuple[str, go.Figure]]:
    """Figures shown in this script run as (key, figure as shown), in order (reset every run by ``ui.layout``)."""
    return st.session_state.setdefault(_PAGE_FIGURES_KEY, [])


def reset_page_figures() -> None:
    st.session_state[_PAGE_FIGURES_KEY] = []
