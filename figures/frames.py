"""A figure that carries its own slider: one plotly frame per value of a setting, so dragging the slider
animates in the browser at display rate, with no round trip to the server.

The frames are the figures the server itself draws at each value (built by the lesson's own builder),
so the in-figure slider and the page's slider always agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from figures.theme import MUTED

# What changes between values besides the traces: the frame carries these layout parts along.
FRAME_LAYOUT_KEYS = ("title", "annotations", "shapes", "coloraxis")
SLIDER_ROOM = 90  # px under the figure for the slider and its current value
DEFAULT_HEIGHT = 450  # plotly's own default figure height
_AXIS_PREFIXES = ("xaxis", "yaxis")


def _frame_layout(figure: go.Figure) -> dict:
    layout = figure.layout.to_plotly_json()
    kept = {key: layout[key] for key in FRAME_LAYOUT_KEYS if key in layout}
    for key, value in layout.items():
        if key.startswith(_AXIS_PREFIXES) and isinstance(value, dict):
            kept[key] = {part: value[part] for part in ("range", "tickvals", "ticktext", "title") if part in value}
    return kept


def _trace_key(trace: dict) -> tuple:
    """Which trace this is across values: its ``uid`` when the builder gave one, else its type, name and axes."""
    if trace.get("uid"):
        return ("uid", trace["uid"])
    return trace.get("type", "scatter"), trace.get("name") or "", trace.get("xaxis", "x"), trace.get("yaxis", "y")


def _keyed(traces: list[dict]) -> list[tuple[tuple, dict]]:
    """Each trace with its slot: its key and how many traces before it had the same key."""
    seen: dict[tuple, int] = {}
    keyed = []
    for trace in traces:
        key = _trace_key(trace)
        keyed.append(((key, seen.get(key, 0)), trace))
        seen[key] = seen.get(key, 0) + 1
    return keyed


def aligned_traces(figures: Sequence[go.Figure]) -> list[list[dict]]:
    """Each figure's traces on one common list of slots (plotly's frames replace traces by position).

    A slot is a trace's type, name and axes; a figure without a trace in some slot gets a hidden copy of
    another figure's, so the animation only shows or hides it.
    """
    per_figure = [_keyed([trace.to_plotly_json() for trace in figure.data]) for figure in figures]
    # one order of slots that keeps every figure's own drawing order: a slot new to a figure goes right
    # after that figure's previous trace
    order: list[tuple] = []
    examples: dict[tuple, dict] = {}
    for traces in per_figure:
        after = -1
        for slot, trace in traces:
            if slot not in examples:
                examples[slot] = trace
                order.insert(after + 1, slot)
            after = order.index(slot)
    slots = {slot: examples[slot] for slot in order}
    aligned = []
    for traces in per_figure:
        present = dict(traces)
        row = []
        for key, example in slots.items():
            if key in present:
                row.append({**present[key], "visible": present[key].get("visible", True)})
            else:
                row.append({**example, "visible": False, "showlegend": False})
        aligned.append(row)
    return aligned


def with_frames(current: go.Figure, variants: Sequence[tuple[str, go.Figure]], active: str, label: str) -> go.Figure:
    """``current`` with one frame per ``(value label, figure)`` and a slider over them, starting at ``active``."""
    aligned = aligned_traces([current, *(figure for _, figure in variants)])
    figure = go.Figure(layout=current.layout)  # a new figure: the ones passed in are shared (cached)
    figure.add_traces(aligned[0])
    figure.frames = [go.Frame(name=name, data=traces, layout=_frame_layout(variant))
                     for (name, variant), traces in zip(variants, aligned[1:], strict=True)]
    names = [name for name, _ in variants]
    steps = [dict(method="animate", label=name,
                  args=[[name], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))])
             for name in names]
    # Under everything else (axis titles and legends sit below the plot too): a strip added to the bottom
    # margin, placed in paper coordinates from the figure's own height and margins.
    height = current.layout.height or DEFAULT_HEIGHT
    top, bottom = current.layout.margin.t or 60, current.layout.margin.b or 55
    plot_height = max(1, height - top - bottom)
    legend = current.layout.legend
    if legend.yref == "container" and legend.y is not None:  # a legend on the canvas's bottom edge rises above the strip
        figure.update_layout(legend_y=(legend.y * height + SLIDER_ROOM) / (height + SLIDER_ROOM))
    figure.update_layout(
        height=height + SLIDER_ROOM,
        margin=dict(b=bottom + SLIDER_ROOM),
        sliders=[dict(active=names.index(active) if active in names else 0, steps=steps, x=0, xanchor="left",
                      len=1.0, y=-(bottom + 4) / plot_height, yanchor="top", pad=dict(t=0, b=0),
                      currentvalue=dict(prefix=f"{label} = ", font=dict(color=MUTED)))],
    )
    return figure
