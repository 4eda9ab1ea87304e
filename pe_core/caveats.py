"""Caveats of RoPE context extension, computed rather than asserted.

- Dynamic NTK and the KV cache (YaRN paper §3.3): the base grows with the current length, but a
  cache of rotated keys keeps each key rotated under the base in force when it was written. At a
  late position t the query uses θ(t) while key j keeps θ(wⱼ); each pair's angle is off by
  Δᵢ = j·(θᵢ(wⱼ) − θᵢ(t)). For q, k with independent standard normal entries the score error has
  E[(Δs)²] = Σᵢ 4(1 − cos Δᵢ) against E[s²] = d.
- NTK-aware scaling with s = L′/L still lets the middle pairs sweep angles training never
  produced; the s it needs is larger (YaRN paper §3.1). Closed forms over the pairs.
- ReRoPE's inference cost (Su 2023): FLOPs of the reference implementation per layer, against RoPE.
- Position Interpolation's map g(m) = m/s against the slip g(m) = s·m.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.rope import angle_coverage, check_length, default_inv_freq, dynamic_ntk_base, ntk_aware_base


def _check_dim(dim) -> int:
    if not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 4 and dim % 2 == 0):
        raise ValueError(_("The head dimension must be an even integer ≥ 4 (got {dim!r}); NTK's exponent d/(d − 2) "
                            "needs d > 2.").format(dim=dim))
    return dim


def _check_number(name: str, value, low: float, *, strict: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value <= low if strict else value < low):
        raise ValueError(_("{name} must be a number {relation} {low:g} (got {value!r}).").format(
            name=name, relation=">" if strict else "≥", low=low, value=value))
    return float(value)


# --- dynamic NTK and the KV cache ------------------------------------------------------------------------


def dynamic_base(base: float, head_dim: int, train_length: int, lengths, factor: float = 1.0) -> torch.Tensor:
    """transformers' dynamic NTK base b·(s·ℓ/L − (s − 1))^(d/(d−2)) at every current length ℓ (b itself for ℓ ≤ L)."""
    _check_dim(head_dim)
    _check_number("base", base, 1.0)
    check_length("train_length", train_length)
    _check_number("factor", factor, 1.0, strict=False)
    return dynamic_ntk_base(base, factor, head_dim, train_length, torch.as_tensor(lengths, dtype=torch.float64))


def dynamic_inv_freq(base: float, head_dim: int, train_length: int, lengths, factor: float = 1.0) -> torch.Tensor:
    """θᵢ at every current length, [len(lengths), d/2]: bases[:, None]^(−2i/d)."""
    bases = dynamic_base(base, head_dim, train_length, lengths, factor)
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    return bases[:, None] ** (-exponents[None, :])


def written_lengths(positions, prompt_length: int) -> torch.Tensor:
    """The sequence length in force when the key at each position was written: the whole prompt is
    encoded at once (length P), then every generated token j at length j + 1."""
    check_length("prompt_length", prompt_length)
    positions = torch.as_tensor(positions, dtype=torch.float64)
    return torch.maximum(positions + 1, torch.full_like(positions, float(prompt_length)))


def cache_angle_error(base: float, head_dim: int, train_length: int, prompt_length: int, key_positions,
                      query_length, factor: float = 1.0) -> torch.Tensor:
    """Δᵢ = j·(θᵢ(written at j) − θᵢ(current)) for keys j read at current length ``query_length``, [keys, d/2]."""
    keys = torch.as_tensor(key_positions, dtype=torch.float64).reshape(-1)
    written = dynamic_inv_freq(base, head_dim, train_length, written_lengths(keys, prompt_length), factor)
    current = dynamic_inv_freq(base, head_dim, train_length, torch.as_tensor([float(query_length)]), factor)
    return keys[:, None] * (written - current)


def expected_relative_error(angle_error: torch.Tensor, head_dim: int) -> torch.Tensor:
    """√(Σᵢ 4(1 − cos Δᵢ) / d) per key: the RMS score error over the RMS score, for standard normal q and k."""
    return (4 * (1 - torch.cos(angle_error))).sum(dim=-1).div(head_dim).sqrt()


class KvCacheError(NamedTuple):
    lengths: torch.Tensor  # int64 [G]: the current length ℓ (the query sits at ℓ − 1)
    expected: torch.Tensor  # [G]: closed-form relative RMS error over the keys sampled at that length
    measured: torch.Tensor  # [G]: the same measured on random q, k (float64 scores, cached vs recomputed)
    key_positions: torch.Tensor  # int64 [K]: keys at the longest length
    key_expected: torch.Tensor  # [K]: closed-form relative error per key there
    key_base: torch.Tensor  # [K]: the base each of those keys was rotated with
    current_base: float  # the base at the longest length
    stale_keys: int  # keys at the longest length whose base differs from the current one (of ℓ)


def _sample(count: int, samples: int) -> torch.Tensor:
    """``samples`` evenly spaced positions of 0 … count − 1 (all if they fit), last included."""
    return torch.linspace(0, count - 1, min(count, samples), dtype=torch.float64).round().long().unique()


def kv_cache_error(head_dim: int, base: float, train_length: int, prompt_length: int, max_length: int, *,
                   factor: float = 1.0, lengths: int = 33, keys: int = 128, draws: int = 16, seed: int = 0
                   ) -> KvCacheError:
    """Scores of the last query against cached keys (each rotated with the base of when it was written) versus
    the same keys re-rotated with the current base, as the sequence grows from the prompt to ``max_length``.

    Error = √(Σ (s_cached − s_fresh)²) / √(Σ s_fresh²) over ``keys`` evenly spaced keys and ``draws`` random
    (q, k) draws per length; the closed form replaces the draws by their expectation.
    """
    _check_dim(head_dim)
    check_length("max_length", max_length)
    check_length("prompt_length", prompt_length)
    check_length("lengths", lengths)
    check_length("keys", keys)
    check_length("draws", draws)
    if max_length < prompt_length:
        raise ValueError(_("The longest length ({max_length}) must be at least the prompt length ({prompt_length}).").format(max_length=max_length, prompt_length=prompt_length))
    grid = torch.unique(torch.linspace(prompt_length, max_length, lengths, dtype=torch.float64).round().long())
    # keys sampled per length: slot s of length ℓ is position round(s·(ℓ−1)/(K−1)); the last key is the query's own
    slots = torch.linspace(0, 1, keys, dtype=torch.float64)
    key_positions = (slots[None, :] * (grid[:, None] - 1)).round()  # [G, K]
    pairs = head_dim // 2
    written = dynamic_inv_freq(base, head_dim, train_length, written_lengths(key_positions, prompt_length).reshape(-1),
                               factor).reshape(len(grid), keys, pairs)
    current = dynamic_inv_freq(base, head_dim, train_length, grid, factor)  # [G, P]
    query_angle = (grid - 1).to(torch.float64)[:, None] * current  # [G, P]
    fresh_phase = torch.polar(torch.ones_like(written), key_positions[..., None] * current[:, None, :]
                              - query_angle[:, None, :])
    cached_phase = torch.polar(torch.ones_like(written), key_positions[..., None] * written
                               - query_angle[:, None, :])
    expected_per_key = expected_relative_error(key_positions[..., None] * (written - current[:, None, :]), head_dim)
    expected = expected_per_key.square().mean(dim=1).sqrt()

    generator = torch.Generator().manual_seed(seed)
    q = torch.complex(*torch.randn(2, draws, pairs, generator=generator, dtype=torch.float64))
    k = torch.complex(*torch.randn(2, draws, keys, pairs, generator=generator, dtype=torch.float64))
    weights = q.conj()[:, None, :] * k  # [R, K, P]: conj(q̃ᵢ)·k̃ᵢ per draw and key slot
    # s = Re Σᵢ conj(q̃ᵢ e^{i t θᵢ}) k̃ᵢ e^{i j θᵢ'}: contract the pairs, one batch per key slot
    fresh = torch.einsum("rkp,gkp->rgk", weights, fresh_phase).real
    cached = torch.einsum("rkp,gkp->rgk", weights, cached_phase).real
    measured = ((cached - fresh).square().sum(dim=(0, 2)) / fresh.square().sum(dim=(0, 2))).sqrt()

    longest = int(grid[-1])
    final_keys = _sample(longest, 2048)
    final_error = cache_angle_error(base, head_dim, train_length, prompt_length, final_keys, longest, factor)
    key_base = dynamic_base(base, head_dim, train_length, written_lengths(final_keys, prompt_length), factor)
    current_base = float(dynamic_base(base, head_dim, train_length, [longest], factor)[0])
    all_keys = torch.arange(longest, dtype=torch.float64)
    all_bases = dynamic_base(base, head_dim, train_length, written_lengths(all_keys, prompt_length), factor)
    stale = int((all_bases != current_base).sum())
    return KvCacheError(grid, expected, measured, final_keys, expected_relative_error(final_error, head_dim),
                        key_base, current_base, stale)


# --- NTK-aware: how large s must be ------------------------------------------------------------------------


class NtkReach(NamedTuple):
    """NTK-aware scaling set to ``scale_set`` and run at L′ = real_ratio·L, pair by pair."""

    train_max_angle: torch.Tensor  # [d/2] L·θᵢ
    target_max_angle: torch.Tensor  # [d/2] L′·θ′ᵢ
    unseen: torch.Tensor  # bool [d/2]: no full turn in training and L′·θ′ᵢ > L·θᵢ
    first_partial_pair: int  # i₀: the first pair with L·θᵢ < 2π (d/2 if none)
    required_scale: float  # the smallest s that keeps every pair within its trained angles at L′
    safe_ratio: float  # the largest L′/L that s = scale_set keeps within the trained angles


def first_partial_pair(head_dim: int, base: float, train_length: int) -> int:
    """i₀: the first pair whose wavelength exceeds L (it never completes a turn in training); d/2 if none."""
    _check_dim(head_dim)
    partial = (train_length * default_inv_freq(base, head_dim)) < 2 * math.pi
    return int(partial.nonzero()[0, 0]) if bool(partial.any()) else head_dim // 2


def ntk_safe_ratio(head_dim: int, base: float, train_length: int, scales) -> torch.Tensor:
    """For NTK-aware scaling at each s, the largest L′/L at which no pair sweeps an angle beyond training.

    θ′ᵢ/θᵢ = s^(−2i/(d−2)) and only pairs i ≥ i₀ are at risk, so the binding pair is i₀:
    L′/L ≤ s^(2i₀/(d−2)) (infinite when every pair turns fully in training).
    """
    scales = torch.as_tensor(scales, dtype=torch.float64)
    start = first_partial_pair(head_dim, base, train_length)
    if start >= head_dim // 2:
        return torch.full_like(scales, math.inf)
    return scales ** (2 * start / (head_dim - 2))


def ntk_required_scale(head_dim: int, base: float, train_length: int, real_ratio) -> torch.Tensor:
    """The smallest NTK s for a real extension L′/L: real_ratio^((d−2)/(2i₀)) (1 when no pair is at risk)."""
    ratio = torch.as_tensor(real_ratio, dtype=torch.float64)
    start = first_partial_pair(head_dim, base, train_length)
    if start >= head_dim // 2:
        return torch.ones_like(ratio)
    if start == 0:
        return torch.full_like(ratio, math.inf)
    return ratio ** ((head_dim - 2) / (2 * start))


def ntk_reach(head_dim: int, base: float, train_length: int, real_ratio: float, scale_set: float) -> NtkReach:
    """Every pair's largest angle at L′ = real_ratio·L under NTK-aware scaling with s = ``scale_set``."""
    _check_dim(head_dim)
    _check_number("the real ratio L′/L", real_ratio, 1.0, strict=False)
    _check_number("the NTK scale s", scale_set, 1.0, strict=False)
    target_length = int(round(train_length * real_ratio))
    trained = default_inv_freq(base, head_dim)
    scaled = default_inv_freq(ntk_aware_base(base, scale_set, head_dim), head_dim)
    coverage = angle_coverage(trained, scaled, train_length, target_length)
    required = float(ntk_required_scale(head_dim, base, train_length, real_ratio))
    safe = float(ntk_safe_ratio(head_dim, base, train_length, [scale_set])[0])
    return NtkReach(coverage.train_max_angle, coverage.eval_max_angle, coverage.unseen,
                    first_partial_pair(head_dim, base, train_length), required, safe)


# --- ReRoPE's inference cost ---------------------------------------------------------------------------------

# FLOPs per layer of the reference implementations (a multiply-add counts 2; a RoPE rotation
# x·cos + rotate_half(x)·sin counts 3 per element), model width D = heads × head dim, MLP 4D:
#   linear layers (QKV, output, MLP):     24·n·D²  (prefill of n tokens),   24·D² (one decoded token)
#   RoPE prefill:          4n²D + 6nD    (Q·Kᵀ and A·V over the full n × n matrix; rotate q and k)
#   ReRoPE prefill:        6n²D + 9nD    (two Q·Kᵀ: positions as trained and positions clipped at w; q rotated twice)
#   Leaky ReRoPE prefill:  6n²D + 12nD   (two Q·Kᵀ; q and k each rotated twice)
#   RoPE decode step:      4nD + 6D      (n keys in the cache, rotated once when written)
#   (Leaky) ReRoPE decode: 4nD + 3nD     (the cache holds unrotated keys: all n re-rotated every step)
COST_METHODS = ("rope", "rerope", "leaky_rerope", "leaky_train_rope_infer")


class ReropeCost(NamedTuple):
    lengths: torch.Tensor  # [G] sequence length n
    prefill: dict[str, torch.Tensor]  # method -> FLOPs per layer to encode n tokens
    decode: dict[str, torch.Tensor]  # method -> FLOPs per layer to generate the token at length n
    prefill_ratio: dict[str, torch.Tensor]  # method -> prefill FLOPs / RoPE's
    decode_ratio: dict[str, torch.Tensor]  # method -> decode FLOPs / RoPE's


def rerope_cost(model_width: int, lengths) -> ReropeCost:
    """Per-layer FLOPs of RoPE, ReRoPE, Leaky ReRoPE and "train with Leaky ReRoPE, infer with RoPE" (the last
    costs RoPE's at inference by construction), as functions of the length n."""
    check_length("model_width", model_width)
    n = torch.as_tensor(lengths, dtype=torch.float64)
    if bool((n < 1).any()):
        raise ValueError(_("Every length must be at least 1."))
    width = float(model_width)
    linear_prefill, linear_decode = 24 * n * width**2, torch.full_like(n, 24 * width**2)
    prefill = {
        "rope": linear_prefill + 4 * n**2 * width + 6 * n * width,
        "rerope": linear_prefill + 6 * n**2 * width + 9 * n * width,
        "leaky_rerope": linear_prefill + 6 * n**2 * width + 12 * n * width,
    }
    decode = {
        "rope": linear_decode + 4 * n * width + 6 * width,
        "rerope": linear_decode + 7 * n * width,
        "leaky_rerope": linear_decode + 7 * n * width,
    }
    prefill["leaky_train_rope_infer"] = prefill["rope"]
    decode["leaky_train_rope_infer"] = decode["rope"]
    return ReropeCost(n, prefill, decode, {k: v / prefill["rope"] for k, v in prefill.items()},
                      {k: v / decode["rope"] for k, v in decode.items()})


def rerope_limits() -> dict[str, tuple[float, float]]:
    """The ratios to RoPE as n → ∞ (prefill, decode): the attention terms take over from the linear layers."""
    return {"rope": (1.0, 1.0), "rerope": (1.5, 1.75), "leaky_rerope": (1.5, 1.75),
            "leaky_train_rope_infer": (1.0, 1.0)}


def leaky_rerope_trained_reach(train_length: int, window: int, k: float) -> float:
    """Training with Leaky ReRoPE at slope k beyond the window w shows relative positions up to
    w + k·(L − 1 − w); running plain RoPE, that many positions stay within what training saw."""
    check_length("train_length", train_length)
    check_length("window", window)
    _check_number("k", k, 1.0, strict=False)
    if window >= train_length:
        raise ValueError(_("The window ({window}) must be shorter than the training length ({train_length}).").format(window=window, train_length=train_length))
    return window + k * (train_length - 1 - window)


# --- PI's position map -------------------------------------------------------------------------------------


def pi_positions(positions, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(m/s, s·m): Position Interpolation's g(m) and the common slip, for s = L′/L ≥ 1."""
    _check_number("the scale s", scale, 1.0, strict=False)
    positions = torch.as_tensor(positions, dtype=torch.float64)
    return positions / scale, positions * scale
