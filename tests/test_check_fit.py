"""The checker's fits: each parameter a port can get wrong is recovered from ports built with transformers (a
changed config) or from closed forms written here, at five or more configs (presets and published config.json
files); two bugs at once are named as that pair; θᵢ and the attention factor are diagnosed apart."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import torch

from pe_core import from_hf_config, load_presets, rope_frequencies
from pe_core.check import BUG_CLASSES, applicable_classes, check, explain, report_text
from pe_core.fit import apply_method, fit_exponent, name_base, plain_frequencies, reference_plain, wrapped
from pe_core.rope import RopeSpec, yarn_get_mscale

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CONFIGS = Path(__file__).parent / "data" / "model_configs"
PRESETS = load_presets()


def published(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def float32(values: torch.Tensor) -> torch.Tensor:
    return values.to(torch.float32).to(torch.float64)


def transformers_port(config: dict, seq_len: int | None = None, **rope_changes) -> torch.Tensor:
    """θᵢ from transformers' own rope function for ``config`` with ``rope_changes`` in its rope_scaling (float32)."""
    parity = pytest.importorskip("tests.test_rope_parity")
    config = copy.deepcopy(config)
    scaling = config.get("rope_scaling") or config.get("rope_parameters") or {}
    config.pop("rope_parameters", None)
    config["rope_scaling"] = {**scaling, **rope_changes}
    inv_freq, _attention = parity.transformers_frequencies(config, seq_len)
    return inv_freq.to(torch.float64)


# Parameters that enter a method only together, so that either explains the same numbers: YaRN reads L and β only
# as L/β; proportional RoPE with its scaling dropped is plain RoPE over the rotated width
SAME_NUMBERS = {"wrong_original_length": {"wrong_betas"}, "wrong_betas": {"wrong_original_length"},
                "exponent_width": {"factor_ignored"}}


def only(report, name: str):
    """The diagnosis naming ``name``, which must come first and be alone but for the classes that give the same
    numbers by construction."""
    names = [d.name for d in report.diagnosis]
    assert name in names and set(names) - {name} <= SAME_NUMBERS.get(name, set()), report_text(report)
    return report.diagnosis[names.index(name)]


SPECS = {p.name: p.spec for p in PRESETS}
PHI2 = from_hf_config(published("microsoft--phi-2"))
DYNAMIC = RopeSpec(head_dim=64, base=10_000.0, rope_type="dynamic", factor=2.0, original_max_position_embeddings=4096)
LINEAR = RopeSpec(head_dim=64, base=10_000.0, rope_type="linear", factor=4.0, original_max_position_embeddings=4096)


def test_the_method_applied_to_its_own_plain_frequencies_is_transformers():
    for spec in [*SPECS.values(), PHI2, DYNAMIC, LINEAR, RopeSpec(head_dim=96, rope_type="ntk_by_parts", factor=4.0)]:
        for seq_len in (None, 200_000):
            torch.testing.assert_close(apply_method(spec, seq_len, reference_plain(spec, seq_len)),
                                       rope_frequencies(spec, seq_len).inv_freq, rtol=1e-14, atol=0)


# ---- the base --------------------------------------------------------------------------------------------------

BASE_SPECS = ["Llama-2-7B", "Llama-3.1-8B", "Qwen2.5-7B-Instruct (+YaRN x4)", "DeepSeek-V3", "gpt-oss-20b",
              "Phi-3.5-mini-instruct", "EXAONE-4.0-32B"]


@pytest.mark.parametrize("name", BASE_SPECS)
def test_a_base_rounded_to_bfloat16_is_named_with_its_value(name):
    spec = SPECS[name]
    used = float(torch.tensor(spec.base).to(torch.bfloat16))
    report = check(spec, float32(rope_frequencies(spec.replace(base=used)).inv_freq))
    diagnosis = only(report, "base_rounded")
    assert diagnosis.detail["used_base"] == f"{used:,.0f}" and "bfloat16" in explain(report, diagnosis)


def test_llama3s_base_in_bfloat16_is_499712():
    report = check(SPECS["Llama-3.1-8B"], float32(rope_frequencies(SPECS["Llama-3.1-8B"].replace(base=499_712.0)).inv_freq))
    assert "499,712" in explain(report, only(report, "base_rounded"))


@pytest.mark.parametrize(("name", "bits", "signed"), [("gpt-oss-20b", 16, True), ("Llama-3.1-8B", 16, False),
                                                       ("Qwen2.5-7B-Instruct (+YaRN x4)", 16, True),
                                                       ("Llama-3-8B", 16, False), ("Code Llama 7B", 16, True)])
def test_an_integer_wrap_of_the_base_is_named_with_its_type(name, bits, signed):
    spec = SPECS[name]
    used = float(wrapped(spec.base, bits, signed))
    assert used > 1
    report = check(spec, float32(rope_frequencies(spec.replace(base=used)).inv_freq))
    sentence = explain(report, only(report, "base_overflow"))
    assert f"{used:,.0f}" in sentence and ("int16" in sentence or "uint16" in sentence)


def test_gpt_oss_base_in_int16_is_18928():
    assert wrapped(150_000, 16, True) == 18_928
    spec = SPECS["gpt-oss-20b"]
    report = check(spec, float32(rope_frequencies(spec.replace(base=18_928.0)).inv_freq))
    assert "18,928" in explain(report, only(report, "base_overflow"))


@pytest.mark.parametrize("name", ["Llama-3-8B", "Llama-3.1-8B", "Qwen2.5-7B-Instruct (+YaRN x4)", "gpt-oss-20b",
                                  "Code Llama 7B"])
def test_a_float16_base_that_overflows_is_named_not_measured(name):
    """In float16, 500,000 is infinite: θ = [θ₀, 0, 0, …], a port built with the base as a float16 tensor."""
    spec = SPECS[name]
    base = torch.tensor(spec.base, dtype=torch.float16)
    plain = (1.0 / base.float() ** (torch.arange(0, spec.rotary_dim, 2).float() / spec.rotary_dim)).double()
    values = apply_method(spec, None, plain)
    report = check(spec, float32(values))
    sentence = explain(report, only(report, "base_overflow"))
    assert "overflows float16" in sentence and "e-0" not in sentence


@pytest.mark.parametrize("name", ["Llama-2-7B", "Llama-3.1-8B", "Qwen2.5-7B-Instruct (+YaRN x4)", "gpt-oss-20b",
                                  "DeepSeek-V3"])
def test_any_other_base_is_recovered_and_said_to_be_no_known_one(name):
    spec = SPECS[name]
    report = check(spec, float32(rope_frequencies(spec.replace(base=123_457.0)).inv_freq))
    diagnosis = only(report, "wrong_default_base")
    assert diagnosis.detail["used_base"] == "123,457" and "no usual default" in explain(report, diagnosis)
    known = 1_000_000.0 if spec.base != 1_000_000.0 else 500_000.0
    assert name_base(spec, None, known).kind == "default"


# ---- the exponent: its start and its width ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Llama-2-7B", "Llama-3-8B", "Llama-3.1-8B", "Qwen2.5-7B-Instruct (+YaRN x4)",
                                  "DeepSeek-V3", "Phi-3.5-mini-instruct", "gpt-oss-20b"])
@pytest.mark.parametrize("offset", [1, -2])
def test_the_exponents_offset_is_recovered(name, offset):
    """arange(1, d, 2) (offset 1) and 2(i − 1) with i from 0 (offset −2), written out here for plain RoPE and
    through the method for the others."""
    spec = SPECS[name]
    plain = 1.0 / spec.base ** ((torch.arange(0, spec.rotary_dim, 2, dtype=torch.float64) + offset) / spec.rotary_dim)
    report = check(spec, float32(apply_method(spec, None, plain)))
    diagnosis = only(report, "exponent_offset")
    assert diagnosis.detail["offset"] == offset
    fitted = fit_exponent(spec, None, float32(apply_method(spec, None, plain)))
    assert fitted.offset == pytest.approx(offset, abs=1e-4) and fitted.base == pytest.approx(spec.base, rel=1e-5)


def test_a_constant_ratio_is_the_offset_b_to_the_minus_one_over_d():
    spec = SPECS["Llama-2-7B"]
    given = float32(1.0 / spec.base ** (torch.arange(1, 128, 2, dtype=torch.float64) / 128))
    ratio = given / rope_frequencies(spec).inv_freq
    assert float(ratio.min()) == pytest.approx(float(ratio.max()), rel=1e-6)
    assert float(ratio[0]) == pytest.approx(10_000 ** (-1 / 128), rel=1e-6)
    assert f"{10_000 ** (-1 / 128):.6g}" in explain(check(spec, given), check(spec, given).diagnosis[0])


@pytest.mark.parametrize("config", ["microsoft--phi-2", "Qwen--Qwen3-Next-80B-A3B-Thinking", "Qwen--Qwen3.5-27B",
                                    "google--gemma-4-26B-A4B", "half rotary yarn", "neox 0.25"])
def test_an_exponent_over_head_dim_is_named(config):
    if config == "half rotary yarn":
        spec = RopeSpec(head_dim=128, base=1e6, rope_type="yarn", factor=4.0, original_max_position_embeddings=8192,
                        partial_rotary_factor=0.5)
    elif config == "neox 0.25":
        spec = RopeSpec(head_dim=128, base=10_000.0, partial_rotary_factor=0.25)
    else:
        spec = from_hf_config(published(config))
    assert spec.rotary_dim < spec.head_dim
    wrong = spec.rotary_dim if spec.rope_type == "proportional" else spec.head_dim
    plain = 1.0 / spec.base ** (torch.arange(0, spec.rotary_dim, 2, dtype=torch.float64) / wrong)
    report = check(spec, float32(apply_method(spec, None, plain)))
    diagnosis = only(report, "exponent_width")
    assert diagnosis.detail["used_width"] == wrong


# ---- the scaling's parameters --------------------------------------------------------------------------------------


LLAMA3_CONFIGS = {"Llama-3.1-8B": published("meta-llama--Llama-3.1-8B"),
                  "Llama-3.2-3B": published("meta-llama--Llama-3.2-3B")}


@pytest.mark.parametrize("name", list(LLAMA3_CONFIGS))
def test_llama3_with_l_from_max_position_embeddings_is_the_goal_sentence(name):
    config = LLAMA3_CONFIGS[name]
    port = transformers_port(config, original_max_position_embeddings=config["max_position_embeddings"])
    report = check(from_hf_config(config), port)
    sentence = explain(report, only(report, "wrong_original_length"))
    assert "L = 131,072 instead of 8,192" in sentence


@pytest.mark.parametrize(("name", "used"), [("Llama-3.1-8B", 16_384), ("Llama-3.2-1B", 32_768),
                                            ("EXAONE-4.0-32B", 65_536), ("gpt-oss-20b", 131_072),
                                            ("Qwen2.5-7B-Instruct (+YaRN x4)", 131_072), ("DeepSeek-V3", 163_840)])
def test_the_original_length_is_recovered(name, used):
    spec = SPECS[name]
    report = check(spec, float32(rope_frequencies(spec.replace(original_max_position_embeddings=used)).inv_freq))
    diagnosis = only(report, "wrong_original_length")
    if spec.truncate and spec.rope_type == "yarn":  # whole-pair ramp ends: several L give these θ; the one found does
        found = dict(diagnosis.detail)["used_length"]
        torch.testing.assert_close(rope_frequencies(spec.replace(original_max_position_embeddings=found)).inv_freq,
                                   rope_frequencies(spec.replace(original_max_position_embeddings=used)).inv_freq)
    else:
        assert diagnosis.detail["used_length"] == used


@pytest.mark.parametrize(("name", "used"), [("Llama-3.1-8B", 16.0), ("Llama-3.2-1B", 8.0), ("gpt-oss-20b", 16.0),
                                            ("Qwen2.5-7B-Instruct (+YaRN x4)", 8.0), ("DeepSeek-V3", 32.0),
                                            ("linear", 2.0), ("EXAONE-4.0-32B", 4.0)])
def test_the_factor_is_recovered(name, used):
    spec = LINEAR if name == "linear" else SPECS[name]
    report = check(spec, float32(rope_frequencies(spec.replace(factor=used)).inv_freq))
    diagnosis = only(report, "wrong_factor")
    assert diagnosis.detail["used_factor"] == used


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Llama-3.2-1B", "EXAONE-4.0-32B", "Qwen2.5-7B-Instruct (+YaRN x4)",
                                  "DeepSeek-V3", "gpt-oss-20b"])
def test_linear_scaling_where_the_config_says_otherwise_is_named(name):
    """Position Interpolation written out: θᵢ = b^(−2i/d) / s."""
    spec = SPECS[name]
    linear = 1.0 / spec.base ** (torch.arange(0, spec.rotary_dim, 2, dtype=torch.float64) / spec.rotary_dim) / spec.factor
    report = check(spec, float32(linear))
    diagnosis = only(report, "wrong_rope_type")
    assert diagnosis.detail["used_type"] == "linear"


@pytest.mark.parametrize(("spec", "seq_len", "used"), [
    (DYNAMIC, 16_384, 32_768), (DYNAMIC, 16_384, 8_192), (DYNAMIC, None, 12_000),
    (DYNAMIC.replace(factor=4.0), 50_000, 16_384), (DYNAMIC.replace(head_dim=128, base=500_000.0), 20_000, 100_000),
])
def test_dynamic_ntk_at_the_wrong_length_is_recovered(spec, seq_len, used):
    report = check(spec, float32(rope_frequencies(spec, used).inv_freq), seq_len=seq_len)
    diagnosis = only(report, "dynamic_wrong_length")
    assert diagnosis.detail["used_length"] == used


@pytest.mark.parametrize("factor", [2.0, 4.0, 8.0])
@pytest.mark.parametrize("seq_len", [None, 40_000])
def test_static_ntk_used_for_dynamic_is_named(factor, seq_len):
    spec = DYNAMIC.replace(factor=factor)
    static = float32(rope_frequencies(spec.replace(rope_type="ntk"), None).inv_freq)
    report = check(spec, static, seq_len=seq_len)
    assert "static NTK was used for dynamic" in explain(report, only(report, "dynamic_wrong_length"))


@pytest.mark.parametrize(("used_fast", "used_slow"), [(16.0, 1.0), (32.0, 2.0), (64.0, 1.0), (8.0, 0.5), (128.0, 4.0)])
def test_yarns_betas_are_recovered(used_fast, used_slow):
    spec = SPECS["gpt-oss-20b"]  # truncate: false, so every β gives its own ramp
    report = check(spec, float32(rope_frequencies(spec.replace(beta_fast=used_fast, beta_slow=used_slow)).inv_freq))
    diagnosis = only(report, "wrong_betas")
    assert (diagnosis.detail["used_fast"], diagnosis.detail["used_slow"]) == (used_fast, used_slow)


@pytest.mark.parametrize("seq_len", [None, 2_000, 100_000])
def test_longrope_factors_multiplied_are_named(seq_len):
    spec = SPECS["Phi-3.5-mini-instruct"]
    factors = spec.long_factor if seq_len is not None and seq_len > 4096 else spec.short_factor
    multiplied = 1.0 / spec.base ** (torch.arange(0, 96, 2, dtype=torch.float64) / 96) * torch.tensor(factors)
    report = check(spec, float32(multiplied), seq_len=seq_len)
    only(report, "longrope_multiplied")


def test_an_exponent_rounded_to_bfloat16_is_a_low_precision_bug():
    # 2i/d is exact in bfloat16 when d is a power of two (even indices are exact up to 512): other widths show it
    for spec in (SPECS["Phi-3.5-mini-instruct"], RopeSpec(head_dim=80), RopeSpec(head_dim=96, rope_type="linear", factor=4.0),
                 RopeSpec(head_dim=112, base=500_000.0), RopeSpec(head_dim=72, base=1e6)):
        index = torch.arange(0, spec.rotary_dim, 2, dtype=torch.bfloat16)
        exponent = (index / spec.rotary_dim).to(torch.float64)  # bfloat16 arange and division, a float64 power
        report = check(spec, float32(apply_method(spec, None, 1.0 / spec.base ** exponent)))
        assert "rounded to bfloat16 before a full-precision power" in explain(report, only(report, "low_precision"))


# ---- the attention factor, apart from θᵢ -------------------------------------------------------------------------


def test_deepseeks_mscale_on_cos_and_sin_is_explained():
    spec = SPECS["DeepSeek-V3"]
    theta = float32(rope_frequencies(spec).inv_freq)
    mscale = yarn_get_mscale(40.0, 1.0)
    report = check(spec, theta, mscale)
    sentence = explain(report, only(report, "mscale_on_cos_sin"))
    assert f"{mscale:.6g}" in sentence and f"{mscale ** 2:.6g}" in sentence and "softmax" in sentence


@pytest.mark.parametrize("name", ["Qwen2.5-7B-Instruct (+YaRN x4)", "gpt-oss-20b"])
def test_yarns_factor_ignored_with_the_attention_factor_right_is_the_ignored_factor(name):
    spec = SPECS[name]
    right = rope_frequencies(spec).attention_factor
    report = check(spec, float32(plain_frequencies(spec.base, spec.num_pairs, spec.rotary_dim)), right)
    only(report, "factor_ignored")


@pytest.mark.parametrize(("name", "theta_bug", "attention_bug"), [
    ("Qwen2.5-7B-Instruct (+YaRN x4)", "beta_swapped", "attention_factor_missing"),
    ("gpt-oss-20b", "truncate_ignored", "attention_factor_squared"),
    ("Phi-3.5-mini-instruct", "exponent_offset", "attention_factor_missing"),
    ("DeepSeek-V3", "wrong_original_length", "mscale_on_cos_sin"),
    ("Qwen2.5-7B-Instruct (+YaRN x4)", "low_precision", "attention_factor_squared"),
])
def test_theta_and_the_attention_factor_are_diagnosed_apart(name, theta_bug, attention_bug):
    spec = SPECS[name]
    theta, _attention = BUG_CLASSES[theta_bug].perturb(spec, None)
    _theta, attention = BUG_CLASSES[attention_bug].perturb(spec, None)
    report = check(spec, float32(theta) if theta_bug != "low_precision" else theta, attention)
    assert (theta_bug, attention_bug) in [d.classes for d in report.diagnosis], report_text(report)


# ---- two θ bugs at once ---------------------------------------------------------------------------------------------

OUTPUT_BUGS = {"low_precision": lambda values: values.to(torch.bfloat16).to(torch.float64)}
PAIR_SPECS = {"Llama-3.1-8B": SPECS["Llama-3.1-8B"], "Qwen2.5-7B-Instruct (+YaRN x4)": SPECS["Qwen2.5-7B-Instruct (+YaRN x4)"],
              "Phi-3.5-mini-instruct": SPECS["Phi-3.5-mini-instruct"], "Phi-2": PHI2,
              "half rotary yarn": RopeSpec(head_dim=128, base=1e6, rope_type="yarn", factor=4.0,
                                           original_max_position_embeddings=8192, partial_rotary_factor=0.5)}


def pair_cases():
    """(label, spec, first, second, values): the second bug on top of the first's changed config, or the first's
    output rounded to bfloat16, for every pair of θ bugs that apply together."""
    cases = []
    for label, spec in PAIR_SPECS.items():
        theta_bugs = [b for b in applicable_classes(spec) if not BUG_CLASSES[b].attention_only]
        for second in theta_bugs:
            if second in ("low_precision", "interleaved_vs_half"):
                continue
            values, _attention = BUG_CLASSES[second].perturb(spec, None)
            cases.append((f"{label}-{second}+low_precision", spec, second, "low_precision",
                          OUTPUT_BUGS["low_precision"](values)))
        for first in theta_bugs:
            change = BUG_CLASSES[first].spec_change
            if change is None:
                continue
            changed, changed_len, _full_head = change(spec, None)
            for second in theta_bugs + ["exponent_offset", "wrong_default_base"]:
                bug = BUG_CLASSES[second]
                if second in (first, "low_precision", "interleaved_vs_half") or not bug.applies(changed) or \
                        (first, second) in [(c[2], c[3]) for c in cases]:
                    continue
                values, _attention = bug.perturb(changed, changed_len)
                cases.append((f"{label}-{first}+{second}", spec, first, second, float32(values)))
    return cases


PAIRS = pair_cases()
# the pairs whose numbers one bug gives alone (and that bug is the answer): one bug makes the other moot, two base
# changes are one base change, a rounded base under rounded θ is θ computed in bfloat16
ONE_BUG_ALONE = {
    "Llama-3.1-8B-base_rounded+wrong_default_base": "wrong_default_base",
    "Llama-3.1-8B-base_rounded+base_overflow": "wrong_default_base",
    "Qwen2.5-7B-Instruct (+YaRN x4)-truncate_ignored+factor_ignored": "factor_ignored",
    "Qwen2.5-7B-Instruct (+YaRN x4)-truncate_ignored+wrong_rope_type": "wrong_rope_type",
    "Phi-3.5-mini-instruct-longrope_wrong_factors+factor_ignored": "factor_ignored",
    "Phi-3.5-mini-instruct-longrope_wrong_factors+wrong_rope_type": "wrong_rope_type",
    "Phi-3.5-mini-instruct-longrope_wrong_factors+longrope_multiplied": "longrope_multiplied",
    "Phi-2-base_rounded+low_precision": "low_precision",
    "Phi-2-base_rounded+exponent_width": "wrong_default_base",
}


@pytest.mark.slow  # about 40 s on one core in all: each of about 100 pairs is searched through every pair
@pytest.mark.parametrize(("label", "spec", "first", "second", "values"), PAIRS, ids=[c[0] for c in PAIRS])
def test_two_bugs_at_once_are_named_as_that_pair(label, spec, first, second, values):
    report = check(spec, values)
    assert report.verdict == "mismatch"
    names = [d.classes for d in report.diagnosis]
    singles = [d.name for d in report.diagnosis if not d.parts]
    # where the two together give what one bug gives alone, that one is the simpler answer: a bug that makes the
    # other moot (truncate once the scaling is dropped), two base changes that are one base change, a rounded
    # base under rounded θ (θ computed in bfloat16)
    if label in ONE_BUG_ALONE:
        assert singles == [ONE_BUG_ALONE[label]], report_text(report)
        return
    assert any({first, second} == set(classes) for classes in names), report_text(report)
    assert all("{" not in explain(report, d) for d in report.diagnosis)


# ---- clean ports -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["meta-llama--Llama-3.1-8B", "meta-llama--Llama-3.2-3B", "Qwen--Qwen2.5-7B",
                                  "Qwen--Qwen3-8B", "openai--gpt-oss-20b", "microsoft--phi-2",
                                  "mistralai--Mistral-7B-v0.1", "deepseek-ai--DeepSeek-V3"])
def test_transformers_ports_of_published_configs_still_match(name):
    config = published(name)
    spec = from_hf_config(config)
    if spec.rope_type == "proportional":
        pytest.skip("proportional RoPE: its θ list is zero-padded (test_check covers it)")
    port = transformers_port(config) if (config.get("rope_scaling") or config.get("rope_parameters")) else \
        float32(rope_frequencies(spec).inv_freq)
    report = check(spec, port[: spec.num_pairs] if port.numel() > spec.num_pairs else port)
    assert report.verdict == "match", report_text(report)
    assert not math.isinf(report.max_rel_err)


def test_the_issues_two_bug_examples():
    """bfloat16 with partial rotary ignored, and bfloat16 with the attention factor missing."""
    spec = PHI2
    whole, _attention = BUG_CLASSES["partial_rotary_ignored"].perturb(spec, None)
    report = check(spec, whole.to(torch.bfloat16).to(torch.float64))
    assert [d.classes for d in report.diagnosis] == [("partial_rotary_ignored", "low_precision")], report_text(report)
    spec = SPECS["Qwen2.5-7B-Instruct (+YaRN x4)"]
    theta = rope_frequencies(spec).inv_freq.to(torch.bfloat16).to(torch.float64)
    report = check(spec, theta, 1.0)
    assert [d.classes for d in report.diagnosis] == [("low_precision", "attention_factor_missing")], report_text(report)
    sentence = explain(report, report.diagnosis[0])
    assert sentence.startswith("Two bugs at once") and "bfloat16" in sentence and "attention factor is 1" in sentence


@pytest.mark.parametrize(("base", "used", "int_type"), [
    (10_000_000.0, 10_000_000_000 % 2**32 / 1000, "uint32 (base·1000)"),  # the fixed-point store of 1bit-MONSTER #634
    (5e9, 5_000_000_000 % 2**32, "int32"),
    (1e6, 1_000_000 % 2**16, "int16"),
])
def test_wider_integer_wraps_are_named_too(base, used, int_type):
    spec = RopeSpec(head_dim=128, base=base)
    report = check(spec, float32(rope_frequencies(spec.replace(base=used)).inv_freq))
    assert int_type in explain(report, only(report, "base_overflow"))
