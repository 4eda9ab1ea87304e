"""Figures to files: PNG / SVG / PDF through kaleido, ZIPs of many figures, and the export CLI.

Works without Streamlit. Images are drawn by plotly.js in a headless Chrome/Chromium that
kaleido drives; one browser is started on first use and kept for the life of the process
(starting one costs about two seconds, a render afterwards a tenth of that). MathJax is off:
the app runs offline, and our figures do not use LaTeX labels.

CLI (reproducible slide decks without a browser session)::

    python -m figures.export --out slides/ [--only frequencies,decay:bound] [--format png,svg,pdf]
                             [--slide] [--no-title] [--scale 2] [--set head_dim=64 --set base=500000]
    python -m figures.export --list

Figures are discovered from every module in ``figures/`` that defines
``export_figures(**overrides) -> dict[str, go.Figure]``.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import functools
import hashlib
import importlib
import inspect
import io
import math
import os
import pkgutil
import re
import shutil
import sys
import threading
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from figures.slides import slide_style

FORMATS = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}
DEFAULT_WIDTH = 1000  # px, for figures that do not set their own size
DEFAULT_HEIGHT = 600
PNG_SCALE = 2  # PNG pixels per layout pixel: a 1280x720 slide becomes 2560x1440
RENDER_TIMEOUT_S = 60.0
START_TIMEOUT_S = 60.0
MAX_STEM_LENGTH = 120

INSTALL_HINT = (
    "Image export draws figures in a headless Chrome or Chromium, and none was found on this machine. "
    "Install one (Debian/Ubuntu: `sudo apt install chromium`; anywhere: `kaleido_get_chrome`), or point "
    "the `BROWSER_PATH` environment variable at one, then restart the app. Meanwhile the camera icon in "
    "each chart's toolbar still downloads an SVG from your own browser."
)


class BrowserNotFound(RuntimeError):
    """No Chrome/Chromium to render with; the message says how to get one."""

    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


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


class _KaleidoServer:
    """One kaleido browser for the whole process, fed from any thread.

    kaleido's own ``start_sync_server`` waits without a timeout and never returns if the
    browser fails to start (its worker thread dies first); this one runs kaleido on an event
    loop in a daemon thread, waits with timeouts, and starts a fresh browser after a failure.
    One lock guards start, render and stop, so concurrent downloads queue instead of racing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido = None
        atexit.register(self.stop)

    @property
    def running(self) -> bool:
        return self._kaleido is not None

    def _start(self) -> None:
        path = find_browser()
        if path is None:
            raise BrowserNotFound()
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="kaleido-server", daemon=True).start()

        async def open_browser():
            import kaleido

            browser = kaleido.Kaleido(n=1, timeout=RENDER_TIMEOUT_S, mathjax=False, path=path)
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

    def render(self, figure: dict, options: dict) -> bytes:
        with self._lock:
            if self._kaleido is None:
                self._start()
            future = asyncio.run_coroutine_threadsafe(self._kaleido.calc_fig(figure, opts=options), self._loop)
            try:
                return future.result(RENDER_TIMEOUT_S + 5)
            except BaseException:
                future.cancel()
                self._stop_locked()  # a wedged or crashed browser: the next render starts a fresh one
                raise


_SERVER = _KaleidoServer()


def export_size(figure: go.Figure) -> tuple[int, int]:
    """Layout pixels an export of ``figure`` has: its own width/height, else the defaults."""
    return int(figure.layout.width or DEFAULT_WIDTH), int(figure.layout.height or DEFAULT_HEIGHT)


def render(figure: go.Figure, fmt: str, *, scale: float = PNG_SCALE) -> bytes:
    """``figure`` as PNG, SVG or PDF bytes. PNGs are ``scale`` times the layout size in pixels."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}.")
    width, height = export_size(figure)
    options = {"format": fmt, "width": width, "height": height, "scale": scale if fmt == "png" else 1}
    return _SERVER.render(figure.to_dict(), options)


def render_files(figures: Iterable[tuple[str, go.Figure]], fmt: str, *, scale: float = PNG_SCALE) -> dict[str, bytes]:
    """``[(stem, figure), ...]`` -> ``{"stem.fmt": bytes}``; a repeated stem gets ``_2``, ``_3``... appended."""
    files: dict[str, bytes] = {}
    for stem, figure in figures:
        name, copy = f"{stem}.{fmt}", 1
        while name in files:
            copy += 1
            name = f"{stem}_{copy}.{fmt}"
        files[name] = render(figure, fmt, scale=scale)
    return files


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


# ---- discovery of the app's figures ----------------------------------------------------------

_NOT_TOPICS = {"export", "slides", "theme"}
Exporter = Callable[..., dict[str, go.Figure]]


def discover_exporters(package: str = "figures") -> dict[str, Exporter]:
    """``{topic: export_figures}`` for every module of ``package`` that defines ``export_figures``.

    A module that fails to import is skipped with a note on stderr, so one broken topic never
    stops the others from exporting.
    """
    root = importlib.import_module(package)
    exporters: dict[str, Exporter] = {}
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_TOPICS:
            continue
        try:
            module = importlib.import_module(f"{package}.{info.name}")
        except Exception as err:  # noqa: BLE001 - skip, say why
            print(f"skipping {package}.{info.name}: it failed to import ({err})", file=sys.stderr)
            continue
        exporter = getattr(module, "export_figures", None)
        if callable(exporter):
            exporters[info.name] = exporter
    return exporters


def _coerced(value: Any, default: Any) -> Any:
    """Give a CLI value the shape of the default it replaces (one method -> a tuple of one, 64 -> 64.0)."""
    if isinstance(default, tuple) and not isinstance(value, tuple):
        return (value,)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def overrides_for(topic: str, exporter: Exporter, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The overrides one topic takes.

    ``topic.key`` goes to that topic only; a plain ``key`` goes to every topic that takes it: a
    named parameter of ``export_figures``, or a key of its module's ``DEFAULTS`` when it takes
    ``**overrides``. Values are shaped like the defaults they replace.
    """
    parameters = inspect.signature(exporter).parameters
    defaults = getattr(sys.modules.get(exporter.__module__), "DEFAULTS", None)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    known = {name: p.default for name, p in parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    if takes_any and isinstance(defaults, Mapping):
        known.update(defaults)
    chosen: dict[str, Any] = {}
    for key, value in overrides.items():
        scope, dot, name = key.rpartition(".")
        if dot and scope != topic:
            continue
        if name in known or (takes_any and not isinstance(defaults, Mapping)):
            chosen[name] = _coerced(value, known.get(name))
    return chosen


def parse_selection(text: str | None) -> dict[str, set[str] | None]:
    """``"frequencies:heatmap,decay"`` -> ``{"frequencies": {"heatmap"}, "decay": None}`` (None: all)."""
    selection: dict[str, set[str] | None] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        topic, _, slug = item.partition(":")
        if not slug:
            selection[topic] = None
        elif selection.get(topic, set()) is not None:
            selection.setdefault(topic, set()).add(slug)
    return selection


def collect_figures(
    exporters: Mapping[str, Exporter],
    selection: Mapping[str, set[str] | None] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[tuple[str, str], go.Figure]:
    """Build the selected figures: ``{(topic, slug): figure}``.

    Each topic gets only the overrides its ``export_figures`` accepts. Raises ``ValueError``
    for a topic or figure that does not exist, or an override no selected topic accepts.
    """
    overrides = dict(overrides or {})
    selection = dict(selection) if selection else dict.fromkeys(exporters)
    unknown = sorted(set(selection) - set(exporters))
    if unknown:
        raise ValueError(f"No figures for {', '.join(unknown)}; available: {', '.join(exporters) or 'none'}.")
    used: set[str] = set()
    figures: dict[tuple[str, str], go.Figure] = {}
    for topic, slugs in selection.items():
        accepted = overrides_for(topic, exporters[topic], overrides)
        used.update(k for k in overrides if k.rpartition(".")[2] in accepted)
        try:
            built = exporters[topic](**accepted)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{topic}: {err}") from err
        missing = sorted((slugs or set()) - set(built))
        if missing:
            raise ValueError(f"{topic} has no figure {', '.join(missing)}; it has {', '.join(built)}.")
        for slug, figure in built.items():
            if slugs is None or slug in slugs:
                figures[(topic, slug)] = figure
    unused = sorted(set(overrides) - used)
    if unused:
        raise ValueError(f"No selected figure takes {', '.join(unused)}.")
    return figures


# ---- CLI -------------------------------------------------------------------------------------

def parse_value(text: str) -> Any:
    """A ``--set`` value as bool, int, float or str; commas make a tuple. Never evaluated as code."""
    if "," in text:
        return tuple(parse_value(part) for part in text.split(",") if part.strip())
    stripped = text.strip()
    if stripped.lower() in {"true", "yes", "on"}:
        return True
    if stripped.lower() in {"false", "no", "off"}:
        return False
    if stripped.lower() in {"none", "null"}:
        return None
    for kind in (int, float):
        try:
            return kind(stripped.replace("_", ""))
        except ValueError:
            pass
    return stripped


def parse_setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not all(part.isidentifier() for part in key.strip().split(".")) or key.count(".") > 1:
        raise argparse.ArgumentTypeError(f"expected key=value or topic.key=value, got {text!r}")
    return key.strip(), parse_value(value)


def _formats(text: str) -> list[str]:
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise argparse.ArgumentTypeError(f"formats must be among {', '.join(FORMATS)}, got {text!r}")
    return formats


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m figures.export",
        description="Render the app's figures to PNG/SVG/PDF files, without a browser session.",
    )
    parser.add_argument("--out", type=Path, help="folder to write into (created if missing)")
    parser.add_argument("--only", help="topics or topic:figure pairs, comma-separated (default: all)")
    parser.add_argument("--format", type=_formats, default=["png"], help="png, svg, pdf; comma-separated")
    parser.add_argument("--slide", action="store_true", help="16:9 slide style: large type, thick lines")
    parser.add_argument("--no-title", action="store_true", help="with --slide: leave figure titles out")
    parser.add_argument("--scale", type=float, default=PNG_SCALE, help="PNG pixels per layout pixel")
    parser.add_argument("--set", dest="settings", type=parse_setting, action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a parameter for export_figures, e.g. head_dim=64, methods=pi,ntk, frequencies.base=5e5; "
                             "a one-item list needs a trailing comma (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the available figures and exit")
    return parser


def main(argv: list[str] | None = None, *, package: str = "figures") -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    exporters = discover_exporters(package)
    overrides = dict(args.settings)
    selection = parse_selection(args.only)
    if args.list:
        # Topics whose figures are expensive (training runs a model) name them in FIGURE_SLUGS,
        # so listing does not build them.
        cheap = {t: e for t, e in exporters.items() if not hasattr(sys.modules[e.__module__], "FIGURE_SLUGS")}
        listed = {t: s for t, s in (selection or dict.fromkeys(exporters)).items() if t in cheap}
        try:
            figures = collect_figures(cheap, listed, overrides) if listed or not selection else {}
        except ValueError as err:
            parser.error(str(err))
        for topic, slug in figures:
            print(f"{topic}:{slug}")
        for topic, exporter in exporters.items():
            if topic not in cheap and (not selection or topic in selection):
                for slug in sys.modules[exporter.__module__].FIGURE_SLUGS:
                    print(f"{topic}:{slug}")
        return 0
    try:
        figures = collect_figures(exporters, selection, overrides)
    except ValueError as err:
        parser.error(str(err))
    if args.out is None:
        parser.error("--out is required (or use --list)")
    if not figures:
        print("No figures to export.", file=sys.stderr)
        return 1
    if not browser_available():
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = ("slide", "notitle") if args.slide and args.no_title else ("slide",) if args.slide else ()
    for (topic, slug), figure in figures.items():
        styled = slide_style(figure, title=not args.no_title) if args.slide else figure
        stem = file_stem(topic, slug, params=overrides_for(topic, exporters[topic], overrides), tail=suffix)
        for fmt in args.format:
            path = args.out / f"{stem}.{fmt}"
            path.write_bytes(render(styled, fmt, scale=args.scale))
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
