"""Context-extension methods as the pages offer them: one model trained at L, run at L' = s·L.

Each method turns (head_dim, base, L, L') into a ``RopeSpec`` plus the sequence length to
evaluate it at, so every page compares methods the same way.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from pe_core.rope import RopeFrequencies, RopeSpec, check_length, rope_frequencies

METHODS = ("direct", "pi", "ntk", "dynamic", "ntk_by_parts", "yarn", "llama3", "longrope", "abf")

METHOD_TITLES = {
    "direct": "Direct extrapolation",
    "pi": "Position Interpolation",
    "ntk": "NTK-aware",
    "dynamic": "Dynamic NTK",
    "ntk_by_parts": "NTK-by-parts",
    "yarn": "YaRN",
    "llama3": "Llama-3 scaling",
    "longrope": "LongRoPE",
    "abf": "Base change (ABF)",
}

# The LongRoPE factors published for Phi-3.5-mini are for 48 pairs and s = 32; LongRoPE finds
# factors per model by search, so for other sizes we resample that profile (see longrope_factors).
_LONGROPE_REFERENCE_PRESET = "Phi-3.5-mini-instruct"


class MethodSetup(NamedTuple):
    method: str  # one of METHODS, or "model" for a preset's / pasted config's own RoPE
    title: str
    spec: RopeSpec
    seq_len: int  # the length the method is evaluated at (dynamic and LongRoPE depend on it)

    def frequencies(self) -> RopeFrequencies:
        return rope_frequencies(self.spec, self.seq_len)


def longrope_factors(num_pairs: int, scale: float) -> tuple[float, ...] | None:
    """A LongRoPE-shaped long_factor list for any size: the published Phi-3 profile, resampled.

    Factors are interpolated over the normalised pair index and rescaled in log space so the
    profile's ratio to its training scale is kept (factor^(ln s / ln s_ref)). Returns None if
    the reference preset is not available.
    """
    from pe_core.presets import load_presets

    preset = next((p for p in load_presets() if p.name == _LONGROPE_REFERENCE_PRESET), None)
    if preset is None or preset.spec.long_factor is None:
        return None
    reference = torch.tensor(preset.spec.long_factor, dtype=torch.float64)
    where = torch.linspace(0, len(reference) - 1, num_pairs, dtype=torch.float64)
    left = where.floor().long().clamp(max=len(reference) - 2)
    weight = where - left
    log_profile = torch.log(reference[left]) * (1 - weight) + torch.log(reference[left + 1]) * weight
    exponent = torch.log(torch.tensor(float(scale))) / torch.log(torch.tensor(preset.spec.factor))
    return tuple((log_profile * exponent).exp().tolist())


def method_setup(
    method: str,
    head_dim: int,
    base: float,
    train_length: int,
    target_length: int,
    *,
    abf_base: float = 500_000.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> MethodSetup:
    """The spec for ``method`` when a model trained at ``train_length`` runs at ``target_length``.

    The scale is s = max(1, L'/L). Dynamic NTK uses transformers' formula with factor 1, so at
    length L' it equals static NTK with s = L'/L (and plain RoPE up to L).
    """
    check_length("train_length", train_length)
    check_length("target_length", target_length)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} (got {method!r}).")
    scale = max(1.0, target_length / train_length)
    common = {"head_dim": head_dim, "base": base, "original_max_position_embeddings": train_length}
    if method == "direct":
        spec = RopeSpec(**common)
    elif method == "pi":
        spec = RopeSpec(**common, rope_type="linear", factor=scale)
    elif method == "ntk":
        spec = RopeSpec(**common, rope_type="ntk", factor=scale)
    elif method == "dynamic":
        spec = RopeSpec(**common, rope_type="dynamic", factor=1.0)
    elif method == "ntk_by_parts":
        spec = RopeSpec(**common, rope_type="ntk_by_parts", factor=scale, beta_fast=beta_fast, beta_slow=beta_slow)
    elif method == "yarn":
        spec = RopeSpec(**common, rope_type="yarn", factor=scale, beta_fast=beta_fast, beta_slow=beta_slow)
    elif method == "llama3":
        spec = RopeSpec(
            **common, rope_type="llama3", factor=scale,
            low_freq_factor=low_freq_factor, high_freq_factor=high_freq_factor,
        )
    elif method == "longrope":
        num_pairs = RopeSpec(head_dim=head_dim, base=base).num_pairs
        factors = longrope_factors(num_pairs, scale)
        if factors is None:
            raise ValueError("LongRoPE needs the Phi-3.5 preset's factors, which are not available.")
        spec = RopeSpec(
            **common, rope_type="longrope", factor=scale,
            short_factor=tuple(1.0 for _ in range(num_pairs)), long_factor=factors,
        )
    else:  # abf: a plain RoPE with a larger base, as in Code Llama and Llama 3 (Xiong et al. 2023)
        spec = RopeSpec(head_dim=head_dim, base=abf_base, original_max_position_embeddings=train_length)
    return MethodSetup(method, METHOD_TITLES[method], spec, target_length)
