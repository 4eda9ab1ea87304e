"""pe_core.absolute_schemes: FLOATER, multiplicative, hierarchical decomposition, complex order, CNN padding."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.absolute_schemes import (
    cnn_position_features,
    complex_order_embedding,
    complex_order_word,
    cosine_similarity,
    differs_from_centre,
    floater_generator,
    floater_linear_positions,
    hierarchical_basis,
    hierarchical_positions,
    multiplicative_positions,
    receptive_radius,
    stand_in_table,
)
from pe_core.relative import offset_dependence, sinusoidal_positions

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("count, dim", [(64, 8), (512, 64), (4096, 128)])
def test_floater_linear_solution_is_sinusoidal(count, dim):
    positions = torch.arange(count)
    # rounding of t·ω grows with t, as it does in sin(t·ω) itself
    torch.testing.assert_close(floater_linear_positions(positions, dim), sinusoidal_positions(count, dim),
                               rtol=0, atol=2e-15 * count)


def test_floater_solution_solves_the_ode():
    dim, positions = 8, torch.linspace(0, 50, 11, dtype=torch.float64)
    generator = floater_generator(dim)
    step = 1e-6
    derivative = (floater_linear_positions(positions + step, dim) - floater_linear_positions(positions - step, dim)) / (
        2 * step)
    torch.testing.assert_close(derivative, floater_linear_positions(positions, dim) @ generator.T, rtol=0, atol=5e-8)
    assert floater_linear_positions(torch.tensor([0.0]), 4).tolist() == [[0.0, 1.0, 0.0, 1.0]]


def test_multiplicative_positions_entangle_content():
    table = sinusoidal_positions(16, 4)
    balanced = multiplicative_positions(torch.tensor([2.0, 2.0, 1.0, 1.0]), table)
    skewed = multiplicative_positions(torch.tensor([3.0, 0.5, 1.0, 1.0]), table)
    torch.testing.assert_close(balanced[5], torch.tensor([2.0, 2.0, 1.0, 1.0], dtype=torch.float64) * table[5])
    assert offset_dependence(balanced @ balanced.T) < 1e-12  # x₂ₖ² = x₂ₖ₊₁²: relative
    assert offset_dependence(skewed @ skewed.T) > 0.1
    with pytest.raises(ValueError, match="must match"):
        multiplicative_positions(torch.ones(3), table)


def test_hierarchical_keeps_the_table_and_extends_to_n_squared():
    table = stand_in_table(16, 8, seed=3)
    extended = hierarchical_positions(table, 0.4, 256)
    torch.testing.assert_close(extended[:16], table, rtol=0, atol=1e-14)
    basis = hierarchical_basis(table, 0.4)
    # position 3·16 + 5 = 53: 0.4·u₃ + 0.6·u₅; swapping the digits differs by (2α − 1)(u₃ − u₅)
    torch.testing.assert_close(extended[53], 0.4 * basis[3] + 0.6 * basis[5])
    torch.testing.assert_close(extended[53] - extended[83], (2 * 0.4 - 1) * (basis[3] - basis[5]))
    half = hierarchical_positions(table, 0.5, 256)
    torch.testing.assert_close(half[53], half[83])  # α = 1/2: the two digits collide
    with pytest.raises(ValueError, match="at most 256"):
        hierarchical_positions(table, 0.4, 257)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        hierarchical_positions(table, 1.0, 10)


def test_complex_order_shift_is_a_position_free_multiplication():
    amplitude, frequency, phase = complex_order_word(6, seed=4)
    embedding = complex_order_embedding(amplitude, frequency, phase, torch.arange(40))
    torch.testing.assert_close(embedding[17], embedding[10] * torch.exp(1j * frequency * 7), rtol=0, atol=1e-13)
    torch.testing.assert_close(embedding.abs(), amplitude.expand(40, 6), rtol=0, atol=1e-14)
    assert offset_dependence(cosine_similarity(embedding)) < 1e-12
    expected = (amplitude**2 * torch.cos(frequency * 9)).sum() / (amplitude**2).sum()
    assert cosine_similarity(embedding)[12, 3] == pytest.approx(float(expected), abs=1e-14)


@pytest.mark.parametrize("layers, kernel", [(1, 3), (3, 3), (2, 5), (4, 7)])
def test_cnn_zero_padding_marks_only_positions_near_an_edge(layers, kernel):
    length = 48
    radius = receptive_radius(layers, kernel)
    features = cnn_position_features(length, layers=layers, kernel=kernel, seed=layers)
    marked = differs_from_centre(features)
    near_edge = (torch.arange(length) < radius) | (torch.arange(length) >= length - radius)
    assert torch.equal(marked, near_edge)
    circular = cnn_position_features(length, layers=layers, kernel=kernel, padding="circular", seed=layers)
    assert not differs_from_centre(circular).any()


def test_cnn_errors():
    with pytest.raises(ValueError, match="odd positive"):
        cnn_position_features(10, kernel=4)
    with pytest.raises(ValueError, match="Padding must be"):
        cnn_position_features(10, padding="reflect")


def test_cosine_similarity_of_sinusoidal_positions_is_the_mean_cosine():
    table = sinusoidal_positions(10, 4)
    similarity = cosine_similarity(table)
    assert similarity[7, 2] == pytest.approx((math.cos(5) + math.cos(0.05)) / 2, abs=1e-15)
    assert torch.allclose(similarity.diagonal(), torch.ones(10, dtype=torch.float64))
