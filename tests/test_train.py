"""Corpus, the training loop, evaluation, the experiment, the CLI, the job limiter and the service: all tiny."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
import torch

from i18n import use_language
from pe_core import data
from pe_core.device import shown_device_label, stored_device_label
from pe_core.jobs import DONE, FAILED, QUEUED, RUNNING, STOPPED, JobLimiter, ServerBusy
from pe_core.methods import METHODS
from pe_core.model import ModelConfig
from pe_core.train import (
    AS_TRAINED,
    FINE_TUNING,
    INFERENCE_METHODS,
    RESULTS_VERSION,
    SCHEMA_VERSION,
    TRAINING,
    ExperimentConfig,
    ExperimentRun,
    Grid,
    Progress,
    RecordError,
    RunRecord,
    TrainConfig,
    TrainingRun,
    evaluate,
    main,
    open_store,
    run_experiment,
)
from pe_core.train.__main__ import _parser as _cli_parser
from pe_core.train.config import FINE_TUNABLE
from pe_core.train.evaluate import evaluation_key, method_spec
from pe_core.train.experiment import fine_tune_checkpoints
from pe_core.train.loop import PRECISIONS, counting_saved_tensors
from pe_core.train.published import SU_TABLE
from pe_core.train.schema import MEMORY_COUNTED
from pe_core.train.service import TrainingService
from pe_core.train.spectrum import matched_ramp
from pe_core.train.store import CANCELLED

ROOT = Path(__file__).resolve().parent.parent

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


def tiny_config(**changes) -> ExperimentConfig:
    values = dict(d_model=32, n_head=2, head_size=16, n_layer=1, train_length=16, steps=6, multiples=(1, 2), eval_tokens=128,
                  fine_tune=("pi",), fine_tune_steps=2, methods=("direct", "pi", "dynamic"))
    return ExperimentConfig(**{**values, **changes})


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


# --- the training loop ----------------------------------------------------------------------------------


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


def test_a_run_computes_the_same_numbers_on_one_core_or_two(monkeypatch):
    runs = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("PE_TRAIN_THREADS", threads)
        run = tiny_run(steps=8)
        runs[threads] = ([r.loss for r in run.steps()], [p.detach().clone() for p in run.model.parameters()])
    assert runs["1"][0] == runs["2"][0]  # bit for bit: the parts run side by side on two cores
    assert all(a.equal(b) for a, b in zip(runs["1"][1], runs["2"][1], strict=True))


def test_a_record_names_the_cores_its_batch_parts_ran_on_in_english_whoever_trained_it(monkeypatch):
    monkeypatch.setenv("PE_TRAIN_THREADS", "2")
    with use_language("zh"):  # a reader of Chinese pressed Train: the record is data, kept in English
        record = run_experiment(tiny_config(fine_tune=(), multiples=(1,)), device="cpu")
    assert record.device == "CPU (2 threads)"
    with use_language("zh"):
        assert shown_device_label(record.device) == "CPU（2 个线程）"
    assert shown_device_label(record.device) == "CPU (2 threads)"


@pytest.mark.parametrize(("stored", "chinese"), [
    ("CPU (1 thread)", "CPU（1 个线程）"),
    ("CPU (2 threads), bf16 autocast", "CPU（2 个线程），bf16 autocast"),
    ("MPS (Apple GPU)", "MPS（Apple GPU）"),
    ("CUDA (NVIDIA H100 80GB HBM3), bf16 autocast", "CUDA (NVIDIA H100 80GB HBM3)，bf16 autocast"),
    ("CUDA (NVIDIA H200), TF32 matmuls", "CUDA (NVIDIA H200)，TF32 矩阵乘法"),
    ("CPU (2 threads), TF32 matmuls", "CPU（2 个线程），TF32 矩阵乘法"),
])
def test_a_stored_device_label_reads_in_the_readers_language(stored, chinese):
    with use_language("zh"):
        assert shown_device_label(stored) == chinese
    assert shown_device_label(stored) == stored
    device = torch.device(stored.split(" ")[0].lower())
    if device.type == "cpu":  # what a record keeps, from the device itself
        threads = int(stored.split("(")[1].split(" ")[0])
        with use_language("zh"):
            note = stored[stored.index(")") + 1:]
            assert stored_device_label(device, threads, note=note) == stored


def test_a_step_in_parts_has_the_whole_batchs_loss_and_gradient():
    run = tiny_run(steps=1)
    batch = data.random_windows(run.corpus.train, run.length, 6, torch.Generator().manual_seed(3))
    whole = run._part_loss(run.model, batch, 1.0)
    expected = torch.autograd.grad(whole, list(run.model.parameters()), allow_unused=True)
    run.model.zero_grad(set_to_none=True)
    loss = run._gradients(batch)
    assert [len(part) for part, _ in run._parts(batch)] == [3, 3]
    assert float(loss) == pytest.approx(float(whole.detach()), rel=1e-6)
    for parameter, gradient in zip(run.model.parameters(), expected, strict=True):
        if gradient is None:
            assert parameter.grad is None
        else:
            torch.testing.assert_close(parameter.grad, gradient, rtol=1e-5, atol=1e-7)
    # a batch of one sequence is one part; uneven batches weigh each part by its rows
    assert [(len(p), w) for p, w in run._parts(batch[:1])] == [(1, 1.0)]
    assert [(len(p), w) for p, w in run._parts(batch[:5])] == [(3, 0.6), (2, 0.4)]


def test_the_counted_first_step_counts_both_parts_and_the_copys_state():
    run = tiny_run(steps=2)
    list(run.steps())
    weights = sum(p.numel() * p.element_size() for p in run.model.parameters())
    assert run.memory.state_bytes == 6 * weights  # weights, gradients, two moments; the copy's weights, gradients
    half = tiny_run(steps=1)
    half.train_config = dataclasses.replace(half.train_config, batch_size=8)
    list(half.steps())
    assert run.memory.activation_bytes == pytest.approx(2 * half.memory.activation_bytes, rel=0.05)


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


def test_one_registry_names_every_method_the_cli_and_the_fine_tunes_offer():
    assert set(METHODS) < set(INFERENCE_METHODS)  # every scaling method, plus the inference-time tricks
    assert {"direct_logn", "pi_logn", "ntk_logn", "rerope", "rerope_logn", "leaky_rerope"} <= set(INFERENCE_METHODS)
    choices = next(a.choices for a in _cli_parser()._actions if a.dest == "methods")
    assert tuple(choices) == tuple(INFERENCE_METHODS)
    assert "dynamic" not in FINE_TUNABLE and "drope" in FINE_TUNABLE
    assert not {m for m in FINE_TUNABLE if m != "drope" and INFERENCE_METHODS[m].window}
    assert {"pi", "ntk", "yarn"} <= set(FINE_TUNABLE) and "ntk_logn" not in FINE_TUNABLE
    assert {row.method for row in SU_TABLE} <= set(ExperimentConfig().methods)  # the default runs Su's rows


def test_log_n_and_rerope_change_only_what_they_should(trained_rope):
    model = trained_rope.model
    evaluation = evaluate(model, trained_rope.corpus, [16, 64], ("direct", "direct_logn", "rerope", "leaky_rerope"),
                          tokens_per_length=512)
    direct, logn = evaluation.get("direct", 16), evaluation.get("direct_logn", 16)
    assert logn.loss.equal(direct.loss)  # n ≤ L: the factor is exactly 1
    assert not evaluation.get("rerope", 16).loss.equal(direct.loss)  # w = L/2 < L: rectified already at L
    for method in ("direct_logn", "rerope", "leaky_rerope"):  # past L every trick changes the losses
        assert not evaluation.get(method, 64).loss.allclose(evaluation.get("direct", 64).loss, atol=1e-4), method
    assert model.rotary.window is None and not model.rotary.logn  # the model is left as trained
    # evaluations that are the same bit for bit share a key (and an experiment runs them once)
    assert evaluation_key(model, "pi", 16) == evaluation_key(model, "direct", 16) == evaluation_key(
        model, "ntk_logn", 16) == evaluation_key(model, "dynamic", 16)
    assert evaluation_key(model, "pi", 64) != evaluation_key(model, "direct", 64)
    assert evaluation_key(model, "direct_logn", 64) != evaluation_key(model, "direct", 64)
    assert evaluation_key(model, "rerope", 16) != evaluation_key(model, "direct", 16)


def test_saved_tensors_are_counted_once_per_storage_and_parameters_are_left_out():
    layer = torch.nn.Linear(10, 10, bias=False)
    x = torch.randn(100, 10, requires_grad=True)
    counted: dict[int, int] = {}
    with counting_saved_tensors(layer, counted):
        y = layer(x).exp()  # the linear saves its input x (its weight is a parameter); exp saves its output
        (y * 1.0).sum().backward()
    assert sorted(counted.values()) == [4000, 4000]


def test_other_encodings_are_evaluated_as_trained_and_stop_early():
    run = tiny_run("alibi", steps=2)
    list(run.steps())
    seen = []
    evaluation = evaluate(run.model, run.corpus, [16, 32, 64], ("pi", "yarn"), tokens_per_length=128,
                          on_result=lambda result: seen.append(result.length) or len(seen) == 2)
    assert [(r.method, r.length) for r in evaluation.results] == [(AS_TRAINED, 16), (AS_TRAINED, 32)]


def test_fine_tuning_is_the_same_loop_from_a_copy_at_the_longer_length(trained_rope):
    original = [p.detach().clone() for p in trained_rope.model.parameters()]
    spec = method_spec(trained_rope.model, "pi", 64)
    tune = TrainingRun.fine_tune_of(trained_rope, spec, 64, 6, learning_rate=1e-3)
    records = list(tune.steps())
    assert [p.step for p in records] == list(range(1, 7)) and tune.length == 64
    assert tune.train_config.batch_size * 64 == trained_rope.train_config.batch_size * 16  # same characters a step
    assert tune.model.rope_spec.rope_type == "linear" and tune.model.rope_spec.factor == 4
    assert all(p.equal(q) for p, q in zip(original, trained_rope.model.parameters(), strict=True))
    assert trained_rope.model.rope_spec == trained_rope.model_config.default_rope()


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


def test_binning_averages_consecutive_positions_and_keeps_the_tail():
    from figures.training import binned

    centres, means = binned(torch.arange(10, dtype=torch.float64), bins=4)  # width 3: [0,1,2] [3,4,5] [6,7,8] [9]
    assert centres == [1.0, 4.0, 7.0, 9.0] and means == [1.0, 4.0, 7.0, 9.0]
    centres, means = binned([2.0, 4.0], bins=128)
    assert centres == [0.0, 1.0] and means == [2.0, 4.0]




def test_coalescing_and_queue_estimates():
    limiter = JobLimiter(max_running=1, max_waiting=4)
    release = threading.Event()
    first = limiter.submit("first", lambda job: release.wait(5), key="a", estimate_s=10.0)
    while first.state != RUNNING:
        time.sleep(0.01)
    again = limiter.submit("first again", lambda job: None, key="a")
    assert again is first and first.requests == 2
    second = limiter.submit("second", lambda job: "b", key="b", estimate_s=4.0)
    third = limiter.submit("third", lambda job: "c", key="c", estimate_s=2.0)
    assert (second.queue_position(), third.queue_position()) == (1, 2)
    # the running job should need about 10 s more; the second waits for it, the third for both
    assert second.wait_s() == pytest.approx(10.0, abs=0.5) and third.wait_s() == pytest.approx(14.0, abs=0.5)
    unknown = limiter.submit("unknown", lambda job: None, key="d")
    assert unknown.wait_s() is not None and limiter.submit("after", lambda job: None, key="e").wait_s() is None
    assert not first.withdraw() and not first.should_stop()  # another requester still wants it
    assert first.withdraw() and first.should_stop()
    release.set()
    assert third.wait(5) and third.result == "c"


# --- the experiment as data -------------------------------------------------------------------------------


def test_the_hash_ignores_what_does_not_apply_and_the_order_of_choices():
    rope = tiny_config()
    assert rope.hash == tiny_config(methods=("dynamic", "pi", "direct", "pi")).hash
    assert rope.hash != tiny_config(rope_base=100.0).hash != tiny_config(seed=1).hash
    alibi = tiny_config(encoding="alibi")
    assert alibi.hash == tiny_config(encoding="alibi", rope_base=7.0, methods=("yarn",), fine_tune=()).hash
    assert alibi.evaluated_methods == (AS_TRAINED,) and alibi.fine_tuned_methods == ()
    # the family is what the seed table compares: other encodings and seeds, same model and lengths
    assert rope.family == alibi.family == tiny_config(seed=3, rope_base=1e4).family != tiny_config(steps=7).family
    assert ExperimentConfig.from_json(json.loads(json.dumps(rope.to_json()))) == rope
    assert tiny_config(multiples=(4, 2)).multiples == (1, 2, 4)  # L itself is always measured


def test_changing_a_default_never_renames_the_runs_it_does_not_apply_to():
    @dataclasses.dataclass(frozen=True)
    class LongerFineTunes(ExperimentConfig):  # as if a later version fine-tuned longer by default
        fine_tune_steps: int = 999
        rope_pairing: str = "interleaved"

    assert LongerFineTunes(encoding="alibi").hash == ExperimentConfig(encoding="alibi").hash
    assert LongerFineTunes(fine_tune=()).hash == ExperimentConfig(fine_tune=(), rope_pairing="interleaved").hash
    assert LongerFineTunes().hash != ExperimentConfig(rope_pairing="interleaved").hash  # where they apply, they count


def test_runs_stored_before_the_weight_decay_knob_read_as_trained_and_keep_their_hash():
    legacy = tiny_config(weight_decay=0.1, yarn_ramp="paper")  # what every run used before the knobs existed
    saved = legacy.to_json()
    del saved["weight_decay"], saved["yarn_ramp"]
    del saved["copy_fraction"], saved["retrieval"]  # later knobs, at their legacy values
    assert ExperimentConfig.from_json(saved) == legacy
    identity = {"results_version": RESULTS_VERSION, **saved}  # the hash as computed before the knob
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    assert legacy.hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert tiny_config().weight_decay == 0.0 and tiny_config().hash != legacy.hash
    assert legacy.family != tiny_config().family  # another training recipe: another seed table
    for config in (legacy, tiny_config()):
        run = TrainingRun(config.model_config(), config.train_config(), device="cpu")
        tune = TrainingRun.fine_tune_of(run, method_spec(run.model, "pi", 32), 32, 2, learning_rate=1e-3)
        for trainer in (run, tune):  # a fine-tune keeps pre-training's recipe
            decayed, plain = trainer.optimiser.param_groups
            assert (decayed["weight_decay"], plain["weight_decay"]) == (config.weight_decay, 0.0)


def test_runs_stored_before_the_yarn_ramp_knob_read_as_the_papers_and_keep_their_hash():
    legacy = tiny_config(methods=("direct", "yarn"), yarn_ramp="paper")  # what YaRN used before the knob
    saved = legacy.to_json()
    del saved["yarn_ramp"]
    del saved["copy_fraction"], saved["retrieval"]  # later knobs, at their legacy values
    assert ExperimentConfig.from_json(saved) == legacy
    identity = {"results_version": RESULTS_VERSION, **saved}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    assert legacy.hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    matched = tiny_config(methods=("direct", "yarn"))
    assert matched.yarn_ramp == "matched" and matched.hash != legacy.hash
    assert matched.family == legacy.family  # the same training: one seed table, whose YaRN rows pick their runs
    # where no method reads the ramp, or the encoding has none, the knob does not rename the run
    assert tiny_config().hash == tiny_config(yarn_ramp="paper").hash
    assert tiny_config(encoding="alibi").hash == tiny_config(encoding="alibi", yarn_ramp="paper").hash
    assert tiny_config(fine_tune=("yarn",)).uses_ramp and not tiny_config().uses_ramp


def test_the_yarn_ramp_reaches_the_models_yarn_and_ntk_by_parts():
    config = tiny_config(methods=("yarn", "ntk_by_parts"))
    beta, alpha = matched_ramp(config.rope_base, config.train_length)
    assert config.model_config().yarn_ramp == (beta, alpha)
    assert config.replace(yarn_ramp="paper").model_config().yarn_ramp == (32.0, 1.0)
    run = TrainingRun(config.model_config(), config.train_config(), device="cpu")
    for method in ("yarn", "ntk_by_parts"):
        spec = method_spec(run.model, method, 4 * config.train_length)
        assert (spec.beta_fast, spec.beta_slow) == (beta, alpha)
    paper = TrainingRun(config.replace(yarn_ramp="paper").model_config(), config.train_config(), device="cpu")
    assert evaluation_key(run.model, "yarn", 64) != evaluation_key(paper.model, "yarn", 64)
    assert evaluation_key(run.model, "pi", 64) == evaluation_key(paper.model, "pi", 64)


def test_the_seed_table_takes_yarn_rows_from_runs_with_the_same_ramp():
    from pe_core.train.store import ResultRow
    from pe_core.train.summary import seed_stats

    config = tiny_config(methods=("direct", "yarn"))
    rows = [ResultRow(f"h{ramp}", "rope", 0, {**config.to_json(), "yarn_ramp": ramp}, "yarn", 32, False, accuracy, 1.0)
            for ramp, accuracy in (("matched", 0.5), ("paper", 0.25))]
    legacy = dict(rows[1].config)
    del legacy["yarn_ramp"]  # stored before the knob: the paper's
    rows.append(rows[1]._replace(hash="old", seed=1, config=legacy, accuracy=0.75))
    (matched,) = seed_stats(rows, config)
    assert (matched.mean, matched.seeds) == (0.5, (0,))
    (paper,) = seed_stats(rows, config.replace(yarn_ramp="paper"))
    assert (paper.mean, paper.seeds) == (0.5, (0, 1))


@pytest.mark.parametrize("changes, message", [
    ({"yarn_ramp": "tuned"}, "yarn_ramp must be one of"),
    ({"weight_decay": -0.1}, "weight_decay"),
    ({"encoding": "xpos"}, "encoding must be one of"),
    ({"methods": ("magic",)}, "Unknown method"),
    ({"fine_tune": ("dynamic",)}, "Fine-tune with one of"),
    ({"head_size": 15}, "must be even"),
    ({"steps": 0}, "positive"),
])
def test_bad_experiments_are_explained(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**changes)


def test_the_default_grid_is_every_encoding_times_five_seeds_rope_first():
    configs = Grid().configs()
    assert len(configs) == 8 * 5 == len({c.hash for c in configs})
    assert configs[0] == ExperimentConfig()
    assert {c.seed for c in configs} == {0, 1, 2, 3, 4} and len({c.family for c in configs}) == 1


def test_an_experiment_stopped_anywhere_resumes_to_the_same_record():
    config = tiny_config()
    straight = run_experiment(config, device="cpu")
    assert [(r.method, r.length) for r in straight.results] == [
        ("direct", 16), ("pi", 16), ("dynamic", 16), ("direct", 32), ("pi", 32), ("dynamic", 32)]
    assert [f.method for f in straight.fine_tunes] == ["pi"] and len(straight.fine_tunes[0].loss_curve) == 2
    assert straight.fine_tunes[0].before == straight.result("pi", 32)
    assert straight.device == "CPU (1 thread)"  # the fixture's PE_TRAIN_THREADS=1
    assert [c.step for c in straight.fine_tunes[0].curve] == [0, *fine_tune_checkpoints(2), 2] == [0, 1, 2]
    assert straight.fine_tunes[0].curve[-1].accuracy == straight.fine_tunes[0].after.mean_accuracy
    assert straight.result("pi", 16).loss == straight.result("direct", 16).loss  # s = 1: evaluated once
    cost = straight.cost
    assert cost.tokens_per_s > 0 and cost.memory_measure == MEMORY_COUNTED
    # float32 weights, gradients, two AdamW moments, and the weights and gradients of the copy that computes
    # the other half of each batch
    assert cost.state_bytes == 4 * (4 + 2) * straight.parameters
    assert cost.memory_bytes == cost.activation_bytes + cost.state_bytes and cost.activation_bytes > 0

    experiment = ExperimentRun(config, device="cpu")
    phases = []
    for stop_after in (3, 5, 3, 10**6):  # stop in training, in evaluation, in fine-tuning; then finish
        for count, status in enumerate(experiment.work(), 1):
            phases.append(status.phase)
            if count == stop_after:
                break
    assert experiment.done and phases.count(TRAINING) == 6 and FINE_TUNING in phases
    fractions = [experiment.fraction()]
    assert fractions == [1.0]
    resumed = experiment.record()
    assert resumed.results == straight.results and resumed.fine_tunes == straight.fine_tunes
    assert [p.loss for p in resumed.loss_curve] == [p.loss for p in straight.loss_curve]
    assert RunRecord.from_json(json.loads(json.dumps(resumed.to_json()))) == resumed
    with pytest.raises(ValueError, match="not finished"):
        ExperimentRun(config, device="cpu").record()


def test_fine_tunes_are_measured_at_an_eighth_and_each_quarter():
    assert fine_tune_checkpoints(100) == (12, 25, 50, 75) and fine_tune_checkpoints(200) == (25, 50, 100, 150)
    assert fine_tune_checkpoints(1) == ()


def test_a_schema_1_record_is_migrated_and_other_schemas_are_refused():
    record = run_experiment(tiny_config(steps=2, fine_tune_steps=4), device="cpu")
    old = record.to_json() | {"schema_version": 1}
    del old["cost"]
    for tune in old["fine_tunes"]:
        del tune["curve"]
    migrated = RunRecord.from_json(old)
    assert migrated.cost is None and migrated.results == record.results  # "not measured", never guessed
    (tune,) = migrated.fine_tunes
    assert [(c.step, c.accuracy) for c in tune.curve] == [(0, tune.before.mean_accuracy),
                                                        (4, tune.after.mean_accuracy)]
    assert migrated.hash == record.hash and SCHEMA_VERSION == 2
    for version in (None, 0, 3, "2"):
        with pytest.raises(RecordError, match="record schema"):
            RunRecord.from_json(record.to_json() | {"schema_version": version})


def test_su_rows_trained_with_log_n_are_the_ones_whose_accuracy_at_512_differs():
    trained = {row.at_train for row in SU_TABLE if row.trained_logn}
    plain = {row.at_train for row in SU_TABLE if not row.trained_logn}
    assert trained == {49.40} and plain == {49.41}  # what the page's caption says about Su's log n rows
    by_label = {row.label: row for row in SU_TABLE}
    assert (by_label["Baseline"].at_test, by_label["PI-RoPE"].at_test, by_label["NTK-RoPE"].at_test) == (
        23.16, 13.54, 39.27)


# --- the CLI -------------------------------------------------------------------------------------------------

TINY_CLI = ["--steps", "3", "--train-length", "16", "--d-model", "32", "--n-layer", "1", "--n-head", "2", "--head-size", "16",
            "--multiples", "1", "2", "--eval-tokens", "128", "--fine-tune-steps", "2", "--quiet"]


def test_cli_trains_stores_and_a_rerun_is_a_lookup(tmp_path, capsys):
    store, out = tmp_path / "runs.sqlite3", tmp_path / "run.json"
    started = time.perf_counter()
    report = main(TINY_CLI + ["--encoding", "rope", "alibi", "--methods", "direct", "pi", "--fine-tune", "pi",
                              "--store", str(store), "--out", str(out)])
    first_time = time.perf_counter() - started
    rope, alibi = json.loads(out.read_text())["runs"]
    assert rope == report["runs"][0]
    assert rope["config"]["encoding"] == "rope" and alibi["config"]["encoding"] == "alibi"
    assert [p[0] for p in rope["loss_curve"]] == [1, 2, 3]
    assert {(r["method"], r["length"]) for r in rope["results"]} == {("direct", 16), ("pi", 16), ("direct", 32),
                                                                      ("pi", 32)}
    assert {r["method"] for r in alibi["results"]} == {AS_TRAINED} and alibi["fine_tunes"] == []
    assert rope["fine_tunes"][0]["method"] == "pi" and len(rope["fine_tunes"][0]["after"]["loss"]) == 32
    with open_store(str(store)) as opened:
        assert opened.count() == 2 and opened.get(rope["hash"]).to_json() == rope

    started = time.perf_counter()
    again = main(TINY_CLI + ["--encoding", "rope", "alibi", "--methods", "direct", "pi", "--fine-tune", "pi",
                             "--store", str(store)])
    assert again == report and time.perf_counter() - started < min(2.0, first_time)


def test_cli_prepare_fills_the_store_and_table_summarises_it(tmp_path, capsys):
    store = str(tmp_path / "runs.sqlite3")
    main(TINY_CLI + ["--prepare", "--encoding", "rope", "alibi", "--seed", "0", "1", "--methods", "direct", "pi",
                     "--fine-tune", "--store", store])
    with open_store(store) as opened:
        assert opened.count() == 4
    capsys.readouterr()
    table = main(TINY_CLI + ["--table", "--methods", "direct", "pi", "--fine-tune", "--store", store])["table"]
    printed = capsys.readouterr().out
    assert "| RoPE | Direct extrapolation | 2 |" in printed and "| ALiBi | as trained | 2 |" in printed
    assert {(row["encoding"], row["method"], len(row["seeds"])) for row in table} == {
        ("rope", "direct", 2), ("rope", "pi", 2), ("alibi", AS_TRAINED, 2)}


def test_cli_refuses_a_damaged_store_without_touching_it(tmp_path, capsys):
    store = tmp_path / "runs.sqlite3"
    store.write_bytes(b"not a database" * 50)
    with pytest.raises(SystemExit) as exit_:
        main(TINY_CLI + ["--store", str(store)])
    assert exit_.value.code == 2 and "left untouched" in capsys.readouterr().err
    assert store.read_bytes() == b"not a database" * 50


def test_cli_is_a_runnable_module():
    completed = subprocess.run([sys.executable, "-m", "pe_core.train", "--help"], cwd=ROOT, check=True, timeout=120,
                               capture_output=True, text=True)
    assert "--prepare" in completed.stdout and "--store" in completed.stdout and "--fine-tune" in completed.stdout


# --- the service: a class shares one machine ---------------------------------------------------------------


def service_on(path, max_running: int = 1) -> TrainingService:
    return TrainingService(open_store(str(path)), JobLimiter(max_running, 8), device="cpu")


def test_two_identical_requests_share_one_training_run(tmp_path):
    service = service_on(tmp_path / "runs.sqlite3")
    config = tiny_config(steps=20)
    first, second = service.request(config), service.request(config)
    assert first is second and first.requests == 2
    assert first.wait(60) and first.state == DONE
    assert service.trained == 1 and service.store.count() == 1
    record = service.request(config)  # now a lookup, not a job
    assert isinstance(record, RunRecord) and record == first.result


def test_queued_runs_start_in_request_order(tmp_path):
    service = service_on(tmp_path / "runs.sqlite3")
    # the one slot is held while the runs are requested, so all three wait (a 4-step run could otherwise finish
    # before the next request, as it once did beside another test worker)
    release = threading.Event()
    holder = service.limiter.submit("holder", lambda job: release.wait(60))
    while holder.state != RUNNING:
        time.sleep(0.01)
    configs = [tiny_config(seed=seed, steps=4) for seed in (3, 1, 2)]
    jobs = [service.request(c) for c in configs]
    assert [j.queue_position() for j in jobs] == [1, 2, 3]
    release.set()
    assert all(j.wait(60) for j in jobs)
    starts = [j.started_at for j in jobs]
    assert starts == sorted(starts)
    created = [service.store.get(c.hash).created_at for c in configs]
    assert created == sorted(created)


def test_stored_runs_survive_a_restart_and_a_stopped_run_resumes(tmp_path):
    path = tmp_path / "runs.sqlite3"
    service = service_on(path)
    config = tiny_config(steps=400)
    job = service.request(config)
    while not [s for s in job.reports() if s.phase == TRAINING and s.step >= 3]:
        time.sleep(0.01)
    job.withdraw()
    assert job.wait(30) and job.state == STOPPED and service.store.count() == 0
    paused = service.paused(config)
    stopped_at = paused.run.step
    assert 3 <= stopped_at < 400
    resumed = service.request(config)
    assert resumed.wait(120) and resumed.state == DONE
    assert [s.step for s in resumed.reports() if s.phase == TRAINING][0] == stopped_at + 1
    record = resumed.result
    service.store.close()

    restarted = service_on(path)  # a new server process on the same database
    started = time.perf_counter()
    assert restarted.request(config) == record and time.perf_counter() - started < 2
    assert restarted.trained == 0


def test_the_servers_own_trainer_trains_a_requests_seeds_as_one_batch_each_as_alone(tmp_path, monkeypatch):
    from pe_core.train import service as service_module

    sizes = []

    class Recorded(service_module.ExperimentBatch):
        def __init__(self, experiments, **kwargs):
            sizes.append(sorted(e.config.seed for e in experiments))
            super().__init__(experiments, **kwargs)

    monkeypatch.setattr(service_module, "ExperimentBatch", Recorded)
    service = service_on(tmp_path / "runs.sqlite3")
    seeds = [tiny_config(seed=seed, steps=6, fine_tune=("pi",)) for seed in (1, 2, 3)]
    other = tiny_config(seed=1, steps=6, fine_tune=("pi",), rope_base=100.0)  # another shape of experiment
    job = service.request_all([*seeds, other], "seed table")
    batches = []
    while not job.finished:
        batches.append(getattr(job, "batch", None))
        time.sleep(0.005)
    assert job.state == DONE and job.result == 4 and service.trained == 4
    assert sizes == [[1, 2, 3], [1]]  # the three seeds together, then the other experiment
    assert (1, 3, 4) in batches and batches[-1] in {(1, 3, 4), (4, 4, 4)}
    for config in seeds:  # on the CPU a batch's numbers are bit for bit those of each run alone
        alone = run_experiment(config, device="cpu")
        stored = service.store.get(config.hash)
        assert stored.results == alone.results and stored.fine_tunes == alone.fine_tunes
        assert service.store.latest(config.hash).state == DONE
    assert service.request_all(seeds, "seed table") is None  # nothing missing any more
    with use_language("zh"):
        assert lesson_status_text(job.reports()[-1], (1, 3, 4)).startswith("第 1–3 次运行（共 4 次）一起训练 · ")
    assert lesson_status_text(job.reports()[-1], (4, 4, 4)).startswith("Run 4 of 4 · ")


def lesson_status_text(status, batch):
    from lessons.training import status_text

    return status_text(status, batch)


def test_a_stopped_batch_keeps_every_run_to_resume_and_cancels_their_queue_rows(tmp_path):
    service = service_on(tmp_path / "runs.sqlite3")
    seeds = [tiny_config(seed=seed, steps=400) for seed in (1, 2)]
    job = service.request_all(seeds, "seed table")
    while not [s for s in job.reports() if s.phase == TRAINING and s.step >= 3]:
        time.sleep(0.01)
    job.withdraw()
    assert job.wait(30) and job.state == STOPPED and service.store.count() == 0
    assert all(service.store.latest(c.hash).state == CANCELLED for c in seeds)
    steps = {c.seed: service.paused(c).run.step for c in seeds}
    assert len(set(steps.values())) == 1 and 3 <= steps[1] < 400  # stopped together, at the same step
    resumed = service.request_all(seeds, "seed table")
    assert resumed.wait(240) and resumed.result == 2
    assert min(s.step for s in resumed.reports() if s.phase == TRAINING) == steps[1] + 1
    for config in seeds:
        assert service.store.get(config.hash).results == run_experiment(config, device="cpu").results


def test_a_failed_store_open_is_reported_and_the_server_keeps_runs_in_memory(tmp_path, monkeypatch):
    from pe_core.train import service as service_module

    damaged = tmp_path / "runs.sqlite3"
    damaged.write_bytes(b"x" * 4096)
    monkeypatch.setenv("PE_RUN_STORE", str(damaged))
    previous = service_module.use_service(None)
    try:
        assert "left untouched" in service_module.store_problem()
        assert service_module.server_service().store.location == ":memory:"
    finally:
        service_module.use_service(previous)
    assert damaged.read_bytes() == b"x" * 4096


def test_a_start_token_heads_every_window_as_input_only():
    run = TrainingRun(ModelConfig(n_layer=1, n_head=2, d_model=32, train_length=16, max_positions=32),
                      TrainConfig(steps=2, batch_size=4, validation_windows=4), device="cpu", start_token=True)
    assert (run.validation[:, 0] == data.START_INDEX).all() and (run.validation[:, 1:] != data.START_INDEX).all()
    assert len(list(run.steps())) == 2 and data.decode([data.START_INDEX]) == data.START


# --- the GPU path, exercised where it can be: autocast on the CPU ----------------------------------------


def test_a_run_trains_in_float32_off_cuda_and_in_the_chosen_precision_on_cuda(monkeypatch):
    from pe_core.train.loop import CUDA_PRECISION, training_precision

    monkeypatch.setenv("PE_PRECISION", "bf16")
    assert training_precision(torch.device("cpu")) == PRECISIONS["float32"]  # the CPU ignores the setting
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert training_precision(torch.device("cuda")).autocast == torch.bfloat16
    monkeypatch.setenv("PE_PRECISION", "TF32 ")
    assert training_precision(torch.device("cuda")) == PRECISIONS["tf32"]
    monkeypatch.delenv("PE_PRECISION")
    assert training_precision(torch.device("cuda")) == PRECISIONS[CUDA_PRECISION] == PRECISIONS["float32"]
    monkeypatch.setenv("PE_PRECISION", "bf16")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert training_precision(torch.device("cuda")) == PRECISIONS["float32"]
    monkeypatch.setenv("PE_PRECISION", "fp8")
    with pytest.raises(ValueError, match="float32, tf32, bf16"):
        training_precision(torch.device("cuda"))


def test_tf32_is_switched_on_only_inside_a_training_step_and_the_label_says_so():
    from pe_core.train.loop import computing_in, training_label

    before = torch.get_float32_matmul_precision()
    with computing_in(PRECISIONS["tf32"], torch.device("cpu")):
        assert torch.get_float32_matmul_precision() == "high"
    assert torch.get_float32_matmul_precision() == before == "highest"
    with computing_in(PRECISIONS["bf16"], torch.device("cpu")):
        assert torch.is_autocast_enabled("cpu") and torch.get_float32_matmul_precision() == "highest"
    assert not torch.is_autocast_enabled("cpu")
    plain = training_label(torch.device("cpu"))
    assert plain.startswith("CPU (") and plain.endswith(")")
    assert training_label(torch.device("cpu"), PRECISIONS["tf32"]) == plain + ", TF32 matmuls"
    assert training_label(torch.device("cpu"), PRECISIONS["bf16"]) == plain + ", bf16 autocast"


def test_a_bf16_autocast_step_keeps_rope_in_float32_and_trains_like_float32(monkeypatch):
    """The autocast a GPU run uses, run on the CPU (torch has bf16 autocast there too): the training loss
    follows float32's, and the rotation itself sees float32 angles and float32 inputs."""
    config = tiny_config(steps=8)
    plain = TrainingRun(config.model_config(), config.train_config(), device="cpu")
    mixed = TrainingRun(config.model_config(), config.train_config(), device="cpu")
    mixed.precision = PRECISIONS["bf16"]
    import pe_core.model as model_module

    seen = []
    rotate = model_module.rotate

    def spy(x, cos, sin, pairing):
        seen.append((x.dtype, cos.dtype, sin.dtype, torch.is_autocast_enabled("cpu")))
        return rotate(x, cos, sin, pairing)

    monkeypatch.setattr(model_module, "rotate", spy)
    plain_losses = [p.loss for p in plain.steps()]
    seen.clear()
    mixed_losses = [p.loss for p in mixed.steps()]
    assert seen and all(entry[:3] == (torch.float32,) * 3 for entry in seen)
    assert any(entry[3] for entry in seen)  # the training steps rotate inside autocast (validation outside)
    assert all(math.isfinite(loss) for loss in mixed_losses)
    assert mixed_losses == pytest.approx(plain_losses, abs=0.05)
    assert mixed_losses != plain_losses  # bf16 matmuls did happen


def test_the_cost_column_shows_a_small_spread_instead_of_zero():
    """Five seeds on one machine run at nearly one speed: their spread of tens of characters per second read
    “± 0.0k”; the cell now keeps the decimals the spread needs, and the mean to the same place."""
    from pe_core.train.schema import MEMORY_PEAK
    from pe_core.train.summary import CostStat, cost_cells

    def cell(mean: float, sd: float, seeds: int = 5) -> str:
        return cost_cells(CostStat("rope", mean, sd, 2**20, MEMORY_PEAK, ("cpu",), tuple(range(seeds)), ()))[0]

    assert cell(12_345.0, 20.0) == "12.35k ± 0.02k"
    assert cell(12_345.0, 3.0) == "12.345k ± 0.003k"
    assert cell(12_345.0, 1_500.0) == "12.3k ± 1.5k"
    assert cell(12_345.0, 0.2) == "12.3k ± 0"  # batched seeds share one speed
    assert cell(12_345.0, 20.0, seeds=1) == "12.3k"
    for sd in (0.5, 0.9, 4.9, 49.0, 99.0, 149.0):
        assert not cell(12_345.0, sd).endswith("± 0.0k") and "± 0.000k" not in cell(12_345.0, sd), sd


@pytest.mark.parametrize("forced", ["1", "2"])
def test_the_sidebars_cpu_label_and_a_runs_record_name_the_same_threads(monkeypatch, forced):
    """One server, one count: the sidebar's "Compute device" (``device_label``) and what a run records
    (``training_label``) both say the threads training computes on, whatever torch's own intra-op count is."""
    from pe_core.device import device_label
    from pe_core.train.loop import training_label

    monkeypatch.setenv("PE_TRAIN_THREADS", forced)
    cpu = torch.device("cpu")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # the server's page work (use_server_threads on a small machine)
        expected = "CPU (1 thread)" if forced == "1" else "CPU (2 threads)"
        assert device_label(cpu) == training_label(cpu) == expected
    finally:
        torch.set_num_threads(before)
