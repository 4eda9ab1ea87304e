"""RoPE read as a number written in base β (Su 2023, "RoPE is a β-base encoding", kexue.fm/archives/9675).

Plain numbers. A whole number n < β^P written with P places in an integer base β has digits
d_j = ⌊n / β^j⌋ mod β (place j has weight β^j; j = 0 is the units place). For a real base
β > 1 that shortcut no longer gives digits that add back up to n, so this module uses the
greedy (Rényi) expansion, which agrees with it for every integer base:

    from the top place down, d_j = the largest whole number with d_j·β^j ≤ what is left,
    and the units place keeps the remainder (a fraction when β or n is not whole),

so that n = Σ_j d_j·β^j exactly, every digit lies in [0, β), and every digit above the units
place is a whole number. A number ≥ β^P does not fit in P places; the top place then absorbs
the excess (its digit is ≥ β), which is how an unseen digit shows up.

RoPE. Pair i turns by n·θ_i = n / β^i with β = b^(2/d): the phase n·θ_i mod 2π plays the role
of digit i. Three ways to reach s times the range: keep θ (direct extrapolation: the slow pairs
reach phases never seen), divide n by s (Position Interpolation: the fast pairs get crowded), or
convert the base (β → λβ: each pair stretched a little). Everything is float64 and worked out in
logarithms where it could overflow.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.rope import positions_tensor

MAX_PLACES = 64
# β^MAX_PLACES must stay far from float64's limit (1.8e308) so place weights are finite.
MAX_LOG_RANGE = 600.0
MAX_NUMBER = 2.0**53  # float64 holds every whole number below this exactly

STRATEGIES = ("direct", "interpolate", "convert")

_EPS = torch.finfo(torch.float64).eps
_FLOOR_SLACK = 8 * _EPS  # a quotient a few ulps below a whole number counts as it


def _require(condition: bool, message: str, **values) -> None:
    """Raise ``ValueError`` with ``message`` (an N_()-marked sentence) translated and filled in, unless ``condition``."""
    if not condition:
        raise ValueError(_(message).format(**values) if values else _(message))


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_beta(beta) -> float:
    _require(_is_real(beta) and beta > 1, N_("the base β must be a real number > 1 (got {beta!r})."), beta=beta)
    return float(beta)


def check_places(places, limit: int | None = MAX_PLACES) -> int:
    """Digit arrays stop at ``MAX_PLACES``; formulas that only use P as a number take ``limit=None``."""
    is_count = isinstance(places, int) and not isinstance(places, bool) and places >= 1
    if limit is None:
        _require(is_count, N_("the number of places must be a whole number ≥ 1 (got {places!r})."), places=places)
    else:
        _require(is_count and places <= limit,
                 N_("the number of places must be a whole number from 1 to {limit} (got {places!r})."), limit=limit, places=places)
    return places


def check_factor(factor) -> float:
    _require(
        _is_real(factor) and factor >= 1,
        N_("the scale s must be a number ≥ 1 (got {factor!r}); it multiplies the range."), factor=factor,
    )
    return float(factor)


def _check_fits(beta: float, places: int) -> None:
    _require(
        places * math.log(beta) <= MAX_LOG_RANGE,
        N_("β^places = {beta:g}^{places} is too large to compute with (more than "
           "e^{max_log_range:g}); use a smaller base or fewer places."), beta=beta, places=places, max_log_range=MAX_LOG_RANGE,
    )


# --- plain numbers -------------------------------------------------------------------------


def log_range(beta: float, places: int) -> float:
    """ln(β^P): the log of how many numbers P places can write (kept in logs so it never overflows)."""
    return check_places(places, limit=None) * math.log(check_beta(beta))


def places_needed(log_count: float, beta: float) -> int:
    """Smallest P with β^P ≥ e^log_count, i.e. the places needed to write every number below e^log_count.

    Takes the log of the count so that β close to 1 or a huge s cannot overflow; the answer can be
    far above ``MAX_PLACES`` (it is a count, not an array size).
    """
    beta = check_beta(beta)
    _require(_is_real(log_count) and log_count >= 0, N_("the count must be ≥ 1 (got e^{log_count!r})."), log_count=log_count)
    exact = log_count / math.log(beta)
    # log(β^P)/log(β) can land a rounding error above P; that must not cost a place.
    return max(1, math.ceil(exact - 1e-9 - 8 * _EPS * exact))


def _numbers(numbers) -> torch.Tensor:
    values = positions_tensor(numbers).reshape(-1)
    _require(bool(torch.isfinite(values).all()) and bool((values >= 0).all()),
             N_("digits are defined here for finite numbers ≥ 0."))
    return values


def greedy_digits(numbers, beta: float, places: int) -> torch.Tensor:
    """Digits of each number in base β: a float64 [len(numbers), places] tensor, column j = place j.

    Greedy (Rényi) expansion: Σ_j d_j·β^j equals the number; digits above the units place are whole
    numbers in [0, β); the units digit keeps the remainder (fractional for a non-integer β or
    number). A number ≥ β^places overflows into the top place (its digit is then ≥ β).
    """
    beta, places = check_beta(beta), check_places(places)
    _check_fits(beta, places)
    values = _numbers(numbers)
    weights = beta ** torch.arange(places, dtype=torch.float64)
    digits = torch.empty(values.numel(), places, dtype=torch.float64)
    remainder = values.clone()
    # Sequential by nature: each digit depends on what the higher places left over (≤ 64 steps,
    # each one vectorised over all the numbers).
    for place in range(places - 1, 0, -1):
        digit = torch.floor(remainder / weights[place] * (1 + _FLOOR_SLACK))
        digits[:, place] = digit
        remainder = (remainder - digit * weights[place]).clamp_min(0.0)
    digits[:, 0] = remainder
    return digits


def floor_mod_digits(numbers, beta: float, places: int) -> torch.Tensor:
    """⌊n/β^j⌋ mod β for every place j: the usual digits when β is a whole number.

    For a non-integer β these values lie in [0, β) but generally do not add back up to n (for
    example n = 1749, β = 12.6: [11, 12, 10.2] stands for 1907.76), which is why the lesson uses
    ``greedy_digits``.
    """
    beta, places = check_beta(beta), check_places(places)
    _check_fits(beta, places)
    values = _numbers(numbers)
    weights = beta ** torch.arange(places, dtype=torch.float64)
    quotients = torch.floor(values[:, None] / weights[None, :] * (1 + _FLOOR_SLACK))
    return torch.remainder(quotients, beta)


def compose(digits: torch.Tensor, beta: float) -> torch.Tensor:
    """Σ_j d_j·β^j for each row: the number a row of digits stands for."""
    weights = check_beta(beta) ** torch.arange(digits.shape[-1], dtype=torch.float64)
    return digits.to(torch.float64) @ weights


def converted_base(beta: float, places: int, factor: float, *, whole: bool = False) -> float:
    """β·s^(1/P): the base whose P places cover s times the range (β^P → s·β^P).

    With ``whole`` the base is rounded up to a whole number (2000 numbers in three places need
    base 13), so every digit is an ordinary integer digit.
    """
    beta, places, factor = check_beta(beta), check_places(places, limit=None), check_factor(factor)
    new_base = beta * factor ** (1.0 / places)
    if whole:
        new_base = float(math.ceil(new_base - 1e-9 * new_base))
    return new_base


class DigitViews(NamedTuple):
    """The same numbers under the three strategies (rows = numbers, columns = places, units first)."""

    beta: float
    places: int  # P: the places seen in training
    factor: float  # s
    new_base: float  # the converted base λβ
    direct_places_needed: int  # places the extended range needs in base β (may exceed MAX_PLACES)
    direct: torch.Tensor  # n in base β with min(direct_places_needed, MAX_PLACES) places
    interpolated: torch.Tensor  # n/s in base β with P places
    converted: torch.Tensor  # n in base λβ with P places

    def table(self, strategy: str) -> torch.Tensor:
        return {"direct": self.direct, "interpolate": self.interpolated, "convert": self.converted}[strategy]

    def base_of(self, strategy: str) -> float:
        return self.new_base if strategy == "convert" else self.beta


def digit_views(numbers, beta: float, places: int, factor: float, *, whole_base: bool = False) -> DigitViews:
    """Write each number three ways so that P places reach s·β^P.

    direct: keep base β and add places as needed (the new top places were always 0 in training);
    interpolate: write n/s in base β with P places (the units digit becomes fractional and crowded);
    convert: write n in base λβ, λ = s^(1/P), with P places (every digit a little larger than before).
    """
    beta, places, factor = check_beta(beta), check_places(places), check_factor(factor)
    _check_fits(beta, places)
    values = _numbers(numbers)
    _require(bool((values < MAX_NUMBER).all()), N_("numbers must be below 2^53 ≈ {max_number:.3g} to be exact."), max_number=MAX_NUMBER)
    largest = float(values.max()) if values.numel() else 0.0
    log_extended = log_range(beta, places) + math.log(factor)
    log_needed = max(log_extended, math.log1p(largest))
    needed = places_needed(log_needed, beta)
    direct_places = min(needed, MAX_PLACES)
    while direct_places > 1 and direct_places * math.log(beta) > MAX_LOG_RANGE:
        direct_places -= 1
    new_base = converted_base(beta, places, factor, whole=whole_base)
    _check_fits(new_base, places)
    return DigitViews(
        beta=beta,
        places=places,
        factor=factor,
        new_base=new_base,
        direct_places_needed=needed,
        direct=greedy_digits(values, beta, direct_places),
        interpolated=greedy_digits(values / factor, beta, places),
        converted=greedy_digits(values, new_base, places),
    )


# --- how much the base must grow --------------------------------------------------------------


def log_stretch_bound(factor, beta: float, places: int) -> torch.Tensor:
    """ln λ_min, the smallest λ with (λβ)^P − 1 ≥ s·(β^P − 1):  λ_min = (s − (s−1)/β^P)^(1/P).

    For RoPE, P = d/2 and β^P = b, so λ_min = (s − (s−1)/b)^(2/d). Written as
    ln λ_min = log1p((s−1)·(1 − β^−P)) / P, which is exact for β close to 1 and s up to 1e300.
    """
    beta, places = check_beta(beta), check_places(places, limit=None)
    scale = positions_tensor(factor)
    _require(bool(torch.isfinite(scale).all()) and bool((scale >= 1).all()), N_("every scale s must be a number ≥ 1."))
    unused_fraction = -math.expm1(-places * math.log(beta))  # 1 − β^−P, accurate when β^P ≈ 1
    return torch.log1p((scale - 1) * unused_fraction) / places


def stretch_bound(factor, beta: float, places: int) -> torch.Tensor:
    return torch.exp(log_stretch_bound(factor, beta, places))


def conversion_stretch(factor, places: int) -> torch.Tensor:
    """λ = s^(1/P) (for RoPE, s^(2/d)): the simple choice that always meets the bound."""
    return torch.exp(torch.log(positions_tensor(factor)) / check_places(places, limit=None))


def ntk_stretch(factor, places: int) -> torch.Tensor:
    """λ = s^(1/(P−1)) (for RoPE, s^(2/(d−2))): NTK-aware scaling, b → b·s^(d/(d−2)).

    It is what base conversion gives when the range is counted as the period of the slowest
    digit: RoPE's pair P−1 repeats after 2π·β^(P−1) positions, and asking for s times that
    period gives (λβ)^(P−1) = s·β^(P−1).
    """
    places = check_places(places, limit=None)
    _require(places >= 2, N_("NTK-aware scaling needs at least two pairs (d ≥ 4)."))
    return torch.exp(torch.log(positions_tensor(factor)) / (places - 1))


# --- RoPE ------------------------------------------------------------------------------------


def rope_beta(base: float, rotary_dim: int) -> float:
    """β = b^(2/d): pair i turns at n/β^i radians per position, so pair i is digit i of n in base β."""
    return check_beta(base) ** (2.0 / rotary_dim)



def minimal_conversion_base(base: float, factor: float) -> float:
    """The RoPE base for the smallest λ of the bound: b·(s − (s−1)/b) = s(b − 1) + 1."""
    return check_factor(factor) * (check_beta(base) - 1) + 1


def pair_turns(inv_freq: torch.Tensor, position: float) -> torch.Tensor:
    """n·θ_i / 2π: how many full turns each pair has made at position n (unwrapped)."""
    return float(position) * inv_freq.to(torch.float64) / (2 * math.pi)


def pair_phases(inv_freq: torch.Tensor, position: float) -> torch.Tensor:
    """n·θ_i mod 2π: where each pair's hand points at position n - the 'digit' of the pair."""
    return torch.remainder(float(position) * inv_freq.to(torch.float64), 2 * math.pi)


def seen_phase_limit(train_inv_freq: torch.Tensor, train_length: int) -> torch.Tensor:
    """min((L−1)·θ_i, 2π): the arc of phases pair i swept during training (a full turn = everything)."""
    return ((train_length - 1) * train_inv_freq.to(torch.float64)).clamp(max=2 * math.pi)


def outside_seen_arc(phases: torch.Tensor, train_inv_freq: torch.Tensor, train_length: int) -> torch.Tensor:
    """Whether each hand points where its pair never pointed in training (phases [..., pairs]).

    Training swept pair i's hand over [0, (L−1)·θ_i] (all of the dial once that reaches 2π). A hand
    less than one training step θ_i past the end of its arc sits between two trained positions -
    Position Interpolation's last position (sL−1)/s = L − 1/s is such a case - so it counts as seen.
    """
    theta = train_inv_freq.to(torch.float64)
    reach = train_length * theta
    return (reach < 2 * math.pi) & (phases > reach * (1 + 1e-12))
