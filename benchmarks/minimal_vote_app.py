"""The floor the phone's vote screen is measured against (``python -m benchmarks.browser --vote``): a minimal
Streamlit app that shows what the vote screen shows, a question and three buttons, and nothing else (no run store,
no fragment, no translation)."""

import streamlit as st

st.caption("Room ABCDE · step 2")
st.markdown("**The frequency spectrum**")
st.markdown("A model is trained on L = 4,096 tokens. How many of its 64 pairs complete at least one full turn within L?")
for index, choice in enumerate(("All of them", "Most, but not the slowest", "Only the first few")):
    st.button(choice, key=f"vote_1_{index}", width="stretch")
st.caption("Tap your answer.")
