"""Hybrid models: why sliding-window layers keep a small base, which models drop RoPE from their global layers
(NoPE), what that leaves for context extension to change, and Llama 4's attention temperature on its NoPE layers.

Every number the page states is computed here: from ``pe_core.hybrid`` (pairs that turn within a window, layers
by role, Llama 4's factor, a softmax's weight), from the published configs' layer maps (``pe_core.published``)
and from the plan's reading of which layers a context extension changes (``pe_core.plan``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import torch

from figures import hybrid as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from lessons.format import base_text, length_text
from lessons.rope_setup import BASES
from pe_core import hybrid
from pe_core.config import layer_map
from pe_core.layers import FULL, SLIDING, LayerMap
from pe_core.plan import layer_lines, plan
from pe_core.published import HYBRID, published
from pe_core.rope import default_inv_freq, rope_frequencies

WINDOW, MODELS, TEMPERATURE = "window", "models", "temperature"
WINDOWS = (128, 256, 512, 1024, 2048, 4096, 8192)
WINDOW_HEAD_DIMS = (64, 128, 256)
FLOOR_SCALES = (1024, 2048, 4096, 8192, 16_384, 32_768)
ATTN_SCALES = (0.05, 0.1, 0.2, 0.3)
GAPS = (4.0, 6.0, 8.0, 10.0, 12.0)
PLAN_TARGET = 1_048_576  # the length the extension notes are read at (windows and NoPE need nothing at any length)
LONGEST_QUERY = 10_485_760  # 10 × 2²⁰: the temperature chart's last position
LANDMARKS = (8_192, 131_072, 1_048_576, LONGEST_QUERY)  # context lengths L; the query sits at m = L − 1
NEEDLE_POINTS = 400
SHOWCASE = "Gemma 3 27B"  # the model the window part describes
NOPE_SHOWCASE = ("EXAONE 4.0 32B", "Llama 4 (class defaults)")


def _number(value: float) -> str:
    return f"{value:g}"


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    head_dim: int = setting(128, N_("Head dim d"), key="d", group=WINDOW, options=WINDOW_HEAD_DIMS,
                            help=N_("Gemma 3 27B's heads have d = 128; its 4B model's d = 256."))
    window: int = setting(1024, N_("Window W (tokens)"), key="w", group=WINDOW, options=WINDOWS, format=length_text)
    local_base: float = setting(10_000.0, N_("Base of the window layers"), key="bl", group=WINDOW, options=BASES,
                                format=base_text)
    global_base: float = setting(1_000_000.0, N_("Base of the full-attention layers"), key="bg", group=WINDOW,
                                 options=BASES, format=base_text)
    model: str = setting("EXAONE 4.0 32B", N_("Model"), key="model", widget="selectbox", group=MODELS,
                         options=tuple(entry.name for entry in HYBRID), format=_)
    floor_scale: int = setting(8192, N_("floor_scale (tokens per step)"), key="fs", group=TEMPERATURE,
                               options=FLOOR_SCALES, format=length_text,
                               help=N_("Llama4TextConfig's default is 8,192."))
    attn_scale: float = setting(0.1, N_("attn_scale"), key="as", group=TEMPERATURE, options=ATTN_SCALES,
                                format=_number, help=N_("Llama4TextConfig's default is 0.1."))
    gap: float = setting(8.0, N_("Logit gap Δ of the matching key"), key="gap", group=TEMPERATURE, options=GAPS,
                         format=_number, help=N_("How far the one matching key's logit stands above the others'."))


class KindFacts(NamedTuple):
    """One kind of a model's layers, as the page describes it."""

    layers: int
    span: int | None
    base: float | None
    rope_type: str | None
    factor: float | None


def _kind_facts(layers: LayerMap, layer_type: str, rotary: bool = True) -> KindFacts:
    kind = next(kind for kind in layers.kinds if kind.layer_type == layer_type and kind.has_rope == rotary)
    spec = kind.spec
    return KindFacts(len(kind.layers), kind.span, spec.base if spec else None, spec.rope_type if spec else None,
                     spec.factor if spec else None)


@functools.cache
def model_layers(name: str) -> LayerMap:
    return layer_map(published(name).config)


class ShippedScaling(NamedTuple):
    """What a model's own scaling does inside its windows (EXAONE 4: llama3 ×16 on its only RoPE layers)."""

    name: str
    window: int
    rope_type: str
    factor: float
    pairs: int
    changed: int  # pairs whose θ the scaling changes
    changed_turning: int  # ... of them, those that turn at least once within the window


@functools.cache
def exaone_windows() -> ShippedScaling:
    name = "EXAONE 4.0 32B"
    kind = model_layers(name).kind(SLIDING)
    scaled = rope_frequencies(kind.spec).inv_freq
    plain = default_inv_freq(kind.spec.base, kind.spec.head_dim)
    changed = ~torch.isclose(scaled, plain, rtol=1e-12, atol=0.0)
    turning = hybrid.full_turns(plain, hybrid.farthest_distance(kind.span)) >= 1
    return ShippedScaling(name, kind.span, kind.spec.rope_type, kind.spec.factor, plain.numel(),
                          int(changed.sum()), int((changed & turning).sum()))


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # --- windows ------------------------------------------------------------------------------------

    @property
    def farthest(self) -> int:
        return hybrid.farthest_distance(self.settings.window)

    def inv_freq(self, base: float) -> torch.Tensor:
        return default_inv_freq(base, self.settings.head_dim)

    @property
    def pairs(self) -> int:
        return self.settings.head_dim // 2

    def turning(self, base: float) -> int:
        return hybrid.turning_pairs(self.inv_freq(base), self.settings.window)

    def slowest_turns(self, base: float) -> float:
        """Turns the slowest pair makes across the window's farthest distance."""
        return float(hybrid.full_turns(self.inv_freq(base), self.farthest)[-1])

    @property
    def showcase(self) -> tuple[KindFacts, KindFacts]:
        layers = model_layers(SHOWCASE)
        return _kind_facts(layers, SLIDING), _kind_facts(layers, FULL)

    # --- roles and extension ------------------------------------------------------------------------

    @property
    def roles(self) -> tuple[draw.ModelRoles, ...]:
        return model_roles()

    def nope_layers(self, name: str) -> tuple[int, int]:
        shares = hybrid.layer_shares(model_layers(name))
        return shares.counts["nope"], shares.total

    @property
    def extension_lines(self) -> tuple[str, ...]:
        """What a context extension changes in the chosen model, kind by kind (the plan's reading)."""
        try:
            return tuple(layer_lines(plan(published(self.settings.model).config, PLAN_TARGET, methods=("pi",),
                                          with_bound=False)))
        except ValueError as error:
            return (str(error),)

    # --- temperature --------------------------------------------------------------------------------

    def scale_at(self, position: int | torch.Tensor) -> torch.Tensor:
        s = self.settings
        return hybrid.llama4_attention_scale(torch.as_tensor(position), s.floor_scale, s.attn_scale)

    @functools.cached_property
    def steps(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every position where the factor changes (k·floor_scale − 1) up to the chart's end, and position 1."""
        floor_scale = self.settings.floor_scale
        positions = torch.cat([torch.tensor([1]), torch.arange(floor_scale - 1, LONGEST_QUERY, floor_scale),
                               torch.tensor([LONGEST_QUERY - 1])])
        return positions, self.scale_at(positions)

    @property
    def landmarks(self) -> tuple[draw.Landmark, ...]:
        return tuple(draw.Landmark(length - 1, float(self.scale_at(length - 1))) for length in LANDMARKS)

    @functools.cached_property
    def needle(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # a smooth sweep, plus both sides of every step of the factor (it changes where n reaches k·floor_scale)
        sweep = torch.logspace(1, torch.log10(torch.tensor(float(LONGEST_QUERY))), NEEDLE_POINTS,
                               dtype=torch.float64).round().long()
        steps = torch.arange(self.settings.floor_scale, LONGEST_QUERY + 1, self.settings.floor_scale)
        lengths = torch.unique(torch.cat([sweep, steps - 1, steps]))
        plain = hybrid.needle_weight(lengths, self.settings.gap)
        tuned = hybrid.needle_weight(lengths, self.settings.gap, self.scale_at(lengths - 1))
        return lengths, plain, tuned

    def needle_at(self, length: int, tuned: bool) -> float:
        scale = self.scale_at(length - 1) if tuned else 1.0
        return float(hybrid.needle_weight(torch.tensor([length]), self.settings.gap, scale)[0])


@functools.cache
def model_roles() -> tuple[draw.ModelRoles, ...]:
    found = []
    for entry in HYBRID:
        shares = hybrid.layer_shares(model_layers(entry.name))
        found.append(draw.ModelRoles(_(entry.name), shares.counts, shares.total))
    return tuple(found)


def role_titles() -> dict[str, str]:
    return {role: _(title) for role, title in hybrid.ROLE_TITLES.items()}


def compute(settings: Settings) -> Result:
    return Result(settings)


def _window(result: Result, style) -> object:
    s = result.settings
    series = [draw.BaseWavelengths(
        _("base {base}: {turning} of {pairs} pairs turn within the window").format(
            base=base_text(base), turning=result.turning(base), pairs=result.pairs),
        2 * torch.pi / result.inv_freq(base)) for base in dict.fromkeys((s.local_base, s.global_base))]
    return draw.window_wavelengths_figure(series, result.farthest)


def _window_caption(result: Result) -> str:
    return _("d = {d}; a window of W = {window} tokens sees distances 0 … {farthest}. Points above the dashed line "
             "are pairs that never complete a turn inside the window.").format(
        d=result.settings.head_dim, window=length_text(result.settings.window), farthest=length_text(result.farthest))


def _roles(result: Result, style) -> object:
    return draw.layer_roles_figure(result.roles, role_titles(), result.settings.model)


def _roles_caption(result: Result) -> str:
    return _("Each model's layer map, read from its published config.json as its transformers class reads it (Llama "
             "4: Llama4TextConfig's defaults). The number in a segment counts its layers; the outlined bar is the model "
             "picked above.")


def _temperature(result: Result, style) -> object:
    positions, scales = result.steps
    return draw.temperature_figure(positions, scales, result.landmarks, result.settings.floor_scale)


def _temperature_caption(result: Result) -> str:
    marks = "; ".join(_("m = {position}: ×{value:.4f}").format(position=length_text(mark.position), value=mark.value)
                      for mark in result.landmarks)
    return _("Exact at every step (a step every {floor} positions). {marks}.").format(
        floor=length_text(result.settings.floor_scale), marks=marks)


def _needle(result: Result, style) -> object:
    lengths, plain, tuned = result.needle
    return draw.needle_figure(lengths, plain, tuned, result.settings.gap)


def _needle_caption(result: Result) -> str:
    return _("The query sits at the last of the n positions (m = n − 1); the other n − 1 keys' logits are equal. "
             "Closed form: e^(sΔ) / (e^(sΔ) + n − 1), s the factor (1 for plain softmax).")


FIGURES = figure_registry(
    FigureSpec("window-wavelengths", draw.WINDOW_TITLE, _window, groups=(WINDOW,), caption=_window_caption),
    FigureSpec("layer-roles", draw.ROLES_TITLE, _roles, groups=(MODELS,), caption=_roles_caption),
    FigureSpec("temperature", draw.TEMPERATURE_TITLE, _temperature, groups=(TEMPERATURE,),
               caption=_temperature_caption),
    FigureSpec("needle", draw.NEEDLE_TITLE, _needle, groups=(TEMPERATURE,), caption=_needle_caption),
)

LESSON = Lesson(
    name="hybrid",
    title=N_("Hybrid models: windows, NoPE and context extension"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    key_figure="layer-roles",
    summary=N_("Why sliding-window layers keep a small base, which models drop RoPE from their global layers, what "
               "that leaves context extension to change, and Llama 4's attention temperature."),
    parts=(
        Part("windows", N_("Windows"), N_("Why a sliding window keeps a small base"), ("window-wavelengths",)),
        Part("nope", N_("NoPE layers"), N_("Layers without RoPE, and what context extension changes"),
             ("layer-roles",)),
        Part("temperature", N_("Temperature"), N_("Llama 4's attention temperature"), ("temperature", "needle")),
    ),
)
