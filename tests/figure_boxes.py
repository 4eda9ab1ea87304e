"""Where plotly.js puts a figure's text, and which pieces of it collide (for the browser layout tests).

A figure is drawn by plotly.js in headless Chromium at a given width; the boxes of its title, axis titles,
legend, colour bars, notes (annotations), tick labels, in-figure slider and plot areas are read from the SVG.
Two pieces that should never meet (a legend and an axis title, two notes, a colour bar and a plot) are
reported when their boxes overlap by more than a couple of pixels, and any text that runs off the canvas. The
plot areas' heights are read too, to compare a phone's with a desktop's.
Notes inside a plot area and tick labels among themselves are plotly's or the figure's own business.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio

BOXES_JS = r"""
async ([figure, width, height]) => {
  const holder = document.createElement('div');
  holder.style.width = width + 'px';
  holder.style.height = height + 'px';
  document.body.appendChild(holder);
  const layout = Object.assign({}, figure.layout);
  if (!layout.width) layout.autosize = true;
  await Plotly.newPlot(holder, figure.data, layout, {staticPlot: true});
  const canvas = holder.querySelector('.main-svg').getBoundingClientRect();
  const boxes = [];
  const add = (element, kind, label) => {
    const r = element.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return;
    boxes.push({kind, label: (label || element.textContent || '').slice(0, 50),
                x0: r.left - canvas.left, y0: r.top - canvas.top, x1: r.right - canvas.left, y1: r.bottom - canvas.top});
  };
  holder.querySelectorAll('.infolayer > g').forEach(g => {
    const name = g.getAttribute('class') || '';
    if (/^g-(g|[xy]\d*)title$/.test(name)) add(g, name === 'g-gtitle' ? 'title' : 'axis title');
  });
  holder.querySelectorAll('.infolayer .legend .bg').forEach(e => add(e, 'legend', 'legend'));
  holder.querySelectorAll('.infolayer .colorbar').forEach(e => add(e, 'colour bar', 'colour bar'));
  holder.querySelectorAll('.annotation .annotation-text-g').forEach(e => add(e, 'note'));
  holder.querySelectorAll('.xtick text, .ytick text').forEach(e => add(e, 'tick'));
  holder.querySelectorAll('.slider-container .slider-rail-rect, .slider-container .slider-current-value')
    .forEach(e => add(e, 'slider', 'slider'));
  // each plot area from plotly's own axes (a static plot draws no drag layer to measure it by)
  Object.values(holder._fullLayout._plots || {}).forEach(({xaxis, yaxis}) => boxes.push({kind: 'plot',
    label: xaxis._id + yaxis._id, x0: xaxis._offset, y0: yaxis._offset, x1: xaxis._offset + xaxis._length,
    y1: yaxis._offset + yaxis._length}));
  const size = {width: canvas.width, height: canvas.height};
  Plotly.purge(holder);
  holder.remove();
  return {size, boxes};
}
"""

# Pairs of kinds whose boxes must not overlap.
APART = {frozenset(pair) for pair in [
    ("title", "axis title"), ("title", "legend"), ("title", "colour bar"), ("title", "note"), ("title", "tick"),
    ("axis title", "axis title"), ("axis title", "legend"), ("axis title", "colour bar"), ("axis title", "note"),
    ("axis title", "tick"), ("legend", "colour bar"), ("legend", "note"), ("legend", "tick"), ("legend", "plot"),
    ("colour bar", "note"), ("colour bar", "tick"), ("colour bar", "plot"), ("note", "note"), ("note", "tick"),
    ("slider", "legend"), ("slider", "axis title"), ("slider", "tick"), ("slider", "note"), ("slider", "colour bar"),
    ("slider", "plot"),
]}
SLACK = 2  # px: anti-aliased edges of neighbours may touch


def blank_page(directory: Path) -> Path:
    """An HTML page with the installed plotly.js inlined (no network), to draw figures in."""
    script = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    page = directory / "plotly.html"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body style='margin:0'>"
                    f"<script>{script}</script></body></html>", encoding="utf-8")
    return page


def draw(page, figure: go.Figure, width: int, height: int | None = None) -> dict:
    """``figure`` drawn ``width`` px wide (and ``height`` px, else the figure's own height): {"size", "boxes"}."""
    spec = json.loads(pio.to_json(figure, validate=False))
    return page.evaluate(BOXES_JS, [spec, width, height or spec["layout"].get("height") or 450])


def plot_heights(drawn: dict) -> dict[str, float]:
    """Each plot area's height in px, by its axes (``xy``, ``x2y2``, ...)."""
    return {box["label"]: box["y1"] - box["y0"] for box in drawn["boxes"] if box["kind"] == "plot"}


def problems(boxes: list[dict], width: float, height: float) -> list[str]:
    found = []
    for box in boxes:
        if box["kind"] != "plot" and (box["x0"] < -SLACK or box["y0"] < -SLACK or box["x1"] > width + SLACK
                                      or box["y1"] > height + SLACK):
            found.append(f"{box['kind']} {box['label']!r} runs off the {width:.0f}×{height:.0f} canvas")
    for first, second in itertools.combinations(boxes, 2):
        if frozenset((first["kind"], second["kind"])) not in APART:
            continue
        if (min(first["x1"], second["x1"]) - max(first["x0"], second["x0"]) > SLACK
                and min(first["y1"], second["y1"]) - max(first["y0"], second["y0"]) > SLACK):
            found.append(f"{first['kind']} {first['label']!r} overlaps {second['kind']} {second['label']!r}")
    return found
