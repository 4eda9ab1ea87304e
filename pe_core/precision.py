"""What low-precision floats do to integer positions, and to RoPE's angles.

Positions are the integers 0 .. L−1. A float with p significand bits (the implicit leading 1
included) holds every integer up to 2^p; in the binade [2^k, 2^(k+1)) above that, neighbouring
values are 2^(k−p+1) apart, so neighbouring positions round to the same value and collide
(bfloat16 has p = 8; see Wang et al. 2024, arXiv:2411.13476, for what that does to RoPE).
Everything here is measured from the dtypes
themselves - positions are round-tripped through torch's own casts, spacings are read off the
bit patterns - so no dtype constant is typed in.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import _
from pe_core.rope import check_length

PRECISION_DTYPES = ("bfloat16", "float16", "float32", "float64")
LOW_PRECISION_DTYPES = ("bfloat16", "float16")
_DTYPE_ALIASES = {
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
    "float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
    "float64": torch.float64, "fp64": torch.float64, "double": torch.float64,
}
_SAME_WIDTH_INTEGER = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32,
                       torch.float64: torch.int64}

# Positions are analysed in slices of this many, so memory stays bounded at any length.
CHUNK = 1 << 22
# Lengths beyond this would take seconds per dtype to round-trip; no model needs more here.
MAX_ANALYSED_LENGTH = 1 << 27
# Positions at which RoPE's errors are evaluated, at most (a stratified sample above it).
MAX_ERROR_POINTS = 16_384


def resolve_dtype(dtype) -> torch.dtype:
    """A torch floating dtype from a ``torch.dtype`` or a name such as ``"bfloat16"`` or ``"bf16"``."""
    if isinstance(dtype, torch.dtype):
        if dtype in _SAME_WIDTH_INTEGER:
            return dtype
    elif isinstance(dtype, str) and dtype.strip().lower() in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[dtype.strip().lower()]
    raise ValueError(_("dtype must be one of {choices} (got {dtype!r}).").format(choices=', '.join(PRECISION_DTYPES), dtype=dtype))


def dtype_name(dtype) -> str:
    return str(resolve_dtype(dtype)).removeprefix("torch.")


def _check_analysed_length(length) -> int:
    check_length("length", length)
    if length > MAX_ANALYSED_LENGTH:
        raise ValueError(_("length must be at most {max_analysed_length:,} positions (got {length:,}).").format(max_analysed_length=MAX_ANALYSED_LENGTH, length=length))
    return length


# --- positions through a cast -------------------------------------------------------------------


def stored_positions(positions: torch.Tensor, dtype) -> torch.Tensor:
    """The value each integer position becomes when stored in ``dtype``, as float64 (inf on overflow).

    This is ``positions.to(dtype)`` - torch's round-to-nearest-even, the same values as
    ``torch.arange(n, dtype=dtype)`` - read back exactly. The 16-bit values go back through
    float32, which holds each of them exactly and converts several times faster than half → double.
    """
    torch_dtype = resolve_dtype(dtype)
    stored = positions.to(torch.int64).to(torch_dtype)
    if torch_dtype in (torch.bfloat16, torch.float16):
        stored = stored.to(torch.float32)
    return stored.to(torch.float64)


def exact_mask(positions: torch.Tensor, dtype) -> torch.Tensor:
    """True where the integer position survives the round trip int64 → dtype → int64 unchanged."""
    positions = positions.to(torch.int64)
    stored = positions.to(resolve_dtype(dtype))
    finite = torch.isfinite(stored)
    back = torch.where(finite, stored, torch.zeros((), dtype=stored.dtype)).to(torch.int64)
    return finite & (back == positions)


def _stored_and_exact(positions: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``stored_positions`` and its exact mask from one cast; needs positions below 2^53 (float64 compares)."""
    stored = stored_positions(positions, dtype)
    return stored, stored == positions.to(torch.float64)


def _chunks(length: int):
    for start in range(0, length, CHUNK):
        yield start, torch.arange(start, min(start + CHUNK, length), dtype=torch.int64)


def exact_position_counts(lengths, dtype) -> torch.Tensor:
    """For each length L, how many of the positions 0 .. L−1 are stored exactly (int64 tensor).

    One pass over the positions up to the largest L, in chunks: a running count plus the
    cumulative count inside each chunk answers every requested length.
    """
    lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
    if lengths.numel() == 0:
        return lengths.clone()
    for value in lengths.tolist():
        _check_analysed_length(value)
    counts = torch.zeros_like(lengths)
    exact_before = 0
    for start, positions in _chunks(int(lengths.max())):
        cumulative = _stored_and_exact(positions, dtype)[1].cumsum(0)
        inside = (lengths > start) & (lengths <= start + len(positions))
        counts[inside] = exact_before + cumulative[lengths[inside] - start - 1]
        exact_before += int(cumulative[-1])
    return counts


def exact_position_fraction(length: int, dtype) -> float:
    """The fraction of positions 0 .. length−1 that ``dtype`` stores exactly (bfloat16 at 8192: 896/8192)."""
    return int(exact_position_counts([length], dtype)[0]) / length


def first_inexact_position(dtype) -> int:
    """The smallest non-negative integer that ``dtype`` cannot store exactly (bfloat16: 257).

    Representable values are evenly spaced inside each binade [2^k, 2^(k+1)), so every integer
    of a binade is exact exactly when 2^k + 1 is; round-tripping 0, 1 and 2^k + 1 for
    k = 1 .. 62 therefore finds the first inexact integer of any of these dtypes.
    """
    exponents = torch.arange(1, 63, dtype=torch.int64)
    candidates = torch.cat([torch.tensor([0, 1], dtype=torch.int64), (1 << exponents) + 1])
    inexact = ~exact_mask(candidates, dtype)
    if not bool(inexact.any()):
        raise ValueError(_("{dtype_name} stores every integer below 2^62 exactly.").format(dtype_name=dtype_name(dtype)))
    return int(candidates[inexact][0])


def significand_bits(dtype) -> int:
    """p, the significand width including the implicit bit: 1 − log2(machine epsilon)."""
    return 1 - round(math.log2(torch.finfo(resolve_dtype(dtype)).eps))


def _next_up(values: torch.Tensor) -> torch.Tensor:
    """The next representable value above each (positive, finite) value of a float tensor."""
    integer = _SAME_WIDTH_INTEGER[values.dtype]
    return (values.view(integer) + 1).view(values.dtype)


class BinadeSpacing(NamedTuple):
    exponents: torch.Tensor  # k: the binade [2^k, 2^(k+1))
    spacing: torch.Tensor  # float64 distance between neighbouring values there; inf if 2^k overflows


def binade_spacing(dtype, max_exponent: int = 26) -> BinadeSpacing:
    """The gap between neighbouring representable values in each binade [2^k, 2^(k+1)), k = 0 .. max_exponent−1."""
    torch_dtype = resolve_dtype(dtype)
    exponents = torch.arange(0, max_exponent, dtype=torch.int64)
    starts = torch.pow(2.0, exponents.to(torch.float64)).to(torch_dtype)
    finite = torch.isfinite(starts)
    safe_starts = torch.where(finite, starts, torch.ones((), dtype=torch_dtype))
    gap = _next_up(safe_starts).to(torch.float64) - safe_starts.to(torch.float64)
    return BinadeSpacing(exponents, torch.where(finite, gap, torch.full_like(gap, math.inf)))


def largest_finite(dtype) -> float:
    """The largest finite value of ``dtype`` (float16: 65,504)."""
    return float(torch.finfo(resolve_dtype(dtype)).max)


def first_overflow_position(dtype) -> int | None:
    """The smallest integer that becomes inf in ``dtype`` (float16: 65,520), or None if above 2^62.

    Ties round to even, so the values between the largest finite value and the next "missing"
    power of two split at the midpoint; the round trip finds the split.
    """
    torch_dtype = resolve_dtype(dtype)
    largest = torch.tensor(torch.finfo(torch_dtype).max, dtype=torch_dtype)
    if float(largest) >= 2.0**62:
        return None
    below = (largest.view(_SAME_WIDTH_INTEGER[torch_dtype]) - 1).view(torch_dtype)
    gap = int(float(largest) - float(below))
    candidates = torch.arange(int(largest), int(largest) + 2 * gap + 1, dtype=torch.int64)
    overflowed = torch.isinf(candidates.to(torch_dtype))
    return int(candidates[overflowed][0])


# --- collisions -----------------------------------------------------------------------------


class CollisionSummary(NamedTuple):
    dtype: str
    length: int
    exact: int  # positions m in 0 .. length−1 stored as m
    distinct: int  # distinct stored values (all overflowed positions share inf)
    largest_group: int  # most positions sharing one finite stored value
    overflowed: int  # positions stored as inf
    first_inexact: int

    @property
    def exact_fraction(self) -> float:
        return self.exact / self.length


def collision_summary(length: int, dtype) -> CollisionSummary:
    """How positions 0 .. length−1 collide in ``dtype``: exact count, distinct values, largest group.

    Rounding is monotone, so the stored values never decrease along the positions: every
    collision group is one run of equal values, and overflow (inf) can only be a tail. Runs are
    counted in one chunked pass; a run that crosses a chunk boundary carries over.
    """
    _check_analysed_length(length)
    exact = distinct = largest = 0
    finite_count = 0
    previous_value, open_run = None, 0  # the last run of the previous chunk, which may go on in this one
    for _start, positions in _chunks(length):
        stored, is_exact = _stored_and_exact(positions, dtype)
        exact += int(is_exact.sum())
        finite = torch.isfinite(stored)
        if not bool(finite.all()):
            stored = stored[finite]
        finite_count += len(stored)
        if len(stored) == 0:
            break
        starts = torch.empty(len(stored), dtype=torch.bool)
        torch.ne(stored[1:], stored[:-1], out=starts[1:])
        starts[0] = previous_value is None or float(stored[0]) != previous_value
        new_groups = int(starts.sum())
        distinct += new_groups
        if new_groups == len(stored):  # no collision in this chunk: every group has one position
            largest = max(largest, open_run, 1)
            open_run = 1
        elif new_groups == 0:
            open_run += len(stored)
        else:
            start_index = torch.nonzero(starts).flatten()
            largest = max(largest, open_run + int(start_index[0]))
            run_lengths = torch.diff(start_index, append=torch.tensor([len(stored)]))
            largest = max(largest, int(run_lengths.max()))
            open_run = int(run_lengths[-1])
        previous_value = float(stored[-1])
    largest = max(largest, open_run)
    overflowed = length - finite_count
    return CollisionSummary(dtype_name(dtype), length, exact, distinct + (overflowed > 0), largest, overflowed,
                            first_inexact_position(dtype))


class CollisionWindow(NamedTuple):
    positions: torch.Tensor  # int64, start .. start+width−1
    stored: torch.Tensor  # float64 value each position becomes (inf on overflow)
    group: torch.Tensor  # int64 collision-group number, 0 for the first group in the window
    exact: torch.Tensor  # bool


def collision_window(start: int, width: int, dtype) -> CollisionWindow:
    """Positions start .. start+width−1, the value each becomes in ``dtype`` and its collision group."""
    if not (isinstance(start, int) and start >= 0):
        raise ValueError(_("start must be a non-negative integer (got {start!r}).").format(start=start))
    check_length("width", width)
    _check_analysed_length(start + width)
    positions = torch.arange(start, start + width, dtype=torch.int64)
    stored = stored_positions(positions, dtype)
    changes = torch.zeros(width, dtype=torch.int64)
    changes[1:] = (stored[1:] != stored[:-1]).to(torch.int64)
    return CollisionWindow(positions, stored, changes.cumsum(0), exact_mask(positions, dtype))


def exact_position_counts_from_spacing(lengths, dtype) -> torch.Tensor:
    """The same counts as ``exact_position_counts``, from the measured spacing of each binade.

    Position 0 is exact; in the binade [2^k, 2^(k+1)) the exact integers are the multiples of
    the spacing s_k there (all of them when s_k ≤ 1, none when 2^k overflows). Cost grows with
    the number of binades, not positions, so the curve can run far past what a round trip
    could; tests check it against the round trip.
    """
    lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1)
    if lengths.numel() == 0:
        return lengths.clone()
    for value in lengths.tolist():
        check_length("length", value)
    binades = binade_spacing(dtype, int(lengths.max()).bit_length())
    starts = (1 << binades.exponents).unsqueeze(0)
    covered = (torch.minimum(lengths.unsqueeze(1), 2 * starts) - starts).clamp(min=0)  # [lengths, binades]
    step = binades.spacing.clamp(min=1.0).unsqueeze(0)
    multiples = torch.where(torch.isfinite(step), torch.ceil(covered / step), torch.zeros(()))
    return 1 + multiples.sum(1).to(torch.int64)


class ExactFractionCurve(NamedTuple):
    lengths: torch.Tensor  # int64 sequence lengths, log-spaced
    fractions: dict[str, torch.Tensor]  # dtype name -> float64 fraction of positions 0 .. L−1 stored exactly


def exact_fraction_curve(max_length: int = 1 << 26, points: int = 600,
                         dtypes: tuple[str, ...] = PRECISION_DTYPES) -> ExactFractionCurve:
    """The exact fraction against length for each dtype, at log-spaced lengths 1 .. max_length (both included).

    Every power of two is among the lengths, so the curve's corners are drawn exactly.
    """
    check_length("max_length", max_length)
    log_spaced = torch.logspace(0, math.log10(max_length), points, dtype=torch.float64).round().to(torch.int64)
    powers = 1 << torch.arange(0, max_length.bit_length(), dtype=torch.int64)
    lengths = torch.unique(torch.cat([log_spaced, powers[powers <= max_length], torch.tensor([max_length])]))
    fractions = {dtype_name(d): exact_position_counts_from_spacing(lengths, d).to(torch.float64) / lengths
                 for d in dtypes}
    return ExactFractionCurve(lengths, fractions)


# --- what it does to RoPE ---------------------------------------------------------------------

ORDERS = ("safe", "positions", "inv_freq", "cos_sin", "all_low")


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise ValueError(_("order must be one of {choices} (got {order!r}).").format(choices=', '.join(ORDERS), order=order))
    return order


def rope_cos_sin(inv_freq: torch.Tensor, positions: torch.Tensor, order: str, dtype,
                 attention_factor: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos(m·θ_i) and sin(m·θ_i) (times the attention factor) as one order of operations produces them.

    Returned as float64 [positions, pairs] holding exactly the values that order stores:
    - ``safe``: float32 positions × float32 θ, cos/sin in float32 (transformers since PR #29285,
      before its final cast);
    - ``positions``: positions rounded to ``dtype`` first, then the float32 multiply;
    - ``inv_freq``: θ rounded to ``dtype``, positions exact, float32 multiply;
    - ``cos_sin``: the safe angles, with cos/sin rounded to ``dtype`` at the end;
    - ``all_low``: positions, θ, their product and cos/sin all in ``dtype`` - the old
      ``t = torch.arange(n, dtype=inv_freq.dtype)`` after ``model.to(torch.bfloat16)``.
    """
    low = resolve_dtype(dtype)
    check_order(order)
    positions = positions.to(torch.int64)
    theta32 = inv_freq.to(torch.float32)
    if order == "all_low":
        angles = torch.outer(positions.to(low), theta32.to(low))
        cos, sin = (angles.cos() * attention_factor), (angles.sin() * attention_factor)
        return cos.to(torch.float64), sin.to(torch.float64)
    position_values = positions.to(low).to(torch.float32) if order == "positions" else positions.to(torch.float32)
    theta = theta32.to(low).to(torch.float32) if order == "inv_freq" else theta32
    angles = torch.outer(position_values, theta)
    cos, sin = angles.cos() * attention_factor, angles.sin() * attention_factor
    if order == "cos_sin":
        cos, sin = cos.to(low), sin.to(low)
    return cos.to(torch.float64), sin.to(torch.float64)


def error_positions(length: int, max_points: int = MAX_ERROR_POINTS) -> torch.Tensor:
    """The positions at which RoPE errors are evaluated: all of 0 .. length−1, or a stratified sample.

    Above ``max_points`` one position is taken from each of ``max_points`` equal stretches, at a
    golden-ratio offset. An evenly strided sample would alias with the power-of-two spacing of
    the stored values (every sampled position could be exact); the offsets spread the samples
    over each collision group. 0 and length−1 are always included.
    """
    check_length("length", length)
    if length <= max_points:
        return torch.arange(length, dtype=torch.int64)
    index = torch.arange(max_points, dtype=torch.float64)
    offsets = torch.remainder(index * ((math.sqrt(5) - 1) / 2), 1.0)
    sampled = ((index + offsets) * (length / max_points)).floor().to(torch.int64).clamp(0, length - 1)
    return torch.unique(torch.cat([torch.tensor([0, length - 1]), sampled]))


class RopePrecisionError(NamedTuple):
    orders: tuple[str, ...]
    positions: torch.Tensor  # int64 [P]: the evaluated positions (key positions for the logit error)
    max_angle_error: torch.Tensor  # float64 [orders, P]: max over pairs of |effective angle − m·θ_i| (rad)
    angle_error_map: torch.Tensor  # float64 [orders, buckets, pairs]: max over the positions of each bucket
    bucket_starts: torch.Tensor  # int64 [buckets]: first position of each bucket
    logit_error: torch.Tensor  # float64 [orders, P]: |q_m·k_n/√d − exact| for the query at the last position
    query_position: int


def _effective_angle_error(cos, sin, exact_cos, exact_sin) -> torch.Tensor:
    """|angle of (cos + i·sin) − exact angle|, wrapped to [0, π] (the angle of z·conj(z_exact))."""
    return torch.atan2(sin * exact_cos - cos * exact_sin, cos * exact_cos + sin * exact_sin).abs_()


def rope_precision_error(inv_freq: torch.Tensor, length: int, dtype, attention_factor: float = 1.0,
                         orders: tuple[str, ...] = ORDERS, max_points: int = MAX_ERROR_POINTS, buckets: int = 200,
                         seed: int = 0) -> RopePrecisionError:
    """Angle and attention-logit errors of each order of operations against float64 RoPE.

    The angle error is what the model actually sees: the angle of the stored (cos, sin) against
    the exact m·θ_i, wrapped to [0, π]. The logit error uses random q, k with unit-variance
    entries (fixed ``seed``), kept in float64 so only the positional part differs; the query sits
    at the last position L−1 and the keys at every evaluated position.
    """
    check_length("length", length)
    positions = error_positions(length, max_points)
    inv_freq = inv_freq.to(torch.float64)
    pairs = len(inv_freq)
    exact_angles = torch.outer(positions.to(torch.float64), inv_freq)
    exact_cos, exact_sin = exact_angles.cos() * attention_factor, exact_angles.sin() * attention_factor
    del exact_angles

    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(pairs, 2, dtype=torch.float64, generator=generator)
    k = torch.randn(pairs, 2, dtype=torch.float64, generator=generator)
    q = torch.complex(q[:, 0], q[:, 1])
    k = torch.complex(k[:, 0], k[:, 1])
    scale = 1 / math.sqrt(2 * pairs)

    def logits(cos, sin):
        # Pair i contributes Re(q_i·z_m,i · conj(k_i·z_n,i)) = Re(w_i·conj(z_n,i)) with w_i = q_i·z_m,i·conj(k_i),
        # so all keys at once are two matrix-vector products.
        weight = q * torch.complex(cos[-1], sin[-1]) * k.conj()
        return (cos @ weight.real + sin @ weight.imag) * scale

    exact_logits = logits(exact_cos, exact_sin)
    bucket_count = min(buckets, len(positions))
    bucket_of = (torch.arange(len(positions)) * bucket_count) // len(positions)
    bucket_starts = positions[torch.searchsorted(bucket_of, torch.arange(bucket_count))]

    max_errors, maps, logit_errors = [], [], []
    for order in orders:
        cos, sin = rope_cos_sin(inv_freq, positions, order, dtype, attention_factor)
        # An overflowed position turns its whole row inf/NaN; the row sums notice it in one cheap pass.
        finite_rows = torch.isfinite(cos.sum(1) + sin.sum(1))
        if not bool(finite_rows.all()):
            cos = torch.where(finite_rows.unsqueeze(1), cos, 0.0)
            sin = torch.where(finite_rows.unsqueeze(1), sin, 0.0)
        error = _effective_angle_error(cos, sin, exact_cos, exact_sin)
        error[~finite_rows] = math.inf
        max_errors.append(error.amax(1))
        per_bucket = torch.full((bucket_count, pairs), -math.inf, dtype=torch.float64)
        per_bucket.scatter_reduce_(0, bucket_of.unsqueeze(1).expand(-1, pairs), error, reduce="amax")
        maps.append(per_bucket)
        difference = (logits(cos, sin) - exact_logits).abs_()
        usable = finite_rows & finite_rows[-1]  # a logit needs both the key's and the query's rotation
        logit_errors.append(torch.where(usable, difference, math.inf))
    return RopePrecisionError(tuple(orders), positions, torch.stack(max_errors), torch.stack(maps), bucket_starts,
                              torch.stack(logit_errors), int(positions[-1]))
