"""An offline, deterministic character-level corpus: the docstrings of Python's own standard library.

Every Python installation ships its standard library as source, so the corpus needs no download:
we parse each top-level module of ``sysconfig.get_paths()["stdlib"]`` with ``ast`` (nothing is
imported or executed) and keep the module, class and function docstrings, about 0.9 million
characters of English prose with code fragments on Python 3.11. The text depends only on the
Python version; its SHA-256 is recorded with every result so runs can be compared.

Validation takes whole modules (about one in ten, chosen by a CRC of the module name, so the
choice does not depend on file order), and a docstring that occurs in more than one module is
kept only once, so no docstring is in both splits.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import sysconfig
import zlib
from pathlib import Path
from typing import NamedTuple

import torch

# A fixed vocabulary (not the corpus's own character set) so a model's shape does not depend on
# the Python version: newline, printable ASCII, and one symbol for everything else.
UNKNOWN = "\N{REPLACEMENT CHARACTER}"
START = "\N{START OF TEXT}"  # the first token of every window, as a language model's sequences start with one
VOCABULARY = "\n" + "".join(chr(c) for c in range(32, 127)) + UNKNOWN + START
_INDEX = {ch: i for i, ch in enumerate(VOCABULARY)}
_UNKNOWN_INDEX = _INDEX[UNKNOWN]
START_INDEX = _INDEX[START]
_ASCII_TO_ID = torch.tensor([_INDEX.get(chr(c), _UNKNOWN_INDEX) for c in range(128)], dtype=torch.long)
VALIDATION_ONE_IN = 10
# Validation characters an evaluation reads per length: enough windows for smooth per-position curves.
EVAL_CHARACTERS_PER_LENGTH = 16_384
DOCUMENT_SEPARATOR = "\n\n"


class Corpus(NamedTuple):
    train: torch.Tensor  # int64 token ids
    validation: torch.Tensor
    source: str  # where the text came from, for people
    sha256: str  # of the full text (train + validation), to compare runs across machines
    train_documents: int
    validation_documents: int

    @property
    def vocab_size(self) -> int:
        return len(VOCABULARY)


def encode(text: str) -> torch.Tensor:
    """Characters to token ids; anything outside printable ASCII and newline becomes UNKNOWN."""
    codepoints = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).long()
    in_table = codepoints < _ASCII_TO_ID.numel()
    return torch.where(in_table, _ASCII_TO_ID[codepoints.clamp(max=_ASCII_TO_ID.numel() - 1)], _UNKNOWN_INDEX)


def decode(ids) -> str:
    return "".join(VOCABULARY[int(i)] for i in ids)


def _is_validation_module(name: str) -> bool:
    return zlib.crc32(name.encode()) % VALIDATION_ONE_IN == 0


def _docstrings(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:  # a file meant for another Python version: skip it rather than fail
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found = (ast.get_docstring(node, clean=True) for node in ast.walk(tree) if isinstance(node, kinds))
    return [doc.expandtabs(4) for doc in found if doc and doc.strip()]


def stdlib_documents(stdlib: Path | None = None) -> list[tuple[str, str]]:
    """(module name, docstring) for every docstring of every top-level stdlib module, in name order."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    documents = []
    for path in sorted(root.glob("*.py")):
        documents.extend((path.stem, doc) for doc in _docstrings(path))
    return documents


def split_documents(documents: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Train and validation docstrings: whole modules go to one side, and duplicates are dropped."""
    seen: set[str] = set()
    train, validation = [], []
    for module, doc in documents:
        if doc in seen:
            continue
        seen.add(doc)
        (validation if _is_validation_module(module) else train).append(doc)
    return train, validation


@functools.lru_cache(maxsize=2)
def load_corpus(stdlib: str | None = None) -> Corpus:
    """The corpus (cached per process: parsing the stdlib takes about a second)."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    train_docs, validation_docs = split_documents(stdlib_documents(root))
    if not train_docs or not validation_docs:
        raise ValueError(f"No docstrings found under {root}; the corpus needs Python's standard library sources.")
    train_text = DOCUMENT_SEPARATOR.join(train_docs)
    validation_text = DOCUMENT_SEPARATOR.join(validation_docs)
    digest = hashlib.sha256((train_text + "\0" + validation_text).encode()).hexdigest()
    return Corpus(
        train=encode(train_text),
        validation=encode(validation_text),
        source=f"docstrings of the Python standard library in {root}",
        sha256=digest,
        train_documents=len(train_docs),
        validation_documents=len(validation_docs),
    )


def random_windows(tokens: torch.Tensor, length: int, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """``batch_size`` windows of ``length + 1`` tokens at random offsets (inputs and shifted targets)."""
    if tokens.numel() < length + 2:
        raise ValueError(f"The text has {tokens.numel()} tokens, too few for windows of {length + 1}.")
    starts = torch.randint(0, tokens.numel() - length - 1, (batch_size,), generator=generator)
    return tokens[starts[:, None] + torch.arange(length + 1)]


def evenly_spaced_windows(tokens: torch.Tensor, length: int, count: int) -> torch.Tensor:
    """``count`` windows of ``length + 1`` tokens spread evenly over the text (deterministic evaluation)."""
    if tokens.numel() < length + 1:
        raise ValueError(
            f"The validation text has {tokens.numel():,} characters, too few for one window of {length + 1:,}."
        )
    last_start = tokens.numel() - length - 1
    starts = torch.linspace(0, last_start, count).round().long().unique()
    return tokens[starts[:, None] + torch.arange(length + 1)]


def with_start(windows: torch.Tensor) -> torch.Tensor:
    """The windows with their first token replaced by START (an input only: targets begin at column 1)."""
    marked = windows.clone()
    marked[:, 0] = START_INDEX
    return marked


def unigram_baseline(train: torch.Tensor, validation: torch.Tensor, vocab_size: int = len(VOCABULARY)) -> float:
    """Validation loss (nats/char) of predicting from character frequencies alone, fitted on train.

    Add-one smoothed. A model that does not beat this has learned nothing about order.
    """
    counts = torch.bincount(train, minlength=vocab_size).to(torch.float64) + 1
    log_probabilities = (counts / counts.sum()).log()
    return float(-log_probabilities[validation].mean())

