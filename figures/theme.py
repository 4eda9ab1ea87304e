"""The one visual language: the plotly template, and one colour, dash and marker per method and
per encoding, used by every figure builder.

Colours are Okabe-Ito and Paul Tol's colour-blind-safe sets; two keys never share a colour, and
each key also has its own dash and marker, so lines stay apart in greyscale and for readers who
cannot tell the colours apart. Every trace that shows one method or encoding carries its key in
``meta`` (``{"method": "yarn"}``), which the tests use to check that a key looks the same on
every figure. The template is explicit (not Streamlit's theme) so screen and export match.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE_NAME = "pe_explorer"

SEQUENTIAL = "Viridis"
DIVERGING = "RdBu"
CYCLIC = "Twilight"
# Latin first, then CJK faces that cover Chinese (Noto Sans CJK on Debian: fonts-noto-cjk).
FONT_FAMILY = ("Inter, 'Helvetica Neue', Arial, 'Liberation Sans', 'DejaVu Sans', 'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', "
               "'PingFang SC', 'Microsoft YaHei', sans-serif")
BASE_FONT_SIZE = 14
INK = "#222222"
MUTED = "#555555"  # reference lines and their labels
GRID = "#e6e6e6"
TABLE_WIDTH = 780  # px a table figure is laid out for: the page column of a 1280 px desktop (a narrower screen scrolls it)
HIGHLIGHT = "#D0021B"  # "beyond training", "unseen": a warning red no key uses


class TraceStyle(NamedTuple):
    colour: str
    dash: str
    marker: str


# Methods: how a RoPE model trained at L is run at L' (keys of pe_core.methods.METHODS), plus
# "model" for a real model's own RoPE (a preset or a pasted config).
METHOD_STYLES: dict[str, TraceStyle] = {
    "direct": TraceStyle("#000000", "solid", "circle"),
    "pi": TraceStyle("#D55E00", "dash", "square"),
    "ntk": TraceStyle("#0072B2", "dot", "diamond"),
    "dynamic": TraceStyle("#56B4E9", "dashdot", "triangle-up"),
    "ntk_by_parts": TraceStyle("#009E73", "longdash", "x"),
    "yarn": TraceStyle("#CC79A7", "solid", "star"),
    "llama3": TraceStyle("#E69F00", "longdashdot", "cross"),
    "longrope": TraceStyle("#882255", "dash", "hexagon"),
    "abf": TraceStyle("#999933", "dot", "pentagon"),
    # inference-time methods of the tiny model (pe_core.train's INFERENCE_METHODS)
    "rerope": TraceStyle("#994F00", "solid", "triangle-down"),
    "leaky_rerope": TraceStyle("#7A5195", "longdashdot", "triangle-left"),
    "drope": TraceStyle("#117799", "dash", "hourglass"),  # DroPE: the rotation dropped after training
    "model": TraceStyle("#777777", "solid", "circle-open"),
}

# Encodings: how position enters attention (keys of pe_core.model.POSITION_ENCODINGS).
ENCODING_STYLES: dict[str, TraceStyle] = {
    "none": TraceStyle("#666633", "dot", "circle-open"),
    "learned": TraceStyle("#332288", "dash", "square-open"),
    "sinusoidal": TraceStyle("#117733", "dashdot", "diamond-open"),
    "rope": TraceStyle("#44AA99", "solid", "circle"),
    "alibi": TraceStyle("#AA4499", "longdash", "triangle-up-open"),
    "t5": TraceStyle("#CC6677", "longdashdot", "x-thin"),
    "xl": TraceStyle("#225555", "dash", "star-open"),
    "deberta": TraceStyle("#663333", "dot", "hourglass"),
}

KINDS = {"method": METHOD_STYLES, "encoding": ENCODING_STYLES}

# Other series that recur across figures: one look each, wherever they appear.
SERIES_STYLES: dict[str, TraceStyle] = {
    "bfloat16": TraceStyle("#D55E00", "solid", "circle"),
    "float16": TraceStyle("#0072B2", "dash", "square"),
    "float32": TraceStyle("#009E73", "dot", "diamond"),
    "float64": TraceStyle("#000000", "solid", "circle"),
}

# Qualitative colours for series that are neither a method nor an encoding (bases, head sizes,
# draws): the Okabe-Ito order without the keys' reserved greys.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442", "#999999")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def style_of(key: str, kind: str = "method") -> TraceStyle:
    styles = KINDS[kind]
    if key not in styles:
        raise KeyError(f"no {kind} style for {key!r}; known: {', '.join(styles)}")
    return styles[key]


LOGN_DASH = "dashdot"  # "+ log n": the method's colour, this dash, its marker open


def keyed(key: str, kind: str = "method", *, lines: bool = True, markers: bool = False, width: float | None = None,
          logn: bool = False, **extra) -> dict:
    """Trace keyword arguments that draw ``key`` in its colour, dash and marker and tag it in ``meta``.

    ``go.Scatter(x=..., y=..., name=..., **keyed("yarn"))``; ``extra`` may hold more line or marker
    settings (``line=dict(width=1)``), merged over the key's style. ``logn`` draws the method with log-n
    attention scaling added: its colour, a dash-dot line and an open marker, ``meta`` saying so.
    """
    style = style_of(key, kind)
    symbol = style.marker if not logn or style.marker.endswith("-open") else style.marker + "-open"
    line = {"color": style.colour, "dash": LOGN_DASH if logn else style.dash, **({"width": width} if width else {}),
            **extra.pop("line", {})}
    marker = {"color": style.colour, "symbol": symbol, **extra.pop("marker", {})}
    mode = "+".join(part for part, on in (("lines", lines), ("markers", markers)) if on) or "lines"
    meta = {kind: key, **({"logn": True} if logn else {}), **(extra.pop("meta", None) or {})}
    out = {"mode": mode, "meta": meta, **extra}
    if lines:
        out["line"] = line
    if markers or not lines:
        out["marker"] = marker
    return out


def colour_of(key: str, kind: str = "method") -> str:
    return style_of(key, kind).colour


def translucent(colour: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)`` (bands and fills in a key's own colour)."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def series_colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _build_template() -> go.layout.Template:
    axis = dict(
        showline=True, linecolor="#444", linewidth=1, ticks="outside", tickcolor="#444",
        gridcolor=GRID, zeroline=False, title=dict(standoff=8), automargin=True,
    )
    return go.layout.Template(
        layout=go.Layout(
            font=dict(family=FONT_FAMILY, size=BASE_FONT_SIZE, color=INK),
            title=dict(font=dict(size=BASE_FONT_SIZE + 4), x=0.0, xanchor="left", pad=dict(l=8)),
            paper_bgcolor="white",
            plot_bgcolor="white",
            colorway=list(PALETTE),
            xaxis=axis,
            yaxis=axis,
            legend=dict(bgcolor="rgba(255,255,255,0.8)", bordercolor="#ccc", borderwidth=1),
            margin=dict(l=60, r=20, t=60, b=55),
            hoverlabel=dict(font=dict(family=FONT_FAMILY)),
            coloraxis=dict(colorscale=SEQUENTIAL),
        ),
        data=dict(
            scatter=[go.Scatter(line=dict(width=2.2))],
            heatmap=[go.Heatmap(colorscale=SEQUENTIAL)],
        ),
    )


TEMPLATE = _build_template()
pio.templates[TEMPLATE_NAME] = TEMPLATE

# Legends below the plot area read on a phone, where a side legend would squeeze the plot. Anchored to the
# canvas's bottom edge (container coordinates), not to the plot: plotly then keeps the legend's rows under the
# axis's ticks and title at any width. A legend placed a fraction of the plot's height below the axis met the
# axis title wherever the ticks turned or the legend wrapped (a phone): plotly reserves the larger of the two
# bands there, not their sum.
LEGEND_BELOW = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")


def reference_line(value: float, text: str, *, dash: str, log_axis: bool, below: bool = False) -> tuple[dict, dict]:
    """A labelled full-width horizontal line as (shape, annotation); placed by hand because plotly's add_hline
    mislabels log axes (and costs tens of ms a call)."""
    shape = dict(type="line", xref="x domain", x0=0, x1=1, y0=value, y1=value,
                 line=dict(color=MUTED, width=1, dash=dash))
    label = dict(xref="x domain", x=0.01, xanchor="left", y=math.log10(value) if log_axis else value,
                 yanchor="top" if below else "bottom", text=text, showarrow=False, font=dict(size=12))
    return shape, label


def new_figure(title: str | None = None, **layout) -> go.Figure:
    """An empty figure with the project template applied explicitly (by its registered name)."""
    return go.Figure(layout={"template": TEMPLATE_NAME, "title": {"text": title}, **layout})
