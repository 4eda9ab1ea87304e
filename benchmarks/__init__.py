"""Timing harness: `python -m benchmarks` runs every ``benchmarks/bench_*.py`` module.

Each module defines ``CASES``: a list of ``Case(group, name, function, baseline=None)``.
``function`` runs the work once; ``baseline`` (optional) runs a naive version of the same
work for comparison. Numbers are for people (printed as a table and written as JSON), not
pass/fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Case(NamedTuple):
    group: str  # e.g. "core", "page: frequencies", "training"
    name: str
    function: Callable[[], object]
    baseline: Callable[[], object] | None = None
    repeats: int = 5
