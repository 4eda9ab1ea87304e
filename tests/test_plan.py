"""The extension plan: every patched config.json, for every public config in tests/data/model_configs and every
preset, loads into the model's own transformers config and rotary classes and gives, layer type by layer type,
the θ the plan says (the planned layers' new θ, the others' own); the layer notes, the composition with shipped
scaling, the raisable limit on targets; the unseen shares against a position-by-position count, the ABF base
and dynamic NTK, and the CLI."""

from __future__ import annotations

import io
import json
import logging
import math
from pathlib import Path

import pytest
import torch

from pe_core import default_inv_freq, from_hf_config, load_presets, ntk_aware_base, preset_by_name, rope_frequencies
from pe_core.base_bound import base_lower_bound, criterion_holds
from pe_core.check import close
from pe_core.config import layer_map
from pe_core.plan import (
    MAX_TARGET,
    PLAN_METHODS,
    TARGET_CEILING,
    composition_text,
    dynamic_base,
    main,
    plan,
    plan_json,
    round_up,
    unseen_shares,
)
from tests import model_classes

pytestmark = pytest.mark.usefixtures("one_torch_thread")
PRESETS = load_presets()
CONFIGS = Path(__file__).parent / "data" / "model_configs"
def _as_pasted(config: dict) -> dict:
    """A remote-code model type (Kimi K2) named as the family its auto_map names, as the reader's refusal says."""
    same = model_classes.SAME_ARCHITECTURE.get(config.get("model_type"))
    return {**config, "model_type": same} if same else config


PUBLISHED = {path.stem: _as_pasted(json.loads(path.read_text())) for path in sorted(CONFIGS.glob("*.json"))}
CASES = {**PUBLISHED, **{preset.name: preset.config for preset in PRESETS}}
SCALES = (2, 4, 8, 16, 32)
PROPORTIONAL_FACTOR_WARNING = "Unrecognized keys in `rope_parameters` for 'rope_type'='proportional': {'factor'}\n"


def train_length(config: dict) -> int:
    return from_hf_config(config).original_max_position_embeddings


@pytest.fixture
def transformers_warnings():
    """Warnings transformers logs while a config loads (unknown keys, inconsistent lengths)."""
    from transformers.utils import logging as hf_logging

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = hf_logging.get_logger("transformers")
    level = logger.level
    logger.setLevel(logging.WARNING)  # whatever another test of this worker set it to
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(level)


def expected_frequencies(result, method, note) -> tuple[torch.Tensor, float]:
    """What the plan says a kind of layer rotates with once ``method``'s config is loaded."""
    if note.changed:
        return method.inv_freq, method.attention_factor
    own = rope_frequencies(note.kind.spec, result.target)
    return own.inv_freq, own.attention_factor


def configs_of(method) -> list[dict]:
    return [method.config] + ([method.legacy_config] if method.legacy_config is not None else [])


@pytest.mark.parametrize("name", CASES)
def test_every_patched_config_gives_the_planned_theta_in_the_models_own_classes(name, transformers_warnings):
    config = CASES[name]
    result = plan(config, 4 * train_length(config), with_bound=False, max_target=TARGET_CEILING)
    assert [m.method for m in result.methods] + list(result.unavailable) == \
        [m for m in PLAN_METHODS if m not in result.unavailable] + list(result.unavailable)
    assert len(result.methods) == (4 if result.spec.rope_type == "proportional" else 7)
    for method in result.methods:
        for patched in configs_of(method):
            before = transformers_warnings.tell()
            module = model_classes.rotary(model_classes.model_config(patched))
            warned = transformers_warnings.getvalue()[before:]
            if method.rope.get("factor") and method.rope["rope_type"] == "proportional":
                warned = warned.replace(PROPORTIONAL_FACTOR_WARNING, "")  # its rotary class divides by it all the same
            if method.method != "direct":  # direct extrapolation keeps the shipped block, warnings and all
                assert warned == "", (method.method, patched)
            ours = layer_map(patched)
            for note in result.layers:
                if not note.kind.has_rope:
                    assert not ours.kind(note.kind.key).has_rope
                    continue
                expected, attention = expected_frequencies(result, method, note)
                theirs, their_attention = model_classes.frequencies(module, note.kind.layer_type, result.target)
                where = (method.method, note.kind.layer_type, patched)
                if note.kind.spec.rope_type == "proportional":  # transformers pads the unrotated pairs with θ = 0
                    assert not bool(theirs[len(expected):].any()), where
                    theirs = theirs[:len(expected)]
                assert theirs.shape == expected.shape, where
                assert bool(close(theirs, expected).all()), where
                assert their_attention == pytest.approx(attention, rel=1e-6), where
                reread = rope_frequencies(ours.kind(note.kind.layer_type).spec, result.target)
                assert bool(close(reread.inv_freq, expected).all()), where  # and the app reads it back the same


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
@pytest.mark.parametrize("scale", SCALES)
def test_every_scale_of_every_preset_reproduces_in_transformers(preset, scale):
    result = plan(preset.config, scale * train_length(preset.config), with_bound=False, max_target=TARGET_CEILING)
    for method in result.methods:
        for patched in configs_of(method):
            module = model_classes.rotary(model_classes.model_config(patched))
            theirs, attention = model_classes.frequencies(module, "full_attention", result.target)
            assert bool(close(theirs, method.inv_freq).all()), (method.method, patched)
            assert attention == pytest.approx(method.attention_factor, rel=1e-6)


def test_the_warning_catcher_catches(transformers_warnings):
    from transformers import LlamaConfig

    LlamaConfig(hidden_size=256, num_attention_heads=4, rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                         "rope_theta": 1e4, "no_such_key": 1})
    assert "Unrecognized keys" in transformers_warnings.getvalue()


def test_gemma3_scales_its_full_attention_layers_on_top_of_the_shipped_linear_x8():
    config = PUBLISHED["google--gemma-3-4b-it"]
    result = plan(config, 524_288, with_bound=False)
    assert (result.train_length, result.built_for, result.shipped_factor, result.scale) == (16_384, 131_072, 8.0, 32.0)
    assert result.changed_types == ("full_attention",)
    notes = {note.kind.layer_type: note for note in result.layers}
    assert notes["sliding_attention"].reason == "window" and "1,024 tokens" in notes["sliding_attention"].text("full")
    assert "×32 in total on the same L, ×4 more than it ships" in composition_text(result)
    pi = result.method("pi")
    text = pi.config["text_config"]
    assert "rope_scaling" not in text and text["max_position_embeddings"] == 524_288
    assert text["rope_parameters"] == {"full_attention": {"rope_type": "linear", "rope_theta": 1_000_000.0,
                                                          "factor": 32.0},
                                       "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}}
    assert pi.config["vision_config"] == config["vision_config"]  # the rest of the file as it was
    legacy = pi.legacy_config["text_config"]
    assert (legacy["rope_theta"], legacy["rope_local_base_freq"]) == (1_000_000.0, 10_000.0)
    assert legacy["rope_scaling"] == {"rope_type": "linear", "factor": 32.0}
    flat = {**config, "text_config": {**text, "rope_parameters": pi.rope}}  # what the old plan wrote
    theirs, _attention = model_classes.frequencies(model_classes.rotary(model_classes.model_config(flat)),
                                                   "full_attention")
    torch.testing.assert_close(theirs, default_inv_freq(1e6, 256), rtol=2e-6, atol=0)  # Gemma 3's class ignores it
    direct = result.method("direct")
    assert direct.parameters == {"base": 1_000_000.0, "shipped_factor": 8.0}
    assert direct.config["text_config"]["rope_parameters"]["full_attention"]["factor"] == 8.0  # the ×8 kept
    torch.testing.assert_close(direct.inv_freq, default_inv_freq(1e6, 256) / 8, rtol=1e-12, atol=0)


def test_gpt_oss_plain_rope_is_an_explicit_default_block_never_null():
    config = PUBLISHED["openai--gpt-oss-20b"]
    result = plan(config, 4 * 4096, with_bound=False)
    assert result.planned.layer_type == "full_attention"  # of the two kinds sharing one RoPE, the unbounded one
    assert set(result.changed_types) == {"full_attention", "sliding_attention"}
    assert {note.reason for note in result.layers} == {"scaled", "shared"}
    for name in ("ntk", "abf"):
        method = result.method(name)
        assert method.config["rope_parameters"]["rope_type"] == "default"
        assert method.legacy_config["rope_scaling"] == {"rope_type": "default"}
        null = {**method.legacy_config, "rope_scaling": None}  # what the old plan wrote
        theirs, _attention = model_classes.frequencies(model_classes.rotary(model_classes.model_config(null)),
                                                       "full_attention")
        assert not bool(close(theirs, method.inv_freq).all())  # null is gpt-oss's built-in YaRN ×32, not plain RoPE


def test_layers_without_rope_are_left_alone_and_said_so():
    exaone = plan(PUBLISHED["LGAI-EXAONE--EXAONE-4.0-32B"], 65_536, with_bound=False)
    reasons = {note.kind.key: (note.changed, note.reason) for note in exaone.layers}
    assert reasons == {"sliding_attention": (True, "scaled_bounded"), "full_attention_nope": (False, "nope")}
    qwen_next = plan(PUBLISHED["Qwen--Qwen3-Next-80B-A3B-Thinking"], 4 * 262_144, with_bound=False)
    assert {note.reason for note in qwen_next.layers} == {"scaled", "linear"}


def test_olmo3_writes_rope_parameters_per_layer_type_only():
    result = plan(PUBLISHED["allenai--Olmo-3.1-32B-Instruct"], 4 * 8192, with_bound=False)
    assert result.changed_types == ("full_attention",) and result.method("yarn").legacy_config is None
    blocks = result.method("abf").config["rope_parameters"]
    assert blocks["sliding_attention"] == {"rope_type": "default", "rope_theta": 500_000}


def test_multimodal_sections_are_kept_in_every_block():
    result = plan(PUBLISHED["Qwen--Qwen2.5-VL-7B-Instruct"], 4 * 128_000, with_bound=False)
    for method in result.methods:
        assert method.config["rope_parameters"]["mrope_section"] == [16, 24, 24], method.method
        assert method.legacy_config["rope_scaling"]["mrope_section"] == [16, 24, 24], method.method


def test_gemma4_proportional_rope_is_planned_with_the_methods_it_can_write():
    result = plan(PUBLISHED["google--gemma-4-26B-A4B"], 4 * 262_144, with_bound=False)
    assert [m.method for m in result.methods] == ["direct", "pi", "ntk", "abf"]
    assert result.unavailable == ("dynamic", "yarn", "llama3") and "Not offered" in composition_text(result)
    assert result.train_spec.base == pytest.approx(1e6 ** (128 / 512))  # plain RoPE on 128 dims, same θᵢ
    blocks = {m.method: m.config["text_config"]["rope_parameters"]["full_attention"] for m in result.methods}
    assert blocks["pi"] == {"rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25,
                            "factor": 4.0}
    assert blocks["ntk"]["rope_theta"] == pytest.approx(1e6 * 4 ** (512 / 126))  # b·s^(h/(r−2))
    sliding = {m.config["text_config"]["rope_parameters"]["sliding_attention"]["rope_theta"] for m in result.methods}
    assert sliding == {10_000.0}


def brute_unseen(train_theta: torch.Tensor, length: int, theta: torch.Tensor, target: int) -> torch.Tensor:
    """Unseen positions per pair, one position at a time."""
    arc = length * train_theta
    angles = torch.outer(torch.arange(target, dtype=torch.float64), theta) % (2 * math.pi)
    return ((angles > arc) & (arc < 2 * math.pi)).sum(0).to(torch.float64)


@pytest.mark.parametrize("method", PLAN_METHODS)
def test_unseen_shares_equal_a_position_by_position_count(method):
    config = {"head_dim": 32, "hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 512,
              "rope_theta": 10_000.0}
    result = plan(config, 4096, with_bound=False)
    chosen = result.method(method)
    train_theta = default_inv_freq(10_000.0, 32)
    pairs, angles, counts = unseen_shares(train_theta, 512, chosen.inv_freq, 4096)
    expected = brute_unseen(train_theta, 512, chosen.inv_freq, 4096)
    assert counts.tolist() == expected.tolist()
    assert pairs == pytest.approx(float((expected > 0).double().mean()))
    assert angles == pytest.approx(float(expected.sum() / (4096 * 16)))


def test_what_each_method_leaves_unseen():
    result = plan(preset_by_name("Llama-3-8B").config, 65536, with_bound=False)
    shares = {m.method: (m.unseen_pairs, m.unseen_angles) for m in result.methods}
    for method in ("pi", "yarn", "llama3"):
        assert shares[method] == (0.0, 0.0)  # the interpolated pairs never leave the trained arc
    theta = default_inv_freq(500_000.0, 128)
    assert shares["direct"][0] == pytest.approx(float((8192 * theta < 2 * math.pi).double().mean()))
    assert 0 < shares["ntk"][1] < shares["direct"][1]
    assert shares["dynamic"] == shares["ntk"]  # factor 1 at L′: static NTK for s = L′/L


def test_dynamic_ntk_and_ntk_bases():
    result = plan(preset_by_name("Llama-2-7B").config, 16384, with_bound=False)
    ntk = result.method("ntk").parameters["base"]
    assert ntk == pytest.approx(ntk_aware_base(10_000.0, 4.0, 128))
    dynamic = result.method("dynamic")
    assert dynamic.max_positions == dynamic.config["max_position_embeddings"] == 4096  # read as the pretraining length
    assert dynamic_base(dynamic.spec, 16384) == pytest.approx(ntk)
    assert dynamic_base(dynamic.spec, 2048) == 10_000.0
    assert dynamic.parameters["base_at_target_factor_s"] == pytest.approx(10_000.0 * 13 ** (128 / 126))


def test_bound_and_abf_base():
    result = plan(preset_by_name("Llama-3-8B").config, 32768)
    assert result.base_bound == base_lower_bound(32768, 128)
    assert result.train_bound == base_lower_bound(8192, 128)
    abf = result.method("abf").parameters["base"]
    assert abf >= result.base_bound and abf == round_up(abf)
    assert criterion_holds(abf, 32768, 128)
    assert result.method("abf").first_negative is None
    assert result.method("direct").first_negative is not None  # 500,000 is below b*(32k)


def test_round_up():
    assert round_up(631_000.0) == 640_000.0
    assert round_up(640_000.0) == 640_000.0
    assert round_up(2_205_000.0) == 2_300_000.0


def test_partial_rotary_plans_need_no_bound_when_half_is_unrotated():
    config = {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
              "partial_rotary_factor": 0.5, "rope_theta": 10_000.0}
    result = plan(config, 16384)
    assert result.base_bound is None and result.method("abf").parameters["base"] == 10_000.0
    assert all(m.first_negative is None for m in result.methods)


def test_bad_targets_are_refused_and_the_limit_can_be_raised():
    config = preset_by_name("Llama-2-7B").config
    with pytest.raises(ValueError, match="must exceed the training length"):
        plan(config, 4096)
    with pytest.raises(ValueError, match="beyond the limit of 1,048,576 tokens; raise the limit"):
        plan(config, MAX_TARGET + 1, with_bound=False)
    assert plan(config, MAX_TARGET + 1, with_bound=False, max_target=MAX_TARGET + 1).target == MAX_TARGET + 1
    for limit in (TARGET_CEILING + 1, 1, 2.5, True):
        with pytest.raises(ValueError, match="goes up to 16,777,216 tokens"):
            plan(config, 8192, max_target=limit)


def test_plan_json_is_plain_json():
    data = plan_json(plan(preset_by_name("gpt-oss-20b").config, 8192))
    text = json.dumps(data)
    assert "rope_parameters" in text and data["methods"]["yarn"]["parameters"]["factor"] == 2.0


def test_cli(capsys, tmp_path):
    out = tmp_path / "plan.json"
    assert main(["Llama-2-7B", "--target", "16384", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "YaRN" in text and "rope_parameters" in text and "Men et al. 2024" in text
    assert json.loads(out.read_text())["target"] == 16384
    assert main(["Llama-2-7B", "--target", "16384", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["methods"]["pi"]["config"]["rope_parameters"]["factor"] == 4.0
    assert main(["Llama-2-7B", "--target", "100"]) == 2
    assert "must exceed" in capsys.readouterr().err
    assert main(["{not json", "--target", "100"]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["Llama-2-7B", "--target", str(2 * MAX_TARGET)]) == 2
    assert "raise the limit (up to 16,777,216)" in capsys.readouterr().err
    assert main(["Llama-2-7B", "--target", "16384", "--max-target", str(TARGET_CEILING * 2)]) == 2
    assert "goes up to 16,777,216" in capsys.readouterr().err
