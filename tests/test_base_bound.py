"""Men et al.'s base bound: the blocked similarity sums against direct sums, the scan against its definition,
and the values against the paper's Table 1 (d = 128)."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core import default_inv_freq
from pe_core.base_bound import (
    GRID_STEPS_PER_DECADE,
    base_lower_bound,
    criterion_holds,
    first_negative_distance,
    grid_base,
    similarity_envelope,
    similarity_sums,
)

# Men et al. 2024, Table 1 (two significant figures): context length -> lower bound of the base, d = 128
pytestmark = pytest.mark.usefixtures("one_torch_thread")
PAPER = {1024: 4.3e3, 8192: 8.4e4, 32768: 6.4e5}


def brute_first_negative(theta: torch.Tensor, length: int, constant: float = 0.0) -> int | None:
    sums = similarity_sums(theta, torch.arange(length), constant)
    negative = torch.nonzero(sums < -1e-9)
    return int(negative[0]) if len(negative) else None


@pytest.mark.parametrize("length", [1, 5, 63, 64, 65, 1000, 4097, 20_011])
def test_blocked_sums_equal_direct_sums(length):
    theta = default_inv_freq(30_000.0, 128)
    starts, low, high = similarity_envelope(theta, length, bins=min(50, length))
    direct = similarity_sums(theta, torch.arange(length))
    edges = torch.linspace(0, length, len(starts) + 1).floor().to(torch.int64)
    for i in range(len(starts)):
        chunk = direct[edges[i]:edges[i + 1]]
        assert float(low[i]) == pytest.approx(float(chunk.min()), abs=1e-9)
        assert float(high[i]) == pytest.approx(float(chunk.max()), abs=1e-9)


@pytest.mark.parametrize("base", [500.0, 10_000.0, 27_000.0, 30_000.0, 1e6])
@pytest.mark.parametrize("constant", [0.0, 3.0])
def test_first_negative_distance_equals_brute_force(base, constant):
    theta = default_inv_freq(base, 64)
    assert first_negative_distance(theta, 30_000, constant) == brute_first_negative(theta, 30_000, constant)


@pytest.mark.parametrize("length", sorted(PAPER))
def test_bound_agrees_with_the_papers_table(length):
    bound = base_lower_bound(length, 128)
    assert bound == pytest.approx(PAPER[length], rel=0.05)


@pytest.mark.parametrize(("length", "dim"), [(1024, 128), (4096, 128), (2048, 64), (8192, 96)])
def test_bound_is_the_first_grid_base_where_the_inequality_holds(length, dim):
    bound = base_lower_bound(length, dim)
    step = round(GRID_STEPS_PER_DECADE * math.log10(bound))
    assert grid_base(step) == pytest.approx(bound)
    assert brute_first_negative(default_inv_freq(bound, dim), length) is None
    assert brute_first_negative(default_inv_freq(grid_base(step - 1), dim), length) is not None
    # starting the scan far lower finds nothing earlier (every bound sits above L/4)
    assert base_lower_bound(length, dim, start=length / 100) == bound


def test_bases_pass_in_islands_not_an_interval():
    """Why the bound is a scan: at L = 4096 a base passes while a larger one fails."""
    assert criterion_holds(base_lower_bound(4096, 128), 4096, 128)
    assert not criterion_holds(30_000.0, 4096, 128)
    assert base_lower_bound(4096, 128) < 30_000.0


def test_unrotated_pairs_relax_the_bound():
    assert base_lower_bound(32768, 64, constant_pairs=32) is None  # as many unrotated pairs as rotated ones
    assert base_lower_bound(32768, 64, constant_pairs=8) < base_lower_bound(32768, 64)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="rotary_dim"):
        base_lower_bound(1024, 7)
    with pytest.raises(ValueError, match="length"):
        base_lower_bound(0, 128)
