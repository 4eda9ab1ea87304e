"""What each serving engine computes for a config: transformers, vLLM, SGLang, llama.cpp and MLX-LM side by side.

Practitioners serve a model in an engine, not in its transformers classes, and the engines read the same
``config.json`` their own way. ``ENGINES`` is a registry, one entry per engine and version range; for a config, a
layer kind and a sequence length each entry says what that engine computes:

- θᵢ (``inv_freq``), the factor cos and sin are multiplied by (``attention_factor``), the extra factor on the
  softmax scale beyond 1/√d (``softmax_scale``, DeepSeek's MLA: mscale²), the pairing;
- the context limit the engine derives from the config by default, and how it picks LongRoPE's short or long
  factors;
- every place where it differs from the model's own transformers classes (the reference, read by
  ``pe_core.config.layer_map``), numbered, with the engine's source file and function or the public thread.

The vLLM entry is tested against vLLM's own rotary code (``tests/data/engines/regenerate.py`` runs it and stores
its outputs); llama.cpp is computed from the GGUF keys its converter writes (``gguf_keys``), which round-trip
through the ``gguf`` package; SGLang and MLX-LM are modelled from their source, file and function named.
``python -m pe_core.engines CONFIG`` prints the engines side by side and, with ``--target N``, each one's recipe.

The package: ``common`` (the result, divergence and input types, and the formulas engines share), one module per
engine, each with ``TYPES``, a table from rope type to what that engine computes for it (``reference`` for
transformers, ``vllm``, ``sglang``, ``llamacpp``, ``mlx``), ``registry`` (``ENGINES`` and ``engine_results``),
``recipe`` (the recipes for a target length) and ``cli``. The names below import on first use, so
``python -m pe_core.engines --help`` answers before torch is imported.
"""

from __future__ import annotations

from pe_core.lazy import lazy_names

_PUBLIC = {
    "pe_core.engines.common": ("CHOICE_TITLES", "REFERENCE", "Call", "Computed", "Divergence", "Engine",
                               "EngineInput", "EngineResult", "engine_input", "fixed_ntk_inv_freq", "longrope_scale",
                               "mla_softmax_scale", "static_dynamic_inv_freq", "vllm_dynamic_inv_freq",
                               "yarn_inv_freq"),
    "pe_core.engines.vllm": ("VLLM_ROPE", "vllm_max_model_len"),
    "pe_core.engines.sglang": ("SGLANG_ROPE", "sglang_context_length"),
    "pe_core.engines.llamacpp": ("GGML_ROPE", "LLAMA_CONVERTER", "LLAMA_SHARED", "gguf_keys", "llamacpp_inv_freq"),
    "pe_core.engines.mlx": ("MLX_ROPE",),
    "pe_core.engines.registry": ("ENGINES", "ENGINE_NAMES", "engine_results"),
    "pe_core.engines.recipe": ("Recipe", "recipe_block", "recipe_config", "recipe_gguf_keys", "recipe_overrides",
                               "recipe_parameters", "recipes"),
    "pe_core.engines.cli": ("main", "result_json", "results_text"),
}
__all__, __getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC)
