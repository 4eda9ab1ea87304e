"""θ heatmaps & scaling methods: how each context-extension method reshapes RoPE's angles m·θ_i."""

import streamlit as st

import figures.frequencies as ff
import ui
from pe_core.angles import VIEWS, frequency_profile, heatmap_panels, ramp_comparison
from ui import params
from ui.controls import MAX_TARGET_LENGTH, SCALES, rope_controls

POSITION_CHOICES = (10, 16, 32, 64, 128, 256, 0)  # 0: every position 0 .. L'−1, sampled for drawing
SECOND_SCALES = (0.0, *SCALES)  # 0: no second row
LENGTH_MODES = ("generation", "whole")
# Bound widgets put the label they show into the URL, so labels are kept short.
LENGTH_MODE_TITLES = {"generation": "as generated", "whole": "whole sequence"}
VIEW_LABELS = {"log": "log angle", "angle": "angle", "mod": "mod 2π", "cos": "cos"}
SEED_000_VIEW = {"src": "sliders", "d": 32, "base": 10_000.0, "s": 2.0, "methods": ["direct", "pi", "ntk"],
                 "pos": 10, "s2": 4.0, "view": "angle", "mark": False}

FORMULAS = {
    "direct": r"\text{Direct:}\quad \theta'_i = \theta_i = b^{-2i/d}",
    "pi": r"\text{PI:}\quad \theta'_i = \theta_i / s \quad(\text{position } m \mapsto m/s)",
    "ntk": r"\text{NTK-aware:}\quad b' = b\,s^{d/(d-2)} \;\Rightarrow\; \theta'_i = \theta_i\, s^{-2i/(d-2)},"
           r"\quad \theta'_{d/2-1} = \theta_{d/2-1}/s",
    "dynamic": r"\text{Dynamic NTK:}\quad b'(l) = b\left(\tfrac{l}{L}\right)^{d/(d-2)},\quad l = \max(\text{length so far}, L)",
    "ntk_by_parts": r"\text{NTK-by-parts:}\quad \theta'_i = \bigl(1-\gamma(r_i)\bigr)\tfrac{\theta_i}{s} + \gamma(r_i)\,\theta_i,"
                    r"\quad r_i = \tfrac{L}{\lambda_i}",
    "yarn": r"\text{YaRN (code):}\quad \theta'_i = \bigl(1-\rho(i)\bigr)\theta_i + \rho(i)\tfrac{\theta_i}{s},"
            r"\quad \rho(i) = \operatorname{clamp}\!\Bigl(\tfrac{i-i_{\text{low}}}{i_{\text{high}}-i_{\text{low}}},0,1\Bigr)",
    "llama3": r"\text{Llama-3:}\quad \theta'_i = \begin{cases}\theta_i & \lambda_i < L/f_{\text{hi}}\\"
              r"\theta_i/s & \lambda_i > L/f_{\text{lo}}\\"
              r"(1-\sigma_i)\,\theta_i/s + \sigma_i\,\theta_i & \text{else},\ "
              r"\sigma_i = \frac{L/\lambda_i - f_{\text{lo}}}{f_{\text{hi}}-f_{\text{lo}}}\end{cases}"
              r"\quad (f_{\text{lo}}, f_{\text{hi}} = 1, 4)",
    "longrope": r"\text{LongRoPE:}\quad \theta'_i = \theta_i / f^{\text{long}}_i \ \ (l > L),"
                r"\quad \theta_i / f^{\text{short}}_i \ \ (l \le L)",
    "abf": r"\text{Base change (ABF):}\quad \theta'_i = b'^{-2i/d},\quad b' > b \text{ (e.g. } 10^4 \to 5\cdot 10^5)",
}


@st.cache_data(max_entries=32, show_spinner=False)
def cached_panels(setups, base, train_length, positions_shown, view, rows, length_so_far):
    return heatmap_panels(setups, base=base, train_length=train_length, positions_shown=positions_shown,
                          view=view, rows=rows, length_so_far=length_so_far)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_profile(setups, base):
    return frequency_profile(setups, base=base)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_ramp(spec):
    return ramp_comparison(spec)


def show_seed_000_view() -> None:
    for key, value in SEED_000_VIEW.items():
        st.session_state[key] = value


st.title("θ heatmaps & scaling methods")
st.markdown(
    "RoPE rotates pair *i* of a query or key by the angle **m·θ_i** at position *m*. A model trained on "
    "*L* positions has only ever seen the angles those positions produce. Every context-extension method "
    "is a recipe for changing θ_i so that running at *L' = s·L* positions stays inside - or close to - "
    "what training showed. Pick the methods in the sidebar and watch what each does to every pair."
)

with st.sidebar:
    controls = rope_controls(default_methods=ff.DEFAULTS["methods"])

setups = controls.setups
if not setups:
    st.info("Pick at least one method in the sidebar.")
    st.stop()

base, train_length, target_length = controls.base, controls.train_length, controls.target_length
num_pairs = setups[0].spec.num_pairs
scale = target_length / train_length

# --- heatmaps ---------------------------------------------------------------------------------
st.header("The angle m·θ_i, pair by pair, position by position")
left, middle, right = st.columns(3)
with left:
    view = params.radio("Colour by", "view", VIEWS, index=VIEWS.index(ff.DEFAULTS["view"]),
                        format_func=VIEW_LABELS.get, horizontal=True,
                        help="log₁₀ of the angle m·θ_i in radians; the raw angle; the angle folded into [0, 2π); "
                             "or cos(m·θ_i), what the query and key actually see.")
    mark_unseen = params.toggle("Mark unseen-angle pairs ▼", "mark", True)
with middle:
    positions_shown = params.select_slider(
        "Positions on the y axis: the first N, or all of 0 … L'−1", "pos", POSITION_CHOICES, 0,
        format_func=lambda n: "all" if n == 0 else str(n),
    )
    second_scale = params.select_slider("Second row at scale", "s2", SECOND_SCALES, 0.0,
                                        format_func=lambda v: "none" if v == 0 else f"{v:g}×")
with right:
    length_so_far = True
    if any(s.spec.rope_type in ("dynamic", "longrope") for s in setups):
        mode = params.radio("Dynamic NTK & LongRoPE rows", "dyn", LENGTH_MODES, format_func=LENGTH_MODE_TITLES.get,
                            help="As generated: row m uses θ for a sequence of length m + 1, as when a model "
                                 "produces tokens one by one. Whole sequence: every row uses θ for length L'.")
        length_so_far = mode == "generation"
    st.button("Show seed 000's figure", on_click=show_seed_000_view,
              help="Head dim 32, base 10,000, direct / PI / NTK-aware, the first 10 positions, s = 2 above s = 4.")

computed = None
with ui.user_errors("These settings"):
    shown = setups + ff.second_row_setups(setups, base, train_length, second_scale or None, MAX_TARGET_LENGTH)
    panels = cached_panels(shown, base, train_length, positions_shown or None, view,
                           ff.heatmap_rows(len(shown), num_pairs), length_so_far)
    profile = cached_profile(setups, base)
    ramp_spec = ff.yarn_spec_for(setups, controls.head_dim, base, train_length, target_length)
    ramp = cached_ramp(ramp_spec)
    computed = True
if computed is None:
    st.stop()

heatmaps = ff.angle_heatmaps(panels, view=view, train_length=train_length, mark_unseen=mark_unseen)
sampled = any(len(p.positions) < (positions_shown or p.target_length) for p in panels)
ui.show_figure(
        heatmaps, "angle_heatmaps",
        caption=("Rows are evenly spaced positions (exact angles at those positions; fast pairs alias when "
                 "rows skip positions - choose 'first N' to see every position). " if sampled else "")
        + "All panels share one colour scale."
    + (" Hatched: positions m ≥ L, never seen in training." if any(p.positions[-1] >= train_length for p in panels)
       else ""),
    )

st.markdown(
    "**What to notice.** Direct extrapolation keeps every column as trained and simply runs further up: "
    "the slow pairs on the right reach angles they never had. PI divides every angle by *s* - the top "
    "row of PI equals direct's row at m/s, and the fast pairs on the left lose resolution between "
    "neighbouring tokens. NTK-aware leaves the fast pairs almost untouched and interpolates the slowest "
    "pair exactly like PI; the pairs in between still overshoot (▼). NTK-by-parts and YaRN stop that "
    "overshoot by interpolating only pairs that never completed a turn in training."
)
with st.expander("Formulas for the methods shown", expanded=False):
    st.latex(r"\theta_i = b^{-2i/d},\qquad \text{angle}_{m,i} = m\,\theta_i,\qquad "
             r"\lambda_i = \frac{2\pi}{\theta_i} = 2\pi\, b^{2i/d},\qquad s = \frac{L'}{L}")
    for method in dict.fromkeys(s.method for s in shown):
        if method in FORMULAS:
            st.latex(FORMULAS[method])
    st.caption(
        "Dynamic NTK is shown with transformers' formula at factor 1, so at length l it equals static NTK with "
        "s = l/L (and plain RoPE up to L). LongRoPE's factors f_i are found by search per model; here the "
        "published Phi-3.5 profile is resampled to this head size."
    )

# --- unseen angles ----------------------------------------------------------------------------
st.header("Which pairs see angles they were never trained on?")
st.markdown(
    "A pair whose wavelength fits into the training length has seen the whole circle, so no angle is new "
    "to it. The others have only seen the arc from 0 to L·θ_i. At L' a method is safe for such a pair only "
    "if L'·θ'_i stays within that arc. This is the YaRN paper's argument for NTK-by-parts (§3.2): "
    "NTK-aware fixes both ends of the spectrum but not the middle."
)
st.latex(r"\text{unseen}_i \iff L\,\theta_i < 2\pi \;\text{ and }\; L'\,\theta'_i > L\,\theta_i")
ui.show_figure(ff.unseen_angles_figure(profile, train_length=train_length, target_length=target_length),
               "unseen_angles", caption="Hover a cell for L'·θ'_i / (L·θ_i): above 1 means beyond training.")

# --- line plots -------------------------------------------------------------------------------
st.header("Per-pair frequencies on one chart")
methods_shown = [s.method for s in setups]
wave_col, ratio_col = st.columns(2)
with wave_col:
    as_frequency = params.radio("Plot", "wl", ("wavelength", "frequency"), horizontal=True,
                                format_func={"wavelength": "wavelength λ_i", "frequency": "frequency θ_i"}.get)
    st.markdown(
        "Wavelength grows geometrically with the pair index: **higher i means lower frequency and a longer "
        "period** (one popular write-up says the period gets shorter; the chart shows it does not). Pairs "
        "above the dashed line λ = L never completed a turn in training."
    )
    ui.show_figure(ff.wavelength_figure(profile, methods_shown, train_length=train_length,
                                        target_length=target_length, as_frequency=as_frequency == "frequency"),
                   "wavelengths")
with ratio_col:
    st.markdown(
        "The ratio θ'_i/θ_i says what each method does to pair *i*: 1 keeps it (extrapolation), 1/s "
        "divides it (interpolation). PI is flat at 1/s; NTK-aware slides from 1 to exactly 1/s; "
        "NTK-by-parts, YaRN and Llama-3 switch between the two over a band of pairs."
    )
    ui.show_figure(ff.ratio_figure(profile, methods_shown, scale=scale), "interpolation_ratio")
st.latex(r"\text{NTK-aware: }\frac{\theta'_i}{\theta_i} = s^{-2i/(d-2)} \;\in\; [1/s,\ 1]")
st.latex(r"\text{PI as a base change would need } b_i' = b\,s^{d/(2i)}\text{: a different base per pair, none for } i=0")
st.caption(
    "So PI is not a base change: one derivation in the source notes writes θ_i/s as "
    "[(L'/L)^{d/2i}·b]^{-2i/d}, which holds for each i > 0 separately but gives no single new base."
)

# --- paper vs code --------------------------------------------------------------------------
st.header("NTK-by-parts: the paper's γ(r) and the code's ramp")
st.markdown(
    "The YaRN paper defines the blend γ as a linear function of r = L/λ (how many turns a pair makes in "
    "training), between α = beta_slow and β = beta_fast. The reference implementation (YaRN's repo and "
    "transformers) instead converts α and β to pair indices, rounds them outward (floor / ceil when "
    "`truncate`) and ramps **linearly in the index i**. Because r falls geometrically with i, the two "
    "curves differ in the band between: the code keeps more of θ there than the paper's formula."
)
ui.show_figure(ff.ramp_figure(ramp, beta_fast=ramp_spec.beta_fast, beta_slow=ramp_spec.beta_slow,
                              truncate=ramp_spec.truncate), "yarn_ramp",
               caption=f"Spec: d = {ramp_spec.rotary_dim}, b = {ramp_spec.base:,.0f}, "
                       f"L = {ramp_spec.original_max_position_embeddings:,}, α = {ramp_spec.beta_slow:g}, "
                       f"β = {ramp_spec.beta_fast:g}, truncate = {ramp_spec.truncate}.")
st.latex(r"\gamma(r) = \begin{cases}0 & r < \alpha\\ \dfrac{r-\alpha}{\beta-\alpha} & \alpha \le r \le \beta\\"
         r"1 & r > \beta\end{cases},\qquad r_i = \frac{L}{\lambda_i} = \frac{L}{2\pi b^{2i/d}}")
st.latex(r"i(r) = \frac{d\,\ln\!\bigl(L/(2\pi r)\bigr)}{2\ln b},\qquad i_{\text{low}} = \lfloor i(\beta)\rfloor,"
         r"\quad i_{\text{high}} = \lceil i(\alpha)\rceil,\qquad \text{kept}_{\text{code}}(i) = 1-\rho(i)")

with st.expander("About the figure in the source notes (seed 000)"):
    st.markdown(
        "The button above reproduces the notes' comparison: head dim 32, the first 10 positions, direct / PI / "
        "NTK-aware at s = 2 (top row) and s = 4 (bottom row), one colour scale. Three details differ from the "
        "notes. Their plotting functions take `d_model=128` as a default argument and are called without it, "
        "so the picture they printed shows the first 16 pairs of a **128**-dim head, not a 32-dim one (set "
        "head dim 128 here and look at pairs 0-15 to see that version); their PI and NTK functions also fix k = 2, "
        "so the k = 4 row cannot come from that code. And the notes read the 10 rows as "
        "L' (so training ended at m = 10/s); here the hatched region always starts at the training length L "
        "from the sidebar."
    )
