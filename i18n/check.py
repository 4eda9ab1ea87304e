"""What a catalog still lacks: untranslated or fuzzy entries, translations whose placeholders differ, and
translations that do not use the term list's word for a term the English uses (``locales/<lang>/terms.tsv``)."""

from __future__ import annotations

import re
from typing import NamedTuple

from i18n.catalog import LOCALES, po_path

PLACEHOLDER = re.compile(r"\{[a-zA-Z_][a-zA-Z0-9_]*(?:[:!][^{}]*)?\}|%\{[^}]*\}|%\([a-z_]+\)[sdfg]")


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


class Term(NamedTuple):
    english: str  # whole words; a trailing * also matches longer words
    translation: str
    note: str = ""

    @property
    def pattern(self) -> re.Pattern:
        stem = self.english.rstrip("*")
        tail = r"[\w-]*" if self.english.endswith("*") else ""
        return re.compile(rf"(?<![\w-]){re.escape(stem)}{tail}(?![\w-])", re.IGNORECASE)


def terms_path(language: str):
    return LOCALES / language / "terms.tsv"


def load_terms(language: str) -> list[Term]:
    """The term list of ``language``, longest English term first (so it hides the shorter terms it contains)."""
    path = terms_path(language)
    if not path.exists():
        return []
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        terms.append(Term(fields[0].strip(), fields[1].strip(), fields[2].strip() if len(fields) > 2 else ""))
    return sorted(terms, key=lambda t: len(t.english.rstrip("*")), reverse=True)


def terms_used(english: str, terms: list[Term]) -> list[Term]:
    """The terms ``english`` uses (a longer term's words do not count again for a shorter term)."""
    used = []
    for term in terms:
        if term.pattern.search(english):
            used.append(term)
            english = term.pattern.sub(" ", english)
    return used


def missing_terms(english: str, translation: str, terms: list[Term]) -> list[Term]:
    """The terms ``english`` uses whose listed translation ``translation`` lacks."""
    return [t for t in terms_used(english, terms) if t.translation.lower() not in translation.lower()]


def read_catalog(language: str):
    from babel.messages.pofile import read_po

    with po_path(language).open("rb") as handle:
        return read_po(handle, locale=language)


def catalog_problems(language: str) -> list[str]:
    path = po_path(language)
    if not path.exists():
        return [f"no catalog at {path}"]
    catalog = read_catalog(language)
    terms = load_terms(language)
    problems = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        where = ", ".join(f"{file}:{line}" for file, line in message.locations[:2])
        label = f"{ids[0][:70]!r} ({where})" if where else repr(ids[0][:70])
        if message.fuzzy:
            problems.append(f"fuzzy: {label}")
        if not all(s.strip() for s in strings):
            problems.append(f"untranslated: {label}")
            continue
        for string in strings:
            if placeholders(string) != placeholders(ids[0]):
                problems.append(f"placeholders differ: {label}")
        missing = missing_terms(ids[0], " ".join(strings), terms)
        if missing:
            wanted = ", ".join(f"{t.english} → {t.translation}" for t in missing)
            problems.append(f"term not used ({wanted}): {label}")
    return problems
