"""The RoPE set-up controls that several pages share: sliders, a model preset, or a pasted config.json."""

from __future__ import annotations

import json
from typing import NamedTuple

import streamlit as st

from pe_core import METHOD_TITLES, METHODS, MethodSetup, from_hf_config, load_presets, method_setup
from pe_core.config import context_length_of
from ui import params

HEAD_DIMS = (8, 16, 32, 64, 96, 128, 256)
BASES = (100.0, 500.0, 1_000.0, 5_000.0, 10_000.0, 50_000.0, 100_000.0, 150_000.0, 500_000.0, 1_000_000.0,
         10_000_000.0)
TRAIN_LENGTHS = tuple(2**k for k in range(3, 18))  # 8 .. 131072
SCALES = (1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
MAX_TARGET_LENGTH = 1 << 20
SOURCES = ("sliders", "preset", "config")
_SOURCE_TITLES = {"sliders": "Sliders", "preset": "A real model", "config": "Paste config.json"}


def format_base(value: float) -> str:
    return f"{value:,.0f}"


def format_length(value: int) -> str:
    return f"{value:,}"


class RopeControls(NamedTuple):
    head_dim: int
    base: float
    train_length: int  # L: the length the model was trained at
    target_length: int  # L': the length it is run at
    setups: tuple[MethodSetup, ...]  # what to compare, in display order

    @property
    def scale(self) -> float:
        return self.target_length / self.train_length


def rope_controls(
    *,
    key_prefix: str = "",
    default_methods: tuple[str, ...] = ("direct", "pi", "ntk"),
    default_head_dim: int = 128,
    default_base: float = 10_000.0,
    default_train_length: int = 4096,
    default_scale: float = 4.0,
    allow_models: bool = True,
) -> RopeControls:
    """Draw the shared controls (call inside the container they belong in, e.g. ``st.sidebar``)."""
    k = key_prefix
    source = "sliders"
    if allow_models:
        source = params.radio("Settings from", f"{k}src", SOURCES, format_func=_SOURCE_TITLES.get, horizontal=True)

    own: MethodSetup | None = None
    if source == "preset":
        presets = load_presets()
        names = [p.name for p in presets]
        name = params.selectbox("Model", f"{k}preset", names, index=0)
        preset = presets[names.index(name)]
        st.caption(f"{preset.note} ([{preset.hf_id}](https://huggingface.co/{preset.hf_id}))")
        spec, context = preset.spec, preset.context_length
        own = MethodSetup("model", preset.name, spec, 0)
    elif source == "config":
        text = st.text_area("config.json", key=f"{k}config_text", height=180,
                            placeholder='{"hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 500000, ...}')
        if not text.strip():
            st.info("Paste a model's config.json above to see its RoPE.")
            st.stop()
        try:
            spec = from_hf_config(text)
        except ValueError as err:
            st.error(f"That config.json could not be read: {err}", icon="⚠️")
            st.stop()
        context = context_length_of(json.loads(text))
        own = MethodSetup("model", "Pasted config", spec, 0)

    if own is not None:
        head_dim, base, train_length = own.spec.rotary_dim, own.spec.base, own.spec.original_max_position_embeddings
        target_length = min(max(context or train_length, train_length), MAX_TARGET_LENGTH)
        if own.spec.rope_type == "default":
            target_length = min(4 * train_length, MAX_TARGET_LENGTH)
        st.caption(
            f"rotary dims {head_dim} · base {format_base(base)} · trained at L = {format_length(train_length)} · "
            f"shown at L' = {format_length(target_length)} · own RoPE: `{own.spec.rope_type}`"
        )
        own = own._replace(seq_len=target_length)
    else:
        head_dim = params.select_slider("Head dim d", f"{k}d", HEAD_DIMS, default_head_dim)
        base = params.select_slider("Base b", f"{k}base", BASES, default_base, format_func=format_base)
        train_length = params.select_slider("Training length L", f"{k}L", TRAIN_LENGTHS, default_train_length,
                                            format_func=format_length)
        scale = params.select_slider("Scale s = L'/L", f"{k}s", SCALES, default_scale,
                                     format_func=lambda v: f"{v:g}×")
        target_length = int(round(train_length * scale))
        if target_length > MAX_TARGET_LENGTH:
            st.caption(f"L' capped at {format_length(MAX_TARGET_LENGTH)} positions.")
            target_length = MAX_TARGET_LENGTH

    methods = params.multiselect("Methods to compare", f"{k}methods", METHODS, default_methods,
                                 format_func=METHOD_TITLES.get)
    abf_base = 500_000.0
    if "abf" in methods:
        abf_base = params.select_slider("ABF: new base", f"{k}abf", BASES, 500_000.0, format_func=format_base)

    setups = [own] if own is not None else []
    for method in methods:
        setups.append(method_setup(method, head_dim, base, train_length, target_length, abf_base=abf_base))
    return RopeControls(head_dim, base, train_length, target_length, tuple(setups))
