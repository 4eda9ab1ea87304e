"""Message catalogs: ``locales/<lang>/LC_MESSAGES/messages.po`` read through gettext.

Until a language has a catalog, its strings fall back to English.
"""

from __future__ import annotations

import functools
import gettext
from pathlib import Path

LOCALES = Path(__file__).resolve().parent.parent / "locales"
DOMAIN = "messages"


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=LOCALES, languages=[language], fallback=True)
