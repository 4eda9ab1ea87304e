"""A guided lesson: "RoPE and long context in 12 steps", a short narrated path through the lessons.

Each step is data: which lesson and figure it shows, the settings that set the view, two or three
sentences, a question with its choices and answer, and why the figure settles it. A step's numbers are
never typed: ``numbers`` computes them from the lesson's result at the step's settings (or from the
lesson's own measured landmarks), and the texts name them with placeholders.

A step whose lesson is not installed is left out of the tour (``available_steps``), so a lesson that
lands later joins the tour with no edit here. Every step is checked when this module is imported: its
settings through the lesson's ``Settings.from_mapping``, its figure in the lesson's registry, its answer
among its choices, its sources in the references.

No Streamlit here: the page (``app_pages/tour.py``) and the tests read the same steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from i18n import N_, _
from lessons import all_lessons
from lessons.base import SCREEN, FigureStyle, Lesson, LessonSettings
from lessons.format import base_text, length_text, superscript

TITLE = N_("RoPE and long context in 13 steps")


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the tour. Texts are N_()-marked and may name the step's ``numbers`` as {placeholders}."""

    slug: str  # URL- and key-safe
    title: str
    lesson: str  # a lesson's name (``lessons.all_lessons()``)
    figure: str  # a figure of that lesson's registry
    settings: Mapping[str, Any]  # Settings field -> value: the view the step sets
    text: str  # two or three sentences
    question: str
    choices: tuple[str, ...]
    answer: int  # index into ``choices``
    why: str  # what the figure shows that settles the question
    numbers: Callable[[Any], Mapping[str, Any]] | None = None  # the lesson's result -> the numbers the texts state
    sources: tuple[tuple[str, str], ...] = ()  # (reference key, place in it)


@dataclasses.dataclass(frozen=True)
class StepText:
    """A step's texts in the reader's language, with its numbers filled in."""

    title: str
    text: str
    question: str
    choices: tuple[str, ...]
    answer: str
    why: str


# ---- the numbers each step states, computed --------------------------------------------------------


def _rotation(result) -> dict[str, Any]:
    walk = result.walk
    last = walk.dim // 2 - 1
    return {"d": walk.dim, "pairs": walk.dim // 2, "base": base_text(result.settings.base), "m": walk.position,
            "last": last, "first_angle": float(walk.angle[0]), "last_angle": float(walk.angle[last]),
            "times": float(walk.angle[0] / walk.angle[last])}


def _spectrum(result) -> dict[str, Any]:
    setup = result.setup
    lam = 2 * math.pi / result.profile.inv_freq[0]
    turning = int((lam < setup.train_length).sum())
    return {"d": setup.head_dim, "base": base_text(setup.base), "pairs": lam.numel(), "last": lam.numel() - 1,
            "shortest": float(lam[0]), "longest": float(lam[-1]), "L": length_text(setup.train_length),
            "turning": turning, "slow": lam.numel() - turning, "last_turning": turning - 1}


def _relative(result) -> dict[str, Any]:
    matrix = result.similarity
    size = matrix.shape[0]
    spread = max(float(diagonal.max() - diagonal.min())
                 for diagonal in (torch.diagonal(matrix, offset) for offset in range(1 - size, size)))
    return {"n": size, "spread": spread, "peak": float(matrix[0, 0]), "pairs": result.settings.d_model // 2}


def _decay(result) -> dict[str, Any]:
    from lessons.decay import roformer_landmarks

    marks = roformer_landmarks()
    return {"d": marks.head_dim, "base": base_text(marks.base), "at_zero": marks.at_zero, "r": marks.distance,
            "at_r": marks.at_distance, "level": marks.level, "first": length_text(marks.first_at_level),
            "range": length_text(marks.range), "rebound": marks.rebound}


def _reach(result, method: str) -> torch.Tensor:
    """Per pair, whether ``method`` takes it beyond every angle training showed (frequencies lesson)."""
    return result.profile.reach_state[result.profile.methods.index(method)] == 2


def _unseen(result) -> dict[str, Any]:
    setup = result.setup
    beyond = _reach(result, "direct")
    return {"L": length_text(setup.train_length), "target": length_text(setup.target_length),
            "s": setup.scale, "unseen": int(beyond.sum()), "first": int(beyond.nonzero()[0, 0]),
            "turning": int((result.profile.reach_state[result.profile.methods.index("direct")] == 0).sum()),
            "pairs": beyond.numel()}


def _pi(result) -> dict[str, Any]:
    row = result.profile.methods.index("pi")
    return {"s": result.setup.scale, "reach": float(result.profile.reach_ratio[row].max()),
            "step": float(result.profile.inv_freq[row, 0]), "unseen": int(_reach(result, "direct").sum())}


def _ntk(result) -> dict[str, Any]:
    from pe_core import ntk_aware_base

    setup, row = result.setup, result.profile.methods.index("ntk")
    ratio = result.profile.ratio[row]
    return {"base": base_text(setup.base), "new_base": base_text(ntk_aware_base(setup.base, setup.scale,
                                                                                 setup.head_dim)),
            "s": setup.scale, "d": setup.head_dim, "first": float(ratio[0]), "last": float(ratio[-1]),
            "last_pair": ratio.numel() - 1, "overshoot": int(_reach(result, "ntk").sum())}


def _by_parts(result) -> dict[str, Any]:
    profile, spec = result.profile, result.ramp_spec
    scale = result.setup.scale

    def zones(method: str) -> tuple[torch.Tensor, int, int]:
        ratio = profile.ratio[profile.methods.index(method)]
        kept = int(torch.isclose(ratio, torch.ones_like(ratio), rtol=1e-12).sum())
        divided = int(torch.isclose(ratio, torch.full_like(ratio, 1 / scale), rtol=1e-12).sum())
        return ratio, kept, divided

    paper, kept, divided = zones("ntk_by_parts")
    code, code_kept, code_divided = zones("yarn")
    gap = code - paper
    return {"alpha": spec.beta_slow, "beta": spec.beta_fast, "kept": kept, "divided": divided,
            "blended": paper.numel() - kept - divided, "s": scale, "code_kept": code_kept,
            "code_divided": code_divided, "gap": float(gap.max()), "widest": int(gap.argmax()),
            "ntk_unseen": int(_reach(result, "ntk").sum()), "parts_unseen": int(_reach(result, "ntk_by_parts").sum()),
            "yarn_unseen": int(_reach(result, "yarn").sum())}


def _temperature(result) -> dict[str, Any]:
    from pe_core import family

    scale, train = 16.0, result.settings.logn_train_length
    at = torch.tensor([scale], dtype=torch.float64)
    return {"s": scale, "sqrt": float(family.yarn_sqrt_inverse_temperature(at)[0]),
            "logit": float(family.yarn_logit_scale(at)[0]), "L": length_text(train),
            "log_n": float(family.log_n_scale(at * train, train)[0])}


def _collisions(result) -> dict[str, Any]:
    from lessons.precision import landmarks

    marks = landmarks()
    bits = result.facts.bits["bfloat16"]
    window = result.window
    return {"bits": bits, "first": marks.first_inexact, "power": 2**bits, "two_to_bits": f"2{superscript(bits)}",
            "gap": marks.first_gap,
            "start": int(window.positions[0]), "end": int(window.positions[-1]),
            "distinct": int(torch.unique(window.stored).numel()), "width": window.positions.numel(),
            "L": length_text(marks.length), "exact": length_text(marks.exact), "fraction": marks.fraction}


def _trap(result) -> dict[str, Any]:
    from lessons.needle import shipped_rows, trap_numbers

    return trap_numbers(shipped_rows())


def _toy(result) -> dict[str, Any]:
    from lessons.training import toy_facts

    return toy_facts(result)


# ---- the tour ------------------------------------------------------------------------------------------

LLAMA2 = {"source": "sliders", "head_dim": 128, "base": 10_000.0, "train_length": 4096, "scale": 4.0}

STEPS: tuple[Step, ...] = (
    Step("rotation", N_("Rotation as complex multiplication"), "rope_code", "pairs",
         {"head_dim": 8, "position": 3, "base": 10_000.0, "vector": "count"},
         N_("RoPE reads each pair (x₂ᵢ, x₂ᵢ₊₁) of a query or key as one complex number and multiplies it by "
            "$e^{{i m \\theta_i}}$, with $\\theta_i = b^{{-2i/d}}$: a turn by the angle m·θᵢ that keeps the "
            "pair's length. Here d = {d} ({pairs} pairs), b = {base}, and the token sits at position m = {m}."),
         N_("Which pair turns furthest?"),
         (N_("Pair 0"), N_("Pair {last}, the last one"), N_("They all turn by the same angle")), 0,
         N_("θᵢ falls geometrically with i: pair 0 turns by m·θ₀ = {first_angle:g} rad, pair {last} by only "
            "{last_angle:.3g} rad, {times:,.0f} times less. Fast pairs tell neighbouring tokens apart; slow pairs "
            "barely move from one token to the next."),
         _rotation, (("roformer", "§3.2"),)),
    Step("spectrum", N_("The frequency spectrum"), "frequencies", "wavelengths",
         {**LLAMA2, "methods": ("direct",), "pair": 45},
         N_("Because θᵢ falls geometrically, the wavelengths λᵢ = 2π/θᵢ (the tokens a pair needs for one full "
            "turn) grow geometrically: with d = {d} and b = {base}, from {shortest:.2f} tokens for pair 0 to "
            "{longest:,.0f} tokens for pair {last}."),
         N_("A model is trained on L = {L} tokens. How many of its {pairs} pairs complete at least one full "
            "turn within L?"),
         (N_("All of them"), N_("Most, but not the slowest"), N_("Only the first few")), 1,
         N_("{turning} of {pairs} pairs have λᵢ < L: the dashed line λ = L crosses the curve just after pair "
            "{last_turning} (ringed). The {slow} slower pairs never complete a turn in training; they are the ones "
            "that meet new angles past L."),
         _spectrum),
    Step("relative", N_("Relative position from absolute rotation"), "decay", "similarity",
         {"d_model": 128, "sinusoidal_base": 10_000.0, "positions": 128},
         N_("Rotate the query by m·θᵢ and the key by n·θᵢ. Their dot product multiplies one by the conjugate of "
            "the other, so the angles subtract: $e^{{i m \\theta}} e^{{-i n \\theta}} = e^{{i (m-n) \\theta}}$. "
            "Take the {n} × {n} matrix that sums cos((m − n)·θᵢ) over {pairs} pairs for every m, n < {n}: RoPE's "
            "score for q = k = (1, 0, 1, 0, …), and equally the dot product of two sinusoidal position vectors. "
            "It appears once you answer."),
         N_("Along which lines of that {n} × {n} matrix is the score constant?"),
         (N_("Rows: it depends on the query's position m only"), N_("Diagonals: it depends on m − n only"),
          N_("Nowhere: it depends on m and n separately")), 1,
         N_("Every diagonal holds one value (the largest spread along any diagonal is {spread:.1g}, rounding "
            "error): rotations by absolute positions give a score that depends on the relative position. The main "
            "diagonal is {peak:g} = d/2, one for each pair."),
         _relative, (("roformer", "§3.4.2"),)),
    Step("decay", N_("Long-range decay"), "decay", "bound",
         {"bound_bases": (10_000.0,), "bound_head_dims": (128,), "max_distance": 65_536, "distance_axis": "log"},
         N_("How large can RoPE's score get at relative distance r? RoFormer bounds it by the mean, over j, of "
            "$\\lvert e^{{i r \\theta_0}} + \\dots + e^{{i r \\theta_{{j-1}}}} \\rvert$: how far the first j "
            "rotations reach when added up. For d = {d} and b = {base} the bound is {at_zero:g} at r = 0."),
         N_("What does the bound do as r grows towards {range}?"),
         (N_("It falls steadily to zero"), N_("It falls, then levels off and wobbles"),
          N_("It stays flat: rotations keep every length")), 1,
         N_("It falls to {at_r:.2f} at r = {r} and first reaches the random-phase level {level:.2f} at r = {first}; "
            "further out it wobbles around that level, up to {rebound:.1f} times it. Distant tokens get a lower "
            "ceiling, not a zero score: the decay is of a bound, not of every score."),
         _decay, (("roformer", "§3.4.3"),)),
    Step("unseen", N_("What breaks past L: unseen angles"), "frequencies", "unseen-angles",
         {**LLAMA2, "methods": ("direct", "pi", "ntk"), "pair": 46},
         N_("A pair that completes a full turn within L has met every angle in training; a slower pair has only "
            "met the arc from 0 to L·θᵢ. Now run the model trained at L = {L} on L′ = {target} tokens and change "
            "nothing: direct extrapolation."),
         N_("Which pairs now meet angles they never met in training?"),
         (N_("The fast pairs (small i)"), N_("The slow pairs (large i)"), N_("Every pair"),
          N_("None: the angles just go round again")), 1,
         N_("The {unseen} slowest pairs, from pair {first} (outlined) on, reach L′·θᵢ, beyond anything L·θᵢ "
            "showed them; the {turning} pairs that turn within L meet only angles they know. The slow pairs carry "
            "position over long distances, and past L they leave their trained range. The rows below preview the "
            "next two steps: PI and NTK-aware on the same pairs."),
         _unseen, (("yarn", "§3.2"),)),
    Step("pi", N_("Position Interpolation"), "frequencies", "angle-heatmaps",
         {**LLAMA2, "methods": ("direct", "pi"), "view": "log", "mark_unseen": True},
         N_("Position Interpolation runs L′ = s·L tokens by dividing every position by s = {s:g}: pair i turns by "
            "(m/s)·θᵢ instead of m·θᵢ. Once you answer, heatmaps show the angle of every pair (across) at every "
            "position (up)."),
         N_("With PI, how large is the largest angle a pair reaches at L′, compared with training?"),
         (N_("About s times larger"), N_("The same as in training"), N_("s times smaller")), 1,
         N_("(L′/s)·θᵢ = L·θᵢ: at L′ every pair reaches exactly the largest angle it met in training (ratio "
            "{reach:g}), so no pair leaves its trained range: no ▼ over PI, against {unseen} over direct "
            "extrapolation. The price is resolution: neighbouring tokens now differ by θᵢ/s, so pair 0 steps {step:g} "
            "rad per token instead of 1."),
         _pi, (("pi", "§2.3"),)),
    Step("ntk", N_("NTK-aware scaling is a change of base"), "frequencies", "interpolation-ratio",
         {**LLAMA2, "methods": ("pi", "ntk")},
         N_("NTK-aware scaling leaves the positions alone and raises the base instead: $b' = b\\, s^{{d/(d-2)}}$ = "
            "{new_base} for b = {base}, s = {s:g} and d = {d}. Every $\\theta_i = b'^{{-2i/d}}$ then changes by "
            "the factor $s^{{-2i/(d-2)}}$."),
         N_("Which pairs does the larger base slow down the most?"),
         (N_("The fastest pair, i = 0"), N_("The slowest pair, exactly as PI does"),
          N_("All pairs equally, as PI does")), 1,
         N_("θ′ᵢ/θᵢ slides from {first:g} at pair 0 (kept: extrapolation) to {last:.3g} = 1/s at pair {last_pair} "
            "(divided, like PI). Fast pairs keep their resolution and the slowest pair stays within its trained "
            "range, but {overshoot} pairs in between still reach unseen angles."),
         _ntk, (("ntk_aware", ""),)),
    Step("beta-base", N_("RoPE as a number in base β"), "beta_base", "digits-against-n",
         {"beta": 10.0, "places": 3, "plain_scale": 2.0, "number": 1749},
         N_("Read the angles n·θᵢ = n/βⁱ as the digits of the position n written in base $\\beta = b^{{2/d}}$: "
            "pair 0 is the units digit. Take an ordinary number: {places} digits in base {beta:g} count up to "
            "{top:,}; now they must count {s:g} times as far."),
         N_("How do you count {s:g} times as far with {places} digits, and keep every digit stepping by 1?"),
         (N_("Add a fourth digit (extrapolate)"), N_("Write n/{s:g} instead of n (interpolate)"),
          N_("Enlarge the base (convert)")), 2,
         N_("A new digit was 0 throughout training, and n/{s:g} makes the units digit step by 1/{s:g}. Base "
            "λβ = {new_base:.2f} ($\\lambda = s^{{1/P}}$) keeps {places} digits stepping by 1, each running only a "
            "little higher than before. NTK-aware scaling is this conversion for RoPE."),
         lambda result: {"places": result.settings.places, "beta": result.settings.beta,
                         "top": round(result.settings.beta ** result.settings.places) - 1,
                         "s": result.settings.plain_scale, "new_base": result.views.new_base},
         (("su_beta_base", ""),)),
    Step("by-parts", N_("NTK-by-parts and YaRN"), "frequencies", "interpolation-ratio",
         {**LLAMA2, "methods": ("ntk", "ntk_by_parts", "yarn")},
         N_("NTK-by-parts decides pair by pair, from r = L/λᵢ, the number of turns pair i makes in training, with "
            "α = {alpha:g} and β = {beta:g}: the YaRN paper blends θᵢ and θᵢ/s by γ(r), linear in r. YaRN is "
            "NTK-by-parts plus an attention temperature (next step); the reference code (transformers) ramps "
            "linearly in the pair index i instead, so the two curves part between α and β."),
         N_("Which pairs does NTK-by-parts divide by s?"),
         (N_("Those with many turns in training (r > β)"), N_("Those with less than α turns in training (r < α)"),
          N_("All of them, as PI does")), 1,
         N_("Pairs that turn more than β times in training are kept as they are ({kept} pairs here); those that "
            "turn less than α times are divided by s ({divided} pairs), and γ(r) blends the {blended} between. The "
            "code's ramp keeps {code_kept} and divides {code_divided}; between, its θ′ᵢ/θᵢ lies up to {gap:.2f} "
            "above γ(r)'s (pair {widest}). Pairs reaching unseen angles: {parts_unseen} with the paper's γ(r), "
            "{yarn_unseen} with the code's ramp, {ntk_unseen} with NTK-aware."),
         _by_parts, (("yarn", "§3.2"),)),
    Step("temperature", N_("Attention temperature"), "family", "temperature",
         {"logn_train_length": 512},
         N_("At s = {s:g} a query has {s:g} times as many keys to attend to, so its softmax spreads thinner. YaRN "
            "sharpens it again: it multiplies q and k by √(1/t) = 0.1·ln s + 1."),
         N_("By what factor does that scale the logits q·k at s = {s:g}?"),
         (N_("1: the softmax is unchanged"), N_("About {logit:.2f}"), N_("{s:g}, as many times as the keys")), 1,
         N_("Both q and k carry √(1/t) = {sqrt:.3f}, so the logits grow by its square, {logit:.2f}. log-n scaling "
            "asks for a similar factor: log n / log L = {log_n:.2f} at n = {s:g}·L with L = {L}."),
         _temperature, (("yarn", "§3.4"), ("logn", ""))),
    Step("bf16", N_("bfloat16 position collisions"), "precision", "collision-window",
         {"zoom_dtype": "bfloat16", "zoom_width": 32, "zoom_start": 248},
         N_("Positions are often stored in the model's own dtype. bfloat16 keeps {bits} significant bits, so it "
            "stores every whole number up to {two_to_bits} = {power} exactly. Take positions {start} to {end}, stored "
            "in bfloat16: the figure that settles it appears once you answer."),
         N_("Do these {width} positions keep {width} different values?"),
         (N_("Yes, all {width}"), N_("Up to {power} yes; above it, neighbours share values"),
          N_("No, they all round to {power}")), 1,
         N_("{first} is the first position bfloat16 cannot store: above {two_to_bits} neighbouring values are {gap} "
            "apart, so every odd position rounds to an even neighbour and {distinct} values serve these {width} "
            "positions. At L = {L} only {exact} positions ({fraction:.1%}) are exact, and RoPE turns tokens that "
            "share a value by the same angle."),
         _collisions, (("bf16_rope", ""),)),
    Step("toy", N_("What the tiny model shows"), "training", "spectrum", {},
         N_("The training page trains a small transformer at L = {L} characters (head size d = {d}) and tests it "
            "{scale}× further. With {llama}'s base {llama_base}, only {usual_turning} of its {pairs} pairs would turn "
            "within L, against {llama_turning} of {llama_pairs} in {llama} at L = {llama_L}."),
         N_("Which base makes the toy meet unseen angles past L the way {llama} does?"),
         (N_("The same base, {llama_base}"), N_("A much smaller base"), N_("A much larger base")), 1,
         N_("A smaller base speeds every pair up. At b = {base}, {turning} of {pairs} pairs turn within L and "
            "{unseen:.0%} of the angles at {scale}·L are unseen, close to {llama}'s {llama_turning} of "
            "{llama_pairs} and {llama_unseen:.0%}; with base {llama_base} it would be {usual_unseen:.0%}. So the "
            "toy fails past L for the reason real models do, and its runs test the scaling methods fairly."),
         _toy, (("su_beta_base", ""),)),
    Step("trap", N_("Good accuracy can hide a lost needle"), "training", "trap", {},
         N_("Next-character accuracy asks the model about the characters just before each one. A passkey planted "
            "early in a long context and asked for at its end asks it to fetch something far away. The figure "
            "places every method at {scale}× L by both scores, mean over {seeds} seeds."),
         N_("Which method keeps its accuracy but loses the needle?"),
         (N_("{best}, the most accurate at {scale}× L"), N_("Every method: none finds the needle, even at L"),
          N_("{drope}")), 1,
         N_("{best} still predicts {accuracy:.1%} of characters at {scale}× L ({at_train:.1%} at L), yet no method "
            "retrieves the passkey: the best finds it in {best_short:.0%} of the probes at L and {best_long:.0%} at "
            "{scale}× L. The model never learned to copy, and its accuracy could not tell: only the retrieval test "
            "does."),
         _trap, (("drope", ""),)),
)


# ---- reading the tour --------------------------------------------------------------------------------


def available_steps() -> tuple[Step, ...]:
    """The steps whose lesson is installed, in order (a lesson that lands later joins with no edit)."""
    lessons = all_lessons()
    return tuple(step for step in STEPS if step.lesson in lessons)


def missing_steps() -> tuple[Step, ...]:
    lessons = all_lessons()
    return tuple(step for step in STEPS if step.lesson not in lessons)


def lesson_of(step: Step) -> Lesson:
    return all_lessons()[step.lesson]


def step_settings(step: Step) -> LessonSettings:
    """The lesson's settings the step sets (validated by the lesson's own ``Settings``)."""
    return lesson_of(step).settings.from_mapping(step.settings)


def step_numbers(step: Step) -> dict[str, Any]:
    """The numbers the step's texts state, computed from the lesson's result at the step's settings."""
    if step.numbers is None:
        return {}
    lesson = lesson_of(step)
    return dict(step.numbers(lesson.result(step_settings(step), lesson.figure_spec(step.figure).groups)))


def step_text(step: Step) -> StepText:
    """The step's texts in the current language, numbers filled in."""
    numbers = step_numbers(step)
    choices = tuple(_(choice).format(**numbers) for choice in step.choices)
    return StepText(_(step.title), _(step.text).format(**numbers), _(step.question).format(**numbers), choices,
                    choices[step.answer], _(step.why).format(**numbers))


def step_figure(step: Step, style: FigureStyle = SCREEN):
    """The step's figure at its settings (shared and cached by the lesson: do not change it)."""
    return lesson_of(step).figure(step.figure, step_settings(step), style)


def step_page_figure(step: Step, *, narrow: bool = False):
    """The step's figure as a page draws it (``Lesson.page_figure``), cached by its lesson."""
    return lesson_of(step).page_figure(step.figure, step_settings(step), narrow=narrow)


def step_caption(step: Step) -> str | None:
    return lesson_of(step).caption(step.figure, step_settings(step))


def _check(steps: tuple[Step, ...]) -> None:
    """Fail at import on a step that names a setting, value, figure, answer or source that does not exist."""
    from references import reference

    slugs = [step.slug for step in steps]
    if len(slugs) != len(set(slugs)):
        raise ValueError(f"two tour steps share a slug: {slugs}")
    for step in steps:
        if not 2 <= len(step.choices) <= 4 or not 0 <= step.answer < len(step.choices):
            raise ValueError(f"tour step {step.slug!r}: 2 to 4 choices and an answer among them")
        for key, _where in step.sources:
            reference(key)
        if step.lesson in all_lessons():
            step_settings(step)
            lesson_of(step).figure_spec(step.figure)


_check(STEPS)
