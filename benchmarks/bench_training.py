"""Tiny-transformer timings: training throughput, evaluation per method, and the page's figures.

Training tokens/s is the number that decides whether a default run fits in a minute:
``python -m benchmarks --filter training`` prints a step's time; tokens/s = 2048 / step time.
"""

from __future__ import annotations

import functools
import os

import torch

from benchmarks import Case
from figures import training as figs
from pe_core.data import EVAL_CHARACTERS_PER_LENGTH, load_corpus
from pe_core.methods import method_setup
from pe_core.model import ModelConfig, Rotary, rotate
from pe_core.train import DEFAULT_METHODS, Experiment, TrainConfig, TrainingRun, evaluate, summary_table

STEPS_PER_CASE = 5


@functools.lru_cache(maxsize=4)
def _run(position: str = "rope", device: str = "cpu") -> TrainingRun:
    run = TrainingRun(ModelConfig(position=position, max_positions=64 * 16), TrainConfig(steps=10**6), device=device)
    for _ in run.steps(2):  # warm: allocator, kernels
        pass
    return run


def _train_steps(position: str, device: str = "cpu", threads: int | None = None) -> None:
    saved = os.environ.get("PE_TRAIN_THREADS")
    if threads is not None:
        os.environ["PE_TRAIN_THREADS"] = str(threads)
    try:
        for _ in _run(position, device).steps(STEPS_PER_CASE):
            pass
    finally:
        if saved is None:
            os.environ.pop("PE_TRAIN_THREADS", None)
        else:
            os.environ["PE_TRAIN_THREADS"] = saved


def _evaluate(method: str, multiple: int) -> None:
    run = _run("rope")
    evaluate(run.model, run.corpus, [64 * multiple], [method], tokens_per_length=EVAL_CHARACTERS_PER_LENGTH)


def _rotate_vectorised() -> torch.Tensor:
    spec = method_setup("yarn", 32, 10000.0, 64, 512).spec
    cos, sin = Rotary(spec, "interleaved").cos_sin(512, torch.device("cpu"), torch.float32)
    return rotate(_QUERIES, cos, sin, "interleaved")


def _rotate_loop() -> torch.Tensor:
    # the naive version: one position and one pair at a time
    spec = method_setup("yarn", 32, 10000.0, 64, 512).spec
    cos, sin = Rotary(spec, "interleaved").cos_sin(512, torch.device("cpu"), torch.float32)
    out = _QUERIES.clone()
    for m in range(512):
        for i in range(16):
            a, b = _QUERIES[..., m, 2 * i], _QUERIES[..., m, 2 * i + 1]
            out[..., m, 2 * i] = a * cos[m, i] - b * sin[m, i]
            out[..., m, 2 * i + 1] = a * sin[m, i] + b * cos[m, i]
    return out


_QUERIES = torch.randn(4, 4, 512, 32)


@functools.lru_cache(maxsize=2)
def _finished_experiment(multiples: tuple[int, ...]) -> Experiment:
    """A (briefly trained) experiment with a full evaluation, for timing what a page rerun draws."""
    run = TrainingRun(ModelConfig(max_positions=64 * max(multiples)), TrainConfig(steps=5), device="cpu")
    experiment = Experiment(run, multiples, DEFAULT_METHODS, tokens_per_length=2048)
    experiment.train_work()
    return experiment


def _page_figures(multiples: tuple[int, ...]) -> None:
    experiment = _finished_experiment(multiples)
    figs.experiment_figures(experiment)
    summary_table(experiment.evaluation)


def _corpus_cold() -> None:
    load_corpus.cache_clear()
    load_corpus()


CASES = [
    Case("training", "train step: default RoPE model (2 layers × 128, 4 heads, L=64, batch 32), 5 steps",
         functools.partial(_train_steps, "rope"), repeats=3),
    Case("training", f"train step: default RoPE model, all {os.cpu_count()} cores, 5 steps",
         functools.partial(_train_steps, "rope", "cpu", os.cpu_count()), repeats=3),
    Case("training", "train step: ALiBi, same size, 5 steps", functools.partial(_train_steps, "alibi"), repeats=3),
    Case("training", "train step: T5 bias, same size, 5 steps", functools.partial(_train_steps, "t5"), repeats=3),
    *[Case("training", f"evaluate {method} at 8× (512), 16k characters", functools.partial(_evaluate, method, 8),
           repeats=3) for method in ("direct", "pi", "ntk", "dynamic", "yarn")],
    Case("training", "evaluate direct at 16× (1024), 16k characters", functools.partial(_evaluate, "direct", 16),
         repeats=3),
    Case("training", "rotate q: yarn spec, 4×4 heads × 512 positions × d=32", _rotate_vectorised, _rotate_loop),
    Case("training", "corpus: parse stdlib docstrings (cold)", _corpus_cold, repeats=2),
    Case("page: training", "results figures + table, defaults (1-8×, 5 methods)",
         functools.partial(_page_figures, (1, 2, 4, 8)), repeats=5),
    Case("page: training", "results figures + table, heaviest (1-16×, 5 methods)",
         functools.partial(_page_figures, (1, 2, 4, 8, 16)), repeats=5),
]

if torch.cuda.is_available():
    CASES.append(Case("training", "train step: default model on CUDA, 5 steps",
                      functools.partial(_train_steps, "rope", "cuda"), repeats=3))
