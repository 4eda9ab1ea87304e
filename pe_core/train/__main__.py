"""``python -m pe_core.train``: run experiments from the shell, store them, print or write JSON.

    python -m pe_core.train                          # the default RoPE run (stored; a rerun is a lookup)
    python -m pe_core.train --encoding rope alibi --seed 0 1 2 --steps 200
    python -m pe_core.train --prepare                # every encoding × 5 seeds, so a class starts ready
    python -m pe_core.train --prepare --ship         # retrain that grid and write it as the results the app ships
    python -m pe_core.train --table                  # the seed table of what is stored, in markdown
    python -m pe_core.train --store postgresql://user@host/db --prepare

Every option but the last group is a field of ``ExperimentConfig`` (the same names as the
lesson's settings and the JSON); ``--encoding`` and ``--seed`` take several values and run
every combination.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence

import torch

from pe_core.train.config import DEFAULT_GRID, DEFAULT_SEEDS, RETRIEVAL_GRID, ExperimentConfig, Grid
from pe_core.train.experiment import RunUpdate, Status
from pe_core.train.schema import MEMORY_PEAK, RunRecord, report_json
from pe_core.train.store import RunStore, StoreError, default_location, describe_location, open_store
from pe_core.train.summary import cost_stats, markdown_table, retrieval_markdown, seed_stats

MANY = ("encoding", "seed")  # fields the CLI takes several values of (a grid)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pe_core.train",
        description="Train the tiny transformer at a short length, evaluate how it extrapolates, store the run.",
    )
    experiment = parser.add_argument_group("the experiment (fields of pe_core.train.ExperimentConfig)")
    for field in dataclasses.fields(ExperimentConfig):
        option = "--" + field.name.replace("_", "-")
        help_text = f"{field.metadata['help']} (default: {_shown(field.default)})"
        kind = type(field.default[0]) if isinstance(field.default, tuple) else type(field.default)
        extra: dict = {"type": kind, "help": help_text, "default": None}
        if "choices" in field.metadata:
            extra["choices"] = field.metadata["choices"]
        if isinstance(field.default, bool):
            extra = {"action": argparse.BooleanOptionalAction, "help": help_text, "default": None}
        elif isinstance(field.default, tuple) or field.name in MANY:
            extra["nargs"] = "*" if isinstance(field.default, tuple) else "+"
        experiment.add_argument(option, **extra)
    store = parser.add_argument_group("where runs go")
    store.add_argument("--store", default=None,
                       help=f"run store: a SQLite file or postgresql:// URL (default: $PE_RUN_STORE or "
                            f"{default_location()})")
    store.add_argument("--no-store", action="store_true", help="neither read nor write a store")
    store.add_argument("--force", action="store_true", help="train even if the store has the run (not saved again)")
    store.add_argument("--out", default=None, help="write the runs as JSON to this file ('-': stdout)")
    actions = parser.add_argument_group("other actions")
    actions.add_argument("--prepare", action="store_true",
                         help=f"store the default grid: every encoding × seeds {', '.join(map(str, DEFAULT_SEEDS))} "
                              "(the options above change its base config)")
    actions.add_argument("--ship", action="store_true",
                         help="with --prepare and no other option: train the default grid from scratch and write it "
                              "as the results the app ships (pe_core/train/data/)")
    actions.add_argument("--retrieval-grid", action="store_true",
                         help="with --prepare: the retrieval experiment's grid instead (the default model trained on a "
                              "mix that teaches copying, scored on passkey retrieval, DroPE among the fine-tunes)")
    actions.add_argument("--table", action="store_true",
                         help="print the stored runs' accuracy, mean ± sd over seeds, and each encoding's training "
                              "cost, as a markdown table")
    actions.add_argument("--device", default=None, choices=("cpu", "cuda", "mps"),
                         help="where to train (default: the best available, or PE_DEVICE)")
    actions.add_argument("--quiet", action="store_true", help="no progress on stderr")
    worker = parser.add_argument_group("a worker on a shared store (python -m pe_core.train --worker --store URL)")
    worker.add_argument("--worker", action="store_true",
                        help="drain the store's queue: train the runs app instances ask for, until stopped")
    worker.add_argument("--until-empty", action="store_true", help="with --worker: stop when the queue is empty")
    worker.add_argument("--lease", type=float, default=None,
                        help="with --worker: seconds a claimed job stays this worker's without a heartbeat "
                             "(default: 60)")
    worker.add_argument("--batch", type=int, default=None,
                        help="with --worker: at most this many queued jobs of one shape trained together (default: 40)")
    worker.add_argument("--name", default=None, help="with --worker: how the pages name this worker (default: host-pid)")
    return parser


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def configs_from(args: argparse.Namespace) -> list[ExperimentConfig]:
    """The experiments the options describe (a grid over --encoding and --seed)."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(ExperimentConfig)}
    single = {k: (tuple(v) if isinstance(v, list) else v) for k, v in values.items()
              if v is not None and k not in MANY}
    base, default = ExperimentConfig(**single), DEFAULT_GRID
    if args.prepare and getattr(args, "retrieval_grid", False):
        base, default = RETRIEVAL_GRID.base.replace(**single), RETRIEVAL_GRID
    if args.prepare:
        grid = Grid(base=base, encodings=tuple(values["encoding"] or default.encodings),
                    seeds=tuple(values["seed"] or default.seeds))
        return grid.configs()
    encodings = values["encoding"] or [base.encoding]
    seeds = values["seed"] or [base.seed]
    return [base.replace(encoding=e, seed=s) for e in encodings for s in seeds]


class _Printer:
    """One line per validation and per phase on stderr."""

    def __init__(self, label: str, quiet: bool):
        self.label, self.quiet, self.last = label, quiet, None

    def __call__(self, status: Status) -> None:
        if self.quiet:
            return
        key = (status.phase, status.method)
        progress = status.progress
        checkpoint = progress is not None and (progress.validation_loss is not None or progress.step == 1)
        if key != self.last or checkpoint:
            what = status.phase + (f" {status.method}" if status.method else "")
            loss = f" loss {progress.loss:.3f}" if progress is not None else ""
            validation = f" val {progress.validation_loss:.3f}" if progress and progress.validation_loss else ""
            print(f"[{self.label}] {what} {status.step}/{status.total}{loss}{validation} "
                  f"({status.fraction:.0%})", file=sys.stderr)
            self.last = key


def _summary_line(record: RunRecord) -> str:
    longest = max(record.lengths)
    parts = [f"{m}: {record.result(m, record.config.train_length).mean_accuracy:.1%} → "
             f"{record.result(m, longest).mean_accuracy:.1%}" for m in record.methods]
    parts += [f"{f.method} fine-tuned: {f.after.mean_accuracy:.1%}" for f in record.fine_tunes]
    return "; ".join(parts)


def run_all(configs: Sequence[ExperimentConfig], store: RunStore | None, *, device=None, force: bool = False,
            quiet: bool = False, on_trained: Callable[[RunUpdate], None] | None = None) -> list[RunRecord]:
    """Every config's record: stored ones looked up, the rest trained, those differing only in their seed
    together as one batch (``run_experiments``). ``on_trained(update)`` sees each trained run's last update."""
    from pe_core.train.attention import kept_weights
    from pe_core.train.experiment import run_experiments

    labels = {c.hash: f"{index}/{len(configs)} {c.label()}" for index, c in enumerate(configs, 1)}
    records: dict[str, RunRecord] = {}
    for config in configs:
        record = None if store is None or force else store.get(config.hash)
        if record is not None:
            records[config.hash] = record
            if not quiet:
                print(f"[{labels[config.hash]}] stored ({record.created_at}, {record.device})", file=sys.stderr)
                print(f"[{labels[config.hash]}] {_summary_line(record)}", file=sys.stderr)
    missing = [c for c in configs if c.hash not in records]
    printers = {c.hash: _Printer(labels[c.hash], quiet) for c in missing}
    for update in run_experiments(missing, device=device):
        run_hash = update.config.hash
        printers[run_hash](update.status)
        if update.record is None:
            continue
        records[run_hash] = update.record
        if store is not None:  # with a RoPE run's weights, which the training page's look inside the model reads
            store.put(update.record, kept_weights(update.config, update.experiment.run.model))
        if on_trained is not None:
            on_trained(update)
        if not quiet:
            print(f"[{labels[run_hash]}] trained ({update.record.total_seconds:.1f} s, its share of its batch)",
                  file=sys.stderr)
            print(f"[{labels[run_hash]}] {_summary_line(update.record)}", file=sys.stderr)
    return [records[c.hash] for c in configs]


def ship(configs: Sequence[ExperimentConfig], store: RunStore | None, *, device=None, quiet: bool = False,
         grid: Grid = DEFAULT_GRID) -> list[RunRecord]:
    """Train the default grid from scratch and write it as the results the app ships (``pe_core.train.shipped``),
    rewritten after every finished run (so a long regeneration that is cut short keeps what it finished)."""
    from pe_core.train.shipped import WEIGHTS_CONFIG, write_shipped

    models, finished = {}, []

    def keep(update: RunUpdate) -> None:
        if update.config.hash == WEIGHTS_CONFIG.hash:
            models["weights"] = update.experiment.run.model
        finished.append(update.record)
        write_shipped(finished, grid, finished[0].device, models.pop("weights", None))

    return run_all(configs, store, device=device, force=True, quiet=quiet, on_trained=keep)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda was asked for, but torch sees no CUDA device here.")
    try:
        configs = configs_from(args)
    except ValueError as err:
        parser.error(str(err))
    store = None
    if not args.no_store:
        try:
            store = open_store(args.store)
        except StoreError as err:
            parser.exit(2, f"error: {err}\n")
    if args.worker:
        if store is None:
            parser.error("--worker drains a store's queue; leave out --no-store.")
        from pe_core.train.worker import run_worker

        return run_worker(store, args)
    started = time.perf_counter()
    try:
        if args.table:
            if store is None:
                parser.error("--table reads the store; leave out --no-store.")
            base = configs[0]
            stats = seed_stats(store.results(base.family), base)
            costs = cost_stats(store.records(base.family), base)
            print(markdown_table(stats, base.train_length, base.fine_tune_steps, costs))
            retrieval = retrieval_markdown(store.records(base.family, base.encoding)) if base.retrieval else ""
            if retrieval:
                print("\nPasskey retrieval (exact, mean over depths) beside next-character accuracy:\n")
                print(retrieval)
            unmeasured = sorted({(c.encoding, s) for c in costs for s in c.unmeasured})
            if unmeasured:
                print(f"\n{len(unmeasured)} run(s) were stored before costs were measured (record schema 1); "
                      "their cost shows as –.", file=sys.stderr)
            if any(c.seeds and c.measure != MEMORY_PEAK for c in costs):
                print("\n* memory counted, not sampled: weights, gradients, AdamW state, the weights and gradients "
                      "of the model's copy that computes the second half of each batch, and the tensors autograd "
                      "keeps for the backward pass of one step (a CUDA run reports torch.cuda.max_memory_allocated).")
            return {"table": [s._asdict() for s in stats], "costs": [c._asdict() for c in costs]}
        if args.ship:
            grid = RETRIEVAL_GRID if args.retrieval_grid else DEFAULT_GRID
            if configs != grid.configs():
                parser.error("--ship writes the default grid (or with --retrieval-grid the retrieval experiment's): "
                             "use it with --prepare and no experiment option.")
            records = ship(configs, store, device=args.device, quiet=args.quiet, grid=grid)
        else:
            records = run_all(configs, store, device=args.device, force=args.force, quiet=args.quiet)
    finally:
        if store is not None:
            store.close()
    if not args.quiet:
        where = "not stored" if store is None else f"store: {describe_location(store.location)}"
        print(f"{len(records)} run(s) in {time.perf_counter() - started:.1f} s ({where})", file=sys.stderr)
    report = report_json(records)
    if args.out:
        text = json.dumps(report, indent=1)
        if args.out == "-":
            print(text)
        else:
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(text)
    return report


if __name__ == "__main__":
    main()
