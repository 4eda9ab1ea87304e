"""The engines registry against the engines' own code (vLLM's, stored by tests/data/engines/regenerate.py), the named
divergences reproduced, GGUF keys round-tripped through ``gguf``, and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pe_core import engines
from pe_core.config import layer_map, read_as
from pe_core.rope import RopeSpec, rope_frequencies

DATA = Path(__file__).parent / "data"
STORED = json.loads((DATA / "engines/vllm.json").read_text())
EPS32 = 2.0**-23


def _config(name: str) -> dict:
    """A stored config; Kimi K2 (remote code) read as the deepseek_v3 its auto_map names, as vLLM's own class does."""
    for folder in (DATA / "model_configs", DATA / "engines/cases"):
        path = folder / f"{name}.json"
        if path.exists():
            config = json.loads(path.read_text())
            return read_as(config, "deepseek_v3") if config.get("model_type") == "kimi_k2" else config
    raise FileNotFoundError(name)


@pytest.fixture(scope="module")
def maps() -> dict:
    return {}


def _map(maps: dict, name: str):
    if name not in maps:
        maps[name] = layer_map(_config(name))
    return maps[name]


def _close32(ours: torch.Tensor, theirs: list[float]) -> bool:
    """Within float32's rounding of b^(−2i/d) and of the cos/sin table vLLM keeps: 8·ε₃₂·(1 + |ln θ|) relative."""
    theirs = torch.tensor(theirs, dtype=torch.float64)
    if ours.shape != theirs.shape:
        return False
    tolerance = 8 * EPS32 * (1 + ours.abs().log().abs())
    return bool(((ours - theirs).abs() <= tolerance * ours.abs()).all())


READ = sorted(name for name, entry in STORED["configs"].items() if "error" not in entry)


def test_stored_outputs_name_their_engine_and_cover_every_config():
    assert STORED["engine"] == "vllm" and STORED["version"] == "0.32.0"
    published = {path.stem for path in (DATA / "model_configs").glob("*.json")}
    assert published <= set(STORED["configs"])
    assert len(READ) >= len(STORED["configs"]) - 1  # every config but none or one read by vLLM's own code


@pytest.mark.parametrize("name", READ)
def test_vllm_entry_equals_vllm_own_code(name, maps):
    stored = STORED["configs"][name]
    config = _config(name)
    model = _map(maps, name)
    every = engines.engine_results(config, model=model)  # every engine runs on every published config
    assert {r.engine for r in every} == set(engines.ENGINE_NAMES)
    assert all(r.inv_freq is None or bool(torch.isfinite(r.inv_freq).all()) for r in every)
    results = [r for r in every if r.engine == "vllm"]
    assert results
    blocks = stored["kinds"]
    for result in results:
        kind = blocks.get(result.layer_type) or blocks["full_attention"]
        if "error" in kind:
            continue
        assert result.supported, result.note
        assert math.isclose(result.softmax_scale, kind["softmax_scale"], rel_tol=1e-9), name
        if "use_long" in kind:
            assert result.factor_choice == ("long" if kind["use_long"] else "short")
            wanted = kind["long_inv_freq" if kind["use_long"] else "short_inv_freq"]
            factor = kind["long_factor" if kind["use_long"] else "short_factor"]
        else:
            wanted, factor = kind["inv_freq"], kind["attention_factor"]
        assert _close32(result.inv_freq, wanted), (name, result.layer_type)
        assert math.isclose(result.attention_factor, factor, rel_tol=1e-6), (name, result.layer_type)
    assert engines.vllm_max_model_len(engines.engine_input(config, model)) == stored["max_model_len"], name


def test_vllm_dynamic_is_static(maps):
    """vllm #3488, #41236: vLLM's "dynamic" NTK builds one table; its own code keeps the trained θ at every length."""
    name = "llama-dynamic-x4"
    config, model = _config(name), _map(maps, name)
    stored = STORED["configs"][name]["kinds"]["full_attention"]
    spec = model.default_kind.spec
    for seq_len in (1000, 16_000, 32_768):
        [vllm] = engines.engine_results(config, seq_len, ("vllm",), model=model)
        assert _close32(vllm.inv_freq, stored["inv_freq"])
    [vllm] = engines.engine_results(config, 16_000, ("vllm",), model=model)
    transformers = rope_frequencies(spec, 16_000).inv_freq
    assert [d.key for d in vllm.divergences] == ["vllm.dynamic_static"]
    assert dict(vllm.divergences[0].values)["pairs"] == 63 == int((~torch.isclose(vllm.inv_freq, transformers)).sum())
    [vllm_short] = engines.engine_results(config, 4000, ("vllm",), model=model)
    assert vllm_short.divergences == ()  # up to L, transformers keeps the trained θ too


def test_yarn_mscale_without_mscale_all_dim(maps):
    """vLLM 1.2608 against transformers 1.36889 (DeepSeek's MLA path, mscale 0.707, factor 40)."""
    name = "deepseek-v3-mscale-only"
    config, model = _config(name), _map(maps, name)
    stored = STORED["configs"][name]["kinds"]["full_attention"]
    results = {r.engine: r for r in engines.engine_results(config, model=model)}
    assert round(results["transformers"].attention_factor, 5) == 1.36889 == round(0.1 * math.log(40) + 1, 5)
    assert round(results["vllm"].attention_factor, 4) == 1.2608 == round(stored["attention_factor"], 4)
    assert [d.key for d in results["vllm"].divergences] == ["vllm.yarn_mscale"]
    assert results["mlx-lm"].attention_factor == pytest.approx(results["vllm"].attention_factor)
    assert [d.key for d in results["llama.cpp"].divergences] == ["llamacpp.mla_scale"]


def test_deepseek_v3_mla_softmax_scale(maps):
    """MLA's softmax scale mscale² = 1.87385 beside a cos/sin factor of 1, in every engine and in vLLM's own code."""
    name = "deepseek-ai--DeepSeek-V3"
    results = engines.engine_results(_config(name), model=_map(maps, name))
    assert {round(r.softmax_scale, 5) for r in results} == {1.87385}
    assert {round(r.attention_factor, 9) for r in results} == {1.0}
    assert round(STORED["configs"][name]["kinds"]["full_attention"]["softmax_scale"], 5) == 1.87385
    assert all(r.divergences == () for r in results)


def test_fixed_ntk_differs_from_ntk_aware_on_63_of_64_pairs():
    spec = RopeSpec(head_dim=128, base=10000.0, rope_type="ntk", factor=4.0)
    fixed = engines.fixed_ntk_inv_freq(spec)
    aware = rope_frequencies(spec).inv_freq
    apart = ~torch.isclose(fixed, aware, rtol=1e-12, atol=0)
    assert int(apart.sum()) == 63 and not bool(apart[-1])
    assert float(fixed[-1]) == pytest.approx(float(aware[-1]), rel=1e-12) == pytest.approx(10000.0 ** (-126 / 128) / 4)
    # closed form: (b·s)^(−2i/d)/s^(2/d) = b^(−2i/d)·s^(−(2i+2)/d)
    i = torch.arange(64, dtype=torch.float64)
    assert torch.allclose(fixed, 10000.0 ** (-2 * i / 128) * 4.0 ** (-(2 * i + 2) / 128), rtol=1e-13)


def test_longrope_choice_by_engine(maps):
    """Short or long factors: transformers by the sequence, vLLM by max_model_len (PR #27431), llama.cpp by the
    allocated context (#24823), SGLang by position (one token later), MLX-LM always long."""
    name = "phi3-longrope"
    config, model = _config(name), _map(maps, name)
    stored = STORED["configs"][name]["kinds"]["full_attention"]
    spec = model.default_kind.spec

    def choices(seq_len, context=None):
        return {r.engine: r.factor_choice for r in engines.engine_results(config, seq_len, context=context, model=model)}

    assert choices(2000) == {"transformers": "short", "vllm": "short", "sglang": "short", "llama.cpp": "long",
                             "llama.cpp-b5731": "long", "mlx-lm": "long"}
    assert choices(2000, context=131072)["vllm"] == "long"
    assert choices(4097) == {"transformers": "long", "vllm": "short", "sglang": "short", "llama.cpp": "long",
                             "llama.cpp-b5731": "long", "mlx-lm": "long"}
    assert choices(4098)["sglang"] == "long"
    assert choices(2000, context=4096)["llama.cpp"] == "short"
    [vllm] = engines.engine_results(config, 2000, ("vllm",), model=model)
    assert not stored["use_long"] and _close32(vllm.inv_freq, stored["short_inv_freq"])
    long = rope_frequencies(spec, 8000).inv_freq
    assert _close32(long, stored["long_inv_freq"])
    assert stored["short_factor"] == pytest.approx(engines.longrope_scale(131072, 4096), rel=1e-6)


def test_llamacpp_sliding_layers_shared_before_b5731(maps):
    """llama.cpp #14367: one base and one scale for Gemma 3's sliding and full layers; today's code splits them."""
    name = "google--gemma-3-4b-it"
    config, model = _config(name), _map(maps, name)
    results = engines.engine_results(config, 8192, ("llama.cpp", "llama.cpp-b5731"), layer_type="sliding_attention",
                                     model=model)
    today, old = results
    assert today.divergences == ()
    assert torch.allclose(today.inv_freq, model.kind("sliding_attention").spec and
                          rope_frequencies(model.kind("sliding_attention").spec).inv_freq, rtol=1e-12)
    assert [d.key for d in old.divergences] == ["llamacpp.sliding_shared"]
    assert torch.allclose(old.inv_freq, rope_frequencies(model.kind("full_attention").spec).inv_freq, rtol=1e-12)


def test_truncate_false_is_followed_by_vllm_only(maps):
    name = "openai--gpt-oss-20b"
    results = engines.engine_results(_config(name), layer_type="full_attention", model=_map(maps, name))
    keys = {r.engine: [d.key for d in r.divergences] for r in results}
    assert keys["vllm"] == [] and keys["transformers"] == []
    assert keys["sglang"] == ["sglang.yarn_truncate"] and keys["mlx-lm"] == ["mlx.yarn_truncate"]
    assert keys["llama.cpp"] == ["llamacpp.yarn_truncate"]
    pairs = {dict(r.divergences[0].values)["pairs"] for r in results if r.divergences}
    assert pairs == {9}


def test_gguf_keys_round_trip(tmp_path, maps):
    """The keys the converter writes, written with gguf's own writer and read back with its reader, give the same
    θᵢ and factor in llama.cpp's computation."""
    gguf = pytest.importorskip("gguf")
    for name in ("openai--gpt-oss-20b", "meta-llama--Llama-3.1-8B", "phi3-longrope", "google--gemma-3-4b-it"):
        data = engines.engine_input(_config(name), _map(maps, name))
        keys, tensors = engines.gguf_keys(data)
        path = tmp_path / f"{name}.gguf"
        writer = gguf.GGUFWriter(str(path), "llama")
        for key, value in keys.items():
            full = f"llama.{key}"
            if isinstance(value, str):
                writer.add_string(full, value)
            elif isinstance(value, int):
                writer.add_uint32(full, value)
            else:
                writer.add_float32(full, value)
        for tensor, values in tensors.items():
            writer.add_tensor(tensor, torch.tensor(values, dtype=torch.float32).numpy())
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        reader = gguf.GGUFReader(str(path))
        back = {}
        for field in reader.fields.values():
            if field.name.startswith("llama."):
                value = field.contents()
                back[field.name.removeprefix("llama.")] = value
        back_tensors = {t.name: [float(v) for v in t.data] for t in reader.tensors}
        assert set(back) == set(keys)
        for sliding in (False, True):
            ours = engines.llamacpp_inv_freq(keys, tensors, sliding, False, 131072)
            theirs = engines.llamacpp_inv_freq(back, back_tensors, sliding, False, 131072)
            assert torch.allclose(ours[0], theirs[0], rtol=1e-6), name
            assert ours[1] == pytest.approx(theirs[1], rel=1e-6) and ours[2] == theirs[2]


def test_recipe_reaches_the_target_in_every_engine(maps):
    name = "Qwen--Qwen3-8B"
    config = _config(name)
    cooked = {r.engine: r for r in engines.recipes(config, 131072, model=_map(maps, name))}
    block = cooked["vllm"].block
    assert block["rope_type"] == "yarn" and block["original_max_position_embeddings"] == 40960
    assert block["factor"] == 3.2 and block["factor"] * 40960 >= 131072
    assert "--max-model-len 131072" in cooked["vllm"].lines
    assert cooked["llama.cpp"].lines == ("--rope-scaling yarn", "--rope-scale 3.2", "--yarn-orig-ctx 40960",
                                         "--ctx-size 131072")
    override = json.loads(cooked["vllm"].lines[0].split("'")[1])
    patched = dict(config)
    patched["rope_parameters"] = {**override["rope_parameters"]}
    patched["max_position_embeddings"] = override["max_position_embeddings"]
    patched.pop("rope_scaling", None)
    data = engines.engine_input(patched)
    assert engines.vllm_max_model_len(data) == 131072
    keys = engines.recipe_gguf_keys(config, 131072)
    assert keys["rope.scaling.type"] == "yarn" and keys["rope.scaling.factor"] == 3.2
    assert keys["rope.scaling.original_context_length"] == 40960
    same = engines.recipes(_config("deepseek-ai--DeepSeek-V3"), 100_000)
    assert all(r.block is None for r in same)


def test_bad_input_is_a_sentence(maps):
    config = _config("Qwen--Qwen3-8B")
    with pytest.raises(ValueError, match="Unknown engine"):
        engines.engine_results(config, engines=("tgi",), model=_map(maps, "Qwen--Qwen3-8B"))
    with pytest.raises(ValueError, match="positive whole number"):
        engines.engine_results(config, 0, model=_map(maps, "Qwen--Qwen3-8B"))
    with pytest.raises(ValueError, match="positive whole number"):
        engines.recipes(config, -5, model=_map(maps, "Qwen--Qwen3-8B"))


def test_cli_json_and_exit_codes(capsys):
    path = str(DATA / "engines/cases/deepseek-v3-mscale-only.json")
    assert engines.main([path, "--engine", "vllm", "--json", "--target", "262144"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["engine"] for r in data["results"]] == ["transformers", "vllm"]
    assert round(data["results"][1]["attention_factor"], 4) == 1.2608
    assert data["results"][1]["divergences"][0]["number"] == 1
    assert data["results"][1]["divergences"][0]["key"] == "vllm.yarn_mscale"
    assert [r["engine"] for r in data["recipes"]] == ["transformers", "vllm", "sglang", "llama.cpp", "mlx-lm"]
    assert engines.main(["{not json", "--json"]) == 2
    assert "error" in json.loads(capsys.readouterr().out)
    assert engines.main([path, "--seq-len", "0"]) == 2
    assert "positive whole number" in capsys.readouterr().err


def test_cli_help_answers_before_torch():
    done = subprocess.run([sys.executable, "-c", "import sys, runpy; sys.argv = ['x', '--help'];\n"
                           "try:\n    runpy.run_module('pe_core.engines', run_name='__main__')\n"
                           "except SystemExit:\n    pass\nprint('torch' in sys.modules)"],
                          capture_output=True, text=True, cwd=Path(__file__).parents[1], timeout=60)
    assert "--target" in done.stdout and done.stdout.strip().endswith("False"), done.stderr


@pytest.mark.parametrize("key", sorted(STORED["recipes"]))
def test_vllm_recipe_loads_in_vllm_own_config_code(key):
    """Each stored recipe was applied with vLLM's get_config(hf_overrides_kw=...) and accepted by its
    _get_and_verify_max_len at the target; the registry's vLLM entry on the same overrides gives vLLM's θᵢ."""
    name, target = key.split("@")
    stored = STORED["recipes"][key]
    config = _config(name)
    [recipe] = [r for r in engines.recipes(config, int(target)) if r.engine == "vllm"]
    overrides = json.loads(recipe.lines[0].split("'")[1]) if len(recipe.lines) > 1 else {}
    assert overrides == stored["overrides"]
    assert stored["max_model_len"] == int(target)
    patched = {k: v for k, v in config.items() if k != "rope_scaling"}
    patched.update(overrides)
    [vllm] = engines.engine_results(patched, engines=("vllm",), layer_type="full_attention")
    assert _close32(vllm.inv_freq, stored["inv_freq"]), key
    assert math.isclose(vllm.attention_factor, stored["attention_factor"], rel_tol=1e-6)
    if overrides:
        assert engines.vllm_max_model_len(engines.engine_input(patched)) >= int(target)


def test_llamacpp_attention_factor_from_the_config(maps):
    """Laguna's explicit attention_factor: written as yarn_attn_factor, multiplied by 1 + 0.1·ln s again by ggml
    (ik_llama.cpp #1298) and applied to the sliding layers too; its sliding layers' own rotary width is written as
    rope.dimension_count_swa."""
    name = "poolside--Laguna-XS.2-FP8"
    config, model = _config(name), _map(maps, name)
    keys, _tensors = engines.gguf_keys(engines.engine_input(config, model))
    assert keys["rope.dimension_count"] == 64 and keys["rope.dimension_count_swa"] == 128
    full, sliding = (engines.engine_results(config, engines=("llama.cpp",), layer_type=kind, model=model)[0]
                     for kind in ("full_attention", "sliding_attention"))
    given = 0.1 * math.log(64) + 1
    assert full.attention_factor == pytest.approx(given * given, rel=1e-6)
    assert [d.key for d in full.divergences] == ["llamacpp.yarn_attn_factor"]
    assert [d.key for d in sliding.divergences] == ["llamacpp.attn_factor_all_layers"]
    assert len(sliding.inv_freq) == 64
