"""A lesson's cached figure is shared by every session: what is made from it must leave it alone, even for a moment.

Given a figure, or a figure's own trace objects, plotly builds the new figure by taking each trace's "type" out of the
source trace and putting it back afterwards. A session that drew the shared figure in that moment sent a trace without
its type (plotly's default, a scatter, with a heatmap's data) or failed on it ("Invalid property specified for object
of type Scatter: 'coloraxis'"), under load, on one open in about a thousand.
"""

from __future__ import annotations

import dataclasses

import pytest

from figures.page_form import page_form
from lessons import frequencies

_ORIGINALS: set[int] = set()


class Untouchable(dict):
    """A trace's properties that fail the test when changed (copies of them may change)."""

    def _check(self) -> None:
        if id(self) in _ORIGINALS:
            raise AssertionError("a shared figure's trace was changed")

    def pop(self, *args):
        self._check()
        return super().pop(*args)

    def __setitem__(self, key, value):
        self._check()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._check()
        super().__delitem__(key)

    def update(self, *args, **kwargs):
        self._check()
        super().update(*args, **kwargs)

    def setdefault(self, *args):
        self._check()
        return super().setdefault(*args)


def guarded(figure):
    """``figure`` (shared) with every trace's properties made ``Untouchable``."""
    for index, props in enumerate(figure._data):
        figure._data[index] = Untouchable(props)
        _ORIGINALS.add(id(figure._data[index]))
    return figure


@pytest.fixture
def lesson():
    frequencies.LESSON.clear_caches()
    yield frequencies.LESSON
    frequencies.LESSON.clear_caches()
    _ORIGINALS.clear()


@pytest.mark.parametrize("narrow", [False, True], ids=["desktop", "phone"])
def test_a_page_form_leaves_the_shared_figure_alone(lesson, narrow):
    shared = guarded(lesson.figure("angle-heatmaps"))
    form = page_form(shared, narrow=narrow)
    assert [trace.type for trace in form.figure.data] == [trace.type for trace in shared.data]
    assert "heatmap" in {trace.type for trace in shared.data}


def test_a_highlighted_figure_is_drawn_on_a_copy_that_leaves_the_shared_one_alone(lesson):
    plain = lesson.settings()
    shared = guarded(lesson.figure("angle-heatmaps", plain))
    highlighted = lesson.figure("angle-heatmaps", dataclasses.replace(plain, pair=3))
    assert highlighted is not shared and highlighted.to_dict() != shared.to_dict()  # the pair is marked on the copy
