"""Evaluation: per-position loss and accuracy of a trained model at 1×-16× its training length.

``INFERENCE_METHODS`` is the one registry of what a RoPE model can be run with at L′ without
training: every scaling method of ``pe_core.methods`` (applied with its spec for s = L′/L), and
Su Jianlin's inference-time tricks - log-n scaling (alone or on top of a scaling method) and
ReRoPE / Leaky ReRoPE. The CLI's choices, the lesson's options, the tables and the figures all
list methods from it. Dynamic NTK is evaluated as it behaves while generating: the loss at
position m uses the frequencies for the length reached so far, computed block by block (blocks
of L tokens, each block's forward pass covering the whole prefix). Other encodings have one
"method": the model as trained. Evaluation runs in float32 on every device, so results from a
GPU and a CPU compare.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F

from i18n import N_
from pe_core.data import EVAL_CHARACTERS_PER_LENGTH, Corpus, evenly_spaced_windows
from pe_core.methods import METHODS, method_setup
from pe_core.model import ENCODINGS, TinyTransformer
from pe_core.rope import RopeSpec, rope_frequencies
from pe_core.train.retrieval import Probes, RetrievalResult, score

AS_TRAINED = "as_trained"  # the only "method" of encodings other than RoPE: the model as it was trained
ATTENTION_BUDGET = 1 << 22  # batch × T² per forward pass, so a 16× evaluation fits in memory


class InferenceMethod(NamedTuple):
    """How a RoPE model trained at L is run at L′ without training."""

    title: str  # N_()-marked
    reference: str  # a key of the References page
    frequencies: str  # the ``pe_core.methods.METHODS`` scaling method that sets θ at L′
    style: str  # the theme's method key it is drawn with (log-n variants: their scaling method's)
    logn: bool = False  # each query × max(1, log_L n), n the keys it sees (Su 2021; Qwen's logn-attention)
    window: float | None = None  # ReRoPE: relative positions beyond w = window·L are rectified (Su 2023)
    leak: float | None = None  # Leaky ReRoPE's k: slope 1/k beyond the window (None: ReRoPE, constant w)

    @property
    def fine_tunable(self) -> bool:
        """Trainable as it is: fixed frequencies (not dynamic NTK), no rectified attention, no log-n."""
        return self.frequencies != "dynamic" and self.window is None and not self.logn

    def window_at(self, train_length: int) -> int | None:
        return None if self.window is None else max(1, round(self.window * train_length))


INFERENCE_METHODS: dict[str, InferenceMethod] = {
    **{name: InferenceMethod(m.title, m.reference, name, name) for name, m in METHODS.items()},
    # log n on top of Su's three rows (9675: Baseline, PI-RoPE, NTK-RoPE, each with and without log n)
    "direct_logn": InferenceMethod(N_("Direct extrapolation + log n"), "logn", "direct", "direct", logn=True),
    "pi_logn": InferenceMethod(N_("Position Interpolation + log n"), "logn", "pi", "pi", logn=True),
    "ntk_logn": InferenceMethod(N_("NTK-aware + log n"), "logn", "ntk", "ntk", logn=True),
    # ReRoPE with w = L/2 (Su's w256 at L = 512), Leaky ReRoPE with w = L/4 and k = 16 (his best, w128-k16)
    "rerope": InferenceMethod(N_("ReRoPE"), "rerope", "direct", "rerope", window=0.5),
    "rerope_logn": InferenceMethod(N_("ReRoPE + log n"), "rerope", "direct", "rerope", logn=True, window=0.5),
    "leaky_rerope": InferenceMethod(N_("Leaky ReRoPE"), "rerope", "direct", "leaky_rerope", window=0.25, leak=16.0),
}
# DroPE (Gelberg et al. 2025, arXiv 2512.12167): the RoPE model with its rotation removed (a NoPE forward),
# recalibrated by a short fine-tune. Not an inference method: without recalibration the model breaks.
DROPE = "drope"
DROPE_TITLE = N_("DroPE (rotation dropped, recalibrated)")
FINE_TUNABLE = (*(name for name, m in INFERENCE_METHODS.items() if m.fine_tunable), DROPE)


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


@dataclass
class Evaluation:
    """Per-position loss and accuracy for every (method, length) pair measured so far."""

    train_length: int
    results: list[LengthResult] = field(default_factory=list)

    def __contains__(self, key: tuple[str, int]) -> bool:
        return any((r.method, r.length) == tuple(key) for r in self.results)

    def get(self, method: str, length: int) -> LengthResult:
        for result in self.results:
            if result.method == method and result.length == length:
                return result
        raise KeyError((method, length))


def evaluation_windows(corpus: Corpus, length: int, tokens: int) -> torch.Tensor:
    """Validation windows of L' + 1 characters: about ``tokens`` characters in all, at least 4 windows."""
    count = max(4, math.ceil(tokens / length))
    return evenly_spaced_windows(corpus.validation, length, count)


def _chunks(windows: torch.Tensor, length: int) -> Iterator[torch.Tensor]:
    per_chunk = max(1, ATTENTION_BUDGET // (length * length))
    yield from windows.split(per_chunk)


@torch.no_grad()
def _losses(model: TinyTransformer, windows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    device = next(model.parameters()).device
    losses, hits = [], []
    for chunk in _chunks(windows, windows.shape[1] - 1):
        chunk = chunk.to(device)
        logits = model(chunk[:, :-1]).float()
        targets = chunk[:, 1:]
        losses.append(F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").cpu())
        hits.append((logits.argmax(-1) == targets).cpu())
    return torch.cat(losses).double(), torch.cat(hits).double()


@torch.no_grad()
def _dynamic_losses(model: TinyTransformer, windows: torch.Tensor, train_length: int,
                    spec_for: Callable[[int], RopeSpec]) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic NTK as during generation: positions [a, b) scored with the frequencies for length b."""
    length = windows.shape[1] - 1
    losses, hits = [], []
    for start in range(0, length, train_length):  # a few blocks of L positions, not a loop over positions
        stop = min(length, start + train_length)
        model.set_rope(spec_for(stop))
        block_losses, block_hits = _losses(model, windows[:, : stop + 1])
        losses.append(block_losses[:, start:stop])
        hits.append(block_hits[:, start:stop])
    return torch.cat(losses, dim=1), torch.cat(hits, dim=1)


def method_spec(model: TinyTransformer, method: str, length: int) -> RopeSpec:
    """The RoPE spec ``method`` (a key of ``INFERENCE_METHODS``) gives the model at L' = ``length``."""
    config = model.config
    if method == DROPE:  # the spec stays the trained one; the rotation is switched off (``use_method``)
        return config.default_rope()
    frequencies = INFERENCE_METHODS[method].frequencies
    beta_fast, beta_slow = config.yarn_ramp
    return method_setup(frequencies, config.head_dim, config.rope_base, config.train_length, length,
                        beta_fast=beta_fast, beta_slow=beta_slow).spec


def use_method(model: TinyTransformer, method: str, length: int) -> None:
    """Set ``model`` up to run ``method`` at L' = ``length``: its spec, log-n scaling, ReRoPE's window (DroPE: no
    rotation)."""
    if method == DROPE:
        model.set_rope(None, dropped=True)
        return
    definition = INFERENCE_METHODS[method]
    model.set_rope(method_spec(model, method, length), logn=definition.logn,
                   window=definition.window_at(model.config.train_length), leak=definition.leak)


def evaluation_key(model: TinyTransformer, method: str, length: int) -> tuple:
    """What ``method`` computes at ``length``: two keys are equal only when the evaluations are bit for bit
    the same (e.g. every frequency method at L, where s = 1), so one can stand for the other."""
    c = model.config
    if method in (AS_TRAINED, DROPE):
        return (method, length)
    definition = INFERENCE_METHODS[method]
    if definition.frequencies == "dynamic" and length > c.train_length:
        return (method, length)  # scored block by block
    frequencies = rope_frequencies(method_spec(model, method, length), seq_len=length)
    window = definition.window_at(c.train_length)
    # the frequencies' exact float64 values (no numpy: the trainer runs where only torch is installed)
    return (length, tuple(frequencies.inv_freq.tolist()), frequencies.attention_factor,
            definition.logn and length > c.train_length,  # log_L n ≤ 1 within L: the factor is 1
            None if window is None or window >= length else (window, definition.leak))


def evaluate_one(model: TinyTransformer, windows: torch.Tensor, method: str) -> LengthResult:
    """Per-position loss and accuracy of ``model`` with ``method`` on ``windows`` (of L' + 1 characters).

    The model's RoPE set-up is restored afterwards (a model being fine-tuned keeps its method).
    """
    length = windows.shape[1] - 1
    train_length = model.config.train_length
    started = time.perf_counter()
    was_training = model.training
    rotary = model.rotary
    before = None if rotary is None else (rotary.spec, rotary.logn, rotary.window, rotary.leak, rotary.dropped)
    model.eval()
    try:
        if method == AS_TRAINED:
            losses, hits = _losses(model, windows)
        elif method != DROPE and INFERENCE_METHODS[method].frequencies == "dynamic":
            losses, hits = _dynamic_losses(model, windows, train_length,
                                           lambda current: method_spec(model, method, current))
        else:
            use_method(model, method, length)
            losses, hits = _losses(model, windows)
    finally:
        if before is not None:
            spec, logn, window, leak, dropped = before
            model.set_rope(spec, logn=logn, window=window, leak=leak, dropped=dropped)
        model.train(was_training)
    return LengthResult(method, length, losses.mean(0), hits.mean(0), time.perf_counter() - started)


@contextlib.contextmanager
def running(model: TinyTransformer, method: str | None, length: int):
    """``model`` set up to run ``method`` at ``length`` (None or ``AS_TRAINED``: as it stands) in eval mode; its
    RoPE set-up and training mode restored afterwards."""
    was_training = model.training
    rotary = model.rotary
    before = None if rotary is None else (rotary.spec, rotary.logn, rotary.window, rotary.leak, rotary.dropped)
    model.eval()
    try:
        if method not in (None, AS_TRAINED):
            use_method(model, method, length)
        yield model
    finally:
        if before is not None:
            spec, logn, window, leak, dropped = before
            model.set_rope(spec, logn=logn, window=window, leak=leak, dropped=dropped)
        model.train(was_training)


def retrieve(model: TinyTransformer, probes: Probes, method: str | None) -> RetrievalResult:
    """Exact passkey retrieval per depth of ``model`` run with ``method`` on ``probes`` (one forward pass over
    every depth and trial). Dynamic NTK takes the frequencies for the probe's whole length (the query is its
    end). None: the model as it stands (a fine-tuned model keeps its method)."""
    with running(model, method, probes.tokens.shape[1]):
        return score(model, probes, method or AS_TRAINED)


def evaluate(
    model: TinyTransformer,
    corpus: Corpus,
    lengths: Sequence[int],
    methods: Sequence[str],
    *,
    tokens_per_length: int = EVAL_CHARACTERS_PER_LENGTH,
    on_result: Callable[[LengthResult], bool | None] | None = None,
) -> Evaluation:
    """Per-position loss/accuracy at each length, for each method (RoPE) or as trained (others).

    ``on_result`` is called after each (method, length); returning True stops the evaluation
    (the results so far are kept).
    """
    config = model.config
    scalable = ENCODINGS[config.position].scalable
    if not scalable:
        methods = (AS_TRAINED,)
    unknown = [m for m in methods if m not in INFERENCE_METHODS]
    if scalable and unknown:
        raise ValueError(f"Unknown method(s) {', '.join(unknown)}; choose from {', '.join(INFERENCE_METHODS)}.")
    if config.position == "learned" and max(lengths) > config.max_positions:
        raise ValueError(f"The learned table stops at {config.max_positions:,} positions.")
    evaluation = Evaluation(config.train_length)
    for length in lengths:
        windows = evaluation_windows(corpus, length, tokens_per_length)
        for method in methods:
            result = evaluate_one(model, windows, method)
            evaluation.results.append(result)
            if on_result is not None and on_result(result):
                return evaluation
    return evaluation
