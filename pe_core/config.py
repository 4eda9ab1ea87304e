"""Read a transformers ``config.json`` dict into a ``RopeSpec``, the way transformers reads it.

Follows ``RotaryEmbeddingConfigMixin.standardize_rope_params`` and the ``_compute_*`` functions
of transformers 5.x: ``rope_parameters`` (v5) or ``rope_scaling`` (v4), ``type`` as an old
name for ``rope_type``, a top-level ``original_max_position_embeddings`` taking priority
(Phi-3), and ``factor`` defaulting to max_position_embeddings / original (DeepSeek, Phi-3).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import pickle
from collections.abc import Mapping
from pathlib import Path

from i18n import N_, _
from pe_core.layers import (
    SUB_CONFIG_KEYS,
    LayerKind,
    LayerMap,
    notes_of,
    span_of,
    untyped_blocks,
    untyped_layer_types,
)
from pe_core.rope import ROPE_TYPE_ENTRIES, RopeSpec, canonical_rope_type, rope_type_entry

# Rope types transformers has that this app does not analyse, with what they are.
_UNSUPPORTED_TYPES = {"axial": N_("the 2-D axial RoPE of vision encoders")}
_LIST_KEYS = ("short_factor", "long_factor")  # rope_parameters keys that hold a number per pair
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
    return config, ".".join(path) or None


def _refuse_non_rope(config: Mapping) -> None:
    family = config.get("model_type")
    scheme = notes_of(family).positions if isinstance(family, str) else None
    if scheme is not None:
        raise ValueError(_("This is a {family!r} config: it encodes positions with {scheme}, not RoPE, so "
                            "there are no rotary frequencies to show.").format(family=family, scheme=_(scheme)))
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
    return spec_of(layer_map(config), layer_type)


def spec_of(model: LayerMap, layer_type: str | None = None) -> RopeSpec:
    """``from_hf_config`` on a layer map already read."""
    kind = model.kind(layer_type)
    if kind.spec is None:
        raise ValueError(_("The {layer_type!r} layers of this model apply no position encoding (NoPE), so "
                           "they have no rotary frequencies.").format(layer_type=kind.layer_type))
    return kind.spec


# The number of layers assumed to find a family's kinds of layer when a config gives no count (presets and
# hand-written configs often keep only the RoPE keys): long enough for every family's pattern.
_NOMINAL_LAYERS = 64


def layer_map(config: Mapping | str, read_as: str | None = None) -> LayerMap:
    """The model's layers by kind, each with its span and its RoPE or none, read as the model's class reads them.

    A config with a model type is read by that model's own transformers code (``pe_core.model_code``); a model type
    the installed transformers cannot build is refused by name, unless ``read_as`` names a model type to read it
    as (every key that family's code does not read is then listed). A config without a model type (the app's
    presets, a hand-written RoPE block) is plain RoPE on every layer, as ``LlamaConfig`` reads it.
    """
    config = _parsed(config)
    text, read_from = text_config_of(config)
    _refuse_non_rope(text)
    typed = _typed(config, text)
    if typed is not None or read_as is not None:
        return _model_code_map(typed if typed is not None else config, read_from, read_as)
    return _untyped_map(text, read_from)


def read_as(config: Mapping, model_type: str | None) -> dict:
    """``config`` named as ``model_type`` (a family transformers has), to be read with that family's classes:
    a remote-code model whose auto_map names one (Kimi K2 as deepseek_v3). None: the config as it is."""
    config = dict(_parsed(config))
    if model_type is None:
        return config
    from pe_core import model_code

    if not model_code.knows(model_type):
        raise model_code.UnknownModelType(_("transformers {version} has no model type {model_type!r} to read this "
                                            "config as.").format(version=model_code.transformers_version(),
                                                                 model_type=model_type))
    return {**config, "model_type": model_type}


def _typed(config: Mapping, text: Mapping) -> Mapping | None:
    """The dict to hand the model's own classes: the whole file where it names its type, else its text part."""
    if isinstance(config.get("model_type"), str):
        return config
    if isinstance(text.get("model_type"), str):
        return text
    return None


def _untyped_map(text: Mapping, read_from: str | None) -> LayerMap:
    values = dict(text)
    counted = isinstance(values.get("num_hidden_layers"), int) and not isinstance(values.get("num_hidden_layers"), bool)
    if values.get("layer_types") is None and not counted:
        values["num_hidden_layers"] = _NOMINAL_LAYERS
    per_layer = untyped_layer_types(values)
    blocks = untyped_blocks(values, per_layer)
    groups: dict[tuple[str, bool], list[int]] = {}
    for index, layer_type in enumerate(per_layer):
        groups.setdefault((layer_type, not (layer_type in blocks and blocks[layer_type] is None)), []).append(index)
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
                specs[layer_type] = _spec_from(values, dict(block), head_dim_of(values))
            spec = specs[layer_type]
        section = block.get("mrope_section")
        kinds.append(LayerKind(
            layer_type=layer_type, layers=tuple(layers) if counted or values.get("layer_types") is not None else (),
            span=span_of(values, layer_type), spec=spec, layout="half",
            mrope_section=tuple(int(v) for v in section) if isinstance(section, list) else None,
            mrope_interleaved=bool(block.get("mrope_interleaved", False)),
        ))
    kinds.sort(key=lambda kind: (not kind.has_rope, kind.layers[:1] or (0,)))
    num_layers = len(per_layer) if counted or values.get("layer_types") is not None else 0
    return LayerMap(None, num_layers, tuple(per_layer) if num_layers else (), tuple(kinds), read_from,
                    context_length=context_length_of(text))


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


def _model_code_map_of(canonical: str, read_from: str | None, read_as: str | None = None) -> LayerMap:
    from pe_core import model_code

    config = json.loads(canonical)
    reading = model_code.read(config, read_as)
    text = reading.text_config
    notes = notes_of(text.model_type)
    values = _config_values(text)
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
            nope_note=None if rotates else notes.nope_note,
            rotary_class=reading.rotary_class if rotates else None,
            rotation=reading.layers[layers[0]].rotation if rotates else None,
            rotary_takes_layer_type=rotates and reading.rotary_takes_layer_type,
        ))
    kinds.sort(key=lambda kind: (not kind.has_rope, kind.layers[:1] or (0,)))
    given = getattr(text, "rope_parameters", None) or {}
    # keyed by layer type where any entry is a block (Laguna also keeps a shared original_max_position_embeddings)
    per_type = any(isinstance(value, Mapping) for value in given.values())
    blocks = {key: dict(value) for key, value in given.items() if isinstance(value, Mapping)} if per_type else \
        {layer_type: dict(given) for layer_type in dict.fromkeys(reading.layer_types)}
    return LayerMap(reading.model_type, len(reading.layers), reading.layer_types, tuple(kinds), read_from,
                    read_by=f"transformers {reading.transformers_version}", unread_keys=reading.unread_keys,
                    warnings=reading.warnings, disagreements=tuple(disagreements), class_blocks=blocks,
                    blocks_per_layer_type=per_type, context_length=context_length_of(values),
                    text_model_type=text.model_type, head_dim_unset=values.get("head_dim", 0) is None,
                    class_head_dim=values.get("head_dim") if isinstance(values.get("head_dim"), int) else None)


def _config_values(text) -> dict:
    """A config object's values by every name its class answers to (GPT-J's n_embd is also hidden_size)."""
    values = dict(text.to_dict())
    for alias in getattr(type(text), "attribute_map", {}):
        try:
            values[alias] = getattr(text, alias)
        except AttributeError:
            continue
    return values


def _model_code_map(config: Mapping, read_from: str | None, read_as: str | None = None) -> LayerMap:
    """The layer map by the model's own code: from memory, from disk (a reading kept by an earlier process of the
    same code and transformers, so a fresh server need not import transformers for a config it has read before),
    or read anew and kept."""
    return _kept_map(json.dumps(config, sort_keys=True), read_from, read_as)


@functools.lru_cache(maxsize=64)
def _kept_map(canonical: str, read_from: str | None, read_as: str | None) -> LayerMap:
    path = _reading_file(canonical, read_from, read_as)
    if path is not None and path.exists():
        try:
            with path.open("rb") as handle:
                kept = pickle.load(handle)
            if isinstance(kept, LayerMap):
                return kept
        except (OSError, pickle.PickleError, EOFError, AttributeError, TypeError, ValueError):
            pass  # damaged or from other code: read anew
    mapped = _model_code_map_of(canonical, read_from, read_as)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.part")
            with partial.open("wb") as handle:
                pickle.dump(mapped, handle)
            partial.replace(path)  # whole or not at all: several servers may share the folder
        except OSError:
            pass
    return mapped


READINGS_ENV = "PE_READING_CACHE"  # a folder for kept readings (default .cache/readings in the checkout); "off": none
_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _code_digest() -> str:
    """What a reading depends on: transformers' version and pe_core's own code."""
    from importlib import metadata

    digest = hashlib.sha256(f"transformers {metadata.version('transformers')}".encode())
    for file in sorted((_ROOT / "pe_core").glob("*.py")):
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _reading_file(canonical: str, read_from: str | None, read_as: str | None) -> Path | None:
    folder = os.environ.get(READINGS_ENV, str(_ROOT / ".cache" / "readings"))
    if folder == "off":
        return None
    key = hashlib.sha256(f"{_code_digest()} {read_from} {read_as} {canonical}".encode()).hexdigest()[:32]
    return Path(folder) / f"{key}.pickle"


def _spec_matching_class(values: Mapping, block: dict, buffers: tuple) -> tuple[RopeSpec, str | None]:
    """The ``RopeSpec`` of one layer type's block, checked against the θᵢ and attention factor of the model's own
    rotary class; the rotated width is the class's (MiniMax M2's rotary_dim, MLA's rope part of a head)."""

    inv_freq, attention = buffers
    spec = _spec_of_class(values, block, inv_freq)
    if _disagreement(spec, inv_freq, attention) is not None:
        # a class that builds its table whatever the config says (GPT-J and CodeGen: plain RoPE at base 10⁴)
        for plain in (spec.replace(rope_type="default", factor=1.0), spec.replace(rope_type="default", factor=1.0,
                                                                                  base=_DEFAULT_THETA)):
            if _disagreement(plain, inv_freq, attention) is None:
                return plain, None
    return spec, _disagreement(spec, inv_freq, attention)


def _spec_of_class(values: Mapping, block: dict, inv_freq) -> RopeSpec:
    """The block's ``RopeSpec`` on the width the class rotates: its buffer's pairs (MiniMax M2's rotary_dim, MLA's
    rope part of a head), or for proportional RoPE, whose buffer pads the unrotated pairs with θ = 0, the whole
    head the buffer spans (Gemma 4's global layers)."""
    advertises = notes_of(values.get("model_type")).advertises_extended
    entry = ROPE_TYPE_ENTRIES.get(canonical_rope_type(str(block.get("rope_type", block.get("type", "default")))))
    if entry is not None and entry.whole_head_exponent:
        return _spec_from(values, block, 2 * len(inv_freq), advertises)
    head_dim = head_dim_of(values)
    spec = _spec_from(values, block, head_dim, advertises)
    if spec.num_pairs != len(inv_freq) and len(inv_freq) and 2 * len(inv_freq) <= head_dim:
        spec = dataclasses.replace(spec, partial_rotary_factor=2 * len(inv_freq) / head_dim)
    return spec


def _disagreement(spec: RopeSpec, inv_freq, attention: float) -> str | None:
    from pe_core.rope import rope_frequencies

    if rope_type_entry(spec.rope_type).whole_head_exponent:  # its buffer pads the unrotated pairs with θ = 0
        inv_freq = inv_freq[: spec.num_pairs]
    ours = rope_frequencies(spec, spec.original_max_position_embeddings)
    if ours.inv_freq.shape != inv_freq.shape:
        return _("the model's rotary class turns {theirs} pairs, pe_core's formula {ours}").format(
            theirs=len(inv_freq), ours=len(ours.inv_freq))
    worst = float(((ours.inv_freq - inv_freq).abs() / inv_freq.abs().clamp_min(1e-300)).max()) if len(inv_freq) else 0.0
    if worst > 2e-6:
        return _("θᵢ differ from the model's rotary class by up to {worst:.2g} (relative)").format(worst=worst)
    if not math.isclose(ours.attention_factor, attention, rel_tol=1e-6):
        return _("attention factor {ours:.6g}, the model's rotary class {theirs:.6g}").format(
            ours=ours.attention_factor, theirs=attention)
    return None


def _spec_from(config: Mapping, params: dict, head_dim: int, advertises_extended: bool = False) -> RopeSpec:
    """The ``RopeSpec`` of one parameter block, in a text config whose class defaults are filled in."""
    where = "rope_scaling"
    rope_type = params.get("rope_type", params.get("type", "default"))
    if not isinstance(rope_type, str):
        raise ValueError(_("rope_scaling field 'rope_type' must be a string (got {rope_type!r}).").format(rope_type=rope_type))
    rope_type = canonical_rope_type(rope_type)
    if rope_type in _UNSUPPORTED_TYPES:
        raise ValueError(_("rope_type {rope_type!r} ({reason}) is not supported here; supported: {choices}.").format(rope_type=rope_type, reason=_(_UNSUPPORTED_TYPES[rope_type]), choices=', '.join(ROPE_TYPE_ENTRIES)))
    if rope_type not in ROPE_TYPE_ENTRIES:
        raise ValueError(_("rope_scaling field 'rope_type' must be one of {choices} (got {rope_type!r}).").format(choices=', '.join(ROPE_TYPE_ENTRIES), rope_type=rope_type))

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

    entry = ROPE_TYPE_ENTRIES[rope_type]
    given_factor = None if params.get("factor") is None else float(_number(params, "factor", where))
    if entry.length_from == "original":
        if config.get("original_max_position_embeddings") is not None:
            original = _positive_int(config, "original_max_position_embeddings")
        elif params.get("original_max_position_embeddings") is not None:
            original = _positive_int(params, "original_max_position_embeddings", where)
        else:
            original = need_max_positions()
    elif entry.length_from == "max_positions":
        original = need_max_positions()
    elif entry.extends and advertises_extended and max_positions is not None and given_factor:
        original = max(1, round(max_positions / given_factor))  # the model advertises L·s (Gemma 3's linear ×8)
    else:
        original = max_positions if max_positions is not None else RopeSpec.original_max_position_embeddings
    values["original_max_position_embeddings"] = original

    if entry.factor_from == "required" and given_factor is None:
        raise ValueError(_("rope_scaling needs 'factor' for rope_type {rope_type!r}.").format(rope_type=rope_type))
    if entry.factor_from == "optional":
        values["factor"] = 1.0 if given_factor is None else given_factor
    elif entry.factor_from == "from_lengths":
        values["factor"] = given_factor if given_factor is not None else need_max_positions() / original
    elif entry.factor_from == "required":
        values["factor"] = given_factor

    if "beta_fast" in entry.reads:
        values["beta_fast"] = float(params.get("beta_fast") or 32)
        values["beta_slow"] = float(params.get("beta_slow") or 1)
        values["truncate"] = bool(params.get("truncate", True))
    for key in ("attention_factor", "mscale", "mscale_all_dim"):
        if params.get(key) is not None:
            values[key] = float(_number(params, key, where))
    for key in entry.required:
        if key in _LIST_KEYS:
            if not isinstance(params.get(key), list):
                raise ValueError(_("rope_scaling needs {key!r} (a list of numbers) for rope_type {rope_type!r}.").format(
                    key=key, rope_type=rope_type))
            values[key] = tuple(params[key])
        else:
            if params.get(key) is None:
                raise ValueError(_("rope_scaling needs {key!r} for rope_type {rope_type!r}.").format(
                    key=key, rope_type=rope_type))
            values[key] = float(_number(params, key, where))
    return RopeSpec(**values)


def extended_length(config: Mapping | str) -> int:
    """The context length a config's RoPE is built for (of the layers context extension scales).

    For a scaled rope type, ``original_max_position_embeddings × factor`` when that is larger than
    ``max_position_embeddings`` (Qwen2.5's YaRN block: 32768 × 4 = 131072; a Llama-2 config with
    ``{"type": "linear", "factor": 4}``: 4096 × 4 = 16384); otherwise ``max_position_embeddings``.
    Raises ``ValueError`` for a config ``from_hf_config`` cannot read.
    """
    return extended_length_of(layer_map(_parsed(config)))


def extended_length_of(model: LayerMap) -> int:
    """``extended_length`` on a layer map already read."""
    spec = spec_of(model)
    advertised = model.context_length
    if not rope_type_entry(spec.rope_type).extends or (notes_of(model.text_model_type).advertises_extended and advertised):
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
