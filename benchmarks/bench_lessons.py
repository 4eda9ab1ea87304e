"""Every lesson's compute and figures, at its defaults and at its heaviest settings, caches cold.

The same registry the pages, the export CLI and the tests use, so a new lesson is timed here
with no edit.
"""

from __future__ import annotations

import functools

from benchmarks import Case
from lessons import all_lessons


def _build_all(lesson, settings) -> None:
    """Compute and draw every figure from scratch (the lesson's own caches and its pe_core caches emptied)."""
    lesson.clear_caches()
    _clear_core_caches()
    lesson.all_figures(settings)


def _clear_core_caches() -> None:
    from lessons.rope_setup import rope_setup

    rope_setup.cache.clear()


CASES = []
for _name, _lesson in all_lessons().items():
    if getattr(_lesson, "expensive", False):
        continue
    _group = f"lesson: {_name}"
    CASES.append(Case(_group, "compute + every figure, defaults", functools.partial(_build_all, _lesson,
                                                                                 _lesson.settings()), repeats=5))
    CASES.append(Case(_group, "compute + every figure, heaviest", functools.partial(_build_all, _lesson,
                                                                                 _lesson.settings.extremes()),
                      repeats=3))
