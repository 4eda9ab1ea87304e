"""A figure as a page draws it: the same traces, laid out for any width from a 390 px phone up (pure function).

A page does not know how wide the reader's screen is when it builds a figure; plotly.js lays the figure out in
the browser but never wraps text or rearranges panels. So the page form:

- takes the title out of the chart, for the page to show as text above it (text wraps; a plotly title is one
  line, cut at the canvas's edge on a phone);
- breaks long axis titles and legend entries onto lines a phone's plot can hold;
- on a phone (``narrow``), stacks side-by-side panels one above the other, each at full width, with the panel
  labels, notes and shapes placed in paper coordinates moved along with their panel.

Exports (PNG, SVG, PDF, HTML, slides) keep the figure as built; only the chart on the page is in page form.
"""

from __future__ import annotations

import dataclasses
import re

import plotly.graph_objects as go

from figures.text import text_width, wrap
from figures.theme import BASE_FONT_SIZE, LEGEND_BELOW

PHONE_CHART_WIDTH = 358  # px of chart on a 390 px phone: the screen less the page's padding
DESKTOP_CHART_WIDTH = 900  # px of chart in the main column of a 1280 px window beside the sidebar
PHONE_PLOT_WIDTH = 270  # px of plot on a 390 px phone: the screen less the page's padding and the axis margins
DESKTOP_PLOT_WIDTH = 780  # px of plot in a desktop's chart
NARROW_PLOT_WIDTH = 200  # the same where category names or a colour bar take part of the width
TITLE_META_KEY = "title"  # the chart keeps its title here (not drawn), for tests and tools that read the chart
TITLE_ROOM = 40  # px of top margin the chart's own title took
MIN_TOP_MARGIN = 24
PANEL_LABEL_ROOM = 40  # px above the plot for labels placed over the panels (subplot titles)
STACKED_PANEL_HEIGHT = 240  # px of each panel when side-by-side panels are stacked on a phone
STACK_GAP = 64  # px between stacked panels for the upper one's tick labels and axis title; its label's lines add
LABEL_LINE = 18  # px per line of a panel's label
PHONE_TICK_LABEL_WIDTH = 100  # px a category's name may take beside a phone's plot before it wraps
MIN_CATEGORY_WIDTH = 60  # px a category's name needs under a phone's plot to stand level, wrapped
COLOUR_BAR_LABEL_WIDTH = 70  # px per label of a colour bar laid under a phone's plot
COLOUR_BAR_ROOM = 90  # px the figure grows by for it
LEGEND_LINE = 19  # px per line of a legend entry or group title
LEGEND_SAMPLE = 50  # px of an entry's line sample and the gaps around it
_AXIS = re.compile(r"([xy])axis(\d*)")
_TOLERANCE = 1e-6


@dataclasses.dataclass(frozen=True)
class PageFigure:
    title: str  # the figure's title in plotly's HTML subset (<br>, <sup>, <sub>, <i>, <b>); "" when untitled
    figure: go.Figure


def page_form(figure: go.Figure, *, narrow: bool = False) -> PageFigure:
    """``figure`` as a page draws it (see the module's note); ``narrow``: the reader is on a phone."""
    layout = figure.layout.to_plotly_json()
    title = str((layout.pop("title", None) or {}).get("text") or "")
    margin = layout.setdefault("margin", {})
    top = margin.get("t", 60)
    if title:
        top -= TITLE_ROOM
    labels_above = any(_paper(note, "y") and (note.get("y") or 0) >= 1 for note in layout.get("annotations", ()))
    margin["t"] = max(top, PANEL_LABEL_ROOM if labels_above else MIN_TOP_MARGIN)
    frames = [frame.to_plotly_json() for frame in figure.frames]
    frame_layouts = [frame.setdefault("layout", {}) for frame in frames]
    legend_was_below = _legend_below(layout)
    if narrow:
        panels = _stack_panels(layout)
        for frame_layout in frame_layouts:
            for item in frame_layout.get("annotations", ()):
                _move_with_panel(item, panels)
            for axis in _axes(frame_layout).values():
                axis.pop("domain", None)
        _legend_below_on_phone(layout)
    if layout.get("sliders"):
        _legend_above(layout, narrow)
    for each in (layout, *frame_layouts):
        _wrap_axis_titles(each, narrow)
        if narrow:
            _wrap_annotations(each, layout)
    # copies of the traces: given a figure's own trace objects, plotly takes each one's "type" out of it while it
    # builds the new one, and ``figure`` is shared (a lesson's cached figure that other sessions draw meanwhile)
    shown = go.Figure(data=[trace.to_plotly_json() for trace in figure.data], layout=layout, frames=frames)
    for trace in shown.data:
        name = getattr(trace, "name", None)
        if name and getattr(trace, "showlegend", None) is not False:
            trace.name = wrap(name, PHONE_PLOT_WIDTH)
    if narrow:
        _wrap_categories(shown, list(_axes(layout)))
        _colour_bar_below_on_phone(shown)
        if _legend_below(layout):
            _room_for_the_legend_below(shown, was_below=legend_was_below)
    shown.layout.meta = {**(shown.layout.meta or {}), TITLE_META_KEY: title}
    return PageFigure(title, shown)


def _legend_below_on_phone(layout: dict) -> None:
    """A legend beside the plot takes half a phone's width: it goes under the plot, in rows."""
    legend = layout.get("legend") or {}
    if legend.get("orientation", "v") == "v" and (legend.get("x") is None or legend["x"] >= 1):
        layout["legend"] = {**legend, **LEGEND_BELOW}


def _legend_below(layout: dict) -> bool:
    """Whether the legend stands under the plot (``LEGEND_BELOW``, anchored to the canvas's bottom edge)."""
    legend = layout.get("legend") or {}
    return legend.get("yref") == "container" and (legend.get("y") or 0) < 0.5


def legend_height(figure: go.Figure, width: float) -> float:
    """Estimated px a horizontal legend takes within ``width`` (the plot's width: the legend is placed in paper
    coordinates): plotly flows its entries (or, where traces are grouped, each group's title and entries in one
    column) left to right, starting a row where the next would not fit."""
    return _flowed_height(_legend_blocks(figure), width)


def _legend_blocks(figure: go.Figure) -> list[tuple[float, float]]:
    """(width, height) px of each legend entry, or of each legend group's column."""
    shown = [trace for trace in figure.data  # a trace type without showlegend (a table) has no legend entry
             if getattr(trace, "name", None) and hasattr(trace, "showlegend") and trace.showlegend is not False]
    size = figure.layout.legend.font.size or BASE_FONT_SIZE

    def lines(text: str) -> int:
        return text.count("<br>") + 1

    groups: dict[str, list] = {}
    for trace in shown:
        groups.setdefault(getattr(trace, "legendgroup", None) or f"\0{id(trace)}", []).append(trace)
    blocks = []
    for members in groups.values():
        group_title = getattr(members[0], "legendgrouptitle", None)
        title = str(getattr(group_title, "text", None) or "")
        texts = ([title] if title else []) + [str(trace.name) for trace in members]
        blocks.append((LEGEND_SAMPLE + max(text_width(text, size) for text in texts),
                       LEGEND_LINE * sum(lines(text) for text in texts)))
    return blocks


def _flowed_height(blocks: list[tuple[float, float]], width: float) -> float:
    height, row_width, row_height = 0.0, 0.0, 0.0
    for block_width, block_height in blocks:
        if row_width and row_width + block_width > width:
            height, row_width, row_height = height + row_height, 0.0, 0.0
        row_width, row_height = row_width + block_width, max(row_height, block_height)
    return height + row_height + (10 if blocks else 0)


def _room_for_the_legend_below(figure: go.Figure, *, was_below: bool) -> None:
    """A legend under a phone's plot takes its rows out of the figure's height, which squeezed a figure of many
    entries or stacked panels to slivers: the figure grows by the rows the phone adds (all of them where the
    legend stood beside the plot on a wide screen)."""
    blocks = _legend_blocks(figure)  # measured once, flowed at both widths
    added = _flowed_height(blocks, PHONE_PLOT_WIDTH) - (_flowed_height(blocks, DESKTOP_PLOT_WIDTH) if was_below else 0)
    if added > 0:
        figure.layout.height = (figure.layout.height or 450) + round(added)


def _legend_above(layout: dict, narrow: bool) -> None:
    """A figure with its own slider keeps the strip under the plot for it; its legend goes above the plot
    (the slider is placed in plot coordinates, so a legend under it could not reserve its own room there),
    above the panels' labels where there are any."""
    if not _legend_below(layout):
        return
    legend = layout["legend"]
    lines = _label_lines(layout, above_only=True, narrow=narrow)
    if not lines:
        layout["legend"] = {**legend, "y": 1, "yanchor": "top"}
        return
    margin = layout["margin"]
    plot_height = max(100, (layout.get("height") or 450) - margin.get("t", 60) - margin.get("b", 55))
    layout["legend"] = {**legend, "yref": "paper", "y": 1 + (LABEL_LINE * lines + 6) / plot_height,
                        "yanchor": "bottom"}


def _label_lines(layout: dict, *, above_only: bool = False, narrow: bool = False) -> int:
    """The most lines any label placed in paper coordinates takes at a phone's width (0: no label)."""
    width = _label_width(layout, narrow)
    return max((_lines(str(note.get("text") or ""), (note.get("font") or {}).get("size") or BASE_FONT_SIZE, width)
                for note in layout.get("annotations", ())
                if _paper(note, "y") and (not above_only or (note.get("y") or 0) >= 1 - _TOLERANCE)), default=0)


def _wrap_annotations(layout: dict, figure_layout: dict) -> None:
    """Notes wrapped to the room they have between their anchor and the plot's edge at a phone's width (notes
    placed at data coordinates: where the axis's range is known, else half the plot). A label above the plot
    that wraps onto more lines gets that much more room in the top margin."""
    for note in layout.get("annotations", ()):
        text, x = note.get("text"), note.get("x")
        if not text or x is None or note.get("showarrow"):
            continue
        share = _share_of_width(note, figure_layout)
        size = (note.get("font") or {}).get("size") or BASE_FONT_SIZE
        wrapped = wrap(str(text), max(90.0, _label_width(figure_layout, True) * share), size)
        added_lines = wrapped.count("<br>") - str(text).count("<br>")
        note["text"] = wrapped
        if added_lines and layout is figure_layout and _paper(note, "y") and (note.get("y") or 0) >= 1:
            margin = figure_layout["margin"]
            margin["t"] = max(margin["t"], PANEL_LABEL_ROOM + round(1.3 * size * (added_lines + str(text).count("<br>"))))


def _share_of_width(note: dict, layout: dict) -> float:
    """The share of the plot's width between a note's anchor and the edge it runs towards."""
    xref = note.get("xref") or "paper"
    x = note["x"]
    if not (xref == "paper" or xref.endswith(" domain")):
        axis = layout.get("xaxis" + xref[1:].split(" ")[0], {})
        value_range = axis.get("range")
        if not value_range or axis.get("type") not in (None, "linear", "log") or not isinstance(x, (int, float)):
            return 0.5
        low, high = value_range
        x = (x - low) / (high - low) if high != low else 0.5
    anchor = note.get("xanchor") or "auto"
    share = {"left": 1 - x, "right": x}.get(anchor, 2 * min(x, 1 - x) if anchor == "center" else 1.0)
    return min(1.0, max(share, 0.0))


def _colour_bar_below_on_phone(figure: go.Figure) -> None:
    """A colour bar whose labels are words (categories) takes a third of a phone's width beside the plot: it
    goes under the plot, horizontal, its labels wrapped, where no legend is already."""
    if figure.layout.legend.yref == "container" and any(getattr(trace, "showlegend", None) for trace in figure.data):
        return
    bars = [trace.colorbar for trace in figure.data if getattr(trace, "colorbar", None) is not None
            and getattr(trace, "showscale", None) is not False and trace.colorbar.ticktext]
    for bar in bars:
        if max(text_width(str(text), BASE_FONT_SIZE) for text in bar.ticktext) > PHONE_TICK_LABEL_WIDTH / 2:
            bar.update(orientation="h", yref="container", y=0, yanchor="bottom", x=0.5, xanchor="center", len=1.0,
                       tickangle=0, ticktext=[wrap(str(text), COLOUR_BAR_LABEL_WIDTH) for text in bar.ticktext])
            figure.update_layout(height=(figure.layout.height or 450) + COLOUR_BAR_ROOM)


def _wrap_categories(figure: go.Figure, axis_names: list[str]) -> None:
    """Category names wrapped onto lines on a phone: beside the plot (method names on a y axis), so the plot keeps
    its width; under it (a few categories on an x axis), so plotly does not turn them aslant, where their far ends
    pushed the plot to half its width and the legend, as wide as the plot, to one entry a row. ``axis_names``: the
    figure's axes, as its layout names them."""
    for letter, other_way in (("y", "v"), ("x", "h")):  # bars that run the other way have no categories here
        for name in [key for key in axis_names if key.startswith(f"{letter}axis")] or [f"{letter}axis"]:
            axis = figure.layout[name]
            if axis.ticktext:  # labels placed by the figure itself, one per row of its own spacing: left as they are
                continue
            anchor = letter + name[len(f"{letter}axis"):]
            categories = []
            for trace in figure.data:
                values = getattr(trace, letter, None)
                if ((getattr(trace, f"{letter}axis", None) or letter) != anchor or values is None
                        or getattr(trace, "orientation", None) == other_way):
                    continue
                categories += [value for value in values if isinstance(value, str) and value not in categories]
            if not categories:
                continue
            room = PHONE_TICK_LABEL_WIDTH if letter == "y" else PHONE_PLOT_WIDTH / len(categories) - 10
            if room < MIN_CATEGORY_WIDTH:  # too many to stand side by side: plotly's slant is the better choice
                continue
            wrapped = [wrap(value, room) for value in categories]
            if wrapped != categories:
                axis.update(tickmode="array", tickvals=categories, ticktext=wrapped,
                            **({"tickangle": 0} if letter == "x" else {}))


def _paper(item: dict, axis: str) -> bool:
    return (item.get(f"{axis}ref") or "paper") == "paper"


def _axes(layout: dict) -> dict[str, dict]:
    return {name: axis for name, axis in layout.items() if _AXIS.fullmatch(name) and isinstance(axis, dict)}


def _wrap_axis_titles(layout: dict, narrow: bool) -> None:
    plot_width = NARROW_PLOT_WIDTH if narrow else PHONE_PLOT_WIDTH
    for name, axis in _axes(layout).items():
        title = axis.get("title")
        if not isinstance(title, dict) or not title.get("text") or name[0] != "x":
            continue
        low, high = axis.get("domain", (0.0, 1.0))
        size = (title.get("font") or {}).get("size") or BASE_FONT_SIZE
        title["text"] = wrap(str(title["text"]), max(120.0, plot_width * (high - low)), size)


# ---- stacking side-by-side panels --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Panel:
    x: tuple[float, float]  # old paper domains
    y: tuple[float, float]
    new_y: tuple[float, float] = (0.0, 1.0)


def _panels(layout: dict) -> list[tuple[str, str, _Panel]]:
    """(x axis name, y axis name, panel) for every subplot, top row first, left to right."""
    axes = _axes(layout)
    found = []
    for name, axis in axes.items():
        if name[0] != "x" or axis.get("overlaying"):
            continue
        suffix = _AXIS.fullmatch(name).group(2)
        anchor = axis.get("anchor") or f"y{suffix}"
        y_name = "yaxis" + anchor[1:]
        if y_name not in axes and anchor != "y":
            continue
        y_axis = axes.get(y_name, {})
        found.append((name, y_name, _Panel(tuple(axis.get("domain", (0.0, 1.0))), tuple(y_axis.get("domain", (0.0, 1.0))))))
    return sorted(found, key=lambda item: (-item[2].y[1], item[2].x[0]))


def _stack_panels(layout: dict) -> list[_Panel]:
    """Side-by-side panels one above the other, full width (a phone's width holds one panel); returns the
    panels with their new places (none when there is one column)."""
    panels = _panels(layout)
    if len({panel.x for _, _, panel in panels}) < 2:
        return []
    count = len(panels)
    margin = layout["margin"]
    top, bottom = margin.get("t", 60), margin.get("b", 55)
    label_lines = max(_label_lines(layout, narrow=True), 1)
    gap = STACK_GAP + LABEL_LINE * label_lines
    plot_height = count * STACKED_PANEL_HEIGHT + (count - 1) * gap
    old_plot_height = (layout.get("height") or 450) - top - bottom
    layout["height"] = top + bottom + plot_height
    for slider in layout.get("sliders", ()):  # placed below the plot in plot-height units: the same px as before
        if (slider.get("y") or 0) < 0:
            slider["y"] = slider["y"] * old_plot_height / plot_height
    moved = []
    for index, (x_name, y_name, panel) in enumerate(panels):
        upper = 1 - index * (STACKED_PANEL_HEIGHT + gap) / plot_height
        new_y = (max(0.0, upper - STACKED_PANEL_HEIGHT / plot_height), upper)
        moved.append(dataclasses.replace(panel, new_y=new_y))
        layout[x_name]["domain"] = [0.0, 1.0]
        layout.setdefault(y_name, {})["domain"] = list(new_y)
    for key in ("annotations", "shapes", "images"):
        for item in layout.get(key, ()):
            _move_with_panel(item, moved)
    for name, value in layout.items():  # a colour bar laid under one panel stands beside the stack instead
        bar = value.get("colorbar") if name.startswith("coloraxis") and isinstance(value, dict) else None
        if isinstance(bar, dict) and bar.get("orientation") == "h":
            for key in ("orientation", "x", "xanchor", "y", "yanchor", "yref", "len"):
                bar.pop(key, None)
    return moved


def _lines(text: str, size: float, width: float = PHONE_PLOT_WIDTH) -> int:
    """Lines a label will take at a phone's width, once wrapped."""
    return wrap(text, width, size).count("<br>") + 1


def _label_width(layout: dict, narrow: bool) -> float:
    """The width labels across a phone's plot may take: less where a colour bar stands beside the plot."""
    beside = any(isinstance(value, dict) and isinstance(value.get("colorbar"), dict)
                 and value["colorbar"].get("orientation", "v") == "v" and value.get("showscale", True)
                 for name, value in layout.items() if name.startswith("coloraxis"))
    return NARROW_PLOT_WIDTH if narrow and beside else PHONE_PLOT_WIDTH


def _move_with_panel(item: dict, panels: list[_Panel]) -> None:
    """An annotation, shape or image placed in paper coordinates goes where its panel went."""
    x_paper, y_paper = _paper(item, "x"), _paper(item, "y")
    if not x_paper:
        return
    for key in ("x", "x0", "x1"):
        if key not in item or item[key] is None:
            continue
        panel = _panel_at(panels, item[key], item.get(key.replace("x", "y") if key != "x" else "y"))
        if panel is None:
            return
        old_low, old_high = panel.x
        item[key] = (item[key] - old_low) / max(old_high - old_low, _TOLERANCE)
        if y_paper:
            y_key = key.replace("x", "y")
            if y_key in item and item[y_key] is not None:
                old_low_y, old_high_y = panel.y
                new_low, new_high = panel.new_y
                share = (item[y_key] - old_low_y) / max(old_high_y - old_low_y, _TOLERANCE)
                item[y_key] = new_low + share * (new_high - new_low)


def _panel_at(panels: list[_Panel], x: float, y: float | None) -> _Panel | None:
    """The panel whose column holds ``x`` (and whose row is nearest ``y``)."""
    in_column = [p for p in panels if p.x[0] - _TOLERANCE <= x <= p.x[1] + _TOLERANCE]
    if not in_column:
        return None
    if y is None:
        return in_column[0]
    return min(in_column, key=lambda p: 0 if p.y[0] <= y <= p.y[1] else min(abs(y - p.y[0]), abs(y - p.y[1])))
