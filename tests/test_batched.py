"""Batched training: runs trained together agree with the same runs trained one by one.

Tiny models and few steps, but the code paths of the real thing: the pooled CPU batch (bit for bit a
run alone) and the stacked batch (vmap over stacked weights, as on a GPU: equal to float32 rounding).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from pe_core.data import random_windows
from pe_core.model import POSITION_ENCODINGS
from pe_core.train import ExperimentConfig, TrainingRun, run_experiment
from pe_core.train.evaluate import method_spec
from pe_core.train.experiment import ExperimentBatch, ExperimentRun, batch_groups, run_experiments
from pe_core.train.loop import TrainingBatch

SEEDS = (0, 1)
STEPS = 20
TINY = dict(d_model=32, n_head=2, head_size=16, n_layer=1, train_length=16, tokens_per_step=128, steps=STEPS)


def tiny(encoding: str = "rope", seed: int = 0, **changes) -> ExperimentConfig:
    return ExperimentConfig(encoding=encoding, seed=seed, **{**TINY, **changes})


def runs(encoding: str, seeds: tuple[int, ...] = SEEDS, **changes) -> list[TrainingRun]:
    configs = [tiny(encoding, seed, **changes) for seed in seeds]
    return [TrainingRun(c.model_config(), c.train_config(), device="cpu") for c in configs]


def losses(trained: list[TrainingRun]) -> torch.Tensor:
    return torch.tensor([[p.loss for p in run.history] for run in trained])


@pytest.mark.parametrize("encoding", POSITION_ENCODINGS)
def test_a_batch_starts_from_each_seeds_own_weights_and_batches_and_trains_as_each_run_alone(encoding):
    alone, pooled, stacked = runs(encoding), runs(encoding), runs(encoding)
    for one, other in zip(alone, stacked, strict=True):  # the same initial weights and data stream
        for a, b in zip(one.model.parameters(), other.model.parameters(), strict=True):
            assert torch.equal(a, b)
        assert torch.equal(one.batches.get_state(), other.batches.get_state())
    assert not torch.equal(next(alone[0].model.parameters()), next(alone[1].model.parameters()))
    for run in alone:
        for _ in run.steps():
            pass
    for _ in TrainingBatch(pooled, stacked=False).steps():
        pass
    batch = TrainingBatch(stacked, stacked=True)
    for _ in batch.steps():
        pass
    assert losses(alone).shape == (len(SEEDS), STEPS)
    assert torch.equal(losses(pooled), losses(alone))  # the CPU's batch: bit for bit
    torch.testing.assert_close(losses(stacked), losses(alone), rtol=1e-5, atol=1e-5)  # float32 rounding
    for one, other in zip(alone, stacked, strict=True):  # and each copy has its own weights again
        for a, b in zip(one.model.parameters(), other.model.parameters(), strict=True):
            torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4)
            assert b.untyped_storage().size() == a.untyped_storage().size()


def test_each_copy_clips_its_own_gradient():
    # a clip so small that every step is clipped: one norm over all the copies would leave each copy's under it
    alone, stacked = runs("rope"), runs("rope")
    for run in (*alone, *stacked):
        run.train_config = dataclasses.replace(run.train_config, grad_clip=1e-3)
    for run in alone:
        for _ in run.steps(8):
            pass
    for _ in TrainingBatch(stacked, stacked=True).steps(8):
        pass
    torch.testing.assert_close(losses(stacked), losses(alone), rtol=1e-5, atol=1e-5)
    for run in stacked:  # the last step's gradient, clipped: each copy's norm is the clip
        norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in run.model.parameters()]))
        assert float(norm) == pytest.approx(1e-3, rel=1e-4)


@pytest.mark.parametrize("stacked", [False, True])
def test_a_stopped_copy_leaves_the_batch_and_resumes_alone_where_it_stopped(stacked):
    alone, batched = runs("alibi", (0, 1, 2)), runs("alibi", (0, 1, 2))
    for run in alone:
        for _ in run.steps():
            pass
    seen = []
    for records in TrainingBatch(batched, stacked=stacked).steps(should_stop=lambda run: run is batched[1]
                                                                   and run.step >= 5):
        seen.append([i for i, _ in records])
    assert batched[1].step == 5 and batched[0].step == batched[2].step == STEPS
    assert seen[4] == [0, 1, 2] and seen[5] == [0, 2]
    for _ in batched[1].steps():  # resumed on its own
        pass
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if stacked else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(losses(batched), losses(alone), **tolerance)


def test_a_batch_refuses_to_stack_models_of_other_shapes():
    mixed = [runs("rope")[0], runs("rope", d_model=64)[1]]
    with pytest.raises(ValueError, match="share"):
        TrainingBatch(mixed, stacked=True)
    TrainingBatch(mixed, stacked=False)  # one by one, any runs go together


def fine_tunes(methods: tuple[str, ...]) -> list[TrainingRun]:
    """One trained model's fine-tunes at 4× its length, one per method (each a copy with its own RoPE spec)."""
    base = runs("rope", (0,))[0]
    for _ in base.steps():
        pass
    length = 4 * base.length
    return [TrainingRun.fine_tune_of(base, method_spec(base.model, method, length), length, 6, 1e-3)
            for method in methods]


def test_the_fine_tunes_of_several_methods_stack_and_each_trains_with_its_own_frequencies():
    methods = ("pi", "ntk", "yarn")
    alone, stacked = fine_tunes(methods), fine_tunes(methods)
    specs = [run.model.rope_spec for run in stacked]
    assert len(set(specs)) == len(methods)  # three specs: each copy must rotate by its own angles
    for run in alone:
        for _ in run.steps():
            pass
    for _ in TrainingBatch(stacked, stacked=True).steps():
        pass
    torch.testing.assert_close(losses(stacked), losses(alone), rtol=1e-5, atol=1e-5)
    assert [run.model.rope_spec for run in stacked] == specs
    # the methods' losses part by far more than the tolerance: one copy's angles for all would have failed above
    assert float((losses(alone)[0] - losses(alone)[2]).abs().max()) > 100 * 1e-5 * 4


def test_copies_stack_only_with_the_same_rope_tricks():
    plain, with_logn = fine_tunes(("pi", "pi"))
    with_logn.model.rotary.logn = True
    with pytest.raises(ValueError, match="share"):
        TrainingBatch([plain, with_logn], stacked=True)


def test_the_batches_are_each_runs_own_stream():
    first, second = runs("none")[:2]
    a = random_windows(first.corpus.train, 16, 8, first.batches)
    b = random_windows(second.corpus.train, 16, 8, second.batches)
    assert not torch.equal(a, b)


EXPERIMENT = dict(eval_tokens=64, multiples=(1, 4), fine_tune=("pi", "yarn"), fine_tune_steps=8, steps=12,
                  methods=("direct", "pi", "dynamic", "yarn", "rerope"))


def test_experiments_in_a_batch_give_the_records_of_runs_alone():
    configs = [tiny("rope", seed, **EXPERIMENT) for seed in SEEDS]
    alone = [run_experiment(c, device="cpu") for c in configs]
    updates = list(run_experiments(configs, device="cpu"))
    records = {u.config.hash: u.record for u in updates if u.record is not None}
    assert len(records) == len(configs)
    for record in alone:
        batched = records[record.hash]
        assert batched.loss_curve == record.loss_curve
        assert batched.results == record.results
        assert batched.fine_tunes == record.fine_tunes
        assert batched.cost.activation_bytes == record.cost.activation_bytes
    # each run's progress is its own: its fraction only grows, and its last update carries its record
    for config in configs:
        mine = [u for u in updates if u.config == config]
        fractions = [u.status.fraction for u in mine]
        assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
        assert mine[-1].record is not None and all(u.record is None for u in mine[:-1])


def test_stacked_experiments_agree_with_runs_alone_within_the_seed_spread():
    configs = [tiny("rope", seed, **EXPERIMENT) for seed in SEEDS]
    alone = [run_experiment(c, device="cpu") for c in configs]
    experiments = [ExperimentRun(c, device="cpu") for c in configs]
    for _ in ExperimentBatch(experiments, stacked=True).work():
        pass
    stacked = [e.record() for e in experiments]
    for one, other in zip(alone, stacked, strict=True):
        first = [p.loss for p in one.loss_curve]
        assert [p.loss for p in other.loss_curve] == pytest.approx(first, abs=2e-4)
    for method, length in [(m, n) for m in EXPERIMENT["methods"] for n in (16, 64)]:
        accuracies = [r.result(method, length).mean_accuracy for r in alone]
        spread = max(accuracies) - min(accuracies)
        for one, other in zip(alone, stacked, strict=True):
            assert abs(other.result(method, length).mean_accuracy - one.result(method, length).mean_accuracy) <= \
                max(spread, 1e-3)
    for one, other in zip(alone, stacked, strict=True):
        for tuned_alone, tuned in zip(one.fine_tunes, other.fine_tunes, strict=True):
            assert tuned.loss_curve == pytest.approx(tuned_alone.loss_curve, abs=2e-3)


def test_a_stopped_experiment_leaves_its_batch_and_resumes_to_the_same_record():
    configs = [tiny("t5", seed, **EXPERIMENT) for seed in SEEDS]
    alone = run_experiment(configs[1], device="cpu")
    asked = []

    def should_stop(run_hash: str) -> bool:  # the second run stops at its sixth step
        if run_hash == configs[1].hash:
            asked.append(run_hash)
        return len(asked) > 6 and run_hash == configs[1].hash

    updates = list(run_experiments(configs, device="cpu", should_stop=should_stop))
    stops = [u for u in updates if u.stopped]
    assert len(stops) == 1 and stops[0].config == configs[1] and stops[0].record is None
    assert not any(u.record is not None and u.config == configs[1] for u in updates)
    assert any(u.record is not None and u.config == configs[0] for u in updates)
    experiment = stops[0].experiment
    assert 0 < experiment.run.step < STEPS
    for _ in experiment.work():
        pass
    resumed = experiment.record()
    assert resumed.loss_curve == alone.loss_curve and resumed.results == alone.results


def test_runs_that_differ_only_in_their_seed_are_grouped():
    configs = [tiny(e, s) for e in ("rope", "alibi") for s in (0, 1, 2)]
    groups = batch_groups([*configs, configs[0]])
    assert groups == [configs[:3], configs[3:]]
    assert batch_groups(configs, max_batch=2) == [configs[:2], configs[2:3], configs[3:5], configs[5:]]
    # a knob that does not apply to the encoding does not split a group (the same experiment)
    assert batch_groups([tiny("alibi", 0), tiny("alibi", 1, rope_base=999.0)]) == [[tiny("alibi", 0),
                                                                                   tiny("alibi", 1, rope_base=999.0)]]
    assert len(batch_groups([tiny("rope", 0), tiny("rope", 1, rope_base=999.0)])) == 2
