"""What the checker and the rotation probe share: float32 tolerance, pairings, how numbers are read, a diagnosis's
name in words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.cli_args import FORMS, LAYOUTS
from pe_core.rope import (
    RopeSpec,
)

EPS32 = torch.finfo(torch.float32).eps
TOLERANCE_ULPS = 8
LAYOUT_NAMES = {"half": N_("half-split"), "interleaved": N_("interleaved")}
LAYOUT_TITLES = {"half": N_("half-split (dimension i with i + d/2, transformers' rotate_half)"),
                 "interleaved": N_("interleaved (dimensions 2i and 2i + 1, Meta's complex form)")}
FORM_TITLES = {"auto": N_("tell by the count"), "pairs": N_("one θᵢ per pair"),
               "dims": N_("one value per rotated dimension")}
LOW_PRECISION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


# ---- tolerance and layouts ----------------------------------------------------------------------


def float32_tolerance(values: torch.Tensor) -> torch.Tensor:
    """Relative tolerance per entry for a float32 computation of these θᵢ: 8·ε₃₂·(1 + |ln θᵢ|)."""
    magnitude = values.to(torch.float64).abs()
    log = torch.where(magnitude > 0, magnitude.clamp_min(1e-300).log().abs(), torch.zeros_like(magnitude))
    return TOLERANCE_ULPS * EPS32 * (1 + log)


def close(given: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Per entry: within float32 tolerance of the reference (two zeros are close)."""
    return (given - reference).abs() <= float32_tolerance(reference) * reference.abs()


def per_dimension(pairs: torch.Tensor, layout: str) -> torch.Tensor:
    """θ per rotated dimension: half-split [θ₀ … θ_{P−1}, θ₀ … θ_{P−1}] or interleaved [θ₀, θ₀, θ₁, θ₁, …]."""
    if layout == "half":
        return torch.cat([pairs, pairs])
    if layout == "interleaved":
        return pairs.repeat_interleave(2)
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r}).")


def other_layout(layout: str) -> str:
    return "interleaved" if layout == "half" else "half"


def pair_of_dimension(dimension: int, pairs: int, layout: str) -> int:
    """The pair rotated dimension ``dimension`` belongs to (of ``pairs`` pairs)."""
    return dimension % pairs if layout == "half" else dimension // 2


def pairs_of_dimensions(width: int, layout: str) -> torch.Tensor:
    """The pair each of the ``width`` rotated dimensions belongs to: ``pair_of_dimension`` for all at once."""
    pairs = torch.arange(width // 2)
    return torch.cat([pairs, pairs]) if layout == "half" else pairs.repeat_interleave(2)


# ---- what the numbers are read as ---------------------------------------------------------------


class Reading(NamedTuple):
    form: str  # "pairs" or "dims"
    full_head: bool  # θ for every pair of the head (partial_rotary_factor ignored) rather than the rotated ones

    def expected(self, spec: RopeSpec, pairs: torch.Tensor, layout: str) -> torch.Tensor:
        values = pairs if self.form == "pairs" else per_dimension(pairs, layout)
        if not self.full_head:
            return values
        total = spec.head_dim // 2 if self.form == "pairs" else spec.head_dim
        return torch.cat([values, values.new_zeros(total - values.numel())])

    def count(self, spec: RopeSpec) -> int:
        rotated = spec.num_pairs if self.form == "pairs" else spec.rotary_dim
        head = spec.head_dim // 2 if self.form == "pairs" else spec.head_dim
        return head if self.full_head else rotated


def accepted_counts(spec: RopeSpec) -> dict[int, list[Reading]]:
    """Count of numbers -> the readings that count allows (in the order they are tried)."""
    readings = [Reading("pairs", False), Reading("dims", False)]
    if spec.rotary_dim < spec.head_dim:
        readings += [Reading("pairs", True), Reading("dims", True)]
    counts: dict[int, list[Reading]] = {}
    for reading in readings:
        counts.setdefault(reading.count(spec), []).append(reading)
    return counts


def readings_for(spec: RopeSpec, count: int, form: str = "auto") -> list[Reading]:
    """How ``count`` numbers can be read for this config; ``ValueError`` naming the counts that work."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)} (got {form!r}).")
    options = [r for r in accepted_counts(spec).get(count, []) if form == "auto" or r.form == form]
    if options:
        return options
    partial = ""
    if spec.rotary_dim < spec.head_dim:
        partial = " " + _("(or {pairs} / {head} for the whole head of {head} dimensions)").format(
            pairs=spec.head_dim // 2, head=spec.head_dim)
    message = {
        "auto": N_("Got {count} numbers, but this RoPE rotates {rotated} of {head} dimensions: give {pairs} θᵢ "
                   "(one per pair) or {rotated} (one per rotated dimension){partial}."),
        "pairs": N_("Got {count} numbers one per pair, but this RoPE rotates {rotated} of {head} dimensions: give "
                    "{pairs} θᵢ (one per pair) or {rotated} (one per rotated dimension){partial}."),
        "dims": N_("Got {count} numbers one per dimension, but this RoPE rotates {rotated} of {head} dimensions: "
                   "give {pairs} θᵢ (one per pair) or {rotated} (one per rotated dimension){partial}."),
    }[form]
    raise ValueError(_(message).format(count=count, rotated=spec.rotary_dim, head=spec.head_dim,
                                       pairs=spec.num_pairs, partial=partial))


# ---- a diagnosis in words -----------------------------------------------------------------------


def diagnosis_title_in(bugs: Mapping, name: str) -> str:
    """A diagnosis's title from its name in a table of bugs (each with a ``title``): the bug's, or both joined for
    two bugs at once ('a+b'), translated."""
    return " + ".join(_(bugs[part].title) for part in name.split("+"))


def diagnosis_references_in(bugs: Mapping, name: str) -> tuple[str, ...]:
    """The public threads of every bug a diagnosis's name names (each bug with ``references``), without repeats."""
    return tuple(dict.fromkeys(key for part in name.split("+") for key in bugs[part].references))
