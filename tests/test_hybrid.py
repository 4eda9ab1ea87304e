"""Hybrid models' numbers against transformers and closed forms: the distances a sliding window sees (its mask
function), the pairs that turn within it (counted in closed form), the layers by role (the models' own config
classes), Llama 4's attention temperature (its attention module's scaled queries) and a softmax's weight."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core import hybrid
from pe_core.config import layer_map
from pe_core.published import HYBRID, published
from pe_core.rope import default_inv_freq

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("window", [1, 2, 128, 1024, 4096])
def test_farthest_distance_is_transformers_window_mask(window):
    from transformers.masking_utils import causal_mask_function, sliding_window_causal_mask_function

    inside = sliding_window_causal_mask_function(window)
    query = torch.tensor(3 * window + 5)
    keys = torch.arange(int(query) + 1)
    allowed = torch.stack([inside(0, 0, query, key) & causal_mask_function(0, 0, query, key) for key in keys])
    assert int((query - keys[allowed]).max()) == hybrid.farthest_distance(window)


@pytest.mark.parametrize("base, head_dim, window", [(1e4, 128, 1024), (1e6, 128, 1024), (1e4, 256, 1024),
                                                    (1e6, 128, 4096), (5e5, 64, 128), (1e4, 128, 2)])
def test_turning_pairs_closed_form(base, head_dim, window):
    # pair i turns once within W − 1 tokens iff 2π·b^(2i/d) ≤ W − 1, i.e. i ≤ (d/2)·ln((W − 1)/2π)/ln b
    limit = (head_dim / 2) * math.log((window - 1) / (2 * math.pi)) / math.log(base) if window > 1 else -1
    expected = min(head_dim // 2, math.floor(limit) + 1) if limit >= 0 else 0
    assert hybrid.turning_pairs(default_inv_freq(base, head_dim), window) == expected


def test_gemma3_window_counts():
    """d = 128, W = 1024: 36 of 64 pairs turn at base 10⁴, 24 at 10⁶."""
    assert hybrid.turning_pairs(default_inv_freq(1e4, 128), 1024) == 36
    assert hybrid.turning_pairs(default_inv_freq(1e6, 128), 1024) == 24


CONFIG_CLASSES = {
    "Gemma 3 27B": "Gemma3TextConfig", "EXAONE 4.0 32B": "Exaone4Config", "OLMo 3.1 32B": "Olmo3Config",
    "gpt-oss-20b": "GptOssConfig", "Qwen3-Next-80B-A3B": "Qwen3NextConfig", "Gemma 4 26B-A4B": "Gemma4TextConfig",
}
# Which layer types the model's attention rotates (the modeling code's rule, written out for the test):
# EXAONE 4 rotates only its sliding layers, Llama 4 only the layers no_rope_layers marks 1.
ROTATES = {"EXAONE 4.0 32B": {"sliding_attention"}}


@pytest.mark.parametrize("name", sorted(CONFIG_CLASSES))
def test_roles_count_the_model_classes_layers(name):
    config = getattr(transformers, CONFIG_CLASSES[name])(**published(name).config)
    types = list(config.layer_types)
    shares = hybrid.layer_shares(layer_map(published(name).config))
    rotates = ROTATES.get(name, {"sliding_attention", "full_attention"})
    assert shares.total == config.num_hidden_layers
    assert shares.counts["linear"] == types.count("linear_attention")
    assert shares.counts["rope_local"] == sum(t == "sliding_attention" and t in rotates for t in types)
    assert shares.counts["rope_full"] == sum(t == "full_attention" and t in rotates for t in types)
    assert shares.counts["nope"] == sum(t == "full_attention" and t not in rotates for t in types)


def test_llama4_roles_follow_no_rope_layers():
    config = transformers.Llama4TextConfig()
    shares = hybrid.layer_shares(layer_map(published("Llama 4 (class defaults)").config))
    assert shares.counts["nope"] == config.no_rope_layers.count(0) == 12
    assert shares.counts["rope_local"] == config.no_rope_layers.count(1) == 36


def test_every_published_hybrid_reads():
    for entry in HYBRID:
        assert hybrid.layer_shares(layer_map(entry.config)).total > 0


def test_llama4_scale_is_what_its_attention_does_to_queries():
    """Run transformers' Llama4TextAttention on a NoPE layer and read the queries it hands to attention."""
    from transformers import AttentionInterface
    from transformers.models.llama4.modeling_llama4 import Llama4TextAttention

    captured = {}

    def capture(module, query, key, value, attention_mask, **kwargs):
        captured["query"] = query
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], query.shape[3]), None

    AttentionInterface.register("capture_queries", capture)
    config = transformers.Llama4TextConfig(hidden_size=8, num_attention_heads=1, num_key_value_heads=1, head_dim=8,
                                           num_hidden_layers=4, floor_scale=16, attn_scale=0.25)
    config._attn_implementation = "capture_queries"
    tuned = Llama4TextAttention(config, layer_idx=3)  # no_rope_layers: every 4th layer skips RoPE
    assert not tuned.use_rope
    length = 100
    hidden = torch.ones(1, length, 8)
    with torch.no_grad():
        torch.nn.init.eye_(tuned.q_proj.weight)
        tuned(hidden, position_embeddings=None, attention_mask=None)
    scales = captured["query"][0, 0, :, 0].double()  # the query of an all-ones input is 1 before the scale
    ours = hybrid.llama4_attention_scale(torch.arange(length), floor_scale=16, attn_scale=0.25)
    assert torch.allclose(scales, ours, rtol=1e-6)
    assert ours[14] == 1.0 and ours[15] == pytest.approx(1 + 0.25 * math.log(2))


def test_llama4_scale_at_its_defaults():
    values = hybrid.llama4_attention_scale(torch.tensor([0, 8190, 8191, 131_071]))
    assert values.tolist() == pytest.approx([1.0, 1.0, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(17)])


@pytest.mark.parametrize("n, gap, scale", [(2, 0.0, 1.0), (10, 3.0, 1.0), (1000, 8.0, 1.3), (65_536, 12.0, 1.7)])
def test_needle_weight_is_softmax(n, gap, scale):
    logits = torch.zeros(n, dtype=torch.float64)
    logits[0] = gap
    expected = torch.softmax(scale * logits, dim=0)[0]
    assert float(hybrid.needle_weight(torch.tensor([n]), gap, scale)[0]) == pytest.approx(float(expected), rel=1e-12)
    assert float(hybrid.needle_weight(torch.tensor([1]), gap, scale)[0]) == 1.0
