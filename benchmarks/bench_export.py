"""Figure export timings: slide style, kaleido renders per format (after warm-up), page ZIPs, and
what the export controls add to a page rerun.

Render cases need Chrome/Chromium and are left out without one. The harness calls each case
once before timing it, so the browser start (about 2 s) is never in the numbers.
"""

from __future__ import annotations

import functools
import tempfile
import textwrap
from functools import partial
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from benchmarks import Case
from figures import export
from figures.slides import slide_style
from figures.theme import new_figure, series_colour


def lines_figure(traces: int = 9, points: int = 2000) -> go.Figure:
    """The heaviest line figure a page may send: 9 methods x 2000 points."""
    figure = new_figure("Rotation angle against position", xaxis_title="position m (tokens)",
                        yaxis_title="angle m·θ_i (rad)")
    x = np.linspace(0, 32768, points)
    for i in range(traces):
        figure.add_trace(go.Scatter(x=x, y=x * 10000.0 ** (-i / traces), name=f"method {i}",
                                    line_color=series_colour(i)))
    figure.update_yaxes(type="log")
    return figure


def heatmap_figure(size: int = 300) -> go.Figure:
    """The heaviest heatmap a page may send: 300 x 300 cells."""
    figure = new_figure("Angle by pair and position", xaxis_title="pair index i", yaxis_title="position m")
    z = np.log10(1 + np.outer(np.arange(size), 10000.0 ** (-np.arange(size) / size)))
    figure.add_trace(go.Heatmap(z=z, colorbar=dict(title="log₁₀ rad")))
    return figure


LINES = lines_figure()
HEATMAP = heatmap_figure()
SLIDE_LINES = slide_style(LINES)

_PAGE = '''
    import numpy as np
    import plotly.graph_objects as go
    import streamlit as st
    from benchmarks.bench_export import heatmap_figure, lines_figure
    from ui import show_figure
    from ui.layout import start_page

    @st.cache_data(max_entries=2)
    def figures():
        return lines_figure(), heatmap_figure()

    start_page(charts=True)
    lines, heatmap = figures()
    for i in range(3):
        {show}(lines, f"lines{{i}}")
        {show}(heatmap, f"heat{{i}}")
'''


@functools.cache
def _page_rerun(with_controls: bool):
    """A warm rerun of a page with six heavy figures, with or without ui.show_figure's export controls.

    Built on first use (not at import: ``python -m benchmarks`` imports every module)."""
    from streamlit.testing.v1 import AppTest

    show = "show_figure" if with_controls else "plain"
    source = textwrap.dedent(_PAGE.format(show=show))
    if not with_controls:
        source += "\n"
        source = source.replace("start_page(charts=True)\n", "start_page(charts=True)\n"
                                "def plain(figure, key):\n"
                                "    st.plotly_chart(figure, theme=None, key=key, width='stretch')\n")
    folder = Path(tempfile.mkdtemp(prefix="bench_export_"))
    path = folder / "bench_page.py"
    path.write_text(source)
    app = AppTest.from_file(str(path), default_timeout=120)
    app.run()
    assert not app.exception, [e.message for e in app.exception]
    return app.run


def _zip_of_six(fmt: str):
    named = [(f"figure{i}", LINES if i % 2 else HEATMAP) for i in range(6)]
    return export.zip_files(export.render_files(named, fmt))


def _deck():
    """The guided lesson's deck in all three formats, as ``python -m figures.export --deck tour`` writes it (the
    lessons' figures are cached after the harness's first call: this times drawing, printing and writing)."""
    from lessons import deck

    return deck.build(deck.tour_deck(), deck.DECK_FORMATS)


CASES = [
    Case("figure export", "slide_style: 9 lines x 2000 points", partial(slide_style, LINES), repeats=10),
    Case("figure export", "slide_style: 300x300 heatmap", partial(slide_style, HEATMAP), repeats=10),
    Case("figure export", "page rerun: 6 heavy figures, export controls vs bare st.plotly_chart (AppTest)",
         lambda: _page_rerun(True)(), baseline=lambda: _page_rerun(False)(), repeats=5),
]

if export.find_browser() is not None:
    for fmt in export.FORMATS:
        CASES += [
            Case("figure export", f"render {fmt.upper()}: 9 lines x 2000 points", partial(export.render, LINES, fmt)),
            Case("figure export", f"render {fmt.upper()}: 300x300 heatmap", partial(export.render, HEATMAP, fmt)),
            Case("figure export", f"render {fmt.upper()}: slide, 9 lines", partial(export.render, SLIDE_LINES, fmt)),
        ]
    CASES += [
        Case("figure export", "deck: the 12-step lesson as PPTX, PDF and HTML (figures cached, drawn anew)",
             _deck, repeats=2),
        Case("figure export", "ZIP of 6 figures, PNG", partial(_zip_of_six, "png"), repeats=3),
        Case("figure export", "ZIP of 6 figures, SVG", partial(_zip_of_six, "svg"), repeats=3),
    ]
