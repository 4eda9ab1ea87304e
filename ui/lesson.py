"""A lesson on a page: its controls drawn from the settings' metadata, its results, its figures.

A page makes one ``LessonPage`` and reads top to bottom::

    page = LessonPage(frequencies.LESSON)
    with st.sidebar:
        page.controls("rope")
    st.header(...)
    page.controls("heatmap", columns=3)
    page.figure("angle_heatmaps")

A figure is built from the settings of the groups it depends on (``FigureSpec.groups``), which
the page draws above it; groups drawn further down keep their defaults until then, and no figure
reads them. Every widget is bound to the URL under its control's key.

A long lesson's page is split into parts (``Lesson.parts``), one tab each, and runs only the open one::

    page.parts({"bound": bound_part, "methods": methods_part})

A part whose figures read settings another part draws gets those controls too, hidden: the figures and the
address follow them as the reader left them.

Bad settings (a config.json that cannot be read, say) show an error where the reader is looking,
and the figures keep the last settings that worked, so nothing on the page goes blank.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from i18n import _
from lessons.base import Control, Lesson, LessonSettings, Part, SettingsError
from lessons.export import stem_for
from pe_core.device import use_server_threads
from ui import export, params
from ui.chart import PICK_EVENT
from ui.figure import show_figure
from ui.language import remember_bound_value
from ui.stylesheet import HIDDEN_KEY_PREFIX

use_server_threads()  # before a lesson page's first torch work

PART_KEY = "part"  # URL parameter naming the open tab of a long page
WHOLE_PAGE = "all"  # the tab showing every part of a long page
BORROWED_KEY = f"{HIDDEN_KEY_PREFIX}borrowed-controls"  # the container of a part's controls drawn in another part


def draw_control(name: str, control: Control, default: Any, *, disabled: bool = False,
                 options: tuple | None = None) -> Any:
    """One URL-bound widget for a setting; returns its value (``disabled``: shown, kept in the link, not movable;
    ``options``: the options offered, when not all of the control's)."""
    label = _(control.label)
    if options is not None:
        control = dataclasses.replace(control, options=options)
    extra: dict[str, Any] = {"disabled": True} if disabled else {}
    if control.help:
        extra["help"] = _(control.help)
    if control.format is not None and control.widget in ("select_slider", "radio", "selectbox", "multiselect"):
        extra["format_func"] = control.format
    widget = control.widget
    if widget == "select_slider":
        return params.select_slider(label, control.key, control.options, default, **extra)
    if widget == "radio":
        return params.radio(label, control.key, control.options, index=control.options.index(default),
                            horizontal=control.horizontal, **extra)
    if widget == "selectbox":
        return params.selectbox(label, control.key, control.options, index=control.options.index(default), **extra)
    if widget == "multiselect":
        if control.max_selections is not None:
            extra["max_selections"] = control.max_selections
        return tuple(params.multiselect(label, control.key, control.options, default, **extra))
    if widget == "toggle":
        return params.toggle(label, control.key, default, **extra)
    if widget == "slider":
        return params.slider(label, control.key, control.min_value, control.max_value, default, control.step, **extra)
    if widget == "number":
        if control.number_format:
            extra["format"] = control.number_format
        return params.number_input(label, control.key, control.min_value, control.max_value, default,
                                   step=control.step, **extra)
    if widget == "text":
        return params.text_area(label, control.key, default, placeholder=control.placeholder or None, **extra)
    raise ValueError(f"unknown widget {widget!r}")


def picked_value(settings: type[LessonSettings], name: str, points: list[dict], axis: str = "x") -> Any:
    """The value of setting ``name`` that a selection on a figure names: the first picked point's ``axis``
    coordinate (the default when nothing is picked; None when the point names no value the setting takes)."""
    if not points:
        return getattr(settings(), name)
    value = points[0].get(axis)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        return settings.coerce(name, value)
    except SettingsError:
        return None


class LessonPage:
    """Draws one lesson's controls and figures on the current page."""

    def __init__(self, lesson: Lesson) -> None:
        self.lesson = lesson
        self._values: dict[str, Any] = {}  # what the widgets drawn so far hold (plain values)
        self._drawn_groups: set[str] = set()
        # while the whole page draws a part: its shared groups an earlier part drew (empty otherwise, and in a
        # fragment's rerun, which draws its own controls again)
        self._shown_earlier: set[str] = set()
        self._errors_shown: set[str] = set()
        # drawn under an error about these settings (e.g. "try an example" buttons for a bad config paste)
        self.error_help: list[Callable[[], None]] = []

    # ---- settings ------------------------------------------------------------------------------

    def _current(self) -> dict[str, Any]:
        return {**self.lesson.settings().to_mapping(), **self._values}

    def controls(self, group: str, *, columns: int | None = None, disabled: bool = False) -> None:
        """Draw the controls of ``group`` here (in ``columns`` side by side), skipping those that do not apply.
        On the whole page, a part's shared controls (``Part.shows``) that an earlier part drew are not drawn again.
        ``disabled``: drawn greyed out (the open part does not read them), their values kept."""
        if group in self._shown_earlier:
            return
        settings = self.lesson.settings
        defaults = settings()
        chosen = [(name, c) for name, c in settings.controls().items() if c.group == group]
        self._drawn_groups.add(group)
        slots = st.columns(columns) if columns else None
        drawn = 0
        for name, control in chosen:
            if not control.applies(self._current()):
                self._values.pop(name, None)
                continue
            place = slots[drawn % len(slots)] if slots else contextlib.nullcontext()
            with place:
                offered = control.options_for(self._current()) if control.offered is not None else None
                self._values[name] = draw_control(name, control, getattr(defaults, name), disabled=disabled,
                                                  options=offered)
            remember_bound_value(control.key, self._values[name])
            drawn += 1

    def settings(self) -> LessonSettings:
        """The settings the controls drawn so far describe (defaults elsewhere)."""
        return self.lesson.settings.from_mapping(self._values)

    def value(self, name: str) -> Any:
        return getattr(self.settings(), name)

    def _fallback(self, groups: tuple[str, ...] | None, make: Callable[[LessonSettings], Any]) -> tuple[Any, Any]:
        """``make(settings)`` for the current settings; if they cannot be used, an error here and ``make`` of the
        last settings of these groups that worked (the defaults on a first visit). Returns (settings, made)."""
        settings = self.settings().only(groups)
        memory = f"_last_good_{self.lesson.name}:{','.join(groups) if groups else '*'}"
        try:
            made = make(settings)
        except ValueError as err:
            message = str(err)
            if message not in self._errors_shown:
                self._errors_shown.add(message)
                st.error(_("These settings could not be used: {message}").format(message=message), icon=":material/warning:")
                for draw_help in self.error_help:
                    draw_help()
            last_good: LessonSettings | None = st.session_state.get(memory)
            if message + "\0last" not in self._errors_shown:
                self._errors_shown.add(message + "\0last")
                st.caption(_("The figures below keep the last settings that worked.") if last_good is not None
                           else _("The figures below show the default settings."))
            settings = last_good if last_good is not None else self.lesson.settings().only(groups)
            return settings, make(settings)
        st.session_state[memory] = settings
        return settings, made

    def working_settings(self, groups: tuple[str, ...] | None = None) -> LessonSettings:
        """The current settings of ``groups`` if the lesson can compute them; otherwise the last that worked."""
        return self._fallback(groups, lambda settings: self.lesson.result(settings, groups))[0]

    def result(self, groups: tuple[str, ...] | None = None) -> Any:
        """The lesson's result for the current settings (restricted to ``groups``)."""
        return self._fallback(groups, lambda settings: self.lesson.result(settings, groups))[1]

    # ---- figures -------------------------------------------------------------------------------

    def figure(self, name: str, *, caption: str | None = None) -> None:
        """Show figure ``name`` with its export controls; the caption defaults to the registry's."""
        spec = self.lesson.figure_spec(name)
        style = export.current_style()
        settings, figure = self._fallback(spec.groups, lambda chosen: self.lesson.figure(name, chosen, style))
        if caption is None:
            caption = self.lesson.caption(name, settings)
        key = f"{self.lesson.name}_{name}"
        # A figure that selects a highlight takes a click when the page shows that highlight's control.
        on_pick = self._picker(spec.selects, spec.select_axis, key) if spec.selects in self._values else None
        show_figure(figure, key, caption=caption, styled=True, on_pick=on_pick,
                    page=lambda narrow: self.lesson.page_figure(name, settings, narrow=narrow),
                    stem=stem_for(self.lesson, name, settings, style))
        export.remember_lesson(self.lesson, self._settings_for_export)

    def _picker(self, name: str, axis: str, chart_key: str) -> Callable[[], None]:
        """The callback of a figure that selects setting ``name``: the picked point's ``axis`` value becomes the
        setting (set on its widget before the next run, so the URL and every figure that marks it follow)."""
        settings, widget_key = self.lesson.settings, self.lesson.settings.controls()[name].key

        def pick() -> None:
            picked = (st.session_state.get(chart_key) or {}).get(PICK_EVENT) or {}
            points = picked.get("points") or []
            value = picked_value(settings, name, points, axis)
            if value is not None:
                st.session_state[widget_key] = value

        return pick

    def _settings_for_export(self) -> LessonSettings:
        """The page's settings as its controls finally stood (the ZIP is built after the run, on a click)."""
        try:
            return self.settings()
        except ValueError:
            return self.lesson.settings()

    def parts(self, draw: Mapping[str, Callable[[], None]]) -> None:
        """The lesson's parts (``Lesson.parts``) as tabs, ``draw[slug]`` drawing each, and a last tab with every
        part one after another (to read through, search or print). Only the open tab's parts run, so a move
        redraws what the reader sees; the open tab is in the link as ``part=<slug>``."""
        parts = self.lesson.parts
        if sorted(draw) != sorted(part.slug for part in parts):
            raise ValueError(f"{self.lesson.name}: parts drawn {sorted(draw)}, lesson has {[p.slug for p in parts]}")
        labels = self._part_labels()
        slug_of = {label: slug for slug, label in labels.items()}
        key, first = self._part_key, parts[0].slug
        linked = st.query_params.get(PART_KEY)
        if linked is not None and linked not in labels:
            st.warning(_("The link names a part `{part}` this page does not have; showing the first.").format(
                part=linked), icon=":material/link:")
        opened = self.open_part()

        def remember_part() -> None:
            chosen = slug_of.get(st.session_state.get(key), first)
            if chosen == first:
                st.query_params.pop(PART_KEY, None)
            else:
                st.query_params[PART_KEY] = chosen

        tabs = st.tabs(list(labels.values()), key=key, default=labels[opened], on_change=remember_part)
        for slug, tab in zip(labels, tabs, strict=True):
            if not tab.open:
                continue
            with tab:
                for part in parts:
                    if slug == part.slug:
                        self._borrowed_controls(part)
                    if slug in (part.slug, WHOLE_PAGE):
                        st.header(_(part.title), anchor=part.slug)
                        self._shown_earlier = set(part.shows) & self._drawn_groups
                        try:
                            draw[part.slug]()
                        finally:
                            self._shown_earlier = set()

    @property
    def _part_key(self) -> str:
        return f"_part_{self.lesson.name}"

    def _part_labels(self) -> dict[str, str]:
        return {part.slug: _(part.tab) for part in self.lesson.parts} | {WHOLE_PAGE: _("Whole page")}

    def open_part(self) -> str | None:
        """The slug of the tab that is open (``WHOLE_PAGE`` for the whole page): the one chosen this session, else
        the link's, else the first; None on a page without parts. Known before ``parts`` draws the tabs, so the
        sidebar can say which of its controls the open part reads."""
        if not self.lesson.parts:
            return None
        labels = self._part_labels()
        slug_of = {label: slug for slug, label in labels.items()}
        linked = st.query_params.get(PART_KEY)
        return slug_of.get(st.session_state.get(self._part_key), linked if linked in labels else
                           self.lesson.parts[0].slug)

    def part_not_reading(self, group: str) -> Part | None:
        """The open part, if it reads nothing of ``group`` (its controls then do nothing there); else None."""
        opened = self.open_part()
        part = next((p for p in self.lesson.parts if p.slug == opened), None)
        if part is None or group in self.lesson.groups_read_by(part):
            return None
        return part

    def parts_reading(self, group: str) -> list[Part]:
        return [part for part in self.lesson.parts if group in self.lesson.groups_read_by(part)]

    def _borrowed_controls(self, part: Part) -> None:
        """Draw, hidden, the controls of the groups ``part`` reads that an earlier part draws
        (``Lesson.borrowed_groups``; decay's q·k charts use the sinusoidal part's range and seed): their values
        reach this part, and the address keeps them (Streamlit drops a widget's URL parameter on a run that does
        not draw it), so a link from this part shows the same figures and numbers."""
        borrowed = [group for group in self.lesson.borrowed_groups(part) if group not in self._drawn_groups]
        if not borrowed:  # none, or the sidebar's, drawn already
            return
        with st.container(key=f"{BORROWED_KEY}-{self.lesson.name}"):
            for group in borrowed:
                self.controls(group)

    def symbols(self) -> None:
        """Link the symbols this lesson uses to the Glossary."""
        from ui.glossary import symbol_links

        symbol_links(self.lesson.name)

    # ---- views ---------------------------------------------------------------------------------

    def view_button(self, label: str, values: dict[str, Any], *, help: str | None = None) -> None:
        """A button that sets several controls at once (``values``: Settings field -> value)."""
        controls = self.lesson.settings.controls()
        checked = self.lesson.settings.from_mapping(values)  # a typo in a view fails at once, not on click

        def apply() -> None:
            for name in values:
                value = getattr(checked, name)
                st.session_state[controls[name].key] = list(value) if isinstance(value, tuple) else value

        st.button(_(label), on_click=apply, help=_(help) if help else None)
