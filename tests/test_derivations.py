"""The derivations package: every claim verifies, every write-up variant is refuted, and the checks can fail."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
import sympy as sp

import derivations
from derivations import base, context_extension, rope_2d, rope_blocks, sinusoidal, yarn
from tests.conftest import ROOT

PARAMETER_CASES = [
    (d, value)
    for d in derivations.DERIVATIONS
    for value in (d.parameter.options if d.parameter is not None else (None,))
]


def _verify(derivation, value):
    return derivation.verify() if value is None else derivation.verify(**{derivation.parameter.name: value})


@pytest.mark.parametrize(("derivation", "value"), PARAMETER_CASES,
                         ids=[f"{d.slug}-{v}" if v is not None else d.slug for d, v in PARAMETER_CASES])
def test_every_claim_verifies_with_zero_residual(derivation, value):
    result = _verify(derivation, value)
    assert result.holds, f"{derivation.slug}: residual {result.residual}, {result.counterexample}"
    assert result.residual == 0
    assert result.counterexample is None
    assert len(result.checked) > 20


@pytest.mark.parametrize("variant", derivations.WRONG_VARIANTS, ids=[v.slug for v in derivations.WRONG_VARIANTS])
def test_every_write_up_variant_is_refuted_with_evidence(variant):
    result = variant.verify()
    assert not result.holds
    assert result.residual != 0
    assert result.counterexample, "a refuted claim must come with a concrete counterexample"
    assert variant.said and variant.shows and variant.source


def test_registry_is_consistent():
    slugs = [d.slug for d in derivations.DERIVATIONS + derivations.WRONG_VARIANTS]
    assert len(slugs) == len(set(slugs))
    assert list(derivations.REGISTRY) == list(derivations.TOPICS)
    assert all(derivations.REGISTRY[topic] for topic in derivations.TOPICS)
    claim_slugs = {d.slug for d in derivations.DERIVATIONS}
    assert all(v.refutes in claim_slugs for v in derivations.WRONG_VARIANTS)
    assert all(not d.is_wrong_variant and len(d.steps) >= 2 for d in derivations.DERIVATIONS)
    assert derivations.get("ntk_aware_base").topic == context_extension.TOPIC
    with pytest.raises(KeyError, match="no derivation named"):
        derivations.get("nope")


def test_the_brief_list_is_covered():
    required = {"rope2d_relative", "rope2d_norm", "rope2d_complex", "blocks_relative", "blocks_interleaved",
                "blocks_half_split", "sinusoidal_linear_shift", "sinusoidal_dot_product", "relative_linear_phase",
                "pi_equivalences", "ntk_aware_base", "dynamic_ntk", "yarn_correction_dim", "yarn_attention_scaling",
                "decay_abel_summation", "beta_bound", "alibi_power_of_two", "alibi_other_counts"}
    assert required <= {d.slug for d in derivations.DERIVATIONS}


def test_parameter_is_validated():
    derivation = derivations.get("blocks_relative")
    with pytest.raises(ValueError, match="must be one of 2, 4, 6, 8"):
        derivation.verify(d=5)
    with pytest.raises(ValueError, match="takes no parameter"):
        derivations.get("rope2d_norm").verify(d=4)


# --- the checker can fail: perturbed claims built here, not taken from the registry ---------------


def test_ntk_exponent_d_over_2_is_refuted():
    d, s, b = context_extension.head_dim, context_extension.scale, context_extension.base
    last = d / 2 - 1
    wrong = base.identity(context_extension.frequency(last, b * s ** (d / 2)), context_extension.frequency(last) / s,
                          "", simplifier=base.power_zero, witness={b: 10_000, s: 8, d: 128})
    right = base.identity(context_extension.frequency(last, b * s ** (d / (d - 2))),
                          context_extension.frequency(last) / s, "", simplifier=base.power_zero)
    assert right.holds and not wrong.holds and wrong.counterexample


@pytest.mark.parametrize("d", [4, 8])
def test_mixing_the_two_pairings_is_refuted(d):
    # rotate_half with the interleaved cos/sin layout: a classic porting bug (d = 2 hides it).
    x = rope_blocks.vector("x", d)
    half = d // 2
    turned = sp.Matrix([-x[j + half] for j in range(half)] + [x[j] for j in range(half)])
    angles = [rope_blocks.m * t for t in rope_blocks.frequencies(d) for _ in range(2)]
    mixed = x.multiply_elementwise(sp.Matrix([sp.cos(a) for a in angles])) + turned.multiply_elementwise(
        sp.Matrix([sp.sin(a) for a in angles]))
    result = base.identity(mixed, rope_blocks.block_rotation(rope_blocks.m, d) * x, "")
    assert not result.holds and result.counterexample


def test_block_relative_with_the_sum_of_positions_is_refuted():
    m, n = rope_blocks.m, rope_blocks.n
    lhs = rope_blocks.block_rotation(m, 4).T * rope_blocks.block_rotation(n, 4)
    assert not base.identity(lhs, rope_blocks.block_rotation(n + m, 4), "").holds
    assert base.identity(lhs, rope_blocks.block_rotation(n - m, 4), "").holds


def test_identity_helper_decides_both_ways():
    x = sp.Symbol("x", real=True)
    assert base.identity(sp.sin(x) ** 2 + sp.cos(x) ** 2, 1, "").holds
    refuted = base.identity(sp.sin(x), x, "")
    assert not refuted.holds
    value = float(re.search(r"residual ≈ (-?[\d.e+-]+)", refuted.counterexample).group(1))
    assert math.isclose(value, math.sin(7 / 3) - 7 / 3, rel_tol=1e-5)


# --- refuted residuals are the ones the maths predicts ------------------------------------------------


def test_sign_flip_residual_is_twice_the_cross_term():
    residual = derivations.get("rope2d_relative_sign_flip").verify().residual
    q1, q2, k1, k2, m, n, theta = rope_2d.q1, rope_2d.q2, rope_2d.k1, rope_2d.k2, rope_2d.m, rope_2d.n, rope_2d.theta
    expected = 2 * (q1 * k2 - q2 * k1) * sp.sin((m - n) * theta)
    assert base.trig_zero(residual - expected) == 0


def test_paper_wavelength_blend_residual():
    residual = derivations.get("yarn_paper_wavelength_blend").verify().residual
    lam, g, s = yarn.wavelength, yarn.gamma, yarn.scale
    assert sp.simplify(residual - lam * g * (1 - g) * (s - 1) ** 2 / (1 - g + g * s)) == 0
    at_half = residual.subs({lam: 1, g: sp.Rational(1, 2), s: 4})
    assert at_half == sp.Rational(5, 2) - sp.Rational(8, 5)


def test_column_residuals_are_typeset_as_a_transposed_row():
    result = derivations.get("rope2d_complex_sign_flip").verify()
    q2, m, theta = rope_2d.q2, rope_2d.m, rope_2d.theta
    assert list(result.residual) == [0, -2 * q2 * sp.cos(m * theta)]
    assert result.residual_latex.startswith(r"\left(0,") and result.residual_latex.endswith(r"\right)^{\top}")


def test_threshold_residual_is_the_missed_interval():
    residual = derivations.get("yarn_threshold_e").verify().residual
    assert residual == sp.Interval.Lopen(1, sp.E)


def test_monotone_decay_counterexample_is_a_real_rise():
    frequencies = [10_000 ** (-2 * i / 128) for i in range(64)]
    total = [math.fsum(math.cos(k * w) for w in frequencies) for k in range(40)]
    first_rise = next(k for k in range(39) if total[k + 1] > total[k])
    result = derivations.get("sinusoidal_monotone_decay").verify()
    assert f"at k = {first_rise} and" in result.counterexample
    assert math.isclose(float(result.residual), total[first_rise + 1] - total[first_rise], rel_tol=1e-9)


def test_longest_sinusoidal_period_is_short_of_two_pi_base():
    residual = derivations.get("sinusoidal_period_range").verify().residual
    value = float(residual.subs({sinusoidal.base: 10_000, sinusoidal.head_dim: 512}))
    assert math.isclose(value, 2 * math.pi * (10_000 ** (510 / 512) - 10_000), rel_tol=1e-12)


# --- hygiene -------------------------------------------------------------------------------------------


def test_no_text_is_ever_parsed():
    forbidden = re.compile(r"\b(sympify|parse_expr|eval|exec)\s*\(|sp\.S\(\s*[\"']")
    for path in sorted((ROOT / "derivations").glob("*.py")) + [ROOT / "app_pages" / "maths.py"]:
        assert not forbidden.search(path.read_text()), path.name


def test_words_in_formulas_are_marked_for_translation():
    """A word typeset upright in a claim or step (\\text{...}) is a Latex word, unless it is a method's name."""
    names = {"RoPE", "ReRoPE"}
    for derivation in derivations.DERIVATIONS + derivations.WRONG_VARIANTS:
        for formula in (derivation.claim, *(step.latex for step in derivation.steps)):
            words = set(getattr(formula, "words", ())) | names
            unmarked = [w for w in re.findall(r"\\text\{([^{}]*)\}", formula) if w not in words]
            assert not unmarked, (derivation.slug, unmarked)


def test_package_imports_without_streamlit_plotly_or_torch():
    code = ("import sys; import derivations; "
            "print(sorted(m for m in ('streamlit', 'plotly', 'torch') if m in sys.modules))")
    output = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "[]"


def test_no_source_is_an_unpublished_document():
    for derivation in derivations.DERIVATIONS + derivations.WRONG_VARIANTS:
        texts = [derivation.title, derivation.source, derivation.check, derivation.said, derivation.shows,
                 *derivation.notes, *(step.text for step in derivation.steps)]
        assert not any(re.search(r"\bseed\b|\bthe notes\b", text, re.IGNORECASE) for text in texts), derivation.slug
        if not derivation.counterfactual:
            assert "](https://" in derivation.source or "transformers'" in derivation.source, derivation.slug


def test_lesson_figures_show_the_checked_end_points():
    from lessons import derivations as lesson

    lesson_ = lesson.LESSON
    ntk = lesson_.figure("ntk-vs-pi")
    assert "d = 128, s = 8" in ntk.layout.title.text
    pi_ratio, ntk_ratio = (list(trace.y) for trace in ntk.data[:2])
    assert [trace.meta for trace in ntk.data[:2]] == [{"method": "pi"}, {"method": "ntk"}]
    assert len(ntk_ratio) == 64
    assert all(math.isclose(r, 1 / 8, rel_tol=1e-12) for r in pi_ratio)
    expected = [8 ** (-2 * i / 126) for i in range(64)]
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(ntk_ratio, expected, strict=True))
    assert list(ntk.data[2].y) == [ntk_ratio[0], ntk_ratio[-1]]
    assert "θ′₀/θ₀ = 1 and θ′/θ = 0.125 = 1/8" in lesson_.caption("ntk-vs-pi")

    blend = lesson_.figure("ntk-by-parts-blend")
    gamma, implemented, paper = list(blend.data[0].x), list(blend.data[0].y), list(blend.data[1].y)
    middle = min(range(len(gamma)), key=lambda j: abs(gamma[j] - 0.5))
    assert math.isclose(gamma[middle], 0.5)
    assert math.isclose(implemented[middle], 1.6) and math.isclose(paper[middle], 2.5)  # s/(1 − γ + γs), (1 − γ)s + γ
    assert math.isclose(implemented[0], paper[0]) and math.isclose(implemented[-1], paper[-1])
    assert lesson_.result().halfway == (1.6, 2.5)
    assert "λ′ = 1.6λ, the paper's wavelength blend 2.5λ" in lesson_.caption("ntk-by-parts-blend")


def test_lesson_figures_follow_their_settings():
    from lessons import derivations as lesson

    settings = lesson.Settings.from_mapping({"head_dim": 16, "scale": 4.0, "blend_scale": 16.0})
    ntk = lesson.LESSON.figure("ntk-vs-pi", settings)
    ntk_ratio = list(ntk.data[1].y)
    assert len(ntk_ratio) == 8 and math.isclose(ntk_ratio[-1], 1 / 4, rel_tol=1e-12)
    assert all(math.isclose(a, 4 ** (-2 * i / 14), rel_tol=1e-12) for i, a in enumerate(ntk_ratio))
    frequency, wavelength = lesson.LESSON.result(settings).halfway
    assert math.isclose(frequency, 16 / 8.5) and math.isclose(wavelength, 8.5)


def test_verdicts_are_cached_per_slug_and_parameter():
    from lessons import derivations as lesson

    first = lesson.verification("blocks_relative", 4)
    assert first.holds and first.residual == "0"
    assert lesson.verification("blocks_relative", 4) is first
    assert lesson.verdict(derivations.get("rope2d_norm"), 6) is lesson.verification("rope2d_norm", None)


def test_the_yarn_derivation_names_the_head_size_d_like_every_page():
    from derivations.yarn import CORRECTION_DIM, correction_index

    texts = [CORRECTION_DIM.claim, CORRECTION_DIM.title, *(step.latex for step in CORRECTION_DIM.steps)]
    assert not any("D" in text.replace("|D|", "") for text in texts), texts
    assert "b^{2i/d}" in CORRECTION_DIM.claim
    assert {str(s) for s in correction_index().free_symbols} == {"d", "L", "r", "b"}
