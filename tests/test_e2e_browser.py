"""End-to-end: the real app in headless Chromium (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tests.browser import (
    browser,
    chromium_available,
    move_first_slider,
    page_errors,
    streamlit_server,
    wait_for_app_idle,
)
from ui.pages import available_pages

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
LATENCIES: dict[str, list[float]] = {}
PAGES_WITH_SLIDERS = [p for p in available_pages() if p.path not in ("pages/home.py", "pages/maths.py")]


@pytest.fixture(scope="module")
def app():
    with streamlit_server() as (base_url, startup_seconds):
        with browser() as chromium:
            yield base_url, startup_seconds, chromium
    if LATENCIES:
        RESULTS.mkdir(parents=True, exist_ok=True)
        summary = {name: {"p50_ms": 1000 * statistics.median(values), "samples": len(values)}
                   for name, values in LATENCIES.items()}
        (RESULTS / "e2e_latency.json").write_text(json.dumps(summary, indent=2))


def open_page(chromium, url: str):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    wait_for_app_idle(page)
    return page


def test_deep_link_on_a_fresh_server_uses_the_app_navigation():
    """The first visitor of a fresh server arrives through a shared link, not through Home."""
    target = PAGES_WITH_SLIDERS[0] if PAGES_WITH_SLIDERS else available_pages()[0]
    with streamlit_server() as (base_url, _), browser() as chromium:
        page = open_page(chromium, f"{base_url}/{target.url_path}?no_such=1")
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("Compute device").wait_for(timeout=30_000)
        assert sidebar.get_by_text(target.title).count() >= 1
        assert page_errors(page) == []


def test_home_lists_every_page_and_sidebar_navigates(app):
    base_url, startup_seconds, chromium = app
    assert startup_seconds < 30
    page = open_page(chromium, base_url)
    assert page.get_by_text("Positional encodings, explored").first.is_visible()
    assert page_errors(page) == []
    for info in available_pages()[1:]:
        assert page.get_by_text(info.summary).is_visible()
    if len(available_pages()) > 1:  # Streamlit shows no navigation for a single page
        nav = page.locator('[data-testid="stSidebarNav"]')
        assert nav.get_by_text(available_pages()[-1].title).count() >= 1
    page.close()


@pytest.mark.parametrize("info", PAGES_WITH_SLIDERS, ids=[p.title for p in PAGES_WITH_SLIDERS])
def test_page_loads_and_slider_redraws_figure(app, info):
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/{info.url_path}")
    assert page_errors(page) == []
    assert page.locator(".js-plotly-plot").count() >= 1
    timings = []
    for key in ("ArrowRight", "ArrowLeft", "ArrowRight"):
        timings.append(move_first_slider(page, key=key))
        wait_for_app_idle(page)
    assert page_errors(page) == []
    LATENCIES[info.title] = timings
    page.close()
