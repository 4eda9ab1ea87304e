"""Read a transformers ``config.json`` dict into a ``RopeSpec``, the way transformers reads it.

Follows ``RotaryEmbeddingConfigMixin.standardize_rope_params`` and the ``_compute_*`` functions
of transformers 5.x: ``rope_parameters`` (v5) or ``rope_scaling`` (v4), ``type`` as an old
name for ``rope_type``, a top-level ``original_max_position_embeddings`` taking priority
(Phi-3), and ``factor`` defaulting to max_position_embeddings / original (DeepSeek, Phi-3).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from i18n import N_, _
from pe_core.rope import ROPE_TYPES, RopeSpec

# Old names that transformers still accepts for a rope type. Qwen2-VL's "mrope" splits the pairs among
# time, height and width positions but builds its frequencies as plain RoPE does.
_TYPE_ALIASES = {"su": "longrope", "ntk-aware": "ntk", "dynamic_ntk": "dynamic", "mrope": "default"}
# Rope types transformers has that this app does not analyse, with what they are.
_UNSUPPORTED_TYPES = {"proportional": N_("Gemma 4's proportional RoPE")}
# Where multimodal and composite configs keep the language model's own config.
SUB_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "thinker_config")
_TEXT_MODEL_KEYS = ("head_dim", "qk_rope_head_dim", "hidden_size", "num_attention_heads", "rope_theta",
                    "rope_scaling", "rope_parameters", "max_position_embeddings")
# A config.json written by transformers leaves out values equal to its config class's defaults; for these
# model types the RoPE-relevant ones are filled in as transformers does (Gemma3TextConfig's defaults).
_MODEL_TYPE_DEFAULTS = {
    "gemma3_text": {"head_dim": 256, "num_attention_heads": 8, "max_position_embeddings": 131_072,
                    "rope_theta": 1_000_000.0},
}
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


def _rope_parameters(config: Mapping) -> dict:
    params = config.get("rope_parameters")
    if params is None:
        params = config.get("rope_scaling")
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(_("config.json field 'rope_scaling' / 'rope_parameters' must be an object (got {params!r}).").format(params=params))
    nested = [key for key, value in params.items() if isinstance(value, Mapping)]
    if nested:  # per-layer-type parameters (e.g. Gemma 3): show the full-attention layers
        key = "full_attention" if "full_attention" in nested else nested[0]
        return dict(params[key])
    return dict(params)


def text_config_of(config: Mapping) -> tuple[Mapping, str | None]:
    """The part of a config.json that describes the language model, and the key it was found under.

    A text model's config is read as it is; a composite one (Gemma 3, LLaVA-style and other multimodal
    configs) keeps it under ``text_config`` (or ``language_config`` ...), which is then read instead.
    """
    where = None
    if not any(config.get(key) is not None for key in _TEXT_MODEL_KEYS):
        where = next((key for key in SUB_CONFIG_KEYS if isinstance(config.get(key), Mapping)), None)
        if where is not None:
            config = config[where]
    defaults = _MODEL_TYPE_DEFAULTS.get(config.get("model_type"))
    if defaults:
        config = {**defaults, **{k: v for k, v in config.items() if v is not None}}
    return config, where


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


def from_hf_config(config: Mapping | str) -> RopeSpec:
    """A ``RopeSpec`` equal to what transformers builds from this ``config.json`` (dict or JSON text).

    Raises ``ValueError`` naming the missing or invalid field.
    """
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as err:
            raise ValueError(_("That is not valid JSON: {msg} (line {lineno}, column {colno}).").format(msg=err.msg, lineno=err.lineno, colno=err.colno)) from err
    if not isinstance(config, Mapping):
        raise ValueError(_("A config.json must be a JSON object ({...})."))
    config, _path = text_config_of(config)
    _refuse_non_rope(config)

    params = _rope_parameters(config)
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

    values: dict = {"head_dim": head_dim_of(config), "base": float(base), "rope_type": rope_type,
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
    else:
        original = max_positions if max_positions is not None else RopeSpec.original_max_position_embeddings
    values["original_max_position_embeddings"] = original

    if rope_type in ("linear", "ntk", "dynamic", "llama3", "ntk_by_parts"):
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
    """The context length a config's RoPE is built for.

    For a scaled rope type, ``original_max_position_embeddings × factor`` when that is larger than
    ``max_position_embeddings`` (Qwen2.5's YaRN block: 32768 × 4 = 131072; a Llama-2 config with
    ``{"type": "linear", "factor": 4}``: 4096 × 4 = 16384); otherwise ``max_position_embeddings``.
    Raises ``ValueError`` for a config ``from_hf_config`` cannot read.
    """
    if isinstance(config, str):
        config = json.loads(config)
    spec = from_hf_config(config)
    advertised = context_length_of(text_config_of(config)[0])
    if spec.rope_type not in _EXTENDING_TYPES:
        return advertised if advertised is not None else spec.original_max_position_embeddings
    built_for = int(round(spec.original_max_position_embeddings * spec.factor))
    return max(built_for, advertised or 0)


def original_length_given(config: Mapping) -> bool:
    """Does the config say the length the model was trained at before scaling (original_max_position_embeddings)?"""
    text, _path = text_config_of(config)
    return text.get("original_max_position_embeddings") is not None or \
        _rope_parameters(text).get("original_max_position_embeddings") is not None


def context_length_of(config: Mapping) -> int | None:
    """The context length the model advertises (``max_position_embeddings``), if given."""
    value = config.get("max_position_embeddings")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 1 else None
