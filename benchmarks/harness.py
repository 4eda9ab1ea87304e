"""Drive the app: run a page script with AppTest, or the real app in headless Chromium (start
`streamlit run app.py`, open pages, move sliders).

Shared by the benchmarks and the end-to-end tests (the classroom load test, ``python -m benchmarks.loadtest``,
speaks Streamlit's protocol itself: benchmarks/protocol.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
]


def run_page(path: str, query: dict | None = None, timeout: float = 60):
    """Run a page script with AppTest (optionally with URL query parameters) and return it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / path), default_timeout=timeout)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    return at


def chromium_available() -> bool:
    return Path(CHROMIUM).exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT_ATTEMPTS = 3


@contextlib.contextmanager
def streamlit_server(timeout: float = 60.0, *, cwd: Path = ROOT, script: str = "app.py",
                     env: dict[str, str] | None = None):
    """Run ``script`` (the app by default) on a free localhost port; yields (base_url, seconds until healthy).
    ``env``: variables added to the server's environment (Streamlit reads ``STREAMLIT_*`` as config).

    A port found free can be taken by another process (a parallel test worker) before Streamlit binds it; the
    server is then started again on another port."""
    server_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    started = time.perf_counter()
    for attempt in range(PORT_ATTEMPTS):
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=cwd, env=server_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            if _wait_until_healthy(process, port, started, timeout, retry=attempt + 1 < PORT_ATTEMPTS):
                break
        except BaseException:
            _stop(process)
            raise
    try:
        yield base_url, time.perf_counter() - started
    finally:
        _stop(process)


def _wait_until_healthy(process, port: int, started: float, timeout: float, *, retry: bool) -> bool:
    """True once the server answers its health check; False if it exited because its port was taken (and
    ``retry`` allows another port). Raises if it exited otherwise or did not answer within ``timeout``."""
    while True:
        if process.poll() is not None:
            output = process.stdout.read()
            if retry and f"Port {port} is not available" in output:
                return False
            raise RuntimeError(f"streamlit exited early:\n{output}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as response:
                if response.read() == b"ok" and process.poll() is None:
                    return True
        except OSError:
            pass
        if time.perf_counter() - started > timeout:
            raise TimeoutError("streamlit did not become healthy in time")
        time.sleep(0.1)


def _stop(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


# Whether the app's script is not running, as Streamlit marks its app element ("initial", "running",
# "notRunning", ...) with the connection's state beside it. Its "Running..." status widget cannot say it: it
# appears only after a delay and hides before the run ends (a home page showed 7 of its 65 elements with no
# status widget, and then 65 with the run still going).
SCRIPT_IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.dataset.testScriptState === "notRunning" && app.dataset.testConnectionState === "CONNECTED"; }"""
# ... and its main area shows something. Any shown element counts, not the first: the first may be one the page hides.
_APP_IDLE_JS = """() => (SCRIPT_IDLE_JS)() && Array.from(
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]')).some(
    (el) => el.getClientRects().length > 0)""".replace("SCRIPT_IDLE_JS", SCRIPT_IDLE_JS)
# What the page showed when it did not become idle, for the error message
_APP_STATE_JS = """() => {
    const elements = Array.from(document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]'));
    const app = document.querySelector('[data-testid="stApp"]');
    return {url: location.href, script: app ? app.dataset.testScriptState : null,
            connection: app ? app.dataset.testConnectionState : null, elements: elements.length,
            shown: elements.filter((el) => el.getClientRects().length > 0).length,
            stale: elements.filter((el) => el.dataset.stale === "true").length,
            main: ((document.querySelector('[data-testid="stMain"]') || {}).innerText || "").slice(0, 300)};
}"""


def wait_for_app_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the page shows the app and its script run finished."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(_APP_IDLE_JS, timeout=timeout_ms)
    except PlaywrightTimeout as error:
        try:  # waited for, not evaluated: an evaluation of a page that hangs never returns
            state = page.wait_for_function(_APP_STATE_JS, timeout=5_000).json_value()
        except PlaywrightTimeout:
            state = "the page does not answer"
        raise PlaywrightTimeout(f"the app did not become idle in {timeout_ms / 1000:.0f} s: {state}") from error


# ui.chart.CHART_CLASS, named again here: importing the app's ui package would stop the browser benchmark from
# measuring another checkout (``--app``); a test keeps the two equal
CHART_CLASS = "pe-chart"
# Every chart on a page, in page order: the app's (ui.chart: drawn once near the screen) and Streamlit's own.
CHARTS = f".{CHART_CLASS}, .js-plotly-plot"
# One entry per chart: the figure it was last handed (the app's charts, ui.chart, draw it when it is near the
# screen) or, for Streamlit's own chart, the data it draws.
FIGURES_SIGNATURE_JS = """() => Array.from(document.querySelectorAll('CHARTS')).map(el => {
    if (el.classList.contains('CHART_CLASS')) {
        const text = el.__peText || '';
        let hash = 2166136261;
        for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 16777619);
        return text.length + '#' + (hash >>> 0);
    }
    const data = el.data || [];
    return JSON.stringify(data.map(t => [t.x, t.y, t.z]).slice(0, 6)).length + ':' +
           JSON.stringify(data.map(t => [t.x, t.y, t.z])).slice(0, 4000);
})""".replace("CHARTS", CHARTS).replace("CHART_CLASS", CHART_CLASS)


def figures_signature(page, timeout_ms: float = 30_000) -> list[str]:
    """One string per chart, which changes whenever the figure handed to that chart changes.

    Waited for rather than evaluated: an evaluation never returns from a page whose script does not yield (a test
    saw one hang for 300 s after a redraw), and a wait fails after ``timeout_ms`` with a message that says so."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        return page.wait_for_function(f"() => ({FIGURES_SIGNATURE_JS})()", timeout=timeout_ms).json_value()
    except PlaywrightTimeout as error:
        raise PlaywrightTimeout(f"the page did not answer in {timeout_ms / 1000:.0f} s: its script is busy") from error


def wait_for_new_figures(page, before: list[str], timeout_ms: float = 30_000) -> list[str]:
    """Wait until some chart was handed another figure than in ``before``; returns the new signature."""
    # the wait returns the signature it saw change (null, which keeps it waiting, until then): no second read
    changed = page.wait_for_function(
        f"(before) => {{ const now = ({FIGURES_SIGNATURE_JS})(); "
        "return JSON.stringify(now) !== JSON.stringify(before) ? now : null; }",
        arg=before, timeout=timeout_ms)
    return changed.json_value()


def page_errors(page) -> list[str]:
    return page.locator('[data-testid="stException"]').all_inner_texts()


SLIDER_WIDGETS = ("slider", "select_slider")
# The derivations page draws a figure only beside the claims it illustrates, and its slider picks a claim: a
# load need not draw a chart, and a slider move need not change one.
FIGURES_ON_DEMAND = ("app_pages/maths.py",)


def _lesson_of(info, lessons: dict):
    return lessons.get(info.lesson) if getattr(info, "lesson", None) else None


def draws_figures_on_load(info, lessons: dict) -> bool:
    """Whether opening the page draws its lesson's plotly figures."""
    return _lesson_of(info, lessons) is not None and info.path not in FIGURES_ON_DEMAND


def has_slider(info, lessons: dict) -> bool:
    """Whether the page, as it opens, has a slider whose move redraws a plotly figure (a page in parts opens on its
    first part: a slider only another part's figures read is not drawn there)."""
    if not draws_figures_on_load(info, lessons):
        return False
    lesson = _lesson_of(info, lessons)
    specs = [lesson.figures[name] for name in (lesson.parts[0].figures if lesson.parts else lesson.figures)]
    read = None if any(spec.groups is None for spec in specs) else {g for spec in specs for g in spec.groups}
    return any(c.widget in SLIDER_WIDGETS and (read is None or c.group in read)
               for c in lesson.settings.controls().values())


SLIDER_THUMBS = '[data-testid="stSlider"] input[type="range"]'
# How long a probing move waits for a figure to change before it counts the slider as moving none
PROBE_MS = 4_000


def first_move_key(thumb) -> str:
    """The arrow key that moves a slider thumb: left from the end of its range, right otherwise."""
    return "ArrowLeft" if thumb.evaluate("(el) => Number(el.value) >= Number(el.max)") else "ArrowRight"


def other_key(key: str) -> str:
    return "ArrowLeft" if key == "ArrowRight" else "ArrowRight"


def press_slider(page, thumb, key: str) -> None:
    """Press ``key`` on the slider without scrolling it into view (the reader watches the chart)."""
    thumb.evaluate("(el) => el.focus({preventScroll: true})")
    page.keyboard.press(key)


def live_slider(page, start: int = 0) -> tuple:
    """The first slider (in page order, from the ``start``-th) whose move redraws a figure on the page: its index,
    its thumb, and the key that moves it.

    On a long page split into parts the sidebar may hold sliders that only the closed parts' figures read: a move
    of one reruns the page and redraws nothing. Each slider is tried in turn and its probing move undone."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_selector(SLIDER_THUMBS, timeout=60_000)  # the sidebar may be drawn after the figures
    thumbs = page.locator(SLIDER_THUMBS)
    for index in range(start, thumbs.count()):
        thumb = thumbs.nth(index)
        key = first_move_key(thumb)
        before = figures_signature(page)
        press_slider(page, thumb, key)
        try:
            wait_for_new_figures(page, before, timeout_ms=PROBE_MS)
            redraws = True
        except PlaywrightTimeout:
            redraws = False
        wait_for_app_idle(page)
        before = figures_signature(page)
        press_slider(page, thumb, other_key(key))  # undo the probe
        if redraws:
            wait_for_new_figures(page, before)
            wait_for_app_idle(page)
            return index, thumb, key
        wait_for_app_idle(page)
    raise AssertionError("no slider on this page redraws a figure")


def move_slider(page, thumb, key: str) -> float:
    """Press ``key`` on a slider and wait for the figures to change; returns seconds."""
    before = figures_signature(page)
    started = time.perf_counter()
    press_slider(page, thumb, key)
    wait_for_new_figures(page, before)
    return time.perf_counter() - started


@contextlib.contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()
