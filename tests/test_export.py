"""Figure export without Streamlit: slide style, file names, ZIPs, figure discovery, the CLI, and
the PNG / SVG / PDF bytes kaleido renders (those need Chrome/Chromium; CI installs it)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import struct
import zipfile
import zlib

import numpy as np
import plotly.graph_objects as go
import pytest

from figures import export
from figures.slides import SLIDE_HEIGHT, SLIDE_WIDTH, slide_style
from figures.theme import BASE_FONT_SIZE, PALETTE, TEMPLATE, new_figure
from lessons import export as cli
from lessons.base import FigureSpec, Lesson, LessonSettings, figure_registry, setting

needs_browser = pytest.mark.skipif(
    export.find_browser() is None,
    reason="no Chrome/Chromium to render with (install it: apt install chromium, or set BROWSER_PATH)",
)

TRACE_COLOUR = PALETTE[1]  # #D55E00: a colour nothing else in the template uses
TRACE_RGB = tuple(int(TRACE_COLOUR[i:i + 2], 16) for i in (1, 3, 5))


def line_figure(colour: str = TRACE_COLOUR, title: str = "Rotation angle by position") -> go.Figure:
    figure = new_figure(title, xaxis_title="Position m (tokens)", yaxis_title="Angle m·θ (rad)")
    x = np.arange(200)
    figure.add_trace(go.Scatter(x=x, y=np.sin(x / 20), name="Position Interpolation", line=dict(color=colour)))
    figure.add_trace(go.Scatter(x=x, y=np.cos(x / 20), name="markers", mode="markers",
                                marker=dict(size=4, color="#999999")))
    figure.add_annotation(text="L = 4096", x=100, y=0.5, showarrow=False, font=dict(size=12))
    figure.add_hline(y=0.0, line=dict(dash="dot", width=1))
    return figure


def heatmap_figure() -> go.Figure:
    figure = new_figure("Angles", xaxis_title="pair index i", yaxis_title="position m")
    z = np.outer(np.arange(30), 10000.0 ** (-np.arange(16) / 16))
    figure.add_trace(go.Heatmap(z=z, colorbar=dict(title=dict(text="rad", font=dict(size=10)))))
    return figure


# ---- slide style ------------------------------------------------------------------------------

def test_slide_style_is_a_16_by_9_white_canvas_with_larger_type():
    styled = slide_style(line_figure())
    assert (styled.layout.width, styled.layout.height) == (SLIDE_WIDTH, SLIDE_HEIGHT)
    assert SLIDE_WIDTH * 9 == SLIDE_HEIGHT * 16
    assert styled.layout.paper_bgcolor == styled.layout.plot_bgcolor == "white"
    assert styled.layout.font.size > 1.5 * BASE_FONT_SIZE
    assert styled.layout.title.font.size > TEMPLATE.layout.title.font.size * 1.5
    # an explicitly small font grows in proportion, so the figure's hierarchy of sizes survives
    assert styled.layout.annotations[0].font.size == pytest.approx(12 * styled.layout.font.size / BASE_FONT_SIZE,
                                                                   abs=0.1)


def test_slide_style_thickens_lines_markers_and_shapes_but_keeps_the_data():
    original = line_figure()
    styled = slide_style(original)
    template_width = TEMPLATE.data.scatter[0].line.width
    assert styled.data[0].line.width > 1.5 * template_width
    assert styled.data[1].marker.size > 4
    assert styled.layout.shapes[0].line.width > 1
    for before, after in zip(original.data, styled.data, strict=True):
        np.testing.assert_array_equal(np.asarray(before.x), np.asarray(after.x))
        np.testing.assert_array_equal(np.asarray(before.y), np.asarray(after.y))
        assert before.name == after.name
    assert styled.data[0].line.color == TRACE_COLOUR


def test_slide_style_leaves_its_input_alone():
    original = line_figure()
    before = original.to_json()
    slide_style(original, title=False)
    assert original.to_json() == before


def test_slide_title_is_optional():
    assert slide_style(line_figure(), title=True).layout.title.text == "Rotation angle by position"
    untitled = slide_style(line_figure(), title=False)
    assert not untitled.layout.title.text
    assert untitled.layout.margin.t < slide_style(line_figure()).layout.margin.t


def test_slide_style_scales_colour_bar_fonts_of_heatmaps():
    styled = slide_style(heatmap_figure())
    assert styled.data[0].colorbar.title.font.size == pytest.approx(10 * styled.layout.font.size / BASE_FONT_SIZE,
                                                                    abs=0.1)
    np.testing.assert_array_equal(np.asarray(styled.data[0].z), np.asarray(heatmap_figure().data[0].z))


def test_slide_style_shrinks_axis_titles_that_would_overrun_their_axis():
    long_title = "period 2π·b^(2⌊j/2⌋/d) of dimension j, in tokens, on a logarithmic scale"
    figure = new_figure("Periods", xaxis_title="pair index i", yaxis_title=long_title)
    figure.add_trace(go.Scatter(x=[0, 1], y=[1, 2]))
    styled = slide_style(figure)
    assert styled.layout.xaxis.title.font.size is None  # short: inherits the slide's type size
    shrunk = styled.layout.yaxis.title.font.size
    assert 14 <= shrunk < styled.layout.font.size
    plot_height = SLIDE_HEIGHT - styled.layout.margin.t - styled.layout.margin.b
    assert 0.55 * shrunk * len(long_title) <= plot_height or shrunk == 14


def test_a_long_panel_title_shrinks_with_its_neighbours_not_alone():
    """Six narrow panels: "Position Interpolation" needs a smaller size to stay over its panel; the other panels'
    titles take the same size, so no panel's title reads smaller than its neighbours."""
    from plotly.subplots import make_subplots

    names = ["Direct", "Position Interpolation", "NTK-aware", "YaRN", "Dynamic", "Llama 3"]
    figure = make_subplots(rows=1, cols=6, subplot_titles=names)
    for column in range(1, 7):
        figure.add_trace(go.Scatter(x=[0, 1], y=[1, 2]), row=1, col=column)
    figure.update_layout(template=TEMPLATE)
    styled = slide_style(figure)
    sizes = {note.text: note.font.size for note in styled.layout.annotations}
    assert set(sizes) == set(names)
    assert len(set(sizes.values())) == 1  # one size for all
    assert sizes["Direct"] < round(figure.layout.annotations[0].font.size * 22 / BASE_FONT_SIZE, 1)  # shrunk


def test_the_presenters_slide_has_no_text_under_its_least_size_and_wraps_what_would_be_cut():
    figure = new_figure("Ratio", xaxis_title="pair index i", yaxis_title="ratio", legend=dict(font=dict(size=10)))
    figure.add_trace(go.Scatter(x=[0, 1], y=[1, 2], name="NTK-by-parts: the paper's γ(r), a long legend entry"))
    figure.add_annotation(x=0.6, xref="x domain", y=1, text="1/s = 1/4: interpolate (PI) and more", xanchor="left",
                          showarrow=False, font=dict(size=9))
    styled = slide_style(figure, width=500, height=480, font_size=24, least=24)
    assert (styled.layout.width, styled.layout.height) == (500, 480)
    assert styled.layout.font.size == 24 and styled.layout.legend.font.size == 24
    assert styled.layout.annotations[0].font.size == 24 and "<br>" in styled.layout.annotations[0].text
    assert "<br>" in styled.data[0].name
    assert slide_style(figure).layout.annotations[0].font.size < 24  # the export's slide keeps its own sizes


def test_a_pdf_lifts_a_legend_standing_on_the_canvas_edge_and_nothing_else():
    """A PDF's page clipped the bottom border of a legend anchored to the canvas's bottom edge: the PDF draws it
    PDF_LEGEND_LIFT px higher; PNG and SVG, and legends placed otherwise, are drawn as they are."""
    from figures.export import PDF_LEGEND_LIFT, _for_format
    from figures.theme import LEGEND_BELOW

    figure = new_figure("t", height=400, legend=LEGEND_BELOW)
    figure.add_trace(go.Scatter(x=[0, 1], y=[1, 2], name="one"))
    lifted = _for_format(figure, "pdf")
    assert lifted.layout.legend.y == pytest.approx(LEGEND_BELOW["y"] + PDF_LEGEND_LIFT / 400)
    assert figure.layout.legend.y == LEGEND_BELOW["y"]  # the input is not changed
    assert _for_format(figure, "png") is figure and _for_format(figure, "svg") is figure
    beside = new_figure("t", height=400)
    assert _for_format(beside, "pdf") is beside


# ---- names, values, ZIPs ----------------------------------------------------------------------

def test_file_stem_reads_like_the_view():
    stem = export.file_stem("frequencies", "heatmap", params={"d": "128", "b": "10000.0", "methods": ["pi", "ntk"]})
    assert stem == "frequencies_heatmap_d128_b10000_methods-pi-ntk"
    assert export.file_stem("decay", params=[("preset", "Llama 3.1 8B/x")], tail=("slide",)) == \
        "decay_preset-Llama-3.1-8B-x_slide"
    assert re.fullmatch(r"[A-Za-z0-9_.+-]+", export.file_stem("a/b", "../c d", params={"k": "<>|"}))


def test_long_file_stems_are_cut_but_stay_distinct():
    one = export.file_stem("page", params={"methods": ["m" * 10] * 30 + ["a"]})
    two = export.file_stem("page", params={"methods": ["m" * 10] * 30 + ["b"]})
    assert len(one) <= export.MAX_STEM_LENGTH and len(two) <= export.MAX_STEM_LENGTH
    assert one != two


@pytest.mark.parametrize(("text", "value"), [
    ("64", 64), ("1e4", 10000.0), ("500_000", 500000), ("true", True), ("off", False),
    ("pi,ntk", ("pi", "ntk")), ("yarn,", ("yarn",)), ("log", "log"),
    ("__import__('os').system('x')", "__import__('os').system('x')"),  # text stays text: nothing is evaluated
])
def test_cli_values_are_parsed_as_literals(text, value):
    assert cli.parse_value(text) == value


def test_cli_settings_need_a_name():
    assert cli.parse_setting("frequencies.base=5e5") == ("frequencies.base", 500000.0)
    for bad in ("base", "=3", "a b=1", "x.y.z=1"):
        with pytest.raises(Exception, match="key=value"):
            cli.parse_setting(bad)


def test_selection_parsing():
    assert cli.parse_selection("frequencies:heatmap,decay, frequencies:ratio") == {
        "frequencies": {"heatmap", "ratio"}, "decay": None}
    assert cli.parse_selection("decay,decay:bound") == {"decay": None}
    assert cli.parse_selection(None) == {}


def test_zip_holds_exactly_the_given_files():
    files = {"a_fig.png": b"\x89PNG-bytes", "b_fig.svg": b"<svg/>", "c_fig.pdf": b"%PDF-1.4"}
    data = export.zip_files(files, comment="http://localhost:8501/frequencies?d=64")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == list(files)
        assert {name: archive.read(name) for name in archive.namelist()} == files
        assert archive.comment == b"http://localhost:8501/frequencies?d=64"
        assert archive.testzip() is None


def test_render_rejects_unknown_formats():
    with pytest.raises(ValueError, match="png, svg, pdf"):
        export.render(line_figure(), "gif")


def test_missing_browser_is_explained(monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    export.find_browser.cache_clear()
    try:
        assert export.find_browser() is None
        with pytest.raises(export.BrowserNotFound, match="apt install chromium"):
            export._KaleidoServer().render(line_figure().to_dict(), {"format": "svg"})
    finally:
        monkeypatch.delenv("BROWSER_PATH")
        export.find_browser.cache_clear()


# ---- the CLI over a test-local registry of two lessons ------------------------------------------


@dataclasses.dataclass(frozen=True)
class GoodSettings(LessonSettings):
    head_dim: int = setting(64, "Head dim d", key="d", options=(8, 16, 32, 64), group="main")
    base: float = setting(10_000.0, "Base b", key="base", options=(100.0, 10_000.0), group="main")
    methods: tuple = setting(("pi",), "Methods", key="methods", options=("pi", "ntk", "yarn"), group="main")


def _frequencies(result, style):
    pairs = list(range(result.head_dim // 2))
    theta = [result.base ** (-2 * i / result.head_dim) for i in pairs]
    figure = new_figure(f"Frequencies, d = {result.head_dim}", xaxis_title="pair index i",
                        yaxis_title="frequency θᵢ (rad/token)")
    figure.add_trace(go.Scatter(x=pairs, y=theta, name="+".join(result.methods), line_color="#D55E00"))
    return figure


def _wavelengths(result, style):
    figure = new_figure("Wavelengths", xaxis_title="pair index i", yaxis_title="wavelength (tokens)")
    figure.add_trace(go.Scatter(x=list(range(result.head_dim // 2)), y=[1.0] * (result.head_dim // 2)))
    return figure


@dataclasses.dataclass(frozen=True)
class NamedSettings(LessonSettings):
    length: int = setting(16, "Length", key="n", min_value=1, max_value=64)


DEMO_LESSONS = {
    "good": Lesson("good", "Good", GoodSettings, lambda s: s, figure_registry(
        FigureSpec("frequencies", "Frequencies", _frequencies), FigureSpec("wavelengths", "Wavelengths",
                                                                           _wavelengths))),
    "named": Lesson("named", "Named", NamedSettings, lambda s: s, figure_registry(
        FigureSpec("length", "Length", lambda r, style: new_figure(f"Length {r.length}",
                                                                   xaxis_title="position m (tokens)")))),
}


@pytest.fixture
def demo_lessons(monkeypatch):
    monkeypatch.setattr(cli, "all_lessons", lambda: DEMO_LESSONS)
    yield DEMO_LESSONS
    for lesson in DEMO_LESSONS.values():
        lesson.clear_caches()


def test_the_apps_lessons_are_found():
    from lessons import all_lessons

    lessons = all_lessons()
    assert "frequencies" in lessons
    assert not {"base", "export", "rope_setup", "format"} & set(lessons)


def test_settings_go_only_to_lessons_that_have_them(demo_lessons):
    figures = cli.collect(None, {"head_dim": 32, "length": 8, "methods": "yarn"}, lessons=demo_lessons)
    assert sorted(figures) == [("good", "frequencies"), ("good", "wavelengths"), ("named", "length")]
    assert len(figures[("good", "frequencies")].data[0].x) == 16
    assert figures[("good", "frequencies")].data[0].name == "yarn"  # one method became a tuple of one
    assert figures[("named", "length")].layout.title.text == "Length 8"
    scoped = cli.collect({"good": {"wavelengths"}}, {"good.d": 8}, lessons=demo_lessons)  # a URL key works too
    assert list(scoped) == [("good", "wavelengths")] and len(scoped[("good", "wavelengths")].data[0].x) == 4


@pytest.mark.parametrize(("selection", "overrides", "message"), [
    ({"nope": None}, {}, "No lesson nope"),
    ({"good": {"nope"}}, {}, "no figure nope"),
    (None, {"colour": "red"}, "No selected lesson has the setting 'colour'. Valid keys - good: head_dim"),
    ({"named": None}, {"head_dim": 8}, "No selected lesson has the setting 'head_dim'. Valid keys - named: length"),
    ({"named": None}, {"good.head_dim": 8}, "'good' is not among the selected lessons"),
    (None, {"head_dim": 12}, r"good: head_dim \(d\) must be one of: 8, 16, 32, 64 \(got 12\)"),
    (None, {"length": 99}, "named: length .* must be between 1 and 64"),
])
def test_bad_selections_and_settings_are_reported(demo_lessons, selection, overrides, message):
    with pytest.raises(ValueError, match=message):
        cli.collect(selection, overrides, lessons=demo_lessons)


def test_cli_lists_figures_and_settings_without_building_them(demo_lessons, capsys, monkeypatch):
    monkeypatch.setattr(cli, "render", lambda *a, **k: pytest.fail("--list must not render"))
    monkeypatch.setattr(Lesson, "figure", lambda *a, **k: pytest.fail("--list must not build"))
    assert cli.main(["--list"]) == 0
    assert capsys.readouterr().out.split() == ["good:frequencies", "good:wavelengths", "named:length"]
    assert cli.main(["--list-settings", "--only", "named"]) == 0
    assert "length (URL n) = 16 from 1 to 64" in capsys.readouterr().out


def test_cli_rejects_unknown_settings(demo_lessons, capsys):
    with pytest.raises(SystemExit):
        cli.main(["--out", "x", "--set", "colour=red"])
    assert "colour" in capsys.readouterr().err


def test_cli_writes_plotly_json_and_html_without_a_browser(demo_lessons, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "browser_available", lambda: False)
    out = tmp_path / "json"
    assert cli.main(["--out", str(out), "--format", "json,html", "--only", "good:frequencies", "--set", "d=8"]) == 0
    spec = json.loads((out / "good_frequencies_d8.json").read_text())
    assert spec["layout"]["title"]["text"] == "Frequencies, d = 8" and len(spec["data"][0]["x"]) == 4
    page = (out / "good_frequencies_d8.html").read_text()
    assert "Frequencies, d = 8" in page and len(page) > 1_000_000  # plotly.js inlined
    assert '<script src="http' not in page and 'src="https://cdn' not in page


# ---- rendered bytes (kaleido + Chromium) ------------------------------------------------------

def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert chunk == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def png_has_colour(data: bytes, rgb: tuple[int, int, int], at_least: int = 200) -> bool:
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).reshape(-1, 3).astype(int)
    return int((np.abs(pixels - np.array(rgb)).max(axis=1) <= 2).sum()) >= at_least


def pdf_page_size(data: bytes) -> tuple[float, float]:
    assert data.startswith(b"%PDF-"), "not a PDF"
    assert data.rstrip().endswith(b"%%EOF")
    assert len(re.findall(rb"/Type\s*/Page\b(?!s)", data)) == 1
    box = re.search(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", data)
    return float(box.group(1)), float(box.group(2))


def pdf_colours(data: bytes) -> set[tuple[float, float, float]]:
    colours = set()
    for stream in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            content = zlib.decompress(stream)
        except zlib.error:
            continue
        for r, g, b in re.findall(rb"([\d.]+) ([\d.]+) ([\d.]+) (?:RG|rg)", content):
            colours.add((float(r), float(g), float(b)))
    return colours


def pdf_has_colour(data: bytes, rgb: tuple[int, int, int]) -> bool:
    return any(max(abs(c - v / 255) for c, v in zip(colour, rgb, strict=True)) < 0.002 for colour in pdf_colours(data))


@needs_browser
def test_png_has_the_requested_size_and_shows_the_trace():
    figure = line_figure()
    data = export.render(figure, "png", scale=2)
    assert png_size(data) == (2 * export.DEFAULT_WIDTH, 2 * export.DEFAULT_HEIGHT)
    assert png_has_colour(data, TRACE_RGB)
    other = export.render(line_figure(colour=PALETTE[2]), "png", scale=1)
    assert png_size(other) == (export.DEFAULT_WIDTH, export.DEFAULT_HEIGHT)
    assert not png_has_colour(other, TRACE_RGB)


@needs_browser
def test_slide_png_is_16_by_9_at_high_resolution():
    data = export.render(slide_style(line_figure()), "png")
    assert png_size(data) == (SLIDE_WIDTH * export.PNG_SCALE, SLIDE_HEIGHT * export.PNG_SCALE)
    assert export.PNG_SCALE * SLIDE_WIDTH >= 1920


@needs_browser
def test_svg_is_sized_and_carries_titles_and_the_trace():
    figure = line_figure()
    figure.update_layout(width=900, height=500)
    svg = export.render(figure, "svg").decode("utf-8")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert 'width="900"' in svg and 'height="500"' in svg
    for text in ("Rotation angle by position", "Position m (tokens)", "Angle m·θ (rad)", "Position Interpolation"):
        assert text in svg
    assert "rgb({}, {}, {})".format(*TRACE_RGB) in svg


@needs_browser
def test_pdf_is_one_page_of_the_requested_size_with_the_trace():
    data = export.render(slide_style(line_figure()), "pdf")
    # Chromium prints CSS pixels at 96 per inch, PDF measures 72 points per inch
    assert pdf_page_size(data) == pytest.approx((SLIDE_WIDTH * 0.75, SLIDE_HEIGHT * 0.75), abs=1)
    assert pdf_has_colour(data, TRACE_RGB)
    assert not pdf_has_colour(export.render(line_figure(colour=PALETTE[2]), "pdf"), TRACE_RGB)


@needs_browser
def test_cli_writes_every_selected_figure_in_every_format(demo_lessons, tmp_path, capsys):
    out = tmp_path / "deck"
    argv = ["--out", str(out), "--format", "png,svg,pdf", "--slide", "--only", "good", "--set", "head_dim=32"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out.split()
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"good_{slug}_d32_slide.{fmt}" for slug in ("frequencies", "wavelengths")
                           for fmt in ("png", "svg", "pdf"))
    assert sorted(printed) == sorted(str(out / n) for n in names)
    png = (out / "good_frequencies_d32_slide.png").read_bytes()
    assert png_size(png) == (SLIDE_WIDTH * export.PNG_SCALE, SLIDE_HEIGHT * export.PNG_SCALE)
    assert png_has_colour(png, TRACE_RGB)
    svg = (out / "good_frequencies_d32_slide.svg").read_text()
    assert "Frequencies, d = 32" in svg and "frequency θᵢ (rad/token)" in svg
    assert pdf_page_size((out / "good_wavelengths_d32_slide.pdf").read_bytes()) == pytest.approx((960, 540))


@needs_browser
def test_cli_without_title_and_with_scale(demo_lessons, tmp_path):
    out = tmp_path / "deck"
    argv = ["--out", str(out), "--only", "named:length", "--slide", "--no-title", "--scale", "1"]
    assert cli.main(argv) == 0
    (written,) = out.iterdir()
    assert written.name == "named_length_slide_notitle.png"
    assert png_size(written.read_bytes()) == (SLIDE_WIDTH, SLIDE_HEIGHT)


@needs_browser
def test_render_files_names_each_figure_once():
    files = export.render_files([("a", line_figure()), ("a", heatmap_figure()), ("b", heatmap_figure())], "svg")
    assert list(files) == ["a.svg", "a_2.svg", "b.svg"]
    assert "Rotation angle by position" in files["a.svg"].decode() and "Angles" in files["a_2.svg"].decode()


@needs_browser
def test_gallery_draws_every_figure_for_screen_and_slide(demo_lessons, tmp_path):
    records = cli.gallery(tmp_path, demo_lessons, log=lambda _: None)
    assert [(r["lesson"], r["figure"]) for r in records] == [("good", "frequencies"), ("good", "wavelengths"),
                                                            ("named", "length")]
    assert all(r["error"] is None and set(r["files"]) == {"screen", "slide"} for r in records)
    sheet = (tmp_path / "index.html").read_text()
    for record in records:
        for file in record["files"].values():
            assert f'src="{file}"' in sheet
            assert png_size((tmp_path / file).read_bytes())[0] > 0
    slide = (tmp_path / records[0]["files"]["slide"]).read_bytes()
    assert png_size(slide) == (SLIDE_WIDTH, SLIDE_HEIGHT)


@needs_browser
def test_interactive_html_works_offline_with_its_own_slider(tmp_path):
    """The HTML export carries plotly.js and the figure's frames: it opens with no network and scrubs."""
    from playwright.sync_api import sync_playwright

    from benchmarks.harness import CHROMIUM, CHROMIUM_ARGS
    from lessons import get

    lesson = get("frequencies")
    settings = lesson.settings.from_mapping({"scrub_in_figure": True})
    figure = lesson.figure("angle-heatmaps", settings)
    page_file = tmp_path / "figure.html"
    page_file.write_bytes(export.render(figure, "html"))
    requests, errors = [], []
    rows = "() => document.querySelector('.js-plotly-plot')._fullData.filter(t => t.type === 'heatmap' && " \
           "t.visible !== false).map(t => t.y[t.y.length - 1])"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_context(offline=True).new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.as_uri())
        page.wait_for_selector(".js-plotly-plot .slider-container", timeout=30_000)
        before = page.evaluate(rows)
        rail = page.locator(".slider-rail-rect").bounding_box()
        first = page.locator(".slider-label").nth(1).bounding_box()  # the first step's tick label (s = 1); 0 is the value
        page.mouse.click(first["x"] + first["width"] / 2, rail["y"] + rail["height"] / 2)
        page.wait_for_function(f"(before) => JSON.stringify(({rows})()) !== JSON.stringify(before)", arg=before,
                               timeout=30_000)
        after = page.evaluate(rows)
        active = page.evaluate("() => document.querySelector('.js-plotly-plot').layout.sliders[0].active")
        browser.close()
    assert active == 0 and len(figure.frames) == 9
    assert before == [16_383] * 3 and after == [4_095] * 3  # L′ − 1 at s = 4, then at s = 1
    # plotly.js rejects a superseded animation's promise with no reason, reported as "undefined"
    assert [error for error in errors if error != "undefined"] == []
    assert all(url.startswith("file:") for url in requests)
