"""Turn bad input into a clear message on the page instead of a traceback."""

from __future__ import annotations

import contextlib

import streamlit as st


@contextlib.contextmanager
def user_errors(what: str = "That input"):
    """Show a ``ValueError`` (our validation messages are written for people) as an error box."""
    try:
        yield
    except ValueError as err:
        st.error(f"{what} could not be used: {err}", icon="⚠️")
