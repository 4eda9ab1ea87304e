"""Training for a whole class: stored results at once, one run per config, a queue for the rest.

``TrainingService.request(config)`` answers with the stored ``RunRecord`` when the store has
the config's hash; otherwise with a background ``pe_core.jobs.Job`` on the server-wide limiter,
shared by every session that asks for the same config while it is in flight. A finished run is
saved to the store before the job ends, so it survives a restart and the next request is a
lookup. A stopped run is kept (a few, in memory): asking for the same config again resumes it.

When app instances share a PostgreSQL store, a claim row per hash makes sure one of them
trains a config; the others wait for its record to appear.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable

from pe_core.jobs import Job, JobLimiter, server_limiter
from pe_core.train.config import ExperimentConfig
from pe_core.train.experiment import ExperimentRun, Status
from pe_core.train.schema import RunRecord
from pe_core.train.shipped import seed_store
from pe_core.train.store import RunStore, StoreError, open_store

MAX_PAUSED = 8
CLAIM_POLL_S = 1.0


class TrainingService:
    """The store, the limiter, the runs in flight and the paused ones, for one server process."""

    def __init__(self, store: RunStore, limiter: JobLimiter, *, corpus=None, device=None):
        self.store = store
        self.limiter = limiter
        self.corpus = corpus
        self.device = device
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._paused: OrderedDict[str, ExperimentRun] = OrderedDict()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[RunRecord], None]] = []
        self.trained = 0  # runs this service trained to the end (tests count coalescing with it)

    def on_stored(self, listener: Callable[[RunRecord], None]) -> None:
        """Call ``listener(record)`` after each run this service stores."""
        self._listeners.append(listener)

    def stored(self, config: ExperimentConfig) -> RunRecord | None:
        return self.store.get(config.hash)

    def request(self, config: ExperimentConfig) -> RunRecord | Job:
        """The stored run, or the job that trains it (an existing one if the same config is in flight)."""
        record = self.stored(config)
        if record is not None:
            return record
        return self.limiter.submit(config.label(), lambda job: self._work(config, job), key=config.hash,
                                   estimate_s=self.estimate_s(config))

    def request_all(self, configs: list[ExperimentConfig], name: str) -> Job | None:
        """One job that trains every config of ``configs`` not stored yet, one after another (None if none is
        missing). Its reports are the current run's ``Status``; ``job.phase`` says which run of how many."""
        missing = [c for c in configs if c.hash not in self.store]
        if not missing:
            return None
        estimates = [self.estimate_s(c) for c in missing]
        total = None if any(e is None for e in estimates) else sum(estimates)

        def work(job: Job) -> int:
            done = 0
            for index, config in enumerate(missing):
                if job.should_stop():
                    break
                if config.hash in self.store:
                    continue
                share = _Share(job, index, len(missing))
                if self._work(config, share) is not None:
                    done += 1
            return done

        return self.limiter.submit(name, work, key="all:" + ",".join(c.hash for c in missing), estimate_s=total)

    def paused(self, config: ExperimentConfig) -> ExperimentRun | None:
        """A stopped run of this config, kept so a new request resumes it."""
        with self._lock:
            return self._paused.get(config.hash)

    def estimate_s(self, config: ExperimentConfig) -> float | None:
        """Seconds a run should take: the median of stored runs of the same shape, scaled by their steps.

        None when nothing comparable was stored (the page then gives no time until the run measures itself).
        """
        comparable = []
        for stored, seconds in self.store.seconds_per_run():
            same_shape = all(stored.get(k) == getattr(config, k) for k in ("d_model", "n_layer", "train_length"))
            if same_shape and stored.get("steps"):
                comparable.append(seconds * config.steps / stored["steps"])
        if not comparable:
            return None
        comparable.sort()
        return comparable[len(comparable) // 2]

    def _work(self, config: ExperimentConfig, job: Job) -> RunRecord | None:
        key = config.hash
        holder = self.store.claim(key, self.owner)
        while holder is not None:  # another app instance trains this config: wait for its record
            job.report(phase="another server trains this run", fraction=0.0)
            record = self.stored(config)
            if record is not None:
                return record
            if job.should_stop():
                return None
            time.sleep(CLAIM_POLL_S)
            holder = self.store.claim(key, self.owner)
        try:
            with self._lock:
                experiment = self._paused.pop(key, None)
            experiment = experiment or ExperimentRun(config, self.corpus, self.device)
            beat = time.monotonic()
            for status in experiment.work():
                job.report(status, phase=status.phase, fraction=status.fraction)
                if time.monotonic() - beat > 10:
                    self.store.heartbeat(key, self.owner)
                    beat = time.monotonic()
                if job.should_stop():
                    with self._lock:
                        self._paused[key] = experiment
                        while len(self._paused) > MAX_PAUSED:
                            self._paused.popitem(last=False)
                    return None
            record = experiment.record()
            self.store.put(record)
            self.trained += 1
        finally:
            self.store.release(key, self.owner)
        for listener in self._listeners:
            listener(record)
        return record


class _Share:
    """A job as seen by one run of several: progress scaled into the run's share of the whole."""

    def __init__(self, job: Job, index: int, count: int):
        self.job, self.index, self.count = job, index, count
        job.batch = (index + 1, count)  # which run of how many, for the page

    def should_stop(self) -> bool:
        return self.job.should_stop()

    def report(self, item=None, *, phase=None, fraction=None) -> None:
        if phase is not None:
            phase = f"{phase} (run {self.index + 1} of {self.count})"
        if fraction is not None:
            fraction = (self.index + fraction) / self.count
        self.job.report(item, phase=phase, fraction=fraction)


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
