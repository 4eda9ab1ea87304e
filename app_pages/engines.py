"""What each serving engine computes for a config: transformers, vLLM, SGLang, llama.cpp and MLX-LM side by side,
each difference from the model's own classes numbered and cited, and each engine's recipe for a target length."""

import streamlit as st

from ui.lesson import LessonPage
from ui.uploads import config_text, upload_into

from i18n import _
from lessons import engines as lesson
from pe_core.engines import ENGINES

page = LessonPage(lesson.LESSON)

st.title(_("What each serving engine computes"))
st.markdown(_(
    "You serve a model in vLLM, SGLang, llama.cpp (GGUF) or MLX, not in its transformers classes, and each engine "
    "reads the same config.json its own way. For one config, this page shows what each engine computes - θᵢ, the "
    "factor on cos and sin, the factor on the softmax scale, the context limit it derives and how it picks "
    "LongRoPE's factors - and every place where it differs from the model's own transformers classes, numbered, "
    "with the engine's file or the public thread. vLLM's entry is tested against vLLM 0.32's own rotary code on "
    "every published config in the tests; llama.cpp is computed from the GGUF keys its converter writes; SGLang "
    "and MLX-LM are modelled from their source."))

model_column, run_column = st.columns(2)
with model_column:
    page.controls(lesson.MODEL)
    upload_into(_("… or upload its config.json"), "engines_config_file", ["json"], "config", config_text,
                also={"src": "config"})
with run_column:
    page.controls(lesson.RUN)
    page.controls(lesson.TARGET)

result = page.result()
for layer_type in result.layer_types:
    st.header(_("{layer_type} layers at {seq_len:,} tokens").format(layer_type=layer_type, seq_len=result.seq_len))
    st.dataframe(result.rows(layer_type), hide_index=True)
    lines = result.divergence_lines(layer_type)
    if lines:
        st.markdown(_("**Where each engine differs from transformers** (numbered per engine, with its source):"))
        st.markdown("\n".join(lines))
    else:
        st.success(_("Every engine modelled here computes what transformers computes for these layers."),
                   icon=":material/check:")
page.figure("ratio")

st.header(_("Recipe for {target:,} tokens").format(target=result.target))
st.markdown(_("How to serve this config at the target length in each engine: the config's own RoPE where it "
              "already reaches it, else YaRN over the length the model was trained for (its own YaRN block kept, "
              "with the factor raised). The vLLM recipe is loaded back through vLLM's own config code in the tests; "
              "the llama.cpp keys round-trip through the gguf package."))
page.figure("recipe")
for recipe in result.recipes:
    st.markdown(f"**{ENGINES[recipe.engine].title}**")
    st.code("\n".join(recipe.lines), language="bash", wrap_lines=True)
st.caption(_("The same from a terminal: `python -m pe_core.engines CONFIG [--engine NAME] [--seq-len N] "
             "[--context N] [--target N] [--json]`."))
