"""Multimodal RoPE (Qwen2-VL's M-RoPE and Qwen3-VL's interleaved layout): which of a head's pairs rotate by the
time, height or width position, and the three positions of every token of a text + image sequence.

A text token has one position p and uses it on all three axes, so M-RoPE on text is plain RoPE. An image (or a
video's frames) of t × h × w patches, merged s × s into tokens, gets positions (p₀ + t, p₀ + h, p₀ + w) on a
grid that starts where the text before it stopped; the text after it resumes at p₀ + max(h, w) / s, not after
every one of its h·w/s² tokens. Each rotary pair takes its angle from one axis: ``mrope_section`` says how many
pairs each axis gets, in one block per axis (Qwen2-VL, Qwen2.5-VL: time takes the fastest pairs, width the
slowest) or taking turns pair by pair (Qwen3-VL, Qwen3.5), so every axis has fast and slow pairs.

Follows transformers' ``Qwen2VLModel.get_rope_index`` / ``get_vision_position_ids`` and the rotary classes'
``recomposition_frequencies`` (chunked: ``Qwen2VLRotaryEmbedding``; interleaved: ``Qwen3VLTextRotaryEmbedding``);
``tests/test_mrope.py`` checks both against them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from i18n import N_, _

TIME, HEIGHT, WIDTH = 0, 1, 2
AXES = ("t", "h", "w")
AXIS_TITLES = (N_("time"), N_("height"), N_("width"))


def pair_axes(section: Sequence[int], interleaved: bool) -> torch.Tensor:
    """The axis (0 time, 1 height, 2 width) each rotary pair takes its position from, pair by pair.

    Chunked (Qwen2-VL): the first ``section[0]`` pairs are time's, the next ``section[1]`` height's, the rest
    width's. Interleaved (Qwen3-VL): pair i is height's when i ≡ 1 (mod 3) and i < 3·section[1], width's when
    i ≡ 2 (mod 3) and i < 3·section[2], time's otherwise.
    """
    counts = [int(count) for count in section]
    if len(counts) != 3 or min(counts) < 0 or sum(counts) < 1:
        raise ValueError(_("mrope_section must give three non-negative pair counts (time, height, width); "
                           "got {section!r}.").format(section=list(section)))
    pairs = sum(counts)
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3), torch.tensor(counts))
    index = torch.arange(pairs)
    axes = torch.full((pairs,), TIME, dtype=torch.long)
    axes[(index % 3 == 1) & (index < 3 * counts[HEIGHT])] = HEIGHT
    axes[(index % 3 == 2) & (index < 3 * counts[WIDTH])] = WIDTH
    return axes


class Image(NamedTuple):
    """An image or video as the vision encoder hands it on: t × h × w patches before the s × s spatial merge."""

    t: int
    h: int
    w: int


def vision_positions(start: int, grid: Image, spatial_merge: int = 2, time_interval: float = 1.0) -> torch.Tensor:
    """(3, tokens) positions of one image's tokens, row by row: time start + ⌊t·interval⌋, height start + row,
    width start + column (transformers' ``get_vision_position_ids``)."""
    frames, rows, columns = grid.t, grid.h // spatial_merge, grid.w // spatial_merge
    if min(frames, rows, columns) < 1:
        raise ValueError(_("An image needs at least one frame and {merge} × {merge} patches (one token after the "
                           "merge); got {t} × {h} × {w}.").format(merge=spatial_merge, t=grid.t, h=grid.h, w=grid.w))
    time = (torch.arange(frames) * time_interval).long() + start
    height = torch.arange(rows) + start
    width = torch.arange(columns) + start
    grids = torch.meshgrid(time, height, width, indexing="ij")
    return torch.stack(grids).reshape(3, -1)


def position_ids(segments: Sequence[int | Image], spatial_merge: int = 2, time_interval: float = 1.0) -> torch.Tensor:
    """(3, tokens) positions of a sequence of text runs (an int: that many tokens) and images, in order.

    A text run continues from the current position on all three axes; an image's grid starts there, and the
    position after it is max(h, w)/s further on (``Qwen2VLModel.get_rope_index``).
    """
    pieces = []
    current = 0
    for segment in segments:
        if isinstance(segment, Image):
            pieces.append(vision_positions(current, segment, spatial_merge, time_interval))
            current += max(segment.h, segment.w) // spatial_merge
        else:
            count = int(segment)
            if count < 0:
                raise ValueError(_("A text run cannot have a negative length ({count}).").format(count=count))
            pieces.append((torch.arange(count) + current).expand(3, -1))
            current += count
    if not pieces:
        return torch.zeros(3, 0, dtype=torch.long)
    return torch.cat(pieces, dim=1)


def token_kinds(segments: Sequence[int | Image], spatial_merge: int = 2) -> torch.Tensor:
    """Per token: 0 for text, k for a token of the k-th image (k = 1, 2, ...)."""
    kinds = []
    image = 0
    for segment in segments:
        if isinstance(segment, Image):
            image += 1
            size = segment.t * (segment.h // spatial_merge) * (segment.w // spatial_merge)
            kinds.append(torch.full((size,), image, dtype=torch.long))
        else:
            kinds.append(torch.zeros(int(segment), dtype=torch.long))
    return torch.cat(kinds) if kinds else torch.zeros(0, dtype=torch.long)


def mrope_angles(positions: torch.Tensor, inv_freq: torch.Tensor, axes: torch.Tensor) -> torch.Tensor:
    """(tokens, pairs) angles: pair i of token n turns by positions[axes[i], n] · θᵢ (float64)."""
    if axes.numel() != inv_freq.numel():
        raise ValueError(_("mrope_section covers {sections} pairs but the head rotates {pairs}.").format(
            sections=axes.numel(), pairs=inv_freq.numel()))
    chosen = positions.to(torch.float64)[axes]  # (pairs, tokens): each pair's own axis
    return chosen.T * inv_freq.to(torch.float64)


class AxisBand(NamedTuple):
    """The pairs one axis gets and the wavelengths they span."""

    axis: int
    pairs: tuple[int, ...]
    shortest: float  # the shortest wavelength 2π/θ among them (tokens)
    longest: float


def axis_bands(axes: torch.Tensor, inv_freq: torch.Tensor) -> tuple[AxisBand, ...]:
    """For time, height and width: which pairs carry it and the range of wavelengths those pairs have."""
    wavelengths = 2 * torch.pi / inv_freq.to(torch.float64)
    bands = []
    for axis in range(3):
        chosen = torch.nonzero(axes == axis).flatten()
        if chosen.numel():
            bands.append(AxisBand(axis, tuple(chosen.tolist()), float(wavelengths[chosen].min()),
                                  float(wavelengths[chosen].max())))
        else:
            bands.append(AxisBand(axis, (), float("nan"), float("nan")))
    return tuple(bands)
