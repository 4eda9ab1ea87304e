"""A sympy check's caption lists what sympy checked, clause by clause, and ends as a sentence ends."""

from __future__ import annotations

import pytest

from i18n import full_stop
from tests.conftest import run_whole_page
from tests.visible_text import run_page_with_sidebar

CHECKED_PAGES = ["app_pages/decay.py", "app_pages/caveats.py", "app_pages/lineage.py", "app_pages/rope_code.py"]


def test_the_last_semicolon_becomes_a_full_stop():
    assert full_stop("it solves; it equals 1; ") == "it solves; it equals 1."
    assert full_stop("它等于 1；代回去得到 r；") == "它等于 1；代回去得到 r。"
    assert full_stop("no clauses.") == "no clauses."


@pytest.mark.parametrize("path", CHECKED_PAGES)
def test_sympy_captions_end_with_a_full_stop(path):
    at = run_whole_page(path)
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption if "sympy" in c.value]
    assert captions, "the page shows no sympy check"
    assert all(not c.rstrip().endswith((";", "；")) for c in captions), [c[-60:] for c in captions]


def test_a_chinese_sympy_caption_ends_with_a_full_stop():
    at = run_page_with_sidebar("app_pages/decay.py", {"lang": "zh", "part": "all"})
    captions = [c.value for c in at.caption if "sympy" in c.value]
    assert captions and all(c.rstrip().endswith(("。", ".")) for c in captions), [c[-40:] for c in captions]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_derivations_page_ends_what_sympy_checked_before_its_residual(lang):
    at = run_whole_page("app_pages/maths.py", {"lang": lang})
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption if "Residual" in c.value or "残差" in c.value]
    assert captions, "the derivations page shows no residual"
    assert not [c for c in captions if ";" in c.split("Residual")[0][-3:] or "；残差" in c], captions
