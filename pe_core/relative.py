"""From absolute to relative position: the four terms of an absolute-PE attention score, and the
score matrix of each classic scheme that keeps, replaces or drops some of them.

With absolute encodings the query and key of tokens i and j are (xᵢ + pᵢ)W_Q and (xⱼ + pⱼ)W_K, so

    qᵢ·kⱼ = xᵢW_QW_Kᵀxⱼᵀ + xᵢW_QW_Kᵀpⱼᵀ + pᵢW_QW_Kᵀxⱼᵀ + pᵢW_QW_Kᵀpⱼᵀ
            content–content  content–position  position–content  position–position

and every relative scheme is a choice of what to do with the last three terms:

- Shaw et al. 2018: keep content–position with a learned vector a^K per clipped offset clip(j − i, k)
  (and add a^V to the values); drop the other two.
- Transformer-XL (Dai et al. 2019): pⱼ → sinusoidal R_{i−j} with its own projection W_{k,R}; pᵢW_Q → trainable u, v.
- T5 (Raffel et al. 2020): drop both cross terms; position–position becomes a learned scalar per log bucket of j − i.
- DeBERTa (He et al. 2021): keep both cross terms with relative embeddings at δ(i, j) and δ(j, i); drop
  position–position; divide by √(3d).
- TUPE (Ke et al. 2021): drop the cross terms; position–position with its own projections U_Q, U_K ("untied"),
  divided by √(2d), plus a T5-style relative bias.

Everything is float64 and vectorised; matrices are indexed [query i, key j]. Learned tables are
seeded random stand-ins: the structure of each score (what depends on i, j or only on i − j) is
what the lesson shows, not trained values.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.biases import t5_relative_bucket
from pe_core.rope import check_length, default_inv_freq

SCHEMES = ("absolute", "shaw", "xl", "t5", "deberta", "tupe")
TERMS = ("content_content", "content_position", "position_content", "position_position")


def _as_matrix(name: str, value: torch.Tensor, rows: int | None = None, cols: int | None = None) -> torch.Tensor:
    value = torch.as_tensor(value, dtype=torch.float64)
    if value.ndim != 2 or (rows is not None and value.shape[0] != rows) or (cols is not None and value.shape[1] != cols):
        want = f"[{rows if rows is not None else 'n'}, {cols if cols is not None else 'd'}]"
        raise ValueError(_("{name} must be a {want} matrix (got shape {shape}).").format(name=name, want=want, shape=tuple(value.shape)))
    return value


def _check_even(name: str, value) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 2 and value % 2 == 0):
        raise ValueError(_("{name} must be an even integer ≥ 2 (got {value!r}); sin and cos come in pairs.").format(name=name, value=value))
    return value


# --- the four terms ---------------------------------------------------------------------------------


class FourTerms(NamedTuple):
    """The expansion of an absolute-PE score into four [n, n] matrices (no 1/√d: scale them together)."""

    content_content: torch.Tensor
    content_position: torch.Tensor
    position_content: torch.Tensor
    position_position: torch.Tensor

    @property
    def total(self) -> torch.Tensor:
        return self.content_content + self.content_position + self.position_content + self.position_position


def absolute_score(x: torch.Tensor, p: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor) -> torch.Tensor:
    """((x + p)W_Q)((x + p)W_K)ᵀ: the raw score of attention with absolute position vectors added to the input."""
    x = _as_matrix("x", x)
    p = _as_matrix("p", p, *x.shape)
    w_q = _as_matrix("W_Q", w_q, x.shape[1])
    w_k = _as_matrix("W_K", w_k, x.shape[1], w_q.shape[1])
    return ((x + p) @ w_q) @ ((x + p) @ w_k).T


def four_terms(x: torch.Tensor, p: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor) -> FourTerms:
    """The four terms of ``absolute_score``: content–content, content–position, position–content, position–position."""
    x = _as_matrix("x", x)
    p = _as_matrix("p", p, *x.shape)
    w_q = _as_matrix("W_Q", w_q, x.shape[1])
    w_k = _as_matrix("W_K", w_k, x.shape[1], w_q.shape[1])
    xq, xk, pq, pk = x @ w_q, x @ w_k, p @ w_q, p @ w_k
    return FourTerms(xq @ xk.T, xq @ pk.T, pq @ xk.T, pq @ pk.T)


# --- relative offsets and their tables ------------------------------------------------------------------


def offsets(length: int) -> torch.Tensor:
    """j − i for every query i (rows) and key j (columns), int64 [n, n]."""
    check_length("length", length)
    positions = torch.arange(length)
    return positions[None, :] - positions[:, None]


def shaw_index(relative: torch.Tensor, max_distance: int) -> torch.Tensor:
    """Shaw et al. 2018, §3: the row clip(j − i, k) + k of the (2k + 1)-row tables w^K, w^V."""
    check_length("max_distance (the clipping distance k)", max_distance)
    return torch.as_tensor(relative, dtype=torch.long).clamp(-max_distance, max_distance) + max_distance


def deberta_log_bucket(relative: torch.Tensor, bucket_size: int, max_position: int) -> torch.Tensor:
    """DeBERTa-v2's log buckets (the reference code's ``make_log_bucket_position``, float64 as there).

    Offsets with |r| ≤ mid = bucket_size // 2 are kept; beyond, sign(r)·(mid + ⌈ln(|r|/mid) /
    ln((max_position − 1)/mid)·(mid − 1)⌉), so the offsets up to max_position − 1 share the
    buckets mid + 1 … 2·mid − 1 on a log scale.
    """
    check_length("bucket_size", bucket_size)
    check_length("max_position", max_position)
    mid = bucket_size // 2
    if mid < 2 or max_position - 1 <= mid:
        raise ValueError(_("Log buckets need bucket_size ≥ 4 and max_position > bucket_size/2 + 1 (got bucket_size "
                            "{bucket_size}, max_position {max_position}).").format(bucket_size=bucket_size, max_position=max_position))
    relative = torch.as_tensor(relative, dtype=torch.long)
    inside = (relative < mid) & (relative > -mid)
    magnitude = torch.where(inside, torch.full_like(relative, mid - 1), relative.abs()).to(torch.float64)
    logged = torch.ceil(torch.log(magnitude / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return torch.where(magnitude <= mid, relative, (logged * relative.sign()).long())


def deberta_index(relative: torch.Tensor, span: int, bucket_size: int = 0, max_position: int = 0) -> torch.Tensor:
    """He et al. 2021, §3.1: δ = 0 if r ≤ −k, 2k − 1 if r ≥ k, r + k otherwise, for r = i − j and span k.

    With ``bucket_size`` > 0 (DeBERTa-v2/v3), r is first put in ``deberta_log_bucket`` and the span is the
    bucket count, as in the reference code (``att_span = position_buckets``).
    """
    relative = torch.as_tensor(relative, dtype=torch.long)
    if bucket_size > 0:
        relative = deberta_log_bucket(relative, bucket_size, max_position)
        span = bucket_size
    check_length("span k", span)
    return (relative + span).clamp(0, 2 * span - 1)


def sinusoid_table(distances: torch.Tensor, dim: int, base: float = 10_000.0) -> torch.Tensor:
    """Transformer-XL's R_r = [sin(r·ω), cos(r·ω)] (sines then cosines, as its code lays them out), [len, dim]."""
    _check_even("dim", dim)
    angles = torch.outer(torch.as_tensor(distances, dtype=torch.float64), default_inv_freq(base, dim))
    return torch.cat((angles.sin(), angles.cos()), dim=-1)


def sinusoidal_positions(length: int, dim: int, base: float = 10_000.0) -> torch.Tensor:
    """Vaswani et al. 2017: p[t, 2i] = sin(tωᵢ), p[t, 2i+1] = cos(tωᵢ), [length, dim]."""
    check_length("length", length)
    _check_even("dim", dim)
    angles = torch.outer(torch.arange(length, dtype=torch.float64), default_inv_freq(base, dim))
    return torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(length, dim)


# --- the schemes --------------------------------------------------------------------------------------


class ShawOutput(NamedTuple):
    scores: torch.Tensor  # [n, n]: (xᵢW_Q)(xⱼW_K + a^K_ij)ᵀ/√d
    content: torch.Tensor  # [n, n]: (xᵢW_Q)(xⱼW_K)ᵀ/√d
    output: torch.Tensor  # [n, d]: Σⱼ αᵢⱼ(xⱼW_V + a^V_ij)


def shaw_attention(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, rel_k: torch.Tensor,
                   rel_v: torch.Tensor) -> ShawOutput:
    """Shaw et al. 2018, §3: relative vectors a^K_ij = w^K_{clip(j−i,k)} in the keys and a^V_ij in the values.

    ``rel_k`` and ``rel_v`` are the (2k + 1)-row tables; k follows from their length. No [n, n, d]
    tensor is built: the key term is Q·w^Kᵀ gathered by offset, the value term scatters α by offset.
    """
    x = _as_matrix("x", x)
    n, dim = x.shape
    q, k, v = x @ _as_matrix("W_Q", w_q, dim), x @ _as_matrix("W_K", w_k, dim), x @ _as_matrix("W_V", w_v, dim)
    rel_k = _as_matrix("w^K", rel_k, cols=q.shape[1])
    rel_v = _as_matrix("w^V", rel_v, rel_k.shape[0], v.shape[1])
    if rel_k.shape[0] % 2 != 1:
        raise ValueError(_("Shaw's tables have 2k + 1 rows, an odd number (got {shape}).").format(shape=rel_k.shape[0]))
    index = shaw_index(offsets(n), rel_k.shape[0] // 2)
    scale = 1 / math.sqrt(q.shape[1])
    content = q @ k.T * scale
    scores = content + torch.gather(q @ rel_k.T, 1, index) * scale
    weights = torch.softmax(scores, dim=-1)
    by_offset = torch.zeros(n, rel_v.shape[0], dtype=torch.float64).scatter_add_(1, index, weights)
    return ShawOutput(scores, content, weights @ v + by_offset @ rel_v)


def _by_offset(queries: torch.Tensor, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """queries[i]·table[index[i, j]] for every (i, j), without an [n, n, d] tensor."""
    return torch.gather(queries @ table.T, 1, index)


class SchemeScore(NamedTuple):
    """One scheme's attention logits for a sequence, split into what content alone gives and the rest."""

    scheme: str
    content: torch.Tensor  # [n, n]: the content–content term, scaled as the scheme scales it
    position: torch.Tensor  # [n, n]: every term that involves position

    @property
    def total(self) -> torch.Tensor:
        return self.content + self.position


class SchemeParameters(NamedTuple):
    """Seeded stand-ins for every learned table, shared by all schemes so they differ only in structure."""

    x: torch.Tensor  # [n, d] token vectors
    p: torch.Tensor  # [n, d] absolute positions (sinusoidal)
    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor
    shaw_k: torch.Tensor  # [2k + 1, d]
    shaw_v: torch.Tensor
    xl_w_r: torch.Tensor  # W_{k,R}
    xl_u: torch.Tensor  # [d]
    xl_v: torch.Tensor  # [d]
    t5_bias: torch.Tensor  # [buckets]
    deberta_rel: torch.Tensor  # [2k, d]
    deberta_w_qr: torch.Tensor
    deberta_w_kr: torch.Tensor
    tupe_u_q: torch.Tensor
    tupe_u_k: torch.Tensor


def scheme_parameters(length: int, dim: int, *, seed: int = 0, repeated_token: bool = True, shaw_distance: int = 8,
                      deberta_span: int = 16, t5_buckets: int = 32) -> SchemeParameters:
    """Random Gaussian stand-ins (projections scaled by 1/√d, so projected vectors keep unit variance).

    ``repeated_token``: every position holds the same token, so the content–content term is one
    constant and whatever varies over (i, j) comes from position alone.
    """
    check_length("length", length)
    _check_even("dim", dim)
    check_length("shaw_distance", shaw_distance)
    check_length("deberta_span", deberta_span)
    check_length("t5_buckets", t5_buckets)
    generator = torch.Generator().manual_seed(seed)

    def draw(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64) * scale

    projection = 1 / math.sqrt(dim)
    x = draw(1, dim).expand(length, dim).clone() if repeated_token else draw(length, dim)
    return SchemeParameters(
        x=x, p=sinusoidal_positions(length, dim),
        w_q=draw(dim, dim, scale=projection), w_k=draw(dim, dim, scale=projection), w_v=draw(dim, dim, scale=projection),
        shaw_k=draw(2 * shaw_distance + 1, dim), shaw_v=draw(2 * shaw_distance + 1, dim),
        xl_w_r=draw(dim, dim, scale=projection), xl_u=draw(dim), xl_v=draw(dim),
        t5_bias=draw(t5_buckets),
        deberta_rel=draw(2 * deberta_span, dim), deberta_w_qr=draw(dim, dim, scale=projection),
        deberta_w_kr=draw(dim, dim, scale=projection),
        tupe_u_q=draw(dim, dim, scale=projection), tupe_u_k=draw(dim, dim, scale=projection),
    )


def absolute_scheme(params: SchemeParameters) -> SchemeScore:
    """Vaswani et al. 2017 / BERT: all four terms, /√d."""
    terms = four_terms(params.x, params.p, params.w_q, params.w_k)
    scale = 1 / math.sqrt(params.x.shape[1])
    return SchemeScore("absolute", terms.content_content * scale,
                       (terms.content_position + terms.position_content + terms.position_position) * scale)


def shaw_scheme(params: SchemeParameters) -> SchemeScore:
    out = shaw_attention(params.x, params.w_q, params.w_k, params.w_v, params.shaw_k, params.shaw_v)
    return SchemeScore("shaw", out.content, out.scores - out.content)


def xl_terms(params: SchemeParameters) -> FourTerms:
    """Dai et al. 2019, eq. in §3.3: (a) xᵢW_qW_{k,E}ᵀxⱼᵀ, (b) xᵢW_qW_{k,R}ᵀR_{i−j}, (c) uW_{k,E}ᵀxⱼᵀ, (d) vW_{k,R}ᵀR_{i−j}."""
    x = params.x
    n, dim = x.shape
    distances = torch.arange(-(n - 1), n, dtype=torch.float64)  # i − j from −(n−1) to n−1
    keys_r = sinusoid_table(distances, dim) @ params.xl_w_r  # W_{k,R} R_r for every distance r
    index = (-offsets(n)) + (n - 1)  # row of i − j in that table
    q, k = x @ params.w_q, x @ params.w_k
    return FourTerms(q @ k.T, _by_offset(q, keys_r, index), (k @ params.xl_u)[None, :].expand(n, n),
                     _by_offset(params.xl_v[None, :].expand(n, dim), keys_r, index))


def xl_scheme(params: SchemeParameters) -> SchemeScore:
    terms = xl_terms(params)
    scale = 1 / math.sqrt(params.x.shape[1])
    return SchemeScore("xl", terms.content_content * scale,
                       (terms.content_position + terms.position_content + terms.position_position) * scale)


def t5_scheme(params: SchemeParameters, max_distance: int = 128) -> SchemeScore:
    """Raffel et al. 2020: qᵢ·kⱼ + b[bucket(j − i)], one learned scalar per bucket (T5 does not divide by √d)."""
    x = params.x
    n = x.shape[0]
    buckets = t5_relative_bucket(offsets(n), bidirectional=True, num_buckets=params.t5_bias.shape[0],
                                 max_distance=max_distance)
    return SchemeScore("t5", (x @ params.w_q) @ (x @ params.w_k).T, params.t5_bias[buckets])


def deberta_terms(params: SchemeParameters, bucket_size: int = 0, max_position: int = 0) -> FourTerms:
    """He et al. 2021, §3.1: content–content, Q^c_i·K^r_{δ(i,j)}, K^c_j·Q^r_{δ(j,i)}; position–position is zero."""
    x = params.x
    n = x.shape[0]
    span = params.deberta_rel.shape[0] // 2
    relative = -offsets(n)  # i − j
    delta = deberta_index(relative, span, bucket_size, max_position)  # δ(a, b) at [a, b]
    q_c, k_c = x @ params.w_q, x @ params.w_k
    k_r, q_r = params.deberta_rel @ params.deberta_w_kr, params.deberta_rel @ params.deberta_w_qr
    position_content = _by_offset(k_c, q_r, delta).T  # [j, i] = K^c_j · Q^r_{δ(j,i)}, transposed to [i, j]
    return FourTerms(q_c @ k_c.T, _by_offset(q_c, k_r, delta), position_content, torch.zeros(n, n, dtype=torch.float64))


def deberta_scheme(params: SchemeParameters) -> SchemeScore:
    terms = deberta_terms(params)
    scale = 1 / math.sqrt(3 * params.x.shape[1])
    return SchemeScore("deberta", terms.content_content * scale, (terms.content_position + terms.position_content) * scale)


def tupe_scheme(params: SchemeParameters, max_distance: int = 128) -> SchemeScore:
    """Ke et al. 2021 (TUPE-R): [(xᵢW_Q)(xⱼW_K)ᵀ + (pᵢU_Q)(pⱼU_K)ᵀ]/√(2d) + b[bucket(j − i)]."""
    x, p = params.x, params.p
    n, dim = x.shape
    scale = 1 / math.sqrt(2 * dim)
    buckets = t5_relative_bucket(offsets(n), bidirectional=True, num_buckets=params.t5_bias.shape[0],
                                 max_distance=max_distance)
    untied = (p @ params.tupe_u_q) @ (p @ params.tupe_u_k).T * scale
    return SchemeScore("tupe", (x @ params.w_q) @ (x @ params.w_k).T * scale, untied + params.t5_bias[buckets])


SCHEME_FUNCTIONS = {"absolute": absolute_scheme, "shaw": shaw_scheme, "xl": xl_scheme, "t5": t5_scheme,
                    "deberta": deberta_scheme, "tupe": tupe_scheme}


def scheme_scores(params: SchemeParameters, schemes=SCHEMES) -> tuple[SchemeScore, ...]:
    unknown = [s for s in schemes if s not in SCHEME_FUNCTIONS]
    if unknown:
        raise ValueError(_("Unknown scheme(s) {unknown}; choose from {choices}.").format(
            unknown=", ".join(map(str, unknown)), choices=", ".join(SCHEMES)))
    return tuple(SCHEME_FUNCTIONS[s](params) for s in schemes)


def offset_dependence(matrix: torch.Tensor) -> float:
    """How much of a [n, n] matrix is NOT a function of j − i: the RMS of what is left after subtracting
    each diagonal's mean, over the RMS of the matrix about its mean (0: it depends on j − i only, or is constant)."""
    matrix = _as_matrix("matrix", matrix)
    n = matrix.shape[0]
    if matrix.shape != (n, n):
        raise ValueError(_("The matrix must be square (got shape {shape}).").format(shape=tuple(matrix.shape)))
    index = (offsets(n) + n - 1).reshape(-1)
    values = matrix.reshape(-1)
    sums = torch.zeros(2 * n - 1, dtype=torch.float64).scatter_add_(0, index, values)
    counts = torch.zeros(2 * n - 1, dtype=torch.float64).scatter_add_(0, index, torch.ones_like(values))
    residual = values - (sums / counts)[index]
    spread = (values - values.mean()).square().mean().sqrt()
    if spread <= 1e-12 * float(values.abs().max()):  # constant up to rounding: nothing varies at all
        return 0.0
    return float(residual.square().mean().sqrt() / spread)
