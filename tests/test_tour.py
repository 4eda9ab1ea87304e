"""The guided lesson as data: every step names a real lesson, figure and settings, fills every placeholder,
states only computed numbers, and each number equals its closed form computed here independently."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

import lessons
from lessons import SLIDE, tour
from lessons.tour import STEPS, Step, available_steps, step_numbers, step_settings, step_text

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BY_SLUG = {step.slug: step for step in STEPS}
PLACEHOLDER = re.compile(r"\{[a-z_]+(?:[:!][^{}]*)?\}")
# Digits a step's text may carry besides its $formulas$: definitions, not results (results are placeholders).
DEFINITIONS = [re.escape(text) for text in (
    "2π/θᵢ", "√(1/t)", "0.1·ln s + 1", "(1, 0, 1, 0, …)", "d/2", "1/s", "Pair 0", "pair 0", "i = 0", "r = 0",
    "from 0 to", "was 0", "by 1", "by 1/", "instead of 1", "1: ", "bfloat16")]


def numbers(slug: str) -> dict:
    return step_numbers(BY_SLUG[slug])


def theta(head_dim: int, base: float) -> np.ndarray:
    return base ** (-2.0 * np.arange(head_dim // 2) / head_dim)


# ---- the steps as data ------------------------------------------------------------------------------


def test_thirteen_steps_cover_the_story_in_order():
    assert [step.slug for step in STEPS] == ["rotation", "spectrum", "relative", "decay", "unseen", "pi", "ntk",
                                             "beta-base", "by-parts", "temperature", "bf16", "toy", "trap"]
    assert "13" in tour.TITLE and len(STEPS) == 13


@pytest.mark.parametrize("step", STEPS, ids=[s.slug for s in STEPS])
def test_a_step_names_a_figure_of_its_lesson_and_valid_settings(step):
    lesson = lessons.all_lessons()[step.lesson]
    assert step.figure in lesson.figures
    settings = step_settings(step)
    for name, value in step.settings.items():  # every setting the step names is one the lesson has, and is kept
        assert getattr(settings, lesson.settings.field_name(name)) == lesson.settings.coerce(name, value)
    figure = tour.step_figure(step)
    assert (figure.layout.title.text or "").strip()
    slide = tour.step_figure(step, SLIDE)
    assert (slide.layout.width, slide.layout.height) == (1280, 720)


@pytest.mark.parametrize("step", STEPS, ids=[s.slug for s in STEPS])
def test_every_placeholder_is_filled_and_the_answer_is_a_choice(step):
    text = step_text(step)
    for part in (text.title, text.text, text.question, text.why, *text.choices):
        assert not PLACEHOLDER.search(part), part
    assert 2 <= len(text.choices) <= 4 and len(set(text.choices)) == len(text.choices)
    assert text.answer == text.choices[step.answer]
    used = set()
    for template in (step.text, step.question, step.why, *step.choices):
        used |= {match.group()[1:-1].split(":")[0].split("!")[0] for match in PLACEHOLDER.finditer(template)}
    assert used <= set(step_numbers(step))


@pytest.mark.parametrize("step", STEPS, ids=[s.slug for s in STEPS])
def test_no_number_is_typed_into_a_step(step):
    """Results reach the text through placeholders; the only digits left are formulas and definitions."""
    for template in (step.title, step.text, step.question, step.why, *step.choices):
        bare = re.sub(r"\$[^$]*\$", "", PLACEHOLDER.sub("", template))  # inline formulas
        for definition in DEFINITIONS:
            bare = re.sub(definition, "", bare)
        assert not re.search(r"\d", bare), (step.slug, bare)


def test_a_bad_step_fails_when_the_tour_is_checked():
    good = BY_SLUG["spectrum"]
    bad_setting = Step(**{**good.__dict__, "slug": "x", "settings": {"head_dim": 7}})
    with pytest.raises(ValueError, match="head_dim"):
        tour._check((bad_setting,))
    bad_figure = Step(**{**good.__dict__, "slug": "x", "figure": "no-such-figure"})
    with pytest.raises(ValueError, match="no-such-figure"):
        tour._check((bad_figure,))
    bad_answer = Step(**{**good.__dict__, "slug": "x", "answer": 3})
    with pytest.raises(ValueError, match="answer"):
        tour._check((bad_answer,))
    with pytest.raises(ValueError, match="slug"):
        tour._check((good, good))
    with pytest.raises(KeyError, match="no-such-source"):
        tour._check((Step(**{**good.__dict__, "sources": (("no-such-source", ""),)}),))


def test_the_tour_is_complete_once_the_training_lesson_exists():
    if "training" in lessons.all_lessons():
        assert available_steps() == STEPS and tour.missing_steps() == ()
    else:
        assert [step.lesson for step in tour.missing_steps()] == ["training"]


def test_a_step_whose_lesson_is_missing_is_left_out(monkeypatch):
    installed = {name: lesson for name, lesson in lessons.all_lessons().items() if name != "training"}
    monkeypatch.setattr(tour, "all_lessons", lambda: installed)
    assert len(available_steps()) == 11 and "toy" not in {s.slug for s in available_steps()}
    assert [step.slug for step in tour.missing_steps()] == ["toy", "trap"]
    tour._check(STEPS)  # a missing lesson's step is not an error


@pytest.mark.parametrize("step", STEPS, ids=[s.slug for s in STEPS])
def test_the_full_page_link_keeps_the_settings(step):
    settings = step_settings(step)
    lesson = lessons.all_lessons()[step.lesson]
    assert lesson.settings.from_mapping(settings.query_params()) == settings


# ---- every number, against its closed form -------------------------------------------------------------


def test_rotation_angles():
    got = numbers("rotation")
    angles = 3 * theta(8, 10_000.0)
    assert (got["m"], got["pairs"], got["last"]) == (3, 4, 3)
    assert got["first_angle"] == pytest.approx(angles[0]) == 3
    assert got["last_angle"] == pytest.approx(angles[-1], rel=1e-12)
    assert got["times"] == pytest.approx(1000, rel=1e-9)


def test_spectrum_counts_the_pairs_that_turn_within_l():
    got = numbers("spectrum")
    wavelengths = 2 * math.pi / theta(128, 10_000.0)
    turning = int((wavelengths < 4096).sum())
    assert (got["turning"], got["slow"], got["pairs"]) == (turning, 64 - turning, 64) == (46, 18, 64)
    assert got["shortest"] == pytest.approx(2 * math.pi)
    assert got["longest"] == pytest.approx(wavelengths[-1])
    # the ringed pair is the last that turns: λ₄₅ < L ≤ λ₄₆
    assert BY_SLUG["spectrum"].settings["pair"] == got["last_turning"] == turning - 1
    assert wavelengths[turning - 1] < 4096 <= wavelengths[turning]


def test_relative_scores_depend_on_the_distance_only():
    """The matrix is RoPE's q·k for q = k = (1, 0, 1, 0, …), rotated by LLaMA's own code."""
    from pe_core.rope_code import apply_rotary_emb, precompute_freqs_cis

    got = numbers("relative")
    assert (got["n"], got["pairs"], got["peak"]) == (128, 64, 64)
    assert got["spread"] < 1e-9
    ones = torch.zeros(128, 128, dtype=torch.float64)  # [position, dim]
    ones[:, 0::2] = 1.0
    q, k = apply_rotary_emb(ones, ones, precompute_freqs_cis(128, 128))
    scores = q @ k.T
    step = BY_SLUG["relative"]
    result = lessons.get("decay").result(step_settings(step))
    assert torch.allclose(scores, result.similarity, atol=1e-9)


def test_decay_bound_against_its_definition():
    got = numbers("decay")
    freqs = theta(128, 10_000.0)

    def bound(r: float) -> float:  # RoFormer §3.4.3: the mean over j of |S_j|, S_j = Σ_{i<j} e^(i·r·θᵢ)
        return float(np.mean(np.abs(np.cumsum(np.exp(1j * r * freqs)))))

    assert got["at_zero"] == pytest.approx(bound(0)) == pytest.approx(32.5)
    assert got["at_r"] == pytest.approx(bound(250), rel=1e-9)
    assert got["r"] == 250 and got["range"] == "65,536"
    assert got["at_r"] < got["at_zero"] / 4  # it has fallen by r = 250 ...
    assert got["rebound"] > 1  # ... and later rises above the level again: it wobbles


def test_unseen_pairs_are_the_slow_ones():
    got = numbers("unseen")
    freqs = theta(128, 10_000.0)
    slow = 4096 * freqs < 2 * math.pi  # never a full turn in training; direct extrapolation goes past L·θ
    assert got["unseen"] == int(slow.sum()) == 18
    assert got["first"] == int(np.flatnonzero(slow)[0]) == BY_SLUG["unseen"].settings["pair"] == 46
    assert got["turning"] == 64 - 18 and got["target"] == "16,384"


def test_pi_keeps_every_angle_in_range_at_a_quarter_of_the_resolution():
    got = numbers("pi")
    assert got["reach"] == pytest.approx(1.0, abs=1e-12)
    assert got["step"] == pytest.approx(1 / 4)
    assert got["unseen"] == 18


def test_ntk_base_and_ratios():
    got = numbers("ntk")
    assert got["new_base"] == f"{10_000 * 4 ** (128 / 126):,.0f}" == "40,890"
    assert got["first"] == pytest.approx(1.0)
    assert got["last"] == pytest.approx(1 / 4)
    freqs, scaled = theta(128, 10_000.0), theta(128, 10_000 * 4 ** (128 / 126))
    overshoot = (4096 * freqs < 2 * math.pi) & (16_384 * scaled > 4096 * freqs * (1 + 1e-12))
    assert got["overshoot"] == int(overshoot.sum()) == 17


def test_beta_base_conversion():
    got = numbers("beta-base")
    assert (got["places"], got["beta"], got["top"], got["s"]) == (3, 10.0, 999, 2.0)
    assert got["new_base"] == pytest.approx(10 * 2 ** (1 / 3))


def test_ntk_by_parts_counts_match_the_turns_in_training():
    got = numbers("by-parts")
    turns = 4096 * theta(128, 10_000.0) / (2 * math.pi)  # r = L/λ
    assert (got["alpha"], got["beta"]) == (1.0, 32.0)
    assert got["kept"] == int((turns > 32).sum()) == 21
    assert got["divided"] == int((turns < 1).sum()) == 18
    assert got["blended"] == 64 - 21 - 18
    assert (got["parts_unseen"], got["yarn_unseen"], got["ntk_unseen"]) == (0, 0, 17)


def test_ntk_by_parts_and_yarn_are_named_as_the_papers_gamma_and_the_codes_ramp():
    """The step draws two different blends: the paper's γ(r), linear in r, and the reference code's ramp, linear in
    the pair index. Its text says so (not "the same blend"), the legend names each, and the gap it states is the
    one between the two drawn curves."""
    from pe_core.angles import ramp_comparison

    step = BY_SLUG["by-parts"]
    text, got = step_text(step), numbers("by-parts")
    assert "same blend" not in text.text and "γ(r)" in text.text and "pair index" in text.text
    assert "attention temperature" in text.text  # YaRN = NTK-by-parts + temperature (the paper's definition)
    curves = {trace.meta["method"]: trace for trace in tour.step_figure(step).data if trace.meta}
    assert curves["ntk_by_parts"].name == "NTK-by-parts: the paper's γ(r)"
    assert curves["yarn"].name == "YaRN: the reference code's ramp"
    paper, code = np.asarray(curves["ntk_by_parts"].y), np.asarray(curves["yarn"].y)
    assert not np.allclose(paper, code)
    # independently: θ′/θ = γ + (1 − γ)/s with the paper's γ(r) and with the code's 1 − ramp(i)
    ramp = ramp_comparison(tour.lesson_of(step).result(step_settings(step)).ramp_spec)
    s = got["s"]
    np.testing.assert_allclose(paper, ramp.paper_kept.numpy() + (1 - ramp.paper_kept.numpy()) / s, rtol=1e-6)
    np.testing.assert_allclose(code, ramp.code_kept.numpy() + (1 - ramp.code_kept.numpy()) / s, rtol=1e-6)
    assert got["gap"] == pytest.approx(float((code - paper).max()), rel=1e-6)
    assert got["widest"] == int((code - paper).argmax())
    assert f"up to {got['gap']:.2f} above γ(r)'s (pair {got['widest']})" in text.why


def test_temperature_factors():
    got = numbers("temperature")
    assert got["sqrt"] == pytest.approx(0.1 * math.log(16) + 1)
    assert got["logit"] == pytest.approx((0.1 * math.log(16) + 1) ** 2)
    assert got["log_n"] == pytest.approx(math.log(16 * 512) / math.log(512))


def test_bfloat16_collisions_by_round_trip():
    got = numbers("bf16")
    positions = torch.arange(248, 280)
    stored = positions.to(torch.bfloat16).to(torch.float64)
    assert (got["start"], got["end"], got["width"]) == (248, 279, 32)
    assert got["distinct"] == int(torch.unique(stored).numel()) == 21
    first = int(torch.nonzero(torch.arange(1, 1000).to(torch.bfloat16).to(torch.int64) != torch.arange(1, 1000))[0]) + 1
    assert got["first"] == first == 2 ** got["bits"] + 1 == 257 and got["two_to_bits"] == "2⁸"
    exact = torch.arange(8192)
    assert got["exact"] == f"{int((exact.to(torch.bfloat16).to(torch.int64) == exact).sum()):,}" == "896"
    assert got["fraction"] == pytest.approx(896 / 8192)


@pytest.mark.skipif("training" not in lessons.all_lessons(), reason="the training lesson is not installed")
def test_the_toy_turns_like_llama_2():
    got = numbers("toy")

    def turning(head_dim: int, base: float, length: int) -> int:
        return int((2 * math.pi / theta(head_dim, base) <= length).sum())

    settings = step_settings(BY_SLUG["toy"])
    d, base, length = settings.head_size, settings.rope_base, settings.train_length
    assert (got["d"], got["pairs"]) == (d, d // 2)
    assert got["turning"] == turning(d, base, length)
    assert got["usual_turning"] == turning(d, 10_000.0, length)
    assert (got["llama_turning"], got["llama_pairs"]) == (turning(128, 10_000.0, 4096), 64) == (46, 64)
    assert got["usual_turning"] < got["turning"]  # the smaller base is what makes the toy turn like Llama 2
    assert abs(got["unseen"] - got["llama_unseen"]) < abs(got["usual_unseen"] - got["llama_unseen"])
