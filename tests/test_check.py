"""The implementation check: every bug class, perturbed into every preset it applies to, is diagnosed as exactly
that class; transformers' own float32 output matches; float32-level noise still matches; bad input is refused
with a sentence; the CLI's exit codes and JSON."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import torch

from pe_core import RopeSpec, from_hf_config, load_presets, preset_by_name, rope_frequencies
from pe_core.check import (
    BUG_CLASSES,
    EPS32,
    LAYER_MAP_BUGS,
    applicable_classes,
    check,
    computed_in,
    explain,
    float32_tolerance,
    main,
    per_dimension,
    report_json,
    report_text,
)
from references import REFERENCES

pytestmark = pytest.mark.usefixtures("one_torch_thread")
PRESETS = load_presets()
PHI2 = {"hidden_size": 2560, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "partial_rotary_factor": 0.4, "rope_theta": 10000.0}
HALF_ROTARY_YARN = {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 32768,
                    "partial_rotary_factor": 0.5, "rope_theta": 1e6,
                    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}}
LINEAR = {"head_dim": 64, "hidden_size": 2048, "num_attention_heads": 32, "max_position_embeddings": 4096,
          "rope_scaling": {"type": "linear", "factor": 4}}
DYNAMIC = {"head_dim": 64, "hidden_size": 2048, "num_attention_heads": 32, "max_position_embeddings": 4096,
           "rope_scaling": {"type": "dynamic", "factor": 2}}
EXTRA = {"Phi-2 (partial 0.4)": PHI2, "half rotary + YaRN": HALF_ROTARY_YARN, "linear": LINEAR, "dynamic": DYNAMIC}


def float32(values: torch.Tensor) -> torch.Tensor:
    """What an implementation computing in float32 hands over."""
    return values.to(torch.float32).to(torch.float64)


def noisy(values: torch.Tensor, ulps: float = 2.0, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    jitter = (torch.rand(values.shape, generator=generator, dtype=torch.float64) * 2 - 1) * ulps * EPS32
    return values * (1 + jitter)


def cases():
    """(label, spec, seq_len, bug) for every bug class and every preset or extra config it applies to."""
    found = []
    for preset in PRESETS:
        for seq_len in (None, 200_000):
            for bug in applicable_classes(preset.spec, seq_len):
                found.append((f"{preset.name}-{seq_len}-{bug}", preset.spec, seq_len, bug))
    for label, config in EXTRA.items():
        spec = from_hf_config(config)
        for bug in applicable_classes(spec):
            found.append((f"{label}-{bug}", spec, None, bug))
    return found


CASES = cases()


def test_every_bug_class_is_exercised():
    # (a bug that needs a hybrid model's layer map is exercised in tests/test_model_code.py)
    assert {bug for *_rest, bug in CASES} == set(BUG_CLASSES) - set(LAYER_MAP_BUGS)


@pytest.mark.parametrize(("label", "spec", "seq_len", "bug"), CASES, ids=[c[0] for c in CASES])
def test_a_perturbed_implementation_is_diagnosed_as_exactly_its_bug(label, spec, seq_len, bug):
    values, attention = BUG_CLASSES[bug].perturb(spec, seq_len)
    report = check(spec, float32(values), float(np.float32(attention)), seq_len)
    assert report.verdict == "mismatch"
    assert [d.name for d in report.diagnosis] == [bug]
    sentence = explain(report, report.diagnosis[0])
    assert sentence and "{" not in sentence
    if report.first_part is not None:
        assert "part at" in sentence or "curves" in sentence or bug.startswith("attention")
    # float32-level noise on top of the bug does not hide it
    noisy_report = check(spec, noisy(float32(values)), float(np.float32(attention)), seq_len)
    if bug != "low_precision":  # its values sit exactly on the bfloat16 grid; noise moves them off it
        assert [d.name for d in noisy_report.diagnosis] == [bug]


THETA_CHANGING = [c for c in CASES if not BUG_CLASSES[c[3]].attention_only]


@pytest.mark.parametrize(("label", "spec", "seq_len", "bug"), THETA_CHANGING, ids=[c[0] for c in THETA_CHANGING])
def test_without_an_attention_factor_the_theta_alone_diagnose(label, spec, seq_len, bug):
    values, _attention = BUG_CLASSES[bug].perturb(spec, seq_len)
    report = check(spec, float32(values), None, seq_len)
    assert [d.name for d in report.diagnosis] == [bug]


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
@pytest.mark.parametrize("seq_len", [None, 1024, 200_000])
def test_the_unperturbed_implementation_matches_and_so_does_float32_noise(preset, seq_len):
    frequencies = rope_frequencies(preset.spec, seq_len)
    values = float32(frequencies.inv_freq)
    attention = float(np.float32(frequencies.attention_factor))
    for given in (values, noisy(values, 2.0, 1), noisy(values, 4.0, 2)):
        report = check(preset.spec, given, attention, seq_len)
        assert report.verdict == "match", report_text(report)
        assert report.diagnosis == ()
    per_dim = check(preset.spec, per_dimension(values, "half"), attention, seq_len)
    assert per_dim.verdict == "match" and per_dim.reading.form == "dims"


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
@pytest.mark.parametrize("seq_len", [None, 200_000])
def test_transformers_own_float32_output_matches(preset, seq_len):
    parity = pytest.importorskip("tests.test_rope_parity")
    inv_freq, attention = parity.transformers_frequencies(preset.config, seq_len)
    report = check(preset.spec, inv_freq.to(torch.float64), float(attention), seq_len)
    assert report.verdict == "match", report_text(report)
    assert report.max_rel_err < 2e-6


def test_applicable_classes_follow_the_rope_type():
    by_name = {p.name: set(applicable_classes(p.spec)) for p in PRESETS}
    always = {"interleaved_vs_half", "wrong_default_base", "low_precision", "exponent_offset", "base_rounded"}
    scaled = {"factor_ignored", "wrong_rope_type"}
    assert by_name["Llama-2-7B"] == always  # 10,000 fits every integer type and float16
    assert by_name["Llama-3-8B"] == always | {"base_overflow"}
    assert by_name["Llama-3.1-8B"] == always | scaled | {"base_overflow", "llama3_bands_inverted", "wrong_factor",
                                                         "wrong_original_length"}
    assert by_name["Phi-3.5-mini-instruct"] == always | scaled | {
        "attention_factor_missing", "attention_factor_squared", "longrope_wrong_factors", "longrope_multiplied"}
    # DeepSeek-V3's mscale = mscale_all_dim makes transformers' attention factor exactly 1: nothing to miss, but
    # DeepSeek's own mscale can be put on cos and sin
    assert by_name["DeepSeek-V3"] == always | scaled | {"beta_swapped", "truncate_ignored", "wrong_betas", "wrong_factor",
                                                        "wrong_original_length", "mscale_on_cos_sin"}
    assert {"partial_rotary_ignored", "exponent_width"} <= set(applicable_classes(from_hf_config(PHI2)))
    assert "dynamic_wrong_length" in applicable_classes(from_hf_config(DYNAMIC), 16384)


def test_every_bug_class_cites_a_public_thread_in_the_registry():
    for bug in BUG_CLASSES.values():
        assert bug.references, bug.name
        for key in bug.references:
            reference = REFERENCES[key]
            assert reference.url.startswith("https://github.com/"), key


def test_the_pairing_shows_only_per_dimension():
    spec = preset_by_name("Llama-3-8B").spec
    theta = float32(rope_frequencies(spec).inv_freq)
    # one θ per pair is the same list whatever the layout: nothing to detect
    assert check(spec, theta, layout="interleaved").verdict == "match"
    # per dimension, each layout matches itself and is diagnosed against the other
    for used in ("half", "interleaved"):
        values = per_dimension(theta, used)
        assert check(spec, values, layout=used).verdict == "match"
        other = "interleaved" if used == "half" else "half"
        report = check(spec, values, layout=other)
        assert [d.name for d in report.diagnosis] == ["interleaved_vs_half"]
        assert report.reading.form == "dims"
        assert report.first_part == 1  # dimension 0 is θ₀ = 1 in both layouts; dimension 1 is θ₁ in one, θ₀ in the other


def test_half_rotated_heads_read_ambiguous_counts_both_ways():
    """With half the pairs rotated, d numbers are per rotated dimension or per pair of the whole head."""
    spec = from_hf_config(HALF_ROTARY_YARN)
    assert spec.rotary_dim == spec.head_dim // 2
    theta = float32(rope_frequencies(spec).inv_freq)
    assert check(spec, per_dimension(theta, "half")).verdict == "match"
    whole, _attention = BUG_CLASSES["partial_rotary_ignored"].perturb(spec, None)
    report = check(spec, float32(whole))
    assert report.reading.full_head and [d.name for d in report.diagnosis] == ["partial_rotary_ignored"]
    zero_padded = torch.cat([theta, torch.zeros(spec.head_dim // 2 - spec.num_pairs, dtype=torch.float64)])
    assert check(spec, zero_padded).verdict == "match"  # unrotated pairs given as θ = 0 are a valid implementation


def test_two_bugs_at_once_are_named_together_and_nothing_known_is_said_so():
    spec = preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").spec
    values, attention = BUG_CLASSES["beta_swapped"].perturb(spec, None)
    both = values.to(torch.bfloat16).to(torch.float64)  # swapped betas and a bfloat16 buffer
    report = check(spec, both, attention)
    assert report.verdict == "mismatch"
    assert [d.classes for d in report.diagnosis] == [("beta_swapped", "low_precision")]
    assert "Two bugs at once" in report_text(report) and "bfloat16" in report_text(report)
    # θ from a formula no bug gives: a power 1.1 on the exponent
    odd = float32(rope_frequencies(spec).inv_freq ** 1.1)
    report = check(spec, odd)
    assert report.diagnosis == () and "no single known bug" in report_text(report)


def test_low_precision_computed_in_half_and_rounded_are_both_recognised():
    for config in (LINEAR, PHI2):
        spec = from_hf_config(config)
        for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float16, "float16")):
            computed = computed_in(spec, None, dtype)
            report = check(spec, computed)
            assert [d.name for d in report.diagnosis] == ["low_precision"]
            assert name in explain(report, report.diagnosis[0])
            rounded = rope_frequencies(spec).inv_freq.to(dtype).to(torch.float64)
            assert [d.name for d in check(spec, rounded).diagnosis] == ["low_precision"]
    # float16 overflows 500,000: a half-precision base makes every θᵢ but the first 0, and is named as that
    spec = preset_by_name("Llama-3-8B").spec
    zeros = computed_in(spec, None, torch.float16)
    assert float(zeros[0]) == 1.0 and bool((zeros[1:] == 0).all())
    report = check(spec, zeros)
    assert [d.name for d in report.diagnosis] == ["base_overflow"]
    assert "overflows float16" in explain(report, report.diagnosis[0])


def test_dynamic_ntk_ignoring_the_factor_is_also_the_wrong_length():
    """Dynamic NTK at the original length is plain RoPE, so an ignored factor and a base grown for length L give
    the same numbers: both are named, not one picked."""
    spec = from_hf_config(DYNAMIC)
    values, _attention = BUG_CLASSES["factor_ignored"].perturb(spec, 16384)
    report = check(spec, float32(values), seq_len=16384)
    assert [d.name for d in report.diagnosis] == ["factor_ignored", "dynamic_wrong_length"]
    assert "4,096 instead of 16,384" in explain(report, report.diagnosis[1])


def test_the_wrong_base_is_found_whatever_it_is():
    spec = preset_by_name("Llama-3.1-8B").spec
    for used in (10_000.0, 123_456.0, 2e6):
        values = float32(rope_frequencies(spec.replace(base=used)).inv_freq)
        report = check(spec, values)
        assert [d.name for d in report.diagnosis] == ["wrong_default_base"]
        assert f"{used:,.0f}" in explain(report, report.diagnosis[0])


def test_tolerance_is_eight_float32_epsilons_scaled_by_the_log():
    tolerance = float32_tolerance(torch.tensor([1.0, math.exp(-10.0), 0.0], dtype=torch.float64))
    assert tolerance.tolist() == pytest.approx([8 * EPS32, 8 * EPS32 * 11, 8 * EPS32])
    spec = preset_by_name("Llama-2-7B").spec
    theta = rope_frequencies(spec).inv_freq
    assert check(spec, theta * (1 + 0.5 * float32_tolerance(theta))).verdict == "match"
    assert check(spec, theta * (1 + 2 * float32_tolerance(theta))).verdict == "mismatch"


def test_the_attention_factor_alone_decides_the_verdict():
    spec = preset_by_name("gpt-oss-20b").spec
    frequencies = rope_frequencies(spec)
    theta = float32(frequencies.inv_freq)
    assert check(spec, theta, frequencies.attention_factor).verdict == "match"
    report = check(spec, theta, 1.0)
    assert report.verdict == "mismatch" and report.first_part is None
    assert [d.name for d in report.diagnosis] == ["attention_factor_missing"]


@pytest.mark.parametrize(("numbers", "message"), [
    ([1.0] * 63, "Got 63 numbers"),
    ([1.0] * 65, "give 64 θᵢ"),
    ([1.0] * 63 + [-0.5], "negative"),
])
def test_bad_numbers_are_refused_with_the_counts_that_work(numbers, message):
    with pytest.raises(ValueError, match=message):
        check(preset_by_name("Llama-2-7B").spec, numbers)


def test_a_bad_attention_factor_or_layout_is_refused():
    spec = preset_by_name("Llama-2-7B").spec
    theta = rope_frequencies(spec).inv_freq
    with pytest.raises(ValueError, match="attention factor"):
        check(spec, theta, -1.0)
    with pytest.raises(ValueError, match="layout"):
        check(spec, theta, layout="diagonal")


def test_report_json_has_the_documented_keys():
    spec = preset_by_name("Llama-3.1-8B").spec
    values, _attention = BUG_CLASSES["llama3_bands_inverted"].perturb(spec, None)
    data = report_json(check(spec, float32(values)))
    assert data["verdict"] == "mismatch" and data["diagnosis"] == ["llama3_bands_inverted"]
    assert set(data["pairs"][0]) >= {"index", "expected", "given", "ratio", "rel_err", "ok"}
    assert len(data["pairs"]) == 64 and data["max_rel_err"] > 0.1
    json.dumps(data)  # plain JSON, no infinities


# ---- the command line ----------------------------------------------------------------------------------


def write(tmp_path, name: str, values) -> str:
    path = tmp_path / name
    if name.endswith(".npy"):
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(values, dtype=np.float32))
        path.write_bytes(buffer.getvalue())
    elif name.endswith(".pt"):
        torch.save({"model.layers.0.self_attn.rotary_emb.inv_freq": torch.as_tensor(values, dtype=torch.float32)},
                   path)
    elif name.endswith(".json"):
        path.write_text(json.dumps(list(map(float, values))))
    else:
        path.write_text("inv_freq\n" + "\n".join(repr(float(v)) for v in values))
    return str(path)


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".json", ".csv"])
def test_cli_exit_codes(tmp_path, capsys, suffix):
    spec = preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").spec
    frequencies = rope_frequencies(spec)
    good = write(tmp_path, "good" + suffix, float32(frequencies.inv_freq).tolist())
    assert main(["Qwen2.5-7B-Instruct (+YaRN x4)", "--inv-freq", good,
                 "--attention-factor", str(frequencies.attention_factor)]) == 0
    assert "MATCH" in capsys.readouterr().out
    buggy, _attention = BUG_CLASSES["beta_swapped"].perturb(spec, None)
    bad = write(tmp_path, "bad" + suffix, float32(buggy).tolist())
    assert main(["Qwen2.5-7B-Instruct (+YaRN x4)", "--inv-freq", bad, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "mismatch" and data["diagnosis"] == ["beta_swapped"]


def test_cli_bad_input_exits_2_with_a_message(tmp_path, capsys):
    short = write(tmp_path, "short.json", [1.0, 0.5])
    assert main(["Llama-2-7B", "--inv-freq", short]) == 2
    assert "Got 2 numbers" in capsys.readouterr().err
    text = tmp_path / "words.csv"
    text.write_text("1.0, 0.5, banana")
    assert main(["Llama-2-7B", "--inv-freq", str(text)]) == 2
    assert "banana" in capsys.readouterr().err
    nan = tmp_path / "nan.json"
    nan.write_text("[1.0, NaN]")
    assert main(["Llama-2-7B", "--inv-freq", str(nan)]) == 2
    assert "NaN" in capsys.readouterr().err
    assert main(["No-Such-Model", "--inv-freq", short]) == 2
    assert "neither a preset" in capsys.readouterr().err
    assert main(["Llama-2-7B", "--inv-freq", str(tmp_path / "missing.npy")]) == 2
    config = tmp_path / "config.json"
    config.write_text(json.dumps(PHI2))
    whole, _attention = BUG_CLASSES["partial_rotary_ignored"].perturb(from_hf_config(PHI2), None)
    assert main([str(config), "--inv-freq", write(tmp_path, "phi.npy", float32(whole).tolist()), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["diagnosis"] == ["partial_rotary_ignored"]


def test_llama3_scaling_on_a_buffer_built_in_bfloat16_is_named():
    """A port builds plain θᵢ = 1 / base ** (arange(0, d, 2) / d) in bfloat16 (a model cast before its buffers
    are made), then applies Llama 3.1's bands in float32."""
    from pe_core import fit

    spec = RopeSpec(head_dim=128, base=500_000.0, rope_type="llama3", factor=8.0,
                    original_max_position_embeddings=8192, low_freq_factor=1.0, high_freq_factor=4.0)
    base = torch.tensor(500_000.0, dtype=torch.bfloat16)
    plain = (1.0 / base ** (torch.arange(0, 128, 2).to(torch.bfloat16) / 128)).double()
    given = fit.apply_method(spec, None, plain).float().double()
    report = check(spec, given)
    assert report.verdict == "mismatch"
    assert [d.name for d in report.diagnosis] == ["low_precision"]
    sentence = explain(report, report.diagnosis[0])
    assert "llama3 scaling's applied to plain θᵢ computed in bfloat16" in sentence and "8-bit" in sentence


def test_theta_rounded_to_bfloat16_under_partial_rotary_is_named_in_either_form():
    spec = RopeSpec(head_dim=128, base=10_000.0, partial_rotary_factor=0.25)
    rounded = rope_frequencies(spec).inv_freq.to(torch.bfloat16).double()
    for form, numbers in (("pairs", rounded), ("dims", per_dimension(rounded, "half"))):
        report = check(spec, numbers)
        assert [d.name for d in report.diagnosis] == ["low_precision"], form
