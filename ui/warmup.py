"""Warm the server once it has served its first page: import every lesson and draw its figures at their
defaults in a background thread, so the next page a class opens is already cached.

Off when ``PE_EXPLORER_WARMUP=0`` (the tests set it: they time nothing and share two cores).
"""

from __future__ import annotations

import logging
import os
import threading

_started = threading.Event()
log = logging.getLogger(__name__)


def _warm() -> None:
    from i18n import use_language
    from lessons import all_lessons

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
