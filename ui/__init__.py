"""Streamlit helpers shared by every page (figure display, URL-bound widgets, errors)."""

from ui import params
from ui.errors import user_errors
from ui.figure import page_figures, show_figure
from ui.language import use_session_language

__all__ = ["page_figures", "params", "show_figure", "user_errors"]

use_session_language()  # every page imports ui: translate through the reader's language, app.py or not
