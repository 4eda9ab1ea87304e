"""The rotation probe: transformers' own rotary (the model's rotary class and its apply function) is a match for a
half-split model (Llama 3.1), an interleaved one (DeepSeek-V3), a partial-rotary one (Phi-2) and M-RoPE ones
(Qwen2.5-VL, Qwen3-VL); every bug class is reproduced from a deliberately broken rotary written here, in plain torch,
and diagnosed as that class; cos/sin tables are read too; the CLI writes the probe and checks a port's file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from pe_core.check import main
from pe_core.config import layer_map
from pe_core.inputs import read_tensors
from pe_core.probe import (
    PROBE_BUGS,
    check_rotation,
    explain,
    make_probe,
    probe_positions,
    report_json,
    report_text,
)
from pe_core.probe_files import PROBE_FILE, SCRIPT_FILE, probe_files, read_probe
from references import REFERENCES

transformers = pytest.importorskip("transformers")
from tests.model_classes import model_config, rotary  # noqa: E402 - needs transformers

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CONFIGS = Path(__file__).parent / "data" / "model_configs"
LLAMA, DEEPSEEK, PHI2 = "meta-llama--Llama-3.1-8B", "deepseek-ai--DeepSeek-V3", "microsoft--phi-2"
QWEN25_VL, QWEN3_VL, GPT_OSS = "Qwen--Qwen2.5-VL-7B-Instruct", "Qwen--Qwen3-VL-32B-Instruct", "openai--gpt-oss-20b"


def load(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


class Model:
    """One config: its layer kind, the probe, and transformers' rotary module for it."""

    def __init__(self, name: str) -> None:
        self.config = load(name)
        self.kind = layer_map(self.config).kind(None)
        self.spec = self.kind.spec
        self.probe = make_probe(self.spec, self.kind.mrope_section)
        self.module = rotary(model_config(self.config))

    def tables(self, position_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """transformers' cos and sin ([batch, tokens, rotated width], attention factor included)."""
        position_ids = self.probe.position_ids if position_ids is None else position_ids
        return self.module(self.probe.q, position_ids)

    def check(self, **tensors):
        return check_rotation(self.spec, self.kind.layout, tensors, self.kind.mrope_section,
                              self.kind.mrope_interleaved, self.probe)


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name: str) -> Model:
        if name not in cache:
            cache[name] = Model(name)
        return cache[name]
    return get


# ---- rotaries, right and broken, in plain torch --------------------------------------------------------------


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def half_split(q, k, cos, sin):
    """transformers' apply_rotary_pos_emb, written out: pairs (i, i + d/2). A table of one value per pair (gpt-oss's
    class returns those) is expanded as cat(freqs, freqs)."""
    if cos.shape[-1] * 2 == q.shape[-1]:
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    cos, sin = cos[:, None], sin[:, None]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def interleaved(q, k, cos, sin):
    """Meta's complex form: pairs (2i, 2i + 1); cos and sin are cat(freqs, freqs), so their first half is per pair."""
    half = cos.shape[-1] // 2
    cos, sin = cos[:, None, :, :half], sin[:, None, :, :half]

    def turn(x):
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack([even * cos - odd * sin, odd * cos + even * sin], dim=-1).flatten(-2)
    return turn(q), turn(k)


def partial(apply, rotary_dim: int, keep: bool = True):
    """Rotate the first rotary_dim dimensions and pass the rest through (keep=False: drop them)."""
    def applied(q, k, cos, sin):
        q_rot, k_rot = apply(q[..., :rotary_dim], k[..., :rotary_dim], cos, sin)
        if not keep:
            return q_rot, k_rot
        return torch.cat([q_rot, q[..., rotary_dim:]], -1), torch.cat([k_rot, k[..., rotary_dim:]], -1)
    return applied


def own_tables(inv_freq: torch.Tensor, position_ids: torch.Tensor, dtype=torch.float32):
    """cos and sin of cat(freqs, freqs) with the product position·θ taken in ``dtype``."""
    freqs = position_ids[..., None].to(dtype) * inv_freq.to(dtype)
    emb = torch.cat([freqs, freqs], -1).float()
    return emb.cos(), emb.sin()


def port(model: Model, apply, cos=None, sin=None):
    if cos is None:
        cos, sin = model.tables()
    q, k = apply(model.probe.q, model.probe.k, cos, sin)
    return model.check(q=q, k=k)


def names(report) -> list[str]:
    return [diagnosis.name for diagnosis in report.diagnosis]


# ---- transformers' own rotary is a match ---------------------------------------------------------------------


def test_probe_positions_start_at_zero_and_go_past_the_built_length(models):
    spec = models(LLAMA).spec
    positions = probe_positions(spec)
    built = int(spec.original_max_position_embeddings * spec.factor)
    assert positions[:12].tolist() == list(range(12))
    assert positions.max() == 2 * built
    assert {spec.original_max_position_embeddings - 1, spec.original_max_position_embeddings, built - 1} <= set(
        positions.tolist())
    assert bool((positions[1:] > positions[:-1]).all())


@pytest.mark.parametrize("name, apply", [
    (LLAMA, half_split),
    (PHI2, None),
    (QWEN25_VL, half_split),
    (QWEN3_VL, half_split),
    (GPT_OSS, half_split),
])
def test_transformers_own_rotary_is_a_match(models, name, apply):
    model = models(name)
    apply = apply or partial(half_split, model.spec.rotary_dim)
    report = port(model, apply)
    assert report.verdict == "match", report_text(report, model.spec)
    assert report.first_part is None and report.diagnosis == ()
    assert float(report.ratio.max()) < 0.5  # float32 noise well inside the tolerance


def test_transformers_apply_functions_are_a_match(models):
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb_interleave
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    llama = models(LLAMA)
    assert port(llama, apply_rotary_pos_emb).verdict == "match"
    deepseek = models(DEEPSEEK)
    report = port(deepseek, apply_rotary_pos_emb_interleave)
    assert report.verdict == "match", report_text(report, deepseek.spec)
    assert report.output_order == "half"  # transformers writes the interleaved pairs out half-split


def test_an_interleaved_model_rotated_in_place_is_a_match(models):
    deepseek = models(DEEPSEEK)
    report = port(deepseek, interleaved)
    assert report.verdict == "match" and report.output_order == "same"


def test_transformers_tables_are_a_match(models):
    for name in (LLAMA, GPT_OSS, DEEPSEEK):
        model = models(name)
        cos, sin = model.tables()
        report = model.check(cos=cos, sin=sin)
        assert report.verdict == "match", (name, report_text(report, model.spec))
        assert report.form == "tables"


# ---- every bug class from a broken rotary ----------------------------------------------------------------------


def test_positions_off_by_one(models):
    model = models(LLAMA)
    cos, sin = model.tables(model.probe.position_ids + 1)
    report = port(model, half_split, cos, sin)
    assert report.verdict == "mismatch"
    assert names(report) == ["positions_shifted"]
    assert report.diagnosis[0].detail["offset"] == "+1"
    assert report.first_part == 0  # wrong from the first token


def test_positions_counted_along_the_sequence(models):
    model = models(LLAMA)
    counted = torch.arange(model.probe.position_ids.shape[-1])[None]
    report = port(model, half_split, *model.tables(counted))
    assert names(report) == ["positions_counted"]
    # the probe's positions start 0, 1, 2, …: the error starts where they stop counting
    given = model.probe.position_ids[0]
    assert report.first_part == int(torch.nonzero(given != torch.arange(len(given)))[0]) >= 12


def test_positions_counted_from_one(models):
    model = models(LLAMA)
    counted = torch.arange(1, model.probe.position_ids.shape[-1] + 1)[None]
    report = port(model, half_split, *model.tables(counted))
    assert names(report) == ["positions_counted"] and report.diagnosis[0].detail["start"] == 1
    assert report.first_part == 0


@pytest.mark.parametrize("dtype, name", [(torch.bfloat16, "bfloat16"), (torch.float16, "float16")])
def test_cos_sin_cached_in_half_precision(models, dtype, name):
    model = models(LLAMA)
    cos, sin = model.tables()
    report = port(model, half_split, cos.to(dtype).float(), sin.to(dtype).float())
    assert names(report) == ["cos_sin_low_precision"]
    assert report.diagnosis[0].detail["dtype"] == name


def test_angles_in_bfloat16_err_more_with_the_position(models):
    model = models(LLAMA)
    inv_freq = model.module.inv_freq
    report = port(model, half_split, *own_tables(inv_freq, model.probe.position_ids, torch.bfloat16))
    assert names(report) == ["cos_sin_low_precision"]
    assert report.diagnosis[0].detail["exact"] == "256"
    assert "grows with the position" in explain(report, report.diagnosis[0])
    early, late = report.error[:8].max(), report.error[-8:].min()
    assert late > 10 * early  # the precision page's lesson: the error grows with the position


def test_wrong_pairing_layout(models):
    llama = models(LLAMA)
    report = port(llama, interleaved)
    assert names(report) == ["pairing_layout"]
    assert report.diagnosis[0].detail == {"used": "interleaved", "expected": "half"}
    deepseek = models(DEEPSEEK)
    report = port(deepseek, half_split)
    assert names(report) == ["pairing_layout"]
    assert report.first_part == 1  # position 0 is the identity in any layout


def test_partial_rotary_unrotated_dimensions_rotated(models):
    model = models(PHI2)
    head_dim = model.spec.head_dim
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    report = port(model, half_split, *own_tables(inv_freq, model.probe.position_ids))
    assert names(report) == ["partial_rotary_whole_head"]
    # the rotated θ zero-padded to the whole head, pairs formed across it
    padded = torch.zeros(head_dim // 2)
    padded[: model.spec.num_pairs] = model.module.inv_freq
    report = port(model, half_split, *own_tables(padded, model.probe.position_ids))
    assert names(report) == ["partial_rotary_whole_head"]
    assert "zero-padded" in explain(report, report.diagnosis[0])


def test_partial_rotary_unrotated_dimensions_dropped(models):
    model = models(PHI2)
    rotary_dim = model.spec.rotary_dim
    report = port(model, partial(half_split, rotary_dim, keep=False))  # only the rotated part comes back
    assert names(report) == ["partial_rotary_dropped"]

    def zeroed(q, k, cos, sin):
        q_out, k_out = partial(half_split, rotary_dim)(q, k, cos, sin)
        q_out[..., rotary_dim:], k_out[..., rotary_dim:] = 0, 0
        return q_out, k_out
    assert names(port(model, zeroed)) == ["partial_rotary_dropped"]


def test_attention_factor_on_q_only_twice_or_missing(models):
    model = models(GPT_OSS)
    factor = model.module.attention_scaling
    assert factor > 1
    cos, sin = model.tables()
    plain_cos, plain_sin = cos / factor, sin / factor

    def q_only(q, k, cos_, sin_):
        q_out, _ = half_split(q, k, cos, sin)
        _, k_out = half_split(q, k, plain_cos, plain_sin)
        return q_out, k_out
    report = port(model, q_only)
    assert names(report) == ["attention_factor_q_only"]
    assert report.diagnosis[0].detail["factor"] == f"{factor:.6g}"
    assert names(port(model, half_split, cos * factor, sin * factor)) == ["attention_factor_twice"]
    assert names(port(model, half_split, plain_cos, plain_sin)) == ["attention_factor_missing"]
    # from the tables alone: twice and missing show, q-only cannot
    assert names(model.check(cos=cos * factor, sin=sin * factor)) == ["attention_factor_twice"]
    assert names(model.check(cos=plain_cos, sin=plain_sin)) == ["attention_factor_missing"]


def test_tables_in_half_precision_and_shifted(models):
    model = models(LLAMA)
    cos, sin = model.tables()
    report = model.check(cos=cos.to(torch.bfloat16).float(), sin=sin.to(torch.bfloat16).float())
    assert names(report) == ["cos_sin_low_precision"]
    shifted = model.tables(model.probe.position_ids + 1)
    assert names(model.check(cos=shifted[0], sin=shifted[1])) == ["positions_shifted"]
    # one value per pair (Meta's table) reads the same
    half = cos.shape[-1] // 2
    assert model.check(cos=cos[0, :, :half], sin=sin[0, :, :half]).verdict == "match"


def mrope_tables(model: Model, axes_per_dimension: torch.Tensor):
    """cos and sin of an M-RoPE port that gives each dimension of cat(freqs, freqs) the axis listed."""
    inv_freq = model.module.inv_freq.to(torch.float32)
    position_ids = model.probe.position_ids.float()  # [3, batch, tokens]
    freqs = position_ids[..., None] * inv_freq  # [3, batch, tokens, pairs]
    emb = torch.cat([freqs, freqs], -1)  # [3, batch, tokens, dims]
    chosen = emb.gather(0, axes_per_dimension.expand(1, *emb.shape[1:]))[0]
    return chosen.cos(), chosen.sin()


def test_mrope_sections_split_wrongly(models):
    model = models(QWEN25_VL)
    section = torch.tensor(model.kind.mrope_section)
    pairs = int(section.sum())
    right = torch.repeat_interleave(torch.arange(3), section).repeat(2)
    assert port(model, half_split, *mrope_tables(model, right)).verdict == "match"
    by_doubled_counts = torch.repeat_interleave(torch.arange(3), 2 * section)
    report = port(model, half_split, *mrope_tables(model, by_doubled_counts))
    assert names(report) == ["mrope_sections"]
    assert "[2·t, 2·h, 2·w]" in explain(report, report.diagnosis[0])
    reversed_axes = (2 - torch.repeat_interleave(torch.arange(3), section)).repeat(2)
    assert "width, height, time" in explain(*_diagnosed(port(model, half_split, *mrope_tables(model, reversed_axes))))
    text_only = torch.zeros(2 * pairs, dtype=torch.long)
    assert "height and width ignored" in explain(*_diagnosed(port(model, half_split, *mrope_tables(model, text_only))))


def test_mrope_interleaved_taken_for_chunked(models):
    model = models(QWEN3_VL)
    section = model.kind.mrope_section
    chunked = torch.repeat_interleave(torch.arange(3), torch.tensor(section)).repeat(2)
    report = port(model, half_split, *mrope_tables(model, chunked))
    assert names(report) == ["mrope_sections"]
    assert "mixed up" in explain(report, report.diagnosis[0])


def _diagnosed(report):
    assert names(report) == ["mrope_sections"], names(report)
    return report, report.diagnosis[0]


def test_every_class_is_reproduced_and_cites_a_source():
    tested = {"positions_shifted", "positions_counted", "cos_sin_low_precision", "pairing_layout",
              "partial_rotary_whole_head", "partial_rotary_dropped", "attention_factor_q_only",
              "attention_factor_twice", "attention_factor_missing", "mrope_sections"}
    assert set(PROBE_BUGS) == tested
    for bug in PROBE_BUGS.values():
        assert bug.references and all(key in REFERENCES for key in bug.references)


def test_unknown_output_is_no_single_bug_and_says_where(models):
    model = models(LLAMA)
    q, k = half_split(model.probe.q, model.probe.k, *model.tables())
    q = q.clone()
    q[0, 0, 30, 5] += 0.5
    report = model.check(q=q, k=k)
    assert report.verdict == "mismatch" and report.diagnosis == ()
    assert report.first_part == 30
    assert "no single known bug" in report_text(report, model.spec)
    assert report_json(report)["first_part_position"] == int(model.probe.position_ids[0, 30])


def test_bad_output_is_refused(models):
    model = models(LLAMA)
    with pytest.raises(ValueError, match="give the rotated queries"):
        model.check(x=model.probe.q)
    with pytest.raises(ValueError, match="shape"):
        model.check(q=model.probe.q[..., :10], k=model.probe.k[..., :10])
    q = model.probe.q.clone()
    q[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        model.check(q=q, k=model.probe.k)


# ---- files and the CLI ---------------------------------------------------------------------------------------


def test_probe_files_round_trip(models):
    model = models(QWEN25_VL)
    files = probe_files(model.probe, "config.json")
    assert {PROBE_FILE, SCRIPT_FILE, "q.npy", "k.npy", "position_ids.npy"} <= set(files)
    probe = read_probe(read_tensors(files[PROBE_FILE], PROBE_FILE))
    assert torch.equal(probe.q, model.probe.q) and torch.equal(probe.position_ids, model.probe.position_ids)
    assert probe.position_ids.shape[0] == 3
    compile(files[SCRIPT_FILE].decode(), SCRIPT_FILE, "exec")  # the script is valid Python
    if "probe.safetensors" in files:
        read = read_tensors(files["probe.safetensors"], "probe.safetensors")
        assert torch.equal(read["k"], model.probe.k)


def test_cli_writes_the_probe_and_checks_a_port(models, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(load(LLAMA)))
    assert main([str(config), "--probe", str(tmp_path / "probe")]) == 0
    probe = read_probe(read_tensors((tmp_path / "probe" / PROBE_FILE).read_bytes(), PROBE_FILE))
    model = models(LLAMA)
    assert torch.equal(probe.q, model.probe.q)
    capsys.readouterr()
    q, k = half_split(probe.q, probe.k, *model.tables(probe.position_ids))
    torch.save({"q": q, "k": k}, tmp_path / "rotated.pt")
    assert main([str(config), "--rotated", str(tmp_path / "rotated.pt")]) == 0
    assert "MATCH" in capsys.readouterr().out
    cos, sin = model.tables(probe.position_ids + 1)
    q, k = half_split(probe.q, probe.k, cos, sin)
    torch.save({"q": q, "k": k}, tmp_path / "shifted.pt")
    assert main([str(config), "--rotated", str(tmp_path / "shifted.pt"), "--probe", str(tmp_path / "probe"),
                 "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["diagnosis"] == ["positions_shifted"] and result["first_part_position"] == 0
    (tmp_path / "bad.pt").write_bytes(b"not a file")
    assert main([str(config), "--rotated", str(tmp_path / "bad.pt")]) == 2
    assert main([str(config)]) == 2  # nothing to check


def test_two_bugs_at_once_are_named_as_that_pair(models):
    llama = models(LLAMA)
    shifted = llama.tables(llama.probe.position_ids + 1)
    report = port(llama, half_split, shifted[0].to(torch.bfloat16).float(), shifted[1].to(torch.bfloat16).float())
    assert names(report) == ["positions_shifted+cos_sin_low_precision"]
    sentence = explain(report, report.diagnosis[0])
    assert sentence.startswith("Two bugs at once.") and "shifted by +1" in sentence and "bfloat16" in sentence
    cos, sin = llama.tables()
    report = port(llama, interleaved, cos.half().float(), sin.half().float())
    assert names(report) == ["cos_sin_low_precision+pairing_layout"]
    phi = models(PHI2)
    cos, sin = phi.tables(phi.probe.position_ids - 1)
    report = port(phi, partial(half_split, phi.spec.rotary_dim, keep=False), cos, sin)
    assert names(report) == ["positions_shifted+partial_rotary_dropped"]
    assert report.diagnosis[0].parts[0].detail["offset"] == "-1"


def test_partial_rotary_tables(models):
    phi = models(PHI2)
    cos, sin = phi.tables()
    assert cos.shape[-1] == phi.spec.rotary_dim
    assert phi.check(cos=cos, sin=sin).verdict == "match"
    head_dim = phi.spec.head_dim
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    whole = own_tables(inv_freq, phi.probe.position_ids)
    report = phi.check(cos=whole[0], sin=whole[1])
    assert names(report) == ["partial_rotary_whole_head"]
    assert report.note.startswith("cat(freqs, freqs)")
