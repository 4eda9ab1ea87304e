"""Closed-form checks of every rope type and of the helpers the pages share."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core import (
    METHODS,
    RopeSpec,
    angle_coverage,
    method_setup,
    ntk_by_parts_gamma,
    rope_frequencies,
    rotation_angles,
    rotations_within,
    wavelengths,
    yarn_correction_range,
)

D = 128


def theta(base: float = 10000.0, dim: int = D) -> torch.Tensor:
    """θ_i = b^(−2i/d), written out independently of pe_core."""
    return torch.tensor([base ** (-2 * i / dim) for i in range(dim // 2)], dtype=torch.float64)


def test_default_is_roformer_theta():
    inv_freq = rope_frequencies(RopeSpec(head_dim=D)).inv_freq
    assert inv_freq.dtype == torch.float64 and inv_freq.shape == (D // 2,)
    torch.testing.assert_close(inv_freq, theta(), rtol=1e-15, atol=0)
    assert inv_freq[0] == 1.0


def test_linear_divides_by_factor():
    spec = RopeSpec(head_dim=D, rope_type="linear", factor=8)
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, theta() / 8, rtol=1e-15, atol=0)


def test_ntk_base_closed_form():
    spec = RopeSpec(head_dim=128, rope_type="ntk", factor=8)
    new_base = 10000 * 8 ** (128 / 126)
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, theta(new_base), rtol=1e-13, atol=0)


def test_ntk_lowest_frequency_equals_pi_and_highest_is_unchanged():
    ntk = rope_frequencies(RopeSpec(head_dim=D, rope_type="ntk", factor=16)).inv_freq
    pi = rope_frequencies(RopeSpec(head_dim=D, rope_type="linear", factor=16)).inv_freq
    assert ntk[-1].item() == pytest.approx(pi[-1].item(), rel=1e-12)
    assert ntk[0].item() == 1.0


def test_dynamic_equals_plain_up_to_training_length_and_ntk_beyond():
    spec = RopeSpec(head_dim=D, rope_type="dynamic", factor=1.0, original_max_position_embeddings=4096)
    for seq_len in (None, 1, 4096):
        torch.testing.assert_close(rope_frequencies(spec, seq_len).inv_freq, theta(), rtol=1e-15, atol=0)
    # factor 1 at length 4L: base·4^(d/(d−2)), i.e. static NTK at s = 4
    torch.testing.assert_close(rope_frequencies(spec, 4 * 4096).inv_freq, theta(10000 * 4 ** (D / (D - 2))),
                               rtol=1e-13, atol=0)


def test_dynamic_transformers_formula_with_factor():
    spec = RopeSpec(head_dim=64, rope_type="dynamic", factor=2.0, original_max_position_embeddings=2048)
    expected_base = 10000 * ((2 * 8192 / 2048) - 1) ** (64 / 62)
    torch.testing.assert_close(rope_frequencies(spec, 8192).inv_freq, theta(expected_base, 64), rtol=1e-13, atol=0)


def test_yarn_attention_factor_is_0_1_ln_s_plus_1():
    for s in (1.5, 4.0, 16.0, 40.0):
        spec = RopeSpec(head_dim=D, rope_type="yarn", factor=s)
        assert rope_frequencies(spec).attention_factor == pytest.approx(0.1 * math.log(s) + 1, rel=1e-15)
    # DeepSeek-style: mscale == mscale_all_dim cancels to 1
    spec = RopeSpec(head_dim=64, rope_type="yarn", factor=40, mscale=1.0, mscale_all_dim=1.0)
    assert rope_frequencies(spec).attention_factor == 1.0
    spec = RopeSpec(head_dim=64, rope_type="yarn", factor=40, mscale=0.707, mscale_all_dim=0.0)
    assert rope_frequencies(spec).attention_factor == pytest.approx(0.1 * math.log(40) + 1)


def test_yarn_keeps_high_frequencies_and_interpolates_low_ones():
    spec = RopeSpec(head_dim=D, rope_type="yarn", factor=8, original_max_position_embeddings=4096)
    inv_freq = rope_frequencies(spec).inv_freq
    low, high = yarn_correction_range(spec)
    base_theta = theta()
    # correction dims from i = d·ln(L/(2πr)) / (2 ln b), floored / ceiled
    assert low == math.floor(D * math.log(4096 / (32 * 2 * math.pi)) / (2 * math.log(10000)))
    assert high == math.ceil(D * math.log(4096 / (1 * 2 * math.pi)) / (2 * math.log(10000)))
    torch.testing.assert_close(inv_freq[: low + 1], base_theta[: low + 1], rtol=1e-15, atol=0)
    torch.testing.assert_close(inv_freq[high:], base_theta[high:] / 8, rtol=1e-15, atol=0)
    middle = inv_freq[low + 1 : high]
    assert torch.all(middle < base_theta[low + 1 : high]) and torch.all(middle > base_theta[low + 1 : high] / 8)


def test_ntk_by_parts_follows_the_paper_gamma():
    spec = RopeSpec(head_dim=D, rope_type="ntk_by_parts", factor=8, original_max_position_embeddings=4096)
    base_theta = theta()
    r = 4096 / (2 * math.pi / base_theta)
    gamma = ((r - 1) / (32 - 1)).clamp(0, 1)
    torch.testing.assert_close(ntk_by_parts_gamma(spec), gamma, rtol=1e-14, atol=1e-15)
    expected = (1 - gamma) * base_theta / 8 + gamma * base_theta
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, expected, rtol=1e-14, atol=0)
    # r > β: untouched, r < α: exactly PI
    inv_freq = rope_frequencies(spec).inv_freq
    torch.testing.assert_close(inv_freq[r > 32], base_theta[r > 32], rtol=1e-15, atol=0)
    torch.testing.assert_close(inv_freq[r < 1], base_theta[r < 1] / 8, rtol=1e-15, atol=0)


def test_llama3_bands():
    spec = RopeSpec(head_dim=D, base=500000.0, rope_type="llama3", factor=8, original_max_position_embeddings=8192)
    inv_freq = rope_frequencies(spec).inv_freq
    base_theta = theta(500000.0)
    wavelen = 2 * math.pi / base_theta
    high = wavelen < 8192 / 4
    low = wavelen > 8192 / 1
    torch.testing.assert_close(inv_freq[high], base_theta[high], rtol=1e-15, atol=0)
    torch.testing.assert_close(inv_freq[low], base_theta[low] / 8, rtol=1e-15, atol=0)
    mid = ~high & ~low
    smooth = (8192 / wavelen[mid] - 1) / 3
    torch.testing.assert_close(inv_freq[mid], (1 - smooth) * base_theta[mid] / 8 + smooth * base_theta[mid])


def test_longrope_picks_factor_set_by_length_and_attention_factor():
    short = tuple(1.0 + 0.01 * i for i in range(32))
    long = tuple(1.0 + 0.5 * i for i in range(32))
    spec = RopeSpec(head_dim=64, rope_type="longrope", factor=32, original_max_position_embeddings=4096,
                    short_factor=short, long_factor=long)
    base_theta = theta(dim=64)
    torch.testing.assert_close(rope_frequencies(spec, 4096).inv_freq, base_theta / torch.tensor(short))
    torch.testing.assert_close(rope_frequencies(spec, 4097).inv_freq, base_theta / torch.tensor(long))
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, base_theta / torch.tensor(short))
    assert rope_frequencies(spec).attention_factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))


def test_partial_rotary_factor_rotates_a_fraction():
    spec = RopeSpec(head_dim=128, partial_rotary_factor=0.25)
    assert spec.rotary_dim == 32
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, theta(dim=32), rtol=1e-15, atol=0)


def test_helpers_are_consistent():
    inv_freq = theta()
    positions = torch.arange(0, 1000, 7, dtype=torch.float64)
    angles = rotation_angles(inv_freq, positions)
    assert angles.shape == (len(positions), D // 2) and angles.dtype == torch.float64
    assert angles[5, 3].item() == positions[5].item() * inv_freq[3].item()
    torch.testing.assert_close(rotation_angles(inv_freq, range(0, 1000, 7)), angles)
    torch.testing.assert_close(wavelengths(inv_freq) * inv_freq, torch.full_like(inv_freq, 2 * math.pi))
    torch.testing.assert_close(rotations_within(inv_freq, 4096), 4096 * inv_freq / (2 * math.pi))


def test_unseen_angles_direct_vs_pi():
    base_theta = theta()
    direct = angle_coverage(base_theta, base_theta, 4096, 16384)
    # direct extrapolation: exactly the pairs that never completed a turn in training see new angles
    assert torch.equal(direct.unseen, (4096 * base_theta) < 2 * math.pi)
    assert 0 < int(direct.unseen.sum()) < D // 2
    pi = angle_coverage(base_theta, base_theta / 4, 4096, 16384)
    # PI keeps every angle inside the trained range: (16384/4)·θ = 4096·θ
    assert not pi.unseen.any()


@pytest.mark.parametrize("method", METHODS)
def test_every_method_builds_and_is_positive(method):
    setup = method_setup(method, 64, 10000.0, 1024, 8192)
    inv_freq, attention_factor = setup.frequencies()
    assert inv_freq.shape == (32,) and torch.all(inv_freq > 0) and attention_factor >= 1
    assert setup.spec.original_max_position_embeddings == 1024 and setup.seq_len == 8192
    # no method speeds up any rotation: θ'_i ≤ θ_i, except a base change towards smaller bases
    if method != "abf":
        assert torch.all(inv_freq <= theta(dim=64) * (1 + 1e-12))


def test_method_setup_scale_is_target_over_train():
    assert method_setup("pi", 64, 10000.0, 1000, 3000).spec.factor == 3.0
    assert method_setup("pi", 64, 10000.0, 1000, 500).spec.factor == 1.0  # never compresses


def test_seq_len_is_taken_as_transformers_functions_take_it():
    """transformers passes max(position_ids) + 1, a 0-d tensor, and a sequence may be empty (0 tokens)."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    spec = RopeSpec(head_dim=128, base=10_000.0, rope_type="dynamic", factor=4.0, original_max_position_embeddings=4096)
    config = LlamaConfig(hidden_size=4096, num_attention_heads=32, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "dynamic", "factor": 4.0, "rope_theta": 10_000.0})
    for given in (torch.tensor(16_384), 16_384, torch.tensor(0), 0):
        theirs, _factor = ROPE_INIT_FUNCTIONS["dynamic"](config, "cpu", seq_len=given)
        ours = rope_frequencies(spec, given).inv_freq
        torch.testing.assert_close(ours, theirs.double(), rtol=2e-6, atol=0)
    assert torch.equal(rope_frequencies(spec, torch.tensor(0)).inv_freq, rope_frequencies(spec, 4096).inv_freq)
    for bad in (-1, 2.5, torch.tensor(3.0), torch.tensor([5, 6]), True):
        with pytest.raises(ValueError, match="seq_len must be a whole number of tokens"):
            rope_frequencies(spec, bad)
