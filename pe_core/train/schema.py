"""What a finished run is, as plain JSON: the one schema of the CLI's output and of the run store.

A ``RunRecord`` holds the full config and its hash, the loss curve, per-position losses and
accuracies for every (method, length), the fine-tunes, and where and with which code it was
made. ``to_json`` / ``from_json`` round-trip it exactly (per-position values are rounded to
4 decimals); ``SCHEMA_VERSION`` names the layout, and a record of another version is refused
with a sentence, never half-read.
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

SCHEMA_VERSION = 1
DIGITS = 4
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


class FineTuneResult(NamedTuple):
    method: str
    length: int
    steps: int
    before: MethodResult
    after: MethodResult
    loss_curve: tuple[float, ...]

    def to_json(self) -> dict:
        return {"method": self.method, "length": self.length, "steps": self.steps, "before": self.before.to_json(),
                "after": self.after.to_json(), "loss_curve": list(self.loss_curve)}

    @classmethod
    def from_json(cls, values: dict) -> FineTuneResult:
        return cls(values["method"], int(values["length"]), int(values["steps"]),
                   MethodResult.from_json(values["before"]), MethodResult.from_json(values["after"]),
                   tuple(values["loss_curve"]))


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

    def fine_tune(self, method: str) -> FineTuneResult | None:
        return next((f for f in self.fine_tunes if f.method == method), None)

    @property
    def final_validation_loss(self) -> float | None:
        return next((p.validation_loss for p in reversed(self.loss_curve) if p.validation_loss is not None), None)

    def to_json(self) -> dict:
        return {
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
        }

    @classmethod
    def from_json(cls, values: dict) -> RunRecord:
        version = values.get("schema_version") if isinstance(values, dict) else None
        if version != SCHEMA_VERSION:
            raise RecordError(f"This run was saved with record schema {version!r}; this version reads schema "
                              f"{SCHEMA_VERSION} only.")
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
                fine_tunes=tuple(FineTuneResult.from_json(f) for f in values["fine_tunes"]),
                results_version=int(values["results_version"]),
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
