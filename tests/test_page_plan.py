"""AppTest of the extension planner and the config comparison: defaults, uploads (good and bad), targets out of
range, downloads, and what the figures and tables say."""

from __future__ import annotations

import json

import pytest

from tests.conftest import figure_titled, run_page

PLAN = "pages/plan.py"
COMPARE = "pages/compare.py"
PLAN_TITLES = ("What each method does to θᵢ", "Unseen at L′", "Men et al.'s criterion", "Bases against context length")
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
    yarn_block = json.loads(at.code[4].value)
    assert yarn_block["rope_parameters"] == {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                             "original_max_position_embeddings": 8192, "beta_fast": 32.0,
                                             "beta_slow": 1.0}
    assert yarn_block["max_position_embeddings"] == 32768
    labels = [b.label for b in at.get("download_button")]
    assert labels.count("Download this block") == 7 and "Download the whole plan (JSON)" in labels
    unseen = figure_titled(at, PLAN_TITLES[1])
    shares = {t["name"]: t["y"] for t in unseen["data"]}
    assert shares["YaRN"] == [0.0, 0.0] and shares["Direct extrapolation"][0] > 40


def test_plan_legacy_keys():
    at = run_page(PLAN)
    at.toggle(key="legacy").set_value(True).run()
    assert not at.exception
    block = json.loads(at.code[1].value)
    assert block["rope_scaling"] == {"rope_type": "linear", "factor": 4.0} and block["rope_theta"] == 500000.0


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
