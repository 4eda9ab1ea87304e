"""Plan a context extension: for a model and a target length L′, each method's parameters, the base
the length needs (Men et al. 2024), what each method leaves unseen, and the whole patched config.json.

A model is planned layer type by layer type (``pe_core.config.layer_map``): the plan scales the layers that
context extension scales (``LayerMap.default_kind``: Gemma 3's full-attention layers, say) and says why each
other kind needs nothing - a sliding window never meets a distance longer than itself, a NoPE or
linear-attention layer has no RoPE - or, where the model keeps one RoPE for every layer (gpt-oss), that the
block changes those too.

The planned layers' pretraining RoPE is plain RoPE with their base b, rotary dimensions d and training
length L (``original_max_position_embeddings`` for a scaled config, ``max_position_embeddings`` otherwise);
s = L′/L. Scaling the model already ships composes with the plan: every block scales the same L by s in
total (Gemma 3 ships linear ×8 on L = 16,384; L′ = 524,288 is ×32 in total, ×4 more), and the first row,
direct extrapolation, keeps the shipped RoPE as it is.

Each method's config is the whole config.json the reader started from, in the model's own schema: the text
model's keys stay where the model nests them (``text_config``), ``rope_parameters`` are written per layer type
where the model's class reads them per layer type (every layer type's block explicit: the unchanged ones as
the class read them), and a block is never ``null`` (gpt-oss's class reads a missing block as its built-in
YaRN ×32). Two generations of keys: ``rope_parameters`` (transformers ≥ 5) and ``rope_theta`` +
``rope_scaling`` for older readers, where those keys can say it. The tests load every config into the
model's own transformers config and rotary classes and compare θ layer type by layer type.

"Unseen" compares with the angles pretraining produced: pair i saw the arc [0, L·θᵢ] (all of the
circle once L·θᵢ ≥ 2π, the YaRN paper's convention, §3.2). At L′ a position m is unseen for pair i
when m·θ′ᵢ mod 2π lies beyond that arc. The share of pairs counts pairs with any unseen position;
the share of angles counts (position, pair) angles over all L′ positions and all pairs, exactly.
"""

from __future__ import annotations

import copy

if __name__ == "__main__":  # --help and a bad argument are answered before torch is imported
    from pe_core.cli_args import plan_parser

    plan_parser().parse_args()

import json
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.base_bound import base_lower_bound, first_negative_distance
from pe_core.cli_args import MAX_TARGET, TARGET_CEILING
from pe_core.config import extended_length_of, layer_map, text_config_of
from pe_core.layers import (
    CHUNKED,
    SLIDING,
    LayerKind,
    LayerMap,
    notes_of,
    untyped_blocks,
    untyped_layer_types,
)
from pe_core.rope import (
    RopeSpec,
    canonical_rope_type,
    check_length,
    default_inv_freq,
    dynamic_ntk_base,
    exponent_width,
    ntk_aware_base,
    rope_frequencies,
    rope_type_entry,
)

PLAN_METHODS = ("direct", "pi", "ntk", "dynamic", "yarn", "llama3", "abf")
# Gemma 4's proportional RoPE takes a base and a factor, so a base change (NTK-aware, ABF) and Position
# Interpolation can be written in it; transformers' dynamic NTK, YaRN and Llama-3 compute θ for the rotated
# dimensions only, while Gemma 4's attention takes cos and sin as wide as the whole head.
PROPORTIONAL_METHODS = ("direct", "pi", "ntk", "abf")
UNAVAILABLE = N_("Not offered for these layers: {methods}. Their proportional RoPE takes only a base and a factor, and "
                 "transformers' dynamic NTK, YaRN and Llama-3 compute θ for the rotated dimensions alone, while this "
                 "model's attention needs cos and sin as wide as the whole head.")
PLAN_TITLES = {
    "direct": N_("Direct extrapolation"), "pi": N_("Position Interpolation"), "ntk": N_("NTK-aware"),
    "dynamic": N_("Dynamic NTK"), "yarn": N_("YaRN"), "llama3": N_("Llama-3 scaling"), "abf": N_("Base change (ABF)"),
}
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0
LLAMA3_LOW, LLAMA3_HIGH = 1.0, 4.0
_ROPE_KEYS = ("rope_scaling", "rope_parameters", "rope_theta")
# Keys of a block that say how the model lays out its rotary pairs, not how it scales: a planned block keeps them.
_LAYOUT_KEYS = ("mrope_section", "mrope_interleaved", "partial_rotary_factor")
# What a shipped YaRN block says that a planned YaRN block keeps.
_YARN_KEPT = ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim")


class Schema(NamedTuple):
    """How a model's config class is written to (read off its own class by ``pe_core.config.layer_map``)."""

    per_layer_type: bool = False  # rope_parameters keyed by layer type; a flat block would be ignored
    legacy: bool = True  # older readers' keys (rope_theta, rope_scaling) can say the whole RoPE
    local_theta_key: str | None = None  # older readers' key for the sliding layers' base


# Layers a plan leaves alone, and why; or changes, and why (N_(); {span} is the window or chunk in tokens,
# {planned} the planned layers' type).
REASONS = {
    "scaled": N_("changed: they attend over the whole context, so they meet every distance up to L′."),
    "scaled_bounded": N_("changed, as the model's own scaling is on them; but they attend within {span:,} tokens, "
                         "so they never meet a longer distance, whatever L′."),
    "shared": N_("changed too: this model keeps one RoPE for all its layers. They attend within {span:,} tokens, "
                 "so they never meet a longer distance and would need no change."),
    "shared_full": N_("changed too: this model keeps one RoPE for all its layers."),
    "window": N_("unchanged: they attend within {span:,} tokens, so they never meet a longer distance, whatever "
                 "L′; they keep their own RoPE."),
    "nope": N_("unchanged: no position encoding (NoPE), so there is no RoPE to change."),
    "linear": N_("unchanged: linear attention encodes no positions."),
    "other": N_("unchanged: the plan scales the {planned} layers only; these keep their own RoPE."),
}


class Layout(NamedTuple):
    """Where a model's config keeps its RoPE, and each layer type's block as the model's class reads it."""

    where: str | None  # the key the text model's config sits under (text_config, ...), or None
    schema: Schema
    blocks: dict  # layer type -> its block as the class reads it (explicit: rope_type and rope_theta, never null)
    shipped_v5: bool  # the config already says rope_parameters (transformers ≥ 5) rather than rope_scaling


class LayerNote(NamedTuple):
    """One kind of layer and what the plan does to it."""

    kind: LayerKind
    changed: bool
    reason: str  # a key of REASONS

    def text(self, planned: str) -> str:
        return _(REASONS[self.reason]).format(span=self.kind.span or 0, planned=planned)


class MethodPlan(NamedTuple):
    method: str
    title: str  # N_()
    spec: RopeSpec  # what our engine evaluates for the planned layers
    seq_len: int  # the length it is evaluated at (dynamic NTK depends on it)
    inv_freq: torch.Tensor  # θ′ at L′
    attention_factor: float
    parameters: dict  # name -> value, for the table (numbers, or the bands as text)
    rope: dict  # the planned layers' block (rope_type, rope_theta, and the method's keys)
    max_positions: int  # the config's max_position_embeddings
    config: dict  # the whole patched config.json, keys for transformers ≥ 5 (rope_parameters)
    legacy_config: dict | None  # the same with older readers' keys (rope_theta + rope_scaling); None: they cannot say it
    unseen_pairs: float  # share of rotated pairs with angles pretraining never produced at L′
    unseen_angles: float  # share of (position, pair) angles at L′ that pretraining never produced
    first_negative: int | None  # first distance m < L′ where Σᵢ cos(m·θ′ᵢ) < 0 (Men et al.'s criterion), or None


class Plan(NamedTuple):
    config: dict
    spec: RopeSpec  # the planned layers' RoPE as the model ships it
    train_spec: RopeSpec  # its pretraining RoPE (plain, base b, length L)
    train_length: int  # L
    target: int  # L′
    base_bound: float | None  # b*(L′): None when any base works (half or more pairs unrotated)
    train_bound: float | None  # b*(L), for comparison with the model's own base
    methods: tuple[MethodPlan, ...]
    built_for: int  # the length the model's config is built for as shipped (pe_core.config.extended_length)
    planned: LayerKind  # the layers the plan scales
    layers: tuple[LayerNote, ...]  # every kind of layer, changed or not, and why (in layer_map's order)
    layout: Layout
    layer_map: LayerMap
    unavailable: tuple[str, ...] = ()  # methods no rope type of transformers writes for these layers (UNAVAILABLE)
    # (method, why) for blocks the model's own classes did not read back as planned: not offered
    not_offered: tuple[tuple[str, str], ...] = ()

    @property
    def scale(self) -> float:
        return self.target / self.train_length

    @property
    def shipped_factor(self) -> float:
        """The factor of the scaling the model ships on the planned layers (1 for plain RoPE)."""
        return self.spec.factor if rope_type_entry(self.spec.rope_type).extends else 1.0

    @property
    def changed_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(note.kind.layer_type for note in self.layers if note.changed))

    def method(self, name: str) -> MethodPlan:
        return next(m for m in self.methods if m.method == name)


def unrotated_pairs(spec: RopeSpec) -> int:
    return spec.head_dim // 2 - spec.num_pairs


def round_up(value: float, digits: int = 2) -> float:
    """``value`` rounded up to ``digits`` significant figures (an ABF base to write down)."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / scale - 1e-9) * scale


def abf_base(train_base: float, bound: float | None, target: int, rotary_dim: int, constant_pairs: int = 0) -> float:
    """The base to suggest for continued training at L′ (ABF): the model's own if it already satisfies Men et
    al.'s inequality at L′, else the first two-significant-figure base ≥ b*(L′) that does (the set of valid
    bases has gaps, so rounding b* up can land in one)."""
    from pe_core.base_bound import criterion_holds

    if bound is None or not math.isfinite(bound) or criterion_holds(train_base, target, rotary_dim, constant_pairs):
        return train_base
    candidate = round_up(bound)
    for _try in range(200):
        if criterion_holds(candidate, target, rotary_dim, constant_pairs):
            return candidate
        scale = 10 ** (math.floor(math.log10(candidate)) - 1)
        candidate = round_up(candidate + scale)
    return bound


def unseen_shares(train_inv_freq: torch.Tensor, train_length: int, inv_freq: torch.Tensor,
                  target: int) -> tuple[float, float, torch.Tensor]:
    """(share of pairs, share of (position, pair) angles, unseen positions per pair) at L′.

    Pair i saw the arc [0, L·θᵢ] in pretraining (the whole circle if L·θᵢ ≥ 2π); position m < L′ is
    unseen when m·θ′ᵢ mod 2π > L·θᵢ. Counted exactly turn by turn: in turn k the unseen positions are
    the integers m with 2πk + L·θᵢ < m·θ′ᵢ < 2π(k + 1).
    """
    check_length("train_length", train_length)
    check_length("target", target)
    seen_arc = train_length * train_inv_freq.to(torch.float64)
    theta = inv_freq.to(torch.float64)
    counts = torch.zeros_like(theta)
    partial = (seen_arc < 2 * math.pi) & (theta > 0)
    if bool(partial.any()):
        arc, step = seen_arc[partial], theta[partial]
        turns = int(math.ceil(float((target * step).max()) / (2 * math.pi))) + 1
        k = torch.arange(turns, dtype=torch.float64).unsqueeze(1)
        low = (2 * math.pi * k + arc) / step  # strictly above: positions m > low
        high = 2 * math.pi * (k + 1) / step  # strictly below: m < high
        first = torch.floor(low) + 1
        last = torch.minimum(torch.ceil(high) - 1, torch.tensor(float(target - 1), dtype=torch.float64))
        counts[partial] = (last - first + 1).clamp_min(0).sum(0)
    pairs = float((counts > 0).double().mean())
    angles = float(counts.sum() / (target * theta.numel()))
    return pairs, angles, counts


def model_layout(config: Mapping, layers: LayerMap | None = None) -> Layout:
    """Where ``config`` keeps its RoPE and each layer type's block as the model's class reads it (``layers``: its
    layer map, when already read)."""
    layers = layer_map(config) if layers is None else layers
    if layers.class_blocks is not None:
        return _layout_of_its_own_class(config, layers)
    text, where = text_config_of(config)
    values = dict(text)
    if values.get("layer_types") is None and not isinstance(values.get("num_hidden_layers"), int):
        values["num_hidden_layers"] = 1  # one block serves every layer of a config without a model type
    layer_types = untyped_layer_types(values)
    blocks = {}
    for layer_type, block in untyped_blocks(values, layer_types).items():
        block = copy.deepcopy(dict(block or {}))
        name = block.pop("type", None)
        block.setdefault("rope_type", name or "default")
        block["rope_type"] = canonical_rope_type(block["rope_type"])
        block.setdefault("rope_theta", values.get("rope_theta", 10_000.0))
        blocks[layer_type] = block
    given = text.get("rope_parameters")
    nested = isinstance(given, Mapping) and any(key in layer_types for key in given)
    schema = Schema(per_layer_type=True, legacy=False) if nested else Schema()
    return Layout(where, schema, blocks, given is not None)


def _layout_of_its_own_class(config: Mapping, layers: LayerMap) -> Layout:
    """The layout of a config read by its model's own classes: their standardised blocks, one per layer type
    where the class keys them by layer type (MiMo-V2-Flash's class refuses a flat block), written as
    rope_parameters only (older readers' keys are not what such a class reads)."""
    text, where = text_config_of(config)
    blocks = {}
    for layer_type, block in layers.class_blocks.items():
        block = copy.deepcopy(dict(block))
        block.setdefault("rope_type", "default")
        blocks[layer_type] = block
    # a class with one block for every layer also reads older readers' keys (rope_theta + rope_scaling); a
    # per-layer-type one only where older readers had a key for the sliding layers' base (Gemma 3)
    older = notes_of(layers.text_model_type).older_local_theta_key
    schema = Schema(per_layer_type=layers.blocks_per_layer_type,
                    legacy=not layers.blocks_per_layer_type or older is not None, local_theta_key=older)
    return Layout(where, schema, blocks, text.get("rope_parameters") is not None)


def round_trip(whole: Mapping, layer_type: str, expected: RopeSpec, seq_len: int) -> str | None:
    """Read a planned config.json back through the model's own classes: None when its ``layer_type`` layers get
    ``expected``'s θᵢ and attention factor, else why not (the class refused it, or builds other numbers)."""
    try:
        back = layer_map(whole)
        kind = back.kind(layer_type)
    except ValueError as err:
        return str(err)
    if kind.spec is None:
        return _("the class reads these layers as NoPE")
    if back.disagreements:
        return "; ".join(text for _type, text in back.disagreements)
    ours, theirs = rope_frequencies(expected, seq_len), rope_frequencies(kind.spec, seq_len)
    if ours.inv_freq.shape != theirs.inv_freq.shape or not torch.allclose(ours.inv_freq, theirs.inv_freq, rtol=2e-6, atol=0):
        return _("the class builds other θᵢ for these layers")
    if not math.isclose(ours.attention_factor, theirs.attention_factor, rel_tol=1e-6):
        return _("the class builds attention factor {theirs:.6g}, not {ours:.6g}").format(
            theirs=theirs.attention_factor, ours=ours.attention_factor)
    return None


def patched_config(config: Mapping, layout: Layout, changed: Sequence[str], rope: Mapping, max_positions: int,
                   legacy: bool = False, head_dim: int | None = None) -> dict:
    """The whole config.json with ``rope`` on the ``changed`` layer types, in the model's own schema.

    Every RoPE key the model's class reads (rope_theta, rope_scaling, rope_parameters, the sliding layers'
    base) is written anew; the rest of the file stays as it was, the text model's part where the model nests it.
    ``head_dim`` is written when the file leaves it out: transformers' YaRN and dynamic NTK read
    ``getattr(config, "head_dim", hidden_size // num_attention_heads)``, which is None in a class that stores
    a missing head_dim as None (MixtralConfig), and fail.
    """
    text = dict(config[layout.where]) if layout.where else dict(config)
    schema = layout.schema
    if head_dim is not None and text.get("head_dim") is None:
        text["head_dim"] = head_dim
    for key in (*_ROPE_KEYS, schema.local_theta_key):
        text.pop(key, None)
    text["max_position_embeddings"] = max_positions
    rope = dict(rope)
    if "original_max_position_embeddings" in text and "original_max_position_embeddings" in rope:
        text["original_max_position_embeddings"] = rope["original_max_position_embeddings"]  # Phi-3's wins there
    if legacy:
        if not schema.legacy:
            raise ValueError(_("Older readers' keys cannot say this model's RoPE; use rope_parameters."))
        partial = rope.pop("partial_rotary_factor", None)
        if partial is not None:
            text["partial_rotary_factor"] = partial
        text["rope_theta"] = rope.pop("rope_theta")
        text["rope_scaling"] = rope  # explicit, never null: {"rope_type": "default"} for plain RoPE
        if schema.local_theta_key:
            text[schema.local_theta_key] = layout.blocks[SLIDING]["rope_theta"]
    elif schema.per_layer_type:
        text["rope_parameters"] = {layer_type: dict(rope) if layer_type in changed else copy.deepcopy(block)
                                   for layer_type, block in layout.blocks.items()}
    else:
        text["rope_parameters"] = rope
    if layout.where:
        return {**config, layout.where: text}
    return text


def _layer_notes(kinds: Sequence[LayerKind], planned: LayerKind, schema: Schema) -> tuple[LayerNote, ...]:
    """Each kind of layer, whether the planned block reaches it, and why."""
    notes = []
    for kind in kinds:
        bounded = _bounded(kind)
        if not kind.has_rope:
            reason, changed = ("linear" if kind.span_kind == "linear" else "nope"), False
        elif kind is planned:
            reason, changed = ("scaled_bounded" if bounded else "scaled"), True
        elif not schema.per_layer_type:
            reason, changed = ("shared" if bounded else "shared_full"), True
        else:
            reason, changed = ("window" if bounded else "other"), False
        notes.append(LayerNote(kind, changed, reason))
    return tuple(notes)


def _bounded(kind: LayerKind) -> bool:
    """Does this kind attend within a window or chunk (never meeting a longer distance)?"""
    return kind.span is not None and kind.layer_type in (SLIDING, CHUNKED)


def planned_kind(layers: LayerMap) -> LayerKind:
    """The layers a plan scales: those context extension scales (``LayerMap.default_kind``), or of the kinds that
    share their RoPE, one that attends over the whole context (gpt-oss: its full-attention layers, not its windows)."""
    default = layers.default_kind
    if _bounded(default):
        for kind in layers.rotary_kinds:
            if not _bounded(kind) and kind.spec == default.spec:
                return kind
    return default


def plain_base(spec: RopeSpec) -> float:
    """The base of plain RoPE on the rotated dimensions that gives ``spec``'s θᵢ: its own, or for Gemma 4's
    proportional RoPE (θᵢ = b^(−2i/h) on the first r/2 pairs of an h-dimension head) b^(r/h)."""
    return spec.base ** (spec.rotary_dim / exponent_width(spec))


def as_proportional(rope: Mapping, shipped: RopeSpec) -> dict:
    """A plain-RoPE block (plain or linear, on the rotated dimensions) written as proportional RoPE: the base
    b′^(h/r) gives the same θᵢ, and proportional RoPE divides them by its factor as linear scaling does."""
    same_base = rope["rope_theta"] == plain_base(shipped)  # written as shipped, not as a round trip through b^(r/h)
    base = shipped.base if same_base else rope["rope_theta"] ** (shipped.head_dim / shipped.rotary_dim)
    block = {"rope_type": "proportional", "rope_theta": base, "partial_rotary_factor": shipped.partial_rotary_factor}
    if rope["rope_type"] == "linear":
        block["factor"] = rope["factor"]
    return block


def _rope(rope_type: str, base: float, carried: Mapping, **scaling) -> dict:
    return {"rope_type": rope_type, "rope_theta": base, **scaling, **carried}


def dynamic_base(spec: RopeSpec, length: int) -> float:
    """The base transformers' dynamic NTK uses at a sequence of ``length``: b·(s·l/L − (s − 1))^(d/(d−2)), l ≥ L."""
    return dynamic_ntk_base(spec.base, spec.factor, spec.rotary_dim, spec.original_max_position_embeddings, length)


def _method(name: str, train: RopeSpec, target: int, abf_base: float, shipped: RopeSpec, shipped_rope: dict,
            shipped_max: int, carried: Mapping) -> tuple[RopeSpec, dict, dict, int]:
    """(spec, parameters for the table, the planned layers' block, max_position_embeddings) for one method."""
    L, s, b, d = train.original_max_position_embeddings, target / train.original_max_position_embeddings, \
        train.base, train.rotary_dim
    if name == "direct":
        # the model as it ships: its own RoPE, scaling included, run at L′ (dynamic NTK keeps its L)
        parameters = {"base": b}
        if rope_type_entry(shipped.rope_type).extends:
            parameters["shipped_factor"] = shipped.factor
        # a shipped scaling derives its factor or lengths from max_position_embeddings (LongRoPE's attention
        # factor, YaRN's implicit factor, dynamic NTK's L): its config stays as it ships
        return shipped, parameters, dict(shipped_rope), shipped_max if shipped.rope_type != "default" else target
    if name == "pi":
        return (train.replace(rope_type="linear", factor=s), {"factor": s},
                _rope("linear", b, carried, factor=s), target)
    if name == "ntk":
        new_base = ntk_aware_base(b, s, d)
        return train.replace(base=new_base), {"factor": s, "base": new_base}, _rope("default", new_base, carried), target
    if name == "dynamic":
        # factor 1: at length l the base is b·(l/L)^(d/(d−2)), static NTK for s = l/L; max_position_embeddings
        # must stay L, which transformers' dynamic NTK reads as the pretraining length
        spec = train.replace(rope_type="dynamic", factor=1.0)
        return (spec, {"factor": 1.0, "base_at_target": dynamic_base(spec, target),
                       "base_at_target_factor_s": dynamic_base(train.replace(rope_type="dynamic", factor=s), target)},
                _rope("dynamic", b, carried, factor=1.0), L)
    if name == "yarn":
        # a model that ships YaRN keeps its own β values and attention factor (Laguna's β_fast 64, say): they
        # are what it was trained or tuned with
        kept = {key: shipped_rope[key] for key in _YARN_KEPT if shipped.rope_type == "yarn" and
                shipped_rope.get(key) is not None}
        beta_fast, beta_slow = float(kept.get("beta_fast", YARN_BETA_FAST)), float(kept.get("beta_slow", YARN_BETA_SLOW))
        extra = {key: float(value) for key, value in kept.items() if key not in ("beta_fast", "beta_slow")}
        spec = train.replace(rope_type="yarn", factor=s, beta_fast=beta_fast, beta_slow=beta_slow, **extra)
        rope = _rope("yarn", b, carried, factor=s, original_max_position_embeddings=L, beta_fast=beta_fast,
                     beta_slow=beta_slow, **extra)
        return spec, {"factor": s, "beta_fast": beta_fast, "beta_slow": beta_slow,
                      "attention_factor": rope_frequencies(spec).attention_factor}, rope, target
    if name == "llama3":
        spec = train.replace(rope_type="llama3", factor=s, low_freq_factor=LLAMA3_LOW, high_freq_factor=LLAMA3_HIGH)
        wavelength = 2 * math.pi / default_inv_freq(b, d)
        kept = int((wavelength < L / LLAMA3_HIGH).sum())
        divided = int((wavelength > L / LLAMA3_LOW).sum())
        rope = _rope("llama3", b, carried, factor=s, low_freq_factor=LLAMA3_LOW, high_freq_factor=LLAMA3_HIGH,
                     original_max_position_embeddings=L)
        return spec, {"factor": s, "low_freq_factor": LLAMA3_LOW, "high_freq_factor": LLAMA3_HIGH,
                      "kept_pairs": kept, "smoothed_pairs": train.num_pairs - kept - divided,
                      "divided_pairs": divided}, rope, target
    if name == "abf":
        return train.replace(base=abf_base), {"base": abf_base}, _rope("default", abf_base, carried), target
    raise ValueError(f"method must be one of {', '.join(PLAN_METHODS)} (got {name!r}).")


def check_limit(max_target: int) -> int:
    """The limit on targets, checked: an integer from 2 up to ``TARGET_CEILING``."""
    if isinstance(max_target, bool) or not isinstance(max_target, int) or not 2 <= max_target <= TARGET_CEILING:
        raise ValueError(_("The limit on target lengths goes up to {ceiling:,} tokens (got {limit!r}); a plan's time "
                           "grows with L′.").format(ceiling=TARGET_CEILING, limit=max_target))
    return max_target


def plan(config: Mapping, target: int, *, methods: Sequence[str] = PLAN_METHODS, with_bound: bool = True,
         max_target: int = MAX_TARGET) -> Plan:
    """The plan for running ``config``'s model at ``target`` tokens (at most ``max_target``)."""
    check_length("target", target)
    check_limit(max_target)
    layers = layer_map(config)
    planned = planned_kind(layers)
    spec = planned.spec
    proportional = rope_type_entry(spec.rope_type).whole_head_exponent
    if proportional:
        methods = [name for name in methods if name in PROPORTIONAL_METHODS]
    L = spec.original_max_position_embeddings
    if target <= L:
        raise ValueError(_("The target length must exceed the training length L = {length:,} (got {target:,}).")
                         .format(length=L, target=target))
    if target > max_target:
        raise ValueError(_("L′ = {target:,} is beyond the limit of {cap:,} tokens; raise the limit (up to {ceiling:,}) "
                           "to plan it: a plan's time grows with L′.").format(
            target=target, cap=max_target, ceiling=TARGET_CEILING))
    layout = model_layout(config, layers)
    notes = _layer_notes(layers.kinds, planned, layout.schema)
    changed = tuple(note.kind.layer_type for note in notes if note.changed)
    shipped_rope = dict(layout.blocks[planned.layer_type])
    carried = {key: shipped_rope[key] for key in _LAYOUT_KEYS if key in shipped_rope}
    train = RopeSpec(head_dim=spec.head_dim, base=plain_base(spec), original_max_position_embeddings=L,
                     partial_rotary_factor=spec.partial_rotary_factor)
    constant = unrotated_pairs(train)
    bound = base_lower_bound(target, train.rotary_dim, constant) if with_bound else None
    train_bound = base_lower_bound(L, train.rotary_dim, constant) if with_bound else None
    abf = abf_base(train.base, bound, target, train.rotary_dim, constant) if with_bound else train.base
    train_theta = default_inv_freq(train.base, train.rotary_dim)
    text = text_config_of(config)[0]
    # written where the file leaves it out and the class's own head width is the planned one: transformers' YaRN
    # and dynamic NTK fail on a class that keeps a missing head_dim as None (MixtralConfig)
    writes_head_dim = layers.read_by is None or layers.head_dim_unset or layers.class_head_dim == spec.head_dim
    head_dim = spec.head_dim if writes_head_dim else None
    shipped_max = text.get("max_position_embeddings") or layers.context_length or target
    planned_methods = []
    not_offered: list[tuple[str, str]] = []
    for name in methods:
        method_spec, parameters, rope, max_positions = _method(name, train, target, abf, spec, shipped_rope,
                                                               shipped_max, carried)
        if proportional:
            rope = rope if name == "direct" else as_proportional(rope, spec)
            parameters["rope_theta"] = rope["rope_theta"]  # the config's base; "base" is the plain-RoPE one
        frequencies = rope_frequencies(method_spec, target)
        pairs, angles, _counts = unseen_shares(train_theta, L, frequencies.inv_freq, target)
        negative = first_negative_distance(frequencies.inv_freq, target, float(constant)) if with_bound else None
        whole = patched_config(config, layout, changed, rope, max_positions, head_dim=head_dim)
        if layers.read_by is not None:
            refused = round_trip(whole, planned.layer_type, method_spec, L)
            if refused is not None:
                not_offered.append((name, refused))
                continue
        legacy = patched_config(config, layout, changed, rope, max_positions, legacy=True, head_dim=head_dim) \
            if layout.schema.legacy else None
        planned_methods.append(MethodPlan(name, PLAN_TITLES[name], method_spec, target, frequencies.inv_freq,
                                          frequencies.attention_factor, parameters, rope, max_positions, whole,
                                          legacy, pairs, angles, negative))
    unavailable = tuple(name for name in PLAN_METHODS if name not in methods) if proportional else ()
    return Plan(dict(config), spec, train, L, target, bound, train_bound, tuple(planned_methods),
                extended_length_of(layers), planned, notes, layout, layers, unavailable, tuple(not_offered))


# ---- output ---------------------------------------------------------------------------------------


def _value_text(value) -> str:
    if isinstance(value, float):
        return f"{value:,.6g}" if value < 1e6 else f"{value:.4g}"
    return str(value)


def layer_type_name(kind: LayerKind) -> str:
    """A kind of layer as the reader picks it: transformers' layer type, marked when it has no RoPE."""
    return kind.layer_type if kind.has_rope else _("{layer_type} (no RoPE)").format(layer_type=kind.layer_type)


def layer_lines(result: Plan) -> list[str]:
    """One line per kind of layer: how many, and what the plan does to it and why."""
    lines = []
    for note in result.layers:
        count = len(note.kind.layers)
        which = (_("{layer_type}, {count} of {total} layers").format(
            layer_type=layer_type_name(note.kind), count=count, total=sum(len(n.kind.layers) for n in result.layers))
            if count else layer_type_name(note.kind))
        lines.append(_("{which}: {why}").format(which=which, why=note.text(result.planned.layer_type)))
    return lines


def composition_text(result: Plan) -> str | None:
    """How the plan composes with scaling the model ships, or None when it ships plain RoPE at this length."""
    sentences = []
    shipped = result.shipped_factor
    if shipped > 1:
        sentences.append(_("The model ships {rope_type} ×{factor:g} on L = {length:,} (built for {built:,} tokens); "
                           "L′ = {target:,} is ×{scale:g} in total on the same L, ×{more:.3g} more than it ships. Each "
                           "block but direct extrapolation's replaces the shipped scaling with that total; direct "
                           "extrapolation keeps it.").format(
            rope_type=result.spec.rope_type, factor=shipped, length=result.train_length, built=result.built_for,
            target=result.target, scale=result.scale, more=result.scale / shipped))
    spec = result.spec
    if rope_type_entry(spec.rope_type).whole_head_exponent:
        sentences.append(_("These layers use proportional RoPE: θᵢ = b^(−2i/{head}) on the first {pairs} of {all_pairs} "
                           "pairs, which is plain RoPE on {rotary} dimensions with base b^({rotary}/{head}) = "
                           "{base:,.6g}. The plan works with that base and writes each rope_theta back as the model "
                           "reads it. (transformers' config check calls factor an unknown key of proportional RoPE; "
                           "its rotary class divides θᵢ by it all the same.)").format(head=spec.head_dim, pairs=spec.num_pairs, all_pairs=spec.head_dim // 2,
                                               rotary=spec.rotary_dim, base=result.train_spec.base))
    if result.unavailable:
        sentences.append(_(UNAVAILABLE).format(methods=", ".join(_(PLAN_TITLES[name]) for name in result.unavailable)))
    for name, why in result.not_offered:
        sentences.append(_("{method} is not offered: read back through the model's own classes, its block does not "
                           "give the planned numbers ({why}).").format(method=_(PLAN_TITLES[name]), why=why))
    shipped_max = text_config_of(result.config)[0].get("max_position_embeddings")
    for method in result.methods:
        if isinstance(shipped_max, int) and method.max_positions < shipped_max:
            sentences.append(_("{method}'s config sets max_position_embeddings to {written:,}, below the {shipped:,} "
                               "it ships with: transformers reads it as the length before scaling, but serving "
                               "engines read it as the longest context, so give them L′ = {target:,} themselves "
                               "(vLLM's --max-model-len, llama.cpp's --ctx-size).").format(
                method=_(PLAN_TITLES[method.method]), written=method.max_positions, shipped=shipped_max,
                target=result.target))
    if result.target <= result.built_for:
        sentences.append(_("As shipped, the model's config is already built for {built:,} tokens, at least L′.").format(
            built=result.built_for))
    return " ".join(sentences) or None


def plan_text(result: Plan) -> str:
    spec = result.train_spec
    lines = [f"Model RoPE ({result.planned.layer_type} layers): {result.spec.rope_type}, base {spec.base:,.6g}, "
             f"{spec.rotary_dim} of {spec.head_dim} dimensions rotated, trained at L = {result.train_length:,}; "
             f"target L′ = {result.target:,} (s = {result.scale:g})."]
    composition = composition_text(result)
    if composition:
        lines.append(composition)
    lines.append("Layers:")
    lines += [f"  {line}" for line in layer_lines(result)]
    if result.base_bound is None:
        lines.append("Base lower bound (Men et al. 2024): none needed; half or more of the pairs are not rotated.")
    else:
        lines.append(f"Base lower bound (Men et al. 2024) for L′: b* ≈ {result.base_bound:.3g} "
                     f"(for L: {result.train_bound:.3g}; the model's base is {spec.base:.3g}).")
    lines.append(f"{'method':<24} {'unseen pairs':>12} {'unseen angles':>14} {'Σcos<0 first at':>16}  parameters")
    for m in result.methods:
        negative = f"{m.first_negative:,}" if m.first_negative is not None else "never"
        parameters = ", ".join(f"{k}={_value_text(v)}" for k, v in m.parameters.items())
        lines.append(f"{m.title:<24} {m.unseen_pairs:>12.1%} {m.unseen_angles:>14.2%} {negative:>16}  {parameters}")
    lines.append("")
    for m in result.methods:
        where = f" (inside {result.layout.where})" if result.layout.where else ""
        lines.append(f"# {m.title}: the RoPE keys of the patched config.json{where}, transformers ≥ 5 "
                     f"(--json or --out gives the whole file, and older readers' keys)")
        text = m.config[result.layout.where] if result.layout.where else m.config
        lines.append(json.dumps({key: text[key] for key in ("max_position_embeddings", "rope_parameters")}, indent=1))
    return "\n".join(lines)


def plan_json(result: Plan) -> dict:
    def clean(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    return {
        "model": {"rope_type": result.spec.rope_type, "base": result.train_spec.base,
                  "rotary_dim": result.train_spec.rotary_dim, "head_dim": result.train_spec.head_dim,
                  "train_length": result.train_length, "built_for": result.built_for,
                  "shipped_factor": result.shipped_factor, "planned_layer_type": result.planned.layer_type},
        "target": result.target, "scale": result.scale,
        "layers": [{"layer_type": note.kind.layer_type, "rope": note.kind.has_rope, "layers": len(note.kind.layers),
                    "span": note.kind.span, "changed": note.changed,
                    "why": note.text(result.planned.layer_type)} for note in result.layers],
        "composition": composition_text(result),
        "base_lower_bound": clean(result.base_bound), "base_lower_bound_at_train_length": clean(result.train_bound),
        "methods": {m.method: {"parameters": {k: clean(v) for k, v in m.parameters.items()},
                               "attention_factor": m.attention_factor, "unseen_pairs": m.unseen_pairs,
                               "unseen_angles": m.unseen_angles, "similarity_sum_negative_at": m.first_negative,
                               "rope": m.rope, "config": m.config, "config_legacy": m.legacy_config}
                    for m in result.methods},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.plan CONFIG --target N``: the plan as text (or --json); exit 2 on bad input."""
    from pe_core.cli_args import plan_parser
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config

    parser = plan_parser()
    args = parser.parse_args(argv)
    use_server_threads()  # small tensors: one thread is fastest on a small machine
    try:
        from pe_core.check import refuse_if_strict
        from pe_core.config import layer_map, read_as

        config = read_as(read_config(args.config), args.read_as)
        notes = refuse_if_strict(layer_map(config), args.strict)
        result = plan(config, args.target, max_target=args.max_target)
    except ValueError as err:
        from pe_core.check import cli_error

        return cli_error(err, args.json)
    data = {**plan_json(result), "reading": notes}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
    if args.json:
        print(json.dumps(data, indent=1, ensure_ascii=False))
    else:
        print("\n".join([*notes, plan_text(result)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
