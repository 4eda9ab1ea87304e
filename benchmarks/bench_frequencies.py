"""θ-heatmap page timings: its core computation, its figures, and a warm page rerun."""

from __future__ import annotations

import functools

import figures.frequencies as ff
from benchmarks import Case
from pe_core import METHODS, rope_frequencies
from pe_core.angles import frequency_profile, heatmap_panels, method_angles, ramp_comparison, sampled_positions

GROUP = "page: frequencies"
HEAVIEST = {"head_dim": 256, "train_length": 131_072, "scale": 8.0, "second_scale": 2.0, "methods": METHODS,
            "view": "mod"}  # 18 panels of 128 pairs, L' = 2^20 positions


def _setups(head_dim=128, train_length=4096, scale=4.0, methods=ff.DEFAULTS["methods"], second_scale=None):
    target = min(int(train_length * scale), 1 << 20)
    setups = ff.build_setups(head_dim, 10_000.0, train_length, target, methods, 500_000.0)
    return setups, setups + ff.second_row_setups(setups, 10_000.0, train_length, second_scale, 1 << 20)


def _compute(head_dim=128, train_length=4096, scale=4.0, methods=ff.DEFAULTS["methods"], second_scale=None):
    """What the page computes (and caches): heatmap panels, per-pair profile, paper-vs-code ramp."""
    setups, shown = _setups(head_dim, train_length, scale, methods, second_scale)
    panels = heatmap_panels(shown, base=10_000.0, train_length=train_length, positions_shown=None, view="mod",
                            rows=ff.heatmap_rows(len(shown), setups[0].spec.num_pairs), length_so_far=True)
    ramp_spec = ff.yarn_spec_for(setups, head_dim, 10_000.0, train_length, setups[0].seq_len)
    return panels, frequency_profile(setups, base=10_000.0), ramp_comparison(ramp_spec)


@functools.lru_cache(maxsize=1)
def _computed_defaults():
    return _compute()


def _figures_from_computed():
    panels, profile, ramp = _computed_defaults()
    return (
        ff.angle_heatmaps(panels, view="mod", train_length=4096),
        ff.unseen_angles_figure(profile, train_length=4096, target_length=16384),
        ff.wavelength_figure(profile, ff.DEFAULTS["methods"], train_length=4096, target_length=16384),
        ff.ratio_figure(profile, ff.DEFAULTS["methods"], scale=4.0),
        ff.ramp_figure(ramp, beta_fast=32.0, beta_slow=1.0, truncate=True),
    )


def _dynamic_rows():
    setups, _ = _setups(head_dim=256, train_length=131_072, scale=8.0, methods=("dynamic",))
    return method_angles(setups[0], sampled_positions(1 << 20, 300), length_so_far=True)


def _dynamic_rows_loop():
    """One rope_frequencies call per row and Python loops over pairs, as a first attempt would do."""
    setups, _ = _setups(head_dim=256, train_length=131_072, scale=8.0, methods=("dynamic",))
    spec = setups[0].spec
    rows = []
    for m in sampled_positions(1 << 20, 300).tolist():
        theta = rope_frequencies(spec, m + 1).inv_freq.tolist()
        rows.append([m * t for t in theta])
    return rows


@functools.lru_cache(maxsize=1)
def _warm_page():
    from tests.conftest import run_page

    return run_page("pages/frequencies.py")


def _page_rerun():
    at = _warm_page()
    at.run()
    assert not at.exception


CASES = [
    Case(GROUP, "compute: panels + profile + ramp, defaults", _compute, repeats=10),
    Case(GROUP, "compute: heaviest (d=256, L'=2^20, 9 methods × 2 scales)",
         functools.partial(_compute, head_dim=256, train_length=131_072, scale=8.0, methods=METHODS,
                           second_scale=2.0)),
    Case(GROUP, "figures only: all 5 at defaults (computed values)", _figures_from_computed, repeats=10),
    Case(GROUP, "compute + figures: export_figures() defaults", ff.export_figures, repeats=5),
    Case(GROUP, "compute + figures: export_figures() heaviest", functools.partial(ff.export_figures, **HEAVIEST),
         repeats=3),
    Case(GROUP, "dynamic NTK rows as generated: d=256, 300 of 2^20", _dynamic_rows, _dynamic_rows_loop, repeats=10),
    Case(GROUP, "page rerun (AppTest, warm caches, defaults)", _page_rerun, repeats=5),
]
