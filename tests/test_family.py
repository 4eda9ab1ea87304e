"""Reference values for the wider family: sinusoidal, ALiBi, T5 buckets, ReRoPE, DCA and logit scaling,
and the numbers the lesson's prose states.

Expected values come from the papers (typed in from there), from closed forms, or from
deliberately naive loop implementations written here; never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from lessons import family as lesson
from pe_core import RopeSpec, rope_frequencies, yarn_get_mscale
from pe_core import family as fam
from pe_core.biases import alibi_bias, alibi_slopes, t5_relative_bucket

# T5's default buckets (32, max_distance 128, bidirectional; Raffel et al. 2020) for i − j = 0 .. 30, typed in
# from the bucket formula by hand: 8 exact, then ⌊8 + ln(n/8)/ln(16)·8⌋.
T5_DEFAULT_TABLE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10,
                     11, 11, 11, 11, 11, 11, 11, 11]


# --- sinusoidal ---------------------------------------------------------------------------------


def test_sinusoidal_matches_vaswani_formula_entry_by_entry():
    length, dim, base = 7, 10, 10000.0
    encoding = fam.sinusoidal_encoding(range(length), dim, base)
    assert encoding.shape == (length, dim) and encoding.dtype == torch.float64
    for pos in range(length):
        for i in range(dim // 2):
            angle = pos / base ** (2 * i / dim)
            assert encoding[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-15)
            assert encoding[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-15)


def test_sinusoidal_dot_product_depends_only_on_distance():
    encoding = fam.sinusoidal_encoding(range(64), 32, 10000.0)
    gram = encoding @ encoding.T
    omega = torch.tensor([10000.0 ** (-2 * i / 32) for i in range(16)], dtype=torch.float64)
    for m, n in ((0, 5), (10, 15), (40, 45), (3, 50)):
        assert gram[m, n].item() == pytest.approx(torch.cos((m - n) * omega).sum().item(), abs=1e-12)
    assert gram[0, 5].item() == pytest.approx(gram[30, 35].item(), abs=1e-12)


def test_sinusoidal_shift_is_a_linear_map():
    """PE(t + k) = R_k PE(t) with the same block rotation R_k for every t."""
    encoding = fam.sinusoidal_encoding(range(40), 8, 100.0)
    omega = torch.tensor([100.0 ** (-2 * i / 8) for i in range(4)], dtype=torch.float64)
    k = 7
    for t in (0, 3, 20):
        sin_t, cos_t = encoding[t, 0::2], encoding[t, 1::2]
        shifted_sin = sin_t * torch.cos(k * omega) + cos_t * torch.sin(k * omega)
        shifted_cos = cos_t * torch.cos(k * omega) - sin_t * torch.sin(k * omega)
        torch.testing.assert_close(encoding[t + k, 0::2], shifted_sin, rtol=0, atol=1e-12)
        torch.testing.assert_close(encoding[t + k, 1::2], shifted_cos, rtol=0, atol=1e-12)


def test_sinusoidal_periods_grow_with_dimension():
    dim, base = 128, 10000.0
    periods = fam.sinusoidal_periods(dim, base)
    assert periods.shape == (dim,)
    assert periods[0].item() == pytest.approx(2 * math.pi)
    assert periods[-1].item() == pytest.approx(2 * math.pi * base ** ((dim - 2) / dim))
    torch.testing.assert_close(periods[0::2], periods[1::2], rtol=0, atol=0)  # sin and cos of a pair
    assert bool((periods[2::2] > periods[0:-2:2]).all())
    # the column really repeats after its period: sin(ω(pos + T)) = sin(ω pos)
    omega = 2 * math.pi / periods[10].item()
    assert math.sin(omega * (3.0 + periods[10].item())) == pytest.approx(math.sin(omega * 3.0), abs=1e-9)


@pytest.mark.parametrize("bad", [0, 3, 7.0, True])
def test_sinusoidal_rejects_odd_or_bad_dims(bad):
    with pytest.raises(ValueError, match="even integer"):
        fam.sinusoidal_encoding(range(4), bad)


def test_position_similarity_is_cosine():
    vectors = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    similarity = fam.position_similarity(vectors)
    expected = torch.tensor([[1, 0, 1 / math.sqrt(2)], [0, 1, 1 / math.sqrt(2)], [1 / math.sqrt(2), 1 / math.sqrt(2), 1]],
                            dtype=torch.float64)
    torch.testing.assert_close(similarity, expected, rtol=0, atol=1e-12)


def test_sinusoidal_similarity_is_toeplitz():
    positions, learned_sim, sinusoidal_sim = fam.learned_and_sinusoidal_similarity(torch.randn(20, 7))
    assert positions.tolist() == list(range(20))
    assert learned_sim.shape == sinusoidal_sim.shape == (20, 20)
    torch.testing.assert_close(learned_sim.diagonal(), torch.ones(20, dtype=torch.float64))
    torch.testing.assert_close(sinusoidal_sim.diagonal(1)[:-1], sinusoidal_sim.diagonal(1)[1:], rtol=0, atol=1e-12)


def test_long_learned_tables_are_sampled_exactly():
    table = torch.randn(5000, 16)
    positions, learned_sim, sinusoidal_sim = fam.learned_and_sinusoidal_similarity(table, max_positions=300)
    assert len(positions) == 300 and positions[0] == 0 and positions[-1] == 4999
    a, b = int(positions[10]), int(positions[200])
    expected = torch.nn.functional.cosine_similarity(table[a].double(), table[b].double(), dim=0)
    assert learned_sim[10, 200].item() == pytest.approx(expected.item(), abs=1e-12)
    omega = torch.tensor([10000.0 ** (-2 * i / 16) for i in range(8)], dtype=torch.float64)
    assert sinusoidal_sim[10, 200].item() == pytest.approx(torch.cos((a - b) * omega).mean().item(), abs=1e-12)


# --- ALiBi --------------------------------------------------------------------------------------


def paper_slopes(n: int) -> list[float]:
    """The ALiBi paper's published get_slopes, re-typed as a plain recursive reference."""

    def power_of_two(count: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(count) - 3)))
        return [start * start**i for i in range(count)]

    if math.log2(n).is_integer():
        return power_of_two(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_two(closest) + paper_slopes(2 * closest)[0::2][: n - closest]


def test_alibi_slopes_for_8_heads_are_half_to_1_over_256():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([1 / 2**k for k in range(1, 9)], dtype=torch.float64),
                               rtol=1e-15, atol=0)


def test_alibi_slopes_for_12_heads_follow_the_papers_rule():
    expected = [2.0**-k for k in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(expected, dtype=torch.float64), rtol=1e-14, atol=0)


@pytest.mark.parametrize("heads", [1, 2, 3, 5, 6, 12, 16, 20, 24, 48, 64])
def test_alibi_slopes_match_paper_code(heads):
    torch.testing.assert_close(alibi_slopes(heads), torch.tensor(paper_slopes(heads), dtype=torch.float64),
                               rtol=1e-14, atol=0)


def test_misquoted_slopes_are_not_alibis():
    wrong = fam.misquoted_alibi_slopes(8)
    assert wrong[0].item() == 2**-8 and wrong[-1].item() == 2**-1
    assert not torch.allclose(wrong, alibi_slopes(8))
    torch.testing.assert_close(fam.misquoted_alibi_slopes(4), wrong[:4])  # ignores the head count entirely


def test_alibi_head_biases_pick_heads_from_the_full_tensor():
    full = alibi_bias(12, 20)
    torch.testing.assert_close(fam.alibi_head_biases(12, 20, [0, 5, 11]), full[[0, 5, 11]])
    with pytest.raises(ValueError):
        fam.alibi_head_biases(4, 8, [4])


def test_alibi_bias_is_minus_slope_times_distance():
    bias = alibi_bias(4, 6)
    slopes = alibi_slopes(4)
    assert bias[2, 5, 1].item() == pytest.approx(-slopes[2].item() * 4)
    assert bias[0, 3, 3].item() == 0


# --- T5 ----------------------------------------------------------------------------------------


def test_t5_defaults_reproduce_the_default_table():
    assert list(lesson.t5_table(True, 32, 128)) == T5_DEFAULT_TABLE
    # T5's own argument is key − query: a key before the query has a negative relative position
    assert t5_relative_bucket(-torch.arange(31)).tolist() == T5_DEFAULT_TABLE


def test_default_table_is_also_a_16_bucket_causal_model_but_not_a_32_bucket_one():
    assert list(lesson.t5_table(False, 16, 128)) == T5_DEFAULT_TABLE
    causal_32 = list(lesson.t5_table(False, 32, 128))
    assert causal_32[:16] == list(range(16)) and causal_32 != T5_DEFAULT_TABLE


def test_t5_keys_after_the_query_use_the_upper_half():
    after = t5_relative_bucket(torch.arange(1, 31))
    assert after.tolist() == [16 + b for b in T5_DEFAULT_TABLE[1:]]


def test_t5_everything_past_max_distance_shares_the_last_bucket():
    relative, bidirectional, causal = fam.t5_bucket_curves(32, 128)
    assert relative[0].item() == -192 and relative[-1].item() == 192
    assert set(bidirectional[relative <= -128].tolist()) == {15}
    assert set(bidirectional[relative >= 128].tolist()) == {31}
    assert set(causal[relative <= -128].tolist()) == {31}
    assert set(causal[relative >= 0].tolist()) == {0}


def test_t5_rejects_max_distance_inside_the_exact_range():
    with pytest.raises(ValueError, match="max_distance"):
        fam.t5_bucket_curves(128, 16)
    fam.check_t5_settings(32, 17)  # 16 exact causal buckets: 17 is the first valid max_distance


# --- relative positions ------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "window"), [(16, 1), (64, 16), (256, 100), (300, 299), (10, 50)])
def test_rerope_never_exceeds_the_window(length, window):
    matrix = fam.rerope_positions(fam.relative_distances(length), window)
    lower = ~torch.isnan(matrix)
    assert int(lower.sum()) == length * (length + 1) // 2
    assert matrix[lower].max().item() == min(window, length - 1)
    i, j = torch.tril_indices(length, length)
    torch.testing.assert_close(matrix[i, j], (i - j).clamp(max=window).to(torch.float64))


def test_leaky_rerope_has_slope_one_over_k_beyond_the_window():
    distance = torch.arange(100, dtype=torch.float64)
    window, k = 20, 8.0
    used = fam.leaky_rerope_positions(distance, window, k)
    torch.testing.assert_close(used[: window + 1], distance[: window + 1])
    torch.testing.assert_close(used[window + 1:] - used[window:-1], torch.full((100 - window - 1,), 1 / k,
                                                                            dtype=torch.float64))
    assert used[-1].item() == pytest.approx(window + (99 - window) / k)


def test_leaky_k_to_fit_keeps_positions_within_training_length():
    k = fam.leaky_k_to_fit(4096, 256, 512)
    assert k == pytest.approx((4095 - 256) / (511 - 256))
    used = fam.leaky_rerope_positions(torch.arange(4096, dtype=torch.float64), 256, k)
    assert used.max().item() == pytest.approx(511)
    assert math.ceil(k) == 16  # Su's reported best k for 512 → 4096


def test_shaw_clipping_is_symmetric():
    clipped = fam.shaw_clipped(fam.relative_distances(20, causal=False), 4)
    assert clipped.max().item() == 4 and clipped.min().item() == -4
    torch.testing.assert_close(clipped, -clipped.T)


def test_relative_distances_mask_the_future():
    distances = fam.relative_distances(5)
    assert torch.isnan(distances[1, 2]) and distances[4, 1].item() == 3


def naive_dual_chunk(length: int, s: int, c: int, w: int) -> list[list[float | None]]:
    """DCA's M[i][j] written straight from An et al. 2024, §3.1, one entry at a time."""
    matrix: list[list[float | None]] = []
    for i in range(length):
        row: list[float | None] = []
        for j in range(length):
            if j > i:
                row.append(None)
                continue
            key = j % s
            if i // s == j // s:
                query = i % s
            elif i // s - j // s == 1:
                query = s + i % s if i % s < w else c - 1
            else:
                query = c - 1
            row.append(float(query - key))
        matrix.append(row)
    return matrix


@pytest.mark.parametrize(("length", "s", "c", "w"), [(12, 6, 10, 4), (40, 6, 10, 4), (50, 8, 8, 0), (33, 3, 16, 2),
                                                      (20, 24, 32, 8)])
def test_dual_chunk_matches_the_papers_definition(length, s, c, w):
    positions = fam.dual_chunk_positions(length, s, c, w)
    expected = torch.tensor([[float("nan") if v is None else v for v in row]
                             for row in naive_dual_chunk(length, s, c, w)], dtype=torch.float64)
    torch.testing.assert_close(positions.relative, expected, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize(("length", "s", "c"), [(256, 24, 32), (256, 8, 128), (256, 128, 128), (97, 1, 8)])
def test_dual_chunk_never_exceeds_pretraining_positions(length, s, c):
    positions = fam.dual_chunk_positions(length, s, c)
    attended = ~torch.isnan(positions.relative)
    assert positions.relative[attended].min().item() >= 0
    assert positions.relative[attended].max().item() <= c - 1
    assert bool((positions.kind[attended] >= 0).all()) and bool((positions.kind[~attended] == -1).all())


def test_dual_chunk_keeps_true_distances_near_the_diagonal():
    s, c = 24, 32
    positions = fam.dual_chunk_positions(128, s, c)
    i, j = torch.tril_indices(128, 128)
    true = (i - j).to(torch.float64)
    near = (positions.kind[i, j] == 0) | ((positions.kind[i, j] == 1) & (i % s < c - s))
    torch.testing.assert_close(positions.relative[i, j][near], true[near])
    assert int((positions.kind == 2).sum()) > 0


def test_dual_chunk_short_text_is_plain_causal():
    positions = fam.dual_chunk_positions(20, 24, 32)
    torch.testing.assert_close(positions.relative, fam.relative_distances(20), equal_nan=True)


@pytest.mark.parametrize(("s", "c", "w"), [(40, 32, None), (24, 32, 9), (24, 32, -1)])
def test_dual_chunk_rejects_positions_beyond_pretraining(s, c, w):
    with pytest.raises(ValueError):
        fam.dual_chunk_positions(64, s, c, w)


def test_dual_chunk_last_query_curve():
    curve = fam.dual_chunk_last_query(96, 24, 32)
    matrix = fam.dual_chunk_positions(96, 24, 32).relative
    for distance in (0, 5, 30, 95):
        assert curve[distance].item() == matrix[95, 95 - distance].item()


# --- logit scaling ------------------------------------------------------------------------------


def test_attention_e_is_log_base_training_length():
    scale = fam.log_n_scale(torch.tensor([1.0, 512.0, 512.0**2, 8192.0]), 512)
    torch.testing.assert_close(scale, torch.tensor([0.0, 1.0, 2.0, math.log(8192) / math.log(512)],
                                                   dtype=torch.float64))
    torch.testing.assert_close(fam.clipped_log_n_scale(torch.tensor([10.0, 512.0, 1024.0]), 512),
                               torch.tensor([1.0, 1.0, 10 / 9], dtype=torch.float64))


def test_log_n_in_terms_of_scale_is_one_plus_ln_s_over_ln_l():
    s, length = sp.symbols("s L", positive=True)
    assert sp.simplify(sp.expand_log(sp.log(s * length, length) - (1 + sp.log(s) / sp.log(length)), force=True)) == 0


def test_log_n_equals_longropes_default_logit_factor():
    """LongRoPE scales cos and sin by √(1 + ln s / ln L), so q·k grows by log_L(sL)."""
    for factor in (2.0, 8.0, 32.0):
        spec = RopeSpec(head_dim=8, rope_type="longrope", factor=factor, original_max_position_embeddings=4096,
                        short_factor=(1.0,) * 4, long_factor=(1.0,) * 4)
        per_side = rope_frequencies(spec, 8192).attention_factor
        log_n = fam.log_n_scale(torch.tensor([factor * 4096]), 4096).item()
        assert per_side**2 == pytest.approx(log_n, rel=1e-12)


def test_yarn_temperature():
    scales = torch.tensor([0.5, 1.0, 2.0, 16.0, math.e])
    sqrt_inverse_t = fam.yarn_sqrt_inverse_temperature(scales)
    expected = torch.tensor([1.0, 1.0, 0.1 * math.log(2) + 1, 0.1 * math.log(16) + 1, 1.1], dtype=torch.float64)
    torch.testing.assert_close(sqrt_inverse_t, expected)
    torch.testing.assert_close(fam.yarn_logit_scale(scales), expected**2)
    for s in (1.5, 4.0, 64.0):
        assert fam.yarn_sqrt_inverse_temperature(torch.tensor([s])).item() == pytest.approx(yarn_get_mscale(s))
        spec = RopeSpec(head_dim=64, rope_type="yarn", factor=s)
        assert rope_frequencies(spec).attention_factor == pytest.approx(0.1 * math.log(s) + 1)


def test_scaling_rejects_bad_lengths():
    with pytest.raises(ValueError):
        fam.log_n_scale(torch.tensor([0.5]), 512)
    with pytest.raises(ValueError):
        fam.log_n_scale(torch.tensor([4.0]), 1)
    with pytest.raises(ValueError):
        fam.yarn_sqrt_inverse_temperature(torch.tensor([0.0]))


# --- the lesson: lazy sections, the numbers its prose states ------------------------------------------

LESSON = lesson.LESSON


def test_each_section_is_computed_only_when_asked():
    result = lesson.compute(lesson.Settings())
    assert result.alibi.slopes.tolist() == [2.0**-k for k in range(1, 9)]
    computed = {name for name in ("sinusoidal", "alibi", "t5", "relative", "dca", "curves", "scaling")
                if name in vars(result)}
    assert computed == {"alibi"}


def test_sinusoidal_caption_numbers():
    dim, base, length = 128, 10_000.0, 256
    periods = [2 * math.pi * base ** (2 * (j // 2) / dim) for j in range(dim)]
    complete = sum(period <= length for period in periods)
    assert complete == 52
    view = LESSON.result().sinusoidal
    assert view.complete == complete
    assert view.shortest == pytest.approx(2 * math.pi) and view.longest == pytest.approx(periods[-1])
    assert f"{periods[-1]:,.0f}" == "54,410"
    assert LESSON.caption("sinusoidal-periods") == ("52 of 128 dimensions complete a full period within 256 "
                                                    "positions. The longest period is 54,410 tokens.")


def test_t5_default_facts_the_page_states():
    facts = lesson.t5_defaults()
    assert facts.bidirectional == tuple(T5_DEFAULT_TABLE)
    assert facts.exact == 8 and facts.causal_exact == 16 and facts.causal_half_matches
    assert facts.shared == ((8, 11, 8), (12, 15, 9), (16, 22, 10), (23, 30, 11))
    text = lesson.t5_defaults_text()
    assert "distances 0–7 exact, then 8–11 → 8, 12–15 → 9, 16–22 → 10, 23–30 → 11" in text
    assert "keeps 0–15 exact" in text and "with 16 buckets gets exactly the encoder's row" in text


def test_alibi_example_for_twelve_heads():
    example = lesson.alibi_example(12)
    assert (example.power, example.first, example.second, example.last_of_power) == (8, 0.5, 0.25, 1 / 256)
    assert example.added_exponents == pytest.approx((-0.5, -1.5, -2.5, -3.5), abs=1e-12)
    assert lesson.alibi_example_text(12) == ("For 12 heads: 1/2, 1/4, …, 1/256 (the 8-head slopes), then "
                                             "$2^{-0.5}$, $2^{-1.5}$, $2^{-2.5}$, $2^{-3.5}$.")
    torch.testing.assert_close(LESSON.result().alibi.exponents, torch.arange(-1.0, -9.0, -1.0, dtype=torch.float64))


def test_relative_and_dca_captions():
    fit = lesson.leaky_fit()
    assert fit.k == pytest.approx((4096 - 1 - 256) / (512 - 1 - 256)) and fit.whole_k == 16
    largest = LESSON.result().relative.largest
    assert largest == {"plain": 63.0, "shaw": 8.0, "rerope": 16.0, "leaky": 16 + 47 / 4}
    caption = LESSON.caption("relative-matrices")
    assert "plain 63, Shaw 8, ReRoPE 16, Leaky ReRoPE 27.75" in caption and "k ≥ 15.05, so k = 16" in caption
    dca = LESSON.result().dca
    assert (dca.chunk, dca.window, dca.largest) == (24, 8, 31.0)
    assert LESSON.caption("dual-chunk").startswith("s = 24, c = 32, local window w = c − s = 8; the largest M is 31")


def test_impossible_t5_settings_fail_with_a_sentence_and_only_for_t5():
    bad = lesson.Settings.from_mapping({"t5_buckets": 128, "t5_max_distance": 16})
    assert "max_distance" in lesson.problem(bad, lesson.T5)
    assert lesson.problem(bad, lesson.ALIBI) is None
    with pytest.raises(ValueError, match="max_distance"):
        LESSON.figure("t5-buckets", bad)
    LESSON.figure("alibi-slopes", bad)  # other sections still draw


def test_heaviest_settings_draw_every_section():
    heavy = lesson.Settings.extremes()
    assert (heavy.alibi_heads, heavy.sin_length, heavy.t5_buckets, heavy.t5_max_distance) == (64, 2048, 128, 1024)
    result = LESSON.result(heavy)
    assert result.dca.chunk == 128 and result.dca.largest == 127
    assert result.relative.largest["leaky"] == pytest.approx(128 + 127 / 64)
    assert lesson.alibi_heads_to_show(64) == (0, 21, 42, 63)
    assert len(LESSON.all_figures(heavy)) == len(lesson.FIGURES)


def test_learned_view_and_table():
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.position_embedding = torch.nn.Embedding(1000, 8)
    table = lesson.learned_table(model)
    assert table is model.position_embedding.weight
    assert lesson.learned_table(torch.nn.Linear(2, 2)) is None and lesson.learned_table(None) is None
    view = lesson.learned_view(table)
    assert (view.positions, view.dim) == (1000, 8)
    assert view.caption.startswith("1000 learned positions of dimension 8") and "300 evenly spaced" in view.caption
    heatmap = view.figure.data[0]
    assert np.asarray(heatmap.z).shape == (300, 300) and heatmap.x[0] == 0 and heatmap.x[-1] == 999
    with pytest.raises(ValueError, match="matrix"):
        lesson.learned_view(torch.zeros(3))
