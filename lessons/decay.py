"""Long-range decay: RoFormer's bound, sinusoidal dot products, and what real q·k scores do with distance.

The settings come in groups the page draws where its prose needs them: the shared RoPE set-up
(sidebar; the context-extension chart and the random q·k chart read it), the bound chart's own
head sizes, bases and distance range, the sinusoidal encoding, the random seed, and the random
scores. Every number the page states is computed here: RoFormer's reference values
(``roformer_landmarks``), where the sinusoidal dot product first rises and first dips below zero,
how far each method's bound stays with direct extrapolation.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import torch

from figures import decay as draw
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, Part, cached, figure_registry, override, setting
from lessons.format import base_text, length_text
from lessons.rope_setup import BASES, HEAD_DIMS, RopeSettings, RopeSetup, layer_map_part, layer_map_spec, rope_setup
from pe_core.decay import (
    BoundCurve,
    Curve,
    ScoreStatistics,
    all_ones_rope_score,
    decay_bound_curve,
    decimated,
    expected_rope_score,
    first_distance_at_or_below,
    first_negative_dot_product,
    projected_sinusoidal_statistics,
    projection_head_dim,
    projection_matrix,
    random_phase_level,
    rope_decay_bound,
    rope_score_statistics,
    sinusoidal_dot_products,
    sinusoidal_similarity,
)
from pe_core.methods import MethodSetup
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies

BOUND, METHODS, SINUSOIDAL, SEED, SCORES = "bound", "methods", "sinusoidal", "seed", "scores"

MAX_DISTANCES = (256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576)
LONGEST_EXPONENT = MAX_DISTANCES[-1].bit_length() - 1  # the longest range is 2^20 distances
AXES = ("log", "linear")
AXIS_TITLES = {"log": N_("log"), "linear": N_("linear")}
MODEL_DIMS = (16, 32, 64, 128, 256)
MAX_OFFSETS = (64, 128, 256, 512, 1024, 2048, 4096)
POSITION_COUNTS = (32, 64, 128, 256)
CORRELATIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
DRAW_COUNTS = (1, 4, 16, 64, 256, 1024)
MAX_SEED = 2**31 - 1

# What the browser receives: points per curve (every value is computed exactly first).
BOUND_BINS = 700
SINUSOIDAL_BINS = 900
SCORE_BINS = 600
SHOWN_DRAWS = 3
NEGATIVE_SEARCH = MAX_DISTANCES[-1]  # where the first negative sinusoidal dot product is looked for
DEPARTURE_TOLERANCE = 0.01  # a method's bound "departs" from direct extrapolation beyond 1%
DEPARTURE_SEARCH = 65_536  # ... looked for within the chart's range, up to this distance

# RoFormer's Figure 2 (§3.4.3): d = 128, base 10,000; the page quotes its values at r = 0 and r = 250.
ROFORMER_HEAD_DIM = 128
ROFORMER_BASE = 10_000.0
ROFORMER_DISTANCE = 250
ROFORMER_RANGE = 65_536  # how far the page looks for the bound's rebounds


def _axis_title(axis: str) -> str:
    return _(AXIS_TITLES[axis])


def _number(value: float) -> str:
    return f"{value:g}"


@dataclasses.dataclass(frozen=True)
class Settings(RopeSettings):
    methods: tuple[str, ...] = override(RopeSettings, "methods", ("direct", "pi", "ntk", "yarn"))
    bound_bases: tuple[float, ...] = setting(
        (10_000.0, 500_000.0, 1_000_000.0), N_("Bases b of this chart"), key="bases", group=BOUND, options=BASES,
        format=base_text, max_selections=5, help=N_("One colour per base. The sidebar's base sets the other charts."))
    bound_head_dims: tuple[int, ...] = setting(
        (128,), N_("Head dims d of this chart"), key="dims", group=BOUND, options=HEAD_DIMS, max_selections=3,
        help=N_("This chart's own head sizes, one dash each. The sidebar's head dim d sets the context-extension "
                "chart and the random q·k chart."))
    max_distance: int = setting(65_536, N_("Distances up to"), key="rmax", group=BOUND, options=MAX_DISTANCES,
                                format=length_text, help=N_("Also for the context-extension chart."))
    distance_axis: str = setting("log", N_("Distance axis"), key="axis", widget="radio", group=BOUND, options=AXES,
                                 format=_axis_title)
    scrub_in_figure: bool = setting(False, N_("Scrub s inside the methods chart"), key="scrub", group=METHODS,
                                    help=N_("The context-extension chart carries its own slider over s: drag it and "
                                            "every method's bound moves at once, in the browser."))
    d_model: int = setting(128, N_("Model dim d"), key="dm", group=SINUSOIDAL, options=MODEL_DIMS)
    sinusoidal_base: float = setting(10_000.0, N_("Base b"), key="sb", group=SINUSOIDAL, options=BASES,
                                     format=base_text)
    max_offset: int = setting(1024, N_("Offsets up to ± (also for the q·k charts)"), key="kmax", group=SINUSOIDAL,
                              options=MAX_OFFSETS, format=length_text)
    positions: int = setting(128, N_("Positions in the matrices"), key="n", group=SINUSOIDAL, options=POSITION_COUNTS)
    seed: int = setting(0, N_("Random seed (here and below)"), key="seed", widget="number", group=SEED, min_value=0,
                        max_value=MAX_SEED, step=1, help=N_("The same seed draws the same projections, queries and "
                                                            "keys."))
    correlation: float = setting(0.5, N_("Correlation ρ between q and k"), key="rho", group=SCORES,
                                 options=CORRELATIONS, format=_number)
    draws: int = setting(256, N_("Random draws"), key="draws", group=SCORES, options=DRAW_COUNTS, format=length_text)


# --- numbers the page quotes whatever the settings -----------------------------------------------


class RoformerLandmarks(NamedTuple):
    """RoFormer's decay figure (d = 128, base 10,000), measured: what the page's first paragraph quotes."""

    head_dim: int
    base: float
    pairs: int  # N = d/2
    at_zero: float  # (N + 1)/2 = 32.5
    distance: int  # 250
    at_distance: float  # 6.55
    level: float  # the random-phase level the bound settles around
    first_at_level: int  # the first distance where the bound reaches that level
    range: int  # the distances searched for rebounds: 0 … range
    rebound: float  # the largest value after first reaching the level, as a multiple of the level


@functools.cache
def roformer_landmarks() -> RoformerLandmarks:
    inv_freq = default_inv_freq(ROFORMER_BASE, ROFORMER_HEAD_DIM)
    distances = torch.arange(ROFORMER_RANGE + 1, dtype=torch.float64)
    values = rope_decay_bound(inv_freq, distances)
    level = random_phase_level(inv_freq.numel())
    first = int(first_distance_at_or_below(distances, values, level))
    return RoformerLandmarks(ROFORMER_HEAD_DIM, ROFORMER_BASE, inv_freq.numel(), float(values[0]), ROFORMER_DISTANCE,
                             float(values[ROFORMER_DISTANCE]), level, first, ROFORMER_RANGE,
                             float(values[first:].max()) / level)


# --- cached pe_core work, shared across results ------------------------------------------------------


def frequencies_of(setup: MethodSetup) -> tuple[float, ...]:
    """θ as plain floats (exact): the key under which set-ups with the same frequencies share one curve."""
    return tuple(setup.frequencies().inv_freq.tolist())


def plain_frequencies(head_dim: int, base: float) -> tuple[float, ...]:
    return tuple(default_inv_freq(float(base), int(head_dim)).tolist())


@cached(max_entries=64)
def bound_curve(frequencies: tuple[float, ...], max_distance: int, log_axis: bool) -> BoundCurve:
    """The bound at every integer distance 0 … max_distance, binned for drawing (plain RoPE in the first chart
    and "direct" in the second share one computation)."""
    return decay_bound_curve(torch.tensor(frequencies, dtype=torch.float64), max_distance, log_axis, BOUND_BINS)


@cached(max_entries=64)
def departure(frequencies: tuple[float, ...], reference: tuple[float, ...], limit: int) -> int | None:
    """The first distance r ≤ limit where the bound for ``frequencies`` differs from the reference's by more
    than DEPARTURE_TOLERANCE of it (None if it never does)."""
    distances = torch.arange(limit + 1, dtype=torch.float64)
    values = rope_decay_bound(torch.tensor(frequencies, dtype=torch.float64), distances)
    baseline = rope_decay_bound(torch.tensor(reference, dtype=torch.float64), distances)
    beyond = torch.nonzero((values - baseline).abs() > DEPARTURE_TOLERANCE * baseline)
    return int(beyond[0, 0]) if beyond.numel() else None


@cached(max_entries=32)
def first_negative(d_model: int, base: float) -> draw.Crossing | None:
    offset = first_negative_dot_product(d_model, base, NEGATIVE_SEARCH)
    if offset is None:
        return None
    return draw.Crossing(offset, float(sinusoidal_dot_products([offset], d_model, base)[0]))


# --- results ------------------------------------------------------------------------------------------


class Rise(NamedTuple):
    """The first offset where the sinusoidal dot product goes up: it does not fall steadily."""

    offset: int
    value: float
    next_value: float


class Departure(NamedTuple):
    title: str  # the method's title (N_()-marked) or a model's name
    distance: int | None  # first r where it differs from direct extrapolation by more than the tolerance


def _score_curves(x: torch.Tensor, reference: torch.Tensor, statistics: ScoreStatistics,
                  expected: torch.Tensor | None = None) -> draw.ScoreCurves:
    """Exact scores at every offset, decimated for drawing (the envelope a full plot would show)."""

    def screen(values: torch.Tensor) -> Curve:
        return decimated(x, values, bins=SCORE_BINS)

    return draw.ScoreCurves(screen(reference), screen(statistics.mean), screen(statistics.mean + statistics.std),
                            screen(statistics.mean - statistics.std), tuple(screen(row) for row in statistics.draws),
                            None if expected is None else screen(expected))


class Result:
    """Everything the page draws and states; each part is computed when a figure or a sentence first asks."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.setup: RopeSetup = rope_setup(settings)  # cheap and cached; a bad paste fails here, where the page shows it

    @property
    def log_axis(self) -> bool:
        return self.settings.distance_axis == "log"

    # --- the bound ----------------------------------------------------------------------------------

    @functools.cached_property
    def base_bounds(self) -> tuple[draw.BaseBound, ...]:
        s = self.settings
        return tuple(draw.BaseBound(d, b, bound_curve(plain_frequencies(d, b), s.max_distance, self.log_axis))
                     for d in s.bound_head_dims for b in s.bound_bases)

    @property
    def several_head_dims(self) -> bool:
        return len(self.settings.bound_head_dims) > 1

    @functools.cached_property
    def method_bounds(self) -> tuple[draw.MethodBound, ...]:
        return tuple(draw.MethodBound(m.method, m.title, bound_curve(frequencies_of(m), self.settings.max_distance,
                                                                      self.log_axis))
                     for m in self.setup.setups)

    @functools.cached_property
    def departures(self) -> tuple[Departure, ...]:
        """How far each method's bound stays within 1% of direct extrapolation's (plain RoPE, same d and base)."""
        reference = plain_frequencies(self.setup.head_dim, self.setup.base)
        limit = self.departure_limit
        return tuple(Departure(m.title, departure(frequencies_of(m), reference, limit))
                     for m in self.setup.setups if m.method != "direct")

    @property
    def departure_limit(self) -> int:
        return min(self.settings.max_distance, DEPARTURE_SEARCH)

    @property
    def yarn_score_factor(self) -> float:
        """YaRN's (0.1 ln s + 1)²: what its temperature multiplies every score by at this scale."""
        setup = self.setup
        spec = RopeSpec(head_dim=setup.head_dim, base=setup.base, rope_type="yarn", factor=setup.scale,
                        original_max_position_embeddings=setup.train_length)
        return rope_frequencies(spec).attention_factor ** 2

    # --- sinusoidal encodings -----------------------------------------------------------------------

    @functools.cached_property
    def dot_products(self) -> Curve:
        """Σᵢ cos(kωᵢ) at every offset −K … K, decimated for drawing."""
        s = self.settings
        offsets = torch.arange(-s.max_offset, s.max_offset + 1, dtype=torch.float64)
        return decimated(offsets, sinusoidal_dot_products(offsets, s.d_model, s.sinusoidal_base),
                         bins=SINUSOIDAL_BINS)

    @property
    def first_negative(self) -> draw.Crossing | None:
        return first_negative(self.settings.d_model, self.settings.sinusoidal_base)

    @property
    def negative_in_range(self) -> bool:
        crossing = self.first_negative
        return crossing is not None and crossing.offset <= self.settings.max_offset

    @functools.cached_property
    def first_rise(self) -> Rise | None:
        """The first k ≥ 0 (within the chart's offsets) where Σcos(kωᵢ) < Σcos((k + 1)ωᵢ)."""
        s = self.settings
        values = sinusoidal_dot_products(range(s.max_offset + 1), s.d_model, s.sinusoidal_base)
        rises = torch.nonzero(values[1:] > values[:-1])
        if not rises.numel():
            return None
        k = int(rises[0, 0])
        return Rise(k, float(values[k]), float(values[k + 1]))

    @functools.cached_property
    def similarity(self) -> torch.Tensor:
        s = self.settings
        return sinusoidal_similarity(s.positions, s.d_model, s.sinusoidal_base)

    @functools.cached_property
    def projected_similarity(self) -> torch.Tensor:
        s = self.settings
        return sinusoidal_similarity(s.positions, s.d_model, s.sinusoidal_base, projection_matrix(s.d_model, s.seed))

    @property
    def head_width(self) -> int:
        """The width of the one attention head the random projections map to."""
        return projection_head_dim(self.settings.d_model)

    # --- real q·k -----------------------------------------------------------------------------------

    @functools.cached_property
    def rope_scores(self) -> draw.ScoreCurves:
        s = self.settings
        inv_freq = default_inv_freq(self.setup.base, self.setup.head_dim)
        distances = torch.arange(s.max_offset + 1, dtype=torch.float64)
        statistics = rope_score_statistics(inv_freq, distances, s.draws, s.correlation, s.seed, shown=SHOWN_DRAWS)
        return _score_curves(distances, all_ones_rope_score(inv_freq, distances), statistics,
                             expected_rope_score(inv_freq, distances, s.correlation))

    @functools.cached_property
    def projected_scores(self) -> draw.ScoreCurves:
        s = self.settings
        offsets = torch.arange(-s.max_offset, s.max_offset + 1, dtype=torch.float64)
        statistics = projected_sinusoidal_statistics(offsets, s.d_model, s.sinusoidal_base, s.max_offset, s.draws,
                                                     s.seed, shown=SHOWN_DRAWS)
        return _score_curves(offsets, sinusoidal_dot_products(offsets, s.d_model, s.sinusoidal_base), statistics)


def compute(settings: Settings) -> Result:
    return Result(settings)


# --- figures ------------------------------------------------------------------------------------------


def _bound(result: Result, style) -> object:
    return draw.decay_bound_figure(result.base_bounds, log_axis=result.log_axis)


def _bound_caption(result: Result) -> str:
    text = _("Every integer distance 0 … {last} is computed exactly in float64; each line is the mean of the bound "
             "over the distances one pixel spans (exact where a bin holds one distance), the band its min–max. "
             "Circles: the first distance at the random-phase level.").format(
        last=length_text(result.settings.max_distance))
    reach = [_("{name}: r = {distance}").format(name=draw.base_label(line.head_dim, line.base,
                                                                      result.several_head_dims),
                                                 distance=length_text(line.bound.first_at_level))
             for line in result.base_bounds if line.bound.first_at_level is not None]
    if reach:
        text = sentences([text, _("First at the level: {places}.").format(places=_("; ").join(reach))])
    return text


def _methods(result: Result, style) -> object:
    setup = result.setup
    return draw.methods_bound_figure(result.method_bounds, train_length=setup.train_length,
                                     target_length=setup.target_length, head_dim=setup.head_dim, base=setup.base,
                                     log_axis=result.log_axis)


def _methods_caption(result: Result) -> str:
    text = _("Same distance range and axis as the chart above. Dashed: the training length L and the target L′. "
             "Dynamic NTK is evaluated at length L′.")
    if result.departures:
        places = "; ".join(
            _("{title} r = {distance}").format(title=_(d.title), distance=length_text(d.distance))
            if d.distance is not None else
            _("{title} never up to r = {limit}").format(title=_(d.title), limit=length_text(result.departure_limit))
            for d in result.departures)
        departures = _("First distance where each curve differs from direct extrapolation by more than {percent:g}%: "
                       "{places}.").format(percent=100 * DEPARTURE_TOLERANCE, places=places)
        text = sentences([text, departures])
    return text


def _sinusoidal(result: Result, style) -> object:
    s = result.settings
    return draw.sinusoidal_dot_figure(result.dot_products, d_model=s.d_model, base=s.sinusoidal_base,
                                      crossing=result.first_negative)


def _similarity(result: Result, style) -> object:
    return draw.similarity_figure(result.similarity, title=_(draw.SIMILARITY_TITLE), colour_title="PE(m)·PE(n)")


def _projected_similarity(result: Result, style) -> object:
    return draw.similarity_figure(result.projected_similarity, title=_(draw.PROJECTED_SIMILARITY_TITLE),
                                  colour_title=_("score"))


def _projected_similarity_caption(result: Result) -> str:
    return _("$W_q$, $W_k$: {width} × {d} (one head), entries N(0, 1/{d}); the first draw of seed {seed}.").format(
        width=result.head_width, d=result.settings.d_model, seed=result.settings.seed)


def _rope_scores(result: Result, style) -> object:
    s = result.settings
    return draw.rope_scores_figure(result.rope_scores, correlation=s.correlation, draws=s.draws,
                                   head_dim=result.setup.head_dim, base=result.setup.base)


def _rope_scores_caption(result: Result) -> str:
    return _("Seed {seed}: the same seed gives the same draws. Mean and spread are exact over the draws (computed "
             "from their first and second moments).").format(seed=result.settings.seed)


def _projected_scores(result: Result, style) -> object:
    s = result.settings
    return draw.projected_scores_figure(result.projected_scores, draws=s.draws, d_model=s.d_model,
                                        base=s.sinusoidal_base, head_width=result.head_width)


def _projected_scores_caption(result: Result) -> str:
    return _("$W_q$, $W_k$: {width} × {d} (one head), entries N(0, 1/{d}), drawn afresh for every draw; the query "
             "sits at t = {t}.").format(width=result.head_width, d=result.settings.d_model,
                                        t=length_text(result.settings.max_offset))


FIGURES = figure_registry(
    FigureSpec("bound", draw.BOUND_TITLE, _bound, groups=(BOUND,), caption=_bound_caption),
    FigureSpec("bound-methods", draw.METHODS_TITLE, _methods, groups=("rope", BOUND, METHODS),
               caption=_methods_caption,
               scrub="scale"),
    FigureSpec("sinusoidal-dot", draw.SINUSOIDAL_TITLE, _sinusoidal, groups=(SINUSOIDAL,)),
    FigureSpec("similarity", draw.SIMILARITY_TITLE, _similarity, groups=(SINUSOIDAL,)),
    FigureSpec("similarity-projected", draw.PROJECTED_SIMILARITY_TITLE, _projected_similarity,
               groups=(SINUSOIDAL, SEED), caption=_projected_similarity_caption),
    FigureSpec("rope-scores", draw.ROPE_SCORES_TITLE, _rope_scores, groups=("rope", SINUSOIDAL, SEED, SCORES),
               caption=_rope_scores_caption),
    FigureSpec("projected-scores", draw.PROJECTED_SCORES_TITLE, _projected_scores, groups=(SINUSOIDAL, SEED, SCORES),
               caption=_projected_scores_caption),
    layer_map_spec(),
)

LESSON = Lesson(
    name="decay",
    title=N_("Long-range decay"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("RoFormer's decay bound, sinusoidal dot products and real q·k against distance."),
    parts=(
        Part("bound", N_("RoFormer's bound"), N_("RoFormer's bound, base by base"), ("bound",)),
        Part("methods", N_("Extension methods"), N_("What context-extension methods do to it"), ("bound-methods",)),
        Part("sinusoidal", N_("Sinusoidal"), N_("Sinusoidal encodings: PE(t)·PE(t+k)"),
             ("sinusoidal-dot", "similarity", "similarity-projected")),
        Part("real-scores", N_("Real q·k"), N_("Real q·k: does the decay survive?"), ("rope-scores", "projected-scores")),
        layer_map_part(),
    ),
)

