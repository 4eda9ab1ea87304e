"""Parity with transformers' ROPE_INIT_FUNCTIONS, on the presets and on random configs."""

from __future__ import annotations

import copy
import math
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pe_core import from_hf_config, load_presets, rope_frequencies

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

# Phi's default RoPE honours partial_rotary_factor (Llama's ignores it)
from transformers.models.phi.modeling_phi import PhiRotaryEmbedding  # noqa: E402

EPS32 = torch.finfo(torch.float32).eps


def float32_tolerance(spec) -> float:
    """How far transformers' float32 θᵢ may sit from our float64 ones, relative, for this spec.

    float32 rounds the exponent x = 2i/d, and b^x turns that into a relative error of up to
    ln(b)·x·ε; the power, the division and the factor add a few ε; YaRN, NTK-by-parts and
    Llama-3 blend θ and θ/s with a float32 ramp, whose rounding is amplified up to s times
    where the blend lands near θ/s. Four times the sum is the bound (the largest seen over
    thousands of random configs is a quarter of it); a wrong formula misses by orders more.
    """
    return 4 * EPS32 * (1 + math.log(spec.base) + max(1.0, spec.factor))


def transformers_frequencies(config: dict, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """θ and attention factor as transformers builds them: with the model's own config and rotary classes when the
    config names its model type (the layers context extension scales), else as LlamaConfig reads the RoPE keys."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    if "model_type" in text or "model_type" in config:
        from pe_core.config import layer_map
        from tests.test_layers import _buffers, _model_config, _rotary

        kind = layer_map(config).default_kind
        assert kind.spec.rope_type not in ("dynamic", "longrope"), "length-dependent: run the class's forward pass"
        return _buffers(_rotary(_model_config(config)), kind.layer_type)
    config = copy.deepcopy(config)
    if "qk_rope_head_dim" in config:  # DeepSeek's config class maps this to head_dim
        config["head_dim"] = config.pop("qk_rope_head_dim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_config = LlamaConfig(**config)
    rope_type = hf_config.rope_parameters.get("rope_type", "default")
    if rope_type == "default":
        return PhiRotaryEmbedding.compute_default_rope_parameters(hf_config)
    return ROPE_INIT_FUNCTIONS[rope_type](hf_config, None, seq_len)


def assert_parity(config: dict, seq_len: int | None) -> None:
    spec = from_hf_config(config)
    ours = rope_frequencies(spec, seq_len)
    inv_freq, attention_factor = transformers_frequencies(config, seq_len)
    torch.testing.assert_close(ours.inv_freq, inv_freq.to(torch.float64), rtol=float32_tolerance(spec), atol=0)
    assert ours.attention_factor == pytest.approx(float(attention_factor), rel=1e-6)


PRESETS = load_presets()


def test_presets_exist():
    names = {p.name for p in PRESETS}
    assert {"Llama-2-7B", "Llama-3.1-8B", "DeepSeek-V3", "gpt-oss-20b", "Phi-3.5-mini-instruct"} <= names
    assert {p.spec.rope_type for p in PRESETS} >= {"default", "llama3", "yarn", "longrope"}


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
@pytest.mark.parametrize("seq_len", [None, 1024, 200_000])
def test_presets_match_transformers(preset, seq_len):
    assert_parity(preset.config, seq_len)


def test_nested_text_config_matches_transformers():
    """Gemma 3's config.json keeps the language model under text_config; its global layers' RoPE is linear ×8."""
    from transformers import Gemma3Config

    from lessons.model_source import GEMMA3_CONFIG as GEMMA3

    text = Gemma3Config(**GEMMA3).get_text_config()
    inv_freq, _ = ROPE_INIT_FUNCTIONS["linear"](text, None, None, layer_type="full_attention")
    spec = from_hf_config(GEMMA3)
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, inv_freq.to(torch.float64),
                               rtol=float32_tolerance(spec), atol=0)


head_dims = st.sampled_from([16, 32, 64, 80, 96, 128, 256])
bases = st.one_of(st.sampled_from([10000.0, 500000.0, 1e6]), st.floats(2.0, 1e7))
lengths = st.integers(16, 1 << 17)
factors = st.floats(1.0, 64.0)
seq_lens = st.one_of(st.none(), st.integers(1, 1 << 20))
fuzz = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def base_config(head_dim: int, base: float, max_positions: int) -> dict:
    return {"hidden_size": head_dim * 4, "num_attention_heads": 4, "head_dim": head_dim,
            "rope_theta": base, "max_position_embeddings": max_positions}


@fuzz
@given(head_dims, bases, lengths, seq_lens)
def test_random_default(head_dim, base, length, seq_len):
    assert_parity(base_config(head_dim, base, length), seq_len)


@fuzz
@given(head_dims, bases, lengths, factors, seq_lens, st.sampled_from(["linear", "dynamic"]))
def test_random_linear_and_dynamic(head_dim, base, length, factor, seq_len, rope_type):
    config = base_config(head_dim, base, length) | {"rope_scaling": {"rope_type": rope_type, "factor": factor}}
    assert_parity(config, seq_len)


@fuzz
@given(head_dims, bases, lengths, factors, seq_lens, st.floats(8.0, 64.0), st.floats(0.25, 4.0), st.booleans(),
       st.sampled_from([None, (1.0, 1.0), (0.707, 0.707), (1.0, 0.0), (0.8, 0.5)]), st.booleans())
def test_random_yarn(head_dim, base, length, factor, seq_len, beta_fast, beta_slow, truncate, mscales, with_original):
    scaling = {"rope_type": "yarn", "factor": factor, "beta_fast": beta_fast, "beta_slow": beta_slow,
               "truncate": truncate}
    if mscales is not None:
        scaling["mscale"], scaling["mscale_all_dim"] = mscales
    config = base_config(head_dim, base, length * 4)
    if with_original:
        scaling["original_max_position_embeddings"] = length
    config["rope_scaling"] = scaling
    assert_parity(config, seq_len)


@fuzz
@given(head_dims, st.floats(1000.0, 1e7), st.integers(512, 1 << 15), factors, st.floats(0.5, 2.0),
       st.floats(2.5, 8.0))
def test_random_llama3(head_dim, base, original, factor, low, high):
    config = base_config(head_dim, base, original * 16) | {"rope_scaling": {
        "rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": high,
        "original_max_position_embeddings": original}}
    assert_parity(config, None)


@fuzz
@given(st.sampled_from([32, 64, 96, 128]), bases, st.integers(256, 1 << 14), st.integers(1, 64), seq_lens,
       st.data())
def test_random_longrope(head_dim, base, original, ratio, seq_len, data):
    pairs = head_dim // 2
    factor_lists = st.lists(st.floats(1.0, 100.0), min_size=pairs, max_size=pairs)
    config = base_config(head_dim, base, original * ratio) | {
        "original_max_position_embeddings": original,
        "rope_scaling": {"rope_type": "longrope", "short_factor": data.draw(factor_lists),
                         "long_factor": data.draw(factor_lists)}}
    assert_parity(config, seq_len)


@fuzz
@given(st.sampled_from([64, 128, 256]), st.sampled_from([0.25, 0.5, 0.75]), bases, lengths,
       st.sampled_from(["default", "linear", "yarn"]))
def test_random_partial_rotary(head_dim, partial, base, length, rope_type):
    config = base_config(head_dim, base, length) | {"partial_rotary_factor": partial}
    if rope_type != "default":
        config["rope_scaling"] = {"rope_type": rope_type, "factor": 4.0}
    assert_parity(config, None)
