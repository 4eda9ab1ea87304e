"""End-to-end: the real app in headless Chromium (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import json
import statistics
import urllib.request
from pathlib import Path

import pytest

from benchmarks.harness import (
    CHART_CLASS,
    CHARTS,
    SLIDER_THUMBS,
    browser,
    chromium_available,
    draws_figures_on_load,
    first_move_key,
    has_slider,
    live_slider,
    move_slider,
    other_key,
    page_errors,
    press_slider,
    streamlit_server,
    wait_for_app_idle,
)
from lessons import all_lessons
from tests.conftest import opens_with_a_chart
from ui.chart import plotly_file_name
from ui.lesson import BORROWED_KEY
from ui.pages import available_pages

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Chromium is not installed (apt install chromium)"),
]

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
LATENCIES: dict[str, list[float]] = {}
PAGES_WITH_SLIDERS = [p for p in available_pages() if has_slider(p, all_lessons())]
OTHER_PAGES = [p for p in available_pages() if p not in PAGES_WITH_SLIDERS and p.path != "app_pages/home.py"]


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


def open_page(chromium, url: str, *, init_script: str | None = None):
    """A new tab at ``url``, once the app is idle; ``init_script`` runs before the page's own scripts."""
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    if init_script:
        page.add_init_script(init_script)
    page.goto(url)
    wait_for_app_idle(page)
    return page


# a page with sliders, one whose address is not its file's name (/derivations is app_pages/maths.py), and one that
# draws no chart
FIRST_VISITS = PAGES_WITH_SLIDERS[:1] + [p for p in available_pages() if p.path in ("app_pages/maths.py",
                                                                                    "app_pages/glossary.py")]


# when the page's first chart element was made (an init script: it runs before the page's own scripts)
FIRST_CHART_JS = """new MutationObserver((_, observer) => {
  if (document.querySelector('CHARTS')) { window.__firstChart = performance.now(); observer.disconnect(); }
}).observe(document, {subtree: true, childList: true});""".replace("CHARTS", CHARTS)


@pytest.mark.parametrize("target", FIRST_VISITS, ids=[p.url_path for p in FIRST_VISITS])
def test_deep_link_on_a_fresh_server_uses_the_app_navigation(target):
    """The first visitor of a fresh server arrives through a shared link, not through Home, and stays on that page
    with the link's settings."""
    with streamlit_server() as (base_url, _), browser() as chromium:
        page = open_page(chromium, f"{base_url}/{target.url_path}?lang=zh&no_such=1", init_script=FIRST_CHART_JS)
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("幻灯片与分享").wait_for(timeout=30_000)  # app.py's shared sidebar, in the link's language
        page.wait_for_function("(path) => location.pathname.endsWith('/' + path)", arg=target.url_path,
                               timeout=30_000)
        assert "lang=zh" in page.url
        assert page_errors(page) == []
        library_js = ("(name) => performance.getEntriesByType('resource').filter((entry) => entry.name.endsWith(name))"
                      ".map((entry) => entry.startTime)")
        if target.charts:  # the library was asked for while the page computed, before its first chart was made
            sidebar.get_by_text("计算设备").wait_for(timeout=30_000)  # and the page computed with torch
            page.wait_for_function("() => window.Plotly", timeout=90_000)
            [library] = page.evaluate(library_js, plotly_file_name())
            if opens_with_a_chart(target):  # (a page in parts may open on a part without one)
                assert library < page.evaluate("() => window.__firstChart")
        else:
            assert page.evaluate(library_js, plotly_file_name()) == []


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
        assert nav.get_by_text(available_pages()[1].title).count() >= 1  # long lists fold after the first few
    page.close()


@pytest.mark.parametrize("info", PAGES_WITH_SLIDERS, ids=[p.title for p in PAGES_WITH_SLIDERS])
# 25 s at most alone, two or three times that beside the other worker. A page that stops answering (as one did
# when a chart started a drawing before its last had finished) hangs Playwright's reads until this limit, and
# the suite must stay within CI's ten minutes.
@pytest.mark.timeout(150)
def test_page_loads_and_slider_redraws_figure(app, info):
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/{info.url_path}")
    page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    assert page_errors(page) == []
    timings = []
    _index, thumb, there = live_slider(page)
    for key in (there, other_key(there)):
        timings.append(move_slider(page, thumb, key))
        wait_for_app_idle(page)
    assert page_errors(page) == []
    LATENCIES[info.title] = timings
    page.close()


def test_charts_are_drawn_near_the_screen_and_updated_in_place(app):
    """A chart far below the screen waits until it is scrolled to; a slider move hands the chart the reader
    watches its new figure, and the same chart element redraws it in the same plot (plotly did not rebuild it,
    as it does when handed a config), with its toolbar's download named after the new settings."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/decay?part=all")  # the whole page; downloads are accepted
    page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    last = page.locator(f".{CHART_CLASS}").last
    assert not last.evaluate("(el) => !!el._fullLayout")
    last.scroll_into_view_if_needed()
    page.wait_for_function("(el) => !!el._fullLayout", arg=last.element_handle(), timeout=30_000)

    methods_chart = f".st-key-decay_bound-methods .{CHART_CLASS}"
    methods = page.locator(methods_chart)
    methods.scroll_into_view_if_needed()
    page.wait_for_function("(el) => !!el._fullLayout", arg=methods.element_handle(), timeout=30_000)
    methods.evaluate("""(el) => { el.__mark = 'kept'; el.__shown = el.data;
                                  el.__plot = el.querySelector('svg.main-svg'); }""")
    download_name = "(el) => JSON.parse(el.__peText).config.toImageButtonOptions.filename"
    named_before = methods.evaluate(download_name)
    head_dim = page.locator(SLIDER_THUMBS).first  # the sidebar's head size d, which the methods chart draws
    move_slider(page, head_dim, first_move_key(head_dim))
    wait_for_app_idle(page)
    page.wait_for_function("""(selector) => { const el = document.querySelector(selector);
                                              return el.__mark === 'kept' && el.data !== el.__shown; }""",
                           arg=methods_chart, timeout=30_000)
    assert methods.evaluate("(el) => el.querySelector('svg.main-svg') === el.__plot")
    named_after = methods.evaluate(download_name)
    assert named_after != named_before
    methods.hover()
    with page.expect_download(timeout=30_000) as download_info:
        methods.locator('.modebar-btn[data-title="Download plot"]').click()
    assert download_info.value.suggested_filename == f"{named_after}.svg"
    assert page_errors(page) == []
    page.close()


# Counts plotly's resize redraws from now on (a full relayout of the chart each).
COUNT_RESIZES_JS = """() => { const resize = Plotly.Plots.resize; window.__resizes = 0;
  Plotly.Plots.resize = function (...args) { window.__resizes += 1; return resize.apply(this, args); }; }"""


def test_a_move_redraws_a_chart_once_and_only_a_new_width_resizes_it(app):
    """A move hands the chart its new figure and no resize redraw follows; a taller column (its chart's figure
    grew) resizes nothing either, as the column's height follows the chart's; a narrower window resizes the charts
    that are drawn."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/rope_code")
    page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    watched = page.locator(f".{CHART_CLASS}").nth(1)
    watched.evaluate("(el) => el.scrollIntoView({block: 'center'})")
    page.wait_for_function("(el) => !!el._fullLayout", arg=watched.element_handle(), timeout=30_000)
    page.evaluate(COUNT_RESIZES_JS)
    thumb = page.locator(SLIDER_THUMBS).first
    there = first_move_key(thumb)
    for key in (there, other_key(there)):
        watched.evaluate("(el) => { el.__shown = el.data; }")
        press_slider(page, thumb, key)  # the reader watches the chart, not the slider
        page.wait_for_function("(el) => el.data !== el.__shown", arg=watched.element_handle(), timeout=30_000)
        wait_for_app_idle(page)
    watched.evaluate("(el) => { el.parentElement.style.height = (el.parentElement.clientHeight + 300) + 'px'; }")
    page.wait_for_timeout(500)  # a resize observer's callback comes a frame later
    assert page.evaluate("() => window.__resizes") == 0
    page.set_viewport_size({"width": 1000, "height": 1000})
    page.wait_for_function("() => window.__resizes > 0", timeout=30_000)
    assert page_errors(page) == []
    page.close()


# Numbers animation frames, and notes for each plotly drawing the chart it draws into and the frame it starts in.
COUNT_FRAMES_JS = """() => {
  window.__frame = 0;
  const tick = () => { window.__frame += 1; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const react = Plotly.react;
  window.__draws = [];
  Plotly.react = function (chart, ...args) {
    window.__draws.push([Array.from(document.querySelectorAll('.CHART_CLASS')).indexOf(chart), window.__frame]);
    return react.call(this, chart, ...args);
  };
}""".replace("CHART_CLASS", CHART_CLASS)


def test_a_move_draws_the_top_chart_on_screen_first_and_the_rest_after_a_paint(app):
    """RoPE in code's head size changes both charts of its first part, both on screen: the top one is drawn at
    once, the other in a later frame (once the browser has painted the first), and both show their new figure."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/rope_code")
    page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    charts = page.locator(f".{CHART_CLASS}")
    charts.first.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    for n in range(2):
        page.wait_for_function("(el) => !!el._fullLayout", arg=charts.nth(n).element_handle(), timeout=30_000)
    page.evaluate(COUNT_FRAMES_JS)
    thumb = page.locator(SLIDER_THUMBS).first
    there = first_move_key(thumb)
    # Both figures often reach the page in one task, but not always: before this order, 2 moves of 4 drew both
    # charts in one frame; so six moves, each drawing in two frames.
    for move in range(6):
        shown = [charts.nth(n).evaluate("(el) => el.__peText") for n in range(2)]
        page.evaluate("() => { window.__draws = []; }")
        press_slider(page, thumb, there if move % 2 == 0 else other_key(there))
        page.wait_for_function("() => window.__draws.length >= 2", timeout=30_000)
        wait_for_app_idle(page)
        (first, first_frame), (second, second_frame) = page.evaluate("() => window.__draws")[:2]
        assert (first, second) == (0, 1)
        assert second_frame > first_frame, f"move {move}: both charts drawn in frame {first_frame}"
        assert all(charts.nth(n).evaluate("(el) => el.__peText") != shown[n] for n in range(2))
    assert page_errors(page) == []
    page.close()


# lists the <style> elements added to the page from now on that carry any of the given markers (the app's own CSS;
# plotly.js and Streamlit add sheets of their own as they load, which on a busy machine may be during a move)
APP_STYLES_ADDED_JS = """(markers) => {
  window.__styles = [];
  new MutationObserver((records) => {
    for (const record of records) for (const node of record.addedNodes) {
      if (node.nodeType !== 1) continue;
      for (const style of node.tagName === "STYLE" ? [node] : node.querySelectorAll("style")) {
        if (markers.some((marker) => style.textContent.includes(marker))) window.__styles.push(style.textContent);
      }
    }
  }).observe(document, {subtree: true, childList: true});
}"""


def test_a_move_that_redraws_number_tables_adds_no_stylesheet_and_the_tables_keep_their_style(app):
    """Each <style> the browser sees added makes it restyle the whole page; the tables' rules are in the app's one
    stylesheet, drawn once a page, so a move that redraws the code page's three tables adds none."""
    from ui.stylesheet import HIDDEN_KEY_PREFIX
    from ui.table import TABLE_CLASS

    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/rope_code")
    page.wait_for_selector(f".{TABLE_CLASS}", timeout=90_000)
    wait_for_app_idle(page)  # the page's own first runs draw the stylesheet: watch from the move on
    page.evaluate(APP_STYLES_ADDED_JS, [TABLE_CLASS, HIDDEN_KEY_PREFIX])
    thumb = page.locator(SLIDER_THUMBS).first
    before = page.locator(f".{TABLE_CLASS} tbody tr").count()
    press_slider(page, thumb, first_move_key(thumb))
    page.wait_for_function("([selector, n]) => document.querySelectorAll(selector).length !== n",
                           arg=[f".{TABLE_CLASS} tbody tr", before], timeout=30_000)
    wait_for_app_idle(page)
    assert page.evaluate("() => window.__styles") == []
    header = page.locator(f".{TABLE_CLASS} thead th").first
    assert header.evaluate("(el) => getComputedStyle(el).position") == "sticky"
    assert page_errors(page) == []
    page.close()


# Holds plotly.js back until the test calls window.__loadPlotly(), and counts the library's Plotly.react calls under
# way at once; each chart keeps the data of the last figure it was handed to plotly.
HOLD_PLOTLY_JS = """(() => {
  const append = Node.prototype.appendChild;
  Node.prototype.appendChild = function (node) {
    if (node && node.tagName === "SCRIPT" && (node.src || "").includes("PLOTLY_FILE")) {
      window.__loadPlotly = () => append.call(this, node);
      return node;
    }
    return append.call(this, node);
  };
  let plotly;
  Object.assign(window, {__reacts: 0, __reactsUnderWay: 0, __mostReactsUnderWay: 0});
  Object.defineProperty(window, "Plotly", {configurable: true, get: () => plotly, set(library) {
    plotly = library;
    const react = library.react;
    library.react = function (chart, update) {
      window.__reacts += 1;
      window.__reactsUnderWay += 1;
      window.__mostReactsUnderWay = Math.max(window.__mostReactsUnderWay, window.__reactsUnderWay);
      chart.__reactedData = JSON.stringify(update.data);
      const finished = () => { window.__reactsUnderWay -= 1; };
      const drawing = react.apply(this, arguments);
      Promise.resolve(drawing).then(finished, finished);
      return drawing;
    };
  }});
})();""".replace("PLOTLY_FILE", plotly_file_name())


# A page that stops answering stops Playwright's own waits too: this limit ends the test.
@pytest.mark.timeout(120)
def test_figures_handed_over_while_plotly_loads_are_drawn_one_at_a_time_the_newest_last(app):
    """A slider moved before plotly.js has loaded (a busy machine, a slow network) hands each chart several
    figures. Each of them used to start its own drawing once the library came, and the page then stopped
    answering; a chart now draws one figure at a time, and only the newest."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/family", init_script=HOLD_PLOTLY_JS)
    page.wait_for_selector(CHARTS, timeout=90_000)
    page.wait_for_function("() => !!window.__loadPlotly", timeout=30_000)
    _index, thumb, there = live_slider(page)
    for key in (there, other_key(there), there):
        move_slider(page, thumb, key)
        wait_for_app_idle(page)
    assert page.evaluate("() => window.__reacts") == 0
    page.evaluate("() => window.__loadPlotly()")
    # waited for, not evaluated: a page that stopped answering fails the wait with a message
    drawn = page.wait_for_function(f"""() => {{
        const charts = Array.from(document.querySelectorAll('.{CHART_CLASS}')).filter((el) => el.__peNear);
        if (!charts.length || charts.some((el) => !el._fullLayout) || window.__reactsUnderWay) return null;
        return {{charts: charts.length, reacts: window.__reacts, most: window.__mostReactsUnderWay,
                 newest: charts.map((el) => el.__reactedData === JSON.stringify(JSON.parse(el.__peText).figure.data))}};
    }}""", timeout=60_000).json_value()
    assert drawn["most"] == 1
    assert drawn["newest"] == [True] * drawn["charts"]
    assert drawn["reacts"] == drawn["charts"]  # the figures handed over before the newest were never drawn
    assert page_errors(page) == []
    page.close()


def test_the_page_checks_its_own_messages_against_no_embedding_origins(app):
    # Streamlit checks every message the page posts itself (about seven a slider move) against its list of hosting
    # origins, two URL patterns per origin: with the 16 defaults, about 3 ms of a move. The app is not embedded, so
    # its list is empty; a misspelt config key would leave the defaults.
    base_url, _, _ = app
    with urllib.request.urlopen(f"{base_url}/_stcore/host-config", timeout=10) as response:
        assert json.loads(response.read())["allowedOrigins"] == []


@pytest.mark.parametrize("info", OTHER_PAGES, ids=[p.title for p in OTHER_PAGES])
def test_page_without_a_slider_loads_with_its_figures(app, info):
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/{info.url_path}")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
    if draws_figures_on_load(info, all_lessons()):
        page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    assert page_errors(page) == []
    page.close()


def test_export_button_downloads_a_png(app):
    base_url, _, chromium = app
    info = PAGES_WITH_SLIDERS[0]
    page = chromium.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page.goto(f"{base_url}/{info.url_path}")
    page.wait_for_selector(CHARTS, timeout=90_000)
    wait_for_app_idle(page)
    page.get_by_role("button", name="Export").first.click()
    with page.expect_download(timeout=90_000) as download_info:
        page.get_by_role("button", name="PNG").first.click()
    download = download_info.value
    assert download.suggested_filename.endswith(".png")
    data = Path(download.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 1000 and height >= 500
    page.close()


def test_training_starts_shows_progress_and_stops_keeping_the_partial_run(app):
    base_url, _, chromium = app
    info = next((p for p in available_pages() if p.path == "app_pages/training.py"), None)
    if info is None:
        pytest.skip("no training page")
    page = open_page(chromium, f"{base_url}/{info.url_path}?steps=2000&dm=32&nl=1&hd=16")
    page.get_by_role("button", name="Train this experiment").click()
    page.locator('[data-testid="stProgress"]').first.wait_for(timeout=60_000)
    page.wait_for_timeout(3_000)  # let a few steps run
    # the page's own Stop, not the header's Stop that Streamlit shows while a script runs
    page.get_by_test_id("stMain").get_by_role("button", name="Stop").click()
    page.get_by_role("button", name="Resume training").wait_for(timeout=60_000)
    assert page_errors(page) == []
    # the partial run's loss curve is on the page: waited for, as it is drawn after the button (read at once, beside
    # another test worker, it was once not there yet)
    page.locator(CHARTS).first.wait_for(timeout=30_000)
    assert page.locator(CHARTS).count() >= 1
    page.close()


def test_a_pasted_config_travels_in_the_link(app):
    """Paste a config, copy the page's address, open it elsewhere: the same config is analysed."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/frequencies?src=Paste+config.json")
    box = page.locator('[data-testid="stSidebar"] textarea').first
    box.fill(json.dumps({"head_dim": 64, "rope_theta": 500000.0, "max_position_embeddings": 8192}))
    box.press("Control+Enter")
    page.wait_for_function("() => decodeURIComponent(location.search).includes('500000')", timeout=30_000)
    wait_for_app_idle(page)
    link = page.url
    page.close()
    reopened = open_page(chromium, link)
    reopened.wait_for_selector(CHARTS, timeout=90_000)
    sidebar = reopened.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("base 500,000").first.wait_for(timeout=30_000)
    # waited for, not read once: beside another test worker it was once read empty just after the text it drives
    # had appeared
    reopened.wait_for_function("""() => Array.from(document.querySelectorAll('[data-testid="stSidebar"] textarea'))
        .some((box) => box.value.includes('500000'))""", timeout=30_000)
    assert page_errors(reopened) == []
    reopened.close()


def test_a_part_opened_by_its_tab_is_in_the_link_and_the_link_reopens_it(app):
    """decay: only the open part's charts are on the page; the tab chosen goes into the address, with the settings
    of the closed part its figures read, and the address opens the same view in a new tab."""
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/decay?part=sinusoidal")
    page.locator(".st-key-decay_sinusoidal-dot").wait_for(timeout=90_000)
    assert page.locator(".st-key-decay_bound").count() == 0
    offsets = page.locator('[data-testid="stMain"] [data-testid="stSlider"]').filter(has_text="±")
    offsets.locator('input[type="range"]').press("ArrowLeft")  # the offset range the real q·k charts use too
    page.wait_for_function("() => new URLSearchParams(location.search).has('kmax')", timeout=30_000)
    wait_for_app_idle(page)
    kmax = page.evaluate("() => new URLSearchParams(location.search).get('kmax')")
    page.get_by_role("tab", name="Real q·k").click()
    page.locator(".st-key-decay_rope-scores").wait_for(timeout=90_000)
    page.wait_for_function("() => new URLSearchParams(location.search).get('part') === 'real-scores'",
                           timeout=30_000)
    wait_for_app_idle(page)
    assert page.locator(".st-key-decay_sinusoidal-dot").count() == 0
    borrowed = page.locator(f".st-key-{BORROWED_KEY}-decay")  # the sinusoidal part's controls, drawn hidden
    assert borrowed.count() == 1 and not borrowed.is_visible()
    link = page.url
    assert f"kmax={kmax}" in link.replace("%2C", ",")
    reopened = open_page(chromium, link)
    reopened.locator(".st-key-decay_rope-scores").wait_for(timeout=90_000)
    assert reopened.get_by_role("tab", name="Real q·k").get_attribute("aria-selected") == "true"
    shown = "(el) => JSON.parse(el.__peText).figure"
    projected = f".st-key-decay_projected-scores .{CHART_CLASS}"
    assert reopened.locator(projected).evaluate(shown) == page.locator(projected).evaluate(shown)
    assert page_errors(reopened) == [] and page_errors(page) == []
    reopened.close()
    page.close()


def test_tour_presents_with_the_keyboard_and_no_sidebar(app):
    """?present=1: no sidebar; → reveals the step's slide, → again moves on, ← goes back."""
    base_url, _, chromium = app
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{base_url}/tour?present=1&step=3")
    wait_for_app_idle(page)
    page.get_by_text("3 / ").first.wait_for(timeout=60_000)
    # the style that hides the sidebar may land a moment after the step's header
    page.locator('[data-testid="stSidebar"]').wait_for(state="hidden", timeout=30_000)
    assert page.locator(".st-key-tour_slide").count() == 0  # the question first
    # the arrow is the Reveal button's shortcut: press it once that button is drawn and the run has ended
    page.locator(".st-key-tour_reveal button").wait_for(timeout=60_000)
    wait_for_app_idle(page)
    page.keyboard.press("ArrowRight")
    page.locator(".st-key-tour_slide").wait_for(timeout=60_000)
    # the slide box shows a skeleton first, then the slide (an image, or the live chart without a renderer)
    page.wait_for_function("""() => { const box = document.querySelector('.st-key-tour_slide');
                                      const img = box && box.querySelector('img');
                                      return (img && img.complete && img.naturalWidth > 0)
                                             || (box && box.querySelector('.js-plotly-plot')); }""", timeout=60_000)
    wait_for_app_idle(page)
    box = page.locator(".st-key-tour_slide").bounding_box()
    # the slide fills the screen's height beside the answer (its size: tests/test_tour_browser.py), nothing below
    assert box["width"] >= 1280 / 2 and box["y"] + box["height"] <= 720 + 1
    page.keyboard.press("ArrowRight")
    page.get_by_text("4 / ").first.wait_for(timeout=60_000)
    assert "step=4" in page.url and "present=1" in page.url
    # at once, as a presenter would: step 4 may still be drawing, and ← must reach a button all the same
    page.keyboard.press("ArrowLeft")
    page.get_by_text("3 / ").first.wait_for(timeout=60_000)
    assert page_errors(page) == []
    page.close()


def test_a_pair_clicked_on_the_wavelength_chart_is_outlined_on_the_heatmaps(app):
    base_url, _, chromium = app
    page = open_page(chromium, f"{base_url}/frequencies?part=per-pair")
    chart = page.locator(f".st-key-frequencies_wavelengths .{CHART_CLASS}")
    chart.scroll_into_view_if_needed()
    page.wait_for_selector(f".st-key-frequencies_wavelengths .{CHART_CLASS}.js-plotly-plot", timeout=30_000)
    wait_for_app_idle(page)
    x, y = chart.evaluate("""gd => {
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        const trace = gd._fullData[0];
        return [r.left + xa._offset + xa.d2p(trace.x[45]), r.top + ya._offset + ya.d2p(trace.y[45])]; }""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_function("() => location.search.includes('pair=45')", timeout=30_000)
    wait_for_app_idle(page)
    page.get_by_role("tab", name="Angles", exact=True).click()  # the heatmaps are in the first part
    page.wait_for_selector(f".st-key-frequencies_angle-heatmaps .{CHART_CLASS}.js-plotly-plot", timeout=30_000)
    wait_for_app_idle(page)
    page.wait_for_timeout(1_000)
    outlined = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd =>
        (gd.layout.shapes || []).filter(s => s.type === 'rect' && s.line && s.line.color === '#000000'
                                             && (s.x0 + s.x1) / 2 === 45).length)""")
    assert outlined[0] >= 3  # every heatmap panel of the default three methods
    assert page_errors(page) == []
    page.close()
