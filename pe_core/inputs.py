"""What a practitioner hands the check and plan tools: a model config and a list of numbers.

One path for the CLI, the tests and the page: a file's bytes (``read_numbers``) or pasted text
(``parse_numbers``) become a tuple of floats, and ``numbers_text`` writes them back as text that
parses to the same floats (the page keeps uploads as that text, so a link or the CLI sees the same
values). ``read_config`` turns a preset name, a path or JSON text into a config dict.

Every error is a ``ValueError`` whose message says what was wrong and what would be accepted.
"""

from __future__ import annotations

import io
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from i18n import _

NUMBER_FILE_TYPES = ("json", "csv", "txt", "npy", "pt", "pth", "bin", "safetensors")
TENSOR_FILE_TYPES = ("pt", "pth", "bin", "safetensors", "npz")
MAX_FILE_BYTES = 8 * 1024 * 1024
# transformers keeps the θ a dynamic or LongRoPE module started from beside the live ones: never the buffer in use
_ORIGINAL = "original_inv_freq"
MAX_NUMBERS = 65_536
# A state dict may hold the buffer under a longer name (model.layers.0.self_attn.rotary_emb.inv_freq).
_TENSOR_KEYS = ("inv_freq", "theta", "freqs", "frequencies")
# torch / numpy print wrappers a pasted value may carry: tensor([...], dtype=torch.float32), array([...])
_WRAPPER = re.compile(r"^\s*(tensor|array)\s*\(", re.IGNORECASE)
_KEYWORD_ARGUMENT = re.compile(r",?\s*(dtype|device|requires_grad)\s*=\s*[\w.:'\"]+", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s,;\[\]()]+")


def _finite_numbers(values: Sequence[float], where: str) -> tuple[float, ...]:
    if not values:
        raise ValueError(_("{where} holds no numbers.").format(where=where))
    if len(values) > MAX_NUMBERS:
        raise ValueError(_("{where} holds {count:,} numbers; a RoPE head has at most a few hundred.").format(
            where=where, count=len(values)))
    for index, value in enumerate(values):
        if math.isnan(value):
            raise ValueError(_("{where}: number {index} is NaN; every θᵢ must be a finite number.").format(
                where=where, index=index + 1))
        if math.isinf(value):
            raise ValueError(_("{where}: number {index} is infinite; every θᵢ must be a finite number.").format(
                where=where, index=index + 1))
    return tuple(float(v) for v in values)


def parse_numbers(text: str, where: str | None = None) -> tuple[float, ...]:
    """Numbers from text: a JSON list, ``{"inv_freq": [...]}``, a printed tensor or array, or numbers
    separated by commas, spaces, semicolons or new lines (one CSV column with a header is fine)."""
    where = where or _("The pasted text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(_("{where} is empty: paste the θᵢ of your implementation (one number per pair).").format(
            where=where))
    stripped = text.strip()
    if stripped[0] in "[{":
        try:
            return _numbers_from_json(json.loads(stripped), where)
        except json.JSONDecodeError:
            pass  # e.g. a printed list with ... or a trailing comma: read it as plain text below
    if "..." in stripped or "…" in stripped:
        raise ValueError(_("{where} is abbreviated with '...': print every value, e.g. `inv_freq.tolist()` or "
                           "`torch.set_printoptions(profile='full')`.").format(where=where))
    body = _KEYWORD_ARGUMENT.sub("", _WRAPPER.sub("", stripped))
    tokens = [t for t in _SEPARATORS.split(body) if t]
    if tokens and _number(tokens[0]) is None and all(_number(t) is not None for t in tokens[1:]):
        tokens = tokens[1:]  # a header line such as "inv_freq"
    values = []
    for index, token in enumerate(tokens):
        number = _number(token)
        if number is None:
            raise ValueError(_("{where}: item {index}, {item!r}, is not a number.").format(
                where=where, index=index + 1, item=token[:40]))
        values.append(number)
    return _finite_numbers(values, where)


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _numbers_from_json(data, where: str) -> tuple[float, ...]:
    if isinstance(data, Mapping):
        keys = [k for k in data if any(str(k).endswith(name) for name in _TENSOR_KEYS)]
        if not keys:
            raise ValueError(_("{where} is a JSON object without an 'inv_freq' list (keys: {keys}).").format(
                where=where, keys=", ".join(map(str, list(data)[:8]))))
        data = data[keys[0]]
    if not isinstance(data, list):
        raise ValueError(_("{where} must be a list of numbers (got {kind}).").format(where=where,
                                                                               kind=type(data).__name__))
    flat = data[0] if len(data) == 1 and isinstance(data[0], list) else data
    values = []
    for index, item in enumerate(flat):
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise ValueError(_("{where}: item {index}, {item!r}, is not a number.").format(
                where=where, index=index + 1, item=str(item)[:40]))
        values.append(float(item))
    return _finite_numbers(values, where)


class NumbersRead(NamedTuple):
    values: tuple[float, ...]
    key: str | None  # the state-dict entry they were read from (None: the file held only the numbers)


def flat_tensors(value, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor in a (nested) state dict, by its dotted name."""
    found = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            found.update(flat_tensors(item, f"{prefix}{key}."))
    elif isinstance(value, torch.Tensor):
        found[prefix.rstrip(".")] = value
    return found


def inv_freq_key(tensors: Mapping[str, torch.Tensor], where: str, layer_type: str | None = None) -> str:
    """The entry of a state dict that holds the θᵢ: an ``inv_freq`` buffer (``model.rotary_emb.inv_freq``), the
    one of ``layer_type`` where a model keeps one per layer type (Gemma 3's ``full_attention_inv_freq``), or the
    one many layers share. Ambiguous or missing: a ``ValueError`` listing the keys."""
    keys = [key for key in tensors
            if any(key.endswith(name) for name in _TENSOR_KEYS) and not key.endswith(_ORIGINAL)]
    if not keys:
        raise ValueError(_("{where} holds no tensor named inv_freq (keys: {keys}).").format(
            where=where, keys=", ".join(list(tensors)[:8])))
    per_type = [key for key in keys if key.rsplit(".", 1)[-1].endswith("_inv_freq")]
    if layer_type is not None and per_type:
        keys = [key for key in per_type if key.rsplit(".", 1)[-1] == f"{layer_type}_inv_freq"]
        if not keys:
            raise ValueError(_("{where} has no inv_freq for {layer_type} layers; its inv_freq entries are "
                               "{keys}.").format(where=where, layer_type=layer_type, keys=", ".join(per_type)))
    first = tensors[keys[0]]
    if any(tensors[key].shape != first.shape or not torch.equal(tensors[key], first) for key in keys[1:]):
        hint = _(" (pick one with --layer-type)") if per_type else ""
        raise ValueError(_("{where} holds several different inv_freq tensors{hint}: {keys}.").format(
            where=where, hint=hint, keys=", ".join(sorted(keys))))
    return keys[0]


def _numbers_from_tensor(value, where: str, layer_type: str | None = None) -> NumbersRead:
    key = None
    if isinstance(value, Mapping):
        tensors = flat_tensors(value)
        key = inv_freq_key(tensors, where, layer_type)
        value = tensors[key]
    if not isinstance(value, torch.Tensor):
        raise ValueError(_("{where} must hold a tensor of θᵢ (got {kind}).").format(where=where,
                                                                              kind=type(value).__name__))
    if not value.is_floating_point():
        raise ValueError(_("{where} holds a {dtype} tensor; θᵢ are floating-point numbers.").format(
            where=where, dtype=value.dtype))
    squeezed = value.detach().to("cpu").squeeze()
    if squeezed.dim() != 1:
        raise ValueError(_("{where} holds a tensor of shape {shape}; give a 1-D list of θᵢ.").format(
            where=where, shape=tuple(value.shape)))
    return NumbersRead(_finite_numbers(squeezed.to(torch.float64).tolist(), where), key)


def read_numbers(data: bytes, filename: str) -> tuple[float, ...]:
    """The numbers in a file's bytes; the type comes from the name (.json, .csv, .txt, .npy, .pt, .pth, .bin,
    .safetensors: a state dict's inv_freq buffer)."""
    return read_inv_freq(data, filename).values


def _named_kind(filename: str, types) -> tuple[str, str]:
    """A file's name to show and its type (its suffix), refused by name unless it is one of ``types``."""
    name = Path(filename).name or _("the file")
    kind = Path(filename).suffix.lower().lstrip(".")
    if kind not in types:
        raise ValueError(_("{name}: unknown file type; give one of {types}.").format(
            name=name, types=", ".join("." + t for t in types)))
    return name, kind


def read_inv_freq(data: bytes, filename: str, layer_type: str | None = None) -> NumbersRead:
    """The θᵢ in a file's bytes and, for a state dict, the key they were read from (the ``layer_type``'s own
    buffer where the model keeps one per layer type)."""
    name, kind = _named_kind(filename, NUMBER_FILE_TYPES)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(_("{name} is {size:.1f} MB; a list of θᵢ is a few kB.").format(name=name, size=len(data) / 1e6))
    if not data:
        raise ValueError(_("{name} is empty.").format(name=name))
    if kind in ("json", "csv", "txt"):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ValueError(_("{name} is not text (byte {byte} is not UTF-8); save the numbers as text, or as "
                               ".npy / .pt.").format(name=name, byte=err.start)) from err
        return NumbersRead(parse_numbers(text, name), None)
    if kind == "safetensors":
        return _numbers_from_tensor(read_tensors(data, filename), name, layer_type)
    if kind == "npy":
        import numpy as np  # only to read the file format; the numbers go on as floats

        if not data.startswith(b"\x93NUMPY"):
            raise ValueError(_("{name} could not be read as .npy: it does not start with the NumPy header.").format(
                name=name))
        try:
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as err:
            raise ValueError(_("{name} is not a plain .npy array ({error}).").format(name=name, error=err)) from err
        except Exception as err:  # noqa: BLE001 - numpy raises several kinds for a corrupt header
            raise ValueError(_("{name} could not be read as .npy: {error}.").format(name=name, error=err)) from err
        if array.dtype.kind not in "fiu":
            raise ValueError(_("{name} holds {dtype} values; θᵢ are numbers.").format(name=name, dtype=array.dtype))
        return _numbers_from_tensor(torch.as_tensor(array.astype("float64")), name)
    return _numbers_from_tensor(_torch_file(data, name), name, layer_type)


def _torch_file(data: bytes, name: str):
    try:
        with warnings.catch_warnings():  # an unusual pickle protocol warns before it fails: the message below says it
            warnings.simplefilter("ignore")
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many kinds for a corrupt or unsafe file
        raise ValueError(_("{name} could not be read as a torch file (only tensors and dicts of tensors are loaded): "
                           "{error}").format(name=name, error=str(err).splitlines()[0][:160])) from err


def read_tensors(data: bytes, filename: str, max_bytes: int = MAX_FILE_BYTES) -> dict[str, torch.Tensor]:
    """Named tensors from a file's bytes: a PyTorch file (.pt, .pth, .bin: a tensor, a (nested) dict of tensors, or
    a pair of tensors, read as q and k), a .safetensors file or a NumPy .npz archive."""
    name, kind = _named_kind(filename, TENSOR_FILE_TYPES)
    if len(data) > max_bytes:
        raise ValueError(_("{name} is {size:.1f} MB; at most {limit:.0f} MB is read.").format(
            name=name, size=len(data) / 1e6, limit=max_bytes / 1e6))
    if not data:
        raise ValueError(_("{name} is empty.").format(name=name))
    if kind == "safetensors":
        try:
            from safetensors import SafetensorError
            from safetensors.torch import load
        except ImportError as err:
            raise ValueError(_("{name}: reading .safetensors needs the safetensors package (pip install "
                               "safetensors), or save the tensors with torch.save as .pt.").format(name=name)) from err
        try:
            return dict(load(data))
        except (SafetensorError, ValueError, RuntimeError) as err:
            raise ValueError(_("{name} could not be read as .safetensors: {error}").format(
                name=name, error=str(err).splitlines()[0][:160])) from err
    if kind == "npz":
        import numpy as np

        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                return {key: torch.as_tensor(archive[key]) for key in archive.files}
        except Exception as err:  # noqa: BLE001 - numpy raises several kinds for a corrupt archive
            raise ValueError(_("{name} could not be read as .npz: {error}").format(
                name=name, error=str(err).splitlines()[0][:160])) from err
    value = _torch_file(data, name)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, torch.Tensor) for v in value):
        return {"q": value[0], "k": value[1]}
    if isinstance(value, torch.Tensor):
        return {"tensor": value}
    tensors = flat_tensors(value)
    if not tensors:
        raise ValueError(_("{name} holds no tensors.").format(name=name))
    return tensors


def numbers_text(values: Sequence[float]) -> str:
    """Numbers as text that parses back to exactly the same floats (shortest round-trip form)."""
    return ", ".join(repr(float(v)) for v in values)


def read_config(source: str) -> dict:
    """A config dict from a preset name, a path to a config.json, or JSON text."""
    from pe_core.presets import load_presets

    if not isinstance(source, str) or not source.strip():
        raise ValueError("Give a preset name, a path to a config.json, or the JSON text itself.")
    text = source.strip()
    for preset in load_presets():
        if preset.name == text:
            return dict(preset.config)
    if text[0] not in "{[":
        path = Path(text).expanduser()
        if not path.exists():
            names = ", ".join(p.name for p in load_presets())
            raise ValueError(f"{text!r} is neither a preset ({names}) nor an existing file.")
        if path.is_dir():
            raise ValueError(f"{text!r} is a folder: give the config.json inside it.")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"{str(path)!r} cannot be read as a text file ({err.__class__.__name__}: {err}).") from err
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"That is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno}).") from err
    if not isinstance(config, dict):
        raise ValueError("A config.json must be a JSON object ({...}).")
    return config
