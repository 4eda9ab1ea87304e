"""The harness the tests and benchmarks share: a server whose port is taken meanwhile starts on another; the tests
train into a store of their own."""

from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path

from benchmarks import harness


def test_a_server_whose_port_was_taken_starts_on_another(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy])
        real_free_port = harness.free_port
        monkeypatch.setattr(harness, "free_port", lambda: next(ports, None) or real_free_port())
        with harness.streamlit_server(cwd=harness.ROOT / "benchmarks", script="floor_app.py") as (url, _):
            assert not url.endswith(f":{busy}")
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as response:
                assert response.read() == b"ok"


def test_the_tests_train_into_a_store_of_their_own():
    from pe_core.train.store import STORE_ENV
    from tests.conftest import RUN_STORE_ENV

    assert RUN_STORE_ENV == STORE_ENV
    store = Path(os.environ[STORE_ENV])
    assert harness.ROOT not in store.parents and store.name == "runs.sqlite3"
