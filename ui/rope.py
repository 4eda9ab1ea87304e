"""The shared RoPE set-up in the sidebar (sliders, a real model, or a pasted config.json)."""

from __future__ import annotations

import streamlit as st

from i18n import _
from lessons.rope_setup import GROUP, RopeSetup, describe, rope_setup
from pe_core import preset_by_name
from ui.lesson import LessonPage


def rope_sidebar(page: LessonPage) -> RopeSetup | None:
    """Draw the RoPE controls of ``page``'s lesson (call inside ``st.sidebar``) and say what they resolve to.

    Returns the resolved set-up, or None when the settings cannot be used (the page's figures then
    say why, in the main area, and keep the last settings that worked).
    """
    page.controls(GROUP)
    settings = page.settings()
    if settings.source == "preset":
        preset = preset_by_name(settings.preset)
        st.caption(f"{_(preset.note)} ([{preset.hf_id}](https://huggingface.co/{preset.hf_id}))")
    try:
        setup = rope_setup(settings)
    except ValueError:
        return None
    if setup.model is not None or setup.capped:
        st.caption(describe(setup))
    return setup
