"""Caveats of context extension: dynamic NTK's KV cache, NTK's s, PI's map, ReRoPE's cost."""

import streamlit as st

from ui.formula import show_checked, show_formula
from ui.lesson import LessonPage

from i18n import N_, _
from lessons import caveats as lesson
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("Caveats of context extension"))
st.markdown(_(
    "The recipes for running RoPE beyond its training length come with small print that write-ups often drop. "
    "Each part below is computed, not asserted: a cache that mixes bases, an NTK factor that must be set higher "
    "than the real extension, a position map that is easy to write upside down, and the price of ReRoPE."
))

def kv_cache_part() -> None:
    st.markdown(_(
        "Dynamic NTK recomputes RoPE's base from the current length at every step ({dynamic}). A KV cache that stores "
        "keys *after* RoPE keeps each key rotated with the base of the moment it was written, while the new query uses "
        "today's base: the scores no longer depend on the distance alone. The YaRN paper warns about exactly this and "
        "asks for keys to be cached before RoPE ({yarn})."
    ).format(dynamic=cite("dynamic_ntk"), yarn=cite("yarn", "§3.3")))
    page.controls(lesson.KV, columns=5)
    page.figure("kv-error")
    kv = page.result((lesson.KV,))
    st.markdown(_(
        "At ℓ = {longest:,} the last query's scores against cached keys are off by {measured:.2f} of their own RMS "
        "(closed form {expected:.2f}), and {stale:,} of the {keys:,} cached keys were rotated with an older base: the base "
        "has grown from {base} to {current:,.0f}. Re-rotating the cached keys with the current base gives 0. Up to "
        "ℓ = L nothing changes, because the base only starts to grow there."
    ).format(longest=int(kv.kv.lengths[-1]), measured=float(kv.kv.measured[-1]), expected=float(kv.kv.expected[-1]),
             stale=kv.kv.stale_keys, keys=int(kv.kv.lengths[-1]), base=f"{kv.settings.base:,.0f}",
             current=kv.kv.current_base))
    page.figure("kv-keys")
    show_checked("caveat_dynamic_cache_error")


def ntk_scale_part() -> None:
    st.markdown(_(
        "NTK-aware scaling raises the base to b·s^(d/(d−2)) so that the slowest pair is interpolated exactly like PI "
        "({ntk}). Set s to the real ratio L′/L and only that pair lands on its trained range: the pairs between the fast "
        "ones (which turned fully in training) and the slowest one still sweep angles they never saw. The YaRN paper "
        "notes that in practice s has to be set higher than the expected extension, and that fine-tuning with "
        "NTK-aware interpolation gives worse results than PI ({yarn})."
    ).format(ntk=cite("ntk_aware"), yarn=cite("yarn", "§3.1")))
    head, extension = st.columns(2)  # one row on a wide screen: the head, then the extension PI's part shares
    with head:
        page.controls(lesson.NTK, columns=2)
    with extension:
        page.controls(lesson.EXTENSION, columns=2)
    page.figure("ntk-angles")
    ntk = page.result((lesson.NTK, lesson.EXTENSION))
    reach = ntk.ntk_at_ratio
    st.markdown(_(
        "With s = {ratio:g}, {unseen} pairs go beyond their trained angles, the worst (pair i₀ = {first}, the first that "
        "never turns in training) by {worst:.3g}×. Keeping all of them inside needs s = {needed:.4g}; the setting "
        "s = {ratio:g} is only safe up to L′/L = {safe:.4g}."
    ).format(ratio=ntk.settings.ratio, unseen=ntk.unseen_pairs, first=reach.first_partial_pair,
             worst=ntk.worst_ratio, needed=reach.required_scale, safe=reach.safe_ratio))
    page.figure("ntk-reach")
    show_checked("caveat_ntk_required_scale")


def pi_map_part() -> None:
    page.controls(lesson.EXTENSION, columns=2)
    ntk = page.result((lesson.EXTENSION,))
    st.markdown(_(
        "The YaRN paper writes every method as RoPE at a remapped position g(m) with remapped frequencies h(θ). For PI "
        "the map compresses: g(m) = m/s with s = L′/L, so the longest position L′ = {target:,} lands on L = {train:,} "
        "({pi}). Written as g(m) = s·m it would send L′ to {slipped:,}, {times:g} times further than training ever went."
    ).format(target=ntk.pi_target, train=ntk.settings.ntk_train_length, pi=cite("pi"),
             slipped=ntk.pi_slipped, times=ntk.slip_factor))
    page.figure("pi-map")
    show_checked("caveat_pi_map")


def rerope_part() -> None:
    st.markdown(_(
        "ReRoPE keeps the trained relative positions inside a window w and clips every longer distance to w "
        "({rerope}). No rotation of q and k alone can give a clipped distance, so the reference code computes two score "
        "matrices and picks entry by entry, and its cache holds unrotated keys that are rotated again at every step. "
        "That costs FLOPs, counted here per layer:"
    ).format(rerope=cite("rerope")))
    page.controls(lesson.COST, columns=4)
    page.figure("rerope-cost")
    cost = page.result((lesson.COST,))
    quotes = [(n, cost.cost_at(n)) for n in lesson.COST_QUOTES]
    st.markdown(_(
        "With D = {width:,}: encoding {short:,} tokens costs {short_prefill:.3f}× RoPE and each generated token "
        "{short_decode:.3f}×; at {long:,} tokens {long_prefill:.3f}× and {long_decode:.3f}×. The limits are 3/2 and 7/4."
    ).format(width=cost.settings.model_width, short=quotes[0][0],
             short_prefill=float(quotes[0][1].prefill_ratio["rerope"][0]),
             short_decode=float(quotes[0][1].decode_ratio["rerope"][0]), long=quotes[-1][0],
             long_prefill=float(quotes[-1][1].prefill_ratio["rerope"][0]),
             long_decode=float(quotes[-1][1].decode_ratio["rerope"][0])))
    show_checked("caveat_rerope_cost")
    st.subheader(_("Train with Leaky ReRoPE, infer with RoPE"))
    st.markdown(_(
        "Su's way around the cost turns the idea around ({inverse}): train with Leaky ReRoPE, where distances beyond "
        "the window w grow k times faster, w + k·(i − j − w), so a short training run already shows the model long "
        "relative positions; then run plain RoPE, at RoPE's cost. Trained at {train:,} with w = {window} and k = {k:g} "
        "the model has seen relative positions up to {reach:,.0f}, so plain RoPE stays within them up to that length."
    ).format(inverse=cite("leaky_rerope_inverse"), train=cost.settings.leaky_train, window=cost.settings.leaky_window,
             k=cost.settings.leaky_k, reach=cost.leaky_reach))
    show_formula(r"\text{relative position in training} = \begin{cases} i - j & i - j < w\\ w + k\,(i - j - w) & "
                 r"i - j \ge w\end{cases},\qquad \max = w + k\,(L - 1 - w)", N_("relative position in training"))


page.parts({"kv-cache": kv_cache_part, "ntk-scale": ntk_scale_part, "pi-map": pi_map_part,
            "rerope": rerope_part})
