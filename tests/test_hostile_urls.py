"""Random and hostile URL parameters on every page: never a traceback, always a visible note."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_page
from ui.pages import available_pages

WIDGET_KINDS = ("slider", "select_slider", "selectbox", "multiselect", "radio", "checkbox", "toggle", "number_input")

# Values no widget of this app accepts: markup, control characters, absurd numbers, path tricks.
HOSTILE = st.one_of(
    st.sampled_from(["<script>alert(1)</script>", "../../etc/passwd", "1e999", "-1e999", "nan", "NaN", "inf",
                     "0x1F", "%00", "'; DROP TABLE", "\u202e\u0000", "{}", "[]", "None", "__import__('os')"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).map(lambda s: "§" + s),
)


def bound_keys(path: str) -> list[str]:
    """The URL parameter names of a page's widgets at its defaults."""
    at = run_page(path)
    assert not at.exception
    keys = []
    for kind in WIDGET_KINDS:
        for widget in getattr(at, kind):
            if widget.key and not widget.key.startswith("$$"):
                keys.append(widget.key)
    return keys


PAGES = [p for p in available_pages() if p.path != "app_pages/home.py"]


@pytest.mark.parametrize("info", PAGES, ids=[p.title for p in PAGES])
def test_hostile_url_values_fall_back_visibly(info):
    keys = bound_keys(info.path)
    if not keys:
        pytest.skip("page has no URL-bound widgets")

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.sampled_from(keys), HOSTILE), min_size=1, max_size=4, unique_by=lambda kv: kv[0]))
    def check(assignments):
        at = run_page(info.path, dict(assignments))
        assert not at.exception, at.exception
        notes = " ".join(w.value for w in at.warning)
        assert "The link set" in notes

    check()


def test_unknown_url_parameters_are_ignored():
    info = PAGES[0] if PAGES else available_pages()[0]
    at = run_page(info.path, {"no_such_widget": "<b>x</b>"})
    assert not at.exception
