"""RoPE as a β-base number: positions as digits; extrapolate, interpolate, or change the base."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st
import torch

import ui
from figures.beta_base import (
    bound_factors,
    digits_against_n_figure,
    pair_turns_figure,
    phase_dials_figure,
    stretch_bound_figure,
    units_digit_zoom_figure,
    zoom_numbers,
)
from pe_core import MethodSetup, RopeSpec, default_inv_freq, wavelengths
from pe_core.beta_base import (
    STRATEGIES,
    STRATEGY_TITLES,
    compose,
    conversion_stretch,
    dial_pairs,
    digit_views,
    formula16_digits,
    greedy_digits,
    log_range,
    log_stretch_bound,
    minimal_conversion_base,
    ntk_stretch,
    outside_seen_arc,
    pair_phases,
    pair_turns,
    rope_beta,
    sample_numbers,
    seen_phase_limit,
    verify_with_sympy,
)
from ui.controls import rope_controls

FACTORS = (1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0, 1e4, 1e5, 1e6)
POSITION_MULTIPLES = (0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
MAX_FACTORS = (16.0, 256.0, 4096.0, 65536.0, 1e6, 1e9, 1e12)
BOUND_SUBJECTS = ("rope", "plain")
MAX_PLACES_SLIDER = 32


def _factor_text(value: float) -> str:
    return f"{value:g}×" if value < 1e4 else f"{value:.0e}×".replace("e+0", "e").replace("e+", "e")


def _number_text(value: float) -> str:
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return f"{round(value):,}"
    if abs(value) >= 1e15:
        return f"{value:.6g}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


# --- cached computation (keyed by plain values) ----------------------------------------------------


@st.cache_data(max_entries=32, show_spinner=False)
def _digit_curves(beta: float, places: int, factor: float, whole: bool):
    numbers = sample_numbers(log_range(beta, places) + math.log(factor))
    return numbers, digit_views(numbers, beta, places, factor, whole_base=whole)


@st.cache_data(max_entries=64, show_spinner=False)
def _digits_near(number: int, beta: float, places: int, factor: float, whole: bool):
    views = digit_views([number], beta, places, factor, whole_base=whole)
    zoom = zoom_numbers(number, views.new_base)
    return views, zoom, digit_views(zoom, beta, places, factor, whole_base=whole)


@st.cache_data(max_entries=32, show_spinner=False)
def _rope_digits(setups: tuple[MethodSetup, ...], rotary_dim: int, base: float, train_length: int, position: int):
    inv_freqs = torch.stack([s.frequencies().inv_freq for s in setups])
    train_inv_freq = default_inv_freq(base, rotary_dim)
    shown = dial_pairs(rotary_dim // 2)
    phases = pair_phases(inv_freqs[:, shown], position)
    return {
        "shown": shown,
        "phases": phases,
        "seen": seen_phase_limit(train_inv_freq[shown], train_length),
        "unseen": outside_seen_arc(phases, train_inv_freq[shown], train_length),
        "wavelengths": wavelengths(train_inv_freq[shown]),
        "turns": pair_turns(inv_freqs, position),
        "training_turns": pair_turns(train_inv_freq, train_length - 1),
    }


@st.cache_data(max_entries=32, show_spinner=False)
def _bound_curves(max_factor: float, beta: float, places: int):
    factors = bound_factors(max_factor)
    ntk = torch.log(ntk_stretch(factors, places)) if places >= 2 else None
    return factors, log_stretch_bound(factors, beta, places), torch.log(conversion_stretch(factors, places)), ntk


# Figures are cached as objects (cache_resource hands back the same object, no copy per rerun): building
# them is most of a rerun's cost, and nothing downstream changes them (ui.show_figure's styles make copies).
@st.cache_resource(max_entries=16, show_spinner=False)
def _digit_figures(beta: float, places: int, factor: float, whole: bool, number: int):
    numbers, curves = _digit_curves(beta, places, factor, whole)
    _, zoom, zoom_views = _digits_near(number, beta, places, factor, whole)
    return digits_against_n_figure(numbers, curves, float(number)), units_digit_zoom_figure(zoom, zoom_views)


@st.cache_resource(max_entries=16, show_spinner=False)
def _rope_figures(setups: tuple[MethodSetup, ...], rotary_dim: int, base: float, train_length: int, position: int):
    rope = _rope_digits(setups, rotary_dim, base, train_length, position)
    titles = [s.title for s in setups]
    dials = phase_dials_figure(titles, rope["shown"], rope["phases"], rope["seen"], rope["unseen"], position,
                               rope["wavelengths"])
    turns = pair_turns_figure(titles, rope["turns"], rope["training_turns"], position, train_length)
    return dials, turns, len(rope["shown"])


@st.cache_resource(max_entries=16, show_spinner=False)
def _bound_figure(max_factor: float, beta: float, places: int, label: str, marked: float | None):
    factors, log_bound, log_conversion, log_ntk = _bound_curves(max_factor, beta, places)
    return stretch_bound_figure(factors, log_bound, log_conversion, log_ntk, label, marked)


@st.cache_data(max_entries=1, show_spinner=False)
def _sympy_checks() -> dict[str, bool]:
    return verify_with_sympy()


def _digit_table(views) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows: strategies; columns: places from the top one down to the units, then the base and the value.

    Returns the text shown (blank where a strategy has fewer places) and a same-shaped mask of the digits no
    training number had (a non-zero new place, or a digit ≥ β).
    """
    width = max(views.direct.shape[1], views.places)
    places = range(width - 1, -1, -1)
    columns = [f"place {j}" for j in places] + ["base", "Σ digit·base^place"]
    text, unseen = {}, {}
    for strategy in STRATEGIES:
        digits = views.table(strategy)[0].tolist()
        base = views.base_of(strategy)
        value = float(compose(views.table(strategy), base)[0])
        text[STRATEGY_TITLES[strategy]] = [_number_text(digits[j]) if j < len(digits) else "" for j in places] + [
            _number_text(base), _number_text(value)]
        unseen[STRATEGY_TITLES[strategy]] = [
            j < len(digits) and (digits[j] >= views.beta or (j >= views.places and digits[j] > 0)) for j in places
        ] + [False, False]
    return (pd.DataFrame.from_dict(text, orient="index", columns=columns),
            pd.DataFrame.from_dict(unseen, orient="index", columns=columns))


def _shade(unseen: pd.DataFrame) -> pd.DataFrame:
    return unseen.map(lambda flag: "background-color: rgba(213, 94, 0, 0.25)" if flag else "")


# --- the page --------------------------------------------------------------------------------------

st.title("RoPE as a β-base number")
st.markdown(
    "Su Jianlin's reading of RoPE: the angles n·θ_i are the **digits of the position n written in base "
    "β = b^(2/d)**. Seen that way, the three ways to run a model past its training length are the three ways "
    "to make a fixed number of digits count further: add a digit, divide the number, or change the base."
)

# --- 1. plain numbers --------------------------------------------------------------------------------

st.header("1 · A plain number in base β")
st.markdown(
    "A model trained on numbers below β^P written with P digits must now take numbers k times larger. "
    "**Direct extrapolation** writes them with more places: the new top place was 0 throughout training. "
    "**Linear interpolation** writes n/k: nothing new on top, but the units digit is now a fraction that moves "
    "by 1/k per step, so neighbours crowd together. **Base conversion** keeps P places and enlarges the base "
    "to λβ with λ = k^(1/P): every digit runs a little higher than before, and neighbours still differ by 1."
)
columns = st.columns([1, 1, 1, 1.3])
with columns[0]:
    beta = ui.params.number_input("Base β (any real > 1)", "beta", 1.001, 1000.0, 10.0, step=0.5, format="%.4g")
with columns[1]:
    places = ui.params.slider("Places P seen in training", "P", 1, MAX_PLACES_SLIDER, 3)
with columns[2]:
    factor = ui.params.select_slider("Extension k", "k", FACTORS, 2.0, format_func=_factor_text)
with columns[3]:
    # A float widget on purpose: Streamlit's int number_input crashes on a URL value of inf (OverflowError).
    number = int(round(ui.params.number_input("The number n", "n", 0.0, 1e12, 1749.0, step=1.0, format="%.0f")))
whole = ui.params.checkbox("Round the converted base up to a whole number (the notes' base-13 example)", "whole")

plain = None
with ui.user_errors("These digit settings"):
    views, _, _ = _digits_near(int(number), float(beta), int(places), float(factor), bool(whole))
    digits_figure, zoom_figure = _digit_figures(float(beta), int(places), float(factor), bool(whole), int(number))
    plain = views

if plain is not None:
    log_trained, log_extended = log_range(beta, places), log_range(beta, places) + math.log(factor)
    st.caption(
        f"Training covers n < β^P = {_number_text(math.exp(log_trained)) if log_trained < 34 else f'e^{log_trained:.1f}'}; "
        f"k times that is {_number_text(math.exp(log_extended)) if log_extended < 34 else f'e^{log_extended:.1f}'}. "
        f"Converted base λβ = {_number_text(views.new_base)}."
    )
    if math.log1p(number) > log_extended + 1e-12:
        st.warning(f"n = {number:,} is beyond k·β^P, so even the converted base overflows its top place.", icon="📏")
    if views.direct_places_needed > views.direct.shape[1]:
        st.info(
            f"Direct extrapolation needs {views.direct_places_needed:,} places in base {_number_text(beta)}; the "
            f"table shows {views.direct.shape[1]} and its top column holds everything above.", icon="✂️",
        )
    table, unseen = _digit_table(views)
    st.dataframe(table.style.apply(lambda _: _shade(unseen), axis=None), width="stretch")
    st.caption("Shaded: a digit no number in training had (a non-zero new place, or a digit ≥ β).")

    ui.show_figure(digits_figure, "beta_digits")
    ui.show_figure(zoom_figure, "beta_zoom")

st.markdown("What a digit means here, for any real base β > 1 (β^j is the weight of place j):")
st.latex(r"n=\sum_{j=0}^{P-1} d_j\,\beta^{j},\qquad d_{j}=\Big\lfloor \tfrac{r_{j}}{\beta^{j}}\Big\rfloor\ (j\ge 1),"
         r"\quad d_0=r_0,\qquad r_{P-1}=n,\ \ r_{j-1}=r_j-d_j\beta^{j}")
st.markdown(
    "The top place takes as many whole β^(P−1) as fit, the next place as many β^(P−2) as fit in what is left, and "
    "the units place keeps the rest - a fraction when β or n is not whole. For a whole-number base this is the "
    "familiar ⌊n/β^j⌋ mod β; for other bases that shortcut no longer adds up to n (see the note at the end)."
)

# --- 2. RoPE -------------------------------------------------------------------------------------------

st.header("2 · RoPE's pairs are the digits of the position")
with st.sidebar:
    st.subheader("RoPE set-up (sections 2 and 3)")
    controls = rope_controls(default_methods=("direct", "pi", "ntk"))
    with_conversion = ui.params.checkbox("Add exact β-base conversion (b → b·s)", "conv", value=True)
    multiple = ui.params.select_slider("Position n, in training lengths L", "pos", POSITION_MULTIPLES, 4.0,
                                       format_func=lambda v: f"{v:g} L")

rotary_dim, base, train_length = controls.head_dim, controls.base, controls.train_length
scale = max(1.0, controls.scale)
position = max(1, int(round(multiple * train_length)) - 1)
setups = list(controls.setups)
if with_conversion:
    setups.append(MethodSetup(
        "beta_conversion", "β-base conversion (b·s)",
        RopeSpec(head_dim=rotary_dim, base=base * scale, original_max_position_embeddings=train_length),
        controls.target_length,
    ))
st.markdown(
    f"Pair i turns by n·θ_i = n/β^i radians with β = b^(2/d) = {rope_beta(base, rotary_dim):.5f} "
    f"(d = {rotary_dim}, b = {base:,.0f}): pair 0 is the units digit, turning a full radian per position; pair "
    f"{rotary_dim // 2 - 1} is the top digit, turning {_number_text(rope_beta(base, rotary_dim))}^{rotary_dim // 2 - 1} "
    f"times slower. Below: every pair's hand at position **n = {position:,}** "
    f"({_number_text(multiple)} × L, with L = {train_length:,} and L' = {controls.target_length:,}). "
    "The green arc is what the hand swept in training; fast pairs swept the whole dial, slow ones only a sliver. "
    "Direct extrapolation pushes the slow hands off their arcs (a new top digit); interpolation keeps every hand on "
    "its arc but slows the fast ones (crowding); NTK-aware and base conversion keep the fast hands as they were and "
    "pull the slowest ones back - with some middle pairs still past their arcs, which is what NTK-by-parts fixes."
)
if not setups:
    st.info("Choose at least one method in the sidebar to see its dials.")
else:
    dials, turns, dial_count = _rope_figures(tuple(setups), rotary_dim, base, train_length, position)
    ui.show_figure(dials, "beta_dials", caption=f"{dial_count} of {rotary_dim // 2} pairs, evenly spread. A hand less "
                   "than one step θ_i past its arc sits between trained positions and is not ringed.")
    ui.show_figure(turns, "beta_turns")
st.latex(r"\theta_i=b^{-2i/d}=\beta^{-i},\quad \beta=b^{2/d}\qquad\Longrightarrow\qquad "
         r"n\,\theta_i \bmod 2\pi=\frac{n}{\beta^{i}} \bmod 2\pi")
st.latex(r"\text{compare the digit of a whole-number base: }\ d_i=\Big\lfloor\frac{n}{\beta^{i}}\Big\rfloor \bmod \beta")

# --- 3. the bound --------------------------------------------------------------------------------------

st.header("3 · How much must the base grow?")
st.markdown(
    "With P digits in base β the largest number is β^P − 1. To reach k times as far with the same P digits, "
    "the new base λβ needs"
)
st.latex(r"(\lambda\beta)^{P}-1\;\ge\;k\,(\beta^{P}-1)\quad\Longleftrightarrow\quad"
         r"\lambda\;\ge\;\lambda_{\min}=\Big(k-\frac{k-1}{\beta^{P}}\Big)^{1/P}")
st.markdown(
    "For RoPE, P = d/2 and β^P = b, so λ_min = (k − (k−1)/b)^(2/d) and the smallest new base is exactly "
    "b·λ_min^(d/2) = k(b − 1) + 1. The simple choice λ = k^(2/d) (new base b·k) always meets the bound. "
    "NTK-aware scaling uses λ = k^(2/(d−2)) (new base b·k^(d/(d−2))): it asks the **slowest pair's period** "
    "2π·β^(d/2−1), not β^(d/2), to grow k-fold - the same base conversion with RoPE's range counted by its top "
    "digit's period, because RoPE's digits wrap at 2π rather than at β. For large d the two exponents differ by a "
    "factor (d−2)/d, so the bases are nearly equal."
)
st.latex(r"\underbrace{(\lambda\beta)^{d/2-1}=k\,\beta^{d/2-1}}_{\text{slowest pair matches interpolation}}"
         r"\;\Rightarrow\;\lambda=k^{2/(d-2)},\quad b'=b\,\lambda^{d/2}=b\,k^{d/(d-2)}")
bound_columns = st.columns(2)
with bound_columns[0]:
    subject = ui.params.radio(
        "Bound for", "bfor", BOUND_SUBJECTS, horizontal=True,
        format_func={"rope": "RoPE", "plain": "plain number"}.get,
        help="RoPE: P = d/2 pairs and β = b^(2/d) from the sidebar. Plain number: β and P of section 1.",
    )
with bound_columns[1]:
    max_factor = ui.params.select_slider("Largest k plotted", "kmax", MAX_FACTORS, 1e6, format_func=_factor_text)

if subject == "rope":
    bound_beta, bound_places, marked = rope_beta(base, rotary_dim), rotary_dim // 2, scale
    label = f"RoPE: d = {rotary_dim}, b = {base:,.0f}, P = {rotary_dim // 2}"
else:
    bound_beta, bound_places, marked = float(beta), int(places), float(factor)
    label = f"plain number: β = {_number_text(beta)}, P = {places}"
with ui.user_errors("These bound settings"):
    ui.show_figure(_bound_figure(float(max_factor), bound_beta, bound_places, label,
                                 marked if marked <= max_factor else None), "beta_bound")
    at_marked = torch.tensor([marked], dtype=torch.float64)
    bound_value = float(torch.exp(log_stretch_bound(at_marked, bound_beta, bound_places))[0])
    conversion_value = float(conversion_stretch(at_marked, bound_places)[0])
    metrics = st.columns(3)
    metrics[0].metric(f"λ_min at k = {marked:g}", f"{bound_value:.6f}")
    metrics[1].metric("base conversion k^(1/P)", f"{conversion_value:.6f}")
    if bound_places >= 2:
        metrics[2].metric("NTK-aware k^(1/(P−1))", f"{float(ntk_stretch(at_marked, bound_places)[0]):.6f}")
    if subject == "rope":
        st.caption(
            f"New RoPE bases at s = {scale:g}: smallest s(b−1)+1 = {_number_text(minimal_conversion_base(base, scale))}"
            f" · β-conversion b·s = {_number_text(base * scale)} · NTK-aware b·s^(d/(d−2)) = "
            f"{_number_text(base * scale ** (rotary_dim / (rotary_dim - 2)))}"
        )

st.subheader("Why base conversion works without fine-tuning")
st.markdown(
    "A model that uses positions mostly to compare them has learnt rules like 875 > 874 digit by digit. "
    "Base conversion keeps those rules: no place is new, neighbours still differ by one in the units place, and "
    "each digit only runs a little past the values it was trained on (by the factor λ = k^(1/P), about 1.03 for "
    "RoPE with d = 128 and k = 8) - a small extrapolation spread over every digit instead of a large one in the "
    "top digit (direct) or a squeeze of the units digit (interpolation). That is why NTK-aware RoPE extends context "
    "reasonably without training, while interpolation needs fine-tuning to get used to its crowded fast pairs."
)

checks = _sympy_checks()
if all(checks.values()):
    st.success(f"All {len(checks)} formulas on this page verified by sympy: " + "; ".join(checks), icon="✅")
else:
    st.error("sympy could not verify: " + "; ".join(k for k, ok in checks.items() if not ok), icon="❌")

with st.expander("Notes on the source write-ups"):
    example = formula16_digits([1749], 10 * 2 ** (1 / 3), 3)[0].flip(0)
    greedy = greedy_digits([1749], 10 * 2 ** (1 / 3), 3)[0].flip(0)
    stands_for = float(compose(formula16_digits([1749], 10 * 2 ** (1 / 3), 3), 10 * 2 ** (1 / 3))[0])
    st.markdown(
        "- The popular write-ups define the m-th digit as ⌊n/β^(m−1)⌋ mod β. That is right for whole-number bases, "
        "but the base conversion it motivates is to a base like β·k^(1/P), which is rarely whole. There the "
        f"formula's digits of 1749 in base 10·2^(1/3) ≈ 12.599 are [{', '.join(f'{v:.3g}' for v in example)}], "
        f"which stand for {stands_for:,.2f}, not 1749; the greedy expansion used here gives "
        f"[{', '.join(f'{v:.3g}' for v in greedy)}], which adds back up to 1749.\n"
        "- RoPE's 'digits' are not floored and wrap at 2π, not at β. The analogy is the common n/β^i; it is also "
        "why NTK's exponent is d/(d−2) rather than the d the digit count suggests (section 3).\n"
        "- One derivation says the highest-frequency term n/β is only approximately kept by NTK. The fastest pair is "
        "n/β^0 = n and is kept exactly (λ^0 = 1); n/β is the second fastest.\n"
        "- The worked examples check out: 1749 = [6, 13, 5] in base 16, 16³ − 1 = 4095 ≥ 1999, and "
        "⌈2000^(1/3)⌉ = 13. The bound λ ≥ (k − (k−1)/β^(d/2))^(2/d) is right (sympy above); λ = k^(2/d), "
        "i.e. base b·k, is a sufficient choice."
    )
