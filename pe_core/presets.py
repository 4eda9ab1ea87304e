"""Real models' RoPE settings, stored as the relevant fields of their published config.json."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

from i18n import _
from pe_core.config import context_length_of, from_hf_config, text_config_of
from pe_core.rope import RopeSpec

PRESETS_FILE = Path(__file__).with_name("presets.json")


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    hf_id: str
    note: str
    source: str
    config: dict

    @functools.cached_property
    def spec(self) -> RopeSpec:
        """Read when first asked for: a preset with a model type is read by its own transformers classes, which a
        page that lists the presets should not wait for."""
        return from_hf_config(self.config)

    @functools.cached_property
    def context_length(self) -> int | None:
        """max_position_embeddings: the length the model is advertised for."""
        return context_length_of(text_config_of(self.config)[0])


@functools.lru_cache(maxsize=1)
def load_presets() -> tuple[Preset, ...]:
    """Every preset; each is parsed through ``from_hf_config`` exactly as a pasted config would be, when its spec
    is first asked for."""
    if not PRESETS_FILE.exists():
        return ()
    raw = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    return tuple(Preset(name=item["name"], hf_id=item["hf_id"], note=item.get("note", ""),
                        source=item.get("source", ""), config=item["config"]) for item in raw["presets"])


def preset_by_name(name: str) -> Preset:
    for preset in load_presets():
        if preset.name == name:
            return preset
    names = ", ".join(p.name for p in load_presets())
    raise ValueError(_("Unknown preset {name!r}; choose one of: {names}.").format(name=name, names=names))
