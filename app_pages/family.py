"""The wider family: each encoding's defining picture, from sinusoidal to Dual Chunk Attention.

Each part with controls is a fragment: moving one of its controls reruns that part only.
"""

import pandas as pd
import streamlit as st
import torch

import ui
from ui.formula import in_a_row, show_formula
from ui.layout import lazy_expander
from ui.lesson import LessonPage
from ui.pages import ROOT

from i18n import N_, _, sentences
from lessons import family as lesson
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("The wider family"))
st.markdown(_(
    "RoPE is one member of a larger family. Each encoding below answers the same question - *how does "
    "attention know where a token is?* - in its own way, and each has one picture that explains it. "
    "Every control changes the figure under it; the link in the address bar restores the view."
))


@st.fragment
def sinusoidal() -> None:
    st.markdown(_(
        "Each position gets a fixed vector of sines and cosines ({source}). **Notice** the fast stripes on the "
        "left and the slow ones on the right: the period grows geometrically with the dimension index, so low "
        "dimensions tell neighbours apart and high dimensions place a token in the whole sequence. Dimensions "
        "whose period is longer than the text barely move at all."
    ).format(source=cite("vaswani", "§3.5")))
    page.controls(lesson.SINUSOIDAL, columns=3)
    page.figure("sinusoidal-matrix")
    st.latex(r"PE_{(pos,\,2i)} = \sin\!\big(pos\cdot b^{-2i/d}\big),\qquad "
             r"PE_{(pos,\,2i+1)} = \cos\!\big(pos\cdot b^{-2i/d}\big)")
    page.figure("sinusoidal-periods")
    view = page.result((lesson.SINUSOIDAL,)).sinusoidal
    show_formula(r"T_j = 2\pi\, b^{\,2\lfloor j/2\rfloor/d}\ \text{tokens}:\quad T_0 = 2\pi \approx "
                 + f"{view.shortest:.2f}" + r",\qquad T_{d-1} = 2\pi\, b^{(d-2)/d} \approx "
                 + f"{view.longest:,.0f}".replace(",", "{,}") + r" < 2\pi b", N_("tokens"))


def trained_model():
    """The model trained in this session on the training page, if any.

    The agreed hand-over is ``st.session_state["training_run"].model``; the training page's own
    experiment record (``tt_experiment.run.model``) is read too, so either works.
    """
    for run in (st.session_state.get("training_run"), getattr(st.session_state.get("tt_experiment"), "run", None)):
        model = getattr(run, "model", None)
        if isinstance(model, torch.nn.Module):
            return model
    return None


def link_to_training() -> None:
    if not (ROOT / "app_pages" / "training.py").exists():
        return
    try:
        st.page_link("app_pages/training.py", label=_("Train a tiny transformer"), icon=":material/model_training:")
    except Exception:  # the page is not registered when this script runs on its own (tests, direct run)
        st.caption(_("Open **Train a tiny transformer** from the sidebar."))


def learned() -> None:
    st.markdown(_(
        "A learned table has one free vector per position up to the training length and nothing beyond it, "
        "which is why it cannot extrapolate ({source} found the two nearly identical within the trained "
        "length). **Notice** whether training made nearby positions similar (a bright band along the "
        "diagonal), the way the sinusoidal table is by construction."
    ).format(source=cite("vaswani", "§3.5")))
    model = trained_model()
    table = lesson.learned_table(model)
    if table is None:
        reason = (_("The model trained in this session uses another encoding, so it has no position table.")
                  if model is not None else _("No trained model in this session yet."))
        st.info(sentences([reason, _("Train one with *learned* absolute positions on the training page, come back, "
                                     "and its position table appears here.")]), icon=":material/model_training:")
        link_to_training()
        return
    try:
        view = lesson.learned_view(table)
    except ValueError as err:
        st.error(_("The trained model's position table could not be used: {message}").format(message=err))
        return
    ui.show_figure(view.figure, "family_learned", caption=view.caption)


@st.fragment
def alibi() -> None:
    st.markdown(_(
        "No position vectors at all ({source}): each head adds −m·(i − j) to its attention logits, a penalty that "
        "grows linearly with distance. The slopes m form a geometric sequence, so some heads look far and "
        "others near. **Notice** the straight line on the log axis, and how faint the far-looking heads' "
        "matrices are."
    ).format(source=cite("alibi", "§3")))
    page.controls(lesson.ALIBI, columns=3)
    page.figure("alibi-slopes")
    st.latex(r"m_n = 2^{-8n/N},\quad n = 1,\dots,N")
    st.markdown(_(
        "For a head count that is not a power of two, the paper's code takes the slopes of the nearest smaller "
        "power of two, 2ᵏ, and fills the remaining N − 2ᵏ heads with every other slope of 2ᵏ⁺¹ heads. {example}"
    ).format(example=lesson.alibi_example_text()))
    if page.settings().misquoted:
        st.caption(_(
            "A formula often quoted for ALiBi gives head n the slope $2^{-8/n}$. That sequence does not depend on "
            "the number of heads, is not geometric, and runs the wrong way (1/256 for the first head, climbing "
            "towards 1); the grey line shows it next to the paper's slopes."
        ))
    page.figure("alibi-bias")

    def slopes_table() -> None:
        view = page.result((lesson.ALIBI,)).alibi
        st.dataframe(pd.DataFrame({_("head"): range(1, len(view.slopes) + 1), _("slope m"): view.slopes.tolist(),
                                   _("log₂ m"): view.exponents.tolist()}), hide_index=True)
    lazy_expander(_("Slopes per head"), "slopes", slopes_table)


@st.fragment
def t5() -> None:
    st.markdown(_(
        "T5 learns one scalar bias per head and *bucket* of relative distance ({source}). Small distances get a "
        "bucket each; larger ones share buckets whose width grows logarithmically up to max_distance, beyond "
        "which everything falls in the last bucket. A bidirectional encoder spends half its buckets on each "
        "direction. **Notice** the causal curve's exact range is twice as long: it has all its buckets for "
        "the past."
    ).format(source=cite("t5")))
    page.controls(lesson.T5, columns=2)
    problem = lesson.problem(page.settings(), lesson.T5)
    if problem:
        st.error(_("These T5 settings cannot be drawn: {message}").format(message=problem), icon=":material/warning:")
        return
    page.figure("t5-buckets")
    st.latex(r"f(n) = \begin{cases} n & n < n_e \\ \min\!\Big(n_e + \Big\lfloor "
             r"\frac{\ln(n/n_e)}{\ln(\text{max\_distance}/n_e)}\,(B - n_e)\Big\rfloor,\ B - 1\Big) & n \ge n_e"
             r"\end{cases}")
    st.caption(_("n = |i − j|; B is the number of buckets per direction (num_buckets/2 when bidirectional, where "
                 "keys after the query add B to the index; num_buckets when causal); n_e = B/2 distances are "
                 "exact."))
    settings, view = page.settings(), page.result((lesson.T5,)).t5
    st.markdown(_("Bucket of each distance i − j (key before the query), at {buckets} buckets and max_distance "
                  "{distance}:").format(buckets=settings.t5_buckets, distance=settings.t5_max_distance))
    st.dataframe(pd.DataFrame([view.table_bidirectional, view.table_causal],
                              index=[_("f(i − j), bidirectional"), _("f(i − j), causal")],
                              columns=[str(n) for n in range(len(view.table_causal))]))
    st.caption(_("T5's default buckets ({source}): {facts}").format(source=cite("t5"),
                                                                   facts=lesson.t5_defaults_text()))


@st.fragment
def relative_schemes() -> None:
    st.markdown(_(
        "Relative schemes feed attention a function of the distance i − j. Plain RoPE uses the distance itself, "
        "so a long text produces distances never seen in training. Shaw et al. clip it ({shaw}), so every far "
        "token shares one learned vector; **ReRoPE** applies the same clipping to RoPE's rotation (distance w "
        "beyond the window), and **Leaky ReRoPE** lets it keep growing with slope 1/k ({rerope}; trained with "
        "Leaky ReRoPE and run with plain RoPE in {inverse}). **Notice** that ReRoPE's matrix never exceeds w "
        "however long the text."
    ).format(shaw=cite("shaw"), rerope=cite("rerope"), inverse=cite("leaky_rerope_inverse")))
    page.controls(lesson.RELATIVE, columns=4)
    page.figure("relative-matrices")
    st.latex(in_a_row(r"\text{ReRoPE: } \min(i-j,\ w)", r"\text{Leaky ReRoPE: } "
                      r"\begin{cases} i-j & i-j < w \\ w + \dfrac{i-j-w}{k} & i-j \ge w \end{cases}"))

    st.subheader(_("Dual Chunk Attention"))
    st.markdown(_(
        "DCA ({source}) cuts the text into chunks of s tokens and gives keys the position j mod s. A query in "
        "the key's own chunk uses i mod s (**intra-chunk**); a query in the next chunk uses s + (i mod s) for its "
        "first w = c − s tokens, so neighbours across the boundary keep their true distance, and c − 1 after "
        "that (**successive chunk**); every query further away uses c − 1 (**inter-chunk**). **Notice** that no "
        "entry exceeds c − 1, the largest distance seen in pretraining, whatever the text length."
    ).format(source=cite("dca", "§3.1")))
    page.controls(lesson.DCA, columns=3)
    page.figure("dual-chunk")
    show_formula(r"M[i][j] = \begin{cases} (i \bmod s) - (j \bmod s) & \lfloor i/s\rfloor = \lfloor j/s\rfloor \\ "
             r"P^{succ}_q[i] - (j \bmod s) & \lfloor i/s\rfloor - \lfloor j/s\rfloor = 1 \\ "
             r"(c-1) - (j \bmod s) & \text{otherwise} \end{cases}", N_("otherwise"))
    show_formula(r"P^{succ}_q[i] = \begin{cases} s + (i \bmod s) & (i \bmod s) < w \\ c-1 & \text{otherwise}\end{cases}",
                 N_("otherwise"))

    st.markdown(_("One row of each matrix - the last query looking back - side by side:"))
    page.figure("position-curves")


@st.fragment
def logit_scaling() -> None:
    st.markdown(_(
        "With more tokens to spread over, softmax attention grows flatter (its entropy rises with log n). "
        "**Log-n scaling** multiplies the logits by $\\log_L n$ so the entropy stays near what the model saw "
        "at its training length L ({entropy}; {chiang}); Qwen applies it only beyond L ({qwen}). **Notice** it "
        "is 1 at n = L and grows only logarithmically."
    ).format(entropy=cite("logn"), chiang=cite("chiang_cholak"), qwen=cite("qwen")))
    page.controls(lesson.SCALING)
    page.figure("log-n")
    length = page.settings().logn_train_length
    st.latex(r"\operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{\log_{L} n}{\sqrt d}\,QK^\top"
             r"\Big)V\qquad(L = " + str(length) + r":\ \log_{" + str(length) + r"} n)")
    st.markdown(_(
        "YaRN sharpens the softmax by a temperature that depends on the scale s = L′/L instead ({yarn}). Its "
        "√(1/t) multiplies q *and* k, so the logits grow by (0.1·ln s + 1)². Written in s, log-n is "
        "$\\log_L(sL) = 1 + \\ln s / \\ln L$ - which is also exactly the logit factor of LongRoPE's default "
        "attention scaling, √(1 + ln s / ln L) on q and on k ({longrope})."
    ).format(yarn=cite("yarn"), longrope=cite("longrope")))
    page.figure("temperature")
    st.latex(r"\sqrt{1/t} = 0.1\,\ln s + 1,\qquad \frac{q^\top k}{t\sqrt d} = (0.1\ln s + 1)^2\,"
             r"\frac{q^\top k}{\sqrt d}")


page.parts({"sinusoidal": sinusoidal, "learned": learned, "alibi": alibi, "t5": t5, "relative": relative_schemes,
            "logn": logit_scaling})
