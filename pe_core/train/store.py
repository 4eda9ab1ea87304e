"""The run store: every finished run in a database, found again by its config's hash, and the queue of runs to train.

One interface, two backends, one schema with a version number:

- SQLite (the standard library, WAL journal) by default: a file under ``runs/`` in the
  repository (ignored by git), or the path in ``PE_RUN_STORE``;
- PostgreSQL, given a ``postgresql://`` URL, for a server shared by several app instances
  and by training workers on other machines (needs ``psycopg``).

Opening never changes a database it does not recognise: a file that is not a database, a
damaged one, one with other tables, or one written with another schema version is reported
with ``StoreError`` and left exactly as it was. The one exception is a store of an older
schema this version knows how to bring forward (``MIGRATIONS``): it is migrated in one
transaction, and a database that claims such a version but lacks its tables is refused
untouched like any other.

Tables: ``store_meta`` (schema version), ``runs`` (one row per run: hash, config, the whole
record as JSON, and columns to list and filter by), ``results`` (one row per method, length
and fine-tune: the numbers the seed table averages, queryable without reading records),
``queue`` (runs asked for and not stored yet: who trains each, until when its lease holds,
how far it got), ``workers`` (the training workers draining the queue, with a heartbeat) and
``weights`` (a run's trained weights, when its trainer kept them: what the views inside the
model read). The audience's votes (``pe_core/votes.py``) keep tables of their own in the same database
(``vote_*``, ``votes``); the store leaves them alone and does not count them as another application's tables.

The queue, as job queues in PostgreSQL do it (procrastinate, pgqueuer): a trainer claims the
oldest claimable job with one ``UPDATE ... WHERE id = (SELECT id ... FOR UPDATE SKIP LOCKED
LIMIT 1) RETURNING ...`` (SQLite: the same statements inside ``BEGIN IMMEDIATE``, which
serialises writers on one machine), together with the queued jobs of the same shape (trained
as one batch). A claim is a lease that the trainer renews while it works; a lease that runs
out (the trainer died) makes the job claimable again. Finishing stores the record and closes
the job in one transaction, and only while the lease is still the finisher's, so a job is
stored once even when a trainer that lost its lease comes back. An unfinished job is unique
per hash: asking again for a queued or running config adds a request to it (coalescing).
Times are the database's clock, so machines with skewed clocks agree on leases.

Schema history: 1 had a ``claims`` table (one trainer per hash among app instances) instead
of the queue; it is migrated to 2 (claims are transient: the table is dropped). 2 had no
``weights``; migrated to 3, its runs simply have none.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from i18n import N_, Deferred
from pe_core.train.config import ExperimentConfig
from pe_core.train.schema import RecordError, RunRecord
from pe_core.votes import VOTE_TABLES, PostgresTransaction

STORE_SCHEMA_VERSION = 3
STORE_ENV = "PE_RUN_STORE"
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "runs" / "runs.sqlite3"
QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
UNFINISHED = (QUEUED, RUNNING)
MAX_ATTEMPTS = 3  # a job whose lease ran out this many times (its trainers died) fails instead of killing a fourth

_RUN_TABLES = (
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE runs (hash TEXT PRIMARY KEY, family TEXT NOT NULL, encoding TEXT NOT NULL, seed INTEGER NOT NULL,"
    " created_at TEXT NOT NULL, device TEXT NOT NULL, code_version TEXT NOT NULL, total_seconds DOUBLE PRECISION NOT NULL,"
    " config TEXT NOT NULL, record TEXT NOT NULL)",
    "CREATE INDEX runs_family ON runs (family)",
    "CREATE TABLE results (hash TEXT NOT NULL REFERENCES runs (hash) ON DELETE CASCADE, method TEXT NOT NULL,"
    " length INTEGER NOT NULL, fine_tuned INTEGER NOT NULL, accuracy DOUBLE PRECISION NOT NULL, loss DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (hash, method, length, fine_tuned))",
)
# {id}: the backend's auto-numbered key. ``shape``: jobs with equal shapes train as one batch. ``status``: the
# trainer's last Status (JSON), for the pages' progress lines. Times are seconds since 1970 by the database's clock.
_QUEUE_TABLES = (
    "CREATE TABLE queue (id {id}, hash TEXT NOT NULL, config TEXT NOT NULL, shape TEXT NOT NULL,"
    " state TEXT NOT NULL, requests INTEGER NOT NULL, requested_at DOUBLE PRECISION NOT NULL, worker TEXT,"
    " device TEXT, lease_until DOUBLE PRECISION, attempts INTEGER NOT NULL, started_at DOUBLE PRECISION,"
    " finished_at DOUBLE PRECISION, fraction DOUBLE PRECISION NOT NULL, status TEXT, error TEXT)",
    "CREATE UNIQUE INDEX queue_unfinished ON queue (hash) WHERE state IN ('queued', 'running')",
    "CREATE INDEX queue_state ON queue (state, id)",
    "CREATE TABLE workers (name TEXT PRIMARY KEY, device TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL,"
    " heartbeat DOUBLE PRECISION NOT NULL, trained INTEGER NOT NULL)",
)
# a run's trained weights (``torch.save`` of its state dict), for the views that look inside the model
_WEIGHT_TABLES = ("CREATE TABLE weights (hash TEXT PRIMARY KEY REFERENCES runs (hash) ON DELETE CASCADE,"
                  " state {blob} NOT NULL)",)
_SCHEMA = (*_RUN_TABLES, *_QUEUE_TABLES, *_WEIGHT_TABLES)
_TABLES = {"store_meta", "runs", "results", "queue", "workers", "weights"}
# version -> (the tables a store of that version has, the statements that bring it to the next version)
MIGRATIONS = {1: ({"store_meta", "runs", "results", "claims"}, ("DROP TABLE claims", *_QUEUE_TABLES)),
              2: ({"store_meta", "runs", "results", "queue", "workers"}, _WEIGHT_TABLES)}
_QUEUE_COLUMNS = ("id, hash, config, shape, state, requests, requested_at, worker, device, lease_until, attempts,"
                  " started_at, finished_at, fraction, status, error")


class StoreError(RuntimeError):
    """A database the store cannot use; the message says why and what to do. Nothing was changed."""


class RunSummary(NamedTuple):
    """One row of the browse view."""

    hash: str
    family: str
    encoding: str
    seed: int
    created_at: str
    device: str
    code_version: str
    total_seconds: float
    config: dict


class ResultRow(NamedTuple):
    """One (run, method, length) number, for tables over seeds."""

    hash: str
    encoding: str
    seed: int
    config: dict
    method: str
    length: int
    fine_tuned: bool
    accuracy: float
    loss: float


class QueuedJob(NamedTuple):
    """One row of the queue: a run asked for, who trains it (``worker``, ``device``) and how far it got."""

    id: int
    hash: str
    config: dict
    shape: str
    state: str  # QUEUED, RUNNING, DONE, FAILED or CANCELLED
    requests: int  # how many requests this job answers (identical requests coalesce)
    requested_at: float
    worker: str | None
    device: str | None
    lease_until: float | None
    attempts: int  # how many times it was claimed (more than once: a trainer died, or stopped, holding it)
    started_at: float | None
    finished_at: float | None
    fraction: float
    status: dict | None  # the trainer's last Status fields (phase, encoding, method, step, total)
    error: str | None

    @classmethod
    def of(cls, row: Sequence) -> QueuedJob:
        values = list(row)
        values[2] = json.loads(values[2])
        values[14] = None if values[14] is None else json.loads(values[14])
        return cls(*values)


class Worker(NamedTuple):
    """A training worker that drains the queue (``python -m pe_core.train --worker``)."""

    name: str
    device: str
    started_at: float
    heartbeat: float
    trained: int


def default_location() -> str:
    return os.environ.get(STORE_ENV, "").strip() or str(DEFAULT_PATH)


def describe_location(location: str) -> str:
    """The location without a password, for messages."""
    if "://" in location and "@" in location:
        scheme, rest = location.split("://", 1)
        return f"{scheme}://…@{rest.rsplit('@', 1)[1]}"
    return location


class RunStore:
    """Finished runs by hash. Thread-safe; one connection per store, serialised by a lock."""

    placeholder = "?"
    backend = "sqlite"
    id_column = "INTEGER PRIMARY KEY"  # the rowid: numbered in order (queue rows are never deleted)
    blob_column = "BLOB"
    now_sql = "((julianday('now') - 2440587.5) * 86400.0)"  # the database's clock, seconds since 1970
    lock_rows = ""  # PostgreSQL: " FOR UPDATE SKIP LOCKED" (SQLite's BEGIN IMMEDIATE already serialises writers)
    lock_row = ""  # PostgreSQL: " FOR UPDATE"

    def __init__(self, location: str):
        self.location = location
        self._lock = threading.RLock()
        self._connection = self._connect()
        try:
            self._check_or_create()
            self._opened()
        except BaseException:
            self._close_quietly()
            raise

    # ---- backend hooks ----------------------------------------------------------------------------

    def _connect(self):
        raise NotImplementedError

    def _tables(self) -> set[str]:
        raise NotImplementedError

    def _opened(self) -> None:
        pass

    def _close_quietly(self) -> None:
        try:
            self._connection.close()
        except Exception:  # noqa: BLE001 - closing a connection that failed to open
            pass

    def _transaction(self):
        raise NotImplementedError

    def _sql(self, statement: str) -> str:
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)

    def _execute(self, statement: str, values: Sequence = ()) -> Any:
        with self._lock:
            return self._connection.execute(self._sql(statement), tuple(values))

    def _fetchall(self, statement: str, values: Sequence = ()) -> list[tuple]:
        with self._lock:
            return list(self._connection.execute(self._sql(statement), tuple(values)).fetchall())

    # ---- schema -----------------------------------------------------------------------------------

    def _check_or_create(self) -> None:
        where = describe_location(self.location)
        tables = self._tables() - VOTE_TABLES  # the audience's votes live beside the runs (pe_core/votes.py)
        if not tables:
            with self._transaction():
                for statement in _SCHEMA:
                    self._execute(statement.format(id=self.id_column, blob=self.blob_column))
                self._execute("INSERT INTO store_meta (key, value) VALUES (?, ?)",
                              ("schema_version", str(STORE_SCHEMA_VERSION)))
            return
        if "store_meta" not in tables:
            raise StoreError(Deferred(N_("The database at {where} holds other tables ({tables}), not a run store. It "
                                         "was left untouched; choose another location with --store or PE_RUN_STORE."),
                                      where=where, tables=", ".join(sorted(tables))))
        # the version and the tables are read under the version row's lock: a second app instance opening an old
        # store reads them once the first one's migration has committed (read apart, it could see the old tables
        # and the new version, and call the store damaged)
        with self._transaction():
            rows = self._fetchall("SELECT value FROM store_meta WHERE key = ?" + self.lock_row, ("schema_version",))
            tables = self._tables() - VOTE_TABLES
            version = rows[0][0] if rows else None
            if version is not None and version.isdigit() and int(version) in MIGRATIONS \
                    and tables == MIGRATIONS[int(version)][0]:
                self._migrate(int(version))
                tables, version = self._tables() - VOTE_TABLES, str(STORE_SCHEMA_VERSION)
        if version != str(STORE_SCHEMA_VERSION):
            older = version is not None and version.isdigit() and int(version) < STORE_SCHEMA_VERSION
            message = (N_("The run store at {where} was written by an older version of this app (store schema "
                          "{version}); this version reads schema {current}. It was left untouched: move it aside to "
                          "start a new store, or open it with the version that wrote it.") if older else
                       N_("The run store at {where} was written by another version of this app (store schema "
                          "{version}); this version reads schema {current}. It was left untouched: move it aside to "
                          "start a new store, or open it with the version that wrote it."))
            raise StoreError(Deferred(message, where=where, version=version, current=STORE_SCHEMA_VERSION))
        missing = _TABLES - tables
        if missing:
            raise StoreError(Deferred(N_("The run store at {where} lacks the table(s) {tables}; it may be damaged. It "
                                         "was left untouched; move it aside to start a new store."),
                                      where=where, tables=", ".join(sorted(missing))))

    def _migrate(self, version: int) -> None:
        """Bring a store of an older schema we know forward, one version at a time, inside the transaction that
        holds the version row's lock (two app instances opening it at once: the second waits for the first's lock,
        then finds it migrated)."""
        current = version
        while current < STORE_SCHEMA_VERSION:
            for statement in MIGRATIONS[current][1]:
                self._execute(statement.format(id=self.id_column, blob=self.blob_column))
            current += 1
        self._execute("UPDATE store_meta SET value = ? WHERE key = ?", (str(current), "schema_version"))

    # ---- runs -------------------------------------------------------------------------------------

    def put(self, record: RunRecord, weights: bytes | None = None) -> bool:
        """Save a finished run (its result rows, and its trained weights if given); False if this hash was already
        stored (kept as it was)."""
        with self._lock, self._transaction():
            return self._insert(record, weights)

    def _insert(self, record: RunRecord, weights: bytes | None = None) -> bool:
        """``put`` inside a transaction already open."""
        c = record.config
        if self._fetchall("SELECT 1 FROM runs WHERE hash = ?", (record.hash,)):
            return False
        self._execute(
            "INSERT INTO runs (hash, family, encoding, seed, created_at, device, code_version, total_seconds,"
            " config, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.hash, record.family, c.encoding, c.seed, record.created_at, record.device,
             record.code_version, record.total_seconds, json.dumps(c.to_json(), sort_keys=True),
             json.dumps(record.to_json(), separators=(",", ":"))))
        rows = [(record.hash, r.method, r.length, 0, r.mean_accuracy, r.mean_loss) for r in record.results]
        rows += [(record.hash, f.method, f.length, 1, f.after.mean_accuracy, f.after.mean_loss)
                 for f in record.fine_tunes]
        for row in rows:
            self._execute("INSERT INTO results (hash, method, length, fine_tuned, accuracy, loss)"
                          " VALUES (?, ?, ?, ?, ?, ?)", row)
        if weights is not None:
            self._execute("INSERT INTO weights (hash, state) VALUES (?, ?)", (record.hash, weights))
        return True

    def weights(self, run_hash: str) -> bytes | None:
        """The trained weights stored with a run (``pe_core.train.attention.model_bytes``), or None."""
        rows = self._fetchall("SELECT state FROM weights WHERE hash = ?", (run_hash,))
        return bytes(rows[0][0]) if rows else None

    def get(self, run_hash: str) -> RunRecord | None:
        rows = self._fetchall("SELECT record FROM runs WHERE hash = ?", (run_hash,))
        if not rows:
            return None
        try:
            return RunRecord.from_json(json.loads(rows[0][0]))
        except (json.JSONDecodeError, RecordError) as err:
            raise StoreError(f"The stored run {run_hash} in {describe_location(self.location)} cannot be read: "
                             f"{err}") from err

    def records(self, family: str, encoding: str | None = None) -> list[RunRecord]:
        """Every stored run of a family (other encodings and seeds of one experiment), or of one encoding of it,
        read whole: for what the result rows do not hold (fine-tune curves, costs). Oldest first."""
        rows = self._fetchall("SELECT hash, encoding, record FROM runs WHERE family = ? ORDER BY created_at, hash",
                              (family,))
        records = []
        for run_hash, stored_encoding, text in rows:
            if encoding is not None and stored_encoding != encoding:
                continue
            try:
                records.append(RunRecord.from_json(json.loads(text)))
            except (json.JSONDecodeError, RecordError) as err:
                raise StoreError(f"The stored run {run_hash} in {describe_location(self.location)} cannot be read: "
                                 f"{err}") from err
        return records

    def __contains__(self, run_hash: str) -> bool:
        return bool(self._fetchall("SELECT 1 FROM runs WHERE hash = ?", (run_hash,)))

    def count(self) -> int:
        return int(self._fetchall("SELECT COUNT(*) FROM runs")[0][0])

    def runs(self, limit: int = 500) -> list[RunSummary]:
        """The most recent runs first."""
        rows = self._fetchall("SELECT hash, family, encoding, seed, created_at, device, code_version, total_seconds,"
                              " config FROM runs ORDER BY created_at DESC, hash LIMIT ?", (int(limit),))
        return [RunSummary(*row[:8], json.loads(row[8])) for row in rows]

    def results(self, family: str) -> list[ResultRow]:
        """Every (run, method, length) number of a family (other encodings and seeds of one experiment)."""
        rows = self._fetchall(
            "SELECT r.hash, r.encoding, r.seed, r.config, s.method, s.length, s.fine_tuned, s.accuracy, s.loss"
            " FROM runs r JOIN results s ON s.hash = r.hash WHERE r.family = ? ORDER BY r.encoding, r.seed,"
            " s.method, s.length, s.fine_tuned", (family,))
        return [ResultRow(h, e, int(seed), json.loads(config), m, int(n), bool(ft), float(a), float(loss))
                for h, e, seed, config, m, n, ft, a, loss in rows]

    def seconds_per_run(self, encoding: str | None = None, device: str | None = None) -> list[tuple[dict, float]]:
        """(config, total seconds) of stored runs, to estimate how long a new one takes."""
        rows = self._fetchall("SELECT config, total_seconds, encoding, device FROM runs ORDER BY created_at DESC"
                              " LIMIT 200")
        return [(json.loads(config), float(seconds)) for config, seconds, e, d in rows
                if (encoding is None or e == encoding) and (device is None or d == device)]

    # ---- the queue: runs asked for, claimed by trainers under a lease ------------------------------------

    def now(self) -> float:
        """The database's clock (seconds since 1970): what leases and queue times are measured by."""
        return float(self._fetchall("SELECT " + self.now_sql)[0][0])

    def enqueue(self, config: ExperimentConfig, shape: str) -> QueuedJob:
        """Ask for a run: a new queued job, or the unfinished job of the same hash with one more request."""
        return self.enqueue_all([(config, shape)])[0]

    def enqueue_all(self, requests: Sequence[tuple[ExperimentConfig, str]]) -> list[QueuedJob]:
        """``enqueue`` of several (config, shape) pairs in one transaction, so a trainer claims them together."""
        jobs = []
        with self._lock, self._transaction():
            for config, shape in requests:
                added = self._execute(
                    "INSERT INTO queue (hash, config, shape, state, requests, requested_at, attempts, fraction)"
                    f" VALUES (?, ?, ?, ?, 1, {self.now_sql}, 0, 0) ON CONFLICT DO NOTHING",
                    (config.hash, json.dumps(config.to_json(), sort_keys=True), shape, QUEUED))
                if not added.rowcount:
                    self._execute("UPDATE queue SET requests = requests + 1 WHERE hash = ? AND state IN (?, ?)",
                                  (config.hash, *UNFINISHED))
                jobs.append(self._unfinished(config.hash))
        return jobs

    def _unfinished(self, run_hash: str) -> QueuedJob | None:
        rows = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE hash = ? AND state IN (?, ?)",
                              (run_hash, *UNFINISHED))
        return QueuedJob.of(rows[0]) if rows else None

    def _claimable(self) -> str:
        return (f"(state = '{QUEUED}' OR (state = '{RUNNING}' AND lease_until < {self.now_sql}"
                f" AND attempts < {MAX_ATTEMPTS}))")

    def _take(self, where: str, values: Sequence, worker: str, device: str, lease_s: float, limit: int,
              order: str = "id") -> list[QueuedJob]:
        """Claim up to ``limit`` claimable jobs matching ``where`` (inside a transaction)."""
        rows = self._fetchall(
            f"UPDATE queue SET state = ?, worker = ?, device = ?, lease_until = {self.now_sql} + ?,"
            f" attempts = attempts + 1, started_at = {self.now_sql}, fraction = 0, status = NULL"
            f" WHERE id IN (SELECT id FROM queue WHERE {self._claimable()} AND {where} ORDER BY {order}"
            f" LIMIT ?{self.lock_rows}) RETURNING {_QUEUE_COLUMNS}",
            (RUNNING, worker, device, float(lease_s), *values, int(limit)))
        return sorted((QueuedJob.of(row) for row in rows), key=lambda job: job.id)

    def _fail_abandoned(self) -> None:
        self._execute(f"UPDATE queue SET state = ?, finished_at = {self.now_sql}, error = ? WHERE state = ? AND"
                      f" lease_until < {self.now_sql} AND attempts >= ?",
                      (FAILED, f"{MAX_ATTEMPTS} trainers stopped answering while training it", RUNNING, MAX_ATTEMPTS))

    def claim(self, worker: str, device: str, lease_s: float, batch: int = 1,
              shape_of: Mapping[str, str] | None = None) -> list[QueuedJob]:
        """The oldest claimable job and up to ``batch - 1`` more of the same shape, leased to ``worker`` for
        ``lease_s`` seconds; [] if the queue holds nothing to do."""
        with self._lock, self._transaction():
            self._fail_abandoned()
            first = self._take("1 = 1", (), worker, device, lease_s, 1)
            if not first or batch <= 1:
                return first
            more = self._take("shape = ?", (first[0].shape,), worker, device, lease_s, batch - 1)
            return first + more

    def claim_hash(self, config: ExperimentConfig, shape: str, worker: str, device: str,
                   lease_s: float) -> QueuedJob | None:
        """The job of ``config`` for ``worker`` (queued now if it was not): None while another trainer's lease
        on it holds."""
        with self._lock, self._transaction():
            self._fail_abandoned()
            if self._unfinished(config.hash) is None:
                self._execute("INSERT INTO queue (hash, config, shape, state, requests, requested_at, attempts,"
                              f" fraction) VALUES (?, ?, ?, ?, 1, {self.now_sql}, 0, 0) ON CONFLICT DO NOTHING",
                              (config.hash, json.dumps(config.to_json(), sort_keys=True), shape, QUEUED))
            mine = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE hash = ? AND state = ? AND worker = ?",
                                  (config.hash, RUNNING, worker))
            if mine:
                return QueuedJob.of(mine[0])
            taken = self._take("hash = ?", (config.hash,), worker, device, lease_s, 1)
            return taken[0] if taken else None

    def renew(self, worker: str, lease_s: float, progress: Mapping[int, tuple[float, dict | None]]) -> set[int]:
        """Extend ``worker``'s leases on the jobs of ``progress`` (id -> (fraction, status)) and save how far they
        got; returns the ids it no longer holds (its lease ran out and another trainer took the job)."""
        lost = set()
        with self._lock, self._transaction():
            for job_id, (fraction, status) in progress.items():
                updated = self._execute(
                    f"UPDATE queue SET lease_until = {self.now_sql} + ?, fraction = ?, status = ? WHERE id = ?"
                    " AND worker = ? AND state = ?",
                    (float(lease_s), float(fraction), None if status is None else json.dumps(status), job_id, worker,
                     RUNNING))
                if not updated.rowcount:
                    lost.add(job_id)
        return lost

    def complete(self, job_id: int, worker: str, record: RunRecord, weights: bytes | None = None) -> bool:
        """Store ``record`` (with its weights) and close its job, in one transaction, if ``worker`` still holds the
        job; False (and nothing stored) if another trainer took it over."""
        with self._lock, self._transaction():
            held = self._fetchall("SELECT hash FROM queue WHERE id = ? AND worker = ? AND state = ?" + self.lock_row,
                                  (job_id, worker, RUNNING))
            if not held:
                return False
            self._insert(record, weights)
            self._execute(f"UPDATE queue SET state = ?, finished_at = {self.now_sql}, fraction = 1, device = ?,"
                          " lease_until = NULL WHERE id = ?", (DONE, record.device, job_id))
            self._execute("UPDATE workers SET trained = trained + 1 WHERE name = ?", (worker,))
        return True

    def finish(self, job_id: int, worker: str, state: str, error: str | None = None) -> bool:
        """Close a job ``worker`` holds without a new record: DONE (already stored), FAILED or CANCELLED."""
        with self._lock, self._transaction():
            updated = self._execute(f"UPDATE queue SET state = ?, finished_at = {self.now_sql}, error = ?,"
                                    " lease_until = NULL WHERE id = ? AND worker = ? AND state = ?",
                                    (state, error, job_id, worker, RUNNING))
            return bool(updated.rowcount)

    def release(self, job_id: int, worker: str) -> bool:
        """Give a held job back to the queue untrained (a worker told to stop); it keeps its requests."""
        with self._lock, self._transaction():
            updated = self._execute("UPDATE queue SET state = ?, worker = NULL, lease_until = NULL, fraction = 0,"
                                    " status = NULL WHERE id = ? AND worker = ? AND state = ?",
                                    (QUEUED, job_id, worker, RUNNING))
            return bool(updated.rowcount)

    def withdraw(self, run_hash: str) -> bool:
        """One request for a queued job no longer wants it; the job is cancelled when none does. True if so."""
        with self._lock, self._transaction():
            self._execute("UPDATE queue SET requests = requests - 1 WHERE hash = ? AND state = ? AND requests > 0",
                          (run_hash, QUEUED))
            cancelled = self._execute(f"UPDATE queue SET state = ?, finished_at = {self.now_sql} WHERE hash = ? AND"
                                      " state = ? AND requests <= 0", (CANCELLED, run_hash, QUEUED))
            return bool(cancelled.rowcount)

    def latest(self, run_hash: str) -> QueuedJob | None:
        """The most recent job of a hash (unfinished, or how the last one ended); None if it was never queued."""
        rows = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE hash = ? ORDER BY id DESC LIMIT 1",
                              (run_hash,))
        return QueuedJob.of(rows[0]) if rows else None

    def job(self, job_id: int) -> QueuedJob | None:
        rows = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE id = ?", (job_id,))
        return QueuedJob.of(rows[0]) if rows else None

    def queue(self, finished: int = 20) -> list[QueuedJob]:
        """Every unfinished job (oldest first), then the ``finished`` most recently finished."""
        unfinished = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE state IN (?, ?) ORDER BY id",
                                    UNFINISHED)
        done = self._fetchall(f"SELECT {_QUEUE_COLUMNS} FROM queue WHERE state NOT IN (?, ?) ORDER BY finished_at"
                              " DESC, id DESC LIMIT ?", (*UNFINISHED, int(finished)))
        return [QueuedJob.of(row) for row in (*unfinished, *done)]

    # ---- workers -------------------------------------------------------------------------------------

    def register_worker(self, name: str, device: str) -> None:
        with self._lock, self._transaction():
            self._execute("DELETE FROM workers WHERE name = ?", (name,))
            self._execute(f"INSERT INTO workers (name, device, started_at, heartbeat, trained) VALUES (?, ?,"
                          f" {self.now_sql}, {self.now_sql}, 0)", (name, device))

    def worker_alive(self, name: str) -> None:
        self._execute(f"UPDATE workers SET heartbeat = {self.now_sql} WHERE name = ?", (name,))

    def unregister_worker(self, name: str) -> None:
        self._execute("DELETE FROM workers WHERE name = ?", (name,))

    def workers(self, within_s: float) -> list[Worker]:
        """The workers whose heartbeat is at most ``within_s`` seconds old."""
        rows = self._fetchall(f"SELECT name, device, started_at, heartbeat, trained FROM workers WHERE heartbeat >="
                              f" {self.now_sql} - ? ORDER BY started_at, name", (float(within_s),))
        return [Worker(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._close_quietly()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _SQLiteTransaction:
    def __init__(self, store: SQLiteStore):
        self.store = store

    def __enter__(self):
        self.store._lock.acquire()
        self.store._connection.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, kind, value, traceback):
        try:
            self.store._connection.execute("ROLLBACK" if kind else "COMMIT")
        finally:
            self.store._lock.release()


class SQLiteStore(RunStore):
    """A file (WAL journal, so readers never wait for a writer), or ``:memory:``."""

    def _connect(self) -> sqlite3.Connection:
        where = self.location
        if where != ":memory:":
            path = Path(where)
            if path.exists() and path.is_dir():
                raise StoreError(Deferred(N_("{where} is a folder; give the run store a file name (e.g. {example})."),
                                          where=where, example=str(path / "runs.sqlite3")))
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = sqlite3.connect(where, check_same_thread=False, isolation_level=None, timeout=30)
            connection.execute("PRAGMA busy_timeout = 30000")
            check = connection.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as err:
            raise StoreError(Deferred(N_("{where} is not a readable SQLite database ({error}). It was left untouched; "
                                         "move it aside or choose another location with --store or PE_RUN_STORE."),
                                      where=where, error=str(err))) from err
        if check is None or check[0] != "ok":
            connection.close()
            raise StoreError(Deferred(N_("The SQLite database {where} is damaged ({error}). It was left untouched; "
                                         "move it aside to start a new store."),
                                      where=where, error=check[0] if check else "no answer"))
        return connection

    def _opened(self) -> None:
        # only once the database is known to be ours: switching the journal rewrites the file's header
        if self.location != ":memory:":
            self._execute("PRAGMA journal_mode = WAL")
        self._execute("PRAGMA foreign_keys = ON")

    def _tables(self) -> set[str]:
        try:
            rows = self._fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
        except sqlite3.DatabaseError as err:
            raise StoreError(Deferred(N_("The SQLite database {where} is damaged ({error}). It was left untouched; "
                                         "move it aside to start a new store."),
                                      where=self.location, error=str(err))) from err
        return {name for (name,) in rows}

    def _transaction(self) -> _SQLiteTransaction:
        return _SQLiteTransaction(self)


class PostgresStore(RunStore):
    """A PostgreSQL database shared by several app instances (psycopg 3)."""

    placeholder = "%s"
    backend = "postgresql"
    id_column = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    blob_column = "BYTEA"
    now_sql = "extract(epoch from clock_timestamp())::double precision"
    lock_rows = " FOR UPDATE SKIP LOCKED"
    lock_row = " FOR UPDATE"

    def _connect(self):
        try:
            import psycopg
        except ImportError as err:
            raise StoreError(Deferred(N_("A PostgreSQL run store needs the psycopg package: "
                                         "pip install 'psycopg[binary]'."))) from err
        try:
            return psycopg.connect(self.location, autocommit=True, connect_timeout=10)
        except psycopg.Error as err:
            raise StoreError(Deferred(N_("Cannot connect to the run store at {where}: {error}"),
                                      where=describe_location(self.location), error=str(err).strip())) from err

    def _tables(self) -> set[str]:
        rows = self._fetchall("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return {name for (name,) in rows}

    def _transaction(self):
        return PostgresTransaction(self)


def open_store(location: str | None = None) -> RunStore:
    """The store at ``location``: a ``postgresql://`` URL, a SQLite path (or ``sqlite:///path``), or ``:memory:``.

    None: ``PE_RUN_STORE`` or ``runs/runs.sqlite3`` in the repository.
    """
    location = location or default_location()
    if location.startswith(("postgresql://", "postgres://")):
        return PostgresStore(location)
    if location.startswith("sqlite:///"):
        location = location[len("sqlite:///"):] or ":memory:"
    return SQLiteStore(location)


def copy_runs(source: RunStore, target: RunStore, hashes: Iterable[str] | None = None) -> int:
    """Copy runs between stores (e.g. a laptop's SQLite file into a class server's PostgreSQL)."""
    copied = 0
    for run_hash in hashes if hashes is not None else [s.hash for s in source.runs(limit=1_000_000)]:
        record = source.get(run_hash)
        if record is not None and target.put(record, source.weights(run_hash)):
            copied += 1
    return copied
