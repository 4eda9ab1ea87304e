"""Corpus, trainer, evaluation, fine-tuning, CLI and the job limiter, all small enough for CI."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import zlib

import pytest
import torch

from pe_core import data
from pe_core.jobs import DONE, FAILED, QUEUED, RUNNING, STOPPED, JobLimiter, ServerBusy
from pe_core.model import ModelConfig
from pe_core.train import (
    AS_TRAINED,
    Evaluation,
    Experiment,
    FineTune,
    Progress,
    TrainConfig,
    TrainingRun,
    evaluate,
    fine_tune,
    main,
    summary_table,
)

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setenv("PE_TRAIN_THREADS", "1")


def tiny_run(position: str = "rope", steps: int = 30, **changes) -> TrainingRun:
    model = ModelConfig(n_layer=1, n_head=2, d_model=32, train_length=16, max_positions=128, position=position,
                        **changes)
    train = TrainConfig(steps=steps, batch_size=16, learning_rate=1e-2, warmup_steps=5, validate_every=10,
                        validation_windows=8)
    return TrainingRun(model, train, device="cpu")


# --- corpus -------------------------------------------------------------------------------------------


def test_encode_decode_round_trip_and_unknown_characters():
    text = "def f(x):\n    return x ** 2  # ok"
    assert data.decode(data.encode(text)) == text
    assert data.decode(data.encode("é\t")) == data.UNKNOWN * 2
    assert data.encode("A").item() == data.VOCABULARY.index("A")


def test_split_keeps_whole_modules_apart_and_drops_duplicates(tmp_path):
    validation_module = next(f"m{i}" for i in range(100) if zlib.crc32(f"m{i}".encode()) % 10 == 0)
    train_module = next(f"m{i}" for i in range(100) if zlib.crc32(f"m{i}".encode()) % 10 != 0)
    (tmp_path / f"{validation_module}.py").write_text(
        '"""Shared text."""\ndef f():\n    """Only in validation."""\n')
    (tmp_path / f"{train_module}.py").write_text(
        '"""Shared text."""\nclass C:\n    """Only in train."""\n')
    (tmp_path / "broken.py").write_text("def (:\n")  # unparsable files are skipped
    train, validation = data.split_documents(data.stdlib_documents(tmp_path))
    assert "Only in validation." in validation and "Only in validation." not in train
    assert "Only in train." in train
    assert (train + validation).count("Shared text.") == 1  # a duplicate docstring is kept once
    assert not set(train) & set(validation)


def test_stdlib_corpus_is_large_enough_and_beats_nothing_by_letter_frequencies():
    corpus = data.load_corpus()
    assert corpus.train.numel() > 300_000 and corpus.validation.numel() > 20_000
    assert corpus.train.max() < corpus.vocab_size and corpus.train.min() >= 0
    assert corpus.train_documents > 5 * corpus.validation_documents > 0
    baseline = data.unigram_baseline(corpus.train, corpus.validation)
    # letter frequencies carry information (below ln 97 = 4.57) but far from all of it
    assert 2.5 < baseline < 4.0


def test_windows_are_reproducible_slices_of_the_text():
    tokens = torch.arange(1000)
    first = data.random_windows(tokens, 16, 5, torch.Generator().manual_seed(3))
    second = data.random_windows(tokens, 16, 5, torch.Generator().manual_seed(3))
    assert first.equal(second) and first.shape == (5, 17)
    assert (first[:, 1:] - first[:, :-1] == 1).all()  # consecutive characters
    spaced = data.evenly_spaced_windows(tokens, 99, 4)
    assert spaced[:, 0].tolist() == [0, 300, 600, 900] and spaced[-1, -1] == 999
    with pytest.raises(ValueError, match="too few"):
        data.evenly_spaced_windows(tokens, 1000, 2)


# --- training -------------------------------------------------------------------------------------------


def test_training_reduces_the_loss_below_the_unigram_baseline():
    run = tiny_run(steps=60)
    start = run.validation_loss()
    records = list(run.steps())
    assert [r.step for r in records] == list(range(1, 61))
    assert all(isinstance(r, Progress) and r.tokens_per_s > 0 for r in records)
    validated = [r.validation_loss for r in records if r.validation_loss is not None]
    assert len(validated) == 6
    assert start > 4.0  # untrained: about ln 97
    assert validated[-1] < run.unigram_baseline() - 0.05 < start
    assert all(a.elapsed_s < b.elapsed_s for a, b in zip(records, records[1:], strict=False))
    assert run.tokens_per_s() == pytest.approx(60 * 16 * 16 / records[-1].elapsed_s)


def test_stopping_and_resuming_equals_an_uninterrupted_run():
    straight = tiny_run(steps=12)
    uninterrupted = [r.loss for r in straight.steps()]

    stopped = tiny_run(steps=12)
    partial = []
    for record in stopped.steps():
        partial.append(record.loss)
        if record.step == 5:
            break  # what the page's Stop does: leave the loop
    assert stopped.step == 5 and not stopped.done and len(stopped.history) == 5
    resumed = partial + [r.loss for r in stopped.steps()]
    assert stopped.done
    assert resumed == pytest.approx(uninterrupted, abs=1e-6)


def test_runs_with_the_same_seed_start_identical_and_leave_the_global_rng_alone():
    first = tiny_run()
    torch.rand(7)  # someone else draws random numbers in between
    state = torch.get_rng_state()
    second = tiny_run()
    assert torch.get_rng_state().equal(state)
    assert all(p.equal(q) for p, q in zip(first.model.parameters(), second.model.parameters(), strict=True))
    other_seed = TrainingRun(first.model_config, TrainConfig(seed=1), device="cpu")
    assert not first.model.token_embedding.weight.equal(other_seed.model.token_embedding.weight)


def test_learning_rate_warms_up_then_decays_to_its_floor():
    config = TrainConfig(steps=100, learning_rate=1.0, warmup_steps=10, min_learning_rate_fraction=0.1)
    rates = [config.learning_rate_at(s) for s in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[9:], rates[10:], strict=False))
    assert config.learning_rate_at(100) == pytest.approx(0.1)


# --- evaluation -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_rope():
    run = tiny_run(steps=40)
    for _ in run.steps():
        pass
    return run


def test_every_method_is_plain_rope_at_the_training_length(trained_rope):
    methods = ("direct", "pi", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3")
    evaluation = evaluate(trained_rope.model, trained_rope.corpus, [16], methods, tokens_per_length=256)
    reference = evaluation.get("direct", 16)
    assert reference.loss.shape == (16,) and ((reference.accuracy >= 0) & (reference.accuracy <= 1)).all()
    for method in methods:
        assert evaluation.get(method, 16).loss.allclose(reference.loss, atol=1e-5), method


def test_scaling_methods_differ_past_the_training_length(trained_rope):
    evaluation = evaluate(trained_rope.model, trained_rope.corpus, [64], ("direct", "pi", "dynamic", "yarn"),
                          tokens_per_length=512)
    direct, pi, dynamic = (evaluation.get(m, 64) for m in ("direct", "pi", "dynamic"))
    assert direct.loss.shape == (64,)
    assert not pi.loss.allclose(direct.loss, atol=1e-3)
    # dynamic NTK, scored as during generation: the first L positions see plain RoPE
    assert dynamic.loss[:16].allclose(direct.loss[:16], atol=1e-5)
    assert not dynamic.loss[16:].allclose(direct.loss[16:], atol=1e-3)
    assert trained_rope.model.rope_spec == trained_rope.model_config.default_rope()  # restored afterwards


def test_other_encodings_are_evaluated_as_trained_and_stop_early():
    run = tiny_run("alibi", steps=2)
    list(run.steps())
    seen = []
    evaluation = evaluate(run.model, run.corpus, [16, 32, 64], ("pi", "yarn"), tokens_per_length=128,
                          on_result=lambda result: seen.append(result.length) or len(seen) == 2)
    assert evaluation.methods == [AS_TRAINED] and evaluation.lengths == [16, 32]


def test_summary_table_reads_like_sus_table():
    evaluation = Evaluation(16)
    for method, accuracies in (("direct", (0.5, 0.25)), ("ntk", (0.5, 0.4))):
        for length, accuracy in zip((16, 128), accuracies, strict=True):
            from pe_core.train import LengthResult

            evaluation.results.append(LengthResult(method, length, torch.zeros(length),
                                                   torch.full((length,), accuracy), 0.0))
    header, rows = summary_table(evaluation)
    assert header == ["Method", "16 (trained)", "128 (8×)"]
    assert rows == [["Direct extrapolation", "50.00%", "25.00%"], ["NTK-aware", "50.00%", "40.00%"]]


def test_fine_tuning_trains_a_copy_at_the_longer_length(trained_rope):
    original = [p.detach().clone() for p in trained_rope.model.parameters()]
    items = list(fine_tune(trained_rope, "pi", 4, 6, tokens_per_length=256))
    progress, result = items[:-1], items[-1]
    assert [p.step for p in progress] == list(range(1, 7)) and isinstance(result, FineTune)
    assert result.length == 64 and result.before.loss.shape == result.after.loss.shape == (64,)
    assert result.model.rope_spec.rope_type == "linear" and result.model.rope_spec.factor == 4
    assert all(p.equal(q) for p, q in zip(original, trained_rope.model.parameters(), strict=True))
    assert not result.after.loss.allclose(result.before.loss, atol=1e-4)
    with pytest.raises(ValueError, match="RoPE model"):
        next(fine_tune(tiny_run("alibi"), "pi", 2, 1))


# --- the experiment as the page runs it -----------------------------------------------------------------


class FakeJob:
    def __init__(self, stop_after: int | None = None):
        self.reports, self.phases, self.stop_after = [], [], stop_after

    def should_stop(self) -> bool:
        return self.stop_after is not None and len(self.reports) >= self.stop_after

    def report(self, item=None, *, phase=None, fraction=None):
        if item is not None:
            self.reports.append(item)
        if phase:
            self.phases.append(phase)


def test_experiment_stop_keeps_the_partial_run_and_resume_finishes_it():
    experiment = Experiment(tiny_run(steps=10), multiples=(2, 1), methods=("direct", "ntk"), tokens_per_length=128)
    job = FakeJob(stop_after=4)
    experiment.train_work(job)
    assert experiment.run.step == 4 and experiment.evaluation is None
    assert "stopped after 4 of 10 steps" in job.phases
    experiment.train_work(FakeJob())
    assert experiment.run.step == 10 and len(experiment.run.history) == 10
    assert experiment.lengths == [16, 32]
    assert sorted((r.method, r.length) for r in experiment.evaluation.results) == [
        ("direct", 16), ("direct", 32), ("ntk", 16), ("ntk", 32)]


def test_a_stopped_evaluation_keeps_what_it_measured():
    experiment = Experiment(tiny_run(steps=2), multiples=(1, 2), methods=("direct", "pi"), tokens_per_length=64)
    list(experiment.run.steps())

    class StopAfterFirstResult(FakeJob):
        def should_stop(self) -> bool:
            return any(phase.startswith("evaluated") for phase in self.phases)

    experiment.evaluate_work(StopAfterFirstResult())
    assert [(r.method, r.length) for r in experiment.evaluation.results] == [("direct", 16)]
    assert experiment.run.model.rope_spec == experiment.run.model_config.default_rope()


# --- CLI -------------------------------------------------------------------------------------------------

TINY_CLI = ["--steps", "3", "--train-length", "16", "--width", "32", "--layers", "1", "--heads", "2",
            "--multiples", "1", "2", "--eval-tokens", "128", "--quiet"]


def test_cli_writes_json_with_config_curve_and_results(tmp_path):
    out = tmp_path / "run.json"
    main(TINY_CLI + ["--encodings", "rope", "alibi", "--methods", "direct", "pi", "--fine-tune", "pi",
                     "--fine-tune-steps", "2", "--out", str(out)])
    report = json.loads(out.read_text())
    rope, alibi = report["runs"]
    assert rope["model_config"]["position"] == "rope" and alibi["model_config"]["position"] == "alibi"
    assert [p["step"] for p in rope["loss_curve"]] == [1, 2, 3]
    assert rope["evaluation"]["lengths"] == [16, 32] and rope["evaluation"]["methods"] == ["direct", "pi"]
    entry = next(e for e in rope["evaluation"]["per_position"] if e["method"] == "pi" and e["length"] == 32)
    assert len(entry["loss"]) == 32 and entry["mean_loss"] == pytest.approx(sum(entry["loss"]) / 32, abs=1e-3)
    assert alibi["evaluation"]["methods"] == [AS_TRAINED] and alibi["fine_tunes"] == []
    assert rope["fine_tunes"][0]["method"] == "pi" and len(rope["fine_tunes"][0]["loss_curve"]) == 2
    assert rope["corpus"]["sha256"] == alibi["corpus"]["sha256"]


def test_cli_is_a_runnable_module():
    completed = subprocess.run([sys.executable, "-m", "pe_core.train", "--help"], cwd=ROOT, check=True, timeout=120,
                               capture_output=True, text=True)
    assert "--encodings" in completed.stdout and "--fine-tune" in completed.stdout


# --- job limiter -------------------------------------------------------------------------------------------


def test_limiter_runs_one_job_at_a_time_in_order_and_refuses_when_full():
    limiter = JobLimiter(max_running=1, max_waiting=1)
    release = threading.Event()
    order = []
    first = limiter.submit("first", lambda job: (order.append("first"), release.wait(5)))
    while first.state != RUNNING:
        time.sleep(0.01)
    second = limiter.submit("second", lambda job: order.append("second") or "result")
    assert second.state == QUEUED and second.queue_position() == 1
    with pytest.raises(ServerBusy, match="busy"):
        limiter.submit("third", lambda job: None)
    assert limiter.load() == (1, 1)
    release.set()
    assert second.wait(5) and first.wait(5)
    assert order == ["first", "second"] and second.state == DONE and second.result == "result"
    assert limiter.load() == (0, 0)


def test_stopping_a_queued_job_means_it_never_runs_and_failures_are_reported():
    limiter = JobLimiter(max_running=1, max_waiting=4)
    release = threading.Event()
    blocker = limiter.submit("blocker", lambda job: release.wait(5))
    ran = []
    queued = limiter.submit("queued", lambda job: ran.append(True))
    queued.stop()
    assert queued.wait(5) and queued.state == STOPPED and not ran
    release.set()
    blocker.wait(5)
    failing = limiter.submit("failing", lambda job: 1 / 0)
    assert failing.wait(5) and failing.state == FAILED and "ZeroDivisionError" in failing.error


def test_a_running_job_stops_when_asked_and_keeps_its_reports():
    limiter = JobLimiter()

    def work(job):
        for step in range(1000):
            job.report(step, phase="counting", fraction=step / 1000)
            if job.should_stop():
                return step
            time.sleep(0.002)

    job = limiter.submit("count", work)
    while len(job.reports()) < 5:
        time.sleep(0.005)
    job.stop()
    assert job.wait(5) and job.state == STOPPED
    assert 5 <= job.result < 999 and job.reports()[: job.result + 1] == list(range(job.result + 1))


# --- figures of the page (pure functions) ------------------------------------------------------------------


def test_binning_averages_consecutive_positions_and_keeps_the_tail():
    from figures.training import binned

    centres, means = binned(torch.arange(10, dtype=torch.float64), bins=4)  # width 3: [0,1,2] [3,4,5] [6,7,8] [9]
    assert centres == [1.0, 4.0, 7.0, 9.0] and means == [1.0, 4.0, 7.0, 9.0]
    centres, means = binned([2.0, 4.0], bins=128)
    assert centres == [0.0, 1.0] and means == [2.0, 4.0]


def test_export_builds_every_figure_of_the_page_from_a_real_run():
    from figures.training import export_figures

    figures = export_figures(steps=4, width=32, heads=2, layers=1, train_length=16, multiples=(1, 2),
                             methods=("direct", "pi"), fine_tune=("pi",), fine_tune_steps=2)
    assert sorted(figures) == ["fine_tune_pi", "loss", "per_length", "per_position", "position", "table"]
    assert len(figures["position"].data[0].x) + len(figures["position"].data[1].x) == 8  # 16/2 = 8 RoPE pairs
    assert all(f.layout.title.text for f in figures.values())
    assert list(figures["loss"].data[0].x) == [1, 2, 3, 4]
    assert [t.name for t in figures["per_position"].data] == ["Direct extrapolation", "Position Interpolation"]
    assert len(figures["per_position"].data[0].y) == 32  # L' = 32 positions, ≤ 128 bins: one per position
    assert list(figures["per_length"].data[1].x) == [1, 2]
    with pytest.raises(ValueError, match="head_dim"):
        export_figures(head_dim=64)
