"""How wide plotly text is, and how to break it to a width: estimates shared by the slide style and the page form.

Widths are estimated per glyph, without a browser: a Chinese (CJK) character takes a full em, twice a Latin
letter's average, so a Chinese title of few characters is measured as wide as it really is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from figures.theme import BASE_FONT_SIZE

_TAGS = re.compile(r"<[^>]*>")
_CHAR_WIDTH = 0.55  # average glyph width of a sans-serif font, in font sizes
_WIDE_CHAR_WIDTH = 1.0  # CJK characters and full-width punctuation are one em wide
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _wide(char: str) -> bool:
    """A CJK character or full-width punctuation: one em wide, and a line may break beside it."""
    return unicodedata.east_asian_width(char) in "WF"


def without_tags(text: str) -> str:
    return _TAGS.sub("", text)


def text_width(text: str, size: float) -> float:
    """Estimated width in px of plotly text (tags removed; the widest line of a ``<br>``-broken text) at ``size``."""
    def line_width(line: str) -> float:
        return sum(_WIDE_CHAR_WIDTH if _wide(ch) else _CHAR_WIDTH
                   for ch in without_tags(line))

    return size * max((line_width(line) for line in _BREAK.split(text)), default=0.0)


def wrap(text: str, width: float, size: float = BASE_FONT_SIZE) -> str:
    """``text`` broken with ``<br>`` into lines of at most ``width`` px at font ``size`` (estimated by
    ``text_width``). Breaks at spaces; Chinese and other wide characters may break anywhere. Existing breaks stay;
    a single word wider than ``width`` keeps its own line."""
    lines = []
    for line in _BREAK.split(text):
        current = ""
        for token in _tokens(line):
            candidate = current + token
            if current.strip() and text_width(candidate.rstrip(), size) > width:
                lines.append(current.rstrip())
                current = token.lstrip()
            else:
                current = candidate
        lines.append(current.rstrip())
    return "<br>".join(lines)


# Chinese typesetting never starts a line with closing punctuation nor ends one with an opening bracket (kinsoku)
_NO_LINE_START = set("，。、；：！？）」』】〉》…·%)]}")
_NO_LINE_END = set("（「『【〈《([{")


def _tokens(line: str) -> list[str]:
    """The units a line may break between: words with their leading space, wide (CJK) characters one by one, a
    closing mark joined to what it closes and an opening bracket to what it opens; tags stay inside their word."""
    units: list[str] = []
    for token in _raw_tokens(line):
        if units and (token[:1] in _NO_LINE_START or units[-1][-1:] in _NO_LINE_END):
            units[-1] += token
        else:
            units.append(token)
    return units


def _raw_tokens(line: str) -> Iterable[str]:
    token = ""
    in_tag = False
    for char in line:
        if char == "<":
            in_tag = True
        if not in_tag and (char == " " or _wide(char)):
            if token:
                yield token
            token = char
            if char != " ":
                yield token
                token = ""
        else:
            token += char
        if char == ">":
            in_tag = False
    if token:
        yield token
