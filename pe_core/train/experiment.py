"""One experiment, start to finish: train, evaluate every (method, length), fine-tune; one record.

``ExperimentRun.work()`` is a generator of ``Status`` records - what runs now (encoding,
method, step i of N) and the fraction of the whole run done - so the CLI prints it, a
background job publishes it, and a test simply loops. Leaving the loop pauses the run; calling
``work()`` again continues where it stopped. ``record()`` is the finished ``RunRecord``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import torch

from pe_core.data import Corpus, load_corpus
from pe_core.device import cpu_threads
from pe_core.train.config import ExperimentConfig
from pe_core.train.evaluate import (
    DROPE,
    INFERENCE_METHODS,
    Evaluation,
    LengthResult,
    evaluate_one,
    evaluation_key,
    evaluation_windows,
    method_spec,
    retrieve,
)
from pe_core.train.loop import (
    Progress,
    TrainingBatch,
    TrainingRun,
    shard_workers,
    training_label,
    use_cpu_threads,
)
from pe_core.train.retrieval import Probes, RetrievalResult, make_probes
from pe_core.train.schema import (
    MEMORY_COUNTED,
    MEMORY_PEAK,
    Checkpoint,
    Cost,
    CurvePoint,
    FineTuneResult,
    MethodResult,
    RetrievalEntry,
    RunRecord,
    code_version,
    now_iso,
)

TRAINING, EVALUATING, FINE_TUNING = "training", "evaluating", "fine-tuning"
CHECKPOINT_FRACTIONS = (1 / 8, 1 / 4, 1 / 2, 3 / 4)  # of a fine-tune, where its accuracy at L′ is measured


def fine_tune_checkpoints(steps: int) -> tuple[int, ...]:
    """The steps after which a fine-tune of ``steps`` steps is evaluated, besides before it and at its end
    (12, 25, 50, 75 of 100): one fine-tune, measured along the way, as Chen et al. 2023 report PI's."""
    return tuple(sorted({round(steps * f) for f in CHECKPOINT_FRACTIONS} - {0, steps}))


class Status(NamedTuple):
    """What an experiment is doing now."""

    phase: str  # TRAINING, EVALUATING or FINE_TUNING
    encoding: str
    method: str | None  # the scaling method evaluated or fine-tuned (None while training)
    step: int  # within the phase: optimiser steps, or (method, length) pairs evaluated
    total: int
    fraction: float  # of the whole run's work, by a cost model (0..1)
    progress: Progress | None = None  # the optimiser step's record, while training or fine-tuning


def _cost(tokens: float, length: int, width: int, backward: bool) -> float:
    """Relative compute of a pass over ``tokens`` characters in windows of ``length``: the MLP and
    projections cost ∝ tokens, attention ∝ tokens × length; a backward pass costs about twice a forward."""
    return tokens * (1 + length / (6 * width)) * (3 if backward else 1)


class ExperimentRun:
    """A resumable experiment: the training run, the evaluation so far, the fine-tunes so far."""

    def __init__(self, config: ExperimentConfig, corpus: Corpus | None = None,
                 device: torch.device | str | None = None):
        self.config = config
        self.corpus = corpus or load_corpus()
        self.run = TrainingRun(config.model_config(), config.train_config(), self.corpus, device,
                               start_token=config.start_token)
        self.evaluation = Evaluation(config.train_length)
        self._evaluated: dict[tuple, LengthResult] = {}  # by evaluation_key: identical evaluations run once
        self.untuned: dict[str, LengthResult] = {}  # a fine-tuned method's result at L' before fine-tuning
        self.tunes: dict[str, TrainingRun] = {}
        self.checkpoints: dict[str, list[Checkpoint]] = {}  # a fine-tune's accuracy so far
        self.fine_tunes: dict[str, FineTuneResult] = {}
        self.seconds = 0.0
        self._windows: dict[int, torch.Tensor] = {}
        self._probes: dict[int, Probes] = {}
        self.retrieval: dict[tuple[str, int, bool], RetrievalResult] = {}  # (method, length, tuned)
        self._retrieved: dict[tuple, RetrievalResult] = {}  # by evaluation_key, as ``_evaluated``
        self._costs = self._cost_model()

    # ---- progress ---------------------------------------------------------------------------------

    def _cost_model(self) -> dict[str, float]:
        c, width = self.config, self.config.d_model

        def passes(method: str, multiple: int) -> float:  # forward passes over the text an evaluation needs
            if method in INFERENCE_METHODS and INFERENCE_METHODS[method].frequencies == "dynamic":
                return (multiple + 1) / 2  # block by block over the prefix
            return 2.0 if method in INFERENCE_METHODS and INFERENCE_METHODS[method].window is not None else 1.0

        step_tokens = self.run.train_config.batch_size * c.train_length
        evaluations = sum(_cost(c.eval_tokens * passes(method, m), c.train_length * m, width, False)
                          for m in c.multiples for method in c.evaluated_methods)
        tuned = c.fine_tuned_methods
        tune_evaluations = len(fine_tune_checkpoints(c.fine_tune_steps)) + 1
        return {
            "train_step": _cost(step_tokens, c.train_length, width, True),
            "evaluations": evaluations,
            "per_evaluation": evaluations / max(1, len(c.multiples) * len(c.evaluated_methods)),
            "tune_step": _cost(step_tokens, c.longest, width, True),
            "tune_evaluation": _cost(c.eval_tokens, c.longest, width, False),
            "total": (_cost(step_tokens, c.train_length, width, True) * c.steps + evaluations
                      + len(tuned) * (_cost(step_tokens, c.longest, width, True) * c.fine_tune_steps
                                      + tune_evaluations * _cost(c.eval_tokens, c.longest, width, False))),
        }

    def fraction(self) -> float:
        """How much of the run's compute is done (training steps, evaluations and fine-tunes weighed by cost)."""
        costs = self._costs
        done = costs["train_step"] * self.run.step + costs["per_evaluation"] * len(self.evaluation.results)
        done += sum(costs["tune_step"] * tune.step for tune in self.tunes.values())
        done += sum(costs["tune_evaluation"] * (len(points) - 1) for points in self.checkpoints.values())
        tune_evaluations = len(fine_tune_checkpoints(self.config.fine_tune_steps)) + 1
        done += (costs["tune_step"] * self.config.fine_tune_steps
                 + costs["tune_evaluation"] * tune_evaluations) * len(self.fine_tunes)
        return min(1.0, done / costs["total"])

    @property
    def done(self) -> bool:
        c = self.config
        return (self.run.done and len(self.evaluation.results) == len(c.lengths) * len(c.evaluated_methods)
                and set(self.fine_tunes) == set(c.fine_tuned_methods))

    # ---- the work ---------------------------------------------------------------------------------

    def _windows_for(self, length: int) -> torch.Tensor:
        if length not in self._windows:
            self._windows[length] = self.run._marked(evaluation_windows(self.corpus, length, self.config.eval_tokens))
        return self._windows[length]

    def _evaluate(self, method: str, length: int) -> LengthResult:
        """``method`` at ``length``; an evaluation that would repeat another bit for bit is taken from it."""
        key = evaluation_key(self.run.model, method, length)
        if key not in self._evaluated:
            self._evaluated[key] = evaluate_one(self.run.model, self._windows_for(length), method)
        return self._evaluated[key]._replace(method=method)

    def _probes_for(self, length: int) -> Probes:
        if length not in self._probes:
            self._probes[length] = make_probes(self.corpus.validation, length, first=int(self.config.start_token))
            if self.config.start_token:
                self._probes[length] = self._probes[length]._replace(
                    tokens=self.run._marked(self._probes[length].tokens))
        return self._probes[length]

    def _evaluate_pair(self, method: str, length: int) -> LengthResult:
        """``_evaluate``, and the passkey retrieval of the same set-up when the experiment scores it."""
        result = self._evaluate(method, length)
        if self.config.retrieval and (method, length, False) not in self.retrieval:
            key = evaluation_key(self.run.model, method, length)
            if key not in self._retrieved:
                self._retrieved[key] = retrieve(self.run.model, self._probes_for(length), method)
            self.retrieval[(method, length, False)] = self._retrieved[key]._replace(method=method)
        return result

    def _retrieve_tuned(self, method: str) -> None:
        """The retrieval of ``method``'s fine-tuned model (as tuned: its spec, or no rotation) at every length."""
        if not self.config.retrieval:
            return
        model = self.tunes[method].model
        for length in self.config.lengths:
            if (method, length, True) not in self.retrieval:
                self.retrieval[(method, length, True)] = retrieve(model, self._probes_for(length), None)._replace(
                    method=method)

    def work(self) -> Iterator[Status]:
        """Do what is left, yielding a ``Status`` after every step and every evaluation (an
        ``ExperimentBatch`` of one)."""
        for _experiment, status in ExperimentBatch([self]).work():
            yield status

    def _untuned(self, method: str) -> None:
        """Measure ``method`` at the longest length before its fine-tune (the curve's step 0)."""
        longest = self.config.longest
        if method not in self.untuned:
            before = (self.evaluation.get(method, longest) if (method, longest) in self.evaluation
                      else self._evaluate(method, longest))
            self.untuned[method] = before
            self.checkpoints[method] = [Checkpoint(0, before.mean_accuracy, before.mean_loss)]

    def _tune(self, method: str) -> TrainingRun:
        """The fine-tune of ``method``: a copy of the trained model at the longest length with its spec."""
        c = self.config
        if method not in self.tunes:
            spec = method_spec(self.run.model, method, c.longest)
            self.tunes[method] = TrainingRun.fine_tune_of(self.run, spec, c.longest, c.fine_tune_steps,
                                                          c.fine_tune_learning_rate)
            if method == DROPE:  # the trained weights, the rotation removed: recalibrated without it
                self.tunes[method].model.set_rope(None, dropped=True)
        return self.tunes[method]

    def _measure_tune(self, method: str) -> LengthResult:
        return evaluate_one(self.tunes[method].model, self._windows_for(self.config.longest), method)

    def _checkpoint(self, method: str, step: int, along: LengthResult) -> None:
        self.checkpoints[method].append(Checkpoint(step, along.mean_accuracy, along.mean_loss))

    def _finish_fine_tune(self, method: str, after: LengthResult) -> Status:
        c = self.config
        tune = self.tunes.pop(method)  # the tuned copy is not kept: its numbers are
        curve = (*self.checkpoints.pop(method), Checkpoint(c.fine_tune_steps, after.mean_accuracy, after.mean_loss))
        self.fine_tunes[method] = FineTuneResult(method, c.longest, c.fine_tune_steps,
                                                 MethodResult.of(self.untuned[method]), MethodResult.of(after),
                                                 tuple(round(p.loss, 4) for p in tune.history), curve)
        return Status(FINE_TUNING, c.encoding, method, c.fine_tune_steps, c.fine_tune_steps, self.fraction())

    # ---- the result ---------------------------------------------------------------------------------

    def record(self) -> RunRecord:
        """The finished run as a ``RunRecord`` (``ValueError`` if work is left)."""
        if not self.done:
            raise ValueError("The run is not finished yet: train and evaluate it to the end first.")
        run, c = self.run, self.config
        device = training_label(run.device, run.precision)
        order = {(m, n): i for i, (n, m) in enumerate((n, m) for n in c.lengths for m in c.evaluated_methods)}
        results = sorted(self.evaluation.results, key=lambda r: order[(r.method, r.length)])
        return RunRecord(
            config=c, device=device, created_at=now_iso(), code_version=code_version(),
            parameters=run.model.num_parameters(), corpus_sha256=self.corpus.sha256,
            unigram_baseline=run.unigram_baseline(), training_seconds=run.elapsed_s, total_seconds=self.seconds,
            loss_curve=tuple(CurvePoint(p.step, round(p.loss, 4),
                                        None if p.validation_loss is None else round(p.validation_loss, 4))
                             for p in run.history),
            results=tuple(MethodResult.of(r) for r in results),
            fine_tunes=tuple(self.fine_tunes[m] for m in c.fine_tuned_methods),
            cost=self.cost(),
            retrieval=tuple(RetrievalEntry.of(self.retrieval[key], tuned=key[2]) for key in
                            [(m, n, False) for n in c.lengths for m in c.evaluated_methods]
                            + [(m, n, True) for m in c.fine_tuned_methods for n in c.lengths]
                            if key in self.retrieval),
        )

    def cost(self) -> Cost:
        """Throughput and memory of the training steps (``Cost``): CUDA's measured peak, or counted elsewhere."""
        run, memory = self.run, self.run.memory
        peak = run.peak_memory_bytes
        return Cost(round(run.step_tokens_per_s() or 0.0, 1), peak if peak is not None else memory.total_bytes,
                    MEMORY_PEAK if peak is not None else MEMORY_COUNTED, memory.activation_bytes, memory.state_bytes)


def run_experiment(config: ExperimentConfig, corpus: Corpus | None = None, device: torch.device | str | None = None,
                   on_status: Callable[[Status], None] | None = None) -> RunRecord:
    """Train, evaluate and fine-tune in the foreground; the finished record."""
    experiment = ExperimentRun(config, corpus, device)
    for status in experiment.work():
        if on_status is not None:
            on_status(status)
    return experiment.record()


class ExperimentBatch:
    """Experiments worked on together, phase by phase: their training runs as one ``TrainingBatch``, each
    (method, length) evaluated for every model in one round, and every method's fine-tunes as one batch.

    Every experiment keeps its own numbers (those of a run alone: see ``TrainingBatch``), progress and stop;
    one that stops leaves the batch with its state kept, so its own ``work()`` resumes it. On the CPU a
    round of evaluations spreads the models over the worker threads. The time of a step or a round is
    shared equally by the experiments in it (each record's seconds are its share).
    """

    def __init__(self, experiments: Sequence[ExperimentRun], *, stacked: bool | None = None):
        if not experiments:
            raise ValueError("An experiment batch needs at least one experiment.")
        self.experiments = list(experiments)
        self.stacked = stacked
        self.stopped: list[ExperimentRun] = []
        self._mark = 0.0

    def work(self, should_stop: Callable[[ExperimentRun], bool] | None = None
             ) -> Iterator[tuple[ExperimentRun, Status | None]]:
        """Do what is left of every experiment, yielding (experiment, its ``Status``) after each of its steps
        and evaluations, and (experiment, None) once when ``should_stop(experiment)`` stops it."""
        self._mark = time.perf_counter()
        newly_stopped: list[ExperimentRun] = []

        def stops(experiment: ExperimentRun) -> bool:
            if experiment not in self.stopped and should_stop is not None and should_stop(experiment):
                self.stopped.append(experiment)
                newly_stopped.append(experiment)
            return experiment in self.stopped

        def live() -> list[ExperimentRun]:
            return [e for e in self.experiments if not stops(e)]

        def flush() -> Iterator[tuple[ExperimentRun, None]]:
            while newly_stopped:
                yield newly_stopped.pop(0), None

        try:
            training = [e for e in live() if not e.run.done]
            if training:
                by_run = {id(e.run): e for e in training}
                batch = TrainingBatch([e.run for e in training], stacked=self.stacked)
                for records in batch.steps(should_stop=lambda run: stops(by_run[id(run)])):
                    self._charge([training[i] for i, _ in records])
                    yield from flush()
                    for i, record in records:
                        e = training[i]
                        yield e, Status(TRAINING, e.config.encoding, None, record.step, record.total_steps,
                                        e.fraction(), record)
                for e in training:
                    if e.run.done:
                        e.run.finish_memory()
            yield from flush()
            yield from self._evaluations(live)
            yield from flush()
            yield from self._fine_tunes(live, stops)
            yield from flush()
        finally:
            self._charge(self.experiments)

    def _charge(self, experiments: Sequence[ExperimentRun]) -> None:
        """Share the time since the last charge among ``experiments``."""
        now = time.perf_counter()
        if experiments:
            share = (now - self._mark) / len(experiments)
            for experiment in experiments:
                experiment.seconds += share
        self._mark = now

    def _evaluations(self, live: Callable[[], list[ExperimentRun]]) -> Iterator[tuple[ExperimentRun, Status]]:
        pairs = dict.fromkeys((length, method) for e in self.experiments
                              for length in e.config.lengths for method in e.config.evaluated_methods)
        for length, method in pairs:
            todo = [e for e in live() if (length, method) in _pairs(e) and (method, length) not in e.evaluation]
            results = map_experiments(todo, lambda e, m=method, n=length: e._evaluate_pair(m, n))
            self._charge(todo)
            for e, result in zip(todo, results, strict=True):
                e.evaluation.results.append(result)
                yield e, Status(EVALUATING, e.config.encoding, method, len(e.evaluation.results), len(_pairs(e)),
                                e.fraction())

    def _fine_tunes(self, live: Callable[[], list[ExperimentRun]],
                    stops: Callable[[ExperimentRun], bool]) -> Iterator[tuple[ExperimentRun, Status]]:
        """Every experiment's fine-tune of every method, as one batch (stacked, the methods' copies differ only in
        their RoPE angles)."""
        todo = [(e, method) for e in live() for method in e.config.fine_tuned_methods if method not in e.fine_tunes]
        if not todo:
            return
        untuned = {}  # an experiment's model takes one method's spec at a time: its methods in turn, on one thread
        for e, method in todo:
            if method not in e.untuned:
                untuned.setdefault(e, []).append(method)
        map_experiments(list(untuned), lambda e: [e._untuned(method) for method in untuned[e]])
        tunes = [e._tune(method) for e, method in todo]
        by_run = {id(tune): e for tune, (e, _method) in zip(tunes, todo, strict=True)}
        batch = TrainingBatch(tunes, stacked=self.stacked)
        for records in batch.steps(should_stop=lambda run: stops(by_run[id(run)])):
            due = [todo[i] for i, record in records
                   if record.step in fine_tune_checkpoints(todo[i][0].config.fine_tune_steps)]
            steps = {i: record.step for i, record in records}
            # measured before the yield: a stop here keeps it
            for (e, method), along in zip(due, self._measured(due), strict=True):
                e._checkpoint(method, steps[todo.index((e, method))], along)
            self._charge(list(dict.fromkeys(todo[i][0] for i, _ in records)))
            for i, record in records:
                e, method = todo[i]
                yield e, Status(FINE_TUNING, e.config.encoding, method, record.step, record.total_steps,
                                e.fraction(), record)
        finished = [(e, method) for e, method in todo
                    if e in live() and method in e.tunes and e.tunes[method].done]
        afters = self._measured(finished)
        map_work(finished, lambda pair: pair[0]._retrieve_tuned(pair[1]), finished[0][0].run.device if finished
                 else None)
        self._charge(list(dict.fromkeys(e for e, _ in finished)))
        for (e, method), after in zip(finished, afters, strict=True):
            yield e, e._finish_fine_tune(method, after)

    @staticmethod
    def _measured(tunes: Sequence[tuple[ExperimentRun, str]]) -> list[LengthResult]:
        """Each (experiment, method)'s fine-tuned model (a model of its own) at the longest length, spread over the
        worker threads."""
        return map_work(list(tunes), lambda pair: pair[0]._measure_tune(pair[1]),
                        tunes[0][0].run.device if tunes else None)


def _pairs(experiment: ExperimentRun) -> list[tuple[int, str]]:
    c = experiment.config
    return [(length, method) for length in c.lengths for method in c.evaluated_methods]


def map_experiments(experiments: Sequence[ExperimentRun], work: Callable[[ExperimentRun], object]) -> list:
    """``work(e)`` for every experiment, in order; on the CPU spread over the worker threads (each experiment has
    its own models, and one thread per computation keeps every number what it is alone)."""
    experiments = list(experiments)
    return map_work(experiments, work, experiments[0].run.device if experiments else None)


def map_work(items: Sequence, work: Callable, device: torch.device | None) -> list:
    """``work(item)`` for every item, in order; on the CPU spread over the worker threads. No two items may touch
    one model."""
    items = list(items)
    if not (device is not None and device.type == "cpu" and cpu_threads() > 1 and len(items) > 1):
        return [work(item) for item in items]

    def task(item):
        use_cpu_threads(device)
        return work(item)

    return list(shard_workers().map(task, items))


def batch_key(config: ExperimentConfig) -> str:
    """Configs with the same key train together: they differ at most in their seed."""
    return config.replace(seed=0).hash


def batch_groups(configs: Sequence[ExperimentConfig], max_batch: int | None = None) -> list[list[ExperimentConfig]]:
    """The configs in groups that train as one batch (equal but for the seed), in first-seen order, each config
    once (by hash), at most ``max_batch`` to a group."""
    groups: dict[str, list[ExperimentConfig]] = {}
    seen: set[str] = set()
    for config in configs:
        if config.hash in seen:
            continue
        seen.add(config.hash)
        groups.setdefault(batch_key(config), []).append(config)
    size = max_batch or max(1, len(configs))
    return [group[i:i + size] for group in groups.values() for i in range(0, len(group), size)]


class RunUpdate(NamedTuple):
    """One run's progress in ``run_experiments``."""

    config: ExperimentConfig
    status: Status | None  # the run's own phase, step and fraction; None on a stopped run's last update
    record: RunRecord | None = None  # the finished run, on its last update only
    stopped: bool = False  # the run was stopped (``should_stop``): ``experiment`` resumes it
    experiment: ExperimentRun | None = None  # on a stopped run's update and on the last one (its trained model)


def run_experiments(configs: Sequence[ExperimentConfig], corpus: Corpus | None = None,
                    device: torch.device | str | None = None, *,
                    should_stop: Callable[[str], bool] | None = None,
                    max_batch: int | None = None) -> Iterator[RunUpdate]:
    """Train, evaluate and fine-tune every config, the ones that differ only in their seed together as one
    batch (``batch_groups``; the groups one after another). Yields a ``RunUpdate`` after each step and
    evaluation of each run; a run's last update carries its ``RunRecord`` (not stored: the caller stores
    it). ``should_stop(config.hash)`` → True stops that run; the rest of its batch goes on."""
    corpus = corpus or load_corpus()
    for group in batch_groups(configs, max_batch):
        experiments = [ExperimentRun(config, corpus, device) for config in group]
        batch = ExperimentBatch(experiments)
        stop = None if should_stop is None else (lambda e: should_stop(e.config.hash))
        finished: set[int] = set()
        for experiment, status in batch.work(stop):
            if status is None:
                yield RunUpdate(experiment.config, None, stopped=True, experiment=experiment)
                continue
            last = experiment.done and id(experiment) not in finished  # the update that completes the run
            if last:
                finished.add(id(experiment))
            yield RunUpdate(experiment.config, status, experiment.record() if last else None,
                            experiment=experiment if last else None)

