"""Check a RoPE implementation: your θᵢ against transformers', a verdict, and the bug that explains them."""

import json

import streamlit as st

from ui.figure import show_figure
from ui.formula import show_formula
from ui.lesson import LessonPage
from ui.uploads import config_text, upload_into, uploader_words_css

from i18n import DEFAULT_LANGUAGE, N_, _, current_language
from lessons import check as lesson
from lessons.base import SettingsError
from pe_core.check import diagnosis_references, diagnosis_title
from pe_core.inputs import NUMBER_FILE_TYPES, TENSOR_FILE_TYPES
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("Check a RoPE implementation"))
st.markdown(_(
    "Porting a long-context model means re-implementing its RoPE, and the same bugs keep shipping: swapped YaRN "
    "betas, an ignored factor, the attention factor missing or applied twice, pairs rotated with the wrong "
    "partner, frequencies in half precision. Give the model's config and the numbers your code produces; this page "
    "compares them with transformers' (computed here in float64, and tested against transformers itself) and names "
    "the known bug that reproduces them exactly."
))
with st.expander(_("What to give, precisely"), expanded=False):
    st.markdown(_(
        "- **θᵢ, one per rotated pair** (d/2 numbers): your `inv_freq` buffer in pair order, θ₀ first "
        "(`rotary_emb.inv_freq.tolist()`). This checks the values but not the pairing: the same list serves "
        "any layout.\n"
        "- **or one value per rotated dimension** (d numbers): the frequency each dimension of the head turns "
        "at, in the order your code applies them - the angle table at position 1, e.g. "
        "`torch.cat((freqs, freqs), -1)[1]` for transformers' half-split layout or "
        "`freqs.repeat_interleave(2, -1)[1]` for interleaved. Only this form shows whether q and k are rotated "
        "with the right partners.\n"
        "- For a model with `partial_rotary_factor` < 1, d is the rotated width; numbers for the whole head are "
        "read as such (and match only if the unrotated pairs are 0).\n"
        "- **Attention factor** (optional): what your RoPE multiplies cos and sin by (transformers' "
        "`attention_scaling`); q·k is scaled by its square.\n"
        "- **Sequence length** (optional): dynamic NTK and LongRoPE change θᵢ with it; leave 0 for the values "
        "at model init.\n\n"
        "Paste full precision (`tolist()`, or a saved .npy / .pt): printed tensors keep 4-5 digits, far coarser "
        "than float32."
    ))

model_column, numbers_column = st.columns(2)
with model_column:
    st.subheader(_("1 · The model"))
    page.controls(lesson.MODEL)
    upload_into(_("… or upload its config.json"), "check_config_file", ["json"], "config", config_text,
                also={"src": "config"})
with numbers_column:
    st.subheader(_("2 · Your numbers"))
    # a state dict with one inv_freq per layer type (Gemma 3) is read for the kind of layer the page checks
    upload_into(_("Upload your θᵢ"), "check_numbers_file", NUMBER_FILE_TYPES, "theta",
                lesson.theta_file_reader(page.settings()),
                help=_("A .json list (or {\"inv_freq\": [...]}), .csv or .txt numbers, a .npy array, or a .pt, "
                       ".bin or .safetensors tensor / state dict with an inv_freq entry (the checked layers' own "
                       "where a model keeps one per layer type)."))
    # the example menu sits above the number controls but is drawn after them, from the numbers they hold
    menu = st.container()
    page.controls(lesson.NUMBERS)
    with menu:
        examples = lesson.example_choices(page.settings())
        shown = lesson.example_shown(page.settings(), examples)
        pick_column, button_column = st.columns([3, 1], vertical_alignment="bottom")
        with pick_column:
            # the menu opens on the example whose numbers are shown, so it agrees with the verdict below
            example = st.selectbox(_("Or fill in an example implementation of this model"), examples,
                                   index=None if shown is None else examples.index(shown),
                                   format_func=lesson.example_title, placeholder=_("Your own numbers"))
        with button_column:
            st.button(_("Fill in"), on_click=lesson.fill_example, args=(st.session_state, page.settings(), example),
                      disabled=example is None,
                      help=_("Replaces your θᵢ and attention factor with a float32 implementation's."))

# --- verdict --------------------------------------------------------------------------------------
result = page.result()
report = result.report
st.header(_("Verdict"))
if report.verdict == "match":
    st.success(_("**Match.** {summary}").format(summary=result.summary()), icon=":material/check_circle:")
else:
    st.error(_("**Mismatch.** {summary}").format(summary=result.summary()), icon=":material/cancel:")
    if result.explanations:
        for name, sentence in result.explanations:
            st.markdown(f"**{diagnosis_title(name)}** (`{name}`) — {sentence} "
                        + " ".join(cite(key) for key in diagnosis_references(name)))
        if len(result.explanations) > 1:
            st.caption(_("More than one known bug produces exactly these numbers; each is listed."))
    else:
        st.warning(_("Neither one known bug nor two at once reproduce these numbers, and no fitted base, exponent, "
                     "factor or length does; the curves part at {where}. A different formula can do this.").format(
                         where=result.where), icon=":material/search:")
    for note in result.notes():
        st.caption(note)

page.figure("theta")
page.figure("error")
if result.layers.hybrid or result.layer_note:
    st.subheader(_("Which layers are checked"))
    page.figure("layer-map")
show_formula(r"\text{match} \iff \frac{|\theta^{\text{yours}}_i - \theta_i|}{\theta_i} \le "
             r"8\,\varepsilon_{32}\,\bigl(1 + |\ln \theta_i|\bigr)\ \ \forall i,\qquad \varepsilon_{32} = 2^{-23}",
             N_("match"), N_("yours"))
st.caption(_(
    "Computing b^(−2i/d) in float32 rounds the exponent, an error the power multiplies by |ln θᵢ|; the rest is a few "
    "roundings of the power, the division and the method's blend. transformers' own float32 values stay within 0.8 "
    "of these units on every preset."
))

with st.expander(_("Every entry"), expanded=False):
    st.dataframe(result.table(), hide_index=True)
st.download_button(_("Download the report (JSON)"), json.dumps(result.json(), indent=1, ensure_ascii=False),
                   file_name="rope-check.json", mime="application/json")
st.caption(_("The same check from a terminal: `python -m pe_core.check CONFIG --inv-freq FILE [--attention-factor X] "
             "[--seq-len N] [--json]` (exit 0 on a match, 1 on a mismatch, 2 on bad input)."))

with st.expander(_("The bug classes this page recognises"), expanded=False):
    for name, bug in lesson.BUG_CLASSES.items():
        sources = " ".join(cite(key) for key in bug.references)
        st.markdown(f"- **{_(bug.title)}** (`{name}`): {_(bug.summary)} {sources}")

# --- the rotation itself ----------------------------------------------------------------------------
st.header(_("The rotation itself"))
st.markdown(_(
    "Right θᵢ can still be applied wrongly: positions off by one, cos and sin cached in half precision, the wrong "
    "pairing, the unrotated part of a partial-rotary head rotated or dropped, the attention factor on q only, M-RoPE "
    "sections split wrongly. Download the probe (seeded queries, keys and positions up to twice the length the model "
    "is built for, with a script), run your rotary on it, and upload what it returns: the rotated q and k, or your "
    "cos and sin tables."
))
st.download_button(_("Download the probe (ZIP)"), lesson.probe_zip(result.kind), file_name="rope-probe.zip",
                   mime="application/zip")
rotation_types = list(TENSOR_FILE_TYPES)
uploaded = st.file_uploader(_("Upload your rotary's output"), type=rotation_types, key="check_rotation_file",
                            help=_("A .pt, .safetensors or .npz file holding q and k (the probe's shape), or cos "
                                   "and sin."))
if current_language() != DEFAULT_LANGUAGE:
    st.html(f"<style>{uploader_words_css('check_rotation_file', rotation_types)}</style>")
rotation = None
if uploaded is not None:
    try:
        rotation = lesson.uploaded_rotation(result.kind, uploaded.getvalue(), uploaded.name)
    except SettingsError as err:
        st.error(_("{name} could not be used: {message}").format(name=uploaded.name, message=err),
                 icon=":material/warning:")
if rotation is None:
    page.controls(lesson.ROTATION)
    rotation = page.result().rotation
    if rotation.note:
        st.caption(_(rotation.note))
if rotation.report.verdict == "match":
    st.success(_("**Match.** Every token of the probe is within float32 tolerance of the reference rotation."),
               icon=":material/check_circle:")
else:
    st.error(_("**Mismatch.** The error leaves float32 tolerance at {where}.").format(where=rotation.where),
             icon=":material/cancel:")
    for name, sentence in rotation.explanations:
        st.markdown(f"**{lesson.rotation_probe.diagnosis_title(name)}** (`{name}`) — {sentence} "
                    + " ".join(cite(key) for key in lesson.rotation_probe.diagnosis_references(name)))
    if not rotation.explanations:
        st.warning(_("No single known bug reproduces this output."), icon=":material/search:")
if rotation.report.note:
    st.caption(_("cos and sin read as {reading}.").format(reading=_(rotation.report.note)))
if uploaded is not None:
    show_figure(lesson.rotation_figure(rotation), "check_rotation_upload",
                caption=_("Largest error per token against the reference rotation, relative to the size of q and k, "
                          "with the float32 tolerance of that value."))
else:
    page.figure("rotation")
st.caption(_("From a terminal: `python -m pe_core.check CONFIG --probe DIR` writes the probe, then `python -m "
             "pe_core.check CONFIG --rotated FILE [--probe DIR]` checks your output (exit 0 on a match, 1 on a "
             "mismatch)."))
with st.expander(_("The rotation bugs the probe recognises"), expanded=False):
    for name, bug in lesson.rotation_probe.PROBE_BUGS.items():
        sources = " ".join(cite(key) for key in bug.references)
        st.markdown(f"- **{_(bug.title)}** (`{name}`): {_(bug.summary)} {sources}")
