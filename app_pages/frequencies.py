"""θ heatmaps & scaling methods: how each context-extension method reshapes RoPE's angles m·θᵢ."""

import streamlit as st

from ui.formula import show_formula
from ui.layout import lazy_expander
from ui.lesson import LessonPage
from ui.rope import layer_map_part, rope_sidebar

from i18n import N_, _
from lessons import frequencies as lesson

# Each method's θ′ᵢ as LaTeX and the words in it that are typeset in the reader's language.
METHOD_FORMULAS = {
    "direct": (r"\text{Direct extrapolation}:\quad \theta'_i = \theta_i = b^{-2i/d}", N_("Direct extrapolation")),
    "pi": (r"\text{PI:}\quad \theta'_i = \theta_i / s \quad(m \mapsto m/s)",),
    "ntk": (r"\text{NTK-aware:}\quad b' = b\,s^{d/(d-2)} \;\Rightarrow\; \theta'_i = \theta_i\, s^{-2i/(d-2)},"
            r"\quad \theta'_{d/2-1} = \theta_{d/2-1}/s",),
    "dynamic": (r"\text{Dynamic NTK}:\quad b'(l) = b\left(\tfrac{l}{L}\right)^{d/(d-2)},\quad l = \max("
                r"\text{length so far}, L)", N_("Dynamic NTK"), N_("length so far")),
    "ntk_by_parts": (r"\text{NTK-by-parts:}\quad \theta'_i = \bigl(1-\gamma(r_i)\bigr)\tfrac{\theta_i}{s} "
                     r"+ \gamma(r_i)\,\theta_i,\quad r_i = \tfrac{L}{\lambda_i}",),
    "yarn": (r"\text{YaRN (code)}:\quad \theta'_i = \bigl(1-\rho(i)\bigr)\theta_i + \rho(i)\tfrac{\theta_i}{s},"
             r"\quad \rho(i) = \operatorname{clamp}\!\Bigl(\tfrac{i-i_{\text{low}}}{i_{\text{high}}-i_{\text{low}}},0,1\Bigr)",
             N_("YaRN (code)")),
    "llama3": (r"\text{Llama-3:}\quad \theta'_i = \begin{cases}\theta_i & \lambda_i < L/f_{\text{hi}}\\"
               r"\theta_i/s & \lambda_i > L/f_{\text{lo}}\\"
               r"(1-\sigma_i)\,\theta_i/s + \sigma_i\,\theta_i & \text{otherwise},\ "
               r"\sigma_i = \frac{L/\lambda_i - f_{\text{lo}}}{f_{\text{hi}}-f_{\text{lo}}}\end{cases}"
               r"\quad (f_{\text{lo}}, f_{\text{hi}} = 1, 4)", N_("otherwise")),
    "longrope": (r"\text{LongRoPE:}\quad \theta'_i = \theta_i / f^{\text{long}}_i \ \ (l > L),"
                 r"\quad \theta_i / f^{\text{short}}_i \ \ (l \le L)",),
    "abf": (r"\text{Base change (ABF)}:\quad \theta'_i = b'^{-2i/d},\quad b' > b\ \ (\text{e.g.}"
            r"\ 10^4 \to 5\cdot 10^5)", N_("Base change (ABF)"), N_("e.g.")),
}

page = LessonPage(lesson.LESSON)

st.title(_("θ heatmaps & scaling methods"))
st.markdown(_(
    "RoPE rotates pair *i* of a query or key by the angle **m·θᵢ** at position *m*. A model trained on "
    "*L* positions has only ever seen the angles those positions produce. Every context-extension method "
    "is a recipe for changing θᵢ so that running at *L′ = s·L* positions stays inside - or close to - "
    "what training showed. Pick the methods in the sidebar and watch what each does to every pair."
))

page.symbols()

with st.sidebar:
    setup = rope_sidebar(page)
if not page.settings().methods and setup is not None and setup.model is None:
    st.info(_("Pick at least one method in the sidebar."))
    st.stop()

def angles_part() -> None:
    page.controls(lesson.HEATMAP, columns=3)
    page.controls(lesson.PICK, columns=3)
    page.view_button(N_("Compare s = 2 and s = 4 on a 32-dim head"), lesson.SMALL_HEAD_VIEW,
                     help=N_("Head dim 32, base 10,000, direct / PI / NTK-aware, the first 10 positions, "
                             "s = 2 above s = 4, raw angles."))
    page.figure("angle-heatmaps")

    st.markdown(_(
        "**What to notice.** Direct extrapolation keeps every column as trained and simply runs further up: "
        "the slow pairs on the right reach angles they never had. PI divides every angle by *s* - the top "
        "row of PI equals direct's row at m/s, and the fast pairs on the left lose resolution between "
        "neighbouring tokens. NTK-aware leaves the fast pairs almost untouched and interpolates the slowest "
        "pair exactly like PI; the pairs in between still overshoot (▼). NTK-by-parts and YaRN stop that "
        "overshoot by interpolating only pairs that never completed a turn in training."
    ))

    def method_formulas() -> None:
        show_formula(r"\theta_i = b^{-2i/d},\qquad \text{angle}_{m,i} = m\,\theta_i,\qquad "
                     r"\lambda_i = \frac{2\pi}{\theta_i} = 2\pi\, b^{2i/d},\qquad s = \frac{L'}{L}", N_("angle"))
        for method in dict.fromkeys(page.settings().methods):
            show_formula(*METHOD_FORMULAS[method])
        st.caption(_(
            "Dynamic NTK is shown with transformers' formula at factor 1, so at length l it equals static NTK with "
            "s = l/L (and plain RoPE up to L). LongRoPE's factors fᵢ are found by search per model; here the "
            "published Phi-3.5 profile is resampled to this head size."
        ))
    lazy_expander(_("Formulas for the methods shown"), "formulas", method_formulas)


def unseen_part() -> None:
    page.controls(lesson.PICK, columns=3)
    st.markdown(_(
        "A pair whose wavelength fits into the training length has seen the whole circle, so no angle is new "
        "to it. The others have only seen the arc from 0 to L·θᵢ. At L′ a method is safe for such a pair only "
        "if L′·θ′ᵢ stays within that arc. This is the YaRN paper's argument for NTK-by-parts (§3.2): "
        "NTK-aware fixes both ends of the spectrum but not the middle."
    ))
    show_formula(r"\text{unseen}_i \iff L\,\theta_i < 2\pi \;\land\; L'\,\theta'_i > L\,\theta_i", N_("unseen"))
    page.figure("unseen-angles")


def per_pair_part() -> None:
    page.controls(lesson.PICK, columns=3)
    wave_col, ratio_col = st.columns(2)
    with wave_col:
        page.controls(lesson.LINES)
        st.markdown(_(
            "Wavelength grows geometrically with the pair index: **higher i means lower frequency and a longer "
            "period**. Pairs above the dashed line λ = L never completed a turn in training."
        ))
        page.figure("wavelengths")
    with ratio_col:
        st.markdown(_(
            "The ratio θ′ᵢ/θᵢ says what each method does to pair *i*: 1 keeps it (extrapolation), 1/s "
            "divides it (interpolation). PI is flat at 1/s; NTK-aware slides from 1 to exactly 1/s; "
            "NTK-by-parts, YaRN and Llama-3 switch between the two over a band of pairs."
        ))
        page.figure("interpolation-ratio")
    st.latex(r"\text{NTK-aware: }\frac{\theta'_i}{\theta_i} = s^{-2i/(d-2)} \;\in\; [1/s,\ 1]")
    st.markdown(_("PI as a base change would need a different base for each pair, and none for i = 0:"))
    st.latex(r"b_i' = b\,s^{d/(2i)}\quad (i > 0)")
    st.caption(_(
        "So PI is not a base change: writing θᵢ/s as $\\big[(L'/L)^{d/(2i)}\\,b\\big]^{-2i/d}$ holds for each i > 0 separately "
        "but gives no single new base."
    ))


def ramp_part() -> None:
    st.markdown(_(
        "The YaRN paper defines the blend γ as a linear function of r = L/λ (how many turns a pair makes in "
        "training), between α = beta_slow and β = beta_fast. The reference implementation (YaRN's repo and "
        "transformers) instead converts α and β to pair indices, rounds them outward (floor / ceil when "
        "`truncate`) and ramps **linearly in the index i**. Because r falls geometrically with i, the two "
        "curves differ in the band between: the code keeps more of θ there than the paper's formula."
    ))
    page.figure("yarn-ramp")
    st.latex(r"\gamma(r) = \begin{cases}0 & r < \alpha\\ \dfrac{r-\alpha}{\beta-\alpha} & \alpha \le r \le \beta\\"
             r"1 & r > \beta\end{cases},\qquad r_i = \frac{L}{\lambda_i} = \frac{L}{2\pi b^{2i/d}}")
    show_formula(r"i(r) = \frac{d\,\ln\!\bigl(L/(2\pi r)\bigr)}{2\ln b},\qquad i_{\text{low}} = \lfloor i(\beta)\rfloor,"
                 r"\quad i_{\text{high}} = \lceil i(\alpha)\rceil,\qquad \text{kept}_{\text{code}}(i) = 1-\rho(i)",
                 N_("kept"), N_("code"))


page.parts({"angles": angles_part, "unseen": unseen_part, "per-pair": per_pair_part, "ramp": ramp_part, "layers": lambda: layer_map_part(page)})
