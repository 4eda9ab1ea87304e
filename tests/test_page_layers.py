"""The layer map on the pages that read a model: pasted hybrid configs, the layer kind a reader picks, NoPE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import figure_titled, run_page
from ui.lesson import PART_KEY

CONFIGS = Path(__file__).parent / "data" / "model_configs"
PAGES = ("app_pages/frequencies.py", "app_pages/decay.py", "app_pages/precision.py", "app_pages/beta_base.py")
# Pythia-160m's RoPE keys as in EleutherAI/pythia-160m's config.json (GPT-NeoX: rotary_pct, rotary_emb_base).
PYTHIA = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_size": 768,
          "num_attention_heads": 12, "num_hidden_layers": 12, "rotary_pct": 0.25, "rotary_emb_base": 10000,
          "max_position_embeddings": 2048}
# A Llama-4-style text config: RoPE (chunked attention) on three layers of four, NoPE with temperature tuning on
# the fourth, llama3 scaling - the keys Llama4TextConfig reads (no_rope_layers, attention_chunk_size).
LLAMA4_STYLE = {"model_type": "llama4_text", "head_dim": 128, "hidden_size": 5120, "num_attention_heads": 40,
                "num_hidden_layers": 8, "rope_theta": 500000.0, "max_position_embeddings": 10485760,
                "attention_chunk_size": 8192, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0],
                "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _layers_part(page: str, config: dict, layer_type: str = "auto"):
    """The layer map part with ``config`` pasted, as a link that carries the config and the kind opens it."""
    at = run_page(page, {PART_KEY: "layers", "src": "Paste config.json", "config": json.dumps(config),
                         "layers": layer_type})
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def _layer_choices(at) -> list[str]:
    return [radio for radio in at.sidebar.radio if radio.label == "Layers shown"][0].options


def _kinds(at) -> dict[str, dict]:
    figure = figure_titled(at, "Layer map")
    return {trace["name"]: trace for trace in figure["data"]}


@pytest.mark.parametrize(("config", "expected"), [
    (_config("google--gemma-3-4b-it"), {"sliding-window attention ×29 · window 1,024 · base 10,000": 29,
                                        "full attention ×5 · base 1,000,000": 5}),
    (_config("LGAI-EXAONE--EXAONE-4.0-32B"), {"sliding-window attention ×48 · window 4,096": 48,
                                              "full attention ×16 · no position encoding (NoPE)": 16}),
    (_config("Qwen--Qwen3-Next-80B-A3B-Thinking"), {"full attention ×12 · base 10,000,000 · 64/256 dims rotated": 12,
                                                    "linear attention ×36 · no position encoding (NoPE)": 36}),
    (_config("google--gemma-4-26B-A4B"), {"full attention ×5 · base 1,000,000 · 128/512 dims rotated": 5,
                                          "sliding-window attention ×25 · window 1,024": 25}),
    (PYTHIA, {"full attention ×12 · base 10,000 · 16/64 dims rotated": 12}),
    (LLAMA4_STYLE, {"chunked attention ×6 · chunks of 8,192": 6, "full attention ×2 · no position encoding (NoPE)": 2}),
], ids=["gemma3", "exaone4", "qwen3-next", "gemma4", "pythia", "llama4-style"])
def test_a_pasted_hybrid_config_draws_its_layer_map(config, expected):
    kinds = _kinds(_layers_part("app_pages/frequencies.py", config))
    for start, count in expected.items():
        matching = [trace for name, trace in kinds.items() if name.startswith(start)]
        assert len(matching) == 1, (start, list(kinds))
        assert len(matching[0]["x"]) == count


def test_gemma3_is_shown_at_its_own_context_length_and_its_sliding_layers_at_their_window():
    at = _layers_part("app_pages/frequencies.py", _config("google--gemma-3-4b-it"))
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "trained at L = 16,384 · shown at L′ = 131,072" in captions
    assert "about its full attention: 5 of 34 layers" in captions
    at = _layers_part("app_pages/frequencies.py", _config("google--gemma-3-4b-it"), "sliding_attention")
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "base 10,000 · trained at L = 1,024" in captions and "within 1,024 tokens" in captions


@pytest.mark.parametrize("page", PAGES)
def test_asking_for_nope_layers_shows_the_rotary_ones_and_says_why(page):
    at = _layers_part(page, _config("LGAI-EXAONE--EXAONE-4.0-32B"), "full_attention")
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "have no position encoding (NoPE); showing its sliding-window attention layers" in captions
    chosen = [trace for trace in _kinds(at).values() if trace["marker"]["line"]["width"] > 1]
    assert [trace["name"].split(" ×")[0] for trace in chosen] == ["sliding-window attention"]


def test_a_model_without_such_layers_says_so():
    at = _layers_part("app_pages/decay.py", _config("meta-llama--Llama-3.1-8B"), "sliding_attention")
    assert _layer_choices(at) == ["the layers context extension scales", "full attention"]
    warnings = " ".join(w.value for w in at.warning)
    assert "The link set **Layers shown** to `sliding_attention`, which this control cannot take" in warnings


@pytest.mark.parametrize(("config", "offered"), [
    ("google--gemma-3-4b-it", ["full attention", "sliding-window attention"]),
    ("meta-llama--Llama-3.1-8B", ["full attention"]),
])
def test_layers_shown_offers_the_kinds_the_model_has(config, offered):
    """A kind of layer the model lacks is not offered (chunked attention is Llama 4's, not Gemma 3's)."""
    at = _layers_part("app_pages/frequencies.py", _config(config))
    assert _layer_choices(at) == ["the layers context extension scales", *offered]


def test_compare_puts_two_hybrid_layer_maps_side_by_side():
    at = run_page("app_pages/compare.py", {"src_a": "Paste config.json", "src_b": "Paste config.json"})
    at.text_area[0].input(json.dumps(_config("google--gemma-3-4b-it"))).run()
    at.text_area[1].input(json.dumps(_config("LGAI-EXAONE--EXAONE-4.0-32B"))).run()
    assert not at.exception and not at.error
    figure = figure_titled(at, "Layer maps of A and B")
    groups = {}
    for trace in figure["data"]:
        groups.setdefault(trace["legendgroup"], []).append((trace["name"].split(" ×")[0], len(trace["x"])))
    assert sorted(sorted(kinds) for kinds in groups.values()) == [
        [("full attention", 5), ("sliding-window attention", 29)],
        [("full attention", 16), ("sliding-window attention", 48)]]
    table = at.dataframe[0].value
    row = table[table["parameter"] == "layers compared"].iloc[0].tolist()
    assert row[1:3] == ["full attention: 5 of 34 layers", "sliding-window attention: 48 of 64 layers"]


def _check_page(config: dict, numbers, layer_type: str = "auto"):
    at = run_page("app_pages/check.py", {"src": "Paste config.json", _key("config"): json.dumps(config),
                                         "layers": layer_type})
    at.text_area(key=_key("numbers")).input(json.dumps([float(v) for v in numbers])).run()
    return at


def _key(name: str) -> str:
    from lessons.check import Settings

    return Settings.controls()[name].key


def test_the_check_page_checks_the_layer_kind_picked():
    import torch

    sliding = 1.0 / 10000 ** (torch.arange(0, 256, 2, dtype=torch.float64) / 256)  # Gemma 3's local layers
    at = _check_page(_config("google--gemma-3-4b-it"), sliding.tolist(), "sliding_attention")
    assert not at.exception and not at.error
    assert figure_titled(at, "Expected θᵢ and yours")["layout"]["title"]["text"].endswith("match")
    at = _check_page(_config("google--gemma-3-4b-it"), sliding.tolist())  # the full-attention layers: linear ×8
    assert figure_titled(at, "Expected θᵢ and yours")["layout"]["title"]["text"].endswith("mismatch")


def test_the_check_page_says_a_nope_kind_has_nothing_to_check():
    at = _check_page(_config("LGAI-EXAONE--EXAONE-4.0-32B"), [1.0] * 64, "full_attention")
    assert any("no position encoding (NoPE)" in error.value for error in at.error)


def test_the_check_page_reads_per_dimension_values_in_the_models_own_pairing():
    from pe_core import from_hf_config, rope_frequencies

    config = _config("deepseek-ai--DeepSeek-V3")
    pairs = rope_frequencies(from_hf_config(config)).inv_freq
    at = _check_page(config, pairs.repeat_interleave(2).tolist())  # interleaved, as DeepseekV3 rotates
    assert figure_titled(at, "Expected θᵢ and yours")["layout"]["title"]["text"].endswith("match")
