"""Streamlit helpers shared by every page (figure display, URL-bound widgets, errors)."""

# First, before the heavier imports below: a fresh server's first runs are switched to app.py's navigation as soon as
# they start (ui/navigation.py), which keeps the time in which other first runs start the old way short.
from ui.navigation import adopt_app_navigation

adopt_app_navigation()

from ui import params  # noqa: E402
from ui.errors import user_errors  # noqa: E402
from ui.figure import page_figures, show_figure  # noqa: E402
from ui.language import use_session_language  # noqa: E402

__all__ = ["page_figures", "params", "show_figure", "user_errors"]

use_session_language()  # every page imports ui: translate through the reader's language, app.py or not
