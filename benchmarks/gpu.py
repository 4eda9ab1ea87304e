"""What only a GPU can show about the live model: ``python -m benchmarks.gpu [--out PATH] [--budget S]``.

One prepared run for a machine with a GPU and torch (streamlit, plotly and numpy are not needed), in the
order that matters most when device time is short, the JSON rewritten after every stage (a run cut short
keeps what it measured):

1. precisions: five seeds of the default model stacked, a training step's time in float32, TF32 and bf16
   autocast (``pe_core.train.loop.PRECISIONS``), and one seed alone in each, with the peak GPU memory;
2. a 5-seed experiment (train, evaluate, fine-tune) in the fastest precision, end to end;
3. the default grid (8 encodings × 5 seeds, with evaluations and fine-tunes) in that precision, until the
   budget is spent: how many of the 40 runs finished, and in how long.

``--quick`` shrinks every experiment (a dry run of the script itself, e.g. on the CPU, where only float32
applies). The numbers are for people (printed as markdown and written as JSON), not pass/fail.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from pe_core.train.config import DEFAULT_GRID, DEFAULT_SEEDS, ExperimentConfig
from pe_core.train.experiment import run_experiments
from pe_core.train.loop import CUDA_PRECISION, PRECISIONS, TrainingBatch, TrainingRun, training_precision

TIMED_STEPS = 30  # training steps timed per precision, after WARM_STEPS
WARM_STEPS = 5
QUICK = {"steps": 4, "eval_tokens": 256, "fine_tune_steps": 2, "multiples": (1, 2)}


@dataclasses.dataclass
class Plan:
    device: torch.device
    base: ExperimentConfig
    grid: list[ExperimentConfig]
    budget_s: float
    timed_steps: int


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _peak_mib(device: torch.device) -> float | None:
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1) if device.type == "cuda" else None


@dataclasses.dataclass
class _Precision:
    """``PE_PRECISION`` set for the block (the runs made inside it train in that precision)."""

    name: str

    def __enter__(self):
        self.before = os.environ.get("PE_PRECISION")
        os.environ["PE_PRECISION"] = self.name

    def __exit__(self, *exc):
        if self.before is None:
            os.environ.pop("PE_PRECISION", None)
        else:
            os.environ["PE_PRECISION"] = self.before


def step_ms(plan: Plan, seeds: tuple[int, ...]) -> dict:
    """The median time of one training step of ``seeds``' default models trained together (stacked on a GPU)."""
    runs = []
    for seed in seeds:
        config = plan.base.replace(seed=seed)
        endless = dataclasses.replace(config.train_config(), steps=10**6, validate_every=10**6)
        runs.append(TrainingRun(config.model_config(), endless, device=plan.device))
    batch = TrainingBatch(runs)
    samples = []
    steps = batch.steps(WARM_STEPS + plan.timed_steps)
    for index in range(WARM_STEPS + plan.timed_steps):
        started = time.perf_counter()
        next(steps)
        _synchronise(plan.device)
        if index >= WARM_STEPS:
            samples.append(time.perf_counter() - started)
    steps.close()
    return {"seeds": len(seeds), "step_ms": round(1000 * statistics.median(samples), 2),
            "precision": runs[0].precision.name, "stacked": batch.stacked}


def _experiments(plan: Plan, configs: list[ExperimentConfig], deadline: float | None = None) -> dict:
    """Train, evaluate and fine-tune ``configs`` as ``python -m pe_core.train --no-store`` would; stop at
    ``deadline`` (time.perf_counter) if given."""
    _reset_peak(plan.device)
    started = time.perf_counter()
    records = []
    updates: Iterator = run_experiments(configs, device=plan.device)
    for update in updates:
        if update.record is not None:
            records.append(update.record)
        if deadline is not None and time.perf_counter() > deadline:
            updates.close()
            break
    _synchronise(plan.device)
    seconds = time.perf_counter() - started
    return {"runs": len(configs), "finished": len(records), "seconds": round(seconds, 1),
            "peak_mib": _peak_mib(plan.device), "device": records[0].device if records else None,
            "accuracy_at_longest": {f"{r.config.encoding}/{r.config.seed}":
                                    round(r.result("direct", max(r.lengths)).mean_accuracy, 4)
                                    for r in records if "direct" in r.methods}}


def precisions_for(device: torch.device) -> list[str]:
    """The precisions worth comparing here: every one on CUDA, where a bf16-less GPU falls back to float32."""
    if device.type != "cuda":
        return ["float32"]
    names = []
    for name in PRECISIONS:
        with _Precision(name):
            if training_precision(device).name == name:
                names.append(name)
    return names


def measure(plan: Plan, out: Path) -> dict:
    report: dict = {"machine": _machine(plan.device), "budget_s": plan.budget_s, "default_precision": CUDA_PRECISION}
    end = time.perf_counter() + plan.budget_s

    def save() -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1))

    # warm: the CUDA context, kernels, the corpus
    _experiments(plan, [plan.base.replace(steps=2, eval_tokens=256, fine_tune_steps=2, multiples=(1, 2))])
    report["precisions"] = []
    for name in precisions_for(plan.device):
        with _Precision(name):
            _reset_peak(plan.device)
            five = step_ms(plan, DEFAULT_SEEDS)
            five["peak_mib"] = _peak_mib(plan.device)
            one = step_ms(plan, DEFAULT_SEEDS[:1])
        report["precisions"].append({"precision": name, "five_seeds": five, "one_seed": one})
        save()
    fastest = min(report["precisions"], key=lambda row: row["five_seeds"]["step_ms"])["precision"]
    report["fastest"] = fastest
    with _Precision(fastest):
        report["five_seed_experiment"] = _experiments(plan, [plan.base.replace(seed=s) for s in DEFAULT_SEEDS])
        save()
        report["one_seed_experiment"] = _experiments(plan, [plan.base])
        save()
        report["grid"] = _experiments(plan, plan.grid, deadline=end)
    save()
    return report


def _machine(device: torch.device) -> dict:
    return {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({os.cpu_count()} cores)",
            "cuda": torch.version.cuda}


def markdown(report: dict) -> str:
    lines = [f"Machine: {report['machine']['device']}, torch {report['machine']['torch']}", "",
             "| precision | step, 5 seeds together | step, 1 seed | 5 seeds ÷ 1 | peak memory, 5 seeds |",
             "|---|---|---|---|---|"]
    for row in report.get("precisions", []):
        five, one = row["five_seeds"], row["one_seed"]
        peak = "–" if five["peak_mib"] is None else f"{five['peak_mib']:,.0f} MiB"
        lines.append(f"| {row['precision']} | {five['step_ms']:.2f} ms | {one['step_ms']:.2f} ms | "
                     f"{five['step_ms'] / one['step_ms']:.2f}× | {peak} |")
    lines.append("")
    for key, title in (("five_seed_experiment", "5-seed experiment"), ("one_seed_experiment", "one seed alone"),
                       ("grid", "default grid")):
        if key in report:
            row = report[key]
            peak = "" if row["peak_mib"] is None else f", peak {row['peak_mib']:,.0f} MiB"
            lines.append(f"- {title} ({report['fastest']}): {row['finished']} of {row['runs']} runs in "
                         f"{row['seconds']:.1f} s{peak}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "benchmarks/results"), "gpu.json"),
                        help="where the JSON goes (default: $OUT/gpu.json, else benchmarks/results/gpu.json)")
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds after which the grid stops (the stages before it always finish)")
    parser.add_argument("--quick", action="store_true", help="tiny experiments: a dry run of this script")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda was asked for, but torch sees no CUDA device here.")
    base = ExperimentConfig()
    grid = DEFAULT_GRID.configs()
    if args.quick:
        base = base.replace(**QUICK)
        grid = [config.replace(**QUICK) for config in grid[:10]]
    plan = Plan(torch.device(args.device), base, grid, args.budget, 3 if args.quick else TIMED_STEPS)
    report = measure(plan, Path(args.out))
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
