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
    note = (
        f"The link set **{label}** to `{shown}`, which this control cannot take; "
        f"showing the default ({default_text}) instead."
    )
    st.warning(note, icon="🔗")


def slider(label: str, key: str, min_value, max_value, value, step=None, **kwargs):
    raw = _raw_values(key)
    result = st.slider(label, min_value, max_value, value, step, key=key, bind="query-params", **kwargs)
    _check(key, label, raw, value)
    return result


def select_slider(label: str, key: str, options: Sequence, value, format_func=None, **kwargs):
    raw = _raw_values(key)
    extra = {"format_func": format_func} if format_func else {}
    result = st.select_slider(label, options=options, value=value, key=key, bind="query-params", **extra, **kwargs)
    _check(key, label, raw, value, format_func)
    return result


def selectbox(label: str, key: str, options: Sequence, index: int = 0, format_func=None, **kwargs):
    raw = _raw_values(key)
    extra = {"format_func": format_func} if format_func else {}
    result = st.selectbox(label, options, index=index, key=key, bind="query-params", **extra, **kwargs)
    _check(key, label, raw, options[index], format_func)
    return result


def radio(label: str, key: str, options: Sequence, index: int = 0, format_func=None, **kwargs):
    raw = _raw_values(key)
    extra = {"format_func": format_func} if format_func else {}
    result = st.radio(label, options, index=index, key=key, bind="query-params", **extra, **kwargs)
    _check(key, label, raw, options[index], format_func)
    return result


def multiselect(label: str, key: str, options: Sequence, default: Sequence, format_func=None, **kwargs):
    raw = _raw_values(key)
    extra = {"format_func": format_func} if format_func else {}
    result = st.multiselect(label, options, default=list(default), key=key, bind="query-params", **extra, **kwargs)
    _check(key, label, raw, list(default), format_func)
    return result


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
