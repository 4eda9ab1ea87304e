"""The multimodal RoPE page, run with AppTest at its defaults, its extremes and a garbage URL; the numbers its prose
states are checked against values worked out by hand here."""

from __future__ import annotations

import math

import pytest

from tests.conftest import chart_figures, figure_titled, run_whole_page

PAGE = "app_pages/mrope.py"


def prose(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


@pytest.fixture(scope="module")
def default_page():
    at = run_whole_page(PAGE)
    assert not at.exception
    return at


def test_defaults_state_the_widths_and_the_resumed_position(default_page):
    text = prose(default_page)
    # Qwen2.5-VL: base 10⁶, d = 128, width's fastest pair is pair 40: λ = 2π·10^(6·40/64)
    chunked = 2 * math.pi * 10 ** (6 * 40 / 64)
    assert f"{chunked:,.0f} tokens" in text
    assert f"turns {23 / chunked:.4f} of a turn" in text
    # Qwen3-VL: base 5·10⁶, width's fastest pair is pair 2: λ = 2π·(5·10⁶)^(4/128)
    interleaved = 2 * math.pi * 5e6 ** (4 / 128)
    assert f"{interleaved:.1f} tokens and it turns {23 / interleaved:.2f} times" in text
    # 4 text tokens, a 4 × 6 image, 3 text tokens: the text resumes at 4 + 6 = 10, the last token is at 12
    assert "= **10**" in text and "position is **12**, where plain RoPE would give 30" in text
    assert len(chart_figures(default_page)) == 4


def test_defaults_draw_the_positions(default_page):
    figure = figure_titled(default_page, "Three positions per token")
    width = next(t for t in figure["data"] if t.get("meta", {}).get("axis") == 2)
    assert list(width["y"][4:10]) == [4, 5, 6, 7, 8, 9]
    assert list(width["y"][-3:]) == [10, 11, 12]
    pairs = figure_titled(default_page, "Which pairs rotate")
    first_row = [int(v) for v in pairs["data"][0]["z"][0]]
    assert first_row[:16] == [0] * 16 and first_row[16:40] == [1] * 24 and first_row[40:64] == [2] * 24


@pytest.mark.parametrize("query, resume, last, plain", [
    ({"before": "0", "gh": "16", "gw": "24", "after": "0"}, 24, 23, 383),
    ({"before": "32", "gh": "1", "gw": "1", "after": "32"}, 33, 64, 64),
])
def test_extremes(query, resume, last, plain):
    at = run_whole_page(PAGE, query)
    assert not at.exception
    text = prose(at)
    assert f"= **{resume}**" in text
    assert f"position is **{last}**, where plain RoPE would give {plain}" in text
    assert len(chart_figures(at)) == 4


def test_a_bad_link_falls_back_to_the_defaults():
    at = run_whole_page(PAGE, {"gh": "banana", "gw": "999"})
    assert not at.exception
    assert "position is **12**" in prose(at)
