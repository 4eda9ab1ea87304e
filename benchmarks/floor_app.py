"""The floor the browser benchmark measures against: one slider and one 64×512 heatmap, nothing else.

Query parameters add elements of one kind under the heatmap (``above``: over it), to show what a page's elements
cost a move by themselves (``python -m benchmarks.browser --elements``, and each page's same-length floor):

- ``paragraphs=N``: paragraphs of static prose with inline maths (a lesson page's element count);
- ``above=N``: the same paragraphs between the slider and the heatmap (with ``paragraphs``, a page's elements
  before and after the figure its slider moves);
- ``plain=N``: the same paragraphs without maths; ``formulas=N``: display formulas (``st.latex``);
- ``merged=N``: N paragraphs with maths in one ``st.markdown`` (the same text as ``paragraphs``, one element);
- ``sliders=N``: sliders that the move leaves alone.

The chart comes first, but the browser re-renders the whole rerun before it calls the chart, so even elements
under it can delay its first change (60 paragraphs: 181 → 215 ms, medians of 4 alternated runs of 6 moves);
Streamlit's garbage collection after each run, on by default here, hides part of it.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

MATHS = ("each pair $i$ turns at the angle $m\\theta_i$ with $\\theta_i = b^{-2i/d}$, so the fastest pair completes a "
         "turn every $2\\pi$ tokens and the slowest one barely moves within the training length; **this sentence "
         "never changes** with the slider.")
PLAIN = ("each pair i turns at the angle m·θᵢ with θᵢ = b^(−2i/d), so the fastest pair completes a turn every 2π "
         "tokens and the slowest one barely moves within the training length; **this sentence never changes** with "
         "the slider.")


def count(name: str) -> int:
    return int(st.query_params.get(name, "0"))


shift = st.slider("shift", 0, 100, 50)
for paragraph in range(count("above")):
    st.markdown(f"Paragraph {paragraph} above the chart: {MATHS}")
values = np.sin(np.add.outer(np.arange(512), np.arange(64) * (1 + shift / 100)) / 10).astype(np.float32)
st.plotly_chart(go.Figure(go.Heatmap(z=values)), key="heatmap")
for paragraph in range(count("paragraphs")):
    st.markdown(f"Paragraph {paragraph}: {MATHS}")
for paragraph in range(count("plain")):
    st.markdown(f"Paragraph {paragraph}: {PLAIN}")
for formula in range(count("formulas")):
    st.latex(rf"\theta_{{{formula}}} = b^{{-2i/d}},\qquad \lambda_{{{formula}}} = 2\pi\, b^{{2i/d}}")
if count("merged"):
    st.markdown("\n\n".join(f"Paragraph {paragraph}: {MATHS}" for paragraph in range(count("merged"))))
for slider in range(count("sliders")):
    st.slider(f"unused {slider}", 0, 10, 5, key=f"unused-{slider}")
