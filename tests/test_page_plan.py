"""AppTest of the extension planner and the config comparison: defaults, uploads (good and bad), targets out of
range and the limit on them, pasted Gemma 3, Gemma 4, gpt-oss and OLMo 3 configs (which layers change and why, the whole
patched config.json in the model's own schema), downloads, and what the figures and tables say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lessons.model_source import GEMMA3_CONFIG
from pe_core.plan import MAX_TARGET, TARGET_CEILING
from tests.conftest import figure_titled, run_page

PLAN = "app_pages/plan.py"
COMPARE = "app_pages/compare.py"
PLAN_TITLES = ("What each method does to θᵢ", "Unseen at L′", "Men et al.'s criterion", "Bases against context length")
LAYER_MAP = "Layer map"
CONFIGS = Path(__file__).parent / "data" / "model_configs"
GPT_OSS_CONFIG = json.loads((CONFIGS / "openai--gpt-oss-20b.json").read_text())
OLMO3_CONFIG = json.loads((CONFIGS / "allenai--Olmo-3.1-32B-Instruct.json").read_text())
GEMMA4_CONFIG = json.loads((CONFIGS / "google--gemma-4-26B-A4B.json").read_text())
COMPARE_TITLES = ("Wavelength λᵢ per pair", "θᵢ of B / θᵢ of A")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def texts(elements) -> list[str]:
    return [e.value for e in elements]


def uploader(at, label: str):
    return next(u for u in at.file_uploader if u.label.startswith(label))


def assert_ok(at, titles) -> None:
    assert not at.exception, at.exception
    for title in titles:
        figure_titled(at, title)


def test_plan_default_llama3_to_32k():
    at = run_page(PLAN)
    assert_ok(at, PLAN_TITLES)
    assert not at.error
    assert "Target L′ = 32,768, so s = L′/L = 4" in at.info[0].value
    bound = next(m for m in texts(at.markdown) if m.startswith("b*(L′)"))
    assert "6.31e+05" in bound and "does not" in bound  # Llama 3's base 500,000 is below b*(32k)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == ["Direct extrapolation", "Position Interpolation", "NTK-aware", "Dynamic NTK",
                                      "YaRN", "Llama-3 scaling", "Base change (ABF)"]
    yarn_config = json.loads(at.code[4].value)
    assert yarn_config["rope_parameters"] == {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                              "original_max_position_embeddings": 8192, "beta_fast": 32.0,
                                              "beta_slow": 1.0}
    assert yarn_config["max_position_embeddings"] == 32768
    assert (yarn_config["hidden_size"], yarn_config["head_dim"]) == (4096, 128)  # the whole file, head_dim written
    labels = [b.label for b in at.get("download_button")]
    assert labels.count("Download this config.json") == 7 and "Download the whole plan (JSON)" in labels
    layers = layer_lines(at)
    assert len(layers) == 1 and "changed: they attend over the whole context" in layers[0]
    assert not any("ships" in m for m in texts(at.markdown))  # plain RoPE: nothing to compose with
    unseen = figure_titled(at, PLAN_TITLES[1])
    shares = {t["name"]: t["y"] for t in unseen["data"]}
    assert shares["YaRN"] == [0.0, 0.0] and shares["Direct extrapolation"][0] > 40


def test_plan_legacy_keys():
    at = run_page(PLAN)
    at.toggle(key="legacy").set_value(True).run()
    assert not at.exception
    config = json.loads(at.code[1].value)
    assert config["rope_scaling"] == {"rope_type": "linear", "factor": 4.0} and config["rope_theta"] == 500000.0
    assert json.loads(at.code[2].value)["rope_scaling"] == {"rope_type": "default"}  # NTK-aware: explicit, not null


def layer_lines(at) -> list[str]:
    """The page's list of layer kinds and what the plan does to each."""
    return [line for m in texts(at.markdown) for line in m.splitlines()
            if line.startswith("- **") and ("changed" in line or "unchanged" in line)]


def pasted(config: dict, **query) -> dict:
    return {"src": "config", "config": json.dumps(config), **query}


def test_plan_gemma3_pasted_at_defaults_scales_its_full_attention_layers_on_top_of_the_shipped_x8():
    at = run_page(PLAN, pasted(GEMMA3_CONFIG))
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert not at.error
    assert "Target L′ = 524,288, so s = L′/L = 32" in at.info[0].value
    assert "full attention: 5 of 34 layers" in at.info[0].value and "base 1,000,000" in at.info[0].value
    assert any("×32 in total on the same L, ×4 more than it ships" in m for m in texts(at.markdown))
    sliding, full = layer_lines(at)
    assert "sliding_attention" in sliding and "unchanged" in sliding and "1,024 tokens" in sliding
    assert "29 of 34 layers" in sliding and "full_attention" in full and full.count("changed") == 1
    outlines = {trace["name"]: trace["marker"]["line"]["width"] for trace in figure_titled(at, LAYER_MAP)["data"]}
    thick = max(outlines, key=outlines.get)
    assert thick.startswith("full attention") and len(set(outlines.values())) == 2  # the layers the configs change
    pi = json.loads(at.code[1].value)
    assert pi["text_config"]["rope_parameters"] == {
        "full_attention": {"rope_type": "linear", "rope_theta": 1_000_000.0, "factor": 32.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}}
    assert pi["vision_config"] == GEMMA3_CONFIG["vision_config"]
    direct = json.loads(at.code[0].value)["text_config"]["rope_parameters"]["full_attention"]
    assert direct["factor"] == 8.0  # direct extrapolation keeps the shipped ×8
    assert any("under `text_config`" in m for m in texts(at.markdown))
    at.toggle(key="legacy").set_value(True).run()
    legacy = json.loads(at.code[1].value)["text_config"]
    assert (legacy["rope_theta"], legacy["rope_local_base_freq"], legacy["rope_scaling"]) == (
        1_000_000.0, 10_000.0, {"rope_type": "linear", "factor": 32.0})


@pytest.mark.slow  # a plan at 1,048,576 tokens: about 25 s on a shared 2-core machine
def test_plan_gemma3_pasted_at_the_extremes_of_its_target():
    at = run_page(PLAN, pasted(GEMMA3_CONFIG, target=str(MAX_TARGET)))
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert "s = L′/L = 64" in at.info[0].value
    at = run_page(PLAN, pasted(GEMMA3_CONFIG, target="16385"))  # just above L = 16,384: below what it ships
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert any("already built for 131,072 tokens" in m for m in texts(at.markdown))
    at = run_page(PLAN, pasted(GEMMA3_CONFIG, target=str(TARGET_CEILING)))
    assert not at.exception
    assert any("beyond the longest target allowed, 1,048,576 tokens: raise “Longest target allowed” (up to "
               "16,777,216)" in e for e in texts(at.error))


def test_plan_gpt_oss_pasted_at_defaults_changes_both_kinds_and_writes_no_null():
    at = run_page(PLAN, pasted(GPT_OSS_CONFIG))
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert "Target L′ = 524,288, so s = L′/L = 128" in at.info[0].value
    assert any("yarn ×32" in m and "×4 more than it ships" in m for m in texts(at.markdown))
    lines = layer_lines(at)
    assert len(lines) == 2 and any("one RoPE for all its layers" in line and "128 tokens" in line for line in lines)
    ntk = json.loads(at.code[2].value)
    assert ntk["rope_parameters"]["rope_type"] == "default"
    at.toggle(key="legacy").set_value(True).run()
    assert json.loads(at.code[2].value)["rope_scaling"] == {"rope_type": "default"}  # null would be YaRN ×32


def test_plan_gpt_oss_pasted_at_the_extremes_and_the_limit_the_reader_sets():
    at = run_page(PLAN, pasted(GPT_OSS_CONFIG, target="4097"))
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert "s = L′/L = 1.00024" in at.info[0].value
    at = run_page(PLAN, pasted(GPT_OSS_CONFIG, target=str(2 * MAX_TARGET)))
    assert any("raise “Longest target allowed”" in e for e in texts(at.error))
    at = run_page(PLAN, pasted(GPT_OSS_CONFIG, target=str(4 * MAX_TARGET), limit=str(2 * MAX_TARGET)))
    assert any("beyond the longest target allowed, 2,097,152 tokens" in e for e in texts(at.error))  # the raised limit
    assert at.number_input(key="limit").value == 2 * MAX_TARGET
    at = run_page(PLAN, pasted(GPT_OSS_CONFIG, target=str(2 * MAX_TARGET), limit=str(2 * TARGET_CEILING)))
    assert not at.exception  # a limit beyond the ceiling falls back to the default
    assert any("beyond the longest target allowed, 1,048,576 tokens" in e for e in texts(at.error))


def test_plan_gemma4_pasted_offers_the_methods_its_proportional_rope_can_write():
    at = run_page(PLAN, pasted(GEMMA4_CONFIG))
    assert_ok(at, (*PLAN_TITLES, LAYER_MAP))
    assert "Target L′ = 1,048,576, so s = L′/L = 4" in at.info[0].value
    assert any("proportional RoPE" in m and "Not offered for these layers: Dynamic NTK, YaRN, Llama-3 scaling" in m
               for m in texts(at.markdown))
    assert list(at.dataframe[0].value.iloc[:, 0]) == ["Direct extrapolation", "Position Interpolation", "NTK-aware",
                                                      "Base change (ABF)"]
    pi = json.loads(at.code[1].value)["text_config"]["rope_parameters"]
    assert pi["full_attention"] == {"rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25,
                                    "factor": 4.0}
    assert pi["sliding_attention"] == {"rope_theta": 10_000.0, "rope_type": "default"}


@pytest.mark.slow  # a plan at 1,048,576 tokens
def test_plan_default_target_stays_within_the_limit():
    llama4 = {"model_type": "llama4_text", "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 500000.0,
              "max_position_embeddings": 10_485_760, "attention_chunk_size": 8192,
              "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}
    at = run_page(PLAN, pasted(llama4, target="0", limit=str(1 << 20)))
    assert not at.exception and not at.error
    assert "Target L′ = 1,048,576" in at.info[0].value  # 4 × 10,485,760 would be beyond the limit
    assert any("already built for 10,485,760 tokens" in m for m in texts(at.markdown))
    lines = layer_lines(at)
    assert any("chunked_attention" in line and "8,192 tokens" in line for line in lines)
    assert any("no RoPE" in line and "NoPE" in line for line in lines)


def test_plan_olmo3_has_no_older_keys_and_says_so():
    at = run_page(PLAN, pasted(OLMO3_CONFIG, legacy="true"))
    assert_ok(at, PLAN_TITLES)
    assert any("only `rope_parameters`" in i.value for i in at.info)
    assert "sliding_attention" in json.loads(at.code[1].value)["rope_parameters"]


def test_plan_target_and_preset_from_the_link():
    at = run_page(PLAN, {"preset": "gpt-oss-20b", "target": "131072"})
    assert_ok(at, PLAN_TITLES)
    assert "s = L′/L = 32" in at.info[0].value


def test_plan_target_below_the_training_length_is_refused():
    at = run_page(PLAN, {"target": "4096"})
    assert not at.exception
    assert any("must exceed the training length L = 8,192" in e for e in texts(at.error))
    for title in PLAN_TITLES:
        figure_titled(at, title)


def test_plan_uploaded_config_and_a_bad_upload():
    config = {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
              "partial_rotary_factor": 0.5, "rope_theta": 10000.0}
    at = run_page(PLAN)
    uploader(at, "… or upload its config.json").set_value(("config.json", json.dumps(config).encode(), "text/json"))
    at.run()
    assert_ok(at, PLAN_TITLES)
    assert "64 of 128 dimensions rotated" in at.info[0].value
    assert any("no bound applies" in m for m in texts(at.markdown))
    uploader(at, "… or upload its config.json").set_value(("config.json", b"[1, 2]", "text/json")).run()
    assert not at.exception
    assert any("config.json could not be used" in e for e in texts(at.error))


def test_compare_default_llama3_and_its_long_context_variant():
    at = run_page(COMPARE)
    assert_ok(at, COMPARE_TITLES)
    assert "35 of 64 pairs differ (pairs 29 to 63)" in at.info[0].value
    table = at.dataframe[0].value
    rope_type = table[table.iloc[:, 0] == "rope type"].iloc[0]
    assert list(rope_type[1:]) == ["default", "llama3", "≠"]
    ratio = figure_titled(at, COMPARE_TITLES[1])["data"][0]["y"]
    assert ratio[0] == pytest.approx(1.0) and ratio[-1] == pytest.approx(1 / 8)


def test_compare_heads_of_different_widths():
    at = run_page(COMPARE, {"a": "gpt-oss-20b", "b": "Phi-3.5-mini-instruct"})
    assert_ok(at, COMPARE_TITLES)
    assert "cannot be compared pair by pair" in at.info[0].value


def test_compare_bad_upload_and_bad_paste():
    at = run_page(COMPARE)
    uploader(at, "… or upload B's config.json").set_value(("b.json", b"\xff\xfe", "text/json")).run()
    assert not at.exception
    assert any("b.json could not be used" in e for e in texts(at.error))
    at = run_page(COMPARE, {"src_a": "Paste config.json", "config_a": "{\"rope_theta\": 10000}"})
    assert not at.exception
    assert any("head width" in e for e in texts(at.error))
