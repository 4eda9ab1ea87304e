"""The slide style: any project figure restyled for a 16:9 slide (pure function, no Streamlit).

A figure made for the screen is read from a metre away; on a slide it is read from across a
room. So the slide style keeps every trace and value and changes only how they are drawn: a
16:9 canvas, type about 1.6x larger, thicker lines and markers, a white background, and
(optionally) no title, because a slide usually carries its own.

Titles that would overrun the slide at that size are set smaller. Widths are estimated per glyph:
a Chinese (CJK) character takes a full em, twice a Latin letter's average, so a Chinese title of
few characters is measured as wide as it really is (see ``figures.text.text_width``).
"""

from __future__ import annotations

import re
from typing import Any

import plotly.graph_objects as go

from figures.text import text_width, without_tags, wrap
from figures.theme import BASE_FONT_SIZE, LEGEND_BELOW, TEMPLATE

SLIDE_WIDTH = 1280
SLIDE_HEIGHT = 720  # 16:9
SLIDE_FONT_SIZE = 22
FONT_FACTOR = SLIDE_FONT_SIZE / BASE_FONT_SIZE
LINE_FACTOR = 1.8
MARKER_FACTOR = 1.5
MARGIN_FACTOR = 1.5

_TEMPLATE_LINE_WIDTH = TEMPLATE.data.scatter[0].line.width
_PLOTLY_MARKER_SIZE = 6
_PLOTLY_SHAPE_LINE_WIDTH = 2
_TITLE_ROOM = 50  # px of top margin a slide title takes
_AXIS_NAME = re.compile(r"[xy]axis\d*")
_MIN_FONT_SIZE = 14
_BOLD_WIDTH = 1.12  # bold glyphs are wider than the average the estimate uses
_LINE_TRACES = {"scatter", "scattergl", "scatterpolar", "scatterpolargl", "scatter3d", "scatterternary"}
# Keys that hold data, not styling: never walked (they can be long, and hold no fonts).
_DATA_KEYS = {"x", "y", "z", "text", "customdata", "hovertext", "ids", "r", "theta", "a", "b", "c"}


def _margin(layout: dict, factor: float = MARGIN_FACTOR) -> dict:
    template_margin = TEMPLATE.layout.margin.to_plotly_json()
    own = layout.get("margin") or {}
    return {side: round(factor * (own.get(side, template_margin.get(side)) or 0))
            for side in ("l", "r", "t", "b")} | ({"pad": own["pad"]} if "pad" in own else {})


def _scale_fonts(node: Any, factor: float) -> None:
    """Multiply every explicitly set font size below ``node`` (annotations, colour bars, legends...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _DATA_KEYS or key == "template":
                continue
            if key.endswith("font") and isinstance(value, dict) and isinstance(value.get("size"), (int, float)):
                value["size"] = round(value["size"] * factor, 1)
            if isinstance(value, (dict, list)):
                _scale_fonts(value, factor)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, (dict, list)):
                _scale_fonts(item, factor)


def _thicken(trace: dict) -> None:
    if trace.get("type", "scatter") not in _LINE_TRACES:
        return
    mode = trace.get("mode", "lines")
    if "lines" in mode:
        line = trace.setdefault("line", {})
        width = line.get("width")
        if width != 0:  # the invisible edge of a filled band stays invisible: the fill is what shows
            line["width"] = round(LINE_FACTOR * (width or _TEMPLATE_LINE_WIDTH), 2)
    if "markers" in mode:
        marker = trace.setdefault("marker", {})
        size = marker.get("size", _PLOTLY_MARKER_SIZE)
        if isinstance(size, (int, float)):
            marker["size"] = round(MARKER_FACTOR * size, 1)
        elif size is not None:  # one size per point
            marker["size"] = [MARKER_FACTOR * s for s in size]


def _fit_title(title: dict, layout: dict, margin: dict, width: int, least: float) -> None:
    """Shrink a title that would overrun the slide's width (a long Chinese title at slide size, say)."""
    text = str(title.get("text") or "")
    font = title.setdefault("font", {})
    size = font.get("size") or layout.get("font", {}).get("size") or SLIDE_FONT_SIZE
    room = width - (title.get("pad") or {}).get("l", 0) - margin["r"]
    needed = text_width(text, size)
    if needed > room:
        font["size"] = round(max(least, size * room / needed), 1)


def _fit_axis_titles(layout: dict, margin: dict, width: int, height: int, least: float) -> None:
    """Shrink an axis title that would overrun its axis at slide size (larger type, same canvas)."""
    plot_size = {"x": width - margin["l"] - margin["r"], "y": height - margin["t"] - margin["b"]}
    for name, axis in layout.items():
        if not (_AXIS_NAME.fullmatch(name) and isinstance(axis, dict) and isinstance(axis.get("title"), dict)):
            continue
        text = str(axis["title"].get("text") or "")
        if not without_tags(text):
            continue
        low, high = axis.get("domain", (0.0, 1.0))
        room = 0.95 * plot_size[name[0]] * (high - low)
        font = axis["title"].setdefault("font", {})
        size = font.get("size") or layout.get("font", {}).get("size") or SLIDE_FONT_SIZE
        needed = text_width(text, size)
        if needed > room:
            font["size"] = round(max(least, size * room / needed), 1)


def _fit_panel_labels(layout: dict, margin: dict, width: int, least: float) -> None:
    """Shrink a label centred over a panel (a subplot's title) that would run past its panel at slide size,
    over the neighbouring panel's tick labels; its neighbours (the other panels' labels that had its size) shrink
    with it, so no panel's title reads smaller than the others (a long "Position Interpolation" did)."""
    plot_width = width - margin["l"] - margin["r"]
    domains = [tuple(axis.get("domain", (0.0, 1.0))) for name, axis in layout.items()
               if name.startswith("xaxis") and isinstance(axis, dict)]
    labels: list[tuple[dict, float]] = []  # (font, size before fitting)
    for note in layout.get("annotations", ()):
        if (note.get("xref") or "paper") != "paper" or note.get("xanchor") != "center" or note.get("showarrow"):
            continue
        x = note.get("x")
        holding = [high - low for low, high in domains if x is not None and low <= x <= high]
        if not holding or min(holding) >= 1:
            continue
        font = note.setdefault("font", {})
        size = font.get("size") or layout.get("font", {}).get("size") or SLIDE_FONT_SIZE
        room = 0.95 * plot_width * min(holding)
        text = str(note.get("text") or "")
        needed = text_width(text, size) * (_BOLD_WIDTH if "<b>" in text else 1.0)
        labels.append((font, size))
        if needed > room:
            font["size"] = round(max(least, size * room / needed), 1)
    for font, size in labels:
        fitted = [f["size"] for f, s in labels if s == size and f.get("size") is not None]
        if fitted:
            font["size"] = min(fitted)


def _raise_fonts(node: Any, least: float) -> None:
    """Set every explicitly sized font below ``node`` to at least ``least`` px."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _DATA_KEYS or key == "template":
                continue
            if key.endswith("font") and isinstance(value, dict) and isinstance(value.get("size"), (int, float)):
                value["size"] = max(value["size"], least)
            if isinstance(value, (dict, list)):
                _raise_fonts(value, least)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, (dict, list)):
                _raise_fonts(item, least)


def slide_style(figure: go.Figure, *, title: bool = True, width: int = SLIDE_WIDTH, height: int = SLIDE_HEIGHT,
                font_size: float = SLIDE_FONT_SIZE, least: float | None = None) -> go.Figure:
    """A copy of ``figure`` styled for a 16:9 slide; ``title=False`` drops the figure's own title.

    ``width`` × ``height`` is the canvas (1280 × 720 by default) and ``font_size`` the body type; ``least``, where
    given, is the smallest type any text may have (the presenter's screen: no text under it, even where it would
    overrun, so nothing on the projector is too small to read). The input is not changed. Data, colours, axis
    ranges and legends are kept.
    """
    factor = font_size / BASE_FONT_SIZE
    floor = _MIN_FONT_SIZE if least is None else least
    # Deep copies that keep numpy arrays as arrays (``to_dict`` would turn them into base64 blobs).
    layout = figure.layout.to_plotly_json()
    data = [trace.to_plotly_json() for trace in figure.data]
    _scale_fonts(layout, factor)
    for trace in data:
        _scale_fonts(trace, factor)
        _thicken(trace)

    title_spec = layout.get("title") or {}
    has_title = title and bool(title_spec.get("text"))
    grown = font_size / SLIDE_FONT_SIZE  # margins hold type: larger type, wider margins
    margin = _margin(layout, MARGIN_FACTOR * max(1.0, grown))
    if not has_title:
        layout.pop("title", None)
        margin["t"] = max(40, margin["t"] - round(_TITLE_ROOM * max(1.0, grown)))  # keep room for legends or subplot titles up there
    else:
        title_font = title_spec.setdefault("font", {})
        title_font.setdefault("size", round(TEMPLATE.layout.title.font.size * factor))
        # the template puts titles flush with the canvas edge; a projector may crop that
        title_spec.setdefault("pad", {}).setdefault("l", 16)
        _fit_title(title_spec, layout, margin, width, floor)
    for shape in layout.get("shapes", []):
        line = shape.setdefault("line", {})
        if line.get("width") != 0:  # a borderless band stays borderless
            line["width"] = round(LINE_FACTOR * (line.get("width") or _PLOTLY_SHAPE_LINE_WIDTH), 2)

    layout.update(
        width=width, height=height, autosize=False, margin=margin,
        paper_bgcolor="white", plot_bgcolor="white",
    )
    layout.setdefault("font", {}).setdefault("size", font_size)
    _fit_axis_titles(layout, margin, width, height, floor)
    _fit_panel_labels(layout, margin, width, floor)
    if least is not None:
        legend = layout.get("legend") or {}
        if legend.get("orientation", "v") == "v" and (legend.get("x") is None or legend["x"] >= 1):
            # a legend beside the plot takes half a canvas this narrow at this size: it goes under the plot, in rows
            layout["legend"] = {**legend, **LEGEND_BELOW}
        layout["font"]["size"] = max(layout["font"]["size"], least)
        _raise_fonts(layout, least)
        for trace in data:
            _raise_fonts(trace, least)
        _wrap_to_canvas(layout, data, margin, width)
        for trace in data:  # a colour bar labelled in words takes half this canvas beside the plot: under it, level
            bar = trace.get("colorbar")
            if isinstance(bar, dict) and bar.get("ticktext") and trace.get("showscale") is not False:
                room = 0.9 * (width - margin["l"] - margin["r"]) / len(bar["ticktext"])
                size = (bar.get("tickfont") or {}).get("size") or layout["font"]["size"]
                bar.update(orientation="h", yref="container", y=0.02, yanchor="bottom", x=0.5, xanchor="center",
                           len=1.0, tickangle=0, thickness=18,
                           ticktext=[wrap(str(text), room, size) for text in bar["ticktext"]])
        for name, axis in layout.items():  # plotly draws a log axis's minor labels (2, 5) at 3/4 of the type
            if _AXIS_NAME.fullmatch(name) and isinstance(axis, dict) and axis.get("type") == "log":
                axis["minorloglabels"] = "none"
    return go.Figure(data=data, layout=layout)


_LEGEND_SAMPLE = 50  # px a legend entry's line sample and gaps take before its text


def _wrap_to_canvas(layout: dict, data: list[dict], margin: dict, width: int) -> None:
    """Break legend entries and left-anchored notes that type too large to shrink would run past the canvas's
    right edge (plotly never wraps them: the end would be cut off)."""
    plot_width = width - margin["l"] - margin["r"]
    size = layout["font"]["size"]
    legend_size = ((layout.get("legend") or {}).get("font") or {}).get("size") or size
    for trace in data:
        name = trace.get("name")
        if isinstance(name, str) and text_width(name, legend_size) > plot_width - _LEGEND_SAMPLE:
            trace["name"] = wrap(name, plot_width - _LEGEND_SAMPLE, legend_size)
    for name, axis in layout.items():  # an axis title that cannot shrink: on two lines rather than cut off
        if name.startswith("xaxis") and isinstance(axis, dict) and isinstance(axis.get("title"), dict):
            low, high = axis.get("domain", (0.0, 1.0))
            text, font = str(axis["title"].get("text") or ""), axis["title"].get("font") or {}
            if text and text_width(text, font.get("size") or size) > 0.95 * plot_width * (high - low):
                axis["title"]["text"] = wrap(text, 0.95 * plot_width * (high - low), font.get("size") or size)
    for note in layout.get("annotations", ()):
        x, text = note.get("x"), note.get("text")
        if not (isinstance(text, str) and isinstance(x, (int, float)) and note.get("xanchor") == "left"
                and str(note.get("xref") or "paper").endswith(("domain", "paper"))):
            continue
        room = plot_width * (1 - x)
        note_size = (note.get("font") or {}).get("size") or size
        if text_width(text, note_size) > room:
            note["text"] = wrap(text, room, note_size)
