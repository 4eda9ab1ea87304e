"""The retrieval experiment's numbers, read from its shipped runs: passkey retrieval beside next-character
accuracy at every length, per method, mean and sd over seeds (``pe_core.train.config.RETRIEVAL_GRID``).

No Streamlit: ``lessons.training`` draws these, and the guided tour states its numbers from them.
"""

from __future__ import annotations

import functools
import statistics
from typing import NamedTuple

from i18n import _
from pe_core.train.evaluate import AS_TRAINED, DROPE, DROPE_TITLE, INFERENCE_METHODS
from pe_core.train.retrieval import chance
from pe_core.train.schema import RunRecord

HEATMAP_METHODS = ("direct", "pi", "ntk", "dynamic", "yarn", "direct_logn", "rerope")  # the untuned rows drawn


class Row(NamedTuple):
    """One (encoding, method, tuned) of the retrieval experiment, over its seeds."""

    encoding: str
    method: str
    tuned: bool
    seeds: int
    lengths: tuple[int, ...]
    depths: tuple[float, ...]
    grid: tuple[tuple[float, ...], ...]  # [depth][length]: exact retrieval, mean over seeds
    retrieval: tuple[float, ...]  # per length: mean over depths, mean over seeds
    retrieval_sd: tuple[float, ...]  # per length: sd over seeds of the mean over depths
    accuracy: float  # next-character accuracy at the longest length, mean over seeds
    accuracy_sd: float
    accuracy_at_train: float | None  # at L (the untuned model's), mean over seeds

    @property
    def key(self) -> tuple[str, str, bool]:
        return self.encoding, self.method, self.tuned


def method_title(method: str) -> str:
    if method == DROPE:
        return _(DROPE_TITLE)
    return _("as trained") if method == AS_TRAINED else _(INFERENCE_METHODS[method].title)


def row_title(row: Row) -> str:
    from pe_core.model import ENCODING_TITLES

    if row.encoding != "rope":
        return _(ENCODING_TITLES[row.encoding])
    if row.method == DROPE:
        return method_title(DROPE)
    title = method_title(row.method)
    return _("{method}, fine-tuned").format(method=title) if row.tuned else title


def _sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def rows_of(records: tuple[RunRecord, ...]) -> list[Row]:
    """Every (encoding, method, tuned) the records score retrieval for, in the records' order."""
    groups: dict[tuple[str, str, bool], list[RunRecord]] = {}
    for record in records:
        for entry in record.retrieval:
            members = groups.setdefault((record.config.encoding, entry.method, entry.tuned), [])
            if record not in members:
                members.append(record)
    rows = []
    for (encoding, method, tuned), members in groups.items():
        config = members[0].config
        lengths = tuple(config.lengths)
        entries = [[m.retrieval_of(method, n, tuned) for n in lengths] for m in members]
        depths = entries[0][0].depths
        grid = tuple(tuple(statistics.fmean(e[j].accuracy[i] for e in entries) for j in range(len(lengths)))
                     for i in range(len(depths)))
        per_length = [[e[j].mean_accuracy for e in entries] for j in range(len(lengths))]
        if tuned:
            tunes = [m.fine_tune(method) for m in members]
            accuracies = [t.after.mean_accuracy for t in tunes]
            at_train = None
        else:
            accuracies = [m.result(method, config.longest).mean_accuracy for m in members]
            at_train = statistics.fmean(m.result(method, config.train_length).mean_accuracy for m in members)
        rows.append(Row(encoding, method, tuned, len(members), lengths, depths, grid,
                        tuple(statistics.fmean(v) for v in per_length), tuple(_sd(v) for v in per_length),
                        statistics.fmean(accuracies), _sd(accuracies), at_train))
    return rows


@functools.lru_cache(maxsize=1)
def shipped_rows() -> tuple[Row, ...]:
    """The rows of the shipped retrieval experiment (none when its file is missing)."""
    from pe_core.train.shipped import shipped_retrieval

    found = shipped_retrieval()
    return () if found is None else tuple(rows_of(found.records))


def find(rows, encoding: str, method: str, tuned: bool = False) -> Row | None:
    return next((r for r in rows if r.key == (encoding, method, tuned)), None)


def trap_row(rows) -> Row | None:
    """The untuned RoPE method that keeps the most next-character accuracy at the longest length among those that
    lose the needle there (retrieval at the longest length under half of theirs at L): the perplexity trap."""
    lost = [r for r in rows if r.encoding == "rope" and not r.tuned and r.retrieval[0] > 0
            and r.retrieval[-1] < r.retrieval[0] / 2]
    return max(lost, key=lambda r: r.accuracy, default=None)


def trap_numbers(rows) -> dict:
    """What the page and the tour say about the trap, computed (an empty dict without shipped rows): the trap's
    method (None when no method loses a needle it finds at L), the most accurate untuned method at the longest
    length and its retrieval, and the best retrieval of any method at L."""
    untuned = [r for r in rows if r.encoding == "rope" and not r.tuned]
    if not untuned:
        return {}
    row = trap_row(rows)
    best = max(untuned, key=lambda r: r.accuracy)
    drope = find(rows, "rope", DROPE, True)
    return {"method": None if row is None else row_title(row), "best": row_title(best), "accuracy": best.accuracy,
            "at_train": best.accuracy_at_train, "retrieval_short": best.retrieval[0],
            "retrieval_long": best.retrieval[-1], "best_short": max(r.retrieval[0] for r in rows),
            "best_long": max(r.retrieval[-1] for r in rows), "seeds": best.seeds,
            "scale": best.lengths[-1] // best.lengths[0], "chance": chance(),
            "drope": method_title(DROPE), "drope_accuracy": None if drope is None else drope.accuracy,
            "trap_accuracy": None if row is None else row.accuracy,
            "trap_short": None if row is None else row.retrieval[0],
            "trap_long": None if row is None else row.retrieval[-1]}
