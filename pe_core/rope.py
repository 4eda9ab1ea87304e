"""RoPE frequencies for plain RoPE and its context-extension methods.

One entry per rope type (``ROPE_TYPE_ENTRIES``), as transformers' ``modeling_rope_utils`` keeps one function
per type behind a name: the entry's scaling function cites its source, and its fields say what the type reads
and how the reader, the pages, the checker and the planner treat it, so adding a rope type is one function and
one entry. Everything is float64 so the analysis pages can show exact values; ``tests/test_rope_parity.py``
checks every type that transformers implements against it to float32 precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import NamedTuple

import torch

from i18n import N_, _


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
        isinstance(spec.rope_type, str) and spec.rope_type in ROPE_TYPE_ENTRIES,
        N_("rope_type must be one of {choices} (got {rope_type!r})."), choices=', '.join(ROPE_TYPE_ENTRIES),
        rope_type=spec.rope_type,
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
    if spec.attention_factor is not None:
        _require(
            _is_number(spec.attention_factor) and spec.attention_factor > 0,
            N_("attention_factor must be a positive number (got {attention_factor!r})."), attention_factor=spec.attention_factor,
        )
    for name in ("mscale", "mscale_all_dim"):
        value = getattr(spec, name)
        _require(value is None or (_is_number(value) and value >= 0), N_("{name} must be a number ≥ 0 (got {value!r})."), name=name, value=value)
    entry = ROPE_TYPE_ENTRIES[spec.rope_type]
    if entry.validate is not None:
        entry.validate(spec)


def _betas_ordered(spec: RopeSpec) -> None:
    """NTK-by-parts' α < β (the paper's γ(r) divides by β − α)."""
    _require(
        _is_number(spec.beta_fast) and _is_number(spec.beta_slow) and 0 < spec.beta_slow < spec.beta_fast,
        N_("beta_fast and beta_slow must satisfy 0 < beta_slow < beta_fast (got "
           "beta_slow={beta_slow!r}, beta_fast={beta_fast!r})."), beta_slow=spec.beta_slow, beta_fast=spec.beta_fast,
    )


def _betas_ordered_or_equal(spec: RopeSpec) -> None:
    """YaRN's β_slow ≤ β_fast: equal betas are legal, the reference ramp widens a zero-width range (Kimi K2: 1, 1)."""
    _require(
        _is_number(spec.beta_fast) and _is_number(spec.beta_slow) and 0 < spec.beta_slow <= spec.beta_fast,
        N_("beta_fast and beta_slow must satisfy 0 < beta_slow ≤ beta_fast (got "
           "beta_slow={beta_slow!r}, beta_fast={beta_fast!r})."), beta_slow=spec.beta_slow, beta_fast=spec.beta_fast,
    )


def _bands_ordered(spec: RopeSpec) -> None:
    _require(
        _is_number(spec.low_freq_factor)
        and _is_number(spec.high_freq_factor)
        and 0 < spec.low_freq_factor <= spec.high_freq_factor,  # equal in Llama 4 (1 and 1): a step, no band
        N_("low_freq_factor and high_freq_factor must satisfy 0 < low_freq_factor ≤ high_freq_factor "
           "(got low_freq_factor={low_freq_factor!r}, high_freq_factor={high_freq_factor!r})."), low_freq_factor=spec.low_freq_factor, high_freq_factor=spec.high_freq_factor,
    )


def _factor_lists(spec: RopeSpec) -> None:
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


def dynamic_ntk_base(base: float, factor: float, rotary_dim: int, original_length: int, current_length):
    """Dynamic NTK's base at the current length l (emozilla 2023, as transformers): b·(s·l/L − (s − 1))^(d/(d−2)),
    with l never below L. ``current_length`` is a number or a tensor of lengths (one base each)."""
    if isinstance(current_length, torch.Tensor):
        current = current_length.to(torch.float64).clamp(min=original_length)
    else:
        current = max(current_length, original_length)
    return base * ((factor * current / original_length) - (factor - 1)) ** (rotary_dim / (rotary_dim - 2))


# --- one entry per rope type -----------------------------------------------------------------
#
# A rope type is plain frequencies B^(−2i/D) (B the base it grows to, D the width its exponent runs over) and a
# scaling of them, ``scale(spec, seq_len, plain)``. The checker fits ports by applying the same scaling to the
# plain frequencies a port got wrong, so each formula is written once, here.


def _unscaled(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """Plain RoPE (RoFormer, Su et al. 2021), evaluated beyond its training length as is: direct extrapolation."""
    return plain


def _divided_by_factor(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """Position Interpolation (Chen et al. 2023, arXiv:2306.15595): θ_i / s."""
    return plain / spec.factor


def _ntk_grown_base(spec: RopeSpec, seq_len: int | None) -> float:
    """Static NTK-aware scaling (bloc97, reddit r/LocalLLaMA 2023): base·s^(d/(d−2)), θ otherwise plain."""
    return ntk_aware_base(spec.base, spec.factor, spec.rotary_dim)


def _dynamic_grown_base(spec: RopeSpec, seq_len: int | None) -> float:
    """Dynamic NTK (emozilla, 2023) as in transformers: the NTK base at the current length, l ≥ L."""
    length = spec.original_max_position_embeddings
    return dynamic_ntk_base(spec.base, spec.factor, spec.rotary_dim, length, length if seq_len is None else seq_len)


def _dynamic_at_lengths(spec: RopeSpec, lengths: torch.Tensor) -> torch.Tensor:
    """θ for every length at once, [lengths, pairs]: one grown base per length."""
    bases = dynamic_ntk_base(spec.base, spec.factor, spec.rotary_dim, spec.original_max_position_embeddings, lengths)
    exponents = torch.arange(0, spec.rotary_dim, 2, dtype=torch.float64) / spec.rotary_dim
    return 1.0 / (bases[:, None] ** exponents[None, :])


def _ntk_by_parts_scaled(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """NTK-by-parts, continuous γ(r) of the YaRN paper (Peng et al. 2023, arXiv:2309.00071, eq. 18-19)."""
    gamma = ntk_by_parts_gamma(spec, plain)
    return (1 - gamma) * plain / spec.factor + gamma * plain


def _yarn_scaled(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """YaRN as transformers' ``_compute_yarn_parameters`` (Peng et al. 2023, arXiv:2309.00071): a ramp over the pair
    index from θ_i (kept) to θ_i/s (interpolated)."""
    keep = 1 - yarn_ramp(spec)  # fraction of the original θ kept, per pair
    return (plain / spec.factor) * (1 - keep) + plain * keep


def _llama3_scaled(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """Llama 3.1's frequency-dependent scaling (Meta, 2024), as transformers implements it."""
    context = spec.original_max_position_embeddings
    wavelen = 2 * math.pi / plain
    scaled = torch.where(wavelen > context / spec.low_freq_factor, plain / spec.factor, plain)
    smooth = (context / wavelen - spec.low_freq_factor) / (spec.high_freq_factor - spec.low_freq_factor)
    smoothed = (1 - smooth) * scaled / spec.factor + smooth * scaled
    is_medium = (wavelen >= context / spec.high_freq_factor) & (wavelen <= context / spec.low_freq_factor)
    return torch.where(is_medium, smoothed, scaled)


def longrope_factors(spec: RopeSpec, seq_len: int | None) -> torch.Tensor:
    """LongRoPE's per-pair factors: the long ones past the original length L, the short ones otherwise."""
    use_long = seq_len is not None and seq_len > spec.original_max_position_embeddings
    return torch.tensor(spec.long_factor if use_long else spec.short_factor, dtype=torch.float64)


def _longrope_scaled(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """LongRoPE (Ding et al. 2024, arXiv:2402.13753): per-pair factors, long ones past L."""
    return plain / longrope_factors(spec, seq_len)


def _longrope_at_lengths(spec: RopeSpec, lengths: torch.Tensor) -> torch.Tensor:
    length = spec.original_max_position_embeddings
    short, long = (rope_frequencies(spec, n).inv_freq for n in (length, length + 1))
    return torch.where((lengths > length)[:, None], long, short)


def _attention_factor_or(spec: RopeSpec, default: float) -> float:
    return default if spec.attention_factor is None else float(spec.attention_factor)


def _no_attention_factor(spec: RopeSpec) -> float:
    return 1.0


def _given_attention_factor(spec: RopeSpec) -> float:
    return _attention_factor_or(spec, 1.0)


def yarn_attention_factor(spec: RopeSpec) -> float:
    """transformers' default: mscale ratio when both mscales are set, else 0.1·ln s + 1."""
    if spec.attention_factor is not None:
        return float(spec.attention_factor)
    if spec.mscale and spec.mscale_all_dim:
        return float(yarn_get_mscale(spec.factor, spec.mscale) / yarn_get_mscale(spec.factor, spec.mscale_all_dim))
    return yarn_get_mscale(spec.factor)


def longrope_attention_factor(spec: RopeSpec) -> float:
    """√(1 + ln s / ln L), and 1 for s ≤ 1 (transformers' default for LongRoPE)."""
    if spec.attention_factor is not None:
        return float(spec.attention_factor)
    if spec.factor <= 1.0:
        return 1.0
    return math.sqrt(1 + math.log(spec.factor) / math.log(spec.original_max_position_embeddings))


@dataclass(frozen=True)
class RopeType:
    """One rope type: its formula, what it reads, and how the reader, the pages, the checker and the planner treat
    it. Everything that differs between rope types is a field here; nothing else tests a type's name."""

    name: str
    title: str  # N_()-marked
    scale: Callable[[RopeSpec, int | None, torch.Tensor], torch.Tensor]  # plain θ -> the type's θ
    # the base its plain frequencies use (NTK-type scalings grow it): ``spec.base`` when None
    grown_base: Callable[[RopeSpec, int | None], float] | None = None
    attention_factor: Callable[[RopeSpec], float] = _no_attention_factor  # multiplies cos and sin
    # RopeSpec fields it reads beyond head_dim, base and partial_rotary_factor (what a comparison shows for it)
    reads: tuple[str, ...] = ()
    # how a config gives its factor: "required", "optional" (1 when absent), "from_lengths" (max_position_embeddings
    # / original when absent), or "none" (not read)
    factor_from: str = "required"
    # where its L (original_max_position_embeddings) comes from: "original" (that key, else max_position_embeddings),
    # "max_positions" (required), or "context" (max_position_embeddings, else RopeSpec's default)
    length_from: str = "context"
    required: tuple[str, ...] = ()  # rope_parameters keys a config must give (numbers, or lists for *_factor lists)
    extends: bool = True  # a context-extension method: its factor, when > 1, stretches the context
    whole_head_exponent: bool = False  # θ_i = b^(−2i/h) over the whole head h, not the rotated width
    one_divisor: bool = False  # θ = plain θ / one number for every pair (ports compute it in one dtype end to end)
    # θ for many sequence lengths at once, [lengths, pairs], where θ follows the sequence length
    at_lengths: Callable[[RopeSpec, torch.Tensor], torch.Tensor] | None = None
    ramp: Callable[[RopeSpec], torch.Tensor] | None = None  # its blend between θ_i and θ_i/s, per pair
    validate: Callable[[RopeSpec], None] | None = None  # type-specific checks, raising ValueError with a sentence
    aliases: tuple[str, ...] = ()  # older names configs still use

    @property
    def follows_length(self) -> bool:
        """Do its θ change with the sequence length (so a model computes them per forward pass)?"""
        return self.at_lengths is not None

    def frequencies(self, spec: RopeSpec, seq_len: int | None) -> RopeFrequencies:
        base = spec.base if self.grown_base is None else self.grown_base(spec, seq_len)
        plain = plain_frequencies(base, spec.num_pairs, exponent_width(spec))
        return RopeFrequencies(self.scale(spec, seq_len, plain), self.attention_factor(spec))


_BETAS = ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow")

ROPE_TYPE_ENTRIES: dict[str, RopeType] = {entry.name: entry for entry in (
    RopeType("default", N_("Direct extrapolation (plain RoPE)"), _unscaled, factor_from="none", extends=False,
             one_divisor=True, aliases=("mrope",)),  # Qwen2-VL's M-RoPE splits the pairs among axes but builds plain θ
    RopeType("linear", N_("Position Interpolation (linear)"), _divided_by_factor, reads=("factor",), one_divisor=True),
    RopeType("ntk", N_("NTK-aware (static)"), _unscaled, grown_base=_ntk_grown_base, reads=("factor",),
             one_divisor=True, aliases=("ntk-aware",)),
    RopeType("dynamic", N_("Dynamic NTK"), _unscaled, grown_base=_dynamic_grown_base,
             reads=("factor", "original_max_position_embeddings"), length_from="max_positions",
             at_lengths=_dynamic_at_lengths, one_divisor=True, aliases=("dynamic_ntk",)),
    RopeType("ntk_by_parts", N_("NTK-by-parts (YaRN paper's γ(r))"), _ntk_by_parts_scaled,
             attention_factor=_given_attention_factor, reads=_BETAS, ramp=ntk_by_parts_gamma,
             validate=_betas_ordered),
    RopeType("yarn", N_("YaRN (reference implementation)"), _yarn_scaled, attention_factor=yarn_attention_factor,
             reads=(*_BETAS, "truncate", "attention_factor", "mscale", "mscale_all_dim"), factor_from="from_lengths",
             length_from="original", ramp=yarn_ramp, validate=_betas_ordered_or_equal),
    RopeType("llama3", N_("Llama-3 scaling"), _llama3_scaled, attention_factor=_given_attention_factor,
             reads=("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
             length_from="original", required=("low_freq_factor", "high_freq_factor"), validate=_bands_ordered),
    RopeType("longrope", N_("LongRoPE"), _longrope_scaled, attention_factor=longrope_attention_factor,
             reads=("factor", "original_max_position_embeddings", "short_factor", "long_factor", "attention_factor"),
             factor_from="from_lengths", length_from="original", required=("short_factor", "long_factor"),
             at_lengths=_longrope_at_lengths, validate=_factor_lists, aliases=("su",)),
    # Gemma 4's global layers, as transformers' ``_compute_proportional_rope_parameters``: the first rotary_dim/2
    # pairs keep the θ_i = b^(−2i/d) of the whole head, divided by the factor; the others are not rotated
    # (transformers stores θ = 0 for them)
    RopeType("proportional", N_("Proportional RoPE (Gemma 4)"), _divided_by_factor, reads=("factor",),
             factor_from="optional", extends=False, whole_head_exponent=True, one_divisor=True),
)}
ROPE_TYPES = tuple(ROPE_TYPE_ENTRIES)
_CANONICAL = {alias: entry.name for entry in ROPE_TYPE_ENTRIES.values() for alias in entry.aliases}


def rope_type_entry(rope_type: str) -> RopeType:
    """The entry of ``rope_type`` (a RopeSpec's, so already validated)."""
    return ROPE_TYPE_ENTRIES[rope_type]


def canonical_rope_type(name: str) -> str:
    """A rope type's current name, for an older name configs still use ("su" -> "longrope"); others as given."""
    return _CANONICAL.get(name, name)


def exponent_width(spec: RopeSpec) -> int:
    """D in θᵢ = b^(−2i/D): the rotated width, or the whole head for Gemma 4's proportional RoPE."""
    return spec.head_dim if ROPE_TYPE_ENTRIES[spec.rope_type].whole_head_exponent else spec.rotary_dim


def plain_frequencies(base: float, count: int, width: int, offset: float = 0.0,
                      exponent_dtype: torch.dtype | None = None) -> torch.Tensor:
    """B^(−(2i + o)/D) for i < count; with ``exponent_dtype`` the index and the exponent are rounded to that dtype
    (``torch.arange`` in bfloat16, or a bfloat16 default dtype) before a full-precision power."""
    index = torch.arange(count, dtype=torch.float64) * 2 + offset
    if exponent_dtype is not None:
        exponent = (index.to(exponent_dtype) / width).to(exponent_dtype).to(torch.float64)
    else:
        exponent = index / width
    return 1.0 / torch.as_tensor(base, dtype=torch.float64) ** exponent


def rope_frequencies(spec: RopeSpec, seq_len: int | None = None) -> RopeFrequencies:
    """Inverse frequencies θ_i (float64, length rotary_dim/2) and the attention factor.

    ``seq_len`` is the current sequence length; only the types whose θ follow it (dynamic NTK, LongRoPE) use it. It is taken as
    transformers' functions take it: an int or a 0-d integer tensor (``max(position_ids) + 1``), 0 included (no
    longer than the original length).
    """
    if seq_len is not None:
        seq_len = sequence_length(seq_len)
    return ROPE_TYPE_ENTRIES[spec.rope_type].frequencies(spec, seq_len)


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
