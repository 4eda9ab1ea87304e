"""Check a RoPE implementation's inverse frequencies against transformers, and name the bug that explains them.

What the user supplies, precisely:

- a model config (``from_hf_config`` reads it as transformers does), optionally the sequence length
  the implementation was run at (dynamic NTK and LongRoPE depend on it; default: none given, as at
  model init);
- their θᵢ, in one of two forms, told apart by the count:
  *per pair* - ``rotary_dim / 2`` numbers, θ₀ … θ_{d/2−1}, the ``inv_freq`` buffer in pair order; or
  *per dimension* - ``rotary_dim`` numbers, the frequency each rotated dimension of the head turns at
  (the angle table at position 1, ``torch.cat((freqs, freqs), -1)[1]`` in transformers' half-split
  layout, ``freqs.repeat_interleave(2, -1)[1]`` in the interleaved one). Only this form shows the
  pairing: a per-pair list is the same whichever dimensions a pair rotates;
  for a model with ``partial_rotary_factor`` < 1, ``head_dim / 2`` or ``head_dim`` numbers are read
  as θᵢ for the whole head (and match only if the unrotated pairs are 0);
- optionally their attention factor: the factor their RoPE multiplies cos and sin by (transformers'
  ``attention_scaling``; q·k is scaled by its square).

The verdict is *match* when every θᵢ is within float32 tolerance of the float64 reference and the
attention factor (if given) is too. Tolerance per entry: 8·ε₃₂·(1 + |ln θᵢ|) relative, ε₃₂ = 2⁻²³:
computing b^(−2i/d) in float32 rounds the exponent, an error that the power multiplies by |ln θᵢ|,
plus a few roundings of the power, the division and the method's blend (transformers' own float32
results stay within 0.8 of these units on every preset).

On a mismatch every bug class of ``BUG_CLASSES`` that applies to the config is tried: a class
reproduces the numbers if one of its perturbed implementations matches them within the same
tolerance (a rounding to bfloat16/float16 is matched to within the rounding of a float32 value).
Some classes are fitted (``pe_core.fit``): the base, the exponent's start and width, the factor, the
original length L, the length dynamic NTK was grown for, the rope type, YaRN's β values are fitted
to the numbers and named (a known default, a bfloat16 rounding or integer wrap-around of rope_theta,
static NTK used for dynamic, ...); a fitted parameter is the answer only where no specific bug is.
Failing one bug, θᵢ and the attention factor are diagnosed apart, then two θ bugs at once: any bug's
output rounded to half precision or laid out in the other pairing, and any bug acting on the config
another bug changed. The diagnosis lists every explanation found; none means that neither one known
bug nor two reproduce them.

The package: ``common`` (float32 tolerance, pairings, how the numbers are read; shared with the rotation probe), ``ports`` (what each buggy
port outputs, and the variants fitted to the numbers), ``bugs`` (the bug classes, one entry each), ``report``
(the check, the diagnosis and its words) and ``cli`` (``python -m pe_core.check``). The names below import on
first use, so ``python -m pe_core.check --help`` answers before torch is imported.
"""

from __future__ import annotations

from pe_core.lazy import lazy_names

_PUBLIC = {
    "pe_core.check.common": ("EPS32", "FORM_TITLES", "LAYOUTS", "LAYOUT_NAMES", "LAYOUT_TITLES", "TOLERANCE_ULPS",
                                "Reading", "close", "float32_tolerance", "other_layout", "pair_of_dimension",
                                "per_dimension", "readings_for"),
    "pe_core.check.ports": ("BugClass", "Candidate", "computed_in"),
    "pe_core.check.bugs": ("BUG_CLASSES", "LAYER_MAP_BUGS", "applicable_classes"),
    "pe_core.check.report": ("CheckReport", "Diagnosis", "Row", "check", "check_layers", "diagnosis_references",
                             "diagnosis_title", "explain", "report_json", "report_text", "where_text"),
    "pe_core.check.cli": ("cli_error", "main", "refuse_if_strict"),
}
__all__, __getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC)
