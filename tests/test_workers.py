"""The store's queue and the training workers that drain it, on SQLite and PostgreSQL.

Claims are atomic and batch jobs of one shape, leases expire, a finish by a trainer that lost its
lease stores nothing; two worker processes drain ten jobs while one of them is killed mid-job
(SIGKILL): every job is trained and stored exactly once, none is lost.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pe_core.train import ExperimentConfig, open_store
from pe_core.train import store as store_module
from pe_core.train.experiment import batch_groups, batch_key
from pe_core.train.store import (
    CANCELLED,
    DONE,
    FAILED,
    MAX_ATTEMPTS,
    QUEUED,
    RUNNING,
    STORE_SCHEMA_VERSION,
    QueuedJob,
)
from pe_core.train.worker import Worker
from tests.test_store import _fresh_database, fake_record, postgres_url  # noqa: F401 - the PostgreSQL fixture

ROOT = Path(__file__).resolve().parent.parent
# The smallest run the experiment allows that still trains, evaluates and stores a record: a few ms a step.
TINY = ExperimentConfig(d_model=8, n_head=1, head_size=8, n_layer=1, train_length=8, steps=2, tokens_per_step=32,
                        multiples=(1,), methods=("direct",), fine_tune=(), eval_tokens=64)


def tiny(**changes) -> ExperimentConfig:
    return TINY.replace(**changes)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "runs.sqlite3")
    # a database per test (PostgreSQL names are at most 63 characters)
    name = "queue_" + hashlib.sha256(request.node.name.encode()).hexdigest()[:16]
    return _fresh_database(request.getfixturevalue("postgres_url"), name)


def test_identical_requests_coalesce_and_a_claim_takes_one_shape(store_url):
    with open_store(store_url) as store:
        first, again = store.enqueue(tiny(), batch_key(tiny())), store.enqueue(tiny(), batch_key(tiny()))
        assert first.id == again.id and again.requests == 2 and again.state == QUEUED
        for seed in (1, 2):
            store.enqueue(tiny(seed=seed), batch_key(tiny(seed=seed)))
        other = tiny(steps=3)
        store.enqueue(other, batch_key(other))
        store.enqueue(tiny(seed=3), batch_key(tiny(seed=3)))
        claimed = store.claim("A", "CPU (1 thread)", lease_s=60, batch=3)
        # the oldest job and the queued jobs of its shape (not the other shape queued in between)
        assert [job.hash for job in claimed] == [tiny().hash, tiny(seed=1).hash, tiny(seed=2).hash]
        assert all(job.state == RUNNING and job.worker == "A" and job.attempts == 1 for job in claimed)
        second = store.claim("B", "CUDA (NVIDIA H200)", lease_s=60, batch=3)
        assert [job.hash for job in second] == [other.hash]  # seed 3 is not other's shape
        assert [job.hash for job in store.claim("B", "x", 60, batch=3)] == [tiny(seed=3).hash]
        assert store.claim("C", "x", 60, batch=3) == []
        # asking for a running config again adds a request to it, not a second job
        assert store.enqueue(tiny(), batch_key(tiny())).id == first.id
        assert [job.requests for job in store.queue(finished=0)][:1] == [3]


def test_a_lease_that_runs_out_returns_the_job_and_the_old_holder_cannot_finish_it(store_url):
    with open_store(store_url) as store:
        job = store.enqueue(tiny(), batch_key(tiny()))
        (held,) = store.claim("A", "x", lease_s=600, batch=1)
        assert store.renew("A", 600, {held.id: (0.4, {"phase": "training"})}) == set()
        assert store.claim("B", "x", 60) == []  # A's lease holds
        # A's last renewal: a lease that ran out a second ago (the clock is the database's; no test waits for it)
        assert store.renew("A", -1, {held.id: (0.5, None)}) == set()
        (taken,) = store.claim("B", "y", 60)  # A stopped renewing: B takes the same job
        assert taken.id == job.id and taken.worker == "B" and taken.attempts == 2 and taken.fraction == 0
        assert store.renew("A", 60, {job.id: (0.9, None)}) == {job.id}  # A learns it lost the job
        record = fake_record()
        assert not store.complete(job.id, "A", record) and store.count() == 0  # nothing stored by A
        assert store.complete(job.id, "B", record) and store.count() == 1
        done = store.latest(tiny().hash)
        assert done.state == DONE and done.worker == "B" and done.device == record.device and done.fraction == 1
        assert not store.complete(job.id, "B", record)  # a job closes once


def test_a_job_whose_trainers_keep_dying_fails_and_withdrawn_requests_cancel(store_url):
    with open_store(store_url) as store:
        job = store.enqueue(tiny(), batch_key(tiny()))
        for attempt in range(MAX_ATTEMPTS):
            (held,) = store.claim(f"W{attempt}", "x", lease_s=-1)  # a lease that has already run out: W died
            assert held.attempts == attempt + 1
        assert store.claim("W", "x", 60) == []
        assert store.latest(tiny().hash).state == FAILED and "3 trainers" in store.job(job.id).error
        store.enqueue(tiny(seed=1), batch_key(tiny()))
        store.enqueue(tiny(seed=1), batch_key(tiny()))
        assert not store.withdraw(tiny(seed=1).hash)  # one of two requests withdrawn: still queued
        assert store.withdraw(tiny(seed=1).hash) and store.latest(tiny(seed=1).hash).state == CANCELLED
        again = store.enqueue(tiny(seed=1), batch_key(tiny()))  # asked again: a new job
        assert again.state == QUEUED and again.requests == 1


def test_concurrent_claims_never_share_a_job(store_url):
    """Four connections claim from 40 jobs at once: each job is claimed by exactly one."""
    with open_store(store_url) as store:
        for seed in range(40):
            store.enqueue(tiny(seed=seed, steps=2 + seed % 4), batch_key(tiny(seed=seed, steps=2 + seed % 4)))
    claimed: dict[str, list[int]] = {}

    def drain(name: str) -> None:
        with open_store(store_url) as mine:
            ids = []
            while jobs := mine.claim(name, "x", 60, batch=3):
                ids += [job.id for job in jobs]
            claimed[name] = ids

    threads = [threading.Thread(target=drain, args=(f"W{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [job_id for ids in claimed.values() for job_id in ids]
    assert sorted(every) == list(range(min(every), min(every) + 40))  # all 40, none twice


def test_a_worker_trains_queued_jobs_of_one_shape_as_one_batch(store_url):
    with open_store(store_url) as store:
        seeds = [tiny(seed=s) for s in range(3)]
        other = tiny(encoding="alibi")
        for config in (seeds[0], other, *seeds[1:]):
            store.enqueue(config, batch_key(config))
        events = []
        worker = Worker(store, name="W", device="cpu", lease_s=30, batch=8, on_event=events.append)
        assert worker.run(until_empty=True) == 4
        claims = [e.job.hash for e in events if e.kind == "claimed"]
        stored = [e.job.hash for e in events if e.kind == "stored"]
        assert claims == [c.hash for c in seeds] + [other.hash]  # the three seeds claimed together, first
        assert sorted(stored) == sorted(c.hash for c in (*seeds, other))
        assert store.count() == 4 and all(store.latest(c.hash).state == DONE for c in (*seeds, other))
        record = store.get(other.hash)
        assert store.latest(other.hash).device == record.device and record.device.startswith("CPU (")
        assert store.workers(within_s=1e12) == []  # a worker leaves the table when it stops


def test_a_claim_takes_what_trains_as_one_batch(store_url):
    """The jobs a worker claims together are one of ``batch_groups``' groups: configs equal but for the seed."""
    configs = [tiny(seed=0), tiny(encoding="alibi", rope_base=10.0), tiny(seed=5), tiny(steps=3),
               tiny(encoding="alibi", seed=2)]
    with open_store(store_url) as store:
        store.enqueue_all([(c, batch_key(c)) for c in configs])
        claims = []
        while jobs := store.claim("W", "x", 60, batch=8):
            claims.append([job.hash for job in jobs])
    assert claims == [[c.hash for c in group] for group in batch_groups(configs)]
    assert len(claims) == 3


# --- workers as processes, one killed mid-job -----------------------------------------------------------------


def start_worker(url: str, name: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PE_TRAIN_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "pe_core.train", "--worker", "--store", url, "--name", name,
                             "--lease", "3", "--batch", "3", "--device", "cpu"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(condition, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


def stored_hashes(log: str) -> list[str]:
    return re.findall(r"\] stored job \d+ ([0-9a-f]{16}) ", log)


@pytest.mark.slow
def test_two_workers_drain_ten_jobs_while_one_is_killed_mid_job(store_url):
    long = tiny(seed=100, steps=600)  # long enough to be killed in the middle (a few seconds)
    configs = [long] + [tiny(seed=seed) for seed in range(9)]
    with open_store(store_url) as store:
        for config in configs:
            store.enqueue(config, batch_key(config))
        workers = {name: start_worker(store_url, name) for name in ("A", "B")}
        try:
            # one worker claims the long job (alone: no other job has its shape) and reports progress on it; once
            # the other has claimed jobs too, the first is killed
            wait_until(lambda: (job := store.latest(long.hash)).state == RUNNING and job.fraction > 0, "long job runs")
            killed = store.latest(long.hash).worker
            (survivor,) = set(workers) - {killed}
            wait_until(lambda: any(job.worker == survivor for job in store.queue(finished=20)), "both work")
            assert store.latest(long.hash).state == RUNNING and store.latest(long.hash).worker == killed
            workers[killed].send_signal(signal.SIGKILL)
            killed_log = workers[killed].communicate(timeout=60)[1]
            wait_until(lambda: all(store.latest(c.hash).state == DONE for c in configs), "every job done")
            workers[survivor].send_signal(signal.SIGTERM)  # stopped as Docker stops it: a clean exit
            survivor_log = workers[survivor].communicate(timeout=60)[1]
        finally:
            for process in workers.values():
                if process.poll() is None:
                    process.kill()
        assert workers[killed].returncode == -signal.SIGKILL
        assert workers[survivor].returncode == 0, survivor_log[-2000:]
        rows = [store.latest(c.hash) for c in configs]
        assert store.count() == 10 and all(store.get(c.hash) is not None for c in configs)
        # the survivor took the dead worker's job once its lease ran out
        assert rows[0].worker == survivor and rows[0].attempts == 2
        assert all(row.attempts == 1 for row in rows[1:])
        # every job stored exactly once, by one worker: none lost, none trained to the end twice
        counts = collections.Counter(stored_hashes(killed_log) + stored_hashes(survivor_log))
        assert counts == {c.hash: 1 for c in configs}, (killed_log[-2000:], survivor_log[-2000:])
        assert " lost job " not in survivor_log
        assert f"stopped; {len(stored_hashes(survivor_log))} run(s) stored" in survivor_log
        # the survivor left the workers' table; the killed one could not (its heartbeat only ages)
        assert [w.name for w in store.workers(within_s=1e12)] == [killed]


# --- the schema: a store of schema 1 is migrated, in place --------------------------------------------------

SCHEMA_1 = (
    "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE runs (hash TEXT PRIMARY KEY, family TEXT NOT NULL, encoding TEXT NOT NULL, seed INTEGER NOT NULL,"
    " created_at TEXT NOT NULL, device TEXT NOT NULL, code_version TEXT NOT NULL, total_seconds DOUBLE PRECISION NOT"
    " NULL, config TEXT NOT NULL, record TEXT NOT NULL)",
    "CREATE INDEX runs_family ON runs (family)",
    "CREATE TABLE results (hash TEXT NOT NULL REFERENCES runs (hash) ON DELETE CASCADE, method TEXT NOT NULL,"
    " length INTEGER NOT NULL, fine_tuned INTEGER NOT NULL, accuracy DOUBLE PRECISION NOT NULL, loss DOUBLE"
    " PRECISION NOT NULL, PRIMARY KEY (hash, method, length, fine_tuned))",
    "CREATE TABLE claims (hash TEXT PRIMARY KEY, owner TEXT NOT NULL, heartbeat DOUBLE PRECISION NOT NULL)",
    "INSERT INTO store_meta VALUES ('schema_version', '1')",
)


def test_a_schema_1_store_is_migrated_with_its_runs(tmp_path):
    path = tmp_path / "runs.sqlite3"
    connection = sqlite3.connect(path)
    for statement in SCHEMA_1:
        connection.execute(statement)
    record = fake_record()
    connection.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (record.hash, record.family, "rope", 0, record.created_at, record.device, "abc", 2.5,
                        json.dumps(record.config.to_json()), json.dumps(record.to_json())))
    connection.commit()
    connection.close()
    with open_store(str(path)) as store:  # schema 1 → 2 → 3, in one transaction
        assert store.get(record.hash) == record and store.count() == 1 and store.weights(record.hash) is None
        assert store._fetchall("SELECT value FROM store_meta")[0][0] == str(STORE_SCHEMA_VERSION) == "3"
        assert store._tables() == {"store_meta", "runs", "results", "queue", "workers", "weights"}
        assert store.enqueue(tiny(), batch_key(tiny())).state == QUEUED


def test_a_schema_1_postgres_store_is_migrated_once_by_two_instances_opening_it(postgres_url):  # noqa: F811
    import psycopg

    url = _fresh_database(postgres_url, "runs_schema_1")
    with psycopg.connect(url, autocommit=True) as connection:
        for statement in SCHEMA_1:
            connection.execute(statement)
    opened = []
    threads = [threading.Thread(target=lambda: opened.append(open_store(url))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 2
    for store in opened:
        assert store._fetchall("SELECT value FROM store_meta")[0][0] == str(STORE_SCHEMA_VERSION)
        store.close()


def test_a_schema_2_store_gains_the_weights_table(tmp_path):
    path = tmp_path / "runs.sqlite3"
    connection = sqlite3.connect(path)
    for statement in SCHEMA_1[:-2]:
        connection.execute(statement)
    for statement in store_module._QUEUE_TABLES:
        connection.execute(statement.format(id="INTEGER PRIMARY KEY"))
    connection.execute("INSERT INTO store_meta VALUES ('schema_version', '2')")
    connection.commit()
    connection.close()
    with open_store(str(path)) as store:
        assert "weights" in store._tables() and store.put(fake_record(), b"weights")
        assert store.weights(fake_record().hash) == b"weights"


def test_queued_job_rows_read_back_whole():
    with open_store(":memory:") as store:
        job = store.enqueue(tiny(), batch_key(tiny()))
        assert isinstance(job, QueuedJob) and ExperimentConfig.from_json(job.config) == tiny()
        assert job.status is None and job.worker is None and job.requested_at == pytest.approx(store.now(), abs=5)


# --- the app beside workers: it queues for them while one is connected, trains itself otherwise ---------------


@pytest.fixture
def service(tmp_path, monkeypatch):
    from lessons import training as lesson
    from pe_core.jobs import JobLimiter
    from pe_core.train.service import TrainingService, use_service

    monkeypatch.setenv("PE_TRAIN_THREADS", "1")
    service = TrainingService(open_store(str(tmp_path / "runs.sqlite3")), JobLimiter(1, 8), device="cpu")
    previous = use_service(service)
    lesson.LESSON.clear_caches()
    yield service
    use_service(previous)
    lesson.LESSON.clear_caches()
    service.store.close()


def test_with_a_worker_connected_the_app_queues_for_it_and_trains_nothing_itself(service):
    events = []
    worker = Worker(open_store(service.store.location), name="gpu-box", device="cpu", lease_s=30, batch=8,
                    on_event=events.append)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_until(service.workers, "the worker registers")
        job = service.request(tiny())
        assert service.request(tiny()) is job and job.requests == 2  # identical requests share one job
        assert job.wait(240) and job.error is None
        assert job.result == service.stored(tiny()) and service.trained == 0 and service.limiter.load() == (0, 0)
        assert service.store.latest(tiny().hash).worker == "gpu-box"
        # the seed table's missing runs: queued together, claimed by the worker as one batch
        missing = [tiny(seed=seed) for seed in (1, 2, 3)]
        everything = service.request_all(missing, "seed table")
        assert everything.wait(240) and everything.result == 3 and everything.error is None
        claimed = [e.job.hash for e in events if e.kind == "claimed"]
        assert claimed == [tiny().hash] + [c.hash for c in missing]
        assert all(service.store.latest(c.hash).attempts == 1 for c in missing)
    finally:
        worker.stop()
        thread.join()
    assert service.workers() == []
    local = service.request(tiny(seed=4))  # no worker any more: the app's own trainer, on its limiter
    assert local.wait(240) and local.error is None and service.trained == 1
    assert service.store.latest(tiny(seed=4).hash).worker == service.owner


def test_a_run_the_app_trains_shows_in_another_instances_queue_and_stopping_cancels_it(service):
    from pe_core.jobs import JobLimiter
    from pe_core.train.service import TrainingService

    other = TrainingService(open_store(service.store.location), JobLimiter(1, 8), device="cpu")
    assert service.request(tiny()).wait(240)  # a stored run of the same shape: what the queue's times start from
    long = tiny(steps=100_000)
    job = service.request(long)
    wait_until(lambda: (row := service.store.latest(long.hash)) is not None and row.fraction > 0, "progress saved")
    (entry,) = other.queue_view()  # another app instance reads the same row
    assert entry.job.state == RUNNING and entry.job.worker == service.owner and entry.job.status["phase"] == "training"
    assert entry.job.device.startswith("CPU (") and entry.remaining_s is not None and entry.remaining_s > 0
    # the other instance asks for the same run: it follows this one's training instead of starting its own
    follower = other.request(long)
    wait_until(lambda: getattr(follower, "store_job", None) is not None, "the other instance follows")
    assert other.trained == 0 and follower.store_job.worker == service.owner
    follower.withdraw()
    job.withdraw()
    assert job.wait(60) and follower.wait(60)
    assert service.store.latest(long.hash).state == CANCELLED and service.paused(long) is not None
    assert other.queue_view() == []
    other.store.close()


def test_the_queue_says_when_each_job_should_start_and_end():
    from pe_core.train.service import queue_view

    def row(job_id, state, fraction=0.0, started_at=None):
        return QueuedJob(job_id, f"h{job_id}", {"steps": 100}, "s", state, 1, 0.0, None, None, None, 0, started_at,
                         None, fraction, None, None)

    jobs = [row(1, RUNNING, 0.25, started_at=90.0), row(2, QUEUED), row(3, QUEUED)]
    one = queue_view(jobs, now=100.0, trainers=1, estimate=lambda config: 20.0)
    # 10 s for a quarter: 30 s left; then each queued job waits for the one before it
    assert [(e.job.id, e.position, e.remaining_s, e.wait_s) for e in one] == [(1, 0, 30.0, 0.0), (2, 1, 20.0, 30.0),
                                                                             (3, 2, 20.0, 50.0)]
    two = queue_view(jobs, now=100.0, trainers=2, estimate=lambda config: 20.0)
    assert [e.wait_s for e in two] == [0.0, 0.0, 20.0]  # a second trainer is free at once
    unknown = queue_view(jobs, now=100.0, trainers=1, estimate=lambda config: None)
    assert [e.wait_s for e in unknown] == [0.0, 30.0, None]  # after a job of unknown length, no promise
    early = queue_view([row(1, RUNNING, 0.01, started_at=99.0)], now=100.0, trainers=1, estimate=lambda c: 20.0)
    assert early[0].remaining_s == 19.0  # under 3 % done: the estimate, less the time spent


def test_the_training_page_follows_a_workers_progress_and_lists_the_queue(service):
    from lessons import training as lesson

    service.store.register_worker("gpu-box", "CUDA (NVIDIA H200)")
    stop = threading.Event()

    def heartbeat() -> None:  # the worker's, however slowly the pages run here
        while not stop.wait(1.0):
            service.store.worker_alive("gpu-box")

    beating = threading.Thread(target=heartbeat)
    beating.start()
    try:
        follow_a_workers_job(service, lesson)
    finally:
        stop.set()
        beating.join()


def follow_a_workers_job(service, lesson) -> None:
    from pe_core.train.experiment import run_experiment
    from tests.conftest import open_expander, run_page
    from tests.test_page_training import PAGE, TINY

    config = lesson.LESSON.config(lesson.Settings.from_mapping(TINY))
    at = run_page(PAGE, TINY)
    # beside the train button: who trains (the worker), not this server's own slots
    assert any(c.value.startswith("1 training worker drains the store's queue") for c in at.caption)
    next(b for b in at.button if b.label == "Train this experiment").click().run()
    job = at.session_state["tt_job"]
    wait_until(lambda: getattr(job, "store_job", None) is not None, "the page's job follows the queue")
    at.run()
    (bar,) = at.get("progress")
    assert bar.proto.text.startswith("Queued on the run store for a training worker: position 1.")
    open_expander(at, "queue")
    assert any("1 training worker drains the store's queue" in c.value and "gpu-box (CUDA (NVIDIA H200), 0)" in c.value
               for c in at.caption)
    (frame,) = [d.value for d in at.dataframe]
    assert list(frame["state"]) == ["waiting"] and list(frame["in line"]) == [1]
    # the worker (here, by hand) claims it and reports a step: every page shows it
    (claimed,) = service.store.claim("gpu-box", "CUDA (NVIDIA H200)", 60)
    service.store.renew("gpu-box", 60, {claimed.id: (0.4, {"phase": "training", "encoding": "rope", "method": None,
                                                            "step": 8, "total": 20})})
    wait_until(lambda: job.store_job.state == RUNNING, "the page's job sees the claim")
    at.run()
    (bar,) = at.get("progress")
    assert "RoPE: training, step 8 of 20 · trained by gpu-box on CUDA (NVIDIA H200)" in bar.proto.text
    assert list(at.dataframe[0].value["state"]) == ["training"] and list(at.dataframe[0].value["done"]) == ["40%"]
    assert service.store.complete(claimed.id, "gpu-box", run_experiment(config, device="cpu"))
    assert job.wait(60) and job.error is None
    at.run()
    assert not at.exception and any("This experiment is in the run store" in s.value for s in at.success)
    assert service.trained == 0
