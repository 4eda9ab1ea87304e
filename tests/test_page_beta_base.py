"""AppTest of the β-base page: defaults, the extremes of every control, and nonsense in the URL."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import chart_figures, figure_titled, run_page

PAGE = "pages/beta_base.py"
TITLES = ("Digits of n in base β", "Zoom near n", "RoPE phases at position", "Turns made by each pair",
          "Base stretch λ needed")


def theta(base: float, head_dim: int) -> np.ndarray:
    return base ** (-np.arange(0, head_dim, 2) / head_dim)


def trace(figure: dict, name: str, group: str | None = None) -> dict:
    matches = [t for t in figure["data"] if t.get("name") == name and (group is None or t.get("legendgroup") == group)]
    assert len(matches) == 1, f"expected one trace named {name!r}, found {len(matches)}"
    return matches[0]


def table_rows(at) -> dict[str, list[str]]:
    frame = at.dataframe[0].value
    return {str(index): [str(v) for v in row] for index, row in zip(frame.index, frame.values.tolist(), strict=True)}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def default_page():
    return run_page(PAGE)


def test_defaults_draw_every_figure_and_the_table(default_page):
    at = default_page
    assert_clean(at)
    for title in TITLES:
        figure_titled(at, title)
    rows = table_rows(at)
    direct, interpolated, converted = rows["Direct extrapolation"], rows["Linear interpolation (n/k)"], \
        rows["Base conversion (β → λβ)"]
    assert direct[:4] == list("1749") and direct[-1] == "1,749"  # 1749 needs a fourth place in base 10
    assert interpolated[1:4] == ["8", "7", "4.5"] and interpolated[-1] == "874.5"
    new_base = 10 * 2 ** (1 / 3)
    assert number(converted[-2]) == pytest.approx(new_base, abs=1e-4)
    digits = [number(d) for d in converted[1:4]]
    assert sum(d * new_base ** j for j, d in enumerate(reversed(digits))) == pytest.approx(1749, abs=1e-3)
    assert max(digits) >= 10 > max(number(d) for d in direct[:4])  # conversion stretches a digit past β
    assert any("verified by sympy" in s.value for s in at.success)


def test_default_digit_curves_follow_the_definition(default_page):
    figure = figure_titled(default_page, "Digits of n in base β")
    new_place = trace(figure, "place 3 (×10^3) - new", "direct")
    x, y = np.asarray(new_place["x"]), np.asarray(new_place["y"])
    assert np.array_equal(y, np.floor(x / 1000)) and set(y.tolist()) == {0.0, 1.0}
    crowded = trace(figure, "place 2 (×10^2)", "interpolate")
    x, y = np.asarray(crowded["x"]), np.asarray(crowded["y"])
    assert np.array_equal(y, np.floor(x / 2 / 100) % 10) and y.max() == 9  # n/2 never needs a new place
    zoom = figure_titled(default_page, "Zoom near n")
    units = trace(zoom, "Linear interpolation (n/k)")
    assert np.allclose(np.asarray(units["y"]), np.asarray(units["x"]) / 2 % 10)


def test_default_rope_views_match_the_formulas(default_page):
    head_dim, base, length, scale = 128, 10_000.0, 4096, 4.0
    position = int(scale * length) - 1
    bases = {"Direct extrapolation": base, "Position Interpolation": base, "NTK-aware": base * scale ** (128 / 126),
             "β-base conversion (b·s)": base * scale}
    turns = figure_titled(default_page, "Turns made by each pair")
    for name, rope_base in bases.items():
        expected = position * theta(rope_base, head_dim) / (2 * math.pi)
        if name == "Position Interpolation":
            expected = expected / scale
        assert np.allclose(np.asarray(trace(turns, name)["y"]), expected, rtol=1e-12)
    training = [t for t in turns["data"] if str(t.get("name", "")).startswith("most turns in training")][0]
    assert np.allclose(np.asarray(training["y"]), (length - 1) * theta(base, head_dim) / (2 * math.pi), rtol=1e-12)

    dials = figure_titled(default_page, "RoPE phases at position")
    shown = np.unique(np.round(np.linspace(0, 63, 12)).astype(int))
    assert [a["text"] for a in dials["layout"]["annotations"]] == [f"i = {i}" for i in shown]
    rings = [t for t in dials["data"] if t.get("name") == "hand outside the training arc"]
    flagged = {(round(-y / 2.6), round(x / 2.5)) for t in rings for x, y in zip(t["x"], t["y"], strict=True)}
    expected = set()
    for row, rope_base in enumerate(bases.values()):
        phase = np.fmod(position * theta(rope_base, head_dim)[shown] / (scale if row == 1 else 1), 2 * np.pi)
        reach = length * theta(base, head_dim)[shown]
        expected |= {(row, col) for col in np.flatnonzero((reach < 2 * np.pi) & (phase > reach))}
    assert flagged == expected
    assert {row for row, _ in flagged} == {0, 2, 3}  # interpolation keeps every hand on its arc


def test_default_bound_curves_and_numbers(default_page):
    bound = figure_titled(default_page, "Base stretch λ needed")
    smallest = trace(bound, "smallest λ: (k − (k−1)/β^P)^(1/P)")
    k = np.asarray(smallest["x"])
    assert np.allclose(np.asarray(smallest["y"]), (k - (k - 1) / 10_000) ** (2 / 128) - 1, rtol=1e-9)
    ntk = [t for t in bound["data"] if t.get("name") == "NTK-aware: k^(1/(P−1))" and t.get("yaxis") in (None, "y")]
    assert np.allclose(np.asarray(ntk[0]["y"]), k ** (2 / 126) - 1, rtol=1e-9)
    assert k.max() == pytest.approx(1e6)
    assert default_page.metric[0].value == f"{(4 - 3 / 10_000) ** (2 / 128):.6f}"
    assert default_page.metric[2].value == f"{4 ** (2 / 126):.6f}"


def test_plain_extremes_large_n_large_base_many_places():
    at = run_page(PAGE, {"beta": "1000", "P": "32", "k": "1e6×", "n": str(10**12)})
    assert_clean(at)
    direct = table_rows(at)["Direct extrapolation"]
    assert direct[-1] == "1,000,000,000,000" and direct[-2] == "1,000"
    assert direct[:-2][-5:] == ["1", "0", "0", "0", "0"]  # 10^12 = 1·1000^4
    figure = figure_titled(at, "Digits of n in base β = 1,000")
    assert all(np.asarray(t["x"]).max() < 2**53 for t in figure["data"])


def test_beta_close_to_one_and_huge_k_stay_bounded():
    at = run_page(PAGE, {"beta": "1.001", "P": "1", "k": "1e6×", "n": "0", "bfor": "plain number", "kmax": "1e12×"})
    assert_clean(at)
    needed = math.ceil((math.log(1.001) + math.log(1e6)) / math.log(1.001) - 1e-9)
    assert any(f"{needed:,} places" in i.value for i in at.info)
    rows = table_rows(at)
    assert len(rows["Direct extrapolation"]) == 64 + 2  # capped at 64 places, plus base and value
    bound = figure_titled(at, "plain number: β = 1.001, P = 1")
    assert not [t for t in bound["data"] if str(t.get("name", "")).startswith("NTK")]  # P = 1 has no P − 1
    smallest = trace(bound, "smallest λ: (k − (k−1)/β^P)^(1/P)")
    k = np.asarray(smallest["x"])
    assert k.max() == pytest.approx(1e12)
    assert np.allclose(np.asarray(smallest["y"]), k - (k - 1) / 1.001 - 1, rtol=1e-9)


def test_huge_k_converts_base_ten_to_base_a_thousand():
    at = run_page(PAGE, {"k": "1e6×", "P": "3"})
    assert_clean(at)
    converted = table_rows(at)["Base conversion (β → λβ)"]
    assert converted[-2] == "1,000"  # 10·(10^6)^(1/3)
    assert [number(d) for d in converted[-5:-2]] == [0, 1, 749]  # 1749 = 1·1000 + 749


def test_rope_extremes():
    small = run_page(PAGE, {"d": "8", "base": "100", "L": "8", "s": "128×", "pos": "128 L"})
    assert_clean(small)
    dials = figure_titled(small, "RoPE phases at position n = 1,023")
    assert [a["text"] for a in dials["layout"]["annotations"]] == [f"i = {i}" for i in range(4)]
    turns = figure_titled(small, "Turns made by each pair at n = 1,023")
    assert np.allclose(np.asarray(trace(turns, "Direct extrapolation")["y"]), 1023 * theta(100, 8) / (2 * np.pi))

    large = run_page(PAGE, {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "pos": "0.25 L"})
    assert_clean(large)
    figure_titled(large, "RoPE phases at position n = 32,767")
    bound = figure_titled(large, "RoPE: d = 256, b = 10,000,000, P = 128")
    smallest = trace(bound, "smallest λ: (k − (k−1)/β^P)^(1/P)")
    k = np.asarray(smallest["x"])
    assert np.allclose(np.asarray(smallest["y"]), (k - (k - 1) / 1e7) ** (2 / 256) - 1, rtol=1e-9)


def test_widgets_round_the_converted_base():
    at = run_page(PAGE)
    at.number_input(key="beta").set_value(16.0)
    at.checkbox(key="whole").set_value(True)
    at.run()
    assert_clean(at)
    converted = table_rows(at)["Base conversion (β → λβ)"]
    whole_base = math.ceil(16 * 2 ** (1 / 3))
    assert converted[-2] == str(whole_base)
    digits = [int(number(d)) for d in converted[-5:-2]]
    assert digits == [1749 // whole_base**2, 1749 // whole_base % whole_base, 1749 % whole_base]


def test_nonsense_in_the_url_falls_back_with_a_note():
    query = {"beta": "nan", "P": "999", "k": "7", "n": "1e999", "pos": "zzz", "bfor": "moon", "kmax": "3",
             "conv": "maybe", "d": "7", "whole": "abc"}
    at = run_page(PAGE, query)
    assert not at.exception, [e.value for e in at.exception]
    notes = [w.value for w in at.warning if "cannot take" in w.value]
    assert len(notes) >= 10, notes
    assert figure_titled(at, "Digits of n in base β = 10: three ways to reach k = 2×")
    assert table_rows(at)["Direct extrapolation"][-1] == "1,749"
    assert len(chart_figures(at)) == len(TITLES)


def test_lower_extremes_make_every_method_plain_rope():
    at = run_page(PAGE, {"k": "1.5×", "s": "1×", "kmax": "16×", "conv": "false", "bfor": "plain number"})
    assert_clean(at)
    assert not [w for w in at.warning if "cannot take" in w.value]
    converted = table_rows(at)["Base conversion (β → λβ)"]
    assert number(converted[-2]) == pytest.approx(10 * 1.5 ** (1 / 3), abs=1e-4)
    # at s = 1 interpolation and NTK leave RoPE as it is, so every row of hands is the same
    turns = figure_titled(at, "Turns made by each pair")
    rows = [np.asarray(trace(turns, name)["y"]) for name in ("Direct extrapolation", "Position Interpolation",
                                                              "NTK-aware")]
    assert all(np.allclose(r, rows[0], rtol=1e-12) for r in rows[1:])
    assert not [t for t in turns["data"] if t.get("name") == "β-base conversion (b·s)"]
    bound = figure_titled(at, "plain number: β = 10, P = 3")
    assert max(np.asarray(trace(bound, "smallest λ: (k − (k−1)/β^P)^(1/P)")["x"])) == pytest.approx(16)
    assert at.metric[0].value == f"{(1.5 - 0.5 / 1000) ** (1 / 3):.6f}"
