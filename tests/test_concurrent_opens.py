"""Students who open a fresh server at the same moment each get their own page, the same page a lone student gets.

A class opens the link together. While the pages sat in a folder named ``pages/``, a fresh server's first runs
started as Streamlit's old-style pages, before app.py's st.navigation; a run that missed the switch showed the page
without app.py's shell until the student's first move, and the load test counted its figures as ones no lone session
drew. The pages now live in ``app_pages/``, so every run goes through app.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmarks.protocol import StreamlitClient
from deploy.serve import free_port, healthy

ROOT = Path(__file__).resolve().parent.parent
PAGE, KEY = "frequencies", "d"
HEAD_DIMS = ("8", "16", "32", "64", "96", "128", "256")  # every one draws different figures


@pytest.fixture
def fresh_server(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "server.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PE_EXPLORER_WARMUP="0"),
        )
        try:
            started = time.monotonic()
            while not healthy(url):
                assert server.poll() is None, (tmp_path / "server.log").read_text()
                assert time.monotonic() - started < 120, "the server did not start"
                time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=60)


def _open(url: str, value: str):
    client = StreamlitClient(url, PAGE, f"{KEY}={value}", timeout=120)
    try:
        return client.open()
    finally:
        client.close()


@pytest.mark.slow
def test_students_opening_a_fresh_server_together_each_see_a_lone_students_page(fresh_server):
    together: dict[str, object] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(len(HEAD_DIMS))

    def student(value: str) -> None:
        try:
            start.wait()  # every first run starts at once
            together[value] = _open(fresh_server, value)
        except BaseException as error:  # noqa: BLE001 - reported below, with the value
            failures.append(error)

    threads = [threading.Thread(target=student, args=(value,)) for value in HEAD_DIMS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not failures, failures

    alone = {value: _open(fresh_server, value) for value in HEAD_DIMS}  # one at a time, on the warm server
    assert [run.problems for run in alone.values()] == [[]] * len(HEAD_DIMS)
    assert len({run.signature for run in alone.values()}) == len(HEAD_DIMS)  # a mix-up would show
    for value in HEAD_DIMS:
        opened, lone = together[value], alone[value]
        assert opened.problems == []
        assert len(opened.figures) == len(lone.figures), f"d={value}: the page opened without app.py's shell"
        assert opened.signature == lone.signature, f"d={value}: figures no lone session drew"
        assert [s.label for s in opened.sliders] == [s.label for s in lone.sliders]
