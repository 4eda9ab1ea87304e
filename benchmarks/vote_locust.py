"""Locust users that are phones in a voting room, over Streamlit's websocket (``python -m benchmarks.loadtest --votes``).

Each phone opens ``/vote?room=CODE&me=<its own id>``, then again and again (a think time apart) reruns the page as
its fragment's polling does; when the page shows a question it has not voted on, it taps a choice (the button's
trigger, as a browser sends it), and now and then changes its mind. A vote counts as cast when the rerun after the
tap shows "Your vote" with the phone's choice; a refusal (the presenter moved on between the poll and the tap) is
counted apart. Everything is written to PE_LOAD_OUT as JSON for the runner, which compares it with the store.
Settings: PE_VOTE_ROOM (the room's code), PE_LOAD_THINK ("1,3" s), PE_LOAD_TIMEOUT (60 s), PE_LOAD_OUT.
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
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.protocol import StreamlitClient

ROOM = os.environ.get("PE_VOTE_ROOM", "")
THINK = tuple(float(x) for x in os.environ.get("PE_LOAD_THINK", "1,3").split(","))
TIMEOUT = float(os.environ.get("PE_LOAD_TIMEOUT", "60"))
STICKY_COOKIE = "PE_SERVER"
CHANGE_MIND = 0.3  # the share of polls, after a vote, on which a phone changes it
OPEN, POLL, VOTE = "open vote page", "poll (rerun)", "vote (tap + rerun)"

_numbers = itertools.count()
_results: dict = {"open_ms": [], "rerun_ms": [], "vote_ms": [], "casts": [], "refusals": [], "errors": [],
                  "error_count": 0, "backends": Counter()}


@events.quitting.add_listener
def _on_quitting(environment, **_kwargs) -> None:
    out = os.environ.get("PE_LOAD_OUT")
    if out:
        Path(out).write_text(json.dumps(dict(_results, backends=dict(_results["backends"]))))


class PhoneClient(StreamlitClient):
    """The protocol client, also reading the vote buttons and the boxes a run shows."""

    def _handle(self, msg, run) -> bool:
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            kind = element.WhichOneof("type")
            if kind == "button":
                run.__dict__.setdefault("buttons", {})[element.button.id] = element.button.label
            elif kind == "alert":
                run.__dict__.setdefault("alerts", []).append((element.alert.format, element.alert.body))
        return super()._handle(msg, run)

    def tap(self, widget_id: str):
        """A button's click: its trigger for one run (a browser sends it once, then forgets it)."""
        self.widgets[widget_id] = WidgetState(id=widget_id, trigger_value=True)
        try:
            return self.rerun()
        finally:
            self.widgets.pop(widget_id, None)


def problems_of(run) -> list[str]:
    """The run's problems, less the reveal's verdict for a wrong vote (an error box by design: "Not quite")."""
    return [p for p in run.problems if not p.startswith("error box on the page: Not quite")]


def vote_buttons(run) -> dict[int, tuple[str, str]]:
    """choice index -> (widget id, label) of the buttons ``vote_<step>_<choice>``; their step is the same."""
    found = {}
    for widget_id, label in getattr(run, "buttons", {}).items():
        tail = widget_id.rsplit("vote_", 1)
        if len(tail) == 2 and tail[1].count("_") == 1:
            step, choice = tail[1].split("_")
            if step.isdigit() and choice.isdigit():
                found[int(choice)] = (widget_id, label, int(step))
    return found


class Phone(HttpUser):
    wait_time = between(*THINK)

    def on_start(self) -> None:
        self.number = next(_numbers)
        self.voter = f"loadphone-{self.number:05d}"
        self.rng = random.Random(self.number)
        self.client_st: PhoneClient | None = None
        self.voted: dict[int, int] = {}  # step -> the choice this phone's last accepted vote holds
        self.last_run = None

    def on_stop(self) -> None:
        if self.client_st is not None:
            self.client_st.close()

    def _fire(self, name: str, seconds: float, problems: list[str]) -> None:
        self.environment.events.request.fire(request_type="WS", name=name, response_time=1000 * seconds,
                                             response_length=0, context={},
                                             exception=AssertionError("; ".join(problems)) if problems else None)
        for problem in problems:
            _results["error_count"] += 1
            if len(_results["errors"]) < 50:
                _results["errors"].append(f"phone {self.number}, {name}: {problem}")

    @task
    def poll_and_vote(self) -> None:
        started = time.perf_counter()
        try:
            if self.client_st is None:
                self.client_st = PhoneClient(self.host, "vote", f"room={ROOM}&me={self.voter}", http=self.client,
                                             timeout=TIMEOUT, request_names=True)
                run = self.client_st.open()
                _results["open_ms"].append(1000 * (time.perf_counter() - started))
                _results["backends"][self.client_st.cookie(STICKY_COOKIE) or "single server"] += 1
                self._fire(OPEN, time.perf_counter() - started, problems_of(run))
            else:
                run = self.client_st.rerun()
                _results["rerun_ms"].append(1000 * run.seconds)
                self._fire(POLL, run.seconds, problems_of(run))
            buttons = vote_buttons(run)
            if not buttons:
                return
            step = next(iter(buttons.values()))[2]
            if step in self.voted and self.rng.random() > CHANGE_MIND:
                return
            choice = self.rng.randrange(len(buttons))
            tapped = time.perf_counter()
            after = self.client_st.tap(buttons[choice][0])
            confirmed = time.time()
            _results["vote_ms"].append(1000 * after.seconds)
            alerts = getattr(after, "alerts", [])
            label = buttons[choice][1]
            if any("Your vote" in body and label in body for _, body in alerts):
                first = step not in self.voted
                self.voted[step] = choice
                _results["casts"].append({"voter": self.voter, "step": step, "choice": choice, "at": confirmed,
                                          "first": first})
                self._fire(VOTE, time.perf_counter() - tapped, problems_of(after))
            else:
                _results["refusals"].append({"voter": self.voter, "step": step, "alerts": [b for _, b in alerts][:2]})
                self._fire(VOTE, time.perf_counter() - tapped, problems_of(after))
        except Exception as err:  # any failure is a measured error, and the phone reloads the page
            self._fire(POLL, time.perf_counter() - started, [f"{type(err).__name__}: {err}"])
            if self.client_st is not None:
                self.client_st.close()
            self.client_st = None
