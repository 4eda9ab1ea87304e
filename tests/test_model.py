"""The tiny transformer: shapes, causality, and position handling equal to pe_core's maths (Transformer-XL and
DeBERTa equal to pe_core.relative's decompositions, ReRoPE to pe_core.family's rectified positions)."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core import relative
from pe_core.biases import alibi_bias, t5_relative_bucket
from pe_core.family import leaky_rerope_positions, relative_distances, rerope_positions
from pe_core.methods import method_setup
from pe_core.model import (
    POSITION_ENCODINGS,
    ModelConfig,
    Positions,
    Rotary,
    TinyTransformer,
    deberta_rows_by_distance,
    parameter_count,
    position_wavelengths,
    rectified_scores,
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


# --- Transformer-XL and DeBERTa: the same scores as pe_core.relative's four-term decompositions ------------


def _attention_input_and_output(model: TinyTransformer, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    captured = {}
    attention = model.blocks[0].attention
    attention.register_forward_hook(lambda module, args, out: captured.update(x=args[0], y=out))
    model(ids)
    return captured["x"][0].double(), captured["y"][0].double()


def _expected_output(attention, x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """softmax(causal scores)·V, projected: what one head of attention gives for these logits."""
    width = attention.n_head * attention.head_dim
    v = x @ attention.qkv.weight[2 * width:].double().T
    future = torch.ones_like(scores, dtype=torch.bool).triu(1)
    weights = scores.masked_fill(future, float("-inf")).softmax(-1)
    return (weights @ v) @ attention.out.weight.double().T


def _scheme_parameters(x: torch.Tensor, attention, **tables) -> relative.SchemeParameters:
    width = attention.n_head * attention.head_dim
    weight = attention.qkv.weight.detach().double()
    unused = torch.zeros(1, 1, dtype=torch.float64)
    values = {name: unused for name in relative.SchemeParameters._fields}
    values.update(x=x, p=torch.zeros_like(x), w_q=weight[:width].T, w_k=weight[width: 2 * width].T, **tables)
    return relative.SchemeParameters(**values)


def test_transformer_xl_attention_is_dai_et_als_four_terms():
    model = tiny("xl", n_head=1, n_layer=1, d_model=16, rope_base=10000.0)
    attention = model.blocks[0].attention
    with torch.no_grad():
        for parameter in (attention.xl_u, attention.xl_v):
            parameter.normal_(generator=torch.Generator().manual_seed(4))
        attention.qkv.weight.mul_(20)  # sharpen attention, so a wrong term would show
    x, y = _attention_input_and_output(model, _random_ids(1, 24))
    params = _scheme_parameters(x.detach(), attention, xl_w_r=attention.xl_w_r.weight.detach().double().T,
                                xl_u=attention.xl_u.detach().double().flatten(),
                                xl_v=attention.xl_v.detach().double().flatten())
    terms = relative.xl_terms(params)  # sinusoid R of base 10,000 over the width, as the model's
    assert_close(y.detach(), _expected_output(attention, x.detach(), terms.total / math.sqrt(16)), atol=1e-5)


def test_deberta_attention_is_he_et_als_disentangled_terms():
    model = tiny("deberta", n_head=1, n_layer=1, d_model=16, train_length=8)
    attention = model.blocks[0].attention
    with torch.no_grad():
        attention.qkv.weight.mul_(20)
        model.deberta_table.weight.mul_(30)
    x, y = _attention_input_and_output(model, _random_ids(1, 24))  # 3× the span k = 8: clipped distances too
    params = _scheme_parameters(x.detach(), attention, deberta_rel=model.deberta_table.weight.detach().double(),
                                deberta_w_qr=attention.deberta_q_r.weight.detach().double().T,
                                deberta_w_kr=attention.deberta_k_r.weight.detach().double().T)
    terms = relative.deberta_terms(params)
    assert terms.content_position.abs().max() > 0.1 and terms.position_content.abs().max() > 0.1
    assert_close(y.detach(), _expected_output(attention, x.detach(), terms.total / math.sqrt(3 * 16)), atol=1e-5)


def test_deberta_rows_clip_at_the_span_and_the_position_figure_names_them():
    config = ModelConfig(position="deberta", train_length=8)
    assert deberta_rows_by_distance(config, 12).tolist() == [8, 9, 10, 11, 12, 13, 14, 15, 15, 15, 15, 15]
    assert position_wavelengths(ModelConfig(position="xl", d_model=8, rope_base=100.0)).tolist() == pytest.approx(
        [2 * math.pi * 100 ** (2 * i / 8) for i in range(4)])


# --- inference-time tricks: log-n scaling, ReRoPE and Leaky ReRoPE --------------------------------------


def _expected_rope_scores(q: torch.Tensor, k: torch.Tensor, relative_positions: torch.Tensor,
                          inv_freq: torch.Tensor) -> torch.Tensor:
    """Re Σ_p q̃_p conj(k̃_p) e^{i·P_ij·θ_p}: q_i rotated by P_ij against k_j (half-split pairs as complex numbers)."""
    pairs = inv_freq.numel()
    q_c, k_c = torch.complex(q[:, :pairs], q[:, pairs:]), torch.complex(k[:, :pairs], k[:, pairs:])
    phase = torch.polar(torch.ones_like(relative_positions)[..., None], relative_positions[..., None] * inv_freq)
    return (q_c[:, None, :] * k_c.conj()[None, :, :] * phase).real.sum(-1)


@pytest.mark.parametrize("leak", [None, 4.0])
def test_rerope_scores_are_the_rectified_relative_positions_exactly(leak):
    length, window = 40, 10
    spec = RopeSpec(head_dim=16, base=100.0, original_max_position_embeddings=16)
    rotary = Rotary(spec, "half", train_length=16)
    rotary.set_spec(spec, window=window, leak=leak)
    q, k = torch.randn(2, length, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    scores = rectified_scores(q, k, rotary)
    distance = relative_distances(length, causal=False)  # i − j
    causal = distance >= 0
    positions = (rerope_positions(distance, window) if leak is None
                 else leaky_rerope_positions(distance.clamp(min=0), window, leak))
    expected = _expected_rope_scores(q, k, positions, rope_frequencies(spec).inv_freq)
    assert_close(scores[causal], expected[causal], atol=1e-10)
    far = causal & (distance >= window)
    plain = _expected_rope_scores(q, k, distance, rope_frequencies(spec).inv_freq)
    assert (scores[far] - plain[far]).abs().max() > 1e-3  # beyond the window the positions really change


def test_logn_scales_each_query_by_log_base_l_of_the_keys_it_sees():
    model = tiny("rope", n_layer=1)
    with torch.no_grad():
        model.blocks[0].attention.qkv.weight.mul_(30)
    ids = _random_ids(1, 32)
    plain = model(ids)
    model.set_rope(None, logn=True)
    scaled = model(ids)
    assert_close(scaled[:, :8], plain[:, :8])  # n ≤ L = 8: log_8 n ≤ 1, so the factor is 1
    assert (scaled[:, 8:] - plain[:, 8:]).abs().max() > 1e-3
    factors = model.rotary.logn_scale(32, torch.device("cpu"), torch.float64).flatten()
    assert factors[:8].tolist() == [1.0] * 8 and factors[31] == pytest.approx(math.log(32) / math.log(8))
    # the same as rotating q and k, then multiplying q_i by the factor and attending as usual
    attention = model.blocks[0].attention
    x = torch.randn(1, 32, 16, generator=torch.Generator().manual_seed(2))
    q, k, v = attention.qkv(x).view(1, 32, 3, 2, 8).permute(2, 0, 3, 1, 4)
    cos, sin = model.rotary.cos_sin(32, torch.device("cpu"), torch.float32)
    q, k = rotate(q, cos, sin, "half") * factors.float()[:, None], rotate(k, cos, sin, "half")
    weights = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(torch.ones(32, 32).triu(1).bool(), -math.inf)
    expected = attention.out((weights.softmax(-1) @ v).transpose(1, 2).reshape(1, 32, 16))
    assert_close(attention(x, Positions(rotary=model.rotary)), expected, atol=1e-5)


def test_rerope_within_its_window_is_plain_rope_and_bad_windows_are_explained():
    model = tiny("rope", n_layer=1)
    ids = _random_ids(1, 12)
    plain = model(ids)
    model.set_rope(None, window=12)
    assert_close(model(ids), plain)  # every distance < w: nothing is rectified
    model.set_rope(None, window=4, leak=1.0)  # slope 1: Leaky ReRoPE is plain RoPE again
    assert_close(model(ids), plain, atol=1e-5)
    with pytest.raises(ValueError, match="window"):
        model.set_rope(None, window=0)
    with pytest.raises(ValueError, match="k ≥ 1"):
        model.set_rope(None, window=4, leak=0.5)
