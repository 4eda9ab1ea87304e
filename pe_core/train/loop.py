"""The one training loop, as nanoGPT's: batches in, AdamW step, a progress record out.

Pre-training and fine-tuning are the same loop: fine-tuning starts from a trained model (a
copy) with another RoPE spec, at another length, with a gentler schedule
(``TrainingRun.fine_tune_of``). The loop is a generator, so a page draws a live loss curve and
a script simply iterates; stopping is leaving the loop, and ``steps()`` resumes exactly where
it stopped (the run is seeded, so a stopped-and-resumed run equals an uninterrupted one).

A step's batch is always computed as ``SHARDS`` parts, each by its own copy of the model with one thread, and
their gradients are added in a fixed order: a run's numbers are the same on one core or several, and on a
machine with two cores the parts run at once (the tiny matrices gain little from threads inside one product:
two threads there gave 36 ms a step against 26 ms for two parts side by side, 44 ms for one thread).
"""

from __future__ import annotations

import contextlib
import copy
import os
import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import torch
import torch.nn.functional as F

from pe_core.data import Corpus, evenly_spaced_windows, load_corpus, random_windows, unigram_baseline, with_start
from pe_core.device import compute_device
from pe_core.model import ModelConfig, TinyTransformer
from pe_core.rope import RopeSpec
from pe_core.train.config import TrainConfig

SHARDS = 2  # parts of every step's batch (fixed: the numbers must not depend on the machine)
_SEEDING = threading.Lock()
_SHARD_WORKERS: ThreadPoolExecutor | None = None
_SHARD_WORKERS_LOCK = threading.Lock()


class Progress(NamedTuple):
    step: int  # optimiser steps done
    total_steps: int
    loss: float  # training loss of this step's batch (nats/char)
    validation_loss: float | None  # every ``validate_every`` steps and at the last step
    tokens_per_s: float  # throughput of this step
    elapsed_s: float  # training time so far (pauses excluded)
    learning_rate: float


def cpu_threads() -> int:
    """Cores one CPU training run computes on: one per part of a step's batch, as many as the machine has
    (``PE_TRAIN_THREADS`` overrides). Each part runs on one thread, so the count changes the speed, never
    the numbers."""
    forced = os.environ.get("PE_TRAIN_THREADS", "").strip()
    if forced.isdigit() and int(forced) > 0:
        return min(int(forced), SHARDS)
    return max(1, min(os.cpu_count() or 1, SHARDS))


def use_cpu_threads(device: torch.device) -> None:
    # One thread inside each operation, set from the thread that computes (a running thread keeps the
    # OpenMP count it started with): results must not depend on how many cores the machine has.
    if device.type == "cpu" and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _shard_workers() -> ThreadPoolExecutor:
    global _SHARD_WORKERS
    with _SHARD_WORKERS_LOCK:
        if _SHARD_WORKERS is None:
            _SHARD_WORKERS = ThreadPoolExecutor(SHARDS, thread_name_prefix="pe-shard")
        return _SHARD_WORKERS


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """bfloat16 for the training matmuls on a GPU that has it (``PE_AUTOCAST=0`` turns it off); else None.

    Safe here because the model keeps what low precision would damage in float32: RoPE's angles
    and rotations, the layer norms and the loss (autocast's float32 list).
    """
    if os.environ.get("PE_AUTOCAST", "1").strip() == "0" or device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else None


def _decayed(name: str, parameter: torch.nn.Parameter) -> bool:
    # As nanoGPT: decay matrices, not norms, biases, the (few) T5 bias values or Transformer-XL's u and v
    return parameter.dim() >= 2 and not name.startswith("t5_bias") and not name.endswith(("xl_u", "xl_v"))


class MemoryCount(NamedTuple):
    """Memory of one training step, counted (not sampled): what the step keeps alive at its peak."""

    activation_bytes: int  # tensors autograd saves for the backward pass (parameters excluded)
    state_bytes: int  # weights, their gradients and AdamW's two moments

    @property
    def total_bytes(self) -> int:
        return self.activation_bytes + self.state_bytes


@contextlib.contextmanager
def counting_saved_tensors(models: torch.nn.Module | Sequence[torch.nn.Module], counted: dict[int, int]):
    """Record in ``counted`` (storage address → bytes) every tensor autograd saves for backward, once per
    storage, leaving out the parameters of ``models`` themselves (they exist anyway)."""
    models = [models] if isinstance(models, torch.nn.Module) else models
    parameters = {p.untyped_storage().data_ptr() for model in models for p in model.parameters()}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        address = storage.data_ptr()
        if address not in parameters:
            counted[address] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield


def _optimiser(model: TinyTransformer, config: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if _decayed(n, p)]
    no_decay = [p for n, p in model.named_parameters() if not _decayed(n, p)]
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate, betas=(0.9, 0.99), fused=device.type == "cuda")


class TrainingRun:
    """One model being trained at one length: optimiser, data stream, history; resumable after a stop.

    ``model=None`` starts from seeded random weights; otherwise training continues from (a copy
    of) ``model``, optionally with another RoPE ``spec`` and at another ``length``.
    """

    def __init__(
        self,
        model_config: ModelConfig,
        train_config: TrainConfig,
        corpus: Corpus | None = None,
        device: torch.device | str | None = None,
        *,
        model: TinyTransformer | None = None,
        length: int | None = None,
        spec: RopeSpec | None = None,
        start_token: bool = False,
    ):
        self.corpus = corpus or load_corpus()
        if model_config.vocab_size != self.corpus.vocab_size:
            model_config = model_config.replace(vocab_size=self.corpus.vocab_size)
        self.model_config = model_config
        self.train_config = train_config
        self.length = length or model_config.train_length
        self.start_token = start_token
        self.device = torch.device(device) if device is not None else compute_device()
        if model is None:
            with _SEEDING, torch.random.fork_rng(devices=[]):  # seeded init, even with several sessions at once
                torch.manual_seed(train_config.seed)
                model = TinyTransformer(model_config)
        else:
            model = copy.deepcopy(model)
        self.model = model.to(self.device)
        if spec is not None:
            self.model.set_rope(spec)
        self.optimiser = _optimiser(self.model, train_config, self.device)
        self.batches = torch.Generator().manual_seed(train_config.seed + 1)
        self.step = 0
        self.elapsed_s = 0.0
        self.history: list[Progress] = []
        self.step_seconds: list[float] = []  # the optimiser steps alone (no validation): the throughput measure
        self.memory: MemoryCount | None = None  # counted on the first step
        self._copies: list[TinyTransformer] | None = None  # the model's copies that compute a batch's other parts
        self.peak_memory_bytes: int | None = None  # CUDA only: torch.cuda.max_memory_allocated while training
        self.validation = self._marked(
            evenly_spaced_windows(self.corpus.validation, self.length, train_config.validation_windows))
        self.autocast = autocast_dtype(self.device)

    @classmethod
    def fine_tune_of(cls, run: TrainingRun, spec: RopeSpec, length: int, steps: int,
                     learning_rate: float) -> TrainingRun:
        """A copy of ``run``'s model, trained ``steps`` more steps at ``length`` with ``spec`` (Chen et al. 2023, §3).

        Batches hold as many characters as in pre-training, and the weight decay is pre-training's.
        """
        base = run.train_config
        config = TrainConfig(steps=steps, batch_size=max(1, base.batch_size * run.length // length),
                             learning_rate=learning_rate, weight_decay=base.weight_decay,
                             warmup_steps=max(1, steps // 10), seed=base.seed + 7, validate_every=steps,
                             validation_windows=max(4, base.validation_windows * run.length // length))
        return cls(run.model_config, config, run.corpus, run.device, model=run.model, length=length, spec=spec,
                   start_token=run.start_token)

    def _marked(self, windows: torch.Tensor) -> torch.Tensor:
        return with_start(windows) if self.start_token else windows

    @property
    def done(self) -> bool:
        return self.step >= self.train_config.steps

    def _autocast(self):
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast)

    def steps(self, limit: int | None = None) -> Iterator[Progress]:
        """Train until the configured number of steps (or ``limit`` more), yielding after each step."""
        use_cpu_threads(self.device)
        config, length = self.train_config, self.length
        end = config.steps if limit is None else min(config.steps, self.step + limit)
        self.model.train()
        if self.device.type == "cuda" and self.step == 0:
            torch.cuda.reset_peak_memory_stats(self.device)
        while self.step < end:
            started = time.perf_counter()
            batch = self._marked(random_windows(self.corpus.train, length, config.batch_size, self.batches))
            batch = batch.to(self.device)
            learning_rate = config.learning_rate_at(self.step)
            for group in self.optimiser.param_groups:
                group["lr"] = learning_rate
            self.optimiser.zero_grad(set_to_none=True)
            saved: dict[int, int] = {}
            loss = self._gradients(batch) if self.memory is not None else self._counted_gradients(batch, saved)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.grad_clip)
            self.optimiser.step()
            loss_value = loss.item()  # synchronises, so the timing below is honest on CUDA too
            step_seconds = time.perf_counter() - started
            if self.memory is None:
                weights = sum(p.numel() * p.element_size() for p in self.model.parameters())
                # weights, gradients and AdamW's two moments, and each copy's weights and gradients
                self.memory = MemoryCount(sum(saved.values()), (4 + 2 * (SHARDS - 1)) * weights)
            else:  # the counted first step pays for its hooks: not a throughput sample
                self.step_seconds.append(step_seconds)
            self.step += 1
            validation_loss = None
            if self.step % config.validate_every == 0 or self.step == config.steps:
                validation_loss = self.validation_loss()
            self.elapsed_s += time.perf_counter() - started
            record = Progress(self.step, config.steps, loss_value, validation_loss,
                              config.batch_size * length / max(step_seconds, 1e-9), self.elapsed_s, learning_rate)
            self.history.append(record)
            yield record

    def _models(self) -> list[TinyTransformer]:
        """The model, then a copy of it for each further part of a batch, holding the model's current weights."""
        if self._copies is None:  # made at the first step (a fine-tune has set its spec by then)
            self._copies = [copy.deepcopy(self.model) for _ in range(SHARDS - 1)]
        with torch.no_grad():
            for replica in self._copies:
                torch._foreach_copy_(list(replica.parameters()), list(self.model.parameters()))
        return [self.model, *self._copies]

    def _parts(self, batch: torch.Tensor) -> list[tuple[torch.Tensor, float]]:
        """The batch's parts and each one's share of it (a part's mean loss times its share sums to the batch's)."""
        return [(part, len(part) / len(batch)) for part in torch.tensor_split(batch, SHARDS) if len(part)]

    def _part_loss(self, model: TinyTransformer, part: torch.Tensor, share: float) -> torch.Tensor:
        with self._autocast():
            logits = model(part[:, :-1])
        return F.cross_entropy(logits.float().flatten(0, 1), part[:, 1:].flatten()) * share

    def _gradients(self, batch: torch.Tensor) -> torch.Tensor:
        """The batch's loss; its gradient left in the model's parameters (each part on its own model copy,
        side by side where the machine has the cores)."""
        parts = self._parts(batch)
        models = self._models()[:len(parts)]

        def part_gradients(model: TinyTransformer, part: tuple[torch.Tensor, float]) -> torch.Tensor:
            use_cpu_threads(self.device)
            model.zero_grad(set_to_none=True)
            loss = self._part_loss(model, *part)
            loss.backward()
            return loss.detach()

        if self.device.type == "cpu" and cpu_threads() > 1 and len(parts) > 1:
            losses = list(_shard_workers().map(part_gradients, models, parts))
        else:
            losses = [part_gradients(model, part) for model, part in zip(models, parts, strict=True)]
        return self._summed(models, losses)

    def _counted_gradients(self, batch: torch.Tensor, saved: dict[int, int]) -> torch.Tensor:
        """``_gradients`` with every tensor saved for backward counted: the parts' forward passes first, so
        what is counted is what parts computed side by side keep alive at once (the same numbers)."""
        parts = self._parts(batch)
        models = self._models()[:len(parts)]
        for model in models:
            model.zero_grad(set_to_none=True)
        with counting_saved_tensors(models, saved):
            losses = [self._part_loss(model, *part) for model, part in zip(models, parts, strict=True)]
            for loss in losses:
                loss.backward()
        return self._summed(models, [loss.detach() for loss in losses])

    @staticmethod
    def _summed(models: list[TinyTransformer], losses: list[torch.Tensor]) -> torch.Tensor:
        """Add the copies' gradients into the model's, in the copies' order, and the parts' losses likewise."""
        for replica in models[1:]:
            for mine, theirs in zip(models[0].parameters(), replica.parameters(), strict=True):
                if theirs.grad is None:
                    continue
                if mine.grad is None:
                    mine.grad = theirs.grad.clone()
                else:
                    mine.grad.add_(theirs.grad)
        total = losses[0]
        for loss in losses[1:]:
            total = total + loss
        return total

    @torch.no_grad()
    def validation_loss(self) -> float:
        was_training = self.model.training
        self.model.eval()
        windows = self.validation.to(self.device)
        loss = float(self.model.token_losses(windows[:, :-1], windows[:, 1:]).mean())
        self.model.train(was_training)
        return loss

    def unigram_baseline(self) -> float:
        return unigram_baseline(self.corpus.train, self.corpus.validation)

    def tokens_per_s(self) -> float:
        """Training throughput over the whole run so far."""
        tokens = self.step * self.train_config.batch_size * self.length
        return tokens / self.elapsed_s if self.elapsed_s else 0.0

    def step_tokens_per_s(self) -> float | None:
        """Characters per second of an optimiser step: the step's characters over the median step time.

        The median (not the mean) so that a shared machine's hiccups do not count; validation is left out.
        """
        if not self.step_seconds:
            return None
        return self.train_config.batch_size * self.length / statistics.median(self.step_seconds)

    def finish_memory(self) -> None:
        """Read the CUDA peak after training (max_memory_allocated since the first step)."""
        if self.device.type == "cuda" and self.peak_memory_bytes is None:
            self.peak_memory_bytes = int(torch.cuda.max_memory_allocated(self.device))
