"""Locust users that are students: open a page, then move its first slider, over Streamlit's websocket.

Run through the runner (it starts the servers and writes the results):

    python -m benchmarks.loadtest --users 30 --seconds 60 [--processes 2]

or by hand against a running server, with Locust's web UI or headless:

    locust -f benchmarks/locustfile.py --host http://127.0.0.1:8501 --headless -u 30 -r 10 -t 60s

Each student opens ``/<page>?<key>=<its own value>`` (a different start value per student), learns
the page's first slider from the deltas, then again and again moves it to a value it picks at
random and waits for the rerun to finish (think time between moves). Every run is checked:

- no exception, error box or compile error on the page;
- the slider value the server echoes, when it echoes one, is the student's own;
- the figures are exactly those a lone session drew for the student's own value (a reference
  recorded before the load; every value draws different figures, so a session shown another
  session's state would fail this), and the session id never changes.

Anything else is an error. Settings come from the environment: PE_LOAD_PAGE (frequencies),
PE_LOAD_THINK ("1,3" seconds), PE_LOAD_ASSETS (1: also fetch the scripts index.html names),
PE_LOAD_TIMEOUT (60 s per run), PE_LOAD_REFERENCE (a reference JSON; recorded at start if
absent) and PE_LOAD_OUT (where to write the raw results as JSON).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from collections import Counter
from pathlib import Path

from locust import HttpUser, between, events, task

from benchmarks.protocol import StreamlitClient, check_run, record_reference

PAGE = os.environ.get("PE_LOAD_PAGE", "frequencies")
THINK = tuple(float(x) for x in os.environ.get("PE_LOAD_THINK", "1,3").split(","))
ASSETS = os.environ.get("PE_LOAD_ASSETS", "1") == "1"
TIMEOUT = float(os.environ.get("PE_LOAD_TIMEOUT", "60"))
STICKY_COOKIE = "PE_SERVER"
MAX_ERRORS_KEPT = 50
MAX_MISMATCHES_KEPT = 5  # runs kept whole enough to see what differed
OPEN, MOVE = "open page (HTTP + first run)", "move slider (rerun)"

_numbers = itertools.count()
_reference: dict = {}
_results: dict = {"open_ms": [], "first_run_ms": [], "rerun_ms": [], "errors": [], "error_count": 0, "checks": 0,
                  "echo_checks": 0, "mismatches": [], "sessions": {}, "backends": Counter(), "users_started": 0}


def _load_reference(host: str) -> dict:
    if not _reference:
        path = os.environ.get("PE_LOAD_REFERENCE")
        if path:
            _reference.update(json.loads(Path(path).read_text()))
        else:
            _reference.update(record_reference(host, PAGE, timeout=TIMEOUT))
    return _reference


@events.test_start.add_listener
def _on_test_start(environment, **_kwargs) -> None:
    _load_reference(environment.host)


@events.quitting.add_listener
def _on_quitting(environment, **_kwargs) -> None:
    out = os.environ.get("PE_LOAD_OUT")
    if not out:
        return
    sessions = _results["sessions"]
    owners = Counter(sessions.values())
    report = dict(_results, backends=dict(_results["backends"]), reference=_reference,
                  distinct_sessions=len(owners), sessions_shared=sum(1 for n in owners.values() if n > 1))
    report.pop("sessions")
    Path(out).write_text(json.dumps(report))


def mismatch(run, reference: dict, value: str) -> dict:
    """What a run that failed its check showed, next to what a lone session drew at ``value``: each figure's
    digest, and the start of each figure that is not the lone session's."""
    expected = reference.get("figures", {}).get(value, [])
    return {"value": value, "problems": run.problems, "expected": expected, "shown": run.figure_digests,
            "sliders": [slider.label for slider in run.sliders],
            "unexpected_figures": [spec[:300] for spec, digest in zip(run.figures, run.figure_digests, strict=True)
                                   if digest not in expected]}


def _error(message: str) -> None:
    _results["error_count"] += 1
    if len(_results["errors"]) < MAX_ERRORS_KEPT:
        _results["errors"].append(message)


class Student(HttpUser):
    wait_time = between(*THINK)

    def on_start(self) -> None:
        self.number = next(_numbers)
        self.rng = random.Random(self.number)
        self.client_st: StreamlitClient | None = None
        _results["users_started"] += 1

    def on_stop(self) -> None:
        if self.client_st is not None:
            self.client_st.close()

    def _fire(self, name: str, run, started: float, problems: list[str]) -> None:
        elapsed_ms = 1000 * (run.seconds if run is not None else time.perf_counter() - started)
        self.environment.events.request.fire(
            request_type="WS", name=name, response_time=elapsed_ms,
            response_length=run.bytes if run is not None else 0,
            exception=AssertionError("; ".join(problems)) if problems else None, context={},
        )
        for problem in problems:
            _error(f"student {self.number}, {name}: {problem}")

    def _check(self, run, value: str) -> list[str]:
        """Everything this run showed must be this student's own state."""
        problems, echoed = check_run(run, _reference, value, self.session_id)
        if problems and len(_results["mismatches"]) < MAX_MISMATCHES_KEPT:
            _results["mismatches"].append(mismatch(run, _reference, value))
        _results["checks"] += 1
        _results["echo_checks"] += int(echoed)
        return problems

    def _open(self) -> None:
        reference = _load_reference(self.host)
        key, values = reference["slider"]["key"], reference["values"]
        self.value = values[self.number % len(values)]
        self.client_st = StreamlitClient(self.host, PAGE, f"{key}={self.value}", http=self.client,
                                         timeout=TIMEOUT, assets=ASSETS, request_names=True)
        started = time.perf_counter()
        run = self.client_st.open()
        _results["first_run_ms"].append(1000 * run.seconds)
        self.session_id = run.session_id
        owner = _results["sessions"].setdefault(run.session_id, self.number)
        problems = [] if owner == self.number else [f"session {run.session_id} belongs to student {owner}"]
        self.slider = next((s for s in run.sliders if s.id == reference["slider"]["id"]), None)
        if self.slider is None:
            problems.append("the page showed no slider " + reference["slider"]["id"])
        _results["backends"][self.client_st.cookie(STICKY_COOKIE) or "single server"] += 1
        run.seconds = time.perf_counter() - started  # opening counts from the first HTTP request
        _results["open_ms"].append(1000 * run.seconds)
        self._fire(OPEN, run, started, problems + self._check(run, self.value))

    @task
    def move_slider(self) -> None:
        started = time.perf_counter()
        name = OPEN if self.client_st is None else MOVE
        try:
            if self.client_st is None:
                self._open()
                return
            choices = [v for v in _reference["values"] if v != self.value]
            self.value = self.rng.choice(choices)
            run = self.client_st.move(self.slider, self.slider.parse(self.value))
            _results["rerun_ms"].append(1000 * run.seconds)
            self._fire(MOVE, run, started, self._check(run, self.value))
        except Exception as err:  # any failure is a measured error, and the student reloads the page
            self._fire(name, None, started, [f"{type(err).__name__}: {err}"])
            if self.client_st is not None:
                self.client_st.close()
            self.client_st = None  # the next task opens the page again, as a reloading student would
