"""Is the toy a faithful miniature? Its rotary spectrum against real models', in two numbers.

A RoPE model trained at L meets two kinds of pairs: those whose wavelength λᵢ = 2π/θᵢ fits in L
(they have seen every angle) and the slower ones (they have seen only the arc from 0 to L·θᵢ).
Direct extrapolation to L′ = s·L hurts through the second kind, so a toy tells the published
story only if it has about the same share of each. Two measures:

- the share of pairs that complete a turn within L (λᵢ ≤ L);
- the share of angles unseen at s×: over every position m < s·L and every pair, the angle
  m·θᵢ (mod 2π) lies outside the arc the pair covered in training.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from pe_core.rope import default_inv_freq, wavelengths

REAL_MODELS = (  # (name, head size, base, training length): the published configs
    ("Llama 2", 128, 10_000.0, 4_096),
    ("Llama 3", 128, 500_000.0, 8_192),
)
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
