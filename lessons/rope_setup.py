"""The RoPE set-up several lessons share: sliders, a real model's preset, or a pasted config.json,
and the context-extension methods to compare. ``RopeSettings`` is the group of settings (its
fields keep the same URL keys on every page); ``rope_setup`` resolves it into method set-ups.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from i18n import N_, _, sentences
from lessons.base import LessonSettings, SettingsError, cached, setting
from lessons.format import base_text, length_text, scale_text
from lessons.model_source import (
    EXAMPLE_CONFIG,
    GEMMA3_CONFIG,
    OLD_STYLE_LINEAR_CONFIG,
    config_of,
    parse_config,
    preset_config,
    preset_names,
    source_title,
)
from pe_core import METHODS, MethodSetup, method_setup
from pe_core.config import (
    extended_length_of,
    layer_map,
    original_length_given,
    reading_notes,
    text_config_of,
)
from pe_core.layers import CHUNKED, FULL, SLIDING, LayerKind, LayerMap, layer_type_title, notes_of
from pe_core.methods import DEFAULT_ABF_BASE
from pe_core.rope import rope_type_entry

HEAD_DIMS = (8, 16, 32, 64, 96, 128, 256)
BASES = (100.0, 500.0, 1_000.0, 5_000.0, 10_000.0, 50_000.0, 100_000.0, 150_000.0, 500_000.0, 1_000_000.0,
         10_000_000.0)
TRAIN_LENGTHS = tuple(2**k for k in range(3, 18))  # 8 .. 131072
SCALES = (1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
MAX_TARGET_LENGTH = 1 << 20  # the longest L' any page analyses
UNSCALED_MODEL_SCALE = 4  # a model without RoPE scaling is shown at 4× its training length
SOURCES = ("sliders", "preset", "config")
GROUP = "rope"


def _method_title(method: str) -> str:
    return _(METHODS[method].title)


# Which layers of a hybrid model the page describes: "auto" is the kind context extension scales.
LAYER_CHOICES = ("auto", FULL, SLIDING, CHUNKED)


@cached(max_entries=64)
def _layer_types_of(source: str, preset: str, text: str) -> frozenset[str] | None:
    try:
        layers = layer_map(config_of(source, preset, text))
    except ValueError:
        return None  # the page shows why where it reads the model
    return frozenset(kind.layer_type for kind in layers.kinds)


def offered_layer_choices(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The kinds of layer the chosen model has, after "auto" (every choice while its config cannot be read)."""
    present = _layer_types_of(values.get("source"), values.get("preset"), values.get("config"))
    return LAYER_CHOICES if present is None else tuple(c for c in LAYER_CHOICES if c == "auto" or c in present)


def layer_choice_title(choice: str) -> str:
    return _("the layers context extension scales") if choice == "auto" else layer_type_title(choice)


FROM_SLIDERS = {"source": ("sliders",)}
def config_examples() -> dict[str, dict]:
    """One config per kind of rope_scaling the app reads (label -> config.json), for "try an example"."""
    return {
        N_("Llama 3.1 · llama3 bands"): preset_config("Llama-3.1-8B"),
        N_("Qwen2.5 · YaRN ×4"): preset_config("Qwen2.5-7B-Instruct (+YaRN x4)"),
        N_("DeepSeek-V3 · YaRN with mscale"): preset_config("DeepSeek-V3"),
        N_("Phi-3.5 · LongRoPE"): preset_config("Phi-3.5-mini-instruct"),
        N_("gpt-oss · YaRN without truncation"): preset_config("gpt-oss-20b"),
        N_("Gemma 3 · nested text_config"): GEMMA3_CONFIG,
        N_("Llama 2 · old-style linear ×4"): json.loads(OLD_STYLE_LINEAR_CONFIG),
    }


@dataclasses.dataclass(frozen=True)
class RopeSettings(LessonSettings):
    """Which RoPE to look at, and which methods to compare (the sidebar of the RoPE pages)."""

    source: str = setting("sliders", N_("Settings from"), key="src", widget="radio", group=GROUP, options=SOURCES,
                          format=source_title)
    preset: str = setting(preset_names()[0], N_("Model"), key="preset", widget="selectbox", group=GROUP,
                          options=preset_names(), when={"source": ("preset",)})
    config: str = setting(EXAMPLE_CONFIG, N_("config.json"), key="config", widget="text", group=GROUP,
                          when={"source": ("config",)}, examples=(OLD_STYLE_LINEAR_CONFIG,),
                          help=N_("A model's config.json as transformers writes it: rope_theta, head_dim or "
                                  "hidden_size / num_attention_heads, max_position_embeddings, rope_scaling."))
    head_dim: int = setting(128, N_("Head dim d"), key="d", group=GROUP, options=HEAD_DIMS, when=FROM_SLIDERS)
    base: float = setting(10_000.0, N_("Base b"), key="base", group=GROUP, options=BASES, format=base_text,
                          when=FROM_SLIDERS)
    train_length: int = setting(4096, N_("Training length L"), key="L", group=GROUP, options=TRAIN_LENGTHS,
                                format=length_text, when=FROM_SLIDERS)
    scale: float = setting(4.0, N_("Scale s = L′/L"), key="s", group=GROUP, options=SCALES, format=scale_text,
                           when=FROM_SLIDERS)
    layer_type: str = setting("auto", N_("Layers shown"), key="layers", widget="radio", group=GROUP,
                              options=LAYER_CHOICES, format=layer_choice_title, horizontal=False,
                              when={"source": ("preset", "config")}, offered=offered_layer_choices,
                              help=N_("A hybrid model (Gemma 3, gpt-oss, EXAONE 4, ...) has several kinds of layer, "
                                      "each with its own attention span and RoPE: pick the kind the figures describe."))
    methods: tuple[str, ...] = setting(("direct", "pi", "ntk"), N_("Methods to compare"), key="methods", group=GROUP,
                                       options=tuple(METHODS), format=_method_title)
    abf_base: float = setting(DEFAULT_ABF_BASE, N_("ABF: new base"), key="abf", group=GROUP, options=BASES,
                              format=base_text, when={"methods": ("abf",)})


class RopeSetup(NamedTuple):
    """The RoPE a lesson analyses, resolved from ``RopeSettings``."""

    head_dim: int  # rotary dims
    base: float  # the base the model was trained with
    train_length: int  # L
    target_length: int  # L'
    setups: tuple[MethodSetup, ...]  # what to compare, in display order (a model's own RoPE first)
    model: str | None  # the preset's name or "config" for a pasted config; None for sliders
    capped: bool  # L' was cut to MAX_TARGET_LENGTH
    read_from: str | None = None  # the sub-config read ("text_config"), if the config nests one
    assumed_original: bool = False  # a scaled config without original_max_position_embeddings: L is assumed
    layers: LayerMap | None = None  # the model's layers by kind (None for sliders)
    kind: LayerKind | None = None  # the kind of layer described
    layer_note: str | None = None  # why the kind described is not the one asked for (translated)
    context_length: int | None = None  # the length the model is built for (extended_length)

    @property
    def scale(self) -> float:
        return self.target_length / self.train_length

    @property
    def own(self) -> MethodSetup | None:
        return self.setups[0] if self.model is not None else None


def model_config(settings: RopeSettings) -> dict | None:
    """The config.json of the chosen preset or paste (None for sliders); ``SettingsError`` for a bad paste."""
    if settings.source == "preset":
        return preset_config(settings.preset)
    if settings.source == "config":
        return parse_config(settings.config)
    return None


@cached(max_entries=64)
def rope_setup(settings: RopeSettings) -> RopeSetup:
    """The set-ups to compare: the model's own RoPE (preset or paste) first, then each method.

    A model is shown at the length its RoPE is built for (``pe_core.extended_length``); a model
    without RoPE scaling at 4× its training length, so the methods have something to extend.
    """
    config = model_config(settings)
    capped = assumed = False
    read_from = None
    if config is None:
        head_dim, base, train_length = settings.head_dim, settings.base, settings.train_length
        target_length = int(round(train_length * settings.scale))
        own: list[MethodSetup] = []
        model = None
    else:
        try:
            layers = layer_map(config)
            kind, layer_note = described_kind(layers, settings.layer_type)
            spec = kind.spec
            context = extended_length_of(layers)
        except ValueError as err:
            raise SettingsError(str(err)) from err
        head_dim, base = spec.rotary_dim, spec.base
        if kind.span and not rope_type_entry(spec.rope_type).extends:
            # an unscaled window or chunk bounds the distances a layer ever sees: that span is its L (θ does not
            # depend on L for these types, so the spec may say so too)
            spec = spec.replace(original_max_position_embeddings=kind.span)
            train_length = kind.span
            target_length = UNSCALED_MODEL_SCALE * train_length
        else:
            train_length = spec.original_max_position_embeddings
            built_for = context if kind == layers.default_kind else \
                (layers.context_length or train_length)
            target_length = built_for if built_for > train_length else UNSCALED_MODEL_SCALE * train_length
        read_from = text_config_of(config)[1]
        # Gemma 3 reads L as max_position_embeddings / factor, which is no assumption of ours
        inferred = notes_of(layers.text_model_type).advertises_extended
        assumed = rope_type_entry(spec.rope_type).factor_from != "none" and not original_length_given(config) and not kind.span and not inferred
        model = settings.preset if settings.source == "preset" else "config"
        title = settings.preset if settings.source == "preset" else N_("Pasted config")
        own = [MethodSetup("model", title, spec, min(target_length, MAX_TARGET_LENGTH))]
    if target_length > MAX_TARGET_LENGTH:
        target_length, capped = MAX_TARGET_LENGTH, True
    setups = own + [method_setup(m, head_dim, base, train_length, target_length, abf_base=settings.abf_base)
                    for m in settings.methods]
    if config is None:
        return RopeSetup(head_dim, base, train_length, target_length, tuple(setups), model, capped, read_from, assumed)
    return RopeSetup(head_dim, base, train_length, target_length, tuple(setups), model, capped, read_from, assumed,
                     layers, kind, layer_note, context)


def described_kind(layers: LayerMap, choice: str) -> tuple[LayerKind, str | None]:
    """The kind of layer ``choice`` names, or the default kind with a sentence saying why."""
    if choice == "auto":
        return layers.default_kind, None
    matching = [kind for kind in layers.kinds if kind.layer_type == choice]
    rotary = [kind for kind in matching if kind.has_rope]
    if rotary:
        return rotary[0], None
    shown = layers.default_kind
    if matching:
        note = _("The {asked} layers of this model have no position encoding (NoPE); showing its {shown} layers.")
    else:
        note = _("This model has no {asked} layers; showing its {shown} layers.")
    return shown, note.format(asked=layer_type_title(choice), shown=layer_type_title(shown.layer_type))


def kind_text(layers: LayerMap, kind: LayerKind) -> str:
    """"full attention: 5 of 34 layers" - which layers a page's figures describe."""
    if not layers.num_layers:
        return layer_type_title(kind.layer_type)
    return _("{title}: {count} of {total} layers").format(title=layer_type_title(kind.layer_type),
                                                          count=len(kind.layers), total=layers.num_layers)


def describe(setup: RopeSetup) -> str:
    """One line on what is analysed (the sidebar caption under a preset or a paste)."""
    own = setup.own
    text = _("rotary dims {d} · base {base} · trained at L = {L} · shown at L′ = {target}").format(
        d=setup.head_dim, base=base_text(setup.base), L=length_text(setup.train_length),
        target=length_text(setup.target_length))
    if own is not None:
        text += " · " + _("own RoPE: {title} ({kind})").format(title=_(rope_type_entry(own.spec.rope_type).title),
                                                                kind=own.spec.rope_type)
    if setup.read_from is not None:
        text += " · " + _("read from {key}").format(key=setup.read_from)
    if setup.layers is not None and setup.layers.read_by is not None:
        text += " · " + _("read by its own classes in {reader}").format(reader=setup.layers.read_by)
    if setup.layers is not None and setup.layers.hybrid:
        text += " · " + _("about its {kind}").format(kind=kind_text(setup.layers, setup.kind))
        if setup.kind.span:
            text += " · " + _("each layer attends within {span} tokens, so no distance beyond that ever reaches "
                              "its RoPE").format(span=length_text(setup.kind.span))
    if setup.layer_note:
        text += " · " + setup.layer_note
    if setup.assumed_original:
        text += " · " + _("the config gives no original_max_position_embeddings, so L is taken as "
                          "max_position_embeddings")
    if setup.capped:
        text += " · " + _("L′ capped at {cap} positions").format(cap=length_text(MAX_TARGET_LENGTH))
    return text


# ---- the layer map (a part of every page that reads a model's RoPE) ------------------------------------------


def _kind_label(kind: LayerKind, num_layers: int) -> str:
    span = {"window": _("window {span}"), "chunk": _("chunks of {span}")}.get(kind.span_kind, "")
    parts = [layer_type_title(kind.layer_type)]
    if num_layers:
        parts[0] += " " + _("×{count}").format(count=len(kind.layers))
    if span:
        parts.append(span.format(span=length_text(kind.span)))
    if kind.spec is None:
        parts.append(_("no position encoding (NoPE)"))
        return " · ".join(parts)
    spec = kind.spec
    parts.append(_("base {base}").format(base=base_text(spec.base)))
    parts.append(_("{rotated}/{head} dims rotated").format(rotated=spec.rotary_dim, head=spec.head_dim))
    if rope_type_entry(spec.rope_type).factor_from != "none":
        parts.append(f"{spec.rope_type} ×{spec.factor:g}" if spec.factor != 1 else spec.rope_type)
    return " · ".join(parts)


def layer_rows(setup: RopeSetup) -> tuple[list, int, int]:
    """The layer map figure's rows (one per kind), the layer count, and the context the full layers span."""
    from figures.layers import KindRow

    if setup.layers is None:  # sliders: one RoPE for every layer
        label = _("every layer · base {base} · {d} dims rotated").format(base=base_text(setup.base), d=setup.head_dim)
        return [KindRow(label, (0,), setup.target_length, True, True)], 1, setup.target_length
    context = setup.context_length or setup.target_length
    return kind_rows(setup.layers, setup.kind, context), setup.layers.num_layers, context


def kind_rows(layers: LayerMap, chosen: LayerKind, context: int) -> list:
    """The layer map figure's rows: one per kind of layer, ``chosen`` marked."""
    from figures.layers import KindRow

    return [KindRow(_kind_label(kind, layers.num_layers), kind.layers, kind.span or context, kind.has_rope,
                    kind == chosen) for kind in layers.kinds]


def layer_map_caption(setup: RopeSetup) -> str:
    if setup.layers is None:
        return _("Sliders describe one RoPE that every layer uses. Pick a real model or paste a config.json to see "
                 "a model's layers, kind by kind.")
    text = _("Each bar is one layer, as tall as the tokens it can attend to; hollow, hatched bars apply no "
             "position encoding. The figures on this page describe its {kind} (thick outline).").format(
        kind=kind_text(setup.layers, setup.kind))
    if not setup.layers.num_layers:
        text = sentences((text, _("The config gives no layer count, so the kinds are shown without their positions.")))
    return sentences((text, *reading_notes(setup.layers)))


def _layer_map_figure(result, style) -> object:
    from figures.layers import layer_map_figure

    rows, num_layers, context = layer_rows(result.setup)
    return layer_map_figure(rows, num_layers=num_layers, context=context, note=result.setup.layer_note)


SHOWCASE_HYBRID = (("source", "preset"), ("preset", "Gemma-3-4B-it"))  # the gallery's layer map: a hybrid model


def layer_map_spec():
    """The layer map as a figure of a lesson whose result carries its ``RopeSetup`` as ``.setup``."""
    from figures.layers import TITLE
    from lessons.base import FigureSpec

    return FigureSpec("layer-map", TITLE, _layer_map_figure, groups=(GROUP,),
                      caption=lambda result: layer_map_caption(result.setup), showcase=SHOWCASE_HYBRID)


def layer_map_part():
    from lessons.base import Part

    return Part("layers", N_("Layer map"), N_("Which layers of the model these figures describe"), ("layer-map",))
