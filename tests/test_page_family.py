"""AppTest of "The wider family" page: defaults, slider extremes, bad links and the learned-embedding panel."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.conftest import ROOT, chart_figures, figure_titled, run_whole_page

PAGE = "app_pages/family.py"
# T5's default buckets (Raffel et al. 2020), i − j = 0 .. 30, typed in (see tests/test_family.py)
T5_DEFAULT_TABLE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10,
                     11, 11, 11, 11, 11, 11, 11, 11]
TITLES = ("Sinusoidal position encodings", "Sinusoidal periods", "ALiBi slopes", "ALiBi bias matrices",
          "T5 relative-position buckets", "Relative position used by attention", "Dual Chunk Attention",
          "Position used vs true distance", "Log-n logit scale", "Attention temperature")

LOW = {"sd": "16", "sb": "100", "sL": "32", "ah": "1", "aL": "16", "tb": "8", "tm": "16", "rL": "16", "rc": "1",
       "rw": "1", "rk": "1", "dl": "16", "dc": "8", "ds": "0.25", "nL": "64"}
HIGH = {"sd": "256", "sb": "1,000,000", "sL": "2,048", "ah": "64", "aL": "256", "tb": "128", "tm": "1024", "rL": "256",
        "rc": "128", "rw": "128", "rk": "64", "dl": "256", "dc": "128", "ds": "1", "nL": "131,072"}


def trace(figure: dict, name_part: str) -> dict:
    matches = [t for t in figure["data"] if str(t.get("name", "")).startswith(name_part)]
    assert len(matches) == 1, f"expected one trace named like {name_part!r}, got {[t.get('name') for t in figure['data']]}"
    return matches[0]


def widget_value(at, label: str):
    return next(w.value for w in list(at.select_slider) + list(at.slider) if w.label == label)


def check_sinusoidal(at, length: int, dim: int, base: float) -> None:
    figure = figure_titled(at, "Sinusoidal position encodings")
    heatmap = figure["data"][0]
    z, rows, columns = heatmap["z"], np.asarray(heatmap["y"]), np.asarray(heatmap["x"])
    assert z.shape == (len(rows), len(columns)) and len(rows) == min(length, 300) and len(columns) == dim
    assert rows[0] == 0 and rows[-1] == length - 1
    for row in (0, len(rows) // 2, len(rows) - 1):
        pos = rows[row]
        for i in (0, dim // 4, dim // 2 - 1):
            angle = pos * base ** (-2 * i / dim)
            assert z[row, 2 * i] == pytest.approx(math.sin(angle), abs=2e-6)
            assert z[row, 2 * i + 1] == pytest.approx(math.cos(angle), abs=2e-6)
    periods = np.asarray(figure_titled(at, "Sinusoidal periods")["data"][0]["y"])
    assert len(periods) == dim
    assert periods[0] == pytest.approx(2 * math.pi)
    assert periods[-1] == pytest.approx(2 * math.pi * base ** ((dim - 2) / dim))


def check_alibi(at, heads: int, length: int) -> np.ndarray:
    slopes = np.asarray(trace(figure_titled(at, "ALiBi slopes"), "ALiBi paper")["y"])
    assert len(slopes) == heads
    bias = figure_titled(at, "ALiBi bias matrices")
    first = bias["data"][0]
    assert first["name"].startswith("head 1:")
    z = first["z"]
    assert z.shape == (length, length)
    assert z[length - 1, 0] == pytest.approx(-slopes[0] * (length - 1), rel=1e-6)
    assert np.isnan(z[0, length - 1]) and z[3, 3] == 0
    assert len(bias["data"]) == min(heads, 4)
    return slopes


def nanmax(values) -> float:
    return float(np.nanmax(np.asarray(values, dtype=np.float64)))


def test_defaults():
    at = run_whole_page(PAGE)
    assert not at.exception and not at.warning and not at.error
    for title in TITLES:
        figure_titled(at, title)
    assert len(chart_figures(at)) == len(TITLES)  # no learned figure without a trained model
    assert any("No trained model in this session" in info.value for info in at.info)

    check_sinusoidal(at, 256, 128, 10000.0)
    slopes = check_alibi(at, 8, 64)
    np.testing.assert_allclose(slopes, [2.0**-k for k in range(1, 9)], rtol=1e-12)
    misquoted = np.asarray(trace(figure_titled(at, "ALiBi slopes"), "2<sup>−8/n</sup>")["y"])
    np.testing.assert_allclose(misquoted, [2 ** (-8 / n) for n in range(1, 9)], rtol=1e-12)

    t5 = figure_titled(at, "T5 relative-position buckets")
    bidirectional = trace(t5, "bidirectional")
    relative = np.asarray(bidirectional["x"])
    buckets = np.asarray(bidirectional["y"])
    assert [int(buckets[relative == -d][0]) for d in range(31)] == T5_DEFAULT_TABLE
    tables = [df.value for df in at.dataframe if "f(i − j), bidirectional" in list(df.value.index)]
    assert len(tables) == 1
    assert tables[0].loc["f(i − j), bidirectional"].tolist() == T5_DEFAULT_TABLE
    assert tables[0].loc["f(i − j), causal"].tolist()[:16] == list(range(16))

    relative_figure = figure_titled(at, "Relative position used by attention")
    assert nanmax(trace(relative_figure, "plain")["z"]) == 63
    assert nanmax(trace(relative_figure, "Shaw")["z"]) == 8
    assert nanmax(trace(relative_figure, "ReRoPE")["z"]) == 16
    assert nanmax(trace(relative_figure, "Leaky")["z"]) == pytest.approx(16 + 47 / 4)

    dca = figure_titled(at, "Dual Chunk Attention")
    assert nanmax(dca["data"][0]["z"]) == 31  # c − 1
    assert set(np.unique(dca["data"][1]["z"][~np.isnan(dca["data"][1]["z"])])) == {0, 1, 2}

    curves = figure_titled(at, "Position used vs true distance")
    assert len(curves["data"]) == 5 and len(curves["data"][0]["x"]) == 128
    assert nanmax(trace(curves, "ReRoPE")["y"]) == 16
    assert nanmax(trace(curves, "DCA")["y"]) == 31

    log_n = figure_titled(at, "Log-n logit scale")
    lengths = np.asarray(log_n["data"][0]["x"])
    attention_e = np.asarray(log_n["data"][0]["y"])
    assert attention_e[0] == 0 and lengths[-1] == pytest.approx(64 * 512)
    assert attention_e[-1] == pytest.approx(math.log(64 * 512) / math.log(512))
    assert np.asarray(log_n["data"][1]["y"]).min() == 1

    temperature = figure_titled(at, "Attention temperature")
    yarn_logits = np.asarray(trace(temperature, "YaRN 1/t")["y"])
    assert yarn_logits[0] == 1 and yarn_logits[-1] == pytest.approx((0.1 * math.log(128) + 1) ** 2)
    assert np.asarray(trace(temperature, "log-n")["y"])[-1] == pytest.approx(1 + math.log(128) / math.log(512))


def test_low_extremes():
    at = run_whole_page(PAGE, LOW)
    assert not at.exception and not at.warning and not at.error
    assert widget_value(at, "Embedding dim d") == 16 and widget_value(at, "Heads N") == 1
    check_sinusoidal(at, 32, 16, 100.0)
    slopes = check_alibi(at, 1, 16)
    np.testing.assert_allclose(slopes, [2.0**-8])

    t5 = figure_titled(at, "T5 relative-position buckets (8 buckets, max_distance 16)")
    causal = trace(t5, "causal")
    assert int(np.max(causal["y"])) == 7 and int(np.max(trace(t5, "bidirectional")["y"])) == 7

    relative_figure = figure_titled(at, "Relative position used by attention, length 16")
    assert nanmax(trace(relative_figure, "ReRoPE")["z"]) == 1
    assert nanmax(trace(relative_figure, "Shaw")["z"]) == 1
    np.testing.assert_array_equal(trace(relative_figure, "Leaky")["z"], trace(relative_figure, "plain")["z"])

    dca = figure_titled(at, "Dual Chunk Attention relative positions (chunk s = 2, pretraining c = 8)")
    assert nanmax(dca["data"][0]["z"]) <= 7
    log_n = figure_titled(at, "trained at L = 64")
    assert np.asarray(log_n["data"][0]["x"])[-1] == pytest.approx(64 * 64)


def test_high_extremes():
    at = run_whole_page(PAGE, HIGH)
    assert not at.exception and not at.warning and not at.error
    check_sinusoidal(at, 2048, 256, 1_000_000.0)
    slopes = check_alibi(at, 64, 256)
    np.testing.assert_allclose(slopes, [2 ** (-8 * n / 64) for n in range(1, 65)], rtol=1e-12)
    names = [t["name"] for t in figure_titled(at, "ALiBi bias matrices")["data"]]
    assert [name.split(":")[0] for name in names] == ["head 1", "head 22", "head 43", "head 64"]

    t5 = figure_titled(at, "T5 relative-position buckets (128 buckets, max_distance 1024)")
    assert int(np.max(trace(t5, "causal")["y"])) == 127

    relative_figure = figure_titled(at, "Relative position used by attention, length 256")
    for item in relative_figure["data"]:
        assert item["z"].shape == (256, 256)
    assert nanmax(trace(relative_figure, "ReRoPE")["z"]) == 128
    assert nanmax(trace(relative_figure, "Leaky")["z"]) == pytest.approx(128 + 127 / 64)

    dca = figure_titled(at, "Dual Chunk Attention relative positions (chunk s = 128, pretraining c = 128)")
    assert nanmax(dca["data"][0]["z"]) == 127
    figure_titled(at, "trained at L = 131,072")


def test_non_power_of_two_heads_and_an_invalid_t5_setting():
    at = run_whole_page(PAGE, {"ah": "12", "tb": "128", "tm": "16"})
    assert not at.exception
    slopes = check_alibi(at, 12, 64)
    expected = [2.0**-k for k in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]
    np.testing.assert_allclose(slopes, expected, rtol=1e-12)
    # 128 causal buckets keep 64 distances exact, so max_distance 16 is impossible: a clear error, no figure
    assert any("max_distance" in error.value for error in at.error)
    assert not [f for f in chart_figures(at) if "T5" in str(f["layout"]["title"]["text"])]
    figure_titled(at, "Dual Chunk Attention")  # the rest of the page still renders


def test_garbage_in_the_link_falls_back_to_defaults_with_a_note():
    at = run_whole_page(PAGE, {"sd": "banana", "sb": "-3", "ah": "999", "tb": "7", "ds": "2", "rk": "zero", "nL": "x"})
    assert not at.exception and not at.error
    notes = " ".join(w.value for w in at.warning)
    for label in ("Embedding dim d", "Base", "Heads N", "num_buckets", "Chunk size s", "Leaky ReRoPE k",
                  "Training length L"):
        assert label in notes
    assert widget_value(at, "Embedding dim d") == 128 and widget_value(at, "num_buckets") == 32
    assert widget_value(at, "Heads N") == 8
    check_sinusoidal(at, 256, 128, 10000.0)
    assert len(chart_figures(at)) == len(TITLES)


class _TinyModel(torch.nn.Module):
    def __init__(self, positions: int, dim: int, learned: bool = True):
        super().__init__()
        self.position_embedding = torch.nn.Embedding(positions, dim) if learned else None


def test_a_model_without_a_position_table_is_explained():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=60)
    at.query_params["part"] = "learned"
    at.session_state["tt_experiment"] = SimpleNamespace(run=SimpleNamespace(model=_TinyModel(8, 4, learned=False)))
    at.run()
    assert not at.exception
    assert any("uses another encoding" in info.value for info in at.info)
    assert not [f for f in chart_figures(at) if "Learned" in str(f["layout"]["title"]["text"])]


def test_learned_embeddings_from_a_trained_model():
    from streamlit.testing.v1 import AppTest

    torch.manual_seed(0)
    model = _TinyModel(48, 12)
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=60)
    at.query_params["part"] = "learned"
    at.session_state["training_run"] = SimpleNamespace(model=model)
    at.run()
    assert not at.exception
    figure = figure_titled(at, "Learned position embeddings")
    learned = trace(figure, "learned")["z"]
    weights = model.position_embedding.weight.detach().numpy().astype(np.float64)
    unit = weights / np.linalg.norm(weights, axis=1, keepdims=True)
    np.testing.assert_allclose(learned, unit @ unit.T, atol=1e-6)
    sinusoidal = trace(figure, "sinusoidal")["z"]
    np.testing.assert_allclose(np.diag(sinusoidal), 1, atol=1e-6)
    np.testing.assert_allclose(np.diag(sinusoidal, 1)[:-1], np.diag(sinusoidal, 1)[1:], atol=1e-6)  # Toeplitz
    assert not any("No trained model" in info.value for info in at.info)


def test_prose_states_the_lessons_numbers():
    at = run_whole_page(PAGE)
    captions = " ".join(c.value for c in at.caption)
    assert "52 of 128 dimensions complete a full period within 256 positions" in captions
    assert "0–7 exact, then 8–11 → 8, 12–15 → 9, 16–22 → 10, 23–30 → 11" in captions
    assert "T5's default buckets ([Raffel et al. 2020]" in captions
    assert "k ≥ 15.05, so k = 16" in captions
    assert "For 12 heads: 1/2, 1/4, …, 1/256" in " ".join(m.value for m in at.markdown)
    assert any(r"T_0 = 2\pi \approx 6.28" in latex.value for latex in at.latex)
    assert not any("seed" in m.value.lower() for m in list(at.markdown) + list(at.caption))


def test_the_misquote_can_be_hidden():
    at = run_whole_page(PAGE, {"am": "false"})
    assert not at.exception and not at.warning
    assert [t["name"] for t in figure_titled(at, "ALiBi slopes")["data"]] == ["ALiBi paper's slopes 2<sup>−8n/N</sup>"]
    assert not any("often quoted" in c.value for c in at.caption)


def test_a_link_to_the_lessons_heaviest_settings():
    from lessons.family import Settings

    at = run_whole_page(PAGE, Settings.extremes().query_params())
    assert not at.exception and not at.warning and not at.error
    assert len(chart_figures(at)) == len(TITLES)
