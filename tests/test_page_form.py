"""The page form of a figure (figures.page_form) and the title a page draws above a chart (ui.figure)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from figures.page_form import PHONE_PLOT_WIDTH, STACKED_PANEL_HEIGHT, page_form
from figures.text import text_width, wrap
from figures.theme import LEGEND_BELOW, new_figure
from ui.figure import title_html


def test_wrap_breaks_at_spaces_within_the_width_and_keeps_existing_breaks():
    text = "relative distance m (each point: the lowest of its window) on a log scale"
    wrapped = wrap(text, 150)
    lines = wrapped.split("<br>")
    assert len(lines) > 1 and " ".join(lines) == text
    assert all(text_width(line, 14) <= 150 for line in lines)
    assert wrap("one<br>two", 500) == "one<br>two"
    assert wrap("short", 500) == "short"


def test_wrap_breaks_chinese_between_characters_and_never_inside_a_tag():
    assert "<br>" in wrap("旋转角度随位置和维度对的变化" * 3, 120)
    wrapped = wrap("W<sub>q</sub> and W<sub>k</sub> " * 6, 80)
    assert "<sub>" in wrapped and "<s<br>" not in wrapped and wrapped.replace("<br>", " ").count("<sub>") == 12


def test_the_title_leaves_the_chart_for_the_page_and_stays_in_its_meta():
    figure = new_figure("Angle against position<br><sup>d = 64</sup>")
    figure.add_scatter(x=[0, 1], y=[0, 1], name="RoPE")
    shown = page_form(figure)
    assert shown.title == "Angle against position<br><sup>d = 64</sup>"
    assert not shown.figure.layout.title.text and shown.figure.layout.meta["title"] == shown.title
    assert shown.figure.layout.margin.t < 60  # the title's room is given back
    assert figure.layout.title.text == shown.title  # the figure itself (shared, cached) is untouched


def test_long_axis_titles_and_legend_entries_fit_a_phone_plot():
    figure = new_figure("t", xaxis=dict(title=dict(text="sequence length L′ (positions 0 … L′ − 1), log scale")),
                        legend=LEGEND_BELOW)
    figure.add_scatter(x=[1, 2], y=[1, 2], name="float64 (first inexact: 9,007,199,254,740,993) at every length")
    shown = page_form(figure).figure
    for text in (shown.layout.xaxis.title.text, shown.data[0].name):
        assert "<br>" in text and all(text_width(line, 14) <= PHONE_PLOT_WIDTH for line in text.split("<br>"))


def _three_panels() -> go.Figure:
    figure = make_subplots(rows=1, cols=3, subplot_titles=("A", "B", "C"))
    for column in (1, 2, 3):
        figure.add_heatmap(z=[[0, 1], [1, 0]], row=1, col=column, coloraxis="coloraxis")
    figure.update_layout(height=400, title="three panels")
    return figure


def test_on_a_phone_side_by_side_panels_stack_and_their_labels_move_with_them():
    figure = _three_panels()
    wide = page_form(figure).figure
    narrow = page_form(figure, narrow=True).figure
    assert [wide.layout[f"xaxis{s}"].domain for s in ("", "2", "3")] == [figure.layout[f"xaxis{s}"].domain
                                                                         for s in ("", "2", "3")]
    assert all(narrow.layout[f"xaxis{s}"].domain == (0.0, 1.0) for s in ("", "2", "3"))
    tops = [narrow.layout[f"yaxis{s}"].domain[1] for s in ("", "2", "3")]
    assert tops[0] == pytest.approx(1.0) and tops[0] > tops[1] > tops[2]
    labels = {note.text: (note.x, note.y) for note in narrow.layout.annotations}
    for text, top in zip("ABC", tops, strict=True):
        assert labels[text] == pytest.approx((0.5, top))  # centred over its panel, at the panel's top
    assert narrow.layout.height > 3 * STACKED_PANEL_HEIGHT


def test_on_a_phone_a_side_legend_goes_below_and_category_names_wrap():
    figure = new_figure("t", legend=dict(orientation="v", x=1.02))
    figure.add_bar(y=["Position Interpolation, 100 fine-tuning steps", "NTK-aware"], x=[40, 50], orientation="h",
                   name="accuracy")
    narrow = page_form(figure, narrow=True).figure
    assert narrow.layout.legend.yref == "container" and narrow.layout.legend.orientation == "h"
    assert list(narrow.layout.yaxis.tickvals) == list(figure.data[0].y)
    assert "<br>" in narrow.layout.yaxis.ticktext[0] and narrow.layout.yaxis.ticktext[1] == "NTK-aware"


def test_the_page_title_is_escaped_but_keeps_plotlys_text_tags():
    shown = title_html("W<sub>q</sub> & <script>x</script><br><sup>d = 8</sup>")
    assert "W<sub>q</sub> &amp; &lt;script&gt;x&lt;/script&gt;<br>" in shown
    assert "<sup>" not in shown and ">d = 8</span>" in shown  # the subtitle is set smaller, not raised
