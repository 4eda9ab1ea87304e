"""The layer map against each model's own transformers classes, on public config.json files.

Every file in ``tests/data/model_configs`` (sources in its SOURCES.md) is loaded into the model's own config
class; each layer type's θ and attention factor must equal that model's own rotary class (its per-layer-type
buffers where it keeps them), and the layers, spans, NoPE layers and pairing layout must be the ones the
model's attention classes use.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

from pe_core import from_hf_config, rope_frequencies
from pe_core.config import extended_length, layer_map
from tests import model_classes

transformers = pytest.importorskip("transformers")

CONFIGS = Path(__file__).parent / "data" / "model_configs"
CONFIG_FILES = sorted(CONFIGS.glob("*.json"))

def _published(path: Path) -> dict:
    """A published file as a reader pastes it; a remote-code model type (Kimi K2) named as the family its auto_map
    names, as the reader's refusal tells them to (tests/test_model_code.py tests that refusal and --read-as)."""
    config = json.loads(path.read_text())
    same = model_classes.SAME_ARCHITECTURE.get(config.get("model_type"))
    return {**config, "model_type": same} if same else config


def _model_config(config: dict):
    """The model's own config class, built from the file exactly as from_pretrained would."""
    return model_classes.model_config(config)


def _rotary(text_config):
    if text_config.model_type not in model_classes.ROTARY_CLASSES:
        pytest.skip(f"no rotary class listed for {text_config.model_type}")
    return model_classes.rotary(text_config)


def _buffers(rotary, layer_type: str) -> tuple[torch.Tensor, float]:
    return model_classes.frequencies(rotary, layer_type)


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[path.stem for path in CONFIG_FILES])
def test_every_layer_type_has_the_models_own_frequencies(path):
    config = _published(path)
    text_config = _model_config(config)
    rotary = _rotary(text_config)
    ours = layer_map(config)
    assert list(ours.layer_types) == list(getattr(text_config, "layer_types", None) or ours.layer_types)
    assert ours.num_layers == text_config.num_hidden_layers
    for kind in ours.rotary_kinds:
        inv_freq, attention = _buffers(rotary, kind.layer_type)
        expected = inv_freq.to(torch.float64)
        computed = rope_frequencies(kind.spec, kind.spec.original_max_position_embeddings)
        if kind.spec.rope_type == "proportional":  # transformers pads the unrotated pairs with θ = 0
            assert torch.equal(expected[kind.spec.num_pairs:], torch.zeros(len(expected) - kind.spec.num_pairs, dtype=torch.float64))
            expected = expected[:kind.spec.num_pairs]
        assert computed.inv_freq.shape == expected.shape, kind.layer_type
        torch.testing.assert_close(computed.inv_freq, expected, rtol=2e-6, atol=0)
        assert computed.attention_factor == pytest.approx(attention, rel=1e-6)
        assert from_hf_config(config, layer_type=kind.layer_type) == kind.spec


def _attention_module(text_config, layer_index: int):
    """The model's own attention class for one layer, built small (the rule that decides RoPE does not depend on widths)."""
    small = text_config.__class__.from_dict({**text_config.to_dict(), "hidden_size": 64, "num_attention_heads": 2,
                                             "num_key_value_heads": 1, "intermediate_size": 32, "vocab_size": 16})
    module = importlib.import_module(type(_rotary(text_config)).__module__)
    attention_class = next(getattr(module, name) for name in dir(module)
                           if name.endswith("Attention") and "Vision" not in name and "Linear" not in name
                           and "Flash" not in name and "Sdpa" not in name)
    return attention_class(small, layer_index)


# How each family's attention class says whether a layer rotates (read off the module, not the config).
NOPE_RULES = {
    "exaone4": lambda attention: attention.sliding_window is None or attention.is_sliding,
    "cohere2": lambda attention: attention.sliding_window is not None,
    "llama4_text": lambda attention: bool(attention.use_rope),
    "smollm3": lambda attention: bool(attention.use_rope),
    "afmoe": lambda attention: attention.is_local_attention,
    "exaone_moe": lambda attention: attention.sliding_window is None or attention.is_sliding,
    "kolibri1": lambda attention: attention.sliding_window is None or attention.is_sliding,
    "cohere2_moe": lambda attention: attention.sliding_window is not None or attention.force_rope,
    "flint": lambda attention: attention.sliding_window is not None,
}
# Keys a bare config of these families needs before it has any RoPE layer to compare
BARE_EXTRAS = {"bamba": {"attn_layer_indices": [2, 5]}, "cohere2_moe": {"first_k_dense_replace": 2},
               "zamba2": {"use_mem_rope": True, "num_hidden_layers": 54},  # its class lays out 54 blocks
               "granitemoehybrid": {"position_embedding_type": "rope",
                                    "layers_block_type": ["mamba", "attention"] * 4},
               # HunYuan's attention needs a head_dim; Qwen2-VL's default mrope_section spans 64 pairs of a 128 head
               "hunyuan_v1_dense": {"head_dim": 64}, "hunyuan_v1_moe": {"head_dim": 64},
               "qwen2_vl_text": {"hidden_size": 512}, "qwen2_5_vl_text": {"hidden_size": 512}}


@pytest.mark.parametrize("path", [path for path in CONFIG_FILES
                                  if _published(path).get("model_type") in ("exaone4", "cohere2", "llama4")
                                  or (_published(path).get("text_config") or {}).get("model_type") == "llama4_text"],
                         ids=lambda path: path.stem)
def test_nope_layers_are_those_the_models_attention_leaves_unrotated(path):
    config = _published(path)
    text_config = _model_config(config)
    ours = layer_map(config)
    rule = NOPE_RULES[text_config.model_type]
    for kind in ours.kinds:
        for index in kind.layers:
            assert rule(_attention_module(text_config, index)) == kind.has_rope, (kind.key, index)


def test_gemma3_is_read_as_five_sliding_layers_per_full_one():
    config = _published(CONFIGS / "google--gemma-3-4b-it.json")
    ours = layer_map(config)
    sliding, full = ours.kind("sliding_attention"), ours.kind("full_attention")
    assert (len(sliding.layers), len(full.layers)) == (29, 5)
    assert full.layers == (5, 11, 17, 23, 29)
    assert (sliding.spec.base, sliding.spec.rope_type, sliding.span) == (10_000.0, "default", 1024)
    assert (full.spec.base, full.spec.rope_type, full.spec.factor, full.span) == (1_000_000.0, "linear", 8.0, None)
    assert ours.default_kind is full  # the layers context extension scales
    assert extended_length(config) == 131_072  # its max_position_embeddings, not 131,072 × 8


def test_layers_without_rope_are_named_and_refused_by_from_hf_config():
    exaone = _published(CONFIGS / "LGAI-EXAONE--EXAONE-4.0-32B.json")
    ours = layer_map(exaone)
    assert [kind.key for kind in ours.kinds] == ["sliding_attention", "full_attention_nope"]
    assert ours.kind("full_attention_nope").layers == tuple(range(3, 64, 4))
    with pytest.raises(ValueError, match="no position encoding"):
        from_hf_config(exaone, layer_type="full_attention")
    with pytest.raises(ValueError, match="no 'chunked_attention' layers"):
        layer_map(exaone).kind("chunked_attention")


def test_gpt_neox_reads_rotary_pct_and_rotary_emb_base():
    pythia = {"model_type": "gpt_neox", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
              "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048}
    spec = from_hf_config(pythia)
    assert (spec.head_dim, spec.rotary_dim) == (64, 16)
    reference = _rotary(_model_config(pythia))
    torch.testing.assert_close(rope_frequencies(spec).inv_freq, reference.inv_freq.double(), rtol=2e-6, atol=0)


def test_a_config_without_a_layer_count_still_reads_its_kinds():
    ours = layer_map({"head_dim": 128, "rope_theta": 1e6, "layer_types": None})  # no model type: no class defaults
    assert ours.num_layers == 0 and [kind.key for kind in ours.kinds] == ["full_attention"]
    assert all(kind.layers == () for kind in ours.kinds)


# ---- the checker, per layer type ----------------------------------------------------------------------------

def _check_cli(tmp_path, config: dict, numbers, *extra: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from pe_core.check import main

    config_file, numbers_file = tmp_path / "config.json", tmp_path / "inv_freq.json"
    config_file.write_text(json.dumps(config))
    numbers_file.write_text(json.dumps([float(v) for v in numbers]))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(config_file), "--inv-freq", str(numbers_file), *extra])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ["google--gemma-3-4b-it", "google--gemma-4-26B-A4B", "allenai--Olmo-3.1-32B-Instruct",
                                  "openai--gpt-oss-20b"])
def test_the_checker_takes_each_layer_types_own_buffer_as_a_match(tmp_path, name):
    config = _published(CONFIGS / f"{name}.json")
    rotary = _rotary(_model_config(config))
    for kind in layer_map(config).rotary_kinds:
        inv_freq, attention = _buffers(rotary, kind.layer_type)
        code, out, _err = _check_cli(tmp_path, config, inv_freq.tolist(), "--layer-type", kind.layer_type,
                                     "--attention-factor", str(attention))
        assert code == 0 and "Verdict: MATCH" in out, (kind.layer_type, out)


def test_the_checker_says_a_nope_layer_type_has_nothing_to_check(tmp_path):
    config = _published(CONFIGS / "LGAI-EXAONE--EXAONE-4.0-32B.json")
    code, _out, err = _check_cli(tmp_path, config, [1.0] * 64, "--layer-type", "full_attention")
    assert code == 2 and "no position encoding" in err


def test_the_checker_reads_per_dimension_theta_in_the_models_own_pairing(tmp_path):
    config = _published(CONFIGS / "deepseek-ai--DeepSeek-V3.json")  # rope_interleave: pairs (2i, 2i + 1)
    pairs = _rotary(_model_config(config)).inv_freq.double()
    code, out, _err = _check_cli(tmp_path, config, pairs.repeat_interleave(2).tolist())
    assert code == 0, out
    code, out, _err = _check_cli(tmp_path, config, torch.cat([pairs, pairs]).tolist())
    assert code == 1 and "half" in out.lower()  # a half-split port of an interleaved model is the pairing bug


def test_the_checker_holds_a_pythia_port_to_rotary_pct(tmp_path):
    pythia = {"model_type": "gpt_neox", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
              "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048}
    correct = _rotary(_model_config(pythia)).inv_freq.double()
    assert _check_cli(tmp_path, pythia, correct.tolist())[0] == 0
    whole_head = 1.0 / 10000 ** (torch.arange(0, 64, 2, dtype=torch.float64) / 64)  # rotary_pct ignored
    code, out, _err = _check_cli(tmp_path, pythia, whole_head.tolist())
    assert code == 1 and "partial" in out.lower(), out


def test_a_llama4_style_config_rotates_its_chunked_layers_only_with_the_models_own_theta():
    from tests.test_page_layers import LLAMA4_STYLE

    text_config = _model_config(LLAMA4_STYLE)
    ours = layer_map(LLAMA4_STYLE)
    assert list(ours.layer_types) == text_config.layer_types
    chunked = ours.kind("chunked_attention")
    assert (chunked.layout, chunked.span) == ("interleaved", 8192)  # Llama 4 multiplies complex pairs (2i, 2i + 1)
    torch.testing.assert_close(rope_frequencies(chunked.spec).inv_freq, _rotary(text_config).inv_freq.double(),
                               rtol=2e-6, atol=0)
    for kind in ours.kinds:
        for index in kind.layers:
            assert bool(_attention_module(text_config, index).use_rope) == kind.has_rope
    assert ours.kind("full_attention_nope").nope_note is not None


def test_olmo3_sliding_layers_keep_the_class_default_base_whatever_rope_theta_says():
    config = {**_published(CONFIGS / "allenai--Olmo-3.1-32B-Instruct.json"), "rope_theta": 1_000_000.0}
    rotary = _rotary(_model_config(config))
    ours = layer_map(config)
    for kind in ours.rotary_kinds:
        inv_freq, _attention = _buffers(rotary, kind.layer_type)
        torch.testing.assert_close(rope_frequencies(kind.spec).inv_freq, inv_freq, rtol=2e-6, atol=0)
    assert (ours.kind("sliding_attention").spec.base, ours.kind("full_attention").spec.base) == (500_000.0, 1e6)


def test_when_both_kinds_are_scaled_the_full_attention_layers_are_described():
    gpt_oss = _published(CONFIGS / "openai--gpt-oss-20b.json")  # 12 sliding and 12 full layers, YaRN on both
    assert layer_map(gpt_oss).default_kind.layer_type == "full_attention"


# A family's row must hold its class's defaults: a config that leaves every RoPE key out is read as the class reads it.
BARE_FAMILIES = sorted(model_classes.ROTARY_CLASSES)


@pytest.mark.parametrize("model_type", BARE_FAMILIES)
def test_a_bare_config_gets_its_classs_defaults(model_type):
    import transformers

    if model_type not in transformers.CONFIG_MAPPING:
        pytest.skip("no config class of its own in this transformers")
    bare = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
            **BARE_EXTRAS.get(model_type, {})}
    try:
        _rotary(_model_config(bare))
    except TypeError as err:  # HunYuan's class needs its NTK-α: its own rotary class fails on a bare config
        pytest.skip(f"transformers' own rotary class cannot build a bare {model_type} config ({err})")
    bare = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
            **BARE_EXTRAS.get(model_type, {})}
    text_config = _model_config(bare)
    rotary = _rotary(text_config)
    ours = layer_map(bare)
    assert list(ours.layer_types) == list(getattr(text_config, "layer_types", None) or ours.layer_types)
    for kind in ours.rotary_kinds:
        inv_freq, attention = _buffers(rotary, kind.layer_type)
        computed = rope_frequencies(kind.spec, kind.spec.original_max_position_embeddings)
        expected = inv_freq[:kind.spec.num_pairs] if kind.spec.rope_type == "proportional" else inv_freq
        torch.testing.assert_close(computed.inv_freq, expected, rtol=2e-6, atol=0)
        assert computed.attention_factor == pytest.approx(attention, rel=1e-6)
    for kind in ours.kinds:
        if model_type in NOPE_RULES:
            for index in kind.layers:
                assert NOPE_RULES[model_type](_attention_module(text_config, index)) == kind.has_rope


@pytest.mark.parametrize("model_type", BARE_FAMILIES)
def test_each_familys_pairs_are_the_dimensions_its_own_rotation_turns_together(model_type):
    import transformers

    if model_type not in transformers.CONFIG_MAPPING:
        pytest.skip("read through its composite config")
    bare = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
            **BARE_EXTRAS.get(model_type, {})}
    text_config = _model_config(bare)
    try:
        _rotary(text_config)
    except TypeError as err:
        pytest.skip(f"transformers' own rotary class cannot build a bare {model_type} config ({err})")
    module = importlib.import_module(type(_rotary(text_config)).__module__)
    if not hasattr(module, "apply_rotary_pos_emb"):
        pytest.skip("rotates complex numbers (pairs (2i, 2i + 1)): Llama 4 is tested above, DeepSeek V2 below")
    if hasattr(_rotary(text_config), "mrope_section"):
        pytest.skip("M-RoPE: its sections and pairs are tested in tests/test_mrope.py")
    for kind in layer_map(bare).rotary_kinds:
        assert kind.layout == model_classes.pairing(text_config, kind.layer_type, kind.spec.rotary_dim), kind.layer_type


def test_deepseek_v2_multiplies_complex_pairs_of_neighbouring_dimensions():
    from transformers.models.deepseek_v2 import modeling_deepseek_v2

    assert "view_as_complex" in __import__("inspect").getsource(modeling_deepseek_v2.apply_rotary_emb)
    assert layer_map({"model_type": "deepseek_v2"}).default_kind.layout == "interleaved"


def test_smollm3_leaves_every_fourth_layer_unrotated_and_windows_only_those():
    config = {"model_type": "smollm3", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
              "use_sliding_window": True, "sliding_window": 64}
    text_config = _model_config(config)
    ours = layer_map(config)
    assert list(ours.layer_types) == text_config.layer_types
    assert ours.kind("full_attention").layers == (0, 1, 2, 4, 5, 6)
    assert (ours.kind("sliding_attention_nope").layers, ours.kind("sliding_attention_nope").span) == ((3, 7), 64)
    for kind in ours.kinds:
        for index in kind.layers:
            assert bool(_attention_module(text_config, index).use_rope) == kind.has_rope


@pytest.mark.parametrize("position_embedding_type", ["rope", "nope", None])
def test_granite_4_h_rotates_its_attention_blocks_only_when_its_config_asks_for_rope(position_embedding_type):
    """Granite 4.0-H lists mamba and attention blocks under their old names; its model builds a rotary module
    only for position_embedding_type "rope" (the published 4.0-H configs say "nope")."""
    from transformers.models.granitemoehybrid import modeling_granitemoehybrid

    config = {"model_type": "granitemoehybrid", "hidden_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
              "intermediate_size": 32, "vocab_size": 16, "mamba_n_heads": 4, "mamba_d_head": 32, "mamba_d_state": 8,
              "num_hidden_layers": 4, "layers_block_type": ["mamba", "attention", "mamba", "attention"],
              "position_embedding_type": position_embedding_type}
    text_config = _model_config(config)
    model = modeling_granitemoehybrid.GraniteMoeHybridModel(text_config)
    ours = layer_map(config)
    assert list(ours.layer_types) == text_config.layer_types == ["linear_attention", "full_attention"] * 2
    assert ours.kind("full_attention").layers == (1, 3)
    assert ours.kind("full_attention").has_rope == (model.rotary_emb is not None)
    if model.rotary_emb is not None:
        torch.testing.assert_close(rope_frequencies(ours.kind("full_attention").spec).inv_freq,
                                   model.rotary_emb.inv_freq.double(), rtol=2e-6, atol=0)
    else:
        with pytest.raises(ValueError, match="No layer of this model applies RoPE"):
            from_hf_config(config)


def test_a_null_rope_block_is_read_as_the_models_own_code_runs_it():
    """LlamaAttention rotates on every layer whatever a per-type block says, and LlamaRotaryEmbedding keeps one RoPE:
    a null block does not make Llama's layers NoPE (a family that keeps RoPE per layer type would skip them)."""
    config = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
              "layer_types": ["sliding_attention", "full_attention"] * 2, "sliding_window": 64,
              "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
                                  "full_attention": None}}
    ours = layer_map(config)
    assert ours.kind("sliding_attention").layers == (0, 2) and ours.kind("full_attention").layers == (1, 3)
    rotary = model_classes.rotary(_model_config(config))
    for kind in ours.kinds:
        torch.testing.assert_close(rope_frequencies(kind.spec).inv_freq, rotary.inv_freq.double(), rtol=2e-6, atol=0)


@pytest.mark.parametrize(("model_type", "where", "text_type"), [
    ("paligemma", "text_config", "gemma"),  # a top-level hidden_size of its own
    ("qwen2_5_omni", "thinker_config.text_config", "qwen2_5_omni_text"),  # two levels down
    ("colqwen2", "vlm_config.text_config", "qwen2_vl_text"),
    ("musicflamingo", "text_config", "qwen2"),  # its top level holds the audio encoder's RoPE
])
def test_a_composite_config_is_read_at_its_language_model_as_transformers_finds_it(model_type, where, text_type):
    import transformers

    config = transformers.CONFIG_MAPPING[model_type]().to_dict()
    text_config = _model_config(config)
    ours = layer_map(config)
    assert (ours.read_from, text_config.model_type) == (where, text_type)
    if text_type in model_classes.ROTARY_CLASSES:
        inv_freq, _attention = _buffers(_rotary(text_config), "full_attention")
        torch.testing.assert_close(rope_frequencies(ours.default_kind.spec).inv_freq, inv_freq, rtol=2e-6, atol=0)
    else:
        head_dim = getattr(text_config, "head_dim", None) or text_config.hidden_size // text_config.num_attention_heads
        assert ours.default_kind.spec.head_dim == head_dim


@pytest.mark.parametrize("global_head_dim", [256, 512])
def test_gemma4_full_layers_take_their_head_width_from_per_layer_config_as_saved_now(global_head_dim):
    import transformers

    config = transformers.CONFIG_MAPPING["gemma4_text"](global_head_dim=global_head_dim, num_hidden_layers=6).to_dict()
    assert "global_head_dim" not in config and "per_layer_config" in config  # how transformers 5.24 saves it
    rotary = _rotary(_model_config(config))
    for kind in layer_map(config).rotary_kinds:
        inv_freq, _attention = _buffers(rotary, kind.layer_type)
        assert 2 * len(inv_freq) == kind.spec.head_dim
        torch.testing.assert_close(rope_frequencies(kind.spec).inv_freq, inv_freq[:kind.spec.num_pairs], rtol=2e-6,
                                   atol=0)


@pytest.mark.parametrize("model_type", ["gptj", "codegen", "cohere2_moe"])
def test_families_that_ignore_a_v4_rope_scaling_block_are_read_unscaled_as_their_classes_build_them(model_type):
    config = {"model_type": model_type, "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
              "rope_scaling": {"rope_type": "linear", "factor": 4.0}, **BARE_EXTRAS.get(model_type, {})}
    rotary = _rotary(_model_config(config))
    for kind in layer_map(config).rotary_kinds:
        inv_freq, attention = _buffers(rotary, kind.layer_type)
        assert kind.spec.rope_type == "default"
        torch.testing.assert_close(rope_frequencies(kind.spec).inv_freq, inv_freq, rtol=2e-6, atol=0)


def test_zamba2_rotates_its_shared_attention_block_only_with_use_mem_rope():
    bare = {"model_type": "zamba2", "hidden_size": 256, "num_attention_heads": 4}
    text_config = _model_config(bare)
    ours = layer_map(bare)
    assert list(ours.layer_types) == text_config.layers_block_type
    assert not ours.rotary_kinds  # the class default: no RoPE anywhere
    rotating = layer_map({**bare, "use_mem_rope": True}).kind("hybrid")
    assert rotating.layers == tuple(text_config.hybrid_layer_ids) and rotating.spec.head_dim == 128  # 2·256/4
