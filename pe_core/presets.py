"""Real models' RoPE settings, stored as the relevant fields of their published config.json."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import NamedTuple

from i18n import _
from pe_core.config import context_length_of, from_hf_config, text_config_of
from pe_core.rope import RopeSpec

PRESETS_FILE = Path(__file__).with_name("presets.json")


class Preset(NamedTuple):
    name: str
    hf_id: str
    note: str
    source: str
    config: dict
    spec: RopeSpec
    context_length: int | None  # max_position_embeddings: the length the model is advertised for


@functools.lru_cache(maxsize=1)
def load_presets() -> tuple[Preset, ...]:
    """Every preset, each parsed through ``from_hf_config`` exactly as a pasted config would be."""
    if not PRESETS_FILE.exists():
        return ()
    raw = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    return tuple(
        Preset(
            name=item["name"],
            hf_id=item["hf_id"],
            note=item.get("note", ""),
            source=item.get("source", ""),
            config=item["config"],
            spec=from_hf_config(item["config"]),
            context_length=context_length_of(text_config_of(item["config"])[0]),
        )
        for item in raw["presets"]
    )


def preset_by_name(name: str) -> Preset:
    for preset in load_presets():
        if preset.name == name:
            return preset
    names = ", ".join(p.name for p in load_presets())
    raise ValueError(_("Unknown preset {name!r}; choose one of: {names}.").format(name=name, names=names))
