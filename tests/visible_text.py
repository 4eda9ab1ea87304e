"""What a reader sees on a page run with AppTest, as text, and how much of it is Chinese.

``run_page_with_sidebar(path, query)`` runs a page the way app.py does (the shared sidebar with the
language switch first) in AppTest.

``visible_texts(at)`` walks every element a run drew (prose, widget labels and help, options, buttons,
expanders, tables, and inside each plotly figure: titles, axis titles, legend names, annotations, hover
text, tick labels) and returns ``(where, text)`` pairs. ``letter_counts(text)`` counts CJK characters
and Latin letters of prose words, leaving out what stays in Latin script in every language: formulas
(LaTeX, inline code, hover fields), links' addresses, identifiers, single-letter symbols, method and
model names, and the titles and authors of cited sources.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from tests.tables import html_text
from ui.chart import COMPONENT_NAME, read_payload

# Method, model, library and format names: written in Latin script in Chinese text as well.
PROPER_NAMES = frozenset("""
RoPE YaRN NTK NTK-aware NTK-by-parts ALiBi PI ABF LongRoPE ReRoPE Leaky Llama LLaMA Llama-3 Llama-2 Llama3 Qwen
Mistral Phi Phi-3 Phi-3.5 Gemma DeepSeek CodeLlama Code RoFormer Transformer Transformer-XL Transformers T5
DeBERTa DeBERTa-v2 TUPE FLOATER XLNet BERT GPT GPT-2 nanoGPT CNN CNNs ODE Shaw Dual Chunk Attention DCA
transformers torch PyTorch sympy SymPy plotly kaleido Streamlit Chrome Chromium Hugging Face Meta Microsoft
PNG SVG PDF HTML JSON ZIP CSV URL CLI CPU GPU CUDA MPS IEEE KV bfloat bfloat16 float16 float32 float64 fp16 bf16
fp32 fp64 dtype arXiv GitHub Reddit kexue Scientific Spaces Su Jianlin Peng bloc97 emozilla Vaswani Press Chen
Raffel Dai Ke He Liu Kluyver LocalLLaMA config json rope_scaling rotate_half English OK
""".split())

# Words Chinese machine-learning writing keeps in Latin script.
LOANWORDS = frozenset("token tokens logit logits softmax RMS MLP FLOPs inf NaN rad".split())

# Maths written in words: function names and units that stay as they are in formulas.
MATH_WORDS = frozenset("""
log ln exp cos sin tan mod max min clamp argmax softmax sqrt rad dim std mean var id floor ceil round ramp
""".split())

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*[A-Za-z]|[A-Za-z]")

_REMOVE = [
    re.compile(r"\$\$.*?\$\$", re.S),  # display LaTeX
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),  # inline LaTeX
    re.compile(r"`[^`]*`"),  # inline code
    re.compile(r"%\{[^}]*\}"),  # plotly hover fields
    re.compile(r"\]\([^)]*\)"),  # markdown link targets (the link text stays)
    re.compile(r"https?://\S+"),
    re.compile(r"<[^>]+>"),  # html tags in plotly text (<br>, <sub>)
    re.compile(r":material/[a-z_]+:"),
    re.compile(r":[a-z]+-badge\["),  # markdown badge directives
    re.compile(r"[\w\-.]*_[\w\-.]*"),  # identifiers and file names: rope_theta, beta_base_digits-against-n_lang-zh
    re.compile(r"\b\w*\d\w*\b"),  # tokens with digits: bf16, 8k, 2π
    re.compile(r"\b[A-Za-z]+\(", re.S),  # function calls in prose: apply_rotary_emb(, f(
]


def _cited_names() -> list[str]:
    """Titles, authors and venues of the References registry: proper names in every language."""
    from references import REFERENCES

    names = []
    for ref in REFERENCES.values():
        names.extend([ref.title, ref.authors, ref.venue, ref.short])
    return sorted(set(names), key=len, reverse=True)


def strip_unscored(text: str) -> str:
    """``text`` without formulas, code, addresses and cited names (what stays Latin in every language)."""
    for name in _cited_names():
        text = text.replace(name, " ")
    for pattern in _REMOVE:
        text = pattern.sub(" ", text)
    return text


def letter_counts(text: str) -> tuple[int, int]:
    """(CJK characters, Latin letters of prose words) in ``text``."""
    text = strip_unscored(text)
    cjk = len(_CJK.findall(text))
    latin = 0
    for word in _WORD.findall(text):
        if len(word) == 1 or word in PROPER_NAMES or word in LOANWORDS or word.lower() in MATH_WORDS:
            continue
        if word.rstrip("s") in PROPER_NAMES or word.split("-")[0] in PROPER_NAMES:
            continue
        latin += len(word)
    return cjk, latin


# ---- what a run drew ------------------------------------------------------------------------------

_TEXT_KEYS = {"body", "label", "help", "placeholder", "content", "caption"}
_SKIPPED_KEYS = {"id", "icon", "page", "page_script_hash", "url", "code_text", "query_param_key", "deferred_file_id",
                 "form_id", "anchor", "format", "spec", "config", "arrow_data", "raw_values"}
_FIGURE_TEXT_KEYS = {"text", "name", "hovertemplate", "texttemplate", "label", "ticktext", "title"}
_FIGURE_SKIPPED_KEYS = {"meta", "colorscale", "font", "family", "customdata", "legendgroup", "uid", "xaxis",
                        "yaxis", "anchor", "overlaying", "matches", "scaleanchor", "coloraxis", "template", "hoverinfo",
                        "textposition", "mode", "type", "shape", "symbol", "dash", "fillpattern", "marker", "line"}


def _proto_texts(value, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in _SKIPPED_KEYS:
                yield from _proto_texts(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _proto_texts(item, key)
    elif isinstance(value, str) and key in _TEXT_KEYS:
        yield value


def figure_texts(figure: dict, key: str = "") -> Iterator[str]:
    """Every piece of text a plotly figure (as a dict) shows: titles, axes, legend, annotations, hover, ticks."""
    if isinstance(figure, dict):
        for k, v in figure.items():
            if k in _FIGURE_SKIPPED_KEYS:
                continue
            if k in ("header", "cells") and isinstance(v, dict):  # go.Table
                yield from (str(x) for x in _flatten(v.get("values", [])) if isinstance(x, str))
            elif k in ("x", "y") and isinstance(v, list) and any(isinstance(x, str) for x in v):
                yield from (x for x in v if isinstance(x, str))  # category labels
            else:
                yield from figure_texts(v, k)
    elif isinstance(figure, list):
        for item in figure:
            yield from figure_texts(item, key)
    elif isinstance(figure, str) and key in _FIGURE_TEXT_KEYS:
        yield figure


def _flatten(values) -> Iterator:
    for value in values:
        if isinstance(value, list):
            yield from _flatten(value)
        else:
            yield value


def _dataframe_texts(node) -> Iterator[str]:
    frame = node.value
    data = getattr(frame, "data", frame)  # a Styler keeps its frame in .data
    yield from (str(c) for c in data.columns)
    yield from (str(i) for i in data.index if isinstance(i, str))
    for column in data.columns:
        yield from (v for v in data[column].tolist() if isinstance(v, str))


def visible_texts(at) -> list[tuple[str, str]]:
    """(element type, text) for every piece of text the AppTest run ``at`` shows, sidebar included (or the
    text under one node of its tree: ``visible_texts(at.sidebar)``)."""
    found: list[tuple[str, str]] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        kind = type(node).__name__
        if proto is not None:
            data = MessageToDict(proto, preserving_proto_field_name=True)
            if data.get("element_type") == "LATEX" or kind == "Latex":
                pass
            elif "spec" in data:  # Streamlit's plotly chart
                found.extend((kind + ":figure", t) for t in figure_texts(json.loads(data["spec"])))
            elif data.get("component_name") == COMPONENT_NAME:  # the app's chart: its figure is its payload
                found.extend(("Chart:figure", t) for t in figure_texts(read_payload(proto.bytes)["figure"]))
            elif "arrow_data" in data or kind in ("Dataframe", "Table"):
                found.extend((kind, t) for t in _dataframe_texts(node))
            elif kind == "Html":  # what it shows, not its markup and style sheet
                found.append((kind, html_text(data.get("body", ""))))
            elif kind != "ButtonGroup" or data.get("label") != "Language / 语言":  # the switch names both languages
                found.extend((kind, t) for t in _proto_texts(data))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(getattr(at, "_tree", at))
    return [(kind, text) for kind, text in found if text.strip()]


def cjk_share(texts: list[tuple[str, str]]) -> tuple[float, int, int]:
    """(share of CJK among scored letters, CJK count, Latin count) over ``texts``."""
    cjk = latin = 0
    for _kind, text in texts:
        c, l_ = letter_counts(text)
        cjk += c
        latin += l_
    total = cjk + latin
    return (cjk / total if total else 1.0), cjk, latin


def untranslated(texts: list[tuple[str, str]], min_letters: int = 12) -> list[tuple[str, str]]:
    """Texts with at least ``min_letters`` scored Latin letters and no CJK at all: likely bypassing ``_()``."""
    out = []
    for kind, text in texts:
        c, l_ = letter_counts(text)
        if c == 0 and l_ >= min_letters:
            out.append((kind, text))
    return out


# ---- running a page as app.py does -----------------------------------------------------------------

# AppTest keeps only the page's own elements when app.py's st.navigation runs a page, so the shared
# sidebar (language switch, export box) would be missing; this script draws it itself, as app.py does.
# Page links need pages registered with st.navigation, so here they are drawn as plain markdown links.
# finish_page names the compute device in the sidebar, as app.py's run does.
_PAGE_SCRIPT = """
import runpy
import streamlit as st
from ui.layout import finish_page, start_page

_page_link = st.page_link
st.page_link = lambda page, *, label=None, icon=None, **kwargs: st.markdown(f"[{{label}}](/{{page}})")
try:
    start_page(charts=True)
    runpy.run_path({path!r}, run_name="__main__")
finally:
    st.page_link = _page_link
    finish_page()
"""


def page_test(path: str, query: dict | None = None, *, locale: str | None = None, timeout: float = 120):
    """An AppTest of page ``path`` (relative to the repository) behind the shared sidebar, not yet run."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    # one script per page and process: Streamlit's element ids include the script's hash, so two tests of a page
    # (two links, say) give a chart the same id exactly when the chart itself is the same
    folder = Path(tempfile.gettempdir()) / f"page-tests-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    script = folder / f"run_{Path(path).stem}.py"
    script.write_text(_PAGE_SCRIPT.format(path=str(ROOT / path)), encoding="utf-8")
    at = AppTest.from_file(str(script), default_timeout=timeout)
    if locale is not None:
        at.context["locale"] = locale
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at


def run_page_with_sidebar(path: str, query: dict | None = None, **kwargs):
    at = page_test(path, query, **kwargs)
    at.run()
    return at
