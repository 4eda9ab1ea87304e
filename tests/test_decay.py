"""pe_core.decay and lessons.decay: RoFormer's bound, sinusoidal dot products, random q·k, decimation, and the
numbers, settings and look of the lesson.

Reference values are computed here independently (numpy, explicit rotation matrices, math.cos
loops), never copied from the code under test.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import pe_core.decay as decay
from figures.theme import DASHES, ENCODING_STYLES, METHOD_STYLES, MUTED, series_colour, translucent
from lessons import SLIDE
from lessons import decay as lesson
from lessons import export as export_cli
from pe_core import RopeSpec, default_inv_freq, method_setup, rope_frequencies


def theta(head_dim: int = 128, base: float = 10000.0) -> np.ndarray:
    """θ_i = b^(−2i/d), written out independently of pe_core."""
    return np.array([base ** (-2 * i / head_dim) for i in range(head_dim // 2)])


def bound_numpy(thetas: np.ndarray, distances) -> np.ndarray:
    """(1/n) Σ_j |Σ_{i<j} e^{i r θ_i}| straight from the definition (complex exp, cumsum)."""
    phasors = np.exp(1j * np.outer(np.asarray(distances, dtype=np.float64), thetas))
    return np.abs(np.cumsum(phasors, axis=1)).mean(axis=1)


def rotation(angles: np.ndarray) -> np.ndarray:
    """RoFormer's block-diagonal R: 2 × 2 rotations on the interleaved pairs (2i, 2i+1)."""
    matrix = np.zeros((2 * len(angles), 2 * len(angles)))
    for i, a in enumerate(angles):
        matrix[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return matrix


def sinusoidal_pe(position: float, d_model: int, base: float) -> np.ndarray:
    """Vaswani et al.: PE[2i] = sin(t ω_i), PE[2i+1] = cos(t ω_i)."""
    pe = np.empty(d_model)
    for i in range(d_model // 2):
        pe[2 * i] = math.sin(position * base ** (-2 * i / d_model))
        pe[2 * i + 1] = math.cos(position * base ** (-2 * i / d_model))
    return pe


# --- RoFormer's bound -----------------------------------------------------------------------------


def test_roformer_figure_values():
    """RoFormer Fig. 2 (d = 128, base 10^4): 32.5 at r = 0, below 7 by r = 250, and lower late than early."""
    values = decay.rope_decay_bound(rope_frequencies(RopeSpec(head_dim=128)).inv_freq, range(257))
    assert values.dtype == torch.float64 and values.shape == (257,)
    assert values[0].item() == 32.5  # (1 + 2 + … + 64) / 64: every phasor is 1 at r = 0
    assert values[250].item() < 7
    assert values[:50].mean() > 2 * values[200:].mean()
    np.testing.assert_allclose(values.numpy(), bound_numpy(theta(), range(257)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("head_dim", [2, 8, 64, 256])
def test_bound_at_zero_is_half_of_n_plus_one(head_dim):
    value = decay.rope_decay_bound(default_inv_freq(10000.0, head_dim), [0.0])
    assert value.item() == pytest.approx((head_dim // 2 + 1) / 2, rel=1e-15)


def test_bound_matches_definition_at_large_and_odd_distances():
    thetas = theta(128, 500_000.0)
    distances = [0.5, 3.0, 77.25, 1e3, 123_457.0, 999_999.0, 1_048_576.0]
    values = decay.rope_decay_bound(torch.from_numpy(thetas), distances)
    np.testing.assert_allclose(values.numpy(), bound_numpy(thetas, distances), rtol=1e-9)


def test_even_and_uneven_paths_agree_across_chunks(monkeypatch):
    """The rotated-table path (even spacing) and the direct path (any distances) give the same numbers."""
    monkeypatch.setattr(decay, "_CHUNK_ELEMENTS", 64 * 37)  # 37 distances per chunk: many chunk boundaries
    thetas = default_inv_freq(10000.0, 128)
    distances = torch.arange(5000.0, 5000.0 + 0.75 * 1000, 0.75, dtype=torch.float64)  # non-integer step
    even = decay.rope_decay_bound(thetas, distances)
    order = torch.randperm(distances.numel(), generator=torch.Generator().manual_seed(1))
    uneven = torch.empty_like(even)
    uneven[order] = decay.rope_decay_bound(thetas, distances[order])
    torch.testing.assert_close(even, uneven, rtol=0, atol=1e-10)
    np.testing.assert_allclose(even.numpy(), bound_numpy(thetas.numpy(), distances.numpy()), rtol=1e-10)


def test_bound_is_even_in_r_and_empty_input_is_empty():
    thetas = default_inv_freq(10000.0, 64)
    torch.testing.assert_close(decay.rope_decay_bound(thetas, range(-50, 0)),
                               decay.rope_decay_bound(thetas, range(50, 0, -1)), rtol=1e-12, atol=1e-12)
    assert decay.rope_decay_bound(thetas, []).shape == (0,)


def test_position_interpolation_stretches_the_curve_by_s():
    """PI divides θ by s, so B_PI(s·r) = B(r) at every r."""
    scale = 4
    direct = method_setup("direct", 128, 10000.0, 4096, 4096 * scale).frequencies().inv_freq
    pi = method_setup("pi", 128, 10000.0, 4096, 4096 * scale).frequencies().inv_freq
    r = torch.arange(0, 3000, 7, dtype=torch.float64)
    torch.testing.assert_close(decay.rope_decay_bound(pi, scale * r), decay.rope_decay_bound(direct, r),
                               rtol=1e-9, atol=1e-9)


def test_abel_bound_really_bounds_the_rope_score():
    """|(R_m q)·(R_n k)| ≤ max_i |h_{i+1} − h_i| · Σ_j |S_j| (h_n = 0), with the sign of summation by parts."""
    generator = torch.Generator().manual_seed(7)
    thetas = default_inv_freq(10000.0, 64)
    q, k = torch.randn(2, 64, generator=generator, dtype=torch.float64)
    distances = torch.arange(0, 2000, 3, dtype=torch.float64)
    scores = decay.rope_scores(q, k, thetas, distances)[0]
    h = torch.complex(q[0::2], q[1::2]) * torch.complex(k[0::2], k[1::2]).conj()
    h_next = torch.cat((h[1:], torch.zeros(1, dtype=h.dtype)))
    partial = torch.polar(torch.ones(len(distances), 32, dtype=torch.float64),
                          torch.outer(distances, thetas)).cumsum(dim=1)  # S_1 .. S_n
    by_parts = -(partial * (h_next - h)).sum(dim=1)
    direct = (h * torch.polar(torch.ones_like(partial.real), torch.outer(distances, thetas))).sum(dim=1)
    torch.testing.assert_close(by_parts, direct, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(direct.real, scores, rtol=1e-10, atol=1e-10)
    bound = (h_next - h).abs().max() * decay.rope_decay_bound(thetas, distances) * 32
    assert torch.all(scores.abs() <= bound + 1e-9)


def test_larger_base_reaches_the_random_phase_level_later():
    firsts = [decay.decay_bound_curve(default_inv_freq(base, 128), 20_000).first_at_level
              for base in (10_000.0, 500_000.0, 1_000_000.0)]
    assert all(f is not None for f in firsts)
    assert firsts[0] < firsts[1] < firsts[2]
    distances = np.arange(20_001)
    level = decay.random_phase_level(64)
    exact = bound_numpy(theta(128, 10_000.0), distances)
    assert exact[int(firsts[0])] <= level and np.all(exact[:int(firsts[0])] > level)


def test_random_phase_level_known_values_and_monte_carlo():
    assert decay.random_phase_level(1) == pytest.approx(1.0, abs=1e-6)  # one unit phasor
    assert decay.random_phase_level(2) == pytest.approx((1 + 4 / math.pi) / 2, abs=1e-6)  # E|1 + e^{iφ}| = 4/π
    generator = np.random.default_rng(3)
    phases = generator.uniform(0, 2 * np.pi, size=(40_000, 16))
    samples = np.abs(np.cumsum(np.exp(1j * phases), axis=1)).mean(axis=1)
    standard_error = samples.std() / math.sqrt(len(samples))
    assert abs(decay.random_phase_level(16) - samples.mean()) < 4 * standard_error


def test_bound_settles_at_the_random_phase_level_far_away():
    """Far beyond every wavelength the bound's average over r is the random-phase level (Weyl equidistribution)."""
    thetas = default_inv_freq(10000.0, 16)
    values = decay.rope_decay_bound(thetas, torch.arange(10**6, 10**6 + 2**16, dtype=torch.float64))
    assert values.mean().item() == pytest.approx(decay.random_phase_level(8), rel=5e-3)


# --- decimation ---------------------------------------------------------------------------------


def test_envelope_indices_keep_every_extreme_a_screen_shows():
    x = torch.arange(100_000, dtype=torch.float64)
    y = torch.sin(x * 0.37) * torch.exp(-x / 30_000) + 0.001 * x.sqrt()
    keep = decay.envelope_indices(x, y, bins=500)
    assert len(keep) <= 2 * 500 + 2 and keep[0] == 0 and keep[-1] == len(x) - 1
    assert torch.all(keep[1:] > keep[:-1])
    assert int(y.argmax()) in keep.tolist() and int(y.argmin()) in keep.tolist()
    kept_x, kept_y = x[keep], y[keep]
    for start in (0, 40_000, 99_800):  # bins are 200 wide: each bin's max and min survive
        inside = (kept_x >= start) & (kept_x < start + 200)
        assert kept_y[inside].max() == y[start:start + 200].max()
        assert kept_y[inside].min() == y[start:start + 200].min()
    log_keep = decay.envelope_indices(x, y, bins=300, log_axis=True)
    assert x[log_keep].min() >= 1 and len(log_keep) <= 602


def test_binned_mean_min_max():
    x = torch.arange(1, 10_001, dtype=torch.float64)
    y = torch.cos(x)
    curve = decay.binned(x, y, bins=100)
    assert len(curve.x) == 100
    torch.testing.assert_close(curve.mean[0], y[:100].mean())
    torch.testing.assert_close(curve.x[0], x[:100].mean())
    assert curve.low[0] == y[:100].min() and curve.high[0] == y[:100].max()
    assert torch.all(curve.low <= curve.mean) and torch.all(curve.mean <= curve.high)
    log_curve = decay.binned(torch.arange(0, 10_001, dtype=torch.float64), torch.cat((torch.ones(1), y)), bins=200,
                             log_axis=True)
    assert log_curve.x[0] == 1 and log_curve.mean[0] == y[0]  # r = 0 dropped; the first bins hold one point
    exact = decay.binned(x[:200], y[:200], bins=100)
    assert torch.equal(exact.mean, y[:200]) and torch.equal(exact.low, exact.high)


# --- sinusoidal ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("d_model", "base"), [(128, 10000.0), (16, 100.0), (64, 1e6)])
def test_sinusoidal_dot_product_is_sum_of_cosines_for_every_t(d_model, base):
    offsets = [-700, -13, 0, 1, 5, 250, 4096]
    values = decay.sinusoidal_dot_products(offsets, d_model, base)
    for k, value in zip(offsets, values.tolist(), strict=True):
        expected = sum(math.cos(k * base ** (-2 * i / d_model)) for i in range(d_model // 2))
        assert value == pytest.approx(expected, abs=1e-12)
        for t in (0, 37, 1000):
            assert value == pytest.approx(sinusoidal_pe(t, d_model, base) @ sinusoidal_pe(t + k, d_model, base),
                                          abs=1e-10)
    torch.testing.assert_close(decay.sinusoidal_dot_products(range(1, 300), d_model, base),
                               decay.sinusoidal_dot_products(range(-1, -300, -1), d_model, base))


def test_sinusoidal_dot_product_is_not_monotone_and_goes_negative():
    values = decay.sinusoidal_dot_products(range(0, 20_000), 128, 10000.0)
    assert values[0] == 64 and bool((values[1:] > values[:-1]).any())
    assert values.min() < 0


def test_sinusoidal_encoding_and_similarity():
    encoding = decay.sinusoidal_encoding(range(5), 8, 10000.0)
    np.testing.assert_allclose(encoding[3].numpy(), sinusoidal_pe(3, 8, 10000.0), atol=1e-15)
    matrix = decay.sinusoidal_similarity(40, 32, 10000.0)
    assert matrix.shape == (40, 40)
    torch.testing.assert_close(matrix, matrix.T)
    torch.testing.assert_close(torch.diagonal(matrix), torch.full((40,), 16.0, dtype=torch.float64))
    torch.testing.assert_close(torch.diagonal(matrix, 7), decay.sinusoidal_dot_products([7] * 33, 32, 10000.0))
    with pytest.raises(ValueError, match="even"):
        decay.sinusoidal_frequencies(7)
    with pytest.raises(ValueError, match="base"):
        decay.sinusoidal_frequencies(8, 1.0)


def test_projected_similarity_loses_the_toeplitz_structure():
    projection = decay.projection_matrix(32, seed=0)
    matrix = decay.sinusoidal_similarity(64, 32, 10000.0, projection)
    encoding = torch.from_numpy(np.stack([sinusoidal_pe(t, 32, 10000.0) for t in range(64)]))
    torch.testing.assert_close(matrix, encoding @ projection @ encoding.T)
    diagonal = torch.diagonal(matrix, 5)
    assert diagonal.std() > 0.2 * diagonal.abs().mean()  # a Toeplitz matrix has constant diagonals
    assert (matrix - matrix.T).abs().max() > 0.1 * matrix.abs().max()


# --- real q·k ------------------------------------------------------------------------------------


def test_rope_scores_equal_explicit_rotations():
    generator = np.random.default_rng(5)
    q, k = generator.standard_normal((2, 3, 16))
    thetas = theta(16, 10000.0)
    distances = [0, 1, 9, 250]
    scores = decay.rope_scores(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(thetas), distances)
    m = 1000
    for d_index, r in enumerate(distances):
        for draw in range(3):
            expected = (rotation(m * thetas) @ q[draw]) @ (rotation((m - r) * thetas) @ k[draw])
            assert scores[draw, d_index].item() == pytest.approx(expected, abs=1e-10)


def test_all_ones_is_twice_the_sinusoidal_curve():
    thetas = default_inv_freq(10000.0, 64)
    distances = torch.arange(0, 500, dtype=torch.float64)
    ones = decay.all_ones_rope_score(thetas, distances)
    torch.testing.assert_close(ones, 2 * decay.sinusoidal_dot_products(distances, 64, 10000.0))
    torch.testing.assert_close(decay.expected_rope_score(thetas, distances, 0.25), 0.25 * ones)


@pytest.mark.parametrize("draws", [5, 300])  # fewer and more draws than features: both ways of computing
def test_score_statistics_equal_the_per_draw_scores(draws):
    thetas = default_inv_freq(10000.0, 32)
    distances = torch.arange(0, 200, dtype=torch.float64)
    statistics = decay.rope_score_statistics(thetas, distances, draws, 0.5, seed=11)
    q, k = decay.correlated_queries_keys(draws, 32, 0.5, seed=11)
    every = decay.rope_scores(q, k, thetas, distances)
    torch.testing.assert_close(statistics.mean, every.mean(dim=0))
    torch.testing.assert_close(statistics.std, every.std(dim=0, correction=0))
    torch.testing.assert_close(statistics.draws, every[:3])


def test_random_scores_are_reproducible_and_follow_the_expectation():
    thetas = default_inv_freq(10000.0, 32)
    distances = torch.arange(0, 300, dtype=torch.float64)
    first = decay.rope_score_statistics(thetas, distances, 4096, 0.5, seed=3)
    again = decay.rope_score_statistics(thetas, distances, 4096, 0.5, seed=3)
    other = decay.rope_score_statistics(thetas, distances, 4096, 0.5, seed=4)
    assert torch.equal(first.mean, again.mean) and not torch.equal(first.mean, other.mean)
    expected = 2 * 0.5 * torch.cos(torch.outer(distances, thetas)).sum(dim=1)
    assert torch.all((first.mean - expected).abs() < 5 * first.std / math.sqrt(4096))
    independent = decay.rope_score_statistics(thetas, distances, 4096, 0.0, seed=3)
    assert independent.mean.abs().max() < 5 * independent.std.max() / math.sqrt(4096)
    q, k = decay.correlated_queries_keys(50_000, 4, 0.75, seed=0)
    assert np.corrcoef(q[:, 0].numpy(), k[:, 0].numpy())[0, 1] == pytest.approx(0.75, abs=0.01)
    with pytest.raises(ValueError, match="correlation"):
        decay.correlated_queries_keys(3, 4, 1.5, seed=0)


def test_projected_sinusoidal_scores_equal_explicit_projections_and_do_not_decay():
    d_model, base, t = 16, 10000.0, 300
    offsets = torch.arange(-300, 301, dtype=torch.float64)
    statistics = decay.projected_sinusoidal_statistics(offsets, d_model, base, t, draws=6, seed=2)
    w_q, w_k = next(decay.random_projections(6, d_model, seed=2))
    query = sinusoidal_pe(t, d_model, base)
    for draw in range(3):
        for k in (-300, -1, 0, 17, 300):
            key = sinusoidal_pe(t + k, d_model, base)
            expected = (w_q[draw].numpy() @ query) @ (w_k[draw].numpy() @ key)
            assert statistics.draws[draw, k + 300].item() == pytest.approx(expected, abs=1e-10)
    for draw in statistics.draws:
        asymmetry = (draw - draw.flip(0)).norm() / draw.norm()
        assert asymmetry > 0.2  # PE·PE itself is exactly symmetric in k
    plain = decay.sinusoidal_dot_products(offsets, d_model, base)
    assert plain.argmax() == 300 and torch.equal(plain, plain.flip(0))
    many = decay.projected_sinusoidal_statistics(offsets, d_model, base, t, draws=2000, seed=2)
    assert many.mean.abs().max() < 0.25 * many.std.min()


def cosine_sums(d_model: int, base: float, offsets) -> np.ndarray:
    return np.cos(np.outer(np.asarray(offsets, dtype=np.float64), theta(d_model, base))).sum(axis=1)


@pytest.mark.parametrize(("d_model", "base", "expected"), [(128, 10000.0, 1707), (64, 10000.0, 725), (16, 100.0, 16)])
def test_first_negative_dot_product_is_the_first_offset_below_zero(d_model, base, expected):
    values = cosine_sums(d_model, base, range(4000))
    first = int(np.flatnonzero(values < 0)[0])
    assert first == expected  # computed here from the definition, so the page's number is pinned twice
    assert decay.first_negative_dot_product(d_model, base) == first
    assert decay.first_negative_dot_product(d_model, base, limit=first - 1) is None
    assert decay.first_negative_dot_product(d_model, base, limit=first) == first


def test_first_negative_dot_product_crosses_chunk_boundaries():
    """d = 128, base 10^6 first dips below zero at k = 27,115: past the first chunks of the doubling search."""
    values = cosine_sums(128, 1e6, range(30_000))
    assert decay.first_negative_dot_product(128, 1e6) == int(np.flatnonzero(values < 0)[0]) == 27_115
    with pytest.raises(ValueError, match="even"):
        decay.first_negative_dot_product(7)


# --- the lesson: the numbers the page states, the settings, the look ------------------------------

SMALL = {"max_distance": 4096, "draws": 16, "max_offset": 256, "positions": 32}


def small(**changes) -> lesson.Settings:
    return dataclasses.replace(lesson.Settings.from_mapping(SMALL), **changes)


def test_roformer_landmarks_are_measured():
    """RoFormer's Fig. 2 (d = 128, base 10^4): exactly 32.5 at r = 0, 6.55 at r = 250; the level and the rebounds."""
    marks = lesson.roformer_landmarks()
    exact = np.concatenate([bound_numpy(theta(128, 10_000.0), np.arange(start, min(start + 8192, 65_537)))
                            for start in range(0, 65_537, 8192)])
    assert marks.at_zero == 32.5
    assert f"{marks.at_distance:.2f}" == "6.55"
    assert marks.at_distance == pytest.approx(exact[250], rel=1e-12)
    level = decay.random_phase_level(64)
    first = int(np.flatnonzero(exact <= level)[0])
    assert marks.first_at_level == first == 557 and marks.level == level
    assert marks.rebound == pytest.approx(exact[first:].max() / level, rel=1e-12)
    assert f"{marks.rebound:.1f}" == "3.0"  # "bounces back up to 3.0× that level"


def test_sinusoidal_numbers_the_page_states():
    result = lesson.LESSON.result(lesson.Settings())
    values = cosine_sums(128, 10_000.0, range(1026))
    rise = int(np.flatnonzero(values[1:] > values[:-1])[0])
    assert result.first_rise == (rise, pytest.approx(values[rise]), pytest.approx(values[rise + 1]))
    assert rise == 11
    crossing = result.first_negative
    assert crossing.offset == 1707 and crossing.value == pytest.approx(cosine_sums(128, 10_000.0, [1707])[0])
    assert not result.negative_in_range  # 1,707 is beyond the chart's ±1,024
    low = lesson.LESSON.result(small(d_model=16, sinusoidal_base=100.0, max_offset=64))
    assert low.first_negative.offset == int(np.flatnonzero(cosine_sums(16, 100.0, range(100)) < 0)[0]) == 16
    assert low.negative_in_range
    assert result.head_width == 64 and low.head_width == 16


def test_departures_from_direct_extrapolation_and_yarns_factor():
    result = lesson.LESSON.result(lesson.Settings())
    distances = np.arange(200)
    direct = bound_numpy(theta(128, 10_000.0), distances)
    found = {}
    for setup in result.setup.setups[1:]:
        values = bound_numpy(setup.frequencies().inv_freq.numpy(), distances)
        found[setup.title] = int(np.flatnonzero(np.abs(values - direct) > 0.01 * direct)[0])
    assert {d.title: d.distance for d in result.departures} == found == {
        "Position Interpolation": 1, "NTK-aware": 3, "YaRN": 42}
    assert result.yarn_score_factor == pytest.approx((0.1 * math.log(4) + 1) ** 2, rel=1e-12)


def test_the_bound_chart_has_its_own_head_dims_and_the_sidebar_head_dim_is_not_ignored():
    """``--set head_dim=64`` used to change nothing: it now sets the methods and q·k charts; the bound chart's
    head sizes are a control of their own (``--set bound_head_dims=64``)."""
    controls = lesson.Settings.controls()
    assert controls["bound_head_dims"].key == "dims" and controls["head_dim"].key == "d"
    assert "this chart" in controls["bound_head_dims"].label and controls["bound_head_dims"].group == lesson.BOUND
    figures = export_cli.collect({"decay": {"bound", "bound-methods", "rope-scores"}}, {"head_dim": 64, **SMALL})
    plain = export_cli.collect({"decay": {"bound", "bound-methods", "rope-scores"}}, SMALL)
    assert figures[("decay", "bound")].to_json() == plain[("decay", "bound")].to_json()
    assert "d = 64" in figures[("decay", "bound-methods")].layout.title.text
    assert "d = 64" in figures[("decay", "rope-scores")].layout.title.text
    own = export_cli.collect({"decay": {"bound"}}, {"bound_head_dims": 64, **SMALL})[("decay", "bound")]
    line = next(t for t in own.data if t.name == "base 10,000")
    assert line.x[0] == 1 and line.y[0] == pytest.approx(bound_numpy(theta(64, 10_000.0), [1])[0], rel=1e-6)


def test_bound_figures_take_their_look_from_the_theme():
    settings = small(bound_head_dims=(64, 128), bound_bases=(10_000.0, 1_000_000.0))
    figure = lesson.LESSON.figure("bound", settings)
    lines = {t.name: t for t in figure.data if t.legendgroup == t.name and t.mode == "lines" and t.fill is None}
    for (name, colour, dash) in (("base 10,000, d = 64", series_colour(0), DASHES[0]),
                                 ("base 1,000,000, d = 64", series_colour(1), DASHES[0]),
                                 ("base 10,000, d = 128", series_colour(0), DASHES[1])):
        assert (lines[name].line.color, lines[name].line.dash) == (colour, dash)
    methods = lesson.LESSON.figure("bound-methods", settings)
    keyed_lines = [t for t in methods.data if isinstance(t.meta, dict) and "method" in t.meta]
    assert [t.meta["method"] for t in keyed_lines] == ["direct", "pi", "ntk", "yarn"]
    for trace in keyed_lines:
        style = METHOD_STYLES[trace.meta["method"]]
        assert (trace.line.color, trace.line.dash) == (style.colour, style.dash)
        band = next(t for t in methods.data if t.name == f"{trace.name}: min–max")
        assert band.fillcolor == translucent(style.colour, 0.16)
    assert {t.line.color for t in methods.data if t.name.startswith("L")} == {MUTED}
    for built in (figure, methods, lesson.LESSON.figure("bound", settings, SLIDE),
                  lesson.LESSON.figure("bound-methods", settings, SLIDE)):
        bands = [t for t in built.data if t.fill == "toself"]
        assert bands and all(t.line.width == 0 for t in bands)  # no edge line, on the slide either
    sinusoidal = lesson.LESSON.figure("sinusoidal-dot", settings)
    assert sinusoidal.data[0].meta == {"encoding": "sinusoidal"}
    assert sinusoidal.data[0].line.color == ENCODING_STYLES["sinusoidal"].colour


def test_figure_names_typeset_their_maths():
    settings = small(max_distance=1 << 16)  # λₘₐₓ of d = 128, base 10^4 (54,410) is within range
    bound = lesson.LESSON.figure("bound", settings)
    assert any(t.name.startswith("λₘₐₓ = 54,41") for t in bound.data)
    names = {t.name for t in lesson.LESSON.figure("bound-methods", settings).data}
    assert {"L = 4,096", "L′ = 16,384"} <= names
    assert "W<sub>q</sub>" in lesson.LESSON.figure("similarity-projected", settings).layout.title.text
