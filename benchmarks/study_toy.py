"""The faithful-toy study: which small config tells the published extrapolation story, over seeds?

    python -m benchmarks.study_toy                                  # the default config, seeds 0-5
    python -m benchmarks.study_toy --set d_model=64 n_head=1 --seeds 0 1 2
    python -m benchmarks.study_toy --store /tmp/study.sqlite3       # keep runs (reruns are lookups)

Trains RoPE, ALiBi, Transformer-XL and DeBERTa at each seed (one run at a time, each on up to two cores),
prints accuracy at L and at the longest length for every method, and checks the story the
lesson tells against Su Jianlin's table (train 512, test 4,096 = 8×: direct 49.41 → 23.16 %,
PI 13.54 %, NTK-aware 39.27 %):

- NTK-aware at least 8 points above direct extrapolation at 8×;
- direct extrapolation at least 5 points above Position Interpolation at 8×;
- YaRN at least NTK-aware at 8×;
- ALiBi within 3 points of its own accuracy at L;
- after the default fine-tune, PI and YaRN within 5 points of the model's accuracy at L ("recover").

How the default was found (probes of one seed, 1 thread, on the shared 2-core machine; each
line: head size d, base b, L, width, steps → accuracy at 1× and direct / PI / NTK / YaRN at 8×):

- d 32, b 10⁴, L 64, width 128, 300 steps (the old toy, 31 % of pairs turning): 46.0 → 35.9 / 19.4 / 36.4 / 39.3
- spectrum matched to Llama 2 alone changed little (d 32, b 50: 45.6 → 38.6 / 18.9 / 36.0 / 40.8; d 64, b 50:
  45.2 → 39.2 / 19.6 / 40.0 / 39.7; d 128, b 27: 44.1 → 38.2 / 18.7 / 40.2 / 43.5): at 300 steps the loss
  past L grows alike for every method (more keys to attend to), not through unseen angles;
- training longer is what makes direct extrapolation fail through unseen angles: d 64, b 50, width 128,
  1,200 steps: 53.7 → 36.9 / 16.6 / 45.0 / 44.0 (107 s);
- a narrower model trained longer for the same time: d 64, b 50, width 64, 1 head, 1,000 steps:
  49.5 → 33.4 / 17.7 / 41.8 / 43.9 on one draw, but a second draw of the same config (one more vocabulary row
  moves the initial weights) gave +2.9 instead of +8.4 for NTK − direct: the seed noise is ±3 points;
- one head gives ALiBi a single slope (1/256): 29.7 % at L, against 48 % for RoPE; two heads fix that;
- no other lever found widened NTK − direct within the time: base 100 or 200 (+3.6, +6.4), 3 layers (+1.3),
  L = 32 or 128 with matched bases (−0.2, +6.4), head size 128 (+6.4, 74 s), 1,024 characters a step
  (+3.0), learning rate 6e-3 at 800 steps (+5.2), a start-of-text token at the head of every window (+6.0).
Other task variants tried and dropped: text repeated at a fixed or random distance (copying makes every
frequency change fatal: NTK-aware fell below direct).

What finally widened NTK − direct: no weight decay and more steps (each line: NTK − direct at 8× per seed,
one run at a time on each of the 2 cores):

- no weight decay, 700 steps: +5.8, +8.1, +5.9 (seeds 0-2; with decay 0.1: +5.0, +9.3, +4.2);
- no weight decay, 1,000 steps: +8.1, +10.7, +9.4, +2.9, +9.0, +7.6 (seeds 0-5): the default since;
- the same 1,000 steps at 1,536 characters a step (three quarters of the time): +5.0, +6.5 (seeds 0, 3);
- 1,024 characters a step for 1,400 steps, with decay: +6.4, +4.6, +7.4; a start-of-text token at 700 or
  1,000 steps: +3.2 / +6.3 (seed 0); four heads: −1.4, +4.2; one layer for 1,300 steps: +1.9, −1.7, +4.4;
  learning rate 1e-2 without decay: unstable (41-44 % at L).
Better-trained models use their slow pairs more, so unseen angles cost direct extrapolation more: NTK-aware
gains a point or two, direct extrapolation loses one or two. The price is time: 1,000 steps take about 43 s
on one core (700 took 30 s). PI's fine-tune was still climbing at 100 steps (seed 0: 44 %, 8 points short of L);
200 steps bring it within 2 points (within 3 for every seed), so the default fine-tune is 200 steps.

The default (width 64, two heads of size 64, b 50, L 64, 1,000 steps at 6e-3 without weight decay,
fine-tunes of 200 steps at 3e-3), seeds 0-5, from ``python -m benchmarks.study_toy --store runs/runs.sqlite3``
(accuracy at 1×, then direct / PI / NTK / dynamic / YaRN at 8×, then PI, NTK and YaRN after fine-tuning):

- seed 0: 52.1 → 36.3 / 17.3 / 44.4 / 47.5 / 45.2; 50.4, 53.0, 53.0
- seed 1: 50.4 → 32.1 / 16.8 / 42.8 / 45.3 / 42.3; 48.8, 52.2, 52.1
- seed 2: 51.0 → 34.0 / 16.7 / 43.4 / 45.1 / 44.9; 48.4, 52.0, 52.0
- seed 3: 51.3 → 39.9 / 16.8 / 42.8 / 45.5 / 43.2; 48.7, 52.8, 52.7
- seed 4: 50.8 → 34.0 / 16.8 / 43.0 / 45.1 / 43.7; 49.2, 52.2, 52.1
- seed 5: 50.8 → 35.6 / 18.5 / 43.2 / 45.1 / 43.6; 49.1, 52.2, 52.3
- ALiBi, seeds 0-5: 39.0 → 36.5, 38.1 → 36.5, 39.5 → 37.0, 39.0 → 37.2, 39.3 → 37.3, 38.8 → 36.6

So NTK − direct ≥ 8 holds for the default seed and seeds 1, 2 and 4 (8.0 on average), YaRN ≥ NTK-aware for
every seed but 1, direct − PI ≥ 5 and ALiBi within 3 points for every seed, and after fine-tuning YaRN and
NTK-aware are back at their accuracy at L and PI within 3 points of it (2 on average).

The inference-time tricks and the two relative encodings, seeds 0-5 of the default (accuracy at 8×:
direct + log n / PI + log n / NTK + log n / ReRoPE / ReRoPE + log n / Leaky ReRoPE, then Transformer-XL and
DeBERTa at 1× → 8×):

- seed 0: 37.7 / 16.6 / 45.9 / 50.9 / 52.3 / 51.8; XL 52.6 → 53.5, DeBERTa 51.8 → 52.4
- seed 1: 32.3 / 16.3 / 44.3 / 51.1 / 51.8 / 51.5; XL 52.5 → 53.0, DeBERTa 51.5 → 52.5
- seed 2: 35.5 / 16.7 / 46.0 / 50.6 / 51.5 / 50.8; XL 52.2 → 53.2, DeBERTa 49.8 → 48.8
- seed 3: 42.5 / 16.6 / 44.8 / 51.1 / 51.9 / 50.9; XL 52.6 → 53.7, DeBERTa 52.5 → 50.6
- seed 4: 34.4 / 15.9 / 44.6 / 50.7 / 51.4 / 51.0; XL 52.7 → 53.3, DeBERTa 52.9 → 52.4
- seed 5: 36.8 / 18.5 / 44.6 / 50.7 / 51.7 / 51.0; XL 52.6 → 53.3, DeBERTa 52.2 → 52.3

For every seed log n (at inference only) adds to direct extrapolation and to NTK-aware but not to PI
(in Su's table it helped PI too, but there it was part of pre-training); ReRoPE beats every scaling
method, and with log n reaches the accuracy at L; Transformer-XL keeps its accuracy at 8× (it gains a
point), DeBERTa keeps it within 1.5 points for five of six seeds (seed 3: 1.9).

Results version 2: every step's batch computed as two halves side by side (``pe_core.device.SHARDS``), the
same numbers on one core or two, 25 s of training on the 2-core machine instead of 44 s. The halves round
differently from the whole batch, so every seed is a new draw of the same experiment (the seeds' spread above
is the scale of the change). The same default, seeds 0-5 (as above):

- seed 0: 52.0 → 35.7 / 17.4 / 44.0 / 47.2 / 43.9; 50.3, 52.5, 52.5
- seed 1: 49.6 → 31.6 / 16.5 / 42.6 / 44.7 / 43.0; 48.6, 52.4, 52.3
- seed 2: 51.0 → 34.2 / 16.7 / 43.2 / 45.1 / 45.0; 48.2, 52.1, 52.2
- seed 3: 51.1 → 37.6 / 16.1 / 44.5 / 46.4 / 46.3; 49.5, 52.2, 52.2
- seed 4: 51.2 → 34.3 / 16.1 / 42.2 / 45.0 / 43.7; 48.6, 52.4, 52.3
- seed 5: 51.6 → 34.5 / 18.0 / 43.7 / 45.4 / 44.8; 48.8, 52.9, 52.9
- ALiBi, seeds 0-5: 39.1 → 36.7, 38.2 → 36.5, 39.6 → 37.0, 39.2 → 37.1, 39.2 → 37.2, 38.8 → 36.6

NTK − direct ≥ 8 holds for the default seed and seeds 1, 2 and 5 (8.7 on average over the six), direct − PI ≥ 5
and ALiBi within 3 points for every seed, YaRN ≥ NTK-aware for every seed but the default one (43.9 against
44.0; 1.1 points more on average), and the fine-tunes recover for every seed. Of the other checks, log n does
not help PI for four of six seeds (seeds 2 and 3: +0.1), and DeBERTa keeps its 1× accuracy within 1.5 points for
five (seed 3: 2.9). With 1,100 steps (29 s) the same six seeds gave NTK − direct +7.5 at the default seed and ≥ 8
for the other five, and YaRN ≥ NTK-aware for all six: one more draw, not a better recipe, so 1,000 stayed.

YaRN's α and β matched to the toy (``yarn_ramp="matched"``, the default since). The paper's α = 1, β = 32 were
found for Llama (its §3.2 asks to tune them per model); the toy's fastest pair turns only 10.2 times within L,
so β = 32 interpolates every pair but the one the ramp starts at. Matched: β = 2.83, α = 0.65, the turns at the
shares of the spectrum where Llama 2 turns 32 and 1 times (11 of 32 pairs kept and 9 interpolated, against 21
and 18 of Llama 2's 64). The probe that chose it (seeds 0-5, evaluation at 8× only, the same models) also
tried keeping α = 1 with β = 2.83 or 4 (0.4-2 points less than matching both) or β = 8 (1.8-5.5 less);
every variant but β = 8 beat the paper's values at every seed. Only YaRN's rows change (YaRN at 8×, then after fine-tuning; YaRN − NTK-aware in brackets):

- seed 0: 47.7, 52.5 (+3.7); seed 1: 47.4, 52.2 (+4.8); seed 2: 48.3, 52.4 (+5.1)
- seed 3: 48.6, 52.4 (+4.1); seed 4: 48.3, 52.5 (+6.1); seed 5: 48.0, 52.8 (+4.3)

So YaRN ≥ NTK-aware now holds for every seed, the default one included, with every other margin as above.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from pe_core.train import ExperimentConfig, open_store, run_experiment

CHECKS = (
    ("NTK-aware ≥ direct + 8 points", lambda a: a["ntk"] - a["direct"] >= 0.08),
    ("direct ≥ PI + 5 points", lambda a: a["direct"] - a["pi"] >= 0.05),
    ("YaRN ≥ NTK-aware", lambda a: a["yarn"] >= a["ntk"]),
    ("ALiBi within 3 points of its 1×", lambda a: abs(a["alibi"] - a["alibi@1"]) <= 0.03),
    ("PI recovers after fine-tuning", lambda a: a.get("ft:pi", 0) >= a["rope@1"] - 0.05),
    ("YaRN recovers after fine-tuning", lambda a: a.get("ft:yarn", 0) >= a["rope@1"] - 0.05),
    ("NTK-aware recovers after fine-tuning", lambda a: a.get("ft:ntk", 0) >= a["rope@1"] - 0.05),
    ("log n: direct at least as good", lambda a: a["direct_logn"] >= a["direct"]),
    ("log n helps NTK-aware", lambda a: a["ntk_logn"] > a["ntk"]),
    ("log n does not help PI", lambda a: a["pi_logn"] <= a["pi"]),
    ("ReRoPE ≥ every scaling method", lambda a: a["rerope"] >= max(a["ntk"], a["dynamic"], a["yarn"])),
    ("ReRoPE + log n at its 1×", lambda a: a["rerope_logn"] >= a["rope@1"]),
    ("Transformer-XL within 1.5 points of its 1×", lambda a: abs(a["xl"] - a["xl@1"]) <= 0.015),
    ("DeBERTa within 1.5 points of its 1×", lambda a: abs(a["deberta"] - a["deberta@1"]) <= 0.015),
)


def accuracies(config: ExperimentConfig, store, encodings=("rope", "alibi", "xl", "deberta")) -> dict[str, float]:
    """Accuracy at the longest length per method (and at L), for each encoding at this seed."""
    found: dict[str, float] = {}
    for encoding in encodings:
        run = config.replace(encoding=encoding)
        record = store.get(run.hash) if store is not None else None
        if record is None:
            started = time.perf_counter()
            record = run_experiment(run)
            if store is not None:
                store.put(record)
            found[f"{encoding}_seconds"] = time.perf_counter() - started
        longest, first = max(record.lengths), min(record.lengths)
        found[f"{encoding}@1"] = record.result(record.methods[0], first).mean_accuracy
        for method in record.methods:
            found[method if record.config.scalable else encoding] = record.result(method, longest).mean_accuracy
        for tune in record.fine_tunes:
            found[f"ft:{tune.method}"] = tune.after.mean_accuracy
    return found


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.study_toy", description=__doc__.split("\n")[0])
    parser.add_argument("--set", nargs="*", default=[], help="ExperimentConfig fields, e.g. d_model=64 n_head=1")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--store", default=None, help="keep the runs in this store (default: none)")
    parser.add_argument("--encodings", nargs="+", default=["rope", "alibi", "xl", "deberta"],
                        help="encodings to train (a quick probe: rope)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    changes = {}
    for item in args.set:
        name, _, value = item.partition("=")
        changes[name] = json.loads(value) if value[:1] in "[0123456789-.tf" else value
    config = ExperimentConfig(**changes)
    store = open_store(args.store) if args.store else None
    report = {"config": config.to_json(), "seeds": {}}
    for seed in args.seeds:
        found = accuracies(config.replace(seed=seed), store, args.encodings)
        passed = {}
        for name, check in CHECKS:
            try:
                passed[name] = bool(check(found))
            except KeyError:  # an encoding this probe did not train
                continue
        report["seeds"][seed] = {"accuracy": found, "checks": passed}
        shown = " ".join(f"{k}={v:.3f}" if "seconds" not in k else f"{k}={v:.0f}s" for k, v in found.items())
        print(f"seed {seed}: {shown}", flush=True)
        print("   " + "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in passed.items()), flush=True)
    for name, _check in CHECKS:
        held = [s for s, r in report["seeds"].items() if r["checks"].get(name)]
        print(f"{name}: holds for seeds {held}")
    return report


if __name__ == "__main__":
    main()
