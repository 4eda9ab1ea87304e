"""The bug classes: the bugs public threads show again and again, each with when it applies and what it outputs."""

from __future__ import annotations

import math

from i18n import N_
from pe_core import fit
from pe_core.check import ports
from pe_core.check.common import EPS32, TOLERANCE_ULPS, close, per_dimension
from pe_core.check.ports import BugClass
from pe_core.rope import (
    RopeSpec,
    rope_type_entry,
)

BUG_CLASSES: dict[str, BugClass] = {bug.name: bug for bug in (
    BugClass("beta_swapped", N_("YaRN's β_fast and β_slow swapped"),
             N_("The YaRN correction range is computed from (β_slow, β_fast) instead of (β_fast, β_slow), so the ramp runs backwards."),
             N_("The θᵢ are YaRN's with β_fast and β_slow exchanged, so the ramp runs backwards (fast pairs "
                "interpolated, slow pairs kept); the curves part at {where}."),
             ports.is_yarn, ports.beta_swapped, references=("bug_yarn_betas",)),
    BugClass("truncate_ignored", N_("YaRN's truncate ignored"),
             N_("The YaRN correction range is rounded to whole pairs (or not) against the config's truncate."),
             N_("The θᵢ are YaRN's computed with truncate = {used} although the config sets truncate = {config}, "
                "which moves the ends of the ramp; the curves part at {where}."),
             lambda spec: "truncate" in ports.reads_of(spec), ports.truncate_flipped, ports.truncate_candidates,
             references=("bug_yarn_truncate",),
             spec_change=lambda spec, seq_len: (spec.replace(truncate=not spec.truncate), seq_len, False)),
    BugClass("factor_ignored", N_("Scaling factor ignored"),
             N_("rope_scaling is parsed but never applied: plain RoPE θᵢ at the config's base."),
             N_("The θᵢ are plain RoPE's: the config's {rope_type} scaling was never applied; the curves part at "
                "{where}."),
             ports.is_scaled, ports.unscaled_output, references=("bug_scaling_dropped",),
             spec_change=lambda spec, seq_len: (spec.replace(rope_type="default", factor=1.0), seq_len, False)),
    BugClass("attention_factor_missing", N_("Attention factor missing"),
             N_("YaRN's or LongRoPE's scaling of cos and sin (the attention temperature) is left out."),
             N_("The θᵢ are right but the attention factor is 1 instead of {expected_af:.6g}: the {rope_type} "
                "scaling of cos and sin is missing."),
             ports.has_attention_factor, ports.no_attention_factor, references=("bug_attention_factor_missing",),
             attention_only=True),
    BugClass("attention_factor_squared", N_("Attention factor applied twice"),
             N_("The attention factor is applied twice, so logits are scaled by its fourth power instead of its square."),
             N_("The θᵢ are right but the attention factor is {given_af:.6g} = {expected_af:.6g}²: it was applied "
                "twice (on cos and sin and again on the logits, say)."),
             ports.has_attention_factor, ports.attention_factor_twice, references=("bug_attention_factor_twice",),
             attention_only=True),
    BugClass("interleaved_vs_half", N_("Interleaved and half-split pairing mixed up"),
             N_("Dimensions are paired (2i, 2i + 1) for a checkpoint that pairs (i, i + d/2), or the other way round."),
             N_("The values are laid out {used_title} but the checkpoint expects {expected_title}, so every "
                "dimension is rotated with the wrong partner; the curves part at {where}."),
             ports.always, ports.interleaved_output, ports.layout_candidates, references=("bug_pairing",)),
    BugClass("wrong_default_base", N_("Wrong (default) base"),
             N_("A default or hard-coded base replaces the config's rope_theta (or its absence)."),
             N_("The θᵢ are the expected ones for base {used_base} instead of the config's {base}: a "
                "default or hard-coded base replaced rope_theta; the curves part at {where}."),
             ports.always, ports.wrong_base, ports.base_candidates, references=("bug_default_base",), fitted=True),
    BugClass("partial_rotary_ignored", N_("partial_rotary_factor ignored"),
             N_("Frequencies are computed for the whole head although only part of it is rotated."),
             N_("There are θᵢ for all {head_pairs} pairs of the head with exponents 2i/{head_dim}, but "
                "partial_rotary_factor = {partial:g} rotates {pairs} pairs with exponents 2i/{rotary_dim}; the "
                "curves part at {where}."),
             ports.full_head_applies, ports.full_head_output, ports.full_head_candidates, references=("bug_partial_rotary",),
             spec_change=lambda spec, seq_len: (spec.replace(partial_rotary_factor=1.0), seq_len, True)),
    BugClass("low_precision", N_("Frequencies in low precision"),
             N_("θᵢ computed in, or cast to, bfloat16 or float16 (a buffer cast with the model, say)."),
             N_("The θᵢ are the expected ones rounded to {dtype} (the buffer was cast or computed in half "
                "precision), off by up to {ulp:.1e} relative; the curves part at {where}."),
             ports.always, ports.low_precision_output, ports.precision_candidates, references=("bug_low_precision",)),
    BugClass("llama3_bands_inverted", N_("Llama-3 smoothing bands inverted"),
             N_("Llama 3.1's blend between kept and divided pairs runs the wrong way, or its two band factors are exchanged."),
             N_("The θᵢ are Llama-3's with the smoothing blend reversed: between λ = L/{high:g} and λ = L/{low:g} the "
                "pairs near the fast edge are interpolated and those near the slow edge kept; the curves part at "
                "{where}."),
             lambda spec: "low_freq_factor" in ports.reads_of(spec), ports.llama3_inverted, ports.llama3_candidates,
             references=("bug_llama3_bands",)),
    BugClass("longrope_wrong_factors", N_("LongRoPE's short/long switch wrong"),
             N_("LongRoPE's long factors are used where the short ones belong, or the other way round."),
             N_("The θᵢ use the other set of LongRoPE factors than transformers does at this length; the curves part "
                "at {where}."),
             lambda spec: "long_factor" in ports.reads_of(spec), ports.longrope_swapped, ports.longrope_candidates,
             references=("bug_longrope_switch",),
             spec_change=lambda spec, seq_len: (
                 spec, None if ports.uses_long(spec, seq_len) else spec.original_max_position_embeddings + 1, False)),
    # ---- found by fitting the numbers (pe_core.fit) ----
    BugClass("exponent_offset", N_("Exponent off by one"),
             N_("The exponent's index does not start at 0 (arange(1, d, 2), or i counted from 1): every θᵢ is the "
                "expected one times the constant b^(−o/d)."),
             N_("The θᵢ are b^(−(2i {shift})/{dim}) instead of b^(−2i/{dim}): the exponent's index starts at "
                "{offset:g} instead of 0 (arange(1, d, 2) starts it at 1), so the plain θᵢ are b^({negated}/{dim}) "
                "= {ratio:.6g} times the expected ones, a constant ratio; the curves part at {where}."),
             ports.always, ports.offset_output, ports.offset_candidates, references=("bug_exponent_offset",)),
    BugClass("exponent_width", N_("Exponent over the wrong width"),
             N_("With partial rotary, the exponent 2i/d is taken over head_dim instead of the rotated width (or, "
                "for proportional RoPE, the other way round)."),
             N_("The θᵢ are b^(−2i/{used_width}), but this model's exponent is 2i/{width}: the exponent was taken "
                "over the wrong width, which acts as base {used_base} in place of {base}; the curves part at "
                "{where}."),
             lambda spec: fit.width_base(spec) is not None, ports.width_output, ports.base_origin_candidates(("width",)),
             references=("bug_exponent_width",)),
    BugClass("base_rounded", N_("Base rounded to half precision"),
             N_("rope_theta itself is rounded to bfloat16 or float16 before the power (500,000 becomes 499,712 in "
                "bfloat16)."),
             N_("The θᵢ are those of base {used_base}, the config's {base} rounded to {dtype}: the base was cast to "
                "(or computed in) {dtype} before the power; the curves part at {where}."),
             lambda spec: bool(fit.rounded_bases(spec.base)), ports.rounded_base, ports.base_origin_candidates(("rounded",)),
             references=("bug_low_precision",),
             spec_change=lambda spec, seq_len: (spec.replace(base=fit.rounded_bases(spec.base)[0].value), seq_len,
                                                False)),
    BugClass("base_overflow", N_("Base overflowed its type"),
             N_("rope_theta is stored in a type too narrow for it: an integer wraps around (150,000 in int16 is "
                "18,928), float16 turns it into infinity (θ = [1, 0, 0, …])."),
             N_("The θᵢ are those of base {used_base}: the config's {base} wrapped around in {int_type} ({bits} "
                "bits), so the base was held in an integer type too narrow for it; the curves part at {where}."),
             ports.overflow_applies, ports.overflow_output, ports.overflow_candidates, references=("bug_base_overflow",)),
    BugClass("dynamic_wrong_length", N_("Dynamic NTK at the wrong length"),
             N_("Dynamic NTK's base is grown for another sequence length than the one run, or static NTK's fixed "
                "base is used for dynamic."),
             N_("The θᵢ are dynamic NTK's for the wrong sequence length; the curves part at {where}."),
             lambda spec: fit.grows_with_length(spec) and spec.factor > 1, ports.dynamic_wrong_length, ports.dynamic_candidates,
             references=("bug_dynamic_ntk",)),
    BugClass("wrong_rope_type", N_("Wrong scaling method"),
             N_("Another rope_type's scaling is applied than the config's (linear where it says llama3, say)."),
             N_("The θᵢ are {used_type} scaling's with the config's factor {factor:g}, but the config's rope_type is "
                "{rope_type}: the wrong scaling method was applied; the curves part at {where}."),
             lambda spec: rope_type_entry(spec.rope_type).extends and spec.factor > 1, ports.wrong_rope_type,
             ports.rope_type_candidates, references=("bug_rope_type",), fitted=True),
    BugClass("wrong_factor", N_("Wrong scaling factor"),
             N_("The scaling uses another factor s than the config's."),
             N_("The θᵢ are {rope_type} scaling's with factor {used_factor:g} instead of the config's {factor:g}; the "
                "curves part at {where}."),
             lambda spec: ports.one_factor(spec),
             ports.wrong_factor, ports.factor_candidates, references=("bug_rope_type",), fitted=True),
    BugClass("wrong_original_length", N_("Wrong original length L"),
             N_("The scaling's original context length L is not the config's original_max_position_embeddings "
                "(the extended max_position_embeddings taken instead, say)."),
             N_("The θᵢ are {rope_type}'s with original length L = {used_length:,} instead of {length:,}; the curves "
                "part at {where}."),
             lambda spec: ports.one_factor(spec) and "original_max_position_embeddings" in ports.reads_of(spec) and spec.factor > 1,
             ports.wrong_length, ports.length_candidates, references=("bug_original_length",), fitted=True),
    BugClass("longrope_multiplied", N_("LongRoPE factors multiplied"),
             N_("LongRoPE's per-pair factors multiply θᵢ instead of dividing them."),
             N_("The θᵢ are b^(−2i/d) multiplied by LongRoPE's {which} factors instead of divided by them (θᵢ·fᵢ, not "
                "θᵢ/fᵢ), so the slowest pairs are off by up to {largest:.4g}×; the curves part at {where}."),
             lambda spec: "long_factor" in ports.reads_of(spec), ports.longrope_multiplied, ports.longrope_multiplied_candidates,
             references=("bug_longrope_divide",)),
    BugClass("wrong_betas", N_("YaRN's β values wrong"),
             N_("YaRN's ramp is computed from other β_fast / β_slow values than the config's (defaults, say)."),
             N_("The θᵢ are YaRN's with β_fast = {used_fast:g} and β_slow = {used_slow:g} instead of the config's "
                "{beta_fast:g} and {beta_slow:g}, which moves the ramp; the curves part at {where}."),
             ports.is_yarn, ports.wrong_betas, ports.beta_candidates, references=("bug_yarn_betas",), fitted=True),
    BugClass("mscale_on_cos_sin", N_("DeepSeek's mscale put on cos and sin"),
             N_("With mscale and mscale_all_dim set (DeepSeek's form), YaRN's mscale is put on cos and sin, where "
                "transformers puts their ratio (1 when equal) and scales the softmax by mscale(s, mscale_all_dim)²."),
             N_("The θᵢ are right, but the attention factor {given_af:.6g} is YaRN's 0.1·{which}·ln s + 1 put on cos "
                "and sin. With mscale and mscale_all_dim both set, transformers multiplies cos and sin by "
                "mscale(s, mscale)/mscale(s, mscale_all_dim) = {expected_af:.6g} and DeepSeek's attention multiplies "
                "the softmax scale by mscale(s, mscale_all_dim)² = {softmax:.6g}. On cos and sin a factor counts "
                "squared in q·k: it stands in for that softmax scale only if your attention does not apply it "
                "too."),
             ports.has_mscale_pair, ports.mscale_on_cos_sin, ports.mscale_candidates,
             references=("bug_deepseek_mscale", "deepseek_softmax_mscale"),
             attention_only=True),
)}


# A hybrid model's other kinds of layer: named when the numbers are theirs, never tried on a single RoPE.
BUG_CLASSES["other_layer_kind"] = BugClass(
    "other_layer_kind", N_("Another kind of layer's RoPE"),
    N_("A hybrid model's layers of one kind get the RoPE of another kind (Gemma 3's sliding layers given the "
       "full-attention layers' base or scaling, say)."),
    N_("The θᵢ are another kind of layer's RoPE; the curves part at {where}."),
    lambda spec: False, ports.reference_output, references=("bug_layer_kinds",))
# Bug classes that need the model's layer map (check_layers), not one RoPE (check).
LAYER_MAP_BUGS = ("other_layer_kind",)


def applicable_classes(spec: RopeSpec, seq_len: int | None = None) -> tuple[str, ...]:
    """The bug classes that can occur for this config and change its output (θᵢ or the attention factor)."""
    expected, attention = ports.reference_output(spec, seq_len)
    found = []
    for name, bug in BUG_CLASSES.items():
        if not bug.applies(spec):
            continue
        values, bug_attention = bug.perturb(spec, seq_len)
        same_theta = values.numel() == expected.numel() and bool(close(values, expected).all())
        if name == "interleaved_vs_half":
            same_theta = bool(close(values, per_dimension(expected, "half")).all())
        if same_theta and math.isclose(bug_attention, attention, rel_tol=TOLERANCE_ULPS * EPS32):
            continue
        found.append(name)
    return tuple(found)
