"""The retrieval experiment's rows (lessons.needle): means and spreads over seeds, and the perplexity trap."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from lessons import needle
from pe_core.train.retrieval import DEPTHS
from pe_core.train.schema import RetrievalEntry
from pe_core.train.shipped import shipped


@pytest.fixture(scope="module")
def records():
    """Two shipped RoPE runs with hand-made retrieval: direct keeps the needle; PI loses it past L."""
    found = shipped()
    assert found is not None
    runs = [r for r in found.records if r.config.encoding == "rope"][:2]
    made = []
    for k, record in enumerate(runs):
        entries = []
        for n in record.config.lengths:
            far = n > record.config.train_length
            entries.append(RetrievalEntry("direct", n, DEPTHS, (1.0, 1.0, 0.5 + 0.25 * k, 1.0, 1.0)))
            entries.append(RetrievalEntry("pi", n, DEPTHS, (0.0,) * 5 if far else (1.0,) * 5))
        entries += [RetrievalEntry("yarn", n, DEPTHS, (0.25 * k,) * 5, tuned=True) for n in record.config.lengths]
        made.append(dataclasses.replace(record, retrieval=tuple(entries)))
    return tuple(made)


def test_rows_average_over_seeds_per_depth_and_length(records):
    rows = needle.rows_of(records)
    assert [r.key for r in rows] == [("rope", "direct", False), ("rope", "pi", False), ("rope", "yarn", True)]
    direct = needle.find(rows, "rope", "direct")
    assert direct.seeds == 2 and direct.depths == DEPTHS
    assert direct.grid[2] == (0.625,) * 4 and direct.grid[0] == (1.0,) * 4  # depth 0.5: (0.5 + 0.75) / 2
    assert direct.retrieval[-1] == pytest.approx((0.9 + 0.95) / 2)
    assert direct.retrieval_sd[-1] == pytest.approx(statistics.stdev([0.9, 0.95]))
    longest = records[0].config.longest
    accuracies = [r.result("direct", longest).mean_accuracy for r in records]
    assert direct.accuracy == pytest.approx(statistics.fmean(accuracies))
    assert direct.accuracy_sd == pytest.approx(statistics.stdev(accuracies))
    tuned = needle.find(rows, "rope", "yarn", True)
    assert tuned.accuracy == pytest.approx(statistics.fmean(r.fine_tune("yarn").after.mean_accuracy for r in records))
    assert tuned.accuracy_at_train is None and tuned.retrieval[0] == pytest.approx(0.125)


def test_the_trap_is_the_method_that_keeps_accuracy_but_loses_the_needle(records):
    rows = needle.rows_of(records)
    assert needle.trap_row(rows).method == "pi"  # direct keeps the needle; yarn, tuned, is not an untuned method
    numbers = needle.trap_numbers(rows)
    assert numbers["method"] == needle.row_title(needle.find(rows, "rope", "pi"))
    assert numbers["trap_short"] == 1.0 and numbers["trap_long"] == 0.0
    assert numbers["best"] == needle.row_title(needle.find(rows, "rope", "direct"))  # direct is the more accurate
    assert numbers["best_short"] == 1.0 and numbers["scale"] == 8 and numbers["seeds"] == 2
    no_trap = [r for r in rows if r.method != "pi"]
    assert needle.trap_row(no_trap) is None and needle.trap_numbers(no_trap)["method"] is None
    assert needle.trap_numbers([]) == {}


def test_the_shipped_experiment_and_the_tours_answer_agree():
    """The tour's answer (no method finds the needle, even at L) is what the shipped runs say: regenerating them
    with a model that learns to copy must change the step."""
    rows = needle.shipped_rows()
    assert rows, "the retrieval experiment's results ship"
    numbers = needle.trap_numbers(rows)
    assert numbers["method"] is None and numbers["best_short"] == 0.0 and numbers["best_long"] == 0.0
    assert all(v == 0.0 for r in rows for row in r.grid for v in row)
    best = max((r for r in rows if r.encoding == "rope" and not r.tuned), key=lambda r: r.accuracy)
    assert numbers["accuracy"] == best.accuracy > 0.45  # ReRoPE + log n keeps about half the characters at 8×
