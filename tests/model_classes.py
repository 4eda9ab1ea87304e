"""A config.json built into its model's own transformers config and rotary classes: the reference that the layer
map and the plan are tested against (never a stand-in LlamaConfig, unless the config names no model type)."""

from __future__ import annotations

import copy
import importlib
import inspect

import torch

# The text model's rotary class of each model type, as its modeling file names it.
ROTARY_CLASSES = {
    "llama": "llama.modeling_llama.LlamaRotaryEmbedding",
    "mistral": "mistral.modeling_mistral.MistralRotaryEmbedding",
    "mixtral": "mixtral.modeling_mixtral.MixtralRotaryEmbedding",
    "qwen2": "qwen2.modeling_qwen2.Qwen2RotaryEmbedding",
    "qwen3": "qwen3.modeling_qwen3.Qwen3RotaryEmbedding",
    "qwen3_moe": "qwen3_moe.modeling_qwen3_moe.Qwen3MoeRotaryEmbedding",
    "qwen3_next": "qwen3_next.modeling_qwen3_next.Qwen3NextRotaryEmbedding",
    "qwen2_5_vl_text": "qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLRotaryEmbedding",
    "qwen2_vl_text": "qwen2_vl.modeling_qwen2_vl.Qwen2VLRotaryEmbedding",
    "qwen3_vl_text": "qwen3_vl.modeling_qwen3_vl.Qwen3VLTextRotaryEmbedding",
    "qwen3_5_text": "qwen3_5.modeling_qwen3_5.Qwen3_5TextRotaryEmbedding",
    "gemma2": "gemma2.modeling_gemma2.Gemma2RotaryEmbedding",
    "gemma3_text": "gemma3.modeling_gemma3.Gemma3RotaryEmbedding",
    "gemma4_text": "gemma4.modeling_gemma4.Gemma4TextRotaryEmbedding",
    "olmo3": "olmo3.modeling_olmo3.Olmo3RotaryEmbedding",
    "exaone4": "exaone4.modeling_exaone4.Exaone4RotaryEmbedding",
    "cohere": "cohere.modeling_cohere.CohereRotaryEmbedding",
    "cohere2": "cohere2.modeling_cohere2.Cohere2RotaryEmbedding",
    "glm": "glm.modeling_glm.GlmRotaryEmbedding",
    "llama4_text": "llama4.modeling_llama4.Llama4TextRotaryEmbedding",
    "gpt_oss": "gpt_oss.modeling_gpt_oss.GptOssRotaryEmbedding",
    "gpt_neox": "gpt_neox.modeling_gpt_neox.GPTNeoXRotaryEmbedding",
    "stablelm": "stablelm.modeling_stablelm.StableLmRotaryEmbedding",
    "phi": "phi.modeling_phi.PhiRotaryEmbedding",
    "phi3": "phi3.modeling_phi3.Phi3RotaryEmbedding",
    "glm4": "glm4.modeling_glm4.Glm4RotaryEmbedding",
    "glm4_moe": "glm4_moe.modeling_glm4_moe.Glm4MoeRotaryEmbedding",
    "deepseek_v3": "deepseek_v3.modeling_deepseek_v3.DeepseekV3RotaryEmbedding",
    "deepseek_v2": "deepseek_v2.modeling_deepseek_v2.DeepseekV2RotaryEmbedding",
    "hunyuan_v1_dense": "hunyuan_v1_dense.modeling_hunyuan_v1_dense.HunYuanDenseV1RotaryEmbedding",
    "hunyuan_v1_moe": "hunyuan_v1_moe.modeling_hunyuan_v1_moe.HunYuanMoEV1RotaryEmbedding",
    "smollm3": "smollm3.modeling_smollm3.SmolLM3RotaryEmbedding",
    "afmoe": "afmoe.modeling_afmoe.AfmoeRotaryEmbedding",
    "exaone_moe": "exaone_moe.modeling_exaone_moe.ExaoneMoeRotaryEmbedding",
    "granitemoehybrid": "granitemoehybrid.modeling_granitemoehybrid.GraniteMoeHybridRotaryEmbedding",
    "ernie4_5": "ernie4_5.modeling_ernie4_5.Ernie4_5RotaryEmbedding",
    "ernie4_5_moe": "ernie4_5_moe.modeling_ernie4_5_moe.Ernie4_5_MoeRotaryEmbedding",
    "helium": "helium.modeling_helium.HeliumRotaryEmbedding",
    "mistral4": "mistral4.modeling_mistral4.Mistral4RotaryEmbedding",
    "deepseek_v32": "deepseek_v32.modeling_deepseek_v32.DeepseekV32RotaryEmbedding",
    "glm4_moe_lite": "glm4_moe_lite.modeling_glm4_moe_lite.Glm4MoeLiteRotaryEmbedding",
    "youtu": "youtu.modeling_youtu.YoutuRotaryEmbedding",
    "cohere2_moe": "cohere2_moe.modeling_cohere2_moe.Cohere2MoeRotaryEmbedding",
    "flint": "flint.modeling_flint.FlintRotaryEmbedding",
    "kolibri1": "kolibri1.modeling_kolibri1.Kolibri1RotaryEmbedding",
    "jetmoe": "jetmoe.modeling_jetmoe.JetMoeRotaryEmbedding",
    "bamba": "bamba.modeling_bamba.BambaRotaryEmbedding",
    "recurrent_gemma": "recurrent_gemma.modeling_recurrent_gemma.RecurrentGemmaRotaryEmbedding",
    "gptj": "gptj.modeling_gptj.GPTJRotaryEmbedding",
    "codegen": "codegen.modeling_codegen.CodeGenRotaryEmbedding",
    "zamba2": "zamba2.modeling_zamba2.Zamba2RotaryEmbedding",
    "laguna": "laguna.modeling_laguna.LagunaRotaryEmbedding",
}
# Families whose attention rotates with apply_rotary_pos_emb_interleave (pairs (2i, 2i + 1) in the weights): always,
# or when the config's rope_interleave says so; every other family calls apply_rotary_pos_emb.
INTERLEAVED_CALLS = {"deepseek_v32": lambda config: True, "deepseek_v3": lambda config: config.rope_interleave,
                     "kimi_k2": lambda config: config.rope_interleave, "glm4_moe_lite": lambda config: config.rope_interleave,
                     "youtu": lambda config: config.rope_interleave, "mistral4": lambda config: config.rope_interleave}
# Model types whose architecture is another's (Kimi K2's auto_map names DeepseekV3Config).
SAME_ARCHITECTURE = {"kimi_k2": "deepseek_v3"}
# Rope types whose frequencies depend on the sequence length: the class recomputes them in its forward pass.
LENGTH_DEPENDENT = ("dynamic", "longrope")


def model_config(config: dict):
    """The model's own text config class, built from the file exactly as from_pretrained would.

    A config without a model type (the app's presets keep only the RoPE keys) is read as LlamaConfig reads it,
    as the layer map reads it; DeepSeek's rotary width then goes to head_dim, as DeepseekV3Config maps it.
    """
    import transformers

    config = copy.deepcopy(config)
    model_type = config.pop("model_type", None)
    if model_type is None:
        model_type = "llama"
        if "qk_rope_head_dim" in config:
            config["head_dim"] = config.pop("qk_rope_head_dim")
    model_type = SAME_ARCHITECTURE.get(model_type, model_type)
    built = transformers.CONFIG_MAPPING[model_type].from_dict(config)
    return built.get_text_config(decoder=True)


def rotary(text_config):
    """The model's own rotary module for this text config (cheap: two small buffers per layer type)."""
    path = ROTARY_CLASSES[text_config.model_type]
    module, name = path.rsplit(".", 1)
    rotary_class = getattr(importlib.import_module(f"transformers.models.{module}"), name)
    return rotary_class(config=text_config)


def frequencies(module, layer_type: str, seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    """(θ as float64, attention factor) that ``module`` uses on ``layer_type`` layers at a sequence of ``seq_len``.

    Classes that keep RoPE per layer type hold ``{layer_type}_inv_freq``; the others one ``inv_freq`` for every
    layer. Dynamic NTK and LongRoPE recompute θ in the forward pass, so one position at ``seq_len − 1`` is run.
    """
    if hasattr(module, "embed_positions"):  # GPT-J, CodeGen: a table of sin | cos by position, at base 10⁴
        sin, cos = module.embed_positions[1].to(torch.float64).chunk(2)
        return torch.atan2(sin, cos), 1.0
    per_type = hasattr(module, f"{layer_type}_inv_freq")
    rope_type = module.rope_type[layer_type] if per_type else module.rope_type
    if seq_len is not None and rope_type in LENGTH_DEPENDENT:
        positions = torch.tensor([[seq_len - 1]])
        probe = torch.zeros(1)
        module(probe, positions, layer_type=layer_type) if per_type else module(probe, positions)
    if per_type:
        inv_freq = getattr(module, f"{layer_type}_inv_freq")
        attention = getattr(module, f"{layer_type}_attention_scaling")
    else:
        inv_freq, attention = module.inv_freq, module.attention_scaling
    return inv_freq.to(torch.float64), float(attention)


def pairing(text_config, layer_type: str, width: int) -> str:
    """How the model's own rotation pairs the ``width`` rotated dimensions of a head, found by rotating unit vectors:
    "interleaved" when dimensions 0 and 1 turn in one plane, "half" when 0 turns with width/2 (as rotate_half)."""
    module_rotary = rotary(text_config)
    module = importlib.import_module(type(module_rotary).__module__)
    calls_interleaved = INTERLEAVED_CALLS.get(text_config.model_type, lambda config: False)(text_config)
    apply = module.apply_rotary_pos_emb_interleave if calls_interleaved else module.apply_rotary_pos_emb
    per_type = hasattr(module_rotary, f"{layer_type}_inv_freq")
    probe, position = torch.zeros(1, 1, 1), torch.tensor([[5]])
    cos, sin = module_rotary(probe, position, layer_type=layer_type) if per_type else module_rotary(probe, position)
    width = max(width, cos.shape[-1])  # Gemma 4's proportional layers pad the unrotated pairs with θ = 0
    arguments = list(inspect.signature(apply).parameters)[:3]

    def turned(dimension: int) -> set[int]:
        unit = torch.zeros(1, 1, 1, width)
        unit[..., dimension] = 1.0
        # Gemma 4 rotates q and k apart, and so do GPT-J and CodeGen, whose module gives (sin, cos) in that order,
        # which is also the order their function takes
        if arguments in (["x", "cos", "sin"], ["tensor", "sin", "cos"]):
            turned_unit = apply(unit, cos, sin)
        else:
            turned_unit = apply(unit, unit, cos, sin)[0]
        return set(torch.nonzero(turned_unit.flatten().abs() > 1e-6).flatten().tolist())

    return "interleaved" if turned(0) == turned(1) else "half"
