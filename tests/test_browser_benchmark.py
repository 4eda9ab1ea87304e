"""The browser benchmark's floor and its element-cost table (the timing itself runs in ``python -m benchmarks.browser``)."""

from __future__ import annotations

import pytest

from benchmarks.browser import ELEMENT_KINDS, FLOOR_APP, element_table
from benchmarks.harness import ROOT, run_page


def _floor(query: dict[str, str]):
    return run_page(str(FLOOR_APP.relative_to(ROOT)), query)


def test_the_bare_floor_is_one_slider_and_one_chart():
    at = _floor({})
    assert len(at.slider) == 1 and len(at.markdown) == 0 and len(at.latex) == 0
    assert len(at.get("plotly_chart")) == 1


@pytest.mark.parametrize(("kind", "markdown", "latex", "sliders"), [
    ("paragraphs", 3, 0, 1), ("plain", 3, 0, 1), ("formulas", 0, 3, 1), ("merged", 1, 0, 1), ("sliders", 0, 0, 4)])
def test_each_element_kind_adds_that_many_elements_under_the_chart(kind, markdown, latex, sliders):
    at = _floor({kind: "3"})
    assert (len(at.markdown), len(at.latex), len(at.slider)) == (markdown, latex, sliders)
    if kind in ("paragraphs", "merged"):
        text = "\n\n".join(m.value for m in at.markdown)
        assert text.count("Paragraph ") == 3 and "$m\\theta_i$" in text
    if kind == "plain":
        assert all("$" not in m.value for m in at.markdown)


def test_the_table_gives_each_kinds_cost_per_element():
    results = {"added": 30, "floor": {"first_change_ms": 100.0, "settled_ms": 120.0},
               "kinds": {"paragraphs": {"first_change_ms": 139.0, "settled_ms": 170.0},
                         "merged": {"first_change_ms": 103.0, "settled_ms": 121.0}}}
    lines = element_table(results).splitlines()
    assert lines[2].startswith(f"30 × {ELEMENT_KINDS['paragraphs']}") and lines[2].endswith("1.30 ms")
    assert lines[3].endswith("0.10 ms")


def test_the_configured_floor_runs_under_the_measured_apps_own_config(tmp_path):
    from benchmarks.browser import floor_under_app_config

    app = tmp_path / "app"
    (app / ".streamlit").mkdir(parents=True)
    (app / ".streamlit" / "config.toml").write_text('[runner]\npostScriptGC = false\n')
    with floor_under_app_config(app) as folder:
        assert (folder / ".streamlit" / "config.toml").read_text() == '[runner]\npostScriptGC = false\n'
        assert (folder / FLOOR_APP.name).read_text() == FLOOR_APP.read_text()
    assert not folder.exists()


def test_rows_are_medians_of_every_move_and_the_table_shows_each_rounds_first_change():
    from benchmarks.browser import combine_rounds, table

    def measured(firsts, settled, load, messages=12, before=4):
        return {"first_change_ms": sorted(firsts)[len(firsts) // 2], "settled_ms": sorted(settled)[len(settled) // 2],
                "first_changes": firsts, "settled_moves": settled, "first_load_ms": load, "messages": messages,
                "messages_before_change": before, "figures": 2, "slider": 1}

    floor = combine_rounds([measured([150.0, 140.0, 160.0], [180.0, 170.0, 190.0], 2800.0),
                            measured([180.0, 100.0, 190.0], [200.0, 120.0, 210.0], 3000.0),
                            measured([140.0, 130.0, 120.0], [190.0, 160.0, 150.0], 2900.0)])
    # nine moves: 100 120 130 140 140 150 160 180 190
    assert (floor["first_change_ms"], floor["settled_ms"], floor["first_load_ms"]) == (140.0, 180.0, 2900.0)
    assert floor["moves"] == 9 and len(floor["first_changes"]) == 9
    assert floor["rounds"] == [[150.0, 180.0], [180.0, 200.0], [130.0, 160.0]]
    assert (floor["figures"], floor["slider"]) == (2, 1)
    page = combine_rounds([measured([300.0, 320.0, 310.0], [380.0, 390.0, 400.0], 4000.0, 70, 40),
                           measured([165.0, 160.0, 170.0], [190.0, 180.0, 200.0], 3000.0, 61, 30),
                           measured([180.0, 175.0, 185.0], [200.0, 210.0, 220.0], 3100.0, 62, 31)])
    assert (page["messages"], page["messages_before_change"]) == (62, 31)
    lines = table({"rounds": 3, "floor": floor, "pages": {"decay": {"title": "Decay", **page}}}).splitlines()
    assert lines[0].endswith("messages   first change by round")
    assert lines[1].endswith("12   150 180 130")
    # the median, not the mean: a slow round (300-320 ms) moves the row only to the next-slowest move
    assert "180 ms 1.29x" in lines[2] and lines[2].endswith("62   310 165 180")


def test_the_cold_first_page_is_the_median_of_its_rounds_and_the_table_shows_them():
    from benchmarks.browser import table

    floor = {"first_change_ms": 150.0, "settled_ms": 180.0, "first_load_ms": 2800.0, "cold_first_page_ms": 3800.0,
             "cold_rounds": [3700.0, 3800.0, 4100.0]}
    results = {"rounds": 3, "floor": floor, "pages": {}, "cold_first_page": "frequencies",
               "cold_first_page_ms": 5320.0, "cold_rounds": [5320.0, 6900.0, 5100.0]}
    *_, cold, by_round = table(results).splitlines()
    assert cold == "cold server, first page (frequencies): 5320 ms, 1.40x the floor's 3800 ms"
    assert by_round == "  by round: the page 5320 6900 5100 ms, the floor 3700 3800 4100 ms"


def test_a_pages_same_length_floor_sends_as_many_elements_and_as_many_before_the_redraw():
    from benchmarks.browser import SAME_LENGTH_STEP, same_length_paragraphs

    floor = {"messages": 6, "messages_before_change": 4}
    assert SAME_LENGTH_STEP == 5
    assert same_length_paragraphs({"messages": 62, "messages_before_change": 36}, floor) == (30, 25)
    assert same_length_paragraphs({"messages": 23, "messages_before_change": 6}, floor) == (0, 15)
    assert same_length_paragraphs({"messages": 5, "messages_before_change": 3}, floor) == (0, 0)
    # each paragraph is one element: above the chart, between the slider and it, and below it
    at = _floor({"above": "30", "paragraphs": "25"})
    assert len(at.markdown) == 55
    assert [m.value.startswith("Paragraph 0 above the chart") for m in at.markdown[:1]] == [True]
    main = list(at.main.children.values())
    chart = next(n for n, element in enumerate(main) if type(element).__name__ != "Markdown" and n > 0)
    assert chart == 31 and sum(type(e).__name__ == "Markdown" for e in main[chart:]) == 25


def test_the_table_sets_each_page_beside_its_same_length_floor():
    from benchmarks.browser import table

    floor = {"first_change_ms": 150.0, "settled_ms": 180.0, "first_load_ms": 2800.0}
    page = {"title": "Decay", "first_change_ms": 190.0, "settled_ms": 200.0, "first_load_ms": 3000.0,
            "same_length_paragraphs": [30, 25]}
    results = {"floor": floor, "pages": {"decay": page, "family": {**page, "same_length_paragraphs": [0, 15]}},
               "same_length": {"floor + 30 + 25 paragraphs, app's config": {"first_change_ms": 200.0,
                                                                           "settled_ms": 160.0}}}
    lines = table(results).splitlines()
    heading = next(n for n, line in enumerate(lines) if line.startswith("against the same-length floor"))
    assert lines[heading + 1].split() == ["page", "above", "+", "below", "first", "change", "settled"]
    decay = lines[heading + 2]
    assert decay.split()[:4] == ["decay", "30", "+", "25"]
    assert "190 /  200 ms 0.95x" in decay and decay.endswith("200 /  160 ms 1.25x")
    assert len(lines) == heading + 3  # family's floor was not measured: no row rather than a wrong one


def test_the_warmup_table_gives_the_reader_with_the_warmup_running_as_a_ratio_to_none():
    from benchmarks.browser import warmup_table

    off = {"first_change_ms": 200.0, "settled_ms": 250.0, "first_load_ms": 3000.0}
    on = {"first_change_ms": 220.0, "settled_ms": 250.0, "first_load_ms": 2700.0}
    lines = warmup_table({"first": "frequencies", "reader": "decay", "delay_s": 7.0, "rounds": 3,
                          "on": on, "off": off}).splitlines()
    assert lines[0] == "a reader opens decay 7 s after a fresh server drew frequencies (3 rounds, medians)"
    assert lines[2].split() == ["warm-up", "off", "200", "ms", "1.00x", "250", "ms", "1.00x", "3000", "ms", "1.00x"]
    assert lines[3].split() == ["warm-up", "running", "220", "ms", "1.10x", "250", "ms", "1.00x", "2700", "ms",
                                "0.90x"]
