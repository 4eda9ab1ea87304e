"""AppTest of the guided lesson: every step at ?step=N asks before it shows, the answer reveals its figure,
the keys move through the steps, and presenter mode hides the sidebar and shows the slide."""

from __future__ import annotations

import re
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from figures.export import browser_available
from lessons import all_lessons
from lessons.tour import available_steps, step_figure, step_settings, step_text
from tests.conftest import ROOT, chart_figures, drawn_charts, run_page
from ui.pages import available_pages

PAGE = "app_pages/tour.py"
STEPS = available_steps()
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def choice_buttons(at, step) -> list:
    return [at.button(key=f"tour_{step.slug}_{index}") for index in range(len(step.choices))]


def css(at) -> str:
    return " ".join(str(element.proto.body) for element in at.get("html"))


@pytest.mark.parametrize("number", range(1, len(STEPS) + 1))
def test_every_step_asks_first_then_reveals_its_figure(number):
    step = STEPS[number - 1]
    text = step_text(step)
    at = run_page(PAGE, {"step": str(number)})
    assert not at.exception and not at.warning
    assert at.header[0].value == f"{number} / {len(STEPS)} · {text.title}"
    assert any(text.question in m.value for m in at.markdown)
    assert [b.label for b in choice_buttons(at, step)] == list(text.choices)
    assert chart_figures(at) == []  # nothing gives the answer away
    assert at.button(key="tour_reveal").disabled  # predict first
    choice_buttons(at, step)[step.answer].click().run()
    at.button(key="tour_reveal").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [f"Right: **{text.answer}**"]
    assert any(m.value == text.why for m in at.markdown)
    figures = chart_figures(at)
    assert len(figures) == 1
    assert figures[0]["layout"]["title"]["text"] == step_figure(step).layout.title.text  # the lesson's own figure
    assert all(b.disabled for b in choice_buttons(at, step))  # the answer stands
    link = at.markdown[-1].value if not at.get("page_link") else ""
    assert "Open this in the full page" in link


def test_a_wrong_answer_is_named_and_the_right_one_shown():
    step = STEPS[1]
    at = run_page(PAGE, {"step": "2"})
    wrong = (step.answer + 1) % len(step.choices)
    choice_buttons(at, step)[wrong].click().run()
    at.button(key="tour_reveal").click().run()
    assert [e.value for e in at.error] == [f"Not quite: the answer is **{step_text(step).answer}**"]
    assert choice_buttons(at, step)[wrong].proto.icon == ":material/cancel:"
    assert choice_buttons(at, step)[step.answer].proto.icon == ":material/check_circle:"


def test_next_and_previous_move_through_the_steps_and_the_link():
    at = run_page(PAGE)
    assert at.header[0].value.startswith(f"1 / {len(STEPS)}")
    assert at.button(key="tour_previous").disabled
    assert at.button(key="tour_reveal").proto.shortcut.lower() == "right"
    assert at.button(key="tour_previous").proto.shortcut.lower() == "left"
    assert [b.proto.shortcut for b in choice_buttons(at, STEPS[0])] == ["1", "2", "3"]
    choice_buttons(at, STEPS[0])[0].click().run()
    at.button(key="tour_reveal").click().run()
    at.button(key="tour_next").click().run()
    assert at.header[0].value.startswith(f"2 / {len(STEPS)}")
    assert at.query_params["step"] == "2"
    at.button(key="tour_previous").click().run()
    assert at.header[0].value.startswith(f"1 / {len(STEPS)}")
    assert chart_figures(at)  # step 1 was answered: coming back shows its answer again


@pytest.mark.parametrize("present", ["0", "1"])
def test_the_last_step_leads_to_a_summary_of_every_step(present):
    """The lesson ends on a screen that says what each step showed (its title, question and answer; on the
    presenter's one screen, its title and answer in two columns), not on a disabled button; ← goes back to the last
    step."""
    last = STEPS[-1]
    at = run_page(PAGE, {"step": str(len(STEPS)), "present": present})
    if present == "0":
        choice_buttons(at, last)[last.answer].click().run()
    at.button(key="tour_reveal").click().run()
    assert not at.get("button") or all(b.key != "tour_next" for b in at.button)
    end = at.button(key="tour_summary_button")
    assert not end.disabled and end.proto.shortcut.lower() == "right"
    end.click().run()
    assert not at.exception
    assert "Summary" in at.header[0].value
    shown = " ".join(m.value for m in at.markdown)
    for number, step in enumerate(STEPS, start=1):
        text = step_text(step)
        if present == "0":
            assert f"{number}. **{text.title}**: {text.question} **{text.answer}**" in shown
        else:
            assert f"{number}. **{text.title}**: {text.answer}" in shown
    assert chart_figures(at) == []
    captions = [c.value for c in at.caption]
    assert ("You answered 1 of 1 question right." in captions) == (present == "0")
    at.button(key="tour_previous").click().run()
    assert at.header[0].value.startswith(f"{len(STEPS)} / {len(STEPS)}")


def test_the_presenter_toggle_keeps_its_label_in_presenter_mode():
    at = run_page(PAGE, {"step": "2", "present": "1"})
    toggle = at.toggle(key="present")
    assert toggle.label == "Presenter mode" and toggle.proto.label_visibility.value == 0  # VISIBLE


QUESTION_SEES_A_FIGURE = re.compile(r"\bshown\b|\b[Tt]he (?:figure|heatmaps?|matrix|chart) (?:shows?|stores|sums|draws)\b"
                                    r"|\bthis \d+ × \d+ matrix\b")


@pytest.mark.parametrize("step", STEPS, ids=[s.slug for s in STEPS])
def test_a_question_never_points_at_a_figure_that_is_hidden_until_the_reveal(step):
    text = step_text(step)
    for before in (text.text, text.question, *text.choices):
        assert not QUESTION_SEES_A_FIGURE.search(before), before


def test_a_bad_step_in_a_link_falls_back_with_a_note():
    at = run_page(PAGE, {"step": "99"})
    assert not at.exception
    assert at.header[0].value.startswith("1 / ")
    assert any("Step" in w.value and "99" in w.value for w in at.warning)


def test_presenter_mode_hides_the_sidebar_and_shows_the_slide():
    step = STEPS[5]
    at = run_page(PAGE, {"step": "6", "present": "1"})
    assert not at.exception and not at.warning
    style = css(at)
    assert '[data-testid="stSidebar"]' in style and "display: none" in style
    assert ".st-key-step" in style  # the step slider stays (it holds ?step) but is hidden
    assert not at.title  # the header counts the steps instead
    assert at.header[0].value == f"6 / {len(STEPS)} · {step_text(step).title}"
    assert at.query_params["present"] == "1"
    assert not at.button(key="tour_reveal").disabled  # the teacher reveals without answering for the class
    at.button(key="tour_reveal").click().run()
    assert [i.value for i in at.info] == [f"The answer: **{step_text(step).answer}**"]
    if browser_available():  # the slide as exported, fitted to the screen
        images = at.get("image")
        assert len(images) == 1 and not chart_figures(at)
    else:  # no browser to draw slides: the live figure
        assert len(chart_figures(at)) == 1
    assert not at.get("popover")  # no export buttons on a slide


def test_the_presenter_toggle_turns_presenter_mode_off_and_on():
    at = run_page(PAGE, {"step": "3", "present": "1"})
    at.toggle(key="present").set_value(False).run()
    assert not css(at)
    assert "present" not in at.query_params
    assert at.title[0].value.startswith("RoPE and long context")
    at.toggle(key="present").set_value(True).run()
    assert "display: none" in css(at) and at.query_params["present"] == "1"
    assert at.header[0].value.startswith("3 / ")


def test_a_bad_present_value_falls_back_with_a_note():
    at = run_page(PAGE, {"present": "maybe"})
    assert not css(at)
    assert any("maybe" in w.value for w in at.warning)


def test_in_the_app_the_sidebar_is_hidden_and_the_link_keeps_the_settings():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()  # Home first: the navigation is then the app's own
    at.query_params["present"] = "1"
    at.switch_page("app_pages/tour.py").run()
    assert not at.exception
    assert '[data-testid="stSidebar"]' in css(at)  # the app's sidebar is hidden
    at.toggle(key="present").set_value(False).run()
    at.select_slider(key="step").set_value(2).run()
    step = STEPS[1]
    choice_buttons(at, step)[step.answer].click().run()
    at.button(key="tour_reveal").click().run()
    links = at.get("page_link")
    assert len(links) == 1 and links[0].proto.page == "frequencies"
    query = parse_qs(links[0].proto.query_string)
    # the part of the page with the step's figure opens
    assert query == {"methods": ["Direct extrapolation"], "pair": ["45"], "part": ["per-pair"]}
    lesson = all_lessons()["frequencies"]
    settings = {k: v if len(v) > 1 else v[0] for k, v in query.items() if k != "part"}
    assert lesson.settings.from_mapping(settings) == step_settings(step)


PARTED_STEPS = [step for step in STEPS if all_lessons()[step.lesson].parts]


@pytest.mark.parametrize("step", PARTED_STEPS, ids=[step.slug for step in PARTED_STEPS])
def test_the_full_page_link_opens_the_part_that_draws_the_steps_figure(step):
    """A long page runs only its open part: the link names the part that holds the step's figure."""
    at = run_page(PAGE, {"step": str(STEPS.index(step) + 1)})
    choice_buttons(at, step)[step.answer].click().run()
    at.button(key="tour_reveal").click().run()
    address = at.markdown[-1].value.split("](", 1)[1].rstrip(")")
    path, _, query_string = address.partition("?")
    query = {key: value if len(value) > 1 else value[0] for key, value in parse_qs(query_string).items()}
    lesson = all_lessons()[step.lesson]
    assert query["part"] == lesson.part_of(step.figure).slug
    page = next(p for p in available_pages() if p.url_path == path.lstrip("/"))
    opened = run_page(page.path, query)
    assert not opened.exception and not opened.warning
    assert f"{step.lesson}_{step.figure}" in [chart.key for chart in drawn_charts(opened)]


@pytest.mark.parametrize("present", ["0", "1"])
def test_an_arrow_pressed_before_the_buttons_are_redrawn_acts_on_the_step_shown(present):
    """A presenter's → then a quick ←: the header already reads the new step, but the run that draws its buttons
    has not reached them, so the press lands on the buttons drawn for the step before. It acts on the step shown."""
    at = run_page(PAGE, {"step": "3", "present": present})
    choice_buttons(at, STEPS[2])[0].click().run()
    at.button(key="tour_reveal").click().run()
    # the step moves to 4 and, in the same message, the stale Previous of step 3 is pressed
    at.select_slider(key="step").set_value(4)
    at.button(key="tour_previous").click().run()
    assert at.header[0].value.startswith(f"3 / {len(STEPS)}") and at.query_params["step"] == "3"
    # the stale Next of step 3, pressed once step 4 shows: → reveals step 4 when presenting (it needs an answer
    # otherwise); it never skips the step's answer
    at.select_slider(key="step").set_value(4)
    at.button(key="tour_next").click().run()
    assert at.header[0].value.startswith(f"4 / {len(STEPS)}")
    keys = {button.key for button in at.button}
    if present == "1":
        assert "tour_next" in keys and "tour_reveal" not in keys
    else:
        assert at.button(key="tour_reveal").disabled


def test_the_lesson_downloads_as_a_deck_built_on_demand():
    at = run_page(PAGE, {"step": "1"})
    assert at.expander[0].label == "Download the lesson as a deck"
    assert not at.get("download_button")  # nothing is built until asked
    at.radio(key="deck").set_value("html").run()
    at.checkbox(key="answers").uncheck().run()
    at.button(key="tour_deck_build").click().run()
    assert not at.exception and not at.error
    downloads = at.get("download_button")
    assert len(downloads) == 1 and "tour_deck_no-answers.html" in downloads[0].proto.label
    assert "tour_deck_build" not in [button.key for button in at.button]  # built: only the download shows
    at.run()  # the built deck stays offered on the next run
    assert len(at.get("download_button")) == 1
    at.checkbox(key="answers").check().run()  # another deck: asked for again
    assert not at.get("download_button") and "tour_deck_build" in [button.key for button in at.button]
