"""What a catalog still lacks: untranslated or fuzzy entries, and translations whose placeholders differ."""

from __future__ import annotations

import re

from i18n.catalog import po_path

PLACEHOLDER = re.compile(r"\{[a-zA-Z_][a-zA-Z0-9_]*(?:[:!][^{}]*)?\}|%\{[^}]*\}|%\([a-z_]+\)[sdfg]")


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


def catalog_problems(language: str) -> list[str]:
    from babel.messages.pofile import read_po

    path = po_path(language)
    if not path.exists():
        return [f"no catalog at {path}"]
    with path.open("rb") as handle:
        catalog = read_po(handle, locale=language)
    problems = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        label = repr(ids[0][:60])
        if message.fuzzy:
            problems.append(f"fuzzy: {label}")
        if not all(s.strip() for s in strings):
            problems.append(f"untranslated: {label}")
            continue
        for string in strings:
            if placeholders(string) != placeholders(ids[0]):
                problems.append(f"placeholders differ: {label}")
    return problems
