"""Long pages split into parts (tabs): only the open part runs, a link opens a part, and the whole page is a tab."""

from __future__ import annotations

import numpy as np
import pytest

from i18n import _ as translate
from i18n import use_language
from lessons import all_lessons
from tests.conftest import chart_figures, drawn_charts, figure_titled, run_page, run_whole_page, select_points
from ui.lesson import PART_KEY
from ui.pages import available_pages

PAGES = {page.lesson: page.path for page in available_pages() if page.lesson}
# The training page's results parts need a stored run: its own tests train one (tests/test_page_training.py).
PARTED = [lesson for lesson in all_lessons().values() if lesson.parts and not getattr(lesson, "expensive", False)]
PARTS = [(lesson, part) for lesson in PARTED for part in lesson.parts]


def drawn_figures(at, lesson) -> list[str]:
    prefix = f"{lesson.name}_"
    return [chart.key.removeprefix(prefix) for chart in drawn_charts(at) if chart.key.startswith(prefix)]


def test_the_long_pages_have_parts():
    with_parts = [lesson for lesson in all_lessons().values() if lesson.parts]
    assert {"decay", "family", "lineage", "precision", "beta_base", "frequencies", "caveats", "rope_code",
            "training"} <= {lesson.name for lesson in with_parts}
    for lesson in with_parts:
        assert len(lesson.parts) >= 2 and lesson.name in PAGES


@pytest.mark.parametrize(("lesson", "part"), PARTS, ids=[f"{lesson.name}:{part.slug}" for lesson, part in PARTS])
def test_a_part_draws_its_own_figures_and_no_other(lesson, part):
    at = run_page(PAGES[lesson.name], {PART_KEY: part.slug})
    assert not at.exception, [e.value for e in at.exception]
    assert drawn_figures(at, lesson) == list(part.figures)
    assert [tab.label for tab in at.tabs] == [translate(p.tab) for p in lesson.parts] + ["Whole page"]
    assert [(h.proto.anchor, h.value) for h in at.header if h.proto.anchor] == [(part.slug, translate(part.title))]


@pytest.mark.parametrize("lesson", PARTED, ids=[lesson.name for lesson in PARTED])
def test_a_page_opens_at_its_first_part_and_the_last_tab_is_the_whole_page(lesson):
    first = run_page(PAGES[lesson.name])
    assert drawn_figures(first, lesson) == list(lesson.parts[0].figures)
    whole = run_whole_page(PAGES[lesson.name])
    assert not whole.exception
    assert drawn_figures(whole, lesson) == [name for part in lesson.parts for name in part.figures]
    # each part under a header that a link can land on
    anchored = [(h.proto.anchor, h.value) for h in whole.header if h.proto.anchor]
    assert anchored == [(part.slug, translate(part.title)) for part in lesson.parts]


def test_the_tabs_speak_the_readers_language():
    lesson = next(lesson for lesson in PARTED if lesson.name == "decay")
    at = run_page(PAGES["decay"], {"lang": "zh"})
    with use_language("zh"):
        expected = [translate(part.tab) for part in lesson.parts] + [translate("Whole page")]
    assert [tab.label for tab in at.tabs] == expected
    assert expected[-1] != "Whole page" and expected[0] != translate(lesson.parts[0].tab)


def test_a_link_to_a_part_the_page_lacks_says_so_and_opens_the_first():
    at = run_page(PAGES["decay"], {PART_KEY: "nowhere"})
    assert not at.exception
    assert any("`nowhere`" in warning.value for warning in at.warning)
    assert drawn_figures(at, next(lesson for lesson in PARTED if lesson.name == "decay")) == ["bound"]


def projected_reach(at) -> float:
    """The largest offset decay's projected-scores chart draws (the sinusoidal part's "offsets up to ±")."""
    projected = next(f for f in chart_figures(at) if "Sinusoidal PEs through random" in f["layout"]["title"]["text"])
    return max(np.max(np.asarray(t["x"], dtype=float)) for t in projected["data"] if t.get("x") is not None)


def test_a_control_in_a_closed_part_keeps_what_the_reader_set():
    """The real-scores part draws with the sinusoidal part's range, set there before switching tabs."""
    at = run_page(PAGES["decay"], {PART_KEY: "sinusoidal"})
    at.select_slider(key="kmax").set_value(64).run()
    at.session_state["_part_decay"] = "Real q·k"
    at.run()
    assert not at.exception
    assert projected_reach(at) == 64
    assert projected_reach(run_page(PAGES["decay"], {PART_KEY: "real-scores"})) > 64


def test_a_link_sets_a_control_of_a_closed_part():
    assert projected_reach(run_page(PAGES["decay"], {PART_KEY: "real-scores", "kmax": "64"})) == 64


def test_every_figure_a_parted_page_draws_is_in_a_part():
    for lesson in PARTED:
        placed = [name for part in lesson.parts for name in part.figures]
        assert len(placed) == len(set(placed))
        assert set(placed) <= set(lesson.figures)


def test_a_lesson_refuses_parts_that_do_not_add_up():
    from lessons.base import Lesson, Part

    decay = next(lesson for lesson in PARTED if lesson.name == "decay")

    def lesson_with(*parts):
        return Lesson(name="x", title="x", settings=decay.settings, compute=decay.compute, figures=decay.figures,
                      parts=parts)

    with pytest.raises(ValueError, match="each in one part"):
        lesson_with(Part("a", "A", "A", ("bound",)), Part("b", "B", "B", ("bound",)))
    with pytest.raises(ValueError, match="each in one part"):
        lesson_with(Part("a", "A", "A", ("no such figure",)))
    with pytest.raises(ValueError, match="share a slug"):
        lesson_with(Part("a", "A", "A", ()), Part("a", "B", "B", ()))
    with pytest.raises(ValueError, match="share a tab"):
        lesson_with(Part("a", "A", "A", ()), Part("b", "A", "B", ()))
    with pytest.raises(ValueError, match="shows controls of groups it does not read"):
        lesson_with(Part("a", "A", "A", ("bound",)), Part("b", "B", "B", ("sinusoidal-dot",), shows=("bound",)))
    assert lesson_with(Part("a", "A", "A", ("bound",)), Part("b", "B", "B", ())).part_of("bound").slug == "a"


def borrowed_keys(at, lesson) -> set[str]:
    """The keys of the widgets in the open part's hidden container of borrowed controls."""
    from ui.lesson import BORROWED_KEY

    def widgets(node) -> list:
        found = [node] if getattr(node, "key", None) and getattr(node, "type", "") not in ("tab", "tab_container") else []
        for child in (getattr(node, "children", None) or {}).values():
            found += widgets(child)
        return found

    def containers(node) -> list:
        found = []
        for child in (getattr(node, "children", None) or {}).values():
            if isinstance(getattr(child, "children", None), dict) and f"{BORROWED_KEY}-{lesson}" in str(child.proto):
                found.append(child)
            found += containers(child)
        return found

    return {widget.key for box in containers(at._tree) for child in box.children.values() for widget in widgets(child)}


@pytest.mark.parametrize(("lesson", "part", "keys"), [
    ("decay", "bound", set()),
    ("decay", "methods", {"dims", "bases", "rmax", "axis"}),
    ("decay", "sinusoidal", set()),
    ("decay", "real-scores", {"dm", "sb", "kmax", "n", "seed"}),
    ("beta_base", "base-growth", {"beta", "P", "ps", "n", "whole"}),
    ("lineage", "table-rows", {"n", "d", "tok", "seed", "k", "dk", "tb"}),
    ("lineage", "four-terms", set()),
    ("lineage", "schemes", {"n", "d", "tok", "seed", "k", "dk", "tb"}),  # its text states Shaw's and DeBERTa's k
    ("decay", "all", set()),
    ("frequencies", "unseen", set()),  # shows the highlighted pair the first part draws too
    ("caveats", "pi-map", set()),
])
def test_a_part_draws_hidden_the_controls_its_figures_borrow_from_another(lesson, part, keys):
    at = run_page(PAGES[lesson], {PART_KEY: part})
    assert not at.exception
    assert borrowed_keys(at, lesson) == keys


def test_a_part_states_the_numbers_of_settings_another_part_draws():
    """lineage's schemes part writes Shaw's clipping distance k, set in the first part (and kept in the link)."""
    at = run_page(PAGES["lineage"], {PART_KEY: "schemes", "k": "16"})
    assert not at.exception and not at.warning
    assert any("$k = 16$" in m.value and "(33 rows in all)" in m.value for m in at.markdown)


@pytest.mark.parametrize(("lesson", "part", "keys"), [
    ("frequencies", "unseen", {"pair"}),
    ("frequencies", "per-pair", {"pair", "freq"}),
    ("caveats", "pi-map", {"nL", "rho"}),  # L and L′/L, not NTK's d and b
])
def test_a_part_shows_the_controls_it_shares_with_an_earlier_part_and_the_whole_page_draws_them_once(
        lesson, part, keys):
    """The highlighted pair marks the charts of three parts of the frequencies page: each shows its selector, the
    whole page the first part's alone (a widget drawn twice would be an error)."""
    opened = run_page(PAGES[lesson], {PART_KEY: part})
    assert not opened.exception
    shown = {widget.key for kind in ("selectbox", "select_slider", "toggle", "slider", "radio")
             for widget in getattr(opened, kind)}
    assert keys <= shown and not keys & borrowed_keys(opened, lesson)
    whole = run_whole_page(PAGES[lesson])
    assert not whole.exception
    for key in keys:
        assert sum(widget.key == key for kind in ("selectbox", "select_slider", "toggle")
                   for widget in getattr(whole, kind)) == 1


def test_a_pair_picked_in_one_part_is_marked_in_the_next():
    """The highlighted pair is one setting: picked on the per-pair part's chart, the unseen part's selector and
    chart show it when the reader switches tabs, and the link keeps it."""
    at = run_page(PAGES["frequencies"], {PART_KEY: "per-pair"})
    select_points(at, "frequencies_wavelengths", [{"x": 45, "y": 4000.0, "curve_number": 0, "point_index": 45}])
    at.session_state["_part_frequencies"] = "Unseen angles"
    at.run()
    assert not at.exception and at.selectbox(key="pair").value == 45 and at.query_params["pair"] == "45"
    unseen = figure_titled(at, "Pairs that reach angles never seen")
    assert any(a.get("text") == "i = 45" for a in unseen["layout"]["annotations"])
