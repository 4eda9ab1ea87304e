"""AppTest of the check page's fitted and two-bug diagnoses: a port with L from max_position_embeddings, two bugs at
once (each bug's title and public thread), a float16 overflow, and the same diagnoses in Chinese."""

from __future__ import annotations

import pytest
import torch

from pe_core import preset_by_name, rope_frequencies
from pe_core.inputs import numbers_text
from tests.conftest import run_page
from tests.visible_text import run_page_with_sidebar

PAGE = "app_pages/check.py"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def as_text(values) -> str:
    return numbers_text(torch.as_tensor(values, dtype=torch.float64).to(torch.float32).to(torch.float64).tolist())


def diagnoses(at) -> list[str]:
    return [m.value for m in at.markdown if "** (`" in m.value and "`) — " in m.value]


LLAMA = preset_by_name("Llama-3.1-8B").spec
QWEN = preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").spec


def test_llama3_with_l_from_max_position_embeddings_is_named_with_both_lengths():
    values = rope_frequencies(LLAMA.replace(original_max_position_embeddings=131_072)).inv_freq
    at = run_page(PAGE, {"theta": as_text(values)})
    assert not at.exception
    [diagnosis] = diagnoses(at)
    assert "wrong_original_length" in diagnosis and "L = 131,072 instead of 8,192" in diagnosis
    assert "NVIDIA/Megatron-LM/issues/1418" in diagnosis


def test_two_bugs_at_once_show_both_titles_and_both_threads():
    theta = rope_frequencies(QWEN).inv_freq.to(torch.bfloat16)
    at = run_page(PAGE, {"preset": "Qwen2.5-7B-Instruct (+YaRN x4)", "theta": as_text(theta), "af": "1"})
    assert not at.exception
    [diagnosis] = diagnoses(at)
    assert "Frequencies in low precision + Attention factor missing" in diagnosis
    assert "Two bugs at once" in diagnosis
    assert "huggingface/transformers/pull/29285" in diagnosis and "guoqingbao/xinfer/pull/329" in diagnosis


def test_a_float16_overflow_and_an_unknown_formula_read_in_chinese():
    spec = preset_by_name("Llama-3-8B").spec
    zeros = torch.cat([torch.ones(1, dtype=torch.float64), torch.zeros(spec.num_pairs - 1, dtype=torch.float64)])
    chinese = run_page_with_sidebar(PAGE, {"lang": "zh", "preset": "Llama-3-8B", "theta": as_text(zeros)})
    assert not chinese.exception
    [diagnosis] = diagnoses(chinese)
    assert "base_overflow" in diagnosis and "溢出为无穷大" in diagnosis
    odd = rope_frequencies(QWEN).inv_freq ** 1.1  # YaRN's ramp raised to a power: no bug, nor two, gives that
    english = run_page(PAGE, {"preset": "Qwen2.5-7B-Instruct (+YaRN x4)", "theta": as_text(odd)})
    assert any("Neither one known bug nor two at once" in w.value for w in english.warning)
