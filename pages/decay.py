"""Long-range decay: RoFormer's bound, sinusoidal dot products, and what real q·k scores do with distance."""

import streamlit as st

import derivations
import figures.decay as fd
import ui
from pe_core import RopeSpec, rope_frequencies
from pe_core.decay import projection_head_dim, rope_decay_bound
from ui import params
from ui.controls import BASES, HEAD_DIMS, format_base, format_length, rope_controls

MAX_DISTANCES = (256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576)
AXES = ("log", "linear")
MODEL_DIMS = (16, 32, 64, 128, 256)
MAX_OFFSETS = (64, 128, 256, 512, 1024, 2048, 4096)
POSITION_COUNTS = (32, 64, 128, 256)
CORRELATIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
DRAW_COUNTS = (1, 4, 16, 64, 256, 1024)
MAX_SEED = 2**31 - 1
D = fd.DEFAULTS


@st.cache_data(max_entries=64, show_spinner="Computing the bound at every distance…")
def cached_bound_of(frequencies, max_distance, log_axis):
    return fd.bound_of_frequencies(frequencies, max_distance, log_axis)


def cached_bound(spec, seq_len, max_distance, log_axis):
    # Keyed by θ itself, so plain RoPE in the first chart and "direct" in the second share one computation.
    return cached_bound_of(fd.frequencies_of(spec, seq_len), max_distance, log_axis)


@st.cache_data(max_entries=4, show_spinner=False)
def roformer_check():
    """The two numbers of RoFormer's Figure 2: d = 128, base 10^4, at r = 0 and r = 250."""
    values = rope_decay_bound(rope_frequencies(RopeSpec(head_dim=128)).inv_freq, [0, 250])
    return float(values[0]), float(values[1])


@st.cache_data(max_entries=16, show_spinner=False)
def cached_sinusoidal(d_model, base, max_offset):
    return fd.sinusoidal_data(d_model, base, max_offset)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_similarity(positions, d_model, base, seed):
    return fd.similarity_data(positions, d_model, base, seed)


@st.cache_data(max_entries=16, show_spinner="Drawing random queries and keys…")
def cached_rope_scores(head_dim, base, max_offset, draws, correlation, seed):
    return fd.rope_scores_data(head_dim, base, max_offset, draws, correlation, seed)


@st.cache_data(max_entries=16, show_spinner="Drawing random projections…")
def cached_projected(d_model, base, max_offset, draws, seed):
    return fd.projected_scores_data(d_model, base, max_offset, draws, seed)


# Figures are cached as objects too (cache_resource: no copy), because building a plotly figure costs more
# than a rerun's budget on a slow machine. Nothing downstream mutates a figure (slide style works on a copy).
@st.cache_resource(max_entries=32, show_spinner=False)
def bound_figure(head_dims, bases, max_distance, log_axis):
    traces = fd.bound_traces_for_bases(head_dims, bases, max_distance, log_axis, cached_bound)
    reach = [f"{t.label}: r = {t.bound.first_at_level:,.0f}" for t in traces if t.bound.first_at_level is not None]
    return fd.decay_bound_figure(traces, log_axis=log_axis), reach


@st.cache_resource(max_entries=32, show_spinner=False)
def methods_figure(setups, max_distance, log_axis, train_length, target_length, head_dim, base):
    traces = fd.bound_traces_for_setups(setups, max_distance, log_axis, cached_bound)
    return fd.methods_bound_figure(traces, train_length=train_length, target_length=target_length,
                                   head_dim=head_dim, base=base, log_axis=log_axis)


@st.cache_resource(max_entries=16, show_spinner=False)
def sinusoidal_figure(d_model, base, max_offset):
    offsets, dots = cached_sinusoidal(d_model, base, max_offset)
    return fd.sinusoidal_dot_figure(offsets, dots, d_model=d_model, base=base)


@st.cache_resource(max_entries=16, show_spinner=False)
def similarity_figures(positions, d_model, base, seed):
    plain, projected = cached_similarity(positions, d_model, base, seed)
    return (fd.similarity_figure(plain, title=fd.SIMILARITY_TITLE, colour_title="PE(i)·PE(j)"),
            fd.similarity_figure(projected, title=fd.PROJECTED_SIMILARITY_TITLE, colour_title="score"))


@st.cache_resource(max_entries=16, show_spinner=False)
def rope_scores_figure(head_dim, base, max_offset, draws, correlation, seed):
    distances, ones, expected, statistics = cached_rope_scores(head_dim, base, max_offset, draws, correlation, seed)
    return fd.rope_scores_figure(distances, ones, expected, statistics, correlation=correlation, draws=draws,
                                 head_dim=head_dim, base=base)


@st.cache_resource(max_entries=16, show_spinner=False)
def projected_scores_figure(d_model, base, max_offset, draws, seed):
    offsets, reference, statistics = cached_projected(d_model, base, max_offset, draws, seed)
    return fd.projected_scores_figure(offsets, reference, statistics, draws=draws, d_model=d_model, base=base)


@st.cache_resource(show_spinner=False)
def verified(slug: str) -> bool:
    return derivations.get(slug).verify().holds


def show_derivation(slug: str) -> None:
    """The claim of a sympy-checked derivation, and whether the check passed on this run of the app."""
    derivation = derivations.get(slug)
    st.latex(derivation.claim)
    if verified(slug):
        st.caption(f"✓ Verified by sympy when this page loaded: {derivation.check}")
    else:
        st.error(f"The sympy check of “{derivation.title}” failed.", icon="⚠️")


st.title("Long-range decay")
st.markdown(
    "Does attention fade with distance? Under RoPE the score of a query at position *m* and a key at *n* "
    "depends only on **r = m − n**. RoFormer argues that it tends to shrink as *r* grows, through an upper "
    "bound that depends on *r* alone. This page computes that bound exactly at every distance (up to 2²⁰), "
    "shows what the base and the context-extension methods do to it, compares sinusoidal encodings, and then "
    "checks how much of the decay is left in real q·k scores."
)

with st.sidebar:
    st.subheader("RoPE set-up")
    st.caption("Used by the context-extension chart and the random q·k chart.")
    controls = rope_controls(default_methods=D["methods"], default_head_dim=D["head_dim"], default_base=D["base"],
                             default_train_length=D["train_length"], default_scale=D["scale"])

# --- RoFormer's bound -------------------------------------------------------------------------
st.header("RoFormer's bound, base by base")
bases_col, dims_col = st.columns([2, 1])
with bases_col:
    bases = params.multiselect("Bases b", "bases", BASES, D["bases"], format_func=format_base, max_selections=5)
with dims_col:
    head_dims = params.multiselect("Head dims d", "dims", HEAD_DIMS, D["head_dims"], max_selections=3)
range_col, axis_col = st.columns([2, 1])
with range_col:
    max_distance = params.select_slider("Distances up to", "rmax", MAX_DISTANCES, D["max_distance"],
                                        format_func=format_length)
with axis_col:
    axis = params.radio("Distance axis", "axis", AXES, index=AXES.index("log" if D["log_axis"] else "linear"),
                        horizontal=True)
log_axis = axis == "log"

at_zero, at_250 = roformer_check()
st.markdown(
    "**What to notice.** "
    f"At *r* = 0 every phase is 0, so |S_j| = j and the bound is (N + 1)/2 = **{at_zero:g}** for d = 128 (N = d/2 pairs). "
    f"It falls fast: **{at_250:.2f}** at *r* = 250 with base 10,000, which is RoFormer's Figure 2. "
    "But it is **not monotone**: the line is the bound averaged over what one pixel spans, and the shaded "
    "band is its minimum-to-maximum there - it keeps bouncing up to two or three times the level it settles at. "
    "It **flattens** once the phases r·θ_i look random: the dotted line is the level random phases give, and "
    "the circle marks the first distance the bound reaches it. A **larger base stretches** the curve: the slow "
    "pairs stay in phase for longer, so the same drop takes more tokens (λ_max = 2π·b^(1−2/d) is where even the "
    "slowest pair has completed a turn)."
)
if not head_dims or not bases:
    st.info("Pick at least one head dim and one base.")
else:
    with ui.user_errors("These settings"):
        figure, reach = bound_figure(tuple(head_dims), tuple(bases), max_distance, log_axis)
        ui.show_figure(figure, "decay_bound", caption=(
            f"Every integer distance 0 … {max_distance:,} is computed exactly in float64; each line is the mean of "
            "the bound over the distances one pixel spans (exact where a bin holds one distance), the band its "
            "min–max. Circles: first distance at the random-phase level."))
        if reach:
            st.caption("First distance at the random-phase level - " + "; ".join(reach) + ".")

st.markdown(
    "**Where it comes from.** Split q and k into the N = d/2 pairs and write each pair as a complex number. "
    "The score is a sum of N rotating terms; summation by parts moves the rotation onto the partial sums "
    "S_j, which depend on *r* alone:"
)
st.latex(r"(R_m q)\cdot(R_n k) = \operatorname{Re}\Big[\sum_{i=0}^{N-1} h_i\, e^{\mathrm{i} r\theta_i}\Big],\qquad r = m - n")
st.latex(r"h_i = (q_{2i} + \mathrm{i}\,q_{2i+1})(k_{2i} - \mathrm{i}\,k_{2i+1})")
show_derivation("decay_abel_summation")
st.latex(r"\text{plotted: }\ B(r) = \frac{1}{N}\sum_{j=1}^{N}\big|S_j(r)\big|,\qquad "
         r"S_j(r) = \sum_{i=0}^{j-1} e^{\mathrm{i} r\theta_i}")
st.latex(r"\text{random-phase level: }\ \lim_{R\to\infty}\frac{1}{R}\int_0^R B(r)\,dr = "
         r"\frac{1}{N}\sum_{j=1}^{N}\mathbb{E}\Big|\sum_{i<j} e^{\mathrm{i}\phi_i}\Big|,\quad \phi_i \text{ uniform}")
seed_sign = derivations.get("decay_seed_abel_sign")
st.caption(
    f"A note on the sign: seed 001 (like a popular blog post) writes {seed_sign.said} In fact {seed_sign.shows} "
    "The random-phase level uses Kluyver's formula E|S_j| = ∫₀^∞ (1 − J₀(t)^j)/t² dt. Remember that B is an "
    "**upper bound** (times max|h_(i+1) − h_i|): it says how large a score *can* be, not that every score decays "
    "- the last section shows that."
)

# --- context-extension methods ------------------------------------------------------------------
st.header("What context-extension methods do to it")
setups = controls.setups
if not setups:
    st.info("Pick at least one method in the sidebar.")
else:
    st.markdown(
        f"The model was trained at L = {controls.train_length:,} and runs at L' = {controls.target_length:,} "
        f"(s = {controls.scale:g}). **Position Interpolation** divides every θ_i by *s*, so its curve is direct "
        "extrapolation's stretched *s* times to the right - B_PI(r) = B(r/s): tokens look *s* times closer. "
        "**NTK-aware** keeps the fastest pair exactly and the next ones nearly, so over the nearest tokens it stays "
        "far closer to direct extrapolation than PI does, while its slowest pair is interpolated exactly like PI's; "
        "the stretch grows towards the tail. **YaRN** "
        "leaves every pair that turned many times in training untouched, so its curve follows direct "
        "extrapolation over the first few hundred tokens and departs only where the slow, interpolated pairs "
        "matter. A **base change** (ABF) is plain RoPE with a bigger base - compare the chart above. (YaRN's "
        "temperature √(1/t) = 0.1 ln s + 1 multiplies every score by (0.1 ln s + 1)²; the bound is about the "
        "phases, so it is not drawn here.)"
    )
    with ui.user_errors("These settings"):
        ui.show_figure(methods_figure(tuple(setups), max_distance, log_axis, controls.train_length,
                                      controls.target_length, controls.head_dim, controls.base),
                       "decay_methods",
                       caption="Same distance range and axis as the chart above. Dashed: the training length L and "
                               "the target L'. Dynamic NTK is evaluated at length L'.")

# --- sinusoidal encodings -----------------------------------------------------------------------
st.header("Sinusoidal encodings: PE(t)·PE(t+k)")
dm_col, sb_col, k_col, n_col = st.columns(4)
with dm_col:
    d_model = params.select_slider("Model dim d", "dm", MODEL_DIMS, D["d_model"])
with sb_col:
    sinusoidal_base = params.select_slider("Base", "sb", BASES, D["sinusoidal_base"], format_func=format_base)
with k_col:
    max_offset = params.select_slider("Offsets up to ± (also for the q·k charts)", "kmax", MAX_OFFSETS,
                                      D["max_offset"], format_func=format_length)
with n_col:
    positions = params.select_slider("Positions in the matrices", "n", POSITION_COUNTS, D["positions"])

st.markdown(
    "The original Transformer adds PE(t) = (sin tω_0, cos tω_0, …, sin tω_(d/2−1), cos tω_(d/2−1)) to the token "
    "embedding, with ω_i = b^(−2i/d) - the same ladder RoPE uses. **What to notice:** the dot product of two "
    "position vectors depends on the offset *k* only, not on *t*; it is **symmetric** in *k* (it cannot tell "
    "before from after); it is **d/2 at k = 0** and decays **with oscillation**, not monotonically - the slow "
    "pairs, with kω_i still small, hold it up for a long way, and far enough out it swings around 0 and goes "
    "negative. RoPE with q = k = (1, …, 1) gives exactly twice this curve (see the last section)."
)
with ui.user_errors("These settings"):
    ui.show_figure(sinusoidal_figure(d_model, sinusoidal_base, max_offset), "sinusoidal_dot")
show_derivation("sinusoidal_dot_product")
monotone = derivations.get("sinusoidal_seed_monotone_decay")
st.caption(f"Seed 001 and seed 003 say that {monotone.said} In fact {monotone.shows}")

st.markdown(
    "The same numbers as a matrix: entry (i, j) is PE(i)·PE(j). It is constant along every diagonal (a Toeplitz "
    "matrix) because it depends on i − j only. On the right the positions first go through random query and key "
    "projections, as attention does (seed 001 §2.5): the diagonal structure is gone."
)
head_width = projection_head_dim(d_model)
seed_col, _ = st.columns([1, 3])
with seed_col:
    seed = int(params.number_input("Random seed (here and below)", "seed", 0, MAX_SEED, D["seed"], step=1))
with ui.user_errors("These settings"):
    plain_figure, projected_figure = similarity_figures(positions, d_model, sinusoidal_base, seed)
    left, right = st.columns(2)
    with left:
        ui.show_figure(plain_figure, "similarity")
    with right:
        ui.show_figure(projected_figure, "similarity_projected",
                       caption=f"W_q, W_k: {head_width} × {d_model} (one head), entries N(0, 1/{d_model}); the first "
                               "draw of the seed.")

# --- real attention -----------------------------------------------------------------------------
st.header("Real q·k: does the decay survive?")
rho_col, draws_col = st.columns(2)
with rho_col:
    correlation = params.select_slider("Correlation ρ between q and k", "rho", CORRELATIONS, D["correlation"],
                                       format_func=lambda v: f"{v:g}")
with draws_col:
    draws = params.select_slider("Random draws", "draws", DRAW_COUNTS, D["draws"], format_func=format_length)

st.markdown(
    f"RoPE with d = {controls.head_dim}, base {controls.base:,.0f} (from the sidebar). **(a)** q = k = (1, …, 1): "
    "every pair contributes 2cos(rθ_i), so the score is 2Σcos(rθ_i) - twice the sinusoidal curve, decaying the same "
    "way. **(b)** Random q, k ~ N(0, I) with k = ρq + √(1 − ρ²)ε: averaged over the draws, the score follows "
    "2ρΣcos(rθ_i) - it decays only as far as the key **resembles** the query, and with ρ = 0 the average is flat "
    "at zero. The band (±1 standard deviation over the draws) hardly narrows with distance, and a single draw "
    "wanders far from the mean: the decay is a property of an average, not of each score."
)
with ui.user_errors("These settings"):
    ui.show_figure(rope_scores_figure(controls.head_dim, controls.base, max_offset, draws, correlation, seed),
                   "rope_scores",
                   caption=f"Seed {seed}: the same seed gives the same draws. Mean and spread are exact over the "
                           "draws (computed from their first and second moments).")
st.latex(r"q = k = \mathbf{1}:\quad (R_m q)\cdot(R_n k) = 2\sum_{i=0}^{N-1}\cos(r\theta_i)")
st.latex(r"k = \rho q + \sqrt{1-\rho^2}\,\varepsilon:\quad \mathbb{E}\big[(R_m q)\cdot(R_n k)\big] = "
         r"\rho\,\operatorname{tr} R_{r} = 2\rho\sum_{i=0}^{N-1}\cos(r\theta_i)")

st.markdown(
    f"**(c)** Sinusoidal PEs (d = {d_model}, base {sinusoidal_base:,.0f}) through random W_q, W_k, the query at "
    f"position t = {max_offset:,} and keys at t + k. The clean dashed curve of PE(t)·PE(t+k) is gone: each draw is "
    "a random mix of sinusoids in *k*, neither symmetric nor peaked at k = 0, and the mean over draws is 0 at "
    "every offset. This is why the sinusoidal dot product's decay says little about a trained model (seed 001 "
    "§2.5), and why RoPE applies its rotation *after* the projections."
)
with ui.user_errors("These settings"):
    ui.show_figure(projected_scores_figure(d_model, sinusoidal_base, max_offset, draws, seed), "projected_scores",
                   caption=f"W_q, W_k: {head_width} × {d_model} (one head), entries N(0, 1/{d_model}), drawn afresh "
                           "for every draw.")
st.latex(r"\text{score}(t, k) = \big(W_q\,PE(t)\big)\cdot\big(W_k\,PE(t+k)\big) = PE(t)^{\top} W_q^{\top} W_k\, PE(t+k)")
st.latex(r"\mathbb{E}_{W}\big[W_q^{\top}W_k\big] = 0 \quad\Rightarrow\quad \mathbb{E}_W[\text{score}(t, k)] = 0")
