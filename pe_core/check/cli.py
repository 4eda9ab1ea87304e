"""``python -m pe_core.check``: exit 0 on a match, 1 on a mismatch, 2 on bad input."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from i18n import _
from pe_core.check.report import check_layers, report_json, report_text

# ---- the command line ----------------------------------------------------------------------------


def cli_error(err: Exception, as_json: bool) -> int:
    """A CLI's bad input: a sentence on stderr, or with --json an error object on stdout; exit 2."""
    if as_json:
        print(json.dumps({"error": str(err)}, ensure_ascii=False))
    else:
        print(f"error: {err}", file=sys.stderr)
    return 2


def refuse_if_strict(model, strict: bool) -> list[str]:
    """The reading's notes; under --strict, a reading with anything to note beyond who read it is refused."""
    from pe_core.config import reading_notes, strict_problems

    problems = strict_problems(model)
    if strict and problems:
        raise ValueError(_("--strict: {problems}").format(problems=" ".join(problems)))
    return reading_notes(model)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pe_core.check CONFIG --inv-freq FILE``: exit 0 on a match, 1 on a mismatch, 2 on bad input."""
    from pe_core.cli_args import check_parser
    from pe_core.config import layer_map
    from pe_core.device import use_server_threads
    from pe_core.inputs import read_config
    from pe_core.layers import layer_type_title

    parser = check_parser()
    args = parser.parse_args(argv)
    use_server_threads()  # small tensors: one thread is fastest on a small machine
    try:
        from pathlib import Path

        from pe_core.config import read_as

        model = layer_map(read_as(read_config(args.config), args.read_as))
        notes = refuse_if_strict(model, args.strict)
        kind = model.kind(args.layer_type)
        if kind.spec is None:
            raise ValueError(_("The {layer_type!r} layers of this model apply no position encoding (NoPE): there "
                               "are no θᵢ to check.").format(layer_type=kind.layer_type))
        if args.probe is not None or args.rotated is not None:
            from pe_core.probe_files import probe_main

            return probe_main(args, kind)
        if args.inv_freq is None:
            raise ValueError("give --inv-freq FILE (your θᵢ), --probe DIR (write the rotation probe) or --rotated FILE.")
        path = Path(args.inv_freq)
        if not path.is_file():
            raise ValueError(f"{args.inv_freq}: no such file.")
        data = path.read_bytes()
        if args.seq_len is not None and args.seq_len < 0:
            raise ValueError(f"--seq-len must be 0 or more (got {args.seq_len}).")
        checked, skipped = _kinds_to_check(model, kind, args.layer_type is not None, data, path.name)
        results = [(each, key, check_layers(model, each, numbers, args.attention_factor, args.seq_len,
                                            args.layout or each.layout, args.form))
                   for each, numbers, key in checked]
    except ValueError as err:
        return cli_error(err, args.json)
    kind, key, report = results[0]
    if args.json:
        print(json.dumps({**report_json(report), "layer_type": kind.layer_type, "layers": list(kind.layers),
                          "inv_freq_key": key, "reading": notes,
                          "kinds": [{"layer_type": each.layer_type, "layers": list(each.layers), "inv_freq_key": key_,
                                     "verdict": found.verdict, "diagnosis": [d.name for d in found.diagnosis]}
                                    for each, key_, found in results],
                          "skipped": [{"layer_type": each.layer_type, "why": why} for each, why in skipped]},
                         indent=1, ensure_ascii=False))
    else:
        for note in notes:
            print(note)
        for each, key_, found in results:
            if len(model.kinds) > 1:
                print(_("Layers checked: {title} ({count} of {total}; --layer-type {layer_type})").format(
                    title=layer_type_title(each.layer_type), count=len(each.layers), total=model.num_layers,
                    layer_type=each.layer_type))
            if key_ is not None:
                print(_("θᵢ read from {key}").format(key=key_))
            print(report_text(found))
        for each, why in skipped:
            print(_("Not checked: {title} layers ({why})").format(title=layer_type_title(each.layer_type), why=why))
    return 0 if all(found.verdict == "match" for _each, _key, found in results) else 1


def _kinds_to_check(model, kind, asked: bool, data: bytes, name: str):
    """([(kind, numbers, key)], [(kind, why not)]): the asked kind alone; otherwise every rotary kind the file
    holds its own θᵢ for (a state dict with a buffer per layer type), else the default kind, the others said."""
    from pe_core.inputs import read_inv_freq
    from pe_core.layers import layer_type_title

    rotary = model.rotary_kinds
    if asked or len(rotary) == 1:
        numbers, key = read_inv_freq(data, name, kind.layer_type if len(rotary) > 1 else None)
        return [(kind, numbers, key)], []
    read = [(each, *read_inv_freq(data, name, each.layer_type)) for each in rotary]
    keys = {key for _each, _numbers, key in read}
    if None not in keys and len(keys) == len(read):  # one buffer per layer type
        return read, []
    default = next(entry for entry in read if entry[0] == kind)
    why = _("the file holds one list of θᵢ, checked against the {title} layers; --layer-type {layer_type} checks it "
            "against these")
    return [default], [(each, why.format(title=layer_type_title(kind.layer_type), layer_type=each.layer_type))
                       for each, _numbers, _key in read if each != kind]
