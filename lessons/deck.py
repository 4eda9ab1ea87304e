"""Decks and handouts: the guided lesson (or one lesson's figures) as PPTX, PDF and a self-contained HTML deck,
and a handout PDF with each step's question and choices and room to answer.

    python -m figures.export --deck tour --format pptx,pdf,html [--lang zh] [--no-answers] --out DIR
    python -m figures.export --deck frequencies --format pptx --out DIR     # a lesson's figures as a deck
    python -m figures.export --deck tour --handout --out DIR                 # the handout PDF

A deck is data first (``tour_deck``, ``lesson_deck``: slides with their texts, notes and figure), then written
in each format from figures drawn once: every figure is drawn once as a 1920 × 1080 PNG, for the PPTX and the PDF
alike, all on the export browser's tabs. The PDF and the handout are HTML printed on a tab of that same
headless Chromium (so Chinese uses the system's CJK fonts). The HTML deck carries plotly.js
once and every figure as interactive plotly JSON; it opens offline, and ←/→ (or space, Page Up/Down, Home/End)
move between slides.

Step texts carry inline LaTeX for the page (``$\\theta_i = b^{-2i/d}$``); slides, notes and handouts have no
typesetting, so ``plain_maths`` writes it in Unicode (θᵢ = b^(−2i/d)).

No Streamlit here; ``ui/tour.py`` calls ``build`` for the lesson page's download.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import html
import io
import json
import logging
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import plotly.graph_objects as go

from figures.export import BrowserNotFound, find_browser, render_files, start_renderer
from figures.export import print_pdf as export_print_pdf  # lessons/deck.print_pdf adds a fallback
from i18n import N_, _, current_language
from lessons import all_lessons, tour
from lessons.base import SLIDE, Lesson

DECK_FORMATS = ("pptx", "pdf", "html")
TOUR = "tour"
PNG_SCALE = 1.5  # a 1280 × 720 slide figure as a 1920 × 1080 PNG: sharp on a full-HD projector
PRINT_TIMEOUT_S = 120.0
log = logging.getLogger(__name__)
CJK_FONTS = "'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', 'Microsoft YaHei', 'PingFang SC'"
FONT_STACK = f"Inter, 'Helvetica Neue', Arial, {CJK_FONTS}, sans-serif"
PPTX_LATIN_FONT = "Arial"
PPTX_CJK_FONT = "Noto Sans CJK SC"


class DeckError(ValueError):
    """A deck that cannot be made as asked (an unknown deck or format); the message says what can."""


@dataclasses.dataclass(frozen=True)
class Slide:
    """One slide. ``kind``: title, question, figure, answer or summary. ``figure`` names an entry of the deck's
    figures; ``lines`` are the slide's own text (the choices, a summary's items); ``notes`` the speaker notes."""

    kind: str
    title: str
    body: str = ""
    lines: tuple[str, ...] = ()
    figure: str | None = None
    emphasis: str = ""  # the answer, on an answer slide
    notes: str = ""
    label: str = ""  # a short corner label: "3 / 12"


@dataclasses.dataclass(frozen=True)
class Deck:
    name: str  # "tour" or a lesson's name
    title: str
    slides: tuple[Slide, ...]
    figures: Mapping[str, go.Figure]  # slide-style figures, each drawn once
    language: str
    answers: bool = True

    @property
    def stem(self) -> str:
        """The files' name without extension: ``tour_deck``, ``tour_deck_no-answers_lang-zh``."""
        parts = [self.name, "deck"]
        if not self.answers:
            parts.append("no-answers")
        if self.language != "en":
            parts.append(f"lang-{self.language}")
        return "_".join(parts)


# ---- maths in plain text ---------------------------------------------------------------------------

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "theta": "θ", "lambda": "λ", "mu": "μ",
          "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω", "Theta": "Θ", "Lambda": "Λ"}
_COMMANDS = {**_GREEK, "dots": "…", "cdots": "⋯", "ldots": "…", "cdot": "·", "times": "×", "lvert": "|",
             "rvert": "|", "left": "", "right": "", "le": "≤", "ge": "≥", "approx": "≈", "infty": "∞",
             ",": "\u2009", ";": " ", "!": "", " ": " ", "quad": " ", "ln": "ln", "log": "log", "exp": "exp"}
_SUPER = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzθ′'",
                  "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᶿ′′", strict=True))
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ", strict=True))
_COMMAND = re.compile(r"\\([A-Za-z]+|[,;! ])")
_MATH = re.compile(r"\$([^$]+)\$")


def _group(text: str, start: int) -> tuple[str, int]:
    """The argument of ``^``/``_`` at ``start``: a ``{...}`` group or one character; and where it ends."""
    if start < len(text) and text[start] == "{":
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                return text[start + 1:end], end + 1
        return text[start + 1:], len(text)
    return text[start:start + 1], start + 1


def _script(inner: str, table: dict[str, str], mark: str) -> str:
    inner = _latex(inner, top=False).replace("−", "-")
    if inner and all(ch in table for ch in inner):
        return "".join(table[ch] for ch in inner)
    inner = inner.replace("-", "−")
    return f"{mark}{inner}" if len(inner) == 1 else f"{mark}({inner})"


def _latex(source: str, *, top: bool = True) -> str:
    """One formula's LaTeX in Unicode text (spaces as TeX sets them: none, but around = and + at the top level)."""
    text = _COMMAND.sub(lambda match: _COMMANDS.get(match.group(1), match.group(1)), source)
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char in "^_":
            inner, index = _group(text, index + 1)
            out.append(_script(inner, _SUPER if char == "^" else _SUB, char))
            continue
        if char not in "{} ":
            out.append(f" {char} " if top and char in "=+" else char)
        index += 1
    return "".join(out).replace("-", "−").strip()


def plain_maths(text: str) -> str:
    """``text`` with each inline ``$...$`` formula written in Unicode: ``$\\theta_i = b^{-2i/d}$`` -> θᵢ = b^(−2i/d)."""
    return _MATH.sub(lambda match: _latex(match.group(1)), text)


# ---- the decks as data ----------------------------------------------------------------------------


def deck_names() -> tuple[str, ...]:
    return (TOUR, *all_lessons())


def _letter(index: int) -> str:
    return "ABCD"[index]


def _choices(choices: Iterable[str]) -> tuple[str, ...]:
    return tuple(f"{_letter(index)}. {choice}" for index, choice in enumerate(choices))


def step_notes(text: tour.StepText, *, answers: bool) -> str:
    """A step's speaker notes: its text, and with answers the answer and why the figure settles it."""
    notes = [plain_maths(text.text), plain_maths(text.question)]
    if answers:
        notes += [_("Answer: {answer}").format(answer=plain_maths(text.answer)), plain_maths(text.why)]
    return "\n\n".join(notes)


def tour_deck(*, answers: bool = True) -> Deck:
    """The guided lesson as a deck, in the current language: a title slide; per step the question (its text and
    choices), the figure under the question, and (with ``answers``) the answer with the figure; a summary."""
    steps = tour.available_steps()
    title = _(tour.TITLE)
    slides = [Slide("title", title, _("A guided lesson in {count} steps: predict, then see the figure that settles "
                                      "it.").format(count=len(steps)),
                    notes=_("Each step: read the question, let the class vote, then show the figure and the answer."))]
    figures: dict[str, go.Figure] = {}
    summary = []
    for number, step in enumerate(steps, start=1):
        text = tour.step_text(step)
        figures[step.slug] = tour.step_figure(step, SLIDE)
        label = _("{number} / {count}").format(number=number, count=len(steps))
        heading = f"{label} · {text.title}"
        notes = step_notes(text, answers=answers)
        question = plain_maths(text.question)
        choices = _choices(plain_maths(choice) for choice in text.choices)
        slides.append(Slide("question", heading, plain_maths(text.text) + "\n\n" + question, choices, notes=notes,
                            label=label))
        slides.append(Slide("figure", heading, question, choices, figure=step.slug, notes=notes, label=label))
        if answers:
            answer = f"{_letter(step.answer)}. {plain_maths(text.answer)}"
            slides.append(Slide("answer", heading, plain_maths(text.why), figure=step.slug, notes=notes,
                                emphasis=_("Answer: {answer}").format(answer=answer), label=label))
            summary.append(_("{number}. {title}: {answer}").format(number=number, title=text.title,
                                                                  answer=plain_maths(text.answer)))
        else:
            summary.append(_("{number}. {title}: {question}").format(number=number, title=text.title,
                                                                    question=question))
    slides.append(Slide("summary", _("Summary"), "", tuple(summary),
                        notes=_("What each step showed, one line each.")))
    return Deck(TOUR, title, tuple(slides), figures, current_language(), answers)


def lesson_deck(lesson: Lesson) -> Deck:
    """One lesson's figures at their defaults (or the gallery's showcase settings) as a deck: a title slide, one
    slide per figure (its caption in the speaker notes) and a closing slide listing them."""
    title = _(lesson.title)
    slides = [Slide("title", title, _("{count} figures from the explorer's “{title}” page.").format(
        count=len(lesson.figures), title=title))]
    figures: dict[str, go.Figure] = {}
    names = []
    for number, (name, spec) in enumerate(lesson.figures.items(), start=1):
        # at the lesson's defaults, or where those show nothing worth seeing, where the gallery draws it
        shown = lesson.settings(**dict(spec.showcase)) if spec.showcase else None
        figures[name] = lesson.figure(name, shown, SLIDE)
        caption = lesson.caption(name, shown) or ""
        label = _("{number} / {count}").format(number=number, count=len(lesson.figures))
        slides.append(Slide("figure", f"{label} · {_(spec.title)}", "", figure=name,
                            notes=plain_maths(caption), label=label))
        names.append(_(spec.title))
    slides.append(Slide("summary", _("Summary"), "", tuple(f"{n}. {t}" for n, t in enumerate(names, start=1))))
    return Deck(lesson.name, title, tuple(slides), figures, current_language())


def make_deck(name: str, *, answers: bool = True) -> Deck:
    """The deck called ``name`` ("tour" or a lesson's name), in the current language."""
    if name == TOUR:
        return tour_deck(answers=answers)
    lessons = all_lessons()
    if name not in lessons:
        raise DeckError(_("There is no deck “{name}”; choose one of: {names}.").format(
            name=name, names=", ".join(deck_names())))
    return lesson_deck(lessons[name])


def parse_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    bad = [fmt for fmt in formats if fmt not in DECK_FORMATS]
    if bad or not formats:
        raise DeckError(_("A deck is written as {formats} (comma-separated), not “{text}”.").format(
            formats=", ".join(DECK_FORMATS), text=text))
    return formats


# ---- drawing the figures once ---------------------------------------------------------------------


@dataclasses.dataclass
class Drawn:
    """The deck's figures drawn: figure name -> PNG bytes (1920 × 1080), shared by the PPTX and the PDF."""

    png: dict[str, bytes] = dataclasses.field(default_factory=dict)


def draw(deck: Deck) -> Drawn:
    """Every figure of the deck as a PNG, each drawn once, all on the export browser's tabs together."""
    named = list(deck.figures.items())
    files = render_files(named, "png", scale=PNG_SCALE)
    return Drawn({name: files[f"{name}.png"] for name, _figure in named})


# ---- PPTX ----------------------------------------------------------------------------------------

SLIDE_W_IN, SLIDE_H_IN = 13.333, 7.5
INK, MUTED, ACCENT = (0x22, 0x22, 0x22), (0x55, 0x55, 0x55), (0x1F, 0x5F, 0xA8)


def _pptx_text(slide, box: tuple[float, float, float, float], paragraphs: Iterable[tuple[str, float, bool, tuple]],
               *, anchor: str = "top") -> None:
    from pptx.dml.color import RGBColor
    from pptx.enum.text import MSO_ANCHOR
    from pptx.oxml.ns import qn
    from pptx.util import Inches, Pt

    left, top, width, height = box
    frame = slide.shapes.add_textbox(Inches(left), Inches(top), Inches(width), Inches(height)).text_frame
    frame.word_wrap = True
    frame.vertical_anchor = {"top": MSO_ANCHOR.TOP, "middle": MSO_ANCHOR.MIDDLE}[anchor]
    first = True
    for text, size, bold, colour in paragraphs:
        paragraph = frame.paragraphs[0] if first else frame.add_paragraph()
        first = False
        paragraph.space_after = Pt(size * 0.45)
        run = paragraph.add_run()
        run.text = text
        run.font.size, run.font.bold = Pt(size), bold
        run.font.color.rgb = RGBColor(*colour)
        run.font.name = PPTX_LATIN_FONT
        properties = run._r.get_or_add_rPr()
        properties.append(properties.makeelement(qn("a:ea"), {"typeface": PPTX_CJK_FONT}))


def _fit(text: str, width_in: float, height_in: float, largest: float, smallest: float = 14) -> float:
    """The largest point size (from ``largest`` down) at which ``text`` fits the box, estimated from character
    widths (Chinese characters count as wide)."""
    from figures.text import text_width

    size = largest
    while size > smallest:
        width_pt = width_in * 72
        lines = sum(max(1, -(-int(text_width(part, size)) // int(width_pt * 0.92))) for part in text.split("\n"))
        if lines * size * 1.45 <= height_in * 72:
            break
        size -= 1
    return size


def pptx_bytes(deck: Deck, drawn: Drawn) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    presentation.slide_width, presentation.slide_height = Inches(SLIDE_W_IN), Inches(SLIDE_H_IN)
    blank = presentation.slide_layouts[6]
    margin = 0.5
    for spec in deck.slides:
        slide = presentation.slides.add_slide(blank)
        width = SLIDE_W_IN - 2 * margin
        if spec.kind == "title":
            _pptx_text(slide, (margin + 0.5, 2.2, width - 1, 3.2),
                       [(spec.title, 44, True, INK), (spec.body, 24, False, MUTED)], anchor="middle")
        elif spec.kind == "question":
            _pptx_text(slide, (margin, 0.3, width, 0.8), [(spec.title, 30, True, ACCENT)])
            body = spec.body + "\n" + "\n".join(spec.lines)
            size = _fit(body, width, 5.9, 26, 16)
            setup, _sep, question = spec.body.rpartition("\n\n")
            _pptx_text(slide, (margin, 1.25, width, 5.9),
                       [(setup, size, False, INK), (question, size + 2, True, INK)]
                       + [(line, size + 2, False, INK) for line in spec.lines])
        elif spec.kind == "figure":
            header = spec.body or spec.title
            size = _fit(header, width, 0.75, 22, 14)
            _pptx_text(slide, (margin, 0.12, width, 0.8), [(header, size, bool(spec.body), INK)])
            figure_h = SLIDE_H_IN - 1.0 - 0.1
            figure_w = figure_h * 16 / 9
            slide.shapes.add_picture(io.BytesIO(drawn.png[spec.figure]), Inches((SLIDE_W_IN - figure_w) / 2),
                                     Inches(1.0), Inches(figure_w), Inches(figure_h))
        elif spec.kind == "answer":
            _pptx_text(slide, (margin, 0.3, width, 0.8), [(spec.title, 30, True, ACCENT)])
            figure_w = 7.4
            slide.shapes.add_picture(io.BytesIO(drawn.png[spec.figure]), Inches(margin), Inches(1.5),
                                     Inches(figure_w), Inches(figure_w * 9 / 16))
            side = width - figure_w - 0.3
            answer_size = _fit(spec.emphasis, side, 1.6, 26, 18)
            why_size = _fit(spec.body, side, 5.9 - 1.8, 20, 13)
            _pptx_text(slide, (margin + figure_w + 0.3, 1.3, side, 5.9),
                       [(spec.emphasis, answer_size, True, ACCENT), (spec.body, why_size, False, INK)])
        else:  # summary
            _pptx_text(slide, (margin, 0.3, width, 0.8), [(spec.title, 32, True, ACCENT)])
            size = _fit("\n".join(spec.lines), width, 6.1, 20, 11)
            _pptx_text(slide, (margin, 1.2, width, 6.1), [(line, size, False, INK) for line in spec.lines])
        if spec.notes:
            slide.notes_slide.notes_text_frame.text = spec.notes
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


# ---- HTML slides: the PDF (printed) and the interactive deck ----------------------------------------

_STYLE = """
* { box-sizing: border-box; }
body { margin: 0; font-family: FONTS; color: #222; background: #fff; }
.slide { position: relative; width: 13.333in; height: 7.5in; padding: 0.3in 0.5in; overflow: hidden;
         page-break-after: always; break-after: page; display: flex; flex-direction: column; }
.slide:last-child { page-break-after: auto; break-after: auto; }
h1 { font-size: 30pt; color: #1f5fa8; margin: 0 0 0.2in; line-height: 1.2; }
.title { justify-content: center; padding: 0 1in; }
.title h1 { font-size: 44pt; color: #222; } .title p { font-size: 24pt; color: #555; }
.body { font-size: var(--size, 22pt); line-height: 1.4; }
.body p { margin: 0 0 0.5em; } .question { font-weight: bold; }
ul.choices { list-style: none; padding: 0; margin: 0; } ul.choices li { margin: 0 0 0.35em; }
.figure-head { font-size: var(--size, 20pt); font-weight: bold; margin: -0.15in 0 0.05in; line-height: 1.3; }
.figure-head span { font-weight: normal; margin-right: 1.2em; }
.fig { flex: 1; min-height: 0; display: flex; justify-content: center; }
.fig img, .fig .plot { height: 100%; aspect-ratio: 16 / 9; max-width: 100%; }
.answer { display: flex; gap: 0.3in; flex: 1; min-height: 0; }
.answer .fig { flex: 0 0 7.4in; align-items: flex-start; } .answer .fig img, .answer .fig .plot { width: 7.4in; height: auto; }
.answer .emph { font-size: var(--emph, 26pt); font-weight: bold; color: #1f5fa8; margin: 0 0 0.3em; }
.answer .why { font-size: var(--size, 20pt); line-height: 1.4; }
.summary ol { list-style: none; padding: 0; margin: 0; font-size: var(--size, 20pt); line-height: 1.35; }
.label { position: absolute; right: 0.3in; bottom: 0.15in; font-size: 12pt; color: #888; }
""".replace("FONTS", FONT_STACK)

_PRINT_STYLE = "@page { size: 13.333in 7.5in; margin: 0; }"

# The interactive deck: one slide on screen at a time, scaled to the window at 16:9 (1 --u is 1 % of its width).
_SCREEN_STYLE = """
html, body { height: 100%; background: #333; overflow: hidden; }
:root { --u: min(1vw, 1.7778vh); }
.slide { display: none; position: absolute; left: 50%; top: 50%; transform: translate(-50%, -50%);
         width: calc(100 * var(--u)); height: calc(56.25 * var(--u)); padding: calc(2.2 * var(--u)) calc(3.7 * var(--u));
         background: #fff; }
.slide.on { display: flex; }
h1 { font-size: calc(3.1 * var(--u)); } .title h1 { font-size: calc(4.6 * var(--u)); }
.title p { font-size: calc(2.5 * var(--u)); } .title { padding: 0 calc(7 * var(--u)); }
.body { font-size: calc(var(--s, 2.3) * var(--u)); }
.figure-head { font-size: calc(var(--s, 2.1) * var(--u)); margin: calc(-1.1 * var(--u)) 0 calc(0.4 * var(--u)); }
.answer { gap: calc(0.8 * var(--u)); flex-direction: column-reverse; } .answer .fig { flex: 1 1 auto; min-height: 0; }
.answer .fig .plot { height: 100%; width: auto; } .answer p { margin: 0 0 calc(0.4 * var(--u)); }
.answer .emph { font-size: calc(var(--e, 2.7) * var(--u)); } .answer .why { font-size: calc(var(--s, 2.1) * var(--u)); }
.summary ol { font-size: calc(var(--s, 2.1) * var(--u)); }
.label { font-size: calc(1.2 * var(--u)); right: calc(2.2 * var(--u)); bottom: calc(1.1 * var(--u)); }
.hint { position: fixed; left: 8px; bottom: 6px; color: #bbb; font: 12px sans-serif; }
"""

_SCRIPT = """
const slides = [...document.querySelectorAll('.slide')];
const figures = JSON.parse(document.getElementById('figures').textContent);
let current = 0;
function draw(slide) {
  for (const div of slide.querySelectorAll('.plot')) {
    if (div.dataset.drawn) { Plotly.Plots.resize(div); continue; }
    const figure = figures[div.dataset.figure];
    const layout = Object.assign({}, figure.layout, {width: null, height: null, autosize: true});
    Plotly.newPlot(div, figure.data, layout, {responsive: true, displaylogo: false}).then(() => {
      if (figure.frames) Plotly.addFrames(div, figure.frames);
    });
    div.dataset.drawn = '1';
  }
}
function show(index) {
  current = Math.max(0, Math.min(slides.length - 1, index));
  slides.forEach((slide, i) => slide.classList.toggle('on', i === current));
  draw(slides[current]);
  if (location.hash !== '#' + (current + 1)) history.replaceState(null, '', '#' + (current + 1));
}
document.addEventListener('keydown', (event) => {
  const keys = {ArrowRight: 1, ArrowDown: 1, PageDown: 1, ' ': 1, Enter: 1, ArrowLeft: -1, ArrowUp: -1, PageUp: -1};
  if (event.key in keys) { show(current + keys[event.key]); event.preventDefault(); }
  else if (event.key === 'Home') show(0);
  else if (event.key === 'End') show(slides.length - 1);
});
document.addEventListener('click', (event) => {
  if (event.target.closest('.plot')) return;
  show(current + (event.clientX > window.innerWidth / 3 ? 1 : -1));
});
show((parseInt(location.hash.slice(1), 10) || 1) - 1);
"""


def _esc(text: str) -> str:
    return html.escape(text)


def _em(size: float) -> str:
    """A point size as the interactive deck's unit (1 --u is 1 % of the slide's width, 13.333 in = 960 pt)."""
    return f"{size / 9.6:.2f}"


def _slide_html(spec: Slide, figure_html) -> str:
    width = SLIDE_W_IN - 1.0
    label = f'<div class="label">{_esc(spec.label)}</div>' if spec.label else ""
    if spec.kind == "title":
        return (f'<section class="slide title"><h1>{_esc(spec.title)}</h1><p>{_esc(spec.body)}</p>'
                f'</section>')
    if spec.kind == "question":
        setup, _sep, question = spec.body.rpartition("\n\n")
        size = _fit(spec.body + "\n" + "\n".join(spec.lines), width, 5.9, 26, 16)
        choices = "".join(f"<li>{_esc(line)}</li>" for line in spec.lines)
        return (f'<section class="slide"><h1>{_esc(spec.title)}</h1>'
                f'<div class="body" style="--size:{size}pt;--s:{_em(size)}"><p>{_esc(setup)}</p>'
                f'<p class="question">{_esc(question)}</p><ul class="choices">{choices}</ul></div>{label}</section>')
    if spec.kind == "figure":
        header = spec.body or spec.title
        size = _fit(header, width, 0.75, 22, 14)
        return (f'<section class="slide"><div class="figure-head" style="--size:{size}pt;--s:{_em(size)}">'
                f'{_esc(header)}</div><div class="fig">{figure_html(spec.figure)}</div>{label}</section>')
    if spec.kind == "answer":
        side = width - 7.4 - 0.3
        emph, why = _fit(spec.emphasis, side, 1.6, 26, 18), _fit(spec.body, side, 4.1, 20, 13)
        return (f'<section class="slide"><h1>{_esc(spec.title)}</h1><div class="answer">'
                f'<div class="fig">{figure_html(spec.figure)}</div><div>'
                f'<p class="emph" style="--emph:{emph}pt;--e:{_em(emph)}">{_esc(spec.emphasis)}</p>'
                f'<p class="why" style="--size:{why}pt;--s:{_em(why)}">{_esc(spec.body)}</p></div></div>{label}'
                f'</section>')
    size = _fit("\n".join(spec.lines), width, 6.1, 20, 11)
    items = "".join(f"<li>{_esc(line)}</li>" for line in spec.lines)
    return (f'<section class="slide summary"><h1>{_esc(spec.title)}</h1>'
            f'<ol style="--size:{size}pt;--s:{_em(size)}">{items}</ol></section>')


def _page(deck: Deck, body: str, style: str, script: str = "") -> str:
    return (f'<!doctype html><html lang="{deck.language}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_esc(deck.title)}</title><style>{style}</style></head><body>{body}{script}</body></html>')


def html_bytes(deck: Deck) -> bytes:
    """The interactive deck: one file, plotly.js inlined once, every figure as plotly JSON drawn when its slide
    shows. Opens offline; ←/→ move between slides."""
    from plotly.offline import get_plotlyjs

    body = "".join(_slide_html(spec, lambda name: f'<div class="plot" data-figure="{_esc(name)}"></div>')
                   for spec in deck.slides)
    figures = {name: json.loads(figure.to_json()) for name, figure in deck.figures.items()}
    data = json.dumps(figures, separators=(",", ":")).replace("</", "<\\/")
    hint = _esc(_("← → to move between slides"))
    script = (f'<div class="hint">{hint}</div><script id="figures" type="application/json">{data}</script>'
              f'<script>{get_plotlyjs()}</script><script>{_SCRIPT}</script>')
    return _page(deck, body, _STYLE + _SCREEN_STYLE, script).encode("utf-8")


def print_html(deck: Deck, drawn: Drawn) -> str:
    """The slides as print-ready HTML, each figure its 1920 × 1080 PNG (144 dpi on the 13.333 in page)."""
    def figure_html(name: str) -> str:
        encoded = base64.b64encode(drawn.png[name]).decode("ascii")
        return f'<img src="data:image/png;base64,{encoded}" alt="">'

    return _page(deck, "".join(_slide_html(spec, figure_html) for spec in deck.slides), _STYLE + _PRINT_STYLE)


def print_pdf(page: str) -> bytes:
    """An HTML page printed to PDF on a tab of the browser that draws the figures (no second browser to start);
    where that fails, by a headless Chromium of its own."""
    try:
        return export_print_pdf(page)
    except BrowserNotFound:
        raise
    except Exception:  # noqa: BLE001 - a browser whose devtools cannot print: a Chromium of its own
        log.exception("printing on the export browser failed; starting a Chromium to print")
    browser = find_browser()
    if browser is None:
        raise BrowserNotFound()
    with tempfile.TemporaryDirectory(prefix="deck_") as folder:
        source, target = Path(folder) / "deck.html", Path(folder) / "deck.pdf"
        source.write_text(page, encoding="utf-8")
        command = [browser, "--headless", "--disable-gpu", "--no-pdf-header-footer", "--hide-scrollbars",
                   f"--user-data-dir={Path(folder) / 'profile'}", f"--print-to-pdf={target}", source.as_uri()]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.insert(1, "--no-sandbox")
        subprocess.run(command, check=True, capture_output=True, timeout=PRINT_TIMEOUT_S)
        return target.read_bytes()


def pdf_bytes(deck: Deck, drawn: Drawn) -> bytes:
    return print_pdf(print_html(deck, drawn))


# ---- the handout --------------------------------------------------------------------------------

HANDOUT_STEPS_PER_PAGE = 2
_HANDOUT_STYLE = """
@page { size: A4; margin: 16mm 18mm; }
body { font-family: FONTS; color: #222; font-size: 11pt; line-height: 1.45; margin: 0; }
h1 { font-size: 18pt; margin: 0 0 4mm; } .intro { color: #555; margin: 0 0 6mm; }
.step { height: 112mm; overflow: hidden; border-top: 1px solid #999; padding-top: 3mm; }
.step.break { page-break-after: always; break-after: page; }
h2 { font-size: 13pt; margin: 0 0 2mm; } .question { font-weight: bold; margin: 2mm 0; }
ul { list-style: none; padding: 0; margin: 0 0 3mm; } li { margin: 1mm 0; }
li::before { content: "☐ "; font-size: 13pt; }
.lines { border-bottom: 1px solid #bbb; height: 8mm; } .write { color: #777; font-size: 9pt; margin-top: 2mm; }
""".replace("FONTS", FONT_STACK)


def handout_html() -> str:
    """Each step's text, question and choices (boxes to tick) with lines to write on; two steps a page."""
    steps = tour.available_steps()
    intro = _("Tick your answer before the figure is shown, then note what the figure shows.")
    write_here = _("What the figure shows:")
    parts = [f"<h1>{_esc(_(tour.TITLE))}</h1><p class='intro'>{_esc(intro)}</p>"]
    for number, step in enumerate(steps, start=1):
        text = tour.step_text(step)
        last_on_page = number % HANDOUT_STEPS_PER_PAGE == 0 and number < len(steps)
        choices = "".join(f"<li>{_esc(_letter(i))}. {_esc(plain_maths(choice))}</li>"
                          for i, choice in enumerate(text.choices))
        lines = "".join("<div class='lines'></div>" for _line in range(4))
        parts.append(f"<div class='step{' break' if last_on_page else ''}'>"
                     f"<h2>{number}. {_esc(text.title)}</h2><p>{_esc(plain_maths(text.text))}</p>"
                     f"<p class='question'>{_esc(plain_maths(text.question))}</p><ul>{choices}</ul>"
                     f"<div class='write'>{_esc(write_here)}</div>{lines}</div>")
    return (f'<!doctype html><html lang="{current_language()}"><head><meta charset="utf-8">'
            f'<title>{_esc(_(tour.TITLE))}</title><style>{_HANDOUT_STYLE}</style></head><body>{"".join(parts)}'
            f'</body></html>')


def handout_pdf() -> bytes:
    return print_pdf(handout_html())


def handout_stem() -> str:
    return "tour_handout" + ("" if current_language() == "en" else f"_lang-{current_language()}")


# ---- everything at once ---------------------------------------------------------------------------


def build(deck: Deck, formats: Iterable[str]) -> dict[str, bytes]:
    """``{"<stem>.<fmt>": bytes}`` for each format. The figures are drawn once (PNG) for the PPTX and the PDF; the
    PDF prints on a tab of the export browser while the PPTX is put together."""
    formats = tuple(formats)
    files: dict[str, bytes] = {}
    drawn = draw(deck) if {"pptx", "pdf"} & set(formats) else Drawn()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        printing = pool.submit(pdf_bytes, deck, drawn) if "pdf" in formats else None
        if "pptx" in formats:
            files[f"{deck.stem}.pptx"] = pptx_bytes(deck, drawn)
        if "html" in formats:
            files[f"{deck.stem}.html"] = html_bytes(deck)
        if printing is not None:
            files[f"{deck.stem}.pdf"] = printing.result()
    return {f"{deck.stem}.{fmt}": files[f"{deck.stem}.{fmt}"] for fmt in formats}


def _start_quietly() -> None:
    try:
        start_renderer()
    except Exception:  # noqa: BLE001 - the first render starts it again and reports what fails
        pass


def write(name: str, formats: Iterable[str], out: Path, *, answers: bool = True, handout: bool = False,
          log=print) -> list[Path]:
    """The CLI's work: the deck ``name`` in ``formats`` (and the handout) into ``out``; the paths written."""
    start = time.perf_counter()
    if set(formats) & {"pptx", "pdf"}:  # the browser that draws the figures starts while they are computed
        threading.Thread(target=_start_quietly, name="deck-renderer", daemon=True).start()
    files: dict[str, bytes] = {}
    if formats:
        files.update(build(make_deck(name, answers=answers), formats))
    if handout:
        files[f"{handout_stem()}.pdf"] = handout_pdf()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, data in files.items():
        path = out / file
        path.write_bytes(data)
        written.append(path)
        log(path)
    log(f"({time.perf_counter() - start:.1f} s)")
    return written


DOWNLOAD_FORMATS = {"pptx": N_("PowerPoint (PPTX)"), "pdf": N_("PDF"), "html": N_("HTML (interactive, offline)"),
                    "handout": N_("Handout (PDF, questions only)")}
MIME = {"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "pdf": "application/pdf", "html": "text/html", "handout": "application/pdf"}


def download(fmt: str, *, answers: bool) -> tuple[str, bytes]:
    """One download for the lesson page: (file name, bytes) of the tour deck in ``fmt``, or the handout."""
    if fmt == "handout":
        return f"{handout_stem()}.pdf", handout_pdf()
    if fmt not in DECK_FORMATS:
        raise DeckError(f"unknown deck format {fmt!r}")
    files = build(tour_deck(answers=answers), (fmt,))
    return next(iter(files.items()))
