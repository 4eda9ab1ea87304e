"""The single place a figure reaches the page, with its export controls (for every page)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from figures.page_form import PageFigure, page_form
from ui import export
from ui.chart import draw_chart

_PLOTLY_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "scale": 1},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}

_PAGE_FIGURES_KEY = "_figures_on_page"
# The tags of plotly's text subset a title uses, kept when the title becomes the page's own text.
_TITLE_TAGS = re.compile(r"&lt;(/?(?:br|sub|sup|b|i|em|strong)\s*/?)&gt;", re.IGNORECASE)
_TITLE_STYLE = "font-size:1.1rem;font-weight:600;line-height:1.35;margin:0.4rem 0 0"
_SUBTITLE = re.compile(r"<sup>(.*?)</sup>", re.IGNORECASE | re.DOTALL)
_SUBTITLE_STYLE = "font-size:0.85em;font-weight:400;color:#555"


def reader_on_phone() -> bool:
    """The reader's browser says it is a phone ("Mobi" in its user agent, the check browser makers recommend);
    a phone gets figures laid out for its width (``figures.page_form``)."""
    try:
        agent = st.context.headers.get("User-Agent") or ""
    except Exception:  # noqa: BLE001 - no request headers (a bare script run, a test): not a phone
        return False
    return "Mobi" in agent


def title_html(title: str) -> str:
    """A figure's title (plotly's text subset) as the page's HTML: escaped, its line breaks, sub- and
    superscripts kept; a ``<sup>`` line after a break (the figure's subtitle) set smaller, not raised."""
    kept = _TITLE_TAGS.sub(r"<\1>", html.escape(title, quote=False))
    kept = _SUBTITLE.sub(rf'<span style="{_SUBTITLE_STYLE}">\1</span>', kept)
    return f'<div style="{_TITLE_STYLE}">{kept}</div>'


def show_figure(figure: go.Figure, key: str, *, caption: str | None = None, styled: bool = False,
                on_pick: Callable[[], None] | None = None, buttons: bool = True,
                width: int | str = "stretch", height: int | str = "content",
                page: Callable[[bool], PageFigure] | None = None, stem: str | None = None) -> None:
    """Draw ``figure`` exactly as exported (the project template, not Streamlit's theme), with
    PNG / SVG / PDF download buttons; in slide style the figure is shown as the slide will look
    (``styled``: the figure is already in the sidebar's style).

    ``on_pick``: the figure takes a picked point (one click) and calls this, which reads the points from
    ``st.session_state[key][ui.chart.PICK_EVENT]``. ``buttons=False`` leaves out the download buttons (a presentation
    has no room); ``width`` and ``height`` as ``st.plotly_chart`` takes them ("content": the figure's own size).

    In screen style the chart is the figure's page form (its title as text above it, laid out for a phone on
    a phone); ``page(narrow)`` makes it where the caller has it cached. Downloads keep the figure as built.

    ``stem`` names the figure's files (default: the page, ``key`` and every setting in the URL); the chart's
    toolbar carries it. The chart is updated in place when its figure changes (``ui.chart``).
    """
    style = export.current_style()
    shown = figure if styled else export.styled(figure, style)
    stem = stem or export.figure_stem(key)
    drawn = shown
    if not style.slide:
        narrow = reader_on_phone()
        form = page(narrow) if page is not None else page_form(shown, narrow=narrow)
        if form.title:
            st.markdown(title_html(form.title), unsafe_allow_html=True)
        drawn = form.figure
    config = export.modebar_config(_PLOTLY_CONFIG, shown, stem)
    draw_chart(drawn, key, config=config, width=width, height=height, on_pick=on_pick)
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
