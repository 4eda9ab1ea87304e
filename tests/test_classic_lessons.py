"""The three lessons from the classic write-ups: every number their pages state, computed and asserted here."""

from __future__ import annotations

import pytest
import torch

from lessons import caveats, lineage, rope_code
from lessons.checked import checked, variants

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def result(lesson, **values):
    return lesson.LESSON.result(lesson.LESSON.settings.from_mapping(values))


# --- lineage ----------------------------------------------------------------------------------------------


def test_lineage_defaults_state_what_the_page_says():
    r = result(lineage)
    assert r.dependence["absolute"] > 0.5 and 0.05 < r.dependence["tupe"] < 0.5
    for scheme in ("shaw", "xl", "t5", "deberta"):
        assert r.dependence[scheme] < 1e-12
    assert lineage.dependence_note(r.dependence["shaw"]) == "a function of i − j only"
    assert lineage.dependence_note(0.9) == "90% not a function of i − j"
    # distances: Shaw 2k + 1 = 9 rows, T5 31 of 32 (no positive-side bucket for distance 0), DeBERTa 2k = 16,
    # DeBERTa-v2 log buckets 415 of 512 on ±300
    assert [c.distinct for c in r.index_curves] == [9, 31, 16, 415]
    assert [c.table_size for c in r.index_curves] == [9, 32, 16, 512]


def test_lineage_other_absolute_encodings():
    r = result(lineage)
    assert r.cnn_radius == 3 and r.cnn_marked == 6 and r.settings.abs_positions == 64
    assert r.hierarchical_count == 64 and r.hierarchical_collisions == 0
    assert lineage.BERT_POSITIONS ** 2 == 262_144
    assert r.absolute_dependence["floater"] < 1e-12 and r.absolute_dependence["complex"] < 1e-12
    assert f"{100 * r.absolute_dependence['multiplicative']:.0f}" == "66"  # the page's "66% of this token's is not"
    # α = 1/2: (i, j) and (j, i) collide. With n = 12 and positions i·12 + j < 64 both orders exist for digits
    # 0 … 4 (C(5, 2) = 10 pairs) and for 5 with 0 … 3 (5·12 + j < 64): 14
    assert result(lineage, alpha=0.5).hierarchical_collisions == 14
    # circular padding leaves nothing to read; more layers see further in
    assert result(lineage, padding="circular").cnn_marked == 0
    deep = result(lineage, cnn_layers=8, cnn_kernel=5)
    assert deep.cnn_radius == 16 and deep.cnn_marked == 32


def test_lineage_figures_carry_the_computed_matrices():
    settings = lineage.Settings()
    figure = lineage.LESSON.figure("four-terms", settings)
    terms = result(lineage).terms
    assert len(figure.data) == 5
    torch.testing.assert_close(torch.as_tensor(figure.data[4].z), terms.total, rtol=0, atol=1e-12)
    assert figure.layout.annotations[0].text.endswith("<br>constant")  # one token repeated
    kept = lineage.LESSON.figure("kept-terms", settings)
    assert list(kept.data[0].y) == [lineage.scheme_title(s) for s in lineage.SCHEMES]
    index = lineage.LESSON.figure("distance-index", settings)
    assert [len(t.x) for t in index.data] == [601] * 4


# --- rope_code --------------------------------------------------------------------------------------------


def test_rope_code_default_is_the_issue_example():
    r = result(rope_code)
    assert r.walk.dim == 8 and r.walk.base == 10_000.0 and r.walk.position == 3
    assert r.walk.theta.tolist() == pytest.approx([1.0, 0.1, 0.01, 0.001], rel=1e-15)
    assert r.walk.largest_difference == 0.0
    table = rope_code.walkthrough_table(r)
    assert table["pair i"] == [0, 1, 2, 3] and max(table["largest |difference|"]) == 0.0
    assert r.pairing_gap < 1e-12 and r.porting_error > 0.5


@pytest.mark.parametrize("dim, position", [(2, 0), (16, 999), (128, 1_000_000)])
def test_rope_code_forms_agree_everywhere_the_controls_reach(dim, position):
    r = result(rope_code, head_dim=dim, position=position, vector="random")
    assert r.walk.largest_difference <= 1e-12
    assert r.pairing_gap <= 1e-12
    assert (r.porting_error < 1e-12) == (dim == 2)
    pairs = dim // 2
    assert r.pairs_drawn == (list(range(pairs)) if pairs <= 4 else [0, 1, pairs - 2, pairs - 1])


def test_rope_code_pairs_figure_keeps_its_height_as_d_grows():
    """One row of planes from d = 8 up: scrubbing d does not move what is under the figure."""
    def pairs_figure(dim):
        return rope_code.LESSON.figure("pairs", rope_code.LESSON.settings.from_mapping({"head_dim": dim}))

    heights = {dim: pairs_figure(dim).layout.height for dim in (8, 16, 128)}
    assert len(set(heights.values())) == 1, heights
    titles = [annotation.text for annotation in pairs_figure(128).layout.annotations]
    assert [title.split("<br>")[0] for title in titles] == ["pair 0", "pair 1", "pair 62", "pair 63"]
    assert titles[0] == "pair 0<br>3"  # m = 3, θ₀ = 1
    assert rope_code.LESSON.caption("pairs", rope_code.LESSON.settings.from_mapping({"head_dim": 128})) == (
        "The first 2 and the last 2 of the 64 pairs: the fastest turns and the slowest. Over each pair, its turn "
        "m·θᵢ in radians; the dotted arc is the turn modulo 2π.")


def test_rope_code_shows_the_functions_it_runs():
    assert "def precompute_freqs_cis" in rope_code.SOURCES["complex"] and "view_as_complex" in rope_code.SOURCES[
        "complex"]
    assert "def rotate_half" in rope_code.SOURCES["half"] and "def apply_rotary_pos_emb" in rope_code.SOURCES["half"]
    assert "def half_split_order" in rope_code.SOURCES["permute"]


# --- caveats -------------------------------------------------------------------------------------------------


def test_caveats_kv_numbers():
    r = result(caveats)
    kv = r.kv
    assert int(kv.lengths[-1]) == 32_768 and kv.stale_keys == 32_767
    assert kv.current_base == pytest.approx(10_000 * 8 ** (128 / 126), rel=1e-12)
    assert f"{kv.current_base:,.0f}" == "82,685"
    assert kv.expected[0] == 0 and kv.measured[0] == 0
    assert 0.9 < float(kv.measured[-1] / kv.expected[-1]) < 1.1
    assert f"{float(kv.expected[-1]):.2f}" == "1.29" and f"{float(kv.measured[-1]):.2f}" == "1.33"  # as the page says


def test_caveats_ntk_numbers():
    r = result(caveats)
    assert r.unseen_pairs == 17 and r.ntk_at_ratio.first_partial_pair == 46
    assert r.worst_ratio == pytest.approx(8 ** (34 / 126), rel=1e-12) and f"{r.worst_ratio:.3g}" == "1.75"
    assert f"{r.ntk_at_ratio.required_scale:.4g}" == "17.25" and f"{r.ntk_at_ratio.safe_ratio:.4g}" == "4.565"
    assert int(r.ntk_at_needed.unseen.sum()) == 0
    assert r.pi_target == 32_768 and r.pi_slipped == 262_144 and r.slip_factor == 64


def test_caveats_cost_numbers():
    r = result(caveats)
    short, long = (r.cost_at(n) for n in caveats.COST_QUOTES)
    assert f"{float(short.prefill_ratio['rerope'][0]):.3f}" == "1.071"
    assert f"{float(short.decode_ratio['rerope'][0]):.3f}" == "1.107"
    assert f"{float(long.prefill_ratio['rerope'][0]):.3f}" == "1.421"
    assert f"{float(long.decode_ratio['rerope'][0]):.3f}" == "1.632"
    assert r.leaky_reach == 28_912
    assert result(caveats, leaky_k=4.0).leaky_reach == 256 + 4 * (2047 - 256)


def test_caveats_pi_ratio_figure_is_flat_and_ntk_overshoots():
    figure = caveats.LESSON.figure("ntk-angles")
    names = [t.name for t in figure.data]
    assert names[:3] == ["NTK-aware, s = L′/L = 8", "NTK-aware, s = 17.25 (needed)", "PI, s = 8"]
    assert set(figure.data[2].y) == {1.0}
    assert len(figure.data[3].x) == 17  # the pairs marked beyond training


# --- the formulas the pages show --------------------------------------------------------------------------


@pytest.mark.parametrize("slug", [
    "lineage_four_terms", "lineage_projected_sinusoid", "lineage_deberta_symmetry", "lineage_logit_scale",
    "absolute_floater_sinusoid", "absolute_multiplicative", "absolute_hierarchical", "absolute_complex_order",
    "code_d8_example", "code_complex_equals_rotate_half", "code_permuted_weights",
    "caveat_dynamic_cache_error", "caveat_ntk_required_scale", "caveat_pi_map", "caveat_rerope_cost",
])
def test_every_formula_the_pages_show_is_verified(slug):
    assert checked(slug).holds


def test_the_issues_slips_are_refuted_next_to_their_claims():
    assert [v.slug for v in variants("caveat_pi_map")] == ["caveat_pi_times_s"]
    assert [v.slug for v in variants("caveat_ntk_required_scale")] == ["caveat_ntk_real_ratio"]
    for slug in ("caveat_pi_map", "caveat_ntk_required_scale", "lineage_projected_sinusoid",
                 "lineage_deberta_symmetry", "code_permuted_weights"):
        for variant in variants(slug):
            assert not variant.holds and variant.counterexample and variant.said and variant.shows
    slip = checked("caveat_pi_times_s")
    assert "258048" in slip.counterexample  # s²L − L at s = 8, L = 4096
    ntk = checked("caveat_ntk_real_ratio")
    assert "i₀ = 46" in ntk.counterexample and "1.753" in ntk.counterexample
