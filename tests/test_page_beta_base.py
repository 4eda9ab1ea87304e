"""AppTest of the β-base page: defaults, the extremes of every control, nonsense in the URL, and the numbers
and symbols its prose states."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from tests.conftest import chart_figures, figure_titled, open_expander, run_whole_page
from tests.tables import shown_tables

PAGE = "app_pages/beta_base.py"
TITLES = ("Digits of n in base β", "Zoom near n", "RoPE phases at position", "Turns made by each pair",
          "Base stretch λ needed", "Layer map")
SMALLEST = "smallest λ: (s − (s−1)/β<sup>P</sup>)<sup>1/P</sup>"
DIRECT, INTERPOLATED, CONVERTED = "Direct extrapolation", "Linear interpolation (n/s)", "Base conversion (β → λβ)"


def theta(base: float, head_dim: int) -> np.ndarray:
    return base ** (-np.arange(0, head_dim, 2) / head_dim)


def trace(figure: dict, name: str, group: str | None = None) -> dict:
    matches = [t for t in figure["data"] if t.get("name") == name and (group is None or t.get("legendgroup") == group)]
    assert len(matches) == 1, f"expected one trace named {name!r}, found {len(matches)}"
    return matches[0]


def table_rows(at) -> dict[str, list[str]]:
    (table,) = shown_tables(at)
    return {row[0]: row[1:] for row in table.rows}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def prose(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success]
    parts += [m.label for m in at.metric] + [w.label for w in at.get("number_input")] + [e.label for e in at.expander]
    return "\n".join(parts)


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def default_page():
    return open_expander(run_whole_page(PAGE), "shortcut")  # the shortcut and the worked examples


def test_defaults_draw_every_figure_and_the_table(default_page):
    at = default_page
    assert_clean(at)
    for title in TITLES:
        figure_titled(at, title)
    rows = table_rows(at)
    direct, interpolated, converted = rows[DIRECT], rows[INTERPOLATED], rows[CONVERTED]
    assert direct[:4] == list("1749") and direct[-1] == "1,749"  # 1749 needs a fourth place in base 10
    assert interpolated[1:4] == ["8", "7", "4.5"] and interpolated[-1] == "874.5"
    new_base = 10 * 2 ** (1 / 3)
    assert number(converted[-2]) == pytest.approx(new_base, abs=1e-4)
    digits = [number(d) for d in converted[1:4]]
    assert sum(d * new_base ** j for j, d in enumerate(reversed(digits))) == pytest.approx(1749, abs=1e-3)
    assert max(digits) >= 10 > max(number(d) for d in direct[:4])  # conversion stretches a digit past β
    # shaded: a digit training never had - direct's new top place, and the converted digit 11 ≥ β
    (table,) = shown_tables(at)
    shaded = {row[0]: flags[1:] for row, flags in zip(table.rows, table.shaded, strict=True)}
    assert shaded[DIRECT][:4] == [True, False, False, False] and not any(shaded[INTERPOLATED])
    assert shaded[CONVERTED][1:4] == [number(d) >= 10 for d in converted[1:4]] == [True, False, False]
    assert any("All 5 formulas on this page verified by sympy" in s.value for s in at.success)


def test_default_digit_curves_follow_the_definition(default_page):
    figure = figure_titled(default_page, "Digits of n in base β")
    new_place = trace(figure, "place 3 (× 10<sup>3</sup>), new", "direct")
    x, y = np.asarray(new_place["x"]), np.asarray(new_place["y"])
    assert np.array_equal(y, np.floor(x / 1000)) and set(y.tolist()) == {0.0, 1.0}
    crowded = trace(figure, "place 2 (× 10<sup>2</sup>)", "interpolate")
    x, y = np.asarray(crowded["x"]), np.asarray(crowded["y"])
    assert np.array_equal(y, np.floor(x / 2 / 100) % 10) and y.max() == 9  # n/2 never needs a new place
    zoom = figure_titled(default_page, "Zoom near n")
    units = trace(zoom, INTERPOLATED)
    assert np.allclose(np.asarray(units["y"]), np.asarray(units["x"]) / 2 % 10)
    assert "Not drawn, too fast to see at this scale (see the zoom): place 0." in prose(default_page)


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
    assert dials["layout"]["xaxis"]["ticktext"] == [str(i) for i in shown]  # the dials' pairs, above them
    assert dials["layout"]["xaxis"]["title"]["text"] == "pair i"
    rings = [t for t in dials["data"] if t.get("name") == "hand outside the training arc"]
    flagged = {(round(-y / 2.6), round(x / 2.5)) for t in rings for x, y in zip(t["x"], t["y"], strict=True)}
    expected = set()
    for row, rope_base in enumerate(bases.values()):
        phase = np.fmod(position * theta(rope_base, head_dim)[shown] / (scale if row == 1 else 1), 2 * np.pi)
        reach = length * theta(base, head_dim)[shown]
        expected |= {(row, col) for col in np.flatnonzero((reach < 2 * np.pi) & (phase > reach))}
    assert flagged == expected
    assert {row for row, _ in flagged} == {0, 2, 3}  # interpolation keeps every hand on its arc
    assert "12 of 64 pairs, evenly spread." in prose(default_page)


def test_default_bound_curves_and_numbers(default_page):
    bound = figure_titled(default_page, "Base stretch λ needed")
    smallest = trace(bound, SMALLEST)
    s = np.asarray(smallest["x"])
    assert np.allclose(np.asarray(smallest["y"]), (s - (s - 1) / 10_000) ** (2 / 128) - 1, rtol=1e-9)
    ntk = [t for t in bound["data"] if t.get("name") == "NTK-aware: λ = s<sup>1/(P−1)</sup>"
           and t.get("yaxis") in (None, "y")]
    assert np.allclose(np.asarray(ntk[0]["y"]), s ** (2 / 126) - 1, rtol=1e-9)
    assert s.max() == pytest.approx(1e6)
    assert default_page.metric[0].value == f"{(4 - 3 / 10_000) ** (2 / 128):.6f}"
    assert default_page.metric[1].value == f"{4 ** (2 / 128):.6f}"
    assert default_page.metric[2].value == f"{4 ** (2 / 126):.6f}"


def test_every_number_in_the_default_prose_is_the_computed_one(default_page):
    text = prose(default_page)
    beta = 10_000 ** (2 / 128)
    # the position: n = 4·L − 1 = L′ − 1, with L and L′ = s·L stated
    assert f"**n = {4 * 4096 - 1:,} = 4·L − 1 = L′ − 1** (L = 4,096, L′ = s·L = {4 * 4096:,})" in text
    assert f"= {beta:.5f} (d = 128, b = 10,000)" in text
    assert f"pair 63 is the top digit, turning β⁶³ = {beta**63:,.1f} times slower" in text
    assert "Training covers n < βᴾ = 1,000; s times that is 2,000. Converted base λβ = 12.5992." in text
    # the bases at the sidebar's s and the ratio of their β
    assert f"smallest s(b − 1) + 1 = {4 * 9_999 + 1:,}" in text and "β-conversion b·s = 40,000" in text
    assert f"= {10_000 * 4 ** (128 / 126):,.4f}" in text
    assert f"= {4 ** (4 / (128 * 126)):.6f} times the β of b·s" in text
    assert f"= {4 ** (2 / 128):.4f} for the sidebar's d = 128 and s = 4" in text
    assert f"= {4 ** (2 / 126):.4f}. That is why" in text
    # the shortcut and the worked examples
    shortcut_base = 10 * 2 ** (1 / 3)
    shortcut = [math.fmod(math.floor(1749 / shortcut_base**j), shortcut_base) for j in (2, 1, 0)]
    assert f"in base {shortcut_base:.4f} are [{', '.join(f'{v:.4g}' for v in shortcut)}]" in text
    stands_for = sum(d * shortcut_base ** j for j, d in enumerate(reversed(shortcut)))
    assert f"which stand for {stands_for:,.2f}, not 1,749" in text
    assert "1749 = [6, 13, 5] in base 16" in text and "16³ − 1 = 4,095 ≥ 1,999" in text
    assert f"= {math.ceil(2000 ** (1 / 3))}, since 13³ − 1 ≥ 1,999 > {12**3 - 1:,} = 12³ − 1" in text


def test_one_symbol_for_the_scale_everywhere(default_page):
    """The sidebar's s names the scale in prose, labels, formulas and figures: never k."""
    at = default_page
    latex = [element.value for element in at.latex]
    figures = json.dumps([{k: v for k, v in f["layout"].items() if k in ("title", "annotations")} for f in
                          chart_figures(at)] + [[t.get("name"), t.get("hovertemplate")] for f in chart_figures(at)
                                                for t in f["data"]], ensure_ascii=False)
    labels = [w.label for kind in ("select_slider", "slider", "radio", "toggle", "multiselect") for w in at.get(kind)]
    text = "\n".join([prose(at), *latex, figures, *labels, *(e.label for e in at.expander)])
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link addresses
    assert not re.findall(r"(?<![\\\w])k(?![\w])", text)
    assert "s − (s−1)" in figures and r"\Big(s-\frac{s-1}{\beta^{P}}\Big)^{1/P}" in "\n".join(latex)


def test_plain_extremes_large_n_large_base_many_places():
    at = run_whole_page(PAGE, {"beta": "1000", "P": "32", "ps": "1e6×", "n": str(10**12)})
    assert_clean(at)
    direct = table_rows(at)[DIRECT]
    assert direct[-1] == "1,000,000,000,000" and direct[-2] == "1,000"
    assert direct[:-2][-5:] == ["1", "0", "0", "0", "0"]  # 10^12 = 1·1000^4
    figure = figure_titled(at, "Digits of n in base β = 1,000")
    assert all(np.asarray(t["x"]).max() < 2**53 for t in figure["data"] if t["x"] is not None and t["x"][0] is not None)
    assert "Training covers n < βᴾ = $e^{221.0}$" in prose(at)


def test_beta_close_to_one_and_huge_scale_stay_bounded():
    at = run_whole_page(PAGE, {"beta": "1.001", "P": "1", "ps": "1e6×", "n": "0", "bfor": "plain number", "smax": "1e12×"})
    assert_clean(at)
    needed = math.ceil((math.log(1.001) + math.log(1e6)) / math.log(1.001) - 1e-9)
    assert any(f"{needed:,} places" in i.value for i in at.info)
    rows = table_rows(at)
    assert len(rows[DIRECT]) == 64 + 2  # capped at 64 places, plus base and value
    bound = figure_titled(at, "plain number: β = 1.001, P = 1")
    assert not [t for t in bound["data"] if str(t.get("name", "")).startswith("NTK")]  # P = 1 has no P − 1
    smallest = trace(bound, SMALLEST)
    s = np.asarray(smallest["x"])
    assert s.max() == pytest.approx(1e12)
    assert np.allclose(np.asarray(smallest["y"]), s - (s - 1) / 1.001 - 1, rtol=1e-9)


def test_huge_scale_converts_base_ten_to_base_a_thousand():
    at = run_whole_page(PAGE, {"ps": "1e6×", "P": "3"})
    assert_clean(at)
    converted = table_rows(at)[CONVERTED]
    assert converted[-2] == "1,000"  # 10·(10^6)^(1/3)
    assert [number(d) for d in converted[-5:-2]] == [0, 1, 749]  # 1749 = 1·1000 + 749


def test_rope_extremes():
    small = run_whole_page(PAGE, {"d": "8", "base": "100", "L": "8", "s": "128×", "pos": "128·L − 1"})
    assert_clean(small)
    dials = figure_titled(small, "RoPE phases at position n = 1,023")
    assert dials["layout"]["xaxis"]["ticktext"] == [str(i) for i in range(4)]
    turns = figure_titled(small, "Turns made by each pair at position n = 1,023")
    assert np.allclose(np.asarray(trace(turns, "Direct extrapolation")["y"]), 1023 * theta(100, 8) / (2 * np.pi))
    assert "**n = 1,023 = 128·L − 1 = L′ − 1** (L = 8, L′ = s·L = 1,024)" in prose(small)

    large = run_whole_page(PAGE, {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "pos": "0.25·L − 1"})
    assert_clean(large)
    figure_titled(large, "RoPE phases at position n = 32,767")
    assert "**n = 32,767 = 0.25·L − 1** (L = 131,072, L′ = s·L = 1,048,576)" in prose(large)
    bound = figure_titled(large, "RoPE: d = 256, b = 10,000,000, P = d/2 = 128")
    smallest = trace(bound, SMALLEST)
    s = np.asarray(smallest["x"])
    assert np.allclose(np.asarray(smallest["y"]), (s - (s - 1) / 1e7) ** (2 / 256) - 1, rtol=1e-9)


def test_widgets_round_the_converted_base():
    at = run_whole_page(PAGE)
    at.number_input(key="beta").set_value(16.0)
    at.toggle(key="whole").set_value(True)
    at.run()
    assert_clean(at)
    converted = table_rows(at)[CONVERTED]
    whole_base = math.ceil(16 * 2 ** (1 / 3))
    assert converted[-2] == str(whole_base)
    digits = [int(number(d)) for d in converted[-5:-2]]
    assert digits == [1749 // whole_base**2, 1749 // whole_base % whole_base, 1749 % whole_base]


def test_nonsense_in_the_url_falls_back_with_a_note():
    query = {"beta": "nan", "P": "999", "ps": "7", "n": "1e999", "pos": "zzz", "bfor": "moon", "smax": "3",
             "conv": "maybe", "d": "7", "whole": "abc"}
    at = run_whole_page(PAGE, query)
    assert not at.exception, [e.value for e in at.exception]
    notes = [w.value for w in at.warning if "cannot take" in w.value]
    assert len(notes) >= 10, notes
    assert figure_titled(at, "Digits of n in base β = 10: three ways to reach s = 2× the range")
    assert table_rows(at)[DIRECT][-1] == "1,749"
    assert len(chart_figures(at)) == len(TITLES)


def test_lower_extremes_make_every_method_plain_rope():
    at = run_whole_page(PAGE, {"ps": "1.5×", "s": "1×", "smax": "16×", "conv": "false", "bfor": "plain number"})
    assert_clean(at)
    assert not [w for w in at.warning if "cannot take" in w.value]
    converted = table_rows(at)[CONVERTED]
    assert number(converted[-2]) == pytest.approx(10 * 1.5 ** (1 / 3), abs=1e-4)
    # at s = 1 interpolation and NTK leave RoPE as it is, so every row of hands is the same
    turns = figure_titled(at, "Turns made by each pair")
    rows = [np.asarray(trace(turns, name)["y"]) for name in ("Direct extrapolation", "Position Interpolation",
                                                              "NTK-aware")]
    assert all(np.allclose(r, rows[0], rtol=1e-12) for r in rows[1:])
    assert not [t for t in turns["data"] if t.get("name") == "β-base conversion (b·s)"]
    bound = figure_titled(at, "plain number: β = 10, P = 3")
    assert max(np.asarray(trace(bound, SMALLEST)["x"])) == pytest.approx(16)
    assert at.metric[0].value == f"{(1.5 - 0.5 / 1000) ** (1 / 3):.6f}"
    assert "**n = 16,383 = 4·L − 1** (L = 4,096, L′ = s·L = 4,096)" in prose(at)  # n is past L′ − 1 here


def test_no_method_and_no_conversion_says_what_to_do():
    at = run_whole_page(PAGE)
    at.multiselect(key="methods").set_value([])
    at.toggle(key="conv").set_value(False)
    at.run()
    assert_clean(at)
    assert any("Pick at least one method" in i.value for i in at.info)
    assert len(chart_figures(at)) == 4  # the three that need no method, and the layer map
