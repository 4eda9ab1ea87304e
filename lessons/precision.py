"""Low-precision positions: which integer positions a float stores exactly, which collide, and what
rounding at each step of RoPE does to its angles and attention scores."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import torch

from figures import precision as draw
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, Part, SettingsError, cached, figure_registry, override, setting
from lessons.format import length_text, subscript
from lessons.rope_setup import RopeSettings, RopeSetup, layer_map_part, layer_map_spec, rope_setup
from pe_core import precision as pp
from pe_core.methods import MethodSetup
from pe_core.rope import RopeSpec, rope_frequencies

ZOOM, ERRORS, HEATMAP = "zoom", "errors", "heatmap"
ZOOM_WIDTHS = (16, 32, 64, 128, 256)


def _order_label(order: str) -> str:
    return draw.order_title(order, short=True)


@dataclasses.dataclass(frozen=True)
class Settings(RopeSettings):
    scale: float = override(RopeSettings, "scale", 2.0)  # L′ = 8,192 at the default L = 4,096
    # One RoPE is analysed: a model's own (preset or paste), or the one method chosen for the sliders.
    methods: tuple[str, ...] = override(RopeSettings, "methods", ("direct",), label=N_("Method analysed"),
                                        max_selections=1, when=(("source", ("sliders",)),))
    zoom_dtype: str = setting("bfloat16", N_("Stored as"), key="zdt", widget="radio", group=ZOOM,
                              options=pp.PRECISION_DTYPES)
    zoom_width: int = setting(32, N_("Window width w"), key="zw", group=ZOOM, options=ZOOM_WIDTHS)
    zoom_start: int = setting(248, N_("First position n"), key="zn", widget="number", group=ZOOM, min_value=0,
                              max_value=(1 << 24) + 1024, step=1,  # far enough for float32's first collisions
                              help=N_("The window shows positions n … n + w − 1."))
    low_dtype: str = setting("bfloat16", N_("Low-precision type for RoPE"), key="lp", widget="radio", group=ERRORS,
                             options=pp.LOW_PRECISION_DTYPES)
    heatmap_order: str = setting("all_low", N_("Order of operations in the heatmap"), key="ho", widget="selectbox",
                                 group=HEATMAP, options=pp.ORDERS, format=_order_label)


# --- facts about the dtypes (no setting changes them) -------------------------------------------------


class DtypeFacts(NamedTuple):
    bits: dict[str, int]  # p: significand bits, the implicit one included
    first_inexact: dict[str, int]
    float16_largest: float  # the largest finite float16
    float16_overflow: int  # the first integer float16 stores as inf
    curve: pp.ExactFractionCurve
    spacing: dict[str, pp.BinadeSpacing]


@functools.cache
def dtype_facts() -> DtypeFacts:
    names = pp.PRECISION_DTYPES
    return DtypeFacts({n: pp.significand_bits(n) for n in names}, {n: pp.first_inexact_position(n) for n in names},
                      pp.largest_finite("float16"), pp.first_overflow_position("float16"), pp.exact_fraction_curve(),
                      {n: pp.binade_spacing(n) for n in names})


class Landmarks(NamedTuple):
    """The numbers the page's prose quotes about bfloat16, each measured."""

    first_inexact: int  # 257
    next_exact: int  # 258: every second integer stays exact ...
    first_gap: int  # 2
    step_two_until: int  # ... up to 512, then every fourth
    next_gap: int  # 4
    tie_sizes: tuple[int, ...]  # collision-group sizes where the gap is 2: (1, 3)
    tie_sizes_next: tuple[int, ...]  # ... and where it is 4: (3, 5)
    length: int  # 8,192: a common training length
    exact: int  # 896 positions of it stored exactly
    largest: int  # the most positions sharing one value there
    long_length: int  # 2^20
    largest_long: int
    float32_half_gap_near_million: float  # half float32's gap in [2^19, 2^20): the safe order's angle error there

    @property
    def fraction(self) -> float:
        return self.exact / self.length


def _interior_group_sizes(start: int, width: int, dtype: str) -> tuple[int, ...]:
    """The sizes of the collision groups wholly inside a window (the two cut by its edges left out)."""
    window = pp.collision_window(start, width, dtype)
    return tuple(sorted(set(torch.bincount(window.group)[1:-1].tolist())))


@functools.cache
def landmarks() -> Landmarks:
    bits = pp.significand_bits("bfloat16")
    first = pp.first_inexact_position("bfloat16")
    gaps = pp.binade_spacing("bfloat16", bits + 2).spacing
    at_length, at_long = pp.collision_summary(8192, "bfloat16"), pp.collision_summary(1 << 20, "bfloat16")
    float32_gaps = pp.binade_spacing("float32", 20).spacing
    return Landmarks(first, first + 1, int(gaps[bits]), 2 ** (bits + 1), int(gaps[bits + 1]),
                     _interior_group_sizes(2**bits, 2**bits, "bfloat16"),
                     _interior_group_sizes(2 ** (bits + 1), 2 ** (bits + 1), "bfloat16"),
                     at_length.length, at_length.exact, at_length.largest_group, at_long.length, at_long.largest_group,
                     float(float32_gaps[19]) / 2)


# Views a button restores: the edges where float16 overflows and float32 first collides.
FLOAT16_EDGE_VIEW = {"zoom_dtype": "float16", "zoom_width": 64,
                     "zoom_start": pp.first_overflow_position("float16") - 30}
FLOAT32_EDGE_VIEW = {"zoom_dtype": "float32", "zoom_width": 64,
                     "zoom_start": pp.first_inexact_position("float32") - 17}


# --- results ------------------------------------------------------------------------------------------


@cached(max_entries=16)
def collision_summaries(length: int) -> tuple[pp.CollisionSummary, ...]:
    return tuple(pp.collision_summary(length, name) for name in pp.PRECISION_DTYPES)


@cached(max_entries=8)
def rope_errors(spec: RopeSpec, length: int, dtype: str) -> pp.RopePrecisionError:
    frequencies = rope_frequencies(spec, length)
    return pp.rope_precision_error(frequencies.inv_freq, length, dtype, frequencies.attention_factor)


class PowerOfTwoCheck(NamedTuple):
    exponent: int  # K, with L′ = 2^K
    bits: int  # p of bfloat16
    by_formula: int  # 2^p + (K − p)·2^(p−1)
    counted: int  # the round trip's count
    fraction: float

    @property
    def agrees(self) -> bool:
        return self.by_formula == self.counted


class WindowGroups(NamedTuple):
    shared_values: int  # stored values several positions of the window share
    largest: int  # the most positions sharing one value
    overflowed: int


class Result:
    """Everything the page draws and states; each part is computed when first asked for."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.setup: RopeSetup = rope_setup(settings)  # cheap; a bad paste fails here, where the page shows it
        pp.collision_window(settings.zoom_start, settings.zoom_width, settings.zoom_dtype)  # validates, cheaply

    @property
    def length(self) -> int:
        """L′: the positions 0 … L′ − 1 analysed."""
        return self.setup.target_length

    @property
    def facts(self) -> DtypeFacts:
        return dtype_facts()

    @functools.cached_property
    def summaries(self) -> tuple[pp.CollisionSummary, ...]:
        return collision_summaries(self.length)

    def summary(self, dtype: str) -> pp.CollisionSummary:
        return self.summaries[pp.PRECISION_DTYPES.index(dtype)]

    @property
    def power_of_two_check(self) -> PowerOfTwoCheck | None:
        """bfloat16's closed-form count against the round trip, when L′ = 2^K ≥ 2^p."""
        bits, length = self.facts.bits["bfloat16"], self.length
        if length < 1 << bits or length & (length - 1):
            return None
        exponent = length.bit_length() - 1
        counted = self.summary("bfloat16").exact
        return PowerOfTwoCheck(exponent, bits, 2**bits + (exponent - bits) * 2 ** (bits - 1), counted,
                               counted / length)

    def head_sentence(self) -> str:
        """What the collisions mean for the head set in the sidebar (its d and b), so the part on exact positions
        answers the sidebar's first controls too: every pair of the head shares a collided position's angle."""
        pairs, base = self.setup.head_dim // 2, self.setup.base
        return _("A head of d = {d} rotates {pairs} pairs by m·θᵢ, and positions stored as one value get the same "
                 "angle in every pair: from its fastest pair (θ₀ = 1, a turn every {fastest:.1f} positions) to its "
                 "slowest (θ{last} = {slowest:.3g}, a turn every {period} positions), a head whose positions are "
                 "in bfloat16 tells only {distinct} of the {length} positions apart.").format(
            d=self.setup.head_dim, pairs=pairs, fastest=2 * math.pi, last=subscript(pairs - 1),
            slowest=base ** (-(2 * pairs - 2) / (2 * pairs)),
            period=length_text(round(2 * math.pi * base ** ((2 * pairs - 2) / (2 * pairs)))),
            distinct=length_text(self.summary("bfloat16").distinct), length=length_text(self.length))

    @functools.cached_property
    def window(self) -> pp.CollisionWindow:
        s = self.settings
        return pp.collision_window(s.zoom_start, s.zoom_width, s.zoom_dtype)

    @functools.cached_property
    def window_groups(self) -> WindowGroups:
        stored = self.window.stored
        finite = torch.isfinite(stored)
        sizes = torch.unique(stored[finite], return_counts=True)[1]
        return WindowGroups(int((sizes > 1).sum()), int(sizes.max()) if len(sizes) else 0, int((~finite).sum()))

    @property
    def analysed(self) -> MethodSetup:
        """The RoPE whose errors are measured: a model's own, or the method chosen."""
        if not self.setup.setups:
            raise SettingsError(_("Pick a method in the sidebar to see RoPE's angle errors."))
        return self.setup.setups[0]

    @functools.cached_property
    def errors(self) -> pp.RopePrecisionError:
        return rope_errors(self.analysed.spec, self.length, self.settings.low_dtype)

    @property
    def sampled(self) -> bool:
        return len(self.errors.positions) < self.length

    @property
    def positions_per_row(self) -> int:
        return len(self.errors.positions) // len(self.errors.bucket_starts)

    @property
    def heatmap_has_blank_rows(self) -> bool:
        shown = self.errors.orders.index(self.settings.heatmap_order)
        return not bool(self.errors.angle_error_map[shown].isfinite().all())

    @property
    def low_bits(self) -> int:
        return self.facts.bits[self.settings.low_dtype]

    @property
    def cos_sin_bound(self) -> float:
        """2^−p of the low-precision dtype: how far rounding cos or sin can move it."""
        return 2.0 ** -self.low_bits

    @property
    def order_titles(self) -> dict[str, str]:
        return {order: draw.order_title(order, self.settings.low_dtype) for order in self.errors.orders}


def compute(settings: Settings) -> Result:
    return Result(settings)


# --- figures ------------------------------------------------------------------------------------------


def _fraction(result: Result, style) -> object:
    facts = result.facts
    return draw.exact_fraction_figure(facts.curve.lengths, facts.curve.fractions, marked_length=result.length,
                                      marked_fractions={s.dtype: s.exact_fraction for s in result.summaries},
                                      first_inexact=facts.first_inexact, float16_overflow=facts.float16_overflow)


def _spacing(result: Result, style) -> object:
    facts = result.facts
    return draw.binade_spacing_figure(facts.spacing["bfloat16"].exponents,
                                      {name: s.spacing for name, s in facts.spacing.items()},
                                      float16_overflow=facts.float16_overflow)


def _window(result: Result, style) -> object:
    return draw.collision_window_figure(result.window.positions, result.window.stored,
                                        pp.dtype_name(result.settings.zoom_dtype))


def _window_caption(result: Result) -> str:
    groups = result.window_groups
    text = _("{shared} stored values in this window are shared by several positions, the most by {largest} "
             "(a group cut by the window's edge may be larger).").format(shared=groups.shared_values,
                                                                        largest=groups.largest)
    if groups.overflowed:
        text = sentences([text, _("{count} positions overflow to inf.").format(count=groups.overflowed)])
    return text


def _angle(result: Result, style) -> object:
    errors = result.errors
    return draw.angle_error_figure(errors.positions, errors.max_angle_error, result.order_titles)


def _angle_caption(result: Result) -> str:
    text = _("Each line is the worst pair at each position (drawn as the maximum over small ranges of positions).")
    if result.sampled:
        sampled = _("Beyond {count} positions the errors are evaluated at one position from each equal stretch "
                    "(staggered, so the sample cannot line up with the rounding gaps).").format(
            count=length_text(len(result.errors.positions) - 1))
        text = sentences([text, sampled])
    return text


def _heatmap(result: Result, style) -> object:
    errors, order = result.errors, result.settings.heatmap_order
    return draw.angle_error_heatmap(errors.bucket_starts, errors.angle_error_map[errors.orders.index(order)],
                                    draw.order_title(order, result.settings.low_dtype, short=True))


def _heatmap_caption(result: Result) -> str:
    text = _("Each row is the maximum over about {count} consecutive evaluated positions. Fast pairs (left) feel "
             "position rounding most: the error is |m̃ − m|·θᵢ.").format(count=length_text(result.positions_per_row))
    if result.heatmap_has_blank_rows:
        text = sentences([text, _("Blank rows: the positions overflowed, so cos/sin are NaN.")])
    return text


def _logit(result: Result, style) -> object:
    errors = result.errors
    return draw.logit_error_figure(errors.positions, errors.logit_error, result.order_titles, errors.query_position)


FIGURES = figure_registry(
    FigureSpec("exact-fraction", draw.FRACTION_TITLE, _fraction, groups=("rope",),
               caption=N_("Counted from each binade's measured gap (the tests check it against the round trip). "
                          "Shaded: float16 positions that overflow to inf.")),
    FigureSpec("binade-spacing", draw.SPACING_TITLE, _spacing, groups=(),
               caption=N_("Each gap is read off the dtype itself: the distance from 2ᵏ to the next bit pattern up.")),
    FigureSpec("collision-window", draw.WINDOW_TITLE, _window, groups=(ZOOM,), caption=_window_caption),
    FigureSpec("angle-error", draw.ANGLE_TITLE, _angle, groups=("rope", ERRORS), caption=_angle_caption),
    FigureSpec("angle-error-map", draw.HEATMAP_TITLE, _heatmap, groups=("rope", ERRORS, HEATMAP),
               caption=_heatmap_caption),
    FigureSpec("logit-error", draw.LOGIT_TITLE, _logit, groups=("rope", ERRORS),
               caption=N_("q and k are random (unit-variance entries, one fixed draw) and kept in float64, so only "
                          "the positional rotation differs; the logit itself has a spread of about 1. Rounded θ keeps "
                          "nearby keys right (the error grows with the distance m − n); rounded positions do not.")),
    layer_map_spec(),
)

LESSON = Lesson(
    name="precision",
    title=N_("Low-precision positions"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Why bfloat16 positions collide after a few hundred, and what that does to RoPE's angles."),
    parts=(
        Part("exact", N_("Exact positions"), N_("How many positions are stored exactly?"), ("exact-fraction", "binade-spacing")),
        Part("collisions", N_("Collisions"), N_("Zoom in: which positions collide"), ("collision-window",)),
        Part("rope", N_("Effect on RoPE"), N_("What it does to RoPE"), ("angle-error", "angle-error-map", "logit-error")),
        Part("fix", N_("The fix"), N_("Where this bites, and the fix"), ()),
        layer_map_part(),
    ),
)
