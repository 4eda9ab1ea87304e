"""The hybrid-models page, run with AppTest at its defaults, its extremes and a garbage URL; the numbers its prose
states are checked against values worked out by hand here."""

from __future__ import annotations

import math

import pytest

from tests.conftest import chart_figures, figure_titled, run_whole_page

PAGE = "app_pages/hybrid.py"


def prose(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def turning(base: float, head_dim: int, window: int) -> int:
    """Pairs with 2π·b^(2i/d) ≤ W − 1, counted one by one."""
    return sum(2 * math.pi * base ** (2 * i / head_dim) <= window - 1 for i in range(head_dim // 2))


def scale(position: int, floor_scale: int = 8192, attn_scale: float = 0.1) -> float:
    return 1 + attn_scale * math.log(1 + (position + 1) // floor_scale)


@pytest.fixture(scope="module")
def default_page():
    at = run_whole_page(PAGE)
    assert not at.exception
    return at


def test_defaults_state_the_window_counts(default_page):
    text = prose(default_page)
    assert f"**{turning(1e4, 128, 1024)} of 64** pairs" in text and "**36 of 64**" in text
    assert f"only **{turning(1e6, 128, 1024)}**" in text
    assert f"turns {1023 * 1e4 ** (-126 / 128) / (2 * math.pi):.4f} of a turn" in text
    # Gemma 3 27B's config: 62 layers, a full one every sixth
    assert "52 sliding layers over 1,024 tokens at base 10,000, unscaled; 10 full-attention layers" in text
    assert "linear ×8" in text


def test_defaults_state_the_nope_layers_and_the_plan(default_page):
    text = prose(default_page)
    assert "**16 of its 64**" in text and "**12 of 48**" in text
    assert "full_attention (no RoPE), 16 of 64 layers: unchanged" in text
    roles = figure_titled(default_page, "What each model's layers do")
    nope = next(t for t in roles["data"] if t["meta"]["role"] == "nope")
    exaone = list(nope["y"]).index("EXAONE 4.0 32B")
    assert nope["x"][exaone] == pytest.approx(25.0)


def test_defaults_state_the_temperature(default_page):
    text = prose(default_page)
    for position in (8191, 131_071, 1_048_575, 10_485_759):
        assert f"**×{scale(position):.4f}** at" in text
    plain = 1 / (1 + 1_048_575 * math.exp(-8))
    tuned = 1 / (1 + 1_048_575 * math.exp(-8 * scale(1_048_575)))
    assert f"{plain:.4f} at n = 1,048,576" in text and f"**{tuned:.4f}**" in text
    assert len(chart_figures(default_page)) == 4


@pytest.mark.parametrize("query, local, glob, head_dim, window", [
    ({"d": "64", "w": "128", "bl": "100", "bg": "10,000,000", "fs": "1,024", "as": "0.05", "gap": "4",
      "model": "Qwen3-Next-80B-A3B"}, 100.0, 1e7, 64, 128),
    ({"d": "256", "w": "8,192", "bl": "10,000,000", "bg": "100", "fs": "32,768", "as": "0.3", "gap": "12",
      "model": "Gemma 4 26B-A4B"}, 1e7, 100.0, 256, 8192),
])
def test_extremes(query, local, glob, head_dim, window):
    at = run_whole_page(PAGE, query)
    assert not at.exception
    text = prose(at)
    assert f"**{turning(local, head_dim, window)} of {head_dim // 2}** pairs" in text
    assert f"only **{turning(glob, head_dim, window)}**" in text
    assert len(chart_figures(at)) == 4


def test_another_models_extension_lines():
    at = run_whole_page(PAGE, {"model": "Qwen3-Next-80B-A3B"})
    assert not at.exception
    text = prose(at)
    assert "full_attention, 12 of 48 layers: changed" in text
    assert "linear_attention (no RoPE), 36 of 48 layers: unchanged" in text


def test_a_bad_link_falls_back_to_the_defaults():
    at = run_whole_page(PAGE, {"w": "banana", "model": "no such model", "gap": "-3"})
    assert not at.exception
    assert "**36 of 64**" in prose(at)
