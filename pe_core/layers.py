"""A model's layers by kind, read from its ``config.json`` the way the model's own transformers class reads it.

Today's models are hybrids: Gemma 3 rotates five of every six layers (sliding windows) at base 10⁴ and
only the sixth (full attention) at 10⁶ with linear ×8; EXAONE 4 and Command R7B rotate only their
sliding layers and leave the full-attention ones without position encoding (NoPE); Llama 4 skips
RoPE on every fourth layer; Qwen3-Next's linear-attention layers have none. A ``LayerMap`` groups the
layers into kinds, each with its indices, its attention span and its RoPE (``RopeSpec``, rotated
dimensions, pairing layout) or none.

Each model family is one row of ``FAMILIES`` (as each transformers model owns its config class): the
class defaults of the keys a config.json may leave out, old key names it still accepts, how it lays out
layer types when the config does not list them, how it keeps RoPE parameters per layer type, which
layers skip RoPE, and how a pair's two dimensions are laid out. A family not in the table is read the
way ``LlamaConfig`` reads a config, which is what every other RoPE model in transformers does.
``tests/test_layers.py`` checks every row against the model's own config and rotary classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from i18n import N_, _
from pe_core.rope import RopeSpec

FULL, SLIDING, CHUNKED, LINEAR = "full_attention", "sliding_attention", "chunked_attention", "linear_attention"
INDEXED = "indexed_attention"  # DeepSeek Sparse Attention: an indexer picks the keys each query attends to
HYBRID_BLOCK = "hybrid"  # Zamba2: a Mamba layer after a transformer block shared across the model
# Layer types whose tokens do not attend by position at all (linear attention, state-space mixers).
_POSITIONLESS_TYPES = (LINEAR, "mamba", "conv", "linear_attention_gated")
# What each layer type's attention spans, as the reader sees it.
SPAN_KINDS = {FULL: "full", SLIDING: "window", CHUNKED: "chunk", LINEAR: "linear"}
LAYER_TYPE_TITLES = {
    FULL: N_("full attention"), SLIDING: N_("sliding-window attention"), CHUNKED: N_("chunked attention"),
    LINEAR: N_("linear attention"), INDEXED: N_("indexed sparse attention"),
    HYBRID_BLOCK: N_("shared attention before Mamba"),
}
LAYOUTS = ("half", "interleaved")


def layer_type_title(layer_type: str) -> str:
    return _(LAYER_TYPE_TITLES[layer_type]) if layer_type in LAYER_TYPE_TITLES else layer_type


# ---- how families lay out their layers ---------------------------------------------------------------------


def _every_nth_full(n: int, other: str = SLIDING, period_key: str | None = None) -> Callable[[Mapping], list[str]]:
    """``other`` on every layer but each n-th, which is full attention (Gemma 3: 5 sliding, then 1 full); the
    config's ``period_key`` (by default sliding_window_pattern, or full_attention_interval) overrides n."""
    period_key = period_key or ("sliding_window_pattern" if other == SLIDING else "full_attention_interval")

    def pattern(config: Mapping) -> list[str]:
        period = config.get(period_key, n)
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise ValueError(_("This {family} config has no 'layer_types' and its pattern {period!r} is not a "
                               "positive integer, so its layers cannot be laid out.").format(
                family=config.get("model_type"), period=period))
        return [other if (i + 1) % period else FULL for i in range(config["num_hidden_layers"])]
    return pattern


def _exaone4_pattern(config: Mapping) -> list[str]:
    # Exaone4Config: without a sliding window every layer is global; otherwise 3 local, then 1 global
    if config.get("sliding_window") is None:
        return [FULL] * config["num_hidden_layers"]
    return _every_nth_full(4)(config)


def _qwen2_pattern(config: Mapping) -> list[str]:
    # Qwen2Config: a window only with use_sliding_window, on the layers from max_window_layers on
    window = config.get("sliding_window") if config.get("use_sliding_window") else None
    first = config.get("max_window_layers", 28)
    return [SLIDING if window is not None and i >= first else FULL for i in range(config["num_hidden_layers"])]


def _mistral_pattern(config: Mapping) -> list[str]:
    # MistralConfig has no layer types: a sliding_window, when set, bounds every layer's attention
    kind = SLIDING if config.get("sliding_window") is not None else FULL
    return [kind] * config["num_hidden_layers"]


def _llama4_pattern(config: Mapping) -> list[str]:
    # Llama4TextConfig: the RoPE layers attend within chunks, the NoPE layers (every 4th) over everything
    return [CHUNKED if uses and config.get("attention_chunk_size") is not None else FULL
            for uses in _no_rope_layer_flags(config)]


def _smollm3_pattern(config: Mapping) -> list[str]:
    # SmolLM3Config: a window (with use_sliding_window) only on the NoPE layers
    window = config.get("sliding_window") if config.get("use_sliding_window") else None
    return [SLIDING if window is not None and not uses else FULL for uses in _no_rope_layer_flags(config)]


def _no_rope_layer_flags(config: Mapping) -> list[int]:
    flags = config.get("no_rope_layers")  # despite the name, 1 marks a layer that applies RoPE
    if not flags:
        interval = config.get("no_rope_layer_interval", 4)
        flags = [int((i + 1) % interval != 0) for i in range(config["num_hidden_layers"])]
    return list(flags)


def _cohere2_moe_dense(config: Mapping) -> list[bool]:
    # Cohere2MoeConfig: the first first_k_dense_replace layers have a dense MLP (or mlp_layer_types says which)
    kinds = config.get("mlp_layer_types")
    if kinds:
        return [kind == "dense" for kind in kinds]
    return [i < config.get("first_k_dense_replace", 0) for i in range(config["num_hidden_layers"])]


def _cohere2_moe_pattern(config: Mapping) -> list[str]:
    # the dense prefix has its own window pattern (by default 1: every prefix layer is full attention)
    prefix = sum(_cohere2_moe_dense(config))
    dense, rest = config["prefix_dense_sliding_window_pattern"], config["sliding_window_pattern"]
    return ([SLIDING if (i + 1) % dense else FULL for i in range(prefix)]
            + [SLIDING if (i + 1) % rest else FULL for i in range(config["num_hidden_layers"] - prefix)])


def _flint_pattern(config: Mapping) -> list[str]:
    # FlintConfig: full attention on the first two layers, every fourth layer and the last one
    count = config["num_hidden_layers"]
    return [FULL if i < 2 or i % 4 == 1 or i == count - 1 else SLIDING for i in range(count)]


def _bamba_pattern(config: Mapping) -> list[str]:
    # BambaConfig.layers_block_type: attention at attn_layer_indices (none by default), Mamba elsewhere
    indices = config.get("attn_layer_indices") or ()
    return [FULL if i in indices else LINEAR for i in range(config["num_hidden_layers"])]


def _recurrent_gemma_pattern(config: Mapping) -> list[str]:
    # RecurrentGemmaConfig.layers_block_type: block_types repeated; its attention blocks attend within a window
    blocks = list(config["block_types"])
    return [SLIDING if blocks[i % len(blocks)] == "attention" else LINEAR for i in range(config["num_hidden_layers"])]


def _zamba2_pattern(config: Mapping) -> list[str]:
    # Zamba2Config's default block list (54 layers, whatever num_hidden_layers says): Mamba, with the shared block
    # before every sixth from the sixth on
    return ([LINEAR] + ([LINEAR] * 5 + [HYBRID_BLOCK]) * 7 + [LINEAR] * 4 + [HYBRID_BLOCK] + [LINEAR] * 3
            + [HYBRID_BLOCK] + [LINEAR] * 2)


def _all_full(config: Mapping) -> list[str]:
    return [FULL] * config["num_hidden_layers"]


# ---- which layers apply RoPE --------------------------------------------------------------------------------


def _rope_everywhere(config: Mapping, index: int, layer_type: str) -> bool:
    return layer_type not in _POSITIONLESS_TYPES


def _rope_on_sliding_only(config: Mapping, index: int, layer_type: str) -> bool:
    # Cohere2Attention applies RoPE only where it has a sliding window
    return layer_type == SLIDING


def _exaone4_rope(config: Mapping, index: int, layer_type: str) -> bool:
    # Exaone4Attention: `if self.sliding_window is None or self.is_sliding: apply_rotary_pos_emb(...)`
    return config.get("sliding_window") is None or layer_type == SLIDING


def _rope_where_flagged(config: Mapping, index: int, layer_type: str) -> bool:
    # Llama4TextAttention and SmolLM3Attention: `self.use_rope = config.no_rope_layers[layer_idx]`
    return bool(_no_rope_layer_flags(config)[index])


def _cohere2_moe_rope(config: Mapping, index: int, layer_type: str) -> bool:
    # Cohere2MoeAttention: `if self.sliding_window is not None or self.force_rope`, force_rope on a dense prefix layer
    # whose pattern is 1
    windowed = layer_type == SLIDING and config.get("sliding_window") is not None
    return windowed or (_cohere2_moe_dense(config)[index] and config["prefix_dense_sliding_window_pattern"] == 1)


def _zamba2_rope(config: Mapping, index: int, layer_type: str) -> bool:
    # Zamba2Attention rotates only with use_mem_rope, and only the shared block has attention
    return bool(config.get("use_mem_rope")) and layer_type == HYBRID_BLOCK


def _rope_if_configured(config: Mapping, index: int, layer_type: str) -> bool:
    # GraniteMoeHybridModel builds its rotary module only when position_embedding_type == "rope" (else NoPE)
    return config.get("position_embedding_type") == "rope" and _rope_everywhere(config, index, layer_type)


# ---- RoPE parameters per layer type -------------------------------------------------------------------------


def _flat_parameters(config: Mapping) -> dict:
    params = config.get("rope_parameters")
    if params is None:
        params = config.get("rope_scaling")
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(_("config.json field 'rope_scaling' / 'rope_parameters' must be an object (got {params!r}).").format(params=params))
    return dict(params)


def _same_for_every_type(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
    """One block for every layer, unless it is nested by the config's own layer types (transformers 5)."""
    params = _flat_parameters(config)
    nested = [key for key in params if key in layer_types]
    if nested:  # a null block: those layers have no RoPE (standardize_rope_params skips it, the rotary class too)
        return {layer_type: None if params[layer_type] is None else _with_theta(dict(params[layer_type]), config)
                for layer_type in nested}
    block = _with_theta(params, config)
    return {layer_type: block for layer_type in set(layer_types)}


def _with_theta(block: dict, config: Mapping) -> dict:
    if "rope_theta" not in block and config.get("rope_theta") is not None:
        block["rope_theta"] = config["rope_theta"]
    return block


def _global_and_local(local_theta_key: str) -> Callable[[Mapping, list[str]], dict[str, dict]]:
    """Gemma 3 / OLMo 3: a block per layer type; a v4 ``rope_scaling`` block scales the full-attention layers only.

    The sliding layers' base is read from ``local_theta_key``, else the class default ``rope_theta_local``:
    Olmo3Config pops ``rope_theta`` for its full-attention block first, so its sliding layers never see it
    (a config with rope_theta 10⁶ rotates them at the class default 500,000).
    """
    def parameters(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
        given = config.get("rope_parameters")
        blocks = {key: dict(value) for key, value in given.items() if isinstance(value, Mapping)} \
            if isinstance(given, Mapping) else {}
        if isinstance(given, Mapping) and not blocks and given:
            blocks = {FULL: dict(given)}  # a flat v5 block: the class reads it as the full-attention layers'
        scaling = config.get("rope_scaling")
        full = blocks.setdefault(FULL, {"rope_type": "default"})
        if isinstance(scaling, Mapping):
            full.update(scaling)
        full.setdefault("rope_theta", config["rope_theta"])
        local = blocks.setdefault(SLIDING, {"rope_type": "default"})
        local.setdefault("rope_theta", config.get(local_theta_key, config["rope_theta_local"]))
        return blocks
    return parameters


def _gemma4_parameters(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
    given = config.get("rope_parameters")
    if given is None:
        return {SLIDING: {"rope_type": "default", "rope_theta": 10_000.0},
                FULL: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0}}
    return _same_for_every_type(config, layer_types)


def _rotary_dim_as_partial(config: dict) -> None:
    # GPT-J and CodeGen rotate the first rotary_dim dimensions of each head
    if config.get("rotary_dim") and config.get("hidden_size") and config.get("num_attention_heads"):
        config["partial_rotary_factor"] = config["rotary_dim"] / (config["hidden_size"] // config["num_attention_heads"])


def _gemma4_head_dims(config: dict) -> None:
    # Gemma4TextConfig saved by transformers ≥ 5.24 keeps a full layer's head width in per_layer_config (the first
    # full layer's override, else head_dim itself), not in global_head_dim
    overrides = config.get("per_layer_config")
    if not isinstance(overrides, Mapping):
        return
    types = config.get("layer_types") or _every_nth_full(6)(config)
    full = [index for index, layer_type in enumerate(types) if layer_type == FULL]
    first = (overrides.get(str(full[0])) or overrides.get(full[0]) or {}) if full else {}
    config["global_head_dim"] = first.get("head_dim", config.get("head_dim"))


def _sinusoid_table(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
    # GPT-J and CodeGen build one sin/cos table at base 10⁴ (create_sinusoidal_positions): no base or scaling is read
    return {layer_type: {"rope_type": "default", "rope_theta": 10_000.0} for layer_type in set(layer_types)}


def _rope_parameters_only(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
    # Cohere2MoeConfig keeps a v4 rope_scaling as a plain field and never merges it: only rope_parameters count
    return _same_for_every_type({key: value for key, value in config.items() if key != "rope_scaling"}, layer_types)


def _zamba2_widths(config: dict) -> None:
    # Zamba2Config: the shared block attends over [hidden state, embedding], so a head is 2·hidden/heads wide
    if config.get("hidden_size") and config.get("num_attention_heads"):
        config["head_dim"] = 2 * config["hidden_size"] // config["num_attention_heads"]
    if config.get("use_long_context"):
        config["max_position_embeddings"] = 16384


def _class_block(block: dict) -> Callable[[Mapping, list[str]], dict[str, dict]]:
    """A class whose config without RoPE parameters gets ``block`` (Mistral 4: YaRN ×128 on half of each head)."""
    def parameters(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
        if config.get("rope_parameters") is None and config.get("rope_scaling") is None:
            return {layer_type: _with_theta(dict(block), config) for layer_type in set(layer_types)}
        return _same_for_every_type(config, layer_types)
    return parameters


def _gpt_oss_parameters(config: Mapping, layer_types: list[str]) -> dict[str, dict]:
    # GptOssConfig: a config without RoPE parameters (rope_scaling: null) gets the class's own YaRN ×32
    if config.get("rope_parameters") is None and config.get("rope_scaling") is None:
        block = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                 "original_max_position_embeddings": 4096}
        return {layer_type: _with_theta(dict(block), config) for layer_type in set(layer_types)}
    return _same_for_every_type(config, layer_types)


# ---- the table ----------------------------------------------------------------------------------------------


def _half(config: Mapping) -> str:
    return "half"


def _interleaved(config: Mapping) -> str:
    return "interleaved"


def _deepseek_layout(config: Mapping) -> str:
    return "interleaved" if config.get("rope_interleave", True) else "half"


@dataclass(frozen=True)
class Family:
    """How one transformers model class reads the RoPE-relevant part of its config."""

    defaults: dict = field(default_factory=dict)  # the config class's defaults for keys a config.json may omit
    renamed: dict = field(default_factory=dict)  # old key -> the key the class stores it as
    layer_pattern: Callable[[Mapping], list[str]] = _all_full  # layer types when the config lists none
    parameters: Callable[[Mapping, list[str]], dict[str, dict]] = _same_for_every_type
    applies_rope: Callable[[Mapping, int, str], bool] = _rope_everywhere
    layout: Callable[[Mapping], str] = _half
    head_dim_key: str = "head_dim"  # the key for the width RoPE acts on
    layer_head_dim: dict = field(default_factory=dict)  # layer type -> key of a per-type head width
    nope_note: str | None = None  # what the model does in place of RoPE on its NoPE layers
    # max_position_embeddings is the length the scaled layers are built for, not the length before scaling
    # (Gemma 3: 131,072 with linear ×8), so a linear block's L is max_position_embeddings / factor
    advertises_extended: bool = False
    derive: Callable[[dict], None] | None = None  # keys the class computes from others (GPT-J's rotary_dim → partial)


_GEMMA_LOCAL = _global_and_local("rope_local_base_freq")

def _class(theta: float = 10_000.0, max_positions: int = 2048, layers: int = 32, **more) -> dict:
    """A config class's defaults for the keys that decide RoPE (its default_theta, max_position_embeddings, ...)."""
    return {"rope_theta": theta, "max_position_embeddings": max_positions, "num_hidden_layers": layers, **more}


def _alternating(config: Mapping) -> list[str]:
    return [SLIDING if (i + 1) % 2 else FULL for i in range(config["num_hidden_layers"])]


# GPT-J and CodeGen (whose classes are the same here): GPT-2's key names, a fixed sin/cos table on rotary_dim dimensions
_GPTJ_LIKE = Family(defaults=_class(layers=28, rotary_dim=64),
                    renamed={"n_positions": "max_position_embeddings", "n_embd": "hidden_size",
                             "n_head": "num_attention_heads", "n_layer": "num_hidden_layers"},
                    derive=_rotary_dim_as_partial, layout=_interleaved, parameters=_sinusoid_table)

# Each row holds its transformers config class's own defaults (tests/test_layers.py reads a bare config of each
# family with the class and compares).
FAMILIES: dict[str, Family] = {
    "llama": Family(defaults=_class()),
    "mistral": Family(defaults=_class(max_positions=131_072, sliding_window=4096), layer_pattern=_mistral_pattern),
    "mixtral": Family(defaults=_class(1_000_000.0, 131_072), layer_pattern=_mistral_pattern),
    "qwen2": Family(defaults=_class(max_positions=32768, sliding_window=4096), layer_pattern=_qwen2_pattern),
    "qwen3": Family(defaults=_class(max_positions=32768, head_dim=128, sliding_window=4096),
                    layer_pattern=_qwen2_pattern),
    "qwen3_moe": Family(defaults=_class(max_positions=32768, layers=24, sliding_window=4096),
                        layer_pattern=_qwen2_pattern),
    "qwen2_vl_text": Family(defaults=_class(1_000_000.0, 32768, 80)),
    "qwen2_5_vl_text": Family(defaults=_class(1_000_000.0, 32768, 80)),
    "qwen3_vl_text": Family(defaults=_class(500_000.0, 128_000, head_dim=128)),
    "qwen3_vl_moe_text": Family(defaults=_class(500_000.0, 128_000, 24)),
    "gemma": Family(defaults=_class(max_positions=8192, layers=28, head_dim=256)),
    "gemma2": Family(defaults=_class(max_positions=8192, layers=26, head_dim=256, sliding_window=4096),
                     layer_pattern=_alternating),
    "gemma3_text": Family(defaults=_class(1_000_000.0, 131_072, 26, head_dim=256, num_attention_heads=8,
                                          sliding_window=4096, rope_theta_local=10_000.0),
                          layer_pattern=_every_nth_full(6), parameters=_GEMMA_LOCAL, advertises_extended=True),
    "gemma4_text": Family(defaults=_class(max_positions=131_072, layers=30, head_dim=256, global_head_dim=512,
                                          sliding_window=512),
                          layer_pattern=_every_nth_full(6), parameters=_gemma4_parameters,
                          layer_head_dim={FULL: "global_head_dim"}, derive=_gemma4_head_dims),
    "olmo3": Family(defaults=_class(500_000.0, rope_theta_local=500_000.0, sliding_window=4096),
                    layer_pattern=_every_nth_full(4), parameters=_global_and_local("rope_theta_local")),
    "exaone4": Family(defaults=_class(sliding_window=4096), layer_pattern=_exaone4_pattern,
                      applies_rope=_exaone4_rope),
    "cohere2": Family(defaults=_class(max_positions=8192, layers=40, sliding_window=4096),
                      layer_pattern=_every_nth_full(4), applies_rope=_rope_on_sliding_only, layout=_interleaved),
    "cohere": Family(defaults=_class(500_000.0, 8192, 40), layout=_interleaved),
    "llama4_text": Family(defaults=_class(500_000.0, 131_072, 48, head_dim=128, attention_chunk_size=8192),
                          layer_pattern=_llama4_pattern, applies_rope=_rope_where_flagged, layout=_interleaved,
                          nope_note=N_("attention temperature tuning: queries scaled by 1 + attn_scale·ln(1 + ⌊(m + 1)/floor_scale⌋)")),
    "qwen3_next": Family(defaults=_class(max_positions=32768, layers=48, head_dim=256, partial_rotary_factor=0.25),
                         layer_pattern=_every_nth_full(4, other=LINEAR)),
    "qwen3_5_text": Family(defaults=_class(max_positions=32768, head_dim=256, partial_rotary_factor=0.25),
                           layer_pattern=_every_nth_full(4, other=LINEAR)),
    "gpt_oss": Family(defaults=_class(150_000.0, 131_072, 36, head_dim=64, sliding_window=128),
                      layer_pattern=_alternating, parameters=_gpt_oss_parameters),
    "gpt_neox": Family(defaults=_class(layers=44, partial_rotary_factor=0.25),
                       renamed={"rotary_pct": "partial_rotary_factor", "rotary_emb_base": "rope_theta"}),
    "stablelm": Family(defaults=_class(max_positions=4096, partial_rotary_factor=0.25)),
    "phi": Family(defaults=_class(layers=24, partial_rotary_factor=0.5)),
    "glm": Family(defaults=_class(max_positions=131_072, layers=40, head_dim=128, partial_rotary_factor=0.5),
                  layout=_interleaved),
    "glm4": Family(defaults=_class(max_positions=131_072, layers=40, head_dim=128, partial_rotary_factor=0.5),
                   layout=_interleaved),
    "glm4_moe": Family(defaults=_class(max_positions=131_072, layers=46, partial_rotary_factor=0.5)),
    "smollm3": Family(defaults=_class(2_000_000.0, 32768, 36, no_rope_layer_interval=4), layer_pattern=_smollm3_pattern,
                      applies_rope=_rope_where_flagged),
    # AfmoeAttention rotates only its local (sliding-window) layers
    "afmoe": Family(defaults=_class(max_positions=16384, head_dim=128, sliding_window=1024,
                                    global_attn_every_n_layers=4),
                    layer_pattern=_every_nth_full(4, period_key="global_attn_every_n_layers"),
                    applies_rope=_rope_on_sliding_only),
    "exaone_moe": Family(defaults=_class(sliding_window=4096, sliding_window_pattern=4), layer_pattern=_exaone4_pattern,
                         applies_rope=_exaone4_rope),
    "granitemoehybrid": Family(defaults=_class(position_embedding_type=None), renamed={"layers_block_type": "layer_types"},
                               layer_pattern=lambda config: [LINEAR] * config["num_hidden_layers"],
                               applies_rope=_rope_if_configured),
    "cohere2_moe": Family(defaults=_class(max_positions=8192, layers=40, head_dim=128, sliding_window=4096,
                                          prefix_dense_sliding_window_pattern=1, sliding_window_pattern=4),
                          layer_pattern=_cohere2_moe_pattern, applies_rope=_cohere2_moe_rope, layout=_interleaved,
                          parameters=_rope_parameters_only),
    "flint": Family(defaults=_class(max_positions=262_144, layers=49, head_dim=128, sliding_window=513),
                    layer_pattern=_flint_pattern, applies_rope=_rope_on_sliding_only),
    "kolibri1": Family(defaults=_class(max_positions=262_144, layers=50, head_dim=128, sliding_window=513),
                       layer_pattern=_every_nth_full(5, period_key="full_attention_period"), applies_rope=_exaone4_rope),
    "jetmoe": Family(defaults=_class(max_positions=4096, layers=12, head_dim=128), renamed={"kv_channels": "head_dim"}),
    "bamba": Family(defaults=_class(max_positions=262_144, partial_rotary_factor=0.5), layer_pattern=_bamba_pattern),
    "recurrent_gemma": Family(defaults=_class(layers=26, partial_rotary_factor=0.5, sliding_window=2048,
                                              block_types=["recurrent", "recurrent", "attention"]),
                              renamed={"attention_window_size": "sliding_window"}, layer_pattern=_recurrent_gemma_pattern),
    "gptj": _GPTJ_LIKE,
    "codegen": _GPTJ_LIKE,
    "zamba2": Family(defaults=_class(max_positions=4096, layers=54, use_mem_rope=False),
                     renamed={"layers_block_type": "layer_types"}, layer_pattern=_zamba2_pattern,
                     applies_rope=_zamba2_rope, derive=_zamba2_widths),
    "ernie4_5": Family(defaults=_class(500_000.0, 131_072, 18, head_dim=128), layout=_interleaved),
    "ernie4_5_moe": Family(defaults=_class(500_000.0, 131_072, 28), layout=_interleaved),
    "helium": Family(defaults=_class(100_000.0, 4096, 24, head_dim=128), layout=_interleaved),
    # Mistral4Config keeps head_dim = qk_nope + qk_rope and rotates partial_rotary_factor of it (qk_rope_head_dim)
    "mistral4": Family(defaults=_class(max_positions=1_048_576, layers=36, head_dim=128),
                       parameters=_class_block({"rope_type": "yarn", "factor": 128.0, "original_max_position_embeddings": 8192,
                                                "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                                "partial_rotary_factor": 0.5}),
                       layout=_deepseek_layout),
    "deepseek_v2": Family(head_dim_key="qk_rope_head_dim", defaults=_class(qk_rope_head_dim=64), layout=_interleaved),
    "deepseek_v32": Family(head_dim_key="qk_rope_head_dim", defaults=_class(max_positions=163_840, layers=61,
                                                                            qk_rope_head_dim=64),
                           layer_pattern=lambda config: [INDEXED] * config["num_hidden_layers"], layout=_interleaved),
    "glm4_moe_lite": Family(head_dim_key="qk_rope_head_dim", defaults=_class(max_positions=202_752, layers=47,
                                                                             qk_rope_head_dim=64),
                            layout=_deepseek_layout),
    "youtu": Family(head_dim_key="qk_rope_head_dim", defaults=_class(max_positions=131_072, qk_rope_head_dim=64),
                    layout=_deepseek_layout),
    "deepseek_v3": Family(head_dim_key="qk_rope_head_dim", defaults=_class(max_positions=4096, layers=61,
                                                                           qk_rope_head_dim=64),
                          layout=_deepseek_layout),
    "kimi_k2": Family(head_dim_key="qk_rope_head_dim", defaults=_class(max_positions=4096, layers=61,
                                                                       qk_rope_head_dim=64),
                      layout=_deepseek_layout),
}
GENERIC = Family()
# A composite config names its text model's family by its own model type when the text part does not.
TEXT_MODEL_TYPES = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text",
                    "qwen2_vl": "qwen2_vl_text", "qwen2_5_vl": "qwen2_5_vl_text", "qwen3_vl": "qwen3_vl_text",
                    "qwen3_vl_moe": "qwen3_vl_moe_text", "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_text"}


def family_of(model_type: str | None) -> Family:
    return FAMILIES.get(TEXT_MODEL_TYPES.get(model_type, model_type), GENERIC)


# ---- the map ------------------------------------------------------------------------------------------------


class LayerKind(NamedTuple):
    """One kind of layer: which layers, what they attend over, and their RoPE (None: no position encoding)."""

    layer_type: str  # transformers' name: full_attention, sliding_attention, chunked_attention, linear_attention
    layers: tuple[int, ...]
    span: int | None  # the window (sliding) or chunk (chunked) in tokens; None: every earlier token
    spec: RopeSpec | None
    layout: str  # how a pair's two dimensions sit in the head: "half" (rotate_half) or "interleaved"
    mrope_section: tuple[int, ...] | None = None  # pairs carrying time, height, width (Qwen2-VL's M-RoPE)
    mrope_interleaved: bool = False  # Qwen3-VL: the three axes take turns pair by pair
    nope_note: str | None = None  # what the model does instead of RoPE (N_()-marked)

    @property
    def key(self) -> str:
        """The name the reader picks this kind by: the layer type, with "_nope" when a type has both."""
        return self.layer_type if self.spec is not None else f"{self.layer_type}_nope"

    @property
    def has_rope(self) -> bool:
        return self.spec is not None

    @property
    def span_kind(self) -> str:
        if self.layer_type in _POSITIONLESS_TYPES:
            return "linear"
        if self.span is None:
            return "full"
        return "chunk" if self.layer_type == CHUNKED else "window"

    @property
    def extends(self) -> bool:
        """Does context extension scale these layers (a scaled rope type)?"""
        if self.spec is None:
            return False
        return self.spec.rope_type not in ("default", "proportional") or self.spec.factor > 1


class LayerMap(NamedTuple):
    model_type: str | None
    num_layers: int
    layer_types: tuple[str, ...]  # per layer
    kinds: tuple[LayerKind, ...]
    read_from: str | None  # where the text model's config was found (text_config, ...), or None
    # Who read it: None for the app's notes on a family; "transformers 5.x" when the model's own classes did.
    read_by: str | None = None
    unread_keys: tuple[str, ...] = ()  # keys of the file that nothing read
    warnings: tuple[str, ...] = ()  # what the model's own config class warned about
    # (layer type, sentence) wherever pe_core's formulas and the model's own rotary class disagree
    disagreements: tuple[tuple[str, str], ...] = ()
    # The model's own config class's rope_parameters, standardised: layer type -> block (read by its own code only)
    class_blocks: Mapping | None = None
    blocks_per_layer_type: bool = False  # the class keys rope_parameters by layer type (a flat block is refused)

    def kind(self, key: str | None = None) -> LayerKind:
        """The kind named ``key`` (a layer type, or None for the default: the one context extension scales)."""
        if key is None:
            return self.default_kind
        matching = [kind for kind in self.kinds if key in (kind.key, kind.layer_type)]
        if not matching:
            raise ValueError(_("This model has no {key!r} layers; its layer types are {choices}.").format(
                key=key, choices=", ".join(kind.key for kind in self.kinds)))
        # a layer type names its rotary kind where it has one; "<type>_nope" names the kind without RoPE
        return next((kind for kind in matching if kind.has_rope or key == kind.key), matching[0])

    @property
    def rotary_kinds(self) -> tuple[LayerKind, ...]:
        return tuple(kind for kind in self.kinds if kind.has_rope)

    @property
    def default_kind(self) -> LayerKind:
        """The layers the pages describe unless told otherwise: those context extension scales, else the
        full-attention layers with RoPE, else the first with RoPE; among several, full attention first (gpt-oss
        scales its sliding and its full layers alike), then the most layers."""
        rotary = self.rotary_kinds
        if not rotary:
            raise ValueError(_("No layer of this model applies RoPE, so there are no rotary frequencies to show."))
        for wanted in (lambda k: k.extends, lambda k: k.span_kind == "full", lambda k: True):
            found = [kind for kind in rotary if wanted(kind)]
            if found:
                return max(found, key=lambda kind: (kind.span_kind == "full", len(kind.layers)))
        raise AssertionError("unreachable")

    @property
    def hybrid(self) -> bool:
        return len(self.kinds) > 1


def effective_config(text: Mapping) -> tuple[dict, Family]:
    """The text model's config as its class holds it: class defaults filled in, old key names renamed."""
    family = family_of(text.get("model_type"))
    values = dict(family.defaults)
    for key, value in text.items():
        # an explicit null overrides the class default (Mixtral's "sliding_window": null is no window), except for
        # the base, which the classes read as "use the default"
        if value is not None or key not in ("rope_theta", "rope_local_base_freq"):
            values[family.renamed.get(key, key)] = value
    values.setdefault("rope_theta_local", 10_000.0)
    if family.derive is not None:
        family.derive(values)
    return values, family


# Old layer type names transformers reads as today's (``configuration_utils._LEGACY_LAYER_TYPE_REMAP``: Granite 4.0-H
# and Bamba list "mamba" and "attention" blocks).
LEGACY_LAYER_TYPES = {"mamba": LINEAR, "attention": FULL, "deepseek_sparse_attention": INDEXED}


def layer_types_of(values: Mapping, family: Family) -> list[str]:
    given = values.get("layer_types")
    if given is not None:
        if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
            raise ValueError(_("config.json field 'layer_types' must be a list of layer type names."))
        return [LEGACY_LAYER_TYPES.get(item, item) for item in given]
    if not isinstance(values.get("num_hidden_layers"), int) or values["num_hidden_layers"] < 1:
        raise ValueError(_("config.json needs 'num_hidden_layers' (or 'layer_types') to lay out the layers."))
    return family.layer_pattern(values)


def span_of(values: Mapping, layer_type: str) -> int | None:
    if layer_type == SLIDING:
        window = values.get("sliding_window")
        return int(window) if isinstance(window, (int, float)) and not isinstance(window, bool) else None
    if layer_type == CHUNKED:
        chunk = values.get("attention_chunk_size")
        return int(chunk) if isinstance(chunk, (int, float)) and not isinstance(chunk, bool) else None
    return None
