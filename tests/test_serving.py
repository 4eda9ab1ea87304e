"""Serving a class: the one-command server, the proxy configurations, the load-test protocol."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.proto.Slider_pb2 import Slider as SliderProto

from benchmarks.protocol import Run, Slider, check_run
from deploy import serve

ROOT = Path(__file__).resolve().parent.parent
needs_haproxy = pytest.mark.skipif(shutil.which("haproxy") is None, reason="HAProxy is not installed")


def _haproxy_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True, text=True, timeout=30)


def test_proxy_config_keeps_each_browser_on_its_server():
    backends = [serve.Backend("s1", "127.0.0.1", 9001), serve.Backend("s2", "127.0.0.1", 9002)]
    config = serve.haproxy_config("0.0.0.0", 8501, backends)
    assert "bind 0.0.0.0:8501" in config
    assert f"cookie {serve.STICKY_COOKIE} insert" in config
    assert "server s1 127.0.0.1:9001 check cookie s1" in config
    assert "server s2 127.0.0.1:9002 check cookie s2" in config
    assert "timeout tunnel" in config  # websockets outlive the plain HTTP timeouts
    assert "bind [::]:80" in serve.haproxy_config("::", 80, backends)


@needs_haproxy
def test_generated_proxy_config_is_valid(tmp_path):
    path = tmp_path / "haproxy.cfg"
    path.write_text(serve.haproxy_config("127.0.0.1", 8501, [serve.Backend("s1", "127.0.0.1", 9001)]))
    result = _haproxy_check(path)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_haproxy
def test_compose_proxy_config_is_valid():
    result = _haproxy_check(ROOT / "deploy" / "haproxy.cfg")
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_names_replicas_proxy_and_store():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"app", "proxy", "store", "worker"}
    assert "PE_RUN_STORE" in services["app"]["environment"]
    assert services["app"]["environment"]["PE_RUN_STORE"].startswith("postgresql://")
    # the training worker drains the same store's queue, on a GPU, only when asked for (--profile gpu)
    worker = services["worker"]
    assert worker["environment"]["PE_RUN_STORE"] == services["app"]["environment"]["PE_RUN_STORE"]
    assert worker["command"] == ["python", "-m", "pe_core.train", "--worker"] and worker["profiles"] == ["gpu"]
    assert worker["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert services["store"]["ports"] == ["${PE_STORE_BIND:-127.0.0.1}:${PE_STORE_PORT:-5432}:5432"]
    assert services["app"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in services["proxy"]["volumes"]
    assert "app:8501" in (ROOT / "deploy" / "haproxy.cfg").read_text()


def test_many_processes_without_haproxy_say_how_to_install(monkeypatch, capsys):
    monkeypatch.setattr(serve.shutil, "which", lambda name: None)
    assert serve.serve("127.0.0.1", 8501, 2) == 2
    assert "apt install haproxy" in capsys.readouterr().err


def test_room_addresses_name_the_bound_address():
    assert serve.room_addresses("192.0.2.7") == ["192.0.2.7"]
    assert all(not a.startswith("127.") for a in serve.room_addresses("0.0.0.0"))


def _select_slider() -> Slider:
    proto = SliderProto(id="$$ID-x-d", query_param_key="d", label="Head dim d", type=SliderProto.Type.SELECT_SLIDER,
                        options=["8", "16", "32"], default=[2.0])
    return Slider.from_proto(proto)


def test_slider_values_and_states_match_what_a_browser_sends():
    select = _select_slider()
    assert select.values() == ("8", "16", "32")
    assert select.default_value() == "32"
    assert list(select.state("16").string_array_value.data) == ["16"]
    numeric = Slider.from_proto(SliderProto(id="n", query_param_key="n", min=0, max=100, step=5, default=[10],
                                            data_type=SliderProto.DataType.INT))
    assert numeric.values(limit=5) == (0.0, 25.0, 50.0, 75.0, 100.0)
    assert numeric.text(25.0) == "25" and numeric.parse("25") == 25.0
    assert list(numeric.state(25.0).double_array_value.data) == [25.0]
    fractional = Slider.from_proto(SliderProto(id="f", min=0, max=1, step=0.25, default=[0.5],
                                               data_type=SliderProto.DataType.FLOAT))
    assert fractional.values() == (0.0, 0.25, 0.5, 0.75, 1.0) and fractional.text(0.25) == "0.25"


def test_isolation_check_catches_another_sessions_state():
    reference = {"slider": {"id": "$$ID-x-d", "key": "d", "label": "Head dim d"}, "values": ["8", "16"],
                 "signatures": {}}
    own, other = Run(figures=["spec for d=8"]), Run(figures=["spec for d=16"])
    reference["signatures"] = {"8": own.signature, "16": other.signature}
    for run in (own, other):
        run.session_id = "A"
    assert check_run(own, reference, "8", "A") == ([], False)
    problems, _ = check_run(other, reference, "8", "A")
    assert problems == ["the figures of d=16, this session set d=8"]
    own.echoed["$$ID-x-d"] = ["16"]
    problems, echoed = check_run(own, reference, "8", "A")
    assert echoed and problems == ["the slider shows ['16'], this session set 8"]
    assert check_run(other, reference, "16", "B")[0] == ["the session id changed from B to A"]
    broken = Run(figures=["spec for d=8"], session_id="A", problems=["exception on the page: ValueError: x"])
    assert check_run(broken, reference, "8", "A")[0] == ["exception on the page: ValueError: x"]


@pytest.mark.slow
def test_two_students_on_one_server(tmp_path):
    """The whole load-test path at its smallest: a real server, two Locust students, every run checked."""
    # never import Locust here: it monkey-patches the standard library with gevent on import, which deadlocks a
    # process that already runs threads (the export tests leave the figure renderer's thread running)
    if importlib.util.find_spec("locust") is None:
        pytest.skip("Locust is not installed (pip install -r requirements-dev.txt)")
    out = tmp_path / "load.json"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.loadtest", "--users", "2", "--seconds", "6", "--spawn-rate", "2",
         "--think", "0.3", "0.8", "--no-assets", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["errors"] == 0, summary["error_samples"]
    assert summary["opens"] == 2 and summary["reruns"] >= 4
    isolation = summary["isolation"]
    assert isolation["verdict"] == "isolated"
    assert isolation["distinct_sessions"] == 2 and isolation["sessions_shared"] == 0
    assert isolation["runs_checked"] == summary["opens"] + summary["reruns"]
    assert isolation["distinct_figure_sets"] == isolation["values"] >= 2
