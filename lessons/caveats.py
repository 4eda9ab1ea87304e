"""Caveats of context extension, measured: dynamic NTK's KV cache, how large NTK-aware's s must be, PI's
position map (and the slip g(m) = s·m), and ReRoPE's inference cost."""

from __future__ import annotations

import dataclasses
import functools

import torch

from figures import caveats as draw
from figures.theme import series_colour
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from lessons.format import base_text, length_text, scale_text
from pe_core.caveats import (
    KvCacheError,
    NtkReach,
    ReropeCost,
    kv_cache_error,
    leaky_rerope_trained_reach,
    ntk_reach,
    ntk_safe_ratio,
    pi_positions,
    rerope_cost,
    rerope_limits,
)

KV, NTK, EXTENSION, COST = "kv", "ntk", "extension", "cost"  # EXTENSION: L and L′/L, NTK's and PI's
BASES = (10_000.0, 500_000.0)
COST_POINTS = 200
PI_POINTS = 400
COST_QUOTES = (4096, 131_072)  # lengths the page quotes ReRoPE's ratios at
KV_LENGTHS, KV_KEYS, KV_DRAWS = 33, 128, 16  # lengths on the curve; keys and random draws per length


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    head_dim: int = setting(128, N_("Head dimension d"), key="d", group=KV, options=(32, 64, 128))
    base: float = setting(10_000.0, N_("Base b"), key="b", group=KV, options=BASES, format=base_text)
    train_length: int = setting(4096, N_("Training length L"), key="L", group=KV, options=(512, 1024, 2048, 4096),
                                format=length_text)
    max_scale: float = setting(8.0, N_("Generate up to ℓ = s·L, s ="), key="s", group=KV, options=(2.0, 4.0, 8.0, 16.0),
                               format=scale_text)
    prompt: float = setting(1.0, N_("Prompt length, in units of L"), key="p", group=KV, options=(0.5, 1.0, 2.0),
                            format=scale_text,
                            help=N_("The prompt is encoded in one pass, so all its keys share the base of the prompt's "
                                    "length; each generated token then brings its own."))
    ntk_head_dim: int = setting(128, N_("Head dimension d"), key="nd", group=NTK, options=(64, 128, 256))
    ntk_base: float = setting(10_000.0, N_("Base b"), key="nb", group=NTK, options=BASES, format=base_text)
    ntk_train_length: int = setting(4096, N_("Training length L"), key="nL", group=EXTENSION, options=(2048, 4096, 8192),
                                    format=length_text)
    ratio: float = setting(8.0, N_("Real extension L′/L"), key="rho", group=EXTENSION, options=(2.0, 4.0, 8.0, 16.0, 32.0),
                           format=scale_text)
    model_width: int = setting(4096, N_("Model width D (heads × head dimension)"), key="D", group=COST,
                               options=(768, 2048, 4096, 8192))
    leaky_train: int = setting(2048, N_("Leaky ReRoPE training length"), key="lt", group=COST,
                               options=(1024, 2048, 4096), format=length_text)
    leaky_window: int = setting(256, N_("Leaky ReRoPE window w"), key="lw", group=COST, options=(128, 256, 512))
    leaky_k: float = setting(16.0, N_("Leaky ReRoPE slope k beyond the window"), key="lk", group=COST,
                             options=(4.0, 8.0, 16.0, 32.0), format=lambda v: f"{v:g}")


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # ---- dynamic NTK and the KV cache ----------------------------------------------------------------

    @property
    def prompt_length(self) -> int:
        return int(round(self.settings.prompt * self.settings.train_length))

    @property
    def max_length(self) -> int:
        return int(round(self.settings.max_scale * self.settings.train_length))

    @functools.cached_property
    def kv(self) -> KvCacheError:
        s = self.settings
        return kv_cache_error(s.head_dim, s.base, s.train_length, self.prompt_length, self.max_length,
                              lengths=KV_LENGTHS, keys=KV_KEYS, draws=KV_DRAWS)

    # ---- NTK -------------------------------------------------------------------------------------------

    @functools.cached_property
    def ntk_at_ratio(self) -> NtkReach:
        s = self.settings
        return ntk_reach(s.ntk_head_dim, s.ntk_base, s.ntk_train_length, s.ratio, s.ratio)

    @functools.cached_property
    def ntk_at_needed(self) -> NtkReach:
        s = self.settings
        needed = self.ntk_at_ratio.required_scale
        return ntk_reach(s.ntk_head_dim, s.ntk_base, s.ntk_train_length, s.ratio, needed if needed < 1e12 else s.ratio)

    @property
    def unseen_pairs(self) -> int:
        return int(self.ntk_at_ratio.unseen.sum())

    @property
    def worst_ratio(self) -> float:
        """The largest L′θ′ᵢ/(Lθᵢ) among pairs that never turn in training, at s = L′/L (≤ 1 would be safe)."""
        reach = self.ntk_at_ratio
        partial = reach.train_max_angle < 2 * torch.pi
        if not bool(partial.any()):
            return 0.0
        return float((reach.target_max_angle / reach.train_max_angle)[partial].max())

    @property
    def pi_target(self) -> int:
        return int(self.pi_map[0][-1])

    @property
    def pi_slipped(self) -> int:
        """g(L′) under the slip g(m) = s·m."""
        return int(self.pi_map[2][-1])

    @property
    def slip_factor(self) -> float:
        """How many times the training length the slip sends L′ to (s²)."""
        return self.pi_slipped / self.settings.ntk_train_length

    @property
    def full_turn(self) -> torch.Tensor:
        return self.ntk_at_ratio.train_max_angle >= 2 * torch.pi

    @functools.cached_property
    def scale_axis(self) -> torch.Tensor:
        top = max(64.0, 2 * self.ntk_at_ratio.required_scale if self.ntk_at_ratio.required_scale < 1e6 else 64.0)
        return torch.logspace(0, torch.log10(torch.tensor(top)).item(), 200, dtype=torch.float64)

    @functools.cached_property
    def ntk_reach_curve(self) -> torch.Tensor:
        s = self.settings
        return ntk_safe_ratio(s.ntk_head_dim, s.ntk_base, s.ntk_train_length, self.scale_axis)

    @functools.cached_property
    def pi_map(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        s = self.settings
        target = int(round(s.ratio * s.ntk_train_length))
        positions = torch.linspace(1, target, PI_POINTS, dtype=torch.float64).round()
        interpolated, slipped = pi_positions(positions, s.ratio)
        return positions, interpolated, slipped

    # ---- ReRoPE ---------------------------------------------------------------------------------------

    @functools.cached_property
    def cost_lengths(self) -> torch.Tensor:
        return torch.logspace(9, 20, COST_POINTS, base=2, dtype=torch.float64).round()

    @functools.cached_property
    def cost(self) -> ReropeCost:
        return rerope_cost(self.settings.model_width, self.cost_lengths)

    def cost_at(self, length: int) -> ReropeCost:
        return rerope_cost(self.settings.model_width, [float(length)])

    @property
    def leaky_reach(self) -> float:
        s = self.settings
        return leaky_rerope_trained_reach(s.leaky_train, s.leaky_window, s.leaky_k)


def compute(settings: Settings) -> Result:
    return Result(settings)


def _kv(result: Result, style) -> object:
    kv = result.kv
    return draw.kv_error_figure(kv.lengths, kv.expected, kv.measured, result.settings.train_length,
                                result.prompt_length)


def _kv_caption(result: Result) -> str:
    return _("d = {d}, b = {base}, factor 1 (transformers' formula with s = ℓ/L). Each point: {keys} keys spread "
             "over the sequence and {draws} random (q, k) draws.").format(
        d=result.settings.head_dim, base=base_text(result.settings.base), keys=KV_KEYS, draws=KV_DRAWS)


def _kv_keys(result: Result, style) -> object:
    kv = result.kv
    return draw.kv_keys_figure(kv.key_positions, kv.key_expected, kv.key_base, kv.current_base, int(kv.lengths[-1]))


def _ntk_angles(result: Result, style) -> object:
    s = result.settings
    ratios = [
        (_("NTK-aware, s = L′/L = {s:g}").format(s=s.ratio), "ntk",
         result.ntk_at_ratio.target_max_angle / result.ntk_at_ratio.train_max_angle, None),
        (_("NTK-aware, s = {s:.4g} (needed)").format(s=result.ntk_at_ratio.required_scale), "ntk",
         result.ntk_at_needed.target_max_angle / result.ntk_at_needed.train_max_angle, "dash"),
        (_("PI, s = {s:g}").format(s=s.ratio), "pi", torch.ones_like(result.ntk_at_ratio.train_max_angle), None),
    ]
    return draw.ntk_angles_figure(ratios, result.full_turn, result.ntk_at_ratio.unseen)


def _ntk_caption(result: Result) -> str:
    s = result.settings
    return _("d = {d}, b = {base}, L = {L}, L′ = {target}. Shaded: pairs that turn fully within L, which have seen "
             "every angle.").format(d=s.ntk_head_dim, base=base_text(s.ntk_base), L=length_text(s.ntk_train_length),
                                    target=length_text(s.ratio * s.ntk_train_length))


def _ntk_safe(result: Result, style) -> object:
    return draw.ntk_safe_figure(result.scale_axis, result.ntk_reach_curve, result.settings.ratio,
                                result.ntk_at_ratio.required_scale)


def _pi(result: Result, style) -> object:
    positions, interpolated, slipped = result.pi_map
    return draw.pi_map_figure(positions, interpolated, slipped, result.settings.ntk_train_length, result.settings.ratio)


COST_SERIES = (("rerope", "prefill", N_("ReRoPE, encoding the prompt"), 0, "solid"),
               ("rerope", "decode", N_("ReRoPE, each generated token"), 0, "dash"),
               ("leaky_rerope", "prefill", N_("Leaky ReRoPE, encoding the prompt"), 1, "dot"),
               ("leaky_train_rope_infer", "prefill", N_("trained with Leaky ReRoPE, run with RoPE"), 2, "solid"))


def _cost(result: Result, style) -> object:
    cost = result.cost
    series = [(_(name), (cost.prefill_ratio if phase == "prefill" else cost.decode_ratio)[method],
               series_colour(colour), dash) for method, phase, name, colour, dash in COST_SERIES]
    prefill_limit, decode_limit = rerope_limits()["rerope"]
    limits = [(prefill_limit, _("prefill limit 3/2")), (decode_limit, _("decode limit 7/4"))]
    return draw.cost_figure(cost.lengths, series, result.leaky_reach, limits)


def _cost_caption(result: Result) -> str:
    return _("Per layer, model width D = {width:,}, MLP 4D, eager attention over the full n × n matrix, as in the "
             "reference code. Leaky ReRoPE generates at ReRoPE's per-token cost.").format(
        width=result.settings.model_width)


FIGURES = figure_registry(
    FigureSpec("kv-error", draw.KV_TITLE, _kv, groups=(KV,), caption=_kv_caption),
    FigureSpec("kv-keys", draw.KV_KEYS_TITLE, _kv_keys, groups=(KV,),
               caption=N_("Key 0 is not rotated at all and the newest keys were written at (almost) the current base; "
                          "in between, the fast pairs' angles are off by radians.")),
    FigureSpec("ntk-angles", draw.NTK_ANGLES_TITLE, _ntk_angles, groups=(NTK, EXTENSION), caption=_ntk_caption),
    FigureSpec("ntk-reach", draw.NTK_SAFE_TITLE, _ntk_safe, groups=(NTK, EXTENSION),
               caption=N_("The longest L′/L at which no pair that never turned in training goes beyond its trained "
                          "angles.")),
    FigureSpec("pi-map", draw.PI_TITLE, _pi, groups=(EXTENSION,)),
    FigureSpec("rerope-cost", draw.COST_TITLE, _cost, groups=(COST,), caption=_cost_caption),
)

LESSON = Lesson(
    name="caveats",
    title=N_("Caveats of context extension"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Dynamic NTK's KV cache measured, how large NTK-aware's s really must be, PI's g(m) = m/s, and "
               "ReRoPE's inference cost computed."),
    parts=(
        Part("kv-cache", N_("KV cache"), N_("Dynamic NTK and the KV cache"), ("kv-error", "kv-keys")),
        Part("ntk-scale", N_("NTK's s"), N_("NTK-aware scaling needs s above the real extension"),
             ("ntk-angles", "ntk-reach")),
        Part("pi-map", N_("PI's map"), N_("Position Interpolation divides positions: g(m) = m/s"), ("pi-map",),
             shows=(EXTENSION,)),
        Part("rerope", N_("ReRoPE's cost"), N_("ReRoPE's inference cost"), ("rerope-cost",)),
    ),
)
