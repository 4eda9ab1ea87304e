"""Export controls on pages (AppTest): download buttons on every figure, the page ZIP, the slide
style, the share link, and URL parameters round-tripping (garbage values included)."""

from __future__ import annotations

import io
import textwrap
import zipfile
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from figures import export
from figures.slides import SLIDE_FONT_SIZE, SLIDE_HEIGHT, SLIDE_WIDTH
from pe_core import RopeSpec, rope_frequencies
from tests.conftest import ROOT, chart_figures, drawn_charts, figure_titled, open_export_menus, opens_with_a_chart
from tests.test_export import needs_browser, pdf_page_size, png_size
from tests.visible_text import run_page_with_sidebar
from ui.lesson import PART_KEY, WHOLE_PAGE
from ui.pages import available_pages

PAGE_URL = "http://localhost:8501/demo_page"

# A page as app.py runs it: the shared start, a URL-bound slider, two figures through ui.show_figure.
DEMO_PAGE = '''
    import numpy as np
    import plotly.graph_objects as go
    import streamlit as st

    from figures.theme import new_figure
    from pe_core import RopeSpec, rope_frequencies
    from ui import params, show_figure
    from ui.layout import start_page

    start_page(charts=True)
    with st.sidebar:
        d = params.select_slider("Head dim d", "d", (8, 16, 32, 64, 128), 64)
    theta = rope_frequencies(RopeSpec(head_dim=d)).inv_freq.numpy()
    pairs = np.arange(theta.size)
    frequencies = new_figure("RoPE frequencies θ_i", xaxis_title="pair index i", yaxis_title="θ_i (rad/token)")
    frequencies.add_trace(go.Scatter(x=pairs, y=theta, name="default RoPE"))
    show_figure(frequencies, "demo_page_freq", caption="θ_i = b^(−2i/d)")
    wavelengths = new_figure("Wavelengths 2π/θ_i", xaxis_title="pair index i", yaxis_title="wavelength (tokens)")
    wavelengths.add_trace(go.Scatter(x=pairs, y=2 * np.pi / theta, name="default RoPE"))
    show_figure(wavelengths, "wave")
'''


@pytest.fixture
def demo_page(tmp_path):
    path = tmp_path / "demo_page.py"
    path.write_text(textwrap.dedent(DEMO_PAGE))
    return path


@pytest.fixture
def deferred(monkeypatch):
    """Every download registered during a run: (file name, mime type, the callable Streamlit runs on click)."""
    registered: list[tuple[str, str, object]] = []
    original = MediaFileManager.add_deferred

    def spy(self, data, mimetype, coordinates, file_name=None, **kwargs):
        registered.append((file_name, mimetype, data))
        return original(self, data, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    return registered


def run(path, query: dict | None = None, url: str | None = PAGE_URL, *, exports_open: bool = True) -> AppTest:
    """Run the page; with ``exports_open`` every figure's Export popover is then opened (a second run)."""
    at = AppTest.from_file(str(path), default_timeout=60)
    if url:
        at.context["url"] = url
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    if exports_open:
        open_export_menus(at)
    assert not at.exception, [e.message for e in at.exception]
    return at


def download_buttons(at) -> list:
    return list(at.get("download_button"))


def share_link(at) -> str:
    (link,) = [c.value for c in at.code if c.value.startswith("http")]
    return link


def expected_theta(head_dim: int) -> np.ndarray:
    return 10000.0 ** (-np.arange(0, head_dim, 2) / head_dim)


# ---- buttons and names ------------------------------------------------------------------------

def test_each_figure_gets_png_svg_pdf_buttons_named_after_page_and_view(demo_page, deferred):
    at = run(demo_page, {"d": "32"})
    buttons = download_buttons(at)
    assert [b.label for b in buttons] == ["PNG", "SVG", "PDF", "HTML"] * 2 + ["Download all figures on this page (ZIP)"]
    # data is a callable kept for the click: nothing was rendered to build the page
    assert all(b.proto.HasField("deferred_file_id") and not b.proto.url for b in buttons)
    # (after the first run's ZIP: that run drew the page with every Export menu closed)
    assert [(name, mime) for name, mime, _ in deferred[1:]] == [
        ("demo_page_freq_d32.png", "image/png"), ("demo_page_freq_d32.svg", "image/svg+xml"),
        ("demo_page_freq_d32.pdf", "application/pdf"), ("demo_page_freq_d32.html", "text/html"),
        ("demo_page_d32.zip", "application/zip"),
        ("demo_page_wave_d32.png", "image/png"), ("demo_page_wave_d32.svg", "image/svg+xml"),
        ("demo_page_wave_d32.pdf", "application/pdf"), ("demo_page_wave_d32.html", "text/html"),
    ]
    np.testing.assert_allclose(figure_titled(at, "RoPE frequencies")["data"][0]["y"], expected_theta(32))


def test_a_figures_buttons_are_made_only_while_its_export_menu_is_open(demo_page, deferred):
    at = run(demo_page, {"d": "32"}, exports_open=False)
    zip_label = "Download all figures on this page (ZIP)"
    assert [b.label for b in download_buttons(at)] == [zip_label]  # a slider move sends no figure buttons
    assert len(at.get("popover")) == 2  # one closed Export menu under each figure
    first, second = (chart.key for chart in drawn_charts(at))
    open_export_menus(at, [first])
    assert sorted(b.label for b in download_buttons(at)) == sorted(["PNG", "SVG", "PDF", "HTML", zip_label])
    assert {name for name, _, _ in deferred if not name.endswith(".zip")} == {
        f"demo_page_freq_d32.{fmt}" for fmt in ("png", "svg", "pdf", "html")}


def test_page_reruns_render_no_images(demo_page, deferred, monkeypatch):
    calls = []
    monkeypatch.setattr(export._SERVER, "render", lambda *a, **k: calls.append(a) or b"")
    at = run(demo_page)
    at.select_slider[0].set_value(128).run()
    at.toggle[0].set_value(True).run()
    assert not at.exception
    # the first run (Export menus closed): the ZIP; then three runs of two figures' four buttons and the ZIP
    assert len(deferred) == 1 + 3 * (2 * 4 + 1)
    assert calls == []
    next(build for name, _, build in reversed(deferred) if name.endswith(".png"))()  # a click renders
    assert len(calls) == 1


def test_toolbar_svg_download_is_named_and_sized_like_the_export(demo_page):
    at = run(demo_page, {"slide": "true"})
    configs = [chart.config for chart in drawn_charts(at)]
    assert [c["toImageButtonOptions"] for c in configs] == [
        {"format": "svg", "scale": 1, "filename": f"demo_page_{key}_slide", "width": SLIDE_WIDTH,
         "height": SLIDE_HEIGHT} for key in ("freq", "wave")]


@needs_browser
def test_clicked_buttons_give_valid_files(demo_page, deferred):
    run(demo_page, {"d": "16"})
    files = {name: data() for name, _, data in deferred}
    assert png_size(files["demo_page_freq_d16.png"]) == (export.DEFAULT_WIDTH * export.PNG_SCALE,
                                                          export.DEFAULT_HEIGHT * export.PNG_SCALE)
    svg = files["demo_page_wave_d16.svg"].decode()
    assert "Wavelengths 2π/θ_i" in svg and "wavelength (tokens)" in svg and "pair index i" in svg
    assert pdf_page_size(files["demo_page_freq_d16.pdf"]) == pytest.approx(
        (export.DEFAULT_WIDTH * 0.75, export.DEFAULT_HEIGHT * 0.75), abs=1)
    with zipfile.ZipFile(io.BytesIO(files["demo_page_d16.zip"])) as archive:
        assert archive.namelist() == ["demo_page_freq_d16.png", "demo_page_wave_d16.png"]
        assert archive.comment.decode() == f"{PAGE_URL}?d=16"
        assert all(png_size(archive.read(n)) == (2000, 1200) for n in archive.namelist())


@needs_browser
def test_zip_holds_one_file_per_figure_in_the_chosen_format(demo_page, deferred):
    at = run(demo_page, {"slide": "true"})
    at.radio(key="_export_zip_format").set_value("svg").run()
    name, mime, build = [entry for entry in deferred if entry[0].endswith(".zip")][-1]
    assert (name, mime) == ("demo_page_slide.zip", "application/zip")
    with zipfile.ZipFile(io.BytesIO(build())) as archive:
        assert archive.namelist() == ["demo_page_freq_slide.svg", "demo_page_wave_slide.svg"]
        svgs = [archive.read(n).decode() for n in archive.namelist()]
    assert all(f'width="{SLIDE_WIDTH}"' in s and f'height="{SLIDE_HEIGHT}"' in s for s in svgs)
    assert "RoPE frequencies θ_i" in svgs[0] and "Wavelengths 2π/θ_i" in svgs[1]


def test_without_a_browser_the_buttons_say_how_to_get_one(demo_page, monkeypatch):
    monkeypatch.setattr(export, "find_browser", lambda: None)
    at = run(demo_page)
    buttons = download_buttons(at)
    images = [b for b in buttons if b.label in ("PNG", "SVG", "PDF") or "ZIP" in b.label]
    assert images and all(b.proto.disabled for b in images)
    assert [b.proto.disabled for b in buttons if b.label == "HTML"] == [False, False]  # drawn by the reader's browser
    assert any("apt install chromium" in c.value for c in at.caption)
    configs = [chart.config for chart in drawn_charts(at)]
    assert all(c["toImageButtonOptions"]["format"] == "svg" for c in configs)


# ---- slide style ------------------------------------------------------------------------------

def test_slide_style_from_the_url_is_previewed_and_names_the_files(demo_page, deferred):
    at = run(demo_page, {"slide": "true"})
    assert at.toggle(key="slide").value is True
    for figure in chart_figures(at):
        layout = figure["layout"]
        assert (layout["width"], layout["height"], layout["font"]["size"]) == (SLIDE_WIDTH, SLIDE_HEIGHT,
                                                                                SLIDE_FONT_SIZE)
        assert layout["paper_bgcolor"] == "white"
    assert figure_titled(at, "RoPE frequencies")
    assert {name for name, _, _ in deferred} >= {"demo_page_freq_slide.png", "demo_page_slide.zip"}

    deferred.clear()
    at = run(demo_page, {"slide": "true", "stitle": "false"})
    assert all(not f["layout"].get("title", {}).get("text") for f in chart_figures(at))
    assert "demo_page_wave_slide_notitle.pdf" in {name for name, _, _ in deferred}


def test_slide_switch_on_screen(demo_page):
    at = run(demo_page)
    assert all("width" not in f["layout"] for f in chart_figures(at))
    at.toggle(key="slide").set_value(True).run()
    assert all(f["layout"]["width"] == SLIDE_WIDTH for f in chart_figures(at))
    at.toggle(key="stitle").set_value(False).run()
    assert all(not f["layout"].get("title", {}).get("text") for f in chart_figures(at))


# ---- URLs -------------------------------------------------------------------------------------

def test_share_link_round_trips_the_view(demo_page):
    first = run(demo_page, {"d": "16", "slide": "true"})
    link = share_link(first)
    assert urlsplit(link)._replace(query="").geturl() == PAGE_URL
    query = dict(parse_qsl(urlsplit(link).query))
    assert query == {"d": "16", "slide": "true"}
    second = run(demo_page, query)
    assert second.select_slider(key="d").value == 16 and second.toggle(key="slide").value is True
    assert [c.figure for c in drawn_charts(second)] == [c.figure for c in drawn_charts(first)]
    np.testing.assert_allclose(chart_figures(second)[0]["data"][0]["y"], expected_theta(16))
    assert share_link(second) == link


def test_share_link_at_defaults_is_the_bare_page(demo_page):
    assert share_link(run(demo_page)) == PAGE_URL


@pytest.mark.parametrize(("query", "bad"), [
    ({"d": "7", "slide": "banana"}, {"d", "slide"}),
    ({"d": "not-a-number", "slide": "true", "stitle": "perhaps"}, {"d", "stitle"}),
    ({"d": ["16", "32"], "slide": "1e9"}, {"d", "slide"}),
])
def test_garbage_url_values_fall_back_with_a_note(demo_page, query, bad):
    at = run(demo_page, query, exports_open=False)  # the note is for the run that found the bad values
    notes = " ".join(w.value for w in at.warning)
    labels = {"d": "Head dim d", "slide": "Slide style", "stitle": "Keep figure titles"}
    assert notes.count("showing the default") == len(bad)
    for key in bad:
        assert labels[key] in notes
    theta = figure_titled(at, "RoPE frequencies")["data"][0]["y"]
    np.testing.assert_allclose(theta, expected_theta(64))
    slide_on = query.get("slide") == "true"
    assert all(("width" in f["layout"]) == slide_on for f in chart_figures(at))


# ---- the real app -----------------------------------------------------------------------------

def test_app_home_has_the_shared_box_and_no_zip(deferred):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.context["url"] = "http://localhost:8501/"
    at.query_params["slide"] = "banana"
    at.run()
    assert not at.exception
    assert at.toggle(key="slide").value is False
    assert any("Slide style" in w.value for w in at.warning)
    assert share_link(at).rstrip("/") == "http://localhost:8501"  # the garbage value is gone from the link
    assert not [name for name, _, _ in deferred if name.endswith(".zip")]  # Home has no figures


FIGURE_PAGES = [p.path for p in available_pages()  # the tour shows a figure once the reader has answered
                if p.path not in ("app_pages/home.py", "app_pages/tour.py", "app_pages/training.py", "app_pages/glossary.py",
                                  "app_pages/sources.py")]


@pytest.mark.parametrize("page", FIGURE_PAGES)
def test_every_figure_on_every_page_has_export_buttons(page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    info = next(p for p in available_pages() if p.path == page)
    if not opens_with_a_chart(info):  # a page in parts whose first part has no figure: open the whole page
        at.query_params[PART_KEY] = WHOLE_PAGE
    at.run()
    open_export_menus(at)
    assert not at.exception, [e.message for e in at.exception]
    charts = drawn_charts(at)
    assert charts, f"{page} shows no figure"
    exports = ["PNG", "SVG", "PDF", "HTML"]  # a page may offer other downloads (a report, a config) besides these
    assert [b.label for b in download_buttons(at) if b.label in exports] == exports * len(charts)


def test_expected_theta_matches_the_engine():
    # guards the helper the other tests compare against
    np.testing.assert_allclose(rope_frequencies(RopeSpec(head_dim=32)).inv_freq.numpy(), expected_theta(32))


def test_a_chart_keeps_its_identity_when_its_figure_changes():
    # The browser re-creates a chart whose element id changed and updates one whose id stayed (ui.chart). The id
    # is the chart's key alone: another head size gives the methods chart a new figure and a new file name (it
    # shows d) under the same id, and leaves RoFormer's bound above it as it was.
    from lessons import decay
    from lessons.base import SCREEN
    from lessons.export import stem_for

    def charts(at) -> dict:
        return {chart.key: chart for chart in drawn_charts(at)}

    default = charts(run_page_with_sidebar("app_pages/decay.py", {"part": "all"}))
    other = charts(run_page_with_sidebar("app_pages/decay.py", {"d": "256", "part": "all"}))
    assert {key: chart.id for key, chart in other.items()} == {key: chart.id for key, chart in default.items()}
    assert other["decay_bound"].figure == default["decay_bound"].figure
    assert other["decay_bound"].config["toImageButtonOptions"]["filename"] == "decay_bound"
    assert other["decay_bound-methods"].figure != default["decay_bound-methods"].figure
    assert other["decay_bound-methods"].config["toImageButtonOptions"]["filename"] == "decay_bound-methods_d256" \
        == stem_for(decay.LESSON, "bound-methods", decay.LESSON.settings(head_dim=256), SCREEN)


def test_a_lesson_pages_zip_names_each_figure_after_its_own_settings(deferred):
    from lessons import decay

    at = run_page_with_sidebar("app_pages/decay.py", {"d": "256"})
    at.radio(key="_export_zip_format").set_value("html").run()
    build = [entry for entry in deferred if entry[0].endswith(".zip")][-1][2]
    with zipfile.ZipFile(io.BytesIO(build())) as archive:
        names = archive.namelist()
    # only the figures drawn from the RoPE set-up say d256; every figure of the lesson is there, once
    assert sorted(names) == sorted(f"decay_{name}{'_d256' if 'rope' in decay.LESSON.figure_spec(name).groups else ''}"
                                   ".html" for name in decay.LESSON.figures)
    assert "decay_bound-methods_d256.html" in names and "decay_bound.html" in names
