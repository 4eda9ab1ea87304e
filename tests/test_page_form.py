"""The page form of a figure (figures.page_form) and the title a page draws above a chart (ui.figure)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from figures.page_form import (
    DESKTOP_PLOT_WIDTH,
    LEGEND_LINE,
    LEGEND_SAMPLE,
    PHONE_PLOT_WIDTH,
    STACKED_PANEL_HEIGHT,
    legend_height,
    page_form,
)
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


@pytest.mark.parametrize("text", ["缩放倍数 s（对数）", "组成第 0 对）的两个维度", "最低值（每个距离窗口中）", "键在过去）"])
def test_wrap_never_starts_a_chinese_line_with_closing_punctuation_nor_ends_one_with_an_opening_bracket(text):
    for width in range(20, 200, 4):
        lines = wrap(text, width).split("<br>")
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost (a break takes a space)
        assert not any(line[:1] in "）)，。、" for line in lines[1:]), (width, lines)
        assert not any(line[-1:] in "（(" for line in lines[:-1]), (width, lines)


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


def _grouped_legend(groups: dict[str, list[str]], **legend) -> go.Figure:
    figure = new_figure("t", height=600, legend=legend)
    for group, names in groups.items():
        for name in names:
            figure.add_scatter(x=[0, 1], y=[0, 1], name=name, legendgroup=group, legendgrouptitle_text=group)
    return figure


def test_a_grouped_legend_flows_its_groups_as_columns_across_the_width():
    figure = _grouped_legend({"Direct extrapolation": ["place 3, new", "place 2", "place 1"],
                              "Linear interpolation": ["place 2", "place 1"]}, **LEGEND_BELOW)
    size = figure.layout.legend.font.size or 14
    widths = [LEGEND_SAMPLE + text_width(title, size) for title in ("Direct extrapolation", "Linear interpolation")]
    assert sum(widths) < DESKTOP_PLOT_WIDTH
    # side by side on a desktop: the taller column (title and three entries); one under the other on a phone
    assert legend_height(figure, DESKTOP_PLOT_WIDTH) == 4 * LEGEND_LINE + 10
    assert legend_height(figure, sum(widths) - 1) == (4 + 3) * LEGEND_LINE + 10
    entries = new_figure("t")
    entries.add_scatter(x=[0], y=[0], name="one<br>two")
    entries.add_scatter(x=[0], y=[0], name="hidden", showlegend=False)
    entries.add_trace(go.Table(header=dict(values=["a"]), cells=dict(values=[[1]]), name="a table"))
    assert legend_height(entries, PHONE_PLOT_WIDTH) == 2 * LEGEND_LINE + 10


def test_on_a_phone_the_figure_grows_by_the_rows_its_legend_takes_under_the_plot():
    groups = {f"group {g}": [f"a long legend entry {g}.{n}" for n in range(3)] for g in range(4)}
    beside = _grouped_legend(groups)  # a legend beside the plot on a wide screen takes none of its height
    narrow = page_form(beside, narrow=True).figure
    assert narrow.layout.height == 600 + round(legend_height(narrow, PHONE_PLOT_WIDTH)) > 600 + 4 * 4 * LEGEND_LINE
    assert page_form(beside).figure.layout.height == 600
    below = _grouped_legend(groups, **LEGEND_BELOW)  # below already: only the rows a phone adds
    grown = page_form(below, narrow=True).figure.layout.height - 600
    assert grown == round(legend_height(below, PHONE_PLOT_WIDTH) - legend_height(below, DESKTOP_PLOT_WIDTH)) > 0
    short = new_figure("t", height=400, legend=LEGEND_BELOW)
    short.add_scatter(x=[0], y=[0], name="RoPE")
    assert page_form(short, narrow=True).figure.layout.height == 400  # one row either way


def test_on_a_phone_a_few_categories_under_the_plot_wrap_level_and_many_keep_plotlys_slant():
    few = new_figure("t")
    for method in ("Direct extrapolation", "NTK-aware"):
        few.add_bar(x=["pairs with unseen angles", "(position, pair) angles unseen"], y=[45, 30], name=method)
    axis = page_form(few, narrow=True).figure.layout.xaxis
    assert list(axis.tickvals) == list(few.data[0].x) and axis.tickangle == 0
    assert all("<br>" in text and text_width(text, 14) <= PHONE_PLOT_WIDTH / 2 for text in axis.ticktext)
    assert page_form(few).figure.layout.xaxis.ticktext is None  # a desktop has the room
    many = new_figure("t")
    many.add_bar(x=[f"a long category name {n}" for n in range(8)], y=list(range(8)))
    assert page_form(many, narrow=True).figure.layout.xaxis.ticktext is None


def test_the_page_title_is_escaped_but_keeps_plotlys_text_tags():
    shown = title_html("W<sub>q</sub> & <script>x</script><br><sup>d = 8</sup>")
    assert "W<sub>q</sub> &amp; &lt;script&gt;x&lt;/script&gt;<br>" in shown
    assert "<sup>" not in shown and ">d = 8</span>" in shown  # the subtitle is set smaller, not raised
