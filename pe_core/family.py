"""The wider family of positional encodings: sinusoidal, learned, relative-position schemes, logit scaling.

ALiBi and T5 live in ``pe_core.biases``; this module adds what the "wider family" page needs
around them. Every function is vectorised and float64; matrices are indexed [query i, key j],
and causal matrices hold NaN where the key lies in the query's future (j > i), because a
decoder never attends there.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.biases import alibi_slopes, t5_relative_bucket
from pe_core.rope import check_length, default_inv_freq, rotation_angles

# --- absolute encodings ------------------------------------------------------------------------


def _check_even_dim(dim) -> int:
    if not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 2 and dim % 2 == 0):
        raise ValueError(_("The embedding dimension must be an even integer ≥ 2 (got {dim!r}); sin and cos come in pairs.").format(dim=dim))
    return dim


def _check_base(base) -> float:
    if not (isinstance(base, (int, float)) and not isinstance(base, bool) and math.isfinite(base) and base > 1):
        raise ValueError(_("The base must be a number > 1 (got {base!r}).").format(base=base))
    return float(base)


def sinusoidal_frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """ω_i = base^(−2i/d) for i = 0 .. d/2 − 1 (Vaswani et al. 2017, §3.5): the same ladder RoPE uses."""
    return default_inv_freq(_check_base(base), _check_even_dim(dim))


def sinusoidal_encoding(positions, dim: int, base: float = 10000.0) -> torch.Tensor:
    """Vaswani et al. (2017), §3.5: PE[t, 2i] = sin(t·ω_i), PE[t, 2i+1] = cos(t·ω_i), ω_i = base^(−2i/d).

    ``positions`` is a range, a sequence or a tensor of positions. Returns a float64
    [len(positions), dim] matrix, sin and cos interleaved as in the paper. The one sinusoidal
    table of the code base: the family and decay lessons and the tiny model all use it.
    """
    angles = rotation_angles(sinusoidal_frequencies(dim, base), positions)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(start_dim=-2)


def sinusoidal_periods(dim: int, base: float = 10000.0) -> torch.Tensor:
    """Period in tokens of every dimension j: 2π·base^(2⌊j/2⌋/d) (sin and cos of a pair share it)."""
    return (2 * math.pi / sinusoidal_frequencies(dim, base)).repeat_interleave(2)


def position_similarity(embeddings: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between every pair of position vectors (rows) of a [positions, dim] matrix."""
    if embeddings.ndim != 2 or embeddings.shape[0] < 1 or embeddings.shape[1] < 1:
        raise ValueError(_("Position embeddings must be a [positions, dim] matrix (got shape {shape}).").format(shape=tuple(embeddings.shape)))
    vectors = embeddings.detach().to("cpu", torch.float64)
    unit = vectors / vectors.norm(dim=1, keepdim=True).clamp(min=1e-300)
    return unit @ unit.T


# --- ALiBi and T5 as the page shows them ---------------------------------------------------------


def misquoted_alibi_slopes(num_heads: int) -> torch.Tensor:
    """m_n = 2^(−8/n), a common misquote; NOT ALiBi's slopes (kept to show the difference).

    The paper's slopes are 2^(−8n/N) for N heads (a geometric sequence); 2^(−8/n) instead starts
    at 1/256 and climbs towards 1, and does not depend on the head count at all.
    """
    check_length("num_heads", num_heads)
    return 2.0 ** (-8.0 / torch.arange(1, num_heads + 1, dtype=torch.float64))


def alibi_head_biases(num_heads: int, length: int, heads) -> torch.Tensor:
    """ALiBi's causal bias −m·(i − j) [len(heads), length, length] for just the listed (zero-based) heads.

    The page draws a few heads; building all of them (64 × 256² floats) would waste memory and cache.
    """
    check_length("length", length)
    slopes = alibi_slopes(num_heads)
    index = torch.as_tensor(list(heads), dtype=torch.long)
    if index.numel() and (index.min() < 0 or index.max() >= num_heads):
        raise ValueError(_("Head indices must lie in 0 .. {last} (got {given}).").format(last=num_heads - 1, given=index.tolist()))
    positions = torch.arange(length, dtype=torch.float64)
    distance = (positions[:, None] - positions[None, :]).clamp(min=0)
    return -slopes[index][:, None, None] * distance


# --- relative positions: what distance RoPE (or a bias table) is actually given ------------------


def relative_distances(length: int, causal: bool = True) -> torch.Tensor:
    """i − j as a float64 [length, length] matrix; NaN above the diagonal when ``causal``."""
    check_length("length", length)
    positions = torch.arange(length, dtype=torch.float64)
    distance = positions[:, None] - positions[None, :]
    if causal:
        distance = distance.masked_fill(distance < 0, float("nan"))
    return distance


def _check_positive(name: str, value) -> float:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise ValueError(_("{name} must be a positive number (got {value!r}).").format(name=name, value=value))
    return float(value)


def shaw_clipped(distance: torch.Tensor, max_relative: int) -> torch.Tensor:
    """Shaw et al. (2018): clip(i − j, −k, k); every distance beyond k shares one learned vector."""
    check_length("max_relative (the clipping distance k)", max_relative)
    return distance.to(torch.float64).clamp(-max_relative, max_relative)


def rerope_positions(distance: torch.Tensor, window: int) -> torch.Tensor:
    """ReRoPE (Su, 2023): the relative position is i − j inside the window w and w beyond it."""
    check_length("window", window)
    return distance.to(torch.float64).clamp(max=window)


def leaky_rerope_positions(distance: torch.Tensor, window: int, k: float) -> torch.Tensor:
    """Leaky ReRoPE (Su, 2023): i − j inside the window, then w + (i − j − w)/k (slope 1/k, k > 1)."""
    check_length("window", window)
    if _check_positive("k", k) < 1:
        raise ValueError(_("k must be ≥ 1 (got {k!r}); the slope beyond the window is 1/k.").format(k=k))
    distance = distance.to(torch.float64)
    return torch.where(distance <= window, distance, window + (distance - window) / k)


def leaky_k_to_fit(target_length: int, window: int, train_length: int) -> float:
    """The smallest k for which Leaky ReRoPE keeps every distance of a target_length sequence below train_length.

    Solves w + (L' − 1 − w)/k ≤ L − 1 for k (at least 1).
    """
    for name, value in (("target_length", target_length), ("window", window), ("train_length", train_length)):
        check_length(name, value)
    if window >= train_length:
        raise ValueError(_("The window ({window}) must be shorter than the training length ({train_length}).").format(window=window, train_length=train_length))
    return max(1.0, (target_length - 1 - window) / (train_length - 1 - window))


class DualChunkPositions(NamedTuple):
    relative: torch.Tensor  # float64 [L, L]: the relative position each (query, key) pair is given; NaN if j > i
    kind: torch.Tensor  # int8 [L, L]: 0 intra-chunk, 1 successive chunk, 2 inter-chunk, -1 future (masked)
    key_positions: torch.Tensor  # float64 [L]: P_k = j mod s
    query_intra: torch.Tensor  # float64 [L]: P_q^intra = i mod s
    query_successive: torch.Tensor  # float64 [L]: P_q^succ = s + (i mod s) within the local window, else c − 1
    query_inter: float  # P_q^inter = c − 1 for every query


def dual_chunk_positions(
    length: int, chunk_size: int, train_length: int, local_window: int | None = None
) -> DualChunkPositions:
    """Dual Chunk Attention's relative-position matrix M (An et al. 2024, arXiv:2402.17463, §3.1).

    Keys get P_k = j mod s. A query in the key's own chunk uses i mod s (intra), a query in the
    next chunk uses s + (i mod s) for its first w tokens and c − 1 after (successive), and a
    query further away uses c − 1 (inter). With w ≤ c − s every entry of M lies in [0, c − 1],
    so no position beyond the pretraining length c is ever used. The paper sets w = c − s.
    """
    check_length("length", length)
    check_length("chunk_size", chunk_size)
    check_length("train_length", train_length)
    if chunk_size > train_length:
        raise ValueError(_("The chunk size s ({chunk_size}) must not exceed the pretraining length c ({train_length}).").format(chunk_size=chunk_size, train_length=train_length))
    window = train_length - chunk_size if local_window is None else local_window
    if not (isinstance(window, int) and 0 <= window <= train_length - chunk_size):
        raise ValueError(
            _("The local window w must be an integer in [0, c − s] = [0, {value}] (got {window!r}); a "
               "larger window would give positions beyond the pretraining length.").format(value=train_length - chunk_size, window=window)
        )
    index = torch.arange(length)
    within = (index % chunk_size).to(torch.float64)
    chunk = index // chunk_size
    query_successive = torch.where(within < window, chunk_size + within, torch.tensor(train_length - 1.0))
    chunk_gap = chunk[:, None] - chunk[None, :]
    intra = within[:, None] - within[None, :]
    successive = query_successive[:, None] - within[None, :]
    inter = (train_length - 1) - within[None, :].expand(length, length)
    relative = torch.where(chunk_gap == 0, intra, torch.where(chunk_gap == 1, successive, inter))
    future = index[None, :] > index[:, None]
    kind = torch.where(chunk_gap == 0, 0, torch.where(chunk_gap == 1, 1, 2)).to(torch.int8).masked_fill(future, -1)
    return DualChunkPositions(
        relative.masked_fill(future, float("nan")), kind, within, within, query_successive, float(train_length - 1)
    )


# --- scaling the logits with length ------------------------------------------------------------


def log_n_scale(lengths: torch.Tensor, train_length: int) -> torch.Tensor:
    """log-n scaling (Su 2021, entropy invariance; Chiang & Cholak 2022): logits × log_L(n), 1 at the training length L.

    n is the number of tokens the query attends to; below L the factor is < 1.
    """
    check_length("train_length", train_length)
    if train_length < 2:
        raise ValueError(_("The training length must be at least 2 for log_L(n) to exist."))
    lengths = torch.as_tensor(lengths, dtype=torch.float64)
    if bool((lengths < 1).any()):
        raise ValueError(_("Every length n must be ≥ 1."))
    return lengths.log() / math.log(train_length)


def clipped_log_n_scale(lengths: torch.Tensor, train_length: int) -> torch.Tensor:
    """log-n scaling applied only past the training length, max(1, log_L n), as Qwen(-1)'s logn-attention does."""
    return log_n_scale(lengths, train_length).clamp(min=1.0)


def yarn_sqrt_inverse_temperature(scales: torch.Tensor) -> torch.Tensor:
    """YaRN's √(1/t) = 0.1·ln s + 1 for s > 1, and 1 otherwise (Peng et al. 2023, eq. 22).

    It multiplies both q and k (transformers folds it into cos and sin), so the logits are
    multiplied by its square, 1/t.
    """
    scales = torch.as_tensor(scales, dtype=torch.float64)
    if bool((scales <= 0).any()):
        raise ValueError(_("Every scale s must be positive."))
    return torch.where(scales > 1, 0.1 * scales.log() + 1, torch.ones_like(scales))


def yarn_logit_scale(scales: torch.Tensor) -> torch.Tensor:
    """1/t = (0.1·ln s + 1)²: how much YaRN sharpens the softmax at scale s."""
    return yarn_sqrt_inverse_temperature(scales) ** 2


# --- bundles the page and the figure export share -------------------------------------------------


def relative_position_schemes(
    distance: torch.Tensor, shaw_clip: int, window: int, leaky_k: float
) -> dict[str, torch.Tensor]:
    """The same distances i − j as plain RoPE, Shaw clipping, ReRoPE and Leaky ReRoPE see them."""
    distance = distance.to(torch.float64)
    return {
        "plain": distance,
        "shaw": shaw_clipped(distance, shaw_clip),
        "rerope": rerope_positions(distance, window),
        "leaky": leaky_rerope_positions(distance, window, leaky_k),
    }


def dual_chunk_last_query(length: int, chunk_size: int, train_length: int) -> torch.Tensor:
    """DCA's position for true distance 0 .. length − 1, seen from the last query of a length-``length`` sequence."""
    return dual_chunk_positions(length, chunk_size, train_length).relative[-1].flip(0)


def t5_exact_buckets(num_buckets: int, bidirectional: bool) -> int:
    """How many small distances get a bucket of their own (per direction): half of the buckets per direction."""
    return (num_buckets // 2 if bidirectional else num_buckets) // 2


def check_t5_settings(num_buckets: int, max_distance: int) -> None:
    """T5's log spacing needs max_distance beyond the exact range, for both modes; otherwise it divides by ≤ 0."""
    check_length("num_buckets", num_buckets)
    check_length("max_distance", max_distance)
    exact = t5_exact_buckets(num_buckets, bidirectional=False)
    if max_distance <= exact:
        raise ValueError(
            _("max_distance ({max_distance}) must exceed the {exact} exact buckets that {num_buckets} "
               "causal buckets give (num_buckets/2); T5's logarithmic buckets span the distances from "
               "there to max_distance.").format(max_distance=max_distance, exact=exact, num_buckets=num_buckets)
        )


def t5_bucket_curves(num_buckets: int, max_distance: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Relative positions j − i over ±1.5·max_distance (at least ±16) and their buckets, bidirectional and causal."""
    check_t5_settings(num_buckets, max_distance)
    reach = max(int(1.5 * max_distance), 16)
    relative = torch.arange(-reach, reach + 1)
    return (relative, t5_relative_bucket(relative, True, num_buckets, max_distance),
            t5_relative_bucket(relative, False, num_buckets, max_distance))


class PositionSimilarity(NamedTuple):
    positions: torch.Tensor  # int64: the positions compared (all of them, or an even sample of a long table)
    learned: torch.Tensor  # float64 [n, n]: cosine similarity of the learned vectors at those positions
    sinusoidal: torch.Tensor  # float64 [n, n]: the same for sinusoidal vectors of the same (even) dimension


def learned_and_sinusoidal_similarity(embeddings: torch.Tensor, max_positions: int = 300) -> PositionSimilarity:
    """Cosine similarity of learned position vectors next to sinusoidal ones of the same count and dimension.

    A long table is sampled at ``max_positions`` evenly spaced positions first, so the matrices
    stay small (each entry is still exact for the two positions it compares).
    """
    if embeddings.ndim != 2 or min(embeddings.shape) < 1:
        raise ValueError(_("Position embeddings must be a [positions, dim] matrix (got shape {shape}).").format(shape=tuple(embeddings.shape)))
    check_length("max_positions", max_positions)
    count, dim = embeddings.shape
    positions = torch.linspace(0, count - 1, min(count, max_positions), dtype=torch.float64).round().long().unique()
    sinusoidal = sinusoidal_encoding(positions, dim + dim % 2)
    return PositionSimilarity(positions, position_similarity(embeddings.detach().cpu()[positions]),
                              position_similarity(sinusoidal))


def log_spaced(start: float, stop: float, points: int = 400) -> torch.Tensor:
    """``points`` values from start to stop, evenly spaced on a log axis."""
    return torch.logspace(math.log10(start), math.log10(stop), points, dtype=torch.float64)
