"""Low-precision positions: why bfloat16 positions collide above 256 and what that does to RoPE."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

import figures.precision as fp
import ui
from pe_core import precision as pp
from pe_core.rope import RopeSpec, rope_frequencies
from ui import params
from ui.controls import rope_controls

ZOOM_WIDTHS = (16, 32, 64, 128, 256)
ZOOM_MAX_START = (1 << 24) + 1024  # far enough to see float32's own first collisions at 16,777,217


# --- cached computation (keyed by plain values) ----------------------------------------------------


@st.cache_data(max_entries=1, show_spinner=False)
def _dtype_facts():
    curve = pp.exact_fraction_curve()
    spacing = {name: pp.binade_spacing(name) for name in pp.PRECISION_DTYPES}
    first_inexact = {name: pp.first_inexact_position(name) for name in pp.PRECISION_DTYPES}
    bits = {name: pp.significand_bits(name) for name in pp.PRECISION_DTYPES}
    return curve, spacing, first_inexact, bits, pp.first_overflow_position("float16")


@st.cache_data(max_entries=16, show_spinner=False)
def _summaries(length: int):
    return tuple(pp.collision_summary(length, name) for name in pp.PRECISION_DTYPES)


@st.cache_data(max_entries=4, show_spinner=False)
def _bfloat16_summary(length: int):
    return pp.collision_summary(length, "bfloat16")


@st.cache_data(max_entries=32, show_spinner=False)
def _window(start: int, width: int, dtype: str):
    return pp.collision_window(start, width, dtype)


@st.cache_data(max_entries=8, show_spinner="Measuring RoPE in low precision…")
def _rope_errors(spec: RopeSpec, length: int, dtype: str):
    frequencies = rope_frequencies(spec, length)
    return pp.rope_precision_error(frequencies.inv_freq, length, dtype, frequencies.attention_factor)


# Figures are cached as objects (cache_resource: no copy; ui.show_figure never changes them), because
# building a plotly figure costs more than a warm rerun may spend.


@st.cache_resource(max_entries=16, show_spinner=False)
def _fraction_figure(length: int):
    curve, _, first_inexact, _, float16_overflow = _dtype_facts()
    return fp.exact_fraction_figure(curve.lengths, curve.fractions, marked_length=length,
                                    marked_fractions={s.dtype: s.exact_fraction for s in _summaries(length)},
                                    first_inexact=first_inexact, float16_overflow=float16_overflow)


@st.cache_resource(max_entries=1, show_spinner=False)
def _spacing_figure():
    _, spacing, _, _, float16_overflow = _dtype_facts()
    return fp.binade_spacing_figure(spacing["bfloat16"].exponents, {k: v.spacing for k, v in spacing.items()},
                                    float16_overflow=float16_overflow)


@st.cache_resource(max_entries=32, show_spinner=False)
def _window_figure(start: int, width: int, dtype: str):
    return fp.collision_window_figure(*_window(start, width, dtype), dtype)


@st.cache_resource(max_entries=8, show_spinner=False)
def _rope_line_figures(spec: RopeSpec, length: int, dtype: str):
    errors = _rope_errors(spec, length, dtype)
    titles = {order: pp.order_title(order, dtype) for order in errors.orders}
    return (fp.angle_error_figure(errors.positions, errors.max_angle_error, titles),
            fp.logit_error_figure(errors.positions, errors.logit_error, titles, errors.query_position))


@st.cache_resource(max_entries=16, show_spinner=False)
def _heatmap_figure(spec: RopeSpec, length: int, dtype: str, order: str):
    errors = _rope_errors(spec, length, dtype)
    shown = errors.orders.index(order)
    return fp.angle_error_heatmap(errors.bucket_starts, errors.angle_error_map[shown],
                                  pp.order_title(order, dtype, short=True))


# --- page --------------------------------------------------------------------------------------------

st.title("Low-precision positions")
st.markdown(
    "A position is an integer *m* = 0, 1, …, L'−1. Code often turns it into a float before RoPE or ALiBi "
    "use it, and in mixed-precision training that float may be **bfloat16** or **float16**. Baichuan "
    "noticed that bfloat16 cannot hold every integer above 256: neighbouring tokens round to the same "
    "value and share one position. This page measures how many positions survive, shows which ones "
    "collide, and what that does to RoPE's angles and attention scores."
)

with st.sidebar:
    controls = rope_controls(
        default_methods=(fp.DEFAULTS["method"],), default_head_dim=fp.DEFAULTS["head_dim"],
        default_base=fp.DEFAULTS["base"], default_train_length=fp.DEFAULTS["train_length"],
        default_scale=fp.DEFAULTS["length"] / fp.DEFAULTS["train_length"],
    )
    low_dtype = params.radio("Low-precision type for RoPE", "lp", pp.LOW_PRECISION_DTYPES,
                             pp.LOW_PRECISION_DTYPES.index(fp.DEFAULTS["low_dtype"]), horizontal=True)

length = controls.target_length
_, _, first_inexact, bits, float16_overflow = _dtype_facts()
summaries = _summaries(length)

# --- how many positions survive --------------------------------------------------------------------
st.header("How many positions are stored exactly?")
st.markdown(
    f"Each row rounds the positions 0 … {length - 1:,} (L' = {length:,}, set in the sidebar) to the dtype "
    "with torch's own cast and counts those that come back unchanged. Notice how early bfloat16 gives "
    f"up (at {first_inexact['bfloat16']:,}) - and that float16, more precise, instead **overflows**: above "
    f"{pp.largest_finite('float16'):,.0f} it has no finite numbers, so positions from {float16_overflow:,} on become `inf`."
)
table = pd.DataFrame(fp.summary_rows(summaries)).set_index("dtype")
st.dataframe(table, width="stretch")

ui.show_figure(
    _fraction_figure(length),
    "exact_fraction",
    caption="Counted from each binade's measured gap (tests check it against the round trip at every length "
            "up to 2 million). Shaded: float16 positions that overflow to inf.",
)

p_bf16 = bits["bfloat16"]
st.markdown(
    "**Why.** A float with *p* significand bits (the hidden leading 1 included: "
    + ", ".join(f"{name} {p}" for name, p in bits.items())
    + ") spaces its numbers evenly inside each binade [2^k, 2^(k+1)). All integers up to 2^p are exact; "
    "above, only multiples of the gap survive:"
)
st.latex(r"\text{gap in } [2^k, 2^{k+1}) = 2^{\,k-p+1}")
st.latex(r"\#\{\text{exact positions among } 0, \dots, 2^K - 1\} = 2^p + (K - p)\,2^{p-1}\qquad (K \ge p)")
if length >= 1 << p_bf16 and length & (length - 1) == 0:
    k = length.bit_length() - 1
    by_formula = 2**p_bf16 + (k - p_bf16) * 2 ** (p_bf16 - 1)
    counted = summaries[pp.PRECISION_DTYPES.index("bfloat16")].exact
    verdict = "the same as" if by_formula == counted else "**different from**"
    st.markdown(
        f"For bfloat16 at L' = 2^{k} = {length:,}: 2^{p_bf16} + ({k} − {p_bf16})·2^{p_bf16 - 1} = "
        f"**{by_formula:,}** exact positions, {verdict} the round-trip count in the table "
        f"({counted:,}, i.e. {100 * counted / length:.1f}%)."
    )

ui.show_figure(
    _spacing_figure(),
    "binade_spacing",
    caption="Each gap is read off the dtype itself: the distance from 2^k to the next bit pattern up.",
)

# --- zoom ---------------------------------------------------------------------------------------------
st.header("Zoom in: which positions collide")
st.markdown(
    "Pick a stretch of positions. Points off the dotted diagonal are stored as a different number; "
    "points of one colour at one height are a **collision group** - the model cannot tell them apart. "
    "Groups alternate in size (3, 1, 3, 1 … where the gap is 2) because exact ties round to the neighbour "
    "with an even last bit. Try 65,490 in float16, or 16,777,200 in float32."
)
left, middle, right = st.columns([2, 2, 3])
with left:
    zoom_dtype = params.radio("Stored as", "zdt", pp.PRECISION_DTYPES,
                              pp.PRECISION_DTYPES.index(fp.DEFAULTS["zoom_dtype"]), horizontal=True)
with middle:
    zoom_width = params.select_slider("Window width w", "zw", ZOOM_WIDTHS, fp.DEFAULTS["zoom_width"])
with right:
    zoom_start = params.number_input("First position n", "zn", 0, ZOOM_MAX_START, fp.DEFAULTS["zoom_start"], step=1)
window = _window(int(zoom_start), int(zoom_width), zoom_dtype)
finite = window.stored.isfinite()
group_sizes = pd.Series(window.group[finite].tolist(), dtype="int64").value_counts()
overflow_note = f" {int((~finite).sum())} positions overflow to inf." if not bool(finite.all()) else ""
ui.show_figure(
    _window_figure(int(zoom_start), int(zoom_width), zoom_dtype),
    "collision_window",
    caption=f"{int((group_sizes > 1).sum())} collision groups of finite values in this window, the largest "
            f"{int(group_sizes.max()) if len(group_sizes) else 0} positions (a group cut by the window's edge may be "
            f"larger).{overflow_note}",
)

# --- RoPE ---------------------------------------------------------------------------------------------
st.header(f"What it does to RoPE in {low_dtype}")
setups = controls.setups
if not setups:
    st.info("Pick a method in the sidebar to see RoPE's angle errors.")
    st.stop()
if len(setups) > 1:
    titles = [s.title for s in setups]
    chosen = params.selectbox("Method for these figures", "rm", titles, 0)
    setup = setups[titles.index(chosen)]
else:
    setup = setups[0]

st.markdown(
    "RoPE rotates pair *i* at position *m* by m·θ_i. Where the rounding happens matters: five common orders "
    f"of operations, each against the exact angle (float64). The error shown is what the model sees - the "
    f"angle of the stored (cos, sin) - for **{setup.title}** at d = {setup.spec.rotary_dim}, "
    f"base {setup.spec.base:,.0f}, positions 0 … {length - 1:,}."
)
errors = angle_figure = logit_figure = None
with ui.user_errors("These settings"):
    errors = _rope_errors(setup.spec, length, low_dtype)
    angle_figure, logit_figure = _rope_line_figures(setup.spec, length, low_dtype)
if errors is None:
    st.stop()
sampled = len(errors.positions) < length
sample_note = (f" Beyond {len(errors.positions) - 1:,} positions the errors are evaluated at one position "
               "from each equal stretch (staggered, so the sample cannot line up with the rounding gaps)."
               if sampled else "")
ui.show_figure(
    angle_figure,
    "angle_error",
    caption="Each line is the worst pair at each position (drawn as the maximum over small ranges of positions)."
            + sample_note,
)
st.latex(r"\text{positions rounded:}\quad |\tilde m - m|\,\theta_i \;\le\; \tfrac{g(m)}{2}\,\theta_i")
st.latex(r"\theta \text{ rounded:}\quad m\,|\tilde\theta_i - \theta_i| \;\le\; m\,\theta_i\,2^{-p}")
st.latex(r"\cos/\sin \text{ rounded:}\quad |\widetilde{\cos} - \cos|,\ |\widetilde{\sin} - \sin| \;\le\; 2^{-p}")
st.markdown(
    "with g(m) the gap at m. Rounding the positions or θ makes errors that **grow with m** until the angle "
    "is noise (π); rounding only the final cos/sin costs a bounded ~2^−p at every position. Even the safe "
    "float32 order drifts: the angle m·θ is itself rounded to float32's gap at m·θ, a few hundredths of a "
    "radian near a million."
)

order_options = list(errors.orders)
heatmap_order = params.selectbox("Order of operations in the heatmap", "ho", order_options,
                                 order_options.index(fp.DEFAULTS["heatmap_order"]),
                                 format_func=lambda order: pp.order_title(order, short=True))
ui.show_figure(
    _heatmap_figure(setup.spec, length, low_dtype, heatmap_order),
    "angle_error_map",
    caption=f"Each row is the maximum over {len(errors.positions) // len(errors.bucket_starts):,}-odd consecutive "
            "evaluated positions. Fast pairs (left) feel position rounding most: the error is |m̃ − m|·θ_i."
            + (" Blank rows: the positions overflowed, so cos/sin are NaN."
               if not bool(errors.angle_error_map[errors.orders.index(heatmap_order)].isfinite().all()) else ""),
)
ui.show_figure(
    logit_figure,
    "logit_error",
    caption="q and k are random (unit-variance entries, fixed seed) and kept in float64, so only the "
            "positional rotation differs; the logit itself has a spread of about 1. Rounded θ keeps nearby "
            "keys right (the error grows with the distance m − n); rounded positions do not.",
)

# --- practice -----------------------------------------------------------------------------------------
st.header("Where this bites, and the fix")
st.markdown(
    "- **Buffers that follow the model's dtype.** Older RoPE code built positions with "
    "`t = torch.arange(n, dtype=self.inv_freq.dtype)`; after `model.to(torch.bfloat16)` (or loading with "
    "`torch_dtype=torch.bfloat16`) that is the *everything in bf16* line above.\n"
    "- **Autocast.** Under `torch.autocast`, the matmul `inv_freq @ position_ids` runs in bf16 even when both "
    "inputs are float32 - the *positions* and *θ* lines at once.\n"
    "- **ALiBi and other position biases** built from float positions collide the same way (Baichuan's "
    "report covers both).\n\n"
    "**The fix** (transformers since PR #29285, *\"Force float32 since bfloat16 loses precision on long "
    "contexts\"*): keep `inv_freq` in float32, make positions integers and convert them with `.float()`, "
    "compute m·θ and cos/sin in float32 with autocast disabled, and cast only the final cos/sin to the "
    "model's dtype - the *cos/sin rounded* line, whose error stays bounded."
)
with st.expander("A note on the source notes"):
    at_8192, at_million = _bfloat16_summary(8192), _bfloat16_summary(1 << 20)
    st.markdown(
        "The study notes (seed 003) say that above 256 bfloat16 *cannot represent an integer*. More "
        "precisely it cannot represent **every** integer: 258, 260, … 512 are still exact, then every 4th, "
        "and so on - the first casualty is 257. Their *about 10%* at length 8192 is right: "
        f"{at_8192.exact:,} of 8,192 positions, {100 * at_8192.exact_fraction:.1f}%. They also say only a few "
        f"neighbouring tokens share a position; at 8,192 a group holds up to {at_8192.largest_group} tokens, and "
        f"at 2^20 up to {at_million.largest_group:,} - *a few* only at short lengths."
    )
st.caption(f"Significand bits read from torch.finfo: {', '.join(f'{k} {v}' for k, v in bits.items())}. "
           f"Angles in radians; {math.pi:.4f} rad is the largest possible angle error.")
