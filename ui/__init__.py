"""Streamlit helpers shared by every page (figure display, URL-bound widgets, errors)."""

from ui import params
from ui.errors import user_errors
from ui.figure import page_figures, show_figure
from ui.navigation import adopt_app_navigation

__all__ = ["page_figures", "params", "show_figure", "user_errors"]

adopt_app_navigation()
