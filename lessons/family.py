"""The wider family: each encoding's defining picture, from sinusoidal to Dual Chunk Attention.

One settings group per section of the page (sinusoidal, ALiBi, T5, relative schemes, DCA, logit
scaling); each section's numbers are computed only when one of its figures asks for them.

The learned-embedding figure is not in ``FIGURES``: it draws the position table of a model
trained in the reader's own browser session, which no setting can name, so the export CLI, the
gallery and the tests (which build every figure from settings alone) could not draw it. The page
draws it with ``learned_view`` when a trained model is there.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures import family as draw
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from lessons.format import base_text, length_text
from pe_core import family
from pe_core.biases import alibi_slopes, t5_relative_bucket

SINUSOIDAL, ALIBI, T5, RELATIVE, DCA, SCALING = "sinusoidal", "alibi", "t5", "relative", "dca", "scaling"

SIN_DIMS = (16, 32, 64, 128, 256)
SIN_BASES = (100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0)
SIN_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)
MAX_HEADS = 64
ALIBI_LENGTHS = (16, 32, 64, 128, 256)
T5_BUCKETS = (8, 16, 32, 64, 128)
T5_DISTANCES = (16, 32, 64, 128, 256, 512, 1024)
REL_LENGTHS = (16, 32, 64, 128, 256)
SMALL_DISTANCES = (1, 2, 4, 8, 16, 32, 64, 128)
LEAKY_KS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DCA_TRAIN_LENGTHS = (8, 16, 32, 64, 128)
DCA_CHUNK_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
LOGN_TRAIN_LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768, 131072)

TABLE_DISTANCES = 31  # the T5 table lists i − j = 0 .. 30
LENGTH_SPAN = 64  # the log-n figure runs n from 1 to 64·L
MAX_SCALE = 128  # the temperature figure runs s from 1 to 128
DCA_RULE_TITLES = (N_("intra-chunk"), N_("successive chunk"), N_("inter-chunk"))
# Leaky ReRoPE's worked example: a model trained at 512 tokens run at 4096 with window 256.
LEAKY_EXAMPLE = (4096, 256, 512)
# T5's own defaults (Raffel et al. 2020; transformers' T5Config): 32 buckets, max_distance 128.
T5_DEFAULTS = (32, 128)


def _k_text(value: float) -> str:
    return f"{value:g}"


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    sin_dim: int = setting(128, N_("Embedding dim d"), key="sd", group=SINUSOIDAL, options=SIN_DIMS)
    sin_base: float = setting(10_000.0, N_("Base b"), key="sb", group=SINUSOIDAL, options=SIN_BASES,
                              format=base_text)
    sin_length: int = setting(256, N_("Positions shown"), key="sL", group=SINUSOIDAL, options=SIN_LENGTHS,
                              format=length_text)
    alibi_heads: int = setting(8, N_("Heads N"), key="ah", group=ALIBI, min_value=1, max_value=MAX_HEADS, step=1)
    alibi_length: int = setting(64, N_("Bias matrix length"), key="aL", group=ALIBI, options=ALIBI_LENGTHS)
    misquoted: bool = setting(True, N_("Compare with the common misquote $m_n = 2^{-8/n}$"), key="am", group=ALIBI)
    t5_buckets: int = setting(32, N_("num_buckets"), key="tb", group=T5, options=T5_BUCKETS,
                              help=N_("Buckets in all; a bidirectional encoder gives half to each direction."))
    t5_max_distance: int = setting(128, N_("max_distance"), key="tm", group=T5, options=T5_DISTANCES,
                                   examples=(64, 1024),
                                   help=N_("Distances from here on share the last bucket. It must exceed the "
                                           "distances kept exact (a quarter of num_buckets bidirectional, half "
                                           "causal)."))
    rel_length: int = setting(64, N_("Matrix length"), key="rL", group=RELATIVE, options=REL_LENGTHS)
    shaw_clip: int = setting(8, N_("Shaw clip k"), key="rc", group=RELATIVE, options=SMALL_DISTANCES)
    rerope_window: int = setting(16, N_("ReRoPE window w"), key="rw", group=RELATIVE, options=SMALL_DISTANCES)
    leaky_k: float = setting(4.0, N_("Leaky ReRoPE k (slope 1/k)"), key="rk", group=RELATIVE, options=LEAKY_KS,
                             format=_k_text)
    dca_length: int = setting(128, N_("Text length"), key="dl", group=DCA, options=REL_LENGTHS)
    dca_train_length: int = setting(32, N_("Pretraining length c"), key="dc", group=DCA, options=DCA_TRAIN_LENGTHS)
    dca_chunk_fraction: float = setting(0.75, N_("Chunk size s as a fraction of c"), key="ds", group=DCA,
                                        options=DCA_CHUNK_FRACTIONS, format=_k_text)
    logn_train_length: int = setting(512, N_("Training length L"), key="nL", group=SCALING,
                                     options=LOGN_TRAIN_LENGTHS, format=length_text)

    @property
    def dca_chunk(self) -> int:
        """The chunk size s in tokens."""
        return max(1, round(self.dca_chunk_fraction * self.dca_train_length))


# --- what each section computes ------------------------------------------------------------------


class SinusoidalView(NamedTuple):
    encoding: torch.Tensor  # float64 [positions, d]
    periods: torch.Tensor  # float64 [d]: tokens per full turn of each dimension
    complete: int  # dimensions whose period fits within the positions shown
    shortest: float  # 2π
    longest: float  # 2π·b^((d−2)/d)


class AlibiView(NamedTuple):
    slopes: torch.Tensor  # float64 [N]
    exponents: torch.Tensor  # log₂ of each slope
    misquoted: torch.Tensor | None  # 2^(−8/n), when asked for
    heads: tuple[int, ...]  # zero-based heads drawn
    biases: torch.Tensor  # float64 [len(heads), L, L]


class T5View(NamedTuple):
    relative: torch.Tensor  # j − i
    bidirectional: torch.Tensor
    causal: torch.Tensor
    table_bidirectional: tuple[int, ...]  # bucket of i − j = 0 .. 30 (key before the query)
    table_causal: tuple[int, ...]


class RelativeView(NamedTuple):
    matrices: dict[str, torch.Tensor]  # plain, shaw, rerope, leaky: [L, L], NaN above the diagonal
    largest: dict[str, float]  # the largest position each scheme uses


class DualChunkView(NamedTuple):
    positions: family.DualChunkPositions
    chunk: int  # s
    window: int  # w = c − s
    largest: float  # the largest relative position M uses


class ScalingView(NamedTuple):
    lengths: torch.Tensor  # n from 1 to 64·L
    log_n: torch.Tensor  # log_L n
    clipped: torch.Tensor  # max(1, log_L n)
    scales: torch.Tensor  # s from 1 to 128
    yarn_sqrt: torch.Tensor  # √(1/t) = 0.1 ln s + 1
    yarn_logit: torch.Tensor  # 1/t
    log_n_in_s: torch.Tensor  # log_L(sL) = 1 + ln s / ln L


class Result:
    """Every section's numbers; each is computed when a figure (or the page) first asks for it."""

    def __init__(self, settings: Settings) -> None:
        # The one combination of settings that cannot be drawn fails here, not when a figure asks.
        family.check_t5_settings(settings.t5_buckets, settings.t5_max_distance)
        self.settings = settings

    @functools.cached_property
    def sinusoidal(self) -> SinusoidalView:
        s = self.settings
        periods = family.sinusoidal_periods(s.sin_dim, s.sin_base)
        return SinusoidalView(family.sinusoidal_encoding(range(s.sin_length), s.sin_dim, s.sin_base), periods,
                              int((periods <= s.sin_length).sum()), float(periods[0]), float(periods[-1]))

    @functools.cached_property
    def alibi(self) -> AlibiView:
        s = self.settings
        heads = alibi_heads_to_show(s.alibi_heads)
        slopes = alibi_slopes(s.alibi_heads)
        return AlibiView(slopes, torch.log2(slopes),
                         family.misquoted_alibi_slopes(s.alibi_heads) if s.misquoted else None, heads,
                         family.alibi_head_biases(s.alibi_heads, s.alibi_length, heads))

    @functools.cached_property
    def t5(self) -> T5View:
        s = self.settings
        relative, bidirectional, causal = family.t5_bucket_curves(s.t5_buckets, s.t5_max_distance)
        return T5View(relative, bidirectional, causal,
                      t5_table(True, s.t5_buckets, s.t5_max_distance),
                      t5_table(False, s.t5_buckets, s.t5_max_distance))

    @functools.cached_property
    def relative(self) -> RelativeView:
        s = self.settings
        matrices = family.relative_position_schemes(family.relative_distances(s.rel_length), s.shaw_clip,
                                                    s.rerope_window, s.leaky_k)
        return RelativeView(matrices, {key: float(torch.nan_to_num(m, nan=0).max()) for key, m in matrices.items()})

    @functools.cached_property
    def dca(self) -> DualChunkView:
        s = self.settings
        positions = family.dual_chunk_positions(s.dca_length, s.dca_chunk, s.dca_train_length)
        return DualChunkView(positions, s.dca_chunk, s.dca_train_length - s.dca_chunk,
                             float(torch.nan_to_num(positions.relative, nan=0).max()))

    @functools.cached_property
    def curves(self) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """True distances 0 .. n − 1 and the position each scheme (and DCA, last query) gives them."""
        s = self.settings
        length = max(s.rel_length, s.dca_length)
        distance = torch.arange(length, dtype=torch.float64)
        curves = family.relative_position_schemes(distance, s.shaw_clip, s.rerope_window, s.leaky_k)
        curves["dca"] = family.dual_chunk_last_query(length, s.dca_chunk, s.dca_train_length)
        return distance, curves

    @functools.cached_property
    def scaling(self) -> ScalingView:
        train = self.settings.logn_train_length
        lengths = family.log_spaced(1, LENGTH_SPAN * train)
        scales = family.log_spaced(1, MAX_SCALE)
        return ScalingView(lengths, family.log_n_scale(lengths, train),
                           family.clipped_log_n_scale(lengths, train), scales,
                           family.yarn_sqrt_inverse_temperature(scales), family.yarn_logit_scale(scales),
                           family.log_n_scale(scales * train, train))


def compute(settings: Settings) -> Result:
    return Result(settings)


def problem(settings: Settings, group: str) -> str | None:
    """Why ``group``'s settings cannot be drawn (a sentence for people), or None when they can."""
    try:
        compute(settings.only((group,)))
    except ValueError as err:
        return str(err)
    return None


def alibi_heads_to_show(num_heads: int, limit: int = draw.MAX_ALIBI_PANELS) -> tuple[int, ...]:
    """Zero-based heads to draw: all of them up to ``limit``, else evenly spread, first and last included."""
    return tuple(sorted({round(h) for h in torch.linspace(0, num_heads - 1, min(limit, num_heads)).tolist()}))


def t5_table(bidirectional: bool, num_buckets: int, max_distance: int) -> tuple[int, ...]:
    """T5's bucket of each distance i − j = 0 .. 30 with the key before the query (T5's argument is j − i)."""
    return tuple(t5_relative_bucket(-torch.arange(TABLE_DISTANCES), bidirectional, num_buckets,
                                    max_distance).tolist())


# --- numbers the page's prose states ---------------------------------------------------------------


class Run(NamedTuple):
    first: int
    last: int
    value: int


def runs(values: tuple[int, ...]) -> tuple[Run, ...]:
    """Consecutive positions that share a value: (0, 0, 0), (1, 1, 1), ..., (8, 11, 8)."""
    tensor = torch.tensor(values)
    unique, counts = torch.unique_consecutive(tensor, return_counts=True)
    ends = counts.cumsum(0)
    return tuple(Run(int(end - count), int(end - 1), int(value))
                 for value, count, end in zip(unique.tolist(), counts.tolist(), ends.tolist(), strict=True))


class T5Defaults(NamedTuple):
    bidirectional: tuple[int, ...]  # T5's default table, i − j = 0 .. 30
    exact: int  # distances with a bucket of their own (bidirectional, per direction)
    shared: tuple[Run, ...]  # the runs of distances that share a bucket
    causal_exact: int  # the same 32 buckets, causal: distances kept exact
    causal_half_matches: bool  # a causal model with half the buckets gets the encoder's table


@functools.cache
def t5_defaults() -> T5Defaults:
    buckets, max_distance = T5_DEFAULTS
    table = t5_table(True, buckets, max_distance)
    row = runs(table)
    causal = runs(t5_table(False, buckets, max_distance))
    exact = sum(1 for run in row if run.first == run.last)
    causal_exact = sum(1 for run in causal if run.first == run.last)
    return T5Defaults(table, exact, tuple(run for run in row if run.first != run.last), causal_exact,
                      t5_table(False, buckets // 2, max_distance) == table)


def t5_defaults_text() -> str:
    facts = t5_defaults()
    shared = ", ".join(f"{run.first}–{run.last} → {run.value}" for run in facts.shared)
    text = _("At T5's defaults ({buckets} buckets, max_distance {distance}) a bidirectional encoder keeps "
             "distances 0–{last_exact} exact, then {shared}. A causal decoder with the same {buckets} buckets "
             "keeps 0–{causal_last} exact instead.").format(
        buckets=T5_DEFAULTS[0], distance=T5_DEFAULTS[1], last_exact=facts.exact - 1, shared=shared,
        causal_last=facts.causal_exact - 1)
    if facts.causal_half_matches:
        text = sentences([text, _("A causal decoder with {half} buckets gets exactly the encoder's row.").format(
            half=T5_DEFAULTS[0] // 2)])
    return text


class AlibiExample(NamedTuple):
    heads: int
    power: int  # the largest power of two ≤ heads
    first: float  # slope of head 1
    second: float
    last_of_power: float  # slope of head ``power``
    added_exponents: tuple[float, ...]  # log₂ of the slopes that fill the remaining heads


def alibi_example(heads: int) -> AlibiExample:
    slopes = alibi_slopes(heads)
    power = 1 << (heads.bit_length() - 1)
    return AlibiExample(heads, power, float(slopes[0]), float(slopes[min(1, heads - 1)]), float(slopes[power - 1]),
                        tuple(float(e) for e in torch.log2(slopes[power:]).tolist()))


def _fraction(value: float) -> str:
    return f"1/{1 / value:g}" if value < 1 else f"{value:g}"


def alibi_example_text(heads: int = 12) -> str:
    example = alibi_example(heads)
    added = ", ".join(f"$2^{{{exponent:g}}}$" for exponent in example.added_exponents)
    return _("For {heads} heads: {first}, {second}, …, {last} (the {power}-head slopes), then {added}.").format(
        heads=heads, first=_fraction(example.first), second=_fraction(example.second),
        last=_fraction(example.last_of_power), power=example.power, added=added)


class LeakyFit(NamedTuple):
    target_length: int
    window: int
    train_length: int
    k: float  # the smallest k that keeps every position below the training length
    whole_k: int  # the smallest whole k that does


def leaky_fit() -> LeakyFit:
    target, window, train = LEAKY_EXAMPLE
    k = family.leaky_k_to_fit(target, window, train)
    return LeakyFit(target, window, train, k, math.ceil(k))


# --- figures -----------------------------------------------------------------------------------------


def _sinusoidal_matrix(result: Result, style) -> go.Figure:
    return draw.sinusoidal_matrix_figure(result.sinusoidal.encoding, result.settings.sin_base)


def _sinusoidal_periods(result: Result, style) -> go.Figure:
    return draw.sinusoidal_periods_figure(result.sinusoidal.periods, result.settings.sin_base,
                                          result.settings.sin_length)


def _periods_caption(result: Result) -> str:
    view, s = result.sinusoidal, result.settings
    return _("{complete} of {dim} dimensions complete a full period within {length} positions. The longest period "
             "is {longest} tokens.").format(complete=view.complete, dim=s.sin_dim, length=length_text(s.sin_length),
                                            longest=f"{view.longest:,.0f}")


def _alibi_slopes(result: Result, style) -> go.Figure:
    return draw.alibi_slopes_figure(result.alibi.slopes, result.alibi.misquoted)


def _alibi_bias(result: Result, style) -> go.Figure:
    view = result.alibi
    return draw.alibi_bias_figure(view.biases, view.slopes, view.heads)


def _t5(result: Result, style) -> go.Figure:
    view, s = result.t5, result.settings
    return draw.t5_bucket_figure(view.relative, view.bidirectional, view.causal, s.t5_buckets, s.t5_max_distance)


def _relative(result: Result, style) -> go.Figure:
    s = result.settings
    return draw.relative_matrices_figure(result.relative.matrices,
                                         draw.scheme_titles(s.shaw_clip, s.rerope_window, s.leaky_k), s.rel_length)


def _relative_caption(result: Result) -> str:
    largest, s = result.relative.largest, result.settings
    fit = leaky_fit()
    return _("Largest position used at length {length}: plain {plain:g}, Shaw {shaw:g}, ReRoPE {rerope:g}, "
             "Leaky ReRoPE {leaky:.2f}. To keep a text of length L′ within a training length L, Leaky ReRoPE needs "
             "k ≥ (L′ − 1 − w)/(L − 1 − w): trained at {train} and run at {target} with w = {window}, "
             "k ≥ {k:.2f}, so k = {whole} is the smallest whole k that fits.").format(
        length=s.rel_length, plain=largest["plain"], shaw=largest["shaw"], rerope=largest["rerope"],
        leaky=largest["leaky"], train=fit.train_length, target=fit.target_length, window=fit.window, k=fit.k,
        whole=fit.whole_k)


def _dual_chunk(result: Result, style) -> go.Figure:
    view = result.dca
    return draw.dual_chunk_figure(view.positions.relative, view.positions.kind, view.chunk,
                                  result.settings.dca_train_length, DCA_RULE_TITLES)


def _dca_caption(result: Result) -> str:
    view = result.dca
    train = result.settings.dca_train_length
    return _("s = {chunk}, c = {train}, local window w = c − s = {window}; the largest M is {largest:g}, never more "
             "than c − 1 = {cap}.").format(chunk=view.chunk, train=train, window=view.window, largest=view.largest,
                                           cap=train - 1)


def _curves(result: Result, style) -> go.Figure:
    s = result.settings
    distance, curves = result.curves
    titles = draw.scheme_titles(s.shaw_clip, s.rerope_window, s.leaky_k)
    titles["dca"] = draw.dca_curve_title(s.dca_chunk, s.dca_train_length)
    return draw.position_curves_figure(distance, curves, titles, s.rerope_window)


def _log_n(result: Result, style) -> go.Figure:
    view = result.scaling
    return draw.log_n_figure(view.lengths, view.log_n, view.clipped, result.settings.logn_train_length)


def _temperature(result: Result, style) -> go.Figure:
    view = result.scaling
    return draw.temperature_figure(view.scales, view.yarn_sqrt, view.yarn_logit, view.log_n_in_s,
                                   result.settings.logn_train_length)


FIGURES = figure_registry(
    FigureSpec("sinusoidal-matrix", draw.SINUSOIDAL_TITLE, _sinusoidal_matrix, groups=(SINUSOIDAL,)),
    FigureSpec("sinusoidal-periods", draw.PERIODS_TITLE, _sinusoidal_periods, groups=(SINUSOIDAL,),
               caption=_periods_caption),
    FigureSpec("alibi-slopes", draw.ALIBI_SLOPES_TITLE, _alibi_slopes, groups=(ALIBI,)),
    FigureSpec("alibi-bias", draw.ALIBI_BIAS_TITLE, _alibi_bias, groups=(ALIBI,)),
    FigureSpec("t5-buckets", draw.T5_TITLE, _t5, groups=(T5,)),
    FigureSpec("relative-matrices", draw.RELATIVE_TITLE, _relative, groups=(RELATIVE,), caption=_relative_caption),
    FigureSpec("dual-chunk", draw.DCA_TITLE, _dual_chunk, groups=(DCA,), caption=_dca_caption),
    FigureSpec("position-curves", draw.CURVES_TITLE, _curves, groups=(RELATIVE, DCA)),
    FigureSpec("log-n", draw.LOG_N_TITLE, _log_n, groups=(SCALING,)),
    FigureSpec("temperature", draw.TEMPERATURE_TITLE, _temperature, groups=(SCALING,)),
)

LESSON = Lesson(
    name="family",
    title=N_("The wider family"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Sinusoidal, learned, ALiBi, T5 buckets, ReRoPE, Dual Chunk Attention and log-n scaling: each "
               "encoding's defining picture."),
    parts=(
        Part("sinusoidal", N_("Sinusoidal"), N_("Sinusoidal"), ("sinusoidal-matrix", "sinusoidal-periods")),
        Part("learned", N_("Learned"), N_("Learned absolute embeddings"), ()),
        Part("alibi", N_("ALiBi"), N_("ALiBi"), ("alibi-slopes", "alibi-bias")),
        Part("t5", N_("T5 buckets"), N_("T5 relative buckets"), ("t5-buckets",)),
        Part("relative", N_("Relative position"), N_("Which relative position does attention see?"),
             ("relative-matrices", "dual-chunk", "position-curves")),
        Part("logn", N_("Logit scaling"), N_("Scaling the logits with length: log-n and YaRN"), ("log-n", "temperature")),
    ),
)


# --- the learned table of a model trained in this session (not in FIGURES: no setting names it) ----


class LearnedView(NamedTuple):
    figure: go.Figure
    caption: str
    positions: int  # rows of the learned table
    dim: int


def learned_view(embeddings: torch.Tensor) -> LearnedView:
    """The cosine similarity of a trained model's position table next to a sinusoidal table of its size.

    ``ValueError`` (with a sentence for people) if ``embeddings`` is not a [positions, dim] matrix.
    """
    similarity = family.learned_and_sinusoidal_similarity(embeddings)
    count, dim = embeddings.shape
    shown = len(similarity.positions)
    caption = _("{count} learned positions of dimension {dim}; similarity is the cosine between two positions' "
                "vectors.").format(count=count, dim=dim)
    if shown < count:
        caption += " " + _("{shown} evenly spaced positions are shown.").format(shown=shown)
    figure = draw.learned_similarity_figure(similarity.learned, similarity.sinusoidal, similarity.positions)
    return LearnedView(figure, caption, count, dim)


def learned_table(model: object) -> torch.Tensor | None:
    """The [positions, dim] position table of a model with learned absolute positions; None for other encodings."""
    embedding = getattr(getattr(model, "position_embedding", None), "weight", None)
    if isinstance(embedding, torch.Tensor) and embedding.ndim == 2 and min(embedding.shape) >= 1:
        return embedding
    return None

