"""Warm the server once it has served its first page: start the browser that draws exported images, then
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
    threading.Thread(target=_warm, name="warm-lessons", daemon=True).start()
