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
from pe_core.data import load_corpus, random_windows
from pe_core.methods import method_setup
from pe_core.model import Rotary, TinyTransformer, rectified_scores, rotate
from pe_core.train import ExperimentConfig, TrainingRun, open_store, run_experiment
from pe_core.train.evaluate import evaluate, evaluate_one, evaluation_windows
from pe_core.train.experiment import ExperimentRun, map_experiments
from pe_core.train.loop import TrainingBatch, training_precision
from pe_core.train.spectrum import unseen_angle_share

STEPS_PER_CASE = 5
BATCH_STEPS = 4  # steps of every run in the batched-training rows
DEFAULT = ExperimentConfig()
SEEDS = (0, 1, 2, 3, 4)


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


@functools.lru_cache(maxsize=4)
def _seed_runs(tag: str, encoding: str = "rope") -> tuple[TrainingRun, ...]:
    """The default model's runs of every seed, warmed (``tag`` keeps the batched and the one-by-one sets apart)."""
    runs = []
    for seed in SEEDS:
        config = DEFAULT.replace(encoding=encoding, seed=seed)
        run = TrainingRun(config.model_config(), dataclasses.replace(config.train_config(), steps=10**6), device="cpu")
        for _ in run.steps(2):
            pass
        runs.append(run)
    return tuple(runs)


def _seeds_batched(encoding: str = "rope") -> None:
    for _ in TrainingBatch(_seed_runs("batched", encoding)).steps(BATCH_STEPS):
        pass


def _seeds_one_by_one(encoding: str = "rope") -> None:
    for run in _seed_runs("alone", encoding):
        for _ in run.steps(BATCH_STEPS):
            pass


@functools.lru_cache(maxsize=1)
def _seed_experiments() -> tuple[ExperimentRun, ...]:
    """Five seeds' experiments whose models are evaluated (untrained weights evaluate at the same cost)."""
    return tuple(ExperimentRun(DEFAULT.replace(seed=seed), device="cpu") for seed in SEEDS)


def _evaluate_seeds(batched: bool) -> None:
    windows = evaluation_windows(load_corpus(), DEFAULT.train_length * 8, DEFAULT.eval_tokens)

    def one(experiment: ExperimentRun):
        return evaluate_one(experiment.run.model, windows, "yarn")

    experiments = _seed_experiments()
    if batched:
        map_experiments(experiments, one)
    else:
        for experiment in experiments:
            one(experiment)


@functools.lru_cache(maxsize=1)
def _plain():
    """nanoGPT's training loop on the trainer's shapes: one model, the whole batch at once, PyTorch's own threads."""
    config = DEFAULT
    torch.manual_seed(config.seed)
    model = TinyTransformer(config.model_config())
    train = config.train_config()
    optimiser = torch.optim.AdamW(model.parameters(), lr=train.learning_rate, betas=(0.9, 0.99),
                                  weight_decay=train.weight_decay)
    return model, optimiser, train, torch.Generator().manual_seed(1)


def _plain_steps() -> None:
    model, optimiser, train, generator = _plain()
    corpus = load_corpus()
    threads = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)  # as a plain script runs: every core inside each product
    try:
        for _ in range(STEPS_PER_CASE):
            batch = random_windows(corpus.train, DEFAULT.train_length, train.batch_size, generator)
            logits = model(batch[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), train.grad_clip)
            optimiser.step()
            loss.item()
    finally:
        torch.set_num_threads(threads)


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


@functools.lru_cache(maxsize=1)
def _eval_model() -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer(DEFAULT.model_config()).eval()


def _evaluate_all(retrieval: bool) -> None:
    """A default RoPE run's evaluation phase: every method at every length (and its passkey retrieval)."""
    from pe_core.train.evaluate import retrieve
    from pe_core.train.retrieval import make_probes

    model, corpus = _eval_model(), load_corpus()
    for length in DEFAULT.lengths:
        windows = evaluation_windows(corpus, length, DEFAULT.eval_tokens)
        probes = make_probes(corpus.validation, length) if retrieval else None
        for method in DEFAULT.methods:
            evaluate_one(model, windows, method)
            if probes is not None:
                retrieve(model, probes, method)


def _retrieve(method: str, multiple: int) -> None:
    from pe_core.train.evaluate import retrieve
    from pe_core.train.retrieval import make_probes

    retrieve(_eval_model(), make_probes(load_corpus().validation, DEFAULT.train_length * multiple), method)


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
    Case("training", f"train step: default RoPE model, {STEPS_PER_CASE} steps (vs a plain nanoGPT-style loop, same "
         "shapes)", functools.partial(_train_steps, "rope"), _plain_steps, repeats=3),
    *[Case("training", f"batched: {len(SEEDS)} seeds of the default {encoding} model as one batch, {BATCH_STEPS} steps "
           f"each (vs one after another)", functools.partial(_seeds_batched, encoding),
           functools.partial(_seeds_one_by_one, encoding), repeats=3) for encoding in ("rope", "alibi")],
    Case("training", f"batched: YaRN at 8× for {len(SEEDS)} seeds' models in one round (vs one after another)",
         functools.partial(_evaluate_seeds, True), functools.partial(_evaluate_seeds, False), repeats=3),
    Case("training", f"train step: default RoPE model, all {os.cpu_count()} cores, {STEPS_PER_CASE} steps",
         functools.partial(_train_steps, "rope", "cpu", os.cpu_count()), repeats=3),
    *[Case("training", f"train step: {encoding}, same size", functools.partial(_train_steps, encoding), repeats=3)
      for encoding in ("alibi", "xl", "deberta")],
    *[Case("training", f"evaluate {method} at 8×, 16k characters", functools.partial(_evaluate, method, 8), repeats=3)
      for method in ("direct", "dynamic", "yarn", "direct_logn", "rerope")],
    Case("training", "passkey retrieval: YaRN at 8×, 5 depths × 4 probes in one pass (vs next-character accuracy, "
         "16k characters)", functools.partial(_retrieve, "yarn", 8), functools.partial(_evaluate, "yarn", 8),
         repeats=3),
    Case("training", "a RoPE run's evaluation phase with passkey retrieval (vs without: every method at "
         "1×-8×)", functools.partial(_evaluate_all, True), functools.partial(_evaluate_all, False), repeats=1),
    Case("training", "rotate q: 4×2 heads × 512 positions × d=64", _rotate_vectorised, _rotate_loop),
    Case("training", "ReRoPE scores: 4×2 heads × 512² (vs a loop over 64 queries × 512 keys of one head)",
         _rectified_vectorised, _rectified_loop, repeats=3),
    Case("training", "share of unseen angles, Llama 2 at 8× (vs a loop over pairs and every 64th position)",
         _unseen_vectorised, _unseen_loop, repeats=3),
    Case("training", "run store: look up a stored run (SQLite)", _lookup, repeats=20),
    Case("training", "corpus: parse stdlib docstrings (cold)", _corpus_cold, repeats=2),
]

if torch.cuda.is_available():
    CASES.append(Case("training", f"train step: default model on CUDA "
                      f"({training_precision(torch.device('cuda')).name})",
                      functools.partial(_train_steps, "rope", "cuda"), repeats=3))
