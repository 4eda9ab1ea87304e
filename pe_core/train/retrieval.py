"""Needle-in-a-haystack retrieval for the tiny model: a passkey planted in corpus text, asked for at the end.

A *needle* is ``NEEDLE_MARKER`` followed by ``PASSKEY_DIGITS`` random digits ("@@4821"). A probe of length N
is N characters of validation text with the needle written at a chosen *depth* of the text before the query
(depth 0: the first character; depth 1: right before the query), and the query - the needle again - in
its last characters. The model reads the probe; it retrieves the passkey when, at each of the query's
digits, its most likely digit (its logits restricted to the ten digits) is the passkey's. Exact retrieval
accuracy is the share of probes whose every digit is right; a model that guesses scores 10^-digits.

A character model trained on docstrings alone does not copy a passkey even within its training length,
so an experiment with ``copy_fraction`` > 0 plants needles in that share of its training windows: the
needle at a random place and its repeat at a later one (``plant_copies``).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import torch

from pe_core.data import encode, evenly_spaced_windows

NEEDLE_MARKER = "@@"
PASSKEY_DIGITS = 4
DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)  # where the needle sits in the text before the query (0: first character)
TRIALS_PER_DEPTH = 4  # probes per depth and length (different text, different passkeys)
PROBE_SEED = 1234  # the probes are the same for every model: fixed text windows and passkeys
DIGIT_IDS = encode("0123456789")
MARKER_IDS = encode(NEEDLE_MARKER)


def needle_length(digits: int = PASSKEY_DIGITS) -> int:
    return len(NEEDLE_MARKER) + digits


def chance(digits: int = PASSKEY_DIGITS) -> float:
    """Exact retrieval accuracy of a model that guesses each digit uniformly."""
    return 10.0 ** -digits


def needle_start(length: int, depth: float, digits: int = PASSKEY_DIGITS) -> int:
    """Where the needle starts in a probe of ``length``: ``depth`` of the way through the text before the query."""
    n = needle_length(digits)
    room = length - 2 * n  # the last start that ends before the query
    if room < 0:
        raise ValueError(f"A probe of {length} characters has no room for a needle and its query ({2 * n}).")
    if not 0 <= depth <= 1:
        raise ValueError(f"The depth must lie in [0, 1] (got {depth!r}).")
    return round(depth * room)


def needles(passkeys: torch.Tensor) -> torch.Tensor:
    """[B, marker + digits] token ids of the needles of passkeys [B, digits] (digit values 0-9)."""
    return torch.cat([MARKER_IDS.expand(len(passkeys), -1), DIGIT_IDS[passkeys]], dim=1)


def _write(rows: torch.Tensor, starts: torch.Tensor, values: torch.Tensor) -> None:
    """rows[b, starts[b] + j] = values[b, j], in place, for every row at once."""
    columns = starts[:, None] + torch.arange(values.shape[1])
    rows.scatter_(1, columns, values)


class Probes(NamedTuple):
    tokens: torch.Tensor  # [depths × trials, N] the probes (depth-major)
    passkeys: torch.Tensor  # [depths × trials, digits]
    starts: torch.Tensor  # [depths × trials] where each needle starts
    depths: tuple[float, ...]


def make_probes(text: torch.Tensor, length: int, depths=DEPTHS, trials: int = TRIALS_PER_DEPTH,
                digits: int = PASSKEY_DIGITS, seed: int = PROBE_SEED, first: int = 0) -> Probes:
    """Probes of ``length`` characters: ``trials`` per depth, each its own text window and passkey; the text
    before the query starts at ``first`` (1: after a start-of-text token)."""
    depths = tuple(float(d) for d in depths)
    count = len(depths) * trials
    generator = torch.Generator().manual_seed(seed + length)
    tokens = evenly_spaced_windows(text, length, count)[:, :length].clone()
    if len(tokens) < count:  # a short text: windows repeat (each keeps its own passkey)
        tokens = tokens.repeat((count + len(tokens) - 1) // len(tokens), 1)[:count]
    passkeys = torch.randint(0, 10, (count, digits), generator=generator)
    starts = first + torch.tensor([needle_start(length - first, d, digits) for d in depths]).repeat_interleave(trials)
    planted = needles(passkeys)
    _write(tokens, starts, planted)
    _write(tokens, torch.full((count,), length - planted.shape[1]), planted)
    return Probes(tokens, passkeys, starts, depths)


def digit_logits(logits: torch.Tensor, digits: int = PASSKEY_DIGITS) -> torch.Tensor:
    """[B, digits, 10]: the logits that predict the query's digits (at the positions before each), over digits."""
    length = logits.shape[1]
    return logits[:, length - digits - 1:length - 1][..., DIGIT_IDS]


def exact_hits(logits: torch.Tensor, passkeys: torch.Tensor) -> torch.Tensor:
    """[B] bool: every digit of the query predicted (top-1 among the digits) as the passkey's."""
    predicted = digit_logits(logits, passkeys.shape[1]).argmax(-1)
    return (predicted == passkeys).all(-1)


def exact_probability(logits: torch.Tensor, passkeys: torch.Tensor) -> torch.Tensor:
    """[B] the probability the model gives the whole passkey (its digit distributions multiplied)."""
    log_p = digit_logits(logits, passkeys.shape[1]).float().log_softmax(-1)
    return log_p.gather(-1, passkeys[..., None]).squeeze(-1).sum(-1).exp()


def accuracy_by_depth(hits: torch.Tensor, depths: int) -> tuple[float, ...]:
    """The share of hits per depth (the probes depth-major)."""
    return tuple(float(v) for v in hits.double().view(depths, -1).mean(1))


class RetrievalResult(NamedTuple):
    method: str
    length: int
    depths: tuple[float, ...]
    accuracy: tuple[float, ...]  # exact retrieval accuracy per depth
    seconds: float = 0.0

    @property
    def mean_accuracy(self) -> float:
        return sum(self.accuracy) / len(self.accuracy)


@torch.no_grad()
def retrieval_logits(model, tokens: torch.Tensor) -> torch.Tensor:
    """The model's logits at the query's digits only, [B, T, V] narrowed to the last positions (one forward)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        logits = model(tokens.to(device)).float().cpu()
    finally:
        model.train(was_training)
    return logits[:, -(PASSKEY_DIGITS + 1):]


def score(model, probes: Probes, method: str) -> RetrievalResult:
    """Exact retrieval accuracy per depth of ``model`` as it stands (its RoPE set-up already chosen; see
    ``pe_core.train.evaluate.retrieve`` to run it with a method)."""
    started = time.perf_counter()
    logits = retrieval_logits(model, probes.tokens)
    hits = exact_hits(logits, probes.passkeys)
    return RetrievalResult(method, probes.tokens.shape[1], probes.depths, accuracy_by_depth(hits, len(probes.depths)),
                           time.perf_counter() - started)


# A span of random characters written twice in a chosen window, the second time at a random distance after the
# first: what teaches the model to copy by content (random characters can only be predicted by copying them; a
# repeat always at the same distance teaches it to copy from that distance, which finds no needle).
COPIED_SHARE = 0.25
RANDOM_CHARACTERS = encode("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _pair(rows: int, width: int, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Starts of a span of ``n`` and of its later repeat in a row of ``width``, per row."""
    first = (torch.rand(rows, generator=generator) * (width - 2 * n + 1)).long()
    second = first + n + (torch.rand(rows, generator=generator) * (width - n - (first + n) + 1)).long()
    return first, second


def plant_copies(batch: torch.Tensor, fraction: float, generator: torch.Generator,
                 digits: int = PASSKEY_DIGITS, share: float = COPIED_SHARE) -> torch.Tensor:
    """``batch`` [B, T + 1] with copying to learn in about ``fraction`` of its rows (each row drawn with that
    probability): a span of random letters, ``share`` of the row, written twice at random places (the repeated
    sequences that form induction heads), then a needle and its later repeat at random places (written last, so
    they stay whole).
    In place."""
    if fraction <= 0:
        return batch
    rows, width = batch.shape
    n = needle_length(digits)
    span = int(width * share)
    if width < 2 * max(n, span):
        return batch
    chosen = torch.rand(rows, generator=generator) < fraction
    source, target = _pair(rows, width, span, generator)
    passkeys = torch.randint(0, 10, (rows, digits), generator=generator)
    first, second = _pair(rows, width, n, generator)
    index = chosen.nonzero().squeeze(1)
    if len(index):
        sub = batch[index]
        spans = RANDOM_CHARACTERS[torch.randint(0, len(RANDOM_CHARACTERS), (len(index), span), generator=generator)]
        _write(sub, source[index], spans)
        _write(sub, target[index], spans)
        planted = needles(passkeys[index])
        _write(sub, first[index], planted)
        _write(sub, second[index], planted)
        batch[index] = sub
    return batch
