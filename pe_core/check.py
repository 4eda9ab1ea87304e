"""Check a RoPE implementation's inverse frequencies against transformers, and name the bug that explains them.

What the user supplies, precisely:

- a model config (``from_hf_config`` reads it as transformers does), optionally the sequence length
  the implementation was run at (dynamic NTK and LongRoPE depend on it; default: none given, as at
  model init);
- their θᵢ, in one of two forms, told apart by the count:
  *per pair* - ``rotary_dim / 2`` numbers, θ₀ … θ_{d/2−1}, the ``inv_freq`` buffer in pair order; or
  *per dimension* - ``rotary_dim`` numbers, the frequency each rotated dimension of the head turns at
  (the angle table at position 1, ``torch.cat((freqs, freqs), -1)[1]`` in transformers' half-split
  layout, ``freqs.repeat_interleave(2, -1)[1]`` in the interleaved one). Only this form shows the
  pairing: a per-pair list is the same whichever dimensions a pair rotates;
  for a model with ``partial_rotary_factor`` < 1, ``head_dim / 2`` or ``head_dim`` numbers are read
  as θᵢ for the whole head (and match only if the unrotated pairs are 0);
- optionally their attention factor: the factor their RoPE multiplies cos and sin by (transformers'
  ``attention_scaling``; q·k is scaled by its square).

The verdict is *match* when every θᵢ is within float32 tolerance of the float64 reference and the
attention factor (if given) is too. Tolerance per entry: 8·ε₃₂·(1 + |ln θᵢ|) relative, ε₃₂ = 2⁻²³:
computing b^(−2i/d) in float32 rounds the exponent, an error that the power multiplies by |ln θᵢ|,
plus a few roundings of the power, the division and the method's blend (transformers' own float32
results stay within 0.8 of these units on every preset).

On a mismatch every bug class of ``BUG_CLASSES`` that applies to the config is tried: a class
reproduces the numbers if one of its perturbed implementations matches them within the same
tolerance (a rounding to bfloat16/float16 is matched to within the rounding of a float32 value).
Some classes are fitted (``pe_core.fit``): the base, the exponent's start and width, the factor, the
original length L, the length dynamic NTK was grown for, the rope type, YaRN's β values are fitted
to the numbers and named (a known default, a bfloat16 rounding or integer wrap-around of rope_theta,
static NTK used for dynamic, ...); a fitted parameter is the answer only where no specific bug is.
Failing one bug, θᵢ and the attention factor are diagnosed apart, then two θ bugs at once: any bug's
output rounded to half precision or laid out in the other pairing, and any bug acting on the config
another bug changed. The diagnosis lists every explanation found; none means that neither one known
bug nor two reproduce them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys

if __name__ == "__main__":  # --help and a bad argument are answered before torch is imported
    from pe_core.cli_args import check_parser

    check_parser().parse_args()
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from i18n import N_, Deferred, _
from pe_core import fit
from pe_core.cli_args import FORMS, LAYOUTS
from pe_core.rope import (
    ROPE_TYPE_ENTRIES,
    RopeSpec,
    default_inv_freq,
    ntk_aware_base,
    rope_frequencies,
    rope_type_entry,
    rotations_within,
    yarn_correction_dim,
    yarn_get_mscale,
)

EPS32 = torch.finfo(torch.float32).eps
TOLERANCE_ULPS = 8
LAYOUT_NAMES = {"half": N_("half-split"), "interleaved": N_("interleaved")}
LAYOUT_TITLES = {"half": N_("half-split (dimension i with i + d/2, transformers' rotate_half)"),
                 "interleaved": N_("interleaved (dimensions 2i and 2i + 1, Meta's complex form)")}
FORM_TITLES = {"auto": N_("tell by the count"), "pairs": N_("one θᵢ per pair"),
               "dims": N_("one value per rotated dimension")}
LOW_PRECISION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


# ---- tolerance and layouts ----------------------------------------------------------------------


def float32_tolerance(values: torch.Tensor) -> torch.Tensor:
    """Relative tolerance per entry for a float32 computation of these θᵢ: 8·ε₃₂·(1 + |ln θᵢ|)."""
    magnitude = values.to(torch.float64).abs()
    log = torch.where(magnitude > 0, magnitude.clamp_min(1e-300).log().abs(), torch.zeros_like(magnitude))
    return TOLERANCE_ULPS * EPS32 * (1 + log)


def close(given: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Per entry: within float32 tolerance of the reference (two zeros are close)."""
    return (given - reference).abs() <= float32_tolerance(reference) * reference.abs()


def per_dimension(pairs: torch.Tensor, layout: str) -> torch.Tensor:
    """θ per rotated dimension: half-split [θ₀ … θ_{P−1}, θ₀ … θ_{P−1}] or interleaved [θ₀, θ₀, θ₁, θ₁, …]."""
    if layout == "half":
        return torch.cat([pairs, pairs])
    if layout == "interleaved":
        return pairs.repeat_interleave(2)
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r}).")


def other_layout(layout: str) -> str:
    return "interleaved" if layout == "half" else "half"


def pair_of_dimension(dimension: int, pairs: int, layout: str) -> int:
    return dimension % pairs if layout == "half" else dimension // 2


# ---- what the numbers are read as ---------------------------------------------------------------


class Reading(NamedTuple):
    form: str  # "pairs" or "dims"
    full_head: bool  # θ for every pair of the head (partial_rotary_factor ignored) rather than the rotated ones

    def expected(self, spec: RopeSpec, pairs: torch.Tensor, layout: str) -> torch.Tensor:
        values = pairs if self.form == "pairs" else per_dimension(pairs, layout)
        if not self.full_head:
            return values
        total = spec.head_dim // 2 if self.form == "pairs" else spec.head_dim
        return torch.cat([values, values.new_zeros(total - values.numel())])

    def count(self, spec: RopeSpec) -> int:
        rotated = spec.num_pairs if self.form == "pairs" else spec.rotary_dim
        head = spec.head_dim // 2 if self.form == "pairs" else spec.head_dim
        return head if self.full_head else rotated


def accepted_counts(spec: RopeSpec) -> dict[int, list[Reading]]:
    """Count of numbers -> the readings that count allows (in the order they are tried)."""
    readings = [Reading("pairs", False), Reading("dims", False)]
    if spec.rotary_dim < spec.head_dim:
        readings += [Reading("pairs", True), Reading("dims", True)]
    counts: dict[int, list[Reading]] = {}
    for reading in readings:
        counts.setdefault(reading.count(spec), []).append(reading)
    return counts


def readings_for(spec: RopeSpec, count: int, form: str = "auto") -> list[Reading]:
    """How ``count`` numbers can be read for this config; ``ValueError`` naming the counts that work."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)} (got {form!r}).")
    options = [r for r in accepted_counts(spec).get(count, []) if form == "auto" or r.form == form]
    if options:
        return options
    partial = ""
    if spec.rotary_dim < spec.head_dim:
        partial = " " + _("(or {pairs} / {head} for the whole head of {head} dimensions)").format(
            pairs=spec.head_dim // 2, head=spec.head_dim)
    message = {
        "auto": N_("Got {count} numbers, but this RoPE rotates {rotated} of {head} dimensions: give {pairs} θᵢ "
                   "(one per pair) or {rotated} (one per rotated dimension){partial}."),
        "pairs": N_("Got {count} numbers one per pair, but this RoPE rotates {rotated} of {head} dimensions: give "
                    "{pairs} θᵢ (one per pair) or {rotated} (one per rotated dimension){partial}."),
        "dims": N_("Got {count} numbers one per dimension, but this RoPE rotates {rotated} of {head} dimensions: "
                   "give {pairs} θᵢ (one per pair) or {rotated} (one per rotated dimension){partial}."),
    }[form]
    raise ValueError(_(message).format(count=count, rotated=spec.rotary_dim, head=spec.head_dim,
                                       pairs=spec.num_pairs, partial=partial))


# ---- the bug classes ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One perturbed implementation: what it would output, in the form it outputs it."""

    values: torch.Tensor  # θ per pair (rotated pairs, or the whole head's if full_head), or per dimension
    attention_factor: float
    form: str = "pairs"  # "dims": already laid out per dimension
    full_head: bool = False
    dtype: torch.dtype | None = None  # the values are a rounding to this dtype of a float64 computation
    computed_in: torch.dtype | None = None  # the values were computed in this dtype (matched to 1 ulp)
    sentence: str | None = None  # an N_() explanation for this variant (the class's otherwise)
    detail: tuple[tuple[str, object], ...] = ()

    def for_reading(self, reading: Reading, spec: RopeSpec, layout: str) -> torch.Tensor | None:
        """These values as the given numbers would hold them, or None if that reading cannot show them."""
        if self.form == "dims":
            return self.values if reading == Reading("dims", False) else None
        if self.full_head != reading.full_head:
            return None
        return self.values if reading.form == "pairs" else per_dimension(self.values, layout)


@dataclasses.dataclass(frozen=True)
class BugClass:
    """A bug that public threads show again and again: when it can occur, what it outputs, why."""

    name: str
    title: str  # N_()
    summary: str  # N_(): what the bug is, for a list of the classes
    explanation: str  # N_(): one sentence; placeholders from the candidate's detail and {where}
    applies: Callable[[RopeSpec], bool]
    perturb: Callable[[RopeSpec, int | None], tuple[torch.Tensor, float]]  # the canonical buggy output
    candidates: Callable[[RopeSpec, int | None, str, torch.Tensor], list[Candidate]] | None = None
    references: tuple[str, ...] = ()  # keys of references.REFERENCES: public bug threads
    attention_only: bool = False  # changes the attention factor only, never θᵢ
    fitted: bool = False  # a parameter fitted to the numbers: named only when no specific bug reproduces them
    # the bug as a changed config (spec, seq_len, θ for the whole head), so a second bug can act on top of it
    spec_change: Callable[[RopeSpec, int | None], tuple[RopeSpec, int | None, bool] | None] | None = None

    def variants(self, spec: RopeSpec, seq_len: int | None, layout: str, given: torch.Tensor) -> list[Candidate]:
        if self.candidates is not None:
            return self.candidates(spec, seq_len, layout, given)
        values, attention = self.perturb(spec, seq_len)
        return [Candidate(values, attention)]


def _expected(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    frequencies = rope_frequencies(spec, seq_len)
    return frequencies.inv_freq, frequencies.attention_factor


def _is_yarn(spec: RopeSpec) -> bool:
    """Does the type blend θ and θ/s by YaRN's β_fast and β_slow (YaRN, NTK-by-parts)?"""
    return "beta_fast" in rope_type_entry(spec.rope_type).reads


def _beta_swapped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """YaRN with the correction range computed from (β_slow, β_fast) instead of (β_fast, β_slow)."""
    theta, attention = _expected(spec, seq_len)
    extrapolation = default_inv_freq(spec.base, spec.rotary_dim)
    if spec.rope_type == "ntk_by_parts":  # the paper's γ(r) with α and β exchanged
        turns = rotations_within(extrapolation, spec.original_max_position_embeddings)
        keep = ((turns - spec.beta_fast) / (spec.beta_slow - spec.beta_fast)).clamp(0, 1)
    else:
        dim, length = spec.rotary_dim, spec.original_max_position_embeddings
        low = yarn_correction_dim(spec.beta_slow, dim, spec.base, length)
        high = yarn_correction_dim(spec.beta_fast, dim, spec.base, length)
        if spec.truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(spec.num_pairs, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        keep = 1 - ramp
    return extrapolation / spec.factor * (1 - keep) + extrapolation * keep, attention


def _truncate_flipped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(truncate=not spec.truncate), seq_len)


def _truncate_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = _truncate_flipped(spec, seq_len)
    return [Candidate(values, attention, detail=(("used", not spec.truncate), ("config", spec.truncate)))]


def _unscaled(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return default_inv_freq(spec.base, spec.rotary_dim), 1.0


def _no_attention_factor(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec, seq_len)[0], 1.0


def _attention_factor_twice(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    theta, attention = _expected(spec, seq_len)
    return theta, attention * attention


def _interleaved(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """The per-dimension values of an implementation that lays pairs out interleaved for a half-split checkpoint."""
    theta, attention = _expected(spec, seq_len)
    return per_dimension(theta, "interleaved"), attention


def _layout_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = _expected(spec, seq_len)
    wrong = other_layout(layout)
    return [Candidate(per_dimension(theta, wrong), attention, form="dims",
                      detail=(("used_layout", wrong), ("expected_layout", layout)))]


COMMON_DEFAULT_BASE = 10_000.0  # the base most code hard-codes (RoFormer's, transformers' default_theta)
OTHER_DEFAULT_BASE = 1_000_000.0  # the default of several newer config classes


def _wrong_base(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    used = COMMON_DEFAULT_BASE if spec.base != COMMON_DEFAULT_BASE else OTHER_DEFAULT_BASE
    return _expected(spec.replace(base=used), seq_len)


def fitted_base(spec: RopeSpec, seq_len: int | None, given: torch.Tensor, steps: int = 8) -> float | None:
    """The base for which this config's method best explains ``given`` (θ per rotated pair), or None.

    Fixed-point iteration on a least-squares fit of ln θ against the exponent 2i/d: exact in one step
    for plain, linear and NTK RoPE, a few steps for YaRN and Llama-3, whose bands move with the base.
    """
    if given.numel() != spec.num_pairs or bool((given <= 0).any()):
        return None
    exponent = torch.arange(spec.num_pairs, dtype=torch.float64) * 2 / spec.rotary_dim
    centred = exponent - exponent.mean()
    base = spec.base
    for _step in range(steps):
        try:
            expected = rope_frequencies(spec.replace(base=base), seq_len).inv_freq
        except ValueError:
            return None
        slope = float(((given / expected).log() * centred).sum() / (centred * centred).sum())
        new_base = base * math.exp(-slope)
        if not math.isfinite(new_base) or new_base <= 1:
            return None
        if abs(new_base / base - 1) < 1e-13:
            return new_base
        base = new_base
    return base


def pair_bases(spec: RopeSpec, given: torch.Tensor, most: int = 4) -> list[float]:
    """Bases that pairs of ``given`` imply if they were kept (θᵢ = b^(−2i/d)) or divided by the factor
    (θᵢ = b^(−2i/d)/s), most frequent first: YaRN and Llama-3 keep the fast pairs and divide the slow
    ones, so a wrong base shows up as one value many pairs agree on."""
    if given.numel() != spec.num_pairs or spec.num_pairs < 2 or bool((given[1:] <= 0).any()):
        return []
    index = torch.arange(1, spec.num_pairs, dtype=torch.float64)
    power = -spec.rotary_dim / (2 * index)
    implied = torch.cat([given[1:] ** power, (given[1:] * spec.factor) ** power])
    implied = implied[torch.isfinite(implied) & (implied > 1)]
    if not len(implied):
        return []
    rounded = torch.round(implied.log() * 1e6)  # bases equal to about 1e-6 fall together
    values, counts = torch.unique(rounded, return_counts=True)
    order = torch.argsort(counts, descending=True)[:most]
    return [float(torch.exp(values[i] / 1e6)) for i in order if counts[i] >= 2]


def _base_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    if given.numel() == spec.rotary_dim:  # per dimension: fit on the pairs the expected layout implies
        given = given[: spec.num_pairs] if layout == "half" else given[::2]
    tried: list[float] = []
    found = []
    fitted = [fitted_base(spec, seq_len, given), *pair_bases(spec, given)]
    # numbers rounded on top of a wrong base (a bfloat16 buffer, say) fit only near it: try the round values there
    near = [float(f"{guess:.{digits}g}") for guess in fitted if guess is not None for digits in (2, 3)]
    near += [known for known in fit.KNOWN_BASES for guess in fitted[:1] if guess and abs(known / guess - 1) < 0.02]
    for index, guess in enumerate([*fitted, *near]):
        if guess is None or abs(guess / spec.base - 1) < 1e-6 or any(abs(guess / t - 1) < 1e-9 for t in tried):
            continue
        tried.append(guess)
        used = guess
        if index < len(fitted):  # polish the float32 rounding of a fitted base (a round value stays as it is)
            used = fitted_base(spec.replace(base=guess), seq_len, given, steps=2) or guess
        origin = fit.name_base(spec, seq_len, used, tolerance=1e-5)
        if origin.kind not in ("default", "other"):  # a rounding, wrap-around or width: their own classes
            continue
        used = origin.value
        try:
            values, attention = _expected(spec.replace(base=used), seq_len)
        except ValueError:
            continue
        sentence = None if origin.kind == "default" else OTHER_BASE_SENTENCE
        found.append(Candidate(values, attention, detail=(("used_base", used), ("base", spec.base)),
                               sentence=sentence))
    return found


OTHER_BASE_SENTENCE = N_("The θᵢ are the expected ones for base {used_base} instead of the config's {base}. {used_base} "
                         "is no usual default, nor a bfloat16/float16 rounding or an integer wrap-around of {base}: "
                         "rope_theta was mis-read or replaced; the curves part at {where}.")


def _full_head(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(partial_rotary_factor=1.0), seq_len)


def _full_head_applies(spec: RopeSpec) -> bool:
    if spec.partial_rotary_factor >= 1:
        return False
    try:
        spec.replace(partial_rotary_factor=1.0)
    except ValueError:  # LongRoPE's factor lists are per rotated pair: the bug cannot even run
        return False
    return True


def _full_head_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = _full_head(spec, seq_len)
    return [Candidate(values, attention, full_head=True,
                      detail=(("head_pairs", spec.head_dim // 2), ("head_dim", spec.head_dim),
                              ("partial", spec.partial_rotary_factor), ("pairs", spec.num_pairs),
                              ("rotary_dim", spec.rotary_dim)))]


def _rounded(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return values.to(dtype).to(torch.float64)


def _low_precision(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    theta, attention = _expected(spec, seq_len)
    return _rounded(theta, torch.bfloat16), attention


def computed_in(spec: RopeSpec, seq_len: int | None, dtype: torch.dtype) -> torch.Tensor | None:
    """θ computed entirely in ``dtype`` as ``1 / base ** (arange(0, d, 2) / d)``, then scaled in ``dtype``, for the
    rope types a port computes end to end in one dtype (one divisor for every pair: plain, linear, NTK, dynamic)."""
    entry = rope_type_entry(spec.rope_type)
    if not entry.one_divisor:
        return None
    dim = fit.exponent_width(spec)
    exponent = torch.arange(0, dim, 2, dtype=torch.int64)[: spec.num_pairs].to(dtype) / dim
    theta = 1.0 / (torch.tensor(fit.effective_base(spec, seq_len), dtype=dtype) ** exponent)
    return entry.scale(spec, seq_len, theta).to(torch.float64)


def _plain_computed_in(spec: RopeSpec, seq_len: int | None, dtype: torch.dtype) -> torch.Tensor | None:
    """1 / base ** (arange(0, d, 2) / d) entirely in ``dtype``, at the base the method scales; None where that
    base overflows ``dtype``."""
    base = torch.tensor(fit.effective_base(spec, seq_len), dtype=dtype)
    if not bool(torch.isfinite(base)):
        return None
    dim = fit.exponent_width(spec)
    exponent = torch.arange(0, 2 * spec.num_pairs, 2, dtype=torch.int64).to(dtype) / dim
    plain = (1.0 / (base ** exponent)).to(torch.float64)
    return plain if bool((plain > 0).all()) else None


def _precision_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = _expected(spec, seq_len)
    found = []
    for name, dtype in LOW_PRECISION_DTYPES.items():
        detail = (("dtype", name), ("ulp", torch.finfo(dtype).eps / 2))
        found.append(Candidate(_rounded(theta, dtype), attention, dtype=dtype, detail=detail))
        computed = computed_in(spec, seq_len, dtype)
        # a base past float16's range is infinite there: the overflow class names that
        if computed is not None and bool((computed[1:] > 0).all()):
            found.append(Candidate(computed, attention, computed_in=dtype, detail=detail,
                                   sentence=N_("The θᵢ are the expected ones computed in {dtype} (base, exponent "
                                               "and power all rounded to its {bits}-bit significand), so pairs "
                                               "err by up to {error:.1e}; the curves part at {where}.")))
        if computed is None:
            # a scaled method (Llama 3, YaRN, ...) on plain θᵢ computed entirely in ``dtype``: the scaling runs in
            # full precision on numbers that are already rounded (a buffer built in bfloat16, then scaled)
            plain = _plain_computed_in(spec, seq_len, dtype)
            if plain is not None:
                scaled = fit.apply_method(spec, seq_len, plain)
                if not bool(close(scaled, theta).all()):
                    found.append(Candidate(scaled, attention, detail=detail, sentence=N_(
                        "The θᵢ are {rope_type} scaling's applied to plain θᵢ computed in {dtype} (base, exponent "
                        "and power all rounded to its {bits}-bit significand); the curves part at {where}.")))
        stepped = _method_of_plain(spec, seq_len, exponent_dtype=dtype)
        if not bool(close(stepped, theta).all()):
            worst = float(((stepped - theta) / theta).abs().max())
            found.append(Candidate(stepped, attention, detail=(*detail, ("worst", worst)),
                                   sentence=N_("The exponents 2i/d were rounded to {dtype} before a full-precision "
                                               "power (torch.arange in {dtype}, or {dtype} as the default dtype), "
                                               "so θᵢ err stepwise, by up to {worst:.1e}; the curves part at "
                                               "{where}.")))
    return found


def _method_of_plain(spec: RopeSpec, seq_len: int | None, base: float | None = None, offset: float = 0.0,
                     width: int | None = None, exponent_dtype: torch.dtype | None = None) -> torch.Tensor:
    """The spec's method applied to plain θᵢ = B^(−(2i + offset)/width) (defaults: the method's own)."""
    plain = fit.plain_frequencies(fit.effective_base(spec, seq_len) if base is None else base, spec.num_pairs,
                                  width or fit.exponent_width(spec), offset, exponent_dtype)
    return fit.apply_method(spec, seq_len, plain)


def _as_pairs(spec: RopeSpec, layout: str, given: torch.Tensor) -> torch.Tensor | None:
    """θ per rotated pair from per-pair or per-dimension numbers (None for numbers of the whole head)."""
    if given.numel() == spec.num_pairs:
        return given
    if given.numel() == spec.rotary_dim:
        return given[: spec.num_pairs] if layout == "half" else given[::2]
    return None


# ---- bugs the numbers are fitted for -----------------------------------------------------------------------------


def _offset_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    """The exponent's index starting at o ≠ 0: arange(1, d, 2) gives o = 1, 2(i − 1) with i from 0 gives −2."""
    attention = _expected(spec, seq_len)[1]
    offsets = [1.0]
    pairs = _as_pairs(spec, layout, given)
    fitted = fit.fit_exponent(spec, seq_len, pairs) if pairs is not None else None
    if fitted is not None and abs(fitted.offset) >= 0.5 and abs(fitted.offset - round(fitted.offset)) < 1e-3:
        offsets.insert(0, float(round(fitted.offset)))
    width = fit.exponent_width(spec)
    found = []
    for offset in dict.fromkeys(offsets):
        shift = f"+ {offset:g}" if offset > 0 else f"− {-offset:g}"
        negated = f"−{offset:g}" if offset > 0 else f"{-offset:g}"
        ratio = fit.effective_base(spec, seq_len) ** (-offset / width)
        found.append(Candidate(_method_of_plain(spec, seq_len, offset=offset), attention,
                               detail=(("offset", offset), ("negated", negated), ("shift", shift), ("dim", width),
                                       ("ratio", ratio))))
    return found


def _offset(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _method_of_plain(spec, seq_len, offset=1.0), _expected(spec, seq_len)[1]


def _base_origin_candidates(kinds: tuple[str, ...]):
    """Candidates for the bases of ``fit.base_origins`` of these kinds, each in rope_theta's place."""
    def candidates(spec, seq_len, layout, given) -> list[Candidate]:
        found = []
        for origin in fit.base_origins(spec, seq_len):
            if origin.kind not in kinds:
                continue
            if origin.kind == "width":  # the exponent's width is wrong, not the base the method sees
                values = _method_of_plain(spec, seq_len, width=origin.detail[0][1])
                attention = _expected(spec, seq_len)[1]
            else:
                frequencies = fit.frequencies_or_none(spec, seq_len, base=origin.value)
                if frequencies is None:
                    continue
                values, attention = frequencies
            found.append(Candidate(values, attention, detail=(("used_base", origin.value), ("base", spec.base),
                                                              *origin.detail)))
        return found
    return candidates


def _float16_infinite(spec: RopeSpec) -> bool:
    return float(torch.tensor(spec.base, dtype=torch.float64).to(torch.float16)) == math.inf


def _overflow_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    found = _base_origin_candidates(("overflow",))(spec, seq_len, layout, given)
    if _float16_infinite(spec):
        values = _method_of_plain(spec, seq_len, base=math.inf)
        found.append(Candidate(values, _expected(spec, seq_len)[1], detail=(("first", float(values[0])),
                                                                            ("base", spec.base)),
                               sentence=N_("The θᵢ are [{first:.6g}, 0, 0, …]: the base {base} overflows float16 "
                                           "(largest finite value 65,504) to infinity, so every pair but the first "
                                           "stops rotating; the base, or base ** exponent, was held in float16.")))
    return found


def _overflow(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    candidates = _overflow_candidates(spec, seq_len, "half", torch.zeros(0))
    return candidates[0].values, candidates[0].attention_factor


def _overflow_applies(spec: RopeSpec) -> bool:
    return bool(fit.overflowed_bases(spec.base)) or _float16_infinite(spec)


def _rounded_base(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(base=fit.rounded_bases(spec.base)[0].value), seq_len)


def _width(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    origin = fit.width_base(spec)
    return _method_of_plain(spec, seq_len, width=origin.detail[0][1]), _expected(spec, seq_len)[1]


def _dynamic_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    """Dynamic NTK at the wrong length: the grown base the numbers imply, named as static NTK's or as dynamic
    NTK's at a length, and the two lengths ports use by mistake (L·s and, without one given, none)."""
    length_text = f"{seq_len:,}" if seq_len is not None else Deferred(N_("none given"))
    origins = [fit.name_grown_base(spec, seq_len, ntk_aware_base(spec.base, spec.factor, spec.rotary_dim)),
               fit.name_grown_base(spec, seq_len, fit.effective_base(
                   spec, round(spec.original_max_position_embeddings * spec.factor)))]
    pairs = _as_pairs(spec, layout, given)
    fitted = fit.fit_exponent(spec, seq_len, pairs) if pairs is not None else None
    if fitted is not None and abs(fitted.offset) < 1e-3:
        origins.insert(0, fit.name_grown_base(spec, seq_len, fitted.base))
    found, seen = [], set()
    for origin in origins:
        if origin is None or origin.value in seen or abs(origin.value / fit.effective_base(spec, seq_len) - 1) < 1e-12:
            continue
        seen.add(origin.value)
        detail = (("used_base", origin.value), ("base", fit.effective_base(spec, seq_len)), ("length", length_text),
                  *origin.detail)
        values = fit.plain_frequencies(origin.value, spec.num_pairs, spec.rotary_dim)
        if origin.kind == "static_ntk":
            sentence = N_("The θᵢ are static NTK's (base·s^(d/(d−2)) = {used_base}, the same at every length), but "
                          "the config says dynamic NTK, whose base at length {length} is {base}: static NTK was used "
                          "for dynamic; the curves part at {where}.")
        else:
            sentence = N_("The θᵢ are dynamic NTK's at sequence length {used_length:,} instead of {length} (base "
                          "{used_base} instead of {base}): the base was grown for the wrong length; the curves part "
                          "at {where}.")
        found.append(Candidate(values, 1.0, detail=detail, sentence=sentence))
    return found


def _dynamic_wrong_length(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    wrong = round(spec.original_max_position_embeddings * spec.factor)
    return _expected(spec, wrong if seq_len != wrong else None)


def _changed_candidates(spec, seq_len, changes_list, detail_of) -> list[Candidate]:
    found = []
    for changes in changes_list:
        frequencies = fit.frequencies_or_none(spec, seq_len, **changes)
        if frequencies is not None:
            found.append(Candidate(frequencies[0], frequencies[1], detail=detail_of(changes)))
    return found


# the scalings a port may have used instead: every extension method (one the spec cannot be switched to as it
# is, LongRoPE without factor lists, is skipped where it is tried)
_ROPE_TYPES_TRIED = tuple(name for name, entry in ROPE_TYPE_ENTRIES.items() if entry.extends)


def _rope_type_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    types = [t for t in _ROPE_TYPES_TRIED if t != spec.rope_type and not (spec.rope_type == "dynamic" and t == "ntk")]
    return _changed_candidates(spec, seq_len, [{"rope_type": t} for t in types],
                               lambda changes: (("used_type", changes["rope_type"]), ("factor", spec.factor)))


def _wrong_rope_type(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(rope_type="linear" if spec.rope_type != "linear" else "ntk"), seq_len)


def _factor_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    pairs = _as_pairs(spec, layout, given)
    guesses = fit.factor_guesses(spec, seq_len, pairs if pairs is not None else torch.zeros(0))
    return _changed_candidates(spec, seq_len, [{"factor": g} for g in guesses],
                               lambda changes: (("used_factor", changes["factor"]), ("factor", spec.factor)))


def _wrong_factor(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(factor=spec.factor * 2), seq_len)


def _length_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    pairs = _as_pairs(spec, layout, given)
    lengths = fit.length_guesses(spec, pairs if pairs is not None else torch.zeros(0))
    found = _changed_candidates(
        spec, seq_len, [{"original_max_position_embeddings": n} for n in lengths],
        lambda changes: (("used_length", changes["original_max_position_embeddings"]),
                         ("length", spec.original_max_position_embeddings)))
    longer = N_("The θᵢ are {rope_type}'s with original length L = {used_length:,} instead of {length:,}: the extended "
                "context length (max_position_embeddings, say) was taken for original_max_position_embeddings; the "
                "curves part at {where}.")
    shorter = N_("The θᵢ are {rope_type}'s with original length L = {used_length:,} instead of the config's "
                 "original_max_position_embeddings = {length:,}; the curves part at {where}.")
    return [dataclasses.replace(c, sentence=longer if dict(c.detail)["used_length"] > spec.original_max_position_embeddings
                                else shorter) for c in found]


def _wrong_length(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(original_max_position_embeddings=spec.original_max_position_embeddings * 16), seq_len)


def _longrope_multiplied_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    plain = default_inv_freq(spec.base, spec.rotary_dim)
    attention = _expected(spec, seq_len)[1]
    found = []
    for which, factors in ((Deferred(N_("short")), spec.short_factor), (Deferred(N_("long")), spec.long_factor)):
        factors = torch.tensor(factors, dtype=torch.float64)
        found.append(Candidate(plain * factors, attention,
                               detail=(("which", which), ("largest", float(factors.max() ** 2)))))
    if _uses_long(spec, seq_len):
        found.reverse()
    return found


def _longrope_multiplied(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    candidate = _longrope_multiplied_candidates(spec, seq_len, "half", torch.zeros(0))[0]
    return candidate.values, candidate.attention_factor


def _beta_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    return _changed_candidates(spec, seq_len, [{"beta_fast": f, "beta_slow": s} for f, s in fit.beta_guesses(spec)],
                               lambda changes: (("used_fast", changes["beta_fast"]),
                                                ("used_slow", changes["beta_slow"])))


def _wrong_betas(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec.replace(beta_fast=spec.beta_fast * 2), seq_len)


def _has_mscale_pair(spec: RopeSpec) -> bool:
    return "mscale" in _reads(spec) and bool(spec.mscale) and bool(spec.mscale_all_dim) and \
        spec.attention_factor is None and spec.factor > 1


def _mscale_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = _expected(spec, seq_len)
    softmax = yarn_get_mscale(spec.factor, spec.mscale_all_dim) ** 2
    found, seen = [], {attention}
    for which, value in (("mscale_all_dim", spec.mscale_all_dim), ("mscale", spec.mscale), ("1", 1.0)):
        used = yarn_get_mscale(spec.factor, value)
        if any(math.isclose(used, s, rel_tol=1e-12) for s in seen):
            continue
        seen.add(used)
        found.append(Candidate(theta, used, detail=(("which", which), ("coefficient", value), ("softmax", softmax))))
    return found


def _mscale_on_cos_sin(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _expected(spec, seq_len)[0], yarn_get_mscale(spec.factor, spec.mscale_all_dim)


def _llama3_variant(spec: RopeSpec, blend_reversed: bool) -> torch.Tensor:
    inv_freq = default_inv_freq(spec.base, spec.rotary_dim)
    low, high = spec.low_freq_factor, spec.high_freq_factor
    if not blend_reversed:
        low, high = high, low  # the two factors exchanged
    context = spec.original_max_position_embeddings
    low_wavelength, high_wavelength = context / low, context / high
    wavelength = 2 * math.pi / inv_freq
    scaled = torch.where(wavelength > low_wavelength, inv_freq / spec.factor, inv_freq)
    smooth = (context / wavelength - low) / (high - low)
    if blend_reversed:
        smooth = 1 - smooth
    smoothed = (1 - smooth) * scaled / spec.factor + smooth * scaled
    medium = (wavelength >= high_wavelength) & (wavelength <= low_wavelength)
    return torch.where(medium, smoothed, scaled)


def _llama3_inverted(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _llama3_variant(spec, blend_reversed=True), _expected(spec, seq_len)[1]


def _llama3_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    attention = _expected(spec, seq_len)[1]
    detail = (("low", spec.low_freq_factor), ("high", spec.high_freq_factor))
    return [
        Candidate(_llama3_variant(spec, blend_reversed=True), attention, detail=detail),
        Candidate(_llama3_variant(spec, blend_reversed=False), attention, detail=detail,
                  sentence=N_("The θᵢ are Llama-3's with low_freq_factor and high_freq_factor exchanged: the smooth "
                              "band collapses and every pair with λ > L/{high:g} is divided by s; the curves part "
                              "at {where}.")),
    ]


def _uses_long(spec: RopeSpec, seq_len: int | None) -> bool:
    return seq_len is not None and seq_len > spec.original_max_position_embeddings


def _longrope_swapped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    other = None if _uses_long(spec, seq_len) else spec.original_max_position_embeddings + 1
    return _expected(spec, other)


def _longrope_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = _longrope_swapped(spec, seq_len)
    detail = (("length", f"{seq_len:,}" if seq_len is not None else Deferred(N_("none given"))),
              ("original", f"{spec.original_max_position_embeddings:,}"))
    if _uses_long(spec, seq_len):
        sentence = N_("The θᵢ use LongRoPE's short factors, but at length {length} > original_max_position_embeddings "
                      "= {original} transformers switches to the long ones; the curves part at {where}.")
    else:
        sentence = N_("The θᵢ use LongRoPE's long factors, but at length {length} (≤ original_max_position_embeddings "
                      "= {original}) transformers uses the short ones; the curves part at {where}.")
    return [Candidate(values, attention, detail=detail, sentence=sentence)]


def _reads(spec: RopeSpec) -> tuple[str, ...]:
    return rope_type_entry(spec.rope_type).reads


def _one_factor(spec: RopeSpec) -> bool:
    """Does one factor scale the type's θ (every extension method but LongRoPE's factor per pair)?"""
    entry = rope_type_entry(spec.rope_type)
    return entry.extends and "long_factor" not in entry.reads


def _scaled(spec: RopeSpec) -> bool:
    return rope_type_entry(spec.rope_type).factor_from != "none"


def _has_attention_factor(spec: RopeSpec) -> bool:
    return rope_frequencies(spec).attention_factor != 1.0


def _always(spec: RopeSpec) -> bool:
    return True


BUG_CLASSES: dict[str, BugClass] = {bug.name: bug for bug in (
    BugClass("beta_swapped", N_("YaRN's β_fast and β_slow swapped"),
             N_("The YaRN correction range is computed from (β_slow, β_fast) instead of (β_fast, β_slow), so the ramp runs backwards."),
             N_("The θᵢ are YaRN's with β_fast and β_slow exchanged, so the ramp runs backwards (fast pairs "
                "interpolated, slow pairs kept); the curves part at {where}."),
             _is_yarn, _beta_swapped, references=("bug_yarn_betas",)),
    BugClass("truncate_ignored", N_("YaRN's truncate ignored"),
             N_("The YaRN correction range is rounded to whole pairs (or not) against the config's truncate."),
             N_("The θᵢ are YaRN's computed with truncate = {used} although the config sets truncate = {config}, "
                "which moves the ends of the ramp; the curves part at {where}."),
             lambda spec: "truncate" in _reads(spec), _truncate_flipped, _truncate_candidates,
             references=("bug_yarn_truncate",),
             spec_change=lambda spec, seq_len: (spec.replace(truncate=not spec.truncate), seq_len, False)),
    BugClass("factor_ignored", N_("Scaling factor ignored"),
             N_("rope_scaling is parsed but never applied: plain RoPE θᵢ at the config's base."),
             N_("The θᵢ are plain RoPE's: the config's {rope_type} scaling was never applied; the curves part at "
                "{where}."),
             _scaled, _unscaled, references=("bug_scaling_dropped",),
             spec_change=lambda spec, seq_len: (spec.replace(rope_type="default", factor=1.0), seq_len, False)),
    BugClass("attention_factor_missing", N_("Attention factor missing"),
             N_("YaRN's or LongRoPE's scaling of cos and sin (the attention temperature) is left out."),
             N_("The θᵢ are right but the attention factor is 1 instead of {expected_af:.6g}: the {rope_type} "
                "scaling of cos and sin is missing."),
             _has_attention_factor, _no_attention_factor, references=("bug_attention_factor_missing",),
             attention_only=True),
    BugClass("attention_factor_squared", N_("Attention factor applied twice"),
             N_("The attention factor is applied twice, so logits are scaled by its fourth power instead of its square."),
             N_("The θᵢ are right but the attention factor is {given_af:.6g} = {expected_af:.6g}²: it was applied "
                "twice (on cos and sin and again on the logits, say)."),
             _has_attention_factor, _attention_factor_twice, references=("bug_attention_factor_twice",),
             attention_only=True),
    BugClass("interleaved_vs_half", N_("Interleaved and half-split pairing mixed up"),
             N_("Dimensions are paired (2i, 2i + 1) for a checkpoint that pairs (i, i + d/2), or the other way round."),
             N_("The values are laid out {used_title} but the checkpoint expects {expected_title}, so every "
                "dimension is rotated with the wrong partner; the curves part at {where}."),
             _always, _interleaved, _layout_candidates, references=("bug_pairing",)),
    BugClass("wrong_default_base", N_("Wrong (default) base"),
             N_("A default or hard-coded base replaces the config's rope_theta (or its absence)."),
             N_("The θᵢ are the expected ones for base {used_base} instead of the config's {base}: a "
                "default or hard-coded base replaced rope_theta; the curves part at {where}."),
             _always, _wrong_base, _base_candidates, references=("bug_default_base",), fitted=True),
    BugClass("partial_rotary_ignored", N_("partial_rotary_factor ignored"),
             N_("Frequencies are computed for the whole head although only part of it is rotated."),
             N_("There are θᵢ for all {head_pairs} pairs of the head with exponents 2i/{head_dim}, but "
                "partial_rotary_factor = {partial:g} rotates {pairs} pairs with exponents 2i/{rotary_dim}; the "
                "curves part at {where}."),
             _full_head_applies, _full_head, _full_head_candidates, references=("bug_partial_rotary",),
             spec_change=lambda spec, seq_len: (spec.replace(partial_rotary_factor=1.0), seq_len, True)),
    BugClass("low_precision", N_("Frequencies in low precision"),
             N_("θᵢ computed in, or cast to, bfloat16 or float16 (a buffer cast with the model, say)."),
             N_("The θᵢ are the expected ones rounded to {dtype} (the buffer was cast or computed in half "
                "precision), off by up to {ulp:.1e} relative; the curves part at {where}."),
             _always, _low_precision, _precision_candidates, references=("bug_low_precision",)),
    BugClass("llama3_bands_inverted", N_("Llama-3 smoothing bands inverted"),
             N_("Llama 3.1's blend between kept and divided pairs runs the wrong way, or its two band factors are exchanged."),
             N_("The θᵢ are Llama-3's with the smoothing blend reversed: between λ = L/{high:g} and λ = L/{low:g} the "
                "pairs near the fast edge are interpolated and those near the slow edge kept; the curves part at "
                "{where}."),
             lambda spec: "low_freq_factor" in _reads(spec), _llama3_inverted, _llama3_candidates,
             references=("bug_llama3_bands",)),
    BugClass("longrope_wrong_factors", N_("LongRoPE's short/long switch wrong"),
             N_("LongRoPE's long factors are used where the short ones belong, or the other way round."),
             N_("The θᵢ use the other set of LongRoPE factors than transformers does at this length; the curves part "
                "at {where}."),
             lambda spec: "long_factor" in _reads(spec), _longrope_swapped, _longrope_candidates,
             references=("bug_longrope_switch",),
             spec_change=lambda spec, seq_len: (
                 spec, None if _uses_long(spec, seq_len) else spec.original_max_position_embeddings + 1, False)),
    # ---- found by fitting the numbers (pe_core.fit) ----
    BugClass("exponent_offset", N_("Exponent off by one"),
             N_("The exponent's index does not start at 0 (arange(1, d, 2), or i counted from 1): every θᵢ is the "
                "expected one times the constant b^(−o/d)."),
             N_("The θᵢ are b^(−(2i {shift})/{dim}) instead of b^(−2i/{dim}): the exponent's index starts at "
                "{offset:g} instead of 0 (arange(1, d, 2) starts it at 1), so the plain θᵢ are b^({negated}/{dim}) "
                "= {ratio:.6g} times the expected ones, a constant ratio; the curves part at {where}."),
             _always, _offset, _offset_candidates, references=("bug_exponent_offset",)),
    BugClass("exponent_width", N_("Exponent over the wrong width"),
             N_("With partial rotary, the exponent 2i/d is taken over head_dim instead of the rotated width (or, "
                "for proportional RoPE, the other way round)."),
             N_("The θᵢ are b^(−2i/{used_width}), but this model's exponent is 2i/{width}: the exponent was taken "
                "over the wrong width, which acts as base {used_base} in place of {base}; the curves part at "
                "{where}."),
             lambda spec: fit.width_base(spec) is not None, _width, _base_origin_candidates(("width",)),
             references=("bug_exponent_width",)),
    BugClass("base_rounded", N_("Base rounded to half precision"),
             N_("rope_theta itself is rounded to bfloat16 or float16 before the power (500,000 becomes 499,712 in "
                "bfloat16)."),
             N_("The θᵢ are those of base {used_base}, the config's {base} rounded to {dtype}: the base was cast to "
                "(or computed in) {dtype} before the power; the curves part at {where}."),
             lambda spec: bool(fit.rounded_bases(spec.base)), _rounded_base, _base_origin_candidates(("rounded",)),
             references=("bug_low_precision",),
             spec_change=lambda spec, seq_len: (spec.replace(base=fit.rounded_bases(spec.base)[0].value), seq_len,
                                                False)),
    BugClass("base_overflow", N_("Base overflowed its type"),
             N_("rope_theta is stored in a type too narrow for it: an integer wraps around (150,000 in int16 is "
                "18,928), float16 turns it into infinity (θ = [1, 0, 0, …])."),
             N_("The θᵢ are those of base {used_base}: the config's {base} wrapped around in {int_type} ({bits} "
                "bits), so the base was held in an integer type too narrow for it; the curves part at {where}."),
             _overflow_applies, _overflow, _overflow_candidates, references=("bug_base_overflow",)),
    BugClass("dynamic_wrong_length", N_("Dynamic NTK at the wrong length"),
             N_("Dynamic NTK's base is grown for another sequence length than the one run, or static NTK's fixed "
                "base is used for dynamic."),
             N_("The θᵢ are dynamic NTK's for the wrong sequence length; the curves part at {where}."),
             lambda spec: fit.grows_with_length(spec) and spec.factor > 1, _dynamic_wrong_length, _dynamic_candidates,
             references=("bug_dynamic_ntk",)),
    BugClass("wrong_rope_type", N_("Wrong scaling method"),
             N_("Another rope_type's scaling is applied than the config's (linear where it says llama3, say)."),
             N_("The θᵢ are {used_type} scaling's with the config's factor {factor:g}, but the config's rope_type is "
                "{rope_type}: the wrong scaling method was applied; the curves part at {where}."),
             lambda spec: rope_type_entry(spec.rope_type).extends and spec.factor > 1, _wrong_rope_type,
             _rope_type_candidates, references=("bug_rope_type",), fitted=True),
    BugClass("wrong_factor", N_("Wrong scaling factor"),
             N_("The scaling uses another factor s than the config's."),
             N_("The θᵢ are {rope_type} scaling's with factor {used_factor:g} instead of the config's {factor:g}; the "
                "curves part at {where}."),
             lambda spec: _one_factor(spec),
             _wrong_factor, _factor_candidates, references=("bug_rope_type",), fitted=True),
    BugClass("wrong_original_length", N_("Wrong original length L"),
             N_("The scaling's original context length L is not the config's original_max_position_embeddings "
                "(the extended max_position_embeddings taken instead, say)."),
             N_("The θᵢ are {rope_type}'s with original length L = {used_length:,} instead of {length:,}; the curves "
                "part at {where}."),
             lambda spec: _one_factor(spec) and "original_max_position_embeddings" in _reads(spec) and spec.factor > 1,
             _wrong_length, _length_candidates, references=("bug_original_length",), fitted=True),
    BugClass("longrope_multiplied", N_("LongRoPE factors multiplied"),
             N_("LongRoPE's per-pair factors multiply θᵢ instead of dividing them."),
             N_("The θᵢ are b^(−2i/d) multiplied by LongRoPE's {which} factors instead of divided by them (θᵢ·fᵢ, not "
                "θᵢ/fᵢ), so the slowest pairs are off by up to {largest:.4g}×; the curves part at {where}."),
             lambda spec: "long_factor" in _reads(spec), _longrope_multiplied, _longrope_multiplied_candidates,
             references=("bug_longrope_divide",)),
    BugClass("wrong_betas", N_("YaRN's β values wrong"),
             N_("YaRN's ramp is computed from other β_fast / β_slow values than the config's (defaults, say)."),
             N_("The θᵢ are YaRN's with β_fast = {used_fast:g} and β_slow = {used_slow:g} instead of the config's "
                "{beta_fast:g} and {beta_slow:g}, which moves the ramp; the curves part at {where}."),
             _is_yarn, _wrong_betas, _beta_candidates, references=("bug_yarn_betas",), fitted=True),
    BugClass("mscale_on_cos_sin", N_("DeepSeek's mscale put on cos and sin"),
             N_("With mscale and mscale_all_dim set (DeepSeek's form), YaRN's mscale is put on cos and sin, where "
                "transformers puts their ratio (1 when equal) and scales the softmax by mscale(s, mscale_all_dim)²."),
             N_("The θᵢ are right, but the attention factor {given_af:.6g} is YaRN's 0.1·{which}·ln s + 1 put on cos "
                "and sin. With mscale and mscale_all_dim both set, transformers multiplies cos and sin by "
                "mscale(s, mscale)/mscale(s, mscale_all_dim) = {expected_af:.6g} and DeepSeek's attention multiplies "
                "the softmax scale by mscale(s, mscale_all_dim)² = {softmax:.6g}. On cos and sin a factor counts "
                "squared in q·k: it stands in for that softmax scale only if your attention does not apply it "
                "too."),
             _has_mscale_pair, _mscale_on_cos_sin, _mscale_candidates,
             references=("bug_deepseek_mscale", "deepseek_softmax_mscale"),
             attention_only=True),
)}


# A hybrid model's other kinds of layer: named when the numbers are theirs, never tried on a single RoPE.
BUG_CLASSES["other_layer_kind"] = BugClass(
    "other_layer_kind", N_("Another kind of layer's RoPE"),
    N_("A hybrid model's layers of one kind get the RoPE of another kind (Gemma 3's sliding layers given the "
       "full-attention layers' base or scaling, say)."),
    N_("The θᵢ are another kind of layer's RoPE; the curves part at {where}."),
    lambda spec: False, _expected, references=("bug_layer_kinds",))
# Bug classes that need the model's layer map (check_layers), not one RoPE (check).
LAYER_MAP_BUGS = ("other_layer_kind",)
OTHER_KIND_SENTENCES = {
    "theirs": N_("The θᵢ are the {other} layers' RoPE (base {other_base}, {other_type}) instead of the {kind} "
                 "layers' own: the port gave one kind of layer another kind's numbers; the curves part at {where}."),
    "their_scaling": N_("The θᵢ are the {kind} layers' base {base} with the {other} layers' {other_type} scaling: "
                        "the port scaled every layer alike; the curves part at {where}."),
    "their_base": N_("The θᵢ are the {other} layers' base {other_base} with the {kind} layers' {rope_type} scaling: "
                     "the port used one base for every layer; the curves part at {where}."),
}


def _with_scaling_of(spec: RopeSpec, other: RopeSpec) -> RopeSpec:
    """``spec``'s base and widths with ``other``'s scaling (its rope type and the method's parameters)."""
    keep = {"head_dim": spec.head_dim, "base": spec.base, "partial_rotary_factor": spec.partial_rotary_factor}
    return dataclasses.replace(other, **keep)


def check_layers(model, kind, numbers, attention_factor: float | None = None, seq_len: int | None = None,
                 layout: str = "half", form: str = "auto") -> CheckReport:
    """``check`` against one kind of a model's layers; numbers that miss it but are another rotary kind's θᵢ
    (or one kind's base with the other's scaling) are named as that port, the way a bug class is."""
    report = check(kind.spec, numbers, attention_factor, seq_len, layout, form)
    if report.verdict == "match":
        return report
    # a hybrid model's other kinds first: their numbers are a more specific cause than a fitted base
    spec = kind.spec
    for other in model.rotary_kinds:
        if other.layer_type == kind.layer_type or other.spec == spec:
            continue
        tries = (("theirs", other.spec), ("their_scaling", _with_scaling_of(spec, other.spec)),
                 ("their_base", spec.replace(base=other.spec.base)))
        for which, candidate in tries:
            if candidate == spec:
                continue
            try:
                found = check(candidate, numbers, None, seq_len, layout, form)
            except ValueError:
                continue
            if found.verdict != "match":
                continue
            from pe_core.layers import LAYER_TYPE_TITLES

            detail = {"kind": Deferred(LAYER_TYPE_TITLES.get(kind.layer_type, kind.layer_type)),
                      "other": Deferred(LAYER_TYPE_TITLES.get(other.layer_type, other.layer_type)),
                      "base": base_text(spec.base), "other_base": base_text(other.spec.base),
                      "rope_type": spec.rope_type, "other_type": other.spec.rope_type, "port": which}
            diagnosis = Diagnosis("other_layer_kind", OTHER_KIND_SENTENCES[which], detail, report.reading)
            return report._replace(diagnosis=(diagnosis,))
    return report


def applicable_classes(spec: RopeSpec, seq_len: int | None = None) -> tuple[str, ...]:
    """The bug classes that can occur for this config and change its output (θᵢ or the attention factor)."""
    expected, attention = _expected(spec, seq_len)
    found = []
    for name, bug in BUG_CLASSES.items():
        if not bug.applies(spec):
            continue
        values, bug_attention = bug.perturb(spec, seq_len)
        same_theta = values.numel() == expected.numel() and bool(close(values, expected).all())
        if name == "interleaved_vs_half":
            same_theta = bool(close(values, per_dimension(expected, "half")).all())
        if same_theta and math.isclose(bug_attention, attention, rel_tol=TOLERANCE_ULPS * EPS32):
            continue
        found.append(name)
    return tuple(found)


# ---- the check --------------------------------------------------------------------------------------


class Row(NamedTuple):
    """One compared entry: a pair, or a dimension (with the pair the expected layout gives it)."""

    index: int
    pair: int | None  # None for a pair the model does not rotate
    expected: float
    given: float
    ratio: float | None  # given / expected
    rel_err: float | None  # |given − expected| / expected
    tolerance: float  # the relative tolerance for this entry
    ok: bool


class Diagnosis(NamedTuple):
    name: str  # a bug class, or 'first+second' for two bugs at once
    sentence: str  # N_() template
    detail: dict
    reading: Reading
    parts: tuple[Diagnosis, ...] = ()  # two bugs at once: each one's diagnosis

    @property
    def classes(self) -> tuple[str, ...]:
        """The bug classes this diagnosis names (two for two bugs at once)."""
        return tuple(p.name for p in self.parts) if self.parts else (self.name,)


class CheckReport(NamedTuple):
    spec: RopeSpec
    seq_len: int | None
    layout: str
    reading: Reading
    expected: torch.Tensor  # θ per rotated pair (float64)
    expected_values: torch.Tensor  # what the given numbers should be, in their reading
    given: torch.Tensor
    expected_attention: float
    given_attention: float | None
    rows: tuple[Row, ...]
    attention_ok: bool | None
    diagnosis: tuple[Diagnosis, ...]

    @property
    def verdict(self) -> str:
        return "match" if all(r.ok for r in self.rows) and self.attention_ok is not False else "mismatch"

    @property
    def max_rel_err(self) -> float:
        errors = [r.rel_err for r in self.rows if r.rel_err is not None]
        if any(r.rel_err is None and not r.ok for r in self.rows):
            return math.inf
        return max(errors) if errors else 0.0

    @property
    def attention_rel_err(self) -> float | None:
        if self.given_attention is None:
            return None
        return abs(self.given_attention - self.expected_attention) / self.expected_attention

    @property
    def first_part(self) -> int | None:
        """The first entry where the given curve leaves the expected one (None if θ agree)."""
        return next((r.index for r in self.rows if not r.ok), None)

    @property
    def parted(self) -> tuple[int, ...]:
        return tuple(r.index for r in self.rows if not r.ok)


def _attention_close(given: float, expected: float) -> bool:
    return abs(given - expected) <= float(float32_tolerance(torch.tensor([expected]))[0]) * abs(expected)


def _matches(candidate: Candidate, reading: Reading, spec: RopeSpec, layout: str, given: torch.Tensor,
             given_attention: float | None) -> bool:
    values = candidate.for_reading(reading, spec, layout)
    if values is None or values.numel() != given.numel():
        return False
    if given_attention is not None and not _attention_close(given_attention, candidate.attention_factor):
        return False
    if candidate.dtype is not None:
        # a float64 θ rounded to dtype; the user's float32 θ may round to the neighbouring value
        tolerance = float32_tolerance(values)
        low, high = (_rounded(values * (1 + sign * tolerance), candidate.dtype) for sign in (-1, 1))
        return bool((close(given, low) | close(given, high)).all())
    if candidate.computed_in is not None:
        on_grid = close(given, _rounded(given, candidate.computed_in))
        step = values.abs() * torch.finfo(candidate.computed_in).eps
        within = (given - values).abs() <= step + float32_tolerance(values) * values.abs()
        return bool((on_grid & within).all())
    return bool(close(given, values).all())


def _rows(report_expected: torch.Tensor, given: torch.Tensor, reading: Reading, spec: RopeSpec,
          layout: str) -> tuple[Row, ...]:
    tolerance = float32_tolerance(report_expected)
    ok = close(given, report_expected)
    rows = []
    pairs = spec.num_pairs
    for index in range(given.numel()):
        expected, value = float(report_expected[index]), float(given[index])
        if reading.form == "pairs":
            pair = index if index < pairs else None
        else:
            pair = pair_of_dimension(index, pairs, layout) if index < spec.rotary_dim else None
        ratio = value / expected if expected else None
        error = abs(value - expected) / expected if expected else None
        rows.append(Row(index, pair, expected, value, ratio, error, float(tolerance[index]), bool(ok[index])))
    return tuple(rows)


def base_text(value: float) -> str:
    """10000.0 -> '10,000'; 2.5 -> '2.5'."""
    if value >= 1e12:
        return f"{value:.6g}"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.6g}"


def _detail(bug: BugClass, candidate: Candidate, spec: RopeSpec, expected_attention: float,
            given_attention: float | None) -> dict:
    detail = {"rope_type": spec.rope_type, "expected_af": expected_attention,
              "given_af": given_attention if given_attention is not None else candidate.attention_factor,
              "beta_fast": spec.beta_fast, "beta_slow": spec.beta_slow, **dict(candidate.detail)}
    for key in ("used_base", "base"):
        if key in detail:
            detail[key] = base_text(detail[key])
    if "used_layout" in detail:
        used, expected = LAYOUT_TITLES[detail["used_layout"]], LAYOUT_TITLES[detail["expected_layout"]]
        # words kept untranslated: a report is shared by readers of every language (explain() translates them)
        detail["used_title"], detail["expected_title"] = Deferred(used), Deferred(expected)
    if "dtype" in detail:
        detail["bits"] = round(-math.log2(torch.finfo(LOW_PRECISION_DTYPES[detail["dtype"]]).eps)) + 1
        detail["error"] = float(torch.finfo(LOW_PRECISION_DTYPES[detail["dtype"]]).eps)
    return detail


def check(spec: RopeSpec, numbers: Sequence[float] | torch.Tensor, attention_factor: float | None = None,
          seq_len: int | None = None, layout: str = "half", form: str = "auto") -> CheckReport:
    """Compare ``numbers`` (θ per pair or per dimension) with transformers' θ for ``spec``, and diagnose."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r}).")
    given = torch.as_tensor(numbers, dtype=torch.float64).reshape(-1)
    if bool((given < 0).any()):
        first = int(torch.nonzero(given < 0)[0])
        raise ValueError(_("Number {index} is negative ({value:g}); inverse frequencies θᵢ are ≥ 0.").format(
            index=first + 1, value=float(given[first])))
    if attention_factor is not None and not (math.isfinite(attention_factor) and attention_factor > 0):
        raise ValueError(_("The attention factor must be a positive number (got {text}).").format(
            text=repr(attention_factor)))
    expected, expected_attention = _expected(spec, seq_len)
    readings = readings_for(spec, given.numel(), form)
    attention_ok = None if attention_factor is None else _attention_close(attention_factor, expected_attention)

    reports = []
    for reading in readings:
        values = reading.expected(spec, expected, layout)
        rows = _rows(values, given, reading, spec, layout)
        report = CheckReport(spec, seq_len, layout, reading, expected, values, given, expected_attention,
                             attention_factor, rows, attention_ok, ())
        if report.verdict == "mismatch":
            report = report._replace(diagnosis=_diagnose(spec, seq_len, layout, reading, given, attention_factor,
                                                         expected_attention))
        reports.append(report)
    for wanted in (lambda r: r.verdict == "match", lambda r: bool(r.diagnosis), lambda r: True):
        chosen = next((r for r in reports if wanted(r)), None)
        if chosen is not None:
            return chosen
    raise AssertionError("unreachable")


def _diagnose(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading, given: torch.Tensor,
              given_attention: float | None, expected_attention: float) -> tuple[Diagnosis, ...]:
    """Every single bug that reproduces θᵢ and the attention factor; failing that, θᵢ and the attention factor
    diagnosed apart (each by a single bug), then two θ bugs at once. Empty: nothing known reproduces them."""
    found = _single_bugs(spec, seq_len, layout, reading, given, given_attention)
    if found:
        return found
    expected_values = reading.expected(spec, _expected(spec, seq_len)[0], layout)
    theta_ok = bool(close(given, expected_values).all())
    attention_ok = given_attention is None or _attention_close(given_attention, expected_attention)
    theta = () if theta_ok else (_single_bugs(spec, seq_len, layout, reading, given, None, theta_only=True)
                                 or _two_theta_bugs(spec, seq_len, layout, reading, given))
    if attention_ok:
        return theta
    attention = _single_bugs(spec, seq_len, layout, reading, expected_values, given_attention, attention_only=True)
    if not theta or not attention:
        return ()
    first = attention[0]
    also = Diagnosis(first.name, ATTENTION_TOO, {**first.detail, "summary": Deferred(BUG_CLASSES[first.name].summary)},
                     reading)
    return tuple(_together(t, also) for t in theta)


def _single_bugs(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading, given: torch.Tensor,
                 given_attention: float | None, theta_only: bool = False,
                 attention_only: bool = False) -> tuple[Diagnosis, ...]:
    found = []
    # specific bugs first: a fitted parameter is the answer only where none of them is (and costs the most to try)
    for name, bug in sorted(BUG_CLASSES.items(), key=lambda item: item[1].fitted):
        if not bug.applies(spec) or (theta_only and bug.attention_only) or (attention_only and not bug.attention_only):
            continue
        if bug.fitted and any(not BUG_CLASSES[d.name].fitted for d in found):
            break
        for candidate in bug.variants(spec, seq_len, layout, given):
            if _matches(candidate, reading, spec, layout, given, given_attention):
                found.append(_diagnosis(name, bug, candidate, spec, seq_len, reading, given_attention))
                break
    # a fitted parameter is the answer only where no specific bug is, and a fitted base (which explains any plain θ)
    # only where no other fitted parameter is
    specific = [d for d in found if not BUG_CLASSES[d.name].fitted]
    if specific:
        return tuple(specific)
    if len(found) > 1:
        found = [d for d in found if d.name != "wrong_default_base"]
    return tuple(found)


def _diagnosis(name: str, bug: BugClass, candidate: Candidate, spec: RopeSpec, seq_len: int | None,
               reading: Reading, given_attention: float | None) -> Diagnosis:
    detail = _detail(bug, candidate, spec, _expected(spec, seq_len)[1], given_attention)
    return Diagnosis(name, candidate.sentence or bug.explanation, detail, reading)


TWO_BUGS = N_("Two bugs at once: {first} and {second}.")
ROUNDED_TOO = N_("On top of that the θᵢ were rounded to {dtype} (a buffer cast to, or computed in, half precision).")
ATTENTION_TOO = N_("And the attention factor is {given_af:.6g} instead of {expected_af:.6g}: {summary}")
LAID_OUT_TOO = N_("On top of that the values are laid out {used_title} for a checkpoint that expects "
                  "{expected_title}.")


def _together(first: Diagnosis, second: Diagnosis) -> Diagnosis:
    return Diagnosis(f"{first.name}+{second.name}", TWO_BUGS, {}, first.reading, (first, second))


def _two_theta_bugs(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading,
                    given: torch.Tensor) -> tuple[Diagnosis, ...]:
    """Pairs of θ bugs: any bug's output rounded to half precision or laid out in the other pairing, and any bug
    acting on the config another bug changed (partial rotary ignored, scaling dropped, truncate flipped, the base
    rounded, LongRoPE's other factors)."""
    theta_classes = {n: b for n, b in BUG_CLASSES.items() if not b.attention_only}
    found: list[Diagnosis] = []
    outputs = [(n, b) for n, b in theta_classes.items()
               if b.applies(spec) and n not in ("low_precision", "interleaved_vs_half")]
    for name, bug in outputs:
        for candidate in bug.variants(spec, seq_len, layout, given):
            transforms = [("low_precision", dataclasses.replace(candidate, dtype=dtype),
                           Diagnosis("low_precision", ROUNDED_TOO, {"dtype": dtype_name}, reading))
                          for dtype_name, dtype in LOW_PRECISION_DTYPES.items()
                          if candidate.dtype is None and candidate.computed_in is None]
            if reading.form == "dims" and not reading.full_head and candidate.form == "pairs" and \
                    not candidate.full_head:
                wrong = other_layout(layout)
                laid_out = Candidate(per_dimension(candidate.values, wrong), candidate.attention_factor, form="dims")
                detail = {"used_title": Deferred(LAYOUT_TITLES[wrong]), "expected_title": Deferred(LAYOUT_TITLES[layout])}
                transforms.append(("interleaved_vs_half", laid_out,
                                   Diagnosis("interleaved_vs_half", LAID_OUT_TOO, detail, reading)))
            for _other, changed, part in transforms:
                if _matches(changed, reading, spec, layout, given, None):
                    found.append(_together(_diagnosis(name, bug, candidate, spec, seq_len, reading, None), part))
                    break
            else:
                continue
            break
    for first_name, first in theta_classes.items():
        if first.spec_change is None or not first.applies(spec):
            continue
        changed = first.spec_change(spec, seq_len)
        if changed is None:
            continue
        changed_spec, changed_len, full_head = changed
        first_part = _diagnosis(first_name, first, first.variants(spec, seq_len, layout, given)[0], spec, seq_len,
                                reading, None)
        for name, bug in theta_classes.items():
            if name == first_name or not bug.applies(changed_spec):
                continue
            for candidate in bug.variants(changed_spec, changed_len, layout, given):
                if full_head:
                    candidate = dataclasses.replace(candidate, full_head=True)
                if _matches(candidate, reading, spec, layout, given, None):
                    second = _diagnosis(name, bug, candidate, changed_spec, changed_len, reading, None)
                    if not any(d.name in (f"{first_name}+{name}", f"{name}+{first_name}") for d in found):
                        found.append(_together(first_part, second))
                    break
    return tuple(found)


# ---- words ---------------------------------------------------------------------------------------------


def where_text(report: CheckReport) -> str:
    """Where the given curve first leaves the expected one, e.g. 'pair 29 (λ ≈ 2,087 tokens)'."""
    index = report.first_part
    if index is None:
        return _("no pair (the θᵢ agree)")
    row = report.rows[index]
    if row.pair is None:
        return _("pair {index}, which the model does not rotate").format(index=index)
    wavelength = 2 * math.pi / float(report.expected[row.pair])
    if report.reading.form == "pairs":
        return _("pair {index} (λ ≈ {wavelength:,.0f} tokens)").format(index=index, wavelength=wavelength)
    return _("dimension {index} (pair {pair}, λ ≈ {wavelength:,.0f} tokens)").format(
        index=index, pair=row.pair, wavelength=wavelength)


def explain(report: CheckReport, diagnosis: Diagnosis) -> str:
    """The diagnosis's sentence (for two bugs at once: their titles, then each one's sentence), in the current
    language."""
    if diagnosis.parts:
        first, second = (_(BUG_CLASSES[p.name].title) for p in diagnosis.parts)
        return " ".join([_(TWO_BUGS).format(first=first, second=second),
                         *(explain(report, part) for part in diagnosis.parts)])
    detail = {name: _(value) if isinstance(value, Deferred) else value for name, value in diagnosis.detail.items()}
    return _(diagnosis.sentence).format(where=where_text(report), **detail)


def diagnosis_title(name: str) -> str:
    """A diagnosis's title from its name: the bug's, or both joined for two bugs at once ('a+b'), translated."""
    return " + ".join(_(BUG_CLASSES[part].title) for part in name.split("+"))


def diagnosis_references(name: str) -> tuple[str, ...]:
    """The public threads of every bug a diagnosis's name names, without repeats."""
    return tuple(dict.fromkeys(key for part in name.split("+") for key in BUG_CLASSES[part].references))


def report_json(report: CheckReport) -> dict:
    """The CLI's ``--json`` output."""
    def number(value: float | None) -> float | None:
        return None if value is None or not math.isfinite(value) else value

    return {
        "verdict": report.verdict,
        "max_rel_err": number(report.max_rel_err),
        "diagnosis": [d.name for d in report.diagnosis],
        "explanations": {d.name: explain(report, d) for d in report.diagnosis},
        "read_as": {"form": report.reading.form, "whole_head": report.reading.full_head, "layout": report.layout},
        "attention_factor": {"expected": report.expected_attention, "given": report.given_attention,
                             "rel_err": report.attention_rel_err},
        "first_part": report.first_part,
        "pairs": [{"index": r.index, "pair": r.pair, "expected": r.expected, "given": r.given,
                   "ratio": number(r.ratio), "rel_err": number(r.rel_err), "tolerance": r.tolerance, "ok": r.ok}
                  for r in report.rows],
    }


def report_text(report: CheckReport) -> str:
    """A terminal summary: verdict, diagnosis, and the entries that differ."""
    spec = report.spec
    lines = [f"RoPE: {spec.rope_type}, base {base_text(spec.base)}, {spec.rotary_dim} of {spec.head_dim} dimensions "
             f"rotated, L = {spec.original_max_position_embeddings:,}"
             + (f", factor {spec.factor:g}" if _scaled(spec) else "")
             + (f", seq_len {report.seq_len:,}" if report.seq_len is not None else "")]
    form = "per pair" if report.reading.form == "pairs" else f"per dimension, expected layout {report.layout}"
    lines.append(f"Read {report.given.numel()} numbers {form}" + (" for the whole head" if report.reading.full_head
                                                                   else "") + ".")
    verdict = "MATCH" if report.verdict == "match" else "MISMATCH"
    lines.append(f"Verdict: {verdict} (max relative error {report.max_rel_err:.3g}; tolerance 8·ε₃₂·(1 + |ln θ|))")
    if report.given_attention is not None:
        lines.append(f"Attention factor: given {report.given_attention:.9g}, expected {report.expected_attention:.9g}"
                     f" ({'ok' if report.attention_ok else 'differs'})")
    if report.verdict == "mismatch":
        if report.diagnosis:
            for diagnosis in report.diagnosis:
                lines.append(f"Diagnosis: {diagnosis.name}: {explain(report, diagnosis)}")
        else:
            lines.append(f"Diagnosis: no single known bug reproduces these numbers; the curves part at "
                         f"{where_text(report)}.")
    differing = [r for r in report.rows if not r.ok]
    if differing:
        lines.append(f"{len(differing)} of {len(report.rows)} entries differ; the first ones:")
        lines.append(f"{'index':>6} {'pair':>5} {'expected θ':>14} {'given θ':>14} {'ratio':>10} {'rel err':>9}")
        for r in differing[:12]:
            ratio = f"{r.ratio:.6g}" if r.ratio is not None else "-"
            error = f"{r.rel_err:.2e}" if r.rel_err is not None else "-"
            pair = str(r.pair) if r.pair is not None else "-"
            lines.append(f"{r.index:>6} {pair:>5} {r.expected:>14.8g} {r.given:>14.8g} {ratio:>10} {error:>9}")
    return "\n".join(lines)


# ---- the command line ----------------------------------------------------------------------------


def cli_error(err: Exception, as_json: bool) -> int:
    """A CLI's bad input: a sentence on stderr, or with --json an error object on stdout; exit 2."""
    if as_json:
        print(json.dumps({"error": str(err)}, ensure_ascii=False))
    else:
        print(f"error: {err}", file=sys.stderr)
    return 2


def refuse_if_strict(model, strict: bool) -> list[str]:
    """The reading's notes; under --strict, a reading with anything to note beyond who read it is refused."""
    from pe_core.config import reading_notes, strict_problems

    problems = strict_problems(model)
    if strict and problems:
        raise ValueError(_("--strict: {problems}").format(problems=" ".join(problems)))
    return reading_notes(model)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.check CONFIG --inv-freq FILE``: exit 0 on a match, 1 on a mismatch, 2 on bad input."""
    from pe_core.cli_args import check_parser
    from pe_core.config import layer_map
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config
    from pe_core.layers import layer_type_title

    parser = check_parser()
    args = parser.parse_args(argv)
    use_server_threads()  # small tensors: one thread is fastest on a small machine
    try:
        from pathlib import Path

        from pe_core.config import read_as

        model = layer_map(read_as(read_config(args.config), args.read_as))
        notes = refuse_if_strict(model, args.strict)
        kind = model.kind(args.layer_type)
        if kind.spec is None:
            raise ValueError(_("The {layer_type!r} layers of this model apply no position encoding (NoPE): there "
                               "are no θᵢ to check.").format(layer_type=kind.layer_type))
        if args.probe is not None or args.rotated is not None:
            from pe_core.probe import probe_main

            return probe_main(args, kind)
        if args.inv_freq is None:
            raise ValueError("give --inv-freq FILE (your θᵢ), --probe DIR (write the rotation probe) or --rotated FILE.")
        path = Path(args.inv_freq)
        if not path.is_file():
            raise ValueError(f"{args.inv_freq}: no such file.")
        data = path.read_bytes()
        if args.seq_len is not None and args.seq_len < 0:
            raise ValueError(f"--seq-len must be 0 or more (got {args.seq_len}).")
        checked, skipped = _kinds_to_check(model, kind, args.layer_type is not None, data, path.name)
        results = [(each, key, check_layers(model, each, numbers, args.attention_factor, args.seq_len,
                                            args.layout or each.layout, args.form))
                   for each, numbers, key in checked]
    except ValueError as err:
        return cli_error(err, args.json)
    kind, key, report = results[0]
    if args.json:
        print(json.dumps({**report_json(report), "layer_type": kind.layer_type, "layers": list(kind.layers),
                          "inv_freq_key": key, "reading": notes,
                          "kinds": [{"layer_type": each.layer_type, "layers": list(each.layers), "inv_freq_key": key_,
                                     "verdict": found.verdict, "diagnosis": [d.name for d in found.diagnosis]}
                                    for each, key_, found in results],
                          "skipped": [{"layer_type": each.layer_type, "why": why} for each, why in skipped]},
                         indent=1, ensure_ascii=False))
    else:
        for note in notes:
            print(note)
        for each, key_, found in results:
            if len(model.kinds) > 1:
                print(_("Layers checked: {title} ({count} of {total}; --layer-type {layer_type})").format(
                    title=layer_type_title(each.layer_type), count=len(each.layers), total=model.num_layers,
                    layer_type=each.layer_type))
            if key_ is not None:
                print(_("θᵢ read from {key}").format(key=key_))
            print(report_text(found))
        for each, why in skipped:
            print(_("Not checked: {title} layers ({why})").format(title=layer_type_title(each.layer_type), why=why))
    return 0 if all(found.verdict == "match" for _each, _key, found in results) else 1


def _kinds_to_check(model, kind, asked: bool, data: bytes, name: str):
    """([(kind, numbers, key)], [(kind, why not)]): the asked kind alone; otherwise every rotary kind the file
    holds its own θᵢ for (a state dict with a buffer per layer type), else the default kind, the others said."""
    from pe_core.inputs import read_inv_freq
    from pe_core.layers import layer_type_title

    rotary = model.rotary_kinds
    if asked or len(rotary) == 1:
        numbers, key = read_inv_freq(data, name, kind.layer_type if len(rotary) > 1 else None)
        return [(kind, numbers, key)], []
    read = [(each, *read_inv_freq(data, name, each.layer_type)) for each in rotary]
    keys = {key for _each, _numbers, key in read}
    if None not in keys and len(keys) == len(read):  # one buffer per layer type
        return read, []
    default = next(entry for entry in read if entry[0] == kind)
    why = _("the file holds one list of θᵢ, checked against the {title} layers; --layer-type {layer_type} checks it "
            "against these")
    return [default], [(each, why.format(title=layer_type_title(kind.layer_type), layer_type=each.layer_type))
                       for each, _numbers, _key in read if each != kind]


if __name__ == "__main__":
    raise SystemExit(main())
