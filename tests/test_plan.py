"""The extension plan: every block loads into transformers and reproduces our θ for every preset and 2×–32×,
the unseen shares against a position-by-position count, the ABF base and dynamic NTK, and the CLI."""

from __future__ import annotations

import copy
import io
import json
import logging
import math

import pytest
import torch

from pe_core import default_inv_freq, from_hf_config, load_presets, ntk_aware_base, preset_by_name, rope_frequencies
from pe_core.base_bound import base_lower_bound, criterion_holds
from pe_core.check import close
from pe_core.plan import (
    PLAN_METHODS,
    apply_block,
    dynamic_base,
    main,
    plan,
    plan_json,
    round_up,
    unseen_shares,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")
PRESETS = load_presets()
SCALES = (2, 4, 8, 16, 32)


def train_length(config: dict) -> int:
    return from_hf_config(config).original_max_position_embeddings


@pytest.fixture(scope="module")
def transformers_rope():
    parity = pytest.importorskip("tests.test_rope_parity")
    return parity.transformers_frequencies


@pytest.fixture
def transformers_warnings():
    """Warnings transformers logs while a config loads (unknown keys, inconsistent lengths)."""
    from transformers.utils import logging as hf_logging

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = hf_logging.get_logger("transformers")
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
@pytest.mark.parametrize("scale", SCALES)
def test_every_block_reproduces_in_transformers(preset, scale, transformers_rope, transformers_warnings):
    from transformers import LlamaConfig

    result = plan(preset.config, scale * train_length(preset.config), with_bound=False)
    assert [m.method for m in result.methods] == list(PLAN_METHODS)
    for method in result.methods:
        for block in (method.block, method.legacy_block):
            config = apply_block(preset.config, block)
            inv_freq, attention = transformers_rope(config, result.target)
            assert bool(close(inv_freq.to(torch.float64), method.inv_freq).all()), (method.method, block)
            assert float(attention) == pytest.approx(method.attention_factor, rel=1e-6)
            ours = rope_frequencies(from_hf_config(config), result.target)
            assert bool(close(ours.inv_freq, method.inv_freq).all())
            loaded = copy.deepcopy(config)
            if "qk_rope_head_dim" in loaded:
                loaded["head_dim"] = loaded.pop("qk_rope_head_dim")
            before = transformers_warnings.tell()
            LlamaConfig(**loaded)
            assert transformers_warnings.getvalue()[before:] == "", (method.method, block)


def test_the_warning_catcher_catches(transformers_warnings):
    from transformers import LlamaConfig

    LlamaConfig(hidden_size=256, num_attention_heads=4, rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                         "rope_theta": 1e4, "no_such_key": 1})
    assert "Unrecognized keys" in transformers_warnings.getvalue()


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
    assert dynamic.block["max_position_embeddings"] == 4096  # transformers reads it as the pretraining length
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


def test_bad_targets_are_refused():
    config = preset_by_name("Llama-2-7B").config
    with pytest.raises(ValueError, match="must exceed the training length"):
        plan(config, 4096)
    with pytest.raises(ValueError, match="up to"):
        plan(config, 1 << 21)


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
