"""AppTest of the training page: start, live progress, stop/resume, results, queueing, bad URLs."""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch

from pe_core.jobs import RUNNING, server_limiter
from tests.conftest import chart_figures, figure_titled, run_page

PAGE = "pages/training.py"
# a model small enough that a whole run takes a fraction of a second
TINY = {"L": "16", "dm": "32", "nh": "2", "nl": "1", "steps": "50", "x": ["1", "2"],
        "m": ["Direct extrapolation", "Position Interpolation"]}  # multiselects keep their labels in the URL


@pytest.fixture(autouse=True)
def small_cpu(monkeypatch):
    monkeypatch.setenv("PE_TRAIN_THREADS", "1")
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def wait_for_job(at, timeout: float = 60) -> None:
    job = at.session_state["tt_job"]
    assert job.wait(timeout), f"job still {job.state} after {timeout} s ({job.phase})"


def start_and_finish(query: dict):
    at = run_page(PAGE, query)
    button(at, "Start").click().run()
    wait_for_job(at)
    at.run()
    return at


def test_defaults_show_the_controls_and_no_run_yet():
    at = run_page(PAGE)
    assert not at.exception
    assert at.selectbox(key="enc").value == "rope"
    assert at.select_slider(key="L").value == 64 and at.select_slider(key="steps").value == 600
    assert not button(at, "Start").disabled and button(at, "Stop").disabled
    assert any("No run yet" in c.value for c in at.caption)
    (figure,) = chart_figures(at)  # before training: only what the model will see of position
    assert "Wavelength of each RoPE pair" in figure["layout"]["title"]["text"]
    inside, outside, at_l, at_longest = figure["data"]
    assert list(at_l["y"]) == [64, 64] and list(at_longest["y"]) == [512, 512]
    # head size 128/4 = 32: λ_i = 2π·10000^(2i/32); L = 64 splits the 16 pairs
    expected = [2 * math.pi * 10000 ** (2 * i / 32) for i in range(16)]
    assert list(inside["x"]) + list(outside["x"]) == list(range(16))
    assert list(inside["y"]) + list(outside["y"]) == pytest.approx(expected)
    assert max(inside["y"]) <= 64 < min(outside["y"])


def test_a_finished_run_shows_loss_curve_table_and_per_position_losses():
    at = start_and_finish(TINY)
    assert not at.exception
    experiment = at.session_state["tt_experiment"]
    assert experiment.run.step == 50

    loss = figure_titled(at, "Training loss")
    steps, losses = loss["data"][0]["x"], loss["data"][0]["y"]
    assert list(steps) == list(range(1, 51))
    assert list(losses) == pytest.approx([p.loss for p in experiment.run.history])
    assert losses[-1] < losses[0] - 0.5  # it learned

    table = figure_titled(at, "accuracy by length")["data"][0]
    assert table["cells"]["values"][0] == ["Direct extrapolation", "Position Interpolation"]
    direct_at_l, pi_at_l = table["cells"]["values"][1]
    assert direct_at_l == pi_at_l  # at the training length every method is plain RoPE
    assert direct_at_l == f"{experiment.evaluation.get('direct', 16).mean_accuracy:.2%}"

    positions = figure_titled(at, "Loss at each position")
    assert [t["name"] for t in positions["data"]] == ["Direct extrapolation", "Position Interpolation"]
    assert max(positions["data"][0]["x"]) == pytest.approx(31)  # L' = 2·16 positions, binned by 1
    expected = experiment.evaluation.get("pi", 32).loss
    assert list(positions["data"][1]["y"]) == pytest.approx(expected.tolist())
    assert any(b.label == "Fine-tune" for b in at.button)


def test_moving_a_slider_keeps_the_finished_run():
    at = start_and_finish(TINY)
    at.select_slider(key="dm").set_value(64).run()
    assert not at.exception
    assert any("settings in the sidebar have changed" in i.value for i in at.info)
    assert figure_titled(at, "Training loss")["data"][0]["x"][-1] == 50  # still the finished run


def test_stop_keeps_the_partial_run_and_resume_finishes_it():
    at = run_page(PAGE, {**TINY, "steps": "2000"})
    button(at, "Start").click().run()
    experiment = at.session_state["tt_experiment"]
    deadline = time.monotonic() + 30
    while len(experiment.run.history) < 3 and not at.session_state["tt_job"].finished and time.monotonic() < deadline:
        time.sleep(0.02)
    button(at, "Stop").click().run()
    wait_for_job(at)
    at.run()
    stopped_at = experiment.run.step
    assert 3 <= stopped_at < 2000
    assert any(f"stopped after {stopped_at} of 2000 steps" in i.value for i in at.info)
    assert len(figure_titled(at, "Training loss")["data"][0]["x"]) == stopped_at
    assert any(b.label == "Resume training" for b in at.button)

    button(at, "Evaluate as it is").click().run()
    wait_for_job(at)
    at.run()
    assert experiment.run.step == stopped_at  # evaluated without training further
    assert figure_titled(at, "accuracy by length")


def test_a_second_session_waits_in_line_with_a_clear_message():
    release = threading.Event()
    limiter = server_limiter()
    blockers = [limiter.submit("someone else", lambda job: release.wait(30)) for _ in range(limiter.max_running)]
    try:
        for blocker in blockers:
            while blocker.state != RUNNING:
                time.sleep(0.01)
        at = run_page(PAGE, TINY)
        button(at, "Start").click().run()
        assert any("queued (position 1)" in w.value for w in at.warning)
        assert at.session_state["tt_experiment"].run.step == 0
    finally:
        release.set()
    wait_for_job(at)
    assert at.session_state["tt_experiment"].run.step == 50


@pytest.mark.parametrize("query", [
    {"L": "256", "dm": "256", "nh": "8", "nl": "4", "steps": "2000", "x": ["1", "16"], "base": "1,000,000"},
    {"L": "16", "dm": "32", "nh": "1", "nl": "1", "steps": "20", "x": ["1"], "enc": "T5 relative bias"},
    {"L": "16", "dm": "32", "nh": "2", "nl": "1", "steps": "20", "base": "100", "enc": "Sinusoidal absolute"},
])
def test_extreme_settings_start_and_stop_cleanly(query):
    at = run_page(PAGE, query)
    assert not at.exception and not at.warning
    button(at, "Start").click().run()
    experiment = at.session_state["tt_experiment"]
    config = experiment.run.model_config
    assert (config.train_length, config.d_model, config.n_head, config.n_layer) == (
        int(query["L"]), int(query["dm"]), int(query["nh"]), int(query["nl"]))
    assert experiment.lengths == [int(query["L"]) * int(m) for m in query.get("x", (1, 2, 4, 8))]
    assert config.rope_base == float(query.get("base", "10000").replace(",", ""))
    deadline = time.monotonic() + 60
    while not experiment.run.history and not at.session_state["tt_job"].finished and time.monotonic() < deadline:
        time.sleep(0.02)
    button(at, "Stop").click().run()
    wait_for_job(at)
    at.run()
    assert not at.exception
    assert len(figure_titled(at, "Training loss")["data"][0]["y"]) == experiment.run.step >= 1


def test_bad_settings_and_garbage_urls_fall_back_with_a_note():
    at = run_page(PAGE, {"L": "banana", "dm": "-3", "enc": "xpos", "steps": "1e99", "x": ["zero"], "m": ["magic"]})
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    for label in ("Training length", "Width", "Position encoding", "Training steps"):
        assert label in warnings
    assert at.select_slider(key="L").value == 64 and at.selectbox(key="enc").value == "rope"



def test_fine_tuning_and_a_second_encoding_are_added_to_the_session():
    at = start_and_finish(TINY)
    at.select_slider(key="fts").set_value(10).run()
    button(at, "Fine-tune").click().run()
    wait_for_job(at)
    at.run()
    experiment = at.session_state["tt_experiment"]
    tune = experiment.fine_tunes[0]
    assert (tune.method, tune.length, tune.steps, len(tune.history)) == ("pi", 32, 10, 10)
    tuned = figure_titled(at, "Fine-tuning Position Interpolation at L' = 32")
    assert [t["name"] for t in tuned["data"]] == [
        "Position Interpolation, no fine-tuning", "Position Interpolation, after 10 fine-tuning steps at L'",
        "Direct extrapolation, no fine-tuning"]
    assert list(tuned["data"][1]["y"]) == pytest.approx(tune.after.loss.tolist())
    assert experiment.run.step == 50  # the trained model itself is untouched

    at.selectbox(key="enc").set_value("alibi").run()
    button(at, "Start").click().run()
    wait_for_job(at)
    at.run()
    assert not at.exception
    table = figure_titled(at, "accuracy by length")["data"][0]
    assert table["cells"]["values"][0] == ["As trained"]
    assert not any(b.label == "Fine-tune" for b in at.button)  # fine-tuning a scaling method needs RoPE
    every = figure_titled(at, "every run")
    names = [t["name"] for t in every["data"]]
    assert names == ["RoPE + Direct extrapolation (L=16, 50 steps)", "RoPE + Position Interpolation (L=16, 50 steps)",
                     "ALiBi (L=16, 50 steps)"]
    alibi = at.session_state["tt_experiment"].evaluation
    assert list(every["data"][2]["y"]) == pytest.approx([alibi.get("as_trained", n).mean_loss for n in (16, 32)])


def test_the_settings_line_counts_parameters_and_characters():
    from pe_core.model import ModelConfig, TinyTransformer

    at = run_page(PAGE, {"L": "32", "dm": "64", "nl": "3", "steps": "100"})
    built = TinyTransformer(ModelConfig(n_layer=3, d_model=64, train_length=32)).num_parameters()
    line = next(c.value for c in at.caption if c.value.startswith("This run"))
    assert f"{built:,} parameters" in line
    assert f"100 steps of 64 sequences × 32 characters = {100 * 64 * 32:,} characters" in line


@pytest.mark.parametrize("encoding, title", [("ALiBi", "ALiBi's penalty"), ("T5 relative bias", "T5's distance buckets"),
                                             ("Sinusoidal absolute", "Wavelength of each sin/cos pair")])
def test_each_encoding_shows_how_it_represents_position(encoding, title):
    at = run_page(PAGE, {"enc": encoding, "nh": "8", "L": "32"})
    assert not at.exception
    figure = figure_titled(at, title)
    if encoding == "ALiBi":
        assert len(figure["data"]) == 8
        # head h: slope 2^(-h) for 8 heads, drawn to the longest evaluation length 8·32
        assert [t["y"][1] for t in figure["data"]] == pytest.approx([-(2.0 ** -h) * 256 for h in range(1, 9)])
    elif encoding == "T5 relative bias":
        buckets = list(figure["data"][0]["y"])
        assert buckets[0] == 0 and buckets[15] == 15 and buckets[-1] == 31  # exact, then log, then shared
    else:
        wavelengths = list(figure["data"][0]["y"]) + list(figure["data"][1]["y"])
        assert wavelengths == pytest.approx([2 * math.pi * 10000 ** (2 * i / 128) for i in range(64)])
