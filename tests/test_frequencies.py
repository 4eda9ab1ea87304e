"""The θ-heatmap lesson: its core (pe_core.angles), its figures (through lessons.frequencies), and its formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

import figures.frequencies as ff
from lessons import frequencies as lesson
from pe_core import METHODS, RopeSpec, default_inv_freq, method_setup, rope_frequencies
from pe_core.angles import (
    BEYOND_TRAINING,
    FULL_TURN,
    WITHIN_TRAINING,
    angle_reach,
    angle_view,
    frequency_profile,
    heatmap_panels,
    method_angles,
    ramp_comparison,
    reference_inv_freq,
    rescaled_setup,
    sampled_positions,
)

LESSON = lesson.LESSON


def build_setups(head_dim, base, train_length, target_length, methods, abf_base=500_000.0):
    return tuple(method_setup(m, head_dim, base, train_length, target_length, abf_base=abf_base) for m in methods)


def figures_at(**values):
    return LESSON.all_figures(LESSON.settings.from_mapping(values))


SIZES = [(16, 10_000.0, 64, 4), (64, 10_000.0, 512, 8), (128, 500_000.0, 4096, 16), (32, 100.0, 8, 2)]


def numpy_theta(head_dim: int, base: float) -> np.ndarray:
    """θ_i = b^(−2i/d), written independently of pe_core."""
    return base ** (-np.arange(head_dim // 2) * 2.0 / head_dim)


# --- positions and angles -------------------------------------------------------------------------


@pytest.mark.parametrize("count, rows", [(10, 300), (300, 300), (301, 300), (1 << 20, 300), (5, 1)])
def test_sampled_positions_are_exact_integers_spanning_the_range(count, rows):
    positions = sampled_positions(count, rows).tolist()
    assert len(positions) == min(count, rows)
    assert positions[0] == 0 and (positions[-1] == count - 1 or rows == 1)
    assert all(b > a for a, b in zip(positions, positions[1:], strict=False))
    if count <= rows:
        assert positions == list(range(count))


def test_static_method_angles_are_position_times_theta():
    setup = method_setup("ntk", 64, 10_000.0, 512, 4096)
    positions = sampled_positions(4096, 50)
    expected = np.outer(positions.numpy(), setup.frequencies().inv_freq.numpy())
    np.testing.assert_allclose(method_angles(setup, positions).numpy(), expected, rtol=1e-15)
    # Static methods do not depend on the length mode.
    np.testing.assert_array_equal(method_angles(setup, positions, length_so_far=True).numpy(), expected)


def test_dynamic_ntk_rows_use_the_length_so_far():
    setup = method_setup("dynamic", 64, 10_000.0, 256, 2048)
    positions = torch.tensor([0, 1, 100, 255, 256, 257, 1000, 2047])
    angles = method_angles(setup, positions, length_so_far=True)
    for row, m in enumerate(positions.tolist()):
        theta = rope_frequencies(setup.spec, m + 1).inv_freq
        np.testing.assert_allclose(angles[row].numpy(), (m * theta).numpy(), rtol=1e-12)
    # Up to L it is plain RoPE; the whole-sequence view is static NTK with s = L'/L on every row.
    plain = numpy_theta(64, 10_000.0)
    np.testing.assert_allclose(angles[3].numpy(), 255 * plain, rtol=1e-12)
    whole = method_angles(setup, positions, length_so_far=False)
    ntk = method_angles(method_setup("ntk", 64, 10_000.0, 256, 2048), positions)
    np.testing.assert_allclose(whole.numpy(), ntk.numpy(), rtol=1e-12)


def test_longrope_switches_to_long_factors_past_the_training_length():
    setup = method_setup("longrope", 64, 10_000.0, 256, 2048)
    positions = torch.tensor([10, 255, 256, 2000])
    angles = method_angles(setup, positions, length_so_far=True)
    short = rope_frequencies(setup.spec, 256).inv_freq
    long = rope_frequencies(setup.spec, 2048).inv_freq
    assert not torch.allclose(short, long)
    np.testing.assert_allclose(angles[1].numpy(), (255 * short).numpy(), rtol=1e-12)
    np.testing.assert_allclose(angles[2].numpy(), (256 * long).numpy(), rtol=1e-12)


def test_angle_views():
    angles = torch.tensor([[0.0, 1.0, 7.0, 100.0]], dtype=torch.float64)
    np.testing.assert_allclose(angle_view(angles, "angle").numpy(), angles.numpy())
    np.testing.assert_allclose(angle_view(angles, "mod").numpy(), [[0.0, 1.0, 7.0 - 2 * math.pi, 100 % (2 * math.pi)]])
    np.testing.assert_allclose(angle_view(angles, "cos").numpy(), np.cos(angles.numpy()))
    logged = angle_view(angles, "log").numpy()
    assert np.isnan(logged[0, 0])
    np.testing.assert_allclose(logged[0, 1:], np.log10([1.0, 7.0, 100.0]))
    with pytest.raises(ValueError, match="view must be one of"):
        angle_view(angles, "degrees")


# --- unseen angles --------------------------------------------------------------------------------


@pytest.mark.parametrize("head_dim, base, length, scale", SIZES)
def test_unseen_angles_match_the_yarn_argument(head_dim, base, length, scale):
    theta = numpy_theta(head_dim, base)
    not_turned = length * theta < 2 * math.pi  # wavelength longer than the training length
    states = {}
    for method in METHODS:
        setup = method_setup(method, head_dim, base, length, length * scale)
        reach = angle_reach(reference_inv_freq(setup, base), setup.frequencies().inv_freq, length, length * scale)
        states[method] = reach.state.numpy()
        assert np.array_equal(reach.state.numpy() == FULL_TURN, ~not_turned)
    # Direct extrapolation overshoots on exactly the pairs that never completed a turn.
    assert np.array_equal(states["direct"] == BEYOND_TRAINING, not_turned)
    # PI, NTK-by-parts (α = 1) and the reference YaRN interpolate every such pair: nothing unseen.
    for method in ("pi", "ntk_by_parts", "yarn"):
        assert not (states[method] == BEYOND_TRAINING).any(), method
    # NTK-aware: its slowest pair is PI's, so it is inside; some pair in the middle still overshoots
    # (seed 000's claim) whenever there are middle pairs left without a full turn.
    assert states["ntk"][-1] == WITHIN_TRAINING
    middle = np.flatnonzero(not_turned[:-1])
    if len(middle):
        assert (states["ntk"][middle] == BEYOND_TRAINING).any()


def test_angle_reach_brute_force_over_every_position():
    length, target = 32, 128
    train = torch.tensor(numpy_theta(16, 100.0))
    target_theta = train * torch.linspace(1.0, 0.2, len(train), dtype=torch.float64)
    reach = angle_reach(train, target_theta, length, target)
    train_sweep = torch.arange(length + 1, dtype=torch.float64)[:, None] * train  # window of L positions
    target_sweep = torch.arange(target + 1, dtype=torch.float64)[:, None] * target_theta
    beyond = (target_sweep.max(0).values > train_sweep.max(0).values * (1 + 1e-12)) & (
        train_sweep.max(0).values < 2 * math.pi
    )
    assert torch.equal(reach.unseen, beyond)


# --- the formulas the page shows, checked with sympy -------------------------------------------------


def log_equal(left, right) -> bool:
    """Positive expressions with symbolic exponents: compare their expanded logarithms."""
    return sp.simplify(sp.expand_log(sp.log(left), force=True) - sp.expand_log(sp.log(right), force=True)) == 0


def test_ntk_aware_formulas():
    b, s, d, i = sp.symbols("b s d i", positive=True)
    ntk_base = b * s ** (d / (d - 2))
    theta, theta_ntk = b ** (-2 * i / d), ntk_base ** (-2 * i / d)
    assert log_equal(theta_ntk / theta, s ** (-2 * i / (d - 2)))
    assert log_equal(theta_ntk.subs(i, d / 2 - 1), theta.subs(i, d / 2 - 1) / s)  # slowest pair: exactly PI
    assert not log_equal(theta_ntk.subs(i, d / 2 - 2), theta.subs(i, d / 2 - 2) / s)


def test_pi_is_a_base_change_only_pair_by_pair():
    b, s, d, i = sp.symbols("b s d i", positive=True)
    per_pair_base = b * s ** (d / (2 * i))
    assert log_equal(per_pair_base ** (-2 * i / d), b ** (-2 * i / d) / s)
    # No base reproduces θ_0 / s: the pair-0 base diverges (shown for s = 4, d = 128).
    assert sp.limit(per_pair_base.subs({s: 4, d: 128}), i, 0, "+") == sp.oo


def test_correction_dim_inverts_the_rotation_count():
    b, d, length, r = sp.symbols("b d L r", positive=True)
    i = sp.symbols("i", real=True)
    rotations = length / (2 * sp.pi * b ** (2 * i / d))
    index = d * sp.log(length / (2 * sp.pi * r)) / (2 * sp.log(b))  # the page's i(r), pe_core's correction dim
    assert sp.simplify(rotations.subs(i, index) - r) == 0
    assert sp.diff(rotations, i).subs(i, index).simplify().could_extract_minus_sign()  # r falls as i grows


def test_dynamic_at_factor_one_is_ntk_at_the_current_scale():
    b, d, length, current = sp.symbols("b d L l", positive=True)
    dynamic_base = b * ((1 * current / length) - (1 - 1)) ** (d / (d - 2))
    assert sp.simplify(dynamic_base - b * (current / length) ** (d / (d - 2))) == 0
    spec = method_setup("dynamic", 64, 10_000.0, 512, 4096)
    np.testing.assert_allclose(spec.frequencies().inv_freq.numpy(),
                               method_setup("ntk", 64, 10_000.0, 512, 4096).frequencies().inv_freq.numpy(), rtol=1e-12)


# --- ratio, profile and the paper-vs-code ramp --------------------------------------------------------


@pytest.mark.parametrize("head_dim, base, length, scale", SIZES)
def test_interpolation_ratios(head_dim, base, length, scale):
    setups = build_setups(head_dim, base, length, length * scale, ("direct", "pi", "ntk", "abf"), 500_000.0)
    profile = frequency_profile(setups, base=base)
    ratio = profile.ratio.numpy()
    np.testing.assert_allclose(ratio[0], 1.0, rtol=1e-14)
    np.testing.assert_allclose(ratio[1], 1 / scale, rtol=1e-14)
    np.testing.assert_allclose(ratio[2], scale ** (-2 * np.arange(head_dim // 2) / (head_dim - 2)), rtol=1e-12)
    np.testing.assert_allclose(ratio[2, -1], ratio[1, -1], rtol=1e-12)  # NTK's slowest pair is PI's
    np.testing.assert_allclose(ratio[3], numpy_theta(head_dim, 500_000.0) / numpy_theta(head_dim, base), rtol=1e-12)


@pytest.mark.parametrize("head_dim, base, length, scale", SIZES)
def test_blended_methods_follow_the_formulas_on_the_page(head_dim, base, length, scale):
    methods = ("ntk_by_parts", "yarn", "llama3")
    setups = build_setups(head_dim, base, length, length * scale, methods, 500_000.0)
    ratio = dict(zip(methods, frequency_profile(setups, base=base).ratio.numpy(), strict=True))
    theta = numpy_theta(head_dim, base)
    wavelength = 2 * math.pi / theta
    gamma = np.clip((length / wavelength - 1) / (32 - 1), 0, 1)  # α = 1, β = 32
    np.testing.assert_allclose(ratio["ntk_by_parts"], gamma + (1 - gamma) / scale, rtol=1e-12)
    ramp = ramp_comparison(setups[1].spec)
    kept = ramp.code_kept.numpy()
    np.testing.assert_allclose(ratio["yarn"], kept + (1 - kept) / scale, rtol=1e-12)
    sigma = (length / wavelength - 1) / (4 - 1)  # Llama-3 with f_lo = 1, f_hi = 4
    llama = np.where(wavelength < length / 4, 1.0,
                     np.where(wavelength > length / 1, 1 / scale, (1 - sigma) / scale + sigma))
    np.testing.assert_allclose(ratio["llama3"], llama, rtol=1e-12)


def test_ramp_paper_against_code():
    spec = method_setup("yarn", 128, 10_000.0, 4096, 16384).spec
    ramp = ramp_comparison(spec)
    r = ramp.rotations.numpy()
    np.testing.assert_allclose(r, 4096 * numpy_theta(128, 10_000.0) / (2 * math.pi), rtol=1e-12)
    paper, code = ramp.paper_kept.numpy(), ramp.code_kept.numpy()
    assert np.all(paper[r > spec.beta_fast] == 1) and np.all(paper[r < spec.beta_slow] == 0)
    np.testing.assert_allclose(paper, np.clip((r - 1) / 31, 0, 1), atol=1e-12)
    low, high = ramp.code_range
    assert low == math.floor(ramp.beta_fast_index) and high == math.ceil(ramp.beta_slow_index)
    inside = np.arange(len(code))[(np.arange(len(code)) >= low) & (np.arange(len(code)) <= high)]
    assert np.allclose(np.diff(code[inside], 2), 0)  # linear in the index
    assert np.abs(paper - code).max() > 0.2  # the difference the chart is about
    outside = (np.arange(len(code)) < low) | (np.arange(len(code)) > high)
    np.testing.assert_allclose(paper[outside], code[outside])


def test_rescaled_setup_keeps_the_method_and_its_base():
    abf = method_setup("abf", 64, 10_000.0, 512, 2048, abf_base=1_000_000.0)
    again = rescaled_setup(abf, 10_000.0, 4096)
    assert again.spec.base == 1_000_000.0 and again.seq_len == 4096
    pi = rescaled_setup(method_setup("pi", 64, 10_000.0, 512, 2048), 10_000.0, 4096)
    assert pi.spec.factor == 8.0
    model = method_setup("pi", 64, 10_000.0, 512, 2048)._replace(method="model")
    assert rescaled_setup(model, 10_000.0, 4096) is None


# --- figures ---------------------------------------------------------------------------------------


def heatmaps_of(figure):
    return [trace for trace in figure.data if trace.type == "heatmap"]


def test_small_head_view_shows_s2_above_s4():
    figure = figures_at(**lesson.SMALL_HEAD_VIEW)["angle-heatmaps"]
    maps = heatmaps_of(figure)
    assert len(maps) == 6
    m, i = np.arange(10)[:, None], np.arange(16)[None, :]
    for row, k in enumerate((2, 4)):
        expected = [m / 10_000 ** (2 * i / 32), (m / k) / 10_000 ** (2 * i / 32),
                    m / (10_000 * k ** (32 / 30)) ** (2 * i / 32)]
        for column, values in enumerate(expected):
            trace = maps[3 * row + column]
            assert f"s = {k}" in trace.name
            np.testing.assert_allclose(np.asarray(trace.z, dtype=np.float64), values, rtol=1e-6, atol=1e-7)
    assert {t.zmin for t in maps} == {0.0} and len({t.zmax for t in maps}) == 1
    assert maps[0].zmax == pytest.approx(9.0, rel=1e-6)  # direct's m·θ_0 at m = 9 is the largest angle
    assert figure.layout.coloraxis.cmin == 0.0 and figure.layout.coloraxis.cmax == maps[0].zmax


def test_heatmap_shares_one_scale_and_marks_training_and_unseen_pairs():
    figure = figures_at(view="mod", methods=("direct", "pi", "ntk", "yarn"))["angle-heatmaps"]
    maps = heatmaps_of(figure)
    assert {(t.zmin, t.zmax) for t in maps} == {(0.0, 2 * math.pi)}
    assert all(0 <= np.nanmin(t.z) and np.nanmax(t.z) < 2 * math.pi for t in maps)
    hatches = [t for t in figure.data if t.type == "scatter" and t.fill == "toself" and t.x[0] is not None]
    assert len(hatches) == 4 and all(min(t.y) == 4096 - 0.5 for t in hatches)
    markers = [t for t in figure.data if t.type == "scatter" and t.mode == "markers"]
    theta = numpy_theta(128, 10_000.0)
    not_turned = np.flatnonzero(4096 * theta < 2 * math.pi)
    assert list(markers[0].x) == list(not_turned)  # direct: every pair without a full turn
    assert len(markers) == 2  # direct and NTK overshoot; PI and YaRN do not


def test_heaviest_settings_stay_within_the_drawing_budget():
    figures = figures_at(head_dim=256, train_length=131_072, scale=8.0, second_scale=2.0, methods=tuple(METHODS))
    maps = heatmaps_of(figures["angle-heatmaps"])
    assert len(maps) == 18
    cells = sum(np.asarray(t.z).size for t in maps)
    assert cells <= lesson.MAX_HEATMAP_CELLS
    assert all(np.asarray(t.z).shape[1] == 128 for t in maps)
    assert max(t.y[-1] for t in maps) == 1_048_575  # exact last position of L' = 2^20
    assert all(np.asarray(t.z).dtype == np.float32 for t in maps)


def test_rows_per_panel_budget():
    assert lesson.rows_per_panel(1, 64) == lesson.MAX_HEATMAP_ROWS
    assert lesson.rows_per_panel(20, 128) == lesson.MAX_HEATMAP_CELLS // (20 * 128) == 46
    assert lesson.rows_per_panel(1000, 128) == lesson.MIN_HEATMAP_ROWS


def test_line_figures_plot_the_computed_values():
    setups = build_setups(64, 10_000.0, 512, 2048, ("direct", "pi"), 500_000.0)
    profile = frequency_profile(setups, base=10_000.0)
    wave = ff.wavelength_figure(profile, train_length=512, target_length=2048)
    np.testing.assert_allclose(wave.data[0].y, 2 * math.pi / numpy_theta(64, 10_000.0), rtol=1e-12)
    np.testing.assert_allclose(wave.data[1].y, 4 * 2 * math.pi / numpy_theta(64, 10_000.0), rtol=1e-12)
    assert [shape.y0 for shape in wave.layout.shapes] == [512, 2048]
    freq = ff.wavelength_figure(profile, train_length=512, target_length=2048, as_frequency=True)
    np.testing.assert_allclose(freq.data[0].y, numpy_theta(64, 10_000.0), rtol=1e-12)
    ratio = ff.ratio_figure(profile, scale=4.0)
    assert [shape.y0 for shape in ratio.layout.shapes] == [1.0, 0.25]
    assert "1/4" in ratio.layout.yaxis.ticktext and "1" in ratio.layout.yaxis.ticktext


def test_registry_order_and_bad_settings():
    assert list(LESSON.figures) == ["angle-heatmaps", "unseen-angles", "wavelengths", "interpolation-ratio",
                                    "yarn-ramp", "layer-map"]
    with pytest.raises(ValueError, match="valid keys"):
        LESSON.settings.from_mapping({"colour": "red"})


def test_a_model_is_analysed_at_the_length_its_rope_is_built_for():
    qwen = LESSON.result(LESSON.settings.from_mapping({"source": "preset", "preset": "Qwen2.5-7B-Instruct (+YaRN x4)"}))
    assert (qwen.setup.train_length, qwen.setup.target_length, qwen.setup.scale) == (32_768, 131_072, 4.0)
    assert qwen.setup.own.spec.rope_type == "yarn" and qwen.ramp_spec == qwen.setup.own.spec
    plain = LESSON.result(LESSON.settings.from_mapping({"source": "preset", "preset": "Llama-2-7B"}))
    assert (plain.setup.train_length, plain.setup.target_length) == (4096, 4 * 4096)  # unscaled: shown at 4×


def test_heatmap_panels_positions_and_scale():
    setups = build_setups(16, 10_000.0, 64, 256, ("direct", "pi"), 500_000.0)
    panels = heatmap_panels(setups, base=10_000.0, train_length=64, positions_shown=None, view="angle", rows=40,
                            length_so_far=True)
    assert [p.scale for p in panels] == [4.0, 4.0]
    assert panels[0].positions[-1] == 255 and len(panels[0].positions) == 40
    top_direct, top_pi = panels[0].values[-1, -1].item(), panels[1].values[-1, -1].item()
    assert top_pi == pytest.approx(top_direct / 4, rel=1e-12)
    assert panels[0].colour_range == panels[1].colour_range == (0.0, pytest.approx(255.0))
    assert RopeSpec(head_dim=16).num_pairs == panels[0].values.shape[1]
    assert torch.equal(default_inv_freq(10_000.0, 16), reference_inv_freq(setups[0], 10_000.0))
