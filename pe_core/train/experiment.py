"""One experiment, start to finish: train, evaluate every (method, length), fine-tune; one record.

``ExperimentRun.work()`` is a generator of ``Status`` records - what runs now (encoding,
method, step i of N) and the fraction of the whole run done - so the CLI prints it, a
background job publishes it, and a test simply loops. Leaving the loop pauses the run; calling
``work()`` again continues where it stopped. ``record()`` is the finished ``RunRecord``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch

from pe_core.data import Corpus, load_corpus
from pe_core.device import stored_device_label
from pe_core.train.config import ExperimentConfig
from pe_core.train.evaluate import (
    INFERENCE_METHODS,
    Evaluation,
    LengthResult,
    evaluate_one,
    evaluation_key,
    evaluation_windows,
    method_spec,
)
from pe_core.train.loop import Progress, TrainingRun, cpu_threads
from pe_core.train.schema import (
    MEMORY_COUNTED,
    MEMORY_PEAK,
    Checkpoint,
    Cost,
    CurvePoint,
    FineTuneResult,
    MethodResult,
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

    def work(self) -> Iterator[Status]:
        """Do what is left, yielding a ``Status`` after every step and every evaluation."""
        c, encoding = self.config, self.config.encoding
        started = time.perf_counter()
        try:
            for record in self.run.steps():
                yield Status(TRAINING, encoding, None, record.step, record.total_steps, self.fraction(), record)
            self.run.finish_memory()
            pairs = [(length, method) for length in c.lengths for method in c.evaluated_methods]
            for length, method in pairs:
                if (method, length) in self.evaluation:
                    continue
                self.evaluation.results.append(self._evaluate(method, length))
                yield Status(EVALUATING, encoding, method, len(self.evaluation.results), len(pairs), self.fraction())
            for method in c.fine_tuned_methods:
                if method in self.fine_tunes:
                    continue
                yield from self._fine_tune(method)
        finally:
            self.seconds += time.perf_counter() - started

    def _fine_tune(self, method: str) -> Iterator[Status]:
        c, longest = self.config, self.config.longest
        if method not in self.untuned:
            before = (self.evaluation.get(method, longest) if (method, longest) in self.evaluation
                      else self._evaluate(method, longest))
            self.untuned[method] = before
            self.checkpoints[method] = [Checkpoint(0, before.mean_accuracy, before.mean_loss)]
        if method not in self.tunes:
            spec = method_spec(self.run.model, method, longest)
            self.tunes[method] = TrainingRun.fine_tune_of(self.run, spec, longest, c.fine_tune_steps,
                                                          c.fine_tune_learning_rate)
        tune, checkpoints = self.tunes[method], fine_tune_checkpoints(c.fine_tune_steps)
        for record in tune.steps():
            if record.step in checkpoints:  # measured before the yield: a stop here keeps it
                along = evaluate_one(tune.model, self._windows_for(longest), method)
                self.checkpoints[method].append(Checkpoint(record.step, along.mean_accuracy, along.mean_loss))
            yield Status(FINE_TUNING, c.encoding, method, record.step, record.total_steps, self.fraction(), record)
        after = evaluate_one(tune.model, self._windows_for(longest), method)
        curve = (*self.checkpoints.pop(method), Checkpoint(c.fine_tune_steps, after.mean_accuracy, after.mean_loss))
        self.fine_tunes[method] = FineTuneResult(method, longest, c.fine_tune_steps,
                                                 MethodResult.of(self.untuned[method]), MethodResult.of(after),
                                                 tuple(round(p.loss, 4) for p in tune.history), curve)
        del self.tunes[method]  # the tuned copy is not kept: its numbers are
        yield Status(FINE_TUNING, c.encoding, method, c.fine_tune_steps, c.fine_tune_steps, self.fraction())

    # ---- the result ---------------------------------------------------------------------------------

    def record(self) -> RunRecord:
        """The finished run as a ``RunRecord`` (``ValueError`` if work is left)."""
        if not self.done:
            raise ValueError("The run is not finished yet: train and evaluate it to the end first.")
        run, c = self.run, self.config
        device = stored_device_label(run.device, cpu_threads(), autocast=run.autocast is not None)
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
