"""What every lesson is made of: settings that describe their own controls, one cached
``compute``, and an ordered registry of figures.

A lesson module defines

- ``Settings``: a frozen dataclass of every value a reader can tune. Each field is made with
  ``setting(...)``, whose metadata (a ``Control``) says how the page draws it (label, options or
  range, help), which URL parameter it binds to, which group of controls it belongs to, and when
  it applies. The page's widgets, the URL, the export CLI's ``--set`` keys, the benchmarks'
  extremes and the tests' parameter grids are all read from it.
- ``compute(settings) -> Result``: pure; exact numbers from ``pe_core``.
- ``FIGURES``: name -> ``FigureSpec`` (title, caption, builder ``(result, style) -> go.Figure``,
  and the setting groups the figure depends on).
- ``LESSON = Lesson(...)`` tying them together; ``Lesson.result`` and ``Lesson.figure`` cache.

No Streamlit here: the CLI, the benchmarks and the tests use lessons headless.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import plotly.graph_objects as go

from i18n import _, current_language

if TYPE_CHECKING:
    from figures.page_form import PageFigure

SCRUB_SETTING = "scrub_in_figure"  # the setting that switches on figures' own sliders (FigureSpec.scrub)
WIDGETS = ("select_slider", "slider", "radio", "selectbox", "multiselect", "toggle", "number", "text")
OPTION_WIDGETS = ("select_slider", "radio", "selectbox", "multiselect")

S = TypeVar("S", bound="LessonSettings")


@dataclasses.dataclass(frozen=True)
class Control:
    """How one setting is shown and bound: the page, the URL and the CLI all read this."""

    label: str  # marked with N_(), translated where drawn
    key: str  # URL parameter (short: it is what a shared link carries)
    widget: str
    group: str = "main"  # the page draws a group's controls together, where the prose needs them
    options: tuple = ()
    min_value: float | None = None
    max_value: float | None = None
    step: float | None = None
    help: str = ""
    format: Callable[[Any], str] | None = None  # how an option or value is shown
    # When the setting applies: every (field, accepted values) pair must hold; a tuple-valued field
    # holds when any of its items is accepted. A setting that does not apply keeps its default.
    when: tuple[tuple[str, tuple], ...] = ()
    max_selections: int | None = None
    horizontal: bool = True
    placeholder: str = ""
    examples: tuple = ()  # valid non-default values the tests try (found from options/range otherwise)
    number_format: str | None = None  # printf format a number box shows ("%.3f"); Streamlit's default otherwise
    # A highlight: the setting only marks something on figures (a pair, a position) and never changes what is
    # computed, so results and the unmarked figures are shared by every value of it (``FigureSpec.highlight``).
    highlight: bool = False
    # A gate: the setting only bounds another (a limit on it the reader can raise, such as the plan's longest
    # target), so it changes no figure itself; it decides whether the other setting's value is accepted.
    gate: bool = False
    # The options worth offering given the other settings' values (a model's own kinds of layer); all of
    # ``options`` when None. A value outside them falls back to the default, as a bad link value does.
    offered: Callable[[Mapping[str, Any]], tuple] | None = None

    def shown(self, text: Any) -> str:
        if self.format is not None:
            return self.format(text)
        return str(text)

    def options_for(self, values: Mapping[str, Any]) -> tuple:
        """The options to offer when the other settings hold ``values`` (the default always among them)."""
        return self.options if self.offered is None else self.offered(values)

    def applies(self, values: Mapping[str, Any]) -> bool:
        for name, accepted in self.when:
            value = values.get(name)
            items = value if isinstance(value, tuple) else (value,)
            if not any(item in accepted for item in items):
                return False
        return True


def setting(
    default: Any,
    label: str,
    *,
    key: str,
    widget: str | None = None,
    group: str = "main",
    options: Sequence | None = None,
    min_value: float | None = None,
    max_value: float | None = None,
    step: float | None = None,
    help: str = "",
    format: Callable[[Any], str] | None = None,
    when: Mapping[str, Iterable] | None = None,
    max_selections: int | None = None,
    horizontal: bool = True,
    placeholder: str = "",
    examples: Sequence = (),
    number_format: str | None = None,
    highlight: bool = False,
    gate: bool = False,
    offered: Callable[[Mapping[str, Any]], tuple] | None = None,
) -> Any:
    """A ``Settings`` field with its control. The widget is inferred when not given: a bool is a
    toggle, a tuple with options a multiselect, options a select slider, a range a slider,
    a string a text box."""
    options = tuple(options or ())
    if widget is None:
        if isinstance(default, bool):
            widget = "toggle"
        elif isinstance(default, tuple) and options:
            widget = "multiselect"
        elif options:
            widget = "select_slider"
        elif min_value is not None and max_value is not None:
            widget = "slider"
        elif isinstance(default, str):
            widget = "text"
        else:
            raise ValueError(f"setting {key!r}: give options, a range, or a widget")
    if widget not in WIDGETS:
        raise ValueError(f"setting {key!r}: unknown widget {widget!r}")
    if widget in OPTION_WIDGETS and not options:
        raise ValueError(f"setting {key!r}: a {widget} needs options")
    conditions = tuple((name, tuple(accepted)) for name, accepted in (when or {}).items())
    control = Control(label, key, widget, group, options, min_value, max_value, step, help, format, conditions,
                      max_selections, horizontal, placeholder, tuple(examples), number_format, highlight, gate,
                      offered)
    return dataclasses.field(default=default, metadata={"control": control})


def override(base: type, name: str, default: Any, **changes: Any) -> Any:
    """A field of ``base`` with another default (and optionally other control metadata), for a subclass."""
    field = base.__dataclass_fields__[name]
    control = dataclasses.replace(field.metadata["control"], **changes)
    return dataclasses.field(default=default, metadata={"control": control})


def _same(value: Any, option: Any) -> bool:
    if isinstance(option, bool) or isinstance(value, bool):
        return value is option or (isinstance(value, bool) and isinstance(option, bool) and value == option)
    if isinstance(option, (int, float)) and isinstance(value, (int, float)):
        return math.isclose(float(value), float(option), rel_tol=1e-12, abs_tol=0.0)
    return value == option


class SettingsError(ValueError):
    """A bad setting: names the key and what would be accepted."""


@dataclasses.dataclass(frozen=True)
class LessonSettings:
    """Base of every lesson's ``Settings`` (subclasses are frozen dataclasses of ``setting`` fields)."""

    _by_key: ClassVar[dict[str, str]]

    # ---- the controls ------------------------------------------------------------------------

    @classmethod
    def controls(cls) -> dict[str, Control]:
        """Field name -> control, in declaration order."""
        return {f.name: f.metadata["control"] for f in dataclasses.fields(cls) if "control" in f.metadata}

    @classmethod
    def defaults(cls: type[S]) -> S:
        return cls()

    @classmethod
    def groups(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.group for c in cls.controls().values()))

    @classmethod
    def names_in(cls, groups: Iterable[str]) -> tuple[str, ...]:
        wanted = set(groups)
        return tuple(name for name, c in cls.controls().items() if c.group in wanted)

    @classmethod
    def field_name(cls, key: str) -> str | None:
        """The field a CLI key or URL parameter names (field names and URL keys both work)."""
        controls = cls.controls()
        if key in controls:
            return key
        return next((name for name, c in controls.items() if c.key == key), None)

    @classmethod
    def valid_keys(cls) -> str:
        return ", ".join(f"{name} ({c.key})" if c.key != name else name for name, c in cls.controls().items())

    # ---- values ------------------------------------------------------------------------------

    @classmethod
    def coerce(cls, name: str, value: Any) -> Any:
        """``value`` as field ``name`` holds it (the option itself, a tuple, an int...); ``SettingsError`` if invalid."""
        control = cls.controls()[name]
        default = cls.__dataclass_fields__[name].default
        label = f"{name} ({control.key})" if control.key != name else name
        if control.widget == "multiselect":
            items = value if isinstance(value, (list, tuple)) else (value,)
            chosen = tuple(dict.fromkeys(cls._option(name, label, control, item) for item in items))
            if control.max_selections is not None and len(chosen) > control.max_selections:
                raise SettingsError(_("{name} takes at most {count} values (got {given}).").format(
                    name=label, count=control.max_selections, given=len(chosen)))
            return chosen
        if control.widget in OPTION_WIDGETS:
            return cls._option(name, label, control, value)
        if control.widget == "toggle":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise SettingsError(_("{name} must be true or false (got {value!r}).").format(name=label, value=value))
        if control.widget == "text":
            if not isinstance(value, str):
                raise SettingsError(_("{name} must be text (got {value!r}).").format(name=label, value=value))
            return value
        # slider / number: a finite number in range, of the default's type
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise SettingsError(_("{name} must be a number (got {value!r}).").format(name=label, value=value))
        low, high = control.min_value, control.max_value
        if (low is not None and number < low) or (high is not None and number > high):
            raise SettingsError(_("{name} must be between {low:g} and {high:g} (got {value:g}).").format(
                name=label, low=low, high=high, value=number))
        if isinstance(default, int) and not isinstance(default, bool):
            if number != int(number):
                raise SettingsError(_("{name} must be a whole number (got {value!r}).").format(name=label,
                                                                                               value=value))
            return int(number)
        return number

    @classmethod
    def _option(cls, name: str, label: str, control: Control, value: Any) -> Any:
        for option in control.options:
            if _same(value, option) or (isinstance(value, str) and not isinstance(option, str)
                                        and _same(_number_or_none(value), option)):
                return option
        # a shown label (what the URL carries) is accepted too
        for option in control.options:
            if isinstance(value, str) and value == control.shown(option):
                return option
        shown = ", ".join(str(o) for o in control.options)
        raise SettingsError(_("{name} must be one of: {options} (got {value!r}).").format(
            name=label, options=shown, value=value))

    @classmethod
    def from_mapping(cls: type[S], values: Mapping[str, Any], *, base: S | None = None) -> S:
        """Settings from ``{key: value}`` (field names or URL keys) over ``base`` (the defaults).

        Raises ``SettingsError`` naming an unknown key (with the valid ones) or a bad value.
        """
        chosen: dict[str, Any] = {}
        for key, value in values.items():
            name = cls.field_name(key)
            if name is None:
                raise SettingsError(_("Unknown setting {key!r}; valid keys: {keys}.").format(
                    key=key, keys=cls.valid_keys()))
            chosen[name] = cls.coerce(name, value)
        start = base if base is not None else cls()
        return dataclasses.replace(start, **chosen)

    def to_mapping(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.controls()}

    def query_params(self) -> dict[str, str | list[str]]:
        """The URL parameters a link to these settings carries (defaults are left out, as the widgets do)."""
        controls = self.controls()
        query: dict[str, str | list[str]] = {}
        for name, value in self.changed().items():
            control = controls[name]
            if isinstance(value, tuple):
                query[control.key] = [control.shown(item) for item in value]
            elif isinstance(value, bool):
                query[control.key] = str(value).lower()
            elif control.widget in OPTION_WIDGETS:
                query[control.key] = control.shown(value)
            else:
                query[control.key] = f"{value:g}" if isinstance(value, float) else str(value)
        return query

    def without_highlights(self: S) -> S:
        """These settings with every highlight (``Control.highlight``) back at its default: what is computed."""
        default = type(self)()
        reset = {name: getattr(default, name) for name, c in self.controls().items()
                 if c.highlight and getattr(self, name) != getattr(default, name)}
        return dataclasses.replace(self, **reset) if reset else self

    def changed(self) -> dict[str, Any]:
        """The settings that differ from the defaults (names a file, or a link)."""
        default = type(self)()
        return {name: value for name, value in self.to_mapping().items() if value != getattr(default, name)}

    def applicable(self) -> S:
        """These settings with every setting that does not apply (``Control.when``) back at its default."""
        values = self.to_mapping()
        default = type(self)()
        reset = {name: getattr(default, name) for name, c in self.controls().items() if not c.applies(values)}
        return dataclasses.replace(self, **reset) if reset else self

    def only(self: S, groups: Iterable[str] | None) -> S:
        """These settings with every group not in ``groups`` back at its defaults (None keeps all)."""
        if groups is None:
            return self
        keep = set(self.names_in(groups))
        default = type(self)()
        reset = {name: getattr(default, name) for name in self.controls() if name not in keep}
        return dataclasses.replace(self, **reset)

    # ---- grids for tests and benchmarks ------------------------------------------------------

    @classmethod
    def alternatives(cls, name: str) -> tuple:
        """Valid values other than the default: the control's examples, else the extremes of its options/range."""
        control = cls.controls()[name]
        default = cls.__dataclass_fields__[name].default
        if control.examples:
            return tuple(control.examples)
        if control.widget == "toggle":
            return (not default,)
        if control.widget == "multiselect":
            missing = [o for o in control.options if o not in default]
            grown = default + tuple(missing[:1])
            if control.max_selections is not None and len(grown) > control.max_selections:
                grown = default[:-1] + tuple(missing[:1])
            shrunk = default[:1] if len(default) > 1 else ()
            return tuple(v for v in (grown, shrunk) if v and v != default)
        if control.widget in OPTION_WIDGETS:
            ends = (control.options[0], control.options[-1])
            return tuple(dict.fromkeys(o for o in ends if not _same(o, default)))
        if control.widget == "text":
            return ()
        ends = [control.min_value, control.max_value]
        kind = int if isinstance(default, int) and not isinstance(default, bool) else float
        return tuple(kind(v) for v in dict.fromkeys(ends) if v is not None and not _same(v, default))

    @classmethod
    def extremes(cls: type[S]) -> S:
        """The heaviest settings the controls allow: the last option or largest value of every numeric
        setting, and every option of a multiselect (up to its limit). For benchmarks and stress tests."""
        heavy: dict[str, Any] = {}
        for name, control in cls.controls().items():
            if control.widget == "multiselect":
                heavy[name] = control.options[: control.max_selections or len(control.options)]
            elif control.widget == "select_slider" and all(isinstance(o, (int, float)) for o in control.options):
                heavy[name] = control.options[-1]
            elif control.widget in ("slider", "number") and control.max_value is not None:
                heavy[name] = cls.coerce(name, control.max_value)
        return dataclasses.replace(cls(), **heavy)


def _number_or_none(text: str) -> float | None:
    try:
        return float(text.replace("_", "").replace(",", ""))
    except ValueError:
        return None


# ---- figures -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FigureStyle:
    """How a figure is drawn: for the screen, or restyled for a slide (with or without its title). A slide's
    canvas is 1280 × 720 with 22 px type unless ``canvas`` (width, height) and ``font_size`` say otherwise;
    ``least`` is the smallest type any of its text may have (``figures.slides.slide_style``)."""

    slide: bool = False
    titles: bool = True
    canvas: tuple[int, int] | None = None
    font_size: float | None = None
    least: float | None = None

    @property
    def name_parts(self) -> tuple[str, ...]:
        if not self.slide:
            return ()
        return ("slide",) if self.titles else ("slide", "notitle")

    def restyle(self, figure: go.Figure) -> go.Figure:
        """``figure`` (drawn for the screen) in this style: itself on the screen, a restyled copy on a slide."""
        from figures.slides import slide_style

        if not self.slide:
            return figure
        sized: dict[str, Any] = {}
        if self.canvas is not None:
            sized.update(width=self.canvas[0], height=self.canvas[1])
        if self.font_size is not None:
            sized.update(font_size=self.font_size)
        return slide_style(figure, title=self.titles, least=self.least, **sized)


SCREEN = FigureStyle()
SLIDE = FigureStyle(slide=True)

Builder = Callable[[Any, FigureStyle], go.Figure]


@dataclasses.dataclass(frozen=True)
class FigureSpec:
    """One figure of a lesson: what it is called, how it is built, and what it depends on."""

    name: str  # slug: URL-, file- and CLI-safe
    title: str  # N_()-marked; the figure's own title may add numbers
    build: Builder
    groups: tuple[str, ...] | None = None  # the setting groups it reads; None: all
    caption: Callable[[Any], str] | str | None = None  # from the result; translated when called
    # An option setting the figure can carry its own slider over (plotly frames, one per option), drawn when
    # the lesson's ``scrub_in_figure`` setting is on: the reader scrubs it in the browser, no round trip.
    scrub: str | None = None
    # Linked highlighting. ``selects``: the highlight setting a point picked on this figure sets (read from the
    # point's ``select_axis`` coordinate), so the page's other figures mark it too. ``highlight(figure, result,
    # settings)`` draws the settings' highlights onto a copy of the unmarked screen figure (built from ``result``,
    # which is computed without highlights); the slide style is applied after it.
    selects: str | None = None
    select_axis: str = "x"
    highlight: Callable[[go.Figure, Any, Any], None] | None = None
    # (setting, value) pairs the gallery draws the figure at when its defaults show nothing worth seeing
    # (a layer map at the sliders' defaults is one bar)
    showcase: tuple[tuple[str, Any], ...] = ()

    def caption_for(self, result: Any) -> str | None:
        if self.caption is None:
            return None
        return _(self.caption) if isinstance(self.caption, str) else self.caption(result)


def figure_registry(*specs: FigureSpec) -> OrderedDict[str, FigureSpec]:
    registry: OrderedDict[str, FigureSpec] = OrderedDict()
    for spec in specs:
        if spec.name in registry:
            raise ValueError(f"two figures named {spec.name!r}")
        registry[spec.name] = spec
    return registry


# ---- caching -----------------------------------------------------------------------------------


class BoundedCache:
    """A small thread-safe LRU map: lessons cache results and figures per process, shared by every
    session (what Streamlit's cache_resource does), without Streamlit. Cached objects are shared:
    nothing may change them (the slide style and every display helper work on copies)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock: two sessions may build the same value once each, never wait
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def copy_of(figure: go.Figure) -> go.Figure:
    """A new figure like the shared (cached) ``figure``, to change. Built from copies of its traces: given the traces
    themselves (``go.Figure(figure)``), plotly takes each one's "type" out of it while it builds and puts it back
    after, and a session drawing the shared figure in that moment saw another figure or an error."""
    return go.Figure(data=[trace.to_plotly_json() for trace in figure.data], layout=figure.layout, frames=figure.frames)


def cached(max_entries: int = 32) -> Callable:
    """Memoise a pure function of hashable arguments (a pe_core call a lesson repeats across settings)."""

    def decorate(function: Callable) -> Callable:
        cache = BoundedCache(max_entries)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items())))
            return cache.get_or_make(key, lambda: function(*args, **kwargs))

        wrapper.cache = cache  # type: ignore[attr-defined]
        return wrapper

    return decorate


# ---- the lesson --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a long lesson's page, shown as a tab: only the open part's script runs, so a move redraws the
    figures the reader can see (a long page's other elements cost every move time in the browser)."""

    slug: str  # in the page's link as ``part=<slug>``
    tab: str  # N_()-marked; the tab's label, a word or two (a phone shows a few side by side)
    title: str  # N_()-marked; the part's header
    figures: tuple[str, ...]  # the lesson's figures this part shows
    reads: tuple[str, ...] = ()  # setting groups its text reads besides its figures' (numbers it states)
    # groups an earlier part owns whose controls this part also shows when it is open (a reader of this part
    # alone needs them: the highlighted pair its charts mark); on the whole page the first part draws them
    shows: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class Lesson:
    """A topic: its settings, its computation and its figures. Pages, the export CLI, the ZIP,
    the benchmarks and the tests all go through these methods."""

    name: str  # the topic slug (CLI prefix, file names)
    title: str  # N_()-marked
    settings: type[LessonSettings]
    compute: Callable[[Any], Any]
    figures: Mapping[str, FigureSpec]
    summary: str = ""  # N_()-marked: one sentence on what the lesson shows
    key_figure: str = ""  # the figure that stands for the lesson (Home's thumbnail); the first one by default
    max_results: int = 16
    max_figures: int = 96  # figures and their page forms
    parts: tuple[Part, ...] = ()  # a long page's tabs, in order; none: one page

    def __post_init__(self) -> None:
        object.__setattr__(self, "_results", BoundedCache(self.max_results))
        object.__setattr__(self, "_figures", BoundedCache(self.max_figures))
        groups = set(self.settings.groups())
        controls = self.settings.controls()
        for spec in self.figures.values():
            unknown = set(spec.groups or ()) - groups
            if unknown:
                raise ValueError(f"{self.name}:{spec.name} names unknown setting groups {sorted(unknown)}")
            if spec.selects is not None and not (spec.selects in controls and controls[spec.selects].highlight):
                raise ValueError(f"{self.name}:{spec.name} selects {spec.selects!r}, which is not a highlight "
                                 "setting")
        placed = [name for part in self.parts for name in part.figures]
        if set(placed) - set(self.figures) or len(placed) != len(set(placed)):
            raise ValueError(f"{self.name}: each part's figures must be the lesson's, each in one part: {placed}")
        for field in ("slug", "tab"):  # a tab is known by its label, a link names it by its slug
            named = [getattr(part, field) for part in self.parts]
            if len(named) != len(set(named)):
                raise ValueError(f"{self.name}: two parts share a {field}: {named}")
        # a group's controls are drawn by the first part that reads it; later parts that read it borrow them,
        # unless they show them too
        read = {part.slug: self.groups_read_by(part) for part in self.parts}
        for part in self.parts:
            if set(part.shows) - set(read[part.slug]):
                raise ValueError(f"{self.name}: part {part.slug} shows controls of groups it does not read: "
                                 f"{sorted(set(part.shows) - set(read[part.slug]))}")
        object.__setattr__(self, "_borrowed", {
            part.slug: tuple(group for group in read[part.slug] if group not in part.shows
                             and any(group in read[other.slug] for other in self.parts[:index]))
            for index, part in enumerate(self.parts)})

    def part_of(self, figure: str) -> Part | None:
        """The part of the page that shows ``figure`` (None on a page without parts)."""
        return next((part for part in self.parts if figure in part.figures), None)

    def groups_read_by(self, part: Part) -> tuple[str, ...]:
        """The setting groups ``part`` reads: its figures' and those its text states (``Part.reads``)."""
        every = self.settings.groups()
        specs = [self.figure_spec(name) for name in part.figures]
        read = [group for spec in specs for group in (every if spec.groups is None else spec.groups)]
        return tuple(dict.fromkeys([*read, *part.reads]))

    def borrowed_groups(self, part: Part) -> tuple[str, ...]:
        """The groups ``part`` reads whose controls an earlier part draws (the first part that reads a group draws
        its controls)."""
        return self._borrowed[part.slug]

    def result(self, settings: LessonSettings | None = None, groups: Iterable[str] | None = None) -> Any:
        """``compute`` of these settings (restricted to ``groups``), cached."""
        chosen = (settings or self.settings()).applicable().only(groups).without_highlights()
        return self._results.get_or_make(chosen, lambda: self.compute(chosen))

    def figure_settings(self, name: str, settings: LessonSettings | None = None) -> LessonSettings:
        """The settings figure ``name`` is drawn from: its groups' settings that apply, the rest at defaults."""
        return (settings or self.settings()).applicable().only(self.figure_spec(name).groups)

    def figure(self, name: str, settings: LessonSettings | None = None, style: FigureStyle = SCREEN,
               *, frames: bool = True) -> go.Figure:
        """Figure ``name`` at these settings and style, cached. Shared: do not change it.

        ``frames=False`` draws a scrubbable figure (``FigureSpec.scrub``) without its frames: one frame of it.
        """
        spec = self.figure_spec(name)
        chosen = self.figure_settings(name, settings)
        scrubbed = frames and bool(spec.scrub) and bool(getattr(chosen, SCRUB_SETTING, False))
        key = (name, chosen, style, current_language(), scrubbed)
        return self._figures.get_or_make(key, lambda: self._build(spec, chosen, style, scrubbed))

    def page_figure(self, name: str, settings: LessonSettings | None = None, *, narrow: bool = False) -> PageFigure:
        """Figure ``name`` in screen style as a page draws it (``figures.page_form``: its title as text above
        it, laid out for a phone when ``narrow``), cached like the figure itself. Shared: do not change it."""
        from figures.page_form import page_form

        chosen = (settings or self.settings()).applicable().only(self.figure_spec(name).groups)
        key = ("page", name, chosen, current_language(), narrow)
        return self._figures.get_or_make(key, lambda: page_form(self.figure(name, chosen), narrow=narrow))

    def _build(self, spec: FigureSpec, settings: LessonSettings, style: FigureStyle,
               scrubbed: bool = False) -> go.Figure:
        if scrubbed:
            return self._build_scrubbed(spec, settings, style)  # each frame is drawn with the highlights
        plain = settings.without_highlights()
        if spec.highlight is not None and plain != settings:
            figure = copy_of(self.figure(spec.name, plain, SCREEN, frames=False))
            spec.highlight(figure, self.result(plain, spec.groups), settings)
        else:
            figure = spec.build(self.result(settings, spec.groups), style)
        return style.restyle(figure)

    def _build_scrubbed(self, spec: FigureSpec, settings: LessonSettings, style: FigureStyle) -> go.Figure:
        """The figure with one frame per option of ``spec.scrub``: each frame is the figure this lesson draws
        at that option (so the in-figure slider and the page's control agree)."""
        from figures.frames import with_frames

        control = self.settings.controls()[spec.scrub]
        variants = []
        for option in control.options:
            varied = dataclasses.replace(settings, **{spec.scrub: option})
            try:
                variants.append((control.shown(option), self.figure(spec.name, varied, style, frames=False)))
            except ValueError:
                continue  # an option these settings cannot take gets no frame
        current = self.figure(spec.name, settings, style, frames=False)
        return with_frames(current, variants, control.shown(getattr(settings, spec.scrub)), _(control.label))

    def scrub_frames(self, name: str, settings: LessonSettings | None = None) -> dict[str, go.Figure]:
        """The figure the server draws at each option of the figure's scrubbed setting (what its frames show)."""
        spec = self.figure_spec(name)
        control = self.settings.controls()[spec.scrub]
        chosen = settings or self.settings()
        return {control.shown(option): self.figure(name, dataclasses.replace(chosen, **{spec.scrub: option}),
                                                   frames=False)
                for option in control.options}

    @property
    def key_figure_name(self) -> str:
        return self.key_figure or next(iter(self.figures))

    def figure_spec(self, name: str) -> FigureSpec:
        if name not in self.figures:
            raise SettingsError(_("{lesson} has no figure {name!r}; it has: {names}.").format(
                lesson=self.name, name=name, names=", ".join(self.figures)))
        return self.figures[name]

    def caption(self, name: str, settings: LessonSettings | None = None) -> str | None:
        spec = self.figure_spec(name)
        if spec.caption is None:
            return None
        return spec.caption_for(self.result(settings, spec.groups))

    def all_figures(self, settings: LessonSettings | None = None, style: FigureStyle = SCREEN,
                    names: Iterable[str] | None = None) -> OrderedDict[str, go.Figure]:
        wanted = list(names) if names is not None else list(self.figures)
        return OrderedDict((name, self.figure(name, settings, style)) for name in wanted)

    def clear_caches(self) -> None:
        self._results.clear()
        self._figures.clear()
