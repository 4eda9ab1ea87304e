"""No figure's text collides, on a 390 px phone, in a desktop window, or as a 16:9 slide, in either language.

Every lesson's figures at their defaults (and with their own slider where they have one) are drawn by
plotly.js in headless Chromium: the page form a phone gets (``figures.page_form``, narrow), the page form a
desktop gets, and the slide style; titles, axis titles, legends, colour bars, notes, tick labels and sliders
must not overlap each other (or the plot, for legends and colour bars) nor run off the canvas.
"""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.harness import browser, chromium_available
from figures.page_form import page_form
from i18n import LANGUAGES, use_language
from lessons import all_lessons
from lessons.base import SCRUB_SETTING, SLIDE
from tests.figure_boxes import blank_page, collisions

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

PHONE_CHART_WIDTH = 358  # a 390 px phone less the page's padding
DESKTOP_CHART_WIDTH = 900  # the main column of a 1280 px window beside the sidebar
SLIDE_SIZE = (1280, 720)


def _variants(training_settings):
    """(name, lesson, figure, settings): every figure at its defaults (the training lesson's at
    ``training_settings``, a run the session has trained), and scrubbed where it has its own slider."""
    for lesson in all_lessons().values():
        settings = training_settings if lesson.name == "training" else None
        for name, spec in lesson.figures.items():
            yield f"{lesson.name}:{name}", lesson, name, settings
            if spec.scrub:
                yield f"{lesson.name}:{name} (own slider)", lesson, name, dataclasses.replace(
                    settings or lesson.settings(), **{SCRUB_SETTING: True})


@pytest.fixture(scope="module")
def plotly_page(tmp_path_factory):
    with browser() as chromium:
        page = chromium.new_page()
        page.goto(blank_page(tmp_path_factory.mktemp("plotly")).as_uri())
        yield page
        page.close()


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_no_figure_text_collides_on_a_phone_a_desktop_or_a_slide(plotly_page, language, small_training_run):
    found = []
    with use_language(language):
        for label, lesson, name, settings in _variants(small_training_run):
            figure = lesson.figure(name, settings)
            drawn = {
                "phone": collisions(plotly_page, lesson.page_figure(name, settings, narrow=True).figure,
                                    PHONE_CHART_WIDTH),
                "desktop": collisions(plotly_page, lesson.page_figure(name, settings).figure, DESKTOP_CHART_WIDTH),
                "slide": collisions(plotly_page, lesson.figure(name, settings, SLIDE), *SLIDE_SIZE),
            }
            found += [f"{label} ({where}): {problem}" for where, problems in drawn.items() for problem in problems]
            assert page_form(figure).figure.layout.meta["title"] == (figure.layout.title.text or "")
    assert not found, "\n".join(found)
