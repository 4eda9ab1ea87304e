"""The one place that decides where torch computation runs (cuda > mps > cpu)."""

from __future__ import annotations

import functools
import os
import re

import torch

from i18n import N_, _, ngettext, use_language

MPS_LABEL = N_("MPS (Apple GPU)")


@functools.lru_cache(maxsize=1)
def compute_device() -> torch.device:
    """The best available device; ``PE_DEVICE`` (cpu/cuda/mps) overrides the choice."""
    forced = os.environ.get("PE_DEVICE", "").strip().lower()
    if forced:
        if forced == "cuda" and not torch.cuda.is_available():
            raise ValueError("PE_DEVICE=cuda was requested but no CUDA device is available.")
        if forced == "mps" and not _mps_available():
            raise ValueError("PE_DEVICE=mps was requested but no MPS device is available.")
        if forced not in {"cpu", "cuda", "mps"}:
            raise ValueError(f"PE_DEVICE must be one of cpu, cuda, mps (got {forced!r}).")
        return torch.device(forced)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


# Parts of every training step's batch, each computed by its own copy of the model on one thread (fixed: the numbers
# must not depend on the machine; ``pe_core.train.loop`` splits the batch so).
SHARDS = 2


def cpu_threads() -> int:
    """Cores one CPU training run computes on: one per part of a step's batch, as many as the machine has
    (``PE_TRAIN_THREADS`` overrides). Each part runs on one thread, so the count changes the speed, never
    the numbers."""
    forced = os.environ.get("PE_TRAIN_THREADS", "").strip()
    if forced.isdigit() and int(forced) > 0:
        return min(int(forced), SHARDS)
    return max(1, min(os.cpu_count() or 1, SHARDS))


def device_label(device: torch.device | None = None, threads: int | None = None) -> str:
    """A short human description, e.g. 'CUDA (NVIDIA H100)' or 'CPU (2 threads)' (``threads``: the CPU threads
    that computed; a GPU ignores it). By default the threads the server trains on (``cpu_threads``),
    the count a run's record keeps: the sidebar's device and the training page's never disagree on one server
    (torch's intra-op count, which the server keeps at 1 for page work on small machines, said "1 thread" where
    the runs said 2)."""
    device = device or compute_device()
    if device.type == "cuda":
        return f"CUDA ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return _(MPS_LABEL)
    if threads is None:
        threads = cpu_threads()
    return _cpu_label(threads)


def _cpu_label(threads: int) -> str:
    return ngettext("CPU ({count} thread)", "CPU ({count} threads)", threads).format(count=threads)


AUTOCAST_NOTE = N_(", bf16 autocast")
TF32_NOTE = N_(", TF32 matmuls")
PRECISION_NOTES = (AUTOCAST_NOTE, TF32_NOTE)  # what a record's device label adds when training was not plain float32
_STORED_CPU = re.compile(r"CPU \((\d+) threads?\)")


def stored_device_label(device: torch.device, threads: int, *, note: str = "") -> str:
    """What a run record keeps of where it ran: ``device_label`` in English (records are data, shown to readers
    of every language through ``shown_device_label``), and ``note``, one of ``PRECISION_NOTES`` when the training
    matmuls ran in another precision than float32."""
    if note and note not in PRECISION_NOTES:
        raise ValueError(f"Unknown precision note {note!r}.")
    with use_language("en"):
        return device_label(device, threads) + note


def shown_device_label(stored: str) -> str:
    """A record's device label in the reader's language (a GPU's name stays as the driver gives it)."""
    note = next((n for n in PRECISION_NOTES if stored.endswith(n)), "")
    label = stored[:len(stored) - len(note)]
    cpu = _STORED_CPU.fullmatch(label)
    if cpu:
        label = _cpu_label(int(cpu[1]))
    elif label == MPS_LABEL:
        label = _(MPS_LABEL)
    return label + (_(note) if note else "")


def use_server_threads() -> None:
    """One intra-op thread for the web server's page work on small machines.

    Page computations are many small tensors shared among browser sessions; on a 2-4 core
    machine torch's intra-op threads mostly spin-wait on each other (measured 3-15× slower
    under load). ``OMP_NUM_THREADS`` still wins, and training sets its own count.
    """
    if "OMP_NUM_THREADS" not in os.environ and (os.cpu_count() or 1) <= 4:
        torch.set_num_threads(1)
