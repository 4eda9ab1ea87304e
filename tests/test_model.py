"""The tiny transformer: shapes, causality, and position handling equal to pe_core's maths."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.biases import alibi_bias, t5_relative_bucket
from pe_core.methods import method_setup
from pe_core.model import (
    POSITION_ENCODINGS,
    ModelConfig,
    Rotary,
    TinyTransformer,
    parameter_count,
    rotate,
    sinusoidal_table,
)
from pe_core.rope import RopeSpec, rope_frequencies, rotation_angles

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def assert_close(actual: torch.Tensor, expected: torch.Tensor, atol: float = 1e-6) -> None:
    # not torch.testing.assert_close: its first call imports torch.distributed (seconds)
    assert actual.shape == expected.shape
    difference = (actual.double() - expected.double()).abs().max().item()
    assert difference <= atol, f"max difference {difference:g} > {atol:g}"


def tiny(position: str = "rope", **changes) -> TinyTransformer:
    torch.manual_seed(0)
    values = dict(vocab_size=11, n_layer=2, n_head=2, d_model=16, train_length=8, max_positions=64, position=position)
    values.update(changes)
    return TinyTransformer(ModelConfig(**values)).eval()


def _random_ids(batch: int, length: int, vocab: int = 11, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("position", POSITION_ENCODINGS)
def test_logits_have_one_distribution_per_position(position):
    model = tiny(position)
    logits = model(_random_ids(3, 20))
    assert logits.shape == (3, 20, 11)
    assert torch.isfinite(logits).all()
    losses = model.token_losses(_random_ids(3, 20), _random_ids(3, 20, seed=2))
    assert losses.shape == (3, 20)
    # an untrained model predicts nearly uniformly: loss ≈ ln(vocab)
    assert abs(losses.mean().item() - math.log(11)) < 0.3


@pytest.mark.parametrize("position", POSITION_ENCODINGS)
def test_no_information_flows_from_future_tokens(position):
    model = tiny(position)
    ids = _random_ids(2, 24)
    changed = ids.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 11
    before, after = model(ids), model(changed)
    assert_close(before[:, :10], after[:, :10])
    assert (before[:, 10:] - after[:, 10:]).abs().max() > 1e-4  # later positions do see the change


@pytest.mark.parametrize("pairing", ["half", "interleaved"])
@pytest.mark.parametrize("spec", [
    RopeSpec(head_dim=16, base=10000.0, original_max_position_embeddings=8),
    method_setup("yarn", 16, 10000.0, 8, 64).spec,  # attention factor 0.1·ln 8 + 1
    method_setup("pi", 16, 500.0, 8, 32).spec,
])
def test_rotation_equals_pe_core_angles_on_each_pair(pairing, spec):
    length = 40
    x = torch.randn(3, length, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    rotary = Rotary(spec, pairing)
    cos, sin = rotary.cos_sin(length, torch.device("cpu"), torch.float64)
    rotated = rotate(x, cos, sin, pairing)

    frequencies = rope_frequencies(spec, seq_len=length)
    angles = rotation_angles(frequencies.inv_freq, range(length))  # [positions, pairs]
    pairs = 8
    if pairing == "half":
        index_a, index_b = torch.arange(pairs), torch.arange(pairs) + pairs
    else:
        index_a, index_b = 2 * torch.arange(pairs), 2 * torch.arange(pairs) + 1
    # a pair (a, b) is the complex number a + ib, rotated by e^{i·angle} and scaled by the attention factor
    expected = torch.complex(x[..., index_a], x[..., index_b]) * torch.polar(
        torch.full_like(angles, frequencies.attention_factor), angles)
    assert_close(rotated[..., index_a], expected.real, atol=1e-12)
    assert_close(rotated[..., index_b], expected.imag, atol=1e-12)


def test_dynamic_ntk_uses_the_current_length():
    spec = method_setup("dynamic", 16, 10000.0, 8, 8).spec
    rotary = Rotary(spec, "half")
    for length in (8, 32):
        cos, _ = rotary.cos_sin(length, torch.device("cpu"), torch.float64)
        inv_freq = rope_frequencies(spec, seq_len=length).inv_freq
        assert_close(cos, rotation_angles(inv_freq, range(length)).cos())
    short, _ = rotary.cos_sin(8, torch.device("cpu"), torch.float64)
    long, _ = rotary.cos_sin(32, torch.device("cpu"), torch.float64)
    plain = rotation_angles(rope_frequencies(RopeSpec(head_dim=16)).inv_freq, range(8)).cos()
    assert_close(short, plain)  # within L: plain RoPE
    assert (long[:8] - plain).abs().max() > 1e-3  # at 4L the base has grown


def test_rope_scores_depend_only_on_relative_position():
    spec = RopeSpec(head_dim=16, base=100.0, original_max_position_embeddings=8)
    rotary = Rotary(spec, "interleaved")
    q, k = torch.randn(2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    cos, sin = rotary.cos_sin(60, torch.device("cpu"), torch.float64)

    def score(m: int, n: int) -> float:
        qm = rotate(q.expand(60, 16), cos, sin, "interleaved")[m]
        kn = rotate(k.expand(60, 16), cos, sin, "interleaved")[n]
        return float(qm @ kn)

    assert score(7, 3) == pytest.approx(score(40, 36), abs=1e-12)
    assert score(7, 3) != pytest.approx(score(7, 2), abs=1e-6)


def test_set_rope_changes_the_model_and_none_restores_it():
    model = tiny("rope")
    with torch.no_grad():  # sharpen the attention of the untrained model so positions matter
        for block in model.blocks:
            block.attention.qkv.weight.mul_(30)
    ids = _random_ids(1, 32)
    plain = model(ids)
    model.set_rope(method_setup("pi", model.config.head_dim, 10000.0, 8, 32).spec)
    assert (model(ids) - plain).abs().max() > 1e-4
    model.set_rope(None)
    assert_close(model(ids), plain)
    with pytest.raises(ValueError, match="head_dim"):
        model.set_rope(RopeSpec(head_dim=32))
    with pytest.raises(ValueError, match="RoPE model"):
        tiny("alibi").set_rope(None)


def test_alibi_bias_is_pe_core_alibi_with_a_causal_mask():
    model = tiny("alibi", n_head=4)
    bias = model.attention_bias(12, torch.device("cpu"), torch.float64)
    expected = alibi_bias(4, 12)
    allowed = torch.ones(12, 12).tril().bool()
    assert_close(bias[:, allowed], expected[:, allowed])
    assert torch.isneginf(bias[:, ~allowed]).all()
    # slopes for 4 heads are 2^-2, 2^-4, 2^-6, 2^-8 (Press et al. 2022)
    assert_close(-bias[:, 5, 4], torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8], dtype=torch.float64))


def test_t5_bias_looks_up_one_learned_value_per_bucket_and_head():
    model = tiny("t5", n_head=2, train_length=32)
    with torch.no_grad():
        model.t5_bias.weight.copy_(torch.arange(64, dtype=torch.float32).view(32, 2))
    bias = model.attention_bias(40, torch.device("cpu"), torch.float32)
    query, key = 39, 2  # distance 37 ≥ max_distance 32: the last bucket
    bucket = int(t5_relative_bucket(torch.tensor(key - query), bidirectional=False, num_buckets=32, max_distance=32))
    assert bucket == 31
    assert bias[1, query, key] == 2 * bucket + 1
    assert bias[0, 5, 5] == 0  # distance 0 → bucket 0 → weight row 0
    assert torch.isneginf(bias[0, 3, 4])


def test_sinusoidal_table_is_vaswanis_formula():
    table = sinusoidal_table(9, 6, 10000.0)
    for position in (0, 1, 8):
        for i in range(3):
            angle = position / 10000.0 ** (2 * i / 6)
            assert table[position, 2 * i] == pytest.approx(math.sin(angle), abs=1e-15)
            assert table[position, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-15)


def test_sinusoidal_model_adds_the_table_to_scaled_token_embeddings():
    model = tiny("sinusoidal", n_layer=1)
    ids = _random_ids(1, 10)
    captured = {}
    model.blocks[0].register_forward_pre_hook(lambda module, args: captured.update(x=args[0]))
    model(ids)
    expected = model.token_embedding(ids) * 4.0 + sinusoidal_table(10, 16, 10000.0).float()
    assert_close(captured["x"], expected)


def test_learned_positions_past_the_table_are_refused():
    model = tiny("learned", max_positions=16)
    model(_random_ids(1, 16))
    with pytest.raises(ValueError, match="16 positions"):
        model(_random_ids(1, 17))


@pytest.mark.parametrize("position", POSITION_ENCODINGS)
def test_parameter_count_formula_matches_the_built_model(position):
    config = ModelConfig(n_layer=3, n_head=4, d_model=24, max_positions=100, position=position)
    assert parameter_count(config) == TinyTransformer(config).num_parameters()


@pytest.mark.parametrize("changes, message", [
    ({"position": "xpos"}, "position must be one of"),
    ({"d_model": 18, "n_head": 4}, "divisible"),
    ({"d_model": 12, "n_head": 4}, "even"),
    ({"n_layer": 0}, "n_layer"),
    ({"rope_pairing": "zigzag"}, "rope_pairing"),
])
def test_invalid_configs_are_explained(changes, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**changes)
