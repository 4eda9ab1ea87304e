"""Per-page script rerun time (AppTest, caches warm) at defaults and at the heaviest settings."""

from __future__ import annotations

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
    "pages/decay.py": {"dims": ["128", "256"], "bases": ["10,000", "500,000", "10,000,000"], "rmax": "1,048,576",
                       "axis": "log", "dm": "256", "kmax": "4,096", "n": "256", "draws": "1,024", "d": "256",
                       "L": "131,072", "s": "128×"},
    "pages/precision.py": {"d": "256", "base": "10,000,000", "L": "131,072", "s": "128×", "lp": "float16",
                           "zw": "256", "zn": "65400", "zdt": "float16"},
    "pages/family.py": {"sd": "256", "sb": "1,000,000", "sL": "2048", "ah": "64", "aL": "256", "tb": "128",
                        "tm": "1024", "rL": "256", "rc": "128", "rw": "128", "rk": "64", "dl": "256", "dc": "128",
                        "ds": "0.75", "nL": "131072"},
}


class _PageRerun:
    """Times a rerun of one page; the first call (the harness's warm-up) creates the AppTest."""

    def __init__(self, path: str, query: dict | None = None):
        self.path, self.query, self.at = path, query, None

    def __call__(self) -> None:
        if self.at is None:
            # Home's page links only resolve inside the app's navigation, so it runs through app.py
            self.at = run_page("app.py" if self.path == "pages/home.py" else self.path, self.query)
        else:
            self.at.run()
        assert not self.at.exception, self.at.exception


CASES = []
for _info in available_pages():
    _group = f"page: {_info.title}"[:28]
    CASES.append(Case(_group, "script rerun at defaults", _PageRerun(_info.path)))
    if _info.path in HEAVIEST:
        CASES.append(Case(_group, "script rerun at heaviest settings", _PageRerun(_info.path, HEAVIEST[_info.path])))
