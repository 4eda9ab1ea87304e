"""The rotation probe's figure: how far a port's rotated q and k (or its cos/sin) are from the reference rotation,
token by token, against the float32 tolerance, with where the error starts marked.

The probe's positions are 0 … 11 and then spread geometrically to 2·L′, so the tokens are drawn evenly spaced
and labelled by their positions: a log-like axis that still shows position 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from figures.theme import HIGHLIGHT, LEGEND_BELOW, MUTED, new_figure, series_colour
from i18n import N_, _

ROTATION_TITLE = N_("Your rotation against the reference, token by token")
ERROR_FLOOR = 1e-18  # exact agreement drawn at the bottom of the log axis
TICKS = 6


def _short(position: int) -> str:
    """8 -> '8'; 3723 -> '3.72k'; 262144 -> '262k'; 1048576 -> '1.05M' (a phone fits six of these)."""
    if position >= 1_000_000:
        return f"{position / 1e6:.3g}M"
    if position >= 1000:
        return f"{position / 1e3:.3g}k"
    return f"{position}"


def rotation_error_figure(*, positions: Sequence[int], errors: Sequence[float], tolerances: Sequence[float],
                          beyond: Sequence[bool], first_part: int | None, verdict: str,
                          marks: Sequence[tuple[int, str]] = ()) -> go.Figure:
    """Largest error per token (relative to the input's size, log) and that value's float32 tolerance; tokens with
    any value beyond its tolerance (``beyond``) in the warning colour, the first one marked. ``marks``: (position,
    label) of lengths to draw (L, L′)."""
    positions = np.asarray(positions, dtype=np.int64)
    error = np.maximum(np.asarray(errors, dtype=np.float64), ERROR_FLOOR)
    tolerance = np.asarray(tolerances, dtype=np.float64)
    token = np.arange(len(positions))
    bad = np.asarray(beyond, dtype=bool)
    hover = _("position %{customdata:,}") + "<br>" + _("error %{y:.2e}") + "<extra></extra>"
    traces = [
        go.Scatter(x=token, y=tolerance, mode="lines", name=_("float32 tolerance"), customdata=positions,
                   line=dict(color=MUTED, dash="dash", width=1.5),
                   hovertemplate=_("position %{customdata:,}") + "<br>" + _("tolerance %{y:.2e}") + "<extra></extra>"),
        go.Scatter(x=token, y=error, mode="lines", name=_("your error"), line=dict(color=series_colour(0), width=1),
                   customdata=positions, hoverinfo="skip", showlegend=False),
        go.Scatter(x=token[~bad], y=error[~bad], mode="markers", name=_("within tolerance"),
                   customdata=positions[~bad], marker=dict(color=series_colour(0), symbol="circle", size=6),
                   hovertemplate=hover),
        go.Scatter(x=token[bad], y=error[bad], mode="markers", name=_("beyond tolerance"),
                   customdata=positions[bad], marker=dict(color=HIGHLIGHT, symbol="diamond", size=8),
                   hovertemplate=hover),
    ]
    shapes, annotations = [], []
    for position, label in marks:
        at = np.searchsorted(positions, position)
        if 0 < at < len(positions):
            shapes.append(dict(type="line", xref="x", yref="y domain", x0=at - 0.5, x1=at - 0.5, y0=0, y1=1,
                               line=dict(color=MUTED, width=1, dash="dot")))
            annotations.append(dict(xref="x", yref="y domain", x=at - 0.5, y=1, yanchor="bottom", xanchor="center",
                                    text=label, showarrow=False, font=dict(size=12, color=MUTED)))
    if first_part is not None:
        annotations.append(dict(x=first_part, y=float(np.log10(error[first_part])), xref="x", yref="y",
                                text=_("error starts: position {position}").format(
                                    position=f"{int(positions[first_part]):,}"),
                                showarrow=True, arrowhead=2, ax=0, ay=-40, font=dict(size=12, color=HIGHLIGHT),
                                bgcolor="rgba(255, 255, 255, 0.9)",
                                xanchor="left" if first_part < len(positions) / 2 else "right"))
    low = float(np.log10(min(error.min(), tolerance.min())))
    high = float(np.log10(max(error.max(), tolerance.max())))
    picks = np.unique(np.linspace(0, len(positions) - 1, TICKS).round().astype(int))
    outcome = _("match") if verdict == "match" else _("mismatch")
    title = _("{title}: {outcome}").format(title=_(ROTATION_TITLE), outcome=outcome)
    figure = new_figure(title)
    figure.add_traces(traces)
    figure.update_layout(
        height=440, legend=LEGEND_BELOW, margin=dict(t=90, b=150), shapes=shapes, annotations=annotations,
        xaxis=dict(title=dict(text=_("position m (the probe's tokens, evenly spaced)")), tickmode="array",
                   tickvals=picks.tolist(), ticktext=[_short(int(positions[i])) for i in picks],
                   range=[-0.5, len(positions) - 0.5]),
        # headroom above the data for the label of where the error starts
        yaxis=dict(type="log", title=dict(text=_("error / size of q, k (log)")), exponentformat="power",
                   range=[low - 0.5, high + max(2.0, 0.25 * (high - low))]),
    )
    return figure
