"""Fit the few parameters a RoPE port can get wrong, and name the value the numbers imply.

A port's θᵢ are a method's scaling applied to plain frequencies B^(−(2i + o)/D). Dividing the method's
per-pair multiplier out leaves a line in i: ln θᵢ = −(ln B / D)·(2i + o), whose slope gives the base and
whose intercept gives the exponent's start o (``fit_exponent``). The other parameters (the factor, the
original length L, the sequence length a dynamic port ran at, YaRN's β values) enter through the method
itself; they are found by solving where a closed form exists and otherwise by trying the values ports
actually use (``factor_guesses``, ``length_guesses``, ``beta_guesses``), each kept only if it reproduces
the numbers. ``base_origin`` then says where a base comes from: a known default, the configured base
rounded to bfloat16 or float16 or wrapped by an integer type, the exponent taken over the wrong width,
static NTK's base, or dynamic NTK's at another length.

Everything here is float64 and vectorised over pairs; the few Python loops run over candidate values.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import torch

from pe_core.rope import (
    RopeSpec,
    check_length,
    exponent_width,
    ntk_aware_base,
    plain_frequencies,
    rope_frequencies,
    rope_type_entry,
)

FLOAT16_MAX = float(torch.finfo(torch.float16).max)
KNOWN_BASES = (10_000.0, 500_000.0, 1_000_000.0, 5_000_000.0, 10_000_000.0, 100_000.0, 150_000.0, 75_000.0,
               25_000.0, 50_000.0, 1_000.0, 20_000.0, 40_000.0, 160_000.0, 8_000_000.0)
INTEGER_TYPES = (("int16", 16, True), ("uint16", 16, False), ("int32", 32, True), ("uint32", 32, False))


# ---- the method applied to any plain frequencies ---------------------------------------------------------------


def dynamic_length(spec: RopeSpec, seq_len: int | None) -> int:
    """The length transformers' dynamic NTK computes its base for (never below L)."""
    length = spec.original_max_position_embeddings
    return length if seq_len is None else max(seq_len, length)


def effective_base(spec: RopeSpec, seq_len: int | None) -> float:
    """The base of the plain frequencies the method scales: NTK's and dynamic NTK's grown base, else rope_theta."""
    grown = rope_type_entry(spec.rope_type).grown_base
    return spec.base if grown is None else grown(spec, seq_len)


def apply_method(spec: RopeSpec, seq_len: int | None, plain: torch.Tensor) -> torch.Tensor:
    """The spec's method applied to the plain frequencies ``plain`` instead of b^(−2i/D) (for NTK and dynamic NTK,
    ``plain`` already carries the grown base: see ``effective_base``)."""
    return rope_type_entry(spec.rope_type).scale(spec, seq_len, plain)


def reference_plain(spec: RopeSpec, seq_len: int | None) -> torch.Tensor:
    return plain_frequencies(effective_base(spec, seq_len), spec.num_pairs, exponent_width(spec))


# ---- the line in i --------------------------------------------------------------------------------------------


class ExponentFit(NamedTuple):
    """θᵢ read as the method applied to B^(−(2i + o)/D), D the spec's exponent width."""

    base: float  # B
    offset: float  # o: 0 in every correct port; 1 for arange(1, d, 2)


def fit_exponent(spec: RopeSpec, seq_len: int | None, given: torch.Tensor, steps: int = 6) -> ExponentFit | None:
    """Least-squares line through ln(θᵢ / method multiplier) against i; the multiplier of Llama-3 and
    NTK-by-parts depends on the frequencies themselves, so it is refitted a few times (fixed point)."""
    if given.numel() != spec.num_pairs or spec.num_pairs < 3 or bool((given <= 0).any()):
        return None
    return _fit_exponent(spec, seq_len, tuple(given.tolist()), steps)


@lru_cache(maxsize=64)
def _fit_exponent(spec: RopeSpec, seq_len: int | None, given: tuple[float, ...], steps: int) -> ExponentFit | None:
    values = torch.tensor(given, dtype=torch.float64)
    width = exponent_width(spec)
    index = torch.arange(spec.num_pairs, dtype=torch.float64)
    centred = index - index.mean()
    plain = reference_plain(spec, seq_len)
    fit = None
    for _step in range(steps):
        multiplier = apply_method(spec, seq_len, plain) / plain
        logs = (values / multiplier).log()
        slope = float((logs * centred).sum() / (centred * centred).sum())
        intercept = float(logs.mean()) - slope * float(index.mean())
        if not math.isfinite(slope) or slope >= 0:
            return None
        log_base = -slope * width / 2
        new = ExponentFit(math.exp(log_base), 2 * intercept / slope)
        if not math.isfinite(new.base) or new.base <= 1:
            return None
        if fit is not None and abs(new.base / fit.base - 1) < 1e-12 and abs(new.offset - fit.offset) < 1e-9:
            return new
        fit = new
        plain = plain_frequencies(fit.base, spec.num_pairs, width, fit.offset)
    return fit



# ---- where a base comes from ------------------------------------------------------------------------------------


class BaseOrigin(NamedTuple):
    kind: str  # "rounded", "overflow", "float16_inf", "width", "static_ntk", "dynamic_length", "default", "other"
    value: float  # the base the port used (rope_theta's place; for static/dynamic the grown base)
    detail: tuple[tuple[str, object], ...] = ()


def wrapped(value: float, bits: int, signed: bool) -> int:
    """An integer stored in ``bits`` bits: two's complement wrap-around (C casts, numpy's astype)."""
    wrapped_value = int(value) % (1 << bits)
    if signed and wrapped_value >= 1 << (bits - 1):
        wrapped_value -= 1 << bits
    return wrapped_value


def rounded_bases(base: float) -> list[BaseOrigin]:
    """The configured base rounded to bfloat16 or float16 (where that changes it and stays finite)."""
    found = []
    for name, dtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        value = float(torch.tensor(base, dtype=torch.float64).to(dtype))
        if math.isfinite(value) and value != base and value > 1:
            found.append(BaseOrigin("rounded", value, (("dtype", name),)))
    return found


def overflowed_bases(base: float) -> list[BaseOrigin]:
    """The configured base after an integer type too narrow for it wrapped it (still a valid base > 1), and its
    fixed-point form base·1000 in a uint32 (a converter that stored it so)."""
    found, seen = [], {base}
    for name, bits, signed in INTEGER_TYPES:
        value = float(wrapped(base, bits, signed))
        if value > 1 and value not in seen:
            seen.add(value)
            found.append(BaseOrigin("overflow", value, (("int_type", name), ("bits", bits))))
    fixed = wrapped(round(base * 1000), 32, False) / 1000
    if fixed > 1 and fixed not in seen:
        found.append(BaseOrigin("overflow", fixed, (("int_type", "uint32 (base·1000)"), ("bits", 32))))
    return found


def width_base(spec: RopeSpec) -> BaseOrigin | None:
    """The exponent taken over the head's width instead of the rotated one (or, for proportional RoPE, the other
    way round): b^(−2i/D') = (b^(D/D'))^(−2i/D)."""
    if spec.rotary_dim == spec.head_dim:
        return None
    right = exponent_width(spec)
    wrong = spec.rotary_dim if right == spec.head_dim else spec.head_dim
    return BaseOrigin("width", spec.base ** (right / wrong), (("used_width", wrong), ("width", right)))


def grows_with_length(spec: RopeSpec) -> bool:
    """Is the base grown with the sequence length (dynamic NTK)?"""
    entry = rope_type_entry(spec.rope_type)
    return entry.grown_base is not None and entry.follows_length


def dynamic_length_for(spec: RopeSpec, grown_base: float) -> float | None:
    """The sequence length at which transformers' dynamic NTK grows rope_theta to ``grown_base``:
    B = b·(s·l/L − (s − 1))^(d/(d−2))  ⇒  l = L·((B/b)^((d−2)/d) + s − 1)/s."""
    if not grows_with_length(spec) or grown_base < spec.base or spec.factor <= 1:
        return None
    dim, length = spec.rotary_dim, spec.original_max_position_embeddings
    return length * ((grown_base / spec.base) ** ((dim - 2) / dim) + spec.factor - 1) / spec.factor


def base_origins(spec: RopeSpec, seq_len: int | None) -> list[BaseOrigin]:
    """Every base a port of ``spec`` is known to end up with instead of rope_theta, in rope_theta's place
    (``spec.replace(base=value)`` gives its θᵢ), except static/dynamic NTK's, which are grown bases."""
    found = [*rounded_bases(spec.base), *overflowed_bases(spec.base)]
    width = width_base(spec)
    if width is not None:
        found.append(width)
    found += [BaseOrigin("default", value) for value in KNOWN_BASES if value != spec.base]
    return found


def name_base(spec: RopeSpec, seq_len: int | None, used: float, tolerance: float = 1e-6) -> BaseOrigin:
    """What a fitted base (in rope_theta's place) is: the first of ``base_origins`` within ``tolerance``, else
    'other'."""
    for origin in base_origins(spec, seq_len):
        if abs(origin.value / used - 1) <= tolerance:
            return origin
    return BaseOrigin("other", used)


def name_grown_base(spec: RopeSpec, seq_len: int | None, grown: float, tolerance: float = 1e-6) -> BaseOrigin | None:
    """For dynamic NTK: a fitted grown base that is static NTK's, or dynamic NTK's at another length (integer)."""
    if not grows_with_length(spec):
        return None
    static = ntk_aware_base(spec.base, spec.factor, spec.rotary_dim)
    if abs(static / grown - 1) <= tolerance:
        return BaseOrigin("static_ntk", static)
    length = dynamic_length_for(spec, grown)
    if length is None:
        return None
    whole = max(round(length), 1)
    try:
        check_length("seq_len", whole)
    except ValueError:
        return None
    used = effective_base(spec, whole)
    if abs(used / grown - 1) <= tolerance:
        return BaseOrigin("dynamic_length", used, (("used_length", whole),))
    return None


# ---- values ports use for the other parameters --------------------------------------------------------------------


def factor_guesses(spec: RopeSpec, seq_len: int | None, given: torch.Tensor) -> list[float]:
    """Factors worth trying: what the slowest pair implies (it is divided by s in every method that divides),
    the NTK factor the fitted base implies, whole and half numbers near them, and powers of two."""
    guesses: list[float] = []
    if given.numel() == spec.num_pairs and float(given[-1]) > 0:
        plain = reference_plain(spec, seq_len)
        guesses.append(float(plain[-1] / given[-1]))
        if rope_type_entry(spec.rope_type).grown_base is not None:
            fit = fit_exponent(spec, seq_len, given)
            if fit is not None and fit.base > spec.base:
                dim = spec.rotary_dim
                guesses.append((fit.base / spec.base) ** ((dim - 2) / dim))
    near = [round(g * 2) / 2 for g in guesses if math.isfinite(g)]  # whole and half factors first: ports use them
    guesses = near + guesses + [float(2**k) for k in range(1, 9)] + [spec.factor * 2, spec.factor / 2, spec.factor**2]
    unique: list[float] = []
    for guess in guesses:
        if math.isfinite(guess) and guess > 1 + 1e-9 and abs(guess - spec.factor) > 1e-9 and \
                not any(abs(guess - u) <= 1e-9 * u for u in unique):
            unique.append(guess)
    return unique


def length_guesses(spec: RopeSpec, given: torch.Tensor) -> list[int]:
    """Original lengths worth trying: the config's L times the factor (max_position_embeddings in many configs),
    powers of two, and for Llama-3 the lengths its smooth band implies pair by pair."""
    length = spec.original_max_position_embeddings
    guesses = [round(length * spec.factor), *(1 << k for k in range(8, 22)), length * 16, length // 2]
    if "low_freq_factor" in rope_type_entry(spec.rope_type).reads and given.numel() == spec.num_pairs and bool((given > 0).all()):
        plain = plain_frequencies(spec.base, spec.num_pairs, spec.rotary_dim)
        # in the smooth band θ = θ_plain·((1 − t)/s + t), t = (L/λ − low)/(high − low)
        blend = ((given / plain) - 1 / spec.factor) / (1 - 1 / spec.factor)
        inside = (blend > 1e-3) & (blend < 1 - 1e-3)
        if bool(inside.any()):
            wavelength = 2 * math.pi / plain[inside]
            implied = wavelength * (blend[inside] * (spec.high_freq_factor - spec.low_freq_factor)
                                    + spec.low_freq_factor)
            guesses.append(round(float(implied.median())))
    return [g for g in dict.fromkeys(guesses) if g >= 2 and g != length]


BETA_FAST = (1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 128.0)
BETA_SLOW = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def beta_guesses(spec: RopeSpec) -> list[tuple[float, float]]:
    """(β_fast, β_slow) pairs ports use, nearest the config's first, without the config's and its swap."""
    config = (spec.beta_fast, spec.beta_slow)
    pairs = [(fast, slow) for fast in BETA_FAST for slow in BETA_SLOW
             if fast > slow and (fast, slow) != config and (fast, slow) != config[::-1]]
    return sorted(pairs, key=lambda p: abs(math.log(p[0] / spec.beta_fast)) + abs(math.log(p[1] / spec.beta_slow)))


def frequencies_or_none(spec: RopeSpec, seq_len: int | None, **changes) -> tuple[torch.Tensor, float] | None:
    """rope_frequencies of the spec with ``changes``, or None where the changed spec is invalid."""
    try:
        frequencies = rope_frequencies(spec.replace(**changes), seq_len)
    except ValueError:
        return None
    return frequencies.inv_freq, frequencies.attention_factor
