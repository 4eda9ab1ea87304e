"""Warm the server a few seconds after it has served its first page: import every lesson and draw its figures at their
defaults, and check the derivations with sympy, in a background thread, so the next page a class opens is quick.

The warm-up gives way to readers: it works one figure at a time, only while no page's script is running and a moment
after the last one ended (the reader's browser is still drawing what the run sent), and computes on a thread the
operating system runs at the lowest priority. It never outlives the interpreter: at exit it is told to stop and waited for (the figure
it is drawing takes at most a second or two). A daemon thread still inside torch when the interpreter shut down
aborted the process ("terminate called without an active exception"), a server stopped with Ctrl-C included.

Off when ``PE_EXPLORER_WARMUP=0`` (the tests set it: they time nothing and share two cores).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator

_started = threading.Event()
_stop = threading.Event()
_pages = threading.Condition()
_pages_running: set[threading.Thread] = set()  # the threads running a page's script (one per script run)
_last_page_end = 0.0  # time.monotonic() when the last page's script ended
_thread: threading.Thread | None = None
doing: str | None = None  # the step the warm-up is in (read by tests and when debugging a slow server)
log = logging.getLogger(__name__)
# The first page's figures are still being drawn in the reader's browser when its script run ends; on a small
# machine, starting the renderer's browser and computing every lesson at once slowed that first draw by 1-2 s
# (measured with python -m benchmarks.browser). Readers stay on a page longer than this.
WARM_DELAY_S = 6.0
# After any page's script ends, the warm-up waits this long before its next figure: the browser draws meanwhile.
QUIET_S = 1.5
# At exit, how long to wait for the figure being drawn (a stuck one is left, rather than hanging the exit).
STOP_WAIT_S = 60.0
LOWEST_PRIORITY = 19  # nice value


def page_started() -> None:
    """A page's script run began (``ui.layout.start_page``): the warm-up waits until it has ended."""
    with _pages:
        _pages_running.add(threading.current_thread())


def page_finished() -> None:
    """A page's script run ended (``ui.layout.finish_page``)."""
    global _last_page_end
    with _pages:
        _pages_running.discard(threading.current_thread())
        _last_page_end = time.monotonic()
        _pages.notify_all()


def _wait_for_quiet() -> bool:
    """Block until no page runs and none ended in the last QUIET_S seconds; False once the warm-up must stop."""
    with _pages:
        while not _stop.is_set():
            # a run that never reached finish_page (its thread is gone) does not hold the warm-up for ever
            _pages_running.difference_update([thread for thread in _pages_running if not thread.is_alive()])
            quiet_for = time.monotonic() - _last_page_end
            if not _pages_running and quiet_for >= QUIET_S:
                return True
            _pages.wait(timeout=QUIET_S if _pages_running else QUIET_S - quiet_for)
    return False


def _set_priority(thread_id: int | None, nice: int | None = None) -> None:
    """The priority of one thread (a Linux thread is scheduled on its own), by default the calling thread's; where
    that cannot be set, none."""
    with contextlib.suppress(AttributeError, OSError, TypeError):
        os.setpriority(os.PRIO_PROCESS, thread_id, os.getpriority(os.PRIO_PROCESS, 0) if nice is None else nice)


def _computations() -> Iterator[tuple[str, Callable[[], object]]]:
    """The warm-up's computing steps, small ones, as (what, do it)."""
    from lessons import all_lessons
    from lessons import derivations as checked

    for lesson in all_lessons().values():
        if getattr(lesson, "expensive", False):
            continue
        for name in lesson.figures:
            yield f"{lesson.name}:{name}", lambda lesson=lesson, name=name: lesson.figure(name)
    for part in checked.PARTS:
        yield f"derivations:{part.slug}", lambda part=part: checked.verify_part(part.slug)


def _run(steps: Iterator[tuple[str, Callable[[], object]]]) -> bool:
    """Each step once the pages are quiet; False once the warm-up must stop."""
    global doing
    for what, step in steps:
        if not _wait_for_quiet():
            return False
        doing = what
        try:
            step()
        except Exception:  # noqa: BLE001 - warming is best effort; the page itself reports errors
            log.exception("warming %s failed", what)
        finally:
            doing = None
    return True


def _warm() -> None:
    from i18n import use_language

    # Pages get the cores first. The image renderer's browser is left to the first export: started here, even at the
    # lowest priority, its start-up slowed a reader's page opened meanwhile by a sixth (python -m benchmarks.browser
    # --warmup: first load 1.16-1.17x that without a warm-up; without the renderer, 1.03x).
    _set_priority(threading.get_native_id(), LOWEST_PRIORITY)
    with use_language("en"):
        _run(_computations())


def stop(timeout: float = STOP_WAIT_S) -> None:
    """Stop the warm-up and wait for the step it is in (at exit; also for tests)."""
    _stop.set()
    with _pages:
        _pages.notify_all()
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        if isinstance(thread, threading.Timer):
            thread.cancel()  # still in its delay: never starts
        # nobody waits for pages now: the step in hand finishes at the process's own priority (where allowed)
        _set_priority(thread.native_id)
        thread.join(timeout)


def warm_up_in_background() -> None:
    global _thread
    if os.environ.get("PE_EXPLORER_WARMUP", "1") == "0" or _started.is_set():
        return
    _started.set()
    timer = threading.Timer(WARM_DELAY_S, _warm)
    timer.name, timer.daemon = "warm-lessons", True
    _thread = timer
    atexit.register(stop)
    timer.start()
