"""Figures for "From absolute to relative position": the four terms, what each scheme keeps, what position
information each scheme's score carries, how each maps a distance to a table row, and other absolute encodings.

Builders take values already computed (``lessons.lineage`` gets them from ``pe_core``) and draw only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
import torch

from figures.theme import DIVERGING, LEGEND_BELOW, keyed, new_figure, series_colour
from figures.values import as_array
from i18n import N_, _

FOUR_TERMS_TITLE = N_("The four terms of an absolute-position score, and their sum")
KEPT_TITLE = N_("What each scheme does with the four terms")
POSITION_TITLE = N_("What position information each scheme's score carries")
DISTANCE_TITLE = N_("Which row of its table each scheme reads at distance i − j")
ABSOLUTE_TITLE = N_("How alike two positions look: other absolute encodings")


class Panel(NamedTuple):
    title: str  # already translated
    values: torch.Tensor  # [rows, columns]
    note: str = ""  # already translated; shown under the panel title


def _domains(count: int, gap: float) -> list[tuple[float, float]]:
    width = (1 - gap * (count - 1)) / count
    return [(k * (width + gap), min(1.0, k * (width + gap) + width)) for k in range(count)]


def heatmap_grid(title: str, panels: Sequence[Panel], *, columns: int, low: float, high: float, colour_title: str,
                 x_title: str, y_title: str, hover: str, colourscale=DIVERGING, panel_height: int = 260) -> go.Figure:
    """Square heatmaps side by side on one colour axis, rows from the top; the y axis runs downwards like a matrix."""
    rows = max(1, math.ceil(len(panels) / columns))
    top, bottom = 90, 70
    gap = 130  # px between grid rows: the x tick labels above, the two-line panel title below
    height = top + bottom + panel_height * rows + gap * (rows - 1)
    x_domains = _domains(columns, 0.07)
    y_domains = _domains(rows, gap / max(1, height - top - bottom) if rows > 1 else 0.0)[::-1]
    traces, layout = [], {"annotations": []}
    for number, panel in enumerate(panels):
        r, c = divmod(number, columns)
        suffix = "" if number == 0 else str(number + 1)
        values = as_array(panel.values)
        traces.append(go.Heatmap(z=values, x=np.arange(values.shape[1]), y=np.arange(values.shape[0]),
                                 coloraxis="coloraxis", name=panel.title, hovertemplate=hover + "<extra>%{fullData.name}"
                                 "</extra>", xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        last_in_column = number + columns >= len(panels)
        layout[f"xaxis{suffix}"] = dict(domain=x_domains[c], anchor=f"y{suffix}", constrain="domain",
                                        title=dict(text=x_title) if last_in_column else None)
        layout[f"yaxis{suffix}"] = dict(domain=y_domains[r], anchor=f"x{suffix}", autorange="reversed",
                                        title=dict(text=y_title) if c == 0 else None)
        label = f"<b>{panel.title}</b>" + (f"<br>{panel.note}" if panel.note else "")
        layout["annotations"].append(dict(text=label, x=sum(x_domains[c]) / 2, y=y_domains[r][1], xref="paper",
                                          yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
                                          font=dict(size=12)))
    layout.update(coloraxis=dict(colorscale=colourscale, cmin=low, cmax=high,
                                 colorbar=dict(title=dict(text=colour_title, side="right"), thickness=14)),
                  height=height, margin=dict(t=top, b=bottom))
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(layout)
    return figure


def four_terms_figure(panels: Sequence[Panel]) -> go.Figure:
    """The content–content, content–position, position–content and position–position matrices, then their sum."""
    bound = max(float(np.abs(as_array(p.values)).max()) for p in panels) or 1.0
    return heatmap_grid(_(FOUR_TERMS_TITLE), panels, columns=3, low=-bound, high=bound,
                        colour_title=_("logit (÷√d)"), x_title=_("key j"), y_title=_("query i"),
                        hover=_("query i = %{y}, key j = %{x}<br>value %{z:.3f}"))


def position_part_figure(panels: Sequence[Panel]) -> go.Figure:
    """Each scheme's position part (score minus content–content), scaled to its own largest magnitude."""
    return heatmap_grid(_(POSITION_TITLE), panels, columns=3, low=-1.0, high=1.0,
                        colour_title=_("position part ÷ its largest |value|"), x_title=_("key j"),
                        y_title=_("query i"), hover=_("query i = %{y}, key j = %{x}<br>scaled value %{z:.3f}"))


def absolute_similarity_figure(panels: Sequence[Panel]) -> go.Figure:
    return heatmap_grid(_(ABSOLUTE_TITLE), panels, columns=3, low=-1.0, high=1.0,
                        colour_title=_("cosine similarity"), x_title=_("position t₂"), y_title=_("position t₁"),
                        hover=_("t₁ = %{y}, t₂ = %{x}<br>cosine %{z:.3f}"))


def kept_terms_figure(schemes: Sequence[str], terms: Sequence[str], kinds: Sequence[Sequence[int]],
                      texts: Sequence[Sequence[str]], kind_titles: Sequence[str], kind_colours: Sequence[str]
                      ) -> go.Figure:
    """A table as a heatmap: one row per scheme, one column per term, coloured by what happens to the term."""
    count = len(kind_titles)
    scale = []
    for index, colour in enumerate(kind_colours):
        scale += [(index / count, colour), ((index + 1) / count, colour)]
    z = np.asarray(kinds, dtype=np.float64)
    columns = [term.replace("–", "–<br>") for term in terms]  # two lines: four headers fit a slide
    heatmap = go.Heatmap(z=z, x=columns, y=list(schemes), zmin=-0.5, zmax=count - 0.5, colorscale=scale,
                         xgap=3, ygap=3, text=[list(row) for row in texts], texttemplate="%{text}",
                         textfont=dict(size=12), hovertemplate="%{y} · %{x}<br>%{text}<extra></extra>",
                         colorbar=dict(tickvals=list(range(count)), ticktext=list(kind_titles), thickness=14, len=1.0))
    figure = new_figure(_(KEPT_TITLE))
    figure.add_trace(heatmap)
    figure.update_layout(height=160 + 62 * len(schemes), margin=dict(l=130, t=110, b=40),
                         xaxis=dict(side="top", showline=False, ticks="", showgrid=False, tickangle=0),
                         yaxis=dict(autorange="reversed", showline=False, ticks="", showgrid=False))
    return figure


class IndexSeries(NamedTuple):
    name: str  # translated
    rows: torch.Tensor  # table row per offset
    key: str | None  # encoding key in the theme, or None for a series colour
    table_size: int  # rows in the scheme's table (for the hover)
    dash: str | None = None


def distance_index_figure(offsets: torch.Tensor, series: Sequence[IndexSeries]) -> go.Figure:
    """One panel per scheme, shared x: the table row read at each distance i − j (flat = distances merged)."""
    from plotly.subplots import make_subplots

    x = as_array(offsets)
    titles = [_("{name} · {distinct} distinct rows of {size}").format(
        name=s.name, distinct=len(np.unique(as_array(s.rows))), size=s.table_size) for s in series]
    figure = make_subplots(rows=len(series), cols=1, shared_xaxes=True, vertical_spacing=0.1, subplot_titles=titles)
    for row, item in enumerate(series, start=1):
        dash = {"dash": item.dash} if item.dash else {}
        style = (keyed(item.key, kind="encoding", line={"shape": "hv", **dash}) if item.key
                 else dict(mode="lines", line=dict(color=series_colour(row), shape="hv", **dash)))
        figure.add_trace(go.Scatter(x=x, y=as_array(item.rows), name=item.name, showlegend=False,
                                    hovertemplate=_("i − j = %{x}: row %{y}") + "<extra>" + item.name + "</extra>",
                                    **style), row=row, col=1)
        figure.update_yaxes(title=dict(text=_("row")), row=row, col=1)
    figure.update_xaxes(title=dict(text=_("distance i − j (query minus key)")), row=len(series), col=1)
    figure.update_layout(template="pe_explorer", title=dict(text=_(DISTANCE_TITLE)), height=130 + 150 * len(series),
                         margin=dict(t=80), legend=LEGEND_BELOW)
    return figure
