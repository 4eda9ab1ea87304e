"""Home: the class plan's links open each page in the same tab, keeping the reader's language and slide style."""

from __future__ import annotations

from urllib.parse import parse_qs

from i18n import _, use_language
from tests.conftest import ROOT, run_page
from ui.front_door import CLASS_PLAN
from ui.pages import available_pages


def page_links(at) -> list:
    return list(at.get("page_link"))


def plan_links(at) -> list:
    """The page links inside the class plan's expander."""
    with use_language("zh"):
        title = _("A 50-minute class")
    plan = next(e for e in at.expander if e.label == title)
    found = []

    def walk(node) -> None:
        if type(node).__name__ == "PageLink" or getattr(node, "type", "") == "page_link":
            found.append(node)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(plan)
    return found


def test_the_class_plan_links_keep_chinese_and_the_slide_style():
    at = run_page("app.py", {"lang": "zh", "slide": "true"})
    assert not at.exception, at.exception
    links = plan_links(at)
    pages = {page.path for page in available_pages()}
    assert len(links) == sum(stop.path in pages for stop in CLASS_PLAN) >= 5
    for link in links:
        query = parse_qs(link.proto.query_string)
        assert query.get("lang") == ["zh"] and query.get("slide") == ["true"], (link.proto.label, query)
        assert not link.proto.external  # an app page: the same tab, the same session


def test_every_page_link_on_home_keeps_the_language_a_browser_chose():
    """Without lang in the address the browser's language decides; the links still write it, so the next page
    (or a projector given the link) shows the same language."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.context["locale"] = "zh-CN"
    at.run()
    assert not at.exception, at.exception
    links = page_links(at)
    assert len(links) >= len(available_pages()) - 1
    assert all(parse_qs(link.proto.query_string).get("lang") == ["zh"] for link in links)


def test_home_shows_chinese_thumbnails_in_chinese():
    from i18n import use_language
    from ui.front_door import THUMBNAILS, thumbnail
    from ui.pages import PAGES

    lessons = [page.lesson for page in PAGES if page.lesson and (THUMBNAILS / f"{page.lesson}.png").exists()]
    assert len(lessons) >= 10
    with use_language("zh"):
        assert all(thumbnail(lesson) == THUMBNAILS / "zh" / f"{lesson}.png" for lesson in lessons)
    with use_language("en"):
        assert all(thumbnail(lesson) == THUMBNAILS / f"{lesson}.png" for lesson in lessons)


def test_each_class_plan_link_opens_the_part_and_mode_its_activity_needs():
    """The lesson opens presenting; θ heatmaps on the per-pair charts the activity compares; decay on the bound chart
    whose bases it asks to move; training on the RoPE methods' results, not the miniature."""
    from lessons import all_lessons
    from ui.lesson import PART_KEY
    from ui.tour import PRESENT_KEY

    at = run_page("app.py", {"lang": "zh"})  # plan_links finds the plan by its Chinese title
    pages = {page.path: page for page in available_pages()}
    shown = [stop for stop in CLASS_PLAN if stop.path in pages]
    queries = {stop.path: parse_qs(link.proto.query_string) for stop, link in zip(shown, plan_links(at), strict=True)}
    assert queries["app_pages/tour.py"][PRESENT_KEY] == ["1"]
    expected = {"app_pages/frequencies.py": ("per-pair", {"wavelengths", "interpolation-ratio"}),
                "app_pages/decay.py": ("bound", {"bound"}),
                "app_pages/training.py": ("methods", {"methods-seeds", "methods-table"})}
    for path, (part, figures) in expected.items():
        assert queries[path][PART_KEY] == [part], path
        lesson = all_lessons()[pages[path].lesson]
        assert figures <= set(next(p for p in lesson.parts if p.slug == part).figures), path
    for stop in CLASS_PLAN:  # every part a link names is one its page has
        for key, value in stop.query:
            if key == PART_KEY:
                assert value in {p.slug for p in all_lessons()[pages[stop.path].lesson].parts}, stop.path
    decay = all_lessons()["decay"].settings.controls()["bound_bases"]
    assert f"“{_(decay.label)}”" in next(_(stop.activity) for stop in CLASS_PLAN if stop.path == "app_pages/decay.py")
