"""Buggy ports: what each known bug outputs for a config, and the variants fitted to a port's numbers."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from i18n import N_, Deferred
from pe_core import fit
from pe_core.check.common import LOW_PRECISION_DTYPES, Reading, close, other_layout, per_dimension
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


def reference_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    frequencies = rope_frequencies(spec, seq_len)
    return frequencies.inv_freq, frequencies.attention_factor


def is_yarn(spec: RopeSpec) -> bool:
    """Does the type blend θ and θ/s by YaRN's β_fast and β_slow (YaRN, NTK-by-parts)?"""
    return "beta_fast" in rope_type_entry(spec.rope_type).reads


def beta_swapped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """YaRN with the correction range computed from (β_slow, β_fast) instead of (β_fast, β_slow)."""
    theta, attention = reference_output(spec, seq_len)
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


def truncate_flipped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(truncate=not spec.truncate), seq_len)


def truncate_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = truncate_flipped(spec, seq_len)
    return [Candidate(values, attention, detail=(("used", not spec.truncate), ("config", spec.truncate)))]


def unscaled_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return default_inv_freq(spec.base, spec.rotary_dim), 1.0


def no_attention_factor(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec, seq_len)[0], 1.0


def attention_factor_twice(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    theta, attention = reference_output(spec, seq_len)
    return theta, attention * attention


def interleaved_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    """The per-dimension values of an implementation that lays pairs out interleaved for a half-split checkpoint."""
    theta, attention = reference_output(spec, seq_len)
    return per_dimension(theta, "interleaved"), attention


def layout_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = reference_output(spec, seq_len)
    wrong = other_layout(layout)
    return [Candidate(per_dimension(theta, wrong), attention, form="dims",
                      detail=(("used_layout", wrong), ("expected_layout", layout)))]


COMMON_DEFAULT_BASE = 10_000.0  # the base most code hard-codes (RoFormer's, transformers' default_theta)
OTHER_DEFAULT_BASE = 1_000_000.0  # the default of several newer config classes


def wrong_base(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    used = COMMON_DEFAULT_BASE if spec.base != COMMON_DEFAULT_BASE else OTHER_DEFAULT_BASE
    return reference_output(spec.replace(base=used), seq_len)


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


def base_candidates(spec, seq_len, layout, given) -> list[Candidate]:
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
            values, attention = reference_output(spec.replace(base=used), seq_len)
        except ValueError:
            continue
        sentence = None if origin.kind == "default" else OTHER_BASE_SENTENCE
        found.append(Candidate(values, attention, detail=(("used_base", used), ("base", spec.base)),
                               sentence=sentence))
    return found


OTHER_BASE_SENTENCE = N_("The θᵢ are the expected ones for base {used_base} instead of the config's {base}. {used_base} "
                         "is no usual default, nor a bfloat16/float16 rounding or an integer wrap-around of {base}: "
                         "rope_theta was mis-read or replaced; the curves part at {where}.")


def full_head_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(partial_rotary_factor=1.0), seq_len)


def full_head_applies(spec: RopeSpec) -> bool:
    if spec.partial_rotary_factor >= 1:
        return False
    try:
        spec.replace(partial_rotary_factor=1.0)
    except ValueError:  # LongRoPE's factor lists are per rotated pair: the bug cannot even run
        return False
    return True


def full_head_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = full_head_output(spec, seq_len)
    return [Candidate(values, attention, full_head=True,
                      detail=(("head_pairs", spec.head_dim // 2), ("head_dim", spec.head_dim),
                              ("partial", spec.partial_rotary_factor), ("pairs", spec.num_pairs),
                              ("rotary_dim", spec.rotary_dim)))]


def rounded_to(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return values.to(dtype).to(torch.float64)


def low_precision_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    theta, attention = reference_output(spec, seq_len)
    return rounded_to(theta, torch.bfloat16), attention


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


def precision_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = reference_output(spec, seq_len)
    found = []
    for name, dtype in LOW_PRECISION_DTYPES.items():
        detail = (("dtype", name), ("ulp", torch.finfo(dtype).eps / 2))
        found.append(Candidate(rounded_to(theta, dtype), attention, dtype=dtype, detail=detail))
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


def offset_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    """The exponent's index starting at o ≠ 0: arange(1, d, 2) gives o = 1, 2(i − 1) with i from 0 gives −2."""
    attention = reference_output(spec, seq_len)[1]
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


def offset_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _method_of_plain(spec, seq_len, offset=1.0), reference_output(spec, seq_len)[1]


def base_origin_candidates(kinds: tuple[str, ...]):
    """Candidates for the bases of ``fit.base_origins`` of these kinds, each in rope_theta's place."""
    def candidates(spec, seq_len, layout, given) -> list[Candidate]:
        found = []
        for origin in fit.base_origins(spec, seq_len):
            if origin.kind not in kinds:
                continue
            if origin.kind == "width":  # the exponent's width is wrong, not the base the method sees
                values = _method_of_plain(spec, seq_len, width=origin.detail[0][1])
                attention = reference_output(spec, seq_len)[1]
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


def overflow_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    found = base_origin_candidates(("overflow",))(spec, seq_len, layout, given)
    if _float16_infinite(spec):
        values = _method_of_plain(spec, seq_len, base=math.inf)
        found.append(Candidate(values, reference_output(spec, seq_len)[1], detail=(("first", float(values[0])),
                                                                            ("base", spec.base)),
                               sentence=N_("The θᵢ are [{first:.6g}, 0, 0, …]: the base {base} overflows float16 "
                                           "(largest finite value 65,504) to infinity, so every pair but the first "
                                           "stops rotating; the base, or base ** exponent, was held in float16.")))
    return found


def overflow_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    candidates = overflow_candidates(spec, seq_len, "half", torch.zeros(0))
    return candidates[0].values, candidates[0].attention_factor


def overflow_applies(spec: RopeSpec) -> bool:
    return bool(fit.overflowed_bases(spec.base)) or _float16_infinite(spec)


def rounded_base(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(base=fit.rounded_bases(spec.base)[0].value), seq_len)


def width_output(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    origin = fit.width_base(spec)
    return _method_of_plain(spec, seq_len, width=origin.detail[0][1]), reference_output(spec, seq_len)[1]


def dynamic_candidates(spec, seq_len, layout, given) -> list[Candidate]:
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


def dynamic_wrong_length(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    wrong = round(spec.original_max_position_embeddings * spec.factor)
    return reference_output(spec, wrong if seq_len != wrong else None)


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


def rope_type_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    types = [t for t in _ROPE_TYPES_TRIED if t != spec.rope_type and not (spec.rope_type == "dynamic" and t == "ntk")]
    return _changed_candidates(spec, seq_len, [{"rope_type": t} for t in types],
                               lambda changes: (("used_type", changes["rope_type"]), ("factor", spec.factor)))


def wrong_rope_type(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(rope_type="linear" if spec.rope_type != "linear" else "ntk"), seq_len)


def factor_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    pairs = _as_pairs(spec, layout, given)
    guesses = fit.factor_guesses(spec, seq_len, pairs if pairs is not None else torch.zeros(0))
    return _changed_candidates(spec, seq_len, [{"factor": g} for g in guesses],
                               lambda changes: (("used_factor", changes["factor"]), ("factor", spec.factor)))


def wrong_factor(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(factor=spec.factor * 2), seq_len)


def length_candidates(spec, seq_len, layout, given) -> list[Candidate]:
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


def wrong_length(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(original_max_position_embeddings=spec.original_max_position_embeddings * 16), seq_len)


def longrope_multiplied_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    plain = default_inv_freq(spec.base, spec.rotary_dim)
    attention = reference_output(spec, seq_len)[1]
    found = []
    for which, factors in ((Deferred(N_("short")), spec.short_factor), (Deferred(N_("long")), spec.long_factor)):
        factors = torch.tensor(factors, dtype=torch.float64)
        found.append(Candidate(plain * factors, attention,
                               detail=(("which", which), ("largest", float(factors.max() ** 2)))))
    if uses_long(spec, seq_len):
        found.reverse()
    return found


def longrope_multiplied(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    candidate = longrope_multiplied_candidates(spec, seq_len, "half", torch.zeros(0))[0]
    return candidate.values, candidate.attention_factor


def beta_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    return _changed_candidates(spec, seq_len, [{"beta_fast": f, "beta_slow": s} for f, s in fit.beta_guesses(spec)],
                               lambda changes: (("used_fast", changes["beta_fast"]),
                                                ("used_slow", changes["beta_slow"])))


def wrong_betas(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec.replace(beta_fast=spec.beta_fast * 2), seq_len)


def has_mscale_pair(spec: RopeSpec) -> bool:
    return "mscale" in reads_of(spec) and bool(spec.mscale) and bool(spec.mscale_all_dim) and \
        spec.attention_factor is None and spec.factor > 1


def mscale_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    theta, attention = reference_output(spec, seq_len)
    softmax = yarn_get_mscale(spec.factor, spec.mscale_all_dim) ** 2
    found, seen = [], {attention}
    for which, value in (("mscale_all_dim", spec.mscale_all_dim), ("mscale", spec.mscale), ("1", 1.0)):
        used = yarn_get_mscale(spec.factor, value)
        if any(math.isclose(used, s, rel_tol=1e-12) for s in seen):
            continue
        seen.add(used)
        found.append(Candidate(theta, used, detail=(("which", which), ("coefficient", value), ("softmax", softmax))))
    return found


def mscale_on_cos_sin(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return reference_output(spec, seq_len)[0], yarn_get_mscale(spec.factor, spec.mscale_all_dim)


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


def llama3_inverted(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    return _llama3_variant(spec, blend_reversed=True), reference_output(spec, seq_len)[1]


def llama3_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    attention = reference_output(spec, seq_len)[1]
    detail = (("low", spec.low_freq_factor), ("high", spec.high_freq_factor))
    return [
        Candidate(_llama3_variant(spec, blend_reversed=True), attention, detail=detail),
        Candidate(_llama3_variant(spec, blend_reversed=False), attention, detail=detail,
                  sentence=N_("The θᵢ are Llama-3's with low_freq_factor and high_freq_factor exchanged: the smooth "
                              "band collapses and every pair with λ > L/{high:g} is divided by s; the curves part "
                              "at {where}.")),
    ]


def uses_long(spec: RopeSpec, seq_len: int | None) -> bool:
    return seq_len is not None and seq_len > spec.original_max_position_embeddings


def longrope_swapped(spec: RopeSpec, seq_len: int | None) -> tuple[torch.Tensor, float]:
    other = None if uses_long(spec, seq_len) else spec.original_max_position_embeddings + 1
    return reference_output(spec, other)


def longrope_candidates(spec, seq_len, layout, given) -> list[Candidate]:
    values, attention = longrope_swapped(spec, seq_len)
    detail = (("length", f"{seq_len:,}" if seq_len is not None else Deferred(N_("none given"))),
              ("original", f"{spec.original_max_position_embeddings:,}"))
    if uses_long(spec, seq_len):
        sentence = N_("The θᵢ use LongRoPE's short factors, but at length {length} > original_max_position_embeddings "
                      "= {original} transformers switches to the long ones; the curves part at {where}.")
    else:
        sentence = N_("The θᵢ use LongRoPE's long factors, but at length {length} (≤ original_max_position_embeddings "
                      "= {original}) transformers uses the short ones; the curves part at {where}.")
    return [Candidate(values, attention, detail=detail, sentence=sentence)]


def reads_of(spec: RopeSpec) -> tuple[str, ...]:
    return rope_type_entry(spec.rope_type).reads


def one_factor(spec: RopeSpec) -> bool:
    """Does one factor scale the type's θ (every extension method but LongRoPE's factor per pair)?"""
    entry = rope_type_entry(spec.rope_type)
    return entry.extends and "long_factor" not in entry.reads


def is_scaled(spec: RopeSpec) -> bool:
    return rope_type_entry(spec.rope_type).factor_from != "none"


def has_attention_factor(spec: RopeSpec) -> bool:
    return rope_frequencies(spec).attention_factor != 1.0


def always(spec: RopeSpec) -> bool:
    return True
