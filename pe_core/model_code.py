"""A config.json read by the model's own transformers code: its config class, its rotary class, its attention.

The layer map of a model the app has no notes on is taken from what transformers itself does with the config,
never from a stand-in: the model's own config class builds it (class defaults, old key names, the
standardisation and validation of ``rope_parameters``), its own rotary class gives each layer type's θᵢ and
attention factor, and which layers rotate at all is *observed*: the decoder is built on the meta device (no
memory, a 671B model in about a second), each decoder layer runs once on meta tensors with the model's
``apply_rotary_pos_emb`` functions wrapped, and a layer that never calls one has no RoPE (NoPE layers,
Mamba, convolution and linear-attention blocks, cross-attention, no-op blocks).

transformers is imported only here, and only when a config is read this way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import logging
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import torch

from i18n import _

# Keys that describe the file, the checkpoint or generation, not the network: never "unread".
_METADATA_KEYS = frozenset({
    "architectures", "auto_map", "transformers_version", "torch_dtype", "dtype", "_name_or_path", "model_type",
    "quantization_config", "use_cache", "tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "output_attentions", "output_hidden_states", "return_dict", "id2label", "label2id",
    "problem_type", "chunk_size_feed_forward", "is_encoder_decoder", "task_specific_params", "generation_config",
    "rope_scaling", "rope_parameters", "rope_theta", "partial_rotary_factor",  # read through standardize_rope_params
})
_ROTATION_PREFIXES = ("apply_rotary", "apply_rope")


class UnknownModelType(ValueError):
    """The installed transformers has no class for this model type (remote code, or newer than this install)."""


class LayerReading(NamedTuple):
    layer_type: str
    rotates: bool  # observed: the layer's own code called a rotary function
    rotation: str | None  # the function it called (apply_rotary_pos_emb, apply_rotary_pos_emb_interleave, ...)


@dataclasses.dataclass(frozen=True)
class ModelReading:
    """What the model's own code does with a config."""

    model_type: str
    transformers_version: str
    text_config: Any  # the model's own text config object
    layers: tuple[LayerReading, ...]
    frequencies: Mapping[str, tuple[torch.Tensor, float]]  # layer type -> (θᵢ float64, attention factor) of its class
    parameters: Mapping[str, Mapping]  # layer type -> the standardised rope_parameters block
    pairing: Mapping[str, str]  # layer type -> "half" or "interleaved", found by rotating unit vectors
    rotary_class: str | None
    unread_keys: tuple[str, ...]  # keys of the file that neither the config class nor the model read
    warnings: tuple[str, ...]  # what transformers only warned about
    _rotary_arguments: tuple[str, ...] = ()  # the parameters of the rotary module's forward

    @property
    def rotary_takes_layer_type(self) -> bool:
        """Does the rotary module's forward take the layer type (one table per layer type)?"""
        return self.rotary_class is not None and "layer_type" in self._rotary_arguments

    @property
    def layer_types(self) -> tuple[str, ...]:
        return tuple(layer.layer_type for layer in self.layers)


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def knows(model_type: str) -> bool:
    from transformers import CONFIG_MAPPING

    return model_type in CONFIG_MAPPING


_ONE_READER = threading.Lock()  # a read swaps module functions for recorders: one read at a time per process


def read(config: Mapping, read_as: str | None = None) -> ModelReading:
    """Build ``config`` (a config.json dict with a ``model_type``) with the model's own transformers classes, or
    with those of ``read_as`` when asked (a model type transformers lacks, read as the family it names)."""
    with _ONE_READER, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _read(config, read_as)


def _read(config: Mapping, read_as: str | None = None) -> ModelReading:
    import transformers
    from transformers import CONFIG_MAPPING

    model_type = config.get("model_type")
    if read_as is not None:
        if read_as not in CONFIG_MAPPING:
            raise UnknownModelType(_("transformers {version} has no model type {model_type!r} to read this config "
                                     "as.").format(version=transformers.__version__, model_type=read_as))
        model_type = read_as
    elif not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        raise UnknownModelType(_(
            "transformers {version} has no model type {model_type!r} (a model that needs trust_remote_code, or one "
            "newer than this install), so its layers cannot be read by its own code. Upgrade transformers, or ask "
            "to read it as a named family.").format(version=transformers.__version__, model_type=model_type)
            + _suggestion(config))
    config_class = CONFIG_MAPPING[model_type]
    captured: list[str] = []
    with _warnings_into(captured):
        try:
            built = config_class.from_dict({key: value for key, value in config.items() if key != "model_type"})
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise ValueError(_("transformers' {cls} refuses this config: {reason}").format(
                cls=config_class.__name__, reason=err)) from err
        text = built.get_text_config(decoder=True)
        modeling = _modeling_module(text)
        rotary = _rotary_module(modeling, text)
        layers, calls = _observe_rotating_layers(modeling, text, rotary)
    frequencies, parameters = {}, {}
    for layer_type in dict.fromkeys(layer.layer_type for layer in layers if layer.rotates):
        frequencies[layer_type] = _buffers(rotary, layer_type)
        parameters[layer_type] = _parameters_of(text, layer_type)
    pairing = {layer_type: _pairing(rotary, layer_type, function, 2 * len(frequencies[layer_type][0]))
               for layer_type, function in calls.items() if layer_type in frequencies}
    named = _names_in_code(built, text, modeling)
    unread = tuple(sorted(key for key in dict.fromkeys(_given_keys(config))
                          if key not in named and key not in _METADATA_KEYS))
    return ModelReading(model_type, transformers.__version__, text, tuple(layers), frequencies, parameters, pairing,
                        f"{type(rotary).__module__}.{type(rotary).__name__}" if rotary is not None else None,
                        unread, tuple(dict.fromkeys(captured)),
                        tuple(inspect.signature(rotary.forward).parameters) if rotary is not None else ())


def _suggestion(config: Mapping) -> str:
    """Where a remote-code config's auto_map names a config class this transformers has, the family to read it as."""
    from transformers import CONFIG_MAPPING

    auto_map = config.get("auto_map")
    named = auto_map.get("AutoConfig") if isinstance(auto_map, Mapping) else None
    if not isinstance(named, str):
        return ""
    class_name = named.rsplit(".", 1)[-1]
    for model_type in CONFIG_MAPPING:
        if CONFIG_MAPPING[model_type].__name__ == class_name:
            return " " + _("Its auto_map names {cls}: read it as {model_type!r} (--read-as {model_type}, or "
                           "model_type {model_type!r} in the pasted file).").format(cls=class_name, model_type=model_type)
    return ""


def _given_keys(config: Mapping) -> list[str]:
    from pe_core.layers import SUB_CONFIG_KEYS

    keys = list(config)
    for sub in SUB_CONFIG_KEYS:  # a composite's text part: its keys are the language model's
        if isinstance(config.get(sub), Mapping):
            keys = [key for key in keys if key != sub] + _given_keys(config[sub])
    return keys


@contextlib.contextmanager
def _warnings_into(captured: list[str]) -> Iterator[None]:
    """transformers' logger warnings while the model is read, kept to show the reader."""
    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                captured.append(record.getMessage().strip())

    logger = logging.getLogger("transformers")
    handler = Keep()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _names_in_code(built, text, modeling) -> set[str]:
    """Every key the model's code can read: its config classes' fields and old names, and any name its config,
    modeling and RoPE modules spell out. A key of the file outside this set is read by nothing."""
    import transformers.configuration_utils as configuration_utils
    import transformers.modeling_rope_utils as rope_utils

    names: set[str] = set()
    for config in {id(built): built, id(text): text}.values():
        config_class = type(config)
        if dataclasses.is_dataclass(config_class):
            names |= {item.name for item in dataclasses.fields(config_class)}
        names |= set(getattr(config_class, "attribute_map", {}))
        names |= set(getattr(config_class, "sub_configs", {}) or {})
        names |= _identifiers(sys.modules[config_class.__module__])
    for module in (modeling, configuration_utils, rope_utils):
        names |= _identifiers(module)
    return names


@functools.lru_cache(maxsize=64)
def _identifiers(module) -> frozenset[str]:
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return frozenset()
    return frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))


def _modeling_module(text):
    package = type(text).__module__.rsplit(".", 1)[0]
    return importlib.import_module(f"{package}.modeling_{package.rsplit('.', 1)[1]}")


def _text_model_class(modeling, text):
    import transformers

    found = [value for value in vars(modeling).values()
             if inspect.isclass(value) and issubclass(value, transformers.PreTrainedModel)
             and getattr(value, "config_class", None) is type(text) and value.__name__.endswith("Model")]
    if not found:
        raise ValueError(_("transformers' {module} has no model class for {config}.").format(
            module=modeling.__name__, config=type(text).__name__))
    return min(found, key=lambda cls: len(cls.__name__))


def _rotary_module(modeling, text):
    """The text model's own rotary module (two small buffers per layer type), or None where it has none."""
    classes = [value for value in vars(modeling).values()
               if inspect.isclass(value) and value.__name__.endswith("RotaryEmbedding")
               and value.__module__ == modeling.__name__ and "Vision" not in value.__name__]
    text_first = sorted(classes, key=lambda cls: ("Text" not in cls.__name__, len(cls.__name__)))
    for rotary_class in text_first:
        try:
            return rotary_class(config=text)
        except TypeError:
            continue
        except (KeyError, ValueError, AttributeError) as err:
            raise ValueError(_("transformers' {cls} refuses this config: {reason}").format(
                cls=rotary_class.__name__, reason=f"{type(err).__name__} {err}")) from err
    return None


def _layer_types_of(text) -> list[str] | None:
    given = getattr(text, "layer_types", None)
    return list(given) if isinstance(given, (list, tuple)) else None


def _decoder_layers(model, count: int) -> torch.nn.ModuleList:
    lists = [module for module in model.modules() if isinstance(module, torch.nn.ModuleList) and len(module) == count]
    if not lists:
        raise ValueError(_("transformers' {cls} has no list of {count} decoder layers to read.").format(
            cls=type(model).__name__, count=count))
    return lists[0]


def _position_embeddings(rotary, layer_type: str | None, positions: torch.Tensor):
    if rotary is None:
        return None
    embeddings = _rotations(rotary, layer_type, positions)
    if embeddings is None:
        return None
    if isinstance(embeddings, torch.Tensor):  # Llama 4, DeepSeek-V2: one tensor of complex rotations
        return embeddings.to("meta")
    return tuple(part.to("meta") for part in embeddings)


def _rotations(rotary, layer_type: str | None, positions: torch.Tensor):
    """The rotary module's output at ``positions`` (batch × tokens), or with one row per axis where it takes
    M-RoPE's (time, height, width) positions; None where it gives nothing for this layer type."""
    probe = torch.zeros(1)
    per_type = "layer_type" in inspect.signature(rotary.forward).parameters and layer_type is not None
    for given in (positions, positions.expand(3, *positions.shape)):
        try:
            return rotary(probe, given, layer_type=layer_type) if per_type else rotary(probe, given)
        except (KeyError, TypeError, RuntimeError, IndexError, ValueError):
            continue
    return None


def _observe_rotating_layers(modeling, text, rotary) -> tuple[list[LayerReading], dict[str, Callable]]:
    """Run each decoder layer once on meta tensors and note which ones call a rotary function."""
    model_class = _text_model_class(modeling, text)
    with contextlib.suppress(AttributeError, ValueError):
        text._attn_implementation = "eager"  # plain matmuls: what runs on meta tensors for every head layout
    try:
        with torch.device("meta"):
            model = model_class(text)
    except (TypeError, ValueError, KeyError, AttributeError, RuntimeError) as err:
        raise ValueError(_("transformers' {cls} cannot be built from this config: {reason}").format(
            cls=model_class.__name__, reason=f"{type(err).__name__}: {err}")) from err
    count = text.num_hidden_layers
    layers = _decoder_layers(model, count)
    # a model that builds no rotary module hands its layers no cos and sin (GraniteMoeHybrid without "rope")
    computes = not (hasattr(model, "rotary_emb") and model.rotary_emb is None)
    declared = _layer_types_of(text)
    current: dict[str, Any] = {}
    calls: dict[int, str] = {}
    functions: dict[str, Callable] = {}

    def wrapped(name: str, function: Callable) -> Callable:
        def recording(*args, **kwargs):
            calls.setdefault(current["index"], name)
            functions.setdefault(current["type"], function)
            return function(*args, **kwargs)
        return recording

    modules = {type(module).__module__ for module in model.modules()} | {modeling.__name__}
    originals = []
    for module_name in modules:
        module = sys.modules[module_name]
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith(_ROTATION_PREFIXES) and callable(value) and not inspect.isclass(value):
                originals.append((module, name, value))
                setattr(module, name, wrapped(name, value))
            elif name == "eager_attention_forward" and callable(value):
                # the scores themselves are not needed, and a config cut short (heads that do not group) would
                # fail there after the layer has shown whether it rotates
                originals.append((module, name, value))
                setattr(module, name, _attention_skipped)
    sequence = 4
    hidden = torch.empty(1, sequence, text.hidden_size, device="meta")
    positions = torch.arange(sequence)[None]
    readings = []
    unobserved: list[tuple[int, str]] = []
    try:
        for index, layer in enumerate(layers):
            layer_type = getattr(layer, "attention_type", None) or (declared[index] if declared else "full_attention")
            current.update(index=index, type=layer_type)
            arguments = {"hidden_states": hidden, "attention_mask": None, "position_ids": positions.to("meta"),
                         "position_embeddings": _position_embeddings(rotary, layer_type, positions) if computes
                         else None,
                         "use_cache": False}
            accepted = inspect.signature(layer.forward).parameters
            if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in accepted.values()):
                arguments = {key: value for key, value in arguments.items() if key in accepted}
            first = next(iter(accepted), None)
            if first is not None and first != "hidden_states":  # RecurrentGemma's activations
                arguments.pop("hidden_states", None)
            for position, (name, parameter) in enumerate(accepted.items()):
                if name in arguments or parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                    continue
                # the token states under another name (RecurrentGemma's activations, Zamba2's original states, a
                # cross-attention layer's image states), the positions of a cache, and None for the rest
                if position == 0 or name.endswith("states") or name == "activations":
                    arguments[name] = hidden
                elif name == "cache_position":
                    arguments[name] = torch.arange(sequence, device="meta")
                elif parameter.default is parameter.empty:
                    arguments[name] = None
            try:
                with torch.no_grad():
                    layer(**arguments)
            except Exception as err:  # noqa: BLE001 - any failure is judged by where it happened
                # What runs after the token mixer (a mixture of experts routing on meta values) may fail: whether
                # the layer rotated is known by then. A failure anywhere else leaves the layer unobserved.
                if index not in calls and not _after_the_mixer(err):
                    unobserved.append((index, f"{type(err).__name__}: {err}"))
            readings.append(LayerReading(layer_type, index in calls, calls.get(index)))
    finally:
        for module, name, value in originals:
            setattr(module, name, value)
    if unobserved:
        indices = ", ".join(str(index) for index, _error in unobserved[:8]) + (" ..." if len(unobserved) > 8 else "")
        raise ValueError(_(
            "transformers' {cls} could not be run on layers {indices} to see whether they rotate ({error}), so this "
            "model's layers are not read.").format(cls=model_class.__name__, indices=indices, error=unobserved[0][1][:200]))
    return readings, functions


def _attention_skipped(module, query, key, value, attention_mask, **kwargs):
    """What eager attention returns, in shape only: (batch, tokens, query heads, value width), no weights."""
    batch, heads, tokens = query.shape[:3]
    return torch.empty(batch, tokens, heads, value.shape[-1], device=query.device, dtype=value.dtype), None


# Modules that run after a layer's token mixer: a failure inside one leaves the mixer's verdict standing.
_AFTER_MIXER = ("mlp", "moe", "expert", "feedforward", "feed_forward", "ffn", "router", "gate", "sparse")


def _after_the_mixer(error: BaseException) -> bool:
    trace = error.__traceback__
    while trace is not None:
        owner = trace.tb_frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module) and any(word in type(owner).__name__.lower() for word in _AFTER_MIXER):
            return True
        trace = trace.tb_next
    return False


def _buffers(rotary, layer_type: str) -> tuple[torch.Tensor, float]:
    if rotary is None:
        raise ValueError(_("The model's code rotates its {layer_type!r} layers, but has no rotary class to read.").format(
            layer_type=layer_type))
    if hasattr(rotary, "embed_positions"):  # GPT-J, CodeGen: a sin | cos table by position
        sin, cos = rotary.embed_positions[1].to(torch.float64).chunk(2)
        return torch.atan2(sin, cos), 1.0
    if hasattr(rotary, f"{layer_type}_inv_freq"):
        return (getattr(rotary, f"{layer_type}_inv_freq").to(torch.float64),
                float(getattr(rotary, f"{layer_type}_attention_scaling")))
    return rotary.inv_freq.to(torch.float64), float(getattr(rotary, "attention_scaling", 1.0))


def _parameters_of(text, layer_type: str) -> Mapping:
    params = getattr(text, "rope_parameters", None) or {}
    if isinstance(params.get(layer_type), Mapping):
        return dict(params[layer_type])
    return dict(params)


def _pairing(rotary, layer_type: str, function: Callable, width: int) -> str:
    """How the model's own rotation pairs a head's ``width`` rotated dimensions: rotate unit vectors with the
    function its attention called and see which dimensions turn together."""
    embeddings = _rotations(rotary, layer_type, torch.tensor([[5]]))
    if embeddings is None:
        return "half"
    parts = (embeddings,) if isinstance(embeddings, torch.Tensor) else tuple(embeddings)
    names = list(inspect.signature(function).parameters)[:3] if _has_signature(function) else []

    def turned(dimension: int) -> set[int]:
        unit = torch.zeros(1, 1, 1, width)
        unit[..., dimension] = 1.0
        # Gemma 4 rotates q and k apart, and so do GPT-J and CodeGen, whose module gives (sin, cos) in the order
        # their function takes them
        if names in (["x", "cos", "sin"], ["tensor", "sin", "cos"]):
            out = function(unit, *parts)
        else:
            out = function(unit, unit, *parts)[0]
        return set(torch.nonzero(out.flatten().abs() > 1e-6).flatten().tolist())

    try:
        return "interleaved" if turned(0) == turned(1) else "half"
    except (RuntimeError, TypeError, IndexError, ValueError):
        return "half"


def _has_signature(function: Callable) -> bool:
    try:
        inspect.signature(function)
    except (TypeError, ValueError):
        return False
    return True
