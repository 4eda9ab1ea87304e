"""Train the tiny transformer at a short length, then evaluate it at 1×-16× that length.

The trainer is a generator of progress records, so a page can draw a live loss curve and a
script can simply loop. Stopping is just leaving the loop: the ``TrainingRun`` keeps its
model, optimiser and data stream, and ``steps()`` resumes exactly where it stopped (the run
is seeded, so a stopped-and-resumed run equals an uninterrupted one).

Evaluation runs each RoPE scaling method from ``pe_core.methods`` without any fine-tuning:
a model trained at L is evaluated at L' = k·L with the method's spec for s = L'/L. Dynamic NTK
is evaluated as it behaves while generating: the loss at position m uses the frequencies for
the length reached so far, computed block by block (blocks of L tokens, each block's forward
pass covering the whole prefix). ``fine_tune`` then trains a copy a few steps at L' with a
method applied, to show how quickly interpolation recovers (Chen et al. 2023, §3).

CLI: ``python -m pe_core.train --out results.json`` (see ``--help``).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F

from pe_core.data import (
    EVAL_CHARACTERS_PER_LENGTH,
    Corpus,
    evenly_spaced_windows,
    load_corpus,
    random_windows,
    unigram_baseline,
)
from pe_core.device import compute_device, device_label
from pe_core.methods import METHOD_TITLES, METHODS, method_setup
from pe_core.model import ENCODING_TITLES, POSITION_ENCODINGS, ModelConfig, TinyTransformer

AS_TRAINED = "as_trained"  # the only "method" of encodings other than RoPE: the model as it was trained
DEFAULT_MULTIPLES = (1, 2, 4, 8)
DEFAULT_METHODS = ("direct", "pi", "ntk", "dynamic", "yarn")
FINE_TUNE_METHODS = ("pi", "yarn", "ntk", "direct")
MAX_CPU_THREADS = 4  # the tiny matrices gain little from more threads
TOKENS_PER_STEP = 2048  # batch size × training length, so a step costs about the same at every L
_serials = itertools.count(1)
_SEEDING = threading.Lock()


def batch_size_for(train_length: int) -> int:
    """Sequences per batch so that a step sees about ``TOKENS_PER_STEP`` characters (at least 4)."""
    return max(4, TOKENS_PER_STEP // train_length)


def method_title(method: str) -> str:
    return "As trained" if method == AS_TRAINED else METHOD_TITLES[method]


def cpu_threads() -> int:
    """Threads for CPU training: all cores but one, capped (``PE_TRAIN_THREADS`` overrides).

    One core stays free for the web server and the other browser sessions; on a 2-core laptop
    that costs less than it seems, because the tiny matrices scale poorly across threads.
    """
    forced = os.environ.get("PE_TRAIN_THREADS", "").strip()
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    return max(1, min((os.cpu_count() or 1) - 1, MAX_CPU_THREADS))


def use_cpu_threads(device: torch.device) -> None:
    # Set from the thread that computes: a running thread keeps the OpenMP count it started with,
    # while threads started later (e.g. Streamlit's script runs) pick up the new one.
    if device.type == "cpu" and torch.get_num_threads() != cpu_threads():
        torch.set_num_threads(cpu_threads())


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 600
    batch_size: int = 32
    learning_rate: float = 3e-3
    min_learning_rate_fraction: float = 0.1
    warmup_steps: int = 30
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    seed: int = 0
    validate_every: int = 100
    validation_windows: int = 32

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "validate_every", "validation_windows"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r}).")
        if not (isinstance(self.learning_rate, (int, float)) and math.isfinite(self.learning_rate)
                and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number (got {self.learning_rate!r}).")

    def learning_rate_at(self, step: int) -> float:
        """Linear warm-up, then cosine decay to ``min_learning_rate_fraction`` of the peak."""
        if step < self.warmup_steps:
            return self.learning_rate * (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(1, self.steps - self.warmup_steps)
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        low = self.min_learning_rate_fraction
        return self.learning_rate * (low + (1 - low) * cosine)


class Progress(NamedTuple):
    step: int  # optimiser steps done
    total_steps: int
    loss: float  # training loss of this step's batch (nats/char)
    validation_loss: float | None  # every ``validate_every`` steps and at the last step
    tokens_per_s: float  # throughput of this stretch of training
    elapsed_s: float  # training time so far (pauses excluded)
    learning_rate: float


def _optimiser(model: TinyTransformer, config: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    # As nanoGPT: decay matrices, not norms, biases or the (few) T5 bias values
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and not n.startswith("t5_bias")]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or n.startswith("t5_bias")]
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate, betas=(0.9, 0.99), fused=device.type == "cuda")


class TrainingRun:
    """One model being trained: its optimiser, data stream, history; resumable after a stop."""

    def __init__(
        self,
        model_config: ModelConfig,
        train_config: TrainConfig,
        corpus: Corpus | None = None,
        device: torch.device | str | None = None,
    ):
        self.corpus = corpus or load_corpus()
        if model_config.vocab_size != self.corpus.vocab_size:
            model_config = model_config.replace(vocab_size=self.corpus.vocab_size)
        self.model_config = model_config
        self.train_config = train_config
        self.device = torch.device(device) if device is not None else compute_device()
        with _SEEDING, torch.random.fork_rng(devices=[]):  # seeded init, even with several sessions at once
            torch.manual_seed(train_config.seed)
            self.model = TinyTransformer(model_config)
        self.model.to(self.device)
        self.optimiser = _optimiser(self.model, train_config, self.device)
        self.batches = torch.Generator().manual_seed(train_config.seed + 1)
        self.step = 0
        self.elapsed_s = 0.0
        self.history: list[Progress] = []
        self.validation = evenly_spaced_windows(
            self.corpus.validation, model_config.train_length, train_config.validation_windows
        )

    @property
    def done(self) -> bool:
        return self.step >= self.train_config.steps

    def steps(self, limit: int | None = None) -> Iterator[Progress]:
        """Train until the configured number of steps (or ``limit`` more), yielding after each step."""
        use_cpu_threads(self.device)
        config, length = self.train_config, self.model_config.train_length
        end = config.steps if limit is None else min(config.steps, self.step + limit)
        self.model.train()
        while self.step < end:
            started = time.perf_counter()
            batch = random_windows(self.corpus.train, length, config.batch_size, self.batches).to(self.device)
            learning_rate = config.learning_rate_at(self.step)
            for group in self.optimiser.param_groups:
                group["lr"] = learning_rate
            logits = self.model(batch[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
            self.optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
            self.optimiser.step()
            loss_value = loss.item()  # synchronises, so the timing below is honest on CUDA too
            step_seconds = time.perf_counter() - started
            self.step += 1
            validation_loss = None
            if self.step % config.validate_every == 0 or self.step == config.steps:
                validation_loss = self.validation_loss()
            self.elapsed_s += time.perf_counter() - started
            record = Progress(self.step, config.steps, loss_value, validation_loss,
                              config.batch_size * length / max(step_seconds, 1e-9), self.elapsed_s, learning_rate)
            self.history.append(record)
            yield record

    @torch.no_grad()
    def validation_loss(self) -> float:
        was_training = self.model.training
        self.model.eval()
        windows = self.validation.to(self.device)
        loss = float(self.model.token_losses(windows[:, :-1], windows[:, 1:]).mean())
        self.model.train(was_training)
        return loss

    def unigram_baseline(self) -> float:
        return unigram_baseline(self.corpus.train, self.corpus.validation)

    def tokens_per_s(self) -> float:
        """Training throughput over the whole run so far."""
        tokens = self.step * self.train_config.batch_size * self.model_config.train_length
        return tokens / self.elapsed_s if self.elapsed_s else 0.0


# --- evaluation ------------------------------------------------------------------------------


class LengthResult(NamedTuple):
    method: str
    length: int  # L'
    loss: torch.Tensor  # per position, mean over windows (nats)
    accuracy: torch.Tensor  # per position, fraction of windows whose next character was top-1
    seconds: float

    @property
    def mean_loss(self) -> float:
        return float(self.loss.mean())

    @property
    def mean_accuracy(self) -> float:
        return float(self.accuracy.mean())

    def mean_loss_between(self, start: int, stop: int) -> float:
        return float(self.loss[start:stop].mean())


@dataclass
class Evaluation:
    """Per-position loss and accuracy for every (method, length) pair."""

    train_length: int
    results: list[LengthResult] = field(default_factory=list)

    def __contains__(self, key: tuple[str, int]) -> bool:
        return any((r.method, r.length) == tuple(key) for r in self.results)

    def get(self, method: str, length: int) -> LengthResult:
        for result in self.results:
            if result.method == method and result.length == length:
                return result
        raise KeyError((method, length))

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(r.method for r in self.results))

    @property
    def lengths(self) -> list[int]:
        return sorted({r.length for r in self.results})


def evaluation_windows(corpus: Corpus, length: int, tokens: int) -> torch.Tensor:
    """Validation windows of L' + 1 characters: about ``tokens`` characters in all, at least 4 windows."""
    count = max(4, math.ceil(tokens / length))
    return evenly_spaced_windows(corpus.validation, length, count)


def _chunks(windows: torch.Tensor, length: int, attention_budget: int) -> Iterator[torch.Tensor]:
    # bound batch × T² so a 16× evaluation fits in memory
    per_chunk = max(1, attention_budget // (length * length))
    yield from windows.split(per_chunk)


@torch.no_grad()
def _losses(model: TinyTransformer, windows: torch.Tensor, attention_budget: int) -> tuple[torch.Tensor, torch.Tensor]:
    device = next(model.parameters()).device
    losses, hits = [], []
    for chunk in _chunks(windows, windows.shape[1] - 1, attention_budget):
        chunk = chunk.to(device)
        logits = model(chunk[:, :-1])
        targets = chunk[:, 1:]
        losses.append(F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").cpu())
        hits.append((logits.argmax(-1) == targets).cpu())
    return torch.cat(losses).double(), torch.cat(hits).double()


@torch.no_grad()
def _dynamic_losses(
    model: TinyTransformer, windows: torch.Tensor, train_length: int, spec_for: Callable, attention_budget: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic NTK as during generation: positions [a, b) scored with the frequencies for length b."""
    length = windows.shape[1] - 1
    losses, hits = [], []
    for start in range(0, length, train_length):  # a few blocks of L positions, not a loop over positions
        stop = min(length, start + train_length)
        model.set_rope(spec_for(stop))
        block_losses, block_hits = _losses(model, windows[:, : stop + 1], attention_budget)
        losses.append(block_losses[:, start:stop])
        hits.append(block_hits[:, start:stop])
    return torch.cat(losses, dim=1), torch.cat(hits, dim=1)


def evaluate(
    model: TinyTransformer,
    corpus: Corpus,
    lengths: Sequence[int],
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    tokens_per_length: int = EVAL_CHARACTERS_PER_LENGTH,
    attention_budget: int = 1 << 22,
    on_result: Callable[[LengthResult], bool | None] | None = None,
) -> Evaluation:
    """Per-position loss/accuracy at each length, for each method (RoPE) or as trained (others).

    ``on_result`` is called after each (method, length); returning True stops the evaluation
    (the results so far are kept).
    """
    config = model.config
    train_length = config.train_length
    if config.position != "rope":
        methods = (AS_TRAINED,)
    unknown = [m for m in methods if m not in METHODS]
    if config.position == "rope" and unknown:
        raise ValueError(f"Unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}.")
    if config.position == "learned" and max(lengths) > config.max_positions:
        raise ValueError(f"The learned table stops at {config.max_positions:,} positions.")
    evaluation = Evaluation(train_length)
    was_training = model.training
    model.eval()
    try:
        for length in lengths:
            windows = evaluation_windows(corpus, length, tokens_per_length)
            for method in methods:
                started = time.perf_counter()
                if method == AS_TRAINED:
                    losses, hits = _losses(model, windows, attention_budget)
                elif method == "dynamic":
                    def spec_for(current: int) -> object:
                        return method_setup("dynamic", config.head_dim, config.rope_base, train_length, current).spec

                    losses, hits = _dynamic_losses(model, windows, train_length, spec_for, attention_budget)
                else:
                    model.set_rope(method_setup(method, config.head_dim, config.rope_base, train_length, length).spec)
                    losses, hits = _losses(model, windows, attention_budget)
                result = LengthResult(method, length, losses.mean(0), hits.mean(0), time.perf_counter() - started)
                evaluation.results.append(result)
                if on_result is not None and on_result(result):
                    return evaluation
    finally:
        if model.rotary is not None:
            model.set_rope(None)
        model.train(was_training)
    return evaluation


# --- fine-tuning at the longer length --------------------------------------------------------


@dataclass
class FineTune:
    method: str
    length: int
    steps: int
    model: TinyTransformer
    history: list[Progress] = field(default_factory=list)
    before: LengthResult | None = None
    after: LengthResult | None = None


def fine_tune(
    run: TrainingRun,
    method: str,
    multiple: int,
    steps: int,
    *,
    learning_rate_fraction: float = 0.3,
    tokens_per_length: int = EVAL_CHARACTERS_PER_LENGTH,
) -> Iterator[FineTune | Progress]:
    """Train a copy of ``run``'s RoPE model ``steps`` steps at L' = multiple·L with ``method`` applied.

    Yields a Progress per step; the last item yielded is the finished ``FineTune`` with the
    per-position loss at L' before and after. Batches hold as many tokens as in training.
    """
    config = run.model_config
    if config.position != "rope":
        raise ValueError("Fine-tuning with a scaling method needs a RoPE model.")
    if method not in METHODS or method == "dynamic":
        raise ValueError(f"Fine-tune with one of {', '.join(m for m in METHODS if m != 'dynamic')} (got {method!r}).")
    length = config.train_length * multiple
    spec = method_setup(method, config.head_dim, config.rope_base, config.train_length, length).spec
    before = evaluate(run.model, run.corpus, [length], [method], tokens_per_length=tokens_per_length).results[0]
    model = copy.deepcopy(run.model)
    model.set_rope(spec)
    use_cpu_threads(run.device)
    tune_config = TrainConfig(
        steps=steps, batch_size=max(1, run.train_config.batch_size // multiple),
        learning_rate=run.train_config.learning_rate * learning_rate_fraction,
        warmup_steps=max(1, steps // 10), seed=run.train_config.seed + 7,
    )
    optimiser = _optimiser(model, tune_config, run.device)
    batches = torch.Generator().manual_seed(tune_config.seed)
    result = FineTune(method, length, steps, model, before=before)
    elapsed = 0.0
    model.train()
    for step in range(steps):
        started = time.perf_counter()
        batch = random_windows(run.corpus.train, length, tune_config.batch_size, batches).to(run.device)
        learning_rate = tune_config.learning_rate_at(step)
        for group in optimiser.param_groups:
            group["lr"] = learning_rate
        loss = model.token_losses(batch[:, :-1], batch[:, 1:]).mean()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tune_config.grad_clip)
        optimiser.step()
        loss_value = loss.item()
        seconds = time.perf_counter() - started
        elapsed += seconds
        record = Progress(step + 1, steps, loss_value, None, tune_config.batch_size * length / max(seconds, 1e-9),
                          elapsed, learning_rate)
        result.history.append(record)
        yield record
    model.eval()
    windows = evaluation_windows(run.corpus, length, tokens_per_length)
    started = time.perf_counter()
    losses, hits = _losses(model, windows, 1 << 22)
    result.after = LengthResult(method, length, losses.mean(0), hits.mean(0), time.perf_counter() - started)
    yield result


# --- the experiment a page or script runs ----------------------------------------------------


class _NoJob:
    """Stands in for a ``pe_core.jobs.Job`` when an experiment runs in the foreground."""

    def should_stop(self) -> bool:
        return False

    def report(self, item=None, *, phase=None, fraction=None) -> None:
        pass


@dataclass
class Experiment:
    """A training run, the evaluation of its model, and any fine-tunes: everything the page keeps.

    The ``*_work`` methods take a job (anything with ``should_stop()`` and ``report()``, such as
    ``pe_core.jobs.Job``) so they can run in a background thread and stop early, keeping results.
    """

    run: TrainingRun
    multiples: tuple[int, ...] = DEFAULT_MULTIPLES
    methods: tuple[str, ...] = DEFAULT_METHODS
    tokens_per_length: int = EVAL_CHARACTERS_PER_LENGTH
    evaluation: Evaluation | None = None
    fine_tunes: list[FineTune] = field(default_factory=list)
    unigram_baseline: float = float("nan")
    settings: dict | None = None  # what the page asked for, to notice when its controls have moved on
    serial: int = field(default_factory=lambda: next(_serials))

    def __post_init__(self) -> None:
        self.multiples = tuple(sorted(set(self.multiples)))
        if math.isnan(self.unigram_baseline):
            self.unigram_baseline = self.run.unigram_baseline()

    @property
    def lengths(self) -> list[int]:
        return [self.run.model_config.train_length * m for m in self.multiples]

    @property
    def encoding(self) -> str:
        return self.run.model_config.position

    def train_work(self, job=None) -> None:
        """Train to the configured number of steps (or until stopped), then evaluate."""
        job = job or _NoJob()
        total = self.run.train_config.steps
        job.report(phase="training", fraction=self.run.step / total)
        for record in self.run.steps():
            job.report(record, phase="training", fraction=record.step / total)
            if job.should_stop():
                job.report(phase=f"stopped after {record.step} of {total} steps")
                return
        self.evaluate_work(job)

    def evaluate_work(self, job=None) -> None:
        """Evaluate every method at every length; a stop keeps the (method, length) pairs done."""
        job = job or _NoJob()
        methods = self.methods if self.encoding == "rope" else (AS_TRAINED,)
        total = len(methods) * len(self.lengths)
        self.evaluation = Evaluation(self.run.model_config.train_length)
        job.report(phase="evaluating", fraction=0.0)

        def on_result(result: LengthResult) -> bool:
            self.evaluation.results.append(result)
            done = len(self.evaluation.results)
            job.report(phase=f"evaluated {method_title(result.method)} at {result.length}", fraction=done / total)
            return job.should_stop()

        evaluate(self.run.model, self.run.corpus, self.lengths, methods,
                 tokens_per_length=self.tokens_per_length, on_result=on_result)

    def fine_tune_work(self, method: str, multiple: int, steps: int, job=None) -> FineTune | None:
        """Fine-tune a copy at L' = multiple·L with ``method``; kept (replacing an older one) unless stopped."""
        job = job or _NoJob()
        job.report(phase=f"measuring {method_title(method)} at {multiple}× before fine-tuning", fraction=0.0)
        for item in fine_tune(self.run, method, multiple, steps, tokens_per_length=self.tokens_per_length):
            if isinstance(item, FineTune):
                self.fine_tunes = [f for f in self.fine_tunes if (f.method, f.length) != (item.method, item.length)]
                self.fine_tunes.append(item)
                job.report(phase="fine-tuned", fraction=1.0)
                return item
            job.report(item, phase=f"fine-tuning {method_title(method)} at {multiple}×", fraction=item.step / steps)
            if job.should_stop():
                job.report(phase="fine-tuning stopped")
                return None
        return None

    def run_to_end(self, fine_tune_methods: Sequence[str] = (), fine_tune_steps: int = 50) -> Experiment:
        """Foreground: train, evaluate, and fine-tune at the longest length (scripts and export)."""
        self.train_work()
        if self.encoding == "rope":
            for method in fine_tune_methods:
                self.fine_tune_work(method, max(self.multiples), fine_tune_steps)
        return self


def default_experiment(**overrides) -> Experiment:
    """The page's default experiment; any ModelConfig or TrainConfig field, ``multiples``, ``methods``,
    ``tokens_per_length`` or ``device`` can be overridden by keyword."""
    model_fields = set(ModelConfig.__dataclass_fields__)
    train_fields = set(TrainConfig.__dataclass_fields__)
    experiment_fields = {"multiples", "methods", "tokens_per_length"}
    unknown = set(overrides) - model_fields - train_fields - experiment_fields - {"device"}
    if unknown:
        raise ValueError(f"Unknown setting(s): {', '.join(sorted(unknown))}.")
    multiples = tuple(overrides.get("multiples", DEFAULT_MULTIPLES))
    model_values = {k: v for k, v in overrides.items() if k in model_fields}
    train_length = model_values.get("train_length", ModelConfig.train_length)
    model_values.setdefault("max_positions", train_length * max(multiples))
    model_config = ModelConfig(**model_values)
    train_values = {k: v for k, v in overrides.items() if k in train_fields}
    train_values.setdefault("batch_size", batch_size_for(train_length))
    train_config = TrainConfig(**train_values)
    run = TrainingRun(model_config, train_config, device=overrides.get("device"))
    return Experiment(run, multiples, tuple(overrides.get("methods", DEFAULT_METHODS)),
                      overrides.get("tokens_per_length", EVAL_CHARACTERS_PER_LENGTH))


# --- summaries and JSON -----------------------------------------------------------------------


def summary_rows(evaluation: Evaluation) -> list[dict]:
    """One row per method: accuracy and loss at each length, and loss inside / beyond L at the longest."""
    train_length = evaluation.train_length
    longest = max(evaluation.lengths)
    rows = []
    for method in evaluation.methods:
        row: dict = {"method": method, "title": method_title(method)}
        for length in evaluation.lengths:
            try:
                result = evaluation.get(method, length)
            except KeyError:
                continue
            row[f"accuracy@{length}"] = result.mean_accuracy
            row[f"loss@{length}"] = result.mean_loss
        try:
            result = evaluation.get(method, longest)
            row["loss_inside_L@longest"] = result.mean_loss_between(0, train_length)
            row["loss_beyond_L@longest"] = result.mean_loss_between(train_length, longest) if longest > train_length \
                else None
        except KeyError:
            pass
        rows.append(row)
    return rows


def summary_table(evaluation: Evaluation) -> tuple[list[str], list[list[str]]]:
    """Header and rows of next-character accuracy, as in Su's table (seed 001): method × length."""
    train_length = evaluation.train_length
    lengths = evaluation.lengths
    header = ["Method"] + [
        f"{n:,} (trained)" if n == train_length else f"{n:,} ({n // train_length}×)" for n in lengths
    ]
    rows = []
    for method in evaluation.methods:
        cells = [method_title(method)]
        for length in lengths:
            cells.append(f"{evaluation.get(method, length).mean_accuracy:.2%}" if (method, length) in evaluation
                         else "–")
        rows.append(cells)
    return header, rows


def _rounded(values: torch.Tensor, digits: int = 4) -> list[float]:
    return [round(v, digits) for v in values.tolist()]


def evaluation_json(evaluation: Evaluation) -> dict:
    return {
        "train_length": evaluation.train_length,
        "lengths": evaluation.lengths,
        "methods": evaluation.methods,
        "summary": summary_rows(evaluation),
        "per_position": [
            {"method": r.method, "length": r.length, "mean_loss": r.mean_loss, "mean_accuracy": r.mean_accuracy,
             "seconds": r.seconds, "loss": _rounded(r.loss), "accuracy": _rounded(r.accuracy)}
            for r in evaluation.results
        ],
    }


def run_json(run: TrainingRun, evaluation: Evaluation | None, fine_tunes: Sequence[FineTune] = ()) -> dict:
    """Everything about one run as plain JSON values."""
    return {
        "model_config": asdict(run.model_config),
        "train_config": asdict(run.train_config),
        "encoding": ENCODING_TITLES[run.model_config.position],
        "parameters": run.model.num_parameters(),
        "device": device_label(run.device),
        "corpus": {
            "source": run.corpus.source, "sha256": run.corpus.sha256,
            "train_characters": run.corpus.train.numel(), "validation_characters": run.corpus.validation.numel(),
            "unigram_baseline_loss": run.unigram_baseline(),
        },
        "steps_done": run.step,
        "training_seconds": run.elapsed_s,
        "tokens_per_s": run.tokens_per_s(),
        "loss_curve": [p._asdict() for p in run.history],
        "final_validation_loss": next((p.validation_loss for p in reversed(run.history)
                                       if p.validation_loss is not None), None),
        "evaluation": None if evaluation is None else evaluation_json(evaluation),
        "fine_tunes": [
            {"method": f.method, "length": f.length, "steps": f.steps,
             "loss_before": f.before.mean_loss if f.before else None,
             "loss_after": f.after.mean_loss if f.after else None,
             "accuracy_before": f.before.mean_accuracy if f.before else None,
             "accuracy_after": f.after.mean_accuracy if f.after else None,
             "loss_curve": [p.loss for p in f.history]}
            for f in fine_tunes
        ],
    }


# --- CLI ----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    defaults_model, defaults_train = ModelConfig(), TrainConfig()
    parser = argparse.ArgumentParser(
        prog="python -m pe_core.train",
        description="Train the tiny transformer at a short length and evaluate how it extrapolates; writes JSON.",
    )
    parser.add_argument("--encodings", nargs="+", default=["rope"], choices=POSITION_ENCODINGS,
                        help="position encodings to train, one model each (default: rope)")
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=METHODS,
                        help="RoPE scaling methods to evaluate")
    parser.add_argument("--multiples", nargs="+", type=int, default=list(DEFAULT_MULTIPLES),
                        help="evaluation lengths as multiples of the training length")
    parser.add_argument("--train-length", type=int, default=defaults_model.train_length)
    parser.add_argument("--layers", type=int, default=defaults_model.n_layer)
    parser.add_argument("--heads", type=int, default=defaults_model.n_head)
    parser.add_argument("--width", type=int, default=defaults_model.d_model, help="d_model")
    parser.add_argument("--base", type=float, default=defaults_model.rope_base)
    parser.add_argument("--pairing", choices=("half", "interleaved"), default=defaults_model.rope_pairing)
    parser.add_argument("--steps", type=int, default=defaults_train.steps)
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"sequences per step (default: {TOKENS_PER_STEP} characters / training length)")
    parser.add_argument("--learning-rate", type=float, default=defaults_train.learning_rate)
    parser.add_argument("--seed", type=int, default=defaults_train.seed)
    parser.add_argument("--eval-tokens", type=int, default=EVAL_CHARACTERS_PER_LENGTH,
                        help="validation characters per length")
    parser.add_argument("--fine-tune", nargs="*", default=[], choices=FINE_TUNE_METHODS,
                        help="methods to fine-tune at the longest length (RoPE only)")
    parser.add_argument("--fine-tune-steps", type=int, default=50)
    parser.add_argument("--device", default=None, choices=("cpu", "cuda", "mps"),
                        help="where to train (default: the best available, or PE_DEVICE)")
    parser.add_argument("--out", default="-", help="JSON file to write ('-' for stdout)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def main(argv: Sequence[str] | None = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda was asked for, but torch sees no CUDA device here.")
    corpus = load_corpus()
    report: dict = {"runs": []}
    for encoding in args.encodings:
        model_config = ModelConfig(
            n_layer=args.layers, n_head=args.heads, d_model=args.width, train_length=args.train_length,
            max_positions=args.train_length * max(args.multiples), position=encoding, rope_base=args.base,
            rope_pairing=args.pairing,
        )
        train_config = TrainConfig(steps=args.steps, batch_size=args.batch_size or batch_size_for(args.train_length),
                                   learning_rate=args.learning_rate, seed=args.seed)
        run = TrainingRun(model_config, train_config, corpus, args.device)
        for record in run.steps():
            if not args.quiet and (record.validation_loss is not None or record.step == 1):
                validation = "" if record.validation_loss is None else f" val {record.validation_loss:.3f}"
                print(f"[{encoding}] step {record.step}/{record.total_steps} loss {record.loss:.3f}{validation} "
                      f"{record.tokens_per_s:,.0f} tok/s", file=sys.stderr)
        lengths = [args.train_length * m for m in args.multiples]
        evaluation = evaluate(run.model, corpus, lengths, args.methods, tokens_per_length=args.eval_tokens)
        fine_tunes = []
        if encoding == "rope":
            for method in args.fine_tune:
                for item in fine_tune(run, method, max(args.multiples), args.fine_tune_steps,
                                      tokens_per_length=args.eval_tokens):
                    if isinstance(item, FineTune):
                        fine_tunes.append(item)
        report["runs"].append(run_json(run, evaluation, fine_tunes))
        if not args.quiet:
            for row in summary_rows(evaluation):
                accuracies = "  ".join(f"{k.split('@')[1]}: {v:.1%}" for k, v in row.items() if k.startswith("acc"))
                print(f"[{encoding}] {row['title']:<28} {accuracies}", file=sys.stderr)
    text = json.dumps(report, indent=1)
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return report


if __name__ == "__main__":
    main()
