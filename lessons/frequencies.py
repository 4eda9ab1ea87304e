"""θ heatmaps & scaling methods: how each context-extension method reshapes RoPE's angles m·θᵢ."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import torch

from figures import frequencies as draw
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, Part, figure_registry, setting
from lessons.format import length_text, scale_text
from lessons.rope_setup import (
    MAX_TARGET_LENGTH,
    SCALES,
    RopeSettings,
    RopeSetup,
    layer_map_part,
    layer_map_spec,
    rope_setup,
)
from pe_core.angles import (
    LENGTH_DEPENDENT_TYPES,
    VIEWS,
    FrequencyProfile,
    HeatmapPanel,
    RampComparison,
    frequency_profile,
    heatmap_panels,
    ramp_comparison,
    rescaled_setup,
)
from pe_core.methods import MethodSetup, method_setup
from pe_core.rope import RopeSpec, rope_type_entry

# What the browser receives: all heatmap panels together stay within this many cells (rows are
# positions sampled exactly, never averaged).
MAX_HEATMAP_CELLS = 120_000
MAX_HEATMAP_ROWS = 200
MIN_HEATMAP_ROWS = 32
SCRUB_HEATMAP_ROWS = 64  # each of the in-figure slider's nine frames carries its own rows

POSITION_CHOICES = (10, 16, 32, 64, 128, 256, 0)  # 0: every position 0 .. L′−1, sampled for drawing
SECOND_SCALES = (0.0, *SCALES)  # 0: no second row
VIEW_LABELS = {"trained": N_("against training"), "log": N_("log angle"), "angle": N_("angle"), "mod": N_("mod 2π"),
               "cos": N_("cos")}
LENGTH_MODES = ("generation", "whole")
LENGTH_MODE_TITLES = {"generation": N_("as generated"), "whole": N_("whole sequence")}
HEATMAP, LINES, PICK = "heatmap", "lines", "pick"
MAX_PAIRS = 128  # a head of 256 dimensions: the most pairs any set-up here has
NO_PAIR = -1


def _pair_text(pair: int) -> str:
    return _("none") if pair == NO_PAIR else str(pair)


def _positions_text(count: int) -> str:
    return _("all") if count == 0 else str(count)


def _second_scale_text(scale: float) -> str:
    return _("none") if scale == 0 else scale_text(scale)


@dataclasses.dataclass(frozen=True)
class Settings(RopeSettings):
    # The default colours what a method changes: the log of the angle itself is mostly each pair's own θᵢ, the same
    # six decades under every method, so the methods' panels looked alike.
    view: str = setting("trained", N_("Colour by"), key="view", widget="radio", group=HEATMAP, options=VIEWS,
                        format=lambda v: _(VIEW_LABELS[v]),
                        help=N_("The angle m·θ′ᵢ against the largest angle L·θᵢ its pair turned in training (log₂: "
                                "above 0 is further than training went; a pair that turned a whole turn in training "
                                "stays at 0 or below); log₁₀ of the angle in radians; the raw angle; the angle folded "
                                "into [0, 2π); or cos(m·θᵢ), what the query and key actually see."))
    mark_unseen: bool = setting(True, N_("Mark unseen-angle pairs ▼"), key="mark", group=HEATMAP)
    positions_shown: int = setting(0, N_("Positions on the y axis: the first N, or all of 0 … L′−1"), key="pos",
                                   group=HEATMAP, options=POSITION_CHOICES, format=_positions_text)
    second_scale: float = setting(0.0, N_("Second row at scale"), key="s2", group=HEATMAP, options=SECOND_SCALES,
                                  format=_second_scale_text)
    length_mode: str = setting("generation", N_("Dynamic NTK & LongRoPE rows"), key="dyn", widget="radio",
                               group=HEATMAP, options=LENGTH_MODES, format=lambda v: _(LENGTH_MODE_TITLES[v]),
                               when={"methods": LENGTH_DEPENDENT_TYPES},
                               help=N_("As generated: row m uses θ for a sequence of length m + 1, as when a model "
                                       "produces tokens one by one. Whole sequence: every row uses θ for length L′."))
    scrub_in_figure: bool = setting(False, N_("Scrub s inside the heatmaps"), key="scrub", group=HEATMAP,
                                    help=N_("The heatmaps carry their own slider over s: drag it and every panel "
                                            "changes at once, in the browser, without waiting for the server."))
    as_frequency: bool = setting(False, N_("Plot frequency θᵢ instead of wavelength λᵢ"), key="freq", group=LINES)
    pair: int = setting(NO_PAIR, N_("Highlighted pair i"), key="pair", widget="selectbox", group=PICK,
                        options=(NO_PAIR, *range(MAX_PAIRS)), format=_pair_text, examples=(0, 45), highlight=True,
                        help=N_("Or click a pair on the wavelength or ratio chart (the part “Per pair”): it is "
                                "outlined on the heatmaps and marked on every chart, and the link keeps it."))


def rows_per_panel(num_panels: int, num_pairs: int, *, scrubbed: bool = False) -> int:
    """How many positions each heatmap may show so all panels together stay within MAX_HEATMAP_CELLS
    (fewer when the figure carries a frame per scale)."""
    budget = MAX_HEATMAP_CELLS // max(1, num_panels * num_pairs)
    most = SCRUB_HEATMAP_ROWS if scrubbed else MAX_HEATMAP_ROWS
    return int(min(most, max(MIN_HEATMAP_ROWS, budget)))


def second_row_setups(setups: Sequence[MethodSetup], base: float, train_length: int,
                      second_scale: float) -> tuple[MethodSetup, ...]:
    """The same methods at a second scale (a model's own RoPE has a fixed scale, so it is left out)."""
    if not second_scale:
        return ()
    target = min(max(1, int(round(train_length * second_scale))), MAX_TARGET_LENGTH)
    if all(setup.seq_len == target for setup in setups):
        return ()  # the cap made it the same as the first row
    return tuple(s for s in (rescaled_setup(setup, base, target) for setup in setups) if s is not None)


def ramp_spec(setup: RopeSetup) -> RopeSpec:
    """The spec the ramp chart explains: a model's own YaRN / NTK-by-parts if one is shown, else YaRN's defaults."""
    for method in setup.setups:
        if rope_type_entry(method.spec.rope_type).ramp is not None:
            return method.spec
    return method_setup("yarn", setup.head_dim, setup.base, setup.train_length,
                        max(setup.target_length, setup.train_length)).spec


class Result:
    """Everything the page draws; each part is computed when a figure first asks for it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.setup = rope_setup(settings)

    @functools.cached_property
    def panels(self) -> tuple[HeatmapPanel, ...]:
        s, setup = self.settings, self.setup
        shown = setup.setups + second_row_setups(setup.setups, setup.base, setup.train_length, s.second_scale)
        if not shown:
            return ()
        return heatmap_panels(shown, base=setup.base, train_length=setup.train_length,
                              positions_shown=s.positions_shown or None, view=s.view,
                              rows=rows_per_panel(len(shown), shown[0].spec.num_pairs, scrubbed=s.scrub_in_figure),
                              length_so_far=s.length_mode == "generation")

    @functools.cached_property
    def profile(self) -> FrequencyProfile:
        return frequency_profile(self.setup.setups, base=self.setup.base)

    @functools.cached_property
    def ramp_spec(self) -> RopeSpec:
        return ramp_spec(self.setup)

    @functools.cached_property
    def ramp(self) -> RampComparison:
        return ramp_comparison(self.ramp_spec)

    @property
    def sampled(self) -> bool:
        """Rows skip positions (exact angles at the rows shown; fast pairs alias between them)."""
        wanted = self.settings.positions_shown
        return any(len(p.positions) < (wanted or p.target_length) for p in self.panels)

    @property
    def shows_untrained_rows(self) -> bool:
        return any(len(p.positions) and int(p.positions[-1]) >= self.setup.train_length for p in self.panels)


def compute(settings: Settings) -> Result:
    return Result(settings)


def _heatmaps(result: Result, style) -> object:
    return draw.angle_heatmaps(result.panels, view=result.settings.view, train_length=result.setup.train_length,
                               mark_unseen=result.settings.mark_unseen)


def _heatmap_caption(result: Result) -> str:
    parts = []
    if result.sampled:
        parts.append(_("Rows are evenly spaced positions (exact angles at those positions; fast pairs alias when "
                       "rows skip positions - choose 'first N' to see every position)."))
    parts.append(_("All panels share one colour scale."))
    if result.settings.view == "trained":
        parts.append(_("Colour: the angle m·θ′ᵢ against the largest angle L·θᵢ its pair turned in training - blue "
                       "inside it, white at its end, red beyond (a pair that turned a whole turn in training has seen "
                       "every direction and stays white at most)."))
    if result.shows_untrained_rows:
        parts.append(_("Hatched: positions m ≥ L, never seen in training."))
    return sentences(parts)


def _unseen(result: Result, style) -> object:
    return draw.unseen_angles_figure(result.profile, train_length=result.setup.train_length,
                                     target_length=result.setup.target_length)


def _wavelengths(result: Result, style) -> object:
    return draw.wavelength_figure(result.profile, train_length=result.setup.train_length,
                                  target_length=result.setup.target_length,
                                  as_frequency=result.settings.as_frequency)


def _ratio(result: Result, style) -> object:
    return draw.ratio_figure(result.profile, scale=result.setup.scale)


def _ramp(result: Result, style) -> object:
    spec = result.ramp_spec
    return draw.ramp_figure(result.ramp, beta_fast=spec.beta_fast, beta_slow=spec.beta_slow, truncate=spec.truncate)


def _ramp_caption(result: Result) -> str:
    spec = result.ramp_spec
    return _("Spec: d = {d}, b = {base}, L = {L}, α = {alpha}, β = {beta}, truncate = {truncate}.").format(
        d=spec.rotary_dim, base=f"{spec.base:,.0f}", L=length_text(spec.original_max_position_embeddings),
        alpha=f"{spec.beta_slow:g}", beta=f"{spec.beta_fast:g}", truncate=spec.truncate)


def _outline_pair(figure, result: Result, settings: Settings) -> None:
    draw.mark_pair_columns(figure, settings.pair)


def _label_pair(figure, result: Result, settings: Settings) -> None:
    draw.mark_pair_columns(figure, settings.pair, legend=False)


def _ring_pair(values: Callable[[Result], torch.Tensor]) -> Callable:
    """Mark the picked pair on a per-pair line chart whose curves are the rows of ``values(result)``."""

    def mark(figure, result: Result, settings: Settings) -> None:
        rows = values(result)
        if rows.ndim == 2 and 0 <= settings.pair < rows.shape[1]:
            draw.mark_pair_points(figure, settings.pair, rows[:, settings.pair].tolist())

    return mark


def _shown_wavelengths(result: Result) -> torch.Tensor:
    inv_freq = result.profile.inv_freq
    return inv_freq if result.settings.as_frequency else 2 * math.pi / inv_freq


FIGURES = figure_registry(
    FigureSpec("angle-heatmaps", draw.HEATMAP_TITLE, _heatmaps, groups=("rope", HEATMAP, PICK),
               caption=_heatmap_caption, scrub="scale", highlight=_outline_pair),
    FigureSpec("unseen-angles", draw.UNSEEN_TITLE, _unseen, groups=("rope", PICK),
               caption=N_("Hover a cell for L′·θ′ᵢ / (L·θᵢ): above 1 means beyond training."),
               highlight=_label_pair),
    FigureSpec("wavelengths", draw.WAVELENGTH_TITLE, _wavelengths, groups=("rope", LINES, PICK), selects="pair",
               highlight=_ring_pair(_shown_wavelengths)),
    FigureSpec("interpolation-ratio", draw.RATIO_TITLE, _ratio, groups=("rope", PICK), selects="pair",
               highlight=_ring_pair(lambda result: result.profile.ratio)),
    FigureSpec("yarn-ramp", draw.RAMP_TITLE, _ramp, groups=("rope",), caption=_ramp_caption),
    layer_map_spec(),
)

# Views a button restores: a teaching set-up worth one click (values of Settings fields).
SMALL_HEAD_VIEW = {"source": "sliders", "head_dim": 32, "base": 10_000.0, "scale": 2.0,
                   "methods": ("direct", "pi", "ntk"), "positions_shown": 10, "second_scale": 4.0, "view": "angle",
                   "mark_unseen": False}

LESSON = Lesson(
    name="frequencies",
    title=N_("θ heatmaps & scaling methods"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("How direct extrapolation, PI, NTK-aware, dynamic NTK, NTK-by-parts, YaRN, Llama-3, LongRoPE "
               "and a base change reshape RoPE's rotation angles, dimension by dimension."),
    parts=(
        Part("angles", N_("Angles"), N_("The angle m·θᵢ, pair by pair, position by position"), ("angle-heatmaps",)),
        Part("unseen", N_("Unseen angles"), N_("Which pairs see angles they were never trained on?"),
             ("unseen-angles",), shows=(PICK,)),
        Part("per-pair", N_("Per pair"), N_("Per-pair frequencies on one chart"),
             ("wavelengths", "interpolation-ratio"), shows=(PICK,)),
        Part("ramp", N_("Paper vs code"), N_("NTK-by-parts: the paper's γ(r) and the code's ramp"), ("yarn-ramp",)),
        layer_map_part(),
    ),
)
