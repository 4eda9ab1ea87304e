"""Low-precision positions: why bfloat16 positions collide and what that does to RoPE."""

import math

import pandas as pd
import streamlit as st

from ui.lesson import LessonPage
from ui.rope import layer_map_part, rope_sidebar

from i18n import N_, _
from lessons import precision as lesson
from lessons.format import base_text, length_text, superscript
from references import cite

page = LessonPage(lesson.LESSON)
facts, marks = lesson.dtype_facts(), lesson.landmarks()

st.title(_("Low-precision positions"))
st.markdown(_(
    "A position is an integer m = 0, 1, …, L′ − 1. Code often turns it into a float before RoPE or ALiBi use it, "
    "and in mixed-precision training that float may be **bfloat16** or **float16**. Floats round to the nearest "
    "value they hold ({ieee}), and above {last_safe} bfloat16 no longer holds every integer: neighbouring tokens "
    "round to the same value and share one position. This page counts how many positions survive, shows which ones "
    "collide, and measures what that does to RoPE's angles and attention scores - the effect {wang} trace in "
    "long-context training."
).format(ieee=cite("ieee754"), last_safe=marks.first_inexact - 1, wang=cite("bf16_rope")))

with st.sidebar:
    rope_sidebar(page)


def exact_part() -> None:
    result = page.result(("rope",))
    st.markdown(_(
        "Each row rounds the positions 0 … {last} (L′ = {length}, set in the sidebar) to the dtype with torch's own cast "
        "and counts those that come back unchanged. Notice how early bfloat16 gives up (at {bf16}) - and that float16, "
        "more precise, instead **overflows**: above {largest} it has no finite numbers, so positions from {overflow} on "
        "become `inf`."
    ).format(last=length_text(result.length - 1), length=length_text(result.length),
             bf16=length_text(facts.first_inexact["bfloat16"]), largest=length_text(facts.float16_largest),
             overflow=length_text(facts.float16_overflow)))
    st.dataframe(pd.DataFrame([{
        _("dtype"): s.dtype,
        _("first inexact position"): f"{s.first_inexact:,}",
        _("exact positions"): _("{exact} of {length}").format(exact=length_text(s.exact), length=length_text(s.length)),
        _("exact (%)"): round(100 * s.exact_fraction, 2),
        _("distinct stored values"): s.distinct,
        _("largest collision group"): s.largest_group,
        _("overflowed to inf"): s.overflowed,
    } for s in result.summaries]).set_index(_("dtype")), width="stretch")
    st.markdown(result.head_sentence())
    page.figure("exact-fraction")

    st.markdown(_(
        "**Why.** A float with p significand bits (the hidden leading 1 included: {bits}) spaces its numbers evenly "
        "inside each binade [2ᵏ, 2ᵏ⁺¹). All integers up to 2ᵖ are exact; above, only multiples of the gap survive:"
    ).format(bits=", ".join(f"{name} {p}" for name, p in facts.bits.items())))
    st.latex(r"g(m) = 2^{\,k-p+1}\qquad (2^k \le m < 2^{k+1})")
    st.markdown(_("So the number N(K) of exact positions among 0, …, 2ᴷ − 1 is"))
    st.latex(r"N(K) = 2^p + (K - p)\,2^{p-1}\qquad (K \ge p)")
    check = result.power_of_two_check
    if check is not None:
        sentence = _("For bfloat16 at L′ = 2{K} = {length}: 2{p} + ({k} − {bits})·2{p1} = **{formula}** exact positions, "
                     "the same as the round-trip count in the table ({counted}, i.e. {percent:.1f}%).") if check.agrees \
            else _("For bfloat16 at L′ = 2{K} = {length}: 2{p} + ({k} − {bits})·2{p1} = **{formula}** exact positions, "
                   "**different from** the round-trip count in the table ({counted}, i.e. {percent:.1f}%).")
        st.markdown(sentence.format(K=superscript(check.exponent), length=length_text(result.length),
                                    p=superscript(check.bits), k=check.exponent, bits=check.bits,
                                    p1=superscript(check.bits - 1), formula=length_text(check.by_formula),
                                    counted=length_text(check.counted), percent=100 * check.fraction))
    page.figure("binade-spacing")
    st.markdown(_(
        "So above {last_safe} bfloat16 still holds some integers, just not **every** one: {next}, {next2}, … {until} are "
        "exact, then every {gap}th, and so on - the first casualty is {first}. At L′ = {length} only {exact} of the "
        "positions ({percent:.1f}%) are exact and up to {group} neighbouring tokens share one position; at L′ = "
        "{long_length} up to {long_group}."
    ).format(last_safe=marks.first_inexact - 1, next=marks.next_exact, next2=marks.next_exact + marks.first_gap,
             until=marks.step_two_until, gap=marks.next_gap, first=marks.first_inexact, length=length_text(marks.length),
             exact=length_text(marks.exact), percent=100 * marks.fraction, group=marks.largest,
             long_length=length_text(marks.long_length), long_group=length_text(marks.largest_long)))


def collisions_part() -> None:
    st.markdown(_(
        "Pick a stretch of positions. Points off the dotted diagonal are stored as a different number. Every value that "
        "several positions share has its own colour, drawn as a bar through those positions - the model cannot tell them "
        "apart. Groups alternate in size ({a}, {b}, {a}, {b} … where the gap is {gap}; {c}, {d}, {c}, {d} … where it is "
        "{gap2}) because exact ties round to the neighbour with an even last bit ({ieee}). float16 overflows at "
        "{overflow}; float32 first collides at {float32}."
    ).format(a=marks.tie_sizes[-1], b=marks.tie_sizes[0], gap=marks.first_gap, c=marks.tie_sizes_next[-1],
             d=marks.tie_sizes_next[0], gap2=marks.next_gap, ieee=cite("ieee754"),
             overflow=length_text(facts.float16_overflow), float32=length_text(facts.first_inexact["float32"])))
    page.controls(lesson.ZOOM, columns=3)
    buttons = st.columns(2)
    with buttons[0]:
        page.view_button(N_("Zoom to where float16 overflows"), lesson.FLOAT16_EDGE_VIEW)
    with buttons[1]:
        page.view_button(N_("Zoom to float32's first collisions"), lesson.FLOAT32_EDGE_VIEW)
    page.figure("collision-window")


def rope_part() -> None:
    page.controls(lesson.ERRORS)
    rope = page.result(("rope", lesson.ERRORS))
    if not rope.setup.setups:
        st.info(_("Pick a method in the sidebar to see RoPE's angle errors."))
        st.stop()
    analysed = rope.analysed
    st.markdown(_(
        "RoPE rotates pair i at position m by m·θᵢ. Where the rounding happens matters: five common orders of "
        "operations, each against the exact angle (float64). The error shown is what the model sees - the angle of the "
        "stored (cos, sin) - for **{title}** at d = {d}, base {base}, positions 0 … {last}, in {dtype}."
    ).format(title=_(analysed.title), d=analysed.spec.rotary_dim, base=base_text(analysed.spec.base),
             last=length_text(rope.length - 1), dtype=rope.settings.low_dtype))
    page.figure("angle-error")
    st.markdown(_("Positions rounded:"))
    st.latex(r"|\tilde m - m|\,\theta_i \;\le\; \tfrac{g(m)}{2}\,\theta_i")
    st.markdown(_("θ rounded:"))
    st.latex(r"m\,|\tilde\theta_i - \theta_i| \;\le\; m\,\theta_i\,2^{-p}")
    st.markdown(_("cos and sin rounded:"))
    st.latex(r"|\widetilde{\cos} - \cos|,\ |\widetilde{\sin} - \sin| \;\le\; 2^{-p}")
    st.markdown(_(
        "with g(m) the gap at m. Rounding the positions or θ makes errors that **grow with m** until the angle is noise "
        "(π); rounding only the final cos/sin costs a bounded 2⁻ᵖ = {bound:.4f} ({dtype}, p = {p}) at every position. "
        "Even the safe float32 order drifts: the angle m·θ is itself rounded to float32's gap at m·θ, up to {drift:.3f} "
        "rad for angles between 2¹⁹ and 2²⁰ (around a million)."
    ).format(bound=rope.cos_sin_bound, dtype=rope.settings.low_dtype, p=rope.low_bits,
             drift=marks.float32_half_gap_near_million))
    page.controls(lesson.HEATMAP)
    page.figure("angle-error-map")
    page.figure("logit-error")


def fix_part() -> None:
    st.markdown(_(
        "- **Buffers that follow the model's dtype.** Older RoPE code built positions with "
        "`t = torch.arange(n, dtype=self.inv_freq.dtype)`; after `model.to(torch.bfloat16)` (or loading with "
        "`torch_dtype=torch.bfloat16`) that is the *everything in bfloat16* line of the previous part's charts.\n"
        "- **Autocast.** Under `torch.autocast`, the matmul `inv_freq @ position_ids` runs in bfloat16 even when both "
        "inputs are float32 - the *positions* and *θ* lines at once.\n"
        "- **ALiBi and other position biases** built from float positions collide the same way.\n\n"
        "**The fix** transformers adopted ({fix}; its code says *\"Force float32 since bfloat16 loses precision on long "
        "contexts\"*): keep `inv_freq` in float32, make positions integers and convert them with `.float()`, compute m·θ "
        "and cos/sin in float32 with autocast disabled, and cast only the final cos/sin to the model's dtype - the "
        "*cos/sin rounded* line, whose error stays bounded. {wang} study what is left of RoPE's relative-position "
        "property in bfloat16 at long context."
    ).format(fix=cite("rope_float32"), wang=cite("bf16_rope")))
    st.caption(_("Significand bits read from torch.finfo: {bits}. Angles in radians; π = {pi:.4f} rad is the largest "
                 "possible angle error.").format(bits=", ".join(f"{k} {v}" for k, v in facts.bits.items()), pi=math.pi))


page.parts({"exact": exact_part, "collisions": collisions_part, "rope": rope_part, "fix": fix_part, "layers": lambda: layer_map_part(page)})
