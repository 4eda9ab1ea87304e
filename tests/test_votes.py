"""Audience votes in the run store's database: rooms, one vote per student per step, every refusal, the tally and
the CSV, on SQLite and PostgreSQL, with votes from several processes at once (none lost, none counted twice)."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from i18n import _ as translate
from i18n import use_language
from pe_core import votes as V
from pe_core.train.store import open_store
from tests.test_store import fake_record

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {"en": {"title": "T", "question": "Which?", "choices": ["a", "b", "c"], "answer": "b"},
         "zh": {"title": "题", "question": "哪个？", "choices": ["甲", "乙", "丙"], "answer": "乙"}}


def refused(reason: str, call, *args):
    with pytest.raises(V.VoteRefused) as caught:
        call(*args)
    assert caught.value.reason == reason, str(caught.value)
    return str(caught.value)


def check_votes(store: V.VoteStore) -> None:
    code = store.open_room()
    assert V.valid_code(code) and store.room(code) == (code, store.room(code).created_at, None, None)
    assert store.room(code).open and store.room("ZZZZZ") is None
    me, you = V.new_voter_id(), V.new_voter_id()
    assert me != you
    # no step shown yet: any step is stale
    refused(V.STALE, store.cast, code, 0, me, 0)
    store.show_step(code, 0, choices=3, answer=1, texts=TEXTS)
    assert store.room(code).step == 0 and store.question(code, 0) == (0, 3, 1, TEXTS, False)
    assert store.question(code, 0).text("zh")["question"] == "哪个？" and store.question(code, 0).text("fr") == TEXTS["en"]
    assert store.tally(code, 0) == (0, 0, 0)
    assert store.cast(code, 0, me, 2) == 0
    assert store.cast(code, 0, me, 1) == 1  # changed, not counted twice
    assert store.cast(code, 0, you, 1) == 0
    assert store.tally(code, 0) == (0, 2, 0) and store.vote_of(code, 0, me) == 1 and store.vote_of(code, 0, "x" * 9) is None
    # refusals change nothing
    before = store.export_csv(code)
    assert "no room ZZZZZ" in refused(V.UNKNOWN, store.cast, "ZZZZZ", 0, me, 0)
    refused(V.STALE, store.cast, code, 1, me, 0)
    for forged in (3, -1, True, "1", 1.0, None):
        refused(V.FORGED, store.cast, code, 0, me, forged)
    for bad in ("", "short", "x" * 65, "bad id with spaces", None, 7):
        refused(V.BAD_VOTER, store.cast, code, 0, bad, 0)
    assert store.export_csv(code) == before and store.tally(code, 0) == (0, 2, 0)
    # the next step: the phones follow it; votes on the last one are stale
    store.show_step(code, 1, choices=4, answer=3, texts=TEXTS)
    refused(V.STALE, store.cast, code, 0, me, 0)
    assert store.cast(code, 1, me, 3) == 0
    store.reveal(code, 1)
    assert store.question(code, 1).revealed and not store.question(code, 0).revealed
    with use_language("zh"):
        message = translate(refused(V.REVEALED, store.cast, code, 1, you, 0))
    assert "揭晓" in message, message
    # back to a revealed step: it stays revealed, its votes kept
    store.show_step(code, 0, choices=3, answer=1, texts=TEXTS)
    store.reveal(code, 0)
    store.show_step(code, 0, choices=3, answer=1, texts=TEXTS)
    assert store.question(code, 0).revealed and store.tally(code, 0) == (0, 2, 0)
    store.show_step(code, 2, choices=2, answer=0, texts=TEXTS)
    store.close_room(code)
    assert not store.room(code).open
    assert "closed" in refused(V.CLOSED, store.cast, code, 2, me, 0)
    rows = list(csv.DictReader(io.StringIO(store.export_csv(code))))
    assert sorted((r["step"], r["voter"], r["choice"], r["correct"], r["changes"]) for r in rows) == sorted(
        [("1", me, "2", "1", "1"), ("1", you, "2", "1", "0"), ("2", me, "4", "1", "0")])
    assert set(rows[0]) == {"room", "step", "voter", "choice", "correct", "changes", "cast_at"}  # nothing else kept
    refused(V.UNKNOWN, lambda: store.show_step("ZZZZZ", 0, choices=3, answer=0, texts=TEXTS))
    with pytest.raises(ValueError):
        store.show_step(code, 0, choices=3, answer=3, texts=TEXTS)


def check_flood(store: V.VoteStore) -> None:
    code = store.open_room()
    store.show_step(code, 0, choices=3, answer=0, texts=TEXTS)
    phone = V.new_voter_id()
    for n in range(store.burst):
        store.cast(code, 0, phone, n % 3)
    last = store.vote_of(code, 0, phone)
    message = refused(V.FLOOD, store.cast, code, 0, phone, (last + 1) % 3)
    assert "wait" in message and store.vote_of(code, 0, phone) == last
    store.cast(code, 0, V.new_voter_id(), 0)  # another phone is not held back


def test_sqlite_votes_refusals_and_flood(tmp_path):
    with V.open_votes(str(tmp_path / "runs.sqlite3"), burst=4) as store:
        assert isinstance(store, V.SQLiteVotes)
        check_votes(store)
        check_flood(store)


def test_the_run_store_and_the_votes_share_a_database_either_opened_first(tmp_path):
    first = tmp_path / "votes_first.sqlite3"
    with V.open_votes(str(first)) as votes:
        code = votes.open_room()
    with open_store(str(first)) as runs:  # a file with only the vote tables is still a new run store
        assert runs.put(fake_record())
    with V.open_votes(str(first)) as votes:
        assert votes.room(code).open
    second = tmp_path / "runs_first.sqlite3"
    with open_store(str(second)) as runs:
        runs.put(fake_record())
    with V.open_votes(str(second)) as votes:
        votes.open_room()
    with open_store(str(second)) as runs:
        assert runs.count() == 1
    foreign = tmp_path / "foreign.sqlite3"
    import sqlite3

    with sqlite3.connect(foreign) as other:
        other.execute("CREATE TABLE mine (x)")
    before = foreign.read_bytes()
    with pytest.raises(V.VoteStoreError, match="other tables"):
        V.open_votes(str(foreign))
    assert foreign.read_bytes() == before


VOTER_SCRIPT = textwrap.dedent("""
    import sys
    from pe_core.votes import open_votes
    location, code, worker, phones = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = open_votes(location)
    for n in range(phones):
        voter = f"phone-{worker:02d}-{n:04d}"
        store.cast(code, 0, voter, n % 3)
        store.cast(code, 0, voter, (n + worker) % 4)  # a change of mind: the last one counts
    print("torch" in sys.modules)
""")


def check_concurrent(location: str, processes: int = 4, phones: int = 30) -> None:
    with V.open_votes(location) as store:
        code = store.open_room()
        store.show_step(code, 0, choices=4, answer=0, texts=TEXTS)
        workers = [subprocess.Popen([sys.executable, "-c", VOTER_SCRIPT, location, code, str(w), str(phones)],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for w in range(processes)]
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            assert out.strip() == "False"  # the votes never import torch
        expected = [0, 0, 0, 0]
        for w in range(processes):
            for n in range(phones):
                expected[(n + w) % 4] += 1
        assert store.tally(code, 0) == tuple(expected)  # none lost, none counted twice
        rows = list(csv.DictReader(io.StringIO(store.export_csv(code))))
        assert len(rows) == processes * phones == len({r["voter"] for r in rows})
        assert all(r["changes"] == "1" for r in rows)


def test_sqlite_votes_from_several_processes(tmp_path):
    check_concurrent(str(tmp_path / "runs.sqlite3"))

# On PostgreSQL: tests/test_store.py (test_postgres_votes_refusals_and_concurrency), sharing its server.


def test_the_load_tests_vote_accounting_finds_a_lost_and_a_doubled_vote(tmp_path):
    """benchmarks.loadtest --votes compares what phones saw taken with the store: here one vote the store lacks,
    one it holds with another choice, and one no phone cast; the count's latency adds the presenter's refresh."""
    from benchmarks.loadtest import vote_summary

    with V.open_votes(str(tmp_path / "runs.sqlite3")) as store:
        code = store.open_room()
        store.show_step(code, 0, choices=3, answer=1, texts=TEXTS)
        for voter, choice in (("phone-aaaa", 0), ("phone-bbbb", 1), ("phone-cccc", 2)):
            store.cast(code, 0, voter, choice)
        casts = [{"voter": "phone-aaaa", "step": 0, "choice": 0, "at": 10.0, "first": True},
                 {"voter": "phone-bbbb", "step": 0, "choice": 2, "at": 10.2, "first": True},  # stored as 1: lost
                 {"voter": "phone-dddd", "step": 0, "choice": 1, "at": 10.4, "first": True}]  # not stored: lost
        polls = [(10.1, 0, 1), (10.3, 0, 2), (10.6, 0, 3)]
        summary = vote_summary({"casts": casts, "refusals": []}, store, code, polls, refresh_s=0.5)
    assert (summary["votes_cast"], summary["votes_counted"], summary["votes_lost"], summary["votes_doubled"]) == \
        (3, 3, 2, 1)  # phone-cccc's vote: counted, cast by no phone
    assert summary["tally_samples"] == 3 and summary["tally_p95_ms"] == pytest.approx(700.0)
