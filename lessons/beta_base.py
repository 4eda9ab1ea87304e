"""RoPE as a β-base number: positions as digits; reach s times further by adding a digit, dividing
the number, or changing the base (Su 2023, "RoPE is a β-base encoding")."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import torch

from figures import beta_base as draw
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, Part, SettingsError, figure_registry, setting
from lessons.format import base_text, number_text
from lessons.rope_setup import RopeSettings, RopeSetup, layer_map_part, layer_map_spec, rope_setup
from pe_core import MethodSetup, RopeSpec, default_inv_freq, ntk_aware_base, wavelengths
from pe_core.beta_base import (
    STRATEGIES,
    DigitViews,
    compose,
    conversion_stretch,
    converted_base,
    digit_views,
    floor_mod_digits,
    greedy_digits,
    log_range,
    log_stretch_bound,
    minimal_conversion_base,
    ntk_stretch,
    outside_seen_arc,
    pair_phases,
    pair_turns,
    rope_beta,
    seen_phase_limit,
)

DIGITS, DIALS, BOUND = "digits", "dials", "bound"
PLAIN_SCALES = (1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0, 1e4, 1e5, 1e6)
POSITION_MULTIPLES = (0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
MAX_SCALES = (16.0, 256.0, 4096.0, 65536.0, 1e6, 1e9, 1e12)
BOUND_SUBJECTS = ("rope", "plain")
BOUND_SUBJECT_TITLES = {"rope": N_("RoPE"), "plain": N_("plain number")}
MAX_PLACES_SLIDER = 32
# What the screen gets: numbers sampled across the range (digits exact at each), dials, bound points.
CURVE_SAMPLES = 2000
ZOOM_AT_MOST = 121
DIALS_SHOWN = 12
BOUND_SAMPLES = 200


def scale_label(value: float) -> str:
    """2.0 -> '2×', 1e6 -> '1e6×'."""
    return f"{value:g}×" if value < 1e4 else f"{value:.0e}×".replace("e+0", "e").replace("e+", "e")


def _position_label(multiple: float) -> str:
    return f"{multiple:g}·L − 1"


def _subject_title(subject: str) -> str:
    return _(BOUND_SUBJECT_TITLES[subject])


@dataclasses.dataclass(frozen=True)
class Settings(RopeSettings):
    beta: float = setting(10.0, N_("Base β (any real > 1)"), key="beta", widget="number", group=DIGITS,
                          min_value=1.001, max_value=1000.0, step=0.5)
    places: int = setting(3, N_("Places P seen in training"), key="P", group=DIGITS, min_value=1,
                          max_value=MAX_PLACES_SLIDER, step=1)
    plain_scale: float = setting(2.0, N_("Scale s: reach s times as far"), key="ps", group=DIGITS,
                                 options=PLAIN_SCALES, format=scale_label)
    number: int = setting(1749, N_("The number n"), key="n", widget="number", group=DIGITS, min_value=0,
                          max_value=10**12, step=1)
    whole_base: bool = setting(False, N_("Round the converted base λβ up to a whole number"), key="whole",
                               group=DIGITS, help=N_("Then every digit is an ordinary whole-number digit: 2,000 "
                                                     "numbers in three places need base 13."))
    conversion: bool = setting(True, N_("Add exact β-base conversion (b → b·s)"), key="conv", group=DIALS)
    scrub_in_figure: bool = setting(False, N_("Scrub s inside the dials"), key="scrub", group=DIALS,
                                    help=N_("The dials carry their own slider over s: drag it and every hand turns "
                                            "at once, in the browser."))
    position_multiple: float = setting(4.0, N_("Position n"), key="pos", group=DIALS, options=POSITION_MULTIPLES,
                                       format=_position_label,
                                       help=N_("n = m·L − 1: the last position of m training lengths (m = s is "
                                               "the last position L′ − 1)."))
    bound_subject: str = setting("rope", N_("Bound for"), key="bfor", widget="radio", group=BOUND,
                                 options=BOUND_SUBJECTS, format=_subject_title,
                                 help=N_("RoPE: P = d/2 pairs and β = b^(2/d) from the sidebar. Plain number: β, P "
                                         "and s of section 1."))
    max_scale: float = setting(1e6, N_("Largest s plotted"), key="smax", group=BOUND, options=MAX_SCALES,
                               format=scale_label)


# --- what is drawn ---------------------------------------------------------------------------------


def sample_numbers(log_count: float, samples: int = CURVE_SAMPLES) -> torch.Tensor:
    """Up to ``samples`` evenly spread whole numbers in [0, e^log_count) (all of them if fewer), below 2^53."""
    count = math.exp(min(log_count, math.log(2.0**53)))
    if count <= samples:
        return torch.arange(0, math.ceil(count), dtype=torch.float64)
    return torch.floor(torch.linspace(0, count - 1, samples, dtype=torch.float64))


def zoom_numbers(number: float, largest_base: float, at_most: int = ZOOM_AT_MOST) -> torch.Tensor:
    """Whole numbers around ``number`` spanning about three cycles of the widest units digit."""
    half = int(min(max(10, math.ceil(1.5 * largest_base)), (at_most - 1) // 2))
    start = max(0, int(number) - half)
    return torch.arange(start, start + 2 * half + 1, dtype=torch.float64)


def dial_pairs(num_pairs: int, at_most: int = DIALS_SHOWN) -> torch.Tensor:
    """Evenly spread pair indices (first and last included) for a row of dials."""
    if num_pairs <= at_most:
        return torch.arange(num_pairs)
    return torch.unique(torch.round(torch.linspace(0, num_pairs - 1, at_most, dtype=torch.float64)).long())


def bound_scales(max_scale: float, samples: int = BOUND_SAMPLES) -> torch.Tensor:
    """s from just above 1 to ``max_scale`` on a log grid (s = 1 needs no stretch at all)."""
    return torch.logspace(math.log10(1.01), math.log10(max_scale), samples, dtype=torch.float64)


def count_text(log_count: float) -> str:
    """e^log_count written out, or as a power of e when it has more digits than a reader wants."""
    return number_text(math.exp(log_count)) if log_count < 34 else f"$e^{{{log_count:.1f}}}$"


# --- results ---------------------------------------------------------------------------------------


class DigitRow(NamedTuple):
    strategy: str
    title: str  # N_()-marked
    cells: tuple[str, ...]  # the digits, top place first ('' where the strategy has fewer places)
    base: str
    value: str  # Σ digit·base^place: the number the row stands for
    unseen: tuple[bool, ...]  # per cell: a digit no training number had (a non-zero new place, or ≥ β)


class DialData(NamedTuple):
    methods: tuple[tuple[str, str], ...]  # (key, title) per row
    shown: torch.Tensor  # the pairs drawn as dials
    phases: torch.Tensor  # [methods, shown]
    seen: torch.Tensor  # [shown]
    unseen: torch.Tensor  # [methods, shown]
    wavelengths: torch.Tensor  # [shown]
    turns: torch.Tensor  # [methods, pairs]
    training_turns: torch.Tensor  # [pairs]


class BoundCurves(NamedTuple):
    subject: str
    beta: float
    places: int
    scale: float  # the s marked and quoted
    scales: torch.Tensor
    log_bound: torch.Tensor
    log_conversion: torch.Tensor
    log_ntk: torch.Tensor | None
    smallest: float  # λₘᵢₙ at ``scale``
    conversion: float  # s^(1/P)
    ntk: float | None  # s^(1/(P−1))


class RopeBases(NamedTuple):
    smallest: float  # s(b − 1) + 1
    conversion: float  # b·s
    ntk: float  # b·s^(d/(d−2))
    ntk_over_conversion: float  # the ratio of their β: s^(4/(d(d−2)))


class Result:
    """Everything the page draws and states; the parts a figure needs are computed when it asks."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Cheap and validating: a bad setting fails here, where the page shows it (not in a figure).
        self.setup: RopeSetup = rope_setup(settings)
        self.views: DigitViews = digit_views([settings.number], settings.beta, settings.places,
                                             settings.plain_scale, whole_base=settings.whole_base)

    # ---- plain numbers ---------------------------------------------------------------------------

    @property
    def log_trained(self) -> float:
        """ln β^P: the numbers P places write in training."""
        return log_range(self.settings.beta, self.settings.places)

    @property
    def log_extended(self) -> float:
        """ln s·β^P."""
        return self.log_trained + math.log(self.settings.plain_scale)

    @property
    def beyond_range(self) -> bool:
        """n ≥ s·β^P: even the converted base overflows its top place."""
        return math.log1p(self.settings.number) > self.log_extended + 1e-12

    @property
    def direct_places_cut(self) -> bool:
        return self.views.direct_places_needed > self.views.direct.shape[1]

    @functools.cached_property
    def curve_numbers(self) -> torch.Tensor:
        return sample_numbers(self.log_extended)

    @functools.cached_property
    def curves(self) -> DigitViews:
        s = self.settings
        return digit_views(self.curve_numbers, s.beta, s.places, s.plain_scale, whole_base=s.whole_base)

    @functools.cached_property
    def zoom(self) -> torch.Tensor:
        return zoom_numbers(self.settings.number, self.views.new_base)

    @functools.cached_property
    def zoom_views(self) -> DigitViews:
        s = self.settings
        return digit_views(self.zoom, s.beta, s.places, s.plain_scale, whole_base=s.whole_base)

    @functools.cached_property
    def table_places(self) -> tuple[int, ...]:
        """The table's place columns, top place first."""
        width = max(self.views.direct.shape[1], self.views.places)
        return tuple(range(width - 1, -1, -1))

    @functools.cached_property
    def digit_rows(self) -> tuple[DigitRow, ...]:
        views, rows = self.views, []
        for strategy in STRATEGIES:
            digits = views.table(strategy)[0].tolist()
            base = views.base_of(strategy)
            value = float(compose(views.table(strategy), base)[0])
            cells = tuple(number_text(digits[j]) if j < len(digits) else "" for j in self.table_places)
            unseen = tuple(j < len(digits) and (digits[j] >= views.beta or (j >= views.places and digits[j] > 0))
                           for j in self.table_places)
            rows.append(DigitRow(strategy, draw.STRATEGY_TITLES[strategy], cells, number_text(base), number_text(value),
                                 unseen))
        return tuple(rows)

    # ---- RoPE ------------------------------------------------------------------------------------

    @property
    def rope_beta(self) -> float:
        """β = b^(2/d) of the RoPE analysed."""
        return rope_beta(self.setup.base, self.setup.head_dim)

    @property
    def num_pairs(self) -> int:
        return self.setup.head_dim // 2

    @property
    def slowest_ratio(self) -> float:
        """How many times slower the top pair turns than pair 0: β^(d/2 − 1)."""
        return self.rope_beta ** (self.num_pairs - 1)

    @property
    def position_product(self) -> float:
        """m·L (the position shown is one less)."""
        return self.settings.position_multiple * self.setup.train_length

    @functools.cached_property
    def position(self) -> int:
        """n = m·L − 1 (at least 1)."""
        return max(1, round(self.position_product) - 1)

    @property
    def position_is_exact(self) -> bool:
        """n is exactly m·L − 1 (m·L is a whole number)."""
        return self.position == self.position_product - 1

    @property
    def position_is_last(self) -> bool:
        """n = L′ − 1: the last position of the extended context."""
        return self.position == self.setup.target_length - 1

    @property
    def position_text(self) -> str:
        """'n = 16,383 = 4·L − 1 = L′ − 1': the position and how it relates to L and L′, as far as it holds exactly."""
        n, m = f"{self.position:,}", f"{self.settings.position_multiple:g}"
        if self.position_is_exact and self.position_is_last:
            return _("n = {n} = {m}·L − 1 = L′ − 1").format(n=n, m=m)
        if self.position_is_exact:
            return _("n = {n} = {m}·L − 1").format(n=n, m=m)
        return _("n = {n}").format(n=n)

    @property
    def conversion_setup(self) -> MethodSetup:
        setup = self.setup
        spec = RopeSpec(head_dim=setup.head_dim, base=setup.base * setup.scale,
                        original_max_position_embeddings=setup.train_length)
        return MethodSetup(draw.CONVERSION, draw.CONVERSION_TITLE, spec, setup.target_length)

    @functools.cached_property
    def shown_setups(self) -> tuple[MethodSetup, ...]:
        extra = (self.conversion_setup,) if self.settings.conversion else ()
        return self.setup.setups + extra

    @functools.cached_property
    def dials(self) -> DialData:
        setups = self.shown_setups
        if not setups:
            raise SettingsError(_("Pick at least one method in the sidebar, or add the β-base conversion."))
        inv_freqs = torch.stack([s.frequencies().inv_freq for s in setups])
        train_inv_freq = default_inv_freq(self.setup.base, self.setup.head_dim)
        shown = dial_pairs(self.num_pairs)
        phases = pair_phases(inv_freqs[:, shown], self.position)
        length = self.setup.train_length
        return DialData(
            methods=tuple((s.method, s.title) for s in setups), shown=shown, phases=phases,
            seen=seen_phase_limit(train_inv_freq[shown], length),
            unseen=outside_seen_arc(phases, train_inv_freq[shown], length),
            wavelengths=wavelengths(train_inv_freq[shown]),
            turns=pair_turns(inv_freqs, self.position), training_turns=pair_turns(train_inv_freq, length - 1),
        )

    @property
    def rope_conversion_stretch(self) -> float:
        """λ = s^(2/d): how far each RoPE digit runs past its trained values under base conversion."""
        return self.setup.scale ** (2 / self.setup.head_dim)

    @property
    def second_pair_stretch(self) -> float:
        """NTK-aware's factor on pair 1's frequency, λ = s^(2/(d−2)) (pair 0 keeps λ⁰ = 1)."""
        return self.setup.scale ** (2 / (self.setup.head_dim - 2))

    @functools.cached_property
    def rope_bases(self) -> RopeBases:
        setup = self.setup
        scale, d = setup.scale, setup.head_dim
        ntk = ntk_aware_base(setup.base, scale, d)
        ratio = rope_beta(ntk, d) / rope_beta(setup.base * scale, d)
        return RopeBases(minimal_conversion_base(setup.base, scale), setup.base * scale, ntk, ratio)

    # ---- the bound ---------------------------------------------------------------------------------

    @functools.cached_property
    def bound(self) -> BoundCurves:
        s = self.settings
        if s.bound_subject == "rope":
            beta, places, scale = self.rope_beta, self.num_pairs, self.setup.scale
        else:
            beta, places, scale = s.beta, s.places, s.plain_scale
        scales = bound_scales(s.max_scale)
        at = torch.tensor([scale], dtype=torch.float64)
        return BoundCurves(
            s.bound_subject, beta, places, scale, scales, log_stretch_bound(scales, beta, places),
            torch.log(conversion_stretch(scales, places)),
            torch.log(ntk_stretch(scales, places)) if places >= 2 else None,
            float(torch.exp(log_stretch_bound(at, beta, places))[0]), float(conversion_stretch(at, places)[0]),
            float(ntk_stretch(at, places)[0]) if places >= 2 else None,
        )

    @property
    def bound_label(self) -> str:
        if self.settings.bound_subject == "rope":
            return _("RoPE: d = {d}, b = {base}, P = d/2 = {pairs}").format(
                d=self.setup.head_dim, base=base_text(self.setup.base), pairs=self.num_pairs)
        return _("plain number: β = {beta}, P = {places}").format(beta=number_text(self.settings.beta),
                                                                  places=self.settings.places)


def compute(settings: Settings) -> Result:
    return Result(settings)


# --- the worked examples and the formulas, checked --------------------------------------------------


class Shortcut(NamedTuple):
    """The ⌊n/β^j⌋ mod β shortcut against the greedy digits, at the default n, β, P and s."""

    number: int
    base: float  # the converted base λβ
    shortcut: tuple[float, ...]  # top place first
    shortcut_value: float  # what those digits stand for
    greedy: tuple[float, ...]
    greedy_value: float


@functools.cache
def shortcut_example() -> Shortcut:
    s = Settings()
    base = converted_base(s.beta, s.places, s.plain_scale)
    shortcut = floor_mod_digits([s.number], base, s.places)
    greedy = greedy_digits([s.number], base, s.places)
    return Shortcut(s.number, base, tuple(shortcut[0].flip(0).tolist()), float(compose(shortcut, base)[0]),
                    tuple(greedy[0].flip(0).tolist()), float(compose(greedy, base)[0]))


class WorkedExamples(NamedTuple):
    base16_digits: tuple[int, ...]  # 1749 in base 16, top place first
    base16_top: int  # 16³ − 1: the largest three hex places write
    needed: int  # 2·1000 − 1: the largest number s = 2 asks three decimal places to reach
    whole_base: int  # ⌈2000^(1/3)⌉
    below: int  # (whole_base − 1)³ − 1


@functools.cache
def worked_examples() -> WorkedExamples:
    digits = tuple(int(d) for d in greedy_digits([1749], 16.0, 3)[0].flip(0).tolist())
    whole = int(converted_base(10.0, 3, 2.0, whole=True))
    return WorkedExamples(digits, 16**3 - 1, 2 * 10**3 - 1, whole, (whole - 1) ** 3 - 1)


@functools.cache
def formula_checks() -> dict[str, bool]:
    """The page's formulas checked symbolically: {statement: holds}."""
    import sympy as sp

    lam, beta, s, b, d, x = sp.symbols("lambda beta s b d x", positive=True)
    places = sp.symbols("P", positive=True, integer=True)
    checks: dict[str, bool] = {}
    # (λβ)^P − 1 = s(β^P − 1) is linear in x = λ^P.
    solutions = sp.solve(sp.Eq(x * beta**places - 1, s * (beta**places - 1)), x)
    checks[r"$(\lambda\beta)^P - 1 = s(\beta^P - 1) \iff \lambda^P = s - (s-1)/\beta^P$"] = (
        len(solutions) == 1 and sp.simplify(solutions[0] - (s - (s - 1) / beta**places)) == 0)
    # With β^(d/2) = b the smallest new base is b·λ^(d/2) = s(b − 1) + 1.
    checks[r"$b\,(s - (s-1)/b) = s(b - 1) + 1$"] = sp.expand(b * (s - (s - 1) / b) - (s * (b - 1) + 1)) == 0
    # NTK keeps the lowest pair's frequency equal to interpolation's: (λβ)^(P−1) = s·β^(P−1).
    ntk = sp.solve(sp.Eq((lam * beta) ** (places - 1), s * beta ** (places - 1)), lam)
    checks[r"$(\lambda\beta)^{P-1} = s\,\beta^{P-1} \iff \lambda = s^{1/(P-1)}$"] = (
        len(ntk) == 1 and sp.simplify(ntk[0] - s ** (1 / (places - 1))) == 0)
    # NTK's base b·s^(d/(d−2)) is β-base conversion with λ = s^(2/(d−2)); b·s is λ = s^(2/d).
    ntk_beta = sp.powdenest(sp.expand_power_base((b * s ** (d / (d - 2))) ** (2 / d), force=True), force=True)
    checks[r"$(b\,s^{d/(d-2)})^{2/d} = \beta\,s^{2/(d-2)}$"] = (
        sp.simplify(ntk_beta - b ** (2 / d) * s ** (2 / (d - 2))) == 0)
    conversion_beta = sp.expand_power_base((b * s) ** (2 / d), force=True)
    checks[r"$(b\,s)^{2/d} = \beta\,s^{2/d}$"] = sp.simplify(conversion_beta - b ** (2 / d) * s ** (2 / d)) == 0
    return checks


# --- figures ---------------------------------------------------------------------------------------


def _digits(result: Result, style) -> object:
    return draw.digits_against_n_figure(result.curve_numbers, result.curves, float(result.settings.number))


def _zoom(result: Result, style) -> object:
    return draw.units_digit_zoom_figure(result.zoom, result.zoom_views)


def _dials(result: Result, style) -> object:
    dials = result.dials
    return draw.phase_dials_figure(dials.methods, dials.shown, dials.phases, dials.seen, dials.unseen,
                                   result.position, dials.wavelengths)


def _dials_caption(result: Result) -> str:
    return _("{shown} of {pairs} pairs, evenly spread. A hand less than one step θᵢ past its arc sits between "
             "trained positions and is not ringed.").format(shown=len(result.dials.shown), pairs=result.num_pairs)


def _turns(result: Result, style) -> object:
    dials = result.dials
    return draw.pair_turns_figure(dials.methods, dials.turns, dials.training_turns, result.position,
                                  result.setup.train_length)


def _bound(result: Result, style) -> object:
    bound = result.bound
    marked = bound.scale if bound.scale <= result.settings.max_scale else None
    return draw.stretch_bound_figure(bound.scales, bound.log_bound, bound.log_conversion, bound.log_ntk,
                                     result.bound_label, marked)


def _bound_caption(result: Result) -> str:
    text = _("Right: how much further than the smallest λ each choice stretches every place.")
    if result.bound.scale <= result.settings.max_scale:
        text = sentences([_("Dotted: s = {scale}.").format(scale=number_text(result.bound.scale)), text])
    return text


def _digits_caption(result: Result) -> str | None:
    return draw.omitted_note(draw.omitted_places(result.curve_numbers, result.curves)) or None


FIGURES = figure_registry(
    FigureSpec("digits-against-n", draw.DIGITS_TITLE, _digits, groups=(DIGITS,), caption=_digits_caption),
    FigureSpec("units-digit-zoom", draw.ZOOM_TITLE, _zoom, groups=(DIGITS,)),
    FigureSpec("phase-dials", draw.DIALS_TITLE, _dials, groups=("rope", DIALS), caption=_dials_caption,
               scrub="scale"),
    FigureSpec("pair-turns", draw.TURNS_TITLE, _turns, groups=("rope", DIALS)),
    FigureSpec("stretch-bound", draw.BOUND_TITLE, _bound, groups=("rope", DIGITS, BOUND), caption=_bound_caption),
    layer_map_spec(),
)

LESSON = Lesson(
    name="beta_base",
    title=N_("RoPE as a β-base number"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Positions as digits in base β: extrapolate, interpolate, or change the base."),
    parts=(
        Part("plain-number", N_("1 · A plain number"), N_("1 · A plain number in base β"), ("digits-against-n", "units-digit-zoom")),
        Part("digits", N_("2 · RoPE's digits"), N_("2 · RoPE's pairs are the digits of the position"), ("phase-dials", "pair-turns")),
        Part("base-growth", N_("3 · Base growth"), N_("3 · How much must the base grow?"), ("stretch-bound",)),
        layer_map_part(),
    ),
)
