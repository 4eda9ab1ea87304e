"""What a finished run is, as plain JSON: the one schema of the CLI's output and of the run store.

A ``RunRecord`` holds the full config and its hash, the loss curve, per-position losses and
accuracies for every (method, length), the fine-tunes with their accuracy along the way, what
training cost (throughput and memory), and where and with which code it was made.
``to_json`` / ``from_json`` round-trip it exactly (per-position values are rounded to 4
decimals); ``SCHEMA_VERSION`` names the layout.

Schema history: 1 had no cost and only the accuracy before and after a fine-tune. A schema-1
record is migrated when read: ``cost`` is None ("not measured", and shown so) and a fine-tune's
curve holds its two ends. A record of any other version is refused with a sentence, never
half-read.
"""

from __future__ import annotations

import datetime
import functools
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pe_core.train.config import RESULTS_VERSION, ExperimentConfig

SCHEMA_VERSION = 2
MIGRATED_SCHEMAS = (1,)  # older layouts from_json still reads (see the module docstring)
DIGITS = 4
MEMORY_PEAK, MEMORY_COUNTED = "cuda_peak", "counted"  # how Cost.memory_bytes was measured
ROOT = Path(__file__).resolve().parents[2]


class RecordError(ValueError):
    """A stored or loaded record that this version cannot read."""


@functools.cache
def code_version() -> str:
    """The git commit of the code (``+changes`` when the work tree differs), or 'unknown' outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}+changes" if dirty else commit


def _rounded(values) -> tuple[float, ...]:
    return tuple(round(float(v), DIGITS) for v in values)


class MethodResult(NamedTuple):
    """One (method, length) of an evaluation: means and per-position values."""

    method: str
    length: int
    mean_loss: float
    mean_accuracy: float
    loss: tuple[float, ...]
    accuracy: tuple[float, ...]

    @classmethod
    def of(cls, result) -> MethodResult:
        """From a ``pe_core.train.evaluate.LengthResult``."""
        return cls(result.method, result.length, result.mean_loss, result.mean_accuracy, _rounded(result.loss),
                   _rounded(result.accuracy))

    def to_json(self) -> dict:
        return self._asdict() | {"loss": list(self.loss), "accuracy": list(self.accuracy)}

    @classmethod
    def from_json(cls, values: dict) -> MethodResult:
        return cls(values["method"], int(values["length"]), float(values["mean_loss"]),
                   float(values["mean_accuracy"]), tuple(values["loss"]), tuple(values["accuracy"]))


class Checkpoint(NamedTuple):
    """Accuracy and loss at the longest length after ``step`` fine-tuning steps (0: before)."""

    step: int
    accuracy: float
    loss: float


class FineTuneResult(NamedTuple):
    method: str
    length: int
    steps: int
    before: MethodResult
    after: MethodResult
    loss_curve: tuple[float, ...]
    curve: tuple[Checkpoint, ...] = ()  # step 0, the checkpoints along the way, the last step

    def to_json(self) -> dict:
        return {"method": self.method, "length": self.length, "steps": self.steps, "before": self.before.to_json(),
                "after": self.after.to_json(), "loss_curve": list(self.loss_curve),
                "curve": [list(c) for c in self.curve]}

    @classmethod
    def from_json(cls, values: dict, schema: int = SCHEMA_VERSION) -> FineTuneResult:
        before, after = MethodResult.from_json(values["before"]), MethodResult.from_json(values["after"])
        steps = int(values["steps"])
        if schema == 1:  # no checkpoints were measured: the curve is its two ends
            curve = (Checkpoint(0, before.mean_accuracy, before.mean_loss),
                     Checkpoint(steps, after.mean_accuracy, after.mean_loss))
        else:
            curve = tuple(Checkpoint(int(s), float(a), float(loss)) for s, a, loss in values["curve"])
        return cls(values["method"], int(values["length"]), steps, before, after, tuple(values["loss_curve"]), curve)


class RetrievalEntry(NamedTuple):
    """Exact passkey retrieval accuracy of one (method, length) per needle depth (``pe_core.train.retrieval``);
    ``tuned``: of the model fine-tuned with ``method`` (at every length), else of the trained model."""

    method: str
    length: int
    depths: tuple[float, ...]
    accuracy: tuple[float, ...]
    tuned: bool = False

    @property
    def mean_accuracy(self) -> float:
        return sum(self.accuracy) / len(self.accuracy)

    @classmethod
    def of(cls, result, tuned: bool = False) -> RetrievalEntry:
        """From a ``pe_core.train.retrieval.RetrievalResult``."""
        return cls(result.method, result.length, tuple(result.depths), _rounded(result.accuracy), tuned)

    def to_json(self) -> list:
        return [self.method, self.length, list(self.depths), list(self.accuracy), self.tuned]

    @classmethod
    def from_json(cls, values: list) -> RetrievalEntry:
        method, length, depths, accuracy, tuned = values
        return cls(str(method), int(length), tuple(float(d) for d in depths), tuple(float(a) for a in accuracy),
                   bool(tuned))


class Cost(NamedTuple):
    """What training cost, measured on the run's device with the run's shapes (every encoding trains the same
    batches of the same length, so the encodings compare)."""

    tokens_per_s: float  # characters per second of an optimiser step (median step time)
    memory_bytes: int  # MEMORY_PEAK: CUDA's max_memory_allocated while training; MEMORY_COUNTED: the next two summed
    memory_measure: str
    activation_bytes: int  # tensors autograd kept for the backward pass of one step, counted by hooks (every device)
    state_bytes: int  # weights, gradients and AdamW's two moments

    def to_json(self) -> dict:
        return self._asdict()

    @classmethod
    def from_json(cls, values: dict) -> Cost:
        return cls(float(values["tokens_per_s"]), int(values["memory_bytes"]), str(values["memory_measure"]),
                   int(values["activation_bytes"]), int(values["state_bytes"]))


class CurvePoint(NamedTuple):
    step: int
    loss: float
    validation_loss: float | None


@dataclass(frozen=True)
class RunRecord:
    """Everything about one finished run."""

    config: ExperimentConfig
    device: str  # e.g. "CPU (1 thread)", "CUDA (NVIDIA H100), bf16 autocast"
    created_at: str  # ISO 8601, UTC
    code_version: str
    parameters: int
    corpus_sha256: str
    unigram_baseline: float
    training_seconds: float
    total_seconds: float  # training, evaluation and fine-tuning
    loss_curve: tuple[CurvePoint, ...]
    results: tuple[MethodResult, ...]
    fine_tunes: tuple[FineTuneResult, ...] = ()
    results_version: int = RESULTS_VERSION
    cost: Cost | None = None  # None: stored before costs were measured (schema 1)
    retrieval: tuple[RetrievalEntry, ...] = ()  # passkey retrieval (experiments with ``retrieval``; else none)

    @property
    def hash(self) -> str:
        return self.config.hash_at(self.results_version)

    @property
    def family(self) -> str:
        return self.config.family_at(self.results_version)

    @property
    def lengths(self) -> list[int]:
        return sorted({r.length for r in self.results})

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(r.method for r in self.results))

    def result(self, method: str, length: int) -> MethodResult:
        for result in self.results:
            if (result.method, result.length) == (method, length):
                return result
        raise KeyError((method, length))

    def retrieval_of(self, method: str, length: int, tuned: bool = False) -> RetrievalEntry:
        for entry in self.retrieval:
            if (entry.method, entry.length, entry.tuned) == (method, length, tuned):
                return entry
        raise KeyError((method, length, tuned))

    def fine_tune(self, method: str) -> FineTuneResult | None:
        return next((f for f in self.fine_tunes if f.method == method), None)

    @property
    def final_validation_loss(self) -> float | None:
        return next((p.validation_loss for p in reversed(self.loss_curve) if p.validation_loss is not None), None)

    def to_json(self) -> dict:
        retrieval = {"retrieval": [e.to_json() for e in self.retrieval]} if self.retrieval else {}
        return retrieval | {
            "schema_version": SCHEMA_VERSION,
            "results_version": self.results_version,
            "hash": self.hash,
            "family": self.family,
            "config": self.config.to_json(),
            "device": self.device,
            "created_at": self.created_at,
            "code_version": self.code_version,
            "parameters": self.parameters,
            "corpus_sha256": self.corpus_sha256,
            "unigram_baseline": self.unigram_baseline,
            "training_seconds": self.training_seconds,
            "total_seconds": self.total_seconds,
            "loss_curve": [list(p) for p in self.loss_curve],
            "results": [r.to_json() for r in self.results],
            "fine_tunes": [f.to_json() for f in self.fine_tunes],
            "cost": None if self.cost is None else self.cost.to_json(),
        }

    @classmethod
    def from_json(cls, values: dict) -> RunRecord:
        version = values.get("schema_version") if isinstance(values, dict) else None
        if version != SCHEMA_VERSION and version not in MIGRATED_SCHEMAS:
            readable = ", ".join(map(str, (*MIGRATED_SCHEMAS, SCHEMA_VERSION)))
            raise RecordError(f"This run was saved with record schema {version!r}; this version reads schemas "
                              f"{readable} only.")
        try:
            record = cls(
                config=ExperimentConfig.from_json(values["config"]),
                device=values["device"], created_at=values["created_at"], code_version=values["code_version"],
                parameters=int(values["parameters"]), corpus_sha256=values["corpus_sha256"],
                unigram_baseline=float(values["unigram_baseline"]),
                training_seconds=float(values["training_seconds"]), total_seconds=float(values["total_seconds"]),
                loss_curve=tuple(CurvePoint(int(s), float(loss), None if v is None else float(v))
                                 for s, loss, v in values["loss_curve"]),
                results=tuple(MethodResult.from_json(r) for r in values["results"]),
                fine_tunes=tuple(FineTuneResult.from_json(f, version) for f in values["fine_tunes"]),
                results_version=int(values["results_version"]),
                cost=None if version == 1 or values["cost"] is None else Cost.from_json(values["cost"]),
                retrieval=tuple(RetrievalEntry.from_json(e) for e in values.get("retrieval", ())),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise RecordError(f"This run record is incomplete or damaged ({type(err).__name__}: {err}).") from err
        if values.get("hash") not in (None, record.hash):
            raise RecordError(f"This run record's hash {values.get('hash')} does not match its config "
                              f"({record.hash}).")
        return record


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def report_json(records: Sequence[RunRecord]) -> dict:
    """The CLI's output: every run of one invocation."""
    return {"schema_version": SCHEMA_VERSION, "runs": [r.to_json() for r in records]}
