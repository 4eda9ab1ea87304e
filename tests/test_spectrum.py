"""The toy's spectrum against real models', and YaRN's ramp matched to it (``pe_core.train.spectrum``)."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.rope import RopeSpec, rope_frequencies
from pe_core.train.spectrum import PAPER_RAMP, matched_ramp, ramp_zones, share_at_turns, turns_at_share


def turns(head_dim: int, base: float, length: int) -> torch.Tensor:
    """r_i = L / (2π·b^(2i/d)), written out."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    return length / (2 * math.pi * base ** (2 * i / head_dim))


def test_turns_at_a_share_of_the_spectrum_are_the_pairs_turns_and_invert():
    head_dim, base, length = 64, 50.0, 64
    shares = torch.arange(head_dim // 2, dtype=torch.float64) * 2 / head_dim
    assert [turns_at_share(float(x), base, length) for x in shares] == pytest.approx(turns(head_dim, base, length).tolist())
    for r in (0.3, 1.0, 2.83, 32.0):
        assert turns_at_share(share_at_turns(r, base, length), base, length) == pytest.approx(r)


def test_the_paper_ramp_mapped_onto_llama_2_is_itself():
    assert matched_ramp(10_000.0, 4096) == pytest.approx(PAPER_RAMP)


def test_the_matched_ramp_is_the_closed_form():
    # Llama 2 turns β times at x = ln(4096/(2πβ))/ln 10⁴; the toy turns (64/2π)·50^(−x) times there
    for beta in PAPER_RAMP:
        x = math.log(4096 / (2 * math.pi * beta)) / math.log(10_000)
        expected = 64 / (2 * math.pi) * 50 ** -x
        assert matched_ramp(50.0, 64)[PAPER_RAMP.index(beta)] == pytest.approx(expected, rel=1e-12)
    beta, alpha = matched_ramp(50.0, 64)
    assert round(beta, 2) == 2.83 and round(alpha, 2) == 0.65


def test_zones_are_counted_as_the_yarn_spec_scales_each_pair():
    # kept: θ unchanged; interpolated: θ/s; counted from the frequencies YaRN actually uses
    for head_dim, base, length, ramp in ((128, 10_000.0, 4096, PAPER_RAMP), (64, 50.0, 64, PAPER_RAMP),
                                         (64, 50.0, 64, matched_ramp(50.0, 64))):
        scale = 8.0
        spec = RopeSpec(head_dim=head_dim, base=base, original_max_position_embeddings=length, rope_type="yarn",
                        factor=scale, beta_fast=ramp[0], beta_slow=ramp[1])
        plain = rope_frequencies(RopeSpec(head_dim=head_dim, base=base), seq_len=length).inv_freq
        ratio = rope_frequencies(spec, seq_len=length * 8).inv_freq / plain
        kept = int(torch.isclose(ratio, torch.ones_like(ratio), rtol=1e-9).sum())
        interpolated = int(torch.isclose(ratio, torch.full_like(ratio, 1 / scale), rtol=1e-9).sum())
        zones = ramp_zones(head_dim, base, length, ramp)
        assert (zones.kept, zones.interpolated) == (kept, interpolated)
        assert zones.kept + zones.ramped + zones.interpolated == head_dim // 2


def test_matched_zones_hold_llama_2s_shares_of_pairs():
    llama = ramp_zones(128, 10_000.0, 4096, PAPER_RAMP)
    assert (llama.kept, llama.ramped, llama.interpolated) == (21, 25, 18)
    toy = ramp_zones(64, 50.0, 64, matched_ramp(50.0, 64))
    assert (toy.kept, toy.interpolated) == (11, 9)
    # as close to Llama 2's shares as 32 pairs allow (the ramp's ends are rounded to whole pairs)
    assert abs(toy.kept / 32 - llama.kept / 64) <= 1 / 32 and abs(toy.interpolated / 32 - llama.interpolated / 64) <= 1 / 32
    # the paper's values on the toy: its fastest pair turns ~10 times, so only the pair the ramp starts at is kept
    paper = ramp_zones(64, 50.0, 64, PAPER_RAMP)
    assert float(turns(64, 50.0, 64).max()) < PAPER_RAMP[0] and paper.kept == 1
