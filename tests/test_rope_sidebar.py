"""The shared RoPE sidebar on a page (AppTest): pasted configs, their errors, examples, and share links."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from lessons.model_source import GEMMA3_CONFIG
from lessons.rope_setup import config_examples
from pe_core import preset_by_name
from tests.conftest import chart_figures, figure_titled, run_whole_page

PAGE = "app_pages/frequencies.py"
PASTE = "Paste config.json"
QWEN = preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").config


def pasted(config) -> object:
    text = config if isinstance(config, str) else json.dumps(config)
    return run_whole_page(PAGE, {"src": PASTE, "config": text})


def sidebar_text(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def heatmap_names(at) -> list[str]:
    figure = figure_titled(at, "Rotation angle")
    return [t["name"] for t in figure["data"] if t["type"] == "heatmap"]


def test_pasted_qwen_yarn_config_is_analysed_at_its_extended_length():
    at = pasted(QWEN)
    assert not at.exception and not at.error
    assert "trained at L = 32,768" in sidebar_text(at) and "shown at L′ = 131,072" in sidebar_text(at)
    unseen = figure_titled(at, "Pairs that reach angles never seen")
    assert "L = 32,768 → L′ = 131,072" in unseen["layout"]["title"]["text"]
    ratio = figure_titled(at, "Interpolation ratio")["data"]
    pi = next(t for t in ratio if t["name"] == "Position Interpolation")
    assert min(pi["y"]) == pytest.approx(1 / 4)  # s = 131072 / 32768 = 4
    assert heatmap_names(at)[0] == "Pasted config"


def test_old_style_linear_config_is_scaled_from_max_position_embeddings():
    at = pasted({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
                 "rope_scaling": {"type": "linear", "factor": 4}})
    assert "trained at L = 4,096" in sidebar_text(at) and "shown at L′ = 16,384" in sidebar_text(at)
    assert "no original_max_position_embeddings" in sidebar_text(at)


def test_nested_text_config_is_read_and_says_so():
    at = pasted(GEMMA3_CONFIG)
    assert not at.exception and not at.error
    assert "read from text_config" in sidebar_text(at)
    assert "rotary dims 256 · base 1,000,000" in sidebar_text(at)
    assert len(heatmap_names(at)) == 4  # the model's own RoPE, then direct, PI and NTK-aware


def test_bad_paste_errs_in_the_main_area_and_keeps_the_last_good_figures():
    at = pasted(QWEN)
    before = chart_figures(at)
    at.sidebar.text_area[0].input('{"rope_theta": 10000, "rope_scaling": {"rope_type": "yarn"').run()
    assert not at.exception
    assert len(at.main.error) == 1 and not at.sidebar.error
    assert "not valid JSON" in at.main.error[0].value and "line 1" in at.main.error[0].value
    assert any("last settings that worked" in c.value for c in at.main.caption)
    after = chart_figures(at)
    assert len(after) == len(before)
    assert heatmap_names(at)[0] == "Pasted config"  # still the Qwen config's figures
    # examples next to the error, one per kind of config; one click fixes the page
    labels = [b.label for b in at.main.button]
    assert all(label in labels for label in config_examples())
    next(b for b in at.main.button if b.label == "Phi-3.5 · LongRoPE").click().run()
    assert not at.error and "own RoPE: LongRoPE (longrope)" in sidebar_text(at)


@pytest.mark.parametrize(("config", "message"), [
    ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}, "learned absolute position"),
    ({"rope_theta": 10000}, "head_dim"),
    ({"head_dim": 64, "rope_scaling": {"rope_type": "axial"}}, "not supported"),
])
def test_unsupported_configs_are_refused_by_name(config, message):
    at = pasted(config)
    assert not at.exception
    assert message in at.main.error[0].value
    assert any("default settings" in c.value for c in at.main.caption)  # a first load still draws figures
    assert chart_figures(at)


def test_a_link_with_a_pasted_config_restores_it():
    """The widget writes the paste into the URL (tests/test_e2e_browser.py follows a real link); reading it back:"""
    link = "http://localhost:8501/frequencies?" + urlencode({"src": PASTE, "config": json.dumps(GEMMA3_CONFIG)})
    query = {key: values[0] for key, values in parse_qs(urlsplit(link).query).items()}
    reopened = run_whole_page(PAGE, query)
    assert not reopened.exception and not reopened.error
    assert json.loads(reopened.sidebar.text_area[0].value) == GEMMA3_CONFIG
    assert "read from text_config" in sidebar_text(reopened)
