"""Per-page script rerun time (AppTest, caches warm) at defaults and at the heaviest settings.

A page that shows a lesson is also timed at that lesson's ``Settings.extremes()``, sent as the URL
parameters a link to those settings would carry.
"""

from __future__ import annotations

from benchmarks import Case
from benchmarks.harness import run_page
from lessons import get
from ui.pages import available_pages


class _PageRerun:
    """Times a rerun of one page; the first call (the harness's warm-up) creates the AppTest."""

    def __init__(self, path: str, query: dict | None = None):
        self.path, self.query, self.at = path, query, None

    def __call__(self) -> None:
        if self.at is None:
            # Home's page links only resolve inside the app's navigation, so it runs through app.py
            self.at = run_page("app.py" if self.path == "app_pages/home.py" else self.path, self.query)
        else:
            self.at.run()
        assert not self.at.exception, self.at.exception


CASES = []
for _info in available_pages():
    _group = f"page: {_info.title}"[:28]
    CASES.append(Case(_group, "script rerun at defaults", _PageRerun(_info.path)))
    if _info.lesson:
        _heaviest = get(_info.lesson).settings.extremes().query_params()
        CASES.append(Case(_group, "script rerun at heaviest settings", _PageRerun(_info.path, _heaviest)))
