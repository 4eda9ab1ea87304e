"""Serve the app to a room with one command.

    python -m deploy.serve                       # one server on 0.0.0.0:8501
    python -m deploy.serve --processes 2         # two servers behind HAProxy on 0.0.0.0:8501
    python -m deploy.serve --address 127.0.0.1 --port 8600 --processes 3

One process runs ``streamlit run app.py`` bound to ``--address``/``--port``. With N > 1 it starts
N Streamlit servers on free localhost ports and HAProxy on ``--address``/``--port`` in front of
them. A Streamlit session lives in one server's memory, so HAProxy keeps each browser on one
server: its first response sets a cookie naming the server, and the browser's websocket and
every later request carry it. A cookie, unlike nginx's ``ip_hash``, keeps working when a whole
class reaches the machine through one NAT address. Ctrl-C stops the proxy, then every server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STICKY_COOKIE = "PE_SERVER"
HEALTH_PATH = "/_stcore/health"
INSTALL_HAPROXY = (
    "HAProxy is needed to run more than one server process. Install it "
    "(Debian/Ubuntu: `sudo apt install haproxy`; macOS: `brew install haproxy`), "
    "or run with --processes 1."
)


@dataclass(frozen=True)
class Backend:
    name: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def streamlit_command(address: str, port: int, script: str = "app.py") -> list[str]:
    """``streamlit run`` for serving: bound to ``address``, no file watcher, no browser, no usage stats."""
    return [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.address", address, "--server.port", str(port),
        "--server.headless", "true", "--server.fileWatcherType", "none", "--server.runOnSave", "false",
        "--browser.gatherUsageStats", "false",
    ]


def haproxy_config(address: str, port: int, backends: list[Backend]) -> str:
    """An HAProxy configuration: ``address:port`` in front of ``backends`` with cookie stickiness."""
    bind = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    servers = "\n".join(
        f"    server {b.name} {b.host}:{b.port} check cookie {b.name}" for b in backends
    )
    return f"""\
# Written by `python -m deploy.serve`; deploy/haproxy.cfg is the same set-up for docker compose.
global
    maxconn 4096
    log stdout format raw local0 info

defaults
    mode http
    log global
    # print only requests that failed (to the terminal that runs the proxy)
    option httplog
    option dontlog-normal
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    # a student's websocket stays open for the whole lesson
    timeout tunnel 4h
    timeout http-request 15s
    timeout http-keep-alive 60s

# Streamlit's scripts and styles and the app's copy of plotly.js (7 MB a browser, immutable) are served
# from here after the first student fetched them, so the Python servers run pages instead of sending files
cache static
    total-max-size 64
    max-object-size 6000000  # plotly.js is 4.8 MB
    max-age 86400

frontend classroom
    bind {bind}
    default_backend streamlit

backend streamlit
    # a new browser goes to the server with the fewest open connections (websockets included);
    # the cookie keeps it there, so its websocket and its HTTP requests reach the same session
    balance leastconn
    cookie {STICKY_COOKIE} insert indirect nocache httponly
    http-request set-var(txn.static) bool(true) if {{ path_beg /static/ /app/static/ }}
    http-request cache-use static if {{ var(txn.static) -m bool }}
    http-response cache-store static if {{ var(txn.static) -m bool }}
    option httpchk GET {HEALTH_PATH}
    http-check expect status 200
{servers}
"""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def healthy(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url + HEALTH_PATH, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def room_addresses(address: str) -> list[str]:
    """The addresses students can type: the machine's own when bound to every interface."""
    if address not in {"0.0.0.0", "::", ""}:
        return [address]
    found: list[str] = []
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ip = info[4][0]
            if not ip.startswith("127.") and ip not in found:
                found.append(ip)
    except OSError:
        pass
    return found or ["<this computer's address>"]


class Room:
    """The child processes of one ``serve`` call; ``stop()`` ends them, proxy first."""

    def __init__(self) -> None:
        self.servers: list[subprocess.Popen] = []
        self.proxy: subprocess.Popen | None = None
        self.workdir = Path(tempfile.mkdtemp(prefix="pe-serve-"))

    def _start(self, command: list[str], log_name: str) -> subprocess.Popen:
        log = open(self.workdir / log_name, "w")  # noqa: SIM115 - closed with the process
        # own session: a Ctrl-C in the terminal reaches only us, and we stop the children in order
        return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def start_server(self, address: str, port: int, log_name: str, *, quiet: bool) -> subprocess.Popen:
        if quiet:
            process = self._start(streamlit_command(address, port), log_name)
        else:
            process = subprocess.Popen(streamlit_command(address, port), cwd=ROOT, start_new_session=True)
        self.servers.append(process)
        return process

    def start_proxy(self, config: str) -> None:
        path = self.workdir / "haproxy.cfg"
        path.write_text(config)
        check = subprocess.run(["haproxy", "-c", "-q", "-f", str(path)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"HAProxy rejected its configuration:\n{check.stdout}{check.stderr}")
        self.proxy = subprocess.Popen(["haproxy", "-db", "-f", str(path)], cwd=self.workdir, start_new_session=True)

    def children(self) -> list[subprocess.Popen]:
        return ([self.proxy] if self.proxy else []) + self.servers

    def exited(self) -> subprocess.Popen | None:
        return next((p for p in self.children() if p.poll() is not None), None)

    def stop(self, timeout: float = 15.0) -> None:
        for process in self.children():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) while the servers were still starting."""


def wait_until_healthy(room: Room, urls: list[str], timeout: float, stopping=lambda: False) -> None:
    deadline = time.monotonic() + timeout
    waiting = list(urls)
    while waiting:
        if stopping():
            raise Interrupted
        if (gone := room.exited()) is not None:
            raise RuntimeError(f"a server exited while starting (exit code {gone.returncode}); "
                               f"its log is in {room.workdir}")
        waiting = [url for url in waiting if not healthy(url)]
        if waiting and time.monotonic() > deadline:
            raise TimeoutError(f"not healthy after {timeout:.0f} s: {', '.join(waiting)}")
        time.sleep(0.2)


def serve(address: str, port: int, processes: int, *, startup_timeout: float = 120.0) -> int:
    if processes > 1 and shutil.which("haproxy") is None:
        print(INSTALL_HAPROXY, file=sys.stderr)
        return 2
    room = Room()
    stopping = False

    def _stop(signum, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    status = 1
    try:
        local = "127.0.0.1" if address in {"0.0.0.0", ""} else ("::1" if address == "::" else address)
        if processes == 1:
            room.start_server(address, port, "server.log", quiet=False)
            wait_until_healthy(room, [f"http://{local}:{port}"], startup_timeout, lambda: stopping)
            backends: list[Backend] = []
        else:
            backends = [Backend(f"s{i + 1}", "127.0.0.1", free_port()) for i in range(processes)]
            for backend in backends:
                room.start_server(backend.host, backend.port, f"{backend.name}.log", quiet=True)
            wait_until_healthy(room, [b.url for b in backends], startup_timeout, lambda: stopping)
            room.start_proxy(haproxy_config(address, port, backends))
            wait_until_healthy(room, [f"http://{local}:{port}"], 30, lambda: stopping)
        _announce(address, port, backends, room)
        while not stopping:
            if (gone := room.exited()) is not None:
                print(f"A child process exited (code {gone.returncode}); stopping the rest. "
                      f"Logs: {room.workdir}", file=sys.stderr)
                return status
            time.sleep(0.5)
        status = 0
        return status
    except Interrupted:
        status = 0
        return status
    except (RuntimeError, TimeoutError) as err:
        print(err, file=sys.stderr)
        return status
    finally:
        print("Stopping…", file=sys.stderr)
        room.stop()
        if status == 0:  # logs are kept only when something went wrong
            shutil.rmtree(room.workdir, ignore_errors=True)


def _announce(address: str, port: int, backends: list[Backend], room: Room) -> None:
    lines = ["", "Serving the positional-encoding explorer."]
    for host in room_addresses(address):
        lines.append(f"  Students open:  http://{host}:{port}")
    if backends:
        lines.append(f"  {len(backends)} server processes behind HAProxy (sticky cookie {STICKY_COOKIE}): "
                     + ", ".join(f"{b.name} {b.url}" for b in backends))
        lines.append(f"  Logs and the proxy configuration: {room.workdir}")
    lines.append("  Press Ctrl-C to stop.")
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default="0.0.0.0",
                        help="address to listen on: 0.0.0.0 for every network interface (default), "
                             "127.0.0.1 for this computer only")
    parser.add_argument("--port", type=int, default=8501, help="port students connect to (default 8501)")
    parser.add_argument("--processes", type=int, default=1,
                        help="Streamlit server processes; more than 1 puts HAProxy in front (default 1)")
    args = parser.parse_args(argv)
    if not 1 <= args.processes <= 64:
        parser.error("--processes must be between 1 and 64")
    if not 1 <= args.port <= 65535:
        parser.error("--port must be between 1 and 65535")
    os.chdir(ROOT)
    return serve(args.address, args.port, args.processes)


if __name__ == "__main__":
    sys.exit(main())
