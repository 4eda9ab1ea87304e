"""The derivations page: every claim shows as verified, every write-up variant as refuted, d is URL-bound."""

from __future__ import annotations

import math
import re
import time

import pytest

import derivations  # imported first: the page's file name shadows the package when app_pages/ is on sys.path
from lessons import derivations as lesson
from tests.conftest import figure_titled, run_page, run_whole_page

PAGE = "app_pages/maths.py"
VERIFIED = "verified by sympy"
REFUTED = "refuted by sympy"
BLOCK_SLUGS = [d.slug for d in derivations.DERIVATIONS if d.parameter is not None]


def marked_lines(at, mark: str) -> list[str]:
    return [m.value for m in at.markdown if mark in m.value]


def as_markdown(text: str) -> str:
    """Titles reach st.markdown with * and _ escaped, so they are not read as emphasis."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def line_for(at, title: str, mark: str) -> str:
    title = as_markdown(title)
    lines = [line for line in marked_lines(at, mark) if title in line]
    assert len(lines) == 1, f"expected one line with {title!r} and {mark!r}, found {len(lines)}"
    return lines[0]


@pytest.fixture(scope="module")
def default_page():
    """Every part, one after another (the page's last tab): every claim and figure."""
    return run_whole_page(PAGE)


def test_every_claim_shows_as_verified(default_page):
    at = default_page
    assert not at.exception
    assert len(marked_lines(at, VERIFIED)) == len(derivations.DERIVATIONS)
    for derivation in derivations.DERIVATIONS:
        line_for(at, derivation.title, VERIFIED)
    assert not at.error
    total, wrong = len(derivations.DERIVATIONS), len(derivations.WRONG_VARIANTS)
    assert at.success[0].value.startswith(f"**{total} of {total} claims verified by sympy**; {wrong} of {wrong}")


def test_every_write_up_variant_shows_as_refuted_with_its_source(default_page):
    at = default_page
    assert len(marked_lines(at, REFUTED)) == len(derivations.WRONG_VARIANTS)
    for variant in derivations.WRONG_VARIANTS:
        assert variant.source in line_for(at, variant.title, REFUTED)  # sources are markdown: links stay links
    says = [m.value for m in at.markdown if m.value.startswith("**A widely copied write-up says**")]
    assert len(says) == sum(not v.counterfactual for v in derivations.WRONG_VARIANTS)
    captions = " ".join(c.value for c in at.caption)
    assert "Counterexample: at d = 128, b = 10000" in captions


def test_topics_steps_and_notes_are_shown(default_page):
    at = default_page
    assert [h.value for h in at.header] == [part.title for part in lesson.PARTS]
    shown = [part.title for part in lesson.PARTS if len(lesson.PART_TOPICS[part.slug]) == 1]
    shown += [s.value for s in at.subheader]
    assert sorted(shown) == sorted(derivations.TOPICS)  # every topic once, under its part
    assert len(at.expander) == len(derivations.DERIVATIONS)
    first_step = derivations.get("relative_linear_phase").steps[0].text
    assert any(m.value == f"1. {first_step}" for m in at.markdown)
    in_part_order = [claim for part in lesson.PARTS for _topic, claims in lesson.part_topics(part.slug)
                     for claim in claims]
    notes = [d for claim in in_part_order for d in claim.notes]
    assert [i.value for i in at.info] == notes


def test_figures_carry_the_checked_values(default_page):
    assert not default_page.warning
    ntk = figure_titled(default_page, "NTK-aware vs PI")
    pi_ratio, ntk_ratio = ntk["data"][0]["y"], ntk["data"][1]["y"]
    assert len(ntk_ratio) == 64
    assert all(math.isclose(r, 1 / 8, rel_tol=1e-12) for r in pi_ratio)
    assert math.isclose(ntk_ratio[0], 1.0) and math.isclose(ntk_ratio[-1], 1 / 8, rel_tol=1e-12)
    blend = figure_titled(default_page, "blending frequencies is not blending wavelengths")
    implemented, paper = blend["data"][0]["y"], blend["data"][1]["y"]
    assert math.isclose(implemented[50], 1.6) and math.isclose(paper[50], 2.5)


def test_parts_show_every_topic_once():
    modules = [name for part in lesson.PARTS for name in lesson.PART_TOPICS[part.slug]]
    topics = [topic for part in lesson.PARTS for topic, _members in lesson.part_topics(part.slug)]
    assert sorted(topics) == sorted(derivations.TOPICS) and len(set(modules)) == len(modules)
    for part in lesson.PARTS:  # a part of one topic is titled by it
        if len(lesson.PART_TOPICS[part.slug]) == 1:
            assert part.title == lesson.part_topics(part.slug)[0][0]


def test_the_page_opens_on_its_first_part_and_verifies_only_that():
    at = run_page(PAGE)
    assert not at.exception and not at.error
    first = lesson.PARTS[0]
    members = [claim for _topic, claims in lesson.part_topics(first.slug) for claim in claims]
    wrong = [variant for claim in members for variant in derivations.variants_of(claim.slug)]
    assert 0 < len(members) < len(derivations.DERIVATIONS)
    assert [h.value for h in at.header] == [first.title]
    assert len(marked_lines(at, VERIFIED)) == len(members)
    assert at.success[0].value.startswith(f"**{len(members)} of {len(members)} claims verified by sympy**; "
                                          f"{len(wrong)} of {len(wrong)}")
    assert [tab.label for tab in at.tabs] == [part.tab for part in lesson.PARTS] + ["Whole page"]


def test_a_linked_part_opens_with_its_figure():
    at = run_page(PAGE, {"part": "extension"})
    assert not at.exception and not at.error
    assert [h.value for h in at.header] == [lesson.PARTS[2].title]
    figure_titled(at, "NTK-aware vs PI")


def test_verdicts_are_kept_on_disk_for_this_code(tmp_path, monkeypatch):
    monkeypatch.setenv(lesson.VERDICTS_ENV, str(tmp_path))
    monkeypatch.setattr(lesson, "_stored", lesson._stored.__wrapped__)  # read the file on every call
    lesson.verification.cache.clear()
    made = lesson.verify_part("plane")
    assert [path.name for path in tmp_path.iterdir()] == [lesson.verdict_file().name]
    assert lesson._code_digest() in lesson.verdict_file().name  # another version of the code has its own file
    lesson.verification.cache.clear()  # as after a restart: the verdicts come from the file, sympy is not asked

    def no_sympy(slug):
        raise AssertionError(f"{slug} was verified again")

    monkeypatch.setattr(derivations, "get", no_sympy)
    assert lesson.verify_part("plane") == made
    lesson.verification.cache.clear()


@pytest.mark.parametrize("d", [2, 8])
def test_block_proofs_follow_d_from_the_url(d):
    at = run_page(PAGE, {"d": str(d), "part": "d-dims"})
    assert not at.exception and not at.warning
    assert at.select_slider(key="d").value == d
    for slug in BLOCK_SLUGS:
        assert f"(d = {d})" in line_for(at, derivations.get(slug).title, VERIFIED)
    assert f"With d = {d}" in " ".join(c.value for c in at.caption)


def test_slider_change_reverifies_at_the_new_d(default_page):
    at = default_page
    at.select_slider(key="d").set_value(6).run()
    assert not at.exception
    for slug in BLOCK_SLUGS:
        assert "(d = 6)" in line_for(at, derivations.get(slug).title, VERIFIED)
    at.select_slider(key="d").set_value(4).run()


def test_garbage_url_falls_back_with_a_note():
    at = run_page(PAGE, {"d": "banana", "part": "d-dims"})
    assert not at.exception
    assert any("banana" in w.value for w in at.warning)
    for slug in BLOCK_SLUGS:
        assert "(d = 4)" in line_for(at, derivations.get(slug).title, VERIFIED)


def test_warm_rerun_is_fast(default_page):
    at = default_page
    at.run()  # caches are warm after the module fixture
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    assert not at.exception
    assert elapsed < 3.0, f"warm rerun took {elapsed:.2f} s"


def test_figure_controls_follow_the_url():
    at = run_page(PAGE, {"nd": "16", "ns": "4×", "bs": "16×", "part": "extension"})
    assert not at.exception and not at.warning
    ntk = figure_titled(at, "NTK-aware vs PI")
    assert "d = 16, s = 4" in ntk["layout"]["title"]["text"]
    ntk_ratio = ntk["data"][1]["y"]
    assert len(ntk_ratio) == 8 and math.isclose(ntk_ratio[-1], 1 / 4, rel_tol=1e-12)
    blend = figure_titled(at, "blending frequencies is not blending wavelengths (s = 16)")
    assert math.isclose(blend["data"][1]["y"][50], 8.5)


def test_sources_are_public_citations(default_page):
    captions = " ".join(c.value for c in default_page.caption)
    assert "Source: [Su et al. 2021, eq. 14](https://arxiv.org/abs/2104.09864)" in captions
    shown = " ".join(m.value for m in default_page.markdown) + captions + " ".join(i.value for i in default_page.info)
    assert "seed" not in shown.lower()


def test_words_in_the_formulas_are_chinese_in_the_chinese_interface():
    from tests.visible_text import run_page_with_sidebar

    at = run_page_with_sidebar(PAGE, {"lang": "zh", "part": "all"})
    assert not at.exception, [e.message for e in at.exception]
    shown = "\n".join(element.value for element in at.latex)
    for word in (r"\text{前后两半}", r"\text{复数}", r"\text{缓存}", r"\text{预填充}", r"\text{其他情况}", r"\text{头}"):
        assert word in shown
    assert not re.search(r"\\text\{(half|complex|cached|fresh|prefill|decode|otherwise|head|needed)\}", shown)
