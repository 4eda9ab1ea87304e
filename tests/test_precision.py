"""Low-precision positions: exact counts, collisions and RoPE errors, checked against independent references.

The references do not use the code under test: bfloat16 exactness comes from float32 bit patterns
(a float32 integer survives bfloat16 exactly when its low 16 bits are zero), float16 from numpy's own
float16, and the closed forms from the significand width p = 1 − log2(torch.finfo(dtype).eps).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from figures.precision import VALUE_COLOURS
from figures.theme import SERIES_STYLES
from lessons import precision as lesson
from pe_core import RopeSpec, rope_frequencies
from pe_core import precision as pp
from pe_core.rope import positions_tensor

ALL = pp.PRECISION_DTYPES
LESSON = lesson.LESSON
TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
                "float64": torch.float64}


def finfo_bits(name: str) -> int:
    return 1 - int(round(math.log2(torch.finfo(TORCH_DTYPES[name]).eps)))


def closed_form_exact_count(length_exponent: int, bits: int) -> int:
    """Exact integers among 0 .. 2^K − 1: all 2^p below 2^p, then 2^(p−1) in each further binade."""
    if length_exponent <= bits:
        return 2**length_exponent
    return 2**bits + (length_exponent - bits) * 2 ** (bits - 1)


def bfloat16_exact_by_bits(positions: np.ndarray) -> np.ndarray:
    """For integers below 2^24 (exact in float32): exact in bfloat16 iff the float32 low 16 bits are zero."""
    bits = positions.astype(np.float32).view(np.uint32)
    return (bits & 0xFFFF) == 0


def float16_stored_by_numpy(positions: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return positions.astype(np.float64).astype(np.float16).astype(np.float64)


# --- the pinned numbers ---------------------------------------------------------------------


def test_bfloat16_at_8192_has_896_exact_positions():
    count = int(pp.exact_position_counts([8192], "bfloat16")[0])
    assert count == 896  # the pin
    assert count == closed_form_exact_count(13, finfo_bits("bfloat16"))
    assert count == int(bfloat16_exact_by_bits(np.arange(8192)).sum())
    assert pp.exact_position_fraction(8192, torch.bfloat16) == pytest.approx(896 / 8192)
    # "about 10%": 10.9%
    assert 0.10 < pp.exact_position_fraction(8192, "bf16") < 0.11


def test_first_inexact_positions_pinned_and_from_finfo():
    assert pp.first_inexact_position("bfloat16") == 257
    assert pp.first_inexact_position("float16") == 2049
    for name in ALL:
        assert pp.first_inexact_position(name) == 2 ** finfo_bits(name) + 1
        assert pp.significand_bits(name) == finfo_bits(name)


def test_first_inexact_matches_brute_force_for_16_bit_types():
    positions = np.arange(4096)
    assert int(positions[~bfloat16_exact_by_bits(positions)][0]) == pp.first_inexact_position("bfloat16")
    float16_exact = float16_stored_by_numpy(positions) == positions
    assert int(positions[~float16_exact][0]) == pp.first_inexact_position("float16")


def test_float16_overflows_at_65520_and_others_do_not_within_reach():
    with np.errstate(over="ignore"):
        assert np.isfinite(np.float16(65519.0)) and np.isinf(np.float16(65520.0))
    largest = torch.finfo(torch.float16).max
    assert pp.first_overflow_position("float16") == 65520 == largest + 16  # half of the top binade's gap of 32
    assert pp.first_overflow_position("bfloat16") is None
    assert pp.first_overflow_position("float32") is None


@pytest.mark.parametrize("name", ALL)
def test_round_trip_counts_follow_the_closed_form_at_powers_of_two(name):
    exponents = list(range(0, 21))
    counts = pp.exact_position_counts([2**k for k in exponents], name)
    expected = [closed_form_exact_count(k, finfo_bits(name)) for k in exponents]
    if name == "float16":  # nothing from 65,520 on is finite
        expected = [min(c, closed_form_exact_count(16, finfo_bits(name))) for c in expected]
    assert counts.tolist() == expected


@pytest.mark.parametrize("name", ALL)
def test_spacing_counts_equal_round_trip_counts(name):
    lengths = torch.unique(torch.cat([
        torch.randint(1, 1 << 21, (200,), generator=torch.Generator().manual_seed(1)),
        torch.tensor([1, 2, 255, 256, 257, 258, 2048, 2049, 65504, 65519, 65520, 65521, 1 << 21]),
    ]))
    assert torch.equal(pp.exact_position_counts_from_spacing(lengths, name), pp.exact_position_counts(lengths, name))


def test_spacing_counts_see_float32_collisions_past_2_to_24():
    low, high = (1 << 24) - (1 << 12), (1 << 24) + (1 << 12)
    in_window = int(pp.exact_mask(torch.arange(low, high), "float32").sum())
    by_spacing = pp.exact_position_counts_from_spacing([low, high], "float32")
    assert int(by_spacing[1] - by_spacing[0]) == in_window == (1 << 12) + (1 << 11)


def test_binade_spacing_is_eps_times_the_binade_start():
    for name in ALL:
        spacing = pp.binade_spacing(name, max_exponent=20)
        expected = torch.finfo(TORCH_DTYPES[name]).eps * 2.0 ** spacing.exponents.to(torch.float64)
        if name == "float16":
            assert torch.isinf(spacing.spacing[16:]).all()
            assert torch.allclose(spacing.spacing[:16], expected[:16], rtol=0)
        else:
            assert torch.allclose(spacing.spacing, expected, rtol=0)


# --- collisions -------------------------------------------------------------------------------


def test_collision_summary_at_8192_against_numpy_and_closed_forms():
    bits = finfo_bits("bfloat16")
    summary = pp.collision_summary(8192, "bfloat16")
    stored = positions_tensor(range(8192)).to(torch.bfloat16).float().numpy()
    sizes = np.unique(stored, return_counts=True)[1]
    assert summary.exact == 896
    assert summary.distinct == len(sizes)
    assert summary.largest_group == sizes.max() == 2 ** (12 - bits + 1) + 1  # gap 32 in [4096, 8192), ties to even
    assert summary.overflowed == 0 and summary.first_inexact == 257
    half = pp.collision_summary(8192, "float16")
    assert half.exact == int((float16_stored_by_numpy(np.arange(8192)) == np.arange(8192)).sum()) == 4096


def test_float16_overflow_is_counted_not_hidden():
    summary = pp.collision_summary(70_000, "float16")
    stored = float16_stored_by_numpy(np.arange(70_000))
    assert summary.overflowed == int(np.isinf(stored).sum()) == 70_000 - 65_520
    assert summary.distinct == len(np.unique(stored))  # inf counted once
    assert summary.largest_group == 33  # gap 32 at the top binade: groups of 33 and 31


@pytest.mark.parametrize("name,length", [("bfloat16", 70_001), ("float16", 70_000), ("float32", 5000),
                                         ("bfloat16", 1 << 16)])
def test_collision_summary_is_the_same_in_small_chunks(monkeypatch, name, length):
    whole = pp.collision_summary(length, name)
    monkeypatch.setattr(pp, "CHUNK", 997)  # odd, so runs straddle chunk boundaries
    assert pp.collision_summary(length, name) == whole
    assert int(pp.exact_position_counts([length], name)[0]) == whole.exact


def test_ties_to_even_make_groups_alternate_gap_plus_and_minus_one():
    window = pp.collision_window(520, 480, "bfloat16")  # inside [512, 1024): gap 4
    sizes = torch.bincount(window.group)[1:-1].tolist()  # drop the groups cut by the window's edges
    assert set(sizes) == {3, 5}
    assert all(a != b for a, b in zip(sizes, sizes[1:], strict=False))


def test_collision_window_near_float16_overflow_matches_numpy():
    window = pp.collision_window(65_490, 64, "float16")
    expected = float16_stored_by_numpy(window.positions.numpy())
    assert np.array_equal(window.stored.numpy(), expected)
    assert torch.isinf(window.stored).sum() == 65_490 + 64 - 65_520
    assert window.exact.tolist() == (expected == window.positions.numpy()).tolist()
    groups = window.group.numpy()
    assert np.array_equal(np.diff(groups) != 0, expected[1:] != expected[:-1])


def test_bad_inputs_raise_readable_errors():
    with pytest.raises(ValueError, match="dtype"):
        pp.resolve_dtype("int8")
    with pytest.raises(ValueError, match="dtype"):
        pp.resolve_dtype(torch.int32)
    with pytest.raises(ValueError, match="positive integer"):
        pp.exact_position_fraction(0, "bf16")
    with pytest.raises(ValueError, match="at most"):
        pp.collision_summary(pp.MAX_ANALYSED_LENGTH + 1, "bf16")
    with pytest.raises(ValueError, match="order"):
        pp.check_order("nonsense")
    with pytest.raises(ValueError, match="order"):
        pp.rope_cos_sin(torch.ones(2), torch.arange(3), "nonsense", "bf16")


# --- RoPE ---------------------------------------------------------------------------------------


def test_error_positions_sample_does_not_alias_with_the_gaps():
    assert torch.equal(pp.error_positions(100, max_points=1000), torch.arange(100))
    length = 1 << 20
    sample = pp.error_positions(length)
    assert sample[0] == 0 and sample[-1] == length - 1 and torch.all(sample[1:] > sample[:-1])
    assert len(sample) <= 16_384 + 2
    rounding = (pp.stored_positions(sample, "bfloat16") - sample.double()).abs()
    gap = pp.binade_spacing("bfloat16", 21).spacing[sample.clamp(min=1).double().log2().floor().long()]
    top = sample >= 1 << 19
    assert (rounding[top] == 0).float().mean() < 0.01  # an even stride would have hit only exact positions
    assert (rounding[top] / gap[top]).max() > 0.49  # and the worst rounding (half a gap) is reached


def test_position_rounding_error_is_rounding_times_theta():
    inv_freq = rope_frequencies(RopeSpec(head_dim=16, base=10_000.0)).inv_freq
    positions = torch.arange(2000, 2600)
    cos, sin = pp.rope_cos_sin(inv_freq, positions, "positions", "bfloat16")
    rounded = torch.from_numpy(positions.numpy().astype(np.float32).view(np.uint32)).to(torch.int64)
    rounded = ((rounded + 0x7FFF + ((rounded >> 16) & 1)) & ~0xFFFF).to(torch.int32).numpy().view(np.float32)
    expected_angle = torch.outer(torch.from_numpy(rounded).double(), inv_freq)  # RNE to bfloat16, by hand
    assert torch.allclose(torch.atan2(sin, cos), torch.atan2(expected_angle.sin(), expected_angle.cos()), atol=5e-3)


def test_error_bounds_from_the_page_hold():
    spec = RopeSpec(head_dim=64, base=10_000.0)
    inv_freq = rope_frequencies(spec).inv_freq
    length = 8192
    result = pp.rope_precision_error(inv_freq, length, "bfloat16", orders=("safe", "inv_freq", "cos_sin"))
    bits = finfo_bits("bfloat16")
    m = result.positions.double()
    float32_slack = 1e-3  # the float32 angle itself is off by up to half float32's gap at m·θ (< 5e-4 here)
    theta_bound = (m.unsqueeze(1) * inv_freq * 2.0**-bits).amax(1)
    assert torch.all(result.max_angle_error[1] <= torch.clamp(theta_bound, max=math.pi) + float32_slack)
    # cos/sin each off by ≤ 2^−p: the angle of (cos, sin) moves by at most about √2·2^−p
    assert result.max_angle_error[2].max() <= math.sqrt(2) * 2.0**-bits + float32_slack
    assert result.max_angle_error[0].max() < float32_slack


def test_errors_at_8192_tell_the_orders_apart():
    inv_freq = rope_frequencies(RopeSpec(head_dim=128)).inv_freq
    result = pp.rope_precision_error(inv_freq, 8192, "bfloat16")
    by_order = dict(zip(result.orders, result.max_angle_error, strict=True))
    exact_part = torch.arange(257)
    assert torch.equal(by_order["positions"][exact_part], by_order["safe"][exact_part])  # positions ≤ 256 are exact
    assert by_order["positions"][4096:].max() > 3.0  # rounding by up to 16 at θ_0 = 1: the angle is noise
    assert by_order["all_low"].max() > 3.0
    assert by_order["cos_sin"].max() < 0.01 < by_order["inv_freq"].max()
    logits = dict(zip(result.orders, result.logit_error, strict=True))
    assert logits["safe"].max() < 1e-3 < logits["cos_sin"].max() < 0.1 < logits["positions"].max()
    # a key at the query's own position is rotated like the query: rounded θ or positions cancel there
    assert logits["inv_freq"][-1] < 1e-3 and logits["positions"][-1] < 1e-3
    assert result.angle_error_map.shape == (5, 200, 64)
    assert torch.allclose(result.angle_error_map.amax(2).amax(1), result.max_angle_error.amax(1))


def test_float16_overflow_reaches_rope_as_inf():
    inv_freq = rope_frequencies(RopeSpec(head_dim=16)).inv_freq
    result = pp.rope_precision_error(inv_freq, 70_000, "float16", orders=("safe", "positions", "cos_sin"))
    beyond = result.positions >= 65_520
    assert beyond.any()
    assert torch.isinf(result.max_angle_error[1][beyond]).all()
    assert torch.isfinite(result.max_angle_error[1][~beyond]).all()
    assert torch.isinf(result.logit_error[1]).all()  # the query itself sits past the overflow
    assert torch.isfinite(result.max_angle_error[0]).all() and torch.isfinite(result.logit_error[2]).all()


# --- figures --------------------------------------------------------------------------------------


def test_max_envelope_keeps_every_peak_and_breaks_at_overflow():
    from figures.precision import max_envelope

    values = np.zeros(100_000)
    values[77_777] = 5.0
    values[90_000:] = np.inf
    x, y = max_envelope(np.arange(100_000), values, max_points=1000)
    assert len(x) <= 1000 and len(y) == len(x)
    assert np.nanmax(y) == 5.0
    assert np.isnan(y[-1]) and not np.isnan(y[0])


# --- the lesson: figures and the numbers the page states -------------------------------------------


def test_every_figure_draws_the_computed_values():
    settings = LESSON.settings.from_mapping({"scale": 1.0, "zoom_start": 65_500, "zoom_dtype": "float16",
                                             "low_dtype": "float16"})
    figures = LESSON.all_figures(settings)
    assert list(figures) == ["exact-fraction", "binade-spacing", "collision-window", "angle-error", "angle-error-map",
                             "logit-error", "layer-map"]
    for figure in figures.values():
        assert figure.layout.title.text
    fraction = figures["exact-fraction"]
    bf16 = next(t for t in fraction.data if t.name.startswith("bfloat16"))
    at_8192 = np.asarray(bf16.y)[np.asarray(bf16.x) == 8192]
    assert at_8192 == pytest.approx(100 * 896 / 8192)
    assert bf16.line.color == SERIES_STYLES["bfloat16"].colour and bf16.line.dash == SERIES_STYLES["bfloat16"].dash
    for trace in fraction.data + figures["binade-spacing"].data:
        if isinstance(trace.meta, dict) and "dtype" in trace.meta:
            style = SERIES_STYLES[trace.meta["dtype"]]
            assert (trace.line.color or trace.marker.color) == style.colour
    window = figures["collision-window"]
    overflow = next(t for t in window.data if t.name.startswith("overflow"))
    assert list(overflow.x) == list(range(65_520, 65_532))
    assert len(figures["angle-error"].data) == len(pp.ORDERS)
    assert "float16" in figures["angle-error-map"].layout.title.text
    with pytest.raises(ValueError, match="valid keys"):
        LESSON.settings.from_mapping({"nonsense": 1})
    assert LESSON.settings().scale * LESSON.settings().train_length == 8192


def value_traces(figure) -> list:
    return [t for t in figure.data if isinstance(t.meta, dict) and "stored" in t.meta]


@pytest.mark.parametrize("start, width, dtype", [(248, 32, "bfloat16"), (300, 256, "bfloat16"),
                                                 (65_400, 256, "float16"), (16_777_200, 64, "float32"),
                                                 (600, 64, "bfloat16")])
def test_collision_chart_gives_every_stored_value_its_own_colour(start, width, dtype):
    settings = LESSON.settings.from_mapping({"zoom_start": start, "zoom_width": width, "zoom_dtype": dtype})
    figure = LESSON.figure("collision-window", settings)
    positions = np.arange(start, start + width)
    with np.errstate(over="ignore"):
        stored = torch.from_numpy(positions).to(TORCH_DTYPES[dtype]).double().numpy()
    values, counts = np.unique(stored[np.isfinite(stored)], return_counts=True)
    shared = values[counts > 1]
    traces = value_traces(figure)
    # one trace per stored value that several positions share, in order, each at its value's height
    assert [t.meta["stored"] for t in traces] == shared.tolist()
    for trace, value in zip(traces, shared, strict=True):
        assert set(np.asarray(trace.y).tolist()) == {value}
        assert np.array_equal(np.asarray(trace.x), positions[stored == value])
        assert f"{value:,.0f}" in trace.name and f"stored {value:,.0f}" in trace.hovertemplate
        assert trace.line.color == trace.marker.color
    colours = [t.line.color for t in traces]
    # neighbouring values never share a colour; colours cycle through the palette, so any run of
    # len(VALUE_COLOURS) consecutive values are all different
    cycle = len(VALUE_COLOURS)
    for low in range(len(colours)):
        run = colours[low:low + cycle]
        assert len(set(run)) == len(run)
    assert set(colours) <= set(VALUE_COLOURS)
    # the legend names each value when it fits, else one entry explains the colours
    if len(traces) <= 12:
        assert all(t.showlegend is not False for t in traces)
    else:
        assert all(t.showlegend is False for t in traces)
        assert any(t.name.startswith(f"{len(traces)} stored values shared") for t in figure.data)


def test_the_default_window_shows_six_values_in_six_colours():
    traces = value_traces(LESSON.figure("collision-window"))
    assert [t.name for t in traces] == ["256 ← positions 256–257", "260 ← positions 259–261",
                                        "264 ← positions 263–265", "268 ← positions 267–269",
                                        "272 ← positions 271–273", "276 ← positions 275–277"]
    assert len({t.line.color for t in traces}) == 6


def test_numbers_the_page_states():
    marks = lesson.landmarks()
    assert marks.first_inexact == 257 and marks.next_exact == 258 and marks.first_gap == 2
    assert marks.step_two_until == 512 and marks.next_gap == 4
    assert marks.tie_sizes == (1, 3) and marks.tie_sizes_next == (3, 5)  # gap ∓ 1, ties to even
    assert (marks.length, marks.exact, marks.largest) == (8192, 896, 33)
    assert round(100 * marks.fraction, 1) == 10.9
    assert marks.long_length == 1 << 20 and marks.largest_long == 4097
    assert marks.float32_half_gap_near_million == 2.0 ** (19 - 23) / 2 == 0.03125
    facts = lesson.dtype_facts()
    assert facts.bits == {"bfloat16": 8, "float16": 11, "float32": 24, "float64": 53}
    assert facts.float16_largest == 65_504 and facts.float16_overflow == 65_520
    assert facts.first_inexact["float32"] == 2**24 + 1
    assert lesson.FLOAT16_EDGE_VIEW["zoom_start"] == 65_490 and lesson.FLOAT32_EDGE_VIEW["zoom_start"] == 16_777_200
    r = LESSON.result()
    assert r.length == 8192 and r.power_of_two_check == (13, 8, 896, 896, 896 / 8192)
    assert r.window_groups == (6, 3, 0)
    assert r.cos_sin_bound == 2.0**-8 and not r.sampled
    assert r.positions_per_row == 8192 // 200 == 40
    assert r.analysed.method == "direct" and r.order_titles["all_low"].startswith("everything in bfloat16")
    assert LESSON.result(LESSON.settings.from_mapping({"scale": 1.5})).power_of_two_check is None


def test_one_method_is_analysed_and_a_model_is_its_own():
    with pytest.raises(ValueError, match="at most 1"):
        LESSON.settings.from_mapping({"methods": ("direct", "pi")})
    pi = LESSON.result(LESSON.settings.from_mapping({"methods": ("pi",)}))
    assert pi.analysed.method == "pi"
    model = LESSON.result(LESSON.settings.from_mapping({"source": "preset", "preset": "Llama-3.1-8B",
                                                        "methods": ("pi",)}))
    assert model.analysed.method == "model" and model.length == 131_072
