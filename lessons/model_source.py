"""Where the practitioner pages take a model from: a preset, or a pasted config.json (an uploaded file
becomes pasted text on the page, so the CLI, the tests and the page read it the same way)."""

from __future__ import annotations

import json

from i18n import N_, _
from lessons.base import SettingsError
from pe_core import RopeSpec, from_hf_config, load_presets

SOURCES = ("preset", "config")
SOURCE_TITLES = {"preset": N_("A real model"), "config": N_("Paste config.json")}


def preset_names() -> tuple[str, ...]:
    return tuple(p.name for p in load_presets())


def source_title(source: str) -> str:
    return _(SOURCE_TITLES[source])


def config_of(source: str, preset: str, text: str) -> dict:
    """The config dict the settings name; ``SettingsError`` with a readable sentence for a bad paste."""
    if source == "preset":
        return dict(next(p.config for p in load_presets() if p.name == preset))
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


def spec_of(config: dict) -> RopeSpec:
    try:
        return from_hf_config(config)
    except ValueError as err:
        raise SettingsError(str(err)) from err
