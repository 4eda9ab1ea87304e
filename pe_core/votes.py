"""Audience votes: a class votes from phones on the guided lesson's questions, kept in the run store's database.

The same database as the run store (``PE_RUN_STORE``: a SQLite file on one machine, a PostgreSQL URL behind
several app replicas), in tables of its own; no torch here, so the phone's page imports nothing heavy.

- ``vote_rooms``: a room per class, a short random code; open until closed; the step the presenter is on.
- ``vote_questions``: each step the presenter showed in the room: its number of choices, its answer, its texts in
  every language (the phone's page shows them without computing the lesson), and when it was revealed.
- ``votes``: one row per (room, step, voter), the voter an anonymous random id (nothing else about a student is
  kept); a vote is changed in place (an upsert), so a student's vote is never counted twice.
- ``vote_voters``: how many votes a voter cast in the current rate-limit window.

A vote is refused with ``VoteRefused`` (a sentence, and ``reason``) and changes nothing when the room is unknown or
closed, the step is not the room's current step or was already revealed, the choice is not one of the step's, the
voter id is malformed, or the voter cast more than ``burst`` votes in ``window_s`` seconds. Every check and the write
happen in one transaction that holds the room's row (PostgreSQL: ``FOR SHARE``; SQLite: ``BEGIN IMMEDIATE``), so a
reveal and a vote never interleave: a vote either counts before the reveal or is refused after it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from i18n import N_, Deferred

STORE_ENV = "PE_RUN_STORE"
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "runs" / "runs.sqlite3"
VOTE_TABLES = frozenset({"vote_rooms", "vote_questions", "votes", "vote_voters"})
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read off a projector
CODE_LENGTH = 5
VOTER_PATTERN = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
BURST, WINDOW_S = 10, 20.0  # at most this many votes per voter per window (changing one's mind a few times is fine)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vote_rooms (code TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL,"
    " closed_at DOUBLE PRECISION, step INTEGER)",
    "CREATE TABLE IF NOT EXISTS vote_questions (room TEXT NOT NULL REFERENCES vote_rooms (code) ON DELETE CASCADE,"
    " step INTEGER NOT NULL, choices INTEGER NOT NULL, answer INTEGER NOT NULL, texts TEXT NOT NULL,"
    " revealed_at DOUBLE PRECISION, PRIMARY KEY (room, step))",
    "CREATE TABLE IF NOT EXISTS votes (room TEXT NOT NULL REFERENCES vote_rooms (code) ON DELETE CASCADE,"
    " step INTEGER NOT NULL, voter TEXT NOT NULL, choice INTEGER NOT NULL, cast_at DOUBLE PRECISION NOT NULL,"
    " changes INTEGER NOT NULL, PRIMARY KEY (room, step, voter))",
    "CREATE TABLE IF NOT EXISTS vote_voters (room TEXT NOT NULL REFERENCES vote_rooms (code) ON DELETE CASCADE,"
    " voter TEXT NOT NULL, window_start DOUBLE PRECISION NOT NULL, attempts INTEGER NOT NULL,"
    " PRIMARY KEY (room, voter))",
)

UNKNOWN, CLOSED, STALE, REVEALED, FORGED, BAD_VOTER, FLOOD = (
    "unknown_room", "closed_room", "stale_step", "revealed", "forged_choice", "bad_voter", "flood")
_MESSAGES = {
    UNKNOWN: N_("There is no room {room}. Check the code on the screen."),
    CLOSED: N_("Room {room} is closed: the presenter stopped taking votes."),
    STALE: N_("The presenter has moved on: this question is no longer open."),
    REVEALED: N_("The answer to this question was revealed: votes on it are closed."),
    FORGED: N_("That is not one of this question's choices."),
    BAD_VOTER: N_("This phone's voter id is not valid; open the room's link again."),
    FLOOD: N_("Too many votes from this phone: wait {seconds:.0f} s and try again."),
}


class VoteRefused(ValueError):
    """A vote not taken; ``reason`` names why (one of the module's reason constants), the message says it."""

    def __init__(self, reason: str, **values: Any):
        super().__init__(Deferred(_MESSAGES[reason], **values))
        self.reason = reason


class VoteStoreError(RuntimeError):
    """A database the votes cannot use; nothing was changed."""


class Room(NamedTuple):
    code: str
    created_at: float
    closed_at: float | None
    step: int | None  # the step the presenter is on (None before the first)

    @property
    def open(self) -> bool:
        return self.closed_at is None


class Question(NamedTuple):
    step: int
    choices: int
    answer: int
    texts: dict  # language -> {"title", "question", "choices": [...], "answer"}
    revealed: bool

    def text(self, language: str) -> dict:
        return self.texts.get(language) or next(iter(self.texts.values()))


def new_voter_id() -> str:
    """An anonymous voter id: random, not derived from anything about the student."""
    return secrets.token_urlsafe(12)


def valid_code(code: str | None) -> bool:
    return bool(code) and len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code)


def normal_code(code: str | None) -> str:
    """A code as typed (spaces, lower case) in the form rooms are stored."""
    return "".join((code or "").split()).upper()


class VoteStore:
    """The votes of every room, on one connection serialised by a lock (like the run store)."""

    placeholder = "?"
    backend = "sqlite"
    now_sql = "((julianday('now') - 2440587.5) * 86400.0)"
    lock_row = ""

    def __init__(self, location: str, *, burst: int = BURST, window_s: float = WINDOW_S):
        self.location = location
        self.burst, self.window_s = burst, window_s
        self._lock = threading.RLock()
        self._connection = self._connect()
        try:
            self._create()
            self._opened()
        except BaseException:
            self._connection.close()
            raise

    # ---- plumbing ---------------------------------------------------------------------------------

    def _connect(self):
        raise NotImplementedError

    def _tables(self) -> set[str]:
        raise NotImplementedError

    def _transaction(self):
        raise NotImplementedError

    def _opened(self) -> None:
        pass

    def _rows(self, statement: str, values: Sequence = ()) -> list[tuple]:
        sql = statement if self.placeholder == "?" else statement.replace("?", self.placeholder)
        with self._lock:
            cursor = self._connection.execute(sql, tuple(values))
            return list(cursor.fetchall()) if cursor.description else []

    def _create(self) -> None:
        tables = self._tables()
        if tables and "store_meta" not in tables and not tables & VOTE_TABLES:
            raise VoteStoreError(Deferred(N_("The database at {where} holds other tables ({tables}), not a run store; "
                                             "votes were not added to it."),
                                          where=self.location.split("@")[-1], tables=", ".join(sorted(tables))))
        if VOTE_TABLES <= tables:
            return
        with self._transaction():
            for statement in _SCHEMA:
                self._rows(statement)

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def __enter__(self) -> VoteStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the presenter ----------------------------------------------------------------------------

    def open_room(self) -> str:
        """A new open room; its code (a few letters and digits, never one in use)."""
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            with self._transaction():
                if self._rows("SELECT 1 FROM vote_rooms WHERE code = ?", (code,)):
                    continue
                self._rows(f"INSERT INTO vote_rooms (code, created_at, closed_at, step) VALUES (?, {self.now_sql},"
                           " NULL, NULL)", (code,))
            return code

    def show_step(self, code: str, step: int, *, choices: int, answer: int, texts: Mapping[str, Mapping]) -> None:
        """The presenter is on ``step`` (its question, in every language): the phones follow. A step shown again
        keeps its votes and whether it was revealed."""
        if not 0 <= answer < choices:
            raise ValueError(f"answer {answer} is not one of {choices} choices")
        with self._transaction():
            self._room_for_update(code)
            self._rows("INSERT INTO vote_questions (room, step, choices, answer, texts, revealed_at) VALUES"
                       " (?, ?, ?, ?, ?, NULL) ON CONFLICT (room, step) DO UPDATE SET choices = excluded.choices,"
                       " answer = excluded.answer, texts = excluded.texts",
                       (code, int(step), int(choices), int(answer), json.dumps(texts, ensure_ascii=False)))
            self._rows("UPDATE vote_rooms SET step = ? WHERE code = ?", (int(step), code))

    def reveal(self, code: str, step: int) -> None:
        """The answer to ``step`` is shown: its votes are final (later votes on it are refused)."""
        with self._transaction():
            self._room_for_update(code)
            self._rows(f"UPDATE vote_questions SET revealed_at = {self.now_sql} WHERE room = ? AND step = ? AND"
                       " revealed_at IS NULL", (code, int(step)))

    def close_room(self, code: str) -> None:
        with self._transaction():
            self._room_for_update(code)
            self._rows(f"UPDATE vote_rooms SET closed_at = {self.now_sql} WHERE code = ? AND closed_at IS NULL",
                       (code,))

    def _room_for_update(self, code: str) -> Room:
        rows = self._rows("SELECT code, created_at, closed_at, step FROM vote_rooms WHERE code = ?"
                          + (" FOR UPDATE" if self.lock_row else ""), (code,))
        if not rows:
            raise VoteRefused(UNKNOWN, room=code)
        return Room(*rows[0])

    # ---- reading ----------------------------------------------------------------------------------

    def room(self, code: str) -> Room | None:
        rows = self._rows("SELECT code, created_at, closed_at, step FROM vote_rooms WHERE code = ?", (code,))
        return Room(*rows[0]) if rows else None

    def question(self, code: str, step: int) -> Question | None:
        rows = self._rows("SELECT step, choices, answer, texts, revealed_at FROM vote_questions WHERE room = ? AND"
                          " step = ?", (code, int(step)))
        if not rows:
            return None
        step_, choices, answer, texts, revealed_at = rows[0]
        return Question(step_, choices, answer, json.loads(texts), revealed_at is not None)

    def tally(self, code: str, step: int, choices: int | None = None) -> tuple[int, ...]:
        """Votes per choice on ``step`` (as many entries as the step has choices)."""
        if choices is None:
            question = self.question(code, step)
            choices = question.choices if question else 0
        counts = [0] * choices
        for choice, count in self._rows("SELECT choice, COUNT(*) FROM votes WHERE room = ? AND step = ? GROUP BY"
                                        " choice", (code, int(step))):
            if 0 <= choice < choices:
                counts[choice] = count
        return tuple(counts)

    def vote_of(self, code: str, step: int, voter: str) -> int | None:
        rows = self._rows("SELECT choice FROM votes WHERE room = ? AND step = ? AND voter = ?", (code, int(step), voter))
        return rows[0][0] if rows else None

    def export_csv(self, code: str) -> str:
        """Every vote of the room: step (1-based), anonymous voter id, choice (1-based), whether it was right, how
        many times it was changed, and when it was cast (seconds since 1970, the database's clock)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["room", "step", "voter", "choice", "correct", "changes", "cast_at"])
        for step, voter, choice, answer, changes, cast_at in self._rows(
                "SELECT v.step, v.voter, v.choice, q.answer, v.changes, v.cast_at FROM votes v JOIN vote_questions q"
                " ON q.room = v.room AND q.step = v.step WHERE v.room = ? ORDER BY v.step, v.cast_at, v.voter",
                (code,)):
            writer.writerow([code, step + 1, voter, choice + 1, int(choice == answer), changes, f"{cast_at:.3f}"])
        return out.getvalue()

    # ---- a phone ----------------------------------------------------------------------------------

    def cast(self, code: str, step: int, voter: str, choice: int) -> int:
        """Record ``voter``'s ``choice`` on ``step`` (replacing their earlier one); returns how many times they have
        changed it. Raises ``VoteRefused`` (and changes nothing) when the vote may not count."""
        if not isinstance(voter, str) or not VOTER_PATTERN.match(voter):
            raise VoteRefused(BAD_VOTER)
        with self._transaction():
            rows = self._rows("SELECT closed_at, step FROM vote_rooms WHERE code = ?" + self.lock_row, (code,))
            if not rows:
                raise VoteRefused(UNKNOWN, room=code)
            closed_at, current = rows[0]
            if closed_at is not None:
                raise VoteRefused(CLOSED, room=code)
            if current is None or int(step) != current:
                raise VoteRefused(STALE)
            question = self._rows("SELECT choices, revealed_at FROM vote_questions WHERE room = ? AND step = ?",
                                  (code, current))
            if not question:
                raise VoteRefused(STALE)
            choices, revealed_at = question[0]
            if revealed_at is not None:
                raise VoteRefused(REVEALED)
            if isinstance(choice, bool) or not isinstance(choice, int) or not 0 <= choice < choices:
                raise VoteRefused(FORGED)
            self._count_attempt(code, voter)
            changed = self._rows(
                f"INSERT INTO votes (room, step, voter, choice, cast_at, changes) VALUES (?, ?, ?, ?, {self.now_sql},"
                " 0) ON CONFLICT (room, step, voter) DO UPDATE SET choice = excluded.choice, cast_at = excluded.cast_at,"
                " changes = votes.changes + 1 RETURNING changes", (code, current, voter, choice))
            return changed[0][0]

    def _count_attempt(self, code: str, voter: str) -> None:
        """One more vote in the voter's window (a new window once the last is over); refused past ``burst``."""
        rows = self._rows(
            f"INSERT INTO vote_voters (room, voter, window_start, attempts) VALUES (?, ?, {self.now_sql}, 1)"
            f" ON CONFLICT (room, voter) DO UPDATE SET"
            f" attempts = CASE WHEN vote_voters.window_start < {self.now_sql} - ? THEN 1"
            f" ELSE vote_voters.attempts + 1 END,"
            f" window_start = CASE WHEN vote_voters.window_start < {self.now_sql} - ? THEN {self.now_sql}"
            f" ELSE vote_voters.window_start END"
            f" RETURNING attempts, window_start + ? - {self.now_sql}",
            (code, voter, float(self.window_s), float(self.window_s), float(self.window_s)))
        attempts, wait = rows[0]
        if attempts > self.burst:
            raise VoteRefused(FLOOD, seconds=max(1.0, float(wait)))


class _SQLiteTransaction:
    def __init__(self, store: SQLiteVotes):
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


class SQLiteVotes(VoteStore):
    def _connect(self) -> sqlite3.Connection:
        if self.location != ":memory:":
            path = Path(self.location)
            if path.is_dir():
                raise VoteStoreError(Deferred(N_("{where} is a folder; give the run store a file name."),
                                              where=self.location))
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = sqlite3.connect(self.location, check_same_thread=False, isolation_level=None, timeout=30)
            connection.execute("PRAGMA busy_timeout = 30000")
            connection.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as err:
            raise VoteStoreError(Deferred(N_("{where} is not a readable SQLite database ({error})."),
                                          where=self.location, error=str(err))) from err
        return connection

    def _opened(self) -> None:
        # only once the database is known to be ours: switching the journal rewrites the file's header
        if self.location != ":memory:":
            self._rows("PRAGMA journal_mode = WAL")

    def _tables(self) -> set[str]:
        try:
            return {name for (name,) in self._rows("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as err:
            raise VoteStoreError(Deferred(N_("{where} is not a readable SQLite database ({error})."),
                                          where=self.location, error=str(err))) from err

    def _transaction(self) -> _SQLiteTransaction:
        return _SQLiteTransaction(self)


class PostgresVotes(VoteStore):
    placeholder = "%s"
    backend = "postgresql"
    now_sql = "extract(epoch from clock_timestamp())::double precision"
    lock_row = " FOR SHARE"  # votes share the room's row; a reveal, a step change or closing waits for them

    def _connect(self):
        try:
            import psycopg
        except ImportError as err:
            raise VoteStoreError(Deferred(N_("A PostgreSQL run store needs the psycopg package: "
                                             "pip install 'psycopg[binary]'."))) from err
        try:
            return psycopg.connect(self.location, autocommit=True, connect_timeout=10)
        except psycopg.Error as err:
            raise VoteStoreError(Deferred(N_("Cannot connect to the run store at {where}: {error}"),
                                          where=self.location.split("@")[-1], error=str(err).strip())) from err

    def _tables(self) -> set[str]:
        return {name for (name,) in self._rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}

    def _transaction(self):
        return PostgresTransaction(self)


class PostgresTransaction:
    """A transaction on a PostgreSQL store's one connection, held under the store's lock (the run store's too)."""

    def __init__(self, store):
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


def default_location() -> str:
    return os.environ.get(STORE_ENV, "").strip() or str(DEFAULT_PATH)


def open_votes(location: str | None = None, **limits: Any) -> VoteStore:
    """The votes in the run store's database at ``location`` (as ``open_store`` reads it; None: ``PE_RUN_STORE``
    or ``runs/runs.sqlite3``)."""
    location = location or default_location()
    if location.startswith(("postgresql://", "postgres://")):
        return PostgresVotes(location, **limits)
    if location.startswith("sqlite:///"):
        location = location[len("sqlite:///"):] or ":memory:"
    return SQLiteVotes(location, **limits)


_SHARED: dict[str, VoteStore] = {}
_SHARED_LOCK = threading.Lock()


def server_votes() -> VoteStore:
    """This server process's vote store on the default location (one connection, shared by its sessions)."""
    location = default_location()
    with _SHARED_LOCK:
        if location not in _SHARED:
            _SHARED[location] = open_votes(location)
        return _SHARED[location]
