"""Pure functions that turn computed values into plotly figures (no Streamlit here)."""

from figures.theme import PALETTE, TEMPLATE, TEMPLATE_NAME, new_figure, series_colour

__all__ = ["PALETTE", "TEMPLATE", "TEMPLATE_NAME", "new_figure", "series_colour"]
