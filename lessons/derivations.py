"""Derivations (sympy-checked): the page's parts, the two figures it draws, and the verdicts it shows.

The derivations themselves (statement, steps, ``verify()``) live in ``derivations/``, the only
place sympy is used; this lesson computes the figures' numbers with ``pe_core`` and caches each
sympy verdict (``verification``): once per process in memory, and on disk across server starts, under a
digest of the code the verdicts depend on, so a restarted server shows a part without redoing its
symbolic work. The page is split into parts (``PARTS``), one tab each, and only the open part's
claims are verified when it opens (all of them took 13 s on a fresh 2-core server).
``derivations`` is imported only when a verdict is asked for: listing lessons stays free of sympy.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from figures import derivations as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, cached, figure_registry, setting
from lessons.format import base_text, scale_text
from pe_core import RopeSpec, rope_frequencies
from pe_core.angles import BlendComparison, blend_comparison

NTK, BLEND = "ntk", "blend"
HEAD_DIMS = (16, 32, 64, 128, 256)
BASES = (100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0)
SCALES = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
BLEND_SCALES = (2.0, 4.0, 8.0, 16.0, 32.0)


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    head_dim: int = setting(128, N_("Head dim d"), key="nd", group=NTK, options=HEAD_DIMS)
    base: float = setting(10_000.0, N_("Base b"), key="nb", group=NTK, options=BASES, format=base_text)
    scale: float = setting(8.0, N_("Scale s"), key="ns", group=NTK, options=SCALES, format=scale_text)
    blend_scale: float = setting(4.0, N_("Scale s"), key="bs", group=BLEND, options=BLEND_SCALES, format=scale_text)


class FrequencyRatios(NamedTuple):
    pi: torch.Tensor  # θ′ᵢ/θᵢ under Position Interpolation: 1/s for every pair
    ntk: torch.Tensor  # θ′ᵢ/θᵢ under NTK-aware scaling: s^(−2i/(d−2))


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @functools.cached_property
    def ratios(self) -> FrequencyRatios:
        """θ′ᵢ/θᵢ for PI and NTK-aware, from the app's own RoPE code."""
        s = self.settings
        plain = rope_frequencies(RopeSpec(head_dim=s.head_dim, base=s.base)).inv_freq
        pi = rope_frequencies(RopeSpec(head_dim=s.head_dim, base=s.base, rope_type="linear", factor=s.scale)).inv_freq
        ntk = rope_frequencies(RopeSpec(head_dim=s.head_dim, base=s.base, rope_type="ntk", factor=s.scale)).inv_freq
        return FrequencyRatios(pi / plain, ntk / plain)

    @functools.cached_property
    def blend(self) -> BlendComparison:
        return blend_comparison(self.settings.blend_scale)

    @property
    def halfway(self) -> tuple[float, float]:
        """λ′/λ at γ = 1/2: (frequency blend, wavelength blend)."""
        middle = int(torch.argmin((self.blend.gamma - 0.5).abs()))
        return float(self.blend.frequency_blend[middle]), float(self.blend.wavelength_blend[middle])


def compute(settings: Settings) -> Result:
    return Result(settings)


def _ntk_figure(result: Result, style) -> go.Figure:
    s = result.settings
    return draw.frequency_ratio_figure(result.ratios.pi, result.ratios.ntk, s.scale, s.head_dim)


def _ntk_caption(result: Result) -> str:
    ntk, s = result.ratios.ntk, result.settings
    return _("Computed with the app's own RoPE code (pe_core); the circled end points are the values sympy checks: "
             "θ′₀/θ₀ = {first:g} and θ′/θ = {last:.4g} = 1/{scale:g} for the last pair. NTK-aware scaling leaves the "
             "fast pairs alone and interpolates the slowest like PI.").format(
        first=float(ntk[0]), last=float(ntk[-1]), scale=s.scale)


def _blend_figure(result: Result, style) -> go.Figure:
    blend = result.blend
    return draw.blend_figure(blend.gamma, blend.frequency_blend, blend.wavelength_blend, result.settings.blend_scale)


def _blend_caption(result: Result) -> str:
    frequency, wavelength = result.halfway
    return _("The two blends agree at γ = 0 and γ = 1 only; at γ = 1/2 and s = {scale:g} the implemented frequency "
             "blend gives λ′ = {frequency:.4g}λ, the paper's wavelength blend {wavelength:.4g}λ.").format(
        scale=result.settings.blend_scale, frequency=frequency, wavelength=wavelength)


FIGURES = figure_registry(
    FigureSpec("ntk-vs-pi", draw.NTK_TITLE, _ntk_figure, groups=(NTK,), caption=_ntk_caption),
    FigureSpec("ntk-by-parts-blend", draw.BLEND_TITLE, _blend_figure, groups=(BLEND,), caption=_blend_caption),
)

# The derivation each figure illustrates (the page draws the figure under that derivation's check).
FIGURE_OF = {"ntk_aware_base": ("ntk-vs-pi", NTK), "yarn_ramp_blend": ("ntk-by-parts-blend", BLEND)}

# The page's parts, in reading order, and the derivations/ topic modules each shows. The first part is a short one:
# it is what a fresh server verifies before the page first shows.
PARTS = (
    Part("plane", N_("In 2D"), N_("RoPE in two dimensions"), figures=()),
    Part("d-dims", N_("In d dims"), N_("RoPE in d dimensions, from relative positions, in code"), figures=()),
    Part("extension", N_("Extension"), N_("Context extension: PI, NTK-aware, YaRN and their caveats"),
         figures=("ntk-vs-pi", "ntk-by-parts-blend")),
    Part("decay", N_("Decay & β"), N_("Long-range decay and RoPE as a β-base number"), figures=()),
    Part("others", N_("Other encodings"), N_("Sinusoidal, ALiBi and the other position encodings"), figures=()),
)
PART_TOPICS = {
    "plane": ("rope_2d",),
    "d-dims": ("rope_blocks", "rope_from_relative", "rope_code"),
    "extension": ("context_extension", "yarn", "caveats"),
    "decay": ("decay", "beta_base"),
    "others": ("sinusoidal", "alibi", "relative_lineage", "absolute_schemes"),
}

LESSON = Lesson(
    name="derivations",
    title=N_("Derivations (sympy-checked)"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Every formula the app uses, derived step by step and verified by sympy."),
    parts=PARTS,
)


def part_topics(slug: str) -> tuple[tuple[str, tuple], ...]:
    """The topics part ``slug`` shows, as (title, derivations that hold), in reading order (imports sympy)."""
    modules = [importlib.import_module(f"derivations.{name}") for name in PART_TOPICS[slug]]
    return tuple((module.TOPIC, module.DERIVATIONS) for module in modules)


# --- sympy verdicts, once per process ----------------------------------------------------------------


class Verdict(NamedTuple):
    holds: bool
    residual: str  # LaTeX of what was left over (0 when the claim holds)
    checked: str  # what sympy checked, in words
    counterexample: str | None
    seconds: float  # how long the check took when it ran


# ---- verdicts on disk, across server starts ----
ROOT = Path(__file__).resolve().parent.parent
VERDICTS_ENV = "PE_VERDICT_CACHE"  # a folder for the verdicts (default .cache/ in the checkout); "off": none
# what a verdict can depend on: the derivations, the app's RoPE code some of them compare with, and this file
_VERDICT_SOURCES = ("derivations", "pe_core", "lessons/derivations.py")
_disk_lock = threading.Lock()
log = logging.getLogger(__name__)


@functools.cache
def _code_digest() -> str:
    import sympy
    import torch as torch_module

    digest = hashlib.sha256(f"sympy {sympy.__version__} torch {torch_module.__version__}".encode())
    for source in _VERDICT_SOURCES:
        path = ROOT / source
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(ROOT)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def verdict_file() -> Path | None:
    """Where this code's verdicts are kept (None when turned off)."""
    folder = os.environ.get(VERDICTS_ENV, str(ROOT / ".cache"))
    if folder == "off":
        return None
    return Path(folder) / f"verdicts-{_code_digest()}.json"


def _key(slug: str, value: int | None) -> str:
    return slug if value is None else f"{slug}@{value}"


@functools.cache
def _stored() -> dict[str, Verdict]:
    """The verdicts kept on disk for this code (read once per process; new ones are added as they are made)."""
    path = verdict_file()
    try:
        kept = json.loads(path.read_text()) if path is not None and path.exists() else {}
        return {key: Verdict(*fields) for key, fields in kept.items()}
    except (OSError, ValueError, TypeError) as error:
        log.warning("ignoring the stored verdicts %s (%s)", path, error)
        return {}


def _store(key: str, verdict: Verdict) -> None:
    """Add a verdict to the file (written whole, then renamed into place: several servers may share it)."""
    path = verdict_file()
    with _disk_lock:
        stored = _stored()
        stored[key] = verdict
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False) as partial:
                json.dump({k: list(v) for k, v in stored.items()}, partial)
            Path(partial.name).replace(path)
        except OSError as error:  # a read-only checkout: verdicts are then kept in memory only
            log.warning("cannot keep verdicts in %s (%s)", path, error)


@cached(max_entries=256)
def verification(slug: str, value: int | None = None) -> Verdict:
    """sympy's verdict on derivation ``slug`` (at parameter ``value``, e.g. d = 6): computed once for this code,
    then read from memory, or from disk after a restart."""
    key = _key(slug, value)
    kept = _stored().get(key)
    if kept is not None:
        return kept
    import derivations

    derivation = derivations.get(slug)
    start = time.perf_counter()
    result = derivation.verify(**({} if value is None else {derivation.parameter.name: value}))
    made = Verdict(result.holds, result.residual_latex, result.checked, result.counterexample,
                   time.perf_counter() - start)
    _store(key, made)
    return made


def verify_part(slug: str, head_dim: int | None = None) -> list[Verdict]:
    """Every verdict part ``slug`` shows (its claims and their wrong variants; the block proofs at ``head_dim``,
    default the page's default d)."""
    import derivations
    from derivations.rope_blocks import HEAD_DIM

    chosen = HEAD_DIM.default if head_dim is None else head_dim
    return [verdict(item, chosen) for _title, members in part_topics(slug) for claim in members
            for item in (claim, *derivations.variants_of(claim.slug))]


def verdict(derivation, head_dim: int) -> Verdict:
    """The verdict on ``derivation``; ``head_dim`` is used only by the block-diagonal proofs that take it."""
    return verification(derivation.slug, head_dim if derivation.parameter is not None else None)


class Summary(NamedTuple):
    claims: int
    verified: int
    variants: int
    refuted: int
    counterfactuals: int
    seconds: float  # symbolic work, the first time

    @property
    def all_good(self) -> bool:
        return self.verified == self.claims and self.refuted == self.variants


def summary(claims: list[Verdict], variants: list[Verdict], counterfactuals: int) -> Summary:
    return Summary(len(claims), sum(v.holds for v in claims), len(variants), sum(not v.holds for v in variants),
                   counterfactuals, sum(v.seconds for v in claims + variants))
