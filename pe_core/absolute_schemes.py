"""Absolute position encodings beyond the sinusoidal and learned tables.

- FLOATER (Liu et al. 2020): positions from an ODE dp/dt = h(p, t). For the linear, time-free
  h(p) = A·p with A = diag([[0, ω], [−ω, 0]]) the solution from p(0) = (0, 1) per pair is the
  sinusoidal encoding; ``floater_linear_positions`` integrates it exactly as exp(tA)·p(0).
- Multiplicative (x ⊙ p instead of x + p).
- Hierarchical decomposition (Su 2020): n learned vectors p extended to n² positions,
  q_{i·n+j} = α·u_i + (1 − α)·u_j with u_i = (p_i − α·p_0)/(1 − α), so q_k = p_k for k < n.
- Complex order (Wang et al. 2020): word w at position t is r_w ⊙ e^{i(ω_w t + φ_w)}.
- Zero padding in CNNs (Islam et al. 2020): a convolution stack on a constant input gives the same
  feature everywhere except within its receptive field of a zero-padded edge.

Everything is float64 (complex128 for complex order) and vectorised over positions.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from pe_core.rope import check_length, default_inv_freq

PADDINGS = ("zeros", "circular")


def _check_even(name: str, value) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 2 and value % 2 == 0):
        raise ValueError(f"{name} must be an even integer ≥ 2 (got {value!r}); the encoding comes in pairs.")
    return value


def cosine_similarity(vectors: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between every two rows of a real [n, d] or complex [n, d] matrix (real part for complex)."""
    if vectors.ndim != 2 or min(vectors.shape) < 1:
        raise ValueError(f"Position vectors must be a [positions, dim] matrix (got shape {tuple(vectors.shape)}).")
    unit = vectors / torch.linalg.vector_norm(vectors, dim=1, keepdim=True).clamp(min=1e-300)
    gram = unit @ unit.conj().T
    return gram.real if gram.is_complex() else gram


# --- FLOATER ----------------------------------------------------------------------------------------


def floater_generator(dim: int, base: float = 10_000.0) -> torch.Tensor:
    """A = block-diag([[0, ωᵢ], [−ωᵢ, 0]]), ωᵢ = b^(−2i/d): the linear h(p) = A·p whose solution is sinusoidal."""
    _check_even("dim", dim)
    omega = default_inv_freq(base, dim)
    blocks = torch.zeros(dim // 2, 2, 2, dtype=torch.float64)
    blocks[:, 0, 1], blocks[:, 1, 0] = omega, -omega
    return torch.block_diag(*blocks)


def floater_linear_positions(positions: torch.Tensor, dim: int, base: float = 10_000.0) -> torch.Tensor:
    """p(t) = exp(t·A)·p(0) with p(0) = (0, 1, 0, 1, …): FLOATER's ODE dp/dt = A·p solved exactly, [n, dim].

    The matrix exponential is taken pair by pair (2 × 2 blocks, batched over positions), so it is
    exact to rounding at any t and equals (sin tωᵢ, cos tωᵢ).
    """
    _check_even("dim", dim)
    positions = torch.as_tensor(positions, dtype=torch.float64).reshape(-1)
    omega = default_inv_freq(base, dim)
    generator = torch.zeros(dim // 2, 2, 2, dtype=torch.float64)
    generator[:, 0, 1], generator[:, 1, 0] = omega, -omega
    flows = torch.linalg.matrix_exp(positions[:, None, None, None] * generator)  # [n, d/2, 2, 2]
    start = torch.tensor([0.0, 1.0], dtype=torch.float64)
    return (flows @ start).reshape(len(positions), dim)


# --- multiplicative ------------------------------------------------------------------------------------


def multiplicative_positions(token: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """x ⊙ p_t for one token x at every position t of ``table`` ([n, d]); position and content are entangled."""
    table = torch.as_tensor(table, dtype=torch.float64)
    token = torch.as_tensor(token, dtype=torch.float64).reshape(-1)
    if table.ndim != 2 or token.shape[0] != table.shape[1]:
        raise ValueError(f"The token ({token.shape[0]} values) must match the table's width "
                         f"(shape {tuple(table.shape)}).")
    return token[None, :] * table


# --- hierarchical decomposition --------------------------------------------------------------------------


def hierarchical_basis(table: torch.Tensor, alpha: float) -> torch.Tensor:
    """u_i = (p_i − α·p_0)/(1 − α): the basis for which the first n extended positions reproduce the table."""
    table = torch.as_tensor(table, dtype=torch.float64)
    if table.ndim != 2 or table.shape[0] < 2:
        raise ValueError(f"The learned table must be a [positions ≥ 2, dim] matrix (got shape {tuple(table.shape)}).")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"α must lie strictly between 0 and 1 (got {alpha!r}).")
    return (table - alpha * table[:1]) / (1 - alpha)


def hierarchical_positions(table: torch.Tensor, alpha: float, count: int) -> torch.Tensor:
    """q_k = α·u_{k // n} + (1 − α)·u_{k mod n} for k = 0 … count − 1 (count ≤ n²), [count, dim] (Su 2020).

    At α = 1/2 the positions (i, j) and (j, i) coincide, which is why the post excludes it.
    """
    basis = hierarchical_basis(table, alpha)
    size = basis.shape[0]
    check_length("count", count)
    if count > size * size:
        raise ValueError(f"{size} learned positions extend to at most {size * size} (asked for {count}).")
    k = torch.arange(count)
    return alpha * basis[k // size] + (1 - alpha) * basis[k % size]


def stand_in_table(count: int, dim: int, *, seed: int = 0, base: float = 10_000.0) -> torch.Tensor:
    """A stand-in for a learned table: sinusoidal positions plus seeded Gaussian noise of 0.1 per entry."""
    check_length("count", count)
    _check_even("dim", dim)
    generator = torch.Generator().manual_seed(seed)
    noise = 0.1 * torch.randn(count, dim, generator=generator, dtype=torch.float64)
    return floater_linear_positions(torch.arange(count), dim, base) + noise


# --- complex order ------------------------------------------------------------------------------------


def complex_order_embedding(amplitude: torch.Tensor, frequency: torch.Tensor, phase: torch.Tensor,
                            positions: torch.Tensor) -> torch.Tensor:
    """Wang et al. 2020: f(w, t) = r_w ⊙ e^{i(ω_w t + φ_w)} for one word at every position, complex [n, d]."""
    amplitude, frequency, phase = (torch.as_tensor(v, dtype=torch.float64).reshape(-1)
                                   for v in (amplitude, frequency, phase))
    if not (amplitude.shape == frequency.shape == phase.shape):
        raise ValueError("Amplitude, frequency and phase need one value per dimension each "
                         f"(got {amplitude.shape[0]}, {frequency.shape[0]}, {phase.shape[0]}).")
    positions = torch.as_tensor(positions, dtype=torch.float64).reshape(-1)
    angle = positions[:, None] * frequency[None, :] + phase[None, :]
    return torch.polar(amplitude.expand_as(angle).contiguous(), angle)


def complex_order_word(dim: int, *, seed: int = 0, base: float = 10_000.0) -> tuple[torch.Tensor, ...]:
    """A stand-in word: amplitudes |N(0, 1)|, frequencies spread like sinusoidal ones (b^(−i/d)), phases uniform."""
    check_length("dim", dim)
    generator = torch.Generator().manual_seed(seed)
    amplitude = torch.randn(dim, generator=generator, dtype=torch.float64).abs()
    frequency = base ** (-torch.arange(dim, dtype=torch.float64) / dim)
    phase = 2 * math.pi * torch.rand(dim, generator=generator, dtype=torch.float64)
    return amplitude, frequency, phase


# --- CNN zero padding -------------------------------------------------------------------------------------


def cnn_position_features(length: int, *, channels: int = 8, layers: int = 3, kernel: int = 3,
                          padding: str = "zeros", seed: int = 0) -> torch.Tensor:
    """Features [length, channels] of a random 1-D convolution stack (ReLU between layers, no bias) run on a
    constant input. Convolution is translation-equivariant, so only the padding can make positions differ.
    """
    check_length("length", length)
    check_length("channels", channels)
    check_length("layers", layers)
    if not (isinstance(kernel, int) and kernel >= 1 and kernel % 2 == 1):
        raise ValueError(f"The kernel size must be an odd positive integer (got {kernel!r}).")
    if padding not in PADDINGS:
        raise ValueError(f"Padding must be one of {', '.join(PADDINGS)} (got {padding!r}).")
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(layers, channels, channels, kernel, generator=generator, dtype=torch.float64)
    weights = weights / math.sqrt(channels * kernel)
    features = torch.ones(1, channels, length, dtype=torch.float64)
    half = kernel // 2
    mode = "constant" if padding == "zeros" else "circular"
    for layer in range(layers):  # a loop over layers, each a full convolution over all positions
        padded = F.pad(features, (half, half), mode=mode) if half else features
        features = F.conv1d(padded, weights[layer])
        if layer < layers - 1:
            features = torch.relu(features)
    return features[0].T


def receptive_radius(layers: int, kernel: int) -> int:
    """How far from an edge a stack of ``layers`` convolutions of width ``kernel`` can see: layers·(kernel − 1)/2."""
    return layers * (kernel - 1) // 2


def differs_from_centre(features: torch.Tensor, tolerance: float = 1e-12) -> torch.Tensor:
    """Per position, whether its feature vector differs from the centre position's (relative to the largest
    entry): the positions a later layer could tell apart from the middle of the sequence."""
    features = torch.as_tensor(features, dtype=torch.float64)
    if features.ndim != 2 or features.shape[0] < 1:
        raise ValueError(f"Features must be a [positions, channels] matrix (got shape {tuple(features.shape)}).")
    scale = float(features.abs().max()) or 1.0
    centre = features[features.shape[0] // 2]
    return (features - centre).abs().amax(dim=1) > tolerance * scale
