"""The shared RoPE set-up in the sidebar (sliders, a real model, or a pasted config.json)."""

from __future__ import annotations

import json

import streamlit as st

from i18n import _
from lessons.rope_setup import GROUP, RopeSetup, config_examples, describe, rope_setup
from pe_core import preset_by_name
from ui.lesson import LessonPage


def _use_example(page: LessonPage, config: dict) -> None:
    controls = page.lesson.settings.controls()
    st.session_state[controls["source"].key] = "config"
    st.session_state[controls["config"].key] = json.dumps(config, indent=1)


def example_buttons(page: LessonPage, where: str) -> None:
    """One button per kind of config the app reads; a click puts that config in the paste box."""
    st.caption(_("Try an example:"))
    with st.container(horizontal=True):
        for number, (label, config) in enumerate(config_examples().items()):
            st.button(_(label), key=f"_example_{where}_{number}", on_click=_use_example, args=(page, config),
                      type="tertiary")


def rope_sidebar(page: LessonPage) -> RopeSetup | None:
    """Draw the RoPE controls of ``page``'s lesson (call inside ``st.sidebar``) and say what they resolve to.

    Returns the resolved set-up, or None when the settings cannot be used: the page then says why in
    the main area, next to the figures, with examples that work, and keeps the last settings that worked.

    Where the open part reads none of these settings (decay's bound chart has its own bases), they are drawn
    greyed out, with the reason and the parts that use them beside them: a control that moves nothing on screen
    would teach the class that the base does nothing.
    """
    idle = page.part_not_reading(GROUP)
    if idle is not None:
        users = ", ".join(f"“{_(part.tab)}”" for part in page.parts_reading(GROUP))
        st.info(_("“{part}” does not use the RoPE set-up: its charts take their own settings, beside them. These "
                  "controls set the parts {parts}.").format(part=_(idle.tab), parts=users),
                icon=":material/block:")
    page.controls(GROUP, disabled=idle is not None)
    settings = page.settings()
    if settings.source == "preset":
        preset = preset_by_name(settings.preset)
        st.caption(f"{_(preset.note)} ([{preset.hf_id}](https://huggingface.co/{preset.hf_id}))")
    elif settings.source == "config":
        with st.popover(_("Try an example"), icon=":material/lightbulb:"):
            example_buttons(page, "sidebar")
        page.error_help.append(lambda: example_buttons(page, "main"))
    try:
        setup = rope_setup(settings)
    except ValueError:
        return None
    if setup.model is not None or setup.capped:
        st.caption(describe(setup))
    return setup


def layer_map_part(page: LessonPage) -> None:
    """The model's layers, kind by kind, and which of them the page's other figures describe."""
    st.markdown(_(
        "Many of today's models are hybrids: some layers attend within a sliding window or a chunk, others over "
        "the whole context, and some apply no position encoding at all. Each kind has its own RoPE, so a "
        "context-extension method only matters for the kinds that see long distances. Pick a kind under "
        "**Layers shown** in the sidebar."))
    page.figure("layer-map")
