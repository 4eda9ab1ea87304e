"""Context-extension methods as the pages offer them: one model trained at L, run at L' = s·L.

A registry (name -> ``MethodDef``), as transformers keeps ``ROPE_INIT_FUNCTIONS``: each method
turns (head_dim, base, L, L') into a ``RopeSpec`` plus the length to evaluate it at, so every
page, CLI and test compares methods the same way, and adding one is one function and one entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.rope import RopeFrequencies, RopeSpec, check_length, rope_frequencies

# The LongRoPE factors published for Phi-3.5-mini are for 48 pairs and s = 32; LongRoPE finds
# factors per model by search, so for other sizes we resample that profile (see longrope_factors).
_LONGROPE_REFERENCE_PRESET = "Phi-3.5-mini-instruct"
DEFAULT_ABF_BASE = 500_000.0


class MethodParams(NamedTuple):
    """What a method is built from: the trained model's RoPE, the lengths, and the knobs some methods have."""

    head_dim: int
    base: float
    train_length: int
    target_length: int
    abf_base: float = DEFAULT_ABF_BASE
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0

    @property
    def scale(self) -> float:
        """s = max(1, L'/L): no method shrinks a model below its training length."""
        return max(1.0, self.target_length / self.train_length)

    def spec(self, **changes) -> RopeSpec:
        return RopeSpec(head_dim=self.head_dim, base=self.base, original_max_position_embeddings=self.train_length,
                        **changes)


class MethodDef(NamedTuple):
    title: str  # N_()-marked
    build: Callable[[MethodParams], RopeSpec]
    reference: str  # the source that introduced it (a key of the References page)
    ramp: bool = False  # sorts pairs by their turns within L with beta_fast and beta_slow (YaRN's ramp)


class MethodSetup(NamedTuple):
    method: str  # a key of METHODS, or "model" for a preset's / pasted config's own RoPE
    title: str
    spec: RopeSpec
    seq_len: int  # the length the method is evaluated at (dynamic and LongRoPE depend on it)

    def frequencies(self) -> RopeFrequencies:
        return rope_frequencies(self.spec, self.seq_len)


def longrope_factors(num_pairs: int, scale: float) -> tuple[float, ...] | None:
    """A LongRoPE-shaped long_factor list for any size: the published Phi-3.5 profile, resampled.

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


def _direct(p: MethodParams) -> RopeSpec:
    return p.spec()


def _pi(p: MethodParams) -> RopeSpec:
    return p.spec(rope_type="linear", factor=p.scale)


def _ntk(p: MethodParams) -> RopeSpec:
    return p.spec(rope_type="ntk", factor=p.scale)


def _dynamic(p: MethodParams) -> RopeSpec:
    # transformers' formula with factor 1: at length L' it equals static NTK with s = L'/L (plain RoPE up to L)
    return p.spec(rope_type="dynamic", factor=1.0)


def _ntk_by_parts(p: MethodParams) -> RopeSpec:
    return p.spec(rope_type="ntk_by_parts", factor=p.scale, beta_fast=p.beta_fast, beta_slow=p.beta_slow)


def _yarn(p: MethodParams) -> RopeSpec:
    return p.spec(rope_type="yarn", factor=p.scale, beta_fast=p.beta_fast, beta_slow=p.beta_slow)


def _llama3(p: MethodParams) -> RopeSpec:
    return p.spec(rope_type="llama3", factor=p.scale, low_freq_factor=p.low_freq_factor,
                  high_freq_factor=p.high_freq_factor)


def _longrope(p: MethodParams) -> RopeSpec:
    num_pairs = RopeSpec(head_dim=p.head_dim, base=p.base).num_pairs
    factors = longrope_factors(num_pairs, p.scale)
    if factors is None:
        raise ValueError(_("LongRoPE needs the Phi-3.5 preset's factors, which are not available."))
    return p.spec(rope_type="longrope", factor=p.scale, short_factor=(1.0,) * num_pairs, long_factor=factors)


def _abf(p: MethodParams) -> RopeSpec:
    # a plain RoPE with a larger base, as in Code Llama and Llama 3 (Xiong et al. 2023)
    return RopeSpec(head_dim=p.head_dim, base=p.abf_base, original_max_position_embeddings=p.train_length)


METHODS: dict[str, MethodDef] = {
    "direct": MethodDef(N_("Direct extrapolation"), _direct, "roformer"),
    "pi": MethodDef(N_("Position Interpolation"), _pi, "pi"),
    "ntk": MethodDef(N_("NTK-aware"), _ntk, "ntk_aware"),
    "dynamic": MethodDef(N_("Dynamic NTK"), _dynamic, "dynamic_ntk"),
    "ntk_by_parts": MethodDef(N_("NTK-by-parts"), _ntk_by_parts, "yarn", ramp=True),
    "yarn": MethodDef(N_("YaRN"), _yarn, "yarn", ramp=True),
    "llama3": MethodDef(N_("Llama-3 scaling"), _llama3, "llama3"),
    "longrope": MethodDef(N_("LongRoPE"), _longrope, "longrope"),
    "abf": MethodDef(N_("Base change (ABF)"), _abf, "abf"),
}
METHOD_TITLES = {name: method.title for name, method in METHODS.items()}


def method_setup(
    method: str,
    head_dim: int,
    base: float,
    train_length: int,
    target_length: int,
    *,
    abf_base: float = DEFAULT_ABF_BASE,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> MethodSetup:
    """The spec for ``method`` when a model trained at ``train_length`` runs at ``target_length``."""
    check_length("train_length", train_length)
    check_length("target_length", target_length)
    if method not in METHODS:
        raise ValueError(_("method must be one of {choices} (got {method!r}).").format(choices=', '.join(METHODS), method=method))
    params = MethodParams(head_dim, base, train_length, target_length, abf_base, beta_fast, beta_slow,
                          low_freq_factor, high_freq_factor)
    definition = METHODS[method]
    return MethodSetup(method, definition.title, definition.build(params), target_length)
