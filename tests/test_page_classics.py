"""AppTests of the three pages from the classic write-ups: lineage, RoPE in code, caveats."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import figure_titled, run_whole_page
from tests.tables import shown_tables

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LINEAGE, CODE, CAVEATS = "app_pages/lineage.py", "app_pages/rope_code.py", "app_pages/caveats.py"


def page_text(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def assert_clean(at, titles) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    for title in titles:
        figure_titled(at, title)


LINEAGE_TITLES = ("The four terms", "What each scheme does", "What position information", "Which row of its table",
                  "How alike two positions look")


def test_lineage_defaults():
    at = run_whole_page(LINEAGE)
    assert_clean(at, LINEAGE_TITLES)
    text = page_text(at)
    assert "offset beyond $k = 4$ reads the same row (9 rows in all)" in text
    assert "On ±300: Shaw reads 9 rows, T5 31, DeBERTa as in the paper 16, and DeBERTa-v2's log buckets 415 of its 512" \
           in text
    assert "BERT's 512 positions become 262,144" in text and "(66% of this token's is not)" in text
    assert "the 3 positions nearest each edge do (6 of 64 here)" in text
    assert not at.warning
    positions = figure_titled(at, "What position information")
    assert [t["name"] for t in positions["data"]] == ["Absolute (sinusoidal p added)", "Shaw et al. 2018",
                                                      "Transformer-XL / XLNet", "T5", "DeBERTa", "TUPE"]
    for trace in positions["data"]:
        assert np.abs(np.asarray(trace["z"], dtype=float)).max() == pytest.approx(1.0)


def test_lineage_url_settings_reach_the_figures():
    at = run_whole_page(LINEAGE, {"n": "64", "tok": "a different random token at each position", "k": "16", "r": "1000",
                            "alpha": "0.5", "pad": "circular (wrap around)"})
    assert_clean(at, LINEAGE_TITLES)
    four = figure_titled(at, "The four terms")
    assert np.asarray(four["data"][0]["z"]).shape == (64, 64)
    text = page_text(at)
    assert "(33 rows in all)" in text and "On ±1000: Shaw reads 33 rows" in text
    assert "(0 of 64 here)" in text  # circular padding: no edge to read
    assert "this view has 14 colliding pairs" in text


def test_lineage_garbage_url_falls_back_with_a_note():
    at = run_whole_page(LINEAGE, {"n": "17", "tok": "banana", "alpha": "2"})
    assert not at.exception
    assert len(at.warning) >= 3
    assert_clean(at, LINEAGE_TITLES)


CODE_TITLES = ("Each pair", "The two code forms", "Attention scores of one query")


def test_rope_code_defaults_is_the_d8_example():
    at = run_whole_page(CODE)
    assert_clean(at, CODE_TITLES)
    assert any("agrees exactly" in s.value for s in at.success)
    assert any("θᵢ = 10,000^(−2i/8) for i = 0 … 3: 1, 0.1, 0.01, 0.001" in c.value for c in at.caption)
    codes = [c.value for c in at.code]
    assert any("def precompute_freqs_cis" in c for c in codes) and any("def rotate_half" in c for c in codes)
    forms = figure_titled(at, "The two code forms")
    complex_out = np.asarray(forms["data"][1]["y"], dtype=float)
    half_out = np.asarray(forms["data"][2]["y"], dtype=float)
    assert np.array_equal(complex_out, half_out)
    assert complex_out[:2] == pytest.approx([np.cos(3) - 2 * np.sin(3), np.sin(3) + 2 * np.cos(3)], abs=1e-12)
    complex_form, half_form, side_by_side = shown_tables(at)
    assert complex_form.columns == ["pair i", "freqs_cis", "x₂ᵢ + i·x₂ᵢ₊₁", "output"] and len(complex_form.rows) == 4
    assert [row[0] for row in half_form.rows] == [str(i) for i in range(8)]
    # pair 0 at m = 3: θ₀ = 1, so the angle is 3 and the output is the first pair (1, 2) turned by 3 radians
    assert side_by_side.rows[0][1:3] == ["1.0", "3.0"]
    assert side_by_side.rows[0][5] == f"({np.cos(3) - 2 * np.sin(3):.17g}, {np.sin(3) + 2 * np.cos(3):.17g})"
    assert [row[-1] for row in side_by_side.rows] == ["0.0"] * 4


def test_rope_code_user_changes_d_and_position():
    at = run_whole_page(CODE, {"d": "128", "m": "1000000", "x": "random x (seeded)"})
    assert_clean(at, CODE_TITLES)
    forms = figure_titled(at, "The two code forms")
    difference = np.asarray(forms["data"][3]["y"], dtype=float) * 1e-16
    assert np.abs(difference).max() <= 1e-12
    assert "pair 63" in str(figure_titled(at, "Each pair")["layout"])


def test_rope_code_one_pair_needs_no_permutation():
    at = run_whole_page(CODE, {"d": "2"})
    assert_clean(at, CODE_TITLES)
    assert "single pair" in page_text(at)


CAVEAT_TITLES = ("Dynamic NTK with cached rotated keys", "Which cached keys", "NTK-aware at L′", "How far each setting",
                 "The position PI feeds", "ReRoPE's FLOPs")


def test_caveats_defaults():
    at = run_whole_page(CAVEATS)
    assert_clean(at, CAVEAT_TITLES)
    text = page_text(at)
    assert "32,767 of the 32,768 cached keys were rotated with an older base" in text
    assert "the base has grown from 10,000 to 82,685" in text
    assert "With s = 8, 17 pairs go beyond their trained angles, the worst (pair i₀ = 46" in text
    assert "needs s = 17.25" in text and "only safe up to L′/L = 4.565" in text
    assert "L′ = 32,768 lands on L = 4,096" in text and "send L′ to 262,144, 64 times further" in text
    assert "encoding 4,096 tokens costs 1.071× RoPE and each generated token 1.107×" in text
    assert "at 131,072 tokens 1.421× and 1.632×" in text
    assert "relative positions up to 28,912" in text
    assert "off by 1.33 of their own RMS (closed form 1.29)" in text
    kv = figure_titled(at, "Dynamic NTK with cached rotated keys")
    expected = np.asarray(kv["data"][0]["y"], dtype=float)
    assert expected[0] == 0 and expected[-1] > 1.2


def test_caveats_url_settings():
    at = run_whole_page(CAVEATS, {"rho": "2×", "nd": "256", "p": "2×", "s": "2×", "D": "768"})
    assert_clean(at, CAVEAT_TITLES)
    text = page_text(at)
    assert "With s = 2," in text
    kv = figure_titled(at, "Dynamic NTK with cached rotated keys")
    assert np.asarray(kv["data"][0]["x"]).min() == 8192  # the prompt is 2L: the curve starts there
