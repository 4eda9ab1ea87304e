"""From absolute to relative position: the four terms of an absolute-PE score, what Shaw et al., Transformer-XL,
T5, DeBERTa and TUPE keep of them, and the other absolute encodings (FLOATER, multiplicative, hierarchical
decomposition, complex order, CNN zero padding)."""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import torch

from figures import lineage as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from pe_core.absolute_schemes import (
    cnn_position_features,
    complex_order_embedding,
    complex_order_word,
    cosine_similarity,
    differs_from_centre,
    floater_linear_positions,
    hierarchical_positions,
    multiplicative_positions,
    receptive_radius,
    stand_in_table,
)
from pe_core.biases import t5_relative_bucket
from pe_core.relative import (
    SCHEMES,
    FourTerms,
    SchemeScore,
    deberta_index,
    four_terms,
    offset_dependence,
    scheme_parameters,
    scheme_scores,
    shaw_index,
    sinusoidal_positions,
)

SCORES, DISTANCES, ABSOLUTE = "scores", "distances", "absolute"
TOKENS = ("repeated", "random")
TOKEN_TITLES = {"repeated": N_("one token repeated"), "random": N_("a different random token at each position")}
PADDINGS = ("zeros", "circular")
PADDING_TITLES = {"zeros": N_("zeros"), "circular": N_("circular (wrap around)")}
T5_MAX_DISTANCE = 128
BERT_POSITIONS = 512  # the learned table the hierarchical decomposition was written for

SCHEME_TITLES = {"absolute": N_("Absolute (sinusoidal p added)"), "shaw": N_("Shaw et al. 2018"),
                 "xl": N_("Transformer-XL / XLNet"), "t5": N_("T5"), "deberta": N_("DeBERTa"), "tupe": N_("TUPE")}
ABSOLUTE_PANELS = ("floater", "multiplicative", "hierarchical", "complex", "cnn")
ABSOLUTE_TITLES = {"floater": N_("FLOATER, linear h (= sinusoidal)"), "multiplicative": N_("Multiplicative x ⊙ p"),
                   "hierarchical": N_("Hierarchical decomposition"), "complex": N_("Complex order (one word)"),
                   "cnn": N_("CNN features on a constant input")}


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    length: int = setting(32, N_("Sequence length n"), key="n", group=SCORES, options=(16, 32, 48, 64))
    head_dim: int = setting(16, N_("Head dimension d"), key="d", group=SCORES, options=(8, 16, 32, 64))
    tokens: str = setting("repeated", N_("Content"), key="tok", widget="radio", group=SCORES, options=TOKENS,
                          format=lambda v: _(TOKEN_TITLES[v]),
                          help=N_("With one token repeated the content–content term is one constant, so everything "
                                  "that varies over (i, j) comes from position."))
    seed: int = setting(0, N_("Random draw of the learned tables"), key="seed", group=SCORES, options=(0, 1, 2, 3, 4))
    shaw_distance: int = setting(4, N_("Shaw: clipping distance k"), key="k", group=SCORES, options=(1, 2, 4, 8, 16))
    deberta_span: int = setting(8, N_("DeBERTa: span k"), key="dk", group=SCORES, options=(2, 4, 8, 16, 32))
    t5_buckets: int = setting(32, N_("T5 / TUPE: buckets"), key="tb", group=SCORES, options=(8, 16, 32, 64))
    max_offset: int = setting(300, N_("Distances shown: ±"), key="r", group=DISTANCES, options=(64, 300, 1000))
    bucket_size: int = setting(256, N_("DeBERTa-v2 log buckets: position_buckets"), key="pb", group=DISTANCES,
                               options=(64, 128, 256))
    max_position: int = setting(512, N_("DeBERTa-v2 log buckets: max_relative_positions"), key="mp",
                                group=DISTANCES, options=(512, 1024, 2048))
    abs_positions: int = setting(64, N_("Positions compared"), key="an", group=ABSOLUTE, options=(32, 64, 128))
    abs_dim: int = setting(16, N_("Dimension"), key="ad", group=ABSOLUTE, options=(8, 16, 32, 64))
    table_size: int = setting(12, N_("Hierarchical: learned positions n"), key="hn", group=ABSOLUTE,
                              options=(12, 16, 32))
    alpha: float = setting(0.4, N_("Hierarchical: α"), key="alpha", group=ABSOLUTE, options=(0.2, 0.4, 0.5, 0.6, 0.8))
    cnn_layers: int = setting(3, N_("CNN: layers"), key="cl", group=ABSOLUTE, options=(1, 2, 3, 4, 6, 8))
    cnn_kernel: int = setting(3, N_("CNN: kernel width"), key="ck", group=ABSOLUTE, options=(3, 5, 7))
    padding: str = setting("zeros", N_("CNN: padding"), key="pad", widget="radio", group=ABSOLUTE, options=PADDINGS,
                           format=lambda v: _(PADDING_TITLES[v]))


class IndexCurve(NamedTuple):
    scheme: str
    rows: torch.Tensor  # row of the scheme's table at each offset
    table_size: int

    @property
    def distinct(self) -> int:
        return int(torch.unique(self.rows).numel())


class Result:
    """Everything the page draws, each part computed when a figure first asks for it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    # ---- relative lineage --------------------------------------------------------------------------

    @functools.cached_property
    def params(self):
        s = self.settings
        return scheme_parameters(s.length, s.head_dim, seed=s.seed, repeated_token=s.tokens == "repeated",
                                 shaw_distance=s.shaw_distance, deberta_span=s.deberta_span, t5_buckets=s.t5_buckets)

    @functools.cached_property
    def terms(self) -> FourTerms:
        """The absolute scheme's four terms, each ÷√d as the score is."""
        p = self.params
        scale = self.settings.head_dim ** -0.5
        return FourTerms(*(term * scale for term in four_terms(p.x, p.p, p.w_q, p.w_k)))

    @functools.cached_property
    def schemes(self) -> tuple[SchemeScore, ...]:
        return scheme_scores(self.params)

    @functools.cached_property
    def dependence(self) -> dict[str, float]:
        """scheme -> how much of its position part is not a function of i − j (0: purely relative)."""
        return {s.scheme: offset_dependence(s.position) for s in self.schemes}

    # ---- distances -----------------------------------------------------------------------------------

    @functools.cached_property
    def offsets(self) -> torch.Tensor:
        r = self.settings.max_offset
        return torch.arange(-r, r + 1)

    @functools.cached_property
    def index_curves(self) -> tuple[IndexCurve, ...]:
        s, r = self.settings, self.offsets
        return (
            IndexCurve("shaw", shaw_index(-r, s.shaw_distance), 2 * s.shaw_distance + 1),
            IndexCurve("t5", t5_relative_bucket(-r, bidirectional=True, num_buckets=s.t5_buckets,
                                                max_distance=T5_MAX_DISTANCE), s.t5_buckets),
            IndexCurve("deberta", deberta_index(r, s.deberta_span), 2 * s.deberta_span),
            IndexCurve("deberta_log", deberta_index(r, 0, s.bucket_size, s.max_position), 2 * s.bucket_size),
        )

    # ---- other absolute encodings -----------------------------------------------------------------------

    @functools.cached_property
    def hierarchical_count(self) -> int:
        return min(self.settings.abs_positions, self.settings.table_size ** 2)

    @functools.cached_property
    def absolute_vectors(self) -> dict[str, torch.Tensor]:
        s = self.settings
        n, dim = s.abs_positions, s.abs_dim
        positions = torch.arange(n)
        table = sinusoidal_positions(n, dim)
        token = torch.randn(dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        word = complex_order_word(dim, seed=0)
        return {
            "floater": floater_linear_positions(positions, dim),
            "multiplicative": multiplicative_positions(token, table),
            "hierarchical": hierarchical_positions(stand_in_table(s.table_size, dim, seed=0), s.alpha,
                                                   self.hierarchical_count),
            "complex": complex_order_embedding(*word, positions),
            "cnn": cnn_position_features(n, channels=dim, layers=s.cnn_layers, kernel=s.cnn_kernel,
                                         padding=s.padding, seed=0),
        }

    @functools.cached_property
    def absolute_similarity(self) -> dict[str, torch.Tensor]:
        return {name: cosine_similarity(vectors) for name, vectors in self.absolute_vectors.items()}

    @functools.cached_property
    def absolute_dependence(self) -> dict[str, float]:
        return {name: offset_dependence(matrix) for name, matrix in self.absolute_similarity.items()}

    @property
    def cnn_radius(self) -> int:
        return receptive_radius(self.settings.cnn_layers, self.settings.cnn_kernel)

    @functools.cached_property
    def cnn_marked(self) -> int:
        """Positions whose features differ from the middle one (readable as 'near an edge')."""
        return int(differs_from_centre(self.absolute_vectors["cnn"]).sum())

    @functools.cached_property
    def hierarchical_collisions(self) -> int:
        """Pairs of distinct positions with the same vector (α = 1/2 makes (i, j) and (j, i) collide)."""
        vectors = self.absolute_vectors["hierarchical"]
        gaps = torch.cdist(vectors, vectors, compute_mode="donot_use_mm_for_euclid_dist")
        scale = float(vectors.abs().max())
        return int((gaps < 1e-12 * scale).triu(diagonal=1).sum())


def compute(settings: Settings) -> Result:
    return Result(settings)


def scheme_title(scheme: str) -> str:
    return _(SCHEME_TITLES[scheme])


def dependence_note(value: float, matrix: torch.Tensor | None = None) -> str:
    if matrix is not None and float(matrix.max() - matrix.min()) <= 1e-12 * float(matrix.abs().max()):
        return _("constant")
    if value < 1e-9:
        return _("a function of i − j only")
    return _("{percent:.0f}% not a function of i − j").format(percent=100 * min(value, 1.0))


# ---- figures -----------------------------------------------------------------------------------------------

TERM_TITLES = (N_("content–content"), N_("content–position"), N_("position–content"), N_("position–position"))


def _four_terms(result: Result, style) -> object:
    terms = result.terms
    panels = [draw.Panel(_(title), matrix, dependence_note(offset_dependence(matrix), matrix))
              for title, matrix in zip(TERM_TITLES, terms, strict=True)]
    panels.append(draw.Panel(_("sum = score"), terms.total, dependence_note(offset_dependence(terms.total),
                                                                             terms.total)))
    return draw.four_terms_figure(panels)


def _position_part(result: Result, style) -> object:
    panels = []
    for score in result.schemes:
        largest = float(score.position.abs().max()) or 1.0
        panels.append(draw.Panel(scheme_title(score.scheme), score.position / largest,
                                 dependence_note(result.dependence[score.scheme], score.position)))
    return draw.position_part_figure(panels)


def _position_caption(result: Result) -> str:
    if result.settings.tokens == "repeated":
        return _("One token repeated: every relative scheme gives a matrix constant along its diagonals (a function of "
                 "i − j); the absolute score and TUPE's untied absolute term do not.")
    return _("Random tokens: only T5's bias stays a function of i − j alone. Shaw, Transformer-XL and DeBERTa look "
             "the offset up through the tokens' content, so their position part also depends on what sits at i and j.")


# What each scheme does with each term: (kind, text). Kinds index KIND_TITLES.
KIND_TITLES = (N_("content"), N_("absolute position"), N_("relative position"), N_("trainable vector"),
               N_("learned scalar bias"), N_("dropped"))
KIND_COLOURS = ("#E8E8E8", "#F2C49B", "#9ECAE1", "#C7E9C0", "#DADAEB", "#FFFFFF")
KEPT = {
    "absolute": ((0, "x<sub>i</sub>W<sub>Q</sub>W<sub>K</sub><sup>⊤</sup>x<sub>j</sub><sup>⊤</sup>"),
                 (1, "x<sub>i</sub>W<sub>Q</sub>W<sub>K</sub><sup>⊤</sup>p<sub>j</sub><sup>⊤</sup>"),
                 (1, "p<sub>i</sub>W<sub>Q</sub>W<sub>K</sub><sup>⊤</sup>x<sub>j</sub><sup>⊤</sup>"),
                 (1, "p<sub>i</sub>W<sub>Q</sub>W<sub>K</sub><sup>⊤</sup>p<sub>j</sub><sup>⊤</sup>")),
    "shaw": ((0, "x<sub>i</sub>W<sub>Q</sub>(x<sub>j</sub>W<sub>K</sub>)<sup>⊤</sup>"),
             (2, "x<sub>i</sub>W<sub>Q</sub>a<sup>K</sup><sub>clip(j−i, k)</sub>"), (5, "—"), (5, "—")),
    "xl": ((0, "x<sub>i</sub>W<sub>q</sub>W<sub>k,E</sub><sup>⊤</sup>x<sub>j</sub><sup>⊤</sup>"),
           (2, "x<sub>i</sub>W<sub>q</sub>W<sub>k,R</sub><sup>⊤</sup>R<sub>i−j</sub>"),
           (3, "u W<sub>k,E</sub><sup>⊤</sup>x<sub>j</sub><sup>⊤</sup>"),
           (3, "v W<sub>k,R</sub><sup>⊤</sup>R<sub>i−j</sub>")),
    "t5": ((0, "q<sub>i</sub>·k<sub>j</sub>"), (5, "—"), (5, "—"), (4, "b[bucket(j − i)]")),
    "deberta": ((0, "Q<sup>c</sup><sub>i</sub>·K<sup>c</sup><sub>j</sub>"),
                (2, "Q<sup>c</sup><sub>i</sub>·K<sup>r</sup><sub>δ(i,j)</sub>"),
                (2, "K<sup>c</sup><sub>j</sub>·Q<sup>r</sup><sub>δ(j,i)</sub>"), (5, "—")),
    "tupe": ((0, "x<sub>i</sub>W<sub>Q</sub>(x<sub>j</sub>W<sub>K</sub>)<sup>⊤</sup>"), (5, "—"), (5, "—"),
             (1, "p<sub>i</sub>U<sub>Q</sub>(p<sub>j</sub>U<sub>K</sub>)<sup>⊤</sup> + b<sub>j−i</sub>")),
}


def _kept_terms(result: Result, style) -> object:
    schemes = [scheme_title(s) for s in SCHEMES]
    return draw.kept_terms_figure(schemes, [_(t) for t in TERM_TITLES], [[k for k, _text in KEPT[s]] for s in SCHEMES],
                                  [[text for _k, text in KEPT[s]] for s in SCHEMES], [_(t) for t in KIND_TITLES],
                                  KIND_COLOURS)


INDEX_TITLES = {"shaw": N_("Shaw: clip(j − i, k) + k"), "t5": N_("T5: bucket of j − i"),
                "deberta": N_("DeBERTa (paper): δ(i, j)"), "deberta_log": N_("DeBERTa-v2/v3: δ of the log bucket")}
INDEX_KEYS = {"shaw": None, "t5": "t5", "deberta": "deberta", "deberta_log": "deberta"}


def _distance_index(result: Result, style) -> object:
    series = [draw.IndexSeries(_(INDEX_TITLES[c.scheme]), c.rows, INDEX_KEYS[c.scheme], c.table_size,
                               "solid" if c.scheme == "deberta_log" else None) for c in result.index_curves]
    return draw.distance_index_figure(result.offsets, series)


def _distance_caption(result: Result) -> str:
    s = result.settings
    return _("T5 and TUPE use bidirectional buckets with max_distance = {far}; Transformer-XL needs no table: its "
             "Rᵢ₋ⱼ is a sinusoid of every distance. DeBERTa-v2 log buckets: position_buckets = {buckets}, "
             "max_relative_positions = {most}.").format(far=T5_MAX_DISTANCE, buckets=s.bucket_size, most=s.max_position)


def _absolute(result: Result, style) -> object:
    panels = []
    for name in ABSOLUTE_PANELS:
        matrix = result.absolute_similarity[name]
        note = dependence_note(result.absolute_dependence[name])
        if name == "hierarchical":
            note = _("n = {n} learned → n² = {square}; α = {alpha:g}").format(
                n=result.settings.table_size, square=result.settings.table_size ** 2, alpha=result.settings.alpha)
        elif name == "cnn":
            note = _("{count} of {total} positions differ from the middle one").format(
                count=result.cnn_marked, total=result.settings.abs_positions)
        panels.append(draw.Panel(_(ABSOLUTE_TITLES[name]), matrix, note))
    return draw.absolute_similarity_figure(panels)


def _absolute_caption(result: Result) -> str:
    return _("Cosine similarity of the position vectors at t₁ and t₂. Stand-ins for learned parameters: a seeded "
             "random token (multiplicative), sinusoids plus noise as the learned table (hierarchical), a seeded "
             "word (complex order), random convolution weights (CNN).")


FIGURES = figure_registry(
    FigureSpec("four-terms", draw.FOUR_TERMS_TITLE, _four_terms, groups=(SCORES,),
               caption=N_("Absolute sinusoidal positions added to the tokens; every term divided by √d like the "
                          "score. The panel notes say how much of each matrix is not a function of i − j.")),
    FigureSpec("kept-terms", draw.KEPT_TITLE, _kept_terms, groups=()),
    FigureSpec("position-part", draw.POSITION_TITLE, _position_part, groups=(SCORES,), caption=_position_caption),
    FigureSpec("distance-index", draw.DISTANCE_TITLE, _distance_index, groups=(SCORES, DISTANCES),
               caption=_distance_caption),
    FigureSpec("absolute-schemes", draw.ABSOLUTE_TITLE, _absolute, groups=(ABSOLUTE,), caption=_absolute_caption),
)

LESSON = Lesson(
    name="lineage",
    title=N_("From absolute to relative position"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("The four terms of an absolute-position score and what Shaw et al., Transformer-XL, T5, DeBERTa and "
               "TUPE keep of them; FLOATER, multiplicative, hierarchical, complex-order and CNN positions."),
    parts=(
        Part("four-terms", N_("Four terms"), N_("One score, four terms"), ("four-terms",)),
        Part("schemes", N_("Schemes"), N_("What each scheme keeps"), ("kept-terms",), reads=("scores",)),
        Part("what-attention-gets", N_("What attention gets"), N_("What position information attention gets"), ("position-part",)),
        Part("table-rows", N_("Table rows"), N_("From a distance to a row of the table"), ("distance-index",)),
        Part("absolute", N_("Other absolute"), N_("Other absolute encodings"), ("absolute-schemes",)),
    ),
)
