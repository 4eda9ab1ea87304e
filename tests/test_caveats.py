"""pe_core.caveats: dynamic NTK's KV cache, NTK's required s, ReRoPE's cost, PI's position map."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.caveats import (
    cache_angle_error,
    dynamic_base,
    dynamic_inv_freq,
    expected_relative_error,
    first_partial_pair,
    kv_cache_error,
    leaky_rerope_trained_reach,
    ntk_reach,
    ntk_required_scale,
    ntk_safe_ratio,
    pi_positions,
    rerope_cost,
    rerope_limits,
    written_lengths,
)
from pe_core.rope import RopeSpec, rope_frequencies

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --- dynamic NTK -----------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [1.0, 4.0])
def test_dynamic_frequencies_match_pe_core_rope(factor):
    spec = RopeSpec(head_dim=64, base=10_000.0, rope_type="dynamic", factor=factor,
                    original_max_position_embeddings=512)
    lengths = [1, 512, 513, 1000, 4096]
    table = dynamic_inv_freq(10_000.0, 64, 512, lengths, factor)
    for row, length in zip(table, lengths, strict=True):
        torch.testing.assert_close(row, rope_frequencies(spec, length).inv_freq, rtol=1e-15, atol=0)
    assert dynamic_base(10_000.0, 64, 512, [2048], 1.0)[0] == pytest.approx(10_000 * 4 ** (64 / 62))


def test_written_lengths():
    assert written_lengths(torch.arange(6), 3).tolist() == [3, 3, 3, 4, 5, 6]


def test_cache_angle_error_by_hand():
    # d = 4, b = 100, L = 8; key 10 written at length 11, read at length 16: Δᵢ = 10·(θᵢ(11) − θᵢ(16))
    delta = cache_angle_error(100.0, 4, 8, 8, [10], 16)[0]
    base_11, base_16 = 100 * (11 / 8) ** 2, 100 * 2**2
    assert delta.tolist() == pytest.approx([0.0, 10 * (base_11**-0.5 - base_16**-0.5)], rel=1e-13)
    expected = math.sqrt(4 * (1 - math.cos(delta[1].item())) / 4)
    assert expected_relative_error(delta[None, :], 4)[0].item() == pytest.approx(expected, rel=1e-14)


def test_cache_error_is_zero_within_training_and_grows_beyond():
    result = kv_cache_error(64, 10_000.0, 1024, 1024, 8192, lengths=9, keys=64, draws=8)
    assert result.lengths[0] == 1024 and result.lengths[-1] == 8192
    assert result.expected[0] == 0 and result.measured[0] == 0  # at L every key used the trained base
    assert (result.expected[1:] > 0.5).all()
    assert result.stale_keys == 8191  # every key but the query's own was written under an older base
    assert result.key_expected[0] == 0  # position 0 is not rotated at all
    assert result.key_expected[-1] == pytest.approx(0.0, abs=1e-12)  # the newest key uses the current base


def test_measured_cache_error_matches_the_closed_form():
    result = kv_cache_error(64, 10_000.0, 512, 512, 4096, lengths=5, keys=256, draws=64, seed=3)
    ratio = result.measured[1:] / result.expected[1:]
    assert ((ratio > 0.9) & (ratio < 1.1)).all(), ratio


def test_no_cache_error_without_growth():
    # factor 1 and a sequence that never passes L: the base never changes
    result = kv_cache_error(32, 10_000.0, 4096, 100, 4000, lengths=4, keys=32, draws=4)
    assert result.expected.abs().max() == 0 and result.measured.abs().max() == 0 and result.stale_keys == 0


# --- NTK-aware: how large s must be ----------------------------------------------------------------------


def test_ntk_numbers_for_llama():
    assert first_partial_pair(128, 10_000.0, 4096) == 46
    required = float(ntk_required_scale(128, 10_000.0, 4096, 8.0))
    assert required == pytest.approx(8 ** (126 / 92), rel=1e-14) and required == pytest.approx(17.252, abs=5e-4)
    safe = float(ntk_safe_ratio(128, 10_000.0, 4096, [8.0])[0])
    assert safe == pytest.approx(8 ** (92 / 126), rel=1e-14) and safe == pytest.approx(4.5646, abs=5e-5)
    at_real = ntk_reach(128, 10_000.0, 4096, 8.0, 8.0)
    assert int(at_real.unseen.sum()) == 17
    assert at_real.unseen.nonzero().flatten().tolist() == list(range(46, 63))  # the last pair lands exactly
    ratio = at_real.target_max_angle / at_real.train_max_angle
    assert float(ratio[46]) == pytest.approx(8 ** (1 - 92 / 126), rel=1e-12) and float(ratio[46]) == pytest.approx(
        1.753, abs=5e-4)
    assert int(ntk_reach(128, 10_000.0, 4096, 8.0, required).unseen.sum()) == 0


def test_safe_ratio_inverts_the_required_scale():
    scales = torch.tensor([2.0, 8.0, 32.0], dtype=torch.float64)
    safe = ntk_safe_ratio(64, 500_000.0, 8192, scales)
    torch.testing.assert_close(ntk_required_scale(64, 500_000.0, 8192, safe), scales, rtol=1e-13, atol=0)


def test_every_pair_turning_means_no_requirement():
    assert first_partial_pair(16, 10.0, 4096) == 8
    assert math.isinf(float(ntk_safe_ratio(16, 10.0, 4096, [2.0])[0]))
    assert float(ntk_required_scale(16, 10.0, 4096, 8.0)) == 1.0


# --- ReRoPE ------------------------------------------------------------------------------------------------


def test_rerope_cost_by_hand():
    cost = rerope_cost(2, [3])
    # D = 2, n = 3: linear 24·3·4 = 288; RoPE 4·9·2 + 6·3·2 = 108; ReRoPE 6·9·2 + 9·3·2 = 162; leaky 108 + 72 = 180
    assert cost.prefill["rope"].item() == 288 + 108
    assert cost.prefill["rerope"].item() == 288 + 162
    assert cost.prefill["leaky_rerope"].item() == 288 + 180
    # decode: 24·4 = 96; RoPE 4·3·2 + 6·2 = 36; ReRoPE 7·3·2 = 42
    assert cost.decode["rope"].item() == 96 + 36 and cost.decode["rerope"].item() == 96 + 42
    assert cost.prefill_ratio["leaky_train_rope_infer"].item() == 1.0


def test_rerope_ratios_and_limits():
    cost = rerope_cost(4096, [4096, 32768, 1 << 24])
    assert cost.prefill_ratio["rerope"][0].item() == pytest.approx((30 * 4096 + 9) / (28 * 4096 + 6), rel=1e-14)
    assert cost.prefill_ratio["rerope"][1].item() == pytest.approx(1.2857, abs=5e-5)
    assert cost.decode_ratio["rerope"][1].item() == pytest.approx(1.4285, abs=5e-5)
    limits = rerope_limits()
    assert cost.prefill_ratio["rerope"][-1].item() == pytest.approx(limits["rerope"][0], abs=2e-3)
    assert cost.decode_ratio["rerope"][-1].item() == pytest.approx(limits["rerope"][1], abs=2e-3)
    assert (torch.diff(cost.decode_ratio["rerope"]) > 0).all()


def test_leaky_rerope_trained_reach():
    # train at 2048 with window 256 and k = 16: relative positions up to 256 + 16·(2047 − 256) = 28,912
    assert leaky_rerope_trained_reach(2048, 256, 16.0) == 28_912
    with pytest.raises(ValueError, match="window"):
        leaky_rerope_trained_reach(2048, 2048, 16.0)


# --- PI --------------------------------------------------------------------------------------------------


def test_pi_positions_and_the_slip():
    interpolated, slipped = pi_positions(torch.tensor([0.0, 16_384.0, 32_768.0]), 8.0)
    assert interpolated.tolist() == [0.0, 2048.0, 4096.0]
    assert slipped.tolist() == [0.0, 131_072.0, 262_144.0]
    with pytest.raises(ValueError, match="scale s"):
        pi_positions([1.0], 0.5)
