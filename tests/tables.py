"""The tables a page shows with ``ui.table`` (HTML), read back as cells: what a reader sees, for the tests."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import NamedTuple

from ui.table import TABLE_CLASS


class ShownTable(NamedTuple):
    columns: list[str]  # the header row (the row labels' header first, when the rows are labelled)
    rows: list[list[str]]  # each row's cells (its label first, when labelled)
    shaded: list[list[bool]]  # per cell of ``rows``


class _TableReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[ShownTable] = []
        self._row: list[str] | None = None
        self._shades: list[bool] = []
        self._cell: list[str] | None = None
        self._in_head = False
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "style":
            self._in_style = True
        elif tag == "div" and TABLE_CLASS in (attributes.get("class") or "").split():
            self.tables.append(ShownTable([], [], []))
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row, self._shades = [], []
        elif tag in ("td", "th"):
            self._cell = []
            self._shades.append("shaded" in (attributes.get("class") or "").split())

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        elif tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if self._in_head:
                table.columns.extend(self._row)
            else:
                table.rows.append(self._row)
                table.shaded.append(self._shades)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None and not self._in_style:
            self._cell.append(data)


def read_tables(markup: str) -> list[ShownTable]:
    reader = _TableReader()
    reader.feed(markup)
    return reader.tables


def html_text(markup: str) -> str:
    """The text an ``st.html`` element shows: its markup without tags or style sheets."""
    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []
            self.skip = 0

        def handle_starttag(self, tag, attrs):
            self.skip += tag in ("style", "script")

        def handle_endtag(self, tag):
            self.skip -= tag in ("style", "script")

        def handle_data(self, data):
            if not self.skip:
                self.parts.append(data)

    reader = _Text()
    reader.feed(markup)
    return " ".join(part for part in reader.parts if part.strip())


def shown_tables(at) -> list[ShownTable]:
    """Every ``ui.table`` table an AppTest run shows, in page order."""
    return [table for element in at.get("html") for table in read_tables(element.proto.body)]
