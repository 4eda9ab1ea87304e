"""The floor the browser benchmark measures against: one slider and one 64×512 heatmap, nothing else."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

shift = st.slider("shift", 0, 100, 50)
values = np.sin(np.add.outer(np.arange(512), np.arange(64) * (1 + shift / 100)) / 10).astype(np.float32)
st.plotly_chart(go.Figure(go.Heatmap(z=values)), key="heatmap")
