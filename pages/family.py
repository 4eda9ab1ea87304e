"""The wider family: each encoding's defining picture, from sinusoidal to Dual Chunk Attention."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st
import torch

import ui
from figures import family as figs
from pe_core import family
from pe_core.biases import alibi_slopes
from ui import params
from ui.pages import ROOT

D = figs.DEFAULTS
SIN_DIMS = (16, 32, 64, 128, 256)
BASES = (100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0)
SIN_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048)
ALIBI_LENGTHS = (16, 32, 64, 128, 256)
T5_BUCKETS = (8, 16, 32, 64, 128)
T5_DISTANCES = (16, 32, 64, 128, 256, 512, 1024)
REL_LENGTHS = (16, 32, 64, 128, 256)
SMALL_DISTANCES = (1, 2, 4, 8, 16, 32, 64, 128)
LEAKY_KS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DCA_TRAIN_LENGTHS = (8, 16, 32, 64, 128)
DCA_CHUNK_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
LOGN_TRAIN_LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768, 131072)
SEED_TABLE_DISTANCES = 31  # seed 004 prints i − j = 0 .. 30


def _base(value: float) -> str:
    return f"{value:,.0f}"


# Each view computes through pe_core and builds its figures once per setting. Figures are cached as
# resources (shared, never copied): building a plotly figure costs more than the maths here, and no
# code mutates a shown figure (ui.show_figure and the slide style work on copies). Plain numbers the
# page prints come back alongside.


@st.cache_resource(max_entries=32)
def _sinusoidal_view(length: int, dim: int, base: float):
    encoding = family.sinusoidal_encoding(length, dim, base)
    periods = family.sinusoidal_periods(dim, base)
    return (figs.sinusoidal_matrix_figure(encoding, base), figs.sinusoidal_periods_figure(periods, base, length),
            int((periods <= length).sum()), periods[-1].item())


@st.cache_resource(max_entries=32)
def _alibi_view(heads: int, length: int, show_misquoted: bool):
    shown = figs.alibi_heads_to_show(heads)
    slopes = alibi_slopes(heads)
    misquoted = family.misquoted_alibi_slopes(heads) if show_misquoted else None
    return (figs.alibi_slopes_figure(slopes, misquoted),
            figs.alibi_bias_figure(family.alibi_head_biases(heads, length, shown), slopes, shown),
            slopes.tolist())


@st.cache_resource(max_entries=32)
def _t5_view(num_buckets: int, max_distance: int):
    distances = torch.arange(SEED_TABLE_DISTANCES)
    curves = family.t5_bucket_curves(num_buckets, max_distance)
    table = (family.t5_buckets_by_distance(distances, True, num_buckets, max_distance).tolist(),
             family.t5_buckets_by_distance(distances, False, num_buckets, max_distance).tolist())
    return figs.t5_bucket_figure(*curves, num_buckets, max_distance), table


@st.cache_resource(max_entries=32)
def _relative_view(length: int, shaw_clip: int, window: int, leaky_k: float):
    schemes = family.relative_position_schemes(family.relative_distances(length), shaw_clip, window, leaky_k)
    largest = {name: float(torch.nan_to_num(matrix, nan=0).max()) for name, matrix in schemes.items()}
    titles = figs.scheme_titles(shaw_clip, window, leaky_k)
    return figs.relative_matrices_figure(figs.labelled(schemes, titles), length), largest


@st.cache_resource(max_entries=32)
def _dual_chunk_view(length: int, chunk_size: int, train_length: int):
    dca = family.dual_chunk_positions(length, chunk_size, train_length)
    figure = figs.dual_chunk_figure(dca.relative, dca.kind, chunk_size, train_length, family.DCA_KINDS)
    return figure, float(torch.nan_to_num(dca.relative, nan=0).max())


@st.cache_resource(max_entries=32)
def _curves_view(length: int, shaw_clip: int, window: int, leaky_k: float, chunk_size: int, train_length: int):
    distance = torch.arange(length, dtype=torch.float64)
    curves = figs.labelled(family.relative_position_schemes(distance, shaw_clip, window, leaky_k),
                           figs.scheme_titles(shaw_clip, window, leaky_k))
    curves[figs.dca_curve_title(chunk_size, train_length)] = family.dual_chunk_last_query(length, chunk_size,
                                                                                          train_length)
    return figs.position_curves_figure(distance, curves, window)


@st.cache_resource(max_entries=32)
def _scaling_view(train_length: int):
    lengths = family.log_spaced(1, 64 * train_length)
    scales = family.log_spaced(1, 128)
    log_n = figs.log_n_figure(lengths, family.attention_e_scale(lengths, train_length),
                              family.clipped_log_n_scale(lengths, train_length), train_length)
    temperature = figs.temperature_figure(
        scales, family.yarn_sqrt_inverse_temperature(scales), family.yarn_logit_scale(scales),
        family.attention_e_scale(scales * train_length, train_length), train_length)
    return log_n, temperature


def _trained_model():
    """The live-trained model of this session, if the training page left one.

    The agreed hand-over is ``st.session_state["training_run"].model``; the training page's own
    experiment record (``tt_experiment.run.model``) is read too, so either works.
    """
    for run in (st.session_state.get("training_run"), getattr(st.session_state.get("tt_experiment"), "run", None)):
        model = getattr(run, "model", None)
        if isinstance(model, torch.nn.Module):
            return model
    return None


def _learned_position_embedding(model) -> torch.Tensor | None:
    embedding = getattr(getattr(model, "position_embedding", None), "weight", None)
    if isinstance(embedding, torch.Tensor) and embedding.ndim == 2 and min(embedding.shape) >= 1:
        return embedding
    return None


def _link_to_training() -> None:
    if not (ROOT / "pages" / "training.py").exists():
        return
    try:
        st.page_link("pages/training.py", label="Train a tiny transformer", icon=":material/model_training:")
    except Exception:  # the page is not registered when this script runs on its own (tests, direct run)
        st.caption("Open **Train a tiny transformer** from the sidebar.")


st.title("The wider family")
st.markdown(
    "RoPE is one member of a larger family. Each encoding below answers the same question - *how does "
    "attention know where a token is?* - in its own way, and each has one picture that explains it. "
    "Every control changes the figure under it; the link in the address bar restores the view."
)

# --- sinusoidal --------------------------------------------------------------------------------
st.header("Sinusoidal (Vaswani et al., 2017)")
st.markdown(
    "Each position gets a fixed vector of sines and cosines. **Notice** the fast stripes on the left and "
    "the slow ones on the right: the period grows geometrically with the dimension index, so low "
    "dimensions tell neighbours apart and high dimensions place a token in the whole sequence. "
    "Dimensions whose period is longer than the text barely move at all."
)
left, middle, right = st.columns(3)
with left:
    sin_dim = params.select_slider("Embedding dim d", "sd", SIN_DIMS, D["sin_dim"])
with middle:
    sin_base = params.select_slider("Base", "sb", BASES, D["sin_base"], format_func=_base)
with right:
    sin_length = params.select_slider("Positions shown", "sL", SIN_LENGTHS, D["sin_length"])
matrix_figure, periods_figure, periods_within, longest_period = _sinusoidal_view(sin_length, sin_dim, sin_base)
ui.show_figure(matrix_figure, "family_sin_matrix")
st.latex(r"PE_{(pos,\,2i)} = \sin\!\big(pos\cdot b^{-2i/d}\big),\qquad PE_{(pos,\,2i+1)} = \cos\!\big(pos\cdot b^{-2i/d}\big)")
ui.show_figure(
    periods_figure, "family_sin_periods",
    caption=f"{periods_within} of {sin_dim} dimensions complete a full period within {sin_length:,} positions. "
            f"The longest period is {longest_period:,.0f} tokens.",
)
st.latex(r"T_j = 2\pi\, b^{\,2\lfloor j/2\rfloor/d}\ \text{tokens}:\quad T_0 = 2\pi \approx 6.28,\qquad "
         r"T_{d-1} = 2\pi\, b^{(d-2)/d} < 2\pi b")

# --- learned -----------------------------------------------------------------------------------
st.header("Learned absolute embeddings (BERT, GPT-2)")
st.markdown(
    "A learned table has one free vector per position up to the training length and nothing beyond it, "
    "which is why it cannot extrapolate. **Notice** whether training made nearby positions similar "
    "(a bright band along the diagonal) the way the sinusoidal table is by construction."
)
trained = _trained_model()
learned = _learned_position_embedding(trained)
if learned is None:
    what = ("The model trained in this session uses another encoding, so it has no position table. "
            if trained is not None else "No trained model in this session yet. ")
    st.info(
        what + "Train one with *learned* absolute positions on the training page, come back, and its position "
        "table appears here.",
        icon=":material/model_training:",
    )
    _link_to_training()
else:
    with ui.user_errors("The trained model's position table"):
        similarity = family.learned_and_sinusoidal_similarity(learned)
        sampled = "" if len(similarity.positions) == learned.shape[0] else (
            f" (every {learned.shape[0] / len(similarity.positions):.1f}th position shown)")
        ui.show_figure(
            figs.learned_similarity_figure(similarity.learned, similarity.sinusoidal, similarity.positions),
            "family_learned",
            caption=f"{learned.shape[0]} learned positions of dimension {learned.shape[1]}{sampled}; "
                    "similarity is the cosine between two positions' vectors.",
        )

# --- ALiBi -------------------------------------------------------------------------------------
st.header("ALiBi (Press et al., 2022)")
st.markdown(
    "No position vectors at all: each head adds −m·(i − j) to its attention logits, a penalty that grows "
    "linearly with distance. The slopes m form a geometric sequence, so some heads look far and others "
    "near. **Notice** the straight line on the log axis, and how faint the far-looking heads' matrices are."
)
left, middle, right = st.columns(3)
with left:
    heads = params.slider("Heads N", "ah", 1, 64, D["alibi_heads"])
with middle:
    alibi_length = params.select_slider("Bias matrix length", "aL", ALIBI_LENGTHS, D["alibi_length"])
with right:
    show_misquoted = params.checkbox("Compare with 2^(−8/n)", "am", True)
slopes_figure, bias_figure, slopes = _alibi_view(heads, alibi_length, show_misquoted)
ui.show_figure(slopes_figure, "family_alibi_slopes")
st.latex(r"m_n = 2^{-8n/N},\quad n = 1,\dots,N \qquad(\text{e.g. } N = 8:\ \tfrac12, \tfrac14, \dots, \tfrac1{256})")
st.markdown(
    "For a head count that is not a power of two, the paper's code takes the slopes of the nearest smaller "
    "power of two, 2ᵏ, and fills the remaining N − 2ᵏ heads with every other slope of 2ᵏ⁺¹ heads "
    "(for 12 heads: 1/2 … 1/256, then 2^−0.5, 2^−1.5, 2^−2.5, 2^−3.5)."
)
if show_misquoted:
    st.caption(
        "Some study notes write the slope of head n as 2^(−8/n). That sequence does not depend on the number "
        "of heads, is not geometric, and runs the wrong way (1/256 for the first head, climbing towards 1); "
        "the grey line shows it next to the paper's slopes."
    )
ui.show_figure(bias_figure, "family_alibi_bias")
with st.expander("Slopes per head"):
    st.dataframe(pd.DataFrame({"head": range(1, heads + 1), "slope m": slopes,
                               "log₂ m": [math.log2(m) for m in slopes]}), hide_index=True)

# --- T5 ----------------------------------------------------------------------------------------
st.header("T5 relative buckets (Raffel et al., 2020)")
st.markdown(
    "T5 learns one scalar bias per head and *bucket* of relative distance. Small distances get a bucket "
    "each; larger ones share buckets whose width grows logarithmically up to `max_distance`, beyond which "
    "everything falls in the last bucket. A bidirectional encoder spends half its buckets on each direction. "
    "**Notice** the causal curve's exact range is twice as long: it has all its buckets for the past."
)
left, right = st.columns(2)
with left:
    num_buckets = params.select_slider("num_buckets", "tb", T5_BUCKETS, D["t5_buckets"])
with right:
    max_distance = params.select_slider("max_distance", "tm", T5_DISTANCES, D["t5_max_distance"])
with ui.user_errors("These T5 settings"):
    t5_figure, (table_bidirectional, table_causal) = _t5_view(num_buckets, max_distance)
    ui.show_figure(t5_figure, "family_t5")
    st.latex(r"f(n) = \begin{cases} n & n < n_e \\ \min\!\Big(n_e + \Big\lfloor "
             r"\frac{\ln(n/n_e)}{\ln(\text{max\_distance}/n_e)}\,(B - n_e)\Big\rfloor,\ B - 1\Big) & n \ge n_e"
             r"\end{cases}")
    st.caption("n = |i − j|; B is the number of buckets per direction (num_buckets/2 when bidirectional, where "
               "keys after the query add B to the index; num_buckets when causal); n_e = B/2 distances are exact.")
    st.markdown(f"Bucket of each distance i − j (key before the query), at {num_buckets} buckets and "
                f"max_distance {max_distance}:")
    st.dataframe(
        pd.DataFrame([table_bidirectional, table_causal],
                     index=["f(i − j), bidirectional", "f(i − j), causal"],
                     columns=[str(n) for n in range(SEED_TABLE_DISTANCES)]),
    )
    st.caption(
        "At T5's defaults (32 buckets, max_distance 128) the bidirectional row is exactly the table the survey "
        "notes print (0-7 exact, 8-11 → 8, 12-15 → 9, 16-22 → 10, 23-30 → 11). A causal decoder with the same "
        "32 buckets keeps 0-15 exact instead; the notes' table is what a causal model with 16 buckets gets."
    )

# --- relative-position matrices ------------------------------------------------------------------
st.header("Which relative position does attention see?")
st.markdown(
    "Relative schemes feed attention a function of the distance i − j. Plain RoPE uses the distance itself, "
    "so a long text produces distances never seen in training. Shaw et al. (2018) clip it, so every far "
    "token shares one learned vector; **ReRoPE** applies the same clipping to RoPE's rotation (distance w "
    "beyond the window), and **Leaky ReRoPE** lets it keep growing with slope 1/k. **Notice** that ReRoPE's "
    "matrix never exceeds w however long the text."
)
cols = st.columns(4)
with cols[0]:
    rel_length = params.select_slider("Matrix length", "rL", REL_LENGTHS, D["rel_length"])
with cols[1]:
    shaw_clip = params.select_slider("Shaw clip k", "rc", SMALL_DISTANCES, D["shaw_clip"])
with cols[2]:
    window = params.select_slider("ReRoPE window w", "rw", SMALL_DISTANCES, D["rerope_window"])
with cols[3]:
    leaky_k = params.select_slider("Leaky ReRoPE k (slope 1/k)", "rk", LEAKY_KS, D["leaky_k"],
                                   format_func=lambda k: f"{k:g}")
relative_figure, largest = _relative_view(rel_length, shaw_clip, window, leaky_k)
ui.show_figure(relative_figure, "family_relative")
st.latex(r"\text{ReRoPE: } \min(i-j,\ w) \qquad\qquad \text{Leaky ReRoPE: } "
         r"\begin{cases} i-j & i-j < w \\ w + \dfrac{i-j-w}{k} & i-j \ge w \end{cases}")
su_k = family.leaky_k_to_fit(4096, 256, 512)
st.caption(
    f"Largest position used at length {rel_length}: plain {largest['plain']:g}, ReRoPE {largest['rerope']:g}, "
    f"Leaky ReRoPE {largest['leaky']:.2f}. To keep a text of length L' within a training "
    f"length L, Leaky ReRoPE needs k ≥ (L' − 1 − w)/(L − 1 − w): trained at 512 and run at 4096 with w = 256, "
    f"k ≥ {su_k:.2f} - which is why k = 16 is the value reported to work best there."
)

# --- Dual Chunk Attention ------------------------------------------------------------------------
st.subheader("Dual Chunk Attention (An et al., 2024)")
st.markdown(
    "DCA cuts the text into chunks of s tokens and gives keys the position j mod s. A query in the key's "
    "own chunk uses i mod s (**intra-chunk**); a query in the next chunk uses s + (i mod s) for its first "
    "w = c − s tokens, so neighbours across the boundary keep their true distance, and c − 1 after that "
    "(**successive chunk**); every query further away uses c − 1 (**inter-chunk**). **Notice** that no "
    "entry exceeds c − 1, the largest distance seen in pretraining, whatever the text length."
)
cols = st.columns(3)
with cols[0]:
    dca_length = params.select_slider("Text length", "dl", REL_LENGTHS, D["dca_length"])
with cols[1]:
    dca_train = params.select_slider("Pretraining length c", "dc", DCA_TRAIN_LENGTHS, D["dca_train_length"])
with cols[2]:
    dca_fraction = params.select_slider("Chunk size s as a fraction of c", "ds", DCA_CHUNK_FRACTIONS,
                                        D["dca_chunk"] / D["dca_train_length"], format_func=lambda f: f"{f:g}")
dca_chunk = max(1, round(dca_fraction * dca_train))
dca_figure, dca_largest = _dual_chunk_view(dca_length, dca_chunk, dca_train)
ui.show_figure(dca_figure, "family_dca",
               caption=f"s = {dca_chunk}, c = {dca_train}, local window w = c − s = {dca_train - dca_chunk}; largest "
                       f"M = {dca_largest:g}. The released code uses a smaller local window than the paper's w = c − s.")
st.latex(r"M[i][j] = \begin{cases} (i \bmod s) - (j \bmod s) & \lfloor i/s\rfloor = \lfloor j/s\rfloor \\ "
         r"P^{succ}_q[i] - (j \bmod s) & \lfloor i/s\rfloor - \lfloor j/s\rfloor = 1 \\ "
         r"(c-1) - (j \bmod s) & \text{otherwise} \end{cases}")
st.latex(r"P^{succ}_q[i] = \begin{cases} s + (i \bmod s) & (i \bmod s) < w \\ c-1 & \text{otherwise}\end{cases}")

st.markdown("One row of each matrix - the last query looking back - side by side:")
ui.show_figure(_curves_view(max(rel_length, dca_length), shaw_clip, window, leaky_k, dca_chunk, dca_train),
               "family_curves")

# --- logit scaling -------------------------------------------------------------------------------
st.header("Scaling the logits with length: log-n, Attention-E and YaRN")
st.markdown(
    "With more tokens to spread over, softmax attention grows flatter (its entropy rises with log n). "
    "**Log-n scaling** (Attention-E) multiplies the logits by log_L n so the entropy stays near what the "
    "model saw at its training length L. **Notice** it is 1 at n = L and grows only logarithmically."
)
logn_train = params.select_slider("Training length L", "nL", LOGN_TRAIN_LENGTHS, D["logn_train_length"])
log_n_figure, temperature_figure = _scaling_view(logn_train)
ui.show_figure(log_n_figure, "family_logn")
st.latex(r"\operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{\log_{L} n}{\sqrt d}\,QK^\top\Big)V"
         r"\qquad(\log_{512} n \text{ for } L = 512)")
st.markdown(
    "YaRN sharpens the softmax by a temperature that depends on the scale s = L'/L instead. Its √(1/t) "
    "multiplies q *and* k, so the logits grow by (0.1·ln s + 1)². Written in s, log-n is "
    "log_L(sL) = 1 + ln s / ln L - which is also exactly the logit factor of LongRoPE's default "
    "attention scaling, √(1 + ln s / ln L) on q and on k."
)
ui.show_figure(temperature_figure, "family_temperature")
st.latex(r"\sqrt{1/t} = 0.1\,\ln s + 1,\qquad \frac{q^\top k}{t\sqrt d} = (0.1\ln s + 1)^2\,\frac{q^\top k}{\sqrt d}")
