"""The prepared GPU measurement (``python -m benchmarks.gpu``), dry-run on the CPU so it is ready when a GPU is."""

from __future__ import annotations

import json

import torch

from benchmarks import gpu


def test_the_dry_run_measures_every_stage_and_the_grid_stops_at_its_budget(tmp_path):
    out = tmp_path / "gpu.json"
    report = gpu.main(["--quick", "--device", "cpu", "--out", str(out), "--budget", "0"])
    assert json.loads(out.read_text()) == report
    assert [row["precision"] for row in report["precisions"]] == ["float32"]  # the CPU trains in float32 only
    row = report["precisions"][0]
    assert row["five_seeds"]["seeds"] == 5 and row["one_seed"]["seeds"] == 1
    assert row["five_seeds"]["step_ms"] > 0 and row["five_seeds"]["peak_mib"] is None
    assert report["fastest"] == "float32"
    assert report["five_seed_experiment"]["finished"] == report["five_seed_experiment"]["runs"] == 5
    assert report["one_seed_experiment"]["finished"] == 1
    assert report["five_seed_experiment"]["device"].startswith("CPU (")
    assert report["grid"]["runs"] == 10 and report["grid"]["finished"] < 10  # a budget of 0 s stops it early
    assert "| float32 |" in gpu.markdown(report)


def test_every_precision_is_compared_on_a_gpu_and_bf16_only_where_the_gpu_has_it(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert gpu.precisions_for(torch.device("cuda")) == ["float32", "tf32", "bf16"]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert gpu.precisions_for(torch.device("cuda")) == ["float32", "tf32"]
    assert gpu.precisions_for(torch.device("cpu")) == ["float32"]
