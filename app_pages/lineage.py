"""From absolute to relative position: the four terms, the classic relative schemes, other absolute encodings.

The parts the score controls drive read them from the first part; the absolute encodings' part is a fragment (a
move of its controls reruns it alone).
"""

import streamlit as st

from ui.formula import show_checked, show_formula
from ui.lesson import LessonPage

from i18n import N_, _
from lessons import lineage as lesson
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("From absolute to relative position"))
st.markdown(_(
    "Before RoPE, the field moved from adding a position vector to each token towards telling attention how far "
    "apart two tokens are. Almost every step of that path starts from one expansion of the attention score and "
    "decides which of its four terms to keep, replace or drop. This page builds each scheme's score from the "
    "same random stand-ins for trained weights, so the only difference you see is the structure."
))


def four_terms_part() -> None:
    st.markdown(_(
        "Add a position vector $p_i$ to token $x_i$ before the projections $W_Q$ and $W_K$, and the score of query $i$ "
        "and key $j$ "
        "splits into four products: what the two contents say about each other, what each content says about the "
        "other's position, and what the two positions say about each other."
    ))
    page.controls(lesson.SCORES, columns=4)
    page.figure("four-terms")
    show_checked("lineage_four_terms")
    st.markdown(_(
        "Sinusoidal encodings were chosen because $PE(i)\\cdot PE(j)$ depends on $i - j$ only. But attention never "
        "sees that dot product: it sees $p_iW_QW_K^\\top p_j^\\top$, and a learned $W_QW_K^\\top$ brings back terms in "
        "$i + j$ (the position–position panel above is not constant along its diagonals)."
    ))
    show_checked("lineage_projected_sinusoid")


def schemes_part() -> None:
    page.figure("kept-terms")
    s = page.working_settings((lesson.SCORES,))

    st.subheader(_("Shaw et al. 2018: relative vectors in the keys and values"))
    st.latex(r"e_{ij} = \frac{x_iW_Q\big(x_jW_K + a^K_{ij}\big)^{\top}}{\sqrt{d}},\qquad "
             r"z_i = \sum_j \alpha_{ij}\big(x_jW_V + a^V_{ij}\big),\qquad "
             r"a^{K,V}_{ij} = w^{K,V}_{\operatorname{clip}(j-i,\,k)}")
    st.markdown(_(
        "Content–position survives with a learned vector per clipped offset, in the keys and in the values; the two "
        "terms with $p_i$ are gone. **Extrapolation:** any length runs, because every offset beyond $k = {k}$ reads "
        "the "
        "same row ({rows} rows in all), so far distances are simply not told apart. {source}"
    ).format(k=s.shaw_distance, rows=2 * s.shaw_distance + 1, source=cite("shaw", "§3")))

    st.subheader(_("Transformer-XL and XLNet: a sinusoid of i − j, and trainable u, v"))
    st.latex(r"A_{ij} = x_iW_qW_{k,E}^{\top}x_j^{\top} + x_iW_qW_{k,R}^{\top}R_{i-j} + u\,W_{k,E}^{\top}x_j^{\top} + "
             r"v\,W_{k,R}^{\top}R_{i-j}")
    st.markdown(_(
        "$p_j$ becomes the sinusoid $R_{{i-j}}$ with its own projection $W_{{k,R}}$; the query's position $p_iW_Q$ "
        "becomes two trainable vectors $u$ and $v$, the same at every position. **Extrapolation:** $R_{{i-j}}$ exists "
        "for every distance, but distances beyond those seen in training reach $W_{{k,R}}$, $u$ and $v$ untested. "
        "{xl}; XLNet made it widely known: {xlnet}."
    ).format(xl=cite("transformer_xl", "§3.3"), xlnet=cite("xlnet")))

    st.subheader(_("T5: drop the cross terms, learn one number per bucket"))
    show_formula(r"A_{ij} = q_i\cdot k_j + b_{\text{bucket}(j-i)}", N_("bucket"))
    st.markdown(_(
        "Content and position should not interact, so content–position and position–content go; "
        "position–position becomes a learned scalar per head and per log-spaced bucket of $j - i$. "
        "**Extrapolation:** every distance beyond "
        "max_distance shares the last bucket, so any length runs and far tokens are one blur. {source}"
    ).format(source=cite("t5", "§2.1")))

    st.subheader(_("DeBERTa: keep the cross terms, drop position–position"))
    st.latex(r"\tilde A_{ij} = Q^c_iK^{c\top}_j + Q^c_iK^{r\top}_{\delta(i,j)} + K^c_jQ^{r\top}_{\delta(j,i)},\qquad "
             r"H = \operatorname{softmax}\!\Big(\frac{\tilde A}{\sqrt{3d}}\Big)V^c")
    st.markdown(_(
        "The opposite choice to T5: both cross terms stay, with relative embeddings at $\\delta(i, j)$ and "
        "$\\delta(j, i)$, and position–position is dropped (it carries little once positions are relative). "
        "**Extrapolation:** offsets beyond $\\pm k$ (here $k = {k}$) share the end rows of the table, like Shaw's "
        "clipping; DeBERTa-v2 and v3 first put offsets in log buckets (see the part on table rows). {paper}, {code}."
    ).format(k=s.deberta_span, paper=cite("deberta", "§3.1"), code=cite("deberta_code")))
    show_checked("lineage_deberta_symmetry")

    st.subheader(_("TUPE: untie position from content"))
    st.latex(r"\alpha_{ij} = \frac{(x_iW_Q)(x_jW_K)^{\top}}{\sqrt{2d}} + \frac{(p_iU_Q)(p_jU_K)^{\top}}{\sqrt{2d}} + "
             r"b_{j-i}")
    st.markdown(_(
        "Word and position correlations are computed with separate projections and added, the cross terms dropped; "
        "TUPE-R adds a T5-style bias. **Extrapolation:** the absolute table $p_i$ ends at the training length, so the "
        "untied term has nothing to say beyond it; the bias behaves like T5's. {source}"
    ).format(source=cite("tupe")))
    show_checked("lineage_logit_scale")


def attention_part() -> None:
    st.markdown(_(
        "Below, each scheme's score minus its content–content term, for the same tokens and tables. A relative "
        "scheme gives a matrix that is constant along every diagonal when the content is fixed; the absolute score "
        "does not. Switch the content to random tokens: Shaw, Transformer-XL and DeBERTa look the offset up through "
        "the content, so their position part then varies with the tokens too, while T5's bias does not."
    ))
    page.figure("position-part")
    result = page.result((lesson.SCORES,))
    rows = [f"| {lesson.scheme_title(name)} | {lesson.dependence_note(value)} |"
            for name, value in result.dependence.items()]
    header = "| {} | {} |".format(_("scheme"), _("position part"))
    st.markdown("\n".join([header, "| --- | --- |", *rows]))


def table_rows_part() -> None:
    st.markdown(_(
        "A relative scheme can only tell apart the distances that land on different rows of its table. Shaw and "
        "DeBERTa clip, T5 buckets logarithmically, DeBERTa-v2 does both."
    ))
    page.controls(lesson.DISTANCES, columns=3)
    page.figure("distance-index")
    distances = page.result((lesson.SCORES, lesson.DISTANCES))
    st.markdown(_(
        "On ±{far}: Shaw reads {shaw} rows, T5 {t5}, DeBERTa as in the paper {deberta}, and DeBERTa-v2's log buckets "
        "{log} of its {table}."
    ).format(far=distances.settings.max_offset, shaw=distances.index_curves[0].distinct,
             t5=distances.index_curves[1].distinct, deberta=distances.index_curves[2].distinct,
             log=distances.index_curves[3].distinct, table=distances.index_curves[3].table_size))
    show_formula(r"\delta(i,j) = \begin{cases}0 & i-j \le -k\\ 2k-1 & i-j \ge k\\ i-j+k & \text{otherwise}\end{cases}",
                 N_("otherwise"))
    st.markdown(_("DeBERTa-v2's log buckets:"))
    st.latex(r"r \mapsto \operatorname{sign}(r)\Big(m + \Big\lceil "
             r"\frac{\ln(|r|/m)}{\ln((P-1)/m)}(m-1)\Big\rceil\Big)\ \ (|r| > m = \tfrac{B}{2})")


@st.fragment
def absolute_part() -> None:
    """The other absolute encodings (their own controls; a move of one reruns this part only)."""
    st.markdown(_(
        "Not every answer was relative. These schemes still give each position its own vector; the figure shows how "
        "alike two positions look to a dot product."
    ))
    page.controls(lesson.ABSOLUTE, columns=4)
    page.figure("absolute-schemes")
    absolute = page.result((lesson.ABSOLUTE,))

    st.subheader(_("FLOATER: positions from an ODE"))
    st.markdown(_(
        "Liu et al. let a neural network $h$ define how the position vector moves, $dp/dt = h(p, t)$, and integrate it "
        "to any position. For a linear $h$ the solution is the sinusoidal encoding. **Extrapolation:** the ODE can be "
        "integrated past the training length; whether the result is useful depends on the learned $h$. {source}"
    ).format(source=cite("floater")))
    show_checked("absolute_floater_sinusoid")

    st.subheader(_("Multiplicative position"))
    st.markdown(_(
        "Multiply instead of add: $x_i \\odot p_i$. Position and content can no longer be separated, and with "
        "sinusoidal $p$ the token decides how much of the similarity is relative ({percent:.0f}% of this token's "
        "is not). **Extrapolation:** that of the table p. {source}"
    ).format(percent=100 * absolute.absolute_dependence["multiplicative"], source=cite("su_position_survey")))
    show_checked("absolute_multiplicative")

    st.subheader(_("Hierarchical decomposition of a learned table"))
    st.markdown(_(
        "Su extends $n$ trained positions to $n^2$ by writing a position in base $n$ and mixing two basis vectors; the "
        "first $n$ positions stay exactly as trained. **Extrapolation:** BERT's {bert} positions become {square:,} "
        "without new parameters (here $n = {n}$ gives {here}). At $\\alpha = 1/2$ the digits collide: this view has "
        "{collisions} colliding pairs of positions. {source}"
    ).format(bert=lesson.BERT_POSITIONS, square=lesson.BERT_POSITIONS ** 2, n=absolute.settings.table_size,
             here=absolute.settings.table_size ** 2, collisions=absolute.hierarchical_collisions,
             source=cite("su_hierarchical")))
    show_checked("absolute_hierarchical")

    st.subheader(_("Complex-order embeddings"))
    st.markdown(_(
        "Wang et al. make each word a wave over positions, $f(w, t) = r_w e^{{i(\\omega_w t + \\varphi_w)}}$, and run "
        "complex-valued layers on it. **Extrapolation:** any $t$ has a value, and moving a word by $n$ turns it by "
        "$\\omega_w n$ wherever it is. {source}"
    ).format(source=cite("complex_order")))
    show_checked("absolute_complex_order")

    st.subheader(_("CNNs read position from zero padding"))
    st.markdown(_(
        "A convolution treats every position alike, so on a constant input only the zero padding at the edges makes "
        "positions differ: with {layers} layers of width {kernel} the {radius} positions nearest each edge do "
        "({marked} of {total} here); circular padding removes even that. **Extrapolation:** absolute position is "
        "readable only within the receptive field of an edge, never in the middle of a long input. {source}"
    ).format(layers=absolute.settings.cnn_layers, kernel=absolute.settings.cnn_kernel, radius=absolute.cnn_radius,
             marked=absolute.cnn_marked, total=absolute.settings.abs_positions, source=cite("cnn_position")))
    show_formula(r"\text{receptive radius} = \text{layers}\cdot\frac{\text{kernel width} - 1}{2}",
                 N_("receptive radius"), N_("layers"), N_("kernel width"))


page.parts({"four-terms": four_terms_part, "schemes": schemes_part, "what-attention-gets": attention_part,
            "table-rows": table_rows_part, "absolute": absolute_part})
