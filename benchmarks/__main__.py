"""Run the benchmarks: `python -m benchmarks [--filter TEXT] [--json PATH]`."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from benchmarks import Case

HERE = Path(__file__).resolve().parent


def _time(function, repeats: int) -> dict:
    function()  # warm-up: caches, lazy imports, allocator
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return {"median_ms": 1000 * statistics.median(samples), "min_ms": 1000 * min(samples), "repeats": repeats}


def _cases(filter_text: str | None) -> list[Case]:
    cases: list[Case] = []
    for path in sorted(HERE.glob("bench_*.py")):
        module = importlib.import_module(f"benchmarks.{path.stem}")
        cases.extend(module.CASES)
    if filter_text:
        cases = [c for c in cases if filter_text in c.group or filter_text in c.name]
    return cases


def machine() -> dict:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--filter", help="only cases whose group or name contains this text")
    parser.add_argument("--json", default="benchmarks/results/latest.json", help="where to write the results")
    args = parser.parse_args()

    rows = []
    print(f"{'group':<28} {'case':<52} {'median ms':>10} {'naive ms':>10} {'speed-up':>9}")
    for case in _cases(args.filter):
        result = _time(case.function, case.repeats)
        row = {"group": case.group, "name": case.name, **result}
        naive = ""
        speedup = ""
        if case.baseline is not None:
            base = _time(case.baseline, max(1, min(case.repeats, 3)))
            row["baseline_median_ms"] = base["median_ms"]
            naive = f"{base['median_ms']:10.1f}"
            ratio = base["median_ms"] / max(result["median_ms"], 1e-9)
            speedup = f"{ratio:8.2f}×" if ratio < 10 else f"{ratio:8.0f}×"  # a batch's 1.2× must not read 1×
        rows.append(row)
        print(f"{case.group:<28} {case.name:<52} {result['median_ms']:10.1f} {naive:>10} {speedup:>9}", flush=True)

    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), "results": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
