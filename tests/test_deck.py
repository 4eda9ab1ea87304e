"""Decks and handouts (lessons/deck.py): the guided lesson's slides, notes, answers and languages; the PPTX opened
and counted by python-pptx; the HTML deck self-contained; the handout's pages; the CLI's refusals.

Cheap by design: the deck's data is built once per language and answer setting (its figures come from the lessons'
caches); the PPTX and the printed PDFs take stand-in figure images (a drawn figure is what ``figures.export`` tests
already check), so only the PDF printing starts a browser.
"""

from __future__ import annotations

import base64
import html
import io
import re
import unicodedata

import pytest

from figures.export import browser_available
from i18n import _, use_language
from lessons import all_lessons, deck, export, tour

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STEPS = len(tour.available_steps())
# 1 title + per step (question, figure, answer) + 1 summary
SLIDES_WITH_ANSWERS = 2 + 3 * STEPS
SLIDES_WITHOUT_ANSWERS = 2 + 2 * STEPS
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
needs_browser = pytest.mark.skipif(not browser_available(), reason="printing a PDF needs Chrome/Chromium")


@pytest.fixture(scope="module")
def decks() -> dict[tuple[str, bool], deck.Deck]:
    built = {}
    for language in ("en", "zh"):
        with use_language(language):
            for answers in (True, False):
                built[(language, answers)] = deck.tour_deck(answers=answers)
    return built


def stand_ins(one: deck.Deck) -> deck.Drawn:
    return deck.Drawn(png=dict.fromkeys(one.figures, PNG))


@pytest.fixture(scope="module")
def pptx_files(decks) -> dict[tuple[str, bool], object]:
    from pptx import Presentation

    return {key: Presentation(io.BytesIO(deck.pptx_bytes(one, stand_ins(one)))) for key, one in decks.items()}


def test_slide_count_and_order(decks):
    full, bare = decks[("en", True)], decks[("en", False)]
    assert len(full.slides) == SLIDES_WITH_ANSWERS
    assert len(bare.slides) == SLIDES_WITHOUT_ANSWERS
    assert [s.kind for s in full.slides[:4]] == ["title", "question", "figure", "answer"]
    assert full.slides[-1].kind == "summary" and len(full.slides[-1].lines) == STEPS
    assert not any(s.kind == "answer" for s in bare.slides)
    assert list(full.figures) == [step.slug for step in tour.available_steps()]


def test_notes_are_the_step_texts(decks):
    full, bare = decks[("en", True)], decks[("en", False)]
    with use_language("en"):
        texts = [tour.step_text(step) for step in tour.available_steps()]
    for number, text in enumerate(texts):
        notes = full.slides[1 + 3 * number].notes
        assert notes == "\n\n".join([deck.plain_maths(text.text), deck.plain_maths(text.question),
                                     f"Answer: {deck.plain_maths(text.answer)}", deck.plain_maths(text.why)])
        assert "$" not in notes and "\\" not in notes  # no LaTeX left for a slide that cannot typeset it
        # without answers: the same text and question, and no answer anywhere
        assert bare.slides[1 + 2 * number].notes == "\n\n".join([deck.plain_maths(text.text),
                                                                  deck.plain_maths(text.question)])
    answers = [deck.plain_maths(text.answer) for text in texts]
    assert full.slides[-1].lines[0] == f"1. {texts[0].title}: {answers[0]}"
    assert list(bare.slides[-1].lines) == [f"{n}. {text.title}: {deck.plain_maths(text.question)}"
                                           for n, text in enumerate(texts, start=1)]


def test_a_lessons_figures_as_a_deck():
    lesson = all_lessons()["rope_code"]
    with use_language("en"):
        one = deck.make_deck("rope_code")
    assert one.stem == "rope_code_deck" and len(one.slides) == len(lesson.figures) + 2
    assert [s.figure for s in one.slides if s.kind == "figure"] == list(lesson.figures)
    assert [s.notes for s in one.slides if s.kind == "figure"] == [
        deck.plain_maths(lesson.caption(name, lesson.settings(**dict(spec.showcase)) if spec.showcase else None) or "")
        for name, spec in lesson.figures.items()]


def test_answer_slide_names_the_right_choice(decks):
    full = decks[("en", True)]
    for number, step in enumerate(tour.available_steps()):
        slide = full.slides[3 + 3 * number]
        assert slide.kind == "answer" and slide.figure == step.slug
        assert slide.emphasis.startswith(f"Answer: {'ABCD'[step.answer]}. ")
        assert slide.emphasis == f"Answer: {full.slides[2 + 3 * number].lines[step.answer]}"


def test_chinese_deck(decks):
    chinese = decks[("zh", True)]
    with use_language("zh"):
        first = tour.step_text(tour.available_steps()[0])
        assert chinese.title == _(tour.TITLE)
    assert chinese.stem == "tour_deck_lang-zh" and decks[("zh", False)].stem == "tour_deck_no-answers_lang-zh"
    assert chinese.slides[1].notes.startswith(deck.plain_maths(first.text))
    assert re.search(r"[\u4e00-\u9fff]", chinese.slides[1].notes)  # the Chinese step text, not the English
    assert chinese.slides[1].notes != decks[("en", True)].slides[1].notes


@pytest.mark.parametrize(("latex", "plain"), [
    (r"$\theta_i = b^{-2i/d}$", "θᵢ = b^(−2i/d)"),
    (r"$e^{i m \theta} e^{-i n \theta} = e^{i (m-n) \theta}$", "eⁱᵐᶿe⁻ⁱⁿᶿ = eⁱ⁽ᵐ⁻ⁿ⁾ᶿ"),
    (r"$\lvert e^{i r \theta_0} + \dots + e^{i r \theta_{j-1}} \rvert$", "|e^(irθ₀) + … + e^(irθⱼ₋₁)|"),
    (r"$\beta = b^{2/d}$ and $x^{2}$, $5 costs", "β = b^(2/d) and x², $5 costs"),
])
def test_plain_maths(latex, plain):
    assert deck.plain_maths(latex) == plain


def test_pptx_opened_and_counted(decks, pptx_files):
    from pptx.util import Emu

    for key, presentation in pptx_files.items():
        one = decks[key]
        assert len(presentation.slides) == len(one.slides)
        assert round(presentation.slide_width / presentation.slide_height, 3) == round(16 / 9, 3)
        assert Emu(presentation.slide_width).inches == pytest.approx(13.333, abs=0.01)
        for slide, spec in zip(presentation.slides, one.slides, strict=True):
            notes = slide.notes_slide.notes_text_frame.text if slide.has_notes_slide else ""
            assert notes == spec.notes
            texts = " ".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)
            pictures = [shape for shape in slide.shapes if shape.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE
            assert len(pictures) == (spec.figure is not None)
            if spec.kind == "answer":
                assert spec.emphasis in texts
            if spec.kind == "question":
                assert all(line in texts for line in spec.lines)
    counts = {key: len(p.slides) for key, p in pptx_files.items()}
    assert counts == {("en", True): SLIDES_WITH_ANSWERS, ("en", False): SLIDES_WITHOUT_ANSWERS,
                      ("zh", True): SLIDES_WITH_ANSWERS, ("zh", False): SLIDES_WITHOUT_ANSWERS}


def test_html_deck_self_contained(decks):
    page = deck.html_bytes(decks[("zh", True)]).decode("utf-8")
    assert page.count("<section class=\"slide") == SLIDES_WITH_ANSWERS
    assert not re.search(r"<script[^>]+src=", page)
    assert len(re.findall(r"<script\b", page)) == 3  # the figures' JSON, plotly.js (once), the slides' keys
    from plotly.offline import get_plotlyjs

    assert page.count(get_plotlyjs()) == 1  # plotly.js inlined once, not per figure
    ours = page.replace(get_plotlyjs(), "")
    assert not re.search(r"""(src|href|url)[=(]["']?(https?:)?//""", ours) and "@import" not in ours
    assert ours.count("Plotly.newPlot") == 1 and len(ours) < 3_000_000
    assert "ArrowRight" in page and "keydown" in page
    assert '<html lang="zh">' in page


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


@needs_browser
def test_pdf_deck_and_handout_pages():
    PdfReader = pytest.importorskip("pypdf").PdfReader  # noqa: N806 - the class, as pypdf names it

    with use_language("zh"):
        one = deck.tour_deck(answers=False)
        slides = PdfReader(io.BytesIO(deck.pdf_bytes(one, stand_ins(one))))
        chinese = deck.handout_html()
        first_zh = tour.step_text(tour.available_steps()[0])
    with use_language("en"):
        handout = PdfReader(io.BytesIO(deck.handout_pdf()))
        texts = [tour.step_text(step) for step in tour.available_steps()]
    assert len(slides.pages) == SLIDES_WITHOUT_ANSWERS
    width, height = float(slides.pages[0].mediabox.width), float(slides.pages[0].mediabox.height)
    assert (width, height) == pytest.approx((960, 540), abs=1)  # 13.333 × 7.5 in
    # two steps a page, each with its question and every choice
    assert len(handout.pages) == -(-STEPS // deck.HANDOUT_STEPS_PER_PAGE)
    for number, text in enumerate(texts):
        page = _flat(handout.pages[number // deck.HANDOUT_STEPS_PER_PAGE].extract_text())
        assert _flat(deck.plain_maths(text.question)) in page
        assert all(_flat(deck.plain_maths(choice)) in page for choice in text.choices)
        assert _flat(text.answer) in page  # as a choice, not marked
    assert html.escape(first_zh.question) in chinese and first_zh.question != texts[0].question


@pytest.mark.parametrize("argv", [
    ["--deck", "nowhere", "--out", "x"],
    ["--deck", "tour", "--format", "pptx,docx", "--out", "x"],
    ["--deck", "tour"],
    ["--deck", "decay", "--no-answers", "--out", "x"],
    ["--deck", "decay", "--handout", "--out", "x"],
    ["--no-answers", "--out", "x"],
    ["--format", "pptx", "--out", "x"],
])
def test_cli_refuses_bad_input(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        export.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("python -m figures.export: error: ") and len(error) > 50
    assert not (tmp_path / "x").exists()


def test_make_deck_names():
    with pytest.raises(deck.DeckError, match="tour"):
        deck.make_deck("nowhere")
    with pytest.raises(deck.DeckError, match="pptx, pdf, html"):
        deck.parse_formats("pptx,odp")
    assert deck.parse_formats("PPTX, html,pptx") == ("pptx", "html")
