"""RoPE in code: LLaMA's precompute_freqs_cis / apply_rotary_emb (complex numbers) next to transformers'
rotate_half, on one vector at one position, and why the two pairings need permuted weights."""

from __future__ import annotations

import dataclasses
import functools
import inspect

import torch

from figures import rope_code as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from lessons.format import base_text
from pe_core import rope_code as code
from pe_core.rope_code import PairingScores, Walkthrough, pairing_scores, walkthrough

CODE, PAIRING = "code", "pairing"
VECTORS = ("count", "random")
VECTOR_TITLES = {"count": N_("x = (1, 2, …, d)"), "random": N_("random x (seeded)")}
# One row of planes: scrubbing d past 8 then leaves the figure's height, and the tables under it, where they were
# (two rows moved them by 230 px each step, and redrawing the extra planes made each step 8-14 ms slower).
MAX_PAIRS_DRAWN = 4

# The functions the page shows, as they are in pe_core (which the tests run against the numbers).
SOURCES = {
    "complex": "\n\n".join(inspect.getsource(f) for f in (code.precompute_freqs_cis, code.apply_rotary_emb)),
    "half": "\n\n".join(inspect.getsource(f) for f in (code.rope_cos_sin, code.rotate_half,
                                                          code.apply_rotary_pos_emb)),
    "permute": inspect.getsource(code.half_split_order),
}


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    head_dim: int = setting(8, N_("Head dimension d"), key="d", group=CODE, options=(2, 4, 8, 16, 32, 64, 128))
    position: int = setting(3, N_("Position m"), key="m", widget="number", group=CODE, min_value=0,
                            max_value=1_000_000, step=1, examples=(0, 1000, 1_000_000))
    base: float = setting(10_000.0, N_("Base (theta in LLaMA's code)"), key="base", group=CODE,
                          options=(100.0, 1_000.0, 10_000.0, 500_000.0), format=base_text)
    vector: str = setting("count", N_("Input vector"), key="x", widget="radio", group=CODE, options=VECTORS,
                          format=lambda v: _(VECTOR_TITLES[v]))
    length: int = setting(64, N_("Keys"), key="n", group=PAIRING, options=(16, 32, 64, 128, 256))
    seed: int = setting(0, N_("Random weights"), key="seed", group=PAIRING, options=(0, 1, 2, 3, 4))


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @functools.cached_property
    def input_vector(self) -> torch.Tensor:
        s = self.settings
        if s.vector == "count":
            return code.example_vector(s.head_dim)
        return torch.randn(s.head_dim, generator=torch.Generator().manual_seed(s.head_dim), dtype=torch.float64)

    @functools.cached_property
    def walk(self) -> Walkthrough:
        s = self.settings
        return walkthrough(s.head_dim, s.position, s.base, self.input_vector)

    @functools.cached_property
    def pairing(self) -> PairingScores:
        s = self.settings
        return pairing_scores(s.head_dim, s.length, s.length - 1, s.base, seed=s.seed)

    @property
    def pairs_drawn(self) -> list[int]:
        """The pairs the rotation figure shows: all of them up to ``MAX_PAIRS_DRAWN``, else as many of the fastest
        (first) as of the slowest (last)."""
        count, each_end = self.settings.head_dim // 2, MAX_PAIRS_DRAWN // 2
        if count <= MAX_PAIRS_DRAWN:
            return list(range(count))
        return list(range(each_end)) + list(range(count - each_end, count))

    @property
    def pairing_gap(self) -> float:
        """Largest |score| difference between the LLaMA form and rotate_half with reordered weights."""
        return float((self.pairing.permuted - self.pairing.interleaved).abs().max())

    @property
    def porting_error(self) -> float:
        """Largest |score| difference when the weights are not reordered."""
        return float((self.pairing.unpermuted - self.pairing.interleaved).abs().max())


def compute(settings: Settings) -> Result:
    return Result(settings)


def _pair_text(a: float, b: float) -> str:
    return f"({a:.17g}, {b:.17g})"


def _complex_text(z: complex) -> str:
    return f"{z.real:.17g} {'+' if z.imag >= 0 else '−'} {abs(z.imag):.17g}i"


def complex_form_table(result: Result) -> dict[str, list]:
    """LLaMA's form, one row per pair i: ``freqs_cis[m]``, the pair as a complex number, and their product."""
    walk = result.walk
    return {
        _("pair i"): list(range(walk.dim // 2)),
        "freqs_cis": [_complex_text(z) for z in walk.freqs_cis.tolist()],
        "x₂ᵢ + i·x₂ᵢ₊₁": [_complex_text(z) for z in walk.pairs.tolist()],
        _("output"): [_pair_text(a, b) for a, b in walk.complex_out.reshape(-1, 2).tolist()],
    }


def half_form_table(result: Result) -> dict[str, list]:
    """transformers' form, one row per coordinate: the reordered vector, rotate_half of it, cos, sin, the output."""
    walk = result.walk
    return {
        _("coordinate"): list(range(walk.dim)),
        "y": walk.half_in.tolist(),
        "rotate_half(y)": walk.rotated_half.tolist(),
        "cos": walk.cos.tolist(),
        "sin": walk.sin.tolist(),
        _("output"): [f"{v:.17g}" for v in walk.half_out.tolist()],
    }


def walkthrough_table(result: Result) -> dict[str, list]:
    """One row per pair i: every number both forms compute, full precision, as the columns of the page's table."""
    walk = result.walk
    half = walk.dim // 2
    out = walk.complex_out.reshape(-1, 2)
    half_pairs = torch.stack((walk.half_out[:half], walk.half_out[half:]), dim=1)  # (yᵢ, yᵢ₊d/2)
    return {
        _("pair i"): list(range(half)),
        "θᵢ": walk.theta.tolist(),
        "m·θᵢ": walk.angle.tolist(),
        _("freqs_cis (cos, sin)"): [_pair_text(z.real, z.imag) for z in walk.freqs_cis.tolist()],
        _("input (x₂ᵢ, x₂ᵢ₊₁)"): [_pair_text(a, b) for a, b in walk.x.reshape(-1, 2).tolist()],
        _("complex form out"): [_pair_text(a, b) for a, b in out.tolist()],
        _("rotate_half out (yᵢ, yᵢ₊d/2)"): [_pair_text(a, b) for a, b in half_pairs.tolist()],
        _("largest |difference|"): (out - half_pairs).abs().amax(dim=1).tolist(),
    }


def _pairs(result: Result, style) -> object:
    walk, drawn = result.walk, result.pairs_drawn
    before = walk.x.reshape(-1, 2)[drawn]
    after = walk.complex_out.reshape(-1, 2)[drawn]
    return draw.pairs_figure(drawn, before, after, walk.angle[drawn].tolist(), walk.position)


def _pairs_caption(result: Result) -> str:
    turns = _("Over each pair, its turn m·θᵢ in radians; the dotted arc is the turn modulo 2π.")
    if len(result.pairs_drawn) < result.settings.head_dim // 2:
        return _("The first {shown} and the last {shown} of the {count} pairs: the fastest turns and the "
                 "slowest.").format(shown=MAX_PAIRS_DRAWN // 2, count=result.settings.head_dim // 2) + " " + turns
    return turns


def _forms(result: Result, style) -> object:
    walk = result.walk
    return draw.forms_figure(walk.complex_out, walk.half_out_interleaved, walk.x)


def _forms_caption(result: Result) -> str:
    return _("rotate_half works on the reordered vector y = x[0, 2, …, 1, 3, …]; its output is put back in x's order "
             "here. Largest difference: {gap:.3g}.").format(gap=result.walk.largest_difference)


def _pairing(result: Result, style) -> object:
    p = result.pairing
    return draw.pairing_figure(p.positions, p.interleaved, p.permuted, p.unpermuted, result.settings.length - 1)


def _pairing_caption(result: Result) -> str:
    return _("Random $W_q$, $W_k$ and tokens (seed {seed}). Reordered rows: largest score difference {gap:.2g}. "
             "Same rows: {error:.3g}.").format(seed=result.settings.seed, gap=result.pairing_gap,
                                               error=result.porting_error)


FIGURES = figure_registry(
    FigureSpec("pairs", draw.PAIRS_TITLE, _pairs, groups=(CODE,), caption=_pairs_caption),
    FigureSpec("two-forms", draw.FORMS_TITLE, _forms, groups=(CODE,), caption=_forms_caption),
    FigureSpec("pairing-scores", draw.PAIRING_TITLE, _pairing, groups=(CODE, PAIRING), caption=_pairing_caption),
)

LESSON = Lesson(
    name="rope_code",
    title=N_("RoPE in code: complex numbers and rotate_half"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("LLaMA's precompute_freqs_cis and apply_rotary_emb next to transformers' rotate_half, number for "
               "number, and why the two pairings need permuted weights."),
    parts=(
        Part("two-forms", N_("The two forms"), N_("The two forms, number for number"), ("two-forms", "pairs")),
        Part("permuted-weights", N_("Permuted weights"), N_("Why the two pairings need permuted weights"),
             ("pairing-scores",)),
    ),
)
