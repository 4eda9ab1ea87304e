"""The experiment as data: one frozen dataclass of every knob, its hash, and the default grid.

``ExperimentConfig`` is the one vocabulary of the tiny-model experiment: the CLI's options,
the lesson's settings, the JSON a run is saved as and the run store's key are all read from
its fields. Two configs that would train the same model and measure the same things have the
same ``hash`` (settings that do not apply to an encoding are reset first), so a stored run is
found again from any of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field

from pe_core.data import EVAL_CHARACTERS_PER_LENGTH
from pe_core.methods import METHODS
from pe_core.model import ENCODINGS, ROPE_PAIRINGS, ModelConfig
from pe_core.train.evaluate import AS_TRAINED, DROPE, FINE_TUNABLE, INFERENCE_METHODS
from pe_core.train.spectrum import PAPER_RAMP, matched_ramp

# Bump when a change to the model, the data, training or evaluation changes results: stored runs
# of the old version then no longer match any config (they stay in the store, browsable).
# 2: every step's batch is computed in two parts, their gradients added (``pe_core.device.SHARDS``).
RESULTS_VERSION = 2
TOKENS_PER_STEP = 2048  # batch size × training length, so a step costs about the same at every L
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
# Knobs added after runs were first stored, with the value every earlier run used: a record without the
# knob gets that value, and a config holding it hashes as before the knob existed, so those runs stay found.
LEGACY_VALUES = {"weight_decay": 0.1, "yarn_ramp": "paper", "copy_fraction": 0.0, "retrieval": False}
# What a knob that does not apply to an encoding is set to before hashing (the defaults when runs were first
# stored). Fixed, not the current defaults: changing a default must not rename the runs it does not apply to.
NOT_APPLICABLE = {"rope_base": 50.0, "rope_pairing": "half", "methods": (), "fine_tune": (), "fine_tune_steps": 100,
                  "fine_tune_learning_rate": 3e-3, "yarn_ramp": "paper"}
# YaRN's (β, α): the paper's values for Llama, or the turn counts that sort the same shares of the toy's pairs
YARN_RAMPS = ("matched", "paper")
DEFAULT_METHODS = ("direct", "pi", "ntk", "dynamic", "yarn", "direct_logn", "pi_logn", "ntk_logn", "rerope",
                   "rerope_logn", "leaky_rerope")


def batch_size_for(train_length: int, tokens_per_step: int = TOKENS_PER_STEP) -> int:
    """Sequences per batch so that a step sees about ``tokens_per_step`` characters (at least 4)."""
    return max(4, tokens_per_step // train_length)


@dataclass(frozen=True)
class TrainConfig:
    """The optimiser's schedule for one training loop (pre-training or fine-tuning)."""

    steps: int = 300
    batch_size: int = 32
    learning_rate: float = 3e-3
    min_learning_rate_fraction: float = 0.1
    warmup_steps: int = 30
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    seed: int = 0
    validate_every: int = 100
    validation_windows: int = 32
    copy_fraction: float = 0.0  # share of the batches' windows with a planted passkey and its repeat (retrieval)

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "validate_every", "validation_windows"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r}).")
        if not (isinstance(self.learning_rate, (int, float)) and math.isfinite(self.learning_rate)
                and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number (got {self.learning_rate!r}).")
        if not (isinstance(self.copy_fraction, (int, float)) and 0 <= self.copy_fraction <= 1):
            raise ValueError(f"copy_fraction must be a number in [0, 1] (got {self.copy_fraction!r}).")
        if not (isinstance(self.weight_decay, (int, float)) and math.isfinite(self.weight_decay)
                and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be a number ≥ 0 (got {self.weight_decay!r}).")

    def learning_rate_at(self, step: int) -> float:
        """Linear warm-up, then cosine decay to ``min_learning_rate_fraction`` of the peak."""
        if step < self.warmup_steps:
            return self.learning_rate * (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(1, self.steps - self.warmup_steps)
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        low = self.min_learning_rate_fraction
        return self.learning_rate * (low + (1 - low) * cosine)


def _knob(default, help: str, **extra):
    return field(default=default, metadata={"help": help, **extra})


@dataclass(frozen=True)
class ExperimentConfig:
    """Every knob of one run: train a model at L, evaluate it at multiples of L, fine-tune some methods.

    The defaults are the "faithful toy" (see ``pe_core.train.spectrum``): a head size, base and
    training length whose rotary spectrum has the proportions of Llama 2's.
    """

    encoding: str = _knob("rope", "how position enters the model", choices=tuple(ENCODINGS))
    rope_base: float = _knob(50.0, "RoPE's (and the sinusoidal table's) base b")
    rope_pairing: str = _knob("half", "which features RoPE rotates together", choices=ROPE_PAIRINGS)
    train_length: int = _knob(64, "training length L (characters)")
    d_model: int = _knob(64, "model width")
    n_head: int = _knob(2, "attention heads")
    head_size: int = _knob(64, "head size d: what RoPE rotates, in d/2 pairs (heads × d may differ from d_model)")
    n_layer: int = _knob(2, "transformer blocks")
    steps: int = _knob(1000, "optimiser steps")
    tokens_per_step: int = _knob(TOKENS_PER_STEP, "characters per optimiser step (batch size × L)")
    learning_rate: float = _knob(6e-3, "peak learning rate (AdamW, warm-up then cosine)")
    weight_decay: float = _knob(0.0, "AdamW's weight decay on the weight matrices (0: none, as in the faithful toy)")
    seed: int = _knob(0, "seed of the initial weights and of the batches")
    multiples: tuple[int, ...] = _knob((1, 2, 4, 8), "evaluation lengths, as multiples of L")
    methods: tuple[str, ...] = _knob(DEFAULT_METHODS, "RoPE scaling methods and inference-time tricks to evaluate",
                                     choices=tuple(INFERENCE_METHODS))
    fine_tune: tuple[str, ...] = _knob(("pi", "ntk", "yarn"), "methods fine-tuned at the longest length",
                                       choices=FINE_TUNABLE)
    fine_tune_steps: int = _knob(200, "fine-tuning steps at the longest length")
    fine_tune_learning_rate: float = _knob(3e-3, "peak learning rate of the fine-tune")
    yarn_ramp: str = _knob("matched", "YaRN's and NTK-by-parts' α and β: 'paper' keeps pairs turning more than 32 "
                                      "times within L and interpolates those under 1 (found for Llama); 'matched' "
                                      "sorts the same shares of this model's pairs as those values sort Llama 2's",
                           choices=YARN_RAMPS)
    eval_tokens: int = _knob(EVAL_CHARACTERS_PER_LENGTH, "validation characters per evaluation length")
    start_token: bool = _knob(False, "begin every window with a start-of-text token, as language models' "
                                     "sequences do")
    copy_fraction: float = _knob(0.0, "share of training windows with a planted passkey and its later repeat, so "
                                      "the model learns to copy (0: docstrings only)")
    retrieval: bool = _knob(False, "also score passkey retrieval (needle in a haystack) at every length and depth")

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)} (got {self.encoding!r}).")
        object.__setattr__(self, "multiples", tuple(sorted({1, *(int(m) for m in self.multiples)})))
        if self.multiples[0] < 1:
            raise ValueError("Evaluation multiples must be positive whole numbers.")
        unknown = [m for m in self.methods if m not in INFERENCE_METHODS]
        if unknown:
            raise ValueError(f"Unknown method(s) {', '.join(unknown)}; choose from {', '.join(INFERENCE_METHODS)}.")
        cannot = [m for m in self.fine_tune if m not in FINE_TUNABLE]
        if cannot:
            raise ValueError(f"Fine-tune with one of {', '.join(FINE_TUNABLE)} (got {', '.join(cannot)}).")
        if self.yarn_ramp not in YARN_RAMPS:
            raise ValueError(f"yarn_ramp must be one of {', '.join(YARN_RAMPS)} (got {self.yarn_ramp!r}).")
        # registry order, no repeats: the same choice in another order is the same experiment
        object.__setattr__(self, "methods", tuple(m for m in INFERENCE_METHODS if m in self.methods))
        object.__setattr__(self, "fine_tune", tuple(m for m in FINE_TUNABLE if m in self.fine_tune))
        for name in ("steps", "fine_tune_steps", "eval_tokens", "head_size", "tokens_per_step"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive whole number (got {value!r}).")
        self.model_config()  # checks the shape (even head size for RoPE, width divisible by heads, ...)
        self.train_config()

    # ---- what it builds --------------------------------------------------------------------------

    @property
    def scalable(self) -> bool:
        """RoPE: evaluated per scaling method, and fine-tunable."""
        return ENCODINGS[self.encoding].scalable

    @property
    def longest(self) -> int:
        return self.train_length * max(self.multiples)

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(self.train_length * m for m in self.multiples)

    @property
    def evaluated_methods(self) -> tuple[str, ...]:
        return self.methods if self.scalable else (AS_TRAINED,)

    @property
    def fine_tuned_methods(self) -> tuple[str, ...]:
        return self.fine_tune if self.scalable and max(self.multiples) > 1 else ()

    @property
    def uses_ramp(self) -> bool:
        """Whether a method evaluated or fine-tuned sorts pairs by YaRN's ramp (so ``yarn_ramp`` matters)."""
        return self.scalable and any(METHODS[INFERENCE_METHODS[m].frequencies].ramp
                                     for m in (*self.methods, *self.fine_tune) if m != DROPE)

    @property
    def ramp_turns(self) -> tuple[float, float]:
        """YaRN's (β, α) in turns within L for this run (``yarn_ramp``)."""
        return matched_ramp(self.rope_base, self.train_length) if self.yarn_ramp == "matched" else PAPER_RAMP

    def model_config(self) -> ModelConfig:
        return ModelConfig(n_layer=self.n_layer, n_head=self.n_head, d_model=self.d_model, head_size=self.head_size,
                           train_length=self.train_length, max_positions=self.longest, position=self.encoding,
                           rope_base=float(self.rope_base), rope_pairing=self.rope_pairing,
                           yarn_ramp=self.ramp_turns)

    def train_config(self) -> TrainConfig:
        return TrainConfig(steps=self.steps, batch_size=batch_size_for(self.train_length, self.tokens_per_step),
                           learning_rate=self.learning_rate, weight_decay=self.weight_decay, seed=self.seed,
                           copy_fraction=float(self.copy_fraction))

    # ---- identity --------------------------------------------------------------------------------

    def replace(self, **changes) -> ExperimentConfig:
        return dataclasses.replace(self, **changes)

    def canonical(self) -> ExperimentConfig:
        """The same experiment with every knob that does not apply to the encoding at a fixed value."""
        unused: list[str] = []
        if not ENCODINGS[self.encoding].uses_base:
            unused.append("rope_base")
        if not self.scalable:
            unused += ["rope_pairing", "methods", "fine_tune", "fine_tune_steps", "fine_tune_learning_rate",
                       "yarn_ramp"]
        else:
            if not self.fine_tuned_methods:
                unused += ["fine_tune_steps", "fine_tune_learning_rate"]
            if not self.uses_ramp:
                unused.append("yarn_ramp")
        reset = {name: NOT_APPLICABLE[name] for name in unused}
        return dataclasses.replace(self, **reset) if reset else self

    def to_json(self) -> dict:
        values = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}

    @classmethod
    def from_json(cls, values: dict) -> ExperimentConfig:
        """A config saved as JSON; a knob it lacks was added later and gets the value its run used."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(values) - set(known)
        if unknown:
            raise ValueError(f"Unknown experiment setting(s): {', '.join(sorted(unknown))}.")
        values = {**LEGACY_VALUES, **values}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})

    @property
    def hash(self) -> str:
        """16 hex digits naming this experiment (and the code's results version)."""
        return self.hash_at(RESULTS_VERSION)

    def hash_at(self, results_version: int) -> str:
        return _digest({"results_version": results_version, **self._identity()})

    def _identity(self) -> dict:
        """The canonical settings, without the later knobs that hold their legacy value (see LEGACY_VALUES)."""
        values = self.canonical().to_json()
        for name, legacy in LEGACY_VALUES.items():
            if values[name] == legacy:
                del values[name]
        return values

    @property
    def family(self) -> str:
        """What runs of other encodings and seeds share with this one (the seed table compares a family)."""
        return self.family_at(RESULTS_VERSION)

    def family_at(self, results_version: int) -> str:
        values = self._identity()
        for name in ("encoding", "seed", "rope_base", "rope_pairing", "methods", "fine_tune", "fine_tune_steps",
                     "fine_tune_learning_rate", "yarn_ramp"):
            values.pop(name, None)  # a knob at its legacy value is already gone
        return _digest({"results_version": results_version, **values})

    def label(self) -> str:
        """A short plain description (CLI lines, job names)."""
        parts = [self.encoding]
        if ENCODINGS[self.encoding].uses_base:
            parts.append(f"b={self.rope_base:g}")
        parts += [f"L={self.train_length}", f"width {self.d_model}, {self.n_head}x{self.head_size} heads, "
                  f"{self.n_layer} layers", f"{self.steps} steps",
                  f"seed {self.seed}"]
        return " ".join(parts)


def _digest(values: dict) -> str:
    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Grid:
    """A set of experiments as data: every encoding × seed around one base config."""

    base: ExperimentConfig = ExperimentConfig()
    encodings: tuple[str, ...] = tuple(ENCODINGS)
    seeds: tuple[int, ...] = DEFAULT_SEEDS

    def configs(self) -> list[ExperimentConfig]:
        """RoPE's default seed first (what a page opens on), then every seed of every encoding."""
        configs = [self.base.replace(encoding=e, seed=s) for s in self.seeds for e in self.encodings]
        first = self.base.replace(encoding="rope" if "rope" in self.encodings else self.encodings[0],
                                  seed=self.seeds[0])
        return [first] + [c for c in configs if c != first]


DEFAULT_GRID = Grid()
# The retrieval experiment: the default RoPE model trained on a mix that teaches copying (``COPY_FRACTION`` of the
# windows hold random letters written twice and a passkey and its repeat: ``pe_core.train.retrieval``), scored
# on passkey retrieval beside next-character accuracy, with YaRN and DroPE fine-tuned.
# Its own hashes: the default grid's runs stay as they are. RoPE only: the scaling methods and DroPE are RoPE's.
COPY_FRACTION = 0.5
RETRIEVAL_FINE_TUNES = ("yarn", DROPE)  # the best scaling fine-tune of the default experiment, and DroPE
RETRIEVAL_SEEDS = (0, 1, 2)  # three seeds: a run here fine-tunes at 8× L, which costs more than its training
RETRIEVAL_GRID = Grid(base=ExperimentConfig(copy_fraction=COPY_FRACTION, retrieval=True,
                                            fine_tune=RETRIEVAL_FINE_TUNES), encodings=("rope",),
                      seeds=RETRIEVAL_SEEDS)
