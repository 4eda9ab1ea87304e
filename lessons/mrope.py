"""Multimodal RoPE: which of a head's pairs rotate by time, height and width (Qwen2.5-VL's blocks, Qwen3-VL's and
Qwen3.5's interleaving, read from their published configs), and the positions of a text + image sequence.

Every number the page states is computed here from ``pe_core.mrope``: the pairs and wavelengths each axis gets,
how far the fastest height and width pairs turn across the chosen image, and where the text after it resumes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import torch

from figures import mrope as draw
from i18n import N_, _
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, figure_registry, setting
from pe_core import mrope
from pe_core.config import layer_map
from pe_core.published import SPATIAL_MERGE, VISION_LANGUAGE
from pe_core.rope import rope_frequencies

IMAGE = "image"
LAYOUT_TITLES = {False: N_("in blocks"), True: N_("alternating")}


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    text_before: int = setting(4, N_("Text tokens before the image"), key="before", group=IMAGE, min_value=0,
                               max_value=32, step=1)
    grid_height: int = setting(4, N_("Image height (tokens)"), key="gh", group=IMAGE, min_value=1, max_value=16,
                               step=1, help=N_("Tokens after the vision encoder's 2 × 2 merge: a 448-pixel-high "
                                               "image at Qwen2.5-VL's 14-pixel patches is 16 tokens high."))
    grid_width: int = setting(6, N_("Image width (tokens)"), key="gw", group=IMAGE, min_value=1, max_value=24, step=1)
    text_after: int = setting(3, N_("Text tokens after the image"), key="after", group=IMAGE, min_value=0,
                              max_value=32, step=1)



class ModelAxes(NamedTuple):
    name: str
    hf_id: str
    section: tuple[int, ...]
    interleaved: bool
    base: float
    rotated_dims: int
    axes: torch.Tensor  # per pair
    inv_freq: torch.Tensor
    bands: tuple[mrope.AxisBand, ...]

    @property
    def layout_title(self) -> str:
        return _(LAYOUT_TITLES[self.interleaved])

    def fastest_turns(self, axis: int, span: int) -> float:
        """Turns of the axis's fastest pair across a position difference of ``span``."""
        band = self.bands[axis]
        return span / band.shortest if band.pairs else 0.0


@functools.cache
def models() -> tuple[ModelAxes, ...]:
    """The vision-language models' heads, read from their published configs as their own classes read them."""
    found = []
    for entry in VISION_LANGUAGE:
        kind = layer_map(entry.config).kind()
        inv_freq = rope_frequencies(kind.spec).inv_freq
        axes = mrope.pair_axes(kind.mrope_section, kind.mrope_interleaved)
        found.append(ModelAxes(entry.name, entry.hf_id, kind.mrope_section, kind.mrope_interleaved, kind.spec.base,
                               2 * inv_freq.numel(), axes, inv_freq, mrope.axis_bands(axes, inv_freq)))
    return tuple(found)


def axis_titles() -> tuple[str, ...]:
    return tuple(_(title) for title in mrope.AXIS_TITLES)


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @property
    def models(self) -> tuple[ModelAxes, ...]:
        return models()

    @property
    def image(self) -> mrope.Image:
        s = self.settings
        return mrope.Image(1, s.grid_height * SPATIAL_MERGE, s.grid_width * SPATIAL_MERGE)

    @property
    def segments(self) -> tuple:
        s = self.settings
        return (s.text_before, self.image, s.text_after)

    @functools.cached_property
    def positions(self) -> torch.Tensor:
        return mrope.position_ids(self.segments, SPATIAL_MERGE)

    @functools.cached_property
    def kinds(self) -> torch.Tensor:
        return mrope.token_kinds(self.segments, SPATIAL_MERGE)

    @property
    def image_tokens(self) -> int:
        return self.settings.grid_height * self.settings.grid_width

    @property
    def tokens(self) -> int:
        return self.positions.shape[1]

    @property
    def last_position(self) -> int:
        return int(self.positions[:, -1].max()) if self.tokens else 0

    @property
    def resumes_at(self) -> int:
        """The position of the first text token after the image (whether or not there is one)."""
        return self.settings.text_before + max(self.settings.grid_height, self.settings.grid_width)

    @property
    def image_grid(self) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.settings
        inside = self.positions[:, s.text_before: s.text_before + self.image_tokens]
        return (inside[1].reshape(s.grid_height, s.grid_width), inside[2].reshape(s.grid_height, s.grid_width))


def compute(settings: Settings) -> Result:
    return Result(settings)


def _model_pairs() -> tuple[draw.ModelPairs, ...]:
    return tuple(draw.ModelPairs(model.name, model.layout_title, tuple(model.axes.tolist()),
                                 tuple((2 * math.pi / model.inv_freq).tolist())) for model in models())


def _pairs(result: Result, style) -> object:
    return draw.pair_axes_figure(_model_pairs(), axis_titles())


def _pairs_caption(result: Result) -> str:
    parts = [_("{name}: mrope_section {section}, {layout}, {pairs} pairs ({dims} rotated dimensions), base "
               "{base:,.0f}").format(name=model.name, section=list(model.section), layout=model.layout_title,
                                     pairs=model.axes.numel(), dims=model.rotated_dims, base=model.base)
              for model in result.models]
    return _("Read from each model's published config.json as its transformers class reads it. {models}.").format(
        models="; ".join(parts))


def _wavelengths(result: Result, style) -> object:
    return draw.axis_wavelengths_figure(_model_pairs(), axis_titles())


def _sequence(result: Result, style) -> object:
    return draw.sequence_positions_figure(result.positions, result.kinds, axis_titles())


def _sequence_caption(result: Result) -> str:
    return _("{tokens} tokens: the last has position {last} under M-RoPE and {plain} under plain RoPE. Shaded: the "
             "image's tokens.").format(tokens=result.tokens, last=result.last_position, plain=result.tokens - 1)


def _grid(result: Result, style) -> object:
    heights, widths = result.image_grid
    return draw.image_grid_figure(heights, widths, result.settings.text_before)


def _grid_caption(result: Result) -> str:
    return _("Each cell: the token's height and width positions; darker cells come later in the sequence, which "
             "lists the image row by row. Every token of the image has time position {time}.").format(
        time=result.settings.text_before)


FIGURES = figure_registry(
    FigureSpec("pair-axes", draw.PAIRS_TITLE, _pairs, groups=(), caption=_pairs_caption),
    FigureSpec("axis-wavelengths", draw.WAVELENGTHS_TITLE, _wavelengths, groups=()),
    FigureSpec("sequence-positions", draw.SEQUENCE_TITLE, _sequence, groups=(IMAGE,), caption=_sequence_caption),
    FigureSpec("image-grid", draw.GRID_TITLE, _grid, groups=(IMAGE,), caption=_grid_caption),
)

LESSON = Lesson(
    name="mrope",
    title=N_("Multimodal RoPE"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Which pairs carry time, height and width in Qwen2.5-VL, Qwen3-VL and Qwen3.5, and the positions of "
               "an image's tokens."),
    parts=(
        Part("pairs", N_("Pairs"), N_("Which pairs carry time, height and width"), ("pair-axes", "axis-wavelengths")),
        Part("image", N_("An image"), N_("The positions of a text + image sequence"),
             ("sequence-positions", "image-grid")),
    ),
)
