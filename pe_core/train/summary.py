"""Numbers over seeds: mean and spread of accuracy for every encoding and method of one experiment.

Reads the store's result rows (no records parsed), so the page's table with error bars and the
README's table come from the same function.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from pe_core.methods import METHODS
from pe_core.model import ENCODINGS
from pe_core.train.config import DEFAULT_SEEDS, ExperimentConfig
from pe_core.train.evaluate import AS_TRAINED
from pe_core.train.store import ResultRow


class SeedStat(NamedTuple):
    encoding: str
    method: str  # a METHODS key, or AS_TRAINED
    fine_tuned: bool
    length: int
    mean: float  # accuracy, 0..1
    sd: float  # sample standard deviation over seeds (0 for one seed)
    seeds: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.seeds)


def _matches(row: ResultRow, config: ExperimentConfig) -> bool:
    """A row of the same experiment: encoding-specific knobs as in ``config`` where they apply."""
    stored = row.config
    if ENCODINGS[row.encoding].uses_base and float(stored.get("rope_base", math.nan)) != float(config.rope_base):
        return False
    if ENCODINGS[row.encoding].scalable:
        if stored.get("rope_pairing") != config.rope_pairing:
            return False
        if row.fine_tuned and (int(stored.get("fine_tune_steps", -1)) != config.fine_tune_steps
                               or float(stored.get("fine_tune_learning_rate", -1)) != config.fine_tune_learning_rate):
            return False
    return True


def seed_stats(rows: Iterable[ResultRow], config: ExperimentConfig,
               seeds: Sequence[int] = DEFAULT_SEEDS) -> list[SeedStat]:
    """Mean and standard deviation over ``seeds`` of each (encoding, method, fine-tuned, length)."""
    groups: dict[tuple, dict[int, float]] = {}
    for row in rows:
        if row.seed in seeds and _matches(row, config):
            groups.setdefault((row.encoding, row.method, row.fine_tuned, row.length), {})[row.seed] = row.accuracy
    encoding_order = {e: i for i, e in enumerate(ENCODINGS)}
    method_order = {m: i for i, m in enumerate((AS_TRAINED, *METHODS))}
    stats = []
    for (encoding, method, tuned, length), by_seed in groups.items():
        values = list(by_seed.values())
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
        stats.append(SeedStat(encoding, method, tuned, length, mean, sd, tuple(sorted(by_seed))))
    stats.sort(key=lambda s: (encoding_order[s.encoding], s.fine_tuned, method_order.get(s.method, 99), s.length))
    return stats


def row_label(encoding: str, method: str, fine_tuned: bool) -> tuple[str, str]:
    """(encoding title, method title) of a table row, untranslated (``N_`` strings)."""
    method_title = "" if method == AS_TRAINED else METHODS[method].title
    return ENCODINGS[encoding].title, method_title


def markdown_table(stats: Sequence[SeedStat], train_length: int, fine_tune_steps: int) -> str:
    """The README's table: one row per encoding / method, accuracy mean ± sd per length (percent)."""
    lengths = sorted({s.length for s in stats})
    rows: dict[tuple, dict[int, SeedStat]] = {}
    for stat in stats:
        rows.setdefault((stat.encoding, stat.method, stat.fine_tuned), {})[stat.length] = stat
    header = ["Encoding", "Method", "seeds"] + [f"{n:,} ({n // train_length}×), %" for n in lengths]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (encoding, method, tuned), by_length in rows.items():
        encoding_title, method_title = row_label(encoding, method, tuned)
        if tuned:
            method_title += f" + {fine_tune_steps} fine-tuning steps at the longest length"
        seeds = max((s.n for s in by_length.values()), default=0)
        cells = [f"{100 * by_length[n].mean:.1f} ± {100 * by_length[n].sd:.1f}" if n in by_length else "–"
                 for n in lengths]
        lines.append("| " + " | ".join([encoding_title, method_title or "as trained", str(seeds), *cells]) + " |")
    return "\n".join(lines)
