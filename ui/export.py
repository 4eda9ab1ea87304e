"""The Streamlit side of figure export: download buttons, the slide style, page ZIPs, share links.

Images are rendered only when a download button is clicked: each button gets a callable
(Streamlit runs it on click, in its own thread), never bytes, so a page rerun renders nothing.
The callables capture plain objects (figures, names), not Streamlit state, because Streamlit
commands and session state are unavailable where they run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import plotly.graph_objects as go
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from figures.export import (
    FORMATS,
    IMAGE_FORMATS,
    INSTALL_HINT,
    PNG_SCALE,
    browser_available,
    export_size,
    file_stem,
    render,
    render_files,
    zip_files,
)
from figures.slides import slide_style
from i18n import _, current_language, use_language
from lessons.base import SCREEN, FigureStyle
from lessons.export import stem_for
from ui import params

PAGE_FORMATS = ("png", "svg", "pdf", "html")  # what a reader downloads (JSON is for the CLI)
SLIDE_KEY = "slide"  # URL parameters of the export controls themselves
TITLES_KEY = "stitle"
EXPORT_PARAMS = frozenset({SLIDE_KEY, TITLES_KEY})

_STYLE_STATE = "_export_style"
_ZIP_SLOT_STATE = "_export_zip_slot"
_STEMS_STATE = "_export_stems"
_ZIP_FORMAT_KEY = "_export_zip_format"
_LESSONS_STATE = "_export_lessons"


def styled(figure: go.Figure, style: FigureStyle) -> go.Figure:
    """``figure`` as ``style`` draws it (a restyled copy for slides; the figure itself for the screen)."""
    return slide_style(figure, title=style.titles) if style.slide else figure


def current_style() -> FigureStyle:
    """The style chosen in the sidebar this run (plain screen style where no sidebar was drawn)."""
    return st.session_state.get(_STYLE_STATE, SCREEN)


# ---- names and links -------------------------------------------------------------------------

def page_name() -> str:
    """The running page's file stem (``frequencies`` for app_pages/frequencies.py)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return "figure"
    pages = ctx.pages_manager
    script = (pages.get_pages().get(pages.current_page_script_hash) or {}).get("script_path")
    return Path(script or pages.main_script_path).stem


def view_params() -> list[tuple[str, str | list[str]]]:
    """The URL parameters that describe the view (the export controls' own are left out)."""
    items = []
    for key in st.query_params:
        if key in EXPORT_PARAMS:
            continue
        values = st.query_params.get_all(key)
        items.append((key, values[0] if len(values) == 1 else values))
    return items


def figure_stem(key: str) -> str:
    """File name (no extension) of a figure: page, figure key, parameters, style."""
    page = page_name()
    short_key = key.removeprefix(f"{page}_")
    return file_stem(page, short_key, params=view_params(), tail=current_style().name_parts)


def share_link() -> str:
    """The address of this exact view: the page's URL plus every URL-bound setting."""
    pairs = [(key, value) for key in st.query_params for value in st.query_params.get_all(key)]
    query = urlencode(pairs)
    base = st.context.url or ""
    return f"{base}?{query}" if query else base


# ---- per-figure buttons ----------------------------------------------------------------------

def _size_note(figure: go.Figure) -> str:
    width, height = export_size(figure)
    return _("PNG {png_width}×{png_height} px · SVG and PDF {width}×{height}").format(
        png_width=f"{width * PNG_SCALE:g}", png_height=f"{height * PNG_SCALE:g}", width=width, height=height)


def modebar_config(base: dict, figure: go.Figure, stem: str) -> dict:
    """The chart toolbar's own image download (works without a server browser), named and sized like ours."""
    width, height = export_size(figure)
    options = {**base.get("toImageButtonOptions", {}), "filename": stem, "width": width, "height": height}
    return {**base, "toImageButtonOptions": options}


def export_menu_key(key: str) -> str:
    """The session-state key of the Export popover under the figure drawn with ``key`` (True: open)."""
    return f"_export_{key}"


def figure_buttons(figure: go.Figure, key: str, stem: str) -> None:
    """PNG / SVG / PDF download buttons for one figure, in a small popover under it.

    The buttons are made only while the popover is open (opening it reruns the page): each download button
    gets a new file id on every run, so a page of closed popovers sent 4 changed buttons per figure on every
    slider move (measured on decay: 217-225 ms a move without them, 260-277 ms with them).
    """
    menu = st.popover(_("Export"), icon=":material/download:", key=export_menu_key(key), on_change="rerun")
    if not menu.open:
        return
    available = browser_available()
    with menu:
        if available:
            st.caption(f"**{stem}** · {_size_note(figure)}")
        else:
            st.caption(_(INSTALL_HINT))
        with st.container(horizontal=True):
            for fmt in PAGE_FORMATS:
                needs_browser = fmt in IMAGE_FORMATS
                st.download_button(
                    fmt.upper(), data=functools.partial(render, figure, fmt), file_name=f"{stem}.{fmt}",
                    mime=FORMATS[fmt], key=f"{key}__{fmt}", on_click="ignore",
                    disabled=needs_browser and not available,
                    help=_("An interactive page that works offline (hover, zoom, the figure's own sliders).")
                    if fmt == "html" else None if available else _("Needs Chrome/Chromium on the server (see above)."),
                )


def remember(key: str, stem: str, figures: list[tuple[str, go.Figure]]) -> None:
    """Note a shown figure's file name; the first figure of a run also puts the ZIP button in the sidebar."""
    stems: dict[str, str] = st.session_state.setdefault(_STEMS_STATE, {})
    first = not stems
    stems[key] = stem
    slot = st.session_state.get(_ZIP_SLOT_STATE)
    # a fragment-only rerun (e.g. the training page's live chart) cannot write into the sidebar
    context = get_script_run_ctx()
    in_fragment_rerun = context is not None and bool(context.fragment_ids_this_run)
    if first and slot is not None and not in_fragment_rerun:
        _zip_controls(slot, figures, stems)


# ---- page-level controls (sidebar) -----------------------------------------------------------

def remember_lesson(lesson, settings_now: Callable[[], object]) -> None:
    """Put every figure of ``lesson`` in the page's ZIP, drawn at the settings ``settings_now()`` gives when the
    ZIP is built (closed tabs' figures included, which the page itself never drew)."""
    registered: dict = st.session_state.setdefault(_LESSONS_STATE, {})
    if lesson.name not in registered:
        registered[lesson.name] = (lesson, settings_now, current_style(), current_language())


def _zip_callable(figures: list[tuple[str, go.Figure]], stems: dict[str, str], lessons: dict, fmt: str,
                  comment: str) -> Callable[[], bytes]:
    # All three containers are this run's own objects, filled while the page runs and read on click, so
    # the ZIP holds every figure of the page even though the button is drawn before most are. A lesson's
    # figures come from its registry; other figures (a live training chart) as they were shown.
    def build() -> bytes:
        named = []
        for lesson, settings_now, style, language in lessons.values():
            with use_language(language):  # the click runs outside the session: draw in its language
                settings = settings_now()
                named.extend((stem_for(lesson, name, settings, style), lesson.figure(name, settings, style))
                             for name in lesson.figures)
        from_lessons = {f"{lesson.name}_" for lesson, *_ in lessons.values()}
        named.extend((stems[key], figure) for key, figure in figures
                     if key in stems and not key.startswith(tuple(from_lessons)))
        return zip_files(render_files(named, fmt), comment=comment)

    return build


def _zip_controls(slot, figures: list[tuple[str, go.Figure]], stems: dict[str, str]) -> None:
    available = browser_available()
    with slot.container():
        fmt = st.radio(_("Format of the ZIP"), list(PAGE_FORMATS), format_func=str.upper, horizontal=True,
                       key=_ZIP_FORMAT_KEY)
        name = file_stem(page_name(), params=view_params(), tail=current_style().name_parts)
        st.download_button(
            _("Download all figures on this page (ZIP)"), icon=":material/folder_zip:",
            data=_zip_callable(figures, stems, st.session_state.setdefault(_LESSONS_STATE, {}), fmt, share_link()),
            file_name=f"{name}.zip",
            mime="application/zip", key="_export_zip", on_click="ignore",
            disabled=fmt in IMAGE_FORMATS and not available,
            help=_(INSTALL_HINT) if fmt in IMAGE_FORMATS and not available
            else _("One file per figure, named after the page and its settings."),
            width="stretch",
        )


def sidebar_controls() -> None:
    """The shared 'Slides & sharing' box: slide style, share link, and (on pages with figures) the ZIP."""
    st.session_state[_STEMS_STATE] = {}
    st.session_state[_LESSONS_STATE] = {}
    st.session_state[_STYLE_STATE] = SCREEN
    slide_on = str(st.session_state.get(SLIDE_KEY, st.query_params.get(SLIDE_KEY, ""))).lower() == "true"
    with st.sidebar.expander(_("Slides & sharing"), icon=":material/slideshow:", expanded=slide_on):
        slide = params.toggle(_("Slide style (16:9, large type)"), SLIDE_KEY, False,
                              help=_("Thicker lines, larger type, white background: on screen and in every export."))
        titles = params.toggle(_("Keep figure titles"), TITLES_KEY, True) if slide else True
        st.session_state[_STYLE_STATE] = FigureStyle(slide=slide, titles=titles)
        st.caption(_("Link to this view (copy it with the icon):"))
        st.code(share_link() or _("(no link outside a browser session)"), language=None, wrap_lines=True)
        st.session_state[_ZIP_SLOT_STATE] = st.empty()
