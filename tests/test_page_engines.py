"""AppTest of the engines page: defaults (gpt-oss-20b, whose truncate = false three engines do not read), LongRoPE's
choice by engine, DeepSeek-V3's MLA scale, a pasted config, bad input as a sentence, and the extremes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import figure_titled, run_page

PAGE = "app_pages/engines.py"
TITLE = "Where the engines' θᵢ part"
CASES = Path(__file__).parent / "data" / "engines" / "cases"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_defaults_show_the_truncate_divergences_and_recipes():
    at = run_page(PAGE)
    assert not at.exception, at.exception
    assert not at.error
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == ["transformers", "vLLM", "SGLang", "llama.cpp", "llama.cpp", "MLX-LM"]
    assert list(table["differences"]) == [0, 0, 1, 1, 1, 1]
    text = markdown(at)
    assert "truncate = false is not read: SGLang floors and ceils" in text and "9 of 32 pairs" in text
    figure = figure_titled(at, TITLE)
    names = [t["name"] for t in figure["data"] if t.get("name")]
    assert names[0].startswith("vLLM") and names[0].endswith("0 of 32 pairs differ")
    assert sum("9 of 32 pairs differ" in name for name in names) == 4
    codes = [c.value for c in at.code]
    assert "--rope-scaling yarn\n--rope-scale 64\n--yarn-orig-ctx 4096\n--ctx-size 262144" in codes
    assert any("--max-model-len 262144" in code for code in codes)


def test_longrope_choice_and_allocated_context():
    at = run_page(PAGE, {"preset": "Phi-3.5-mini-instruct", "len": "2048"})
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    choices = dict(zip(table["engine"] + " " + table["version"], table["LongRoPE factors"], strict=True))
    assert [value for key, value in choices.items() if key.startswith("transformers")] == ["short"]
    assert [value for key, value in choices.items() if key.startswith("MLX-LM")] == ["long"]
    assert "llama.cpp uses the long factors for a 2,048-token sequence" in markdown(at)
    at = run_page(PAGE, {"preset": "Phi-3.5-mini-instruct", "len": "2048", "ctx": "131072"})
    assert "with max_model_len 131,072" in markdown(at)


def test_pasted_deepseek_mscale_only_and_chinese():
    config = (CASES / "deepseek-v3-mscale-only.json").read_text()
    at = run_page(PAGE, {"src": "config", "config": config})
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    factors = dict(zip(table["engine"], table["cos/sin ×"], strict=False))
    assert factors["transformers"] == "1.36889" and factors["vLLM"] == "1.26080"
    assert set(table["softmax ×"]) == {"1.00000"}
    assert "vllm/model_executor/layers/rotary_embedding/deepseek_scaling_rope.py" in markdown(at)


@pytest.mark.parametrize("query, sentence", [
    ({"src": "config", "config": "{not json"}, "not valid JSON"),
    ({"len": "-3"}, "which this control cannot take"),
])
def test_bad_input_is_a_sentence(query, sentence):
    at = run_page(PAGE, query)
    assert not at.exception, at.exception
    assert any(sentence in e.value for e in at.error) or any(sentence in w.value for w in at.warning), \
        [e.value for e in at.error]


def test_extremes():
    at = run_page(PAGE, {"preset": "Gemma-3-4B-it", "len": "16777216", "ctx": "16777216", "target": "16777216"})
    assert not at.exception, at.exception
    assert len(at.dataframe) == 2  # sliding and full layers
    assert json.dumps(16777216) in "\n".join(c.value for c in at.code)


def test_chinese():
    from tests.visible_text import run_page_with_sidebar

    at = run_page_with_sidebar(PAGE, {"lang": "zh"})
    assert not at.exception, at.exception
    assert at.title[0].value == "各推理引擎实际计算什么"
    assert "truncate = false 未被读取：SGLang" in markdown(at)
    assert list(at.dataframe[0].value.columns)[:2] == ["引擎", "版本"]
