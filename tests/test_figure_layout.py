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
from figures.page_form import DESKTOP_CHART_WIDTH, PHONE_CHART_WIDTH, page_form
from i18n import LANGUAGES, use_language
from lessons import all_lessons
from lessons.base import SCRUB_SETTING, SLIDE
from tests.figure_boxes import blank_page, draw, plot_heights, problems

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

SLIDE_SIZE = (1280, 720)
PHONE_PLOT_SHARE = 0.6


def _variants(lesson, training_settings):
    """(name, lesson, figure, settings): every figure of ``lesson`` at its defaults (the training lesson's at
    ``training_settings``, a run the session has trained), and scrubbed where it has its own slider."""
    settings = training_settings
    for name, spec in lesson.figures.items():
        yield f"{lesson.name}:{name}", lesson, name, settings
        if spec.showcase:  # the settings the gallery shows it at
            yield f"{lesson.name}:{name} (showcase)", lesson, name, lesson.settings(**dict(spec.showcase))
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


@pytest.mark.parametrize("lesson_name", sorted(all_lessons()))  # one test a lesson: the two workers share them
@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_no_figure_text_collides_on_a_phone_a_desktop_or_a_slide(plotly_page, language, lesson_name, request):
    """Text apart and on the canvas on a phone, a desktop and a slide; and on a phone each plot keeps at least
    ``PHONE_PLOT_SHARE`` of its desktop height (a legend under a phone's plot takes its rows out of the figure)."""
    found = []
    with use_language(language):
        # the training lesson's figures at a run the session has trained
        trained = request.getfixturevalue("small_training_run") if lesson_name == "training" else None
        for label, lesson, name, settings in _variants(all_lessons()[lesson_name], trained):
            figure = lesson.figure(name, settings)
            drawn = {
                "phone": draw(plotly_page, lesson.page_figure(name, settings, narrow=True).figure, PHONE_CHART_WIDTH),
                "desktop": draw(plotly_page, lesson.page_figure(name, settings).figure, DESKTOP_CHART_WIDTH),
                "slide": draw(plotly_page, lesson.figure(name, settings, SLIDE), *SLIDE_SIZE),
            }
            found += [f"{label} ({where}): {problem}" for where, boxes in drawn.items()
                      for problem in problems(boxes["boxes"], boxes["size"]["width"], boxes["size"]["height"])]
            phone, desktop = plot_heights(drawn["phone"]), plot_heights(drawn["desktop"])
            found += [f"{label}: plot {plot} is {phone[plot]:.0f} px high on a phone, {desktop[plot]:.0f} on a desktop"
                      for plot in phone.keys() & desktop.keys() if phone[plot] < PHONE_PLOT_SHARE * desktop[plot]]
            assert page_form(figure).figure.layout.meta["title"] == (figure.layout.title.text or "")
    assert not found, "\n".join(found)
