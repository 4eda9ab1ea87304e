"""Plan a context extension: each method's parameters for a model and a target length, the base the length
needs (Men et al. 2024), what stays unseen, which kinds of layer change and why, and the whole patched config.json
in the model's own schema."""

from __future__ import annotations

import dataclasses
import functools
import json
import math

import torch

from figures import practitioner as draw
from figures.layers import TITLE as LAYER_MAP_TITLE
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, SettingsError, figure_registry, setting
from lessons.model_source import MODEL, ModelSettings, config_of, spec_of
from lessons.rope_setup import SHOWCASE_HYBRID, kind_rows, kind_text
from pe_core.base_bound import base_lower_bound, similarity_envelope
from pe_core.config import extended_length
from pe_core.layers import layer_type_title
from pe_core.plan import (
    MAX_TARGET,
    PLAN_METHODS,
    TARGET_CEILING,
    Plan,
    composition_text,
    dynamic_base,
    layer_type_name,
    plan,
    plan_json,
    unrotated_pairs,
)

TARGET = "target"
DEFAULT_SCALE = 4  # a target of 0 means this many times the length the model's config is built for
SIMILARITY_BINS = 600
COARSE_STEPS = 50  # the bound at the lengths between L and L′ (the figure's curve) on a 4.7 % grid
PARAMETER_TITLES = {
    "base": N_("base"), "factor": N_("factor s"), "beta_fast": N_("β fast"), "beta_slow": N_("β slow"),
    "attention_factor": N_("attention factor"), "low_freq_factor": N_("low_freq_factor"),
    "high_freq_factor": N_("high_freq_factor"), "kept_pairs": N_("pairs kept (λ < L/4)"),
    "smoothed_pairs": N_("pairs blended"), "divided_pairs": N_("pairs divided by s (λ > L)"),
    "base_at_target": N_("base at L′"), "base_at_target_factor_s": N_("base at L′ if factor = s"),
    "shipped_factor": N_("factor it ships"), "rope_theta": N_("rope_theta in the config"),
}


@dataclasses.dataclass(frozen=True)
class Settings(ModelSettings):
    target: int = setting(0, N_("Target length L′ (0: 4 × the length the model is built for, at most the limit)"), key="target",
                          widget="number", group=TARGET, min_value=0, max_value=TARGET_CEILING, step=1024,
                          examples=(65_536,), help=N_("The context length you want to run the model at."))
    limit: int = setting(MAX_TARGET, N_("Longest target allowed"), key="limit", widget="number", group=TARGET,
                         min_value=MAX_TARGET, max_value=TARGET_CEILING, step=MAX_TARGET, examples=(1 << 22,), gate=True,
                         help=N_("A plan sums Σᵢ cos(m·θᵢ) at every distance m < L′ for every method, so its time "
                                 "grows with L′: seconds at 1,048,576 tokens, minutes near 16,777,216. Raise this to "
                                 "plan a longer target."))

    @classmethod
    def extremes(cls) -> Settings:
        """The heaviest plan a reader gets without raising the limit (target = the default limit): raising it is a
        choice to wait minutes, which the limit's own help says, not a setting to benchmark or stress-test."""
        return dataclasses.replace(super().extremes(), target=MAX_TARGET, limit=MAX_TARGET)


class Result:
    """The plan and the figures' data; the expensive parts are computed when a figure asks for them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = config_of(settings.source, settings.preset, settings.config)
        spec_of(self.config)  # a config that cannot be read says why first
        try:
            self.target = settings.target or min(DEFAULT_SCALE * extended_length(self.config), settings.limit)
        except ValueError as err:
            raise SettingsError(str(err)) from err
        if self.target > settings.limit:
            raise SettingsError(_("L′ = {target:,} is beyond the longest target allowed, {cap:,} tokens: raise "
                                  "“Longest target allowed” (up to {ceiling:,}) to plan it; a plan's time grows with "
                                  "L′.").format(target=self.target, cap=settings.limit, ceiling=TARGET_CEILING))
        try:
            self.plan: Plan = plan(self.config, self.target, max_target=settings.limit)
        except ValueError as err:
            raise SettingsError(str(err)) from err

    @property
    def model(self) -> str:
        return self.settings.preset if self.settings.source == "preset" else _("pasted config")

    @property
    def model_title(self) -> str:
        """The model, and for a hybrid the layers the plan's numbers are about ("full attention: 5 of 34 layers")."""
        layers = self.plan.layer_map
        if not layers.hybrid:
            return self.model
        return f"{self.model} · {kind_text(layers, self.plan.planned)}"

    @functools.cached_property
    def train_theta(self) -> torch.Tensor:
        spec = self.plan.train_spec
        from pe_core import default_inv_freq

        return default_inv_freq(spec.base, spec.rotary_dim)

    @functools.cached_property
    def envelopes(self) -> tuple:
        constant = float(unrotated_pairs(self.plan.train_spec))
        found = []
        for method in self.plan.methods:
            starts, low, _high = similarity_envelope(method.inv_freq, self.target, SIMILARITY_BINS, constant)
            found.append((method.method, method.title, starts, low + 0.0))
        return tuple(found)

    @functools.cached_property
    def bound_curve(self) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
        """(lengths, b*) at L, L·2, L·4, … and L′ (the ends on the plan's grid, the middle on a coarser one)."""
        spec, length = self.plan.train_spec, self.plan.train_length
        lengths = [length]
        while lengths[-1] * 2 < self.target:
            lengths.append(lengths[-1] * 2)
        lengths.append(self.target)
        constant = unrotated_pairs(spec)
        bounds = [self.plan.train_bound]
        bounds += [base_lower_bound(n, spec.rotary_dim, constant, COARSE_STEPS) for n in lengths[1:-1]]
        bounds.append(self.plan.base_bound)
        return tuple(lengths), tuple(bounds)

    def method_bases(self) -> tuple:
        """(key, title, lengths, bases) for the methods that run plain RoPE with another base."""
        plan_, length, target = self.plan, self.plan.train_length, self.target
        ends = [length // 2, 2 * target]
        found = [("direct", plan_.method("direct").title, ends, [plan_.train_spec.base] * 2)]
        for key in ("ntk", "abf"):
            method = plan_.method(key)
            found.append((key, method.title, ends, [method.parameters["base"]] * 2))
        if "dynamic" not in plan_.unavailable:
            dynamic = plan_.method("dynamic").spec
            steps = torch.logspace(math.log10(length), math.log10(target), 40, dtype=torch.float64)
            lengths = [int(round(float(v))) for v in steps]
            found.append(("dynamic", plan_.method("dynamic").title, lengths,
                          [dynamic_base(dynamic, n) for n in lengths]))
        return tuple(found)

    def table(self) -> list[dict]:
        """One row per method: its parameters and what it leaves unseen, as the page's table shows them."""
        rows = []
        for method in self.plan.methods:
            parameters = "; ".join(f"{_(PARAMETER_TITLES.get(k, k))} = {_number(v)}"
                                   for k, v in method.parameters.items())
            negative = (_("never") if method.first_negative is None else f"{method.first_negative:,}")
            rows.append({_("method"): _(method.title), _("parameters"): parameters,
                         _("pairs unseen"): f"{100 * method.unseen_pairs:.1f}%",
                         _("angles unseen"): f"{100 * method.unseen_angles:.2f}%",
                         _("Σcos(m·θ′) < 0 first at m"): negative})
        return rows

    def bound_sentence(self) -> str:
        plan_ = self.plan
        bound, base = plan_.base_bound, plan_.train_spec.base
        if bound is None:
            return _("Half or more of the pairs are not rotated: B(m) ≥ 0 for every base, so no bound applies.")
        if math.isinf(bound):
            return _("No base up to 10¹⁵ keeps B(m) ≥ 0 up to L′ = {target:,} for this head.").format(
                target=self.target)
        holds = plan_.method("direct").first_negative is None
        verdict = (_("The model's base {base:,.0f} already satisfies it at L′.") if holds
                   else _("The model's base {base:,.0f} does not: B(m) first turns negative at m = {m:,}."))
        needed = _("b*(L′) ≈ **{bound:.3g}** for L′ = {target:,} (and b*(L) ≈ {train:.3g} for L = {length:,}).").format(
            bound=bound, target=self.target, train=plan_.train_bound, length=plan_.train_length)
        return sentences([
            needed,
            verdict.format(base=base, m=plan_.method("direct").first_negative or 0),
            _("The ABF row suggests {abf:,.0f}: the first two-digit base at or above b* that keeps B(m) ≥ 0.").format(
                abf=plan_.method("abf").parameters["base"])])

    def config_json(self, method: str, legacy: bool = False) -> str | None:
        """The whole patched config.json of one method, or None where older readers' keys cannot say it."""
        chosen = self.plan.method(method)
        config = chosen.legacy_config if legacy else chosen.config
        return None if config is None else json.dumps(config, indent=2, ensure_ascii=False)

    def layer_lines(self) -> list[str]:
        """One line per kind of layer: how many, and what the plan does to it and why."""
        plan_ = self.plan
        total = sum(len(note.kind.layers) for note in plan_.layers)  # 0: the config gives no layer count
        lines = []
        for note in plan_.layers:
            which = f"{layer_type_title(note.kind.layer_type)} (`{layer_type_name(note.kind)}`)"
            if total:
                which = _("{layer_type}, {count} of {total} layers").format(
                    layer_type=which, count=len(note.kind.layers), total=total)
            lines.append(_("**{which}**: {why}").format(which=which, why=note.text(plan_.planned.layer_type)))
        return lines

    def composition(self) -> str | None:
        return composition_text(self.plan)

    def layer_rows(self) -> tuple[list, int, int]:
        """The layer map figure's rows (thick outline: the layers the plan changes), layer count and L′."""
        plan_ = self.plan
        rows = kind_rows(plan_.layer_map, plan_.planned, self.target)
        rows = [row._replace(chosen=note.changed) for row, note in zip(rows, plan_.layers, strict=True)]
        return rows, plan_.layer_map.num_layers, self.target

    def plan_json(self) -> str:
        return json.dumps(plan_json(self.plan), indent=1, ensure_ascii=False)


def _number(value) -> str:
    if isinstance(value, int) or (isinstance(value, float) and value == int(value) and abs(value) < 1e15):
        return f"{int(value):,}"
    return f"{value:.6g}"


def compute(settings: Settings) -> Result:
    return Result(settings)


def _ratio(result: Result, style):
    plan_ = result.plan
    methods = [(m.method, m.title, m.inv_freq / result.train_theta) for m in plan_.methods]
    return draw.plan_ratio_figure(methods, scale=plan_.scale)


def _unseen(result: Result, style):
    methods = [(m.method, m.title, m.unseen_pairs, m.unseen_angles) for m in result.plan.methods]
    return draw.plan_unseen_figure(methods, train_length=result.plan.train_length, target=result.target)


def _similarity(result: Result, style):
    return draw.plan_similarity_figure(result.envelopes, pairs=result.plan.train_spec.head_dim // 2,
                                       train_length=result.plan.train_length, target=result.target)


def _bases(result: Result, style):
    lengths, bounds = result.bound_curve
    return draw.plan_bases_figure(lengths=lengths, bounds=bounds, base=result.plan.train_spec.base,
                                  methods=result.method_bases(), train_length=result.plan.train_length,
                                  target=result.target)


def _bound_caption(result: Result) -> str:
    bound = result.plan.base_bound
    if bound is None:
        return _("Half or more of the pairs are not rotated, so the inequality holds for every base.")
    return _("b*(L′) ≈ {bound:.3g}: the first base of a 1.2 % grid at which Σᵢ cos(m·b^(−2i/d)) ≥ 0 for every "
             "m < L′ (lengths between L and L′ on a 4.7 % grid). Valid bases come in islands, so a lower one can "
             "exist between grid points.").format(bound=bound)


def _layers(result: Result, style):
    from figures.layers import layer_map_figure

    rows, num_layers, context = result.layer_rows()
    return layer_map_figure(rows, num_layers=num_layers, context=context)


def _layers_caption(result: Result) -> str:
    text = _("Each bar is one layer, as tall as the tokens it can attend to at L′ = {target:,}; hatched bars apply no "
             "position encoding. A thick outline marks the layers the plan's configs change.").format(
        target=result.target)
    if not result.plan.planned.layers:
        text = sentences((text, _("The config gives no layer count, so the kinds are shown without their positions.")))
    return text


FIGURES = figure_registry(
    FigureSpec("layers", LAYER_MAP_TITLE, _layers, groups=(MODEL, TARGET), caption=_layers_caption,
               showcase=SHOWCASE_HYBRID),
    FigureSpec("ratio", draw.PLAN_RATIO_TITLE, _ratio, groups=(MODEL, TARGET)),
    FigureSpec("unseen", draw.PLAN_UNSEEN_TITLE, _unseen, groups=(MODEL, TARGET),
               caption=N_("Pairs: any position whose angle m·θ′ᵢ (mod 2π) lies beyond the arc pretraining swept. "
                          "Angles: the share of all (position, pair) angles at L′ that lie there. ABF is meant to be "
                          "trained at L′, which makes its angles seen.")),
    FigureSpec("similarity", draw.PLAN_SIMILARITY_TITLE, _similarity, groups=(MODEL, TARGET),
               caption=N_("Computed at every distance m < L′; each point is the lowest value over a bin of "
                          "distances, so no dip below 0 is hidden.")),
    FigureSpec("bases", draw.PLAN_BASES_TITLE, _bases, groups=(MODEL, TARGET), caption=_bound_caption),
)

LESSON = Lesson(
    name="plan",
    title=N_("Plan a context extension"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    key_figure="ratio",  # Home's card: what each method does to θ (the layer map of a one-kind model is one bar)
    summary=N_("For a model and a target length: PI, NTK-aware, dynamic NTK, YaRN, Llama-3 and ABF parameters, the "
               "base the length needs (Men et al. 2024), what stays unseen, which layers change and why, and the "
               "whole patched config.json to download."),
    max_results=8,
)

__all__ = ["LESSON", "PLAN_METHODS", "Settings", "compute"]
