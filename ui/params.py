"""Widgets bound to the URL, so a link restores the view.

Each helper is the Streamlit widget with ``bind="query-params"`` and the key as the URL
parameter name. Streamlit silently drops a URL value the widget cannot take; these helpers
notice that and say so on the page, then the default is used (never a traceback).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from i18n import LANGUAGES, _, use_language


def _raw_values(key: str) -> list[str] | None:
    if key not in st.query_params:
        return None
    return st.query_params.get_all(key)


def _same_number(raw: str, value: Any) -> bool:
    try:
        return math.isclose(float(raw), float(value), rel_tol=1e-9, abs_tol=0.0)
    except (TypeError, ValueError):
        return False


def _serialised(value: Any, format_func: Callable[[Any], str] | None) -> set[str]:
    forms = {str(value)}
    if format_func is not None:
        forms.add(str(format_func(value)))
    if isinstance(value, bool):
        forms.add(str(value).lower())
    return forms


def _is_default(raw: list[str], default: Any, format_func: Callable[[Any], str] | None) -> bool:
    if isinstance(default, (list, tuple)):
        given = set(raw)
        return len(raw) == len(default) and all(_serialised(v, format_func) & given for v in default)
    text = raw[-1]
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return _same_number(text, default)
    return text in _serialised(default, format_func)


def _check(key: str, label: str, raw: list[str] | None, default: Any, format_func=None) -> None:
    """After the widget ran: if Streamlit dropped the URL value, say so visibly."""
    if raw is None or key in st.query_params or _is_default(raw, default, format_func):
        return
    shown = ", ".join(raw) if len(raw) != 1 else raw[0]
    fmt = format_func or str
    default_text = ", ".join(map(fmt, default)) if isinstance(default, (list, tuple)) else fmt(default)
    note = _("The link set **{label}** to `{value}`, which this control cannot take; showing the default "
             "({default}) instead.").format(label=label, value=shown, default=default_text)
    st.warning(note, icon=":material/link:")


def _labels_in_every_language(options: Sequence, format_func: Callable[[Any], str] | None) -> dict[str, Any]:
    """Every way a link may name an option: its label in each language, and the option itself as text."""
    names: dict[str, Any] = {}
    for option in options:
        names.setdefault(str(option), option)
        if format_func is not None:
            for language in LANGUAGES:
                with use_language(language):
                    names.setdefault(str(format_func(option)), option)
    return names


_LINK_VALUES = "_link_values"  # values a link meant, handed to widgets on the rerun after first sight


def _meant_by_link(raw: list[str] | None, options: Sequence, format_func, many: bool):
    """What a link's value means when it names options in another language (or by value: ``methods=ntk``).

    Streamlit reads only the current language's labels from the URL; None when it can read them itself
    (or when the link names something no language has, which ``_check`` then reports).
    """
    if raw is None:
        return None
    current = {str(format_func(o)) if format_func else str(o) for o in options}
    if all(text in current for text in raw):
        return None
    names = _labels_in_every_language(options, format_func)
    if not all(text in names for text in raw):
        return None
    chosen = [names[text] for text in raw]
    return chosen if many else chosen[-1]


def _option_widget(widget, label: str, key: str, options: Sequence, fallback, format_func, many: bool = False,
                   **kwargs):
    """An option widget bound to the URL whose links work in every language.

    A link made in one language names options by that language's labels, and Streamlit reads only the
    current language's (dropping the others from the address bar as well). On first sight, before the
    widget is bound, the link's value is written back into the URL in this language's labels and the
    page reruns once, so the widget and the address bar both take the whole value. Should the widget be
    bound already, the value is handed over through session state instead (code-set state wins on a
    rerun, so that costs one extra rerun too).
    """
    pending: dict = st.session_state.setdefault(_LINK_VALUES, {})
    if key in pending:
        st.session_state[key] = pending.pop(key)
    raw = _raw_values(key)
    meant = None if key in st.session_state else _meant_by_link(raw, options, format_func, many)
    if meant is not None:
        shown = format_func or str
        try:
            st.query_params[key] = [str(shown(v)) for v in meant] if many else str(shown(meant))
        except StreamlitAPIException:  # bound to the widget already
            st.session_state[key] = meant
        else:
            st.rerun()
    extra = {"format_func": format_func} if format_func else {}
    result = widget(label, options, key=key, bind="query-params", **extra, **kwargs)
    if meant is not None:
        if (list(result) if many else result) != meant:
            pending[key] = meant
            st.rerun()
        return result
    _check(key, label, raw, fallback, format_func)
    return result


def slider(label: str, key: str, min_value, max_value, value, step=None, **kwargs):
    raw = _raw_values(key)
    result = st.slider(label, min_value, max_value, value, step, key=key, bind="query-params", **kwargs)
    _check(key, label, raw, value)
    return result


def select_slider(label: str, key: str, options: Sequence, value, format_func=None, **kwargs):
    return _option_widget(lambda lab, opts, **kw: st.select_slider(lab, options=opts, value=value, **kw),
                          label, key, options, value, format_func, **kwargs)


def selectbox(label: str, key: str, options: Sequence, index: int = 0, format_func=None, **kwargs):
    return _option_widget(st.selectbox, label, key, options, options[index], format_func, index=index, **kwargs)


def radio(label: str, key: str, options: Sequence, index: int = 0, format_func=None, **kwargs):
    return _option_widget(st.radio, label, key, options, options[index], format_func, index=index, **kwargs)


def multiselect(label: str, key: str, options: Sequence, default: Sequence, format_func=None, **kwargs):
    return _option_widget(st.multiselect, label, key, options, list(default), format_func, many=True,
                          default=list(default), **kwargs)


def number_input(label: str, key: str, min_value, max_value, value, step=None, **kwargs):
    raw = _raw_values(key)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (min_value, max_value, value)):
        # Streamlit's integer number_input raises OverflowError on a URL value such as 1e999;
        # a float widget rejects non-finite values itself, so integers go through one.
        kwargs.setdefault("format", "%.0f")
        result = st.number_input(label, float(min_value), float(max_value), float(value),
                                 float(step if step is not None else 1), key=key, bind="query-params", **kwargs)
        _check(key, label, raw, value)
        return int(round(result))
    result = st.number_input(label, min_value, max_value, value, step, key=key, bind="query-params", **kwargs)
    _check(key, label, raw, value)
    return result


def checkbox(label: str, key: str, value: bool = False, **kwargs) -> bool:
    raw = _raw_values(key)
    result = st.checkbox(label, value=value, key=key, bind="query-params", **kwargs)
    _check(key, label, raw, value)
    return result


def toggle(label: str, key: str, value: bool = False, **kwargs) -> bool:
    raw = _raw_values(key)
    result = st.toggle(label, value=value, key=key, bind="query-params", **kwargs)
    _check(key, label, raw, value)
    return result


def text_area(label: str, key: str, value: str = "", **kwargs) -> str:
    result = st.text_area(label, value=value, key=key, bind="query-params", **kwargs)
    return result
