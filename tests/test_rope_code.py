"""pe_core.rope_code: LLaMA's complex form against rotate_half, the d = 8 example, and the weight permutation."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.rope import default_inv_freq
from pe_core.rope_code import (
    apply_rotary_emb,
    apply_rotary_pos_emb,
    half_split_order,
    interleaved_order,
    pairing_scores,
    precompute_freqs_cis,
    rope_cos_sin,
    rotate_half,
    walkthrough,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def rotation_matrix(dim: int, position: int, base: float) -> torch.Tensor:
    """R_m built entry by entry: 2 × 2 rotations by m·θᵢ on the diagonal (RoFormer eq. 15)."""
    matrix = torch.zeros(dim, dim, dtype=torch.float64)
    for i, theta in enumerate(default_inv_freq(base, dim).tolist()):
        c, s = math.cos(position * theta), math.sin(position * theta)
        matrix[2 * i, 2 * i], matrix[2 * i, 2 * i + 1] = c, -s
        matrix[2 * i + 1, 2 * i], matrix[2 * i + 1, 2 * i + 1] = s, c
    return matrix


def test_the_d8_example_has_the_issues_frequencies():
    example = walkthrough(8, 3, 10_000.0)
    assert example.theta.tolist() == pytest.approx([1.0, 0.1, 0.01, 0.001], rel=1e-15)
    assert example.angle.tolist() == pytest.approx([3.0, 0.3, 0.03, 0.003], rel=1e-15)
    assert example.x.tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert example.half_in.tolist() == [1, 3, 5, 7, 2, 4, 6, 8]
    # pair 0 is (1, 2) turned by 3 rad: (cos 3 − 2 sin 3, sin 3 + 2 cos 3)
    assert example.complex_out[:2].tolist() == pytest.approx(
        [math.cos(3) - 2 * math.sin(3), math.sin(3) + 2 * math.cos(3)], abs=1e-15)
    assert example.largest_difference <= 1e-12
    # base 1000 would not give the example's θ
    assert walkthrough(8, 3, 1000.0).theta[1] == pytest.approx(1000 ** -0.25)


@pytest.mark.parametrize("dim", [2, 4, 8, 16, 64, 128])
@pytest.mark.parametrize("position", [0, 1, 7, 1000, 65_535])
def test_complex_and_rotate_half_agree_number_for_number(dim, position):
    x = torch.randn(dim, generator=torch.Generator().manual_seed(dim + position), dtype=torch.float64)
    example = walkthrough(dim, position, 10_000.0, x)
    assert example.largest_difference <= 1e-12
    torch.testing.assert_close(example.complex_out, rotation_matrix(dim, position, 10_000.0) @ x, rtol=0, atol=1e-12)


def test_rotate_half_by_hand():
    assert rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist() == [-3.0, -4.0, 1.0, 2.0]
    cos, sin = rope_cos_sin(4, [1], 100.0)
    assert cos[0].tolist() == pytest.approx([math.cos(1), math.cos(0.1), math.cos(1), math.cos(0.1)], abs=1e-15)
    assert sin[0].tolist() == pytest.approx([math.sin(1), math.sin(0.1), math.sin(1), math.sin(0.1)], abs=1e-15)


def test_permutation_is_the_conversion_scripts():
    """transformers' convert_llama_weights_to_hf permutes W_q rows with view(heads, d/2, 2, dim).transpose(1, 2)."""
    heads, dim, width = 2, 8, 16
    weights = torch.arange(heads * dim * width, dtype=torch.float64).reshape(heads * dim, width)
    converted = weights.view(heads, dim // 2, 2, width).transpose(1, 2).reshape(heads * dim, width)
    ours = torch.cat([weights[h * dim:(h + 1) * dim][half_split_order(dim)] for h in range(heads)])
    assert torch.equal(converted, ours)
    assert half_split_order(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert torch.equal(half_split_order(8)[interleaved_order(8)], torch.arange(8))


@pytest.mark.parametrize("dim", [4, 8, 32])
def test_permuted_weights_reproduce_interleaved_scores(dim):
    scores = pairing_scores(dim, 64, 40, 10_000.0, seed=dim)
    torch.testing.assert_close(scores.permuted, scores.interleaved, rtol=0, atol=1e-12)
    assert (scores.unpermuted - scores.interleaved).abs().max() > 0.1


def test_with_one_pair_both_layouts_coincide():
    scores = pairing_scores(2, 16, 9, seed=1)
    torch.testing.assert_close(scores.unpermuted, scores.interleaved, rtol=0, atol=1e-12)


def test_freqs_cis_and_the_two_apply_functions():
    cis = precompute_freqs_cis(8, 5, 10_000.0)
    assert cis.dtype == torch.complex128 and cis.shape == (5, 4)
    torch.testing.assert_close(cis[2].angle(), torch.tensor([2.0, 0.2, 0.02, 0.002], dtype=torch.float64))
    q, k = torch.randn(5, 8, dtype=torch.float64), torch.randn(5, 8, dtype=torch.float64)
    q_out, k_out = apply_rotary_emb(q, k, cis)
    cos, sin = rope_cos_sin(8, torch.arange(5), 10_000.0)
    order = half_split_order(8)
    q_half, k_half = apply_rotary_pos_emb(q[:, order], k[:, order], cos, sin)
    torch.testing.assert_close(q_half, q_out[:, order], rtol=0, atol=1e-12)
    torch.testing.assert_close(k_half, k_out[:, order], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="freqs_cis has shape"):
        apply_rotary_emb(q, k, cis[:3])


def test_errors_are_sentences():
    with pytest.raises(ValueError, match="even integer"):
        walkthrough(7, 1)
    with pytest.raises(ValueError, match="position must be a whole number"):
        walkthrough(8, -1)
    with pytest.raises(ValueError, match="base must be a number > 1"):
        precompute_freqs_cis(8, 4, 1.0)
    with pytest.raises(ValueError, match="query position"):
        pairing_scores(8, 4, 9)
