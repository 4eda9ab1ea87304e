"""The configs the hybrid-model and M-RoPE lessons read are the published files, cut to what a layer map reads:
each reads exactly as its whole file does, and the Llama 4 entry as transformers' Llama4TextConfig() lays out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pe_core.config import layer_map
from pe_core.published import HYBRID, VISION_LANGUAGE, published

CONFIGS = Path(__file__).parent / "data" / "model_configs"
FILES = {
    "Qwen2.5-VL-7B": "Qwen--Qwen2.5-VL-7B-Instruct.json", "Qwen3-VL-32B": "Qwen--Qwen3-VL-32B-Instruct.json",
    "Qwen3.5-27B": "Qwen--Qwen3.5-27B.json", "Gemma 3 27B": "google--gemma-3-27b-it.json",
    "Gemma 4 26B-A4B": "google--gemma-4-26B-A4B.json", "EXAONE 4.0 32B": "LGAI-EXAONE--EXAONE-4.0-32B.json",
    "OLMo 3.1 32B": "allenai--Olmo-3.1-32B-Instruct.json", "gpt-oss-20b": "openai--gpt-oss-20b.json",
    "Qwen3-Next-80B-A3B": "Qwen--Qwen3-Next-80B-A3B-Thinking.json", "Llama 3.1 8B": "meta-llama--Llama-3.1-8B.json",
}


def _read(config: dict):
    mapped = layer_map(config)
    return mapped.num_layers, mapped.layer_types, tuple(kind._replace(nope_note=None) for kind in mapped.kinds)


@pytest.mark.parametrize("name", sorted(FILES))
def test_cut_config_reads_as_the_whole_file(name):
    whole = json.loads((CONFIGS / FILES[name]).read_text(encoding="utf-8"))
    assert _read(published(name).config) == _read(whole)


def test_every_entry_but_llama4_has_its_file():
    assert {entry.name for entry in VISION_LANGUAGE + HYBRID} - set(FILES) == {"Llama 4 (class defaults)"}


def test_llama4_entry_is_the_class_layout():
    transformers = pytest.importorskip("transformers")
    defaults = transformers.Llama4TextConfig()
    mapped = layer_map(published("Llama 4 (class defaults)").config)
    assert mapped.layer_types == tuple(defaults.layer_types)
    nope = [i for i, uses in enumerate(defaults.no_rope_layers) if not uses]
    assert next(kind for kind in mapped.kinds if not kind.has_rope).layers == tuple(nope)
