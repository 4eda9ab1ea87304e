"""A plotly chart that the browser updates in place (``Plotly.react``) when its figure changes.

``st.plotly_chart``'s element id covers the figure's spec, so every changed figure is a new element: the browser
throws the old chart away and builds a new one (``Plotly.newPlot``, then Streamlit's follow-up update). This
chart's identity is its key alone; a rerun hands the mounted chart its new figure and plotly redraws only what
changed (measured on one 64×512 heatmap: 99 ms settled per slider move with ``st.plotly_chart``, 62 ms here;
three heatmaps 218 → 118 ms). A chart far off screen is drawn only when it comes near it: a move redraws the
charts the reader sees (on a page of line charts, redrawing is most of a move's time), the top one on screen
first and the rest after the browser has painted it.

plotly.js itself is the copy the installed plotly package ships, served once per browser from the app's static
folder (``server.enableStaticServing``), so the figure and the library that draws it always match. A page that draws
charts starts loading it as the page starts (``preload_library``), while its script computes the figures.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io
import streamlit as st

from figures.theme import TABLE_WIDTH

APP_ROOT = Path(__file__).resolve().parents[1]
STATIC_DIR = APP_ROOT / "static"  # what Streamlit serves at app/static/ (next to app.py)
COMPONENT_NAME = "pe_plotly_chart"
# The class of a chart's plot element. The browser benchmark and tests find charts by it and read the figure a
# chart was last handed (``__peText``) and whether it is near the screen (``__peNear``).
CHART_CLASS = "pe-chart"
# px a table figure is drawn at, at least (the width its rows' heights are laid out for): on a phone it scrolls
# sideways in its own box
TABLE_MIN_WIDTH = TABLE_WIDTH + 20
# px each of several side-by-side panels keeps at least: below it a figure scrolls sideways in its own box
PANEL_MIN_WIDTH = 180  # four panels fit a desktop page column (about 730 px at the narrowest)
# The hidden element that starts loading plotly.js at the start of a run (``preload_library``): a failed load is
# left to the charts, which load again and say why.
PRELOAD_NAME, PRELOAD_KEY = "pe_plotly_preload", "pe-preload"
_PRELOAD_JS = "export default function () { plotlyLoaded().catch(() => {}); }"
# The event a click on a chart that takes picks sends: ``st.session_state[key][PICK_EVENT]`` holds the picked
# points, as ``st.plotly_chart``'s selection does (``{"points": [{"x": ..., "y": ..., "curve_number": ...}]}``).
PICK_EVENT = "selection"
_log = logging.getLogger(__name__)

# The library loads once per page: a promise shared by every chart and the preloading element.
_LOADER_JS = r"""
const SOURCE = "__PLOTLY_SRC__";
function plotlyLoaded() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__pePlotly) {
    window.__pePlotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = SOURCE;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { window.__pePlotly = null; reject(new Error("plotly.js did not load")); };
      document.head.appendChild(script);
    });
  }
  return window.__pePlotly;
}
"""
# Each call hands one chart its figure. A figure the chart already shows (the same bytes) is not parsed again; a
# chart that leaves the page is purged.
_CHART_JS = r"""
// A chart off screen is not drawn until it comes near the viewport: a slider move redraws what the reader
// sees, and the rest when it is scrolled to. Until its first drawing it keeps the figure's height.
const NEAR = "50% 0px";  // half a screen above and below it
// A chart does one thing at a time: plotly.js does not survive a Plotly.react or a resize into a plot whose last
// one has not finished. Figures handed over while the library loaded (a busy machine, a slider moved at once)
// each started a drawing, and the page then used a core and gigabytes and stopped answering. So a figure or a
// new width that arrives meanwhile waits, and of several waiting figures only the newest is drawn.
function whenIdle(chart, work) {
  chart.__peBusy = true;
  plotlyLoaded().then(work)
    .catch((error) => { chart.textContent = String(error); })
    .finally(() => {
      chart.__peBusy = false;
      if (chart.__peResizeDue) resize(chart);
      if (chart.__peNear) draw(chart);  // after that resize, if it started one
    });
}
function draw(chart) {
  const payload = chart.__pePending;
  if (payload === undefined || chart.__peBusy) return;
  chart.__pePending = undefined;
  const { figure, config, stretch } = payload;
  const layout = figure.layout || {};
  if (stretch) { layout.autosize = true; delete layout.width; }
  // Plotly.react given a config rebuilds the whole plot (newPlot, then react again): plotly.js counts a
  // config as changed whenever one is passed. So the config goes to plotly only when it differs from the
  // one the chart has; the toolbar's download options (named after the settings, so new on most moves)
  // are read by its button when clicked, and are set on the chart's context directly (but for the format,
  // which names the button).
  const { toImageButtonOptions: download, ...settings } = config;
  const settingsText = JSON.stringify([settings, download && download.format]);
  const update = {data: figure.data || [], layout, frames: figure.frames || []};
  if (chart.__peConfig !== settingsText || !chart._context) update.config = config;
  // A table's columns do not wrap to a phone's width: it is drawn at a readable width and scrolls in its own box.
  const table = update.data.some((trace) => trace.type === "table");
  // Side-by-side panels (a phone gets them stacked; a narrow desktop window does not) keep a readable width each
  // and scroll in their own box rather than crushing their titles and ticks together.
  const columns = new Set(Object.keys(layout).filter((key) => /^xaxis\d*$/.test(key))
    .map((key) => ((layout[key] || {}).domain || [0, 1])[0].toFixed(3))).size;
  const minWidth = table ? TABLE_MIN_WIDTH : (columns > 1 ? columns * PANEL_MIN_WIDTH : 0);
  chart.style.minWidth = minWidth ? minWidth + "px" : "";
  chart.parentElement.style.overflowX = minWidth ? "auto" : "";
  whenIdle(chart, (Plotly) => {
    if (chart.__pePending !== undefined) return;  // a newer figure arrived while the library loaded
    return Plotly.react(chart, update).then(() => {
      chart.__peConfig = settingsText;
      if (download) chart._context.toImageButtonOptions = download;
      if (payload.pick) listenForPicks(chart);
      chart.style.minHeight = "";
    });
  });
}
// A move can hand several charts new figures in one task, and the browser painted none of them until plotly had
// drawn them all. So the first chart on screen (the top one: charts are handed their figures in page order) draws
// at once, and the others once that frame has been painted: the first change shows without waiting for the other
// charts' drawing (RoPE in code, alternated in one browser: first change 129 -> 109 ms a move, settled 129 -> 136).
const afterPaint = new Set();
let drewThisTask = false;
function drawSoon(chart) {
  if (chart.__peOnScreen && !drewThisTask) {
    drewThisTask = true;
    setTimeout(() => { drewThisTask = false; });
    draw(chart);
    return;
  }
  if (afterPaint.size === 0) {
    requestAnimationFrame(() => setTimeout(() => {
      const waiting = [...afterPaint];
      afterPaint.clear();
      for (const each of waiting) if (each.__peNear) draw(each);
    }));
  }
  afterPaint.add(chart);
}
function resize(chart) {
  chart.__peResizeDue = chart.__peBusy;
  if (chart.__peBusy || !chart._fullLayout || !chart._fullLayout.autosize) return;
  whenIdle(chart, (Plotly) => Plotly.Plots.resize(chart));
}
// A click on a point is sent to the script as the chart's "__PICK_EVENT__" event, shaped as st.plotly_chart's
// point selection ({points: [{x, y, curve_number, point_index, ...}]}), so the page reads either the same way.
function listenForPicks(chart) {
  if (chart.__pePicks) return;
  chart.__pePicks = true;
  chart.on("plotly_click", (event) => {
    const points = (event.points || []).map((point) => ({
      x: point.x, y: point.y, z: point.z, curve_number: point.curveNumber, point_number: point.pointNumber,
      point_index: point.pointIndex, customdata: point.customdata}));
    if (points.length && chart.__peSend) chart.__peSend("__PICK_EVENT__", {points});
  });
}
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let chart = parentElement.querySelector(".__CHART_CLASS__");
  if (!chart) {
    chart = document.createElement("div");
    chart.className = "__CHART_CLASS__";
    chart.style.width = "100%";
    parentElement.appendChild(chart);
    chart.__peNear = false;
    chart.__peWatch = new IntersectionObserver((entries) => {
      chart.__peNear = entries[entries.length - 1].isIntersecting;
      if (chart.__peNear) draw(chart);
    }, {rootMargin: NEAR});
    chart.__peWatch.observe(chart);
    chart.__peOnScreen = false;
    chart.__peSeen = new IntersectionObserver((entries) => {
      chart.__peOnScreen = entries[entries.length - 1].isIntersecting;
    });
    chart.__peSeen.observe(chart);
    // Only a new width needs a redraw (the chart fills its column's width; its height is the figure's own). The
    // column's height follows the chart's, so reacting to any size change redrew a chart whose figure changed
    // height twice per move.
    chart.__peWidth = parentElement.clientWidth;
    chart.__peResize = new ResizeObserver(() => {
      if (parentElement.clientWidth === chart.__peWidth) return;
      chart.__peWidth = parentElement.clientWidth;
      resize(chart);
    });
    chart.__peResize.observe(parentElement);
  }
  chart.__peSend = setTriggerValue;
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  if (chart.__peText !== text) {
    chart.__peText = text;
    chart.__pePending = JSON.parse(text);
    if (!chart._fullLayout) chart.style.minHeight = ((chart.__pePending.figure.layout || {}).height || 450) + "px";
    if (chart.__peNear) drawSoon(chart);
  }
  // Streamlit calls this when the chart leaves the page, and also when a figure was handed over while the one
  // before it was still on its way to this function (its element stays, and is drawn into next).
  return () => {
    if (parentElement.isConnected) return;
    chart.__peWatch.disconnect();
    chart.__peSeen.disconnect();
    chart.__peResize.disconnect();
    chart.__peNear = false;
    if (window.Plotly) window.Plotly.purge(chart);
  };
}
"""


def plotly_file_name() -> str:
    """The served library's name carries plotly.py's version: a browser never draws with a stale cached copy."""
    return f"plotly-{plotly.__version__}.min.js"


@cache
def _served_library() -> bool:
    """Copy the installed package's plotly.js into the app's static folder once per process (if not already
    there); False where it cannot be written (a read-only checkout): charts then fall back to ``st.plotly_chart``."""
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    target = STATIC_DIR / plotly_file_name()
    try:
        if not target.exists() or target.stat().st_size != source.stat().st_size:
            STATIC_DIR.mkdir(exist_ok=True)
            # several server processes may start at once: each writes its own copy, then renames it into place
            with tempfile.NamedTemporaryFile(dir=STATIC_DIR, suffix=".part", delete=False) as partial:
                shutil.copyfileobj(source.open("rb"), partial)
            Path(partial.name).replace(target)
        return True
    except OSError as error:
        _log.warning("Cannot serve plotly.js from %s (%s); charts are drawn by st.plotly_chart.", STATIC_DIR, error)
        return False


@cache
def _library_js(component_js: str) -> str:
    """``component_js`` after the library's loader, which it calls."""
    return (_LOADER_JS + component_js).replace("__PLOTLY_SRC__", f"./app/static/{plotly_file_name()}")


@cache
def _chart_js() -> str:
    return (_library_js(_CHART_JS).replace("__CHART_CLASS__", CHART_CLASS).replace("__PICK_EVENT__", PICK_EVENT)
            .replace("TABLE_MIN_WIDTH", str(TABLE_MIN_WIDTH)).replace("PANEL_MIN_WIDTH", str(PANEL_MIN_WIDTH)))


def _component():
    # registered on every draw: a registry belongs to a runtime (a test makes several); the same definition
    # registered again is a no-op
    return st.components.v2.component(COMPONENT_NAME, js=_chart_js(), isolate_styles=False)


def preload_library() -> None:
    """Start loading plotly.js now, in a hidden element: call it before a page computes its figures.

    A chart asks for the library when it is handed its first figure, after the page's script has imported torch
    and computed; on a cold server's first page that left the browser idle for a second and then loading and
    parsing 1.5 MB before the first drawing. Loaded while the script works, the first chart draws as its figure
    arrives.
    """
    if _served_library():
        # Streamlit gives a keyed element's container the class st-key-<key>: hidden, it takes no gap in the sidebar
        preload = st.components.v2.component(PRELOAD_NAME, js=_library_js(_PRELOAD_JS),
                                             css=f".st-key-{PRELOAD_KEY} {{display: none}}", isolate_styles=False)
        preload(key=PRELOAD_KEY, height=0)


# Figures serialised so far, by identity: id -> (weak reference, JSON). The lessons cache their figures, so a
# rerun hands the same figure objects again and each is serialised once, not on every rerun (1-2 ms a figure,
# a quarter of the decay page's rerun). Figures are never changed once built (the pages only draw them).
_SPECS: dict[int, tuple[weakref.ref, str]] = {}
_SPECS_LOCK = threading.Lock()


def figure_json(figure: go.Figure) -> str:
    """``figure`` as plotly.js receives it (``plotly.io.to_json``), serialised once per figure object."""
    key = id(figure)
    with _SPECS_LOCK:
        known = _SPECS.get(key)
    if known is not None and known[0]() is figure:
        return known[1]
    spec = plotly.io.to_json(figure, validate=False)

    def forget(_reference, key=key) -> None:
        with _SPECS_LOCK:
            if _SPECS.get(key, (None,))[0] is _reference:
                del _SPECS[key]

    with _SPECS_LOCK:
        _SPECS[key] = (weakref.ref(figure, forget), spec)
    return spec


def chart_payload(figure: go.Figure, config: dict, *, stretch: bool, pick: bool = False) -> bytes:
    """What one chart receives: the figure as ``st.plotly_chart`` would send it, its toolbar config, whether
    it fills its column's width, and whether a click on it picks a point."""
    spec = figure_json(figure)
    return (f'{{"figure":{spec},"config":{json.dumps(config)},"stretch":{json.dumps(stretch)},'
            f'"pick":{json.dumps(pick)}}}').encode()


def read_payload(payload: bytes) -> dict:
    """The figure (a dict, as plotly.js receives it), config, width rule and pick flag of a chart's payload."""
    return json.loads(payload.decode())


def draw_chart(figure: go.Figure, key: str, *, config: dict, width: int | str = "stretch",
               height: int | str = "content", on_pick: Callable[[], None] | None = None) -> None:
    """Draw ``figure`` as a chart identified by ``key`` alone: a changed figure updates the chart in place.

    ``on_pick``: a click on a point calls it, before the rerun; it reads the picked points from
    ``st.session_state[key][PICK_EVENT]["points"]``.
    """
    if not _served_library():
        st.plotly_chart(figure, theme=None, key=key, config=config, width=width, height=height,
                        **({"on_select": on_pick, "selection_mode": ("points",)} if on_pick else {}))
        return
    events = {f"on_{PICK_EVENT}_change": on_pick} if on_pick else {}
    _component()(key=key, data=chart_payload(figure, config, stretch=width == "stretch", pick=on_pick is not None),
                 width=width, height=height, **events)
