"""Each engine's recipe for serving a config at a target length: the RoPE block it sets and the options."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import NamedTuple

from i18n import _
from pe_core.engines.common import EngineInput, engine_input
from pe_core.engines.llamacpp import gguf_keys
from pe_core.layers import LayerMap
from pe_core.rope import rope_type_entry

RECIPE_TYPE = "yarn"  # the rope type every recipe sets


class Recipe(NamedTuple):
    engine: str
    lines: tuple[str, ...]  # command-line options or settings, one per line
    block: dict | None  # the RoPE block the recipe sets (None: the config's own is kept)
    context: int  # the context length it allocates


def recipe_block(data: EngineInput, target: int) -> dict | None:
    """The RoPE block that reaches ``target`` on the layers context extension scales: None when the config's own
    already does; the config's YaRN block with factor target / L when it has one (its mscale and β kept); else YaRN
    with s = target / L, L the length the model was trained for (s rounded up to 2 decimals)."""
    from pe_core.config import extended_length_of

    if extended_length_of(data.model) >= target:
        return None
    kind = data.model.default_kind
    spec = kind.spec
    own = data.blocks.get(kind.layer_type, {})
    trained = spec.original_max_position_embeddings if rope_type_entry(spec.rope_type).factor_from != "none" else \
        (data.max_position_embeddings or spec.original_max_position_embeddings)
    factor = math.ceil(target / trained * 100) / 100
    if spec.rope_type == RECIPE_TYPE:
        block = {k: v for k, v in own.items() if k != "type"}
        block.update(factor=factor)
        return block
    return {"rope_type": RECIPE_TYPE, "factor": factor, "original_max_position_embeddings": trained,
            "rope_theta": spec.base}


def recipe_parameters(data: EngineInput, block: Mapping) -> dict:
    """rope_parameters with ``block`` on every kind context extension scales (the default kind where none does),
    keyed by layer type where the model's class keys them so."""
    default = data.model.default_kind
    scaled = {kind.layer_type for kind in data.model.rotary_kinds if kind.extends} or {default.layer_type}
    if not data.model.blocks_per_layer_type:
        return dict(block)
    return {layer_type: dict(block) if layer_type in scaled else dict(own)
            for layer_type, own in data.blocks.items() if own is not None}


def recipes(config: Mapping, target: int, model: LayerMap | None = None) -> list[Recipe]:
    """How to serve ``config`` at ``target`` tokens in each engine."""
    if not isinstance(target, int) or isinstance(target, bool) or target < 1:
        raise ValueError(_("The target length must be a positive whole number of tokens (got {value!r}).").format(
            value=target))
    data = engine_input(config, model)
    block = recipe_block(data, target)
    out = [Recipe("transformers", (
        _("config.json: \"rope_parameters\": {block}").format(block=json.dumps(recipe_parameters(data, block)))
        if block else
        _("nothing to change: the config's RoPE reaches {target:,} tokens").format(target=target),), block, target)]
    scaling = {k: v for k, v in (block or {}).items() if k != "rope_theta"}
    overrides = recipe_overrides(config, data, block, target) if block else None
    out.append(Recipe("vllm", tuple(
        ([f"--hf-overrides '{json.dumps(overrides)}'"] if overrides else []) + [f"--max-model-len {target}"]),
        block, target))
    out.append(Recipe("sglang", tuple(
        ([f"--json-model-override-args '{json.dumps({'rope_scaling': scaling})}'"] if block else [])
        + [f"--context-length {target}"]), block, target))
    if block:
        llama = ["--rope-scaling yarn", f"--rope-scale {block['factor']:g}",
                 f"--yarn-orig-ctx {block['original_max_position_embeddings']}", f"--ctx-size {target}"]
    else:
        llama = [f"--ctx-size {target}"]
    out.append(Recipe("llama.cpp", tuple(llama), block, target))
    out.append(Recipe("mlx-lm", tuple(
        ([_("config.json: \"rope_scaling\": {block}").format(block=json.dumps(scaling))] if block else [])
        + [_("Ollama: PARAMETER num_ctx {target}").format(target=target)]), block, target))
    return out


def recipe_overrides(config: Mapping, data: EngineInput, block: Mapping, target: int) -> dict:
    """The keys the recipe changes, under text_config where the config keeps its language model there (the form
    of vLLM's --hf-overrides and of a patched config.json)."""
    changed = {"rope_parameters": recipe_parameters(data, block), "max_position_embeddings": target}
    return {"text_config": changed} if isinstance(config.get("text_config"), Mapping) else changed


def recipe_config(config: Mapping, target: int, model: LayerMap | None = None) -> dict:
    """``config`` with the recipe for ``target`` applied (its rope_scaling dropped for the new rope_parameters)."""
    data = engine_input(config, model)
    block = recipe_block(data, target)
    patched = json.loads(json.dumps(config))
    if block is None:
        return patched
    overrides = recipe_overrides(config, data, block, target)
    where = patched
    if "text_config" in overrides:
        where, overrides = patched["text_config"], overrides["text_config"]
    where.pop("rope_scaling", None)
    where.update(overrides)
    return patched


def recipe_gguf_keys(config: Mapping, target: int) -> dict:
    """The GGUF RoPE keys a converted model carries after the recipe (the recipe's config converted)."""
    return gguf_keys(engine_input(recipe_config(config, target)))[0]
