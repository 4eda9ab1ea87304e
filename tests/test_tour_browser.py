"""The guided lesson in headless Chromium: presenter mode is a slide deck whose every screen fits 16:9 without
scrolling, and the keyboard hints show only where there is a keyboard."""

from __future__ import annotations

import pytest

from benchmarks.harness import browser, chromium_available, page_errors, streamlit_server, wait_for_app_idle
from lessons import tour

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

# How far the page's scrolling boxes reach below the screen (the window's, Streamlit's main area and its view).
OVERFLOW_JS = """() => [document.scrollingElement, document.querySelector('[data-testid="stMain"]'),
                        document.querySelector('[data-testid="stAppViewContainer"]')]
    .filter(Boolean).map((box) => box.scrollHeight - box.clientHeight)"""
SLIDE_DRAWN_JS = """() => { const box = document.querySelector('.st-key-tour_slide');
    const img = box && box.querySelector('img');
    return (img && img.complete && img.naturalWidth > 0) || (box && box.querySelector('.js-plotly-plot')); }"""
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "user_agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
                       "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"}


@pytest.fixture(scope="module")
def app():
    with streamlit_server(env={"PE_EXPLORER_WARMUP": "0"}) as (base_url, _), browser() as chromium:
        yield base_url, chromium


def _fits(page, what: str) -> None:
    overflow = page.evaluate(OVERFLOW_JS)
    assert max(overflow) <= 1, f"{what}: the screen scrolls by {overflow} px"


@pytest.mark.slow
def test_presenter_steps_each_fit_one_1280x720_screen(app):
    """Every step: the question on one screen, then the answer, the slide and why on the next, none scrolling."""
    base_url, chromium = app
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{base_url}/tour?present=1")
    count = len(tour.available_steps())
    for number in range(1, count + 1):
        page.get_by_text(f"{number} / {count} ·").first.wait_for(timeout=90_000)
        page.locator(".st-key-tour_reveal button").wait_for(timeout=60_000)
        wait_for_app_idle(page)
        assert page.locator(".st-key-tour_slide").count() == 0  # the question first
        _fits(page, f"step {number}, question")
        page.keyboard.press("ArrowRight")
        page.locator(".st-key-tour_slide").wait_for(timeout=90_000)
        page.wait_for_function(SLIDE_DRAWN_JS, timeout=90_000)
        # the last step leads on to the lesson's summary instead of a next step
        forward = "tour_next" if number < count else "tour_summary_button"
        page.locator(f".st-key-{forward} button").first.wait_for(timeout=60_000)
        wait_for_app_idle(page)
        _fits(page, f"step {number}, answer")
        slide, why = page.locator(".st-key-tour_slide").bounding_box(), page.locator(".st-key-tour_why").bounding_box()
        assert slide["y"] + slide["height"] <= 720 + 1 and why["y"] + why["height"] <= 720 + 1
        assert why["x"] >= slide["x"] + slide["width"]  # beside the slide, not under it
        assert abs(slide["width"] / slide["height"] - 16 / 9) < 0.02
        if number < count:
            page.keyboard.press("ArrowRight")
    assert page_errors(page) == []
    page.close()


def test_keyboard_hints_show_only_where_there_is_a_keyboard(app):
    base_url, chromium = app
    hints = "[class*='st-key-pe-keys-'], button kbd"
    desktop = chromium.new_page(viewport={"width": 1280, "height": 800})
    desktop.goto(f"{base_url}/tour?step=3")
    desktop.locator(".st-key-tour_relative_1 button").wait_for(timeout=90_000)
    wait_for_app_idle(desktop)
    assert desktop.get_by_text("Keys: 1–3 answer").is_visible()
    assert desktop.locator(".st-key-tour_relative_1 button kbd").is_visible()
    desktop.close()
    phone = chromium.new_context(**PHONE)
    page = phone.new_page()
    page.goto(f"{base_url}/tour?step=3")
    page.locator(".st-key-tour_relative_1 button").wait_for(timeout=90_000)
    wait_for_app_idle(page)
    assert page.locator(hints).count() >= 4  # drawn (the hint and a key on each choice and arrow) ...
    shown = [element.evaluate("e => e.outerHTML.slice(0, 120)") for element in page.locator(hints).all()
             if element.is_visible()]
    assert shown == []  # ... and not shown
    assert page_errors(page) == []
    phone.close()
