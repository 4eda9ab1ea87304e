"""Plan a context extension: each method's parameters for a target length, the base it needs, which layers change
and why, and the whole patched config.json."""

import streamlit as st

from ui import params
from ui.lesson import LessonPage
from ui.uploads import config_text, upload_into

from i18n import _
from lessons import plan as lesson
from lessons.format import number_text
from references import cite

page = LessonPage(lesson.LESSON)

st.title(_("Plan a context extension"))
st.markdown(_(
    "Which rope_scaling do you set to run a model at N tokens? Pick the model and the length. For each method - "
    "Position Interpolation ({pi}), NTK-aware ({ntk}), dynamic NTK ({dynamic}), YaRN ({yarn}), Llama-3 scaling "
    "({llama3}) and a base change with continued training, ABF ({abf}) - this page gives the parameters, what each "
    "leaves unseen, which kinds of layer change and why, and the whole patched config.json, in the model's own "
    "schema (tested by loading every config into the model's own transformers config and rotary classes and "
    "comparing their θᵢ with ours, layer type by layer type)."
).format(pi=cite("pi"), ntk=cite("ntk_aware"), dynamic=cite("dynamic_ntk"), yarn=cite("yarn"), llama3=cite("llama3"),
         abf=cite("abf")))

model_column, target_column = st.columns(2)
with model_column:
    page.controls(lesson.MODEL)
    upload_into(_("… or upload its config.json"), "plan_config_file", ["json"], "config", config_text,
                also={"src": "config"})
with target_column:
    page.controls(lesson.TARGET)

result = page.result()
plan = result.plan
train = plan.train_spec
st.info(_("**{model}**: {rotary} of {head} dimensions rotated, base {base}, pretrained at L = {length:,} "
          "(its own RoPE: {rope_type}). Target L′ = {target:,}, so s = L′/L = {scale:g}.").format(
    model=result.model_title, rotary=train.rotary_dim, head=train.head_dim, base=number_text(train.base),
    length=plan.train_length, rope_type=plan.spec.rope_type, target=plan.target, scale=plan.scale),
    icon=":material/straighten:")
composition = result.composition()
if composition:
    st.markdown(composition)

# --- the layers -----------------------------------------------------------------------------------
st.header(_("Which layers change"))
st.markdown(_(
    "Today's models mix kinds of layer: sliding windows, full attention, layers without position encoding. A "
    "longer context brings longer distances only to the layers that attend over all of it, so the plan scales "
    "the {layers} layers and says, kind by kind, why the others need nothing. The numbers and figures below "
    "describe the {layers} layers."
).format(layers=f"`{plan.planned.layer_type}`"))
st.markdown("\n".join(f"- {line}" for line in result.layer_lines()))
page.figure("layers")

# --- the base ---------------------------------------------------------------------------------------
st.header(_("The base this length needs"))
st.markdown(_(
    "Men et al. ask RoPE to let a key similar to the query win, on average, over a random key at every distance "
    "the context holds ({source}). The expected margin at distance m is proportional to B(m) below, so the base "
    "must keep B(m) ≥ 0 for every m < L′. Su Jianlin's reading ({su}) shows the valid bases form islands, not an "
    "interval: the bound is found by a scan, not a bisection."
).format(source=cite("base_bound"), su=cite("su_base_bound")))
st.latex(r"B(m) = \sum_{i=0}^{d/2-1} \cos\!\bigl(m\, b^{-2i/d}\bigr) \ge 0 \quad \forall\, m < L',\qquad "
         r"b^*(L') = \inf\{\, b : B_b(m) \ge 0\ \ \forall\, m < L' \,\}")
st.markdown(result.bound_sentence())
page.figure("bases")

# --- the methods ----------------------------------------------------------------------------------
st.header(_("Each method at L′"))
st.dataframe(result.table(), hide_index=True)
st.caption(_(
    "Dynamic NTK is planned with factor 1: at length l it uses the base b·(l/L)^(d/(d−2)), static NTK for s = l/L, "
    "and plain RoPE up to L; a factor s > 1 over-scales (the table shows its base at L′). Its config keeps "
    "max_position_embeddings = L, which transformers reads as the pretraining length. YaRN's attention factor is "
    "transformers' default 0.1·ln s + 1, so the block leaves it out."
))
page.figure("ratio")
page.figure("unseen")
page.figure("similarity")

# --- the configs ----------------------------------------------------------------------------------
st.header(_("Patched config.json"))
where = plan.layout.where
st.markdown(_(
    "Each method's whole config.json: the model's file with its RoPE keys written anew, every block explicit "
    "(never null), per layer type where the model keeps RoPE per layer type. transformers 5 reads "
    "`rope_parameters`; older readers (transformers 4, most inference servers) read `rope_theta` and `rope_scaling`."
) + (" " + _("The language model's keys stay under `{where}`, where this model keeps them.").format(where=where)
     if where else ""))
legacy = params.toggle(_("Older readers' keys (rope_theta + rope_scaling)"), "legacy")
if legacy and not plan.layout.schema.legacy:
    st.info(_("This model's older keys cannot name each layer type's RoPE, so only `rope_parameters` "
              "(transformers ≥ 5) are written."), icon=":material/info:")
    legacy = False
tabs = st.tabs([_(method.title) for method in plan.methods])
for tab, method in zip(tabs, plan.methods, strict=True):
    with tab:
        text = result.config_json(method.method, legacy)
        st.code(text, language="json")
        st.download_button(_("Download this config.json"), text,
                           file_name=f"config-{method.method}-{plan.target}.json", mime="application/json",
                           key=f"plan_config_{method.method}")
st.download_button(_("Download the whole plan (JSON)"), result.plan_json(), file_name=f"rope-plan-{plan.target}.json",
                   mime="application/json")
st.caption(_("The same plan from a terminal: `python -m pe_core.plan CONFIG --target N [--max-target N] [--json] "
             "[--out FILE]`."))
