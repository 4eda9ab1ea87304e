"""M-RoPE against transformers: the pairs each axis takes (Qwen2.5-VL's chunked and Qwen3-VL's interleaved
``recomposition_frequencies``), the positions of a text + image sequence (``Qwen2VLModel.get_rope_index``), and
the cos of every token and pair (the rotary classes' ``forward``), read from the models' published configs."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
import torch

from pe_core import mrope
from pe_core.config import layer_map
from pe_core.mrope import Image
from pe_core.rope import rope_frequencies

transformers = pytest.importorskip("transformers")
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qwen2_5_vl  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl as qwen2_vl  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3_vl  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "model_configs"
# model file -> its transformers text rotary class
ROTARY = {
    "Qwen--Qwen2.5-VL-7B-Instruct.json": qwen2_5_vl.Qwen2_5_VLRotaryEmbedding,
    "Qwen--Qwen3-VL-32B-Instruct.json": qwen3_vl.Qwen3VLTextRotaryEmbedding,
}


def published(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def rotary_of(name: str):
    config = transformers.AutoConfig.for_model(**published(name))
    return ROTARY[name](config.text_config), config


def test_chunked_pairs_by_hand():
    axes = mrope.pair_axes((16, 24, 24), interleaved=False)
    assert axes.tolist() == [0] * 16 + [1] * 24 + [2] * 24


def test_interleaved_pairs_by_hand():
    axes = mrope.pair_axes((24, 20, 20), interleaved=True).tolist()
    assert axes[:6] == [0, 1, 2, 0, 1, 2]
    assert axes[57:] == [0, 1, 2, 0, 0, 0, 0]  # pairs 60-63 are time's: height and width stop at 3·20
    assert [axes.count(axis) for axis in range(3)] == [24, 20, 20]


@pytest.mark.parametrize("name", ROTARY)
def test_pair_axes_match_the_models_recomposition(name):
    rotary, _ = rotary_of(name)
    kind = layer_map(published(name)).kind()
    pairs = rotary.inv_freq.numel()
    marked = torch.arange(3, dtype=torch.float32).view(3, 1, 1, 1).expand(3, 1, 1, pairs).clone()
    recomposed = rotary.recomposition_frequencies(marked)  # (1, 1, 2·pairs): the pair's axis, twice
    expected = recomposed[0, 0, :pairs].long()
    assert torch.equal(recomposed[0, 0, pairs:].long(), expected)
    assert torch.equal(mrope.pair_axes(kind.mrope_section, kind.mrope_interleaved), expected)


def test_bad_sections_are_refused():
    with pytest.raises(ValueError, match="three"):
        mrope.pair_axes((16, 24), interleaved=False)
    with pytest.raises(ValueError, match="mrope_section covers 10 pairs"):
        mrope.mrope_angles(torch.zeros(3, 2, dtype=torch.long), torch.ones(4), mrope.pair_axes((4, 3, 3), False))


def _transformers_rope_index(segments, merge: int, time_interval: float = 1.0) -> torch.Tensor:
    """transformers' own ``get_rope_index`` on the same sequence (image tokens typed 1, video 2, text 0)."""
    types_ = []
    images, videos = [], []
    for segment in segments:
        if isinstance(segment, Image):
            kind = 2 if segment.t > 1 else 1
            (videos if kind == 2 else images).append(list(segment))
            types_ += [kind] * (segment.t * (segment.h // merge) * (segment.w // merge))
        else:
            types_ += [0] * segment
    model = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=types.SimpleNamespace(
        spatial_merge_size=merge)))
    model.get_vision_position_ids = qwen2_vl.Qwen2VLModel.get_vision_position_ids.__get__(model)
    ids = torch.zeros(1, len(types_), dtype=torch.long)
    positions, _ = qwen2_vl.Qwen2VLModel.get_rope_index(
        model, ids, torch.tensor([types_]), image_grid_thw=torch.tensor(images) if images else None,
        video_grid_thw=torch.tensor(videos) if videos else None)
    return positions[:, 0]


SEQUENCES = [
    (3, Image(1, 4, 6), 2),
    (Image(1, 8, 4), 5),
    (2, Image(1, 2, 2), 1, Image(1, 6, 10), 4),
    (4, Image(3, 4, 4), 3),  # a video of three temporal patches: time steps by 1 (Qwen2-VL)
    (7,),
]


@pytest.mark.parametrize("segments", SEQUENCES, ids=str)
def test_positions_match_get_rope_index(segments):
    assert torch.equal(mrope.position_ids(segments, spatial_merge=2), _transformers_rope_index(segments, 2))


def test_positions_by_hand():
    positions = mrope.position_ids([2, Image(1, 4, 6), 1], spatial_merge=2)
    assert positions[:, :2].tolist() == [[0, 1]] * 3
    # a 2 × 3 grid of tokens from position 2: time 2, height 2-3 by row, width 2-4 by column
    assert positions[0, 2:8].tolist() == [2] * 6
    assert positions[1, 2:8].tolist() == [2, 2, 2, 3, 3, 3]
    assert positions[2, 2:8].tolist() == [2, 3, 4, 2, 3, 4]
    assert positions[:, 8].tolist() == [5, 5, 5]  # 2 + max(2, 3): the text resumes after the longer side
    assert mrope.token_kinds([2, Image(1, 4, 6), 1]).tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 0]


def test_time_interval_spaces_frames():
    positions = mrope.position_ids([Image(3, 2, 2)], spatial_merge=2, time_interval=2.5)
    assert positions[0].tolist() == [0, 2, 5]  # ⌊0⌋, ⌊2.5⌋, ⌊5⌋


@pytest.mark.parametrize("name", ROTARY)
def test_cos_matches_the_models_rotary_class(name):
    rotary, _ = rotary_of(name)
    kind = layer_map(published(name)).kind()
    segments = (3, Image(1, 8, 12), 2, Image(1, 4, 4), 5)
    positions = mrope.position_ids(segments)
    inv_freq = rope_frequencies(kind.spec).inv_freq
    angles = mrope.mrope_angles(positions, inv_freq, mrope.pair_axes(kind.mrope_section, kind.mrope_interleaved))
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), positions[:, None, :])
    ours = torch.cat([angles.cos(), angles.cos()], dim=-1)
    assert torch.allclose(cos[0].double(), ours, atol=2e-6)
    assert torch.allclose(sin[0, :, : inv_freq.numel()].double(), angles.sin(), atol=2e-6)


def test_axis_bands_of_the_chunked_layout():
    inv_freq = 1.0 / 10_000 ** (torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    bands = mrope.axis_bands(mrope.pair_axes((16, 24, 24), False), inv_freq)
    wavelength = 2 * torch.pi / inv_freq
    assert bands[0].pairs == tuple(range(16)) and bands[0].shortest == pytest.approx(float(wavelength[0]))
    assert bands[2].longest == pytest.approx(float(wavelength[63])) and bands[2].shortest == pytest.approx(
        float(wavelength[40]))
