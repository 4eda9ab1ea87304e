"""The low-precision positions page, run with AppTest at its defaults, its extremes and with a garbage URL;
every number its prose states is checked against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pe_core import precision as pp
from tests.conftest import figure_titled, run_whole_page

PAGE = "app_pages/precision.py"
FRACTION = "Share of positions"
SPACING = "Gap between neighbouring"
ANGLE = "RoPE angle error"
HEATMAP = "Angle error per pair"
LOGIT = "Attention-logit error"


def trace(figure: dict, name_start: str) -> dict:
    matches = [t for t in figure["data"] if str(t.get("name", "")).startswith(name_start)]
    assert len(matches) == 1, f"expected one trace named like {name_start!r}, found {len(matches)}"
    return matches[0]


def table_row(at, dtype: str) -> dict:
    frame = at.dataframe[0].value
    return frame.loc[dtype].to_dict()


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def prose(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def bfloat16_by_hand(positions: np.ndarray) -> np.ndarray:
    """Integers below 2^24 rounded to bfloat16 from their float32 bits (round to nearest, ties to even)."""
    bits = positions.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)


def value_groups(figure: dict) -> dict[float, list[int]]:
    """Stored value -> the positions its trace draws (one trace per value that several positions share)."""
    return {t["meta"]["stored"]: np.asarray(t["x"]).tolist() for t in figure["data"]
            if isinstance(t.get("meta"), dict) and "stored" in t["meta"]}


@pytest.fixture(scope="module")
def default_page():
    at = run_whole_page(PAGE)
    assert not at.exception
    return at


def test_defaults_show_the_pinned_counts(default_page):
    at = default_page
    assert not at.warning and not at.error
    row = table_row(at, "bfloat16")
    assert row["exact positions"] == "896 of 8,192" and row["first inexact position"] == "257"
    assert row["largest collision group"] == 33
    assert table_row(at, "float16")["first inexact position"] == "2,049"
    assert table_row(at, "float32")["exact (%)"] == 100
    fraction = figure_titled(at, FRACTION)
    bf16 = trace(fraction, "bfloat16")
    x, y = np.asarray(bf16["x"]), np.asarray(bf16["y"])
    assert x.max() >= 1e6 and fraction["layout"]["xaxis"]["type"] == "log"
    assert y[x == 8192] == pytest.approx(100 * 896 / 8192)
    assert y[x <= 256].min() == 100 and y[x == 512] == pytest.approx(100 * 384 / 512)
    markers = [t for t in fraction["data"] if t.get("mode") == "markers+text"]
    assert any(t["text"] == ["10.9%"] for t in markers)
    texts = " ".join(a.get("text", "") for a in fraction["layout"]["annotations"])
    assert "65,520 → inf" in texts
    assert any("896" in m.value and "the same as" in m.value for m in at.markdown)


def test_every_number_in_the_default_prose_is_the_computed_one(default_page):
    text = prose(default_page)
    bits = {name: 1 - int(round(math.log2(float(np.finfo(dtype).eps)))) for name, dtype in
            (("float16", np.float16), ("float32", np.float32), ("float64", np.float64))}
    bits["bfloat16"] = 8  # bfloat16 keeps float32's exponent and the top 7 stored bits: p = 8
    stored = np.arange(8192).astype(np.float32).view(np.uint32)
    exact = int(((stored & 0xFFFF) == 0).sum())
    assert exact == 2**8 + (13 - 8) * 2**7 == 896
    assert "above 256 bfloat16 no longer holds every integer" in text
    assert "positions 0 … 8,191 (L′ = 8,192, set in the sidebar)" in text
    assert "bfloat16 gives up (at 257)" in text
    assert f"above {np.finfo(np.float16).max:,.0f} it has no finite numbers, so positions from 65,520 on become" in text
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(65520.0)) and np.isfinite(np.float16(65519.0))
    assert ", ".join(f"{name} {bits[name]}" for name in pp.PRECISION_DTYPES) in text
    assert f"2¹³ = 8,192: 2⁸ + (13 − 8)·2⁷ = **{exact}** exact positions, the same as" in text
    assert f"({exact}, i.e. {100 * exact / 8192:.1f}%)" in text
    assert "258, 260, … 512 are exact, then every 4th" in text and "the first casualty is 257" in text
    largest = {length: np.unique(bfloat16_by_hand(np.arange(length)), return_counts=True)[1].max()
               for length in (8192, 1 << 20)}
    assert f"only 896 of the positions (10.9%) are exact and up to {largest[8192]} neighbouring tokens" in text
    assert f"at L′ = 1,048,576 up to {largest[1 << 20]:,}." in text
    assert "(3, 1, 3, 1 … where the gap is 2; 5, 3, 5, 3 … where it is 4)" in text
    assert f"float16 overflows at 65,520; float32 first collides at {2**24 + 1:,}." in text
    assert f"2⁻ᵖ = {2.0 ** -8:.4f} (bfloat16, p = 8)" in text
    assert f"up to {2.0 ** (19 - 23) / 2:.3f} rad for angles between 2¹⁹ and 2²⁰" in text
    window = bfloat16_by_hand(np.arange(248, 280))
    sizes = np.unique(window, return_counts=True)[1]
    assert f"{(sizes > 1).sum()} stored values in this window are shared by several positions, the most by " \
           f"{sizes.max()}" in text
    assert f"the maximum over about {8192 // 200} consecutive evaluated positions" in text


def test_defaults_spacing_and_zoom(default_page):
    at = default_page
    spacing = figure_titled(at, SPACING)
    bf16 = trace(spacing, "bfloat16")
    gaps = dict(zip(np.asarray(bf16["x"]).tolist(), np.asarray(bf16["y"]).tolist(), strict=True))
    assert gaps[256.0] == 2.0 and gaps[128.0] == 1.0 and gaps[8192.0] == 64.0
    float16 = trace(spacing, "float16")
    assert max(np.asarray(float16["x"])) == 65536.0  # the float16 line stops where its numbers stop
    zoom = figure_titled(at, "Positions 248…279 stored in bfloat16")
    groups = value_groups(zoom)
    assert groups[256] == [256, 257] and groups[260] == [259, 260, 261]
    colours = {t["meta"]["stored"]: t["line"]["color"] for t in zoom["data"] if "stored" in (t.get("meta") or {})}
    assert len(set(colours.values())) == len(colours) == 6  # each stored value its own colour
    alone = np.asarray(trace(zoom, "a value of its own")["x"]).tolist()
    assert 255 in alone and 258 in alone and 257 not in alone


def test_defaults_rope_errors(default_page):
    at = default_page
    angle = figure_titled(at, ANGLE)
    assert len(angle["data"]) == len(pp.ORDERS)
    safe = np.asarray(trace(angle, "safe")["y"])
    positions_line = trace(angle, "positions cast to bfloat16")
    x, rounded = np.asarray(positions_line["x"]), np.asarray(positions_line["y"])
    assert safe.max() < 1e-3
    assert rounded[x >= 4096].max() > 3.0  # the angle is noise: within π of anything
    assert rounded[x < 200].max() < 1e-3  # positions below 257 are exact
    heatmap = figure_titled(at, HEATMAP)
    assert "everything in bfloat16" in heatmap["layout"]["title"]["text"]
    z = np.asarray(heatmap["data"][0]["z"])
    assert z.shape == (200, 64) and z.max() > math.log10(3.0)
    logit = figure_titled(at, LOGIT)
    assert "8,191" in logit["layout"]["title"]["text"]
    assert np.asarray(trace(logit, "safe")["y"]).max() < 1e-3
    assert np.asarray(trace(logit, "positions cast")["y"]).max() > 0.1


def test_smallest_settings():
    at = run_whole_page(PAGE, {"d": "8", "base": "100", "L": "8", "s": "1×", "zw": "16", "zn": "0"})
    assert not at.exception and not at.warning
    assert table_row(at, "bfloat16")["exact positions"] == "8 of 8"
    angle = figure_titled(at, ANGLE)
    safe, rounded = (np.asarray(trace(angle, name)["y"]) for name in ("safe", "positions cast"))
    assert np.array_equal(safe, rounded)  # 0 … 7 are exact in every dtype
    assert np.asarray(figure_titled(at, HEATMAP)["data"][0]["z"]).shape == (8, 4)
    zoom = figure_titled(at, "Positions 0…15 stored in bfloat16")
    assert np.asarray(trace(zoom, "a value of its own")["x"]).tolist() == list(range(16))
    assert not value_groups(zoom)


def test_heaviest_settings_in_float16_show_overflow():
    at = run_whole_page(PAGE, {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "lp": "float16",
                         "zw": "256", "zn": str(65_400), "zdt": "float16"})
    assert not at.exception and not at.warning
    length = 1 << 20
    row = table_row(at, "float16")
    assert row["overflowed to inf"] == length - 65_520
    assert table_row(at, "bfloat16")["largest collision group"] == 4097
    assert "evaluated at one position from each equal stretch" in captions(at)
    angle = figure_titled(at, ANGLE)
    assert any("overflow" in a.get("text", "") for a in angle["layout"]["annotations"])
    positions_line = trace(angle, "positions cast to float16")
    x, y = np.asarray(positions_line["x"]), np.asarray(positions_line["y"], dtype=float)
    assert np.isnan(y[x > 70_000]).all() and np.isfinite(y[x < 60_000]).all()
    assert len(x) <= 1500
    heatmap = np.asarray(figure_titled(at, HEATMAP)["data"][0]["z"], dtype=float)
    assert heatmap.shape == (200, 128)
    assert np.isnan(heatmap[-1]).all() and np.isfinite(heatmap[0]).all()
    assert "Blank rows: the positions overflowed" in captions(at)
    logit = figure_titled(at, LOGIT)
    assert trace(logit, "positions cast to float16")["name"].endswith("(the query position overflowed)")
    assert np.isfinite(np.asarray(trace(logit, "cos/sin rounded")["y"], dtype=float)).all()
    zoom = figure_titled(at, "Positions 65,400…65,655 stored in float16")
    assert np.asarray(trace(zoom, "overflow")["x"]).min() == 65_520


def test_zoom_into_float32_collisions_past_2_to_24():
    start = 16_777_200
    at = run_whole_page(PAGE, {"zdt": "float32", "zn": str(start), "zw": "64"})
    assert not at.exception and not at.warning
    zoom = figure_titled(at, f"Positions {start:,}…{start + 63:,} stored in float32")
    groups = value_groups(zoom)
    assert min(min(xs) for xs in groups.values()) == 2**24  # 2^24 + 1 ties to even: it joins 2^24
    assert groups[2.0**24] == [2**24, 2**24 + 1]
    positions = np.arange(start, start + 64)
    stored = positions.astype(np.float32)  # numpy's own float32, independent of the page
    _, inverse, counts = np.unique(stored, return_inverse=True, return_counts=True)
    alone = set(positions[counts[inverse] == 1].tolist())
    assert set(np.asarray(trace(zoom, "a value of its own")["x"]).tolist()) == alone
    assert set(range(start, 2**24)) < alone and any(p > 2**24 for p in alone)  # groups of 3 and 1 alternate


def test_another_method_and_heatmap_order_from_the_url():
    at = run_whole_page(PAGE, {"methods": "Position Interpolation", "ho": "θ in low precision"})
    assert not at.exception and not at.warning
    assert any("**Position Interpolation**" in m.value for m in at.markdown)
    assert "θ in bfloat16" in figure_titled(at, HEATMAP)["layout"]["title"]["text"]
    direct = run_whole_page(PAGE, {"ho": "θ in low precision"})
    pi_errors = np.asarray(trace(figure_titled(at, ANGLE), "θ (inv_freq)")["y"])
    direct_errors = np.asarray(trace(figure_titled(direct, ANGLE), "θ (inv_freq)")["y"])
    assert not np.allclose(pi_errors, direct_errors)  # PI's θ/2 rounds differently


def test_garbage_url_values_fall_back_with_a_note():
    at = run_whole_page(PAGE, {"d": "abc", "lp": "int8", "zdt": "nope", "zw": "7", "zn": "xyz", "ho": "bogus",
                         "base": "-1"})
    assert not at.exception
    notes = " ".join(w.value for w in at.warning)
    for label in ("Head dim d", "Low-precision type for RoPE", "Stored as", "Window width w", "First position n",
                  "Order of operations in the heatmap", "Base b"):
        assert label in notes
    assert table_row(at, "bfloat16")["exact positions"] == "896 of 8,192"
    assert figure_titled(at, "Positions 248…279 stored in bfloat16")


def test_a_length_between_powers_of_two_is_marked_exactly():
    at = run_whole_page(PAGE, {"s": "1.5×"})  # L' = 6,144
    assert not at.exception and not at.warning
    bits = np.arange(6144).astype(np.float32).view(np.uint32)
    exact = int(((bits & 0xFFFF) == 0).sum())  # bfloat16 keeps the top 16 bits of a float32
    assert table_row(at, "bfloat16")["exact positions"] == f"{exact:,} of 6,144"
    markers = [t for t in figure_titled(at, FRACTION)["data"] if t.get("mode") == "markers+text"]
    assert any(t["text"] == [f"{100 * exact / 6144:.1f}%"] for t in markers)


def test_a_real_models_rope():
    at = run_whole_page(PAGE, {"src": "A real model", "preset": "Llama-3.1-8B"})
    assert not at.exception and not at.warning
    assert table_row(at, "float16")["overflowed to inf"] == 131_072 - 65_520
    assert any("**Llama-3.1-8B**" in m.value for m in at.markdown)  # the model's own RoPE is analysed
    assert not [w for w in at.get("multiselect") if w.key == "methods"]
    logit = figure_titled(at, LOGIT)
    assert "131,071" in logit["layout"]["title"]["text"]


def test_zoom_at_the_largest_start_where_float16_has_only_inf():
    start = (1 << 24) + 1024  # the page's largest allowed start
    at = run_whole_page(PAGE, {"zdt": "float16", "zn": str(start), "zw": "256"})
    assert not at.exception and not at.warning
    zoom = figure_titled(at, f"Positions {start:,}…{start + 255:,} stored in float16")
    assert len(np.asarray(trace(zoom, "overflow")["x"])) == 256
    assert "256 positions overflow to inf" in captions(at)
    assert not value_groups(zoom)
    too_far = run_whole_page(PAGE, {"zn": str(start + 1)})
    assert any("First position n" in w.value for w in too_far.warning)


def test_the_view_buttons_zoom_to_the_edges():
    at = run_whole_page(PAGE)
    at.button[0].click().run()
    assert not at.exception
    zoom = figure_titled(at, "Positions 65,490…65,553 stored in float16")
    assert np.asarray(trace(zoom, "overflow")["x"]).min() == 65_520
    at.button[1].click().run()
    zoom = figure_titled(at, "Positions 16,777,200…16,777,263 stored in float32")
    assert min(min(xs) for xs in value_groups(zoom).values()) == 2**24


def test_the_sidebars_first_slider_moves_the_first_part():
    """The head dim d heads the sidebar; the part the page opens on states what the collisions do to that head."""
    from benchmarks.harness import run_page

    def head_sentence(at) -> str:
        return next(m.value for m in at.markdown if m.value.startswith("A head of d ="))

    at = run_page(PAGE)  # the first part, as the page opens
    assert "d = 128 rotates 64 pairs" in head_sentence(at)
    assert f"θ₆₃ = {10_000 ** (-126 / 128):.3g}" in head_sentence(at) and "897 of the 8,192" in head_sentence(at)
    next(s for s in at.select_slider if s.label == "Head dim d").set_value(64).run()
    assert "d = 64 rotates 32 pairs" in head_sentence(at) and "θ₃₁" in head_sentence(at)
