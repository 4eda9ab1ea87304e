"""The rotation probe's files: the probe a port's author runs their rotary on, the script that runs it, and
``python -m pe_core.check CONFIG --probe DIR`` / ``--rotated FILE``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from i18n import _
from pe_core.probe import Probe, check_rotation, make_probe, report_json, report_text

if TYPE_CHECKING:
    from pe_core.layers import LayerKind

PROBE_FILE, SCRIPT_FILE = "probe.pt", "run_my_rotary.py"


SCRIPT = '''"""Run your own rotary on the probe, save what it returns, and check it:

    python -m pe_core.check {config} --rotated rotated.pt{layer_type}

probe.pt holds q and k, float32 [batch, heads, tokens, head_dim] = {shape}, and position_ids {positions_shape}
({positions_note}). Keep everything in float32: a model cast to bfloat16 shows up as a precision bug.
You may save your cos/sin tables instead ({{"cos": cos, "sin": sin}}, [batch, tokens, width] or [tokens, width]).
"""

import torch

probe = torch.load("probe.pt")
q, k, position_ids = probe["q"], probe["k"], probe["position_ids"]


def my_rotary(q, k, position_ids):
    """Replace this with your implementation. The model's own, in transformers, for comparison:

    from transformers import AutoConfig
    from {module} import {rotary}, {rotation}
    config = AutoConfig.from_pretrained("path/to/model").get_text_config()
    cos, sin = {rotary}(config)(q, position_ids{layer_type_argument})
    return {rotation}(q, k, cos, sin)
    """
    raise NotImplementedError("call your rotary here")


q_rotated, k_rotated = my_rotary(q, k, position_ids)
torch.save({{"q": q_rotated.float(), "k": k_rotated.float()}}, "rotated.pt")
print("wrote rotated.pt")
'''


# The rotary a config without a model type is read as (LlamaConfig's).
_LLAMA_ROTARY = ("transformers.models.llama.modeling_llama.LlamaRotaryEmbedding", "apply_rotary_pos_emb")


def probe_script(probe: Probe, config_name: str = "CONFIG", layer_type: str | None = None,
                 kind: LayerKind | None = None) -> str:
    """The script that runs a port's rotary on the probe; its docstring shows the model's own rotary class and the
    rotation function its attention calls on ``kind``'s layers (Llama's for a config without a model type)."""
    mrope = probe.position_ids.dim() == 3
    import shlex

    path, rotation = (kind.rotary_class, kind.rotation) if kind is not None and kind.rotary_class else _LLAMA_ROTARY
    module, rotary = path.rsplit(".", 1)
    per_type = kind is not None and kind.rotary_takes_layer_type
    return SCRIPT.format(config=shlex.quote(config_name), layer_type=f" --layer-type {layer_type}" if layer_type else "",
                         module=module, rotary=rotary, rotation=rotation or "apply_rotary_pos_emb",
                         layer_type_argument=f", layer_type={kind.layer_type!r}" if per_type else "",
                         shape=list(probe.q.shape), positions_shape=list(probe.position_ids.shape),
                         positions_note="time, height and width positions: M-RoPE" if mrope else
                         "int64, from 0 to twice the length the model is built for")


def probe_files(probe: Probe, config_name: str = "CONFIG", layer_type: str | None = None,
                kind: LayerKind | None = None) -> dict[str, bytes]:
    """The probe as files: probe.pt, q.npy / k.npy / position_ids.npy, probe.safetensors (when the package is
    installed) and the script."""
    import io

    import numpy as np

    files = {}
    buffer = io.BytesIO()
    torch.save({"q": probe.q, "k": probe.k, "position_ids": probe.position_ids, "seed": torch.tensor(probe.seed)},
               buffer)
    files[PROBE_FILE] = buffer.getvalue()
    for name, value in (("q", probe.q), ("k", probe.k), ("position_ids", probe.position_ids)):
        buffer = io.BytesIO()
        np.save(buffer, value.numpy())
        files[f"{name}.npy"] = buffer.getvalue()
    try:
        from safetensors.torch import save
    except ImportError:
        pass  # .pt and .npy carry the same tensors
    else:
        files["probe.safetensors"] = save({"q": probe.q.contiguous(), "k": probe.k.contiguous(),
                                           "position_ids": probe.position_ids.contiguous()})
    files[SCRIPT_FILE] = probe_script(probe, config_name, layer_type, kind).encode()
    return files


def write_probe(probe: Probe, directory: str | Path, config_name: str = "CONFIG",
                layer_type: str | None = None, kind: LayerKind | None = None) -> list[Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in probe_files(probe, config_name, layer_type, kind).items():
        path = directory / name
        path.write_bytes(data)
        written.append(path)
    return written


def read_probe(tensors: Mapping[str, torch.Tensor]) -> Probe:
    """A probe saved by ``write_probe`` (read with ``pe_core.inputs.read_tensors``)."""
    missing = [key for key in ("q", "k", "position_ids") if key not in tensors]
    if missing:
        raise ValueError(_("The probe file lacks {keys}.").format(keys=", ".join(missing)))
    seed = tensors.get("seed")
    return Probe(tensors["q"].to(torch.float32), tensors["k"].to(torch.float32), tensors["position_ids"].long(),
                 int(seed) if seed is not None else 0)


def probe_main(args, kind) -> int:
    """``python -m pe_core.check CONFIG --probe DIR`` writes the probe; ``--rotated FILE`` checks a port's output on
    it (the probe in ``--probe DIR`` if given, else the seeded one). Exit 0: written or a match; 1: a mismatch;
    2: bad input."""
    import json
    import sys

    from pe_core.inputs import read_tensors

    try:
        directory = Path(args.probe) if args.probe is not None else None
        if args.rotated is None:
            probe = make_probe(kind.spec, kind.mrope_section, args.seed)
            config_name = Path(args.config).name if Path(args.config).is_file() else args.config
            if config_name.lstrip().startswith("{"):  # JSON text: the script names it generically
                config_name = "config.json"
            written = write_probe(probe, directory, config_name, args.layer_type, kind)
            print(_("Wrote {files} to {directory}: run {script} with your rotary, then check its output with "
                    "--rotated.").format(files=", ".join(path.name for path in written), directory=directory,
                                         script=SCRIPT_FILE))
            return 0
        if directory is not None:
            path = directory / PROBE_FILE
            if not path.is_file():
                raise ValueError(_("{path}: no probe there (write one with --probe DIR first).").format(path=path))
            probe = read_probe(read_tensors(path.read_bytes(), path.name))
        else:
            probe = make_probe(kind.spec, kind.mrope_section, args.seed)
        rotated = Path(args.rotated)
        if not rotated.is_file():
            raise ValueError(_("{path}: no such file.").format(path=rotated))
        tensors = read_tensors(rotated.read_bytes(), rotated.name, max_bytes=64 * 1024 * 1024)
        report = check_rotation(kind.spec, kind.layout, tensors, kind.mrope_section, kind.mrope_interleaved, probe)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**report_json(report), "layer_type": kind.layer_type}, indent=1, ensure_ascii=False))
    else:
        print(report_text(report, kind.spec))
    return 0 if report.verdict == "match" else 1
