"""Pure functions that turn computed values into plotly figures (no Streamlit here)."""

from figures.theme import PALETTE, TEMPLATE, TEMPLATE_NAME, method_colour, new_figure

__all__ = ["PALETTE", "TEMPLATE", "TEMPLATE_NAME", "method_colour", "new_figure"]
