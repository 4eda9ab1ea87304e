"""Training for a whole class: stored results at once, one run per config, a queue for the rest.

``TrainingService.request(config)`` answers with the stored ``RunRecord`` when the store has
the config's hash; otherwise with a background ``pe_core.jobs.Job``, shared by every session
that asks for the same config while it is in flight. A finished run is saved to the store
before the job ends, so it survives a restart and the next request is a lookup.

Every request is a job in the store's queue (``pe_core.train.store``), so every app instance
sharing the store sees it, with its progress and its expected end (``queue_view``):

- while training workers drain the queue (``python -m pe_core.train --worker``, a heartbeat
  in the store), the request waits there and the page follows the job's row;
- with none, the app's own trainer is the default: the job runs on the server-wide limiter,
  claims the config's row (so app instances sharing a store train a config once; the others
  follow its progress), and keeps its lease while it trains. A stopped run is kept (a few, in
  memory): asking for the same config again resumes it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from pe_core.device import compute_device
from pe_core.jobs import Job, JobLimiter, server_limiter
from pe_core.train.attention import kept_weights
from pe_core.train.config import ExperimentConfig
from pe_core.train.experiment import ExperimentBatch, ExperimentRun, Status, batch_groups, batch_key
from pe_core.train.loop import training_label
from pe_core.train.schema import RunRecord
from pe_core.train.shipped import seed_store, shipped_records
from pe_core.train.store import CANCELLED, FAILED, QUEUED, RUNNING, QueuedJob, RunStore, StoreError, open_store
from pe_core.train.worker import LEASE_S, PROGRESS_S, WORKER_ALIVE_S, status_fields

MAX_PAUSED = 8
POLL_S = 1.0  # how often a job that another trainer runs reads its row
MAX_FOLLOWING = 256  # jobs a server follows at once while workers train them (each one is a sleeping thread)


def comparable_seconds(runs: Sequence[tuple[dict, float]], config: ExperimentConfig) -> list[tuple[dict, float]]:
    """Of ``runs`` (config, seconds: ``RunStore.seconds_per_run``), those like ``config``, each with its seconds
    scaled to ``config``'s steps: those of its shape (width, layers, L), and of them those that do its work
    (encoding, methods evaluated, methods fine-tuned) where there are any. A RoPE run evaluates and fine-tunes every
    method, so it takes about three times what an ALiBi run of its shape takes."""
    same_shape = [(stored, seconds * config.steps / stored["steps"]) for stored, seconds in runs
                  if stored.get("steps") and all(stored.get(k) == getattr(config, k)
                                                 for k in ("d_model", "n_layer", "train_length"))]
    work = _work(config)
    same_work = [(stored, seconds) for stored, seconds in same_shape if _work(stored) == work]
    return same_work or same_shape


def _work(config: ExperimentConfig | dict) -> tuple | None:
    """What a run computes besides its shape: its encoding and the methods it evaluates and fine-tunes (None for
    a run stored by another version of the app, with knobs this one does not know)."""
    if isinstance(config, dict):
        try:
            config = ExperimentConfig.from_json(config)
        except ValueError:
            return None
    return config.encoding, config.evaluated_methods, config.fine_tuned_methods


def timed_runs(store: RunStore) -> tuple[list[tuple[dict, float]], list[tuple[dict, float]]]:
    """(config, seconds) of the runs the store's trainers trained, and of the runs that shipped with the app as the
    shipped file times them (a store seeded by an older file keeps that file's times; the file's are the ones this
    version ships, measured on its machine)."""
    shipped = shipped_records()
    hashes = {record.hash for record in shipped}
    own = [(run, seconds) for run, seconds in store.seconds_per_run() if _stored_hash(run) not in hashes]
    return own, [(record.config.to_json(), record.total_seconds) for record in shipped]


def seconds_like(runs: Sequence[tuple[dict, float]], config: ExperimentConfig) -> float | None:
    """The median seconds of ``runs`` like ``config`` (``comparable_seconds``); None for none."""
    return median([seconds for _run, seconds in comparable_seconds(runs, config)])


def _stored_hash(config: dict) -> str | None:
    try:
        return ExperimentConfig.from_json(config).hash
    except ValueError:  # a run stored by another version of the app, with knobs this one does not know
        return None


def median(values: Sequence[float]) -> float | None:
    """The middle value (the upper one of an even count); None for none."""
    return sorted(values)[len(values) // 2] if values else None


class QueueEntry(NamedTuple):
    """A job of the store's queue as a page shows it: when it should start and end."""

    job: QueuedJob
    position: int  # 1 for the next job to be claimed; 0 once it runs (or finished)
    remaining_s: float | None  # running: seconds left at its speed so far (or by estimate); None if unknown
    wait_s: float | None  # queued: seconds until a trainer should take it; None if unknown


class TrainingService:
    """The store, the limiter, the runs in flight and the paused ones, for one server process."""

    def __init__(self, store: RunStore, limiter: JobLimiter, *, corpus=None, device=None):
        self.store = store
        self.limiter = limiter
        self.followers = JobLimiter(MAX_FOLLOWING, max_waiting=0)  # jobs that workers train: no slot of ours
        self.corpus = corpus
        self.device = device
        self.owner = f"app {socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._paused: OrderedDict[str, ExperimentRun] = OrderedDict()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[RunRecord], None]] = []
        self.trained = 0  # runs this service trained to the end (tests count coalescing with it)

    def on_stored(self, listener: Callable[[RunRecord], None]) -> None:
        """Call ``listener(record)`` after each run this service stores."""
        self._listeners.append(listener)

    def stored(self, config: ExperimentConfig) -> RunRecord | None:
        return self.store.get(config.hash)

    def workers(self) -> list:
        """The training workers draining the store's queue now (their heartbeat is fresh)."""
        return self.store.workers(WORKER_ALIVE_S)

    def request(self, config: ExperimentConfig) -> RunRecord | Job:
        """The stored run, or the job that trains it (an existing one if the same config is in flight)."""
        record = self.stored(config)
        if record is not None:
            return record
        if self.workers():
            return self.followers.submit(config.label(), lambda job: self._follow([config], job), key=config.hash,
                                         estimate_s=self.estimate_s(config))
        return self.limiter.submit(config.label(), lambda job: self._work([config], job, 0, 1), key=config.hash,
                                   estimate_s=self.estimate_s(config))

    def request_all(self, configs: list[ExperimentConfig], name: str) -> Job | None:
        """One job that trains every config of ``configs`` not stored yet (None if none is missing), those that
        differ only in their seed as one batch (``batch_groups``), the groups one after another. Its reports are
        the runs' ``Status``; ``job.batch`` says which runs of how many train now. With workers running, the
        configs wait in the store's queue, where the workers train those of one shape as one batch."""
        missing = [c for c in configs if c.hash not in self.store]
        if not missing:
            return None
        timed = timed_runs(self.store)
        estimates = [self.estimate_s(c, timed) for c in missing]
        total = None if any(e is None for e in estimates) else sum(estimates)
        key = "all:" + ",".join(c.hash for c in missing)
        if self.workers():
            return self.followers.submit(name, lambda job: self._follow(missing, job), key=key, estimate_s=total)

        def work(job: Job) -> int:
            done = 0
            for group in batch_groups(missing):
                if job.should_stop():
                    break
                records = self._work(group, job, done, len(missing))
                done += len(group)
                if records is None:
                    break
            return sum(c.hash in self.store for c in missing)

        return self.limiter.submit(name, work, key=key, estimate_s=total)

    def paused(self, config: ExperimentConfig) -> ExperimentRun | None:
        """A stopped run of this config, kept so a new request resumes it."""
        with self._lock:
            return self._paused.get(config.hash)

    def estimate_s(self, config: ExperimentConfig, timed: tuple[list, list] | None = None) -> float | None:
        """Seconds a run should take: the median of the comparable runs this store's trainers trained, else of the
        comparable shipped runs (``timed``: ``timed_runs(self.store)``, read once for many estimates).

        None when nothing comparable is known (the page then gives no time until the run measures itself).
        """
        own, shipped = timed or timed_runs(self.store)
        estimate = seconds_like(own, config)
        return estimate if estimate is not None else seconds_like(shipped, config)

    def _device_label(self) -> str:
        device = torch.device(self.device) if self.device is not None else compute_device()
        return training_label(device)

    def _work(self, configs: Sequence[ExperimentConfig], job: Job, before: int, count: int
              ) -> RunRecord | list[RunRecord] | None:
        """Train ``configs`` (equal but for the seed) here as one batch, holding their queue rows' leases; a config
        another trainer holds is followed until it is stored. Returns the record (one config) or the records; None
        if stopped first. ``before`` and ``count`` place the batch among a job's ``count`` runs, for its progress."""
        records: dict[str, RunRecord] = {}
        label = self._device_label()
        while True:
            records.update({c.hash: r for c in configs if c.hash not in records and (r := self.stored(c)) is not None})
            pending = [c for c in configs if c.hash not in records]
            if not pending:
                return records[configs[0].hash] if len(configs) == 1 else [records[c.hash] for c in configs]
            rows = {c.hash: row for c in pending
                    if (row := self.store.claim_hash(c, batch_key(c), self.owner, label, LEASE_S)) is not None}
            if rows:
                trained = self._train([c for c in pending if c.hash in rows], rows, job, before + len(records), count)
                if trained is None:
                    return None
                records.update(trained)
                continue
            held = self.store.latest(pending[0].hash)
            job.report(phase="another server trains this run", fraction=held.fraction if held else 0.0)
            job.store_job = held
            if job.should_stop():
                return None
            time.sleep(POLL_S)

    def _train(self, configs: list[ExperimentConfig], rows: dict[str, QueuedJob], job: Job, before: int,
               count: int) -> dict[str, RunRecord] | None:
        """Train the claimed ``configs`` together (each resumed where a stop left it) and store each record as its run
        ends; None if the job was stopped (the unfinished runs are kept, paused, and their rows cancelled)."""
        job.store_job = None
        job.batch = (before + 1, before + len(configs), count) if count > 1 else None
        with self._lock:
            experiments = [self._paused.pop(c.hash, None) or ExperimentRun(c, self.corpus, self.device)
                           for c in configs]
        records: dict[str, RunRecord] = {}
        fractions = dict.fromkeys(rows, 0.0)
        statuses: dict[str, dict] = {}
        try:
            beat = time.monotonic()
            for experiment, status in ExperimentBatch(experiments).work(lambda e: job.should_stop()):
                if status is None:
                    continue
                run_hash = experiment.config.hash
                fractions[run_hash], statuses[run_hash] = status.fraction, status_fields(status)
                job.report(status, phase=status.phase, fraction=(before + sum(fractions.values())) / count)
                if time.monotonic() - beat > PROGRESS_S:
                    self.store.renew(self.owner, LEASE_S, {rows[h].id: (fractions[h], statuses.get(h))
                                                           for h in rows if h not in records})
                    beat = time.monotonic()
                if experiment.done and run_hash not in records:
                    records[run_hash] = self._keep(experiment, rows[run_hash])
        except BaseException as err:
            for run_hash, row in rows.items():
                if run_hash not in records:
                    self.store.finish(row.id, self.owner, FAILED, f"{type(err).__name__}: {err}")
            raise
        if len(records) < len(configs):  # stopped: kept to resume, the rows withdrawn
            with self._lock:
                for experiment in experiments:
                    if experiment.config.hash not in records:
                        self._paused[experiment.config.hash] = experiment
                while len(self._paused) > MAX_PAUSED:
                    self._paused.popitem(last=False)
            for run_hash, row in rows.items():
                if run_hash not in records:
                    self.store.finish(row.id, self.owner, CANCELLED)
            return None
        return records

    def _keep(self, experiment: ExperimentRun, row: QueuedJob) -> RunRecord:
        """Store a finished run with its kept weights, close its queue row, tell the listeners."""
        record = experiment.record()
        weights = kept_weights(experiment.config, experiment.run.model)
        if not self.store.complete(row.id, self.owner, record, weights):
            self.store.put(record, weights)  # this server stalled past its lease and another trainer took the row over
        self.trained += 1
        for listener in self._listeners:
            listener(record)
        return record

    def _follow(self, configs: Sequence[ExperimentConfig], job: Job) -> RunRecord | int | None:
        """Queue ``configs`` for the workers and follow their rows until every one is stored: the record (one
        config) or how many were stored (several); None if stopped first. ``job.store_jobs`` holds the rows."""
        self.store.enqueue_all([(c, batch_key(c)) for c in configs if c.hash not in self.store])
        job.batch = (1, 1, len(configs)) if len(configs) > 1 else None
        while True:
            rows = {c.hash: self.store.latest(c.hash) for c in configs}
            stored = {c.hash for c in configs if c.hash in self.store}
            job.store_jobs = [rows[c.hash] for c in configs if c.hash not in stored and rows[c.hash] is not None]
            job.store_job = job.store_jobs[0] if job.store_jobs else None
            if len(stored) == len(configs):
                break
            failed = [r for h, r in rows.items() if h not in stored and r is not None and r.state == FAILED]
            if failed:
                raise RuntimeError(failed[0].error or "the worker failed")
            if any(r is None or r.state == CANCELLED for h, r in rows.items() if h not in stored):
                return None  # every request for it was withdrawn (on another server too)
            fractions = [1.0 if c.hash in stored else rows[c.hash].fraction for c in configs]
            job.report(phase="queued for a worker" if all(r.state == QUEUED for r in job.store_jobs)
                       else "a worker trains this run", fraction=sum(fractions) / len(fractions))
            if len(configs) > 1:
                job.batch = (len(stored) + 1, len(stored) + 1, len(configs))
            if job.should_stop():
                for config in configs:
                    if config.hash not in stored:
                        self.store.withdraw(config.hash)
                return None
            time.sleep(POLL_S)
        for listener in self._listeners:
            for config in configs:
                listener(self.stored(config))
        return self.stored(configs[0]) if len(configs) == 1 else len(configs)

    def queue_view(self) -> list[QueueEntry]:
        """The store's queue as every app instance sees it: the unfinished jobs, oldest first, with when each
        should start and end (trainers: the live workers, or this server's own slots while none runs)."""
        jobs = self.store.queue(finished=0)
        now = self.store.now()
        trainers = len(self.workers()) or self.limiter.max_running
        timed = timed_runs(self.store)

        def estimate(config: dict) -> float | None:
            try:
                return self.estimate_s(ExperimentConfig.from_json(config), timed)
            except ValueError:
                return None

        return queue_view(jobs, now, trainers, estimate)


def queue_view(jobs: Sequence[QueuedJob], now: float, trainers: int,
               estimate: Callable[[dict], float | None]) -> list[QueueEntry]:
    """When each unfinished job should start and end: a running job ends at its speed so far (or by estimate
    until it has done 3 %); each trainer takes the next queued job when its current one ends."""
    entries, slots = [], []
    for job in jobs:
        if job.state != RUNNING:
            continue
        elapsed = max(0.0, now - (job.started_at or now))
        remaining = elapsed * (1 - job.fraction) / job.fraction if job.fraction >= 0.03 else None
        if remaining is None:
            full = estimate(job.config)
            remaining = None if full is None else max(0.0, full - elapsed)
        entries.append(QueueEntry(job, 0, remaining, 0.0))
        slots.append(remaining)
    known = all(s is not None for s in slots)
    slots = sorted(s for s in slots if s is not None) + [0.0] * max(0, trainers - len(slots))
    position = 0
    for job in jobs:
        if job.state != QUEUED:
            continue
        position += 1
        full = estimate(job.config)
        wait = None
        if known and slots:
            slots.sort()
            wait = slots[0]
            if full is None:
                known = False
            else:
                slots[0] += full
        entries.append(QueueEntry(job, position, full, wait))
    return entries


def latest_status(job: Job) -> Status | None:
    """The last ``Status`` a training job reported (None before its first)."""
    reports = job.reports()
    return reports[-1] if reports else None


_SERVICE: TrainingService | None = None
_SERVICE_ERROR: str | None = None
_SERVICE_LOCK = threading.Lock()


def server_service() -> TrainingService:
    """The one service of this server process, on the default store (``PE_RUN_STORE``).

    If that store cannot be opened (damaged, another schema...), it is left untouched and runs
    are kept in memory instead; ``store_problem()`` says why, for the page to show.
    """
    global _SERVICE, _SERVICE_ERROR
    with _SERVICE_LOCK:
        if _SERVICE is None:
            try:
                store = open_store()
            except StoreError as err:
                # kept as raised: a Deferred message is shown in each reader's language
                _SERVICE_ERROR = err.args[0] if err.args and isinstance(err.args[0], str) else str(err)
                store = open_store(":memory:")
            seed_store(store)  # a fresh install starts with the default grid's results, which ship with the app
            _SERVICE = TrainingService(store, server_limiter())
        return _SERVICE


def store_problem() -> str | None:
    """Why the default store could not be used (runs are then not kept after a restart), or None."""
    server_service()
    return _SERVICE_ERROR


def use_service(service: TrainingService | None) -> TrainingService | None:
    """Make ``service`` the server's (tests, scripts); None forgets it, so the next use opens the default.
    Returns the one it replaces."""
    global _SERVICE, _SERVICE_ERROR
    with _SERVICE_LOCK:
        previous, _SERVICE, _SERVICE_ERROR = _SERVICE, service, None
        return previous
