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

import torch

from i18n import _

NUMBER_FILE_TYPES = ("json", "csv", "txt", "npy", "pt", "pth")
MAX_FILE_BYTES = 8 * 1024 * 1024
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


def _numbers_from_tensor(value, where: str) -> tuple[float, ...]:
    if isinstance(value, Mapping):
        keys = [k for k in value if any(str(k).endswith(name) for name in _TENSOR_KEYS)]
        if not keys:
            raise ValueError(_("{where} holds no tensor named inv_freq (keys: {keys}).").format(
                where=where, keys=", ".join(map(str, list(value)[:8]))))
        value = value[keys[0]]
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
    return _finite_numbers(squeezed.to(torch.float64).tolist(), where)


def read_numbers(data: bytes, filename: str) -> tuple[float, ...]:
    """The numbers in a file's bytes; the type comes from the name (.json, .csv, .txt, .npy, .pt, .pth)."""
    name = Path(filename).name or _("the file")
    kind = Path(filename).suffix.lower().lstrip(".")
    if kind not in NUMBER_FILE_TYPES:
        raise ValueError(_("{name}: unknown file type; give one of {types}.").format(
            name=name, types=", ".join("." + t for t in NUMBER_FILE_TYPES)))
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
        return parse_numbers(text, name)
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
    try:
        with warnings.catch_warnings():  # an unusual pickle protocol warns before it fails: the message below says it
            warnings.simplefilter("ignore")
            value = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many kinds for a corrupt or unsafe file
        raise ValueError(_("{name} could not be read as a torch file (only tensors and dicts of tensors are loaded): "
                           "{error}").format(name=name, error=str(err).splitlines()[0][:160])) from err
    return _numbers_from_tensor(value, name)


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
        text = path.read_text(encoding="utf-8")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"That is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno}).") from err
    if not isinstance(config, dict):
        raise ValueError("A config.json must be a JSON object ({...}).")
    return config
