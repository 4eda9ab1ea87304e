"""A rope type is one function and one entry (``pe_core.rope.ROPE_TYPE_ENTRIES``): a toy type added here is read
from a config, drawn on the θ heatmaps page, checked by the checker and planned by the planner with no other edit."""

from __future__ import annotations

import json

import pytest
import torch

from pe_core import check, plan
from pe_core.config import from_hf_config, layer_map
from pe_core.rope import (
    ROPE_TYPE_ENTRIES,
    RopeSpec,
    RopeType,
    canonical_rope_type,
    default_inv_freq,
    dynamic_ntk_base,
    rope_frequencies,
)
from tests.conftest import figure_titled, run_page

TOY = "halved_toy"
TOY_CONFIG = {"hidden_size": 1024, "num_attention_heads": 16, "max_position_embeddings": 8192, "rope_theta": 10000.0,
              "rope_scaling": {"rope_type": TOY, "factor": 3.0}}


def _halved(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """A made-up scaling: every θ divided by twice the factor."""
    return plain / (2 * spec.factor)


@pytest.fixture
def toy_type(monkeypatch):
    entry = RopeType(TOY, "Halved (a toy)", _halved, reads=("factor",))
    monkeypatch.setitem(ROPE_TYPE_ENTRIES, TOY, entry)
    return entry


def _toy_theta() -> torch.Tensor:
    return default_inv_freq(10000.0, 64) / 6.0


def test_a_new_rope_type_is_read_and_computed_from_its_entry(toy_type):
    spec = from_hf_config(TOY_CONFIG)
    assert (spec.rope_type, spec.factor, spec.head_dim) == (TOY, 3.0, 64)
    assert torch.equal(rope_frequencies(spec).inv_freq, _toy_theta())
    kind = layer_map(TOY_CONFIG).default_kind
    assert kind.extends and kind.spec == spec


def test_a_new_rope_type_is_checked(toy_type):
    spec = from_hf_config(TOY_CONFIG)
    assert check.check(spec, _toy_theta()).verdict == "match"
    report = check.check(spec, _toy_theta() * 2)  # a port that forgot the halving: PI's θ / 3
    assert report.verdict == "mismatch"


def test_a_new_rope_type_is_planned(toy_type):
    result = plan.plan(TOY_CONFIG, 32768, methods=("direct", "pi"), with_bound=False)
    assert result.spec.rope_type == TOY
    direct = [method for method in result.methods if method.method == "direct"][0]
    assert direct.spec == result.spec  # the model as it ships: its own toy scaling
    pi = [method for method in result.methods if method.method == "pi"][0]
    assert pi.rope["rope_type"] == "linear" and pi.parameters["factor"] == 32768 / 8192


def test_a_new_rope_type_appears_on_the_theta_heatmaps_page(toy_type):
    from lessons import frequencies

    at = run_page("app_pages/frequencies.py", {"src": "Paste config.json", "config": json.dumps(TOY_CONFIG)})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "own RoPE: Halved (a toy) (halved_toy)" in " ".join(c.value for c in at.sidebar.caption)
    heatmap = figure_titled(at, "Rotation angle m·θᵢ by pair and position")
    assert "Pasted config" in [trace["name"] for trace in heatmap["data"]]
    settings = frequencies.Settings.from_mapping({"source": "config", "config": json.dumps(TOY_CONFIG)})
    own = frequencies.LESSON.result(settings).setup.own
    assert torch.equal(own.frequencies().inv_freq, _toy_theta())


def test_unknown_rope_types_are_refused_with_the_entries_named():
    with pytest.raises(ValueError, match="must be one of default, linear, ntk, dynamic"):
        RopeSpec(rope_type="made_up")


@pytest.mark.parametrize(("old", "new"), [("su", "longrope"), ("ntk-aware", "ntk"), ("dynamic_ntk", "dynamic"),
                                          ("mrope", "default"), ("yarn", "yarn")])
def test_older_names_are_read_as_the_entries_they_alias(old, new):
    assert canonical_rope_type(old) == new


def test_dynamic_ntk_base_is_one_function_for_a_length_and_for_many():
    """b·(s·l/L − (s − 1))^(d/(d−2)), never below b: the scalar and the tensor form agree with the closed form."""
    lengths = torch.tensor([100.0, 4096.0, 8192.0, 16384.0], dtype=torch.float64)
    closed = 10000.0 * (2.0 * lengths.clamp(min=4096) / 4096 - 1.0) ** (128 / 126)
    assert torch.allclose(dynamic_ntk_base(10000.0, 2.0, 128, 4096, lengths), closed, rtol=1e-15)
    assert dynamic_ntk_base(10000.0, 2.0, 128, 4096, 8192) == pytest.approx(float(closed[2]), rel=1e-15)
    spec = RopeSpec(rope_type="dynamic", factor=2.0)
    assert torch.allclose(rope_frequencies(spec, 8192).inv_freq, default_inv_freq(float(closed[2]), 128), rtol=1e-14)
