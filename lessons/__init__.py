"""One module per topic, each a ``Lesson`` (settings, compute, figures); see ``lessons.base``.

Every module of this package that defines ``LESSON`` is a topic: the export CLI, the gallery,
the benchmarks and the parametrised tests find it here, so a new lesson needs no other edit.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from lessons.base import (
    SCREEN,
    SLIDE,
    FigureSpec,
    FigureStyle,
    Lesson,
    LessonSettings,
    Part,
    SettingsError,
    cached,
    figure_registry,
    override,
    setting,
)

_NOT_TOPICS = {"base", "deck", "export", "rope_setup", "format", "tour"}  # tour: a path through the others

__all__ = [
    "SCREEN", "SLIDE", "FigureSpec", "FigureStyle", "Lesson", "LessonSettings", "Part", "SettingsError", "all_lessons",
    "cached", "figure_registry", "get", "override", "setting",
]


@functools.cache
def all_lessons() -> dict[str, Lesson]:
    """``{name: lesson}`` for every topic, in the order pages list them (module order otherwise)."""
    found: dict[str, Lesson] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_TOPICS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        lesson = getattr(module, "LESSON", None)
        if isinstance(lesson, Lesson):
            found[lesson.name] = lesson
    return found


def get(name: str) -> Lesson:
    lessons = all_lessons()
    if name not in lessons:
        raise SettingsError(f"No lesson {name!r}; available: {', '.join(lessons)}.")
    return lessons[name]
