"""Per-page script rerun time (AppTest, caches warm) at defaults and at the heaviest settings."""

from __future__ import annotations

from functools import partial

from benchmarks import Case
from tests.conftest import run_page
from ui.pages import available_pages

# URL parameters that make each page do the most work its controls allow.
HEAVIEST: dict[str, dict] = {
    "pages/frequencies.py": {"d": "256", "L": "131,072", "s": "128×",
                             "methods": ["Direct extrapolation", "Position Interpolation", "NTK-aware", "Dynamic NTK",
                                         "NTK-by-parts", "YaRN", "Llama-3 scaling", "LongRoPE",
                                         "Base change (ABF)"]},
    "pages/maths.py": {"d": "8"},
    "pages/precision.py": {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "lp": "float16",
                           "zw": "256", "zn": "65400", "zdt": "float16"},
    "pages/family.py": {"sd": "256", "sb": "1,000,000", "sL": "2048", "ah": "64", "aL": "256", "tb": "128",
                        "tm": "1024", "rL": "256", "rc": "128", "rw": "128", "rk": "64", "dl": "256", "dc": "128",
                        "ds": "0.75", "nL": "131072"},
}


def _rerun(at) -> None:
    at.run()
    assert not at.exception, at.exception


def _cases() -> list[Case]:
    cases = []
    for info in available_pages():
        # Home's page links only resolve inside the app's navigation, so it runs through app.py
        at = run_page("app.py" if info.path == "pages/home.py" else info.path)
        cases.append(Case(f"page: {info.title}"[:28], "script rerun at defaults", partial(_rerun, at)))
        if info.path in HEAVIEST:
            heavy = run_page(info.path, HEAVIEST[info.path])
            cases.append(Case(f"page: {info.title}"[:28], "script rerun at heaviest settings", partial(_rerun, heavy)))
    return cases


CASES = _cases()
