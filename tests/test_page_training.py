"""AppTest of the training page: the spectrum, train or look up, live progress, the queue, results, browse."""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch

from lessons import training as lesson
from pe_core.jobs import RUNNING, JobLimiter
from pe_core.train import open_store
from pe_core.train.service import TrainingService, use_service
from tests.conftest import chart_figures, drawn_charts, figure_titled, open_expander, run_page, run_whole_page
from ui.lesson import PART_KEY

PAGE = "app_pages/training.py"
# a model small enough that a whole run takes about a second (option widgets carry their labels in the URL)
TINY = {"L": "16", "dm": "32", "nh": "2", "hd": "16", "nl": "1", "steps": "20", "x": ["1×", "2×"],
        "m": ["Direct extrapolation", "Position Interpolation"], "ft": ["Position Interpolation"], "fts": "10"}


@pytest.fixture(autouse=True)
def fresh_service(monkeypatch, tmp_path):
    """Every test gets its own store and limiter, installed as the server's."""
    monkeypatch.setenv("PE_TRAIN_THREADS", "1")
    threads = torch.get_num_threads()
    service = TrainingService(open_store(str(tmp_path / "runs.sqlite3")), JobLimiter(1, 8), device="cpu")
    previous = use_service(service)
    lesson.LESSON.clear_caches()
    yield service
    use_service(previous)
    lesson.LESSON.clear_caches()
    torch.set_num_threads(threads)


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def wait_for_job(at, timeout: float = 60) -> None:
    job = at.session_state["tt_job"]
    assert job.wait(timeout), f"job still {job.state} after {timeout} s ({job.phase})"


def train(query: dict):
    """Train the experiment of ``query`` from the page; returns the page as it shows the stored run, whole."""
    at = run_whole_page(PAGE, query)
    button(at, "Train this experiment").click().run()
    wait_for_job(at)
    at.run()
    return at


def test_before_any_run_the_page_shows_the_spectrum_and_a_train_button():
    at = run_page(PAGE)
    assert not at.exception
    assert at.selectbox(key="enc").value == "rope" and at.select_slider(key="hd").value == 64
    assert not button(at, "Train this experiment").disabled and button(at, "Stop").disabled
    spectrum = figure_titled(at, "Does the toy turn like a real model")
    toy, llama2, llama3 = spectrum["data"][:3]
    # head size 64, base 50, L = 64: turns within L = L / (2π·50^(2i/64))
    assert list(toy["y"]) == pytest.approx([64 / (2 * math.pi * 50 ** (2 * i / 64)) for i in range(32)])
    assert "19 of 32 pairs" in toy["name"] and "46 of 64 pairs" in llama2["name"] and "35 of 64" in llama3["name"]
    assert "18% of angles unseen" in toy["name"] and "18% of angles unseen" in llama2["name"]
    captions = " ".join(c.value for c in at.caption)
    assert "59% and 18% for this toy" in captions and "Llama 2: 72% and 18%" in captions
    prose = " ".join(m.value for m in at.markdown)
    assert "has 46 of 64 pairs turning within L" in prose
    assert "only 9 of 32 pairs turning, and 56% of its angles at 8× unseen" in prose  # base 10,000, d = 64, L = 64
    # YaRN's ramp: the paper's values keep 21 and interpolate 18 of Llama 2's pairs; matched, the toy keeps 11, 9
    assert "keep 21 of 64 pairs and interpolate 18" in prose and "turns only 10.2 times within L" in prose
    assert "would keep 1 of its 32 pairs" in prose
    assert "β = 2.83, α = 0.65, keeping 11 pairs and interpolating 9" in prose
    assert at.radio(key="ramp").value == "matched"


def drawn_figures(at) -> list[str]:
    return [chart.key.removeprefix("training_") for chart in drawn_charts(at) if chart.key.startswith("training_")]


def test_the_page_opens_at_the_miniature_and_results_parts_wait_for_a_run(fresh_service):
    at = run_page(PAGE)
    assert [tab.label for tab in at.tabs] == ["The miniature", "Encodings", "RoPE methods", "This run", "Position",
                                              "Inside", "Retrieval", "Whole page"]
    assert drawn_figures(at) == ["spectrum"]
    for part in lesson.LESSON.parts:
        shown = run_page(PAGE, {PART_KEY: part.slug})
        assert not shown.exception
        waits = any("No results yet" in i.value for i in shown.info)
        assert waits == lesson.needs_run(part), part.slug
        assert drawn_figures(shown) == ([] if waits else list(part.figures)), part.slug
    assert [lesson.needs_run(p) for p in lesson.LESSON.parts] == [False, True, True, True, False, True, False]
    assert fresh_service.trained == 0 and fresh_service.store.count() == 0  # looking trains nothing


def test_with_a_stored_run_each_part_draws_its_figures_under_its_header(fresh_service):
    train(TINY)
    for part in lesson.LESSON.parts:
        at = run_page(PAGE, {**TINY, PART_KEY: part.slug})
        assert not at.exception and not at.info, part.slug
        assert drawn_figures(at) == list(part.figures), part.slug
        assert [(h.proto.anchor, h.value) for h in at.header if h.proto.anchor] == [(part.slug, part.title)]
    whole = run_whole_page(PAGE, TINY)
    assert drawn_figures(whole) == [name for part in lesson.LESSON.parts for name in part.figures]
    # the button that trains the missing seeds is keyed per part, so the whole page draws both
    assert [b.label for b in whole.button].count("Train the missing seeds and encodings") == 2
    assert fresh_service.trained == 1


def test_a_finished_run_is_stored_and_shown_and_a_rerun_is_instant(fresh_service):
    at = train(TINY)
    assert not at.exception
    record = fresh_service.stored(lesson.LESSON.config(lesson.Settings.from_mapping(TINY)))
    assert record is not None and record.config.steps == 20
    assert any("in the run store" in s.value for s in at.success)
    loss = figure_titled(at, "Training loss")
    assert list(loss["data"][0]["x"]) == list(range(1, 21))
    assert list(loss["data"][0]["y"]) == pytest.approx([p.loss for p in record.loss_curve])
    table = figure_titled(at, "RoPE past its training length")["data"][0]
    names, seeds, at_l, at_2l = table["cells"]["values"]
    assert list(names) == ["Direct extrapolation", "Position Interpolation",
                           "Position Interpolation, 10 fine-tuning steps"]
    assert list(seeds) == ["1", "1", "1"]
    assert at_l[0] == f"{100 * record.result('direct', 16).mean_accuracy:.1f} ± 0.0" and at_l[0] == at_l[1]
    encodings = figure_titled(at, "Every encoding")["data"][0]["cells"]["values"]
    assert list(encodings[2]) == [at_l[0]] and list(encodings[-2]) == [f"{record.cost.tokens_per_s / 1000:.1f}k"]
    assert list(encodings[-1]) == [f"{record.cost.memory_bytes / 2**20:.1f}*"]
    su = figure_titled(at, "Su's published extrapolation table")["data"][0]["cells"]["values"]
    assert list(su[2][:2]) == ["49.41", "49.40"] and su[4][0] == at_l[0]
    curve = figure_titled(at, "along the fine-tune")["data"][0]
    assert curve["meta"] == {"method": "pi"} and curve["x"][0] == 0 and curve["x"][-1] == 10
    assert curve["y"][-1] == pytest.approx(record.fine_tunes[0].after.mean_accuracy)
    chart = figure_titled(at, "RoPE at the longest length")
    assert [t["meta"]["method"] for t in chart["data"][:3]] == ["direct", "pi", "pi"]
    assert figure_titled(at, "Accuracy at the longest length, every encoding")["data"][0]["meta"] == {"encoding": "rope"}
    assert chart["data"][2]["x"][0] == pytest.approx(record.fine_tunes[0].after.mean_accuracy)
    positions = figure_titled(at, "Loss at each position")
    assert [t["name"] for t in positions["data"][:2]] == ["RoPE + Direct extrapolation",
                                                          "RoPE + Position Interpolation"]
    assert list(positions["data"][1]["y"]) == pytest.approx(record.result("pi", 32).loss, abs=1e-6)
    figure_titled(at, "A short fine-tune")

    started = time.perf_counter()  # another student opens the same link: everything from the store
    again = run_whole_page(PAGE, TINY)
    assert time.perf_counter() - started < 2.0
    assert not again.exception and fresh_service.trained == 1
    assert len(chart_figures(again)) == len(chart_figures(at))


def test_progress_says_what_runs_and_stop_keeps_the_run_to_resume(fresh_service):
    at = run_page(PAGE, {**TINY, "steps": "2000"})
    button(at, "Train this experiment").click().run()
    job = at.session_state["tt_job"]
    deadline = time.monotonic() + 30
    while len(job.reports()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    at.run()
    (bar,) = at.get("progress")
    assert "RoPE: training, step" in bar.proto.text and "of 2000" in bar.proto.text
    button(at, "Stop").click().run()
    wait_for_job(at)
    at.run()
    assert not at.exception
    paused = fresh_service.paused(lesson.LESSON.config(lesson.Settings.from_mapping({**TINY, "steps": "2000"})))
    assert paused is not None and 3 <= paused.run.step < 2000
    assert any(f"Stopped after {paused.run.step} of 2000" in i.value for i in at.info)
    assert any(b.label == "Resume training" for b in at.button)
    partial = figure_titled(at, "Training loss so far")
    assert len(partial["data"][0]["x"]) == paused.run.step  # the partial run's curve stays on the page
    assert fresh_service.store.count() == 0


def test_a_second_session_waits_in_line_and_identical_requests_share_a_run(fresh_service):
    release = threading.Event()
    blocker = fresh_service.limiter.submit("someone else", lambda job: release.wait(30))
    try:
        while blocker.state != RUNNING:
            time.sleep(0.01)
        first, second = run_page(PAGE, TINY), run_page(PAGE, TINY)
        button(first, "Train this experiment").click().run()
        button(second, "Train this experiment").click().run()
        assert any("Waiting in line: position 1" in w.value for w in first.warning)
        assert first.session_state["tt_job"] is second.session_state["tt_job"]
    finally:
        release.set()
    wait_for_job(first)
    assert fresh_service.trained == 1


def test_browse_lists_stored_runs_and_compares_two(fresh_service):
    train(TINY)
    at = train({**TINY, "enc": "ALiBi"})
    assert not at.exception and not at.dataframe  # the store's table is drawn when it is opened
    open_expander(at, "browse")
    frame = at.dataframe[0].value
    assert len(frame) == 2 and set(frame["encoding"]) == {"RoPE", "ALiBi"}
    compare = figure_titled(at, "Two stored runs compared")
    names = [t["name"] for t in compare["data"]]
    assert names[0].startswith("A: ") and names[-1].startswith("B: ") and len(names) == 3
    # a link naming the two runs opens the comparison
    linked = run_page(PAGE, {**TINY, "enc": "ALiBi", "cmpa": at.selectbox(key="cmpb").value,
                                 "cmpb": at.selectbox(key="cmpa").value})
    assert figure_titled(linked, "Two stored runs compared")
    assert (linked.selectbox(key="cmpa").value, linked.selectbox(key="cmpb").value) == (
        at.selectbox(key="cmpb").value, at.selectbox(key="cmpa").value)


def test_bad_urls_fall_back_with_a_note_and_a_broken_store_is_reported(monkeypatch, tmp_path):
    at = run_page(PAGE, {"L": "banana", "dm": "-3", "enc": "xpos", "steps": "1e99", "x": ["zero"], "m": ["magic"]})
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    for label in ("Training length", "Width", "Position encoding", "Training steps"):
        assert label in warnings
    assert at.select_slider(key="L").value == 64 and at.selectbox(key="enc").value == "rope"

    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"x" * 4096)
    monkeypatch.setenv("PE_RUN_STORE", str(broken))
    use_service(None)
    at = run_page(PAGE)
    assert any("could not be opened" in w.value and "left untouched" in w.value for w in at.warning)
    assert broken.read_bytes() == b"x" * 4096
