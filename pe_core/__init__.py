"""Torch computation behind the positional-encoding explorer (no Streamlit, no plotly)."""

from pe_core.biases import alibi_slopes, t5_relative_bucket
from pe_core.config import context_length_of, extended_length, from_hf_config, head_dim_of, layer_map
from pe_core.decay import random_phase_level, rope_decay_bound
from pe_core.device import compute_device, device_label
from pe_core.layers import LayerKind, LayerMap
from pe_core.methods import METHOD_TITLES, METHODS, MethodSetup, method_setup
from pe_core.precision import collision_summary, exact_position_fraction, first_inexact_position
from pe_core.presets import Preset, load_presets, preset_by_name
from pe_core.rope import (
    ROPE_TYPE_TITLES,
    ROPE_TYPES,
    AngleCoverage,
    RopeFrequencies,
    RopeSpec,
    angle_coverage,
    default_inv_freq,
    ntk_aware_base,
    ntk_by_parts_gamma,
    rope_frequencies,
    rotation_angles,
    rotations_within,
    wavelengths,
    yarn_correction_range,
    yarn_get_mscale,
    yarn_ramp,
)

__all__ = [
    "random_phase_level", "rope_decay_bound",
    "alibi_slopes", "collision_summary", "exact_position_fraction", "first_inexact_position", "t5_relative_bucket",
    "AngleCoverage", "METHODS", "METHOD_TITLES", "MethodSetup", "Preset", "ROPE_TYPES", "ROPE_TYPE_TITLES",
    "RopeFrequencies", "RopeSpec", "angle_coverage", "compute_device", "context_length_of", "default_inv_freq",
    "device_label", "extended_length", "from_hf_config", "head_dim_of", "layer_map", "LayerKind", "LayerMap", "load_presets", "method_setup", "ntk_aware_base",
    "ntk_by_parts_gamma", "preset_by_name", "rope_frequencies", "rotation_angles", "rotations_within",
    "wavelengths", "yarn_correction_range", "yarn_get_mscale", "yarn_ramp",
]
