"""Validation messages and config.json reading."""

from __future__ import annotations

import json
import math

import pytest

from lessons.model_source import GEMMA3_CONFIG as GEMMA3
from pe_core import RopeSpec, extended_length, from_hf_config, load_presets, preset_by_name, rope_frequencies
from pe_core.config import text_config_of


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"head_dim": 7}, "head_dim"),
        ({"head_dim": 0}, "head_dim"),
        ({"head_dim": 64.0}, "head_dim"),
        ({"base": 1.0}, "base"),
        ({"base": -5.0}, "base"),
        ({"base": float("nan")}, "base"),
        ({"factor": 0.5}, "factor"),
        ({"rope_type": "xpos"}, "rope_type"),
        ({"original_max_position_embeddings": 0}, "original_max_position_embeddings"),
        ({"partial_rotary_factor": 0.0}, "partial_rotary_factor"),
        ({"partial_rotary_factor": 1.5}, "partial_rotary_factor"),
        ({"head_dim": 10, "partial_rotary_factor": 0.5}, "partial_rotary_factor"),
        ({"rope_type": "yarn", "beta_fast": 1.0, "beta_slow": 2.0}, "beta_fast"),
        ({"rope_type": "llama3", "low_freq_factor": 4.0, "high_freq_factor": 1.0}, "low_freq_factor"),
        ({"rope_type": "longrope"}, "short_factor"),
        ({"rope_type": "longrope", "short_factor": [1.0] * 3, "long_factor": [1.0] * 64}, "short_factor"),
        ({"rope_type": "longrope", "short_factor": [1.0] * 64, "long_factor": [0.0] * 64}, "long_factor"),
        ({"attention_factor": -1.0}, "attention_factor"),
    ],
)
def test_invalid_spec_names_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        RopeSpec(**changes)


def test_invalid_seq_len():
    # 0 is a sequence transformers' functions accept (tests/test_rope.py); a negative length is not
    with pytest.raises(ValueError, match="seq_len"):
        rope_frequencies(RopeSpec(), -1)


def test_spec_is_hashable_and_lists_become_tuples():
    spec = RopeSpec(head_dim=4, rope_type="longrope", short_factor=[1, 2], long_factor=[3, 4])
    assert spec.short_factor == (1.0, 2.0)
    assert hash(spec) == hash(RopeSpec(head_dim=4, rope_type="longrope", short_factor=(1, 2), long_factor=(3, 4)))
    assert spec.replace(base=20.0).base == 20.0


LLAMA31 = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
           "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}}


def test_reads_llama31_config_and_json_text():
    spec = from_hf_config(LLAMA31)
    assert (spec.head_dim, spec.base, spec.rope_type, spec.factor, spec.original_max_position_embeddings) == (
        128, 500000.0, "llama3", 8.0, 8192)
    assert from_hf_config(json.dumps(LLAMA31)) == spec


def test_reads_v5_rope_parameters_and_old_type_key():
    v5 = {"head_dim": 64, "max_position_embeddings": 131072,
          "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000, "factor": 32.0,
                              "original_max_position_embeddings": 4096, "truncate": False}}
    spec = from_hf_config(v5)
    assert (spec.base, spec.rope_type, spec.truncate, spec.head_dim) == (150000.0, "yarn", False, 64)
    old = {"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert from_hf_config(old).rope_type == "linear"


def test_yarn_factor_defaults_to_context_ratio():
    config = {"head_dim": 64, "max_position_embeddings": 163840,
              "rope_scaling": {"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096}}
    assert from_hf_config(config).factor == 40.0


def test_nested_per_layer_parameters_use_full_attention():
    config = {"head_dim": 64, "layer_types": ["sliding_attention", "full_attention"],
              "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                  "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
    spec = from_hf_config(config)
    assert (spec.rope_type, spec.factor, spec.base) == ("linear", 8.0, 1e6)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ("{not json", "JSON"),
        ("[1, 2]", "object"),
        ({"rope_theta": 10000.0}, "head_dim"),
        ({"hidden_size": 4096}, "num_attention_heads"),
        ({"head_dim": "big"}, "head_dim"),
        ({"head_dim": 64, "rope_theta": "ten thousand"}, "rope_theta"),
        ({"head_dim": 64, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "max_position_embeddings"),
        ({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "linear"}}, "factor"),
        ({"head_dim": 64, "max_position_embeddings": 8192,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}},
         "low_freq_factor"),
        ({"head_dim": 64, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "longrope"}},
         "short_factor"),
        ({"head_dim": 64, "rope_scaling": {"rope_type": "xpos"}}, "rope_type"),
        ({"head_dim": 64, "rope_parameters": {"rope_type": "axial"}}, "axial.*not supported"),
        ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}, "'bert'.*learned absolute"),
        ({"model_type": "t5", "d_model": 512}, "relative position buckets"),
        ({"model_type": "falcon", "alibi": True, "hidden_size": 64, "num_attention_heads": 2}, "ALiBi"),
        ({"model_type": "x", "position_embedding_type": "absolute", "hidden_size": 64, "num_attention_heads": 2},
         "does not use RoPE"),
        ({"head_dim": 64, "rope_scaling": "yes"}, "rope_scaling"),
    ],
)
def test_bad_config_names_the_field(config, field):
    with pytest.raises(ValueError, match=field):
        from_hf_config(config)


def test_presets_are_real_and_loadable():
    presets = load_presets()
    assert len(presets) >= 8
    for preset in presets:
        assert preset.hf_id and preset.source and preset.note
        assert rope_frequencies(preset.spec, preset.context_length).inv_freq.shape == (preset.spec.num_pairs,)
    llama31 = preset_by_name("Llama-3.1-8B")
    assert (llama31.spec.rope_type, llama31.spec.factor, llama31.context_length) == ("llama3", 8.0, 131072)
    deepseek = preset_by_name("DeepSeek-V3")
    assert deepseek.spec.head_dim == 64 and deepseek.spec.factor == 40
    gpt_oss = preset_by_name("gpt-oss-20b")
    assert gpt_oss.spec.truncate is False
    assert rope_frequencies(gpt_oss.spec).attention_factor == pytest.approx(0.1 * math.log(32) + 1)
    with pytest.raises(ValueError, match="Unknown preset"):
        preset_by_name("GPT-5")


def test_nested_text_config_is_read_and_named():
    config, where = text_config_of(GEMMA3)
    assert where == "text_config"
    assert config["rope_scaling"] == GEMMA3["text_config"]["rope_scaling"]
    assert "head_dim" not in config  # the file's own part; the class's defaults come with its own classes:
    spec = from_hf_config(GEMMA3)
    assert (spec.head_dim, spec.base, spec.rope_type, spec.factor) == (256, 1e6, "linear", 8.0)
    assert text_config_of(LLAMA31) == (LLAMA31, None)  # a text model's config is read as it is


def test_mrope_builds_plain_rope_frequencies():
    qwen2_vl = {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
                "rope_theta": 1e6, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    spec = from_hf_config(qwen2_vl)
    assert spec.rope_type == "default" and spec.base == 1e6


@pytest.mark.parametrize(("config", "length"), [
    (preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").config, 131_072),  # 32768 × 4 > max_position_embeddings
    ({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
      "rope_scaling": {"type": "linear", "factor": 4}}, 16_384),  # an old-style Llama-2 config: 4096 × 4
    (preset_by_name("DeepSeek-V3").config, 163_840),  # 4096 × 40 = max_position_embeddings
    (preset_by_name("gpt-oss-20b").config, 131_072),  # 4096 × 32
    (preset_by_name("Phi-3.5-mini-instruct").config, 131_072),  # factor = 131072 / 4096 from the config itself
    (preset_by_name("Llama-3.1-8B").config, 131_072),  # 8192 × 8 = 65536 < max_position_embeddings
    (preset_by_name("Llama-2-7B").config, 4_096),  # no scaling: max_position_embeddings
    (LLAMA31 | {"max_position_embeddings": None}, 65_536),
    (GEMMA3, 131_072),  # Gemma3TextConfig: max_position_embeddings is the scaled full-attention layers' length
])
def test_extended_length(config, length):
    assert extended_length(config) == length
    assert extended_length(json.dumps(config)) == length
