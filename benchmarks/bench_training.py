"""Tiny-transformer timings: training throughput, evaluation per method, the store's lookup, core maths.

Training tokens/s decides how long a default run takes (steps × step time; 1,000 steps of about 24 ms on
the 2-core machine, each batch's two halves side by side; 43 ms on one core): ``python -m benchmarks --filter training`` prints a step's time
(tokens/s = 2,048 / step time). The lesson's figures are timed by bench_lessons
(it skips this expensive lesson) and the page by bench_pages.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import tempfile

import torch

from benchmarks import Case
from pe_core.data import load_corpus
from pe_core.methods import method_setup
from pe_core.model import Rotary, rectified_scores, rotate
from pe_core.train import ExperimentConfig, TrainingRun, open_store, run_experiment
from pe_core.train.evaluate import evaluate
from pe_core.train.spectrum import unseen_angle_share

STEPS_PER_CASE = 5
DEFAULT = ExperimentConfig()


@functools.lru_cache(maxsize=4)
def _run(encoding: str = "rope", device: str = "cpu") -> TrainingRun:
    config = DEFAULT.replace(encoding=encoding)
    endless = dataclasses.replace(config.train_config(), steps=10**6)
    run = TrainingRun(config.model_config(), endless, device=device)
    for _ in run.steps(2):  # warm: allocator, kernels
        pass
    return run


def _train_steps(encoding: str, device: str = "cpu", threads: int | None = None) -> None:
    saved = os.environ.get("PE_TRAIN_THREADS")
    if threads is not None:
        os.environ["PE_TRAIN_THREADS"] = str(threads)
    try:
        for _ in _run(encoding, device).steps(STEPS_PER_CASE):
            pass
    finally:
        if saved is None:
            os.environ.pop("PE_TRAIN_THREADS", None)
        else:
            os.environ["PE_TRAIN_THREADS"] = saved


def _rectified_vectorised() -> torch.Tensor:
    return rectified_scores(_QUERIES, _QUERIES, _rerope())


def _rectified_loop() -> torch.Tensor:
    # naive: one (query, key) pair at a time, q rotated by the rectified relative position (a slice, scaled up)
    rotary = _rerope()
    q, k = _QUERIES[0, 0], _QUERIES[0, 0]
    out = torch.empty(64, 512)
    for i in range(64):
        for j in range(512):
            distance = i - j
            position = float(distance if distance < rotary.window else rotary.window)
            cos, sin = rotary.angles_cos_sin(torch.tensor([position]), 512, torch.device("cpu"), torch.float32)
            out[i, j] = rotate(q[i : i + 1], cos, sin, "half")[0] @ k[j]
    return out


def _rerope():
    rotary = Rotary(method_setup("direct", 64, 50.0, 64, 512).spec, "half", train_length=64)
    rotary.set_spec(rotary.spec, window=32)
    return rotary


def _evaluate(method: str, multiple: int) -> None:
    run = _run("rope")
    evaluate(run.model, run.corpus, [DEFAULT.train_length * multiple], [method], tokens_per_length=16_384)


_QUERIES = torch.randn(4, 2, 512, 64)


def _cos_sin():
    spec = method_setup("yarn", 64, 50.0, 64, 512).spec
    return Rotary(spec, "interleaved").cos_sin(512, torch.device("cpu"), torch.float32)


def _rotate_vectorised() -> torch.Tensor:
    cos, sin = _cos_sin()
    return rotate(_QUERIES, cos, sin, "interleaved")


def _rotate_loop() -> torch.Tensor:
    cos, sin = _cos_sin()
    out = _QUERIES.clone()
    for m in range(512):
        for i in range(32):
            a, b = _QUERIES[..., m, 2 * i], _QUERIES[..., m, 2 * i + 1]
            out[..., m, 2 * i] = a * cos[m, i] - b * sin[m, i]
            out[..., m, 2 * i + 1] = a * sin[m, i] + b * cos[m, i]
    return out


_LLAMA_THETA = 10_000.0 ** (-torch.arange(64, dtype=torch.float64) / 64)


def _unseen_vectorised() -> float:
    return unseen_angle_share(_LLAMA_THETA, 4096, 8 * 4096)


def _unseen_loop() -> float:
    # naive: one pair at a time, one position at a time (a slice of the positions, scaled up)
    unseen = 0
    for theta in _LLAMA_THETA.tolist():
        arc = 4095 * theta
        for m in range(0, 8 * 4096, 64):
            unseen += arc < 2 * math.pi and (m * theta) % (2 * math.pi) > arc
    return unseen * 64 / (8 * 4096 * 64)


@functools.lru_cache(maxsize=1)
def _stored():
    """A store holding one tiny run, and its config (what a "stored rerun" looks up)."""
    config = DEFAULT.replace(steps=2, eval_tokens=512, fine_tune_steps=1)
    store = open_store(os.path.join(tempfile.mkdtemp(prefix="bench-store-"), "runs.sqlite3"))
    store.put(run_experiment(config, device="cpu"))
    return store, config


def _lookup() -> None:
    store, config = _stored()
    assert store.get(config.hash) is not None


def _corpus_cold() -> None:
    load_corpus.cache_clear()
    load_corpus()


CASES = [
    Case("training", f"train step: default RoPE model ({DEFAULT.d_model} wide, {DEFAULT.n_head}×{DEFAULT.head_size} "
         f"heads, L={DEFAULT.train_length}), {STEPS_PER_CASE} steps", functools.partial(_train_steps, "rope"),
         repeats=3),
    Case("training", f"train step: default RoPE model, all {os.cpu_count()} cores, {STEPS_PER_CASE} steps",
         functools.partial(_train_steps, "rope", "cpu", os.cpu_count()), repeats=3),
    *[Case("training", f"train step: {encoding}, same size", functools.partial(_train_steps, encoding), repeats=3)
      for encoding in ("alibi", "xl", "deberta")],
    *[Case("training", f"evaluate {method} at 8×, 16k characters", functools.partial(_evaluate, method, 8), repeats=3)
      for method in ("direct", "dynamic", "yarn", "direct_logn", "rerope")],
    Case("training", "rotate q: 4×2 heads × 512 positions × d=64", _rotate_vectorised, _rotate_loop),
    Case("training", "ReRoPE scores: 4×2 heads × 512² (vs a loop over 64 queries × 512 keys of one head)",
         _rectified_vectorised, _rectified_loop, repeats=3),
    Case("training", "share of unseen angles, Llama 2 at 8× (vs a loop over pairs and every 64th position)",
         _unseen_vectorised, _unseen_loop, repeats=3),
    Case("training", "run store: look up a stored run (SQLite)", _lookup, repeats=20),
    Case("training", "corpus: parse stdlib docstrings (cold)", _corpus_cold, repeats=2),
]

if torch.cuda.is_available():
    CASES.append(Case("training", "train step: default model on CUDA (bf16 autocast)",
                      functools.partial(_train_steps, "rope", "cuda"), repeats=3))
