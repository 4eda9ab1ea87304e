"""Evaluation: per-position loss and accuracy of a trained model at 1×-16× its training length.

Each RoPE scaling method of ``pe_core.methods`` is applied without any fine-tuning: a model
trained at L is evaluated at L' = k·L with the method's spec for s = L'/L. Dynamic NTK is
evaluated as it behaves while generating: the loss at position m uses the frequencies for the
length reached so far, computed block by block (blocks of L tokens, each block's forward pass
covering the whole prefix). Other encodings have one "method": the model as trained.
Evaluation runs in float32 on every device, so results from a GPU and a CPU compare.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F

from pe_core.data import EVAL_CHARACTERS_PER_LENGTH, Corpus, evenly_spaced_windows
from pe_core.methods import METHODS, method_setup
from pe_core.model import TinyTransformer
from pe_core.rope import RopeSpec

AS_TRAINED = "as_trained"  # the only "method" of encodings other than RoPE: the model as it was trained
ATTENTION_BUDGET = 1 << 22  # batch × T² per forward pass, so a 16× evaluation fits in memory


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
    """The RoPE spec ``method`` gives the model at L' = ``length``."""
    config = model.config
    return method_setup(method, config.head_dim, config.rope_base, config.train_length, length).spec


def evaluate_one(model: TinyTransformer, windows: torch.Tensor, method: str) -> LengthResult:
    """Per-position loss and accuracy of ``model`` with ``method`` on ``windows`` (of L' + 1 characters)."""
    length = windows.shape[1] - 1
    train_length = model.config.train_length
    started = time.perf_counter()
    was_training = model.training
    model.eval()
    try:
        if method == AS_TRAINED:
            losses, hits = _losses(model, windows)
        elif method == "dynamic":
            losses, hits = _dynamic_losses(model, windows, train_length,
                                           lambda current: method_spec(model, "dynamic", current))
        else:
            model.set_rope(method_spec(model, method, length))
            losses, hits = _losses(model, windows)
    finally:
        if model.rotary is not None:
            model.set_rope(None)
        model.train(was_training)
    return LengthResult(method, length, losses.mean(0), hits.mean(0), time.perf_counter() - started)


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
    if config.position != "rope":
        methods = (AS_TRAINED,)
    unknown = [m for m in methods if m not in METHODS]
    if config.position == "rope" and unknown:
        raise ValueError(f"Unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}.")
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
