"""Torch computation behind the positional-encoding explorer (no Streamlit, no plotly).

The public names below are imported on first use, so a command line that only answers ``--help`` (``python -m
pe_core.check --help``) does not wait for torch.
"""

from __future__ import annotations

from pe_core.lazy import lazy_names

_PUBLIC = {
    "pe_core.biases": ("alibi_slopes", "t5_relative_bucket"),
    "pe_core.config": ("context_length_of", "extended_length", "from_hf_config", "head_dim_of", "layer_map"),
    "pe_core.decay": ("random_phase_level", "rope_decay_bound"),
    "pe_core.device": ("compute_device", "device_label"),
    "pe_core.layers": ("LayerKind", "LayerMap"),
    "pe_core.methods": ("METHOD_TITLES", "METHODS", "MethodSetup", "method_setup"),
    "pe_core.precision": ("collision_summary", "exact_position_fraction", "first_inexact_position"),
    "pe_core.presets": ("Preset", "load_presets", "preset_by_name"),
    "pe_core.rope": ("ROPE_TYPE_ENTRIES", "ROPE_TYPES", "AngleCoverage", "RopeFrequencies", "RopeSpec", "RopeType",
                     "angle_coverage", "default_inv_freq", "ntk_aware_base", "ntk_by_parts_gamma", "rope_frequencies",
                     "rotation_angles", "rotations_within", "wavelengths", "yarn_correction_range", "yarn_get_mscale",
                     "yarn_ramp"),
}
__all__, __getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC)
