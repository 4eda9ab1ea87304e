"""Every symbol the app shows: its name, its formula, what it means, and the lessons that use it.

The Glossary page lists these; each lesson page links the symbols it uses to their entries.
"""

from __future__ import annotations

from typing import NamedTuple

from i18n import N_, Latex


class Symbol(NamedTuple):
    anchor: str  # URL fragment on the Glossary page (ASCII)
    symbol: str  # as the app writes it
    name: str  # N_()-marked
    formula: str  # LaTeX (a ``Latex`` where it has words, typeset in the reader's language)
    meaning: str  # N_()-marked: one or two sentences
    lessons: tuple[str, ...]  # lesson names that use the symbol


SYMBOLS: tuple[Symbol, ...] = (
    Symbol("d", "d", N_("head dimension"), Latex(r"d = \text{rotary dims of one attention head}",
                                                  N_("rotary dims of one attention head")),
           N_("The number of query/key coordinates RoPE rotates; they form d/2 pairs. With partial rotary "
              "embedding only part of the head is rotated."),
           ("frequencies", "decay", "beta_base", "precision", "check", "plan", "compare", "rope_code", "hybrid",
            "mrope")),
    Symbol("i", "i", N_("pair index"), r"i = 0, 1, \dots, d/2 - 1",
           N_("Which pair of coordinates: i = 0 turns fastest, i = d/2 − 1 slowest."),
           ("frequencies", "decay", "beta_base", "check", "compare", "rope_code", "hybrid", "mrope")),
    Symbol("b", "b", N_("RoPE base"), r"b = 10\,000 \text{ (RoFormer)},\ 500\,000 \text{ (Llama 3)},\ \dots",
           N_("The number whose powers set the frequencies; a larger base gives slower pairs and longer "
              "wavelengths."), ("frequencies", "decay", "beta_base", "precision", "plan", "compare", "hybrid",
                                 "mrope")),
    Symbol("theta", "θᵢ", N_("frequency of pair i"), r"\theta_i = b^{-2i/d}",
           N_("How many radians pair i turns per token; θ′ᵢ is the frequency after a context-extension method."),
           ("frequencies", "decay", "beta_base", "precision", "check", "plan", "compare", "rope_code", "hybrid",
            "mrope")),
    Symbol("m", "m, n", N_("positions of the query and the key"), Latex(r"q\ \text{at}\ m,\quad k\ \text{at}\ n", N_("at")),
           N_("Absolute positions; RoPE rotates the query by m·θᵢ and the key by n·θᵢ, so their score depends "
              "on m − n only."), ("frequencies", "decay", "precision", "rope_code", "lineage", "hybrid")),
    Symbol("r_distance", "r = m − n", N_("relative distance"), r"r = m - n",
           N_("On the long-range decay page, r is how far the key is behind the query."), ("decay",)),
    Symbol("L", "L", N_("training length"), r"L = \text{original\_max\_position\_embeddings}",
           N_("The longest sequence the model was trained on: every angle it knows comes from positions below L."),
           ("frequencies", "decay", "beta_base", "precision", "training", "plan", "family")),
    Symbol("L_prime", "L′", N_("target length"), r"L' = s\,L",
           N_("The length the model is run at after a context extension."),
           ("frequencies", "decay", "beta_base", "precision", "training", "plan", "hybrid")),
    Symbol("s", "s", N_("scale factor"), r"s = L'/L",
           N_("How many times longer than training the model runs; transformers calls it factor."),
           ("frequencies", "decay", "beta_base", "training", "plan", "compare")),
    Symbol("lambda", "λᵢ", N_("wavelength of pair i"), r"\lambda_i = \frac{2\pi}{\theta_i} = 2\pi\, b^{2i/d}",
           N_("Tokens it takes pair i to turn once; λₘₐₓ is the slowest pair's."),
           ("frequencies", "decay", "beta_base", "compare", "hybrid", "mrope")),
    Symbol("r_rotations", "r", N_("turns in training (YaRN)"), r"r_i = \frac{L}{\lambda_i}",
           N_("How many full turns pair i makes within the training length; NTK-by-parts and YaRN decide per "
              "pair from it."), ("frequencies",)),
    Symbol("alpha_beta", "α, β", N_("YaRN's thresholds"), r"\alpha = \text{beta\_slow} = 1,\quad "
                                                          r"\beta = \text{beta\_fast} = 32",
           N_("Pairs turning more than β times in training keep θᵢ; fewer than α times are interpolated to θᵢ/s; "
              "those between are blended. Not the β of the β-base page: the guided lesson names these two by their "
              "values (1 and 32 turns) and keeps β for the base."), ("frequencies", "plan", "check")),
    Symbol("gamma", "γ(r)", N_("NTK-by-parts ramp"), r"\gamma(r) = \operatorname{clamp}\!\left("
                                                     r"\frac{r-\alpha}{\beta-\alpha}, 0, 1\right)",
           N_("The share of θᵢ a pair keeps: 1 extrapolates, 0 interpolates."), ("frequencies",)),
    Symbol("beta_base", "β (β-base)", N_("RoPE's number base"), r"\beta = b^{2/d}",
           N_("Read as a number system, RoPE writes a position as digits in base β; each pair is one digit."),
           ("beta_base",)),
    Symbol("P", "P", N_("places seen in training (β-base)"), r"P = d/2",
           N_("On the β-base page: how many digits a position has in training; for RoPE, P = d/2 pairs."),
           ("beta_base",)),
    Symbol("lambda_conversion", "λ (β-base)", N_("base conversion factor"), r"\lambda = s^{1/P}",
           N_("On the β-base page only, and not a wavelength: base conversion writes positions in base λβ, so that "
              "P places count s times as far. The guided lesson writes it out as β·s^(1/P) instead."),
           ("beta_base",)),
    Symbol("attention_factor", "√(1/t)", N_("YaRN's attention temperature"),
           r"\sqrt{1/t} = 0.1\,\ln s + 1",
           N_("YaRN multiplies queries and keys by √(1/t), so logits grow by 1/t, to keep attention as sharp at L′ "
              "as at L."), ("frequencies", "family", "plan", "check")),
)

BY_ANCHOR = {symbol.anchor: symbol for symbol in SYMBOLS}


def symbols_of(lesson: str) -> tuple[Symbol, ...]:
    """The symbols a lesson uses, in glossary order."""
    return tuple(symbol for symbol in SYMBOLS if lesson in symbol.lessons)
