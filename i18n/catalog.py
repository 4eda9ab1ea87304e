"""Message catalogs: ``locales/<lang>/LC_MESSAGES/messages.po`` in the repository, compiled to ``.mo``
when first used (and again whenever the ``.po`` is newer), then read through the stdlib's gettext.

The compiled files are build products: git ignores them, and where the repository is read-only they
go to a cache folder instead. Babel (a runtime requirement) reads and compiles the catalogs; its
``pybabel`` commands extract and update them (see ``python -m i18n --help``).
"""

from __future__ import annotations

import functools
import gettext
import os
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "locales"
DOMAIN = "messages"
_LOCK = threading.Lock()


def po_path(language: str) -> Path:
    return LOCALES / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def _compiled_path(language: str) -> Path:
    beside = po_path(language).with_suffix(".mo")
    if os.access(beside.parent, os.W_OK):
        return beside
    cache = Path(tempfile.gettempdir()) / "pe-explorer-locales" / language
    cache.mkdir(parents=True, exist_ok=True)
    return cache / f"{DOMAIN}.mo"


def compile_catalog(language: str) -> Path | None:
    """Compile ``language``'s .po to .mo if the .mo is missing or older; None if there is no catalog."""
    source = po_path(language)
    if not source.exists():
        return None
    target = _compiled_path(language)
    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
        return target
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with source.open("rb") as handle:
        catalog = read_po(handle, locale=language)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    with partial.open("wb") as handle:
        write_mo(handle, catalog, use_fuzzy=False)
    partial.replace(target)  # atomic: another process never reads half a file
    return target


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    with _LOCK:
        compiled = compile_catalog(language)
    if compiled is None:
        return gettext.NullTranslations()
    with compiled.open("rb") as handle:
        return gettext.GNUTranslations(handle)
