"""The shared RoPE set-up controls: sliders, presets, and a pasted config.json."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from pe_core import preset_by_name

CONTROLS_PAGE = """
import streamlit as st
from ui.controls import rope_controls
c = rope_controls()
st.write("|".join(f"{s.method}:{s.spec.rope_type}:{s.seq_len}" for s in c.setups))
st.write(f"{c.head_dim} {c.base:g} {c.train_length} {c.target_length}")
"""


def run(query=None, steps=()):
    at = AppTest.from_string(CONTROLS_PAGE, default_timeout=30)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    for step in steps:
        step(at)
        at.run()
    assert not at.exception
    return at


def test_defaults():
    at = run()
    assert at.markdown[0].value == "direct:default:16384|pi:linear:16384|ntk:ntk:16384"
    assert at.markdown[1].value == "128 10000 4096 16384"


def test_slider_values_from_url_and_cap():
    # bound widgets put the label they show into the URL
    at = run({"d": "32", "base": "500,000", "L": "131,072", "s": "128×", "methods": ["YaRN", "Base change (ABF)"]})
    assert at.markdown[0].value == "yarn:yarn:1048576|abf:default:1048576"
    assert at.markdown[1].value == "32 500000 131072 1048576"
    assert any("capped" in c.value for c in at.caption)


def test_preset_adds_the_models_own_rope():
    at = run({"src": "A real model", "preset": "Llama-3.1-8B"})
    assert at.markdown[0].value.startswith("model:llama3:131072|direct:default:131072")
    assert at.markdown[1].value == "128 500000 8192 131072"
    assert preset_by_name("Llama-3.1-8B").note in " ".join(c.value for c in at.caption)


def test_pasted_config_and_bad_paste():
    config = {"head_dim": 64, "rope_theta": 1e6, "max_position_embeddings": 32768,
              "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}}
    at = run({"src": "Paste config.json"}, [lambda at: at.text_area[0].input(json.dumps(config))])
    assert at.markdown[0].value.startswith("model:yarn:32768")
    assert at.markdown[1].value == "64 1e+06 8192 32768"
    bad = run({"src": "Paste config.json"}, [lambda at: at.text_area[0].input('{"rope_theta": 10000}')])
    assert "head_dim" in bad.error[0].value and len(bad.markdown) == 0
