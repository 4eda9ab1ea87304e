"""RoPE as the code most people read it: LLaMA's complex multiplication and transformers' rotate_half.

The two forms pair coordinates differently:

- LLaMA (``precompute_freqs_cis`` / ``apply_rotary_emb``) reads x as d/2 complex numbers
  x₀ + i·x₁, x₂ + i·x₃, … (interleaved pairs) and multiplies pair i by e^{i·m·θᵢ};
- transformers (``rotate_half`` / ``apply_rotary_pos_emb``) pairs coordinate i with i + d/2 (half split):
  x·cos + rotate_half(x)·sin with cos, sin listing the d/2 angles twice.

Both are the same rotation once the coordinates are permuted: with y = x[half_split_order(d)],
apply_rotary_pos_emb(y) = apply_rotary_emb(x)[half_split_order(d)]. A checkpoint trained with one
pairing therefore works with the other only if the rows of W_q and W_k are permuted the same way,
which is what the LLaMA-to-transformers conversion script does.

These functions follow the public code (Meta's llama/model.py, transformers' modeling_llama.py) in
float64 / complex128, so the page can show them and test them number for number.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.rope import check_length


def _check_dim(dim) -> int:
    if not (isinstance(dim, int) and not isinstance(dim, bool) and dim >= 2 and dim % 2 == 0):
        raise ValueError(_("The head dimension must be an even integer ≥ 2 (got {dim!r}); RoPE rotates pairs.").format(dim=dim))
    return dim


def _check_base(base) -> float:
    if not (isinstance(base, (int, float)) and not isinstance(base, bool) and math.isfinite(base) and base > 1):
        raise ValueError(_("The base must be a number > 1 (got {base!r}).").format(base=base))
    return float(base)


# --- LLaMA: complex numbers ---------------------------------------------------------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10_000.0) -> torch.Tensor:
    """e^{i·m·θᵢ} for m = 0 … end − 1 and θᵢ = theta^(−2i/dim): complex128 [end, dim/2] (LLaMA's function)."""
    _check_dim(dim)
    check_length("end", end)
    freqs = 1.0 / (_check_base(theta) ** (torch.arange(0, dim, 2, dtype=torch.float64)[: dim // 2] / dim))
    t = torch.arange(end, dtype=torch.float64)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LLaMA's RoPE: view (x₀, x₁), (x₂, x₃), … as complex numbers, multiply by freqs_cis, view back as real.

    ``xq``, ``xk``: [..., seq, dim] float64; ``freqs_cis``: [seq, dim/2] complex128.
    """
    xq_ = torch.view_as_complex(xq.to(torch.float64).reshape(*xq.shape[:-1], -1, 2).contiguous())
    xk_ = torch.view_as_complex(xk.to(torch.float64).reshape(*xk.shape[:-1], -1, 2).contiguous())
    if freqs_cis.shape != xq_.shape[-2:]:
        raise ValueError(_("freqs_cis has shape {shape}; the queries need {needed}.").format(
            shape=tuple(freqs_cis.shape), needed=tuple(xq_.shape[-2:])))
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(-2)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(-2)
    return xq_out, xk_out


# --- transformers: rotate_half --------------------------------------------------------------------------


def rope_cos_sin(dim: int, positions, base: float = 10_000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of m·θᵢ laid out as transformers does: [seq, dim], the d/2 angles listed twice."""
    _check_dim(dim)
    inv_freq = 1.0 / (_check_base(base) ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(torch.as_tensor(positions, dtype=torch.float64).reshape(-1), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x₁ … x_{d/2}, x_{d/2+1} … x_d) → (−x_{d/2+1} … −x_d, x₁ … x_{d/2}): transformers' helper."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' RoPE: q·cos + rotate_half(q)·sin (and the same for k)."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


# --- the pairing permutation ---------------------------------------------------------------------------


def half_split_order(dim: int) -> torch.Tensor:
    """Indices P with y = x[P]: the interleaved layout (x₀, x₁, x₂, x₃, …) rewritten half-split
    (x₀, x₂, …, x_{d−2}, x₁, x₃, …, x_{d−1}), so that pair i sits at coordinates i and i + d/2.

    Applied to the rows of W_q and W_k this is the permutation of the LLaMA conversion script
    (``w.view(heads, d/2, 2, dim).transpose(1, 2)``).
    """
    _check_dim(dim)
    return torch.cat((torch.arange(0, dim, 2), torch.arange(1, dim, 2)))


def interleaved_order(dim: int) -> torch.Tensor:
    """The inverse of ``half_split_order``: x = y[interleaved_order(d)]."""
    return torch.argsort(half_split_order(dim))


# --- the walk-through the page shows ---------------------------------------------------------------------


class Walkthrough(NamedTuple):
    """Every intermediate of both forms for one vector at one position (float64 / complex128)."""

    dim: int
    position: int
    base: float
    x: torch.Tensor  # [d] the input, interleaved layout
    theta: torch.Tensor  # [d/2] θᵢ
    angle: torch.Tensor  # [d/2] m·θᵢ
    freqs_cis: torch.Tensor  # [d/2] complex e^{i·m·θᵢ}
    pairs: torch.Tensor  # [d/2] complex x₂ᵢ + i·x₂ᵢ₊₁
    complex_out: torch.Tensor  # [d] apply_rotary_emb(x), interleaved
    half_in: torch.Tensor  # [d] x[half_split_order]
    rotated_half: torch.Tensor  # [d] rotate_half(half_in)
    cos: torch.Tensor  # [d]
    sin: torch.Tensor  # [d]
    half_out: torch.Tensor  # [d] apply_rotary_pos_emb(half_in), half-split layout

    @property
    def half_out_interleaved(self) -> torch.Tensor:
        """rotate_half's output put back in the interleaved layout, to compare with ``complex_out``."""
        return self.half_out[interleaved_order(self.dim)]

    @property
    def largest_difference(self) -> float:
        return float((self.complex_out - self.half_out_interleaved).abs().max())


def example_vector(dim: int) -> torch.Tensor:
    """x = (1, 2, …, d): every coordinate different, so a swapped pair shows at once."""
    _check_dim(dim)
    return torch.arange(1, dim + 1, dtype=torch.float64)


def walkthrough(dim: int, position: int, base: float = 10_000.0, x: torch.Tensor | None = None) -> Walkthrough:
    """Run LLaMA's and transformers' RoPE on the same vector at position m and keep every intermediate."""
    _check_dim(dim)
    if not (isinstance(position, int) and not isinstance(position, bool) and position >= 0):
        raise ValueError(_("The position must be a whole number ≥ 0 (got {position!r}).").format(position=position))
    x = example_vector(dim) if x is None else torch.as_tensor(x, dtype=torch.float64).reshape(-1)
    if x.shape[0] != dim:
        raise ValueError(_("The vector needs {dim} values (got {shape}).").format(dim=dim, shape=x.shape[0]))
    freqs_cis = precompute_freqs_cis(dim, position + 1, base)[position]
    complex_out, _key = apply_rotary_emb(x[None, :], x[None, :], freqs_cis[None, :])
    order = half_split_order(dim)
    half_in = x[order]
    cos, sin = rope_cos_sin(dim, [position], base)
    half_out, _key = apply_rotary_pos_emb(half_in[None, :], half_in[None, :], cos, sin)
    theta = 1.0 / (_check_base(base) ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    return Walkthrough(dim, position, float(base), x, theta, position * theta, freqs_cis,
                       torch.view_as_complex(x.reshape(-1, 2).contiguous()), complex_out[0], half_in,
                       rotate_half(half_in), cos[0], sin[0], half_out[0])


class PairingScores(NamedTuple):
    """Scores q_m·k_n for one query against every key position, three ways."""

    positions: torch.Tensor  # int64 [n] key positions
    interleaved: torch.Tensor  # [n] LLaMA's form with the weights W_q, W_k
    permuted: torch.Tensor  # [n] rotate_half with rows of W_q, W_k permuted (the conversion script)
    unpermuted: torch.Tensor  # [n] rotate_half with the same W_q, W_k (a porting bug)


def pairing_scores(dim: int, length: int, query_position: int, base: float = 10_000.0, *, seed: int = 0
                   ) -> PairingScores:
    """One token's query at ``query_position`` against keys at 0 … length − 1, with random W_q, W_k and inputs."""
    _check_dim(dim)
    check_length("length", length)
    if not (0 <= query_position < length):
        raise ValueError(_("The query position must lie in 0 … {last} (got {query_position}).").format(
            last=length - 1, query_position=query_position))
    generator = torch.Generator().manual_seed(seed)
    w_q = torch.randn(dim, dim, generator=generator, dtype=torch.float64) / math.sqrt(dim)
    w_k = torch.randn(dim, dim, generator=generator, dtype=torch.float64) / math.sqrt(dim)
    tokens = torch.randn(length, dim, generator=generator, dtype=torch.float64)
    q, k = tokens[query_position] @ w_q.T, tokens @ w_k.T  # rows of W produce coordinates
    freqs_cis = precompute_freqs_cis(dim, length, base)
    q_rot, _key = apply_rotary_emb(q[None, :], q[None, :], freqs_cis[query_position:query_position + 1])
    _query, k_rot = apply_rotary_emb(k, k, freqs_cis)
    interleaved = k_rot @ q_rot[0]

    cos, sin = rope_cos_sin(dim, torch.arange(length), base)
    order = half_split_order(dim)

    def half_split_score(wq: torch.Tensor, wk: torch.Tensor) -> torch.Tensor:
        qh, kh = tokens[query_position] @ wq.T, tokens @ wk.T
        qh_rot, _key = apply_rotary_pos_emb(qh[None, :], qh[None, :], cos[query_position:query_position + 1],
                                         sin[query_position:query_position + 1])
        _query, kh_rot = apply_rotary_pos_emb(kh, kh, cos, sin)
        return kh_rot @ qh_rot[0]

    return PairingScores(torch.arange(length), interleaved, half_split_score(w_q[order], w_k[order]),
                         half_split_score(w_q, w_k))
