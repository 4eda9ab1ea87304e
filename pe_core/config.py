"""Read a transformers ``config.json`` dict into a ``RopeSpec``, the way transformers reads it.

Follows ``RotaryEmbeddingConfigMixin.standardize_rope_params`` and the ``_compute_*`` functions
of transformers 5.x: ``rope_parameters`` (v5) or ``rope_scaling`` (v4), ``type`` as an old
name for ``rope_type``, a top-level ``original_max_position_embeddings`` taking priority
(Phi-3), and ``factor`` defaulting to max_position_embeddings / original (DeepSeek, Phi-3).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping

from i18n import N_, _
from pe_core.layers import (
    GENERIC,
    TEXT_MODEL_TYPES,
    LayerKind,
    LayerMap,
    effective_config,
    family_of,
    layer_types_of,
    span_of,
)
from pe_core.rope import ROPE_TYPES, RopeSpec

# Old names that transformers still accepts for a rope type. Qwen2-VL's "mrope" splits the pairs among
# time, height and width positions but builds its frequencies as plain RoPE does.
_TYPE_ALIASES = {"su": "longrope", "ntk-aware": "ntk", "dynamic_ntk": "dynamic", "mrope": "default"}
# Rope types transformers has that this app does not analyse, with what they are.
_UNSUPPORTED_TYPES = {"axial": N_("the 2-D axial RoPE of vision encoders")}
# Where multimodal and composite configs keep the language model's own config.
SUB_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "thinker_config", "vlm_config")
# Model families whose positions are not RoPE: named, so a pasted config is refused for the right reason.
_NOT_ROPE_FAMILIES = {
    "gpt2": N_("learned absolute position embeddings"), "opt": N_("learned absolute position embeddings"),
    "bert": N_("learned absolute position embeddings"), "roberta": N_("learned absolute position embeddings"),
    "distilbert": N_("learned absolute position embeddings"), "bart": N_("learned absolute position embeddings"),
    "gpt_bigcode": N_("learned absolute position embeddings"), "whisper": N_("sinusoidal and learned position embeddings"),
    "t5": N_("T5's relative position buckets"), "mt5": N_("T5's relative position buckets"),
    "bloom": N_("ALiBi biases"), "mpt": N_("ALiBi biases"),
}
_SCALED_WITH_ORIGINAL = ("llama3", "yarn", "longrope")
_DEFAULT_THETA = 10000.0


def _number(config: Mapping, key: str, where: str = "config.json"):
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(_("{where} field {key!r} must be a number (got {value!r}).").format(where=where, key=key, value=value))
    return value


def _positive_int(config: Mapping, key: str, where: str = "config.json") -> int:
    value = _number(config, key, where)
    if value != int(value) or value < 1:
        raise ValueError(_("{where} field {key!r} must be a positive integer (got {value!r}).").format(where=where, key=key, value=value))
    return int(value)


def text_config_of(config: Mapping) -> tuple[Mapping, str | None]:
    """The part of a config.json that describes the language model, and the key path it was found under.

    A text model's config is read as it is; a composite one (Gemma 3, LLaVA-style and other multimodal configs)
    keeps it under ``text_config`` (or ``language_config`` ...), which is then read instead, as transformers'
    ``get_text_config`` does, even where the top level has keys of its own (PaliGemma's hidden_size, an audio
    encoder's RoPE) and one level further down (Qwen2.5-Omni's thinker_config.text_config).
    """
    path = []
    parent_type = config.get("model_type")
    while (key := next((k for k in SUB_CONFIG_KEYS if isinstance(config.get(k), Mapping)), None)) is not None:
        path.append(key)
        parent_type = config.get("model_type", parent_type)
        config = config[key]
        if config.get("model_type") is None and isinstance(parent_type, str):
            config = {**config, "model_type": TEXT_MODEL_TYPES.get(parent_type, parent_type)}
    defaults = family_of(config.get("model_type")).defaults
    if defaults:
        config = {**defaults, **{k: v for k, v in config.items() if v is not None}}
    return config, ".".join(path) or None


def _refuse_non_rope(config: Mapping) -> None:
    family = config.get("model_type")
    if isinstance(family, str) and family in _NOT_ROPE_FAMILIES:
        raise ValueError(_("This is a {family!r} config: it encodes positions with {scheme}, not RoPE, so "
                            "there are no rotary frequencies to show.").format(family=family, scheme=_(_NOT_ROPE_FAMILIES[family])))
    if config.get("alibi") is True:
        raise ValueError(_("This config sets 'alibi': true: the model uses ALiBi biases, not RoPE."))
    kind = config.get("position_embedding_type")
    if kind in ("absolute", "relative_key", "relative_key_query"):
        raise ValueError(_("This config sets 'position_embedding_type': {kind!r}: the model does not use RoPE.").format(kind=kind))


def head_dim_of(config: Mapping) -> int:
    """The per-head width RoPE acts on: qk_rope_head_dim (DeepSeek), head_dim, or hidden/heads."""
    for key in ("qk_rope_head_dim", "head_dim"):
        if config.get(key) is not None:
            return _positive_int(config, key)
    if config.get("hidden_size") is None or config.get("num_attention_heads") is None:
        raise ValueError(
            _("config.json must give the head width: 'head_dim', or both 'hidden_size' and "
               "'num_attention_heads' (head_dim = hidden_size // num_attention_heads).")
        )
    return _positive_int(config, "hidden_size") // _positive_int(config, "num_attention_heads")


def _parsed(config: Mapping | str) -> Mapping:
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as err:
            raise ValueError(_("That is not valid JSON: {msg} (line {lineno}, column {colno}).").format(msg=err.msg, lineno=err.lineno, colno=err.colno)) from err
    if not isinstance(config, Mapping):
        raise ValueError(_("A config.json must be a JSON object ({...})."))
    return config


def from_hf_config(config: Mapping | str, layer_type: str | None = None) -> RopeSpec:
    """A ``RopeSpec`` equal to what transformers builds from this ``config.json`` (dict or JSON text).

    ``layer_type`` picks one kind of layer of a hybrid model (transformers' names: ``full_attention``,
    ``sliding_attention``, ...); by default, the layers context extension scales (``LayerMap.default_kind``).
    Raises ``ValueError`` naming the missing or invalid field, or saying that those layers have no RoPE.
    """
    kind = layer_map(config).kind(layer_type)
    if kind.spec is None:
        raise ValueError(_("The {layer_type!r} layers of this model apply no position encoding (NoPE), so "
                           "they have no rotary frequencies.").format(layer_type=kind.layer_type))
    return kind.spec


# The number of layers assumed to find a family's kinds of layer when a config gives no count (presets and
# hand-written configs often keep only the RoPE keys): long enough for every family's pattern.
_NOMINAL_LAYERS = 64


def layer_map(config: Mapping | str) -> LayerMap:
    """The model's layers by kind, each with its span and its RoPE or none, read as the model's class reads them.

    A family the app keeps notes on (``pe_core.layers.FAMILIES``) is read from those notes, which the tests check
    against its classes; any other named model type is read by its own transformers code at read time
    (``pe_core.model_code``), and a model type the installed transformers cannot build is refused by name.
    """
    config = _parsed(config)
    text, read_from = text_config_of(config)
    _refuse_non_rope(text)
    if _read_by_its_own_code(text):
        return _model_code_map(config, read_from)
    values, family = effective_config(text)
    counted = isinstance(values.get("num_hidden_layers"), int) and not isinstance(values.get("num_hidden_layers"), bool)
    if values.get("layer_types") is None and not counted:
        values["num_hidden_layers"] = _NOMINAL_LAYERS
    per_layer = layer_types_of(values, family)
    blocks = family.parameters(values, per_layer)
    layout = family.layout(values)
    groups: dict[tuple[str, bool], list[int]] = {}
    for index, layer_type in enumerate(per_layer):
        rotary = family.applies_rope(values, index, layer_type) and not (layer_type in blocks and blocks[layer_type] is None)
        groups.setdefault((layer_type, rotary), []).append(index)
    specs: dict[str, RopeSpec] = {}
    kinds = []
    for (layer_type, rotary), layers in groups.items():
        spec = None
        block: Mapping = {}
        if rotary:
            if layer_type not in blocks:
                raise ValueError(_("config.json gives no RoPE parameters for its {layer_type!r} layers.").format(layer_type=layer_type))
            block = blocks[layer_type]
            if layer_type not in specs:
                head_key = family.layer_head_dim.get(layer_type) or (family.head_dim_key if family is not GENERIC else None)
                head_dim = _positive_int(values, head_key) if head_key and values.get(head_key) is not None else head_dim_of(values)
                specs[layer_type] = _spec_from(values, dict(block), head_dim, family.advertises_extended)
            spec = specs[layer_type]
        section = block.get("mrope_section")
        kinds.append(LayerKind(
            layer_type=layer_type, layers=tuple(layers) if counted or values.get("layer_types") is not None else (),
            span=span_of(values, layer_type), spec=spec, layout=layout,
            mrope_section=tuple(int(v) for v in section) if isinstance(section, list) else None,
            mrope_interleaved=bool(block.get("mrope_interleaved", False)),
            nope_note=None if rotary else family.nope_note,
        ))
    kinds.sort(key=lambda kind: (not kind.has_rope, kind.layers[:1] or (0,)))
    num_layers = len(per_layer) if counted or values.get("layer_types") is not None else 0
    return LayerMap(text.get("model_type") or config.get("model_type"), num_layers, tuple(per_layer) if num_layers else (),
                    tuple(kinds), read_from)


def reading_notes(model: LayerMap) -> list[str]:
    """What a reader of this layer map should know about how it was read, one sentence each (none: nothing)."""
    notes = []
    if model.read_by is not None:
        notes.append(_("Read by {model_type}'s own config, rotary and attention classes in {reader}.").format(
            model_type=model.model_type, reader=model.read_by))
    if model.unread_keys:
        notes.append(_("Keys nothing in the model's code reads: {keys}.").format(keys=", ".join(model.unread_keys)))
    for warning in model.warnings:
        notes.append(_("transformers warns: {warning}").format(warning=warning))
    for layer_type, disagreement in model.disagreements:
        notes.append(_("On its {layer_type!r} layers pe_core's formulas and the model's own class disagree: "
                       "{disagreement}.").format(layer_type=layer_type, disagreement=disagreement))
    return notes


def strict_problems(model: LayerMap) -> list[str]:
    """Why ``--strict`` refuses this reading: unread keys, warnings, disagreements (empty: nothing to refuse)."""
    return reading_notes(model)[1:] if model.read_by is not None else []


def _read_by_its_own_code(text: Mapping) -> bool:
    model_type = text.get("model_type")
    return isinstance(model_type, str) and family_of(model_type) is GENERIC and model_type != "llama"


@functools.lru_cache(maxsize=32)
def _model_code_map_of(canonical: str, read_from: str | None) -> LayerMap:
    from pe_core import model_code

    config = json.loads(canonical)
    reading = model_code.read(config)
    text = reading.text_config
    values = {key: value for key, value in text.to_dict().items()}
    groups: dict[tuple[str, bool], list[int]] = {}
    for index, layer in enumerate(reading.layers):
        groups.setdefault((layer.layer_type, layer.rotates), []).append(index)
    specs: dict[str, RopeSpec] = {}
    disagreements: list[tuple[str, str]] = []
    kinds = []
    for (layer_type, rotates), layers in groups.items():
        spec = None
        block: Mapping = {}
        if rotates:
            block = reading.parameters[layer_type]
            if layer_type not in specs:
                specs[layer_type], disagreement = _spec_matching_class(values, dict(block), reading.frequencies[layer_type])
                if disagreement:
                    disagreements.append((layer_type, disagreement))
            spec = specs[layer_type]
        section = block.get("mrope_section")
        kinds.append(LayerKind(
            layer_type=layer_type, layers=tuple(layers), span=span_of(values, layer_type), spec=spec,
            layout=reading.pairing.get(layer_type, "half"),
            mrope_section=tuple(int(v) for v in section) if isinstance(section, list) else None,
            mrope_interleaved=bool(block.get("mrope_interleaved", False)),
        ))
    kinds.sort(key=lambda kind: (not kind.has_rope, kind.layers[:1] or (0,)))
    given = getattr(text, "rope_parameters", None) or {}
    per_type = bool(given) and all(isinstance(value, Mapping) for value in given.values())
    blocks = {key: dict(value) for key, value in given.items()} if per_type else \
        {layer_type: dict(given) for layer_type in dict.fromkeys(reading.layer_types)}
    return LayerMap(reading.model_type, len(reading.layers), reading.layer_types, tuple(kinds), read_from,
                    read_by=f"transformers {reading.transformers_version}", unread_keys=reading.unread_keys,
                    warnings=reading.warnings, disagreements=tuple(disagreements), class_blocks=blocks,
                    blocks_per_layer_type=per_type)


def _model_code_map(config: Mapping, read_from: str | None) -> LayerMap:
    return _model_code_map_of(json.dumps(config, sort_keys=True), read_from)


def _spec_matching_class(values: Mapping, block: dict, buffers: tuple) -> tuple[RopeSpec, str | None]:
    """The ``RopeSpec`` of one layer type's block, checked against the θᵢ and attention factor of the model's own
    rotary class; the rotated width is the class's (MiniMax M2's rotary_dim, MLA's rope part of a head)."""
    from pe_core.rope import rope_frequencies

    inv_freq, attention = buffers
    inv_freq = inv_freq[inv_freq != 0] if block.get("rope_type") == "proportional" else inv_freq
    head_dim = head_dim_of(values)
    spec = _spec_from(values, block, head_dim)
    if spec.num_pairs != len(inv_freq) and len(inv_freq) and 2 * len(inv_freq) <= head_dim:
        spec = dataclasses.replace(spec, partial_rotary_factor=2 * len(inv_freq) / head_dim)
    ours = rope_frequencies(spec, spec.original_max_position_embeddings)
    if ours.inv_freq.shape != inv_freq.shape:
        return spec, _("the model's rotary class turns {theirs} pairs, pe_core's formula {ours}").format(
            theirs=len(inv_freq), ours=len(ours.inv_freq))
    worst = float(((ours.inv_freq - inv_freq).abs() / inv_freq.abs().clamp_min(1e-300)).max()) if len(inv_freq) else 0.0
    if worst > 2e-6:
        return spec, _("θᵢ differ from the model's rotary class by up to {worst:.2g} (relative)").format(worst=worst)
    if not math.isclose(ours.attention_factor, attention, rel_tol=1e-6):
        return spec, _("attention factor {ours:.6g}, the model's rotary class {theirs:.6g}").format(
            ours=ours.attention_factor, theirs=attention)
    return spec, None


def _spec_from(config: Mapping, params: dict, head_dim: int, advertises_extended: bool = False) -> RopeSpec:
    """The ``RopeSpec`` of one parameter block, in a text config whose class defaults are filled in."""
    where = "rope_scaling"
    rope_type = params.get("rope_type", params.get("type", "default"))
    if not isinstance(rope_type, str):
        raise ValueError(_("rope_scaling field 'rope_type' must be a string (got {rope_type!r}).").format(rope_type=rope_type))
    rope_type = _TYPE_ALIASES.get(rope_type, rope_type)
    if rope_type in _UNSUPPORTED_TYPES:
        raise ValueError(_("rope_type {rope_type!r} ({reason}) is not supported here; supported: {choices}.").format(rope_type=rope_type, reason=_(_UNSUPPORTED_TYPES[rope_type]), choices=', '.join(ROPE_TYPES)))
    if rope_type not in ROPE_TYPES:
        raise ValueError(_("rope_scaling field 'rope_type' must be one of {choices} (got {rope_type!r}).").format(choices=', '.join(ROPE_TYPES), rope_type=rope_type))

    if "rope_theta" in params:
        base = _number(params, "rope_theta", where)
    elif "rope_theta" in config:
        base = _number(config, "rope_theta")
    else:
        base = _DEFAULT_THETA  # transformers' default_theta
    partial = params.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    if partial is None:
        partial = 1.0

    max_positions = None
    if config.get("max_position_embeddings") is not None:
        max_positions = _positive_int(config, "max_position_embeddings")

    def need_max_positions() -> int:
        if max_positions is None:
            raise ValueError(_("config.json needs 'max_position_embeddings' for rope_type {rope_type!r}.").format(rope_type=rope_type))
        return max_positions

    values: dict = {"head_dim": head_dim, "base": float(base), "rope_type": rope_type,
                    "partial_rotary_factor": float(partial)}

    if rope_type in _SCALED_WITH_ORIGINAL:
        if config.get("original_max_position_embeddings") is not None:
            original = _positive_int(config, "original_max_position_embeddings")
        elif params.get("original_max_position_embeddings") is not None:
            original = _positive_int(params, "original_max_position_embeddings", where)
        else:
            original = need_max_positions()
    elif rope_type == "dynamic":
        original = need_max_positions()
    elif rope_type == "linear" and advertises_extended and max_positions is not None and params.get("factor"):
        original = max(1, round(max_positions / float(_number(params, "factor", where))))
    else:
        original = max_positions if max_positions is not None else RopeSpec.original_max_position_embeddings
    values["original_max_position_embeddings"] = original

    if rope_type == "proportional":
        values["factor"] = float(_number(params, "factor", where)) if params.get("factor") is not None else 1.0
    elif rope_type in ("linear", "ntk", "dynamic", "llama3", "ntk_by_parts"):
        if params.get("factor") is None:
            raise ValueError(_("rope_scaling needs 'factor' for rope_type {rope_type!r}.").format(rope_type=rope_type))
        values["factor"] = float(_number(params, "factor", where))
    elif rope_type in ("yarn", "longrope"):
        if params.get("factor") is not None:
            values["factor"] = float(_number(params, "factor", where))
        else:
            values["factor"] = need_max_positions() / original

    if rope_type in ("yarn", "ntk_by_parts"):
        values["beta_fast"] = float(params.get("beta_fast") or 32)
        values["beta_slow"] = float(params.get("beta_slow") or 1)
        values["truncate"] = bool(params.get("truncate", True))
    for key in ("attention_factor", "mscale", "mscale_all_dim"):
        if params.get(key) is not None:
            values[key] = float(_number(params, key, where))
    if rope_type == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            if params.get(key) is None:
                raise ValueError(_("rope_scaling needs {key!r} for rope_type 'llama3'.").format(key=key))
            values[key] = float(_number(params, key, where))
    if rope_type == "longrope":
        for key in ("short_factor", "long_factor"):
            if not isinstance(params.get(key), list):
                raise ValueError(_("rope_scaling needs {key!r} (a list of numbers) for rope_type 'longrope'.").format(key=key))
            values[key] = tuple(params[key])
    return RopeSpec(**values)


_EXTENDING_TYPES = ("linear", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3", "longrope")


def extended_length(config: Mapping | str) -> int:
    """The context length a config's RoPE is built for (of the layers context extension scales).

    For a scaled rope type, ``original_max_position_embeddings × factor`` when that is larger than
    ``max_position_embeddings`` (Qwen2.5's YaRN block: 32768 × 4 = 131072; a Llama-2 config with
    ``{"type": "linear", "factor": 4}``: 4096 × 4 = 16384); otherwise ``max_position_embeddings``.
    Raises ``ValueError`` for a config ``from_hf_config`` cannot read.
    """
    config = _parsed(config)
    spec = from_hf_config(config)
    text = text_config_of(config)[0]
    advertised = context_length_of(text)
    if spec.rope_type not in _EXTENDING_TYPES or (family_of(text.get("model_type")).advertises_extended and advertised):
        return advertised if advertised is not None else spec.original_max_position_embeddings
    built_for = int(round(spec.original_max_position_embeddings * spec.factor))
    return max(built_for, advertised or 0)


def original_length_given(config: Mapping) -> bool:
    """Does the config say the length the model was trained at before scaling (original_max_position_embeddings)?"""
    text, _path = text_config_of(config)
    if text.get("original_max_position_embeddings") is not None:
        return True
    blocks = [text.get("rope_parameters"), text.get("rope_scaling")]
    blocks += [value for block in blocks if isinstance(block, Mapping) for value in block.values()]
    return any(isinstance(block, Mapping) and block.get("original_max_position_embeddings") is not None
               for block in blocks)


def context_length_of(config: Mapping) -> int | None:
    """The context length the model advertises (``max_position_embeddings``), if given."""
    value = config.get("max_position_embeddings")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else None
