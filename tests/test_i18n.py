"""The Chinese interface: a complete catalog that uses the term list, every page mostly Chinese when
``lang=zh`` (so nothing bypasses the translation function), the language switch and the browser's
language, and figures exported in Chinese with their glyphs drawn."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from i18n import N_, Deferred, Latex, _, current_language, translated_latex, use_language
from i18n.check import catalog_problems, load_terms, missing_terms, placeholders, read_catalog, terms_used
from tests.conftest import SMALL_TRAINING, open_export_menus
from tests.visible_text import (
    cjk_share,
    figure_texts,
    letter_counts,
    page_test,
    run_page_with_sidebar,
    untranslated,
    visible_texts,
)
from ui.lesson import PART_KEY, WHOLE_PAGE
from ui.pages import available_pages

MIN_CJK_SHARE = 0.5  # of the letters a reader sees outside formulas and proper names

CJK = re.compile(r"[\u4e00-\u9fff]")



# ---- the catalog ---------------------------------------------------------------------------------

def test_every_message_has_a_chinese_translation_with_the_same_placeholders():
    problems = catalog_problems("zh")
    assert not problems, "python -m i18n check:\n" + "\n".join(problems)


def test_the_catalog_holds_every_string_the_code_marks():
    from i18n.__main__ import missing_messages

    missing = missing_messages("zh")
    assert not missing, ("run python -m i18n extract && python -m i18n update, then translate:\n"
                         + "\n".join(f"{text!r} ({where[0][0]}:{where[0][1]})" for text, where in missing.items()))


def test_translations_use_the_term_list():
    terms = load_terms("zh")
    assert len(terms) >= 30
    bad = []
    for message in (m for m in read_catalog("zh") if m.id):
        english = message.id[0] if isinstance(message.id, tuple) else message.id
        chinese = " ".join(message.string) if isinstance(message.string, tuple) else message.string
        for term in missing_terms(english, chinese, terms):
            bad.append(f"{english[:60]!r}: uses {term.english!r}, translation lacks {term.translation!r}")
    assert not bad, "\n".join(bad)


CJK_PUNCTUATION = "：。；，！？"


def test_bold_text_in_chinese_closes():
    """Markdown does not close ``**`` after punctuation when a letter follows (``**结论。**下文`` stays raw
    asterisks): the punctuation goes after the bold span."""
    unclosed = []
    for message in (m for m in read_catalog("zh") if m.id):
        chinese = " ".join(message.string) if isinstance(message.string, tuple) else message.string
        spans = chinese.split("**")[1:-1:2]  # the text between an opening and its closing **
        unclosed += [span for span in spans if span.endswith(tuple(CJK_PUNCTUATION))]
    assert not unclosed, unclosed


def test_terms_are_matched_as_words_longest_first():
    terms = load_terms("zh")
    used = {t.english for t in terms_used("Position Interpolation interpolates; PI extrapolates", terms)}
    assert {"Position Interpolation", "interpolat*", "extrapolat*"} <= used
    assert {t.english for t in terms_used("the base conversion of a β-base number", terms)} >= {"base conversion",
                                                                                               "β-base"}
    assert not terms_used("rope_theta and LongRoPE's bfloat16x", [t for t in terms if t.english == "RoPE"])
    # the checker can fail: a translation that drops a term is reported
    assert [t.english for t in missing_terms("Direct extrapolation", "直接推广", terms)] == ["extrapolat*"]
    assert not missing_terms("Direct extrapolation", "直接外推", terms)


def test_method_names_stay_in_latin_script():
    methods = {"RoPE", "YaRN", "NTK-aware", "NTK-by-parts", "ALiBi", "LongRoPE", "ReRoPE"}
    terms = {t.english: t.translation for t in load_terms("zh")}
    assert all(terms[name] == name for name in methods)
    with use_language("zh"):
        assert _("NTK-by-parts and YaRN") == "NTK-by-parts 与 YaRN"
        assert _("Position Interpolation") == "位置插值 (PI)"


def test_placeholders_are_compared_whatever_their_kind():
    assert placeholders("pair %{x}: {count:,} of {total!r} ({name})") == sorted(
        ["%{x}", "{count:,}", "{total!r}", "{name}"])
    assert placeholders(r"h_{{i+1}} and $\theta_{d/2-1}$") == []


# ---- the translation function --------------------------------------------------------------------

def test_translation_follows_the_language_in_use():
    assert current_language() == "en"
    assert _("Long-range decay") == "Long-range decay"
    with use_language("zh"):
        assert _("Long-range decay") == "远程衰减"
        assert _("a message no catalog has") == "a message no catalog has"
    with pytest.raises(ValueError, match="Unknown language"):
        with use_language("xx"):
            pass


def test_deferred_text_is_translated_where_it_is_shown():
    residual = Deferred(N_("residual ≈ {value}"), value="0.5")
    where = Deferred(N_("at {where}: {shown}"), where="$x = 1$", shown=residual)
    joined = Deferred.join([N_("g(m)·θ = m·(θ/s);"), where])
    assert joined == "g(m)·θ = m·(θ/s); at $x = 1$: residual ≈ 0.5"  # as a str it is the English text
    assert _(joined) == joined
    with use_language("zh"):
        assert _(where) == "在 $x = 1$ 处：残差 ≈ 0.5"
        assert _(joined) == "g(m)·θ = m·(θ/s)；在 $x = 1$ 处：残差 ≈ 0.5"


def test_words_in_a_formula_are_typeset_in_the_readers_language():
    formula = Latex(r"s_{\text{cached}} - s_{\text{fresh}},\quad F_{\text{RoPE}}", N_("cached"), N_("fresh"))
    assert formula == r"s_{\text{cached}} - s_{\text{fresh}},\quad F_{\text{RoPE}}"  # as a str: the English LaTeX
    assert translated_latex(formula) == formula
    with use_language("zh"):
        assert translated_latex(formula) == r"s_{\text{缓存}} - s_{\text{重算}},\quad F_{\text{RoPE}}"
        assert translated_latex(r"\text{fresh}") == r"\text{fresh}"  # plain LaTeX is never looked up
    with pytest.raises(ValueError, match="fresh"):
        Latex(r"s_{\text{cached}}", N_("fresh"))


def test_sympy_verdicts_computed_once_are_shown_in_either_language():
    from lessons.checked import checked

    formula = checked("rope2d_norm")
    english = _(formula.check)
    with use_language("zh"):
        chinese = _(formula.check)
    assert english.startswith("R_mᵀR_m − I simplifies to the zero matrix;")
    assert chinese.startswith("R_mᵀR_m − I 化简为零矩阵；") and letter_counts(chinese)[1] == 0
    assert checked("rope2d_norm") is formula  # the cache holds one verdict for both languages


def test_numbers_are_already_written_the_chinese_way():
    """Chinese technical writing groups digits by thousands with a comma and uses a decimal point, as
    Babel's zh_CN locale does, so the app's one way of writing numbers serves both languages."""
    from babel.numbers import format_decimal

    from lessons.format import base_text, length_text, number_text

    for value in (512, 4_096, 10_000, 262_144, 1_000_000):
        assert base_text(value) == length_text(value) == format_decimal(value, locale="zh_CN")
    assert number_text(12.5992) == format_decimal(12.5992, locale="zh_CN", format="#,##0.####") == "12.5992"


def test_error_messages_from_the_core_are_translated():
    from pe_core import RopeSpec

    with use_language("zh"), pytest.raises(ValueError, match="head_dim 必须是 ≥ 2 的偶数"):
        RopeSpec(head_dim=1)
    with pytest.raises(ValueError, match="head_dim must be an even integer"):
        RopeSpec(head_dim=1)


# ---- every page in Chinese ---------------------------------------------------------------------

PAGES = [page.path for page in available_pages()]
WHOLE = {PART_KEY: WHOLE_PAGE}  # a long page in one piece (otherwise only its first part runs)


@pytest.mark.parametrize("path", PAGES)
def test_every_page_reads_in_chinese(path, one_torch_thread):
    """English first, then Chinese in the same process: text cached in one language must not leak into the other."""
    english = run_page_with_sidebar(path, WHOLE)
    assert not english.exception, [e.message for e in english.exception]
    assert not CJK.search(english.title[0].value)
    at = run_page_with_sidebar(path, {"lang": "zh", **WHOLE})
    assert not at.exception, [e.message for e in at.exception]
    texts = visible_texts(at)
    share, cjk, latin = cjk_share(texts)
    leftovers = "\n".join(f"  [{kind}] {text[:100]!r}" for kind, text in untranslated(texts)[:15])
    assert share >= MIN_CJK_SHARE, f"{path}: {share:.0%} CJK ({cjk} of {cjk + latin} letters); untranslated:\n{leftovers}"
    assert not untranslated(texts, min_letters=20), f"{path}: text that bypasses the translation function:\n{leftovers}"
    assert CJK.search(at.title[0].value)
    sidebar = " ".join(text for _kind, text in visible_texts(at.sidebar))
    assert "幻灯片与分享" in sidebar and "计算设备" in sidebar


ALL_METHODS_ZH = ["直接外推", "位置插值 (PI)", "NTK-aware", "动态 NTK", "NTK-by-parts", "YaRN", "Llama-3 缩放",
                  "LongRoPE", "换底 (ABF)"]


@pytest.mark.parametrize(("path", "query"), [
    ("app_pages/frequencies.py", {"src": "真实模型", "preset": "DeepSeek-V3", "slide": "true"}),
    ("app_pages/frequencies.py", {"src": "粘贴 config.json", "methods": ALL_METHODS_ZH, "s2": "4×", "view": "mod 2π"}),
    ("app_pages/decay.py", {"src": "真实模型", "preset": "Phi-3.5-mini-instruct", "methods": ALL_METHODS_ZH}),
    ("app_pages/beta_base.py", {"bfor": "普通的数", "P": "5"}),
])
def test_other_views_read_in_chinese_too(path, query, one_torch_thread):
    """A real model's note, a pasted config, every method, the slide style: text the default view does not show."""
    at = run_page_with_sidebar(path, {"lang": "zh", **WHOLE, **query})
    assert not at.exception, [e.message for e in at.exception]
    assert not at.warning, [w.value for w in at.warning]  # every URL value was understood
    texts = visible_texts(at)
    share = cjk_share(texts)[0]
    leftovers = "\n".join(f"  [{kind}] {text[:100]!r}" for kind, text in untranslated(texts)[:15])
    assert share >= MIN_CJK_SHARE and not untranslated(texts, min_letters=20), leftovers


def test_downloads_follow_the_language(one_torch_thread):
    at = run_page_with_sidebar("app_pages/frequencies.py", {"lang": "zh"})
    with use_language("zh"):  # AppTest formats option labels outside the script run
        open_export_menus(at)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "下载本页全部图表（ZIP）" in labels
    captions = " ".join(c.value for c in at.caption)
    assert "frequencies_angle-heatmaps_lang-zh" in captions  # file names carry the language, like the URL
    titles = [f["layout"]["title"]["text"] for f in _chart_figures(at)]
    assert titles and all(CJK.search(title) for title in titles)  # the files render these figures


def _chart_figures(at):
    from tests.conftest import chart_figures

    return chart_figures(at)


def test_a_bad_link_value_is_explained_in_chinese():
    at = run_page_with_sidebar("app_pages/frequencies.py", {"lang": "zh", "d": "999"})
    assert any("链接把 **头维度 d** 设为 `999`" in w.value for w in at.warning)


def test_a_config_error_from_the_core_is_shown_in_chinese():
    at = run_page_with_sidebar("app_pages/frequencies.py", {"lang": "zh", "src": "粘贴 config.json",
                                                        "config": '{"hidden_size": 64, "rope_theta": 0.5}'})
    errors = " ".join(e.value for e in at.error)
    assert "这些设置无法使用：config.json 必须给出头的宽度" in errors


# ---- the switch, the URL and the browser's language ------------------------------------------------

SETTINGS = {"d": "64", "base": "500,000", "methods": ["Direct extrapolation", "YaRN"], "s": "8×", "view": "angle",
            "mark": "false", "slide": "true"}


def _widget_values(at) -> dict:
    return {w.key: w.value for w in at.get("select_slider") + at.get("multiselect") + at.get("radio")
            + at.get("toggle") if w.key and not w.key.startswith("_")}


def test_switching_language_keeps_every_other_setting(one_torch_thread):
    at = page_test("app_pages/frequencies.py", SETTINGS)
    at.run()
    before_url, before_values = dict(at.query_params), _widget_values(at)
    assert before_values["methods"] == ["direct", "yarn"] and before_values["view"] == "angle"

    at.get("button_group")[0].set_value("zh").run()
    assert not at.exception
    assert CJK.search(at.title[0].value)
    url = dict(at.query_params)
    assert url.pop("lang") == "zh"
    assert url.keys() == before_url.keys()
    assert {k: url[k] for k in ("d", "base", "s", "mark", "slide")} == {k: before_url[k] for k in
                                                                         ("d", "base", "s", "mark", "slide")}
    assert url["methods"] == ["直接外推", "YaRN"] and url["view"] == "角度"  # option labels in the new language
    assert _widget_values(at) == before_values
    assert not at.warning  # no control dropped its value

    # AppTest formats option labels outside the script run; give it the page's language for the way back
    with use_language("zh"):
        at.get("button_group")[0].set_value("en").run()
    assert not at.exception and not CJK.search(at.title[0].value)
    url = dict(at.query_params)
    assert url.pop("lang") == "en"
    assert url == before_url and _widget_values(at) == before_values


def test_a_run_reads_the_language_once_and_again_after_the_switch(one_torch_thread, monkeypatch):
    from ui import language

    reads = []
    read = language._read_language
    monkeypatch.setattr(language, "_read_language", lambda: reads.append(1) or read())
    at = page_test("app_pages/frequencies.py", SETTINGS)
    at.run()
    assert 1 <= len(reads) <= 3  # not once per translated string (hundreds a run)
    reads.clear()
    at.get("button_group")[0].set_value("zh").run()
    assert not at.exception and CJK.search(at.title[0].value) and len(reads) <= 3
    reads.clear()
    with use_language("zh"):  # AppTest formats option labels outside the script run
        at.run()  # the next run reads it afresh, and finds it unchanged
    assert CJK.search(at.title[0].value) and 1 <= len(reads) <= 3


@pytest.mark.parametrize(("locale", "lang", "expected"), [
    ("zh-CN", None, "zh"), ("zh-TW", None, "zh"), ("zh", None, "zh"), ("fr-FR", None, "en"), (None, None, "en"),
    ("zh-CN", "en", "en"), ("en-US", "zh", "zh"), ("zh-CN", "xx", "zh"), ("de-DE", "xx", "en"),
])
def test_the_link_then_the_browser_choose_the_language(locale, lang, expected):
    at = run_page_with_sidebar("app_pages/glossary.py", {"lang": lang} if lang else None, locale=locale)
    assert not at.exception
    assert bool(CJK.search(at.title[0].value)) == (expected == "zh")
    assert at.get("button_group")[0].value == expected
    # a link keeps its language: any language other than English stands in the URL, and a bad one is corrected
    assert at.query_params.get("lang") == (None if expected == "en" and lang is None else expected)


@pytest.mark.parametrize(("query", "locale", "url"), [
    ({"lang": "en", "methods": ["直接外推", "位置插值 (PI)"], "view": "角度"}, None,
     {"lang": "en", "methods": ["Direct extrapolation", "Position Interpolation"], "view": "angle"}),
    ({"methods": ["Direct extrapolation", "Position Interpolation"], "view": "angle"}, "zh-CN",
     {"lang": "zh", "methods": ["直接外推", "位置插值 (PI)"], "view": "角度"}),
])
def test_a_link_in_one_language_opens_whole_in_the_other(query, locale, url, one_torch_thread):
    """The controls take every option the link names, and the address bar names them in the page's language
    (Streamlit alone would drop the labels it cannot read, from the control and from the link)."""
    at = run_page_with_sidebar("app_pages/frequencies.py", query, locale=locale)
    values = _widget_values(at)
    assert values["methods"] == ["direct", "pi"] and values["view"] == "angle"
    assert not at.warning
    assert {key: at.query_params[key] for key in url} == url


# ---- figures and exports -------------------------------------------------------------------------

def test_export_cli_writes_every_figure_in_chinese(tmp_path, one_torch_thread, small_training_run):
    from lessons import all_lessons
    from lessons.export import main

    small = [arg for name, value in SMALL_TRAINING.items() for arg in ("--set", f"training.{name}={value}")]
    assert main(["--lang", "zh", "--format", "json", "--out", str(tmp_path), *small]) == 0
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == sum(len(lesson.figures) for lesson in all_lessons().values())
    for path in files:
        assert path.stem.endswith("_lang-zh")
        layout = json.loads(path.read_text(encoding="utf-8"))["layout"]
        assert CJK.search(layout["title"]["text"]), path.name
        axes = [axis["title"]["text"] for name, axis in layout.items()
                if re.fullmatch(r"[xy]axis\d*", name) and (axis.get("title") or {}).get("text")]
        for title in axes:  # Chinese, or nothing but maths (θ′ᵢ / θᵢ, PE(t)·PE(t+k))
            cjk, latin = letter_counts(title)
            assert cjk or not latin, f"{path.name}: axis title {title!r}"
    assert current_language() == "en"  # the CLI's language does not outlive it


def test_figures_in_chinese_keep_their_data_and_meta():
    from lessons import all_lessons

    lesson = all_lessons()["frequencies"]
    english = lesson.figure("wavelengths")
    with use_language("zh"):
        chinese = lesson.figure("wavelengths")
    assert english is not chinese and english.layout.title.text != chinese.layout.title.text
    assert [t.meta for t in english.data] == [t.meta for t in chinese.data]
    assert all(np.array_equal(a.y, b.y) for a, b in zip(english.data, chinese.data, strict=True))
    assert all(CJK.search(text) for text in figure_texts(chinese.to_plotly_json()) if letter_counts(text)[1] > 8)


def test_slide_style_measures_chinese_titles_as_wide_as_they_are():
    import plotly.graph_objects as go

    from figures.slides import FONT_FACTOR, SLIDE_WIDTH, slide_style, text_width
    from figures.theme import TEMPLATE, new_figure

    assert text_width("位置编码", 20) == 80 and text_width("abcd", 20) == pytest.approx(44)
    full = round(TEMPLATE.layout.title.font.size * FONT_FACTOR)  # a slide title's size when it fits
    title = "注意力温度随缩放倍数的变化：" * 4  # 56 wide characters: too wide for a slide at full size
    slide = slide_style(new_figure(title).add_trace(go.Scatter(x=[0, 1], y=[0, 1])))
    size = slide.layout.title.font.size
    assert size < full and text_width(title, size) <= SLIDE_WIDTH
    english = slide_style(new_figure("Attention temperature, " * 2).add_trace(go.Scatter(x=[0, 1], y=[0, 1])))
    assert english.layout.title.font.size == full


@pytest.mark.browser
def test_the_switch_in_a_real_browser_keeps_the_settings_and_follows_the_reader():
    """Chromium with a Chinese locale opens an English link in Chinese, the switch turns it to English and back
    with every setting kept, and the next page stays in the chosen language."""
    from urllib.parse import parse_qs, urlsplit

    from benchmarks.harness import browser, chromium_available, page_errors, streamlit_server, wait_for_app_idle

    pytest.importorskip("playwright.sync_api")
    if not chromium_available():
        pytest.skip("Chromium is not installed (apt install chromium)")

    def settle(page):
        page.wait_for_timeout(300)
        wait_for_app_idle(page)
        page.locator("h1").first.wait_for()

    with streamlit_server() as (base_url, _seconds), browser() as chromium:
        context = chromium.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN")
        page = context.new_page()
        page.goto(f"{base_url}/frequencies?d=64&methods=Direct+extrapolation&methods=YaRN")
        settle(page)
        assert page.locator("h1").first.inner_text() == "θ 热力图与缩放方法"
        assert parse_qs(urlsplit(page.url).query) == {"d": ["64"], "methods": ["直接外推", "YaRN"], "lang": ["zh"]}
        page.get_by_role("radio", name="English").click()
        page.get_by_role("heading", name="θ heatmaps & scaling methods").wait_for()
        assert parse_qs(urlsplit(page.url).query) == {"d": ["64"], "methods": ["Direct extrapolation", "YaRN"],
                                                     "lang": ["en"]}
        page.get_by_role("radio", name="中文").click()
        page.get_by_role("heading", name="θ 热力图与缩放方法").wait_for()
        page.locator('[data-testid="stSidebarNav"]').get_by_text("远程衰减").click()
        page.get_by_role("heading", name="远程衰减").first.wait_for()
        assert parse_qs(urlsplit(page.url).query)["lang"] == ["zh"]
        assert page_errors(page) == []


@pytest.mark.browser
def test_chinese_titles_render_as_glyphs_not_boxes():
    """Two different Chinese titles render differently, and differently from characters no font has
    (missing-glyph boxes would all look alike): the CJK font is installed and the font stack reaches it."""
    from PIL import Image

    from figures.export import find_browser, render
    from figures.theme import new_figure

    if find_browser() is None:
        pytest.skip("no Chrome/Chromium to render with (apt install chromium)")

    def title_pixels(text: str) -> np.ndarray:
        import io

        figure = new_figure(text)
        figure.update_layout(width=500, height=120, xaxis_visible=False, yaxis_visible=False)
        image = Image.open(io.BytesIO(render(figure, "png", scale=1))).convert("L")
        return np.asarray(image)[:45, :300] < 128  # the title's band: dark pixels are ink

    first, second, boxes = title_pixels("位置编码外推"), title_pixels("旋转角度内插"), title_pixels("\ue000" * 6)
    assert first.sum() > 200 and second.sum() > 200
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, boxes)


def test_sentences_run_together_in_chinese_and_are_spaced_in_english():
    from i18n import sentences

    with use_language("en"):
        assert sentences(["One.", "", "Two."]) == "One. Two."
    with use_language("zh"):
        assert sentences(["一。", "", "二。"]) == "一。二。"


def test_chinese_captions_run_their_sentences_together():
    """Captions built from several sentences join them as the language does: no space after 。 in Chinese."""
    from lessons import all_lessons

    checked = 0
    for lesson in all_lessons().values():
        if getattr(lesson, "expensive", False):
            continue
        for name in lesson.figures:
            with use_language("zh"):
                caption = lesson.caption(name)
            if caption:
                checked += 1
                assert "。 " not in caption, (lesson.name, name, caption)
    assert checked >= 20


def test_the_decay_bound_caption_lists_its_places_with_the_languages_separator():
    from lessons import decay

    with use_language("zh"):
        caption = decay.LESSON.caption("bound")
    assert "；" in caption and "; " not in caption and "。 " not in caption
