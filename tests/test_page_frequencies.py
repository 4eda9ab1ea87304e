"""AppTest of the θ-heatmap page: defaults, slider extremes, presets, a bad paste and bad URLs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from figures import frequencies as ff
from lessons.frequencies import MAX_HEATMAP_CELLS, MAX_HEATMAP_ROWS
from pe_core import METHOD_TITLES, METHODS, load_presets
from tests.conftest import chart_figures, figure_titled, open_expander, run_page, run_whole_page

PAGE = "app_pages/frequencies.py"
DYNAMIC_TRIO = [METHOD_TITLES[m] for m in ("direct", "ntk", "dynamic")]  # the URL carries the labels shown
TITLES = ("Rotation angle m·θᵢ", "Pairs that reach angles never seen", "Wavelength λᵢ", "Interpolation ratio",
          "NTK-by-parts: the YaRN paper", "Layer map")


def heatmaps(at) -> dict[str, dict]:
    return {t["name"]: t for t in figure_titled(at, TITLES[0])["data"] if t["type"] == "heatmap"}


def z(trace) -> np.ndarray:
    return np.asarray(trace["z"], dtype=np.float64)


def theta(head_dim: int, base: float) -> np.ndarray:
    return base ** (-np.arange(head_dim // 2) * 2.0 / head_dim)


def assert_page_ok(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    for title in TITLES:
        figure_titled(at, title)


def assert_shared_scale(maps: dict[str, dict], layout: dict) -> None:
    ranges = {(t["zmin"], t["zmax"]) for t in maps.values()}
    assert len(ranges) == 1
    low, high = ranges.pop()
    assert (layout["coloraxis"]["cmin"], layout["coloraxis"]["cmax"]) == (low, high)
    # the default view is centred on 0, the end of the trained range: angles far inside it share the darkest blue
    saturates_below = layout["coloraxis"]["colorbar"]["title"]["text"] == ff.VIEW_TITLES["trained"]
    if saturates_below:
        assert low == -high and high >= 1.0
    for trace in maps.values():
        values = z(trace)
        assert saturates_below or np.nanmin(values) >= low - 1e-6 * abs(low) - 1e-9
        assert np.nanmax(values) <= high + 1e-6 * abs(high)


def test_defaults():
    at = run_whole_page(PAGE)
    assert_page_ok(at)
    assert not at.warning
    maps = heatmaps(at)
    assert list(maps) == ["Direct extrapolation", "Position Interpolation", "NTK-aware"]
    assert_shared_scale(maps, figure_titled(at, TITLES[0])["layout"])
    # by default each angle against the largest its pair turned in training, log₂(m·θ′ᵢ / (L·θᵢ)), L = 4,096
    direct, pi, ntk = (z(maps[name]) for name in maps)
    positions = np.asarray(maps["Direct extrapolation"]["y"])
    assert positions[0] == 0 and positions[-1] == 16_383 and len(positions) == MAX_HEATMAP_ROWS
    whole_turn = 4096 * theta(128, 10_000.0) >= 2 * math.pi  # these pairs saw every direction: 0 at most
    share = np.log2(positions[1:, None] / 4096) * np.ones(64)
    np.testing.assert_allclose(direct[1:], np.where(whole_turn, np.minimum(share, 0), share), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pi[1:], np.log2(positions[1:, None] / (4 * 4096)) * np.ones(64), rtol=1e-5, atol=1e-6)
    assert direct[-1, -1] == pytest.approx(math.log2(16_383 / 4096), rel=1e-6)  # red: twice as far as training
    assert np.nanmax(pi) < 0  # PI never leaves the trained range
    np.testing.assert_allclose(ntk[1:, -1], pi[1:, -1], rtol=1e-6)  # NTK's slowest pair is interpolated like PI's
    np.testing.assert_allclose(ntk[1:, 0], direct[1:, 0], rtol=1e-6)  # and its fastest pair kept
    assert np.isnan(direct[0]).all()  # m = 0: no angle to compare
    ratio = figure_titled(at, TITLES[3])["data"]
    np.testing.assert_allclose(ratio[1]["y"], 0.25, rtol=1e-12)
    np.testing.assert_allclose(ratio[2]["y"][-1], 0.25, rtol=1e-12)


def test_log_angle_view():
    at = run_whole_page(PAGE, {"view": "log angle"})
    assert_page_ok(at)
    maps = heatmaps(at)
    assert_shared_scale(maps, figure_titled(at, TITLES[0])["layout"])
    direct, pi, ntk = (z(maps[name]) for name in maps)
    positions = np.asarray(maps["Direct extrapolation"]["y"])
    np.testing.assert_allclose(10 ** direct[1:], np.outer(positions[1:], theta(128, 10_000.0)), rtol=1e-5)
    # PI's top-right angle is direct's divided by s = 4; NTK's slowest column equals PI's.
    assert 10 ** pi[-1, -1] == pytest.approx(10 ** direct[-1, -1] / 4, rel=1e-5)
    np.testing.assert_allclose(ntk[1:, -1], pi[1:, -1], rtol=1e-6)
    np.testing.assert_allclose(ntk[1:, 0], direct[1:, 0], rtol=1e-6)  # fastest pair untouched


def test_raw_angle_view_and_top_right_corner():
    at = run_whole_page(PAGE, {"view": "angle", "pos": "64"})
    assert_page_ok(at)
    maps = heatmaps(at)
    direct, pi = z(maps["Direct extrapolation"]), z(maps["Position Interpolation"])
    assert direct.shape == (64, 64)
    assert pi[-1, -1] == pytest.approx(direct[-1, -1] / 4, rel=1e-6)
    assert_shared_scale(maps, figure_titled(at, TITLES[0])["layout"])
    assert maps["Direct extrapolation"]["zmin"] == 0.0
    assert maps["Direct extrapolation"]["zmax"] == pytest.approx(63.0, rel=1e-6)


def test_smallest_settings():
    at = run_whole_page(PAGE, {"d": "8", "base": "100", "L": "8", "s": "1×", "pos": "10", "s2": "1.5×", "view": "cos"})
    assert_page_ok(at)
    maps = heatmaps(at)
    assert len(maps) == 6  # three methods at s = 1 and again at s = 1.5
    direct = z(maps["Direct extrapolation · s = 1"])
    assert direct.shape == (10, 4)
    np.testing.assert_allclose(direct, np.cos(np.outer(np.arange(10), theta(8, 100.0))), atol=1e-6)
    np.testing.assert_allclose(z(maps["Position Interpolation · s = 1"]), direct, atol=1e-7)  # s = 1: no change
    assert {(t["zmin"], t["zmax"]) for t in maps.values()} == {(-1.0, 1.0)}
    unseen = figure_titled(at, TITLES[1])["data"][0]
    assert np.asarray(unseen["z"]).max() < 2  # at s = 1 nothing goes beyond training


def test_largest_settings_stay_within_budget():
    at = run_whole_page(PAGE, {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×",
                         "methods": list(METHOD_TITLES.values()), "s2": "4×", "view": "mod 2π", "pos": "all"})
    assert_page_ok(at)
    maps = heatmaps(at)
    assert len(maps) == 18
    assert sum(z(t).size for t in maps.values()) <= MAX_HEATMAP_CELLS
    top = max(t["y"][-1] for t in maps.values())
    assert top == (1 << 20) - 1  # L' = 131072·128 capped at 2^20 positions, last one exact
    ranges = {(t["zmin"], t["zmax"]) for t in maps.values()}
    assert len(ranges) == 1 and ranges.pop() == (0.0, pytest.approx(2 * math.pi))
    assert any("capped" in c.value for c in at.caption)
    ratio = figure_titled(at, TITLES[3])["data"]
    assert len(ratio) == len(METHODS) and all(len(t["y"]) == 128 for t in ratio)


def test_small_head_button_shows_s2_above_s4():
    at = run_whole_page(PAGE)
    next(b for b in at.button if "32-dim head" in b.label).click().run()
    assert_page_ok(at)
    maps = heatmaps(at)
    assert list(maps) == [f"{name} · s = {k}" for k in (2, 4)
                          for name in ("Direct extrapolation", "Position Interpolation", "NTK-aware")]
    m, i = np.arange(10)[:, None], np.arange(16)[None, :]
    for k in (2, 4):
        np.testing.assert_allclose(z(maps[f"Direct extrapolation · s = {k}"]), m / 10_000 ** (2 * i / 32), rtol=1e-6)
        np.testing.assert_allclose(z(maps[f"Position Interpolation · s = {k}"]), m / k / 10_000 ** (2 * i / 32),
                                   rtol=1e-6)
        ntk = m / (10_000 * k ** (32 / 30)) ** (2 * i / 32)
        np.testing.assert_allclose(z(maps[f"NTK-aware · s = {k}"]), ntk, rtol=1e-6)
    assert_shared_scale(maps, figure_titled(at, TITLES[0])["layout"])
    assert at.query_params["d"] == ["32"] or at.query_params["d"] == "32"


def test_dynamic_rows_follow_the_length_mode():
    generation = heatmaps(run_whole_page(PAGE, {"methods": DYNAMIC_TRIO, "view": "angle", "L": "256", "s": "8×"}))
    whole = heatmaps(run_whole_page(PAGE, {"methods": DYNAMIC_TRIO, "view": "angle", "L": "256", "s": "8×",
                                     "dyn": "whole sequence"}))
    positions = np.asarray(generation["Dynamic NTK"]["y"])
    trained = positions < 256
    np.testing.assert_allclose(z(generation["Dynamic NTK"])[trained], z(generation["Direct extrapolation"])[trained],
                               rtol=1e-6)
    np.testing.assert_allclose(z(generation["Dynamic NTK"])[-1], z(generation["NTK-aware"])[-1], rtol=1e-5)
    np.testing.assert_allclose(z(whole["Dynamic NTK"]), z(whole["NTK-aware"]), rtol=1e-6)


@pytest.mark.parametrize("preset", [p.name for p in load_presets()])
def test_every_preset(preset):
    at = run_whole_page(PAGE, {"src": "A real model", "preset": preset})
    assert_page_ok(at)
    maps = heatmaps(at)
    assert preset in maps  # the model's own RoPE comes first
    spec = next(p.spec for p in load_presets() if p.name == preset)
    assert z(maps[preset]).shape[1] == spec.rotary_dim // 2
    assert_shared_scale(maps, figure_titled(at, TITLES[0])["layout"])
    ramp = figure_titled(at, TITLES[4])
    if spec.rope_type in ("yarn", "ntk_by_parts"):
        assert f"β = {spec.beta_fast:g}" in " ".join(c.value for c in at.caption)
    assert len(ramp["data"][0]["y"]) == spec.rotary_dim // 2


def test_pasted_config_and_bad_paste():
    config = {"head_dim": 64, "rope_theta": 1e6, "max_position_embeddings": 32768,
              "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}}
    at = run_whole_page(PAGE, {"src": "Paste config.json"})
    at.text_area[0].input(json.dumps(config)).run()
    assert_page_ok(at)
    assert "Pasted config" in heatmaps(at)
    good = chart_figures(at)
    at.text_area[0].input('{"rope_theta": 10000, "rope_scaling": {"rope_type": "yarn"').run()
    assert not at.exception
    assert at.error and "not valid JSON" in at.error[0].value
    # the error is in the main area, and the figures keep the last config that worked
    assert not at.sidebar.error
    assert "Pasted config" in heatmaps(at)
    assert len(chart_figures(at)) == len(good)


def test_garbage_url_values_fall_back_with_a_note():
    at = run_whole_page(PAGE, {"d": "33", "view": "banana", "pos": "7", "s2": "x", "mark": "maybe", "methods": ["nope"]})
    assert not at.exception
    assert len(at.warning) >= 4
    assert_page_ok(at)
    maps = heatmaps(at)
    assert list(maps) == ["Direct extrapolation", "Position Interpolation", "NTK-aware"]
    assert z(maps["Direct extrapolation"]).shape == (MAX_HEATMAP_ROWS, 64)  # defaults: d = 128, all of L'


def test_no_methods_says_so():
    at = run_whole_page(PAGE)
    at.multiselect[0].set_value([]).run()
    assert not at.exception
    assert any("at least one method" in i.value for i in at.info)
    assert not chart_figures(at)


def test_the_method_formulas_are_typeset_only_while_their_expander_is_open():
    """A closed expander sends nothing (each element costs a slider move time in the browser); opened, it shows
    the general formula and one per method shown."""
    at = run_page(PAGE, {"methods": ["Position Interpolation", "YaRN"]})
    assert not any("PI:" in formula.value for formula in at.latex)
    open_expander(at, "formulas")
    assert not at.exception
    shown = [formula.value for formula in at.latex]
    assert sum("PI:" in formula for formula in shown) == 1 and sum("YaRN" in formula for formula in shown) == 1
    assert not any("NTK-aware:" in formula for formula in shown)
    at.run()
    assert len([formula for formula in at.latex if "PI:" in formula.value]) == 1  # it stays open
