"""RoPE frequencies for plain RoPE and its context-extension methods.

One function per rope type behind a name -> function registry, as in transformers'
``modeling_rope_utils`` (each function cites its source). Everything is float64 so the
analysis pages can show exact values; ``tests/test_rope_parity.py`` checks every type that
transformers implements against it to float32 precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import NamedTuple

import torch

from i18n import N_, _

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3", "longrope", "proportional")

ROPE_TYPE_TITLES = {
    "default": "Direct extrapolation (plain RoPE)",
    "linear": "Position Interpolation (linear)",
    "ntk": "NTK-aware (static)",
    "dynamic": "Dynamic NTK",
    "ntk_by_parts": "NTK-by-parts (YaRN paper's γ(r))",
    "yarn": "YaRN (reference implementation)",
    "llama3": "Llama-3 scaling",
    "longrope": "LongRoPE",
    "proportional": "Proportional RoPE (Gemma 4)",
}


@dataclass(frozen=True)
class RopeSpec:
    """Everything that determines a RoPE variant's inverse frequencies.

    Method parameters carry the names of transformers' ``rope_scaling`` keys. The spec is
    frozen and hashable (factor lists are stored as tuples) so Streamlit can cache on it.
    """

    head_dim: int = 128
    base: float = 10000.0
    rope_type: str = "default"
    factor: float = 1.0
    original_max_position_embeddings: int = 4096
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    truncate: bool = True
    attention_factor: float | None = None
    mscale: float | None = None
    mscale_all_dim: float | None = None
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None
    partial_rotary_factor: float = 1.0

    def __post_init__(self) -> None:
        for name in ("short_factor", "long_factor"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                try:
                    object.__setattr__(self, name, tuple(float(v) for v in value))
                except (TypeError, ValueError) as err:
                    raise ValueError(_("{name} must be a list of positive numbers (got {value!r}).").format(name=name, value=value)) from err
        _validate(self)

    @property
    def rotary_dim(self) -> int:
        """Number of dimensions that are rotated (head_dim × partial_rotary_factor)."""
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def num_pairs(self) -> int:
        return self.rotary_dim // 2

    def replace(self, **changes) -> RopeSpec:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return RopeSpec(**values)


class RopeFrequencies(NamedTuple):
    inv_freq: torch.Tensor  # float64, length rotary_dim / 2
    attention_factor: float  # multiplies cos and sin (so q·k is scaled by its square)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _require(condition: bool, message: str, **values) -> None:
    """Raise ``ValueError`` with ``message`` (an N_()-marked sentence) translated and filled in, unless ``condition``."""
    if not condition:
        raise ValueError(_(message).format(**values) if values else _(message))


def _validate(spec: RopeSpec) -> None:
    _require(
        spec.rope_type in ROPE_TYPES,
        N_("rope_type must be one of {choices} (got {rope_type!r})."), choices=', '.join(ROPE_TYPES), rope_type=spec.rope_type,
    )
    _require(
        isinstance(spec.head_dim, int) and not isinstance(spec.head_dim, bool) and spec.head_dim >= 2,
        N_("head_dim must be an even integer ≥ 2 (got {head_dim!r})."), head_dim=spec.head_dim,
    )
    _require(
        _is_number(spec.partial_rotary_factor) and 0 < spec.partial_rotary_factor <= 1,
        N_("partial_rotary_factor must be in (0, 1] (got {partial_rotary_factor!r})."), partial_rotary_factor=spec.partial_rotary_factor,
    )
    _require(
        spec.rotary_dim >= 2 and spec.rotary_dim % 2 == 0,
        N_("head_dim × partial_rotary_factor must be an even integer ≥ 2, because RoPE rotates "
           "dimensions in pairs (got head_dim={head_dim}, "
           "partial_rotary_factor={partial_rotary_factor}, i.e. {rotary_dim} rotated dimensions)."), head_dim=spec.head_dim, partial_rotary_factor=spec.partial_rotary_factor, rotary_dim=spec.rotary_dim,
    )
    _require(
        _is_number(spec.base) and spec.base > 1,
        N_("base (rope_theta) must be a number > 1 (got {base!r}); with base ≤ 1 the frequencies "
           "would not decrease along the dimensions."), base=spec.base,
    )
    _require(
        _is_number(spec.factor) and spec.factor >= 1,
        N_("factor must be a number ≥ 1 (got {factor!r}); it is the context-extension ratio L'/L."), factor=spec.factor,
    )
    _require(
        isinstance(spec.original_max_position_embeddings, int)
        and not isinstance(spec.original_max_position_embeddings, bool)
        and spec.original_max_position_embeddings >= 1,
        N_("original_max_position_embeddings (the training length L) must be a positive integer (got "
           "{original_max_position_embeddings!r})."), original_max_position_embeddings=spec.original_max_position_embeddings,
    )
    if spec.rope_type == "ntk_by_parts":
        _require(
            _is_number(spec.beta_fast) and _is_number(spec.beta_slow) and 0 < spec.beta_slow < spec.beta_fast,
            N_("beta_fast and beta_slow must satisfy 0 < beta_slow < beta_fast (got "
               "beta_slow={beta_slow!r}, beta_fast={beta_fast!r})."), beta_slow=spec.beta_slow, beta_fast=spec.beta_fast,
        )
    if spec.rope_type == "yarn":  # equal betas are legal: the reference ramp widens a zero-width range (Kimi K2: 1 and 1)
        _require(
            _is_number(spec.beta_fast) and _is_number(spec.beta_slow) and 0 < spec.beta_slow <= spec.beta_fast,
            N_("beta_fast and beta_slow must satisfy 0 < beta_slow ≤ beta_fast (got "
               "beta_slow={beta_slow!r}, beta_fast={beta_fast!r})."), beta_slow=spec.beta_slow, beta_fast=spec.beta_fast,
        )
    if spec.attention_factor is not None:
        _require(
            _is_number(spec.attention_factor) and spec.attention_factor > 0,
            N_("attention_factor must be a positive number (got {attention_factor!r})."), attention_factor=spec.attention_factor,
        )
    for name in ("mscale", "mscale_all_dim"):
        value = getattr(spec, name)
        _require(value is None or (_is_number(value) and value >= 0), N_("{name} must be a number ≥ 0 (got {value!r})."), name=name, value=value)
    if spec.rope_type == "llama3":
        _require(
            _is_number(spec.low_freq_factor)
            and _is_number(spec.high_freq_factor)
            and 0 < spec.low_freq_factor <= spec.high_freq_factor,  # equal in Llama 4 (1 and 1): a step, no band
            N_("low_freq_factor and high_freq_factor must satisfy 0 < low_freq_factor ≤ high_freq_factor "
               "(got low_freq_factor={low_freq_factor!r}, high_freq_factor={high_freq_factor!r})."), low_freq_factor=spec.low_freq_factor, high_freq_factor=spec.high_freq_factor,
        )
    if spec.rope_type == "longrope":
        for name in ("short_factor", "long_factor"):
            values = getattr(spec, name)
            _require(values is not None, N_("LongRoPE needs {name}: a list of {num_pairs} positive numbers."), name=name, num_pairs=spec.num_pairs)
            _require(
                len(values) == spec.num_pairs,
                N_("{name} must have rotary_dim / 2 = {num_pairs} entries (got {count})."), name=name, num_pairs=spec.num_pairs, count=len(values),
            )
            _require(
                all(_is_number(v) and v > 0 for v in values),
                N_("every entry of {name} must be a positive number."), name=name,
            )


def check_length(name: str, value) -> int:
    """Validate a sequence length or position count and return it as an int."""
    _require(
        isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        N_("{name} must be a positive integer (got {value!r})."), name=name, value=value,
    )
    return value


def default_inv_freq(base: float, rotary_dim: int) -> torch.Tensor:
    """θ_i = base^(−2i/d) for i = 0 .. d/2 − 1 (RoFormer, Su et al. 2021)."""
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim
    return 1.0 / (base**exponents)


def ntk_aware_base(base: float, factor: float, rotary_dim: int) -> float:
    """b' = b·s^(d/(d−2)): the base for which the lowest frequency equals PI's (bloc97, 2023)."""
    return base * factor ** (rotary_dim / (rotary_dim - 2))


def yarn_get_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's √(1/t) = 0.1·mscale·ln s + 1, and 1 for s ≤ 1 (Peng et al. 2023, eq. 22)."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def yarn_correction_dim(num_rotations: float, rotary_dim: int, base: float, length: int) -> float:
    """The (fractional) pair index whose wavelength fits ``num_rotations`` times into ``length``.

    From λ_i = 2π·b^(2i/d) and r = L/λ_i: i = d·ln(L/(2πr)) / (2·ln b).
    """
    return rotary_dim * math.log(length / (num_rotations * 2 * math.pi)) / (2 * math.log(base))


def yarn_correction_range(spec: RopeSpec) -> tuple[float, float]:
    """The pair-index range [low, high] over which the reference YaRN ramps (floor/ceil if truncate)."""
    dim, length = spec.rotary_dim, spec.original_max_position_embeddings
    low = yarn_correction_dim(spec.beta_fast, dim, spec.base, length)
    high = yarn_correction_dim(spec.beta_slow, dim, spec.base, length)
    if spec.truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, dim - 1)


def yarn_ramp(spec: RopeSpec) -> torch.Tensor:
    """Reference YaRN's ramp over pair index: 0 keeps θ (extrapolate), 1 divides θ by s (interpolate)."""
    low, high = yarn_correction_range(spec)
    if low == high:
        high += 0.001  # the reference implementation's guard against a zero-width ramp
    index = torch.arange(spec.num_pairs, dtype=torch.float64)
    return ((index - low) / (high - low)).clamp(0, 1)


def ntk_by_parts_gamma(spec: RopeSpec, inv_freq: torch.Tensor | None = None) -> torch.Tensor:
    """The YaRN paper's γ(r) on r = L/λ (eq. 18): 0 for r < α, 1 for r > β, linear between.

    α = beta_slow, β = beta_fast. γ = 1 keeps θ (extrapolate); γ = 0 interpolates θ/s.
    """
    if inv_freq is None:
        inv_freq = default_inv_freq(spec.base, spec.rotary_dim)
    ratio = rotations_within(inv_freq, spec.original_max_position_embeddings)
    return ((ratio - spec.beta_slow) / (spec.beta_fast - spec.beta_slow)).clamp(0, 1)


# --- one function per rope type -------------------------------------------------------------


def _default(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Plain RoPE, evaluated beyond its training length as is: direct extrapolation."""
    return RopeFrequencies(default_inv_freq(spec.base, spec.rotary_dim), 1.0)


def _linear(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Position Interpolation (Chen et al. 2023, arXiv:2306.15595): θ_i / s."""
    return RopeFrequencies(default_inv_freq(spec.base, spec.rotary_dim) / spec.factor, 1.0)


def _ntk(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Static NTK-aware scaling (bloc97, reddit r/LocalLLaMA 2023): base·s^(d/(d−2))."""
    base = ntk_aware_base(spec.base, spec.factor, spec.rotary_dim)
    return RopeFrequencies(default_inv_freq(base, spec.rotary_dim), 1.0)


def _dynamic(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Dynamic NTK (emozilla, 2023) as in transformers: base·((s·l/L) − (s−1))^(d/(d−2)), l ≥ L."""
    length = spec.original_max_position_embeddings
    current = length if seq_len is None else max(seq_len, length)
    dim = spec.rotary_dim
    base = spec.base * ((spec.factor * current / length) - (spec.factor - 1)) ** (dim / (dim - 2))
    return RopeFrequencies(default_inv_freq(base, dim), 1.0)


def _attention_factor_or(spec: RopeSpec, default: float) -> float:
    return default if spec.attention_factor is None else float(spec.attention_factor)


def _ntk_by_parts(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """NTK-by-parts, continuous γ(r) of the YaRN paper (Peng et al. 2023, arXiv:2309.00071, eq. 18-19)."""
    inv_freq = default_inv_freq(spec.base, spec.rotary_dim)
    gamma = ntk_by_parts_gamma(spec, inv_freq)
    scaled = (1 - gamma) * inv_freq / spec.factor + gamma * inv_freq
    return RopeFrequencies(scaled, _attention_factor_or(spec, 1.0))


def yarn_attention_factor(spec: RopeSpec) -> float:
    """transformers' default: mscale ratio when both mscales are set, else 0.1·ln s + 1."""
    if spec.attention_factor is not None:
        return float(spec.attention_factor)
    if spec.mscale and spec.mscale_all_dim:
        return float(yarn_get_mscale(spec.factor, spec.mscale) / yarn_get_mscale(spec.factor, spec.mscale_all_dim))
    return yarn_get_mscale(spec.factor)


def _yarn(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """YaRN as transformers' ``_compute_yarn_parameters`` (Peng et al. 2023, arXiv:2309.00071)."""
    extrapolation = default_inv_freq(spec.base, spec.rotary_dim)
    interpolation = extrapolation / spec.factor
    keep = 1 - yarn_ramp(spec)  # fraction of the original θ kept, per pair
    inv_freq = interpolation * (1 - keep) + extrapolation * keep
    return RopeFrequencies(inv_freq, yarn_attention_factor(spec))


def _llama3(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Llama 3.1's frequency-dependent scaling (Meta, 2024), as transformers implements it."""
    inv_freq = default_inv_freq(spec.base, spec.rotary_dim)
    context = spec.original_max_position_embeddings
    low_freq_wavelen = context / spec.low_freq_factor
    high_freq_wavelen = context / spec.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / spec.factor, inv_freq)
    smooth = (context / wavelen - spec.low_freq_factor) / (spec.high_freq_factor - spec.low_freq_factor)
    smoothed = (1 - smooth) * scaled / spec.factor + smooth * scaled
    is_medium = (wavelen >= high_freq_wavelen) & (wavelen <= low_freq_wavelen)
    return RopeFrequencies(torch.where(is_medium, smoothed, scaled), _attention_factor_or(spec, 1.0))


def longrope_attention_factor(spec: RopeSpec) -> float:
    """√(1 + ln s / ln L), and 1 for s ≤ 1 (transformers' default for LongRoPE)."""
    if spec.attention_factor is not None:
        return float(spec.attention_factor)
    if spec.factor <= 1.0:
        return 1.0
    return math.sqrt(1 + math.log(spec.factor) / math.log(spec.original_max_position_embeddings))


def _longrope(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """LongRoPE (Ding et al. 2024, arXiv:2402.13753): per-pair factors, long ones past L."""
    use_long = seq_len is not None and seq_len > spec.original_max_position_embeddings
    factors = torch.tensor(spec.long_factor if use_long else spec.short_factor, dtype=torch.float64)
    inv_freq = default_inv_freq(spec.base, spec.rotary_dim) / factors
    return RopeFrequencies(inv_freq, longrope_attention_factor(spec))


def _proportional(spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
    """Gemma 4's proportional RoPE, as transformers' ``_compute_proportional_rope_parameters``: the first
    rotary_dim/2 pairs keep the θ_i = b^(−2i/d) of the whole head (exponent over head_dim, not rotary_dim),
    divided by the factor; the other pairs are not rotated (transformers stores θ = 0 for them)."""
    exponents = torch.arange(0, spec.rotary_dim, 2, dtype=torch.float64) / spec.head_dim
    return RopeFrequencies(1.0 / (spec.base**exponents) / spec.factor, 1.0)


ROPE_FUNCTIONS: dict[str, Callable[[RopeSpec, int | None], RopeFrequencies]] = {
    "default": _default,
    "linear": _linear,
    "ntk": _ntk,
    "dynamic": _dynamic,
    "ntk_by_parts": _ntk_by_parts,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope,
    "proportional": _proportional,
}


def rope_frequencies(spec: RopeSpec, seq_len: int | None = None) -> RopeFrequencies:
    """Inverse frequencies θ_i (float64, length rotary_dim/2) and the attention factor.

    ``seq_len`` is the current sequence length; only ``dynamic`` and ``longrope`` use it. It is taken as
    transformers' functions take it: an int or a 0-d integer tensor (``max(position_ids) + 1``), 0 included (no
    longer than the original length).
    """
    if seq_len is not None:
        seq_len = sequence_length(seq_len)
    return ROPE_FUNCTIONS[spec.rope_type](spec, seq_len)


def sequence_length(value) -> int:
    """A sequence length as transformers' rope functions accept it: an int ≥ 0 or a 0-d integer tensor."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point() \
            and not value.is_complex() and value.dtype != torch.bool:
        value = int(value.item())
    _require(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
             N_("seq_len must be a whole number of tokens, 0 or more (got {value!r})."), value=value)
    return value


# --- helpers the pages share ---------------------------------------------------------------


def positions_tensor(positions) -> torch.Tensor:
    """Positions as a float64 tensor; accepts a tensor, a sequence or a ``range``."""
    if isinstance(positions, torch.Tensor):
        return positions.to(torch.float64)
    if isinstance(positions, range):
        return torch.arange(positions.start, positions.stop, positions.step, dtype=torch.float64)
    return torch.as_tensor(positions, dtype=torch.float64)


def rotation_angles(inv_freq: torch.Tensor, positions) -> torch.Tensor:
    """Angles m·θ_i as a float64 [positions, pairs] matrix (outer product, no loops)."""
    return torch.outer(positions_tensor(positions), inv_freq.to(torch.float64))


def wavelengths(inv_freq: torch.Tensor) -> torch.Tensor:
    """λ_i = 2π/θ_i: the number of tokens for one full turn of pair i."""
    return 2 * math.pi / inv_freq.to(torch.float64)


def rotations_within(inv_freq: torch.Tensor, length: int) -> torch.Tensor:
    """r_i = L/λ_i: how many full turns pair i makes within a length L."""
    return length / wavelengths(inv_freq)


class AngleCoverage(NamedTuple):
    train_max_angle: torch.Tensor  # L·θ_i: the angle range training sweeps, per pair
    eval_max_angle: torch.Tensor  # L'·θ'_i: the angle range evaluation sweeps
    unseen: torch.Tensor  # bool per pair: evaluation reaches angles training never produced


def angle_coverage(
    train_inv_freq: torch.Tensor, eval_inv_freq: torch.Tensor, train_length: int, eval_length: int
) -> AngleCoverage:
    """Per pair, whether evaluating at L' with θ' produces angles never seen when training at L with θ.

    A pair whose training angles already covered a full turn (L·θ_i ≥ 2π) has seen every
    (cos, sin) value, so nothing is new to it; otherwise angles beyond L·θ_i are unseen.
    This is the argument behind NTK-by-parts (YaRN paper §3.2). Ranges are measured as the
    paper does, over a window of L positions (L·θ_i, i.e. r = L/λ turns); integer positions
    0..L−1 stop at (L−1)·θ_i, which would make PI at L' = sL look 1 − 1/s positions "beyond".
    """
    check_length("train_length", train_length)
    check_length("eval_length", eval_length)
    train_max = train_length * train_inv_freq.to(torch.float64)
    eval_max = eval_length * eval_inv_freq.to(torch.float64)
    unseen = (eval_max > train_max * (1 + 1e-12)) & (train_max < 2 * math.pi)
    return AngleCoverage(train_max, eval_max, unseen)
