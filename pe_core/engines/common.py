"""The engines' shared types and pieces: what an engine computes (``EngineResult``), a difference from the reference
(``Divergence``), a config as the engines see it (``EngineInput``), one call of an entry (``Call``) and the
frequency formulas more than one engine uses."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.layers import LayerKind, LayerMap
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies, rope_type_entry, yarn_get_mscale

# The engine the others are compared with: the model's own transformers classes.
REFERENCE = "transformers"
CHOICE_TITLES = {"long": N_("long"), "short": N_("short")}  # LongRoPE's two sets of factors


def _choice(choice: str) -> str:
    return _(CHOICE_TITLES[choice])


class Divergence(NamedTuple):
    """One place where an engine computes something other than the model's own transformers classes."""

    key: str  # stable name, e.g. "vllm.dynamic_static"
    message: str  # N_()-marked sentence with {fields}
    values: tuple[tuple[str, object], ...]  # the fields' values
    source: str  # the engine's file and function, or the public thread / pull request

    @property
    def text(self) -> str:
        return _(self.message).format(**dict(self.values))


def _divergence(key: str, message: str, source: str, **values) -> Divergence:
    return Divergence(key, message, tuple(values.items()), source)


class EngineResult(NamedTuple):
    """What one engine computes for one kind of layer at one sequence length."""

    engine: str
    versions: str
    layer_type: str
    seq_len: int
    supported: bool  # False: the engine refuses this config (``note`` says why)
    inv_freq: torch.Tensor | None  # float64, one per rotated pair
    attention_factor: float  # multiplies cos and sin
    softmax_scale: float  # multiplies the softmax scale 1/√d (DeepSeek's MLA: mscale²)
    pairing: str  # "half" (rotate_half) or "interleaved"
    context_limit: int | None  # the longest context the engine allows by default (None: it enforces none)
    context_rule: str  # how the engine derives it (translated sentence)
    factor_choice: str | None  # LongRoPE: "short" or "long" (None: no choice to make)
    choice_rule: str | None  # how the engine chooses (translated sentence)
    divergences: tuple[Divergence, ...]
    note: str | None = None  # translated


class Engine(NamedTuple):
    name: str
    title: str
    versions: str  # the version range the entry describes
    source: str  # where its RoPE code lives
    compute: Callable[[Engine, EngineInput, LayerKind, int, int | None], EngineResult]
    ran_here: str  # how the entry is tested: "own code" (stored outputs of the engine's code) or "source"


class EngineInput(NamedTuple):
    """A config as the engines see it: the reader's layer map, its text config and the class's RoPE blocks."""

    model: LayerMap
    text: Mapping  # the language model's config (text_config where nested)
    blocks: Mapping  # layer type -> RoPE block as the model's config class holds it (rope_type, rope_theta, ...)

    @property
    def max_position_embeddings(self) -> int | None:
        value = self.model.context_length
        if value is None:
            value = self.text.get("max_position_embeddings")
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): a rotary part beside a part without RoPE."""
        return self.text.get("kv_lora_rank") is not None and self.text.get("qk_rope_head_dim") is not None

    @property
    def model_type(self) -> str | None:
        return self.model.text_model_type or self.model.model_type


class Call(NamedTuple):
    """One engine entry asked about one kind of layer: what a per-rope-type handler is given."""

    engine: Engine
    data: EngineInput
    kind: LayerKind
    seq_len: int
    context: int | None

    @property
    def spec(self) -> RopeSpec:
        return self.kind.spec

    @property
    def block(self) -> Mapping:
        return self.data.blocks.get(self.kind.layer_type, {})


class Computed(NamedTuple):
    """What a per-rope-type handler returns for a supported type (an unsupported one returns an ``EngineResult``)."""

    inv_freq: torch.Tensor
    attention: float
    choice: str | None = None
    rule: str | None = None
    divergences: tuple[Divergence, ...] = ()


def engine_input(config: Mapping, model: LayerMap | None = None) -> EngineInput:
    from pe_core.config import layer_map, text_config_of

    if model is None:
        model = layer_map(config)
    text, _where = text_config_of(config)
    blocks = dict(model.class_blocks or {})
    for kind in model.rotary_kinds:  # an untyped config: the block its spec was read from
        blocks.setdefault(kind.layer_type, _block_of_spec(kind.spec))
    return EngineInput(model, text, blocks)


# The keys beyond factor and L a rope type's block names (the rest are read from the spec where set).
_BLOCK_KEYS = {"yarn": ("beta_fast", "beta_slow"), "ntk_by_parts": ("beta_fast", "beta_slow"),
               "llama3": ("low_freq_factor", "high_freq_factor")}


def _block_of_spec(spec: RopeSpec) -> dict:
    entry = rope_type_entry(spec.rope_type)
    block = {"rope_type": spec.rope_type, "rope_theta": spec.base}
    if entry.factor_from != "none":
        block.update(factor=spec.factor, original_max_position_embeddings=spec.original_max_position_embeddings)
    for name in _BLOCK_KEYS.get(spec.rope_type, ()):
        block[name] = getattr(spec, name)
    for name in ("attention_factor", "mscale", "mscale_all_dim", "short_factor", "long_factor"):
        if getattr(spec, name) is not None:
            block[name] = getattr(spec, name)
    if not spec.truncate and "truncate" in entry.reads:
        block["truncate"] = False
    if spec.partial_rotary_factor != 1:
        block["partial_rotary_factor"] = spec.partial_rotary_factor
    return block


def plain_block(block: Mapping) -> bool:
    """A block without scaling (its rope_type "default" or absent), as the engines read a raw block."""
    return block.get("rope_type", "default") == "default"


def _reference(spec: RopeSpec, seq_len: int) -> tuple[torch.Tensor, float]:
    freqs = rope_frequencies(spec, seq_len)
    return freqs.inv_freq, freqs.attention_factor


def reference_computed(call: Call) -> Computed:
    """The handler of a type an engine computes as transformers does."""
    return Computed(*_reference(call.spec, call.seq_len))


def mla_softmax_scale(block: Mapping) -> float:
    """DeepSeek-V2/V3's MLA multiplies its softmax scale by mscale² = (0.1·mscale_all_dim·ln s + 1)² when the
    block has a scaled rope type and a non-zero mscale_all_dim (transformers' ``DeepseekV3Attention``; vLLM's
    ``DeepseekV2Attention``; llama.cpp's ``yarn_log_multiplier`` = 0.1·mscale_all_dim): 1.87385 for DeepSeek-V3."""
    if plain_block(block):
        return 1.0
    mscale_all_dim = block.get("mscale_all_dim") or 0
    if not mscale_all_dim:
        return 1.0
    mscale = yarn_get_mscale(float(block.get("factor", 1.0)), float(mscale_all_dim))
    return mscale * mscale


def yarn_inv_freq(spec: RopeSpec, truncate: bool) -> torch.Tensor:
    """YaRN's blend of θᵢ and θᵢ/s over the ramp between the correction dims (floored and ceiled when truncating)."""
    return rope_frequencies(spec.replace(truncate=truncate)).inv_freq


def fixed_ntk_inv_freq(spec: RopeSpec) -> torch.Tensor:
    """vLLM's fixed NTK (``NTKScalingRotaryEmbedding`` without mixed_b, after kexue.fm/archives/9706):
    θᵢ = (b·s)^(−2i/d) / s^(2/d) = b^(−2i/d)·s^(−(2i+2)/d). Its last pair is PI's θ/s, as bloc97's NTK-aware
    (b·s^(d/(d−2)))^(−2i/d) is; every other pair differs."""
    dim = spec.rotary_dim
    return default_inv_freq(spec.base * spec.factor, dim) / spec.factor ** (2 / dim)


def static_dynamic_inv_freq(spec: RopeSpec) -> torch.Tensor:
    """vLLM's and SGLang's "dynamic" NTK: one table, built for the length s·L: base·(s·s − (s − 1))^(d/(d−2)),
    which is transformers' dynamic NTK at seq_len = s·L, whatever the sequence."""
    dim = spec.rotary_dim
    base = spec.base * (spec.factor * spec.factor - (spec.factor - 1)) ** (dim / (dim - 2))
    return default_inv_freq(base, dim)


def vllm_dynamic_inv_freq(spec: RopeSpec, positions: int, trained: int) -> torch.Tensor:
    """vLLM 0.32's ``DynamicNTKScalingRotaryEmbedding``: one table at base b·(s·P/T − (s − 1))^(d/(d−2)), P the
    max_position it is built for (the config's max_position_embeddings), T ``max_trained_positions`` (default P,
    which leaves the trained base)."""
    dim = spec.rotary_dim
    base = spec.base * (spec.factor * positions / trained - (spec.factor - 1)) ** (dim / (dim - 2))
    return default_inv_freq(base, dim)


def longrope_scale(max_positions: int, original: int) -> float:
    """√(1 + ln(L′/L)/ln L), 1 when L′ ≤ L: LongRoPE's cos/sin factor from max_position_embeddings."""
    scale = max_positions / original
    return 1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(original))


def _longrope_inv_freq(spec: RopeSpec, long: bool) -> torch.Tensor:
    factors = torch.tensor(spec.long_factor if long else spec.short_factor, dtype=torch.float64)
    return default_inv_freq(spec.base, spec.rotary_dim) / factors


def _unsupported(engine: Engine, kind: LayerKind, seq_len: int, note: str, divergences=()) -> EngineResult:
    return EngineResult(engine.name, _(engine.versions), kind.layer_type, seq_len, False, None, 1.0, 1.0, kind.layout,
                        None, "", None, None, tuple(divergences), note)


def _attention_factor_key(block: Mapping) -> float | None:
    value = block.get("attention_factor")
    return None if value is None else float(value)


def _pairs_apart(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-9) -> int:
    if a.shape != b.shape:  # a different number of rotated pairs: every pair counts as apart
        return max(a.numel(), b.numel())
    return int((~torch.isclose(a, b, rtol=rtol, atol=0)).sum())


def _scaled_block(data: EngineInput) -> Mapping | None:
    """The block the engines take max-length rules from: the full-attention layers' (the model's default kind)."""
    try:
        kind = data.model.default_kind
    except ValueError:
        return None
    return data.blocks.get(kind.layer_type)
