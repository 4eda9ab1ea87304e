"""pe_core.relative: the four terms, each scheme's score against a naive loop, DeBERTa's and Shaw's indices."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.biases import t5_relative_bucket
from pe_core.relative import (
    SCHEMES,
    absolute_score,
    deberta_index,
    deberta_log_bucket,
    deberta_terms,
    four_terms,
    offset_dependence,
    offsets,
    scheme_parameters,
    scheme_scores,
    shaw_attention,
    shaw_index,
    sinusoid_table,
    sinusoidal_positions,
    xl_terms,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def gaussian(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- the four terms ---------------------------------------------------------------------------------


def test_four_terms_sum_to_the_score():
    x, p, wq, wk = gaussian(7, 6, seed=1), gaussian(7, 6, seed=2), gaussian(6, 6, seed=3), gaussian(6, 6, seed=4)
    terms = four_terms(x, p, wq, wk)
    torch.testing.assert_close(terms.total, absolute_score(x, p, wq, wk), rtol=0, atol=1e-12)


def test_four_terms_of_a_hand_computed_case():
    # one dimension: x = (1, 2), p = (3, −1), W_Q = 2, W_K = −1, so W_Q W_Kᵀ = −2
    x, p = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0], [-1.0]])
    terms = four_terms(x, p, torch.tensor([[2.0]]), torch.tensor([[-1.0]]))
    assert terms.content_content.tolist() == [[-2.0, -4.0], [-4.0, -8.0]]
    assert terms.content_position.tolist() == [[-6.0, 2.0], [-12.0, 4.0]]
    assert terms.position_content.tolist() == [[-6.0, -12.0], [2.0, 4.0]]
    assert terms.position_position.tolist() == [[-18.0, 6.0], [6.0, -2.0]]
    assert terms.total.tolist() == [[-32.0, -8.0], [-8.0, -2.0]]  # (x + p) = (4, 1): −2·4·4, −2·4·1, −2·1·1


def test_transformer_xl_terms_sum_to_the_score_of_a_naive_loop():
    params = scheme_parameters(9, 8, seed=5, repeated_token=False)
    terms = xl_terms(params)
    n, d = params.x.shape
    naive = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            r = sinusoid_table(torch.tensor([float(i - j)]), d)[0]
            q, k = params.x[i] @ params.w_q, params.x[j] @ params.w_k
            naive[i, j] = q @ k + q @ (r @ params.xl_w_r) + params.xl_u @ k + params.xl_v @ (r @ params.xl_w_r)
    torch.testing.assert_close(terms.total, naive, rtol=0, atol=1e-12)
    # with one repeated token every term is a function of i − j only
    same = xl_terms(scheme_parameters(9, 8, seed=5))
    for term in same:
        assert offset_dependence(term) < 1e-12


def test_xl_sinusoid_is_sines_then_cosines():
    table = sinusoid_table(torch.tensor([0.0, 2.0]), 4)
    assert table[0].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert table[1].tolist() == pytest.approx([math.sin(2), math.sin(0.02), math.cos(2), math.cos(0.02)], abs=1e-15)


# --- Shaw ----------------------------------------------------------------------------------------------


def test_shaw_index_clips_j_minus_i():
    index = shaw_index(offsets(6), 2)
    # row i = 0: j − i = 0 … 5 → clip to 0, 1, 2, 2, 2, 2 → rows 2, 3, 4, 4, 4, 4
    assert index[0].tolist() == [2, 3, 4, 4, 4, 4]
    assert index[5].tolist() == [0, 0, 0, 0, 1, 2]
    assert index.min() == 0 and index.max() == 4


def test_shaw_attention_matches_a_naive_loop_keys_and_values():
    n, d, k = 7, 4, 2
    x, wq, wk, wv = gaussian(n, d, seed=1), gaussian(d, d, seed=2), gaussian(d, d, seed=3), gaussian(d, d, seed=4)
    rel_k, rel_v = gaussian(2 * k + 1, d, seed=5), gaussian(2 * k + 1, d, seed=6)
    out = shaw_attention(x, wq, wk, wv, rel_k, rel_v)
    scores = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            a = rel_k[max(-k, min(k, j - i)) + k]
            scores[i, j] = (x[i] @ wq) @ (x[j] @ wk + a) / math.sqrt(d)
    torch.testing.assert_close(out.scores, scores, rtol=0, atol=1e-12)
    weights = torch.softmax(scores, dim=-1)
    expected = torch.stack([sum(weights[i, j] * (x[j] @ wv + rel_v[max(-k, min(k, j - i)) + k]) for j in range(n))
                            for i in range(n)])
    torch.testing.assert_close(out.output, expected, rtol=0, atol=1e-12)


def test_shaw_rejects_an_even_table():
    with pytest.raises(ValueError, match="2k \\+ 1 rows"):
        shaw_attention(gaussian(3, 2), torch.eye(2), torch.eye(2), torch.eye(2), gaussian(4, 2), gaussian(4, 2))


# --- DeBERTa -------------------------------------------------------------------------------------------


def paper_delta(r: int, k: int) -> int:
    """He et al. 2021, eq. 3, for r = i − j, written case by case."""
    if r <= -k:
        return 0
    if r >= k:
        return 2 * k - 1
    return r + k


def reference_log_bucket(r: int, bucket_size: int, max_position: int) -> int:
    """DeBERTa's make_log_bucket_position for one offset, with the math module."""
    mid = bucket_size // 2
    magnitude = mid - 1 if -mid < r < mid else abs(r)
    if magnitude <= mid:
        return r
    logged = math.ceil(math.log(magnitude / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return int(math.copysign(logged, r))


@pytest.mark.parametrize("span", [1, 2, 64, 128, 256, 512])
def test_deberta_index_is_the_papers_delta_on_plus_minus_300(span):
    relative = torch.arange(-300, 301)
    assert deberta_index(relative, span).tolist() == [paper_delta(r, span) for r in range(-300, 301)]


@pytest.mark.parametrize("bucket_size, max_position", [(256, 512), (128, 512), (64, 1024)])
def test_deberta_log_buckets_on_plus_minus_300(bucket_size, max_position):
    relative = torch.arange(-300, 301)
    buckets = deberta_log_bucket(relative, bucket_size, max_position)
    assert buckets.tolist() == [reference_log_bucket(r, bucket_size, max_position) for r in range(-300, 301)]
    # and the table row is the paper's δ applied to the bucket, with the bucket count as span
    index = deberta_index(relative, 0, bucket_size, max_position)
    assert index.tolist() == [paper_delta(b, bucket_size) for b in buckets.tolist()]


def test_deberta_log_buckets_by_hand():
    # bucket 256, max 512: mid 128; 300 → 128 + ⌈ln(300/128)/ln(511/128)·127⌉ = 128 + ⌈78.14⌉ = 207
    r = torch.tensor([-511, -300, -129, -128, -1, 0, 1, 127, 128, 129, 300, 511])
    assert deberta_log_bucket(r, 256, 512).tolist() == [-255, -207, -129, -128, -1, 0, 1, 127, 128, 129, 207, 255]
    assert deberta_index(r, 0, 256, 512).tolist() == [1, 49, 127, 128, 255, 256, 257, 383, 384, 385, 463, 511]


def test_deberta_log_buckets_agree_with_float32_arithmetic_on_plus_minus_300():
    # transformers computes |r|/mid in float32; the reference repository in float64: same buckets here
    relative = torch.arange(-300, 301)
    mid = 128
    magnitude = torch.where((relative < mid) & (relative > -mid), torch.tensor(mid - 1), relative.abs())
    logged = torch.ceil(torch.log(magnitude / mid) / torch.log(torch.tensor((512 - 1) / mid)) * (mid - 1)) + mid
    float32 = torch.where(magnitude <= mid, relative, (logged * relative.sign()).long())
    assert torch.equal(float32, deberta_log_bucket(relative, 256, 512))


def test_deberta_terms_match_a_naive_loop():
    params = scheme_parameters(8, 4, seed=3, repeated_token=False, deberta_span=3)
    terms = deberta_terms(params)
    n, k = 8, 3
    q_c, k_c = params.x @ params.w_q, params.x @ params.w_k
    k_r, q_r = params.deberta_rel @ params.deberta_w_kr, params.deberta_rel @ params.deberta_w_qr
    for i in range(n):
        for j in range(n):
            # expected values as Python numbers: pytest.approx iterates over a tensor, and a 0-d one cannot be
            assert terms.content_position[i, j].item() == pytest.approx((q_c[i] @ k_r[paper_delta(i - j, k)]).item(), abs=1e-12)
            assert terms.position_content[i, j].item() == pytest.approx((k_c[j] @ q_r[paper_delta(j - i, k)]).item(), abs=1e-12)
    assert terms.position_position.abs().max() == 0


def test_log_bucket_rejects_tiny_settings():
    with pytest.raises(ValueError, match="bucket_size ≥ 4"):
        deberta_log_bucket(torch.arange(3), 2, 512)


# --- all schemes ------------------------------------------------------------------------------------------


def test_relative_schemes_depend_on_the_offset_only_for_one_repeated_token():
    params = scheme_parameters(32, 16, seed=1)
    dependence = {s.scheme: offset_dependence(s.position) for s in scheme_scores(params)}
    for scheme in ("shaw", "xl", "t5", "deberta"):
        assert dependence[scheme] < 1e-12, scheme
    assert dependence["absolute"] > 0.5  # the projected sinusoid keeps its i + j part
    assert 0.05 < dependence["tupe"] < 0.5  # the untied absolute term; its relative bias is Toeplitz


def test_with_random_tokens_only_t5_stays_purely_relative():
    params = scheme_parameters(32, 16, seed=1, repeated_token=False)
    dependence = {s.scheme: offset_dependence(s.position) for s in scheme_scores(params)}
    assert dependence["t5"] < 1e-12
    for scheme in ("shaw", "xl", "deberta"):
        assert dependence[scheme] > 0.5, scheme  # the offset enters through a content-dependent lookup


def test_t5_and_tupe_position_parts():
    params = scheme_parameters(20, 8, seed=2)
    t5, tupe = (s for s in scheme_scores(params, ("t5", "tupe")))
    buckets = t5_relative_bucket(offsets(20), num_buckets=32, max_distance=128)
    torch.testing.assert_close(t5.position, params.t5_bias[buckets], rtol=0, atol=0)
    untied = (params.p @ params.tupe_u_q) @ (params.p @ params.tupe_u_k).T / math.sqrt(16)
    torch.testing.assert_close(tupe.position - params.t5_bias[buckets], untied, rtol=0, atol=1e-12)
    assert [s.scheme for s in scheme_scores(params)] == list(SCHEMES)
    with pytest.raises(ValueError, match="Unknown scheme"):
        scheme_scores(params, ("rope",))


def test_offset_dependence_of_known_matrices():
    n = 12
    toeplitz = torch.as_tensor(offsets(n), dtype=torch.float64) ** 2
    assert offset_dependence(toeplitz) == 0.0
    assert offset_dependence(torch.ones(n, n, dtype=torch.float64)) == 0.0
    i = torch.arange(n, dtype=torch.float64)
    assert offset_dependence(i[:, None] + i[None, :]) == pytest.approx(1.0, rel=0.2)


def test_sinusoidal_positions_layout_and_errors():
    table = sinusoidal_positions(3, 4)
    assert table[1].tolist() == pytest.approx([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], abs=1e-15)
    with pytest.raises(ValueError, match="even integer"):
        sinusoidal_positions(3, 5)
    with pytest.raises(ValueError, match="must be a \\[n, d\\] matrix|matrix"):
        absolute_score(torch.ones(3), torch.ones(3), torch.eye(3), torch.eye(3))
