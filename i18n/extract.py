"""Babel extractors for strings that live in data files rather than code (see ``babel.cfg``)."""

from __future__ import annotations

import json
from collections.abc import Iterator


def json_notes(fileobj, keywords, comment_tags, options) -> Iterator[tuple[int, str, str, list[str]]]:
    """Every ``"note"`` of a JSON file (the presets' one-line descriptions), with its line number."""
    text = fileobj.read().decode(options.get("encoding", "utf-8"))
    lines = text.splitlines()

    def walk(node) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "note" and isinstance(value, str) and value:
                    yield value
                else:
                    yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    for note in walk(json.loads(text)):
        quoted = json.dumps(note, ensure_ascii=False)[1:-1]
        line = next((number for number, content in enumerate(lines, start=1) if quoted in content), 0)
        yield line, "N_", note, []
