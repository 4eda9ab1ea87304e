"""Digits in a real base β, the base-stretch bound, the NTK ↔ β-conversion link, and the lesson's numbers."""

from __future__ import annotations

import math
import re
import time

import mpmath
import numpy as np
import pytest
import torch

from figures.beta_base import CONVERSION_STYLE, resolvable_places, step_corners
from figures.theme import METHOD_STYLES
from lessons import beta_base as lesson
from lessons.beta_base import dial_pairs, formula_checks, sample_numbers, zoom_numbers
from pe_core import RopeSpec, default_inv_freq, ntk_aware_base, rope_frequencies
from pe_core.beta_base import (
    MAX_PLACES,
    compose,
    conversion_stretch,
    converted_base,
    digit_views,
    floor_mod_digits,
    greedy_digits,
    log_stretch_bound,
    minimal_conversion_base,
    ntk_stretch,
    outside_seen_arc,
    pair_phases,
    pair_turns,
    places_needed,
    rope_beta,
    seen_phase_limit,
    stretch_bound,
)

LESSON = lesson.LESSON
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def result(**values) -> lesson.Result:
    return LESSON.result(LESSON.settings.from_mapping(values))


def python_digits(number: int, base: int, places: int) -> list[int]:
    """Schoolbook digits by repeated divmod (units first); the top place keeps any overflow."""
    digits = []
    for _ in range(places - 1):
        number, digit = divmod(number, base)
        digits.append(digit)
    return digits + [number]


# --- digits ----------------------------------------------------------------------------------


@pytest.mark.parametrize("base", [2, 3, 7, 10, 16])
def test_whole_bases_give_schoolbook_digits(base):
    numbers = torch.randint(0, base**6, (300,), generator=torch.Generator().manual_seed(base)).tolist() + [0, base**6 - 1]
    greedy = greedy_digits(numbers, float(base), 6)
    expected = torch.tensor([python_digits(n, base, 6) for n in numbers], dtype=torch.float64)
    assert torch.equal(greedy, expected)
    assert torch.equal(floor_mod_digits(numbers, float(base), 6), expected)


def test_worked_examples_the_page_quotes():
    # 1749 is [6, 13, 5] in base 16; 874.5 is [8, 7, 4.5] in base 10 (top place first).
    assert greedy_digits([1749], 16.0, 3)[0].flip(0).tolist() == [6, 13, 5]
    assert greedy_digits([874.5], 10.0, 3)[0].flip(0).tolist() == [8, 7, 4.5]
    # 2000 needs base ⌈2000^(1/3)⌉ = 13 in three places: 13³ − 1 ≥ 1999 but 12³ − 1 < 1999.
    assert converted_base(10.0, 3, 2.0, whole=True) == 13.0
    assert 13**3 - 1 >= 1999 > 12**3 - 1
    examples = lesson.worked_examples()
    assert examples == (tuple(python_digits(1749, 16, 3)[::-1]), 16**3 - 1, 1999, 13, 12**3 - 1)
    assert examples.base16_top >= examples.needed > examples.below


@pytest.mark.parametrize("beta", [1.001, 1.1547, 1.5, math.e, 2.5, 10 * 2 ** (1 / 3), 37.25])
def test_real_base_digits_are_the_greedy_expansion(beta):
    places = 64 if beta < 1.2 else 8
    top = min(beta**places, 2.0**40)
    numbers = torch.cat([torch.linspace(0, top * 0.999, 400, dtype=torch.float64).floor(),
                         torch.tensor([0.5, 1.0, 7.25, top * 0.999])])
    numbers = numbers[numbers < top]
    digits = greedy_digits(numbers, beta, places)
    # They add back up to the number ...
    torch.testing.assert_close(compose(digits, beta), numbers, rtol=1e-12, atol=1e-9)
    # ... every place above the units holds a whole number below β, the units place a real in [0, β) ...
    upper = digits[:, 1:]
    assert torch.equal(upper, upper.floor()) and bool((upper >= 0).all()) and bool((upper < beta).all())
    assert bool((digits[:, 0] >= 0).all()) and bool((digits[:, 0] < beta * (1 + 1e-12)).all())
    # ... and each tail is smaller than the next weight, which singles out the greedy expansion.
    weights = beta ** torch.arange(places, dtype=torch.float64)
    tails = torch.cumsum(digits * weights, dim=1)
    assert bool((tails[:, :-1] < weights[1:] * (1 + 1e-12)).all())


def test_formula_16_does_not_add_up_for_a_real_base():
    beta = 10 * 2 ** (1 / 3)
    reference = [math.fmod(math.floor(1749 / beta**j), beta) for j in range(3)]
    shortcut = floor_mod_digits([1749], beta, 3)[0]
    torch.testing.assert_close(shortcut, torch.tensor(reference, dtype=torch.float64))
    assert abs(float(compose(shortcut[None, :], beta)[0]) - 1749) > 100
    assert float(compose(greedy_digits([1749], beta, 3), beta)[0]) == pytest.approx(1749, rel=1e-14)
    # the page quotes this example at the lesson's default n, β, P and s
    example = lesson.shortcut_example()
    assert (example.number, example.base) == (1749, pytest.approx(beta, rel=1e-15))
    assert example.shortcut == tuple(reversed(reference))
    assert example.shortcut_value == pytest.approx(sum(d * beta**j for j, d in enumerate(reference)), rel=1e-14)
    assert example.shortcut_value == pytest.approx(1907.74, abs=0.005)
    assert example.greedy_value == pytest.approx(1749, rel=1e-14) and example.greedy[0] == 11


def test_numbers_past_the_range_overflow_into_the_top_place():
    digits = greedy_digits([12_345], 10.0, 3)[0]
    assert digits.tolist() == [5, 4, 123]  # top place holds 123 ≥ β: a digit training never produced
    assert float(compose(digits[None, :], 10.0)[0]) == 12_345


def test_places_needed_in_logs():
    assert places_needed(math.log(1000), 10) == 3
    assert places_needed(math.log(1001), 10) == 4
    assert places_needed(0.0, 1.5) == 1
    for beta, count in [(1.001, 1e18), (1.155, 4096 * 8), (2.5, 7.0), (1 + 1e-9, 1e300)]:
        needed = places_needed(math.log(count), beta)
        assert (needed - 1) * math.log(beta) < math.log(count) <= needed * math.log(beta) * (1 + 1e-12)
    started = time.perf_counter()
    assert places_needed(700.0, 1 + 1e-12) > 10**14  # β next to 1: a count, computed in O(1)
    assert time.perf_counter() - started < 0.01


def test_digit_views_three_strategies():
    views = digit_views([1749], 10.0, 3, 2.0)
    assert views.direct_places_needed == 4 and views.direct[0].flip(0).tolist() == [1, 7, 4, 9]
    assert views.interpolated[0].flip(0).tolist() == [8, 7, 4.5]
    assert views.new_base == pytest.approx(10 * 2 ** (1 / 3), rel=1e-15)
    converted = views.converted[0]
    assert float(compose(converted[None, :], views.new_base)[0]) == pytest.approx(1749, rel=1e-14)
    assert bool((converted < views.new_base).all()) and float(converted.max()) >= 10  # stretched past β
    # the converted base covers k times the range: (β·k^(1/P))^P = k·β^P
    assert views.new_base**3 == pytest.approx(2 * 10**3, rel=1e-13)


def test_digit_views_extremes_stay_bounded_and_exact():
    started = time.perf_counter()
    views = digit_views([10**12, 3], 1.001, 32, 1e6)
    assert time.perf_counter() - started < 1.0
    expected_places = math.ceil(math.log(10**12 + 1) / math.log(1.001))
    assert views.direct_places_needed == expected_places > MAX_PLACES
    assert views.direct.shape == (2, MAX_PLACES)
    torch.testing.assert_close(compose(views.direct, 1.001), torch.tensor([1e12, 3.0], dtype=torch.float64),
                               rtol=1e-12, atol=0)
    assert views.new_base == pytest.approx(1.001 * 1e6 ** (1 / 32), rel=1e-14)


@pytest.mark.parametrize("arguments, message", [
    (([5], 1.0, 3, 2.0), "β must be a real number > 1"),
    (([5], float("nan"), 3, 2.0), "β must be a real number > 1"),
    (([5], 10.0, 0, 2.0), "number of places"),
    (([5], 10.0, 3, 0.5), "scale s must be a number ≥ 1"),
    (([-1], 10.0, 3, 2.0), "numbers ≥ 0"),
    (([5], 1e300, 3, 2.0), "too large"),
])
def test_digit_views_rejects_nonsense_with_a_sentence(arguments, message):
    with pytest.raises(ValueError, match=message):
        digit_views(*arguments)


def test_sample_numbers_and_zoom_window():
    assert sample_numbers(math.log(500)).tolist() == list(range(500))
    big = sample_numbers(math.log(1e9))
    assert len(big) == 2000 and float(big[0]) == 0 and float(big[-1]) < 1e9
    window = zoom_numbers(1749, 12.6)
    assert 1749 in window.tolist() and len(window) <= 121 and float(window[0]) >= 0


# --- the bound -------------------------------------------------------------------------------


@pytest.mark.parametrize("beta, places", [(10.0, 3), (1.5, 7), (10_000 ** (2 / 128), 64), (1.0001, 3)])
def test_bound_is_tight(beta, places):
    factors = torch.tensor([1.0, 1.5, 2.0, 8.0, 1000.0], dtype=torch.float64)
    bound = stretch_bound(factors, beta, places)
    for k, lam in zip(factors.tolist(), bound.tolist(), strict=True):
        mpmath.mp.dps = 40
        exact = mpmath.power(k - (k - 1) / mpmath.power(beta, places), mpmath.mpf(1) / places)
        assert lam == pytest.approx(float(exact), rel=1e-13)
        reach = (mpmath.mpf(lam) * beta) ** places - 1
        needed = k * (mpmath.power(beta, places) - 1)
        assert abs(reach - needed) <= 1e-9 * needed + 1e-12  # equality at λ_min ...
        if k > 1:
            assert (mpmath.mpf(lam) * (1 - 1e-6) * beta) ** places - 1 < needed  # ... and a smaller λ falls short


def test_bound_for_huge_k_and_beta_near_one():
    factors = torch.tensor([1e6, 1e12, 1e300], dtype=torch.float64)
    log_bound = log_stretch_bound(factors, 1 + 1e-9, 3)
    assert bool(torch.isfinite(log_bound).all())
    mpmath.mp.dps = 60
    for k, value in zip(factors.tolist(), log_bound.tolist(), strict=True):
        beta_p = mpmath.power(mpmath.mpf(1 + 1e-9), 3)  # the float the code receives
        exact = mpmath.log(k - (k - 1) / beta_p) / 3
        assert value == pytest.approx(float(exact), rel=1e-9)


def test_ntk_and_conversion_sandwich_the_bound():
    factors = torch.logspace(0, 9, 50, dtype=torch.float64)
    for beta, places in [(10.0, 3), (10_000 ** (2 / 128), 64), (500_000 ** (2 / 64), 32)]:
        bound = stretch_bound(factors, beta, places)
        conversion, ntk = conversion_stretch(factors, places), ntk_stretch(factors, places)
        assert bool((conversion >= bound * (1 - 1e-14)).all()) and bool((ntk >= conversion).all())


@pytest.mark.parametrize("head_dim", [8, 64, 128, 256])
@pytest.mark.parametrize("base, factor", [(10_000.0, 8.0), (500_000.0, 4.0), (100.0, 128.0)])
def test_ntk_base_is_beta_conversion_with_exponent_d_minus_2(head_dim, base, factor):
    beta, pairs = rope_beta(base, head_dim), head_dim // 2
    ntk_beta = rope_beta(ntk_aware_base(base, factor, head_dim), head_dim)
    assert ntk_beta == pytest.approx(beta * factor ** (2 / (head_dim - 2)), rel=1e-13)
    assert ntk_beta == pytest.approx(beta * float(ntk_stretch(torch.tensor([factor]), pairs)[0]), rel=1e-13)
    assert rope_beta(base * factor, head_dim) == pytest.approx(
        beta * float(conversion_stretch(torch.tensor([factor]), pairs)[0]), rel=1e-13)
    # the two differ only by k^(2/(d−2) − 2/d) = k^(4/(d(d−2)))
    assert ntk_beta / rope_beta(base * factor, head_dim) == pytest.approx(
        factor ** (4 / (head_dim * (head_dim - 2))), rel=1e-13)
    # NTK pins the slowest pair to interpolation; b·k leaves it a little faster.
    theta = default_inv_freq(base, head_dim)
    ntk = rope_frequencies(RopeSpec(head_dim=head_dim, base=base, rope_type="ntk", factor=factor)).inv_freq
    converted = default_inv_freq(base * factor, head_dim)
    assert float(ntk[-1]) == pytest.approx(float(theta[-1]) / factor, rel=1e-12)
    assert float(converted[-1]) == pytest.approx(float(theta[-1]) / factor ** ((head_dim - 2) / head_dim), rel=1e-12)
    assert float(ntk[0]) == float(converted[0]) == float(theta[0]) == 1.0  # the units digit is never touched
    # the smallest base meeting the bound: b·λ_min^(d/2) = k(b − 1) + 1
    lam = float(stretch_bound(torch.tensor([factor]), beta, pairs)[0])
    assert base * lam**pairs == pytest.approx(minimal_conversion_base(base, factor), rel=1e-10)


def test_sympy_verifies_every_formula():
    checks = formula_checks()
    assert len(checks) == 5 and all(checks.values()), checks
    assert not any(re.search(r"(?<![\\\w])k(?!\w)", statement) for statement in checks)  # s, never k


# --- RoPE digits -----------------------------------------------------------------------------


def test_phases_turns_and_seen_arcs():
    head_dim, base, length, scale = 128, 10_000.0, 4096, 4.0
    theta = default_inv_freq(base, head_dim)
    position = int(scale * length) - 1
    reference = [math.fmod(position * t, 2 * math.pi) for t in theta.tolist()]
    torch.testing.assert_close(pair_phases(theta, position), torch.tensor(reference, dtype=torch.float64))
    assert float(pair_turns(theta, position)[0]) == pytest.approx(position / (2 * math.pi))
    limit = seen_phase_limit(theta, length)
    assert float(limit[0]) == pytest.approx(2 * math.pi) and float(limit[-1]) == pytest.approx(4095 * float(theta[-1]))

    # At the last training position every hand sits at the end of its arc: nothing is new.
    assert not bool(outside_seen_arc(pair_phases(theta, length - 1), theta, length).any())
    # Direct extrapolation at L' puts exactly the slow pairs (arc < a full turn) off their arcs ...
    direct = outside_seen_arc(pair_phases(theta, position), theta, length)
    slow = length * theta < 2 * math.pi
    expected = slow & (torch.remainder(position * theta, 2 * math.pi) > length * theta)
    assert torch.equal(direct, expected) and bool(direct.any()) and not bool(direct[~slow].any())
    # ... while interpolation's (sL − 1)/s = L − 1/s stays within one step of the arc.
    assert not bool(outside_seen_arc(pair_phases(theta / scale, position), theta, length).any())


def test_dial_pairs_spread_evenly():
    shown = dial_pairs(64)
    assert len(shown) == 12 and int(shown[0]) == 0 and int(shown[-1]) == 63
    assert torch.equal(shown, torch.unique(shown))
    assert dial_pairs(4).tolist() == [0, 1, 2, 3]


# --- figures ---------------------------------------------------------------------------------


def test_step_corners_keep_the_same_staircase():
    x = torch.arange(50, dtype=torch.float64).numpy()
    y = (x // 7).astype(float)
    cx, cy = step_corners(x, y)
    assert len(cx) == 8 and cx[-1] == 49  # the first point and the 7 changes (the last point is one)
    # an 'hv' line through the corners takes the value of the last corner at or before each x
    redrawn = cy[np.searchsorted(cx, x, side="right") - 1]
    assert np.array_equal(redrawn, y)


def test_resolvable_places_drop_smeared_digits():
    assert resolvable_places(10.0, 4, 2000.0) == [1, 2, 3]  # the units digit would cycle 200 times
    assert resolvable_places(10.0, 4, 2000.0, factor=2.0) == [1, 2, 3]


def test_every_figure_at_defaults_and_with_other_settings():
    figures = LESSON.all_figures()
    assert list(figures) == ["digits-against-n", "units-digit-zoom", "phase-dials", "pair-turns", "stretch-bound",
                             "layer-map"]
    for figure in figures.values():
        assert figure.layout.title.text
        assert len(figure.to_json()) < 400_000
    bound = figures["stretch-bound"]
    smallest = next(t for t in bound.data if t.name.startswith("smallest λ"))
    scale = torch.as_tensor(smallest.x)
    expected = torch.expm1(torch.log(scale - (scale - 1) / 10_000.0) * 2 / 128)
    torch.testing.assert_close(torch.as_tensor(smallest.y), expected, rtol=1e-10, atol=0)
    custom = LESSON.all_figures(LESSON.settings.from_mapping({"beta": 16.0, "places": 3, "plain_scale": 1.5}))
    assert "β = 16" in custom["digits-against-n"].layout.title.text
    with pytest.raises(ValueError, match="valid keys"):
        LESSON.settings.from_mapping({"colour": "red"})


def test_the_conversion_has_its_own_look_and_methods_theirs():
    dials = LESSON.figure("phase-dials")
    hands = {t.name: t for t in dials.data if t.mode == "lines" and t.legendgroup not in (None, "unseen")}
    assert hands["β-base conversion (b·s)"].line.color == CONVERSION_STYLE.colour
    assert hands["NTK-aware"].line.color == METHOD_STYLES["ntk"].colour
    assert CONVERSION_STYLE.colour not in {style.colour for style in METHOD_STYLES.values()}
    zoom = LESSON.figure("units-digit-zoom")
    by_name = {t.name: t for t in zoom.data}
    assert by_name["Linear interpolation (n/s)"].meta == {"method": "pi"}  # interpolation looks like PI
    assert by_name["Base conversion (β → λβ)"].line.color == CONVERSION_STYLE.colour


# --- the numbers the page states ---------------------------------------------------------------------


def test_default_numbers_the_page_states():
    r = result()
    assert (r.setup.head_dim, r.setup.base, r.setup.train_length, r.setup.target_length) == (128, 10_000, 4096, 16_384)
    # n = 4·L − 1 = L′ − 1 = 16,383, exactly
    assert r.position == 4 * 4096 - 1 == r.setup.target_length - 1 == 16_383
    assert r.position_is_exact and r.position_is_last
    assert r.rope_beta == pytest.approx(10_000 ** (2 / 128), rel=1e-15) == pytest.approx(1.15478, abs=5e-6)
    assert r.slowest_ratio == pytest.approx(10_000 ** (126 / 128), rel=1e-12)
    bases = r.rope_bases
    assert bases.smallest == 4 * (10_000 - 1) + 1 == 39_997
    assert bases.conversion == 40_000
    assert bases.ntk == pytest.approx(10_000 * 4 ** (128 / 126), rel=1e-14)
    assert bases.ntk_over_conversion == pytest.approx(4 ** (4 / (128 * 126)), rel=1e-13)
    assert r.rope_conversion_stretch == pytest.approx(4 ** (2 / 128), rel=1e-15)
    assert r.second_pair_stretch == pytest.approx(4 ** (2 / 126), rel=1e-15)
    bound = r.bound
    assert (bound.beta, bound.places, bound.scale) == (pytest.approx(r.rope_beta), 64, 4.0)
    assert bound.smallest == pytest.approx((4 - 3 / 10_000) ** (2 / 128), rel=1e-14)
    assert bound.conversion == pytest.approx(4 ** (2 / 128), rel=1e-14)
    assert bound.ntk == pytest.approx(4 ** (2 / 126), rel=1e-14)
    assert len(r.dials.shown) == 12 and r.num_pairs == 64
    rows = {row.strategy: row for row in r.digit_rows}
    assert rows["direct"].cells == ("1", "7", "4", "9") and rows["direct"].value == "1,749"
    assert rows["interpolate"].cells == ("", "8", "7", "4.5") and rows["interpolate"].value == "874.5"
    assert rows["convert"].base == "12.5992" and rows["convert"].value == "1,749"
    assert rows["direct"].unseen == (True, False, False, False)  # the new top place
    assert r.log_trained == pytest.approx(math.log(1000)) and r.log_extended == pytest.approx(math.log(2000))


@pytest.mark.parametrize("train_length, multiple, scale", [(8, 0.25, 128.0), (4096, 1.5, 4.0), (8192, 128.0, 128.0),
                                                           (2048, 2.0, 2.0), (16, 8.0, 1.5), (131_072, 8.0, 8.0)])
def test_the_position_is_exactly_m_times_l_minus_one(train_length, multiple, scale):
    r = result(train_length=train_length, position_multiple=multiple, scale=scale)
    assert r.position == int(multiple * train_length) - 1 and r.position_is_exact
    assert r.position_is_last == (multiple == scale) == (r.position == r.setup.target_length - 1)


def test_past_the_cap_the_position_is_not_the_last():
    r = result(train_length=131_072, position_multiple=128.0, scale=128.0)
    assert r.setup.capped and r.setup.target_length == 1 << 20
    assert r.position == 128 * 131_072 - 1 and not r.position_is_last


def test_a_preset_is_analysed_at_its_own_lengths():
    r = result(source="preset", preset="Llama-3.1-8B")
    assert r.setup.train_length == 8192 and r.setup.target_length == 131_072
    assert r.position == 4 * 8192 - 1 and not r.position_is_last
    assert r.bound.scale == 16.0 and r.rope_bases.conversion == r.setup.base * 16


def test_the_n_line_is_left_out_when_n_is_far_past_the_range_drawn():
    def marks(**values):
        figure = LESSON.figure("digits-against-n", LESSON.settings.from_mapping(values))
        lines = [shape.x0 for shape in figure.layout.shapes if shape.x0 == shape.x1 and shape.line.width == 2]
        return lines, [t.name for t in figure.data if t.legendgroup == "marks"]

    lines, names = marks()
    assert lines == [1749.0] * 3 and "n in the table" in names
    lines, names = marks(number=10**12)  # the range drawn ends near s·βᴾ = 2,000
    assert lines == [] and "n in the table" not in names
    assert result(number=10**12).beyond_range


def test_links_name_the_scale_s_too():
    keys = {name: control.key for name, control in LESSON.settings.controls().items()}
    assert keys["scale"] == "s" and keys["plain_scale"] == "ps" and keys["max_scale"] == "smax"
    assert not [key for key in keys.values() if key.startswith("k")]
