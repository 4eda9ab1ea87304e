"""Shared test helpers: run a page with AppTest and read back the figures it drew."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("PE_EXPLORER_WARMUP", "0")  # nothing here is timed; no background work on two shared cores
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import run_page  # noqa: E402 - needs the repository on sys.path
from figures.page_form import TITLE_META_KEY  # noqa: E402
from ui.chart import COMPONENT_NAME, PICK_EVENT, read_payload  # noqa: E402

RUN_STORE_ENV = "PE_RUN_STORE"  # pe_core.train.store.STORE_ENV, named before anything imports torch
_OWN_STORE_DIR = "pe_test_run_store_dir"


def pytest_configure(config):
    """Every test session trains into a store of its own, never the repository's runs/ nor the one a developer
    named: made by the controlling process, whose environment the test workers and the servers they start
    inherit."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    directory = tempfile.mkdtemp(prefix="pe-test-runs-")
    os.environ[RUN_STORE_ENV] = str(Path(directory) / "runs.sqlite3")
    setattr(config, _OWN_STORE_DIR, directory)


def pytest_unconfigure(config):
    directory = getattr(config, _OWN_STORE_DIR, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


# The training lesson's figures in the drawing tests come from a run small enough to train in about 20 s on one
# thread: the default run's traces, legends and axes, but 50 steps and 10 of fine-tuning instead of 1,000 and 200
# (the default run took one worker 3-4 minutes beside the other and held the whole suite back by about 90 s).
SMALL_TRAINING = {"steps": 50, "fine_tune_steps": 10}


@pytest.fixture(scope="session")
def small_training_run():
    """The training lesson's settings with ``SMALL_TRAINING``, their run trained once a test session into the
    session's store: the first worker that needs it trains it while the others wait, then read it."""
    from filelock import FileLock

    from lessons import training

    settings = training.Settings(**SMALL_TRAINING)
    with FileLock(os.environ[RUN_STORE_ENV] + ".lock"):
        training.LESSON.result(settings)
    return settings


_DTYPES = {"f8": np.float64, "f4": np.float32, "i1": np.int8, "u1": np.uint8, "i2": np.int16, "u2": np.uint16,
           "i4": np.int32, "u4": np.uint32, "i8": np.int64, "u8": np.uint64}


def _decode(value):
    """Plotly encodes numpy arrays as {'dtype', 'bdata', 'shape'}; turn them back into arrays."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
            if "shape" in value:
                shape = [int(n) for n in str(value["shape"]).split(",")]
                array = array.reshape(shape)
            return array
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@dataclass(frozen=True)
class DrawnChart:
    """One chart an AppTest run drew, whichever element drew it (``ui.chart``'s, or ``st.plotly_chart`` where
    plotly.js cannot be served): its key, element id, figure (as the browser receives it), toolbar config,
    whether it takes a pick, and whether it is the app's own chart."""

    key: str
    id: str
    figure: dict
    config: dict
    pickable: bool
    own: bool


def drawn_charts(at) -> list[DrawnChart]:
    """Every chart of an AppTest run, in page order."""
    charts = []
    for element in _elements(at._tree):
        if element.type not in ("plotly_chart", "bidi_component"):
            continue
        proto = element.proto
        key = proto.id.split("-", 2)[-1]
        if element.type == "plotly_chart":
            charts.append(DrawnChart(key, proto.id, json.loads(proto.spec), json.loads(proto.config),
                                     bool(proto.selection_mode), own=False))
        elif element.type == "bidi_component" and proto.component_name == COMPONENT_NAME:
            payload = read_payload(proto.bytes)
            charts.append(DrawnChart(key, proto.id, payload["figure"], payload["config"], payload["pick"],
                                     own=True))
    return charts


def open_export_menus(at, keys: list[str] | None = None):
    """Open the Export popover under every chart (or the charts keyed ``keys``) and rerun, as a reader's click
    does: a figure's download buttons are made only while its popover is open."""
    from ui.export import export_menu_key

    for key in keys if keys is not None else [chart.key for chart in drawn_charts(at)]:
        at.session_state[export_menu_key(key)] = True
    return at.run()


def _elements(node):
    yield node
    for _, child in sorted(getattr(node, "children", {}).items()):
        yield from _elements(child)


def chart_figures(at) -> list[dict]:
    """Every plotly figure an AppTest run drew, as decoded dicts {'data': [...], 'layout': {...}}.

    A chart in page form shows its title as text above it and keeps it in ``layout.meta``: it is put back as
    the layout's title here, so tests read a chart's title one way whatever the style."""
    figures = [_decode(chart.figure) for chart in drawn_charts(at)]
    for figure in figures:
        meta = figure["layout"].get("meta")
        kept = meta.get(TITLE_META_KEY) if isinstance(meta, dict) else None
        if kept is not None:
            figure["layout"]["title"] = {"text": kept}
            # and the line breaks it added to fit a phone are spaces again, so tests read one text either way
            for trace in figure["data"]:
                if isinstance(trace.get("name"), str):
                    trace["name"] = _unwrapped(trace["name"])
            for note in figure["layout"].get("annotations", ()):
                if isinstance(note.get("text"), str):
                    note["text"] = _unwrapped(note["text"])
    return figures


def _unwrapped(text: str) -> str:
    return re.sub(r"\s*<br>\s*", " ", text)


def figure_titled(at, text: str) -> dict:
    """The one figure whose title contains ``text``."""
    matches = [f for f in chart_figures(at) if text in str(f["layout"].get("title", {}).get("text", ""))]
    assert len(matches) == 1, f"expected one figure titled like {text!r}, found {len(matches)}"
    return matches[0]


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: one thread avoids OpenMP spin-waiting on a shared 2-core machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def page_runner():
    return run_page


def run_whole_page(path: str, query: dict | None = None, **kwargs):
    """Run a page showing every part at once (its "whole page" tab): a long page otherwise runs only its open part."""
    from ui.lesson import PART_KEY, WHOLE_PAGE

    return run_page(path, {PART_KEY: WHOLE_PAGE, **(query or {})}, **kwargs)


def open_expander(at, key: str):
    """Open the page's expander ``key`` (``ui.layout.lazy_expander``: its content runs only while open) and rerun."""
    at.session_state[f"_expander_{key}"] = True
    return at.run()


def select_points(at, chart_key: str, points: list[dict]):
    """Pick ``points`` on the chart drawn with ``chart_key`` and rerun, as the browser does (AppTest has no
    plotly element of its own to click): the app's chart sends a pick event, Streamlit's chart a selection."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetStates

    charts = [c for c in drawn_charts(at) if c.key == chart_key]
    assert len(charts) == 1, f"expected one chart keyed {chart_key!r}, found {len(charts)}"
    assert charts[0].pickable, f"{chart_key} takes no pick"
    selection = {"points": points}
    if charts[0].own:  # the browser sends a component's events to its trigger widget
        widget_id, field = _make_trigger_id(charts[0].id, "events"), "json_trigger_value"
        value = [{"event": PICK_EVENT, "value": selection}]
    else:
        widget_id, field = charts[0].id, "string_value"
        value = {"selection": {**selection, "point_indices": [p.get("point_index", 0) for p in points],
                               "box": [], "lasso": []}}
    picked = WidgetStates()
    picked.widgets.extend(w for w in at._tree.get_widget_states().widgets if w.id != widget_id)
    state = picked.widgets.add()
    state.id = widget_id
    setattr(state, field, json.dumps(value))
    return at._run(picked)


def opens_with_a_chart(page_info) -> bool:
    """Does the page draw a chart as it opens (a page in parts opens on its first part, which may have none)?"""
    from lessons import all_lessons

    if not page_info.charts:
        return False
    lesson = all_lessons().get(page_info.lesson) if page_info.lesson else None
    return lesson is None or not lesson.parts or bool(lesson.parts[0].figures)
