"""``python -m pe_core.engines CONFIG``: the engines side by side as text or JSON, and with --target the recipes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pe_core.engines.common import REFERENCE, EngineResult
from pe_core.engines.recipe import recipes
from pe_core.engines.registry import ENGINE_NAMES, ENGINES, engine_results


def result_json(result: EngineResult) -> dict:
    return {
        "engine": result.engine, "versions": result.versions, "layer_type": result.layer_type,
        "seq_len": result.seq_len, "supported": result.supported,
        "inv_freq": None if result.inv_freq is None else [float(v) for v in result.inv_freq],
        "attention_factor": result.attention_factor, "softmax_scale": result.softmax_scale,
        "pairing": result.pairing, "context_limit": result.context_limit, "context_rule": result.context_rule,
        "factor_choice": result.factor_choice, "choice_rule": result.choice_rule, "note": result.note,
        "divergences": [{"number": n, "key": d.key, "text": d.text, "source": d.source}
                        for n, d in enumerate(result.divergences, 1)],
    }


def results_text(results: Sequence[EngineResult]) -> str:
    lines = []
    for result in results:
        title = ENGINES[result.engine].title
        head = f"{title} {result.versions} · {result.layer_type} · {result.seq_len:,} tokens"
        if not result.supported:
            lines.append(f"{head}: {result.note}")
            continue
        theta = result.inv_freq
        lines.append(f"{head}: θ₀ = {float(theta[0]):.6g}, θ_last = {float(theta[-1]):.6g}, "
                     f"cos/sin × {result.attention_factor:.5f}, softmax × {result.softmax_scale:.5f}, "
                     f"{result.pairing}, limit {result.context_limit if result.context_limit else '-'} "
                     f"({result.context_rule})")
        if result.factor_choice:
            lines.append(f"    LongRoPE: {result.factor_choice} ({result.choice_rule})")
        for number, divergence in enumerate(result.divergences, 1):
            lines.append(f"    {number}. {divergence.text} [{divergence.source}]")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.engines CONFIG``: each engine's θᵢ, factors and divergences; --target: the recipes."""
    from pe_core.cli_args import engines_parser
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config

    args = engines_parser().parse_args(argv)
    use_server_threads()
    try:
        from pe_core.config import layer_map

        config = read_config(args.config)
        model = layer_map(config)
        engines = ENGINE_NAMES if args.engine is None else (REFERENCE, args.engine) if args.engine != REFERENCE \
            else (REFERENCE,)
        results = engine_results(config, args.seq_len, engines, args.layer_type, args.context, model=model)
        cooked = recipes(config, args.target, model=model) if args.target is not None else []
    except ValueError as err:
        from pe_core.check import cli_error

        return cli_error(err, args.json)
    if args.json:
        print(json.dumps({"results": [result_json(r) for r in results],
                          "recipes": [{"engine": r.engine, "lines": list(r.lines), "block": r.block,
                                       "context": r.context} for r in cooked]}, indent=1, ensure_ascii=False))
        return 0
    print(results_text(results))
    for recipe in cooked:
        print(f"{ENGINES[recipe.engine].title}: " + " ".join(recipe.lines))
    return 0
