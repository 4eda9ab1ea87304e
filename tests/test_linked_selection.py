"""Linked highlighting: a pair picked on one figure of the θ-heatmap page is marked on the others, kept in the
link, and costs no recomputation; and the shared layer's rules for it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from lessons import SLIDE, FigureSpec, Lesson, LessonSettings, figure_registry, setting
from lessons import frequencies as lesson
from tests.conftest import chart_figures, drawn_charts, figure_titled, run_whole_page, select_points
from ui.lesson import picked_value

PAGE = "app_pages/frequencies.py"
HEATMAP, UNSEEN, WAVELENGTH, RATIO = ("Rotation angle m·θᵢ", "Pairs that reach angles never seen",
                                      "Wavelength λᵢ", "Interpolation ratio")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def outlined_columns(figure: dict) -> set[tuple[str, float]]:
    """(x axis, pair) of every black column outline on a heatmap figure."""
    return {(shape["xref"], (shape["x0"] + shape["x1"]) / 2) for shape in figure["layout"].get("shapes", [])
            if shape.get("type") == "rect" and shape.get("line", {}).get("color") == "#000000"}


def ringed(figure: dict) -> list[tuple[float, float]]:
    trace = next((t for t in figure["data"] if "(picked)" in str(t.get("name"))), None)
    return [] if trace is None else list(zip(trace["x"], trace["y"], strict=True))


def test_a_pair_picked_on_the_wavelength_chart_is_marked_on_every_other_figure():
    at = run_whole_page(PAGE)
    assert not outlined_columns(figure_titled(at, HEATMAP)) and not ringed(figure_titled(at, RATIO))
    select_points(at, "frequencies_wavelengths", [{"x": 45, "y": 4000.0, "curve_number": 0, "point_index": 45}])
    assert not at.exception
    assert at.selectbox(key="pair").value == 45 and at.query_params["pair"] == "45"
    heatmap = figure_titled(at, HEATMAP)
    panels = [t["xaxis"] or "x" for t in heatmap["data"] if t["type"] == "heatmap"]
    assert outlined_columns(heatmap) == {(axis, 45.0) for axis in panels}  # every panel, column 45
    assert any("pair i = 45" in str(t.get("name")) for t in heatmap["data"])
    # the ratio chart rings pair 45 on every method's curve, at that curve's own value
    ratio = figure_titled(at, RATIO)
    curves = [t for t in ratio["data"] if t.get("meta")]
    assert ringed(ratio) == [(45, pytest.approx(float(np.asarray(c["y"])[45]))) for c in curves]
    unseen = figure_titled(at, UNSEEN)
    assert any(a.get("text") == "i = 45" for a in unseen["layout"]["annotations"])
    assert ringed(figure_titled(at, WAVELENGTH))  # the chart clicked marks it too


def test_a_pair_picked_on_the_ratio_chart_moves_the_marks_and_the_control_clears_them():
    at = run_whole_page(PAGE, {"pair": "10"})
    assert outlined_columns(figure_titled(at, HEATMAP))
    select_points(at, "frequencies_interpolation-ratio", [{"x": 60.0, "y": 0.3, "curve_number": 2,
                                                           "point_index": 60}])
    assert {pair for _, pair in outlined_columns(figure_titled(at, HEATMAP))} == {60.0}
    at.selectbox(key="pair").set_value(lesson.NO_PAIR).run()
    assert not outlined_columns(figure_titled(at, HEATMAP))


def test_only_figures_that_read_the_pick_take_a_click():
    at = run_whole_page(PAGE)
    takes = {chart.key for chart in drawn_charts(at) if chart.pickable}
    assert takes == {"frequencies_wavelengths", "frequencies_interpolation-ratio"}  # plotly picks no heatmap cell


def test_a_link_with_a_pair_restores_the_highlight():
    at = run_whole_page(PAGE, {"pair": "30", "d": "64"})
    assert {pair for _, pair in outlined_columns(figure_titled(at, HEATMAP))} == {30.0}
    assert len(chart_figures(at)) == 6  # the five frequency figures and the layer map


def test_a_pair_beyond_the_head_marks_nothing():
    settings = lesson.Settings.from_mapping({"head_dim": 16, "pair": 40})
    for name in ("angle-heatmaps", "wavelengths", "interpolation-ratio"):
        marked = lesson.LESSON.figure(name, settings)
        plain = lesson.LESSON.figure(name, dataclasses.replace(settings, pair=lesson.NO_PAIR))
        assert json.dumps([t.to_plotly_json() for t in marked.data], default=str) == json.dumps(
            [t.to_plotly_json() for t in plain.data], default=str)
        assert marked.layout.shapes == plain.layout.shapes and marked.layout.annotations == plain.layout.annotations


def test_a_highlight_recomputes_nothing():
    plain = lesson.Settings.from_mapping({"head_dim": 64})
    picked = dataclasses.replace(plain, pair=7)
    groups = lesson.FIGURES["angle-heatmaps"].groups
    assert lesson.LESSON.result(picked, groups) is lesson.LESSON.result(plain, groups)
    base = lesson.LESSON.figure("angle-heatmaps", plain)
    marked = lesson.LESSON.figure("angle-heatmaps", picked)
    assert marked is not base and len(marked.data) == len(base.data) + 1  # the legend entry
    assert base.layout.shapes == lesson.LESSON.figure("angle-heatmaps", plain).layout.shapes  # shared one unchanged
    slide = lesson.LESSON.figure("angle-heatmaps", picked, SLIDE)
    assert (slide.layout.width, slide.layout.height) == (1280, 720)
    assert len(slide.layout.shapes) == len(marked.layout.shapes)


def test_the_scrubbed_heatmaps_keep_the_highlight_in_every_frame():
    settings = lesson.Settings.from_mapping({"head_dim": 32, "scrub_in_figure": True, "pair": 5})
    figure = lesson.LESSON.figure("angle-heatmaps", settings)
    assert figure.frames
    for frame in figure.frames:
        outlines = [s for s in frame.layout.shapes if s.type == "rect" and s.line.color == "#000000"]
        assert outlines and all((s.x0 + s.x1) / 2 == 5 for s in outlines)


def test_picked_value_reads_the_point_and_ignores_what_the_setting_cannot_take():
    assert picked_value(lesson.Settings, "pair", [{"x": 12.0}]) == 12
    assert picked_value(lesson.Settings, "pair", [{"x": 12}, {"x": 13}]) == 12  # the first point
    assert picked_value(lesson.Settings, "pair", []) == lesson.NO_PAIR  # nothing picked: no highlight
    assert picked_value(lesson.Settings, "pair", [{"x": 999}]) is None
    assert picked_value(lesson.Settings, "pair", [{"x": 2.5}]) is None
    assert picked_value(lesson.Settings, "pair", [{"y": 3}], axis="y") == 3


def test_a_figure_may_select_only_a_highlight_setting():
    @dataclasses.dataclass(frozen=True)
    class Settings(LessonSettings):
        size: int = setting(4, "Size", key="n", options=(4, 8))
        mark: int = setting(0, "Mark", key="k", options=(0, 1), highlight=True)

    def build(result, style):
        from figures.theme import new_figure

        return new_figure("t")

    Lesson("ok", "Ok", Settings, lambda s: s, figure_registry(FigureSpec("f", "F", build, selects="mark")))
    with pytest.raises(ValueError, match="not a highlight"):
        Lesson("bad", "Bad", Settings, lambda s: s, figure_registry(FigureSpec("f", "F", build, selects="size")))
    assert Settings(size=8, mark=1).without_highlights() == Settings(size=8, mark=0)
