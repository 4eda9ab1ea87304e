"""Is the toy a faithful miniature? Its rotary spectrum against real models', in two numbers.

A RoPE model trained at L meets two kinds of pairs: those whose wavelength λᵢ = 2π/θᵢ fits in L
(they have seen every angle) and the slower ones (they have seen only the arc from 0 to L·θᵢ).
Direct extrapolation to L′ = s·L hurts through the second kind, so a toy tells the published
story only if it has about the same share of each. Two measures:

- the share of pairs that complete a turn within L (λᵢ ≤ L);
- the share of angles unseen at s×: over every position m < s·L and every pair, the angle
  m·θᵢ (mod 2π) lies outside the arc the pair covered in training.

YaRN and NTK-by-parts sort pairs by the same turn counts: a pair turning more than β times within
L is kept, one turning fewer than α times is interpolated, a ramp between (Peng et al. 2023, §3.2).
The paper's α = 1, β = 32 were found for the Llama family, "to be tuned on a case-by-case basis";
``matched_ramp`` gives a smaller spectrum the turn counts that sort the same shares of its pairs
into each zone as the paper's values sort Llama 2's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from pe_core.rope import RopeSpec, default_inv_freq, wavelengths, yarn_ramp

REAL_MODELS = (  # (name, head size, base, training length): the published configs
    ("Llama 2", 128, 10_000.0, 4_096),
    ("Llama 3", 128, 500_000.0, 8_192),
)
RAMP_REFERENCE = REAL_MODELS[0]  # Llama 2: the model the YaRN paper's α and β were found on
PAPER_RAMP = (32.0, 1.0)  # YaRN's (β, α) for the Llama family, as transformers' beta_fast, beta_slow
MAX_ANGLE_CELLS = 1 << 22  # positions × pairs per block when counting unseen angles


class Spectrum(NamedTuple):
    name: str
    head_dim: int
    base: float
    train_length: int
    scale: int
    turns: torch.Tensor  # L/λᵢ per pair: how many full turns pair i makes within L (float64)
    turning: int  # pairs with λᵢ ≤ L
    unseen_share: float  # share of (position, pair) angles at s·L never seen in training

    @property
    def pairs(self) -> int:
        return self.turns.numel()

    @property
    def turning_share(self) -> float:
        return self.turning / self.pairs


class RampZones(NamedTuple):
    """How YaRN's ramp sorts a spectrum's pairs (as the reference implementation rounds its ends)."""

    kept: int  # θ unchanged: they turn more than β times within L
    ramped: int
    interpolated: int  # θ/s: they turn fewer than α times


def unseen_angle_share(inv_freq: torch.Tensor, train_length: int, eval_length: int) -> float:
    """Share of angles m·θᵢ (mod 2π), m < ``eval_length``, outside the arc [0, (L−1)·θᵢ] seen in training.

    Pairs that completed a turn within L have seen every angle. Counted exactly, position by
    position, in blocks (vectorised within a block).
    """
    theta = inv_freq.to(torch.float64)
    arc = (train_length - 1) * theta
    full = arc >= 2 * math.pi
    unseen = 0
    block = max(1, MAX_ANGLE_CELLS // max(1, theta.numel()))
    for start in range(0, eval_length, block):
        positions = torch.arange(start, min(eval_length, start + block), dtype=torch.float64)[:, None]
        angles = torch.remainder(positions * theta, 2 * math.pi)
        unseen += int(((angles > arc * (1 + 1e-12)) & ~full).sum())
    return unseen / (eval_length * theta.numel())


def spectrum(name: str, head_dim: int, base: float, train_length: int, scale: int = 8) -> Spectrum:
    inv_freq = default_inv_freq(base, head_dim)
    lam = wavelengths(inv_freq)
    return Spectrum(name, head_dim, float(base), train_length, scale, train_length / lam,
                    int((lam <= train_length).sum()), unseen_angle_share(inv_freq, train_length, scale * train_length))


def real_spectra(scale: int = 8) -> tuple[Spectrum, ...]:
    return tuple(spectrum(name, d, b, n, scale) for name, d, b, n in REAL_MODELS)


def turns_at_share(share: float, base: float, train_length: int) -> float:
    """r(x) = L/(2π)·b^(−x): the turns within L of the pair at share x = 2i/d of the spectrum (continuous i)."""
    return train_length / (2 * math.pi) * base ** (-share)


def share_at_turns(turns: float, base: float, train_length: int) -> float:
    """The share x of the spectrum at which pairs turn ``turns`` times within L (the inverse of ``turns_at_share``)."""
    return math.log(train_length / (2 * math.pi * turns)) / math.log(base)


def matched_ramp(base: float, train_length: int, ramp: tuple[float, float] = PAPER_RAMP,
                 reference: tuple[str, int, float, int] = RAMP_REFERENCE) -> tuple[float, float]:
    """(β, α) for a RoPE of ``base`` trained at ``train_length``: the turn counts at the shares of the spectrum
    where ``reference`` (Llama 2) turns ``ramp`` = (β, α) times, so each zone holds the same share of pairs.

    The share of pairs, not their index, is what matches, so the head size does not enter; the reference
    mapped to itself gives ``ramp`` back.
    """
    _name, _head_dim, reference_base, reference_length = reference
    return tuple(turns_at_share(share_at_turns(turns, reference_base, reference_length), base, train_length)
                 for turns in ramp)


def ramp_zones(head_dim: int, base: float, train_length: int, ramp: tuple[float, float]) -> RampZones:
    """The pairs YaRN with (β, α) = ``ramp`` keeps, ramps and interpolates (the scale does not move the zones)."""
    beta_fast, beta_slow = ramp
    weights = yarn_ramp(RopeSpec(head_dim=head_dim, base=base, original_max_position_embeddings=train_length,
                                 rope_type="yarn", factor=2.0, beta_fast=beta_fast, beta_slow=beta_slow))
    kept, interpolated = int((weights == 0).sum()), int((weights == 1).sum())
    return RampZones(kept, weights.numel() - kept - interpolated, interpolated)
