"""Words a student can cite: the References registry, the Glossary, and no page citing documents a reader
cannot open (the design notes the app was built from are not sources)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lessons import all_lessons
from references import REFERENCES, cite, full_entry
from references.glossary import SYMBOLS
from tests.conftest import ROOT, drawn_charts, run_page
from ui.pages import available_pages

UNCITABLE = re.compile(r"\bseeds?\s*0\d\d\b|\bseed documents?\b|\bthe notes\b|\bstudy notes\b|\bsource notes\b|"
                       r"\bsource documents?\b|\bsource write-?ups?\b", re.IGNORECASE)
CITE_CALL = re.compile(r"""\bcite\(\s*["']([a-z0-9_]+)["']""")


def test_registry_has_enough_openable_sources():
    assert len(REFERENCES) >= 20
    with_arxiv = [r for r in REFERENCES.values() if r.arxiv]
    assert len(with_arxiv) >= 12
    for reference in REFERENCES.values():
        assert reference.url.startswith("https://"), reference.key
        assert reference.title and reference.authors and reference.year >= 1900
        if reference.arxiv:
            assert re.fullmatch(r"\d{4}\.\d{4,5}", reference.arxiv)
            assert reference.url == f"https://arxiv.org/abs/{reference.arxiv}"
        assert reference.url in full_entry(reference.key)


def test_every_cited_key_exists():
    cited = set()
    for path in ROOT.rglob("*.py"):
        if ".git" in path.parts or "tests" in path.parts:
            continue
        cited.update(CITE_CALL.findall(path.read_text(encoding="utf-8")))
    missing = sorted(cited - set(REFERENCES))
    assert not missing, f"cite() of unknown sources: {missing}"
    assert cite("yarn", "§3.2") == "[Peng et al. 2023, §3.2](https://arxiv.org/abs/2309.00071)"


def test_glossary_symbols_name_real_lessons():
    lessons = all_lessons()
    anchors = [s.anchor for s in SYMBOLS]
    assert len(anchors) == len(set(anchors)) and all(re.fullmatch(r"[a-z_A-Z]+", a) for a in anchors)
    expected = {"θᵢ", "b", "d", "L", "L′", "s", "λᵢ", "r", "α, β", "γ(r)", "m, n"}
    assert expected <= {s.symbol for s in SYMBOLS}
    for symbol in SYMBOLS:
        assert symbol.lessons
        unknown = [name for name in symbol.lessons if name not in lessons]
        assert not unknown or set(unknown) <= PENDING_LESSONS, (symbol.anchor, unknown)


# Lessons other work is still adding; the Glossary may name them before they land.
PENDING_LESSONS = {"check", "plan", "compare", "rope_code", "lineage", "training", "family", "decay",
                   "beta_base", "precision"}


def test_glossary_and_references_pages():
    glossary = run_page("app_pages/glossary.py")
    assert not glossary.exception
    assert [h.value for h in glossary.subheader][: len(SYMBOLS)] == [
        f"{s.symbol} · {s.name}" for s in SYMBOLS]
    assert len(glossary.latex) == len(SYMBOLS)
    references = run_page("app_pages/sources.py")
    assert not references.exception
    text = " ".join(m.value for m in references.markdown)
    for reference in REFERENCES.values():
        assert reference.url in text


def visible_strings(at) -> list[str]:
    """Everything a reader of an AppTest run sees as text: prose, headings, captions, labels, help, options."""
    texts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success",
                 "latex", "code", "expander", "tab"):
        for element in at.get(kind):
            texts.append(str(getattr(element, "value", "") or getattr(element, "label", "") or ""))
    for kind in ("button", "slider", "select_slider", "selectbox", "radio", "multiselect", "toggle", "checkbox",
                 "number_input", "text_area", "text_input", "download_button"):
        for element in at.get(kind):
            texts.append(str(getattr(element, "label", "")))
            texts.append(str(getattr(getattr(element, "proto", None), "help", "") or ""))
            for option in getattr(getattr(element, "proto", None), "options", []) or []:
                texts.append(str(option))
    for chart in drawn_charts(at):
        texts.append(json.dumps(chart.figure, ensure_ascii=False))
    return texts


@pytest.mark.parametrize("info", available_pages(), ids=[p.title for p in available_pages()])
def test_no_page_cites_documents_a_reader_cannot_open(info):
    at = run_page("app.py" if info.path == "app_pages/home.py" else info.path)
    assert not at.exception
    offending = [text for text in visible_strings(at) if UNCITABLE.search(text)]
    assert not offending, [UNCITABLE.search(t).group(0) + ": " + t[:120] for t in offending]


CLIS = ["figures.export", "pe_core.train", "benchmarks"]


@pytest.mark.parametrize("module", CLIS)
def test_cli_help_and_readme_cite_nothing_uncitable(module):
    help_text = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT,
                               timeout=120).stdout
    assert "usage" in help_text.lower()
    assert not UNCITABLE.search(help_text)


def test_readme_cites_nothing_uncitable():
    assert not UNCITABLE.search(Path(ROOT / "README.md").read_text(encoding="utf-8"))


def test_reference_notes_carry_no_raw_latex():
    """A note is shown as markdown, where R_{i−j} stays as typed: subscripts are written as Unicode (Rᵢ₋ⱼ)."""
    import re

    from i18n import _, use_language
    from references import REFERENCES

    raw = re.compile(r"[_^]\{|\\[a-z]+")
    for language in ("en", "zh"):
        with use_language(language):
            typed = [(ref.key, _(ref.note)) for ref in REFERENCES.values() if ref.note and raw.search(_(ref.note))]
        assert not typed, (language, typed)
