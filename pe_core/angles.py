"""Rotation angles m·θ_i at chosen positions, and which pairs reach angles training never produced.

The θ-heatmap page draws a few hundred positions out of up to 2^20; every angle drawn is the
exact float64 value at that position (positions are sampled, never averaged), and the
"unseen angle" summary is a closed form over all positions, so nothing depends on sampling.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.methods import METHODS, MethodSetup, method_setup
from pe_core.rope import (
    ROPE_TYPE_ENTRIES,
    RopeSpec,
    angle_coverage,
    check_length,
    default_inv_freq,
    ntk_by_parts_gamma,
    rope_type_entry,
    rotation_angles,
    rotations_within,
    yarn_correction_dim,
    yarn_correction_range,
    yarn_ramp,
)

# Rope types whose θ depends on the current sequence length (transformers recomputes them as it grows).
LENGTH_DEPENDENT_TYPES = tuple(name for name, entry in ROPE_TYPE_ENTRIES.items() if entry.follows_length)

VIEWS = ("trained", "log", "angle", "mod", "cos")

# Reach states per pair, in the order the summary figure colours them.
FULL_TURN, WITHIN_TRAINING, BEYOND_TRAINING = 0, 1, 2


def sampled_positions(count: int, max_rows: int) -> torch.Tensor:
    """``max_rows`` evenly spaced integer positions of 0 .. count−1 (all of them if they fit), first and last kept."""
    check_length("count", count)
    check_length("max_rows", max_rows)
    if count <= max_rows:
        return torch.arange(count, dtype=torch.int64)
    return torch.linspace(0, count - 1, max_rows, dtype=torch.float64).round().to(torch.int64).unique()


def method_angles(setup: MethodSetup, positions: torch.Tensor, *, length_so_far: bool = False) -> torch.Tensor:
    """Angles m·θ'_i, float64 [positions, pairs], for the method as ``setup`` runs it.

    With ``length_so_far`` the length-dependent methods (dynamic NTK, LongRoPE) use, for
    row m, the θ that transformers computes for a sequence of length m + 1 - what a model
    generating token by token applies to position m. Otherwise every row uses θ at
    ``setup.seq_len`` (the whole sequence processed at once).
    """
    spec = setup.spec
    positions = positions.to(torch.float64)
    at_lengths = rope_type_entry(spec.rope_type).at_lengths
    if not length_so_far or at_lengths is None:
        return rotation_angles(setup.frequencies().inv_freq, positions)
    return positions[:, None] * at_lengths(spec, positions + 1)


def angle_view(angles: torch.Tensor, view: str) -> torch.Tensor:
    """What the heatmap colours: the raw angle, its log₁₀ (NaN at m = 0), the angle folded into [0, 2π), or its cosine.

    The log view exists because raw angles span six decades across the pairs: on a linear
    colour scale everything but the first few pairs is one colour.
    """
    if view == "angle":
        return angles
    if view == "log":
        return torch.where(angles > 0, angles, torch.nan).log10()
    if view == "mod":
        return torch.remainder(angles, 2 * math.pi)
    if view == "cos":
        return torch.cos(angles)
    raise ValueError(_("view must be one of {choices} (got {view!r}).").format(choices=', '.join(VIEWS), view=view))


def trained_share(angles: torch.Tensor, reach: AngleReach) -> torch.Tensor:
    """The "trained" view: log₂ of m·θ′ᵢ over L·θᵢ, the largest angle pair i turned in training (NaN at m = 0).

    Above 0 a pair turns further than training ever turned it; a pair that turned a whole turn in training has
    seen every direction, so it is shown at 0 at most. Unlike the log of the angle itself, whose six decades come
    from the pairs' own θᵢ and look alike for every method, this colours what a method changes.
    """
    share = (torch.where(angles > 0, angles, torch.nan) / reach.train_max_angle[None, :]).log2()
    return torch.where((reach.state == FULL_TURN)[None, :], share.clamp(max=0.0), share)


def view_range(view: str, values: list[torch.Tensor]) -> tuple[float, float]:
    """One colour range shared by every panel: fixed for mod 2π and cos, centred on 0 (the trained range's end)
    for the trained share, the data's extent otherwise."""
    if view == "mod":
        return 0.0, 2 * math.pi
    if view == "cos":
        return -1.0, 1.0
    if view == "trained":  # as far below 0 as the furthest reach above it, and at least one doubling either way
        furthest = max((float(v[torch.isfinite(v)].max()) for v in values if torch.isfinite(v).any()), default=1.0)
        bound = max(furthest, 1.0)
        return -bound, bound
    finite = [v[torch.isfinite(v)] for v in values]
    finite = [v for v in finite if v.numel()]
    if not finite:
        return 0.0, 1.0
    low = min(float(v.min()) for v in finite)
    high = max(float(v.max()) for v in finite)
    return low, max(high, low + 1e-12)


class AngleReach(NamedTuple):
    train_max_angle: torch.Tensor  # L·θ_i: the angle range training sweeps, per pair
    target_max_angle: torch.Tensor  # L'·θ'_i: the angle range the method sweeps at L'
    state: torch.Tensor  # int64 per pair: FULL_TURN, WITHIN_TRAINING or BEYOND_TRAINING

    @property
    def unseen(self) -> torch.Tensor:
        return self.state == BEYOND_TRAINING


def angle_reach(
    train_inv_freq: torch.Tensor, target_inv_freq: torch.Tensor, train_length: int, target_length: int
) -> AngleReach:
    """``pe_core.angle_coverage`` as three states per pair, for colouring.

    FULL_TURN: training swept a whole turn (L·θ_i ≥ 2π), so every direction is familiar;
    BEYOND_TRAINING: the target sweeps further than training did (L'·θ'_i > L·θ_i);
    WITHIN_TRAINING: otherwise. The range is measured at the last position for every method
    here, dynamic NTK included: its m·θ_i(m+1) grows with m because its exponent 2i/(d−2) ≤ 1.
    """
    coverage = angle_coverage(train_inv_freq, target_inv_freq, train_length, target_length)
    full_turn = coverage.train_max_angle >= 2 * math.pi
    state = torch.full_like(coverage.train_max_angle, WITHIN_TRAINING, dtype=torch.int64)
    state[full_turn] = FULL_TURN
    state[coverage.unseen] = BEYOND_TRAINING
    return AngleReach(coverage.train_max_angle, coverage.eval_max_angle, state)


def reference_inv_freq(setup: MethodSetup, base: float) -> torch.Tensor:
    """θ_i the model was trained with: plain RoPE at its training base.

    Every method keeps the spec's base except a base change (ABF), whose spec carries the new
    base; its reference is ``base``, the one the model was trained with before the change.
    """
    spec = setup.spec
    return default_inv_freq(base if setup.method == "abf" else spec.base, spec.rotary_dim)


def rescaled_setup(setup: MethodSetup, base: float, target_length: int) -> MethodSetup | None:
    """The same method for another target length L' (None for a model's own RoPE, which is fixed)."""
    if setup.method not in METHODS:
        return None
    spec = setup.spec
    return method_setup(
        setup.method, spec.head_dim, base,
        spec.original_max_position_embeddings, target_length,
        abf_base=spec.base, beta_fast=spec.beta_fast, beta_slow=spec.beta_slow,
        low_freq_factor=spec.low_freq_factor, high_freq_factor=spec.high_freq_factor,
    )


class HeatmapPanel(NamedTuple):
    method: str  # the set-up's key (a key of pe_core.methods.METHODS, or "model")
    title: str
    scale: float  # s = L'/L of this panel
    target_length: int  # L'
    positions: torch.Tensor  # int64 rows shown
    values: torch.Tensor  # float64 [rows, pairs], already in the requested view
    unseen: torch.Tensor  # bool per pair
    colour_range: tuple[float, float]  # shared by every panel of one call, so colours compare across panels


def heatmap_panels(
    setups: tuple[MethodSetup, ...],
    *,
    base: float,
    train_length: int,
    positions_shown: int | None,
    view: str,
    rows: int,
    length_so_far: bool,
) -> tuple[HeatmapPanel, ...]:
    """One panel per set-up: the view of m·θ'_i at ``positions_shown`` first positions (None: all of 0..L'−1).

    ``base`` is the base the model was trained with; the unseen-angle test compares against it.
    """
    panels = []
    for setup in setups:
        spec = setup.spec
        reference = reference_inv_freq(setup, base)
        target_length = setup.seq_len
        count = positions_shown if positions_shown is not None else target_length
        positions = sampled_positions(count, rows)
        angles = method_angles(setup, positions, length_so_far=length_so_far)
        reach = angle_reach(reference, setup.frequencies().inv_freq, spec.original_max_position_embeddings,
                            target_length)
        scale = target_length / spec.original_max_position_embeddings
        values = trained_share(angles, reach) if view == "trained" else angle_view(angles, view)
        panels.append((setup.method, setup.title, scale, target_length, positions, values, reach.unseen))
    shared = view_range(view, [values for *_, values, _ in panels])
    return tuple(HeatmapPanel(*panel, shared) for panel in panels)


class FrequencyProfile(NamedTuple):
    """Per-pair curves for the line plots, one row per set-up."""

    methods: tuple[str, ...]  # each row's key (see HeatmapPanel.method)
    titles: tuple[str, ...]
    inv_freq: torch.Tensor  # float64 [setups, pairs]: θ'_i at L'
    ratio: torch.Tensor  # θ'_i / θ_i against the trained θ
    reach_state: torch.Tensor  # int64 [setups, pairs]
    reach_ratio: torch.Tensor  # L'θ'_i / (Lθ_i): how far past training's range each pair reaches


def frequency_profile(setups: tuple[MethodSetup, ...], *, base: float) -> FrequencyProfile:
    """θ', θ'/θ and the unseen-angle states for every set-up (they must share rotary_dim)."""
    if not setups:
        empty = torch.zeros((0, 0), dtype=torch.float64)
        return FrequencyProfile((), (), empty, empty, empty.to(torch.int64), empty)
    inv_freqs, ratios, states, reach_ratios = [], [], [], []
    for setup in setups:
        spec = setup.spec
        reference = reference_inv_freq(setup, base)
        inv_freq = setup.frequencies().inv_freq
        reach = angle_reach(reference, inv_freq, spec.original_max_position_embeddings, setup.seq_len)
        inv_freqs.append(inv_freq)
        ratios.append(inv_freq / reference)
        states.append(reach.state)
        reach_ratios.append(reach.target_max_angle / reach.train_max_angle)
    return FrequencyProfile(tuple(s.method for s in setups), tuple(s.title for s in setups), torch.stack(inv_freqs), torch.stack(ratios),
                            torch.stack(states), torch.stack(reach_ratios))


class RampComparison(NamedTuple):
    """NTK-by-parts as the YaRN paper writes it against the reference code, per pair index."""

    rotations: torch.Tensor  # r_i = L/λ_i
    paper_kept: torch.Tensor  # γ(r_i): fraction of θ_i kept (1 extrapolates, 0 interpolates θ/s)
    code_kept: torch.Tensor  # 1 − ramp(i) of transformers' / the YaRN repo's implementation
    beta_fast_index: float  # fractional i where r = beta_fast (β in the paper)
    beta_slow_index: float  # fractional i where r = beta_slow (α in the paper)
    code_range: tuple[float, float]  # [low, high] the code ramps over (after floor/ceil if truncate)


def ramp_comparison(spec: RopeSpec) -> RampComparison:
    """γ(r) of the paper (linear in r) and the code's ramp (linear in i, floored/ceiled) for one spec."""
    inv_freq = default_inv_freq(spec.base, spec.rotary_dim)
    length = spec.original_max_position_embeddings
    return RampComparison(
        rotations=rotations_within(inv_freq, length),
        paper_kept=ntk_by_parts_gamma(spec, inv_freq),
        code_kept=1 - yarn_ramp(spec),
        beta_fast_index=yarn_correction_dim(spec.beta_fast, spec.rotary_dim, spec.base, length),
        beta_slow_index=yarn_correction_dim(spec.beta_slow, spec.rotary_dim, spec.base, length),
        code_range=tuple(float(v) for v in yarn_correction_range(spec)),
    )


class BlendComparison(NamedTuple):
    gamma: torch.Tensor  # float64: the ramp value γ from 0 (interpolate) to 1 (keep θ)
    frequency_blend: torch.Tensor  # λ′/λ of h(θ) = (1 − γ)θ/s + γθ: what implementations compute
    wavelength_blend: torch.Tensor  # λ′/λ = (1 − γ)s + γ: the YaRN paper's wavelength blend as printed


def blend_comparison(scale: float, points: int = 101) -> BlendComparison:
    """NTK-by-parts' new wavelength λ′/λ across the ramp, blending frequencies (as ``rope_frequencies`` does)
    against blending wavelengths; the two agree only at γ = 0 and γ = 1 (Peng et al. 2023)."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale >= 1):
        raise ValueError(_("The scale s must be a number ≥ 1 (got {scale!r}).").format(scale=scale))
    gamma = torch.linspace(0.0, 1.0, points, dtype=torch.float64)
    kept = (1 - gamma) / scale + gamma  # h(θ)/θ
    return BlendComparison(gamma, 1 / kept, (1 - gamma) * scale + gamma)
