"""Turn bad input into a clear message on the page instead of a traceback."""

from __future__ import annotations

import contextlib

import streamlit as st

from i18n import _


@contextlib.contextmanager
def user_errors(what: str | None = None):
    """Show a ``ValueError`` (our validation messages are written for people) as an error box.

    ``what`` names the input (already translated); the default is "That input"."""
    try:
        yield
    except ValueError as err:
        st.error(_("{what} could not be used: {error}").format(what=what or _("That input"), error=err), icon=":material/warning:")
