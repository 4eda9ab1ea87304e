"""A class of simulated students on the real server: Locust users speaking Streamlit's websocket protocol.

    python -m benchmarks.loadtest --users 30 --seconds 60                  # one server
    python -m benchmarks.loadtest --users 100 --seconds 60 --processes 2   # two behind HAProxy
    python -m benchmarks.loadtest --users 30 --url http://127.0.0.1:8501   # a server already running
    python -m benchmarks.loadtest --votes --users 100 --processes 2 --seconds 60   # a class voting from phones

Starts the app the way a teacher does (``python -m deploy.serve`` on a free localhost port, so
with --processes > 1 the requests go through HAProxy's sticky sessions), records what a lone
session sees at every value of the page's first slider, then runs Locust headless: --users
students open the page (--spawn-rate per second) and move the slider with a --think time
between moves until --seconds have passed. Every run is checked for errors and for isolation
(benchmarks/locustfile.py says how). Prints p50/p95 rerun latency, errors, reruns done, the
isolation verdict and the load average, and writes them to benchmarks/results/. Exits 1 on any
error. Traffic goes to 127.0.0.1 only; the run stops by itself.

--votes: the students are phones in a voting room instead (benchmarks/vote_locust.py). The servers use a run
store of their own (a SQLite file in the run's folder, or --store); the runner opens a room in it and plays the
presenter: a new question every --step-seconds, revealed a second before the next. Phones poll the page (as its
fragment does), vote on each question, sometimes change their vote. While they do, the runner reads the room's
count of votes every 50 ms, the query the presenter's count runs. It adds to the JSON: votes_cast (votes the
phones saw taken), votes_counted (votes in the store), votes_lost (cast, not in the store, or another choice),
votes_doubled (in the store with no vote cast for them, or one phone counted twice on a step), and tally_p95_ms:
from a phone's vote being shown to it until the count includes it, plus the presenter's refresh period
(ui/vote.py's COUNT_REFRESH_S), the latest the presenter's screen can show it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.protocol import record_reference
from deploy.serve import free_port, healthy

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
VOTE_LOCUSTFILE = Path(__file__).with_name("vote_locust.py")
RESULTS = ROOT / "benchmarks" / "results"


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (exact, unlike Locust's rounded buckets)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class Servers:
    """``python -m deploy.serve`` in the background, on a free localhost port."""

    def __init__(self, processes: int, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._log = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "deploy.serve", "--address", "127.0.0.1", "--port", str(self.port),
             "--processes", str(processes)],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def wait(self, timeout: float = 180.0) -> float:
        started = time.monotonic()
        while not healthy(self.url):
            if self.process.poll() is not None:
                raise RuntimeError(f"deploy.serve exited with {self.process.returncode}:\n{self.log.read_text()}")
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{self.url} not healthy after {timeout:.0f} s")
            time.sleep(0.2)
        return time.monotonic() - started

    def usage(self) -> dict[str, dict]:
        """CPU seconds and resident memory of each child of deploy.serve (psutil comes with Locust)."""
        try:
            import psutil

            children = psutil.Process(self.process.pid).children()
        except (ImportError, OSError):
            return {}
        used: dict[str, dict] = {}
        for child in children:
            try:
                times = child.cpu_times()
                command = child.cmdline()
                port = command[command.index("--server.port") + 1] if "--server.port" in command else "?"
                name = "haproxy" if "haproxy" in child.name() else f"streamlit :{port}"
                used[name] = {"cpu_s": round(times.user + times.system, 1),
                              "rss_mb": round(child.memory_info().rss / 2**20)}
            except OSError:
                continue
        return used

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def run_locust(url: str, args, reference_path: Path, raw_path: Path, log_path: Path) -> float:
    """Run Locust headless; returns the CPU seconds the load generator used."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PE_LOAD_PAGE=args.page, PE_LOAD_THINK=f"{args.think[0]},{args.think[1]}",
               PE_LOAD_ASSETS="1" if args.assets else "0", PE_LOAD_TIMEOUT=str(args.timeout),
               PE_LOAD_REFERENCE=str(reference_path), PE_LOAD_OUT=str(raw_path))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log_path, "w") as log:
        subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", url,
             "-u", str(args.users), "-r", str(args.spawn_rate), "-t", f"{args.seconds}s",
             "--stop-timeout", str(int(args.timeout)), "--only-summary", "--exit-code-on-error", "0"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=True,
            timeout=args.seconds + args.timeout + 120,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summarise(raw: dict, args, *, processes: int | None, startup_s: float | None, load_before, load_after,
              client_cpu_s: float, server_usage: dict) -> dict:
    reference = raw["reference"]
    reruns = raw["rerun_ms"]
    opens = raw["open_ms"]
    errors = raw["error_count"]
    every_run_checked = raw["checks"] == len(reruns) + len(opens)
    values_told_apart = reference["distinct_signatures"] == len(reference["values"])
    isolated = errors == 0 and every_run_checked and raw["sessions_shared"] == 0 and values_told_apart
    return {
        "page": args.page,
        "users": args.users,
        "seconds": args.seconds,
        "processes": processes,
        "think_s": list(args.think),
        "spawn_rate": args.spawn_rate,
        "static_assets": args.assets,
        "reruns": len(reruns),
        "reruns_per_s": round(len(reruns) / args.seconds, 2),
        "rerun_p50_ms": _ms(percentile(reruns, 0.50)),
        "rerun_p95_ms": _ms(percentile(reruns, 0.95)),
        "rerun_max_ms": _ms(max(reruns, default=None)),
        "opens": len(opens),
        "open_p50_ms": _ms(percentile(opens, 0.50)),
        "open_p95_ms": _ms(percentile(opens, 0.95)),
        "first_run_p95_ms": _ms(percentile(raw["first_run_ms"], 0.95)),
        "errors": errors,
        "error_samples": raw["errors"][:10],
        "mismatched_runs": raw.get("mismatches", []),
        "isolation": {
            "verdict": "isolated" if isolated else "NOT SHOWN",
            "runs_checked": raw["checks"],
            "slider_echo_checks": raw["echo_checks"],
            "distinct_sessions": raw["distinct_sessions"],
            "sessions_shared": raw["sessions_shared"],
            "values": len(reference["values"]),
            "distinct_figure_sets": reference["distinct_signatures"],
            "slider": reference["slider"]["label"],
        },
        "sessions_per_server": raw["backends"],
        "servers": server_usage,
        "load_generator_cpu_s": round(client_cpu_s, 1),
        "server_startup_s": None if startup_s is None else round(startup_s, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def table_row(s: dict) -> str:
    servers = "1 server" if s["processes"] in (None, 1) else f"{s['processes']} replicas + HAProxy"
    return (f"| {s['users']} | {servers} | {s['reruns']} | {s['rerun_p50_ms']:.0f} | {s['rerun_p95_ms']:.0f} | "
            f"{s['open_p95_ms']:.0f} | {s['errors']} | {s['isolation']['verdict']} | "
            f"{s['load_average_before'][0]:.2f} → {s['load_average_after'][0]:.2f} |")


TABLE_HEADER = ("| students | servers | reruns | rerun p50 ms | rerun p95 ms | open p95 ms | errors | isolation | "
                "load avg (1 min) before → after |\n|---|---|---|---|---|---|---|---|---|")


def _presenter(store, code: str, step_seconds: float, stop, polls: list, texts: dict) -> None:
    """Play the presenter (a question every ``step_seconds``, revealed one second before the next) and read the
    room's count every 50 ms until ``stop`` is set."""
    step, shown_at, revealed = 0, time.time(), False
    store.show_step(code, step, choices=3, answer=1, texts=texts)
    while not stop.is_set():
        now = time.time()
        if not revealed and now - shown_at >= step_seconds - 1:
            store.reveal(code, step)
            revealed = True
        if now - shown_at >= step_seconds:
            step, shown_at, revealed = step + 1, now, False
            store.show_step(code, step, choices=3, answer=1, texts=texts)
        polls.append((time.time(), step, sum(store.tally(code, step, 3))))
        stop.wait(0.05)


def vote_summary(raw: dict, store, code: str, polls: list, refresh_s: float) -> dict:
    """Compare what the phones saw taken with what the store holds, and time the count."""
    cast = {(c["voter"], c["step"]): c["choice"] for c in raw["casts"]}  # the last accepted choice
    rows = {}
    doubled = 0
    for line in store.export_csv(code).splitlines()[1:]:
        _room, step, voter, choice, *_rest = line.split(",")
        key = (voter, int(step) - 1)
        doubled += key in rows
        rows[key] = int(choice) - 1
    unseen = {(r["voter"], r["step"]) for r in raw["refusals"]}  # taps whose outcome the phone did not see
    lost = sum(1 for key, choice in cast.items() if rows.get(key) != choice)
    doubled += sum(1 for key in rows if key not in cast and key not in unseen)
    tallies = sum(sum(store.tally(code, step, 3)) for step in {step for _, step in rows})
    doubled += max(0, tallies - len(rows))
    latencies = []
    for step in sorted({c["step"] for c in raw["casts"]}):
        firsts = sorted(c["at"] for c in raw["casts"] if c["step"] == step and c["first"])
        seen = [(t, n) for t, s, n in polls if s == step]
        for rank, at in enumerate(firsts, start=1):
            when = next((t for t, n in seen if n >= rank), None)
            if when is not None:
                latencies.append(max(0.0, when - at) * 1000 + refresh_s * 1000)
    return {"room": code, "votes_cast": len(raw["casts"]), "votes_cast_distinct": len(cast),
            "votes_counted": len(rows), "votes_lost": lost, "votes_doubled": doubled,
            "votes_refused_or_unseen": len(raw["refusals"]), "tally_p50_ms": _ms(percentile(latencies, 0.5)),
            "tally_p95_ms": _ms(percentile(latencies, 0.95)), "tally_samples": len(latencies),
            "tally_refresh_ms": refresh_s * 1000, "steps_voted": len({s for _, s in cast})}


def run_votes(args, out: Path) -> int:
    """``--votes``: phones in a voting room, against servers on a run store of their own."""
    import threading

    from pe_core.votes import open_votes
    from ui.vote import COUNT_REFRESH_S

    work = Path(tempfile.mkdtemp(prefix="pe-loadtest-votes-"))
    location = args.store or str(work / "runs.sqlite3")
    os.environ["PE_RUN_STORE"] = location  # the servers' store (they inherit the environment)
    servers = None if args.url else Servers(args.processes, work / "serve.log")
    store = open_votes(location)
    code = store.open_room()
    texts = {"en": {"title": "Load test", "question": "Which?", "choices": ["a", "b", "c"], "answer": "b"}}
    polls: list = []
    stop = threading.Event()
    try:
        startup = servers.wait() if servers else None
        url = args.url or servers.url
        presenter = threading.Thread(target=_presenter, args=(store, code, args.step_seconds, stop, polls, texts),
                                     daemon=True)
        presenter.start()
        raw_path = work / "raw.json"
        env = dict(os.environ, PYTHONPATH=str(ROOT), PE_VOTE_ROOM=code, PE_LOAD_THINK=f"{args.think[0]},{args.think[1]}",
                   PE_LOAD_TIMEOUT=str(args.timeout), PE_LOAD_OUT=str(raw_path))
        load_before = os.getloadavg()
        with open(work / "locust.txt", "w") as log:
            subprocess.run([sys.executable, "-m", "locust", "-f", str(VOTE_LOCUSTFILE), "--headless", "--host", url,
                            "-u", str(args.users), "-r", str(args.spawn_rate), "-t", f"{args.seconds}s",
                            "--stop-timeout", str(int(args.timeout)), "--only-summary", "--exit-code-on-error", "0"],
                           cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=True,
                           timeout=args.seconds + args.timeout + 120)
        load_after = os.getloadavg()
        stop.set()
        presenter.join(timeout=10)
        server_usage = servers.usage() if servers else {}
    finally:
        stop.set()
        if servers:
            servers.stop()
    raw = json.loads(raw_path.read_text())
    summary = {"scenario": "votes", "users": args.users, "seconds": args.seconds,
               "processes": None if args.url else args.processes, "think_s": list(args.think),
               "step_seconds": args.step_seconds, "store": store.backend,
               **vote_summary(raw, store, code, polls, COUNT_REFRESH_S),
               "opens": len(raw["open_ms"]), "open_p95_ms": _ms(percentile(raw["open_ms"], 0.95)),
               "reruns": len(raw["rerun_ms"]), "rerun_p50_ms": _ms(percentile(raw["rerun_ms"], 0.50)),
               "rerun_p95_ms": _ms(percentile(raw["rerun_ms"], 0.95)),
               "vote_p95_ms": _ms(percentile(raw["vote_ms"], 0.95)), "errors": raw["error_count"],
               "error_samples": raw["errors"][:10], "refusal_samples": raw["refusals"][:5],
               "sessions_per_server": raw["backends"], "servers": server_usage,
               "server_startup_s": None if startup is None else round(startup, 1),
               "load_average_before": [round(x, 2) for x in load_before],
               "load_average_after": [round(x, 2) for x in load_after], "cpus": os.cpu_count(),
               "python": platform.python_version(), "locust_log": str(work / "locust.txt")}
    store.close()
    out.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"\nwritten to {out}")
    ok = summary["errors"] == 0 and summary["votes_lost"] == 0 and summary["votes_doubled"] == 0
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=30, help="simulated students (1-200)")
    parser.add_argument("--seconds", type=int, default=60, help="length of the run, spawning included (5-600)")
    parser.add_argument("--processes", type=int, default=1, help="server processes; > 1 puts HAProxy in front")
    parser.add_argument("--page", default="frequencies", help="page url path")
    parser.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"),
                        help="seconds a student waits between moves (default 1 3)")
    parser.add_argument("--spawn-rate", type=float, default=10.0, help="students opening the page per second")
    parser.add_argument("--no-assets", dest="assets", action="store_false",
                        help="skip fetching the scripts and styles index.html names")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a run may take before it is an error")
    parser.add_argument("--url", help="test this running server instead of starting one")
    parser.add_argument("--json", type=Path, help="where to write the summary (default benchmarks/results/...)")
    parser.add_argument("--votes", action="store_true", help="phones voting in a room instead of sliders")
    parser.add_argument("--step-seconds", type=float, default=8.0, help="--votes: seconds per question (default 8)")
    parser.add_argument("--store", help="--votes: the servers' run store (default: a new SQLite file)")
    args = parser.parse_args(argv)
    if not 1 <= args.users <= 200 or not 5 <= args.seconds <= 600 or not 1 <= args.processes <= 8:
        parser.error("keep the load bounded: 1-200 users, 5-600 seconds, 1-8 processes")
    if not 0 <= args.think[0] <= args.think[1]:
        parser.error("--think MIN MAX needs 0 <= MIN <= MAX")

    if args.votes:
        name = f"loadtest-votes-{args.users}u-{'url' if args.url else str(args.processes) + 'p'}"
        out = args.json or RESULTS / f"{name}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        return run_votes(args, out)
    name = f"loadtest-{args.page}-{args.users}u-{'url' if args.url else str(args.processes) + 'p'}"
    out = args.json or RESULTS / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="pe-loadtest-"))
    servers = None if args.url else Servers(args.processes, work / "serve.log")
    try:
        startup = servers.wait() if servers else None
        url = args.url or servers.url
        reference = record_reference(url, args.page, timeout=args.timeout)
        reference_path = work / "reference.json"
        reference_path.write_text(json.dumps(reference))
        raw_path = work / "raw.json"
        load_before = os.getloadavg()
        client_cpu = run_locust(url, args, reference_path, raw_path, work / "locust.txt")
        load_after = os.getloadavg()
        server_usage = servers.usage() if servers else {}
        summary = summarise(json.loads(raw_path.read_text()), args, processes=None if args.url else args.processes,
                            startup_s=startup, load_before=load_before, load_after=load_after,
                            client_cpu_s=client_cpu, server_usage=server_usage)
    finally:
        if servers:
            servers.stop()
    summary["locust_log"] = str(work / "locust.txt")
    summary["http_retries"] = (work / "locust.txt").read_text().count("Retrying (Retry(")
    out.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    print(f"\n{TABLE_HEADER}\n{table_row(summary)}\n\nwritten to {out}")
    return 0 if summary["errors"] == 0 and summary["isolation"]["verdict"] == "isolated" else 1


if __name__ == "__main__":
    sys.exit(main())
