"""Every lesson's registry, checked the same way: its settings, its figures, its visual language.

Parametrised over ``lessons.all_lessons()``, so a new lesson or figure is tested with no edit here.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from figures.theme import ENCODING_STYLES, METHOD_STYLES
from lessons import SLIDE, all_lessons
from lessons.base import SettingsError

LESSONS = all_lessons()
# The training lesson trains a model per setting; its own tests cover it with a tiny configuration.
CHEAP = [name for name, lesson in LESSONS.items() if not getattr(lesson, "expensive", False)]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def satisfied(settings_type, name: str) -> dict:
    """Values that make setting ``name`` apply (its ``when`` conditions hold), as field -> value."""
    control = settings_type.controls()[name]
    defaults = settings_type()
    needed = {}
    for field, accepted in control.when:
        current = getattr(defaults, field)
        if isinstance(current, tuple):
            if not any(item in accepted for item in current):
                limit = min(4, settings_type.controls()[field].max_selections or 4)
                needed[field] = current + (accepted[0],) if len(current) < limit else current[:-1] + (accepted[0],)
        elif current not in accepted:
            needed[field] = accepted[0]
    return needed


def figure_json(lesson, name, settings, style=None) -> str:
    figure = lesson.figure(name, settings) if style is None else lesson.figure(name, settings, style)
    return figure.to_json()


def variations(lesson):
    """(field, base settings where the field applies, settings with the field changed) for every field."""
    settings_type = lesson.settings
    for name in settings_type.controls():
        for value in settings_type.alternatives(name):
            base = settings_type.from_mapping(satisfied(settings_type, name))
            changed = dataclasses.replace(base, **{name: value})
            yield name, value, base, changed


@pytest.mark.parametrize("lesson_name", list(LESSONS))
def test_unknown_keys_and_values_fail_naming_the_valid_ones(lesson_name):
    settings = LESSONS[lesson_name].settings
    with pytest.raises(SettingsError, match="valid keys") as error:
        settings.from_mapping({"no_such_setting": 1})
    for name in settings.controls():
        assert name in str(error.value)
    for name, control in settings.controls().items():
        if control.options:
            with pytest.raises(SettingsError, match=re.escape(name)):
                settings.from_mapping({name: "surely-not-an-option"})
        elif control.widget in ("slider", "number"):
            with pytest.raises(SettingsError, match=re.escape(name)):
                settings.from_mapping({name: float("nan")})


@pytest.mark.parametrize("lesson_name", list(LESSONS))
def test_url_keys_are_unique_and_name_the_same_fields(lesson_name):
    settings = LESSONS[lesson_name].settings
    keys = [c.key for c in settings.controls().values()]
    assert len(keys) == len(set(keys))
    for name, control in settings.controls().items():
        assert settings.field_name(control.key) == name
        default = getattr(settings(), name)
        assert settings.coerce(name, default) == default  # the default is itself a valid value


@pytest.mark.parametrize("lesson_name", CHEAP)
def test_every_setting_changes_a_figure_that_declares_its_group(lesson_name):
    """The bug this layer exists to fix: a setting silently ignored by the figures (``--set`` included)."""
    lesson = LESSONS[lesson_name]
    silent = []
    for name, value, base, changed in variations(lesson):
        group = lesson.settings.controls()[name].group
        dependent = [f for f, spec in lesson.figures.items() if spec.groups is None or group in spec.groups]
        assert dependent, f"no figure reads group {group!r} of setting {name}"
        if lesson.settings.controls()[name].gate:  # a limit on another setting: its own page test raises it
            continue
        if not any(figure_json(lesson, f, base) != figure_json(lesson, f, changed) for f in dependent):
            silent.append(f"{name}={value!r}")
        for f in lesson.figures:  # figures outside the group cannot see it
            if f not in dependent:
                assert figure_json(lesson, f, base) == figure_json(lesson, f, changed)
    assert not silent, f"{lesson_name}: these settings change no figure: {silent}"


@pytest.mark.parametrize("lesson_name", CHEAP)
def test_slide_style_keeps_every_trace(lesson_name):
    lesson = LESSONS[lesson_name]
    for name in lesson.figures:
        screen, slide = lesson.figure(name), lesson.figure(name, style=SLIDE)
        shape = [(t.type, t.name, getattr(t, "fill", None)) for t in screen.data]
        assert shape == [(t.type, t.name, getattr(t, "fill", None)) for t in slide.data], name
        for before, after in zip(screen.data, slide.data, strict=True):
            if before.type == "heatmap" and before.coloraxis is None:
                assert after.showscale is not False
            if getattr(before, "fillpattern", None) is not None and before.fillpattern.shape:
                assert after.fillpattern.shape == before.fillpattern.shape
            line = getattr(before, "line", None)
            if line is not None and line.width == 0:
                assert after.line.width == 0, f"{name}: a band's invisible edge became a line"


def keyed_colours(figure) -> list[tuple[str, str, str]]:
    """(kind, key, colour) for every trace that shows one method or encoding in a colour."""
    found = []
    for trace in figure.data:
        meta = trace.meta if isinstance(trace.meta, dict) else {}
        for kind in ("method", "encoding"):
            if kind not in meta:
                continue
            line = getattr(trace, "line", None)
            marker = getattr(trace, "marker", None)
            colour = (line.color if line is not None else None) or (marker.color if marker is not None else None)
            if isinstance(colour, str):
                found.append((kind, meta[kind], colour))
    return found


def test_each_method_and_encoding_has_one_colour_on_every_figure():
    seen: dict[tuple[str, str], set[str]] = {}
    for name in CHEAP:
        lesson = LESSONS[name]
        for settings in (lesson.settings(), lesson.settings.extremes()):
            for figure_name in lesson.figures:
                for kind, key, colour in keyed_colours(lesson.figure(figure_name, settings)):
                    seen.setdefault((kind, key), set()).add(colour.upper())
    assert seen, "no figure tags its traces with a method or encoding"
    for (kind, key), colours in seen.items():
        styles = METHOD_STYLES if kind == "method" else ENCODING_STYLES
        assert colours == {styles[key].colour.upper()}, (kind, key, colours)
    every = [s.colour.upper() for s in (*METHOD_STYLES.values(), *ENCODING_STYLES.values())]
    assert len(every) == len(set(every)), "two keys share a colour"


# Raw ASCII spellings of symbols the figures must typeset (θᵢ, L′, λ_max...).
RAW_MATHS = [re.compile(p) for p in (r"\btheta\b", r"\blambda\b", r"\b[A-Za-zθλα-ω]_[A-Za-z0-9]", r"\bL'",
                                     r"θ'", r"\bbeta_(fast|slow)\b")]


def visible_text(figure) -> list[str]:
    """Titles, axis and colour-bar titles, trace names, annotations and hover text (placeholders removed)."""
    spec = json.loads(figure.to_json())
    texts = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("x", "y", "z", "customdata", "meta", "template"):
                    continue
                walk(v, k)
        elif isinstance(node, list):
            for item in node:
                walk(item, key)
        elif isinstance(node, str) and key in ("text", "name", "hovertemplate", "title", "ticktext"):
            texts.append(re.sub(r"%\{[^}]*\}", "", node))

    walk(spec)
    return texts


@pytest.mark.parametrize("lesson_name", CHEAP)
def test_figures_have_titles_and_typeset_maths(lesson_name):
    lesson = LESSONS[lesson_name]
    for name, spec in lesson.figures.items():
        assert spec.title.strip()
        figure = lesson.figure(name)
        assert (figure.layout.title.text or "").strip(), f"{name} has no title"
        for text in visible_text(figure):
            for pattern in RAW_MATHS:
                assert not pattern.search(text), f"{lesson_name}:{name}: raw maths {pattern.pattern!r} in {text!r}"


SCRUBBED = [(name, figure) for name, lesson in LESSONS.items() for figure, spec in lesson.figures.items()
            if spec.scrub and not getattr(lesson, "expensive", False)]


@pytest.mark.parametrize(("lesson_name", "figure_name"), SCRUBBED)
def test_in_figure_slider_frames_are_the_figures_the_server_draws(lesson_name, figure_name):
    """The in-figure slider and the page's control agree: frame v is exactly the figure drawn at v."""
    lesson = LESSONS[lesson_name]
    settings = lesson.settings.from_mapping({"scrub_in_figure": True})
    scrubbed = lesson.figure(figure_name, settings)
    drawn = lesson.scrub_frames(figure_name, settings)
    assert [frame.name for frame in scrubbed.frames] == list(drawn)
    slider = scrubbed.layout.sliders[0]
    assert [step.label for step in slider.steps] == list(drawn)
    control = lesson.settings.controls()[lesson.figure_spec(figure_name).scrub]
    assert slider.steps[slider.active].label == control.shown(getattr(settings, control_name(lesson, figure_name)))
    for frame in scrubbed.frames:
        shown = [trace for trace in frame.data if trace.visible is not False]
        expected = drawn[frame.name].data
        assert len(shown) == len(expected)
        for got, want in zip(shown, expected, strict=True):
            got_json, want_json = got.to_plotly_json(), want.to_plotly_json()
            got_json.pop("visible", None)
            want_json.pop("visible", None)
            assert json.dumps(got_json, sort_keys=True, default=str) == json.dumps(want_json, sort_keys=True,
                                                                                    default=str)
    # the figure as first shown is the frame of the current value
    current = [t for t in scrubbed.data if t.visible is not False]
    assert len(current) == len(drawn[slider.steps[slider.active].label].data)


def control_name(lesson, figure_name) -> str:
    return lesson.figure_spec(figure_name).scrub
