"""Background jobs with a server-wide limit: a class of students cannot exhaust the machine.

Each job runs in its own daemon thread, but only ``max_running`` jobs compute at once; the
others wait their turn in submission order (and say where they are in the queue, and when
they should start). When ``max_waiting`` jobs already wait, a new one is refused with
``ServerBusy``. Jobs submitted with the same ``key`` while one is unfinished share it: the
second request gets the first job (coalescing), and the job stops only when every requester
has withdrawn. The work function checks ``job.should_stop()`` and returns, keeping what it
has done. Plain Python threading, no Streamlit, so tests and scripts use it too.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from i18n import _

QUEUED, RUNNING, DONE, STOPPED, FAILED = "queued", "running", "done", "stopped", "failed"
FINISHED = (DONE, STOPPED, FAILED)


class ServerBusy(RuntimeError):
    """Raised by ``JobLimiter.submit`` when the waiting line is full."""


class Job:
    """One piece of background work: its state, a stop flag, and what the work reported."""

    _ids = itertools.count(1)

    def __init__(self, name: str, work: Callable[[Job], Any], limiter: JobLimiter, *, key: str | None = None,
                 estimate_s: float | None = None):
        self.id = next(self._ids)
        self.name = name
        self.key = key
        self.estimate_s = estimate_s  # how long the work should take, if known (from earlier runs)
        self.requests = 1  # how many requesters share this job
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.state = QUEUED
        self.result: Any = None
        self.error: str | None = None
        self.phase = "waiting for a free slot"
        self.fraction = 0.0  # 0..1, for a progress bar
        self.submitted_at = time.monotonic()
        self._work = work
        self._limiter = limiter
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._lock = threading.Lock()
        self._reports: list[Any] = []
        self.thread = threading.Thread(target=self._run, name=f"job-{self.id}-{name}", daemon=True)

    # --- used by the work function ---
    def should_stop(self) -> bool:
        return self._stop.is_set()

    def report(self, item: Any = None, *, phase: str | None = None, fraction: float | None = None) -> None:
        """Publish progress (any object) for whoever polls the job."""
        with self._lock:
            if item is not None:
                self._reports.append(item)
            if phase is not None:
                self.phase = phase
            if fraction is not None:
                self.fraction = min(1.0, max(0.0, fraction))

    # --- used by whoever started the job ---
    def stop(self) -> None:
        self._stop.set()
        self._limiter._wake()

    def withdraw(self) -> bool:
        """One requester no longer wants the result; the job stops when none does. True if it stops."""
        with self._limiter._condition:
            self.requests = max(0, self.requests - 1)
            last = self.requests == 0
        if last:
            self.stop()
        return last

    def running_s(self) -> float:
        """Seconds spent computing so far (0 while queued)."""
        if self.started_at is None:
            return 0.0
        return (self.ended_at or time.monotonic()) - self.started_at

    def remaining_s(self) -> float | None:
        """Seconds left, from the speed so far (after the first few per cent) or the estimate; None if unknown."""
        if self.finished:
            return 0.0
        elapsed = self.running_s()
        if self.started_at is not None and self.fraction >= 0.03 and elapsed >= 1.0:
            return elapsed * (1 - self.fraction) / self.fraction
        if self.estimate_s is not None:
            return max(0.0, self.estimate_s - elapsed)
        return None

    def wait_s(self) -> float | None:
        """Seconds until a queued job should start (0 once it runs); None if some job ahead has no estimate."""
        return self._limiter.wait_s(self)

    def reports(self) -> list[Any]:
        """A snapshot of everything reported so far."""
        with self._lock:
            return list(self._reports)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def wait(self, timeout: float | None = None) -> bool:
        return self._finished.wait(timeout)

    def queue_position(self) -> int:
        """1 for the next job to run, 0 if not waiting."""
        return self._limiter.position(self)

    def _run(self) -> None:
        try:
            if not self._limiter._acquire(self):
                self.state = STOPPED
                self.phase = "stopped before it started"
                return
            self.state = RUNNING
            self.started_at = time.monotonic()
            self.phase = "starting"
            try:
                self.result = self._work(self)
                self.state = STOPPED if self.should_stop() else DONE
            except Exception as err:  # noqa: BLE001 - the job reports any failure to its page
                self.error = f"{type(err).__name__}: {err}"
                self.traceback = traceback.format_exc()
                self.state = FAILED
            finally:
                self.ended_at = time.monotonic()
                self._limiter._release(self)
        finally:
            self._finished.set()


class JobLimiter:
    """At most ``max_running`` jobs compute at once; up to ``max_waiting`` wait in line (FIFO)."""

    def __init__(self, max_running: int = 1, max_waiting: int = 8):
        if max_running < 1 or max_waiting < 0:
            raise ValueError("max_running must be ≥ 1 and max_waiting ≥ 0.")
        self.max_running = max_running
        self.max_waiting = max_waiting
        self._condition = threading.Condition()
        self._waiting: deque[Job] = deque()
        self._running: set[Job] = set()

    def submit(self, name: str, work: Callable[[Job], Any], *, key: str | None = None,
               estimate_s: float | None = None) -> Job:
        """Start ``work(job)`` in a thread as soon as a slot is free; ``ServerBusy`` if the line is full.

        With a ``key``, an unfinished job of the same key is returned instead (one more requester).
        """
        with self._condition:
            if key is not None:
                for job in (*self._running, *self._waiting):
                    if job.key == key and not job.should_stop():
                        job.requests += 1
                        return job
            if len(self._running) >= self.max_running and len(self._waiting) >= self.max_waiting:
                raise ServerBusy(_("The server is busy: {running} training job(s) running and {waiting} waiting. "
                                   "Please try again in a minute.").format(running=len(self._running),
                                                                           waiting=len(self._waiting)))
            job = Job(name, work, self, key=key, estimate_s=estimate_s)
            self._waiting.append(job)
        job.thread.start()
        return job

    def wait_s(self, job: Job) -> float | None:
        """When ``job`` should start: each slot frees as its job ends, and the jobs ahead take the slots in turn."""
        with self._condition:
            if job not in self._waiting:
                return 0.0
            ahead = list(self._waiting)[: self._waiting.index(job)]
            running = list(self._running)
        slots = [j.remaining_s() for j in running] + [0.0] * (self.max_running - len(running))
        if any(s is None for s in slots):
            return None
        for earlier in ahead:
            duration = earlier.remaining_s()
            if duration is None:
                return None
            slots.sort()
            slots[0] += duration
        return min(slots)

    def position(self, job: Job) -> int:
        with self._condition:
            return self._waiting.index(job) + 1 if job in self._waiting else 0

    def load(self) -> tuple[int, int]:
        """(running, waiting) right now."""
        with self._condition:
            return len(self._running), len(self._waiting)

    def _acquire(self, job: Job) -> bool:
        with self._condition:
            while True:
                if job.should_stop():
                    self._waiting.remove(job)
                    self._condition.notify_all()
                    return False
                if len(self._running) < self.max_running and self._waiting[0] is job:
                    self._waiting.popleft()
                    self._running.add(job)
                    self._condition.notify_all()
                    return True
                self._condition.wait(timeout=0.5)

    def _release(self, job: Job) -> None:
        with self._condition:
            self._running.discard(job)
            self._condition.notify_all()

    def _wake(self) -> None:
        with self._condition:
            self._condition.notify_all()


def default_max_running() -> int:
    """One training job per GPU; on CPU, as many as the cores (less one for the web server) allow.

    ``PE_TRAINING_JOBS`` overrides it (for a big server, or to let a single user queue nothing).
    """
    import os

    import torch

    from pe_core.device import cpu_threads

    forced = os.environ.get("PE_TRAINING_JOBS", "").strip()
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    if torch.cuda.is_available():
        return max(1, torch.cuda.device_count())
    return max(1, ((os.cpu_count() or 1) - 1) // cpu_threads())


_SERVER_LIMITER: JobLimiter | None = None
_SERVER_LOCK = threading.Lock()


def server_limiter() -> JobLimiter:
    """The one limiter shared by every browser session of this server process."""
    global _SERVER_LIMITER
    with _SERVER_LOCK:
        if _SERVER_LIMITER is None:
            _SERVER_LIMITER = JobLimiter(default_max_running(), max_waiting=8)
        return _SERVER_LIMITER
