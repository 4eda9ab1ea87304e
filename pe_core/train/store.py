"""The run store: every finished run in a database, found again by its config's hash.

One interface, two backends, one schema with a version number:

- SQLite (the standard library, WAL journal) by default: a file under ``runs/`` in the
  repository (ignored by git), or the path in ``PE_RUN_STORE``;
- PostgreSQL, given a ``postgresql://`` URL, for a server shared by several app instances
  (needs ``psycopg``).

Opening never changes a database it does not recognise: a file that is not a database, a
damaged one, one with other tables, or one written with another schema version is reported
with ``StoreError`` and left exactly as it was.

Tables: ``store_meta`` (schema version), ``runs`` (one row per run: hash, config, the whole
record as JSON, and columns to list and filter by), ``results`` (one row per method, length
and fine-tune: the numbers the seed table averages, queryable without reading records) and
``claims`` (which process is training which hash, so app instances sharing a database train
each config once).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from i18n import N_, Deferred
from pe_core.train.schema import RecordError, RunRecord

STORE_SCHEMA_VERSION = 1
STORE_ENV = "PE_RUN_STORE"
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "runs" / "runs.sqlite3"
CLAIM_STALE_S = 120.0  # a claim whose heartbeat is older than this belongs to a process that is gone

_SCHEMA = (
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE runs (hash TEXT PRIMARY KEY, family TEXT NOT NULL, encoding TEXT NOT NULL, seed INTEGER NOT NULL,"
    " created_at TEXT NOT NULL, device TEXT NOT NULL, code_version TEXT NOT NULL, total_seconds DOUBLE PRECISION NOT NULL,"
    " config TEXT NOT NULL, record TEXT NOT NULL)",
    "CREATE INDEX runs_family ON runs (family)",
    "CREATE TABLE results (hash TEXT NOT NULL REFERENCES runs (hash) ON DELETE CASCADE, method TEXT NOT NULL,"
    " length INTEGER NOT NULL, fine_tuned INTEGER NOT NULL, accuracy DOUBLE PRECISION NOT NULL, loss DOUBLE PRECISION NOT NULL,"
    " PRIMARY KEY (hash, method, length, fine_tuned))",
    "CREATE TABLE claims (hash TEXT PRIMARY KEY, owner TEXT NOT NULL, heartbeat DOUBLE PRECISION NOT NULL)",
)
_TABLES = {"store_meta", "runs", "results", "claims"}


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
        tables = self._tables()
        if not tables:
            with self._transaction():
                for statement in _SCHEMA:
                    self._execute(statement)
                self._execute("INSERT INTO store_meta (key, value) VALUES (?, ?)",
                              ("schema_version", str(STORE_SCHEMA_VERSION)))
            return
        if "store_meta" not in tables:
            raise StoreError(Deferred(N_("The database at {where} holds other tables ({tables}), not a run store. It "
                                         "was left untouched; choose another location with --store or PE_RUN_STORE."),
                                      where=where, tables=", ".join(sorted(tables))))
        rows = self._fetchall("SELECT value FROM store_meta WHERE key = ?", ("schema_version",))
        version = rows[0][0] if rows else None
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

    # ---- runs -------------------------------------------------------------------------------------

    def put(self, record: RunRecord) -> bool:
        """Save a finished run (and its result rows); False if this hash was already stored (kept as it was)."""
        c = record.config
        rows = [(record.hash, r.method, r.length, 0, r.mean_accuracy, r.mean_loss) for r in record.results]
        rows += [(record.hash, f.method, f.length, 1, f.after.mean_accuracy, f.after.mean_loss)
                 for f in record.fine_tunes]
        with self._lock, self._transaction():
            if self._fetchall("SELECT 1 FROM runs WHERE hash = ?", (record.hash,)):
                return False
            self._execute(
                "INSERT INTO runs (hash, family, encoding, seed, created_at, device, code_version, total_seconds,"
                " config, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.hash, record.family, c.encoding, c.seed, record.created_at, record.device,
                 record.code_version, record.total_seconds, json.dumps(c.to_json(), sort_keys=True),
                 json.dumps(record.to_json(), separators=(",", ":"))))
            for row in rows:
                self._execute("INSERT INTO results (hash, method, length, fine_tuned, accuracy, loss)"
                              " VALUES (?, ?, ?, ?, ?, ?)", row)
        return True

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

    # ---- claims: one trainer per hash across processes ------------------------------------------------

    def claim(self, run_hash: str, owner: str) -> str | None:
        """Take ``run_hash`` for ``owner``; returns None if taken, else the owner that holds it now."""
        now = time.time()
        with self._lock, self._transaction():
            rows = self._fetchall("SELECT owner, heartbeat FROM claims WHERE hash = ?", (run_hash,))
            if rows and rows[0][0] != owner and now - float(rows[0][1]) < CLAIM_STALE_S:
                return rows[0][0]
            if rows:
                self._execute("UPDATE claims SET owner = ?, heartbeat = ? WHERE hash = ?", (owner, now, run_hash))
            else:
                self._execute("INSERT INTO claims (hash, owner, heartbeat) VALUES (?, ?, ?)", (run_hash, owner, now))
        return None

    def heartbeat(self, run_hash: str, owner: str) -> None:
        self._execute("UPDATE claims SET heartbeat = ? WHERE hash = ? AND owner = ?", (time.time(), run_hash, owner))
        self._commit()

    def release(self, run_hash: str, owner: str) -> None:
        self._execute("DELETE FROM claims WHERE hash = ? AND owner = ?", (run_hash, owner))
        self._commit()

    def _commit(self) -> None:
        pass

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
        return _PostgresTransaction(self)


class _PostgresTransaction:
    def __init__(self, store: PostgresStore):
        self.store = store

    def __enter__(self):
        self.store._lock.acquire()
        self._inner = self.store._connection.transaction()
        self._inner.__enter__()
        return self

    def __exit__(self, kind, value, traceback):
        try:
            return self._inner.__exit__(kind, value, traceback)
        finally:
            self.store._lock.release()


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
        if record is not None and target.put(record):
            copied += 1
    return copied
