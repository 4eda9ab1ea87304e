"""Warm the server a few seconds after it has served its first page: start the browser that draws exported images, then
import every lesson and draw its figures at their defaults, in a background thread, so the first
export and the next page a class opens are quick.

Off when ``PE_EXPLORER_WARMUP=0`` (the tests set it: they time nothing and share two cores).
"""

from __future__ import annotations

import logging
import os
import threading

_started = threading.Event()
log = logging.getLogger(__name__)
# The first page's figures are still being drawn in the reader's browser when its script run ends; on a small
# machine, starting the renderer's browser and computing every lesson at once slowed that first draw by 1-2 s
# (measured with python -m benchmarks.browser). Readers stay on a page longer than this.
WARM_DELAY_S = 6.0


def _warm() -> None:
    from figures import export
    from i18n import use_language
    from lessons import all_lessons

    if export.browser_available():
        try:
            export.start_renderer()
        except Exception:  # noqa: BLE001 - the export buttons say what is wrong when clicked
            log.exception("starting the image renderer failed")

    with use_language("en"):
        for lesson in all_lessons().values():
            if getattr(lesson, "expensive", False):
                continue
            try:
                lesson.all_figures()
            except Exception:  # noqa: BLE001 - warming is best effort; the page itself reports errors
                log.exception("warming %s failed", lesson.name)


def warm_up_in_background() -> None:
    if os.environ.get("PE_EXPLORER_WARMUP", "1") == "0" or _started.is_set():
        return
    _started.set()
    timer = threading.Timer(WARM_DELAY_S, _warm)
    timer.name, timer.daemon = "warm-lessons", True
    timer.start()
