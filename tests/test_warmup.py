"""The server warms its caches once, in the background, a moment after its first page."""

from __future__ import annotations

import threading

from ui import warmup


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
