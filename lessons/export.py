"""The export CLI (``python -m figures.export``): every lesson's figures to files, and the gallery.

    python -m figures.export --list
    python -m figures.export --out slides/ --only frequencies,decay:bound --format png,pdf --slide \\
        --set head_dim=64 --set frequencies.base=500000
    python -m figures.export --out figures-json/ --format json
    python -m figures.export --gallery gallery/
    python -m figures.export --lang zh --out 图/ --format png,json     # titles, axes, legends in Chinese
    python -m figures.export --deck tour --format pptx,pdf,html [--lang zh] [--no-answers] --out decks/
    python -m figures.export --deck frequencies --format pptx --out decks/  # a lesson's figures as a deck
    python -m figures.export --handout --out decks/                         # the guided lesson's questions

``--set KEY=VALUE`` applies to every selected lesson whose settings have KEY (a field name or its
URL key); ``LESSON.KEY=VALUE`` to that lesson only. A key no selected lesson has, or a value a
lesson cannot take, stops the export with the valid keys or values. ``--gallery`` draws every
figure of every lesson at its defaults, for the screen and as a slide, with an ``index.html``
contact sheet: the page to look at before and after every change to a figure. ``--lang zh`` draws
every figure in Chinese (file names then end in ``_lang-zh``, like the page's downloads). ``--deck`` and
``--handout`` write decks and the handout (``lessons.deck``).
"""

from __future__ import annotations

import argparse
import html
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from figures.export import FORMATS, IMAGE_FORMATS, INSTALL_HINT, PNG_SCALE, browser_available, file_stem, render
from i18n import DEFAULT_LANGUAGE, LANGUAGES, _, current_language, use_language
from lessons import all_lessons
from lessons.base import SCREEN, FigureStyle, Lesson, LessonSettings, SettingsError, copy_of

Selection = dict[str, set[str] | None]  # lesson -> figure names (None: all)


def parse_selection(text: str | None) -> Selection:
    """``"frequencies:yarn-ramp,decay"`` -> ``{"frequencies": {"yarn-ramp"}, "decay": None}``."""
    selection: Selection = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        topic, _, name = item.partition(":")
        if not name:
            selection[topic] = None
        elif selection.get(topic, set()) is not None:
            selection.setdefault(topic, set()).add(name)
    return selection


def selected(lessons: Mapping[str, Lesson], selection: Selection | None) -> list[tuple[Lesson, list[str]]]:
    """The lessons and figure names chosen; ``SettingsError`` for an unknown lesson or figure."""
    selection = selection or dict.fromkeys(lessons)
    unknown = [name for name in selection if name not in lessons]
    if unknown:
        raise SettingsError(f"No lesson {', '.join(unknown)}; available: {', '.join(lessons)}.")
    chosen = []
    for name, figures in selection.items():
        lesson = lessons[name]
        missing = sorted((figures or set()) - set(lesson.figures))
        if missing:
            raise SettingsError(f"{name} has no figure {', '.join(missing)}; it has: {', '.join(lesson.figures)}.")
        chosen.append((lesson, [f for f in lesson.figures if figures is None or f in figures]))
    return chosen


def settings_for(lessons: Sequence[Lesson], overrides: Mapping[str, Any]) -> dict[str, LessonSettings]:
    """Each lesson's settings with the ``--set`` values that apply to it.

    A plain key goes to every lesson that has it; ``lesson.key`` to that lesson. Raises
    ``SettingsError`` for a key no selected lesson has (listing each lesson's keys) or a bad value.
    """
    by_name = {lesson.name: lesson for lesson in lessons}
    chosen: dict[str, dict[str, Any]] = {lesson.name: {} for lesson in lessons}
    for key, value in overrides.items():
        scope, dot, name = key.rpartition(".")
        if dot and scope not in by_name:
            raise SettingsError(f"--set {key}: {scope!r} is not among the selected lessons ({', '.join(by_name)}).")
        targets = [by_name[scope]] if dot else list(lessons)
        takers = [lesson for lesson in targets if lesson.settings.field_name(name) is not None]
        if not takers:
            valid = "; ".join(f"{lesson.name}: {lesson.settings.valid_keys()}" for lesson in targets)
            raise SettingsError(f"No selected lesson has the setting {name!r}. Valid keys - {valid}.")
        for lesson in takers:
            chosen[lesson.name][name] = value
    settings: dict[str, LessonSettings] = {}
    for lesson in lessons:
        try:
            settings[lesson.name] = lesson.settings.from_mapping(chosen[lesson.name])
        except SettingsError as err:
            raise SettingsError(f"{lesson.name}: {err}") from err
    return settings


def collect(
    selection: Selection | None = None,
    overrides: Mapping[str, Any] | None = None,
    style: FigureStyle = SCREEN,
    lessons: Mapping[str, Lesson] | None = None,
) -> dict[tuple[str, str], go.Figure]:
    """``{(lesson, figure): figure}`` for the selection, with ``overrides`` applied where they belong."""
    chosen = selected(lessons or all_lessons(), selection)
    settings = settings_for([lesson for lesson, _ in chosen], overrides or {})
    figures: dict[tuple[str, str], go.Figure] = {}
    for lesson, names in chosen:
        for name in names:
            try:
                figures[(lesson.name, name)] = lesson.figure(name, settings[lesson.name], style)
            except ValueError as err:
                raise SettingsError(f"{lesson.name}:{name}: {err}") from err
    return figures


def stem_for(lesson: Lesson, name: str, settings: LessonSettings, style: FigureStyle) -> str:
    """``frequencies_yarn-ramp_d64_slide``: lesson, figure, the settings the figure is drawn from that differ from
    the defaults (by URL key), and the language when it is not English (``_lang-zh``).

    The page and the CLI name a figure alike, and a figure's name changes only with the settings it shows (the
    page gives it to the chart's toolbar too, so a chart whose settings did not change is not re-created).
    """
    drawn = lesson.figure_settings(name, settings)
    controls = drawn.controls()
    changed = [(controls[field].key, value) for field, value in drawn.changed().items()
               if controls[field].widget != "text"]
    if current_language() != DEFAULT_LANGUAGE:
        changed.append(("lang", current_language()))
    return file_stem(lesson.name, name, params=changed, tail=style.name_parts)


# ---- the gallery ---------------------------------------------------------------------------------

GALLERY_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>Figure gallery</title>
<style>
body {{ font-family: Inter, 'Helvetica Neue', Arial, 'Noto Sans CJK SC', sans-serif; margin: 24px; color: #222; }}
h2 {{ margin-top: 40px; border-bottom: 1px solid #ccc; }}
.row {{ display: grid; grid-template-columns: 1fr 1fr; gap: 16px; margin: 12px 0 28px; }}
figure {{ margin: 0; }} img {{ width: 100%; border: 1px solid #ddd; }}
figcaption {{ font-size: 13px; color: #555; }} .failed {{ color: #b00; }}
</style></head><body>
<h1>Figure gallery</h1><p>{summary}</p>
{sections}
</body></html>
"""


def gallery(out: Path, lessons: Mapping[str, Lesson] | None = None, *, scale: float = 1.0,
            log=print) -> list[dict]:
    """Every figure at its defaults, screen and slide style, as PNG, plus ``index.html``. Returns one record
    per figure (name, files, seconds, error). A figure that fails is listed with its error, not skipped."""
    out.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    sections = []
    for lesson in (lessons or all_lessons()).values():
        rows = []
        for name, spec in lesson.figures.items():
            record: dict[str, Any] = {"lesson": lesson.name, "figure": name, "files": {}, "error": None}
            start = time.perf_counter()
            for style_name, style in (("screen", SCREEN), ("slide", FigureStyle(slide=True))):
                file = f"{lesson.name}_{name}_{style_name}.png"
                try:
                    shown = lesson.settings(**dict(spec.showcase)) if spec.showcase else None
                    (out / file).write_bytes(render(lesson.figure(name, shown, style=style), "png", scale=scale))
                    record["files"][style_name] = file
                except Exception as err:  # noqa: BLE001 - a broken figure is reported in the sheet
                    record["error"] = f"{type(err).__name__}: {err}"
            record["seconds"] = round(time.perf_counter() - start, 2)
            records.append(record)
            log(f"{lesson.name}:{name} {record['seconds']:.1f}s" + (f" FAILED {record['error']}" if record["error"]
                                                                     else ""))
            cells = "".join(
                f'<figure><img src="{html.escape(record["files"][s])}" loading="lazy">'
                f'<figcaption>{s}</figcaption></figure>' for s in ("screen", "slide") if s in record["files"])
            failed = f'<p class="failed">{html.escape(record["error"])}</p>' if record["error"] else ""
            rows.append(f'<h3>{html.escape(lesson.name)}:{html.escape(name)} - {html.escape(_(spec.title))}</h3>'
                        f'{failed}<div class="row">{cells}</div>')
        sections.append(f"<h2>{html.escape(_(lesson.title))}</h2>" + "".join(rows))
    failures = sum(1 for r in records if r["error"])
    summary = f"{len(records)} figures from {len(sections)} lessons, each for the screen and as a 16:9 slide"
    summary += f"; {failures} failed." if failures else "."
    page = GALLERY_PAGE.format(lang=current_language(), summary=html.escape(summary), sections="\n".join(sections))
    (out / "index.html").write_text(page, encoding="utf-8")
    return records


# ---- Home's thumbnails ---------------------------------------------------------------------------

THUMBNAIL_SIZE = (640, 400)  # layout px: read at card width on a phone and a desktop alike


def thumbnails(out: Path, lessons: Mapping[str, Lesson] | None = None, *, log=print) -> list[Path]:
    """Each lesson's key figure at its defaults as a small PNG (``<lesson>.png``), for Home's cards."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for lesson in (lessons or all_lessons()).values():
        figure = copy_of(lesson.figure(lesson.key_figure_name))
        width, height = THUMBNAIL_SIZE
        figure.update_layout(width=width, height=height, title=None, showlegend=False,
                             margin=dict(l=40, r=10, t=34, b=40))
        # panel titles and notes sized for a full figure run into each other at card width
        figure.update_annotations(font_size=11)
        path = out / f"{lesson.name}.png"
        path.write_bytes(render(figure, "png", scale=1))
        written.append(path)
        log(path)
    return written


# ---- CLI -----------------------------------------------------------------------------------------

def parse_value(text: str) -> Any:
    """A ``--set`` value as bool, int, float or str; commas make a tuple. Never evaluated as code."""
    if "," in text:
        return tuple(parse_value(part) for part in text.split(",") if part.strip())
    stripped = text.strip()
    if stripped.lower() in {"true", "yes", "on"}:
        return True
    if stripped.lower() in {"false", "no", "off"}:
        return False
    for kind in (int, float):
        try:
            return kind(stripped.replace("_", ""))
        except ValueError:
            pass
    return stripped


def parse_setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not all(part.isidentifier() for part in key.strip().split(".")) or key.count(".") > 1:
        raise argparse.ArgumentTypeError(f"expected key=value or lesson.key=value, got {text!r}")
    return key.strip(), parse_value(value)


def _formats(text: str) -> list[str]:
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise argparse.ArgumentTypeError(f"formats must be among {', '.join(FORMATS)}, got {text!r}")
    return formats


def build_parser() -> argparse.ArgumentParser:
    from lessons import deck  # the guided lesson and torch: only where a deck is asked for (the pages import this)

    parser = argparse.ArgumentParser(
        prog="python -m figures.export",
        description="Write the app's figures to files (PNG, SVG, PDF, self-contained HTML, plotly JSON) "
                    "without a browser session, or draw the whole gallery. --lang zh draws them in Chinese "
                    "(中文: titles, axes, legends, hover text); the app itself switches language in its sidebar.",
    )
    parser.add_argument("--out", type=Path, help="folder to write into (created if missing)")
    parser.add_argument("--only", help="lessons or lesson:figure pairs, comma-separated (default: all)")
    parser.add_argument("--format", help=f"{', '.join(FORMATS)}; comma-separated (default png); with --deck: "
                                         f"{', '.join(deck.DECK_FORMATS)} (default all three)")
    parser.add_argument("--slide", action="store_true", help="16:9 slide style: large type, thick lines")
    parser.add_argument("--no-title", action="store_true", help="with --slide: leave figure titles out")
    parser.add_argument("--scale", type=float, default=PNG_SCALE, help="PNG pixels per layout pixel")
    parser.add_argument("--lang", choices=list(LANGUAGES), default=DEFAULT_LANGUAGE,
                        help="language of the figures' text: en (default) or zh (中文; PNG/SVG/PDF need a CJK font, "
                             "e.g. Debian's fonts-noto-cjk)")
    parser.add_argument("--set", dest="settings", type=parse_setting, action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a setting for every selected lesson that has it, e.g. head_dim=64, methods=pi,ntk, "
                             "or for one lesson: frequencies.base=5e5; a one-item list needs a trailing comma "
                             "(repeatable; --list-settings shows the keys)")
    parser.add_argument("--list", action="store_true", help="list the figures (lesson:figure) and exit")
    parser.add_argument("--list-settings", action="store_true", help="list each lesson's settings and exit")
    parser.add_argument("--gallery", type=Path, metavar="DIR",
                        help="draw every figure at its defaults, screen and slide, as PNG with an index.html")
    parser.add_argument("--thumbnails", type=Path, metavar="DIR",
                        help="draw each lesson's key figure as a small PNG for the Home page (assets/thumbnails)")
    parser.add_argument("--deck", metavar="NAME",
                        help=f"write a deck: 'tour' (the guided lesson: question, figure and answer slides, "
                             f"speaker notes) or a lesson's name (its figures), one of: {', '.join(deck.deck_names())}")
    parser.add_argument("--no-answers", action="store_true",
                        help="with --deck tour: no answer slides, and no answers in the speaker notes or the summary")
    parser.add_argument("--handout", action="store_true",
                        help="write the guided lesson's handout PDF: each step's question and choices, with room to "
                             "answer")
    return parser


def _deck(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from lessons import deck

    if args.deck is not None and args.deck not in deck.deck_names():
        parser.error(f"there is no deck {args.deck!r}; choose tour or a lesson: {', '.join(deck.deck_names())}.")
    if args.handout and args.deck not in (None, deck.TOUR):
        parser.error("--handout is the guided lesson's (--deck tour), not a lesson's figures.")
    if args.no_answers and args.deck != deck.TOUR:
        parser.error("--no-answers is for --deck tour: a lesson's figure deck has no answers.")
    formats: tuple[str, ...] = ()
    if args.deck is not None:
        try:
            formats = deck.parse_formats(args.format or ",".join(deck.DECK_FORMATS))
        except deck.DeckError as err:
            parser.error(str(err))
    if args.out is None:
        parser.error("--out is required with --deck or --handout: the folder to write into.")
    if (args.handout or set(formats) & {"pptx", "pdf"}) and not browser_available():
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    deck.write(args.deck, formats, args.out, answers=not args.no_answers, handout=args.handout)
    return 0


def _list_settings(lessons: Iterable[Lesson]) -> None:
    for lesson in lessons:
        print(f"{lesson.name}:")
        defaults = lesson.settings()
        for name, control in lesson.settings.controls().items():
            options = f" one of {', '.join(map(str, control.options))}" if control.options else ""
            span = (f" from {control.min_value:g} to {control.max_value:g}"
                    if control.min_value is not None and control.max_value is not None else "")
            print(f"  {name} (URL {control.key}) = {getattr(defaults, name)!r}{options}{span}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with use_language(args.lang):
        return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.deck is not None or args.handout:
        return _deck(parser, args)
    if args.no_answers:
        parser.error("--no-answers goes with --deck tour.")
    try:
        args.format = _formats(args.format or "png")
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    lessons = all_lessons()
    try:
        chosen = selected(lessons, parse_selection(args.only))
    except SettingsError as err:
        parser.error(str(err))
    if args.list:
        for lesson, names in chosen:
            for name in names:
                print(f"{lesson.name}:{name}")
        return 0
    if args.list_settings:
        _list_settings(lesson for lesson, _ in chosen)
        return 0
    if args.thumbnails is not None:
        if not browser_available():
            print(INSTALL_HINT, file=sys.stderr)
            return 2
        thumbnails(args.thumbnails, {lesson.name: lesson for lesson, _ in chosen})
        return 0
    if args.gallery is not None:
        if not browser_available():
            print(INSTALL_HINT, file=sys.stderr)
            return 2
        records = gallery(args.gallery, {lesson.name: lesson for lesson, _ in chosen})
        print(f"wrote {args.gallery / 'index.html'} ({len(records)} figures)")
        return 1 if any(r["error"] for r in records) else 0
    if args.out is None:
        parser.error("--out is required (or use --list, --list-settings or --gallery)")
    style = FigureStyle(slide=args.slide, titles=not args.no_title)
    try:
        settings = settings_for([lesson for lesson, _ in chosen], dict(args.settings))
    except SettingsError as err:
        parser.error(str(err))
    if any(fmt in IMAGE_FORMATS for fmt in args.format) and not browser_available():
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for lesson, names in chosen:
        for name in names:
            try:
                figure = lesson.figure(name, settings[lesson.name], style)
            except ValueError as err:
                parser.error(f"{lesson.name}:{name}: {err}")
            stem = stem_for(lesson, name, settings[lesson.name], style)
            for fmt in args.format:
                path = args.out / f"{stem}.{fmt}"
                path.write_bytes(render(figure, fmt, scale=args.scale))
                print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
