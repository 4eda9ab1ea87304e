"""Models the app keeps no notes on, read by their own transformers code (``pe_core.model_code``).

Each case is a family a hand-kept table once read as Llama. Its config is the model's own config class's defaults
(which transformers keeps equal to the published model's), sometimes with a published key set; the expected layers
come from that class's attributes and its attention code's rule (quoted beside each case), the expected θᵢ and
attention factor from the model's own rotary class, built here by name, apart from the reader.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_core import from_hf_config, rope_frequencies  # noqa: E402
from pe_core.config import layer_map  # noqa: E402
from pe_core.model_code import UnknownModelType  # noqa: E402

# The rotary class of each family, named by its modeling file (not found by the reader's own search).
ROTARY = {
    "mimo_v2_flash": "mimo_v2_flash.modeling_mimo_v2_flash.MiMoV2FlashRotaryEmbedding",
    "minimax_m2": "minimax_m2.modeling_minimax_m2.MiniMaxM2RotaryEmbedding",
    "glm_moe_dsa": "glm_moe_dsa.modeling_glm_moe_dsa.GlmMoeDsaRotaryEmbedding",
    "lfm2": "lfm2.modeling_lfm2.Lfm2RotaryEmbedding",
    "mllama": "mllama.modeling_mllama.MllamaRotaryEmbedding",
    "laguna": "laguna.modeling_laguna.LagunaRotaryEmbedding",
}


def _class_buffers(model_type: str, config: dict, layer_type: str) -> tuple[torch.Tensor, float]:
    text = transformers.CONFIG_MAPPING[model_type].from_dict(config).get_text_config(decoder=True)
    module, name = ROTARY[model_type].rsplit(".", 1)
    rotary = getattr(importlib.import_module(f"transformers.models.{module}"), name)(config=text)
    if hasattr(rotary, f"{layer_type}_inv_freq"):
        return (getattr(rotary, f"{layer_type}_inv_freq").double(),
                float(getattr(rotary, f"{layer_type}_attention_scaling")))
    return rotary.inv_freq.double(), float(rotary.attention_scaling)


def _assert_frequencies_are_the_classes(model_type: str, config: dict) -> None:
    ours = layer_map({"model_type": model_type, **config})
    assert ours.read_by == f"transformers {transformers.__version__}"
    assert ours.disagreements == ()
    for kind in ours.rotary_kinds:
        expected, attention = _class_buffers(model_type, config, kind.layer_type)
        computed = rope_frequencies(kind.spec, kind.spec.original_max_position_embeddings)
        torch.testing.assert_close(computed.inv_freq, expected, rtol=2e-6, atol=0)
        assert computed.attention_factor == pytest.approx(attention, rel=1e-6)


def _layers_by_kind(config: dict) -> dict[str, tuple[int, ...]]:
    return {kind.key: kind.layers for kind in layer_map(config).kinds}


def test_mimo_v2_flash_keeps_its_sliding_layers_at_their_own_base_and_window():
    text = transformers.CONFIG_MAPPING["mimo_v2_flash"]()
    kinds = _layers_by_kind({"model_type": "mimo_v2_flash"})
    sliding = tuple(i for i, kind in enumerate(text.layer_types) if kind == "sliding_attention")
    full = tuple(i for i, kind in enumerate(text.layer_types) if kind == "full_attention")
    assert kinds == {"sliding_attention": sliding, "full_attention": full}
    assert (len(sliding), len(full)) == (39, 9)
    mapped = layer_map({"model_type": "mimo_v2_flash"})
    assert mapped.kind("sliding_attention").span == text.sliding_window
    assert mapped.kind("sliding_attention").spec.base == text.rope_parameters["sliding_attention"]["rope_theta"] == 10_000
    assert mapped.kind("full_attention").spec.base == text.rope_parameters["full_attention"]["rope_theta"]
    _assert_frequencies_are_the_classes("mimo_v2_flash", {})


def test_minimax_m2_rotates_only_its_rotary_dim():
    # MiniMax M2.5's config.json: "rotary_dim": 64 of "head_dim": 128
    config = {"rotary_dim": 64, "head_dim": 128}
    spec = from_hf_config({"model_type": "minimax_m2", **config})
    assert (spec.head_dim, spec.rotary_dim, spec.num_pairs) == (128, 64, 32)
    _assert_frequencies_are_the_classes("minimax_m2", config)


def test_glm_moe_dsa_pairs_neighbouring_dimensions():
    # GlmMoeDsaAttention rotates with apply_rotary_pos_emb_interleave: dimensions (2i, 2i + 1) turn together
    kind = layer_map({"model_type": "glm_moe_dsa"}).default_kind
    assert kind.layout == "interleaved"
    _assert_frequencies_are_the_classes("glm_moe_dsa", {})


def test_lfm2_convolution_layers_have_no_positions():
    # Lfm2DecoderLayer: `self.is_attention_layer = config.layer_types[layer_idx] != "conv"`
    attention = [2, 5, 8, 10, 12, 14]
    kinds = _layers_by_kind({"model_type": "lfm2", "num_hidden_layers": 16, "full_attn_idxs": attention})
    assert kinds == {"full_attention": tuple(attention),
                     "conv_nope": tuple(i for i in range(16) if i not in attention)}
    _assert_frequencies_are_the_classes("lfm2", {"num_hidden_layers": 16, "full_attn_idxs": attention})


def test_mllama_cross_attention_layers_have_no_rope():
    # MllamaTextCrossAttention never calls apply_rotary_pos_emb: its keys are image tokens
    text = transformers.CONFIG_MAPPING["mllama"]().text_config
    mapped = layer_map({"model_type": "mllama"})
    nope = next(kind for kind in mapped.kinds if not kind.has_rope)
    assert nope.layers == tuple(text.cross_attention_layers)
    assert mapped.default_kind.layers == tuple(i for i in range(text.num_hidden_layers)
                                               if i not in text.cross_attention_layers)
    _assert_frequencies_are_the_classes("mllama", {})


def test_exaone_4_5_full_layers_are_nope_as_in_exaone_4():
    # Exaone4_5 attention: `if self.sliding_window is None or self.is_sliding: apply_rotary_pos_emb(...)`
    text = transformers.CONFIG_MAPPING["exaone4_5"]().get_text_config(decoder=True)
    kinds = _layers_by_kind({"model_type": "exaone4_5"})
    assert kinds["full_attention_nope"] == tuple(i for i, kind in enumerate(text.layer_types) if kind == "full_attention")
    assert kinds["sliding_attention"] == tuple(i for i, kind in enumerate(text.layer_types) if kind == "sliding_attention")


@pytest.mark.parametrize("model_type", ["nemotron_h", "kimi_linear"])
def test_a_model_without_rope_has_no_rotary_frequencies(model_type):
    mapped = layer_map({"model_type": model_type})
    assert mapped.rotary_kinds == ()
    with pytest.raises(ValueError, match="No layer of this model applies RoPE"):
        from_hf_config({"model_type": model_type})


def test_the_shipped_yarn_block_of_a_new_family_is_kept_with_its_betas_and_attention_factor():
    # Laguna ships YaRN with beta_fast 64 (not the default 32) and its own attention factor
    # (LagunaConfig keeps one block per layer type)
    block = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096, "beta_fast": 64.0,
             "beta_slow": 1.0, "attention_factor": 1.1, "rope_theta": 500_000.0, "partial_rotary_factor": 0.5}
    config = {"rope_parameters": {"full_attention": block}, "max_position_embeddings": 32768}
    spec = from_hf_config({"model_type": "laguna", **config})
    assert (spec.rope_type, spec.beta_fast, spec.attention_factor, spec.num_pairs) == ("yarn", 64.0, 1.1, 32)
    _assert_frequencies_are_the_classes("laguna", config)


def test_a_flat_block_where_the_class_wants_one_per_layer_type_is_refused_by_its_class():
    block = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096, "rope_theta": 500_000.0}
    with pytest.raises(ValueError, match="LagunaRotaryEmbedding refuses this config: KeyError 'full_attention'"):
        layer_map({"model_type": "laguna", "rope_parameters": block})


def test_a_model_type_transformers_lacks_is_refused_by_name_and_version():
    with pytest.raises(UnknownModelType) as refused:
        layer_map({"model_type": "acme_remote_code_lm", "hidden_size": 64, "num_attention_heads": 4})
    assert "'acme_remote_code_lm'" in str(refused.value)
    assert f"transformers {transformers.__version__}" in str(refused.value)


def test_a_key_nothing_reads_is_listed():
    mapped = layer_map({"model_type": "mimo_v2_flash", "compress_rope_theta": 160_000, "hidden_size": 4096})
    assert "compress_rope_theta" in mapped.unread_keys
    assert "hidden_size" not in mapped.unread_keys


def test_what_the_config_class_refuses_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="MiMoV2FlashConfig"):
        layer_map({"model_type": "mimo_v2_flash", "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}})


def test_check_cli_refuses_a_port_of_a_model_without_rope(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "nemotron_h"}))
    theta = tmp_path / "theta.json"
    theta.write_text(json.dumps([10_000.0 ** (-2 * i / 128) for i in range(64)]))
    done = subprocess.run([sys.executable, "-m", "pe_core.check", str(config), "--inv-freq", str(theta)],
                          capture_output=True, text=True, timeout=120)
    assert "MATCH" not in done.stdout
    assert done.returncode == 2
    assert "applies RoPE" in done.stdout + done.stderr


def _cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120)


def test_strict_refuses_a_key_nothing_reads_and_names_it(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "mimo_v2_flash", "compress_rope_theta": 160_000}))
    lenient = _cli("pe_core.plan", str(config), "--target", "524288", "--json")
    assert lenient.returncode == 0, lenient.stderr
    assert any("compress_rope_theta" in note for note in json.loads(lenient.stdout)["reading"])
    strict = _cli("pe_core.plan", str(config), "--target", "524288", "--strict", "--json")
    assert strict.returncode == 2
    assert "compress_rope_theta" in json.loads(strict.stdout)["error"]


def test_a_folder_as_config_is_bad_input_with_a_sentence(tmp_path):
    done = _cli("pe_core.check", str(tmp_path), "--inv-freq", "x.json", "--json")
    assert done.returncode == 2
    assert "is a folder" in json.loads(done.stdout)["error"]


# ---- the plan, written through the model's own classes ---------------------------------------------------------


def test_plan_writes_one_block_per_layer_type_where_the_class_wants_it_and_each_reads_back():
    from pe_core.plan import PLAN_METHODS, plan

    result = plan({"model_type": "mimo_v2_flash"}, 1_048_576)
    assert result.not_offered == ()
    assert [method.method for method in result.methods] == list(PLAN_METHODS)
    base_local = transformers.CONFIG_MAPPING["mimo_v2_flash"]().rope_parameters["sliding_attention"]["rope_theta"]
    for method in result.methods:
        blocks = method.config["rope_parameters"]
        assert set(blocks) == {"full_attention", "sliding_attention"}, method.method
        # the sliding layers (a 129-token window) keep their own RoPE; the class builds the planned θ on the others
        assert blocks["sliding_attention"]["rope_theta"] == base_local
        expected, attention = _class_buffers("mimo_v2_flash", method.config, "full_attention")
        ours = rope_frequencies(method.spec, method.spec.original_max_position_embeddings)
        torch.testing.assert_close(ours.inv_freq, expected, rtol=2e-6, atol=0)
        assert ours.attention_factor == pytest.approx(attention, rel=1e-6)


def test_plan_keeps_a_shipped_yarn_blocks_betas_and_attention_factor():
    from pe_core.plan import plan

    block = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096, "beta_fast": 64.0,
             "beta_slow": 1.0, "attention_factor": 1.1, "rope_theta": 500_000.0, "partial_rotary_factor": 0.5}
    config = {"model_type": "laguna", "rope_parameters": {"full_attention": block}, "max_position_embeddings": 32768}
    yarn = next(method for method in plan(config, 131_072).methods if method.method == "yarn")
    written = yarn.config["rope_parameters"]["full_attention"]
    assert (written["beta_fast"], written["beta_slow"], written["attention_factor"], written["factor"]) == (64.0, 1.0, 1.1, 32.0)
    expected, attention = _class_buffers("laguna", yarn.config, "full_attention")
    torch.testing.assert_close(rope_frequencies(yarn.spec).inv_freq, expected, rtol=2e-6, atol=0)
    assert attention == pytest.approx(1.1)


def test_plan_says_when_a_method_lowers_max_position_embeddings_for_serving_engines():
    from pe_core.plan import composition_text, plan

    block = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096, "rope_theta": 500_000.0,
             "partial_rotary_factor": 0.5}
    result = plan({"model_type": "laguna", "rope_parameters": {"full_attention": block},
                   "max_position_embeddings": 32768}, 131_072)
    dynamic = next(method for method in result.methods if method.method == "dynamic")
    assert dynamic.max_positions == 4096
    assert "below the 32,768 it ships with" in composition_text(result)


def test_a_block_the_class_builds_otherwise_is_named_by_the_round_trip():
    from pe_core.plan import round_trip

    config = {"model_type": "mimo_v2_flash"}
    spec = from_hf_config(config)
    assert round_trip(config, "full_attention", spec, 4096) is None
    assert round_trip(config, "full_attention", spec.replace(base=spec.base * 2), 4096) == \
        "the class builds other θᵢ for these layers"


def test_no_extension_is_planned_for_a_model_without_rope():
    from pe_core.plan import plan

    with pytest.raises(ValueError, match="No layer of this model applies RoPE"):
        plan({"model_type": "nemotron_h"}, 65_536)


# ---- the checker, kind by kind ----------------------------------------------------------------------------------

GEMMA_3 = "google--gemma-3-4b-it.json"  # tests/data/model_configs, sources in SOURCES.md


def _gemma_3() -> dict:
    from pathlib import Path

    return json.loads((Path(__file__).parent / "data" / "model_configs" / GEMMA_3).read_text())


@pytest.mark.parametrize("port, which", [
    ("global_theta", "theirs"),  # the sliding layers given the full-attention layers' RoPE (10⁶, linear ×8)
    ("global_scaling", "their_scaling"),  # the sliding layers' 10⁴ given the full layers' linear ×8
    ("global_base", "their_base"),  # the full layers' 10⁶ on the sliding layers, unscaled
])
def test_a_gemma_3_port_that_gives_the_local_layers_global_numbers_is_named(port, which):
    from pe_core.check import check_layers, explain

    config = _gemma_3()
    mapped = layer_map(config)
    local, full = mapped.kind("sliding_attention"), mapped.kind("full_attention")
    assert (local.spec.base, local.spec.rope_type, full.spec.base, full.spec.rope_type, full.spec.factor) == \
        (10_000.0, "default", 1_000_000.0, "linear", 8.0)
    numbers = {"global_theta": rope_frequencies(full.spec).inv_freq,
               "global_scaling": rope_frequencies(local.spec.replace(rope_type="linear", factor=8.0)).inv_freq,
               "global_base": rope_frequencies(local.spec.replace(base=1_000_000.0)).inv_freq}[port]
    report = check_layers(mapped, local, numbers)
    assert report.verdict == "mismatch"
    assert [d.name for d in report.diagnosis] == ["other_layer_kind"]
    assert report.diagnosis[0].detail["port"] == which
    sentence = explain(report, report.diagnosis[0])
    assert "full attention" in sentence and "sliding-window attention" in sentence and "{" not in sentence
    # the local layers' own numbers still match
    assert check_layers(mapped, local, rope_frequencies(local.spec).inv_freq).verdict == "match"


# ---- a model type this transformers does not have ----------------------------------------------------------------


def _kimi_k2() -> dict:
    from pathlib import Path

    return json.loads((Path(__file__).parent / "data" / "model_configs" / "moonshotai--Kimi-K2-Instruct.json").read_text())


def test_a_remote_code_model_is_refused_with_the_family_its_auto_map_names():
    config = _kimi_k2()
    assert config["model_type"] == "kimi_k2" and "kimi_k2" not in transformers.CONFIG_MAPPING
    with pytest.raises(UnknownModelType) as refused:
        layer_map(config)
    assert "'kimi_k2'" in str(refused.value)
    assert "Its auto_map names DeepseekV3Config: read it as 'deepseek_v3'" in str(refused.value)


def test_read_as_reads_it_with_that_familys_classes_and_lists_what_they_do_not_read():
    config = _kimi_k2()
    asked = layer_map(config, read_as="deepseek_v3")
    renamed = layer_map({**config, "model_type": "deepseek_v3"})
    assert asked.kinds == renamed.kinds
    deepseek = importlib.import_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    expected = deepseek.DeepseekV3RotaryEmbedding(
        config=transformers.DeepseekV3Config.from_dict({k: v for k, v in config.items() if k != "model_type"})).inv_freq
    torch.testing.assert_close(rope_frequencies(asked.default_kind.spec).inv_freq, expected.double(), rtol=2e-6, atol=0)
    assert asked.default_kind.layout == "interleaved"
    with pytest.raises(UnknownModelType, match="no model type 'acme' to read this config as"):
        layer_map(config, read_as="acme")


def test_the_clis_read_a_remote_code_model_as_the_family_asked_for(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_kimi_k2()))
    theta = tmp_path / "theta.json"
    spec = layer_map(_kimi_k2(), read_as="deepseek_v3").default_kind.spec
    theta.write_text(json.dumps(rope_frequencies(spec).inv_freq.tolist()))
    refused = _cli("pe_core.check", str(config), "--inv-freq", str(theta), "--json")
    assert refused.returncode == 2 and "--read-as deepseek_v3" in json.loads(refused.stdout)["error"]
    read = _cli("pe_core.check", str(config), "--inv-freq", str(theta), "--read-as", "deepseek_v3", "--json")
    assert read.returncode == 0, read.stdout + read.stderr
    assert json.loads(read.stdout)["verdict"] == "match"


def test_the_check_cli_checks_every_rotary_kind_the_file_has_buffers_for_and_says_what_it_skipped(tmp_path):
    from pathlib import Path

    config = Path(__file__).parent / "data" / "model_configs" / GEMMA_3
    mapped = layer_map(_gemma_3())
    local, full = mapped.kind("sliding_attention"), mapped.kind("full_attention")
    buffers = tmp_path / "rotary.pt"
    torch.save({"model.rotary_emb.sliding_attention_inv_freq": rope_frequencies(local.spec).inv_freq.float(),
                "model.rotary_emb.full_attention_inv_freq": rope_frequencies(full.spec).inv_freq.float()}, buffers)
    both = _cli("pe_core.check", str(config), "--inv-freq", str(buffers), "--json")
    assert both.returncode == 0, both.stdout + both.stderr
    report = json.loads(both.stdout)
    assert {(entry["layer_type"], entry["verdict"]) for entry in report["kinds"]} == {
        ("sliding_attention", "match"), ("full_attention", "match")}
    assert report["skipped"] == []
    one_list = tmp_path / "theta.json"
    one_list.write_text(json.dumps(rope_frequencies(full.spec).inv_freq.tolist()))
    single = json.loads(_cli("pe_core.check", str(config), "--inv-freq", str(one_list), "--json").stdout)
    assert [entry["layer_type"] for entry in single["kinds"]] == ["full_attention"]
    assert [entry["layer_type"] for entry in single["skipped"]] == ["sliding_attention"]
    assert "--layer-type sliding_attention" in single["skipped"][0]["why"]


def test_the_probe_script_names_the_models_own_rotary_class_rotation_and_layer_type():
    from pe_core.probe import make_probe
    from pe_core.probe_files import probe_script

    gemma = layer_map(_gemma_3()).kind("full_attention")
    script = probe_script(make_probe(gemma.spec, None, 0), "config.json", "full_attention", gemma)
    assert "from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding, apply_rotary_pos_emb" in script
    assert "Gemma3RotaryEmbedding(config)(q, position_ids, layer_type='full_attention')" in script
    glm = layer_map({"model_type": "glm_moe_dsa"}).default_kind
    script = probe_script(make_probe(glm.spec, None, 0), "config.json", None, glm)
    assert "GlmMoeDsaRotaryEmbedding(config)(q, position_ids)" in script
    assert "return apply_rotary_pos_emb_interleave(q, k, cos, sin)" in script


def test_the_published_laguna_file_reads_kind_by_kind_and_its_plan_keeps_the_shipped_yarn():
    from pathlib import Path

    from pe_core.plan import plan

    config = json.loads((Path(__file__).parent / "data" / "model_configs" / "poolside--Laguna-XS.2-FP8.json").read_text())
    mapped = layer_map(config)
    full, sliding = mapped.kind("full_attention"), mapped.kind("sliding_attention")
    assert (len(full.layers), len(sliding.layers), sliding.span) == (10, 30, config["sliding_window"])
    shipped = config["rope_parameters"]["full_attention"]
    assert (full.spec.rope_type, full.spec.beta_fast, full.spec.attention_factor, full.spec.rotary_dim) == (
        "yarn", shipped["beta_fast"], shipped["attention_factor"], 64)
    assert (sliding.spec.rope_type, sliding.spec.base, sliding.spec.rotary_dim) == ("default", 10_000.0, 128)
    assert mapped.unread_keys == ("use_bidirectional_attention",)
    yarn = next(method for method in plan(config, 1_048_576).methods if method.method == "yarn")
    written = yarn.config["rope_parameters"]
    assert (written["full_attention"]["beta_fast"], written["full_attention"]["attention_factor"]) == (
        64.0, shipped["attention_factor"])
    assert written["sliding_attention"] == config["rope_parameters"]["sliding_attention"]


def test_the_layer_map_caption_says_who_read_the_config_and_what_nothing_read():
    from lessons.rope_setup import layer_map_caption

    mapped = layer_map({"model_type": "mimo_v2_flash", "compress_rope_theta": 160_000})

    class Setup:  # the caption reads the setup's layer map and the kind its figures describe
        layers, kind = mapped, mapped.default_kind

    caption = layer_map_caption(Setup)
    assert f"Read by mimo_v2_flash's own config, rotary and attention classes in transformers {transformers.__version__}." in caption
    assert "Keys nothing in the model's code reads: compress_rope_theta." in caption
