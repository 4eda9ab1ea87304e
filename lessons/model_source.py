"""Where the practitioner pages take a model from: a preset, or a pasted config.json (an uploaded file
becomes pasted text on the page, so the CLI, the tests and the page read it the same way)."""

from __future__ import annotations

import dataclasses
import json

from i18n import N_, _
from lessons.base import LessonSettings, SettingsError, setting
from pe_core import RopeSpec, from_hf_config, load_presets

MODEL = "model"
SOURCES = ("preset", "config")
SOURCE_TITLES = {"sliders": N_("Sliders"), "preset": N_("A real model"), "config": N_("Paste config.json")}


def preset_names() -> tuple[str, ...]:
    return tuple(p.name for p in load_presets())


def source_title(source: str) -> str:
    return _(SOURCE_TITLES[source])


def preset_config(name: str) -> dict:
    return next(p.config for p in load_presets() if p.name == name)


def parse_config(text: str) -> dict:
    """A pasted config.json as a dict; ``SettingsError`` with a readable sentence for a bad paste."""
    if not text.strip():
        raise SettingsError(_("Paste a model's config.json (or upload it)."))
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise SettingsError(_("That config.json is not valid JSON: {message} (line {line}, column {column}).").format(
            message=err.msg, line=err.lineno, column=err.colno)) from err
    if not isinstance(config, dict):
        raise SettingsError(_("A config.json must be a JSON object ({...})."))
    return config


def config_of(source: str, preset: str, text: str) -> dict:
    """The config dict the settings name: a preset's, or the pasted text's."""
    if source == "preset":
        return dict(preset_config(preset))
    return parse_config(text)


# The paste box starts with a real config (Qwen2.5-7B-Instruct with the YaRN block its model card gives),
# so "Paste config.json" shows something at once and the reader sees the shape to paste.
EXAMPLE_CONFIG = json.dumps({"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
                             "rope_theta": 1000000.0,
                             "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                              "type": "yarn"}}, indent=1)
OLD_STYLE_LINEAR_CONFIG = json.dumps({"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
                                      "rope_scaling": {"type": "linear", "factor": 4}})
# google/gemma-3-4b-it's config.json as published: the language model under text_config, and only the
# values that differ from transformers' Gemma3TextConfig defaults.
GEMMA3_CONFIG = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                 "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                                 "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                                 "sliding_window": 1024},
                 "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152}}


@dataclasses.dataclass(frozen=True)
class ModelSettings(LessonSettings):
    """A model from a preset or a pasted config.json (the practitioner pages' first group of settings)."""

    source: str = setting("preset", N_("Model from"), key="src", widget="radio", group=MODEL, options=SOURCES,
                          format=source_title)
    preset: str = setting("Llama-3-8B", N_("Model"), key="preset", widget="selectbox", group=MODEL,
                          options=preset_names(), when={"source": ("preset",)}, examples=("Llama-2-7B", "gpt-oss-20b"))
    config: str = setting(EXAMPLE_CONFIG, N_("config.json"), key="config", widget="text", group=MODEL,
                          when={"source": ("config",)}, examples=(OLD_STYLE_LINEAR_CONFIG,),
                          help=N_("The model's config.json as transformers writes it (rope_theta, head_dim or "
                                  "hidden_size / num_attention_heads, max_position_embeddings, rope_scaling)."))


def spec_of(config: dict) -> RopeSpec:
    try:
        return from_hf_config(config)
    except ValueError as err:
        raise SettingsError(str(err)) from err
