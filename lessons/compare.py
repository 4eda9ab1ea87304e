"""Compare two configs side by side (a base model and its long-context variant, say): θ ratio per pair,
wavelengths, attention factors, and every RoPE parameter that differs."""

from __future__ import annotations

import dataclasses
import functools

import torch

from figures import layers as draw_layers
from figures import practitioner as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, SettingsError, figure_registry, setting
from lessons.model_source import (
    EXAMPLE_CONFIG,
    OLD_STYLE_LINEAR_CONFIG,
    SOURCES,
    config_of,
    preset_names,
    source_title,
    spec_of,
)
from lessons.rope_setup import kind_rows, kind_text
from pe_core import RopeSpec, rope_frequencies
from pe_core.check import close
from pe_core.config import extended_length, layer_map
from pe_core.rope import rope_type_entry

FIRST, SECOND, LENGTH = "first", "second", "length"
MAX_LENGTH = 1 << 22

# (field, label): the RoPE parameters the table lists, in order
PARAMETERS = (
    ("layers", N_("layers compared")), ("rope_type", N_("rope type")), ("base", N_("base (rope_theta)")), ("head_dim", N_("head dim")),
    ("rotary_dim", N_("rotated dimensions")), ("original_max_position_embeddings", N_("training length L")),
    ("built_for", N_("built for (length)")), ("factor", N_("factor")), ("beta_fast", N_("β fast")),
    ("beta_slow", N_("β slow")), ("truncate", N_("truncate")), ("low_freq_factor", N_("low_freq_factor")),
    ("high_freq_factor", N_("high_freq_factor")), ("attention_factor", N_("attention factor")),
    ("seq_len", N_("evaluated at length")),
)
# parameters shown only for the rope types that read them
_TYPE_FIELDS = ("factor", "beta_fast", "beta_slow", "truncate", "low_freq_factor", "high_freq_factor")


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    source_a: str = setting("preset", N_("Model A from"), key="src_a", widget="radio", group=FIRST, options=SOURCES,
                            format=source_title)
    preset_a: str = setting("Llama-3-8B", N_("Model A"), key="a", widget="selectbox", group=FIRST,
                            options=preset_names(), when={"source_a": ("preset",)}, examples=("Llama-2-7B",))
    config_a: str = setting(EXAMPLE_CONFIG, N_("config.json of A"), key="config_a", widget="text", group=FIRST,
                            when={"source_a": ("config",)}, examples=(OLD_STYLE_LINEAR_CONFIG,))
    source_b: str = setting("preset", N_("Model B from"), key="src_b", widget="radio", group=SECOND, options=SOURCES,
                            format=source_title)
    preset_b: str = setting("Llama-3.1-8B", N_("Model B"), key="b", widget="selectbox", group=SECOND,
                            options=preset_names(), when={"source_b": ("preset",)},
                            examples=("Qwen2.5-7B-Instruct (+YaRN x4)",))
    config_b: str = setting(EXAMPLE_CONFIG, N_("config.json of B"), key="config_b", widget="text", group=SECOND,
                            when={"source_b": ("config",)}, examples=(OLD_STYLE_LINEAR_CONFIG,))
    length: int = setting(0, N_("Evaluate both at length (0: each at the length its config is built for)"),
                          key="len", widget="number", group=LENGTH, min_value=0, max_value=MAX_LENGTH, step=1024,
                          examples=(200_000,),
                          help=N_("Dynamic NTK and LongRoPE change θᵢ with the sequence length."))


class Side:
    """One model of the comparison, evaluated at its length."""

    def __init__(self, label: str, config: dict, length: int) -> None:
        self.label = label
        self.config = config
        self.spec: RopeSpec = spec_of(config)
        try:
            self.layers = layer_map(config)
        except ValueError as err:
            raise SettingsError(str(err)) from err
        self.kind = self.layers.default_kind  # the kind spec_of reads: the layers context extension scales
        self.built_for = extended_length(config)
        self.seq_len = length or self.built_for
        frequencies = rope_frequencies(self.spec, self.seq_len)
        self.inv_freq, self.attention_factor = frequencies.inv_freq, frequencies.attention_factor

    def value(self, field: str):
        if field == "layers":
            return kind_text(self.layers, self.kind)
        if field == "built_for":
            return self.built_for
        if field == "attention_factor":
            return self.attention_factor
        if field == "seq_len":
            return self.seq_len
        if field in _TYPE_FIELDS and field not in rope_type_entry(self.spec.rope_type).reads:
            return None
        return getattr(self.spec, field)


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        label_a = _("A: {model}").format(model=settings.preset_a if settings.source_a == "preset" else _("pasted"))
        label_b = _("B: {model}").format(model=settings.preset_b if settings.source_b == "preset" else _("pasted"))
        self.a = Side(label_a, config_of(settings.source_a, settings.preset_a, settings.config_a), settings.length)
        self.b = Side(label_b, config_of(settings.source_b, settings.preset_b, settings.config_b), settings.length)

    @property
    def same_pairs(self) -> bool:
        return self.a.inv_freq.numel() == self.b.inv_freq.numel()

    @functools.cached_property
    def ratio(self) -> torch.Tensor | None:
        return self.b.inv_freq / self.a.inv_freq if self.same_pairs else None

    @functools.cached_property
    def differs(self) -> tuple[bool, ...]:
        if not self.same_pairs:
            return ()
        return tuple((~close(self.b.inv_freq, self.a.inv_freq)).tolist())

    def table(self) -> list[dict]:
        rows = []
        for field, label in PARAMETERS:
            first, second = self.a.value(field), self.b.value(field)
            if first is None and second is None:
                continue
            rows.append({_("parameter"): _(label), self.a.label: _shown(first), self.b.label: _shown(second),
                         _("differs"): "≠" if first != second else ""})
        return rows

    def summary(self) -> str:
        if not self.same_pairs:
            return _("A rotates {a} pairs and B {b}: their θᵢ cannot be compared pair by pair.").format(
                a=self.a.inv_freq.numel(), b=self.b.inv_freq.numel())
        changed = [i for i, d in enumerate(self.differs) if d]
        if not changed:
            return _("The θᵢ of A and B agree on every pair to float32 precision.")
        ratio = self.ratio
        slower = sum(1 for i in changed if float(ratio[i]) < 1)
        return _("{count} of {pairs} pairs differ (pairs {first} to {last}); B turns {slower} of them slower than A "
                 "and {faster} faster. Attention factor: A {af_a:.6g}, B {af_b:.6g}.").format(
            count=len(changed), pairs=len(self.differs), first=changed[0], last=changed[-1], slower=slower,
            faster=len(changed) - slower, af_a=self.a.attention_factor, af_b=self.b.attention_factor)


def _shown(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 1000 and value == int(value) else f"{value:.6g}"
    return str(value)


def compute(settings: Settings) -> Result:
    return Result(settings)


def _wavelengths(result: Result, style):
    a, b = result.a, result.b
    return draw.compare_wavelength_figure((a.label, a.inv_freq, a.spec.original_max_position_embeddings, a.seq_len),
                                          (b.label, b.inv_freq, b.spec.original_max_position_embeddings, b.seq_len))


def _layer_maps(result: Result, style):
    a, b = result.a, result.b
    return draw_layers.layer_maps_figure(
        *(draw_layers.ModelLayers(side.label, kind_rows(side.layers, side.kind, side.built_for),
                                  side.layers.num_layers, side.built_for) for side in (a, b)))


def _ratio(result: Result, style):
    return draw.compare_ratio_figure(result.ratio, differs=result.differs, label=_("B / A"))


GROUPS = (FIRST, SECOND, LENGTH)
FIGURES = figure_registry(
    FigureSpec("wavelengths", draw.COMPARE_WAVELENGTH_TITLE, _wavelengths, groups=GROUPS,
               caption=N_("Dashed and dotted lines: each model's training length L; pairs above them never "
                          "completed a turn in its training.")),
    FigureSpec("ratio", draw.COMPARE_RATIO_TITLE, _ratio, groups=GROUPS,
               caption=N_("1: B keeps A's θ for the pair; below 1: B turns it slower. Ringed: different beyond "
                          "float32 tolerance.")),
    FigureSpec("layer-maps", draw_layers.COMPARE_TITLE, _layer_maps, groups=GROUPS,
               caption=N_("Each bar is one layer, as tall as the tokens it can attend to; hollow, hatched bars apply "
                          "no position encoding. The table and the other figures compare the outlined kinds: the "
                          "layers context extension scales."),
               showcase=(("preset_a", "Gemma-3-4B-it"), ("preset_b", "EXAONE-4.0-32B"))),
)

LESSON = Lesson(
    name="compare",
    title=N_("Compare two RoPE configs"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Two configs side by side (a base model and its long-context variant): θ ratio per pair, wavelengths, "
               "attention factors and every parameter that differs."),
)
