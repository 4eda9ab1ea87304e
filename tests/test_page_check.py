"""AppTest of the implementation check: the default diagnosis, uploads of every kind (good and bad), the example
menu, pasted configs and hostile links."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from pe_core import from_hf_config, preset_by_name, rope_frequencies
from pe_core.check import BUG_CLASSES
from pe_core.inputs import numbers_text
from tests.conftest import figure_titled, run_page
from tests.visible_text import run_page_with_sidebar

PAGE = "app_pages/check.py"
TITLES = ("Expected θᵢ and yours", "Relative error of your θᵢ")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def float32_list(values) -> list[float]:
    return torch.as_tensor(values, dtype=torch.float64).to(torch.float32).to(torch.float64).tolist()


def texts(elements) -> list[str]:
    return [e.value for e in elements]


def verdict(at) -> str:
    return " ".join(texts(at.success) + texts(at.error))


def uploader(at, label: str):
    return next(u for u in at.file_uploader if u.label.startswith(label))


def example_menu(at):
    return next(s for s in at.selectbox if s.label.startswith("Or fill in an example"))


def assert_page_ok(at) -> None:
    assert not at.exception, at.exception
    for title in TITLES:
        figure_titled(at, title)


def test_default_shows_the_pairing_bug_with_its_thread():
    at = run_page(PAGE)
    assert_page_ok(at)
    assert "Mismatch" in verdict(at)
    diagnosis = [m for m in texts(at.markdown) if "interleaved_vs_half" in m and "—" in m]
    assert diagnosis and "NeuraLegion/shainet/pull/111" in diagnosis[0]
    figure = figure_titled(at, TITLES[0])
    assert figure["layout"]["title"]["text"].endswith("mismatch")
    assert len(figure["data"][1]["y"]) == 128  # one value per rotated dimension


def test_uploading_correct_numbers_gives_a_match():
    at = run_page(PAGE)
    theta = rope_frequencies(preset_by_name("Llama-3.1-8B").spec).inv_freq.to(torch.float32).numpy()
    buffer = io.BytesIO()
    np.save(buffer, theta)
    uploader(at, "Upload your θᵢ").set_value(("inv_freq.npy", buffer.getvalue(), "application/octet-stream")).run()
    assert_page_ok(at)
    assert "Match" in verdict(at) and not at.error
    assert figure_titled(at, TITLES[0])["layout"]["title"]["text"].endswith("match")


def test_a_torch_state_dict_upload_is_read():
    at = run_page(PAGE)
    spec = preset_by_name("Llama-3.1-8B").spec
    values, _attention = BUG_CLASSES["llama3_bands_inverted"].perturb(spec, None)
    buffer = io.BytesIO()
    torch.save({"model.layers.0.self_attn.rotary_emb.inv_freq": values.to(torch.float32)}, buffer)
    uploader(at, "Upload your θᵢ").set_value(("model.pt", buffer.getvalue(), "application/octet-stream")).run()
    assert_page_ok(at)
    assert any("llama3_bands_inverted" in m for m in texts(at.markdown))


@pytest.mark.parametrize(("name", "data", "message"), [
    ("words.csv", b"1.0, 0.5, banana", "'banana', is not a number"),
    ("nan.json", b"[1.0, NaN, 0.5]", "NaN"),
    ("broken.pt", b"definitely not a torch file", "could not be read as a torch file"),
    ("matrix.npy", None, "shape"),
])
def test_bad_uploads_say_why_and_keep_the_numbers(name, data, message):
    if data is None:
        buffer = io.BytesIO()
        np.save(buffer, np.ones((8, 8)))
        data = buffer.getvalue()
    at = run_page(PAGE)
    before = at.text_area(key="theta").value
    uploader(at, "Upload your θᵢ").set_value((name, data, "application/octet-stream")).run()
    assert_page_ok(at)
    errors = " ".join(texts(at.error))
    assert name in errors and message in errors
    assert at.text_area(key="theta").value == before


def test_a_wrong_count_says_which_counts_work():
    at = run_page(PAGE)
    uploader(at, "Upload your θᵢ").set_value(("short.json", json.dumps([1.0, 0.5, 0.25]).encode(), "text/json")).run()
    assert not at.exception
    errors = " ".join(texts(at.error))
    assert "Got 3 numbers" in errors and "give 64 θᵢ (one per pair) or 128" in errors
    assert any("The figures below" in c for c in texts(at.caption))
    for title in TITLES:  # the figures stay, on the last settings that worked
        figure_titled(at, title)


def test_the_example_menu_fills_in_a_bug():
    at = run_page(PAGE)
    options = example_menu(at).options
    assert "with the bug: Llama-3 smoothing bands inverted" in options
    assert not any("β" in o for o in options)  # YaRN's classes do not apply to Llama 3.1
    example_menu(at).set_value("llama3_bands_inverted").run()
    next(b for b in at.button if b.label == "Fill in").click().run()
    assert_page_ok(at)
    assert any("llama3_bands_inverted" in m for m in texts(at.markdown))
    assert example_menu(at).value == "llama3_bands_inverted"  # the menu names the numbers shown
    example_menu(at).set_value("correct").run()
    next(b for b in at.button if b.label == "Fill in").click().run()
    assert "Match" in verdict(at)
    assert example_menu(at).value == "correct"


def test_the_example_menu_opens_on_the_example_the_verdict_describes():
    at = run_page(PAGE)
    assert "Mismatch" in verdict(at)
    assert example_menu(at).value == "interleaved_vs_half"
    at.text_area(key="theta").set_value("0.5, 0.25, 0.125").run()  # numbers no example gives
    assert example_menu(at).value is None
    assert next(b for b in at.button if b.label == "Fill in").disabled


def test_a_diagnosis_is_in_the_readers_language_after_another_reader_opened_the_page():
    """A result is shared by every session of a server: its explanation is worded for each reader."""
    english = run_page_with_sidebar(PAGE, {"lang": "en"})
    assert any("The values are laid out interleaved" in m for m in texts(english.markdown))
    chinese = run_page_with_sidebar(PAGE, {"lang": "zh"})
    diagnosis = next(m for m in texts(chinese.markdown) if "interleaved_vs_half" in m)
    assert "The values" not in diagnosis and "相邻配对" in diagnosis.split("—", 1)[1]


def test_a_pasted_yarn_config_with_a_missing_attention_factor():
    config = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
              "rope_theta": 1e6, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                  "original_max_position_embeddings": 32768}}
    theta = rope_frequencies(from_hf_config(config)).inv_freq
    at = run_page(PAGE, {"src": "Paste config.json", "config": json.dumps(config),
                         "theta": numbers_text(float32_list(theta)), "af": "1.0"})
    assert_page_ok(at)
    assert any("attention_factor_missing" in m for m in texts(at.markdown))


def test_an_uploaded_config_replaces_the_model_and_a_bad_one_is_refused():
    at = run_page(PAGE)
    phi2 = {"hidden_size": 2560, "num_attention_heads": 32, "max_position_embeddings": 2048,
            "partial_rotary_factor": 0.4, "rope_theta": 10000.0}
    whole, _attention = BUG_CLASSES["partial_rotary_ignored"].perturb(from_hf_config(phi2), None)
    at.text_area(key="theta").input(numbers_text(float32_list(whole)))
    uploader(at, "… or upload its config.json").set_value(("config.json", json.dumps(phi2).encode(), "text/json"))
    at.run()
    assert_page_ok(at)
    assert any("partial_rotary_ignored" in m for m in texts(at.markdown))
    uploader(at, "… or upload its config.json").set_value(("config.json", b"{not json", "text/json")).run()
    assert not at.exception
    assert any("config.json could not be used" in e and "not valid JSON" in e for e in texts(at.error))


@pytest.mark.parametrize("query", [
    {"theta": "1, 2, three"}, {"af": "-3"}, {"len": "1e999"}, {"layout": "<b>x</b>"},
    {"src": "Paste config.json", "config": "{\"hidden_size\": 7}"},
])
def test_hostile_links_never_raise(query):
    at = run_page(PAGE, query)
    assert not at.exception, at.exception
    assert at.error or at.warning


def test_the_uploaders_words_are_chinese_in_chinese_and_left_to_streamlit_in_english():
    """Streamlit writes an uploader's button and size limit in English; in Chinese the app's CSS replaces them."""
    def uploader_styles(at) -> list[str]:
        return [h.proto.body for h in at.get("html") if "stFileUploaderDropzone" in h.proto.body]

    chinese = run_page_with_sidebar(PAGE, {"lang": "zh"})
    styles = uploader_styles(chinese)
    assert len(styles) == 3  # the config, the θᵢ and the rotation probe's output
    numbers = next(s for s in styles if ".st-key-check_numbers_file " in s)
    assert 'content: "上传"' in numbers and "每个文件不超过 200 MB · JSON, CSV, TXT, NPY, PT" in numbers
    rotation = next(s for s in styles if ".st-key-check_rotation_file " in s)
    assert "PT, PTH, BIN, SAFETENSORS, NPZ" in rotation
    assert not uploader_styles(run_page_with_sidebar(PAGE, {"lang": "en"}))


# ---- the rotation probe ---------------------------------------------------------------------------------------

ROTATION_TITLE = "Your rotation against the reference"


def rotation_menu(at):
    return next(s for s in at.selectbox if s.label.startswith("Example port's rotation"))


def rotated_upload(spec_positions_shift: int = 0) -> bytes:
    """A port's output on the default model's probe: transformers' rotation, at positions shifted by ``shift``."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    from pe_core.config import layer_map
    from pe_core.presets import preset_by_name as preset
    from pe_core.probe import probe_for

    config = dict(preset("Llama-3.1-8B").config)
    probe = probe_for(layer_map(config).default_kind)
    cos, sin = LlamaRotaryEmbedding(LlamaConfig(**config))(probe.q, probe.position_ids + spec_positions_shift)
    q, k = apply_rotary_pos_emb(probe.q, probe.k, cos, sin)
    buffer = io.BytesIO()
    torch.save({"q": q, "k": k}, buffer)
    return buffer.getvalue()


def test_the_rotation_example_shows_a_correct_port_then_a_bug_where_it_starts():
    at = run_page(PAGE)
    assert not at.exception, at.exception
    figure = figure_titled(at, ROTATION_TITLE)
    assert figure["layout"]["title"]["text"].endswith(": match")
    assert any("Every token of the probe is within float32 tolerance" in t for t in texts(at.success))
    rotation_menu(at).set_value("cos_sin_low_precision").run()
    assert not at.exception, at.exception
    figure = figure_titled(at, ROTATION_TITLE)
    assert figure["layout"]["title"]["text"].endswith("mismatch")
    assert any("error starts: position 1" in a["text"] for a in figure["layout"]["annotations"])
    diagnosis = [m for m in texts(at.markdown) if "cos_sin_low_precision" in m and "—" in m]
    assert diagnosis and "huggingface/transformers/issues/25681" in diagnosis[0]
    assert "grows with the position" in diagnosis[0]


def test_an_example_that_cannot_occur_says_so():
    at = run_page(PAGE)
    rotation_menu(at).set_value("mrope_sections").run()
    assert not at.exception, at.exception
    assert any("cannot occur for these layers" in c for c in texts(at.caption))


@pytest.mark.slow
def test_an_uploaded_rotation_is_checked_and_a_bad_file_is_refused():
    pytest.importorskip("transformers")
    at = run_page(PAGE)
    uploader(at, "Upload your rotary's output").set_value(("rotated.pt", rotated_upload(), "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    assert any("Every token of the probe" in t for t in texts(at.success))
    shifted = ("shifted.pt", rotated_upload(1), "application/octet-stream")
    uploader(at, "Upload your rotary's output").set_value(shifted).run()
    assert not at.exception, at.exception
    assert any("positions_shifted" in m and "prime-rl" in m for m in texts(at.markdown))
    assert figure_titled(at, ROTATION_TITLE)["layout"]["title"]["text"].endswith("mismatch")
    uploader(at, "Upload your rotary's output").set_value(("broken.pt", b"not a torch file", "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    assert any("broken.pt could not be used" in e for e in texts(at.error))


def test_a_state_dict_with_one_inv_freq_per_layer_type_is_read_for_the_checked_layers():
    from pathlib import Path

    from safetensors.torch import save

    from lessons.check import Settings, theta_file_reader
    from pe_core.config import layer_map

    config_text = (Path(__file__).parent / "data" / "model_configs" / "google--gemma-3-27b-it.json").read_text()
    kinds = {kind.layer_type: kind for kind in layer_map(json.loads(config_text)).rotary_kinds}
    state = {f"model.rotary_emb.{name}_inv_freq": rope_frequencies(kind.spec).inv_freq.to(torch.float32)
             for name, kind in kinds.items()}
    data = save(state)
    for layer_type in kinds:
        settings = Settings(source="config", config=config_text, layer_type=layer_type)
        text = theta_file_reader(settings)(data, "rotary.safetensors")
        assert text == numbers_text(state[f"model.rotary_emb.{layer_type}_inv_freq"].double().tolist())
