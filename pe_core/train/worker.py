"""Training workers: ``python -m pe_core.train --worker --store URL`` drains the store's queue from any machine.

A worker (a GPU box beside a class server, or a spare core) registers in the store's
``workers`` table and loops: claim the oldest queued job together with the queued jobs of the
same shape (``pe_core.train.experiment.batch_key``: they differ only in their seed), train them
as one batch (``run_experiments``), store each record and close its job in one transaction. A thread renews the leases and writes each job's progress every few
seconds, so every app instance shows how far it got and when it should end. A worker that dies
stops renewing: its leases run out and another worker (or an app instance) takes the jobs
again; a worker that comes back after losing a lease drops that job without storing it.
Stopped with Ctrl-C or SIGTERM, a worker hands its unfinished jobs back to the queue.

While a worker's heartbeat is fresh (``WORKER_ALIVE_S``) the app queues runs for the workers
instead of training them itself; with none, the app's own trainer stays the default.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import torch

from pe_core.data import Corpus, load_corpus
from pe_core.device import compute_device
from pe_core.train.attention import kept_weights
from pe_core.train.config import ExperimentConfig
from pe_core.train.experiment import Status, run_experiments
from pe_core.train.loop import training_label
from pe_core.train.schema import RunRecord
from pe_core.train.store import DONE, FAILED, QueuedJob, RunStore, describe_location

LEASE_S = 60.0  # a claim lasts this long unless renewed; a dead worker's jobs return to the queue after it
PROGRESS_S = 2.0  # how often a worker renews its leases and writes its jobs' progress (at most a third of a lease)
WORKER_ALIVE_S = 30.0  # a worker whose heartbeat is older than this is gone (the app then trains itself)
MAX_BATCH = 40  # jobs claimed together (the default grid: 8 encodings × 5 seeds)
IDLE_POLL_S = 1.0


def status_fields(status: Status) -> dict:
    """A ``Status`` as the queue keeps it (its optimiser record left out)."""
    return {"phase": status.phase, "encoding": status.encoding, "method": status.method, "step": status.step,
            "total": status.total}


def default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclasses.dataclass
class Event:
    """What a worker did, for its log: 'claimed', 'stored', 'already stored', 'lost', 'failed', 'released'."""

    kind: str
    job: QueuedJob
    seconds: float = 0.0
    detail: str = ""


class Worker:
    """Drains a store's queue; ``run()`` until stopped (or until the queue is empty)."""

    def __init__(self, store: RunStore, *, name: str | None = None, device: torch.device | str | None = None,
                 lease_s: float = LEASE_S, batch: int = MAX_BATCH, corpus: Corpus | None = None,
                 on_event: Callable[[Event], None] | None = None):
        if lease_s <= 0 or batch < 1:
            raise ValueError("The lease must be positive and the batch at least 1.")
        self.store = store
        self.name = name or default_name()
        self.device = torch.device(device) if device is not None else compute_device()
        self.label = training_label(self.device)
        self.lease_s = float(lease_s)
        self.batch = batch
        self.corpus = corpus
        self.on_event = on_event or (lambda event: None)
        self.stored = 0
        self._held: dict[int, tuple[float, dict | None]] = {}  # job id -> (fraction, status), renewed by the beat
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self, *, until_empty: bool = False) -> int:
        """Claim and train until ``stop()`` (or, with ``until_empty``, until nothing is left to claim); returns
        how many runs this worker stored. Jobs held when it stops go back to the queue."""
        self.corpus = self.corpus or load_corpus()  # before the first claim: a lease is not spent on it
        self.store.register_worker(self.name, self.label)
        beat = threading.Thread(target=self._beat, name=f"lease-{self.name}", daemon=True)
        beat.start()
        try:
            while not self._stop.is_set():
                jobs = self.store.claim(self.name, self.label, self.lease_s, self.batch)
                if not jobs:
                    if until_empty:
                        break
                    self._stop.wait(IDLE_POLL_S)
                    continue
                self.train(jobs)
        finally:
            self._stop.set()
            beat.join()
            for job_id in list(self._held):
                self.store.release(job_id, self.name)
            self.store.unregister_worker(self.name)
        return self.stored

    def train(self, jobs: list[QueuedJob]) -> None:
        """Train claimed jobs (one batch) and store each one's record while its lease is still this worker's."""
        with self._lock:
            self._held.update({job.id: (0.0, None) for job in jobs})
        for job in jobs:
            self.on_event(Event("claimed", job))
        try:
            for job in jobs:
                if job.hash in self.store:  # stored since it was queued (copied in, or an earlier holder)
                    self.store.finish(job.id, self.name, DONE)
                    self._drop(job)
                    self.on_event(Event("already stored", job))
            for job, record, seconds in self._trained([j for j in jobs if j.id in self._held]):
                self._drop(job)
                if isinstance(record, Exception):
                    self.store.finish(job.id, self.name, FAILED, f"{type(record).__name__}: {record}")
                    self.on_event(Event("failed", job, seconds, str(record)))
                elif record is None or not self.store.complete(job.id, self.name, *record):
                    self.on_event(Event("lost", job, seconds))
                else:
                    self.stored += 1
                    self.on_event(Event("stored", job, seconds, record[0].device))
        finally:
            with self._lock:
                held = [job for job in jobs if job.id in self._held]
            for job in held:  # stopped mid-batch: back to the queue
                self.store.release(job.id, self.name)
                self._drop(job)
                self.on_event(Event("released", job))

    def _trained(self, jobs: list[QueuedJob]
                 ) -> Iterator[tuple[QueuedJob, tuple[RunRecord, bytes | None] | Exception | None, float]]:
        """Each job's record and kept weights as its run ends (None: its lease was lost; an exception: the batch
        failed). Stopped
        (``stop()``), it returns early: the caller hands the jobs still held back to the queue."""
        corpus = self.corpus = self.corpus or load_corpus()
        by_hash = {job.hash: job for job in jobs}
        started = time.perf_counter()

        def should_stop(run_hash: str) -> bool:
            with self._lock:
                return by_hash[run_hash].id in self._lost or self._stop.is_set()

        configs = [ExperimentConfig.from_json(job.config) for job in jobs]
        try:
            for update in run_experiments(configs, corpus, self.device, should_stop=should_stop,
                                          max_batch=self.batch):
                job = by_hash[update.config.hash]
                if update.stopped:
                    if self._stop.is_set():
                        return
                    yield job, None, time.perf_counter() - started
                elif update.record is not None:
                    weights = kept_weights(update.config, update.experiment.run.model)
                    yield job, (update.record, weights), time.perf_counter() - started
                else:
                    with self._lock:
                        if job.id in self._held:
                            self._held[job.id] = (update.status.fraction, status_fields(update.status))
        except Exception as err:  # noqa: BLE001 - one failing batch must not stop the worker
            with self._lock:
                failed = [job for job in jobs if job.id in self._held]
            for job in failed:
                yield job, err, time.perf_counter() - started

    def _drop(self, job: QueuedJob) -> None:
        with self._lock:
            self._held.pop(job.id, None)
            self._lost.discard(job.id)

    def _beat(self) -> None:
        """Renew the held leases with their progress, and the worker's own heartbeat, until the worker stops."""
        interval = min(PROGRESS_S, self.lease_s / 3)
        while not self._stop.wait(interval):
            with self._lock:
                progress = dict(self._held)
            try:
                lost = self.store.renew(self.name, self.lease_s, progress) if progress else set()
                self.store.worker_alive(self.name)
            except Exception:  # noqa: BLE001 - a database hiccup: the next beat tries again (the lease has slack)
                continue
            if lost:
                with self._lock:
                    self._lost |= lost & set(self._held)


def run_worker(store: RunStore, args) -> dict:
    """``python -m pe_core.train --worker``: log each job on stderr; Ctrl-C or SIGTERM hands held jobs back."""
    import signal
    import sys

    def log(event: Event) -> None:
        if args.quiet and event.kind == "claimed":
            return
        config = ExperimentConfig.from_json(event.job.config)
        took = f" in {event.seconds:.1f} s" if event.seconds else ""
        where = f" on {event.detail}" if event.kind == "stored" else (f": {event.detail}" if event.detail else "")
        print(f"[worker {worker.name}] {event.kind} job {event.job.id} {event.job.hash} ({config.label()}){took}"
              f"{where}", file=sys.stderr, flush=True)

    worker = Worker(store, name=args.name, device=args.device, lease_s=args.lease or LEASE_S,
                    batch=args.batch or MAX_BATCH, on_event=log)

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    print(f"[worker {worker.name}] draining the queue of {store.backend} store {describe_location(store.location)}"
          f" on {worker.label}", file=sys.stderr, flush=True)
    try:
        stored = worker.run(until_empty=args.until_empty)
    except KeyboardInterrupt:
        stored = worker.stored
    finally:
        store.close()
    print(f"[worker {worker.name}] stopped; {stored} run(s) stored", file=sys.stderr, flush=True)
    return {"worker": worker.name, "stored": stored}
