import streamlit as st

from ui.pages import available_pages

st.title("Positional encodings, explored")
st.markdown(
    "Transformers see a set of tokens; **positional encodings** tell them the order. This app lets you "
    "move the knobs of RoPE and its context-extension methods, check the maths with sympy, and train a "
    "tiny model to see which encodings survive sequences longer than they were trained on. Every figure "
    "can be exported for slides, and every view has a shareable link."
)

for page in available_pages():
    if page.path == "pages/home.py":
        continue
    with st.container(border=True):
        st.page_link(page.path, label=page.title, icon=page.icon)
        st.caption(f"{page.section} · {page.summary}")
