"""The server warms its caches once, in the background, a moment after its first page."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ui import warmup

ROOT = Path(__file__).resolve().parent.parent


def _recording(monkeypatch, delay: float) -> tuple[list[str], threading.Event]:
    calls: list[str] = []
    done = threading.Event()

    def warm() -> None:
        calls.append(threading.current_thread().name)
        done.set()

    monkeypatch.setattr(warmup, "_warm", warm)
    monkeypatch.setattr(warmup, "WARM_DELAY_S", delay)
    monkeypatch.setattr(warmup, "_started", threading.Event())
    return calls, done


def test_warms_once_in_the_background_after_a_delay(monkeypatch):
    monkeypatch.setenv("PE_EXPLORER_WARMUP", "1")
    calls, done = _recording(monkeypatch, 1.0)
    warmup.warm_up_in_background()
    warmup.warm_up_in_background()  # a second page: nothing more
    assert calls == []  # not yet: the first page is still being drawn
    assert done.wait(5)
    threading.Event().wait(0.4)
    assert calls == ["warm-lessons"]


def test_off_when_the_environment_says_so(monkeypatch):
    monkeypatch.setenv("PE_EXPLORER_WARMUP", "0")
    calls, done = _recording(monkeypatch, 0.0)
    warmup.warm_up_in_background()
    assert not done.wait(0.3)
    assert calls == []


# Run in a fresh interpreter: the page starts the warm-up (app.py's finish_page), which is made not to wait for the
# reader; the process ends while the warm-up draws a lesson's figures with torch.
EXIT_WHILE_WARMING = """
import sys, time
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120)
at.switch_page("app_pages/decay.py").run()
assert not at.exception, at.exception
from ui import warmup  # after the page: a fresh server's first run imports ui
warmup.QUIET_S = 0.0
warmup.LOWEST_PRIORITY = 0  # on a busy machine a warm-up at the lowest priority barely runs while this waits for it
deadline = time.monotonic() + 120 + warmup.WARM_DELAY_S
while not (warmup.doing or "").startswith(sys.argv[1]):
    assert time.monotonic() < deadline, "the warm-up never reached " + sys.argv[1]
    time.sleep(0.005)
print("exiting while warming", warmup.doing, warmup._thread.is_alive(), flush=True)
"""


@pytest.mark.slow
def test_a_process_that_ran_a_page_exits_cleanly_while_the_warm_up_computes(tmp_path):
    """A daemon thread inside torch when the interpreter shut down aborted the process ("terminate called without an
    active exception", SIGABRT): a server stopped with Ctrl-C while it warmed up, or a script that ran a page."""
    env = dict(os.environ, PE_EXPLORER_WARMUP="1", BROWSER_PATH=str(tmp_path / "no-browser"),
               PE_VERDICT_CACHE="off")
    for step in ("caveats:",):  # a lesson whose figures compute with torch (it aborted 2 runs in 2 without the fix)
        done = subprocess.run([sys.executable, "-c", EXIT_WHILE_WARMING, step], cwd=ROOT, capture_output=True,
                              text=True, env=env, timeout=300)
        assert "terminate called" not in done.stderr
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.startswith(f"exiting while warming {step}") and "True" in done.stdout


def test_the_warm_up_waits_while_a_page_runs_and_a_moment_after(monkeypatch):
    monkeypatch.setattr(warmup, "QUIET_S", 0.3)
    monkeypatch.setattr(warmup, "_stop", threading.Event())
    passed = threading.Event()

    def wait_then_mark() -> None:
        if warmup._wait_for_quiet():
            passed.set()

    warmup.page_started()
    waiter = threading.Thread(target=wait_then_mark, daemon=True)
    waiter.start()
    assert not passed.wait(0.8)  # a page runs: the warm-up waits however long it takes
    warmup.page_finished()
    assert not passed.wait(0.1)  # the reader's browser is still drawing what the run sent
    assert passed.wait(3)


def test_a_run_that_never_finished_does_not_hold_the_warm_up(monkeypatch):
    monkeypatch.setattr(warmup, "QUIET_S", 0.0)
    monkeypatch.setattr(warmup, "_stop", threading.Event())
    run = threading.Thread(target=warmup.page_started)  # a script run whose thread ended without finish_page
    run.start()
    run.join()
    assert warmup._wait_for_quiet()


def test_stopping_ends_the_wait(monkeypatch):
    monkeypatch.setattr(warmup, "_stop", threading.Event())
    warmup.page_started()
    try:
        threading.Timer(0.2, warmup._stop.set).start()
        assert warmup._wait_for_quiet() is False
    finally:
        warmup.page_finished()
