"""ALiBi slopes against the paper's rule; T5 buckets against transformers' reference code."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.biases import alibi_bias, alibi_slopes, t5_relative_bucket


def test_alibi_slopes_for_eight_heads_are_halves():
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]


def test_alibi_slopes_power_of_two_geometric():
    slopes = alibi_slopes(16)
    ratio = 2 ** (-8 / 16)
    torch.testing.assert_close(slopes, torch.tensor([ratio ** (k + 1) for k in range(16)], dtype=torch.float64))


def test_alibi_slopes_non_power_of_two_follow_the_paper():
    # 12 heads: the 8-head slopes, then every other slope of 16 heads (2^-0.5, 2^-1.5, ...)
    expected = [2.0**-k for k in range(1, 9)] + [2 ** (-(2 * k + 1) / 2) for k in range(4)]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(expected, dtype=torch.float64))
    assert len(set(alibi_slopes(12).tolist())) == 12


def test_alibi_bias_is_causal_distance_times_slope():
    bias = alibi_bias(4, 6)
    assert bias.shape == (4, 6, 6)
    assert bias[1, 5, 2].item() == -alibi_slopes(4)[1].item() * 3
    assert torch.all(bias.triu(1) == 0)


def test_invalid_head_count():
    with pytest.raises(ValueError, match="num_heads"):
        alibi_slopes(0)


T5Attention = pytest.importorskip("transformers.models.t5.modeling_t5").T5Attention


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (8, 20), (64, 512)])
def test_t5_buckets_match_transformers(bidirectional, num_buckets, max_distance):
    relative = torch.arange(-1000, 1000)
    expected = T5Attention._relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
    assert torch.equal(t5_relative_bucket(relative, bidirectional, num_buckets, max_distance), expected)


def test_t5_small_distances_are_exact_and_far_ones_share_the_last_bucket():
    relative = torch.arange(-8, 1)
    causal = t5_relative_bucket(relative, bidirectional=False, num_buckets=32, max_distance=128)
    assert causal.tolist() == list(range(8, -1, -1))
    far = t5_relative_bucket(torch.tensor([-10**6, -129]), bidirectional=False)
    assert far.tolist() == [31, 31]
    assert math.isfinite(float(t5_relative_bucket(torch.tensor(0)).item()))
