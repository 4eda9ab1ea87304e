"""The harness the tests and benchmarks share: a server whose port is taken meanwhile starts on another; the tests
train into a store of their own; the wait for an idle app does not hang on a hidden first element and says what
the page showed when it times out."""

from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path

import pytest

from benchmarks import harness


def test_a_server_whose_port_was_taken_starts_on_another(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy])
        real_free_port = harness.free_port
        monkeypatch.setattr(harness, "free_port", lambda: next(ports, None) or real_free_port())
        with harness.streamlit_server(cwd=harness.ROOT / "benchmarks", script="floor_app.py") as (url, _):
            assert not url.endswith(f":{busy}")
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
                assert response.read() == b"ok"


def test_the_tests_train_into_a_store_of_their_own():
    from pe_core.train.store import STORE_ENV
    from tests.conftest import RUN_STORE_ENV

    assert RUN_STORE_ENV == STORE_ENV
    store = Path(os.environ[STORE_ENV])
    assert harness.ROOT not in store.parents and store.name == "runs.sqlite3"


# Streamlit's markup as the harness reads it: the app element with its script's and connection's state, and a
# main area whose first element is hidden
def app_markup(script_state: str) -> str:
    return (f'<div data-testid="stApp" data-test-script-state="{script_state}" data-test-connection-state="CONNECTED">'
            '<div data-testid="stMain"><div data-testid="stElementContainer" style="display:none">style</div>'
            '<div data-testid="stElementContainer">The wider family</div></div></div>')


@pytest.fixture
def idle_app_page():
    """A browser tab showing Streamlit's markup of an app whose script is not running."""
    if not harness.chromium_available():
        pytest.skip("Chromium is not installed (apt install chromium)")
    with harness.browser() as chromium:
        page = chromium.new_page()
        page.set_content(app_markup("notRunning"))
        yield page


def test_an_app_whose_first_element_is_hidden_is_idle_and_one_still_running_is_named_in_the_timeout(idle_app_page):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    harness.wait_for_app_idle(idle_app_page, timeout_ms=5_000)
    idle_app_page.set_content(app_markup("running"))  # shows elements, as a run does before it ends
    with pytest.raises(PlaywrightTimeout, match=r"did not become idle in 1 s: .*'script': 'running', "
                                                r"'connection': 'CONNECTED', 'elements': 2, 'shown': 1, "
                                                r"'stale': 0, 'main': 'The wider family'"):
        harness.wait_for_app_idle(idle_app_page, timeout_ms=1_000)


def test_a_page_whose_script_never_yields_fails_the_signature_read_in_time_instead_of_hanging(idle_app_page):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    assert harness.figures_signature(idle_app_page) == []  # no chart on it
    idle_app_page.evaluate("() => { setTimeout(() => { for (;;) {} }, 0); }")
    with pytest.raises(PlaywrightTimeout, match="did not answer in 1 s"):
        harness.figures_signature(idle_app_page, timeout_ms=1_000)
