"""The project's plotly template: explicit (not Streamlit's theme) so screen and export match."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE_NAME = "pe_explorer"

# Colour-blind-safe qualitative palette (Okabe-Ito), one colour per method in a fixed order.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442", "#999999")
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu"
FONT_FAMILY = "Inter, 'Helvetica Neue', Arial, sans-serif"
BASE_FONT_SIZE = 14


def _build_template() -> go.layout.Template:
    axis = dict(
        showline=True, linecolor="#444", linewidth=1, ticks="outside", tickcolor="#444",
        gridcolor="#e6e6e6", zeroline=False, title=dict(standoff=8), automargin=True,
    )
    return go.layout.Template(
        layout=go.Layout(
            font=dict(family=FONT_FAMILY, size=BASE_FONT_SIZE, color="#222"),
            title=dict(font=dict(size=BASE_FONT_SIZE + 4), x=0.0, xanchor="left", pad=dict(l=8)),
            paper_bgcolor="white",
            plot_bgcolor="white",
            colorway=list(PALETTE),
            xaxis=axis,
            yaxis=axis,
            legend=dict(bgcolor="rgba(255,255,255,0.8)", bordercolor="#ccc", borderwidth=1),
            margin=dict(l=60, r=20, t=60, b=55),
            hoverlabel=dict(font=dict(family=FONT_FAMILY)),
            coloraxis=dict(colorscale=SEQUENTIAL),
        ),
        data=dict(
            scatter=[go.Scatter(line=dict(width=2.2))],
            heatmap=[go.Heatmap(colorscale=SEQUENTIAL)],
        ),
    )


TEMPLATE = _build_template()
pio.templates[TEMPLATE_NAME] = TEMPLATE


def new_figure(title: str | None = None, **layout) -> go.Figure:
    """An empty figure with the project template applied explicitly (by its registered name)."""
    return go.Figure(layout={"template": TEMPLATE_NAME, "title": {"text": title}, **layout})


def method_colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
