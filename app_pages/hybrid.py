"""Hybrid models: sliding windows and their small base, layers without RoPE, context extension, Llama 4's temperature."""

import streamlit as st

from ui.lesson import LessonPage

from i18n import _
from lessons import hybrid as lesson
from lessons.format import base_text, length_text
from references import cite

page = LessonPage(lesson.LESSON)
exaone = lesson.exaone_windows()

st.title(_("Hybrid models: windows, NoPE and context extension"))
st.markdown(_(
    "Most of today's long-context models do not give every layer the same RoPE. Gemma 3 follows five sliding-window "
    "layers with one full-attention layer ({gemma3}); EXAONE 4 rotates only its sliding-window layers and leaves its "
    "global layers without any position encoding, NoPE ({exaone4}); Llama 4 drops RoPE from every fourth layer "
    "({llama4}); Qwen3-Next's linear-attention layers have none. This page computes why a window keeps a small "
    "base, how each model's layers split, what that leaves for context extension to change, and what Llama 4 does "
    "on its layers without RoPE. The pages that read a config draw a model's layers one by one (its layer map)."
).format(gemma3=cite("gemma3"), exaone4=cite("exaone4"), llama4=cite("llama4")))
page.symbols()


def windows_part() -> None:
    page.controls(lesson.WINDOW, columns=4)
    result = page.result((lesson.WINDOW,))
    s = result.settings
    sliding, full = result.showcase
    st.markdown(_(
        "**What a window sees.** A sliding-window layer attends to the last W tokens (transformers' mask keeps key "
        "j for query i when j > i − W), so the largest distance its RoPE ever meets is W − 1 = **{farthest}**, "
        "however long the context. A pair whose wavelength λᵢ = 2π/θᵢ is longer than that never completes a turn "
        "inside the window: it can only tell near from far by a fraction of a turn. With d = {d} and W = {window}, "
        "base {local} gives **{local_turning} of {pairs}** pairs a full turn within the window, base {global_} only "
        "**{global_turning}**; the slowest pair turns {local_slowest:.4f} of a turn at base {local} and "
        "{global_slowest:.6f} at base {global_}. A larger base adds slow pairs for distances a window never reaches."
    ).format(farthest=length_text(result.farthest), d=s.head_dim, window=length_text(s.window),
             local=base_text(s.local_base), local_turning=result.turning(s.local_base), pairs=result.pairs,
             global_=base_text(s.global_base), global_turning=result.turning(s.global_base),
             local_slowest=result.slowest_turns(s.local_base), global_slowest=result.slowest_turns(s.global_base)))
    page.figure("window-wavelengths")
    st.markdown(_(
        "**Gemma 3 keeps 10k on its windows.** Its report raises the base to 1M on the global layers only and keeps "
        "the local layers at 10k ({gemma3}). Gemma 3 27B's config, read as its class reads it: {sliding} sliding "
        "layers over {span} tokens at base {sliding_base}, unscaled; {full} full-attention layers at base "
        "{full_base} with {rope_type} ×{factor:g}. **What that means for context extension:** at any length L′ a "
        "window's RoPE still meets only the distances 0 … W − 1 it met in training, so no angle is new and there is "
        "nothing for PI, NTK-aware or YaRN to fix; only the full-attention layers meet longer distances. Not every "
        "config follows this: EXAONE 4's only RoPE layers are its {exaone_window}-token windows, and its config puts "
        "{exaone_type} ×{exaone_factor:g} on them, which slows {changed} of their {exaone_pairs} pairs, {turning} of "
        "them pairs that turn within the window."
    ).format(gemma3=cite("gemma3", "§2"), sliding=sliding.layers, span=length_text(sliding.span),
             sliding_base=base_text(sliding.base), full=full.layers, full_base=base_text(full.base),
             rope_type=full.rope_type, factor=full.factor, exaone_window=length_text(exaone.window),
             exaone_type=exaone.rope_type, exaone_factor=exaone.factor, changed=exaone.changed,
             exaone_pairs=exaone.pairs, turning=exaone.changed_turning))


def nope_part() -> None:
    result = page.result((lesson.MODELS,))
    exaone_nope, exaone_total = result.nope_layers("EXAONE 4.0 32B")
    llama_nope, llama_total = result.nope_layers("Llama 4 (class defaults)")
    st.markdown(_(
        "**Layers without RoPE.** EXAONE 4 applies no position encoding in **{exaone_nope} of its {exaone_total}** "
        "layers (every full-attention layer, {exaone4}); Llama 4's `no_rope_layers` leave RoPE out of **{llama_nope} "
        "of {llama_total}** (every fourth, in transformers' defaults; {code}); Gemma 3 rotates in every layer. "
        "{yang} compare RoPE, NoPE and QK-Norm attention over long contexts and propose RNoPE-SWA: NoPE layers over "
        "the whole context alternating with RoPE layers over a sliding window, the NoPE layers retrieving from "
        "anywhere and the RoPE layers keeping the nearby order. A causal layer without position encoding still "
        "learns where tokens are from its mask ({nope})."
    ).format(exaone_nope=exaone_nope, exaone_total=exaone_total, exaone4=cite("exaone4"), llama_nope=llama_nope,
             llama_total=llama_total, code=cite("llama4_code"), yang=cite("rope_to_nope"), nope=cite("nope")))
    page.controls(lesson.MODELS)
    page.figure("layer-roles")
    st.markdown(_(
        "**What context extension changes.** A NoPE layer has no θ, so no angle can be unseen at any length; a "
        "window never meets a new distance. What is left to scale are the RoPE layers that attend over the whole "
        "context, and in EXAONE 4 and Llama 4 there are none. For the model picked above, layer kind by layer "
        "kind, what a context extension to L′ = {target} changes (the Plan page's reading):"
    ).format(target=length_text(lesson.PLAN_TARGET)))
    for line in page.result((lesson.MODELS,)).extension_lines:
        st.markdown(f"- {line}")


def temperature_part() -> None:
    page.controls(lesson.TEMPERATURE, columns=3)
    result = page.result((lesson.TEMPERATURE,))
    s = result.settings
    first, second, third, last = result.landmarks
    st.markdown(_(
        "**What a NoPE layer does instead.** Without positions, nothing in a NoPE layer favours the near keys, and "
        "as the context grows each key's share of the softmax shrinks. Llama 4 multiplies the queries of those "
        "layers by a factor that grows with the query's position m ({code}; the code cites {ssmax}; Meta calls it "
        "inference-time temperature scaling, {llama4}):"
    ).format(code=cite("llama4_code"), ssmax=cite("ssmax"), llama4=cite("llama4")))
    st.latex(r"q_m \leftarrow q_m\Big(1 + \text{attn\_scale}\cdot\ln\big(1 + \lfloor (m + 1)/\text{floor\_scale}\rfloor\big)\Big)")
    st.markdown(_(
        "With floor_scale = {floor} and attn_scale = {scale:g} it is 1 for the first {plain} positions, "
        "**×{v1:.4f}** at m = {m1}, **×{v2:.4f}** at {m2}, **×{v3:.4f}** at {m3} and **×{v4:.4f}** at {m4}. It has the "
        "shape of YaRN's √(1/t) = 0.1 ln s + 1 ({yarn}), but per query position, in steps of floor_scale tokens, and "
        "only on the layers without RoPE; and YaRN's multiplies both q and k (the score gets its square), Llama 4's "
        "only q."
    ).format(floor=length_text(s.floor_scale), scale=s.attn_scale, plain=length_text(s.floor_scale - 1),
             v1=first.value, m1=length_text(first.position), v2=second.value, m2=length_text(second.position),
             v3=third.value, m3=length_text(third.position), v4=last.value, m4=length_text(last.position),
             yarn=cite("yarn")))
    page.figure("temperature")
    short, long = lesson.LANDMARKS[0], lesson.LANDMARKS[2]
    st.markdown(_(
        "**What it does to a softmax.** One key whose logit stands Δ = {gap:g} above n − 1 equal others gets "
        "{plain_short:.4f} of the weight at n = {short} and {plain_long:.4f} at n = {long} with plain softmax; "
        "with the factor on the query, {tuned_short:.4f} and **{tuned_long:.4f}**."
    ).format(gap=s.gap, plain_short=result.needle_at(short, False), short=length_text(short),
             plain_long=result.needle_at(long, False), long=length_text(long),
             tuned_short=result.needle_at(short, True), tuned_long=result.needle_at(long, True)))
    page.figure("needle")


page.parts({"windows": windows_part, "nope": nope_part, "temperature": temperature_part})
