"""Multimodal RoPE: which pairs carry time, height and width, and the positions of a text + image sequence."""

import streamlit as st

from ui.formula import show_formula
from ui.lesson import LessonPage

from i18n import N_, _
from lessons import mrope as lesson
from pe_core.mrope import HEIGHT, TIME, WIDTH
from references import cite

page = LessonPage(lesson.LESSON)
chunked, interleaved, partial = lesson.models()
widest = lesson.Settings.controls()["grid_width"].max_value
span = widest - 1  # the largest width difference inside the widest image

st.title(_("Multimodal RoPE"))
st.markdown(_(
    "A model that reads images places each image token on a grid, not on a line. Qwen2-VL's **M-RoPE** ({qwen2vl}) "
    "gives every token three positions - time, height and width - and splits the head's rotary pairs among them: "
    "each pair turns by the position of its own axis. A text token has the same number on all three, so on text "
    "M-RoPE is plain RoPE. Which pairs follow which axis is set by the config's `mrope_section` (how many pairs "
    "each axis gets) and, since Qwen3-VL ({qwen3vl}), by `mrope_interleaved`."
).format(qwen2vl=cite("qwen2_vl"), qwen3vl=cite("qwen3_vl")))
show_formula(r"\phi_i(n) = p_{a(i)}(n)\,\theta_i,\qquad a(i) \in \{t, h, w\},\qquad "
             r"p_t = p_h = p_w = \text{position for a text token}", N_("position for a text token"))
page.symbols()


def pairs_part() -> None:
    st.markdown(_(
        "**Blocks or turns.** {chunked} ({qwen25}) keeps Qwen2-VL's blocks: `mrope_section` {chunked_section} gives "
        "time the {time} fastest pairs, height the next {height} and width the {width} slowest. {alternating} and "
        "{partial} alternate (`mrope_interleaved`): pair i follows height when i mod 3 = 1, width when i mod 3 = 2 (while that axis has "
        "pairs left), and time otherwise, so every axis gets pairs from the fastest to the slowest."
    ).format(chunked=chunked.name, qwen25=cite("qwen2_5_vl"), chunked_section=list(chunked.section),
             time=chunked.section[TIME], height=chunked.section[HEIGHT], width=chunked.section[WIDTH],
             alternating=interleaved.name, partial=partial.name))
    page.figure("pair-axes")
    st.markdown(_(
        "**Why it matters.** An axis tells positions apart only through the pairs that follow it. In {chunked} the "
        "fastest width pair has a wavelength of {chunked_width:,.0f} tokens: across the widest image on this page "
        "({widest} tokens, width positions differing by up to {span}) it turns {chunked_turns:.4f} of a turn, so "
        "width is carried only by pairs that hardly move inside an image. In {alternating} the fastest width pair's "
        "wavelength is {alternating_width:.1f} tokens and it turns {alternating_turns:.2f} times over the same "
        "span. The Qwen3-VL report calls the blocks' spectrum imbalanced ({qwen3vl}); {huang} compare the two "
        "allocations."
    ).format(chunked=chunked.name, chunked_width=chunked.bands[WIDTH].shortest, widest=widest, span=span,
             chunked_turns=chunked.fastest_turns(WIDTH, span), alternating=interleaved.name,
             alternating_width=interleaved.bands[WIDTH].shortest,
             alternating_turns=interleaved.fastest_turns(WIDTH, span), qwen3vl=cite("qwen3_vl"),
             huang=cite("mrope_interleave")))
    page.figure("axis-wavelengths")


def image_part() -> None:
    page.controls(lesson.IMAGE, columns=4)
    result = page.result((lesson.IMAGE,))
    s = result.settings
    st.markdown(_(
        "**Positions of a sequence**, computed as transformers' `get_rope_index` does ({code}): {before} text tokens, "
        "an image of {rows} × {columns} tokens (each a 2 × 2 merge of the vision encoder's patches), then {after} "
        "text tokens. The text before the image counts 0, 1, 2, … on all three axes. The image's tokens, listed row "
        "by row, all get time {start} (one picture is one frame), height {start} + row and width {start} + column. "
        "The text after it resumes at {start} + max({rows}, {columns}) = **{resume}**, not after all {tokens} of the "
        "image's tokens: the last token's position is **{last}**, where plain RoPE would give {plain}."
    ).format(code=cite("qwen2_vl_code"), before=s.text_before, rows=s.grid_height, columns=s.grid_width,
             after=s.text_after, start=s.text_before, resume=result.resumes_at, tokens=result.image_tokens,
             last=result.last_position, plain=result.tokens - 1))
    page.figure("sequence-positions")
    page.figure("image-grid")
    st.caption(_(
        "A video adds frames along the time axis: Qwen2-VL steps the time position by 1 per temporal patch (two "
        "frames), Qwen2.5-VL by the patch's duration in seconds × `tokens_per_second` ({qwen25}; {code}); Qwen3-VL "
        "writes timestamps into the text instead ({qwen3vl})."
    ).format(qwen25=cite("qwen2_5_vl"), code=cite("qwen2_vl_code"), qwen3vl=cite("qwen3_vl")))


page.parts({"pairs": pairs_part, "image": image_part})
