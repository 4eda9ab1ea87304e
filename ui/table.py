"""Tables of numbers drawn as plain HTML.

Streamlit's ``st.dataframe`` draws its cells on a canvas: the browser's find (Ctrl+F) and print miss them, and the
grid is mounted again on every rerun. On the RoPE-in-code page its three grids cost a slider move about 40 ms of the
272 ms it took (measured alternating both versions in one browser). A walkthrough's tables are read, searched,
copied and printed, not sorted, so they are HTML here: one element, selectable text, a header that stays in view
while the rows scroll.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

TABLE_CLASS = "pe-number-table"
# drawn once a page by ui.stylesheet, not with each table (see there why)
TABLE_CSS = f""".{TABLE_CLASS} {{max-height: var(--pe-table-height); overflow: auto;
  border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem; margin-bottom: 0.5rem}}
.{TABLE_CLASS} table {{border-collapse: separate; border-spacing: 0; font-size: 0.85rem; width: max-content;
  min-width: 100%; font-variant-numeric: tabular-nums; white-space: nowrap; margin: 0}}
.{TABLE_CLASS} th, .{TABLE_CLASS} td {{padding: 0.3rem 0.6rem; border: none;
  border-bottom: 1px solid rgba(49, 51, 63, 0.1); text-align: right}}
.{TABLE_CLASS} thead th {{position: sticky; top: 0; z-index: 1; background: #f0f2f6; font-weight: 600}}
.{TABLE_CLASS} tbody th {{position: sticky; left: 0; background: #fafafc; font-weight: 400; text-align: left}}
.{TABLE_CLASS} td.shaded {{background: var(--pe-shade)}}"""


def cell_text(value: object) -> str:
    """A cell as the table shows it: floats to the last digit that tells them apart (repr), the rest as str."""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def table_html(columns: Sequence[str], rows: Sequence[Sequence[object]], *, index: Sequence[str] | None = None,
               index_label: str = "", shaded: Sequence[Sequence[bool]] | None = None, shade: str = "",
               height_rem: float = 24.0) -> str:
    """The markup of ``number_table``."""
    if index is not None and len(index) != len(rows):
        raise ValueError(f"{len(index)} row labels for {len(rows)} rows")
    if any(len(row) != len(columns) for row in rows):
        raise ValueError(f"every row needs {len(columns)} cells")
    if shaded is not None and [len(r) for r in shaded] != [len(r) for r in rows]:
        raise ValueError("shaded needs one flag per cell")
    escape = html.escape
    head = ([f"<th>{escape(index_label)}</th>"] if index is not None else []) + [
        f"<th>{escape(column)}</th>" for column in columns]
    body = []
    for r, row in enumerate(rows):
        cells = [f'<th scope="row">{escape(index[r])}</th>'] if index is not None else []
        cells += [f'<td class="shaded">{escape(cell_text(v))}</td>' if shaded is not None and shaded[r][c]
                  else f"<td>{escape(cell_text(v))}</td>" for c, v in enumerate(row)]
        body.append("<tr>" + "".join(cells) + "</tr>")
    style = f"--pe-table-height: {height_rem}rem" + (f"; --pe-shade: {shade}" if shade else "")
    return (f'<div class="{TABLE_CLASS}" style="{style}"><table><thead><tr>{"".join(head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def number_table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, index: Sequence[str] | None = None,
                 index_label: str = "", shaded: Sequence[Sequence[bool]] | None = None, shade: str = "",
                 height_rem: float = 24.0) -> None:
    """Show a table: ``rows`` of cells under ``columns``, each row labelled by ``index`` if given; a cell whose
    ``shaded`` flag is set gets the ``shade`` background. Taller than ``height_rem`` it scrolls, its header in view."""
    st.html(table_html(columns, rows, index=index, index_label=index_label, shaded=shaded, shade=shade,
                       height_rem=height_rem))


def columns_table(data: dict[str, Sequence[object]], **kwargs) -> None:
    """``number_table`` of a mapping column -> values (the shape ``st.dataframe`` takes)."""
    columns = list(data)
    lengths = {len(values) for values in data.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    number_table(columns, list(zip(*data.values(), strict=True)), **kwargs)
