"""ui.table: numbers as HTML tables, escaped, shaded where asked, with every digit of a float."""

from __future__ import annotations

import pytest

from tests.tables import html_text, read_tables
from ui.table import table_html


def test_cells_are_escaped_labelled_and_shaded_as_asked():
    markup = table_html(["n", "<b>x</b>"], [[1, 0.1], [2, "a & b"]], index=["first", "second"], index_label="row",
                        shaded=[[True, False], [False, True]], shade="rgba(1, 2, 3, 0.5)")
    (table,) = read_tables(markup)
    assert table.columns == ["row", "n", "<b>x</b>"]  # shown as text, not markup
    assert table.rows == [["first", "1", "0.1"], ["second", "2", "a & b"]]
    assert table.shaded == [[False, True, False], [False, False, True]]
    assert "--pe-shade: rgba(1, 2, 3, 0.5)" in markup and "<b>" not in markup
    assert html_text(markup) == "row n <b>x</b> first 1 0.1 second 2 a & b"  # the style sheet is not text


def test_a_float_keeps_every_digit_that_tells_it_apart():
    (table,) = read_tables(table_html(["x"], [[0.1 + 0.2], [1e-300], [float("inf")]]))
    assert [float(row[0]) for row in table.rows] == [0.1 + 0.2, 1e-300, float("inf")]
    assert table.rows[0] == ["0.30000000000000004"]


@pytest.mark.parametrize(("rows", "index", "shaded"), [
    ([[1, 2], [3]], None, None),  # a short row
    ([[1, 2]], ["a", "b"], None),  # more labels than rows
    ([[1, 2]], None, [[True]]),  # a flag missing
])
def test_a_table_that_does_not_add_up_is_refused(rows, index, shaded):
    with pytest.raises(ValueError):
        table_html(["a", "b"], rows, index=index, shaded=shaded)
