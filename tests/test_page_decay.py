"""AppTest of the "Long-range decay" page: defaults, slider extremes, bad links, widgets, reproducible draws.

Expected values are computed here from the definitions (numpy), not taken from pe_core; every number the
page's prose states is checked against them.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.conftest import chart_figures, figure_titled, run_whole_page

PAGE = "app_pages/decay.py"
TITLES = ("RoFormer's decay bound", "The decay bound under context-extension methods", "Sinusoidal encodings",
          "Similarity of positions", "Through random W<sub>q</sub>", "RoPE q·k against distance",
          "Sinusoidal PEs through random W<sub>q</sub>, W<sub>k</sub>", "Layer map")
MAX_SEED = 2**31 - 1

LOW = {"dims": ["8"], "bases": ["100"], "rmax": "256", "axis": "linear", "dm": "16", "sb": "100", "kmax": "64",
       "n": "32", "rho": "0", "draws": "1", "seed": "0", "d": "8", "base": "100", "L": "8", "s": "1×",
       "methods": ["Direct extrapolation"]}
HIGH_RANGE = {"dims": ["8"], "bases": ["10,000,000"], "rmax": "1,048,576", "axis": "log", "d": "8",
              "base": "10,000,000", "L": "131,072", "s": "128×", "methods": ["Direct extrapolation"]}
HIGH_SIZES = {"dims": ["256"], "bases": ["10,000,000"], "rmax": "1,024", "dm": "256", "sb": "10,000,000",
              "kmax": "4,096", "n": "256", "rho": "1", "draws": "1,024", "seed": str(MAX_SEED), "d": "256",
              "base": "10,000,000", "methods": ["Direct extrapolation"]}


def theta(head_dim: int, base: float) -> np.ndarray:
    return np.array([base ** (-2 * i / head_dim) for i in range(head_dim // 2)])


def bound(head_dim: int, base: float, distances) -> np.ndarray:
    phasors = np.exp(1j * np.outer(np.asarray(distances, dtype=np.float64), theta(head_dim, base)))
    return np.abs(np.cumsum(phasors, axis=1)).mean(axis=1)


def cosine_sum(head_dim: int, base: float, offsets) -> np.ndarray:
    return np.cos(np.outer(np.asarray(offsets, dtype=np.float64), theta(head_dim, base))).sum(axis=1)


def trace(figure: dict, name: str) -> dict:
    matches = [t for t in figure["data"] if t.get("name") == name]
    assert len(matches) == 1, f"expected one trace named {name!r}, got {[t.get('name') for t in figure['data']]}"
    return matches[0]


def xy(figure: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    found = trace(figure, name)
    return np.asarray(found["x"], dtype=np.float64), np.asarray(found["y"], dtype=np.float64)


def single_point_bins(x: np.ndarray) -> np.ndarray:
    """Where the drawn line is exact: integer distances that a bin holds alone (the start of the axis)."""
    return (x == np.round(x)) & (x <= 40)


def page_text(at) -> str:
    return " ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption)


def first_index(condition: np.ndarray) -> int:
    return int(np.flatnonzero(condition)[0])


def check_bound_line(figure: dict, name: str, head_dim: int, base: float) -> np.ndarray:
    x, y = xy(figure, name)
    exact = single_point_bins(x)
    assert exact.sum() >= 20
    np.testing.assert_allclose(y[exact], bound(head_dim, base, x[exact]), rtol=2e-6)
    assert len(x) <= 2000
    return x


def first_reach(figure: dict, name: str) -> tuple[float, float]:
    marker = trace(figure, f"{name}: reaches the level")
    return float(marker["x"][0]), float(marker["y"][0])


@pytest.fixture(scope="module")
def defaults():
    return run_whole_page(PAGE, timeout=300)


def test_defaults_draw_every_figure(defaults):
    at = defaults
    assert not at.exception and not at.warning and not at.error
    assert len(chart_figures(at)) == len(TITLES)
    for title in TITLES:
        figure_titled(at, title)
    text = page_text(at)
    assert "**32.5**" in text and "**6.55**" in text  # RoFormer's Figure 2, computed on load
    assert text.count("Verified by sympy") == 2
    assert not re.search(r"seed \d{3}|\bthe notes\b|source documents", text, re.IGNORECASE)
    assert "sympy refutes that when this page loads" in text  # the flipped sign of summation by parts
    assert "It is sometimes said that as $k$ grows" in text  # and the claimed monotone decay
    for source in ("arxiv.org/abs/2104.09864", "dwc.knaw.nl", "arxiv.org/abs/1706.03762", "kexue.fm/archives/8231"):
        assert source in text  # RoFormer, Kluyver, Vaswani et al., Su: cited where their claims are made


def test_every_number_in_the_prose_is_computed(defaults):
    """The numbers the page states at its defaults, each computed here from the definitions."""
    text = page_text(defaults)
    exact = np.concatenate([bound(128, 10_000.0, np.arange(start, min(start + 8192, 65_537)))
                            for start in range(0, 65_537, 8192)])
    phases = np.random.default_rng(0).uniform(0, 2 * np.pi, (20_000, 64))
    level = float(np.abs(np.cumsum(np.exp(1j * phases), axis=1)).mean())  # the random-phase level, Monte Carlo
    shown_first = int(re.search(r"reaches it \(r = (\d+) for d = 128", text).group(1))
    assert exact[shown_first] <= 1.01 * level and np.all(exact[:shown_first] > 0.99 * level)  # first at the level
    rebound = float(re.search(r"back up to \*\*([\d.]+)×\*\* that level", text).group(1))
    assert rebound == pytest.approx(exact[shown_first:].max() / level, rel=0.02)
    assert f"**{exact[0]:g}**" in text and f"**{exact[250]:.2f}**" in text and "2²⁰" in text

    assert "L = 4,096 and runs at L′ = 16,384 (s = 4)" in text
    assert f"= {(0.1 * math.log(4) + 1) ** 2:.3f} at s = 4" in text  # YaRN's score factor

    values = cosine_sum(128, 10_000.0, range(3000))
    rise = first_index(values[1:] > values[:-1])
    assert f"rises from {values[rise]:.3f} at k = {rise} to {values[rise + 1]:.3f} at k = {rise + 1}" in text
    negative = first_index(values < 0)
    assert negative == 1707
    assert f"first drops below zero at k = {negative:,}, beyond this chart's ±1,024" in text
    assert "d/2 = 64 at k = 0" in text and "t = 1,024" in text

    distances = np.arange(100)
    direct = bound(128, 10_000.0, distances)
    pi = first_index(np.abs(bound(128, 10_000.0, distances / 4) - direct) > 0.01 * direct)
    assert f"Position Interpolation r = {pi};" in text and pi == 1
    assert re.search(r"NTK-aware r = \d+; YaRN r = \d+\.", text)
    assert "64 × 128 (one head), entries N(0, 1/128)" in text

def test_default_bound_figure(defaults):
    figure = figure_titled(defaults, "RoFormer's decay bound")
    assert figure["layout"]["xaxis"]["type"] == "log"
    reach = {}
    for base in (10_000.0, 500_000.0, 1_000_000.0):
        name = f"base {base:,.0f}"
        x = check_bound_line(figure, name, 128, base)
        assert x[0] == 1 and 0.97 * 65_536 < x[-1] <= 65_536
        where, level = first_reach(figure, name)
        values = bound(128, base, np.arange(int(where) + 1))
        assert values[-1] <= level < values[:-1].min()  # the first distance at the level, checked from scratch
        reach[base] = where
    assert reach[10_000.0] < reach[500_000.0] < reach[1_000_000.0]  # a larger base stretches the curve
    wavelength = next(t for t in figure["data"] if str(t.get("name", "")).startswith("λₘₐₓ"))
    assert wavelength["x"][0] == pytest.approx(2 * math.pi * 10_000 ** (126 / 128))
    colours = [trace(figure, f"base {base:,.0f}")["line"]["color"] for base in (10_000.0, 500_000.0, 1_000_000.0)]
    assert colours == ["#0072B2", "#D55E00", "#009E73"]  # the theme's series colours, in order
    bands = [t for t in figure["data"] if t.get("fill") == "toself"]
    assert len(bands) == 3 and all(t["line"]["width"] == 0 for t in bands)


def test_default_methods_figure(defaults):
    figure = figure_titled(defaults, "The decay bound under context-extension methods")
    assert "d = 128, base 10,000, L = 4,096, s = 4" in figure["layout"]["title"]["text"]
    direct_x, direct_y = xy(figure, "Direct extrapolation")
    pi_x, pi_y = xy(figure, "Position Interpolation")
    check_bound_line(figure, "Direct extrapolation", 128, 10_000.0)
    direct = dict(zip(direct_x, direct_y, strict=True))
    pi = dict(zip(pi_x, pi_y, strict=True))
    for r in range(1, 10):  # PI divides θ by s = 4: B_PI(4r) = B(r)
        assert pi[4.0 * r] == pytest.approx(direct[float(r)], rel=1e-6)
    for name in ("NTK-aware", "YaRN", "L = 4,096", "L′ = 16,384"):
        trace(figure, name)
    yarn_x, yarn_y = xy(figure, "YaRN")
    yarn = dict(zip(yarn_x, yarn_y, strict=True))
    near = [float(r) for r in range(2, 40)]  # YaRN keeps the fast pairs: near tokens look as in training, PI's do not
    ntk = dict(zip(*xy(figure, "NTK-aware"), strict=True))
    yarn_gap = max(abs(yarn[r] - direct[r]) for r in near)
    ntk_gap = max(abs(ntk[r] - direct[r]) for r in near)
    pi_gap = max(abs(pi[r] - direct[r]) for r in near)
    assert yarn_gap < 0.1 * pi_gap and ntk_gap < 0.5 * pi_gap


def test_default_sinusoidal_figures(defaults):
    figure = figure_titled(defaults, "Sinusoidal encodings")
    x, y = xy(figure, "PE(t)·PE(t+k)")
    assert x[0] == -1024 and x[-1] == 1024
    np.testing.assert_allclose(y, cosine_sum(128, 10_000.0, x), rtol=1e-5, atol=1e-4)
    assert y[x == 0][0] == 64
    matrix = np.asarray(figure_titled(defaults, "Similarity of positions")["data"][0]["z"], dtype=np.float64)
    offsets = np.subtract.outer(np.arange(128), np.arange(128))
    np.testing.assert_allclose(matrix, cosine_sum(128, 10_000.0, offsets.ravel()).reshape(128, 128), atol=1e-4)
    assert "first below zero at k = 1,707, beyond this range" in figure["layout"]["title"]["text"]
    projected = np.asarray(figure_titled(defaults, "Through random W<sub>q</sub>")["data"][0]["z"])
    assert projected.shape == (128, 128) and np.abs(projected - projected.T).max() > 1


def test_default_score_figures(defaults):
    figure = figure_titled(defaults, "RoPE q·k against distance")
    x, ones = xy(figure, "(a) q = k = (1, …, 1)")
    np.testing.assert_allclose(ones, 2 * cosine_sum(128, 10_000.0, x), rtol=1e-5, atol=1e-4)
    expected_x, expected = xy(figure, "expected 2ρ Σ cos(rθᵢ), ρ = 0.5")
    np.testing.assert_allclose(expected, cosine_sum(128, 10_000.0, expected_x), rtol=1e-5, atol=1e-4)
    mean_x, mean = xy(figure, "(b) mean over draws, ρ = 0.5")
    assert mean_x[-1] == 1024
    assert np.abs(mean - cosine_sum(128, 10_000.0, mean_x)).max() < 5  # 256 draws: within a few standard errors
    band = trace(figure, "(b) mean ± 1 s.d. over 256 draws")
    assert band["fill"] == "toself"

    projected = figure_titled(defaults, "Sinusoidal PEs through random W<sub>q</sub>, W<sub>k</sub>")
    ref_x, reference = xy(projected, "no projection: PE(t)·PE(t+k)")
    np.testing.assert_allclose(reference, cosine_sum(128, 10_000.0, ref_x), rtol=1e-5, atol=1e-4)
    _, projected_mean = xy(projected, "mean over draws")
    assert np.abs(projected_mean).max() < 0.2 * reference.max()  # the mean over projections is ~0: no decay left
    draw_x, draw = xy(projected, "draw 1")
    assert abs(draw[draw_x == 0][0]) < np.abs(draw).max()  # not peaked at k = 0


def test_low_extremes():
    at = run_whole_page(PAGE, LOW, timeout=300)
    assert not at.exception and not at.warning and not at.error
    figure = figure_titled(at, "RoFormer's decay bound")
    assert figure["layout"]["xaxis"].get("type") != "log"
    x, y = xy(figure, "base 100")
    np.testing.assert_array_equal(x, np.arange(257))  # 257 distances: drawn point by point
    np.testing.assert_allclose(y, bound(8, 100.0, x), rtol=1e-6)
    assert y[0] == 2.5
    assert not any(str(t.get("name", "")).endswith("min–max") for t in figure["data"])
    wavelength = next(t for t in figure["data"] if str(t.get("name", "")).startswith("λₘₐₓ"))
    assert wavelength["x"][0] == pytest.approx(2 * math.pi * 100 ** (6 / 8))

    methods = figure_titled(at, "The decay bound under context-extension methods")
    assert "L = L′ = 8" in [t.get("name") for t in methods["data"]]  # s = 1: one line

    sinusoidal = figure_titled(at, "Sinusoidal encodings")
    sx, sy = xy(sinusoidal, "PE(t)·PE(t+k)")
    np.testing.assert_array_equal(sx, np.arange(-64, 65))
    np.testing.assert_allclose(sy, cosine_sum(16, 100.0, sx), atol=1e-5)
    negative = first_index(cosine_sum(16, 100.0, range(100)) < 0)
    assert negative == 16
    assert f"first drops below zero at k = {negative} ({cosine_sum(16, 100.0, [negative])[0]:.2f}), within this " \
           "chart's ±64" in page_text(at)
    assert any(a.get("text") == f"first below zero: k = {negative}" for a in sinusoidal["layout"]["annotations"])
    assert np.asarray(figure_titled(at, "Similarity of positions")["data"][0]["z"]).shape == (32, 32)

    scores = figure_titled(at, "RoPE q·k against distance")
    _, expected = xy(scores, "expected 2ρ Σ cos(rθᵢ), ρ = 0")
    assert np.all(expected == 0)
    mean_x, mean = xy(scores, "(b) mean over draws, ρ = 0")
    _, single = xy(scores, "(b) a single draw")
    np.testing.assert_allclose(mean, single, rtol=1e-6, atol=1e-5)  # one draw: its mean is itself
    band = trace(scores, "(b) mean ± 1 s.d. over 1 draw")
    band_y = np.asarray(band["y"], dtype=np.float64)
    assert np.abs(band_y[: len(band_y) // 2] - band_y[len(band_y) // 2:][::-1]).max() < 1e-5  # zero spread
    x8, ones = xy(scores, "(a) q = k = (1, …, 1)")
    np.testing.assert_allclose(ones, 2 * cosine_sum(8, 100.0, x8), atol=1e-5)


def test_longest_range():
    """2^20 distances at every integer, exact; the bound never exceeds its value at r = 0."""
    at = run_whole_page(PAGE, HIGH_RANGE, timeout=600)
    assert not at.exception and not at.warning and not at.error
    figure = figure_titled(at, "RoFormer's decay bound")
    x = check_bound_line(figure, "base 10,000,000", 8, 1e7)
    assert 0.98 * 2**20 < x[-1] <= 2**20
    _, high = xy(figure, "base 10,000,000: min–max")
    assert high.max() <= 2.5 + 1e-5
    methods = figure_titled(at, "The decay bound under context-extension methods")
    assert {"L = 131,072", "L′ = 1,048,576"} <= {t.get("name") for t in methods["data"]}  # L′ capped at 2^20
    direct_x, direct_y = xy(methods, "Direct extrapolation")
    np.testing.assert_array_equal(direct_x, x)  # same θ as the first chart: one shared computation


def test_largest_sizes():
    at = run_whole_page(PAGE, HIGH_SIZES, timeout=600)
    assert not at.exception and not at.warning and not at.error
    figure = figure_titled(at, "RoFormer's decay bound")
    x, y = xy(figure, "base 10,000,000")
    np.testing.assert_array_equal(x, np.arange(1, 1025))  # 1,024 distances on a log axis: every one drawn
    np.testing.assert_allclose(y, bound(256, 1e7, x), rtol=2e-6)

    sinusoidal = figure_titled(at, "Sinusoidal encodings")
    sx, sy = xy(sinusoidal, "PE(t)·PE(t+k)")
    assert sx[0] == -4096 and sx[-1] == 4096 and len(sx) <= 1802
    np.testing.assert_allclose(sy, cosine_sum(256, 1e7, sx), rtol=1e-5, atol=1e-4)
    assert np.asarray(figure_titled(at, "Similarity of positions")["data"][0]["z"]).shape == (256, 256)

    scores = figure_titled(at, "RoPE q·k against distance")
    ones_x, ones = xy(scores, "(a) q = k = (1, …, 1)")
    expected_x, expected = xy(scores, "expected 2ρ Σ cos(rθᵢ), ρ = 1")
    np.testing.assert_allclose(expected, 2 * cosine_sum(256, 1e7, expected_x), rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(ones, 2 * cosine_sum(256, 1e7, ones_x), rtol=1e-5, atol=1e-3)
    assert ones_x[-1] == 4096 and len(ones_x) <= 1202
    trace(scores, "(b) mean ± 1 s.d. over 1,024 draws")
    projected = figure_titled(at, "Sinusoidal PEs through random W<sub>q</sub>, W<sub>k</sub>")
    assert [t["name"] for t in projected["data"] if t["name"].startswith("draw")] == ["draw 1", "draw 2", "draw 3"]


def test_several_head_dims_and_bases():
    at = run_whole_page(PAGE, {"dims": ["64", "128"], "bases": ["10,000", "1,000,000"], "rmax": "1,024",
                         "axis": "linear"}, timeout=300)
    assert not at.exception and not at.warning
    figure = figure_titled(at, "RoFormer's decay bound")
    for head_dim in (64, 128):
        for base in (10_000.0, 1_000_000.0):
            name = f"base {base:,.0f}, d = {head_dim}"
            x, y = xy(figure, name)
            assert x[0] == 0 and y[0] == (head_dim // 2 + 1) / 2
            check_bound_line(figure, name, head_dim, base)
    dashes = {trace(figure, f"base 10,000, d = {d}")["line"]["dash"] for d in (64, 128)}
    assert len(dashes) == 2  # head dims are told apart by dash, bases by colour
    levels = sorted(shape["y0"] for shape in figure["layout"]["shapes"])
    assert len(levels) == 2 and levels[0] < levels[1]  # one random-phase level per head size


def test_bad_links_fall_back_with_a_note():
    at = run_whole_page(PAGE, {"rmax": "banana", "dims": ["7"], "rho": "2", "draws": "-3", "axis": "sideways",
                         "n": "1e9", "dm": "nope", "seed": "abc"}, timeout=300)
    assert not at.exception
    assert len(at.warning) >= 5
    assert all("cannot take" in w.value for w in at.warning)
    figure = figure_titled(at, "RoFormer's decay bound")
    x, _ = xy(figure, "base 10,000")
    assert x[-1] > 0.97 * 65_536  # the default range
    assert len(chart_figures(at)) == len(TITLES)


def test_widgets_change_the_figures(defaults):
    at = defaults
    at.select_slider(key="rmax").set_value(256)
    at.radio(key="axis").set_value("linear")
    at.select_slider(key="rho").set_value(1.0)
    at.run()
    assert not at.exception
    x, y = xy(figure_titled(at, "RoFormer's decay bound"), "base 500,000")
    np.testing.assert_array_equal(x, np.arange(257))
    np.testing.assert_allclose(y, bound(128, 5e5, x), rtol=1e-6)
    trace(figure_titled(at, "RoPE q·k against distance"), "(b) mean over draws, ρ = 1")
    at.multiselect(key="bases").set_value([])
    at.multiselect(key="methods").set_value([])
    at.run()
    assert not at.exception
    infos = " ".join(i.value for i in at.info)
    assert "Pick at least one head dim and one base" in infos and "Pick at least one method" in infos
    assert len(chart_figures(at)) == len(TITLES) - 2


def test_seed_makes_draws_reproducible():
    query = {"rmax": "256", "kmax": "64", "n": "32", "draws": "16"}
    first = run_whole_page(PAGE, {**query, "seed": "5"}, timeout=300)
    again = run_whole_page(PAGE, {**query, "seed": "5"}, timeout=300)
    other = run_whole_page(PAGE, {**query, "seed": "6"}, timeout=300)

    def projected(at) -> np.ndarray:
        return np.asarray(figure_titled(at, "Through random W<sub>q</sub>")["data"][0]["z"])

    def one_draw(at) -> np.ndarray:
        return xy(figure_titled(at, "RoPE q·k against distance"), "(b) a single draw")[1]

    np.testing.assert_array_equal(projected(first), projected(again))
    np.testing.assert_array_equal(one_draw(first), one_draw(again))
    assert not np.array_equal(projected(first), projected(other))
    assert not np.array_equal(one_draw(first), one_draw(other))


def test_the_sidebar_set_up_is_greyed_out_with_its_reason_where_the_open_part_does_not_use_it():
    """The bound chart reads its own bases: on that part (the default) the sidebar's base moves nothing, so it is
    disabled, and the note beside it names the parts it does set; on those parts it is live and moves the chart."""
    from lessons import decay
    from tests.conftest import run_page
    from ui.lesson import PART_KEY

    rope_keys = [c.key for c in decay.Settings.controls().values() if c.group == "rope"]
    users = [p.tab for p in decay.LESSON.parts if "rope" in decay.LESSON.groups_read_by(p)]
    assert users == ["Extension methods", "Real q·k", "Layer map"]
    bound_part = run_page(PAGE)
    assert not bound_part.exception
    base = bound_part.select_slider(key="base")
    assert base.disabled and all(w.disabled for w in bound_part.sidebar if getattr(w, "key", None) in rope_keys)
    note = " ".join(i.value for i in bound_part.sidebar.info)
    assert "“RoFormer's bound” does not use the RoPE set-up" in note
    assert all(f"“{tab}”" in note for tab in users)
    for part in ("methods", "real-scores"):
        at = run_page(PAGE, {PART_KEY: part})
        assert not at.select_slider(key="base").disabled and not at.sidebar.info, part
    at = run_page(PAGE, {PART_KEY: "methods", "rmax": "256"})
    before = xy(figure_titled(at, "The decay bound under context-extension methods"), "Direct extrapolation")[1]
    at.select_slider(key="base").set_value(500_000.0).run()
    x, after = xy(figure_titled(at, "The decay bound under context-extension methods"), "Direct extrapolation")
    exact = single_point_bins(x)
    np.testing.assert_allclose(after[exact], bound(128, 5e5, x[exact]), rtol=2e-6)
    assert not np.allclose(before, after)
