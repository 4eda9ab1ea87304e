"""Long pages open with a table of contents whose links land on their sections' headers."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from ui.pages import available_pages

PAGES_WITH_CONTENTS = [p.path for p in available_pages() if "Contents(" in (ROOT / p.path).read_text(encoding="utf-8")]


def test_the_long_pages_have_contents():
    assert {"pages/decay.py", "pages/family.py", "pages/lineage.py", "pages/precision.py",
            "pages/beta_base.py"} <= set(PAGES_WITH_CONTENTS)


@pytest.mark.parametrize("path", PAGES_WITH_CONTENTS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_link_lands_on_a_header(page_runner, path, lang):
    at = page_runner(path, {"lang": lang})
    assert not at.exception
    contents = next(c.value for c in at.caption if "](#" in c.value)
    linked = re.findall(r"\]\(#([\w-]+)\)", contents)
    anchors = [h.proto.anchor for h in at.header if h.proto.anchor]
    assert linked == anchors and len(linked) >= 3
    titles = re.findall(r"\[([^\]]+)\]\(#", contents)
    assert titles == [h.value for h in at.header if h.proto.anchor]
