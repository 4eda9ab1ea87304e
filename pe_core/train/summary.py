"""Numbers over seeds: mean and spread of accuracy for every encoding and method of one experiment, what
each encoding costs to train, and the fine-tunes' accuracy along the way.

Accuracy comes from the store's result rows (no records parsed); costs and fine-tune curves from the
records themselves. The page's tables and figures and the README's table come from these functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from pe_core.model import ENCODINGS
from pe_core.train.config import DEFAULT_SEEDS, LEGACY_VALUES, ExperimentConfig
from pe_core.train.evaluate import AS_TRAINED, INFERENCE_METHODS
from pe_core.train.schema import MEMORY_PEAK, RunRecord
from pe_core.train.store import ResultRow

MIB = 1 << 20


class SeedStat(NamedTuple):
    encoding: str
    method: str  # a key of INFERENCE_METHODS, or AS_TRAINED
    fine_tuned: bool
    length: int
    mean: float  # accuracy, 0..1
    sd: float  # sample standard deviation over seeds (0 for one seed)
    seeds: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.seeds)


class CostStat(NamedTuple):
    """What one encoding costs to train, over the seeds whose cost was measured."""

    encoding: str
    tokens_per_s: float  # mean over seeds of the median step's characters per second
    tokens_per_s_sd: float
    memory_bytes: float  # mean over seeds (the count is the same for every seed; a CUDA peak may differ a little)
    measure: str  # schema.MEMORY_PEAK or MEMORY_COUNTED ("mixed" if the seeds ran on different kinds of device)
    devices: tuple[str, ...]
    seeds: tuple[int, ...]
    unmeasured: tuple[int, ...]  # seeds stored before costs were measured (record schema 1)

    @property
    def memory_mib(self) -> float:
        return self.memory_bytes / MIB


class TunePoint(NamedTuple):
    """Accuracy at the longest length after ``step`` fine-tuning steps, over seeds."""

    step: int
    mean: float
    sd: float
    n: int


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def _matches(encoding: str, stored: dict, fine_tuned: bool, config: ExperimentConfig) -> bool:
    """A run of the same experiment: encoding-specific knobs as in ``config`` where they apply."""
    if ENCODINGS[encoding].uses_base and float(stored.get("rope_base", math.nan)) != float(config.rope_base):
        return False
    if ENCODINGS[encoding].scalable:
        if stored.get("rope_pairing") != config.rope_pairing:
            return False
        if stored.get("yarn_ramp", LEGACY_VALUES["yarn_ramp"]) != config.yarn_ramp:
            return False
        if fine_tuned and (int(stored.get("fine_tune_steps", -1)) != config.fine_tune_steps
                           or float(stored.get("fine_tune_learning_rate", -1)) != config.fine_tune_learning_rate):
            return False
    return True


def seed_stats(rows: Iterable[ResultRow], config: ExperimentConfig,
               seeds: Sequence[int] = DEFAULT_SEEDS) -> list[SeedStat]:
    """Mean and standard deviation over ``seeds`` of each (encoding, method, fine-tuned, length)."""
    groups: dict[tuple, dict[int, float]] = {}
    for row in rows:
        if row.seed in seeds and _matches(row.encoding, row.config, row.fine_tuned, config):
            groups.setdefault((row.encoding, row.method, row.fine_tuned, row.length), {})[row.seed] = row.accuracy
    encoding_order = {e: i for i, e in enumerate(ENCODINGS)}
    method_order = {m: i for i, m in enumerate((AS_TRAINED, *INFERENCE_METHODS))}
    stats = []
    for (encoding, method, tuned, length), by_seed in groups.items():
        mean, sd = _mean_sd(list(by_seed.values()))
        stats.append(SeedStat(encoding, method, tuned, length, mean, sd, tuple(sorted(by_seed))))
    stats.sort(key=lambda s: (encoding_order[s.encoding], s.fine_tuned, method_order.get(s.method, 99), s.length))
    return stats


def _chosen(records: Iterable[RunRecord], config: ExperimentConfig, seeds: Sequence[int],
            fine_tuned: bool = False) -> dict[str, dict[int, RunRecord]]:
    """encoding → seed → record, for the records of this experiment (the last stored one of a seed wins)."""
    chosen: dict[str, dict[int, RunRecord]] = {}
    for record in records:
        c = record.config
        if c.seed in seeds and _matches(c.encoding, c.to_json(), fine_tuned, config):
            chosen.setdefault(c.encoding, {})[c.seed] = record
    return chosen


def cost_stats(records: Iterable[RunRecord], config: ExperimentConfig,
               seeds: Sequence[int] = DEFAULT_SEEDS) -> list[CostStat]:
    """Throughput and memory of each encoding's training steps, over ``seeds`` (registry order)."""
    stats = []
    for encoding, by_seed in _chosen(records, config, seeds).items():
        measured = {seed: r.cost for seed, r in by_seed.items() if r.cost is not None}
        unmeasured = tuple(sorted(seed for seed, r in by_seed.items() if r.cost is None))
        if not measured:
            stats.append(CostStat(encoding, math.nan, math.nan, math.nan, "", (), (), unmeasured))
            continue
        tokens, tokens_sd = _mean_sd([c.tokens_per_s for c in measured.values()])
        memory, _sd = _mean_sd([c.memory_bytes for c in measured.values()])
        measures = {c.memory_measure for c in measured.values()}
        devices = tuple(sorted({by_seed[seed].device for seed in measured}))
        stats.append(CostStat(encoding, tokens, tokens_sd, memory, measures.pop() if len(measures) == 1 else "mixed",
                              devices, tuple(sorted(measured)), unmeasured))
    order = {e: i for i, e in enumerate(ENCODINGS)}
    return sorted(stats, key=lambda s: order[s.encoding])


def fine_tune_curves(records: Iterable[RunRecord], config: ExperimentConfig,
                     seeds: Sequence[int] = DEFAULT_SEEDS) -> dict[str, list[TunePoint]]:
    """method → accuracy at the longest length against fine-tuning steps, mean ± sd over ``seeds``.

    Only the steps every seed measured are kept (a record stored before checkpoints were measured has
    just the two ends, so with it the curve is its ends).
    """
    curves: dict[str, list[TunePoint]] = {}
    for encoding, by_seed in _chosen(records, config, seeds, fine_tuned=True).items():
        if not ENCODINGS[encoding].scalable:
            continue
        for method in INFERENCE_METHODS:
            tunes = [t for r in by_seed.values() for t in r.fine_tunes if t.method == method
                     and t.length == config.longest]
            if not tunes:
                continue
            shared = set.intersection(*({c.step for c in t.curve} for t in tunes))
            points = []
            for step in sorted(shared):
                mean, sd = _mean_sd([next(c.accuracy for c in t.curve if c.step == step) for t in tunes])
                points.append(TunePoint(step, mean, sd, len(tunes)))
            curves[method] = points
    return curves


def row_label(encoding: str, method: str, fine_tuned: bool) -> tuple[str, str]:
    """(encoding title, method title) of a table row, untranslated (``N_`` strings)."""
    method_title = "" if method == AS_TRAINED else INFERENCE_METHODS[method].title
    return ENCODINGS[encoding].title, method_title


def cost_cells(cost: CostStat | None) -> tuple[str, str]:
    """(tokens/s, memory in MiB) as a table shows them; '–' where nothing was measured."""
    if cost is None or not cost.seeds:
        return "–", "–"
    if len(cost.seeds) > 1:
        tokens = thousands_with_sd(cost.tokens_per_s, cost.tokens_per_s_sd)
    else:
        tokens = f"{cost.tokens_per_s / 1000:.1f}k"
    return tokens, f"{cost.memory_mib:.1f}" + ("" if cost.measure == MEMORY_PEAK else "*")


def thousands_with_sd(mean: float, sd: float) -> str:
    """``mean ± sd`` in thousands, with as many decimals as the sd needs to show (one at least, three at most): a
    spread of 20 reads ± 0.02k, not ± 0.0k; one below half a token per second (seeds trained as one batch share
    their speed) reads ± 0, short enough for a table cell."""
    if sd < 0.5:
        return f"{mean / 1000:.1f}k ± 0"
    decimals = min(3, max(1, math.ceil(-math.log10(sd / 1000) - 1e-9)))
    if round(sd / 1000, decimals) == 0:  # 0.5 ≤ sd < 1 at three decimals rounds to 0.001k, never 0
        decimals = 3
    return f"{mean / 1000:.{decimals}f}k ± {sd / 1000:.{decimals}f}k"


def markdown_table(stats: Sequence[SeedStat], train_length: int, fine_tune_steps: int,
                   costs: Sequence[CostStat] = ()) -> str:
    """The README's table: one row per encoding / method, accuracy mean ± sd per length (percent), and each
    encoding's training cost on its first row (memory marked * is counted, not a CUDA peak)."""
    lengths = sorted({s.length for s in stats})
    rows: dict[tuple, dict[int, SeedStat]] = {}
    for stat in stats:
        rows.setdefault((stat.encoding, stat.method, stat.fine_tuned), {})[stat.length] = stat
    by_encoding = {c.encoding: c for c in costs}
    header = ["Encoding", "Method", "seeds"] + [f"{n:,} ({n // train_length}×), %" for n in lengths]
    header += ["train tokens/s", "memory, MiB"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    shown: set[str] = set()
    for (encoding, method, tuned), by_length in rows.items():
        encoding_title, method_title = row_label(encoding, method, tuned)
        if tuned:
            method_title += f" + {fine_tune_steps} fine-tuning steps at the longest length"
        seeds = max((s.n for s in by_length.values()), default=0)
        cells = [f"{100 * by_length[n].mean:.1f} ± {100 * by_length[n].sd:.1f}" if n in by_length else "–"
                 for n in lengths]
        cost = ("", "") if encoding in shown else cost_cells(by_encoding.get(encoding))
        shown.add(encoding)
        lines.append("| " + " | ".join([encoding_title, method_title or "as trained", str(seeds), *cells, *cost])
                     + " |")
    return "\n".join(lines)


def retrieval_markdown(records: Sequence[RunRecord]) -> str:
    """The retrieval experiment as a markdown table: per method (and fine-tune), next-character accuracy and exact
    passkey retrieval (mean over depths) at each length, mean ± sd over the records' seeds ("" without retrieval)."""
    from pe_core.train.evaluate import DROPE, DROPE_TITLE

    records = [r for r in records if r.retrieval]
    if not records:
        return ""
    config = records[0].config
    lengths = config.lengths

    def title(method: str) -> str:
        return DROPE_TITLE if method == DROPE else INFERENCE_METHODS[method].title

    header = ["Method", "seeds", *[f"{n} ({n // config.train_length}×): accuracy / retrieval, %" for n in lengths]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    keys = list(dict.fromkeys((e.method, e.tuned) for r in records for e in r.retrieval))
    for method, tuned in keys:
        cells = []
        for n in lengths:
            retrieved = [r.retrieval_of(method, n, tuned).mean_accuracy for r in records]
            if tuned:
                accuracy = [r.fine_tune(method).after.mean_accuracy for r in records] if n == config.longest else []
            else:
                accuracy = [r.result(method, n).mean_accuracy for r in records]
            acc = "–" if not accuracy else "{:.1f} ± {:.1f}".format(*(100 * v for v in _mean_sd(accuracy)))
            cells.append(acc + " / " + "{:.0f} ± {:.0f}".format(*(100 * v for v in _mean_sd(retrieved))))
        name = title(method) + (f" + {config.fine_tune_steps} fine-tuning steps at {config.longest}" if tuned else "")
        lines.append("| " + " | ".join([name, str(len(records)), *cells]) + " |")
    return "\n".join(lines)
