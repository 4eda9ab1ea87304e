"""Figures to files: PNG / SVG / PDF through kaleido, self-contained HTML, plotly JSON, and ZIPs.

Works without Streamlit. Images are drawn by plotly.js in a headless Chrome/Chromium that
kaleido drives; one browser is started on first use and kept for the life of the process
(starting one costs about two seconds, a render afterwards a tenth of that). MathJax is off:
the app runs offline, and our figures do not use LaTeX labels. HTML and JSON need no browser.

``python -m figures.export`` is the export CLI (see ``lessons.export``): every lesson's figures
to files, without a browser session.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import functools
import hashlib
import io
import math
import os
import re
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterable, Mapping
from typing import Any

import plotly.graph_objects as go

from i18n import N_, _

IMAGE_FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}
FORMATS = {**IMAGE_FORMATS, "html": "text/html", "json": "application/json"}
DEFAULT_WIDTH = 1000  # px, for figures that do not set their own size
DEFAULT_HEIGHT = 600
PNG_SCALE = 2  # PNG pixels per layout pixel: a 1280x720 slide becomes 2560x1440
RENDER_TIMEOUT_S = 60.0
PRINT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 60.0
MAX_STEM_LENGTH = 120
# Chromium tabs drawing figures: kaleido reloads a tab after each figure, so with two the next figure
# draws while the last one's tab reloads.
TABS = 2

INSTALL_HINT = N_(
    "Image export draws figures in a headless Chrome or Chromium, and none was found on this machine. "
    "Install one (Debian/Ubuntu: `sudo apt install chromium`; anywhere: `kaleido_get_chrome`), or point "
    "the `BROWSER_PATH` environment variable at one, then restart the app. Meanwhile the camera icon in "
    "each chart's toolbar still downloads an SVG from your own browser."
)


class BrowserNotFound(RuntimeError):
    """No Chrome/Chromium to render with; the message says how to get one."""

    def __init__(self) -> None:
        super().__init__(_(INSTALL_HINT))


@functools.cache
def find_browser() -> str | None:
    """The Chrome/Chromium kaleido will use (``BROWSER_PATH``, kaleido's own download, or PATH)."""
    override = os.environ.get("BROWSER_PATH")
    if override:
        return shutil.which(override)  # a path or a command name; None unless executable
    from choreographer.browsers.chromium import Chromium

    return Chromium.find_browser(skip_local=False)


def browser_available() -> bool:
    return find_browser() is not None


async def _draw(browser, figure: dict, options: dict) -> bytes:
    """One figure on a free tab of ``browser``, its bytes returned as soon as they are drawn.

    kaleido's ``calc_fig`` reloads the tab before it returns (about as long as the drawing itself);
    here the reload runs in the background while the caller already has the bytes, and the next
    figure takes the other tab. That uses kaleido 1.x's tab API (``kaleido<2`` is pinned); without it,
    plain ``calc_fig``.
    """
    try:
        from kaleido._profiler import RenderTaskProfile
        from kaleido._utils.fig_tools import coerce_for_js

        get_tab, return_tab = browser._get_kaleido_tab, browser._return_kaleido_tab
    except (ImportError, AttributeError):
        return await browser.calc_fig(figure, opts=options)
    spec = coerce_for_js(figure, None, options)
    tab = await get_tab()
    try:
        return await asyncio.wait_for(tab._calc_fig(spec, topojson=None, stepper=False,
                                                    render_prof=RenderTaskProfile(spec, None, tab.tab.target_id)),
                                      RENDER_TIMEOUT_S)
    finally:
        task = asyncio.ensure_future(return_tab(tab))
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set = set()  # tab reloads in flight (kept referenced until done)


class _KaleidoServer:
    """One kaleido browser for the whole process, fed from any thread.

    kaleido's own ``start_sync_server`` waits without a timeout and never returns if the
    browser fails to start (its worker thread dies first); this one runs kaleido on an event
    loop in a daemon thread, waits with timeouts, and starts a fresh browser after a failure.
    A lock guards start and stop; renders from any number of threads share the browser's tabs.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido = None
        atexit.register(self.stop)

    @property
    def running(self) -> bool:
        return self._kaleido is not None

    def start(self) -> None:
        """Start the browser now (the server does this in the background, so the first export is quick)."""
        with self._lock:
            if self._kaleido is None:
                self._start()

    def _start(self) -> None:
        path = find_browser()
        if path is None:
            raise BrowserNotFound()
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="kaleido-server", daemon=True).start()

        async def open_browser():
            import kaleido

            browser = kaleido.Kaleido(n=TABS, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
            await browser.open()
            return browser

        try:
            self._kaleido = asyncio.run_coroutine_threadsafe(open_browser(), loop).result(START_TIMEOUT_S)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        self._loop = loop

    def _stop_locked(self) -> None:
        loop, browser = self._loop, self._kaleido
        self._loop = self._kaleido = None
        if loop is None:
            return
        try:
            if browser is not None:
                asyncio.run_coroutine_threadsafe(browser.close(), loop).result(10)
        except Exception:  # noqa: BLE001 - best effort: the browser may already be gone
            pass
        finally:
            loop.call_soon_threadsafe(loop.stop)

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def render_many(self, figures: list[dict], options: list[dict]) -> list[bytes]:
        """Draw several figures at once on the browser's tabs; bytes in the order given."""
        self.start()
        loop, browser = self._loop, self._kaleido

        async def draw_all():
            return await asyncio.gather(*(_draw(browser, f, o) for f, o in zip(figures, options, strict=True)))

        future = asyncio.run_coroutine_threadsafe(draw_all(), loop)
        try:
            return future.result(RENDER_TIMEOUT_S * max(1, len(figures)) + 5)
        except BaseException:
            future.cancel()
            with self._lock:
                if self._kaleido is browser:
                    self._stop_locked()  # a wedged or crashed browser: the next render starts a fresh one
            raise

    def render(self, figure: dict, options: dict) -> bytes:
        return self.render_many([figure], [options])[0]

    def print_pdf(self, url: str) -> bytes:
        """The page at ``url`` printed to PDF on a tab of its own (its CSS page size, no header or footer)."""
        self.start()
        future = asyncio.run_coroutine_threadsafe(_print(self._kaleido, url), self._loop)
        try:
            return future.result(2 * PRINT_TIMEOUT_S + 5)
        except BaseException:
            future.cancel()
            raise


async def _print(browser, url: str) -> bytes:
    tab = await browser.create_tab("about:blank")
    try:
        await tab.send_command("Page.enable")
        loaded = tab.subscribe_once("Page.loadEventFired")
        await tab.send_command("Page.navigate", params={"url": url})
        await asyncio.wait_for(loaded, PRINT_TIMEOUT_S)
        response = await asyncio.wait_for(tab.send_command("Page.printToPDF", params={
            "preferCSSPageSize": True, "printBackground": True, "displayHeaderFooter": False}), PRINT_TIMEOUT_S)
    finally:
        await browser.close_tab(tab.target_id)
    if "error" in response:
        raise RuntimeError(f"printing {url} failed: {response['error']}")
    return base64.b64decode(response["result"]["data"])


_SERVER = _KaleidoServer()


def start_renderer() -> None:
    """Start the headless browser that draws images now, not on the first export (takes a few seconds)."""
    _SERVER.start()


def print_pdf(page: str) -> bytes:
    """An HTML page (a string, self-contained) printed to PDF by the browser that draws the figures: its CSS
    ``@page`` size, backgrounds, no header or footer. A tab of the running browser, so no second browser starts."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="print_") as folder:
        source = Path(folder) / "page.html"
        source.write_text(page, encoding="utf-8")
        return _SERVER.print_pdf(source.as_uri())


def export_size(figure: go.Figure) -> tuple[int, int]:
    """Layout pixels an export of ``figure`` has: its own width/height, else the defaults."""
    return int(figure.layout.width or DEFAULT_WIDTH), int(figure.layout.height or DEFAULT_HEIGHT)


def render(figure: go.Figure, fmt: str, *, scale: float = PNG_SCALE) -> bytes:
    """``figure`` as PNG, SVG, PDF, HTML or JSON bytes. PNGs are ``scale`` times the layout size in pixels.

    HTML is one self-contained page (plotly.js inlined: it opens offline, with the figure's own
    sliders and hover); JSON is plotly's figure JSON (compare figures without drawing them).
    """
    if fmt not in FORMATS:
        raise ValueError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    if fmt == "json":
        return figure.to_json().encode("utf-8")
    if fmt == "html":
        return figure.to_html(include_plotlyjs=True, full_html=True, auto_play=False,
                              config={"displaylogo": False}).encode("utf-8")
    return _SERVER.render(_for_format(figure, fmt).to_dict(), _options(figure, fmt, scale))


PDF_LEGEND_LIFT = 16  # px: how far a PDF lifts a legend drawn on the canvas's bottom edge


def _for_format(figure: go.Figure, fmt: str) -> go.Figure:
    """``figure`` as ``fmt`` draws it: a PDF's printed page clipped the bottom of a legend that stands on the
    canvas's bottom edge (``figures.theme.LEGEND_BELOW``: its border and a few pixels of its entries), so a PDF
    lifts it by PDF_LEGEND_LIFT px; every other format, and every other figure, is drawn as it is."""
    legend = figure.layout.legend
    if fmt != "pdf" or legend.yref != "container" or (legend.yanchor or "auto") != "bottom" or (legend.y or 0) > 0.05:
        return figure
    _width, height = export_size(figure)
    lifted = go.Figure(figure)
    lifted.layout.legend.y = (legend.y or 0) + PDF_LEGEND_LIFT / height
    return lifted


def _options(figure: go.Figure, fmt: str, scale: float) -> dict:
    width, height = export_size(figure)
    return {"format": fmt, "width": width, "height": height, "scale": scale if fmt == "png" else 1}


def render_files(figures: Iterable[tuple[str, go.Figure]], fmt: str, *, scale: float = PNG_SCALE) -> dict[str, bytes]:
    """``[(stem, figure), ...]`` -> ``{"stem.fmt": bytes}``; a repeated stem gets ``_2``, ``_3``... appended.

    Images are drawn together on the browser's tabs, not one after another.
    """
    named = list(figures)
    names: list[str] = []
    for stem, _figure in named:
        name, copy = f"{stem}.{fmt}", 1
        while name in names:
            copy += 1
            name = f"{stem}_{copy}.{fmt}"
        names.append(name)
    if fmt in IMAGE_FORMATS:
        drawn = _SERVER.render_many([_for_format(figure, fmt).to_dict() for _, figure in named],
                                    [_options(figure, fmt, scale) for _, figure in named])
    else:
        drawn = [render(figure, fmt, scale=scale) for _, figure in named]
    return dict(zip(names, drawn, strict=True))


def zip_files(files: Mapping[str, bytes], *, comment: str = "") -> bytes:
    """A ZIP holding exactly ``files`` (name -> bytes); ``comment`` goes in the archive comment."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            # PNG and PDF are compressed already; deflating them again only costs time.
            method = zipfile.ZIP_STORED if name.endswith((".png", ".pdf")) else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=method)
        archive.comment = comment.encode("utf-8")[:65535]
    return buffer.getvalue()


# ---- file names ------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def _clean(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-._")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _short_number(text: str) -> str:
    """``10000.0`` -> ``10000`` so names read like the slider labels."""
    value = _number(text)
    if value is None:
        return text
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else f"{value:g}"


def file_stem(*parts: str, params: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
              tail: Iterable[str] = ()) -> str:
    """A file name (no extension): name parts, then parameters, then ``tail`` (e.g. ``slide``).

    ``file_stem("frequencies", "heatmap", params={"d": 128, "base": 10000.0})`` is
    ``frequencies_heatmap_d128_base10000``.

    Parameter values may be lists (``methods=["pi", "ntk"]`` -> ``methods-pi-ntk``). Only safe
    characters survive; very long names are cut and end in a hash of the full name, so two
    different views never share a name.
    """
    items = params.items() if isinstance(params, Mapping) else params
    pieces = [_clean(str(p)) for p in parts if str(p)]
    for key, value in items:
        values = [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
        shown = "-".join(_short_number(v) if _number(v) is not None else _clean(v) for v in values)
        # d128 for one number, methods-pi-ntk for words or lists
        joiner = "" if len(values) == 1 and _number(values[0]) is not None else "-"
        pieces.append(f"{_clean(str(key))}{joiner}{shown}")
    pieces.extend(_clean(str(t)) for t in tail)
    stem = "_".join(p for p in pieces if p) or "figure"
    if len(stem) > MAX_STEM_LENGTH:
        digest = hashlib.sha1(stem.encode()).hexdigest()[:8]
        stem = f"{stem[:MAX_STEM_LENGTH - 9].rstrip('_-')}_{digest}"
    return stem




if __name__ == "__main__":  # the documented command; the CLI walks the lessons, which sit above figures/
    from lessons.export import main

    sys.exit(main())
