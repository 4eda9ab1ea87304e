"""Practitioner core timings against naive versions (the lessons and pages are timed by bench_lessons / bench_pages)."""

from __future__ import annotations

import torch

from benchmarks import Case
from pe_core import default_inv_freq, preset_by_name
from pe_core.base_bound import first_negative_distance
from pe_core.check import BUG_CLASSES, check

GROUP = "core: practitioner"
_THETA = default_inv_freq(1e7, 128)  # passes Men et al.'s inequality to 131,072: every distance is summed
_LENGTH = 131_072


def _sums_blocked():
    return first_negative_distance(_THETA, _LENGTH)


def _sums_direct():
    """Σᵢ cos(m·θᵢ) for every m as one outer product of cosines, chunked to bound memory."""
    for start in range(0, _LENGTH, 16_384):
        m = torch.arange(start, min(_LENGTH, start + 16_384), dtype=torch.float64)
        sums = torch.cos(torch.outer(m, _THETA)).sum(1)
        if bool((sums < -1e-9).any()):
            return start + int(torch.nonzero(sums < -1e-9)[0])
    return None


_SPEC = preset_by_name("Qwen2.5-7B-Instruct (+YaRN x4)").spec
_BUGGY = BUG_CLASSES["wrong_default_base"].perturb(_SPEC, None)


CASES = [
    Case(GROUP, "Σ cos(m·θᵢ) at every m < 131,072, d = 128: blocked products vs cosines", _sums_blocked,
         _sums_direct),
    Case(GROUP, "check + diagnosis of a wrong base on Qwen2.5 + YaRN (every bug class tried)",
         lambda: check(_SPEC, _BUGGY[0], _BUGGY[1])),
]
