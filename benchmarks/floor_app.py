"""The floor the browser benchmark measures against: one slider and one 64×512 heatmap, nothing else.

``?paragraphs=N`` adds N paragraphs of static prose with a formula each under the heatmap: the same slider
and figure on a page as long as a lesson's, to show what a page's element count costs a move by itself. The
chart comes first, but the browser re-renders the whole rerun before it calls the chart, so the paragraphs
still delay its first change a little (60 of them: 181 → 215 ms, medians of 4 alternated runs of 6 moves).
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

shift = st.slider("shift", 0, 100, 50)
values = np.sin(np.add.outer(np.arange(512), np.arange(64) * (1 + shift / 100)) / 10).astype(np.float32)
st.plotly_chart(go.Figure(go.Heatmap(z=values)), key="heatmap")
for paragraph in range(int(st.query_params.get("paragraphs", "0"))):
    st.markdown(f"Paragraph {paragraph}: each pair $i$ turns at the angle $m\\theta_i$ with "
                "$\\theta_i = b^{-2i/d}$, so the fastest pair completes a turn every $2\\pi$ tokens and the slowest "
                "one barely moves within the training length; **this sentence never changes** with the slider.")
