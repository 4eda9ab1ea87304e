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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from pe_core.data import Corpus, evenly_spaced_windows, load_corpus, random_windows, unigram_baseline, with_start
from pe_core.device import AUTOCAST_NOTE, SHARDS, TF32_NOTE, compute_device, cpu_threads, stored_device_label
from pe_core.model import ModelConfig, TinyTransformer
from pe_core.rope import RopeSpec
from pe_core.train.config import TrainConfig
from pe_core.train.retrieval import plant_copies

# Under vmap the fused attention kernels have no batching rule (they would loop over the copies) and the CPU's has
# no gradient for an additive mask (Transformer-XL's, DeBERTa's): stacked copies use product-and-softmax attention.
_STACKED_ATTENTION = SDPBackend.MATH
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


def use_cpu_threads(device: torch.device) -> None:
    # One thread inside each operation, set from the thread that computes (a running thread keeps the
    # OpenMP count it started with): results must not depend on how many cores the machine has.
    if device.type == "cpu" and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def shard_workers() -> ThreadPoolExecutor:
    global _SHARD_WORKERS
    with _SHARD_WORKERS_LOCK:
        if _SHARD_WORKERS is None:
            _SHARD_WORKERS = ThreadPoolExecutor(SHARDS, thread_name_prefix="pe-shard")
        return _SHARD_WORKERS


class Precision(NamedTuple):
    """How a CUDA run computes its training matmuls (RoPE's angles and rotations, the layer norms and the loss stay
    float32 in every one: autocast's float32 list, and the model rotates in float32 itself)."""

    name: str
    autocast: torch.dtype | None  # autocast's low-precision type, or None: float32 throughout
    tf32: bool  # float32 matmuls on TensorFloat-32 cores (10 mantissa bits in the products)
    note: str  # what the run's device label adds ("" for plain float32)


PRECISIONS = {precision.name: precision for precision in (
    Precision("float32", None, False, ""),
    Precision("tf32", None, True, TF32_NOTE),
    Precision("bf16", torch.bfloat16, False, AUTOCAST_NOTE),
)}
# A 64-wide model at 2,048 characters a step is bound by kernel launches, not arithmetic: on an H200 one run
# trained in 29.3 s in float32 and 37.5 s under bf16 autocast (whose casts are more kernels). float32 also keeps
# a GPU run's numbers those of the CPU's to float32 rounding. ``python -m benchmarks.gpu`` compares all three.
CUDA_PRECISION = "float32"


def training_precision(device: torch.device) -> Precision:
    """The precision a run trains in: float32 off CUDA; on CUDA ``PE_PRECISION`` (float32, tf32 or bf16) or
    ``CUDA_PRECISION`` (bf16 falls back to float32 on a GPU without it)."""
    if device.type != "cuda":
        return PRECISIONS["float32"]
    name = os.environ.get("PE_PRECISION", "").strip().lower() or CUDA_PRECISION
    if name not in PRECISIONS:
        raise ValueError(f"PE_PRECISION must be one of {', '.join(PRECISIONS)} (got {name!r}).")
    if PRECISIONS[name].autocast is torch.bfloat16 and not torch.cuda.is_bf16_supported():
        return PRECISIONS["float32"]
    return PRECISIONS[name]


def training_label(device: torch.device, precision: Precision | None = None) -> str:
    """Where and how a run trains, as its record keeps it: e.g. "CPU (2 threads)", "CUDA (NVIDIA H200), TF32
    matmuls" (``precision``: the run's own, default the device's)."""
    return stored_device_label(device, cpu_threads(), note=(precision or training_precision(device)).note)


@contextlib.contextmanager
def computing_in(precision: Precision, device: torch.device):
    """Run the enclosed forward passes in ``precision`` (TF32 is a process-wide switch: set for the block, then
    restored, so analysis outside training keeps full float32 matmuls)."""
    with contextlib.ExitStack() as stack:
        if precision.tf32:
            stack.callback(torch.set_float32_matmul_precision, torch.get_float32_matmul_precision())
            torch.set_float32_matmul_precision("high")
        if precision.autocast is not None:
            stack.enter_context(torch.autocast(device.type, dtype=precision.autocast))
        yield


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
        # the planted passkeys' own stream: the text windows are those of a run without them
        self.copies = torch.Generator().manual_seed(train_config.seed + 2)
        self.step = 0
        self.elapsed_s = 0.0
        self.history: list[Progress] = []
        self.step_seconds: list[float] = []  # the optimiser steps alone (no validation): the throughput measure
        self.memory: MemoryCount | None = None  # counted on the first step
        self._copies: list[TinyTransformer] | None = None  # the model's copies that compute a batch's other parts
        self.peak_memory_bytes: int | None = None  # CUDA only: torch.cuda.max_memory_allocated while training
        self.validation = self._marked(
            evenly_spaced_windows(self.corpus.validation, self.length, train_config.validation_windows))
        self.precision = training_precision(self.device)

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
                             validation_windows=max(4, base.validation_windows * run.length // length),
                             copy_fraction=base.copy_fraction)
        return cls(run.model_config, config, run.corpus, run.device, model=run.model, length=length, spec=spec,
                   start_token=run.start_token)

    def _marked(self, windows: torch.Tensor) -> torch.Tensor:
        return with_start(windows) if self.start_token else windows

    @property
    def done(self) -> bool:
        return self.step >= self.train_config.steps

    def _computing(self):
        return computing_in(self.precision, self.device)

    def steps(self, limit: int | None = None) -> Iterator[Progress]:
        """Train until the configured number of steps (or ``limit`` more), yielding after each step.

        The loop is ``TrainingBatch``'s with a batch of one model."""
        for records in TrainingBatch([self]).steps(limit):
            yield records[0][1]

    # ---- one optimiser step, in three parts (a ``TrainingBatch`` interleaves its runs' parts) -----------

    def _begin_step(self) -> torch.Tensor:
        """This step's batch (from the run's own stream), its learning rate set and the gradients cleared."""
        if self.step == 0 and self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self.model.train()
        windows = random_windows(self.corpus.train, self.length, self.train_config.batch_size, self.batches)
        if self.train_config.copy_fraction > 0:
            windows = plant_copies(windows, self.train_config.copy_fraction, self.copies)
        batch = self._marked(windows).to(self.device)
        self._learning_rate = self.train_config.learning_rate_at(self.step)
        for group in self.optimiser.param_groups:
            group["lr"] = self._learning_rate
        self.optimiser.zero_grad(set_to_none=True)
        return batch

    def _update(self, loss: torch.Tensor) -> float:
        """Clip this run's gradient (its own norm) and take its optimiser step; the loss as a number."""
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train_config.grad_clip)
        self.optimiser.step()
        return loss.item()  # synchronises, so the step's timing is honest on CUDA too

    def _end_step(self, loss_value: float, step_seconds: float, counted: dict[int, int] | None) -> Progress:
        """Count the step, validate when due and record it. ``step_seconds``: this run's share of the step's time."""
        config = self.train_config
        if counted is not None:
            weights = sum(p.numel() * p.element_size() for p in self.model.parameters())
            # weights, gradients and AdamW's two moments, and each copy's weights and gradients
            self.memory = MemoryCount(sum(counted.values()), (4 + 2 * (SHARDS - 1)) * weights)
        else:  # the counted first step pays for its hooks: not a throughput sample
            self.step_seconds.append(step_seconds)
        self.step += 1
        started = time.perf_counter()
        validation_loss = None
        if self.step % config.validate_every == 0 or self.step == config.steps:
            validation_loss = self.validation_loss()
        self.elapsed_s += step_seconds + time.perf_counter() - started
        record = Progress(self.step, config.steps, loss_value, validation_loss,
                          config.batch_size * self.length / max(step_seconds, 1e-9), self.elapsed_s,
                          self._learning_rate)
        self.history.append(record)
        return record

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
        with self._computing():
            logits = model(part[:, :-1])
        return F.cross_entropy(logits.float().flatten(0, 1), part[:, 1:].flatten()) * share

    def _gradients(self, batch: torch.Tensor) -> torch.Tensor:
        """The batch's loss; its gradient left in the model's parameters (each part on its own model copy,
        side by side where the machine has the cores)."""
        return _pooled_gradients([self], [batch])[0]

    def _counted_gradients(self, batch: torch.Tensor, saved: dict[int, int]) -> torch.Tensor:
        """The batch's gradients (as ``_pooled_gradients``) with every tensor saved for backward counted: the
        parts' forward passes first, so what is counted is what parts computed side by side keep alive at once
        (the same numbers)."""
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


class TrainingBatch:
    """Several training runs stepped together: the one loop, seeing a batch of models.

    Each run keeps its own initial weights, data stream, learning-rate schedule, optimiser state, gradient
    clipping (its own norm), step count and history; a run leaves the batch when it is done or when
    ``should_stop`` says so, and the others go on. How the models compute, chosen per device:

    - one by one (the CPU): every run's batch parts go to the same worker threads in one round, so the two
      cores stay busy, and each run's numbers are bit for bit those of the run trained alone;
    - stacked (CUDA, or ``stacked=True``): the models' weights are stacked along a leading copy dimension
      (``torch.func.stack_module_state``) and one ``vmap`` of the model computes every copy's loss with
      batched matrix products, the PyTorch model-ensembling recipe; at these sizes a GPU step costs its
      kernel launches, so N copies cost about what one does. Copies may differ in their RoPE frequencies
      (each brings its own cos and sin), so the fine-tunes of several methods stack. Each model's parameters
      are views of the stack, so its own optimiser, clipping and evaluation work on them unchanged. The
      numbers agree with one by one to float32 rounding (products summed in another order).

    On two CPU cores stacking is slower (batched products run below the plain ones' speed), so the CPU
    does not stack; see the benchmarks.
    """

    def __init__(self, runs: Sequence[TrainingRun], *, stacked: bool | None = None):
        if not runs:
            raise ValueError("A training batch needs at least one run.")
        self.runs = list(runs)
        devices = {run.device for run in self.runs}
        if len(devices) > 1:
            raise ValueError("The runs of a batch must train on one device.")
        if stacked is None:
            stacked = next(iter(devices)).type != "cpu"
        if stacked and len(self.runs) > 1 and len({_stack_shape(run) for run in self.runs}) > 1:
            raise ValueError("Stacked runs must share the model's shape, length, batch size and RoPE's tricks (their "
                             "RoPE frequencies may differ: the fine-tunes of several methods stack).")
        self.stacked = stacked
        self._stack: _Stack | None = None

    def steps(self, limit: int | None = None,
              should_stop: Callable[[TrainingRun], bool] | None = None) -> Iterator[list[tuple[int, Progress]]]:
        """Step every unfinished run (at most ``limit`` more steps each), yielding after each step the
        (index in ``runs``, record) of every run that took it."""
        ends = [run.train_config.steps if limit is None else min(run.train_config.steps, run.step + limit)
                for run in self.runs]
        try:
            while True:
                active = [i for i, run in enumerate(self.runs) if run.step < ends[i]
                          and not (should_stop is not None and should_stop(run))]
                if not active:
                    return
                yield self._step(active)
        finally:
            self._unstack()

    def _step(self, active: list[int]) -> list[tuple[int, Progress]]:
        runs = [self.runs[i] for i in active]
        use_cpu_threads(runs[0].device)
        started = time.perf_counter()
        batches = [run._begin_step() for run in runs]
        counted = [{} if run.memory is None else None for run in runs]
        losses: list[torch.Tensor | None] = [None] * len(runs)
        for k, (run, batch, saved) in enumerate(zip(runs, batches, counted, strict=True)):
            if saved is not None:  # the first step: counted one run at a time (hooks see one model's tensors)
                losses[k] = run._counted_gradients(batch, saved)
        rest = [k for k, saved in enumerate(counted) if saved is None]
        if rest and self.stacked and len(self.runs) > 1:
            stacked_losses = self._stacked_gradients([runs[k] for k in rest], [batches[k] for k in rest])
        else:
            stacked_losses = _pooled_gradients([runs[k] for k in rest], [batches[k] for k in rest])
        for k, loss in zip(rest, stacked_losses, strict=True):
            losses[k] = loss
        loss_values = [run._update(loss) for run, loss in zip(runs, losses, strict=True)]
        share = (time.perf_counter() - started) / len(runs)
        return [(i, run._end_step(value, share, saved))
                for i, run, value, saved in zip(active, runs, loss_values, counted, strict=True)]

    # ---- stacked ------------------------------------------------------------------------------------

    def _stacked_gradients(self, runs: list[TrainingRun], batches: list[torch.Tensor]) -> list[torch.Tensor]:
        if self._stack is None or self._stack.runs != runs:
            self._unstack()
            self._stack = _Stack(runs)
        return self._stack.gradients(torch.stack(batches))

    def _unstack(self) -> None:
        if self._stack is not None:
            self._stack.release()
            self._stack = None


def _stack_shape(run: TrainingRun) -> tuple:
    """What stacked copies must share: each copy brings its own weights, batch and RoPE angles, nothing else."""
    rotary = run.model.rotary
    tricks = None if rotary is None else (rotary.pairing, rotary.logn, rotary.window, rotary.leak)
    return run.model_config, run.length, run.train_config.batch_size, run.start_token, tricks


class _Stack:
    """The weights of several same-shaped models as one tensor per parameter, [copies, ...], each model's
    parameters turned into views of its row (so its optimiser updates the stack in place)."""

    def __init__(self, runs: list[TrainingRun]):
        from torch.func import functional_call, stack_module_state, vmap

        self.runs = list(runs)
        models = [run.model for run in runs]
        parameters, buffers = stack_module_state(models)
        self.names = list(parameters)
        self.weights = [parameters[name] for name in self.names]
        for row, model in enumerate(models):
            for name, parameter in model.named_parameters():
                parameter.data = self.weights[self.names.index(name)].detach()[row]
        # one module computes every copy (its own parameters are replaced by each copy's in functional_call)
        self.base = copy.deepcopy(models[0])
        self.computing = runs[0]._computing

        def copy_loss(weights: dict, buffers: dict, batch: torch.Tensor, angles) -> torch.Tensor:
            logits = functional_call(self.base, (weights, buffers), (batch[:, :-1],), {"rope_angles": angles})
            return F.cross_entropy(logits.float().flatten(0, 1), batch[:, 1:].flatten())

        self.buffers = buffers
        rope = models[0].rotary is not None
        self.losses = vmap(copy_loss, in_dims=(0, 0, 0, 0 if rope else None))
        self._angles: dict[int, tuple[torch.Tensor, torch.Tensor] | None] = {}

    def angles(self, length: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Every copy's RoPE (cos, sin) at ``length``, stacked [copies, T, d/2] (None: not a RoPE model). Each
        copy's own, so copies with different specs (the fine-tunes of several methods) train together."""
        if length not in self._angles:
            rotaries = [run.model.rotary for run in self.runs]
            if rotaries[0] is None:
                self._angles[length] = None
            else:
                device = self.weights[0].device
                pairs = [rotary.cos_sin(length, device, torch.float32) for rotary in rotaries]
                self._angles[length] = (torch.stack([cos for cos, _ in pairs]), torch.stack([sin for _, sin in pairs]))
        return self._angles[length]

    def gradients(self, batch: torch.Tensor) -> list[torch.Tensor]:
        """Each copy's loss on its own rows of ``batch`` [copies, B, T + 1]; each gradient left in its model."""
        with self.computing(), sdpa_kernel(_STACKED_ATTENTION):
            losses = self.losses(dict(zip(self.names, self.weights, strict=True)), self.buffers, batch,
                                 self.angles(batch.shape[-1] - 1))
        gradients = torch.autograd.grad(losses.sum(), self.weights)
        for row, run in enumerate(self.runs):
            for parameter, gradient in zip(run.model.parameters(), gradients, strict=True):
                parameter.grad = gradient[row]
        return list(losses.detach())

    def release(self) -> None:
        """Give every model its own weights again (a copy of its row)."""
        for run in self.runs:
            for parameter in run.model.parameters():
                parameter.data = parameter.data.clone()
                if parameter.grad is not None:
                    parameter.grad = parameter.grad.clone()


def _pooled_gradients(runs: list[TrainingRun], batches: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every run's loss, its gradient left in its model: the parts of all runs' batches computed in one
    round on the worker threads (each part on its own model copy, summed per run in a fixed order)."""
    jobs = []
    for run, batch in zip(runs, batches, strict=True):
        parts = run._parts(batch)
        jobs.append((run, run._models()[:len(parts)], parts))
    tasks = [(run, model, part) for run, models, parts in jobs for model, part in zip(models, parts, strict=True)]

    def part_gradients(task: tuple[TrainingRun, TinyTransformer, tuple[torch.Tensor, float]]) -> torch.Tensor:
        run, model, part = task
        use_cpu_threads(run.device)
        model.zero_grad(set_to_none=True)
        loss = run._part_loss(model, *part)
        loss.backward()
        return loss.detach()

    on_cpu = bool(runs) and runs[0].device.type == "cpu"
    if on_cpu and cpu_threads() > 1 and len(tasks) > 1:
        losses = list(shard_workers().map(part_gradients, tasks))
    else:
        losses = [part_gradients(task) for task in tasks]
    totals, start = [], 0
    for run, models, parts in jobs:
        totals.append(run._summed(models, losses[start:start + len(parts)]))
        start += len(parts)
    return totals
