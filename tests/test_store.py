"""The run store: round trips on SQLite and PostgreSQL, restart survival, and databases it must refuse."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from pe_core.train import ExperimentConfig, RunRecord, StoreError, open_store
from pe_core.train.schema import CurvePoint, FineTuneResult, MethodResult
from pe_core.train.store import STORE_SCHEMA_VERSION, PostgresStore, SQLiteStore, copy_runs

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def fake_record(encoding: str = "rope", seed: int = 0, accuracy: float = 0.5) -> RunRecord:
    """A small but complete record (no training: the store is what is tested here)."""
    config = ExperimentConfig(encoding=encoding, seed=seed, d_model=32, n_head=2, head_size=16, n_layer=1, train_length=16,
                              steps=5, multiples=(1, 2), eval_tokens=64, fine_tune_steps=3)
    results = tuple(MethodResult(m, n, 2.0 + n / 100, accuracy - n / 1000, tuple([2.0] * n), tuple([accuracy] * n))
                    for n in config.lengths for m in config.evaluated_methods)
    tunes = tuple(FineTuneResult(m, 32, 3, results[0], results[-1], (2.5, 2.4, 2.3)) for m in config.fine_tuned_methods)
    return RunRecord(config=config, device="CPU (1 thread)", created_at=f"2026-01-0{seed + 1}T00:00:00+00:00",
                     code_version="abc", parameters=1234, corpus_sha256="0" * 64, unigram_baseline=3.1,
                     training_seconds=1.5, total_seconds=2.5,
                     loss_curve=(CurvePoint(1, 4.5, None), CurvePoint(2, 4.0, 3.9)), results=results, fine_tunes=tunes)


def check_round_trip(store) -> None:
    first, second, alibi = fake_record(), fake_record(seed=1, accuracy=0.6), fake_record("alibi")
    assert store.count() == 0 and store.get(first.hash) is None
    assert store.put(first) and store.put(second) and store.put(alibi)
    assert not store.put(first)  # the same hash is kept as it was
    assert store.get(first.hash) == first and store.get(alibi.hash) == alibi
    assert first.hash in store and store.count() == 3
    assert [r.hash for r in store.runs()] == [second.hash, alibi.hash, first.hash] or store.runs()[0].hash == \
        second.hash
    rows = store.results(first.family)
    assert first.family == second.family == alibi.family
    direct = sorted(r.accuracy for r in rows if (r.encoding, r.method, r.length, r.fine_tuned) == ("rope", "direct", 16,
                                                                                                   False))
    assert direct == pytest.approx([0.5 - 0.016, 0.6 - 0.016])
    assert {r.method for r in rows if r.fine_tuned} == {"pi", "ntk", "yarn"}
    # the queue (tests/test_workers.py tries it in depth): a job per unstored config, claimed by one trainer
    queued = store.enqueue(first.config.replace(seed=7), "shape")
    (claimed,) = store.claim("me", "CPU (1 thread)", 60)
    assert (claimed.id, claimed.hash, claimed.state, claimed.worker) == (queued.id, queued.hash, "running", "me")
    assert store.claim("other", "CPU (1 thread)", 60) == []


def test_sqlite_round_trip_and_restart_survival(tmp_path):
    path = tmp_path / "runs.sqlite3"
    with open_store(str(path)) as store:
        assert isinstance(store, SQLiteStore)
        check_round_trip(store)
        assert store._fetchall("PRAGMA journal_mode")[0][0] == "wal"
    # a "restart": a new process would open the same file
    with open_store(f"sqlite:///{path}") as again:
        assert again.count() == 3
        assert again.get(fake_record().hash) == fake_record()


def test_copy_between_stores(tmp_path):
    with open_store(str(tmp_path / "a.sqlite3")) as source, open_store(":memory:") as target:
        source.put(fake_record())
        source.put(fake_record(seed=1))
        assert copy_runs(source, target) == 2 and copy_runs(source, target) == 0
        assert target.get(fake_record().hash) == fake_record()


def unchanged(path: Path):
    before = path.read_bytes()
    return lambda: path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_reported_and_left_alone(tmp_path):
    path = tmp_path / "runs.sqlite3"
    path.write_bytes(b"my thesis, not a database\n" * 100)
    same = unchanged(path)
    with pytest.raises(StoreError, match="not a readable SQLite database.*left untouched"):
        open_store(str(path))
    assert same()


def test_a_damaged_database_is_reported_and_left_alone(tmp_path):
    path = tmp_path / "runs.sqlite3"
    with open_store(str(path)) as store:
        for seed in range(4):
            store.put(fake_record(seed=seed))
        store._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[100:400] = b"\xff" * 300  # scribble over the schema table's page
    path.write_bytes(bytes(data))
    same = unchanged(path)
    with pytest.raises(StoreError, match="damaged|not a readable"):
        open_store(str(path))
    assert same()


def test_an_old_schema_or_a_foreign_database_is_refused_untouched(tmp_path):
    old = tmp_path / "old.sqlite3"
    connection = sqlite3.connect(old)
    connection.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("INSERT INTO store_meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION - 1),))
    connection.execute("CREATE TABLE runs (hash TEXT PRIMARY KEY, json TEXT)")
    connection.commit()
    connection.close()
    same = unchanged(old)
    with pytest.raises(StoreError, match=f"older version .*schema {STORE_SCHEMA_VERSION - 1}.*left untouched"):
        open_store(str(old))
    assert same()

    foreign = tmp_path / "foreign.sqlite3"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE grades (student TEXT, mark REAL)")
    connection.commit()
    connection.close()
    same = unchanged(foreign)
    with pytest.raises(StoreError, match="other tables \\(grades\\)"):
        open_store(str(foreign))
    assert same()


def test_a_folder_is_not_a_store(tmp_path):
    with pytest.raises(StoreError, match="is a folder"):
        open_store(str(tmp_path))


# --- PostgreSQL: Debian's server, started here as the postgres user ------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """A throw-away PostgreSQL server (initdb + pg_ctl as the postgres user), stopped afterwards."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    if shutil.which("runuser") is None or os.geteuid() != 0:
        pytest.skip("starting PostgreSQL here needs root (to run it as the postgres user)")
    pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg (pip install 'psycopg[binary]')")
    root = Path(tempfile.mkdtemp(prefix="pe-pg-"))
    shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()

    def as_postgres(*command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, timeout=120)

    try:
        as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres")
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                    f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    except subprocess.CalledProcessError as err:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"could not start PostgreSQL: {err.stderr.decode(errors='replace')[-300:]}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast",
                        "-w", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def _fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def test_postgres_round_trip_restart_and_refusals(postgres_url):
    import psycopg

    url = _fresh_database(postgres_url, "runs_round_trip")
    with open_store(url) as store:
        assert isinstance(store, PostgresStore)
        check_round_trip(store)
    with open_store(url) as again:  # another app instance, or a restart
        assert again.count() == 3 and again.get(fake_record("alibi").hash) == fake_record("alibi")

    old = _fresh_database(postgres_url, "runs_old")
    with psycopg.connect(old, autocommit=True) as connection:
        connection.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO store_meta VALUES ('schema_version', '0')")
    with pytest.raises(StoreError, match="older version"):
        open_store(old)
    with psycopg.connect(old, autocommit=True) as connection:
        assert connection.execute("SELECT value FROM store_meta").fetchall() == [("0",)]  # untouched
    with pytest.raises(StoreError, match="Cannot connect"):
        open_store(postgres_url.rsplit("/", 1)[0] + "/no_such_database")


def test_postgres_queue_coordinates_two_instances(postgres_url):
    url = _fresh_database(postgres_url, "runs_claims")
    with open_store(url) as first, open_store(url) as second:
        record = fake_record()
        assert first.claim_hash(record.config, "shape", "instance-1", "CPU (1 thread)", 60).worker == "instance-1"
        assert second.claim_hash(record.config, "shape", "instance-2", "CPU (1 thread)", 60) is None
        assert second.latest(record.hash).worker == "instance-1"  # the second follows the first's training
        assert first.complete(first.latest(record.hash).id, "instance-1", record)
        assert second.get(record.hash) == record and second.latest(record.hash).state == "done"


def test_postgres_votes_refusals_and_concurrency(postgres_url):
    """The audience's votes (tests/test_votes.py on SQLite) on PostgreSQL, beside a run store in one database."""
    from pe_core import votes
    from tests.test_votes import check_concurrent, check_flood, check_votes

    url = _fresh_database(postgres_url, "pe_votes")
    with votes.open_votes(url, burst=4) as store:
        assert isinstance(store, votes.PostgresVotes)
        check_votes(store)
        check_flood(store)
    check_concurrent(url)
    with open_store(url) as runs:  # the run store opens the database the votes are in
        assert runs.put(fake_record()) and runs.count() == 1
