"""Plan a context extension: for a model and a target length L′, each method's parameters, the base
the length needs (Men et al. 2024), what each method leaves unseen, and a config block transformers loads.

The model's pretraining RoPE is plain RoPE with its base b, rotary dimensions d and training length
L (``original_max_position_embeddings`` for a scaled config, ``max_position_embeddings`` otherwise);
a model that already ships scaling (Llama 3.1, Qwen2.5 + YaRN) is planned from that pretraining
RoPE, and the new block replaces its rope_scaling. s = L′/L.

For every method the plan gives the ``RopeSpec`` our engine evaluates and the config keys to set
(``max_position_embeddings`` and ``rope_parameters`` for transformers ≥ 5, ``rope_theta`` and
``rope_scaling`` for older readers): ``apply_block(config, block)`` is the model's config with them,
and ``from_hf_config`` of it is the same spec (tests load it into transformers and compare θ).

"Unseen" compares with the angles pretraining produced: pair i saw the arc [0, L·θᵢ] (all of the
circle once L·θᵢ ≥ 2π, the YaRN paper's convention, §3.2). At L′ a position m is unseen for pair i
when m·θ′ᵢ mod 2π lies beyond that arc. The share of pairs counts pairs with any unseen position;
the share of angles counts (position, pair) angles over all L′ positions and all pairs, exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch

from i18n import N_, _
from pe_core.base_bound import base_lower_bound, first_negative_distance
from pe_core.config import from_hf_config
from pe_core.rope import RopeSpec, check_length, default_inv_freq, ntk_aware_base, rope_frequencies

PLAN_METHODS = ("direct", "pi", "ntk", "dynamic", "yarn", "llama3", "abf")
PLAN_TITLES = {
    "direct": N_("Direct extrapolation"), "pi": N_("Position Interpolation"), "ntk": N_("NTK-aware"),
    "dynamic": N_("Dynamic NTK"), "yarn": N_("YaRN"), "llama3": N_("Llama-3 scaling"), "abf": N_("Base change (ABF)"),
}
MAX_TARGET = 1 << 20
YARN_BETA_FAST, YARN_BETA_SLOW = 32.0, 1.0
LLAMA3_LOW, LLAMA3_HIGH = 1.0, 4.0
_ROPE_KEYS = ("rope_scaling", "rope_parameters", "rope_theta")


class MethodPlan(NamedTuple):
    method: str
    title: str  # N_()
    spec: RopeSpec  # what our engine evaluates
    seq_len: int  # the length it is evaluated at (dynamic NTK depends on it)
    inv_freq: torch.Tensor  # θ′ at L′
    attention_factor: float
    parameters: dict  # name -> value, for the table (numbers, or the bands as text)
    block: dict  # config keys for transformers ≥ 5: max_position_embeddings, rope_parameters
    legacy_block: dict  # the same for older readers: max_position_embeddings, rope_theta, rope_scaling
    unseen_pairs: float  # share of rotated pairs with angles pretraining never produced at L′
    unseen_angles: float  # share of (position, pair) angles at L′ that pretraining never produced
    first_negative: int | None  # first distance m < L′ where Σᵢ cos(m·θ′ᵢ) < 0 (Men et al.'s criterion), or None


class Plan(NamedTuple):
    config: dict
    spec: RopeSpec  # the model's own RoPE
    train_spec: RopeSpec  # its pretraining RoPE (plain, base b, length L)
    train_length: int  # L
    target: int  # L′
    base_bound: float | None  # b*(L′): None when any base works (half or more pairs unrotated)
    train_bound: float | None  # b*(L), for comparison with the model's own base
    methods: tuple[MethodPlan, ...]

    @property
    def scale(self) -> float:
        return self.target / self.train_length

    def method(self, name: str) -> MethodPlan:
        return next(m for m in self.methods if m.method == name)


def unrotated_pairs(spec: RopeSpec) -> int:
    return spec.head_dim // 2 - spec.num_pairs


def round_up(value: float, digits: int = 2) -> float:
    """``value`` rounded up to ``digits`` significant figures (an ABF base to write down)."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / scale - 1e-9) * scale


def abf_base(train_base: float, bound: float | None, target: int, rotary_dim: int, constant_pairs: int = 0) -> float:
    """The base to suggest for continued training at L′ (ABF): the model's own if it already satisfies Men et
    al.'s inequality at L′, else the first two-significant-figure base ≥ b*(L′) that does (the set of valid
    bases has gaps, so rounding b* up can land in one)."""
    from pe_core.base_bound import criterion_holds

    if bound is None or not math.isfinite(bound) or criterion_holds(train_base, target, rotary_dim, constant_pairs):
        return train_base
    candidate = round_up(bound)
    for _try in range(200):
        if criterion_holds(candidate, target, rotary_dim, constant_pairs):
            return candidate
        scale = 10 ** (math.floor(math.log10(candidate)) - 1)
        candidate = round_up(candidate + scale)
    return bound


def unseen_shares(train_inv_freq: torch.Tensor, train_length: int, inv_freq: torch.Tensor,
                  target: int) -> tuple[float, float, torch.Tensor]:
    """(share of pairs, share of (position, pair) angles, unseen positions per pair) at L′.

    Pair i saw the arc [0, L·θᵢ] in pretraining (the whole circle if L·θᵢ ≥ 2π); position m < L′ is
    unseen when m·θ′ᵢ mod 2π > L·θᵢ. Counted exactly turn by turn: in turn k the unseen positions are
    the integers m with 2πk + L·θᵢ < m·θ′ᵢ < 2π(k + 1).
    """
    check_length("train_length", train_length)
    check_length("target", target)
    seen_arc = train_length * train_inv_freq.to(torch.float64)
    theta = inv_freq.to(torch.float64)
    counts = torch.zeros_like(theta)
    partial = (seen_arc < 2 * math.pi) & (theta > 0)
    if bool(partial.any()):
        arc, step = seen_arc[partial], theta[partial]
        turns = int(math.ceil(float((target * step).max()) / (2 * math.pi))) + 1
        k = torch.arange(turns, dtype=torch.float64).unsqueeze(1)
        low = (2 * math.pi * k + arc) / step  # strictly above: positions m > low
        high = 2 * math.pi * (k + 1) / step  # strictly below: m < high
        first = torch.floor(low) + 1
        last = torch.minimum(torch.ceil(high) - 1, torch.tensor(float(target - 1), dtype=torch.float64))
        counts[partial] = (last - first + 1).clamp_min(0).sum(0)
    pairs = float((counts > 0).double().mean())
    angles = float(counts.sum() / (target * theta.numel()))
    return pairs, angles, counts


def apply_block(config: Mapping, block: Mapping) -> dict:
    """The model's config with a plan's block in place of its RoPE keys."""
    updated = {key: value for key, value in config.items() if key not in _ROPE_KEYS}
    if "original_max_position_embeddings" in updated:  # Phi-3 keeps it at the top level, where it wins
        scaling = block.get("rope_parameters") or block.get("rope_scaling") or {}
        if "original_max_position_embeddings" in scaling:
            updated["original_max_position_embeddings"] = scaling["original_max_position_embeddings"]
    updated.update(block)
    return updated


def _blocks(rope_type: str, base: float, max_positions: int, scaling: dict) -> tuple[dict, dict]:
    parameters = {"rope_type": rope_type, "rope_theta": base, **scaling}
    legacy = {"max_position_embeddings": max_positions, "rope_theta": base,
              "rope_scaling": {"rope_type": rope_type, **scaling} if rope_type != "default" else None}
    return {"max_position_embeddings": max_positions, "rope_parameters": parameters}, legacy


def dynamic_base(spec: RopeSpec, length: int) -> float:
    """The base transformers' dynamic NTK uses at a sequence of ``length``: b·(s·l/L − (s − 1))^(d/(d−2)), l ≥ L."""
    train = spec.original_max_position_embeddings
    current = max(length, train)
    dim = spec.rotary_dim
    return spec.base * ((spec.factor * current / train) - (spec.factor - 1)) ** (dim / (dim - 2))


def _method(name: str, train: RopeSpec, target: int, abf_base: float) -> tuple[RopeSpec, dict, tuple[dict, dict]]:
    """(spec, parameters for the table, (block, legacy block)) for one method."""
    L, s, b, d = train.original_max_position_embeddings, target / train.original_max_position_embeddings, \
        train.base, train.rotary_dim
    if name == "direct":
        return train, {"base": b}, _blocks("default", b, target, {})
    if name == "pi":
        return (train.replace(rope_type="linear", factor=s), {"factor": s},
                _blocks("linear", b, target, {"factor": s}))
    if name == "ntk":
        new_base = ntk_aware_base(b, s, d)
        return (train.replace(base=new_base), {"factor": s, "base": new_base},
                _blocks("default", new_base, target, {}))
    if name == "dynamic":
        # factor 1: at length l the base is b·(l/L)^(d/(d−2)), static NTK for s = l/L; max_position_embeddings
        # must stay L, which transformers' dynamic NTK reads as the pretraining length
        spec = train.replace(rope_type="dynamic", factor=1.0)
        return (spec, {"factor": 1.0, "base_at_target": dynamic_base(spec, target),
                       "base_at_target_factor_s": dynamic_base(train.replace(rope_type="dynamic", factor=s), target)},
                _blocks("dynamic", b, L, {"factor": 1.0}))
    if name == "yarn":
        spec = train.replace(rope_type="yarn", factor=s, beta_fast=YARN_BETA_FAST, beta_slow=YARN_BETA_SLOW)
        scaling = {"factor": s, "original_max_position_embeddings": L, "beta_fast": YARN_BETA_FAST,
                   "beta_slow": YARN_BETA_SLOW}
        return spec, {"factor": s, "beta_fast": YARN_BETA_FAST, "beta_slow": YARN_BETA_SLOW,
                      "attention_factor": rope_frequencies(spec).attention_factor}, _blocks("yarn", b, target, scaling)
    if name == "llama3":
        spec = train.replace(rope_type="llama3", factor=s, low_freq_factor=LLAMA3_LOW, high_freq_factor=LLAMA3_HIGH)
        wavelength = 2 * math.pi / default_inv_freq(b, d)
        kept = int((wavelength < L / LLAMA3_HIGH).sum())
        divided = int((wavelength > L / LLAMA3_LOW).sum())
        scaling = {"factor": s, "low_freq_factor": LLAMA3_LOW, "high_freq_factor": LLAMA3_HIGH,
                   "original_max_position_embeddings": L}
        return spec, {"factor": s, "low_freq_factor": LLAMA3_LOW, "high_freq_factor": LLAMA3_HIGH,
                      "kept_pairs": kept, "smoothed_pairs": train.num_pairs - kept - divided,
                      "divided_pairs": divided}, _blocks("llama3", b, target, scaling)
    if name == "abf":
        return (train.replace(base=abf_base), {"base": abf_base},
                _blocks("default", abf_base, target, {}))
    raise ValueError(f"method must be one of {', '.join(PLAN_METHODS)} (got {name!r}).")


def plan(config: Mapping, target: int, *, methods: Sequence[str] = PLAN_METHODS, with_bound: bool = True) -> Plan:
    """The plan for running ``config``'s model at ``target`` tokens."""
    check_length("target", target)
    spec = from_hf_config(config)
    L = spec.original_max_position_embeddings
    if target <= L:
        raise ValueError(_("The target length must exceed the training length L = {length:,} (got {target:,}).")
                         .format(length=L, target=target))
    if target > MAX_TARGET:
        raise ValueError(_("Plans go up to {cap:,} tokens (got {target:,}).").format(cap=MAX_TARGET, target=target))
    train = RopeSpec(head_dim=spec.head_dim, base=spec.base, original_max_position_embeddings=L,
                     partial_rotary_factor=spec.partial_rotary_factor)
    constant = unrotated_pairs(train)
    bound = base_lower_bound(target, train.rotary_dim, constant) if with_bound else None
    train_bound = base_lower_bound(L, train.rotary_dim, constant) if with_bound else None
    abf = abf_base(train.base, bound, target, train.rotary_dim, constant) if with_bound else train.base
    train_theta = default_inv_freq(train.base, train.rotary_dim)
    planned = []
    for name in methods:
        method_spec, parameters, (block, legacy) = _method(name, train, target, abf)
        frequencies = rope_frequencies(method_spec, target)
        pairs, angles, _counts = unseen_shares(train_theta, L, frequencies.inv_freq, target)
        negative = first_negative_distance(frequencies.inv_freq, target, float(constant)) if with_bound else None
        planned.append(MethodPlan(name, PLAN_TITLES[name], method_spec, target, frequencies.inv_freq,
                                  frequencies.attention_factor, parameters, block, legacy, pairs, angles, negative))
    return Plan(dict(config), spec, train, L, target, bound, train_bound, tuple(planned))


# ---- output ---------------------------------------------------------------------------------------


def _value_text(value) -> str:
    if isinstance(value, float):
        return f"{value:,.6g}" if value < 1e6 else f"{value:.4g}"
    return str(value)


def plan_text(result: Plan) -> str:
    spec = result.train_spec
    lines = [f"Model RoPE: {result.spec.rope_type}, base {spec.base:,.6g}, {spec.rotary_dim} of {spec.head_dim} "
             f"dimensions rotated, trained at L = {result.train_length:,}; target L′ = {result.target:,} "
             f"(s = {result.scale:g})."]
    if result.base_bound is None:
        lines.append("Base lower bound (Men et al. 2024): none needed; half or more of the pairs are not rotated.")
    else:
        lines.append(f"Base lower bound (Men et al. 2024) for L′: b* ≈ {result.base_bound:.3g} "
                     f"(for L: {result.train_bound:.3g}; the model's base is {spec.base:.3g}).")
    lines.append(f"{'method':<24} {'unseen pairs':>12} {'unseen angles':>14} {'Σcos<0 first at':>16}  parameters")
    for m in result.methods:
        negative = f"{m.first_negative:,}" if m.first_negative is not None else "never"
        parameters = ", ".join(f"{k}={_value_text(v)}" for k, v in m.parameters.items())
        lines.append(f"{m.title:<24} {m.unseen_pairs:>12.1%} {m.unseen_angles:>14.2%} {negative:>16}  {parameters}")
    lines.append("")
    for m in result.methods:
        lines.append(f"# {m.title}: config.json keys (transformers ≥ 5)")
        lines.append(json.dumps(m.block, indent=1))
    return "\n".join(lines)


def plan_json(result: Plan) -> dict:
    def clean(value):
        return None if isinstance(value, float) and not math.isfinite(value) else value

    return {
        "model": {"rope_type": result.spec.rope_type, "base": result.train_spec.base,
                  "rotary_dim": result.train_spec.rotary_dim, "head_dim": result.train_spec.head_dim,
                  "train_length": result.train_length},
        "target": result.target, "scale": result.scale,
        "base_lower_bound": clean(result.base_bound), "base_lower_bound_at_train_length": clean(result.train_bound),
        "methods": {m.method: {"parameters": {k: clean(v) for k, v in m.parameters.items()},
                               "attention_factor": m.attention_factor, "unseen_pairs": m.unseen_pairs,
                               "unseen_angles": m.unseen_angles, "similarity_sum_negative_at": m.first_negative,
                               "config": m.block, "config_legacy": m.legacy_block}
                    for m in result.methods},
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.plan CONFIG --target N``: the plan as text (or --json); exit 2 on bad input."""
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config

    parser = argparse.ArgumentParser(prog="python -m pe_core.plan",
                                     description="Plan a RoPE context extension for a model and a target length.")
    parser.add_argument("config", help="a preset name (e.g. 'Llama-3-8B'), a path to config.json, or its JSON text")
    parser.add_argument("--target", type=int, required=True, metavar="N", help="the context length to reach")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--out", metavar="FILE", help="also write the JSON plan (with every config block) here")
    args = parser.parse_args(argv)
    use_server_threads()  # small tensors: one thread is fastest on a small machine
    try:
        result = plan(read_config(args.config), args.target)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    data = plan_json(result)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
    print(json.dumps(data, indent=1, ensure_ascii=False) if args.json else plan_text(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
