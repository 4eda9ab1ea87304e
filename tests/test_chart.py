"""The chart the browser updates in place (ui.chart): what it sends, where plotly.js comes from, the fallback."""

from __future__ import annotations

import json
import textwrap

import plotly
import plotly.graph_objects as go
import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import drawn_charts, select_points
from ui import chart


def _figure() -> go.Figure:
    figure = go.Figure(go.Heatmap(z=[[0.5, 1.0], [1.5, 2.0]]))
    figure.update_layout(title="θ heatmap", height=420)
    return figure


def test_the_payload_carries_the_figure_as_streamlits_chart_would_send_it():
    config = {"displaylogo": False, "toImageButtonOptions": {"filename": "θ_d64"}}
    payload = chart.read_payload(chart.chart_payload(_figure(), config, stretch=True))
    assert payload["figure"] == json.loads(plotly.io.to_json(_figure(), validate=False))
    assert payload["config"] == config
    assert payload["stretch"] is True
    assert chart.read_payload(chart.chart_payload(_figure(), config, stretch=False))["stretch"] is False


@pytest.fixture
def static_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(chart, "STATIC_DIR", tmp_path / "static")
    chart._served_library.cache_clear()
    yield tmp_path / "static"
    chart._served_library.cache_clear()


def test_the_installed_plotly_js_is_served_under_its_version(static_dir):
    assert chart._served_library()
    served = static_dir / chart.plotly_file_name()
    shipped = plotly.__file__.rsplit("/", 1)[0] + "/package_data/plotly.min.js"
    assert plotly.__version__ in served.name
    assert served.read_bytes() == open(shipped, "rb").read()
    assert [p.name for p in static_dir.iterdir()] == [served.name]  # no partial copy left behind
    assert f"./app/static/{served.name}" in chart._chart_js()


def test_the_benchmarks_find_charts_by_the_class_the_chart_gives_them():
    from benchmarks import harness

    assert harness.CHART_CLASS == chart.CHART_CLASS
    assert f'className = "{chart.CHART_CLASS}"' in chart._chart_js()


def test_a_truncated_copy_is_replaced(static_dir):
    static_dir.mkdir()
    (static_dir / chart.plotly_file_name()).write_bytes(b"/* cut short */")
    assert chart._served_library()
    assert (static_dir / chart.plotly_file_name()).stat().st_size > 1_000_000


SCRIPT = textwrap.dedent("""
    import plotly.graph_objects as go
    from ui.chart import draw_chart
    draw_chart(go.Figure(go.Scatter(y=[1, 3, 2])), "demo", config={"displaylogo": False})
""")


PICKING_SCRIPT = textwrap.dedent("""
    import plotly.graph_objects as go
    import streamlit as st
    from ui.chart import PICK_EVENT, draw_chart

    def remember_pick():
        point = st.session_state["demo"][PICK_EVENT]["points"][0]
        st.session_state["picked"] = (point["x"], point["curve_number"])

    draw_chart(go.Figure(go.Scatter(y=[1, 3, 2])), "demo", config={}, on_pick=remember_pick)
    st.write(f"picked: {st.session_state.get('picked')}")
""")


def _run_script(tmp_path, source: str = SCRIPT):
    script = tmp_path / "page.py"
    script.write_text(source)
    at = AppTest.from_file(str(script), default_timeout=30)
    at.run()
    assert not at.exception
    return at


def test_a_chart_is_the_apps_own_element_keyed_by_its_key(static_dir, tmp_path):
    at = _run_script(tmp_path)
    assert len(at.get("bidi_component")) == 1 and not at.get("plotly_chart")
    (drawn,) = drawn_charts(at)
    assert drawn.key == "demo" and drawn.figure["data"][0]["y"] == [1, 3, 2]


def test_where_plotly_js_cannot_be_served_streamlits_chart_draws_the_figure(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, so no folder can be made here")
    monkeypatch.setattr(chart, "STATIC_DIR", blocked / "static")
    chart._served_library.cache_clear()
    try:
        at = _run_script(tmp_path)
    finally:
        chart._served_library.cache_clear()
    assert len(at.get("plotly_chart")) == 1 and not at.get("bidi_component")
    (drawn,) = drawn_charts(at)
    assert drawn.figure["data"][0]["y"] == [1, 3, 2] and drawn.config == {"displaylogo": False}


@pytest.mark.parametrize("served", [True, False], ids=["apps-chart", "streamlits-chart"])
def test_a_click_on_a_chart_that_takes_picks_reaches_its_callback_with_the_point(served, static_dir, tmp_path,
                                                                                 monkeypatch):
    if not served:
        (tmp_path / "blocked").write_text("a file, so no folder can be made here")
        monkeypatch.setattr(chart, "STATIC_DIR", tmp_path / "blocked" / "static")
    at = _run_script(tmp_path, PICKING_SCRIPT)
    (drawn,) = drawn_charts(at)
    assert drawn.pickable and drawn.own is served
    assert at.markdown[0].value == "picked: None"
    select_points(at, "demo", [{"x": 2, "y": 2.0, "curve_number": 0, "point_index": 2}])
    assert not at.exception
    assert at.markdown[0].value == "picked: (2, 0)"
    assert drawn_charts(at)[0].id == drawn.id  # the same chart, not a new one
    if served:
        assert '"pick":true' in at.get("bidi_component")[0].proto.bytes.decode()


def test_a_figure_is_serialised_once_and_forgotten_with_it(monkeypatch):
    import gc

    calls = []
    to_json = plotly.io.to_json
    monkeypatch.setattr(plotly.io, "to_json", lambda figure, **kw: calls.append(1) or to_json(figure, **kw))
    figure = _figure()
    first = chart.chart_payload(figure, {}, stretch=True)
    assert chart.chart_payload(figure, {"displaylogo": False}, stretch=False) != first  # config and width still apply
    assert len(calls) == 1  # the same figure object: serialised once
    assert chart.read_payload(chart.chart_payload(_figure(), {}, stretch=True)) == chart.read_payload(first)
    assert len(calls) == 2  # an equal but new figure is serialised again
    key = id(figure)
    del figure
    gc.collect()
    assert key not in chart._SPECS
