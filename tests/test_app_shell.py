"""The app shell: navigation built from the page registry, Home lists pages, URL fallback notes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib

import torch
from streamlit.testing.v1 import AppTest

from benchmarks.harness import run_page
from tests.conftest import ROOT, drawn_charts
from ui.chart import PRELOAD_KEY
from ui.pages import PAGES, available_pages


def test_app_runs_and_shows_home_and_device():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert at.title[0].value == "Positional encodings, explored"
    sidebar_text = " ".join(c.value for c in at.sidebar.caption)
    expected = "CUDA" if torch.cuda.is_available() else "CPU"
    assert f"Compute device: **{expected}" in sidebar_text


def test_registry_lists_only_existing_pages():
    listed = available_pages()
    assert listed[0].path == "app_pages/home.py"
    assert all((ROOT / page.path).exists() for page in listed)
    assert {page.path for page in PAGES} >= {page.path for page in listed}


def test_home_links_every_other_page():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)  # page links need the navigation
    at.run()
    assert not at.exception
    summaries = " ".join(c.value for c in at.caption)
    for page in available_pages()[1:]:
        assert page.summary in summaries


PARAMS_PAGE = """
import streamlit as st
from ui import params
value = params.slider("Length", "n", 1, 100, 10)
choice = params.selectbox("Method", "m", ["direct", "pi"], format_func=str.upper)
picked = params.multiselect("Methods", "ms", ["a", "b", "c"], ["a"])
flag = params.toggle("Slide", "t", False)
count = params.number_input("Count", "c", 1, 1000, 5)
st.write(f"value={value} choice={choice} picked={','.join(picked)} flag={flag} count={count!r}")
"""


def run_params_page(query: dict) -> AppTest:
    at = AppTest.from_string(PARAMS_PAGE, default_timeout=30)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return at


def test_url_values_are_used_when_valid():
    at = run_params_page({"n": "42", "m": "PI", "ms": ["b", "c"], "t": "true", "c": "7"})
    assert at.markdown[-1].value == "value=42 choice=pi picked=b,c flag=True count=7"
    assert len(at.warning) == 0


def test_url_default_values_raise_no_note():
    at = run_params_page({"n": "10", "m": "DIRECT", "ms": "a", "t": "false"})
    assert len(at.warning) == 0


def test_garbage_url_values_fall_back_with_a_visible_note():
    at = run_params_page({"n": "1e9", "m": "<script>", "ms": ["zzz"], "t": "perhaps", "c": "1e999"})
    assert at.markdown[-1].value == "value=10 choice=direct picked=a flag=False count=5"
    notes = [w.value for w in at.warning]
    assert len(notes) == 5
    assert "Length" in notes[0] and "`1e9`" in notes[0] and "default (10)" in notes[0]
    assert "Method" in notes[1] and "DIRECT" in notes[1]


def test_home_has_three_questions_for_every_page_and_titles_match_lessons():
    from lessons import all_lessons
    from ui.front_door import CLASS_PLAN, QUESTIONS

    lessons = all_lessons()
    pages = {page.path: page for page in available_pages()}
    for page in pages.values():
        if page.path == "app_pages/home.py":
            continue
        assert len(QUESTIONS.get(page.path, ())) == 3, page.path
        if page.lesson:
            assert page.title == lessons[page.lesson].title, (page.path, lessons[page.lesson].title)
    assert sum(stop.minutes for stop in CLASS_PLAN) == 50
    assert all(stop.path in pages for stop in CLASS_PLAN)


def test_the_server_skips_streamlits_forced_collection_after_each_run_and_its_file_watcher():
    # gc.collect(2) after every script run took ~110 ms with the lessons loaded and held back the end of the page
    # (the last figures and the run-finished message): settled slider moves 46-98 ms sooner without it. The file
    # watcher's walk over every module torch loads held a cold server's first page back by about 0.6 s.
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert config["server"]["fileWatcherType"] == "none"


# Run in a fresh interpreter: this process has imported everything already.
SYMPY_AFTER_PAGE = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120)
at.switch_page(sys.argv[1]).run()
assert not at.exception, at.exception
print("sympy" in sys.modules, "derivations" in sys.modules)
"""


def test_only_a_page_that_shows_a_checked_formula_imports_sympy():
    """Sympy and the derivations cost about half a second to import, on a cold server before its first page."""
    def imports(page: str) -> str:
        done = subprocess.run([sys.executable, "-c", SYMPY_AFTER_PAGE, page], cwd=ROOT, capture_output=True,
                              text=True, env=dict(os.environ, PE_EXPLORER_WARMUP="0"), timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert imports("app_pages/frequencies.py") == "False False"  # typesets formulas, checks none
    assert imports("app_pages/rope_code.py") == "True True"


def _own_imports(path) -> list[str]:
    """The app's own top-level packages and modules that ``path`` imports at its top, in order."""
    own = {entry.name for entry in ROOT.iterdir() if (entry / "__init__.py").exists()}
    own |= {entry.stem for entry in ROOT.glob("*.py")}
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module.split(".")[0])
    return [name for name in names if name in own]


def test_the_app_shell_imports_no_torch_and_no_page_sits_in_an_old_style_pages_folder():
    """app.py draws the shared sidebar and starts loading the chart library before a page's lessons import torch.
    Streamlit runs a ``pages/`` folder beside the main script as old-style pages on a fresh server's first runs,
    before app.py's st.navigation: a student opening a shared link then got the page without app.py's shell."""
    assert not (ROOT / "pages").exists()
    for page in available_pages():
        assert _own_imports(ROOT / page.path)[0] == "ui", page.path
    shell_imports = "import sys, ui; print([m for m in ('torch', 'sympy') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", shell_imports], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _start_page(charts: bool) -> None:
    from ui.layout import start_page

    start_page(charts=charts)


def test_a_page_that_draws_charts_loads_the_chart_library_as_it_starts():
    """The hidden preloading element stands in the sidebar of a page that draws charts, and only there."""
    for charts in (True, False):
        at = AppTest.from_function(_start_page, args=(charts,), default_timeout=60).run()
        assert not at.exception
        preloads = [element for element in at.sidebar if element.type == "bidi_component"
                    and element.proto.id.endswith(PRELOAD_KEY)]
        assert len(preloads) == charts


def test_the_pages_said_to_draw_no_chart_draw_none():
    chartless = [page for page in available_pages() if not page.charts]
    assert {page.path for page in chartless} == {"app_pages/home.py", "app_pages/glossary.py", "app_pages/sources.py"}
    for page in chartless:  # Home through app.py: its page links need the navigation
        at = AppTest.from_file(str(ROOT / "app.py")).run() if page.url_path == "" else run_page(page.path)
        assert not at.exception, page.path
        assert drawn_charts(at) == [], page.path
