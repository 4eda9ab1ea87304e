"""A model's layers by kind: which layers, what they attend over, and their RoPE or none.

Today's models are hybrids: Gemma 3 rotates five of every six layers (sliding windows) at base 10⁴ and
only the sixth (full attention) at 10⁶ with linear ×8; EXAONE 4 and Command R7B rotate only their
sliding layers and leave the full-attention ones without position encoding (NoPE); Llama 4 skips
RoPE on every fourth layer; Qwen3-Next's linear-attention layers have none. A ``LayerMap`` groups the
layers into kinds, each with its indices, its attention span and its RoPE (``RopeSpec``, rotated
dimensions, pairing layout) or none.

A config with a model type is read by that model's own transformers code (``pe_core.model_code``), never by
notes kept here; ``NOTES`` holds only what the code cannot say (how a model without RoPE encodes positions,
what Llama 4 does on its NoPE layers). A config without a model type (the app's presets, a hand-written RoPE
block) is plain RoPE on every layer, as ``LlamaConfig`` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from i18n import N_, _
from pe_core.rope import RopeSpec, rope_type_entry

# Where multimodal and composite configs keep the language model's own config.
SUB_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "thinker_config", "vlm_config")

FULL, SLIDING, CHUNKED, LINEAR = "full_attention", "sliding_attention", "chunked_attention", "linear_attention"
INDEXED = "indexed_attention"  # DeepSeek Sparse Attention: an indexer picks the keys each query attends to
HYBRID_BLOCK = "hybrid"  # Zamba2: a Mamba layer after a transformer block shared across the model
# Layer types whose tokens do not attend by position at all (linear attention, state-space mixers).
_POSITIONLESS_TYPES = (LINEAR, "mamba", "conv", "linear_attention_gated", "moe", "mlp")
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


# ---- a config without a model type: the app's presets and hand-written RoPE blocks ---------------------------


def _flat_parameters(config: Mapping) -> dict:
    params = config.get("rope_parameters")
    if params is None:
        params = config.get("rope_scaling")
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ValueError(_("config.json field 'rope_scaling' / 'rope_parameters' must be an object (got {params!r}).").format(params=params))
    return dict(params)


def _with_theta(block: dict, config: Mapping) -> dict:
    if "rope_theta" not in block and config.get("rope_theta") is not None:
        block["rope_theta"] = config["rope_theta"]
    return block


def untyped_blocks(config: Mapping, layer_types: list[str]) -> dict[str, dict | None]:
    """A config without a model type: one block for every layer, unless nested by its own layer types (a null
    block: those layers have no RoPE)."""
    params = _flat_parameters(config)
    nested = [key for key in params if key in layer_types]
    if nested:
        return {layer_type: None if params[layer_type] is None else _with_theta(dict(params[layer_type]), config)
                for layer_type in nested}
    block = _with_theta(params, config)
    return {layer_type: block for layer_type in set(layer_types)}


def untyped_layer_types(config: Mapping) -> list[str]:
    """A config without a model type: its own layer_types, else full attention on every layer."""
    given = config.get("layer_types")
    if given is not None:
        if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
            raise ValueError(_("config.json field 'layer_types' must be a list of layer type names."))
        return [LEGACY_LAYER_TYPES.get(item, item) for item in given]
    if not isinstance(config.get("num_hidden_layers"), int) or config["num_hidden_layers"] < 1:
        raise ValueError(_("config.json needs 'num_hidden_layers' (or 'layer_types') to lay out the layers."))
    return [FULL] * config["num_hidden_layers"]


# Old layer type names transformers reads as today's (``configuration_utils._LEGACY_LAYER_TYPE_REMAP``).
LEGACY_LAYER_TYPES = {"mamba": LINEAR, "attention": FULL, "deepseek_sparse_attention": INDEXED}


# ---- what the model's own code cannot say: teaching text ------------------------------------------------------


class Notes(NamedTuple):
    """What a page says of a model type beyond what its classes compute."""

    positions: str | None = None  # N_(): how a model without RoPE encodes positions
    nope_note: str | None = None  # N_(): what the model does in place of RoPE on its NoPE layers
    # max_position_embeddings is the length the scaled layers are built for, not the length before scaling
    # (Gemma 3: 131,072 with linear ×8), so a linear block's L is max_position_embeddings / factor
    advertises_extended: bool = False
    # the key older readers (transformers < 5) take the sliding layers' base from, where a per-layer-type class
    # still reads rope_theta + rope_scaling for its full-attention layers (Gemma 3)
    older_local_theta_key: str | None = None


_LEARNED = N_("learned absolute position embeddings")
_T5 = N_("T5's relative position buckets")
_ALIBI = N_("ALiBi biases")
# By the text model's type, as its config class names it.
NOTES: dict[str, Notes] = {
    "gemma3_text": Notes(advertises_extended=True, older_local_theta_key="rope_local_base_freq"),
    "llama4_text": Notes(nope_note=N_("attention temperature tuning: queries scaled by 1 + attn_scale·ln(1 + ⌊(m + 1)/floor_scale⌋)")),
    "gpt2": Notes(positions=_LEARNED), "opt": Notes(positions=_LEARNED), "bert": Notes(positions=_LEARNED),
    "roberta": Notes(positions=_LEARNED), "distilbert": Notes(positions=_LEARNED), "bart": Notes(positions=_LEARNED),
    "gpt_bigcode": Notes(positions=_LEARNED), "whisper": Notes(positions=N_("sinusoidal and learned position embeddings")),
    "t5": Notes(positions=_T5), "mt5": Notes(positions=_T5), "bloom": Notes(positions=_ALIBI), "mpt": Notes(positions=_ALIBI),
}


def notes_of(model_type: str | None) -> Notes:
    return NOTES.get(model_type, Notes())


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
    # the model's own rotary class (module.Class) and the rotation function its attention calls on these layers,
    # where its own code read them
    rotary_class: str | None = None
    rotation: str | None = None
    rotary_takes_layer_type: bool = False  # its forward takes layer_type= (one table per layer type)

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
        return rope_type_entry(self.spec.rope_type).extends or self.spec.factor > 1


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
    context_length: int | None = None  # max_position_embeddings as the class holds it (its default where not given)
    text_model_type: str | None = None  # the language model's own type (gemma3_text in a gemma3 file)
    head_dim_unset: bool = False  # the class keeps a missing head_dim as None (MixtralConfig), which some rope types fail on
    class_head_dim: int | None = None  # the class's head_dim where it keeps one

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


def span_of(values: Mapping, layer_type: str) -> int | None:
    if layer_type == SLIDING:
        window = values.get("sliding_window")
        return int(window) if isinstance(window, (int, float)) and not isinstance(window, bool) else None
    if layer_type == CHUNKED:
        chunk = values.get("attention_chunk_size")
        return int(chunk) if isinstance(chunk, (int, float)) and not isinstance(chunk, bool) else None
    return None
