"""Check a port's rotation itself, not only its θᵢ: seeded queries and keys go through the port's rotary, and what
comes back is compared with the reference rotation and diagnosed.

``make_probe(kind)`` gives query and key tensors of shape [batch, heads, tokens, head_dim] (float32, seeded) and
their position ids (``[batch, tokens]``; ``[3, batch, tokens]`` of distinct time, height and width positions for an
M-RoPE model), with positions from 0 up to twice the length the model is built for, so a bug that only shows late
(half-precision angles) is caught. ``pe_core.probe_files.write_probe`` saves them with a short torch script that
runs one's own rotary on them. ``check_rotation`` takes what the port returned: the rotated q and k, or its cos/sin tables, and

- calls it a *match* when every value is within float32 tolerance of the float64 reference rotation built from the
  layer kind's ``RopeSpec``, pairing layout, attention factor, partial rotary width and M-RoPE sections
  (tolerance per rotated pair: 8·ε₃₂·(1 + (1 + |ln θᵢ|)·|m·θᵢ|) of the pair's length, the float32 rounding of θᵢ
  that the angle m·θᵢ multiplies);
- otherwise tries every bug class of ``PROBE_BUGS`` that applies to the layer kind and lists each one of whose
  broken rotations reproduces the output within the same tolerance (plus the rounding of a half-precision table);
- says where the error starts: the first token whose error leaves the tolerance.

A uniform shift of the positions leaves q·k unchanged, but not the rotated vectors, a KV cache written by another
implementation, nor anything that reads absolute positions: it is reported as a bug.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

import math
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.check.common import (
    EPS32,
    TOLERANCE_ULPS,
    diagnosis_references_in,
    diagnosis_title_in,
    pairs_of_dimensions,
)
from pe_core.mrope import pair_axes
from pe_core.rope import RopeSpec, rope_frequencies, rope_type_entry

PROBE_BATCH, PROBE_HEADS, PROBE_TOKENS = 1, 2, 48
FIRST_POSITIONS = 12  # 0, 1, …, 11: every bug in the first positions, then a spread out to 2·L′
# finer first: a float16 table is also within a bfloat16 rounding of the reference
LOW_PRECISION = {"float16": torch.float16, "bfloat16": torch.bfloat16}


# ---- the probe ----------------------------------------------------------------------------------------------


class Probe(NamedTuple):
    q: torch.Tensor  # float32 [batch, heads, tokens, head_dim]
    k: torch.Tensor
    position_ids: torch.Tensor  # int64 [batch, tokens], or [3, batch, tokens] (time, height, width) for M-RoPE
    seed: int


def built_length(spec: RopeSpec) -> int:
    """The length the layers are built for: L·s for a scaled rope type, else L."""
    return int(round(spec.original_max_position_embeddings * max(spec.factor, 1.0)))


def probe_positions(spec: RopeSpec, tokens: int = PROBE_TOKENS) -> torch.Tensor:
    """Sorted distinct positions: 0 … 11, L − 1, L, L + 1, L′ − 1, and a geometric spread up to 2·L′."""
    length, extended = spec.original_max_position_embeddings, built_length(spec)
    fixed = torch.tensor([*range(FIRST_POSITIONS), length - 1, length, length + 1, extended - 1, 2 * extended],
                         dtype=torch.float64)
    spread = torch.logspace(math.log10(FIRST_POSITIONS), math.log10(2 * extended), tokens, dtype=torch.float64)
    positions = torch.unique(torch.cat([fixed, spread.round()]))
    extra = positions[(positions >= FIRST_POSITIONS) & ~torch.isin(positions, fixed)]
    keep = tokens - int(torch.isin(positions, fixed).sum())
    chosen = extra[torch.linspace(0, len(extra) - 1, max(keep, 0)).round().long().unique()] if keep > 0 else extra[:0]
    return torch.unique(torch.cat([fixed, chosen])).long()


def make_probe(spec: RopeSpec, mrope_section: tuple[int, ...] | None = None, seed: int = 0) -> Probe:
    """Seeded float32 queries and keys and their positions for one kind of layer."""
    generator = torch.Generator().manual_seed(seed)
    positions = probe_positions(spec)
    tokens = len(positions)
    shape = (PROBE_BATCH, PROBE_HEADS, tokens, spec.head_dim)
    q = torch.randn(shape, generator=generator, dtype=torch.float32)
    k = torch.randn(shape, generator=generator, dtype=torch.float32)
    position_ids = positions.expand(PROBE_BATCH, tokens).clone()
    if mrope_section is not None:
        # an image's height and width positions: distinct from time (and from each other), so every axis shows
        height = torch.randint(0, 64, (PROBE_BATCH, tokens), generator=generator) + position_ids // 2
        width = torch.randint(0, 64, (PROBE_BATCH, tokens), generator=generator) + position_ids // 3
        position_ids = torch.stack([position_ids, height, width])
    return Probe(q, k, position_ids, seed)


# ---- one rotary implementation, right or wrong ----------------------------------------------------------------


class Rotation(NamedTuple):
    """Everything a rotary implementation decides, in float64, so a broken one is a few changed fields."""

    inv_freq: torch.Tensor  # θ per rotated pair (float64)
    layout: str  # which input dimensions a pair rotates: "half" (i, i + W/2) or "interleaved" (2i, 2i + 1)
    q_scale: float  # what q's rotated dimensions are multiplied by (transformers: the attention factor on cos, sin)
    k_scale: float
    output: str = "same"  # "half": pair i written to (i, i + W/2) whatever it read (DeepSeek's interleave path)
    positions: Callable[[torch.Tensor], torch.Tensor] | None = None  # the positions the port used (None: given)
    axes: torch.Tensor | None = None  # M-RoPE: the axis (time, height, width) each pair takes its position from
    dim_axes: torch.Tensor | None = None  # M-RoPE split by rotated dimension instead of by pair (a bug)
    precision: tuple[str, torch.dtype] | None = None  # ("table", dtype): cos/sin rounded; ("angle", dtype)
    pass_through: str = "keep"  # the head's unrotated dimensions: "keep" or "zero" (dropped)

    @property
    def width(self) -> int:
        return 2 * self.inv_freq.numel()

    def with_(self, **changes) -> Rotation:
        return self._replace(**changes)


def reference_seq_len(spec: RopeSpec, position_ids: torch.Tensor) -> int | None:
    """The sequence length transformers' forward pass computes θ for: max position + 1 for dynamic NTK and
    LongRoPE (their θ depend on it), none for the others."""
    return int(position_ids.max()) + 1 if rope_type_entry(spec.rope_type).follows_length else None


def reference_rotation(spec: RopeSpec, layout: str, mrope_section: tuple[int, ...] | None = None,
                       mrope_interleaved: bool = False, position_ids: torch.Tensor | None = None) -> Rotation:
    """The rotation transformers applies for this kind of layer (θ, attention factor on q and k, layout, sections)."""
    seq_len = reference_seq_len(spec, position_ids) if position_ids is not None else None
    frequencies = rope_frequencies(spec, seq_len)
    axes = pair_axes(mrope_section, mrope_interleaved) if mrope_section is not None else None
    factor = float(frequencies.attention_factor)
    return Rotation(frequencies.inv_freq.to(torch.float64), layout, factor, factor, axes=axes)


def pair_dimensions(width: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The two dimensions each pair rotates: (i, i + W/2) half-split, (2i, 2i + 1) interleaved."""
    pairs = width // 2
    if layout == "half":
        return torch.arange(pairs), torch.arange(pairs) + pairs
    return 2 * torch.arange(pairs), 2 * torch.arange(pairs) + 1


def _positions(rotation: Rotation, position_ids: torch.Tensor) -> torch.Tensor:
    positions = position_ids.to(torch.float64)
    return rotation.positions(positions) if rotation.positions is not None else positions


def _product(rotation: Rotation, positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    if rotation.precision is not None and rotation.precision[0] == "angle":
        dtype = rotation.precision[1]
        return (positions.to(dtype) * theta.to(dtype)).to(torch.float64)
    return positions * theta


def angles(rotation: Rotation, position_ids: torch.Tensor) -> torch.Tensor:
    """[batch, tokens, pairs] angles m·θᵢ as the implementation computes them (float64 unless it rounds)."""
    positions = _positions(rotation, position_ids)
    pairs = rotation.inv_freq.numel()
    if positions.dim() == 3:  # M-RoPE: each pair takes its own axis; without sections, the time axis
        axes = rotation.axes if rotation.axes is not None else torch.zeros(pairs, dtype=torch.long)
        per_pair = positions[axes].permute(1, 2, 0)  # [batch, tokens, pairs]
    else:
        per_pair = positions[..., None].expand(*positions.shape, pairs)
    return _product(rotation, per_pair, rotation.inv_freq)


def dimension_angles(rotation: Rotation, position_ids: torch.Tensor) -> torch.Tensor:
    """[batch, tokens, width] the angle each rotated dimension is turned by, in the input's order. Normally a pair's
    two dimensions share one angle; an M-RoPE split by dimension (``dim_axes``) can give them different ones."""
    pair = pairs_of_dimensions(rotation.width, rotation.layout)
    if rotation.dim_axes is None or position_ids.dim() != 3:
        return angles(rotation, position_ids)[..., pair]
    positions = _positions(rotation, position_ids)[rotation.dim_axes].permute(1, 2, 0)
    return _product(rotation, positions, rotation.inv_freq[pair])


def pair_tables(rotation: Rotation, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin per pair, [batch, tokens, pairs], as the implementation's table holds them (times q's scale)."""
    angle = angles(rotation, position_ids)
    cos, sin = angle.cos() * rotation.q_scale, angle.sin() * rotation.q_scale
    if rotation.precision is not None:
        dtype = rotation.precision[1]
        cos, sin = cos.to(dtype).to(torch.float64), sin.to(dtype).to(torch.float64)
    return cos, sin


class Rotated(NamedTuple):
    values: torch.Tensor  # float64, like the input
    tolerance: torch.Tensor  # float64, per value: what float32 arithmetic (and the implementation's rounding) allows


def tolerance_of(rotation: Rotation, angle: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Relative error a float32 rotation may make: 8·ε₃₂·(1 + (1 + |ln θᵢ|)·|m·θᵢ|), plus the rounding of a
    half-precision table."""
    log = theta.clamp_min(1e-300).log().abs()
    allowed = TOLERANCE_ULPS * EPS32 * (1 + (1 + log) * angle.abs())
    if rotation.precision is not None:
        # cos and sin each rounded by half a unit: at most ε/√2 of the pair's length
        allowed = allowed + torch.finfo(rotation.precision[1]).eps
    return allowed


def rotate(rotation: Rotation, x: torch.Tensor, position_ids: torch.Tensor, scale: float) -> Rotated:
    """``x`` [batch, heads, tokens, head_dim] rotated as ``rotation`` does (transformers' x·cos + rotate(x)·sin on
    the rotated dimensions, the rest passed through), and the tolerance per value."""
    x = x.to(torch.float64)
    width = rotation.width
    if width > x.shape[-1]:
        raise ValueError(_("The rotation turns {width} dimensions but the head has {head_dim}.").format(
            width=width, head_dim=x.shape[-1]))
    angle = dimension_angles(rotation, position_ids)[:, None]  # [batch, 1, tokens, width]
    cos, sin = angle.cos(), angle.sin()
    if rotation.precision is not None:
        dtype = rotation.precision[1]
        cos, sin = cos.to(dtype).to(torch.float64), sin.to(dtype).to(torch.float64)
    first, second = pair_dimensions(width, rotation.layout)
    turned = torch.empty_like(x[..., :width])
    turned[..., first], turned[..., second] = -x[..., second], x[..., first]
    rotated = (x[..., :width] * cos + turned * sin) * scale
    radius = (x[..., first] ** 2 + x[..., second] ** 2).sqrt()
    pair = pairs_of_dimensions(width, rotation.layout)
    allowed = tolerance_of(rotation, angle, rotation.inv_freq[pair]) * radius[..., pair] * abs(scale)
    values, tolerance = x.clone(), TOLERANCE_ULPS * EPS32 * x.abs()
    if rotation.pass_through == "zero":
        values[..., width:] = 0
    order = torch.arange(width)
    if rotation.output == "half":  # pair i written to dimensions (i, i + W/2), whatever it read
        out_first, out_second = pair_dimensions(width, "half")
        order = torch.empty(width, dtype=torch.long)
        order[out_first], order[out_second] = first, second
    values[..., :width] = rotated[..., order]
    tolerance[..., :width] = allowed[..., order]
    return Rotated(values, tolerance)


# ---- what the port hands back -----------------------------------------------------------------------------------


class PortOutput(NamedTuple):
    form: str  # "rotated" (q and k) or "tables" (cos and sin per pair)
    first: torch.Tensor  # rotated q, or cos per pair [tokens, pairs]
    second: torch.Tensor  # rotated k, or sin per pair
    note: str | None = None  # how the tables were read (N_()-marked), shown with the verdict


_ROTATED_KEYS = (("q", "k"), ("q_embed", "k_embed"), ("query", "key"), ("query_states", "key_states"))
_TABLE_KEYS = (("cos", "sin"),)


def port_output(tensors: Mapping[str, torch.Tensor], probe: Probe, spec: RopeSpec) -> PortOutput:
    """The port's output from named tensors: rotated q and k (the probe's shape), or cos and sin tables."""
    for first, second in _ROTATED_KEYS:
        if first in tensors and second in tensors:
            q, k = tensors[first], tensors[second]
            for name, value in ((first, q), (second, k)):
                if tuple(value.shape) != tuple(probe.q.shape):
                    truncated = tuple(probe.q.shape[:-1]) + (spec.rotary_dim,)
                    if tuple(value.shape) == truncated and spec.rotary_dim < spec.head_dim:
                        padded = torch.zeros(probe.q.shape, dtype=torch.float64)
                        padded[..., : spec.rotary_dim] = value.to(torch.float64)
                        value = padded  # the unrotated dimensions were dropped: read as zeros
                        q, k = (value, k) if name == first else (q, value)
                        continue
                    raise ValueError(_("{name} has shape {shape}; the probe's queries and keys have {expected} "
                                       "(batch, heads, tokens, head_dim).").format(
                        name=name, shape=tuple(value.shape), expected=tuple(probe.q.shape)))
            return PortOutput("rotated", q.to(torch.float64), k.to(torch.float64))
    for first, second in _TABLE_KEYS:
        if first in tensors and second in tensors:
            cos, note = _pair_table(tensors[first], probe, spec, first)
            sin, _note = _pair_table(tensors[second], probe, spec, second)
            return PortOutput("tables", cos, sin, note)
    raise ValueError(_("The file holds {keys}; give the rotated queries and keys as 'q' and 'k', or the tables as "
                       "'cos' and 'sin'.").format(keys=", ".join(sorted(tensors)) or _("nothing")))


def _pair_table(table: torch.Tensor, probe: Probe, spec: RopeSpec, name: str) -> tuple[torch.Tensor, str | None]:
    """A cos or sin table as one value per (token, pair): [tokens, pairs]. Accepts [batch, tokens, width] or
    [tokens, width], width the rotated pairs (one per pair), the rotated dimensions or the whole head (either
    expansion: cat(freqs, freqs) or repeat_interleave); a table for every dimension cannot show the pairing."""
    tokens = probe.position_ids.shape[-1]
    values = table.to(torch.float64)
    while values.dim() > 2 and values.shape[0] == 1:
        values = values[0]
    if values.dim() != 2 or values.shape[0] != tokens:
        raise ValueError(_("{name} has shape {shape}; give one row per probe token ({tokens}), as [batch, tokens, "
                           "width] or [tokens, width].").format(name=name, shape=tuple(table.shape), tokens=tokens))
    width = values.shape[1]
    if width in (spec.rotary_dim, spec.head_dim):  # one value per dimension, if one of the two expansions
        half = width // 2
        if torch.equal(values[:, :half], values[:, half:]):
            return values[:, :half], N_("cat(freqs, freqs): one value per dimension, which cannot show the pairing")
        if torch.equal(values[:, 0::2], values[:, 1::2]):
            return values[:, 0::2], N_("repeat_interleave: one value per dimension, which cannot show the pairing")
    return values, N_("one value per pair")


# ---- bug classes ----------------------------------------------------------------------------------------------


class ProbeContext(NamedTuple):
    spec: RopeSpec
    layout: str
    mrope_section: tuple[int, ...] | None
    mrope_interleaved: bool
    reference: Rotation
    probe: Probe


class Variant(NamedTuple):
    rotation: Rotation
    detail: tuple[tuple[str, object], ...] = ()
    sentence: str | None = None  # N_()-marked; None: the class's own


class ProbeBug(NamedTuple):
    name: str
    title: str  # N_()-marked
    summary: str  # N_()-marked: the class in one sentence
    sentence: str  # N_()-marked; {where} and the variant's detail fill it in
    applies: Callable[[ProbeContext], bool]
    variants: Callable[[ProbeContext], Iterator[Variant]]
    references: tuple[str, ...]
    forms: tuple[str, ...] = ("rotated", "tables")  # what output can show this class


def _shift(offset: int) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda positions: positions + offset


def _counting_from(start: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def positions(given: torch.Tensor) -> torch.Tensor:
        counted = torch.arange(given.shape[-1], dtype=torch.float64) + start
        return counted.expand_as(given).clone()
    return positions


def _position_shift_variants(context: ProbeContext) -> Iterator[Variant]:
    for offset in (1, -1, 2):
        yield Variant(context.reference.with_(positions=_shift(offset)), (("offset", f"{offset:+d}"),))


def _positions_counted_variants(context: ProbeContext) -> Iterator[Variant]:
    for start in (0, 1):
        yield Variant(context.reference.with_(positions=_counting_from(start)), (("start", start),))


def _precision_variants(context: ProbeContext) -> Iterator[Variant]:
    for name, dtype in LOW_PRECISION.items():
        bits = round(-math.log2(torch.finfo(dtype).eps)) + 1
        yield Variant(context.reference.with_(precision=("table", dtype)),
                      (("dtype", name), ("bits", bits), ("error", float(torch.finfo(dtype).eps))))
    for name, dtype in LOW_PRECISION.items():
        exact = 2 ** (round(-math.log2(torch.finfo(dtype).eps)) + 1)
        yield Variant(context.reference.with_(precision=("angle", dtype)), (("dtype", name), ("exact", f"{exact:,}")),
                      N_("The angles m·θᵢ were computed in {dtype} (positions and θᵢ cast before the product, as when "
                         "the inv_freq buffer is cast with the model): positions above {exact} are not even "
                         "representable, so the error grows with the position; it leaves float32 tolerance at {where}."))


def _layout_variants(context: ProbeContext) -> Iterator[Variant]:
    other = "interleaved" if context.layout == "half" else "half"
    yield Variant(context.reference.with_(layout=other), (("used", other), ("expected", context.layout)))


def _partial(context: ProbeContext) -> bool:
    return context.spec.rotary_dim < context.spec.head_dim


def _whole_head_variants(context: ProbeContext) -> Iterator[Variant]:
    spec = context.spec
    try:
        whole = spec.replace(partial_rotary_factor=1.0)
        whole_theta = rope_frequencies(whole, reference_seq_len(spec, context.probe.position_ids)).inv_freq
    except ValueError:  # LongRoPE's factor lists are per rotated pair
        whole_theta = None
    detail = (("head_dim", spec.head_dim), ("rotary_dim", spec.rotary_dim))
    if whole_theta is not None:
        yield Variant(context.reference.with_(inv_freq=whole_theta.to(torch.float64)), detail)
    # the rotated pairs' θ zero-padded to the whole head, pairs then formed across the whole head
    padded = torch.zeros(spec.head_dim // 2, dtype=torch.float64)
    padded[: spec.num_pairs] = context.reference.inv_freq
    yield Variant(context.reference.with_(inv_freq=padded), detail,
                  N_("The whole head was rotated, with θᵢ zero-padded from {rotary_dim} to {head_dim} dimensions: "
                     "the padded pairs do not turn, but every pair is formed across the whole head, so the rotated "
                     "dimensions meet the wrong partners; it leaves float32 tolerance at {where}."))


def _dropped_variants(context: ProbeContext) -> Iterator[Variant]:
    yield Variant(context.reference.with_(pass_through="zero"),
                  (("head_dim", context.spec.head_dim), ("rotary_dim", context.spec.rotary_dim)))


def _has_attention_factor(context: ProbeContext) -> bool:
    return not math.isclose(context.reference.q_scale, 1.0, rel_tol=1e-9)


def _factor_detail(context: ProbeContext) -> tuple[tuple[str, object], ...]:
    return (("factor", f"{context.reference.q_scale:.6g}"),)


def _q_only_variants(context: ProbeContext) -> Iterator[Variant]:
    factor = context.reference.q_scale
    yield Variant(context.reference.with_(k_scale=1.0), _factor_detail(context))
    yield Variant(context.reference.with_(q_scale=factor * factor, k_scale=1.0), _factor_detail(context),
                  N_("q is scaled by the attention factor squared ({factor}²) and k not at all: q·k comes out right, "
                     "but the rotated q and k are not transformers' (a KV cache shared with another implementation, "
                     "or a fused kernel that scales k, goes wrong)."))


def _twice_variants(context: ProbeContext) -> Iterator[Variant]:
    factor = context.reference.q_scale
    yield Variant(context.reference.with_(q_scale=factor * factor, k_scale=factor * factor), _factor_detail(context))


def _missing_variants(context: ProbeContext) -> Iterator[Variant]:
    yield Variant(context.reference.with_(q_scale=1.0, k_scale=1.0), _factor_detail(context))


def _has_mrope(context: ProbeContext) -> bool:
    return context.mrope_section is not None


def _mrope_variants(context: ProbeContext) -> Iterator[Variant]:
    section = tuple(int(count) for count in context.mrope_section)
    pairs = context.reference.inv_freq.numel()
    detail = (("section", list(section)),)
    if sum(section) == pairs and context.layout == "half" and not context.mrope_interleaved:
        # cat(freqs, freqs) split by the doubled counts instead of by the section list repeated: the first 2·s_t
        # dimensions take time, so a pair's two dimensions can turn by different axes
        by_dimension = torch.repeat_interleave(torch.arange(3), 2 * torch.tensor(section))
        yield Variant(context.reference.with_(dim_axes=by_dimension),
                      (("how", N_("cat(freqs, freqs) split by [2·t, 2·h, 2·w] instead of by [t, h, w, t, h, w]")),
                       *detail))
    tried = [context.reference.axes]
    for axes, how in ((2 - pair_axes(section, context.mrope_interleaved),
                       N_("the sections taken in the order width, height, time")),
                      (pair_axes(section, not context.mrope_interleaved),
                       N_("alternating and block sections mixed up (Qwen3-VL's axes take turns pair by pair, "
                          "Qwen2-VL's and Qwen2.5-VL's keep one block each)")),
                      (torch.zeros(pairs, dtype=torch.long),
                       N_("the time (text) position used on every pair: height and width ignored"))):
        if axes.numel() == pairs and not any(torch.equal(axes, seen) for seen in tried):
            tried.append(axes)
            yield Variant(context.reference.with_(axes=axes), (("how", how), *detail))


PROBE_BUGS: dict[str, ProbeBug] = {bug.name: bug for bug in (
    ProbeBug("positions_shifted", N_("Positions off by one"),
             N_("The rotation uses position m ± 1 (positions counted from 1, or a cache offset off by one)."),
             N_("The output is the expected rotation at positions shifted by {offset}: q·k is unchanged when q and k "
                "shift together, but the rotated vectors, a KV cache written by another implementation and anything "
                "that reads absolute positions are not; it leaves float32 tolerance at {where}."),
             lambda context: True, _position_shift_variants, ("probe_positions",)),
    ProbeBug("positions_counted", N_("Given positions ignored"),
             N_("The rotation counts positions 0, 1, 2, … (or 1, 2, …) along the sequence instead of using the "
                "position ids it is given (a cache offset, packed sequences, M-RoPE)."),
             N_("The output is the expected rotation at positions {start}, {start} + 1, … counted along the sequence: "
                "the given position ids were ignored; it leaves float32 tolerance at {where}."),
             lambda context: True, _positions_counted_variants, ("probe_positions",)),
    ProbeBug("cos_sin_low_precision", N_("cos/sin in low precision"),
             N_("The cos/sin table (or the angles it is built from) is cached in bfloat16 or float16."),
             N_("The cos/sin table was rounded to {dtype} ({bits} significant bits: errors up to {error:.1e} of each "
                "pair's length at every position); it leaves float32 tolerance at {where}."),
             lambda context: True, _precision_variants, ("probe_cache_precision", "bug_low_precision")),
    ProbeBug("pairing_layout", N_("Wrong pairing layout"),
             N_("Dimensions are paired (2i, 2i + 1) where the checkpoint pairs (i, i + d/2), or the other way round."),
             N_("The output rotates {used} pairs where the checkpoint expects {expected} ones: every dimension turns "
                "with the wrong partner; it leaves float32 tolerance at {where}."),
             lambda context: True, _layout_variants, ("bug_pairing",), forms=("rotated",)),
    ProbeBug("partial_rotary_whole_head", N_("Unrotated dimensions rotated"),
             N_("partial_rotary_factor ignored: the whole head is rotated, not only its first dimensions."),
             N_("The whole head of {head_dim} dimensions was rotated, but partial_rotary_factor rotates only the "
                "first {rotary_dim} and passes the rest through; it leaves float32 tolerance at {where}."),
             _partial, _whole_head_variants, ("probe_partial_rotary", "bug_partial_rotary")),
    ProbeBug("partial_rotary_dropped", N_("Unrotated dimensions dropped"),
             N_("With partial_rotary_factor < 1, the dimensions RoPE does not rotate are lost instead of passed through."),
             N_("Dimensions {rotary_dim} to {head_dim} of the head came back as zeros (or not at all): the part "
                "RoPE does not rotate must be concatenated back unchanged."),
             _partial, _dropped_variants, ("probe_partial_rotary",), forms=("rotated",)),
    ProbeBug("attention_factor_q_only", N_("Attention factor on q only"),
             N_("The attention factor scales q but not k, so q·k is scaled by it once instead of squared."),
             N_("q is scaled by the attention factor {factor} and k is not: transformers multiplies cos and sin by it, "
                "so both q and k carry it and q·k is scaled by {factor}²."),
             _has_attention_factor, _q_only_variants, ("hf_rotary_apply",), forms=("rotated",)),
    ProbeBug("attention_factor_twice", N_("Attention factor applied twice"),
             N_("q and k are scaled by the attention factor squared."),
             N_("q and k are scaled by {factor}² instead of {factor}: the attention factor was applied twice."),
             _has_attention_factor, _twice_variants, ("bug_attention_factor_twice",)),
    ProbeBug("attention_factor_missing", N_("Attention factor missing"),
             N_("q and k are rotated but not scaled by the attention factor."),
             N_("q and k are rotated right but not scaled by the attention factor {factor} (transformers multiplies "
                "cos and sin by it)."),
             _has_attention_factor, _missing_variants, ("bug_attention_factor_missing",)),
    ProbeBug("mrope_sections", N_("M-RoPE sections split wrongly"),
             N_("The pairs are given their time, height and width positions by the wrong split of mrope_section."),
             N_("The output matches M-RoPE with {how} (mrope_section = {section}); it leaves float32 tolerance at "
                "{where}."),
             _has_mrope, _mrope_variants, ("probe_mrope_sections",)),
)}


# ---- the check ------------------------------------------------------------------------------------------------


class ProbeDiagnosis(NamedTuple):
    name: str  # a class of PROBE_BUGS, or "first+second" for two at once
    sentence: str  # N_()-marked template
    detail: dict
    parts: tuple[ProbeDiagnosis, ...] = ()  # the two diagnoses of two bugs at once


class ProbeReport(NamedTuple):
    verdict: str  # "match" or "mismatch"
    form: str  # "rotated" or "tables"
    positions: torch.Tensor  # [tokens]: each token's position (the time axis for M-RoPE)
    error: torch.Tensor  # [tokens]: largest error against the reference, relative to the input's size
    ratio: torch.Tensor  # [tokens]: largest error / tolerance (≤ 1 within float32 tolerance)
    tolerance: torch.Tensor  # [tokens]: the tolerance of the value with the largest error, relative like error
    first_part: int | None  # the first token whose ratio exceeds 1
    diagnosis: tuple[ProbeDiagnosis, ...]
    note: str | None  # how cos/sin tables were read (N_()-marked)
    output_order: str  # "same" or "half": a correct interleaved rotation written out half-split


def context_for(spec: RopeSpec, layout: str, mrope_section: tuple[int, ...] | None = None,
                mrope_interleaved: bool = False, probe: Probe | None = None) -> ProbeContext:
    probe = probe if probe is not None else make_probe(spec, mrope_section)
    reference = reference_rotation(spec, layout, mrope_section, mrope_interleaved, probe.position_ids)
    return ProbeContext(spec, layout, mrope_section, mrope_interleaved, reference, probe)


def expected_output(context: ProbeContext, rotation: Rotation | None = None) -> tuple[Rotated, Rotated]:
    """The rotated q and k of ``rotation`` (default: the reference) on the probe."""
    rotation = rotation or context.reference
    probe = context.probe
    return (rotate(rotation, probe.q, probe.position_ids, rotation.q_scale),
            rotate(rotation, probe.k, probe.position_ids, rotation.k_scale))


def expected_tables(context: ProbeContext, rotation: Rotation | None = None) -> tuple[Rotated, Rotated]:
    """cos and sin per (token, pair) [tokens, pairs] of ``rotation``, with their tolerance (batch 0)."""
    rotation = rotation or context.reference
    cos, sin = pair_tables(rotation, context.probe.position_ids)
    angle = angles(rotation, context.probe.position_ids)
    tolerance = tolerance_of(rotation, angle, rotation.inv_freq) * abs(rotation.q_scale)
    return Rotated(cos[0], tolerance[0]), Rotated(sin[0], tolerance[0])


def _compare(context: ProbeContext, output: PortOutput, rotation: Rotation) -> tuple[bool, torch.Tensor, torch.Tensor]:
    """(within tolerance everywhere, |error| per value, tolerance per value) for both tensors, stacked."""
    if output.form == "rotated":
        first, second = expected_output(context, rotation)
    else:
        first, second = expected_tables(context, rotation)
        if output.first.shape != first.values.shape:
            size = torch.full((2, *output.first.shape), float("inf"), dtype=torch.float64)
            return False, size, torch.ones_like(size)
    error = torch.stack([(output.first - first.values).abs(), (output.second - second.values).abs()])
    tolerance = torch.stack([first.tolerance, second.tolerance])
    return bool((error <= tolerance).all()), error, tolerance


def _per_token(context: ProbeContext, output: PortOutput, error: torch.Tensor, tolerance: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per token: the largest error relative to the input's size, its ratio to the tolerance, and the tolerance."""
    if output.form == "rotated":
        size = torch.stack([context.probe.q, context.probe.k]).to(torch.float64)
        size = size.pow(2).mean(-1, keepdim=True).sqrt()  # [2, batch, heads, tokens, 1]
        relative, allowed = error / size, tolerance / size
        relative = relative.permute(3, 0, 1, 2, 4).reshape(relative.shape[3], -1)
        allowed = allowed.permute(3, 0, 1, 2, 4).reshape(allowed.shape[3], -1)
    else:
        scale = abs(context.reference.q_scale)
        relative = (error / scale).permute(1, 0, 2).reshape(error.shape[1], -1)
        allowed = (tolerance / scale).permute(1, 0, 2).reshape(tolerance.shape[1], -1)
    ratio = relative / allowed.clamp_min(1e-300)
    largest = relative.argmax(-1, keepdim=True)  # the tolerance drawn beside an error is that value's own
    return relative.max(-1).values, ratio.max(-1).values, allowed.gather(-1, largest)[:, 0]


def check_rotation(spec: RopeSpec, layout: str, tensors: Mapping[str, torch.Tensor],
                   mrope_section: tuple[int, ...] | None = None, mrope_interleaved: bool = False,
                   probe: Probe | None = None) -> ProbeReport:
    """Compare a port's output on the probe (rotated q/k or cos/sin) with the reference rotation, and diagnose."""
    context = context_for(spec, layout, mrope_section, mrope_interleaved, probe)
    output = port_output(tensors, context.probe, spec)
    if not bool(torch.isfinite(output.first).all() and torch.isfinite(output.second).all()):
        raise ValueError(_("The port's output holds NaN or infinite values."))
    orders = ["same"] + (["half"] if layout == "interleaved" and output.form == "rotated" else [])
    compared = {order: _compare(context, output, context.reference.with_(output=order)) for order in orders}
    order = next((o for o in orders if compared[o][0]), "same")
    matched, error, tolerance = compared[order]
    reference = context.reference.with_(output=order)
    relative, ratio, allowed = _per_token(context, output, error, tolerance)
    first_part = next((i for i, value in enumerate(ratio.tolist()) if value > 1), None)
    diagnosis = () if matched else _diagnose(context._replace(reference=reference), output, first_part)
    positions = context.probe.position_ids[0] if context.probe.position_ids.dim() == 3 else context.probe.position_ids
    return ProbeReport("match" if matched else "mismatch", output.form, positions[0].clone(), relative, ratio,
                       allowed, first_part, diagnosis, output.note, order)


def check_kind(kind, tensors: Mapping[str, torch.Tensor], probe: Probe | None = None) -> ProbeReport:
    """``check_rotation`` for one kind of layer of ``pe_core.config.layer_map`` (its spec, layout and sections)."""
    return check_rotation(kind.spec, kind.layout, tensors, kind.mrope_section, kind.mrope_interleaved, probe)


def probe_for(kind, seed: int = 0) -> Probe:
    return make_probe(kind.spec, kind.mrope_section, seed)


CORRECT = "correct"
# which of a class's broken rotations the examples show: the angles in bfloat16, whose error grows with position
_EXAMPLE_VARIANT = {"cos_sin_low_precision": -1}


def example_output(kind, name: str) -> dict[str, torch.Tensor] | None:
    """What a port with bug class ``name`` (or ``CORRECT``) hands back on the probe: float32 rotated q and k;
    None when the class cannot occur for this kind of layer."""
    context = context_for(kind.spec, kind.layout, kind.mrope_section, kind.mrope_interleaved)
    rotation = context.reference
    if name != CORRECT:
        bug = PROBE_BUGS[name]
        if not bug.applies(context):
            return None
        rotation = list(bug.variants(context))[_EXAMPLE_VARIANT.get(name, 0)].rotation
    q, k = expected_output(context, rotation)
    return {"q": q.values.to(torch.float32), "k": k.values.to(torch.float32)}


def _diagnose(context: ProbeContext, output: PortOutput, first_part: int | None) -> tuple[ProbeDiagnosis, ...]:
    """Every bug class one of whose broken rotations reproduces the output; if none does, every pair of classes
    whose changes combine (positions shifted and cos/sin in bfloat16, say), each pair listed with both causes."""
    found, tried = [], []
    for name, bug in PROBE_BUGS.items():
        if output.form not in bug.forms or not bug.applies(context):
            continue
        variants = list(bug.variants(context))
        tried.append((name, bug, variants))
        for variant in variants:
            if _compare(context, output, variant.rotation)[0]:
                found.append(_diagnosis(name, bug, variant))
                break
    if found:
        return tuple(found)
    for index, (first_name, first_bug, first_variants) in enumerate(tried):
        for second_name, second_bug, second_variants in tried[index + 1:]:
            match = next(((one, two) for one in first_variants for two in second_variants
                          if (rotation := _combined(context.reference, one, two)) is not None
                          and _compare(context, output, rotation)[0]), None)
            if match is not None:
                parts = (_diagnosis(first_name, first_bug, match[0]), _diagnosis(second_name, second_bug, match[1]))
                found.append(ProbeDiagnosis(f"{first_name}+{second_name}", PAIR_SENTENCE, {}, parts))
    return tuple(found)


PAIR_SENTENCE = N_("Two bugs at once. {first} {second}")


def _diagnosis(name: str, bug: ProbeBug, variant: Variant) -> ProbeDiagnosis:
    return ProbeDiagnosis(name, variant.sentence or bug.sentence, dict(variant.detail))


def _same(one, two) -> bool:
    if isinstance(one, torch.Tensor) or isinstance(two, torch.Tensor):
        return isinstance(one, torch.Tensor) and isinstance(two, torch.Tensor) and one.shape == two.shape \
            and bool(torch.equal(one, two))
    return one is two or one == two


def _combined(reference: Rotation, first: Variant, second: Variant) -> Rotation | None:
    """The rotation with both variants' changes, or None where they change the same field (two answers to one
    question: no port makes both)."""
    changes = []
    for variant in (first, second):
        changes.append({field: getattr(variant.rotation, field) for field in Rotation._fields
                        if not _same(getattr(variant.rotation, field), getattr(reference, field))})
    if set(changes[0]) & set(changes[1]):
        return None
    return reference.with_(**changes[0], **changes[1])


def diagnosis_title(name: str) -> str:
    """A diagnosis's title in the reader's language ("A + B" for two bugs at once)."""
    return diagnosis_title_in(PROBE_BUGS, name)


def diagnosis_references(name: str) -> tuple[str, ...]:
    return diagnosis_references_in(PROBE_BUGS, name)


# ---- words ----------------------------------------------------------------------------------------------------


def where_text(report: ProbeReport) -> str:
    if report.first_part is None:
        return _("no token (the output agrees)")
    position = int(report.positions[report.first_part])
    return _("token {index} (position {position:,})").format(index=report.first_part, position=position)


def explain(report: ProbeReport, diagnosis: ProbeDiagnosis) -> str:
    """The diagnosis's sentence, in the current language."""
    if diagnosis.parts:
        first, second = (explain(report, part) for part in diagnosis.parts)
        return _(diagnosis.sentence).format(first=first, second=second)
    detail = {key: _(value) if isinstance(value, str) and key in ("how",) else value
              for key, value in diagnosis.detail.items()}
    for key in ("used", "expected"):
        if key in detail:
            detail[key] = _(LAYOUT_WORDS[detail[key]])
    return _(diagnosis.sentence).format(where=where_text(report), **detail)


LAYOUT_WORDS = {"half": N_("half-split (i, i + d/2)"), "interleaved": N_("interleaved (2i, 2i + 1)")}


def report_json(report: ProbeReport) -> dict:
    return {
        "verdict": report.verdict,
        "form": report.form,
        "output_order": report.output_order,
        "first_part": report.first_part,
        "first_part_position": None if report.first_part is None else int(report.positions[report.first_part]),
        "diagnosis": [d.name for d in report.diagnosis],
        "explanations": {d.name: explain(report, d) for d in report.diagnosis},
        "tokens": [{"position": int(p), "error": float(e), "tolerance": float(t), "ok": float(r) <= 1}
                   for p, e, t, r in zip(report.positions, report.error, report.tolerance, report.ratio, strict=True)],
    }


def report_text(report: ProbeReport, spec: RopeSpec) -> str:
    lines = [f"Rotation probe: {spec.rotary_dim} of {spec.head_dim} dimensions rotated, {len(report.positions)} "
             f"tokens at positions {int(report.positions[0])} … {int(report.positions[-1]):,}; read as "
             + ("rotated q and k" if report.form == "rotated" else "cos/sin tables")
             + (f" ({_(report.note)})" if report.note else "") + "."]
    worst = float(report.error.max())
    lines.append(f"Verdict: {'MATCH' if report.verdict == 'match' else 'MISMATCH'} (largest error {worst:.3g} of the "
                 f"input's size; float32 tolerance 8·ε₃₂·(1 + (1 + |ln θ|)·|m·θ|))")
    if report.output_order == "half":
        lines.append("The output is written half-split (pair i at dimensions i and i + d/2), as transformers' "
                     "apply_rotary_pos_emb_interleave writes it; q·k is the same.")
    if report.verdict == "mismatch":
        if report.diagnosis:
            for diagnosis in report.diagnosis:
                lines.append(f"Diagnosis: {diagnosis.name}: {explain(report, diagnosis)}")
        else:
            lines.append(f"Diagnosis: no single known bug reproduces this output; it leaves float32 tolerance at "
                         f"{where_text(report)}.")
        lines.append(f"{'token':>6} {'position':>10} {'error':>10} {'tolerance':>10}")
        for index in range(len(report.positions)):
            if report.first_part is not None and index >= report.first_part - 2 and index < report.first_part + 6:
                lines.append(f"{index:>6} {int(report.positions[index]):>10,} {float(report.error[index]):>10.2e} "
                             f"{float(report.tolerance[index]):>10.2e}")
    return "\n".join(lines)
