"""Which language a reader sees: the sidebar switch, bound to the URL as ``lang=en|zh``.

With no ``lang`` in the URL the browser's language decides (``st.context.locale``), English otherwise.
Switching keeps every other setting: the controls' values are handed back to the widgets, which then
write themselves into the URL with labels in the new language.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from i18n import DEFAULT_LANGUAGE, LANGUAGES, set_language_provider

URL_KEY = "lang"
_CHOICE = "_language_choice"
BOUND_VALUES = "_bound_values"  # URL key -> value of every URL-bound control drawn in this run


def _from_browser() -> str | None:
    locale = (st.context.locale or "").lower()
    return next((code for code in LANGUAGES if locale == code or locale.startswith(f"{code}-")), None)


# The language chosen for the current script run, kept on the run's context: every translated string asks for
# it (about 1,400 times a run on the training page), and reading it from the session state and the URL took
# a fifth of that page's rerun. A run starts with a fresh ``cursors`` dict, so a memo holding an older one is
# from an earlier run.
_RUN_MEMO = "_pe_run_language"


def chosen_language() -> str:
    """The session's language: the switch, else the link's ``lang``, else the browser's, else English."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return DEFAULT_LANGUAGE
    memo = getattr(ctx, _RUN_MEMO, None)
    if memo is not None and memo[0] is ctx.cursors:
        return memo[1]
    language = _read_language()
    setattr(ctx, _RUN_MEMO, (ctx.cursors, language))
    return language


def _forget_run_language() -> None:
    """The language may change within this run (the switch was just used or corrected): read it again."""
    ctx = get_script_run_ctx()
    if ctx is not None:
        setattr(ctx, _RUN_MEMO, None)


def _read_language() -> str:
    choice = st.session_state.get(_CHOICE)
    if choice in LANGUAGES:
        return choice
    linked = st.query_params.get(URL_KEY)
    if linked in LANGUAGES:
        return linked
    return _from_browser() or DEFAULT_LANGUAGE


def _provider() -> str | None:
    try:
        return chosen_language()
    except Exception:  # noqa: BLE001 - outside a script run (a download rendered on click): the default
        return None


def use_session_language() -> None:
    """Translate through the reader's language from now on (app.py calls this first on every run)."""
    set_language_provider(_provider)


def remember_bound_value(key: str, value) -> None:
    st.session_state.setdefault(BOUND_VALUES, {})[key] = value


def _switched() -> None:
    language = st.session_state[_CHOICE]
    st.query_params[URL_KEY] = language
    _forget_run_language()
    # Option widgets write their shown label into the URL; give them their values again so they
    # write the new language's labels instead of dropping the old ones as unknown.
    for key, value in st.session_state.get(BOUND_VALUES, {}).items():
        st.session_state[key] = list(value) if isinstance(value, tuple) else value


def language_switch() -> None:
    """The English / 中文 switch (call inside the sidebar)."""
    current = chosen_language()
    if st.session_state.get(_CHOICE) not in LANGUAGES:
        st.session_state[_CHOICE] = current
        _forget_run_language()
    st.segmented_control("Language / 语言", options=list(LANGUAGES), format_func=LANGUAGES.get, key=_CHOICE,
                         on_change=_switched, label_visibility="collapsed", required=True)
    # A link keeps its language: a language other than English always stands in the URL, and a
    # ``lang`` the app does not have is corrected.
    linked = st.query_params.get(URL_KEY)
    if (linked is None and current != DEFAULT_LANGUAGE) or (linked is not None and linked != current):
        st.query_params[URL_KEY] = current
        _forget_run_language()
