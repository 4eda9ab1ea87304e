"""The check: numbers against the reference, the diagnosis, and the words for it (text and JSON)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import NamedTuple

import torch

from i18n import N_, Deferred, _
from pe_core.check import ports
from pe_core.check.bugs import BUG_CLASSES
from pe_core.check.common import (
    LAYOUT_TITLES,
    LOW_PRECISION_DTYPES,
    Reading,
    close,
    diagnosis_references_in,
    diagnosis_title_in,
    float32_tolerance,
    other_layout,
    pair_of_dimension,
    per_dimension,
    readings_for,
)
from pe_core.check.ports import BugClass, Candidate
from pe_core.cli_args import LAYOUTS
from pe_core.rope import (
    RopeSpec,
)

# ---- the check --------------------------------------------------------------------------------------


class Row(NamedTuple):
    """One compared entry: a pair, or a dimension (with the pair the expected layout gives it)."""

    index: int
    pair: int | None  # None for a pair the model does not rotate
    expected: float
    given: float
    ratio: float | None  # given / expected
    rel_err: float | None  # |given − expected| / expected
    tolerance: float  # the relative tolerance for this entry
    ok: bool


class Diagnosis(NamedTuple):
    name: str  # a bug class, or 'first+second' for two bugs at once
    sentence: str  # N_() template
    detail: dict
    reading: Reading
    parts: tuple[Diagnosis, ...] = ()  # two bugs at once: each one's diagnosis

    @property
    def classes(self) -> tuple[str, ...]:
        """The bug classes this diagnosis names (two for two bugs at once)."""
        return tuple(p.name for p in self.parts) if self.parts else (self.name,)


class CheckReport(NamedTuple):
    spec: RopeSpec
    seq_len: int | None
    layout: str
    reading: Reading
    expected: torch.Tensor  # θ per rotated pair (float64)
    expected_values: torch.Tensor  # what the given numbers should be, in their reading
    given: torch.Tensor
    expected_attention: float
    given_attention: float | None
    rows: tuple[Row, ...]
    attention_ok: bool | None
    diagnosis: tuple[Diagnosis, ...]

    @property
    def verdict(self) -> str:
        return "match" if all(r.ok for r in self.rows) and self.attention_ok is not False else "mismatch"

    @property
    def max_rel_err(self) -> float:
        errors = [r.rel_err for r in self.rows if r.rel_err is not None]
        if any(r.rel_err is None and not r.ok for r in self.rows):
            return math.inf
        return max(errors) if errors else 0.0

    @property
    def attention_rel_err(self) -> float | None:
        if self.given_attention is None:
            return None
        return abs(self.given_attention - self.expected_attention) / self.expected_attention

    @property
    def first_part(self) -> int | None:
        """The first entry where the given curve leaves the expected one (None if θ agree)."""
        return next((r.index for r in self.rows if not r.ok), None)

    @property
    def parted(self) -> tuple[int, ...]:
        return tuple(r.index for r in self.rows if not r.ok)


def _attention_close(given: float, expected: float) -> bool:
    return abs(given - expected) <= float(float32_tolerance(torch.tensor([expected]))[0]) * abs(expected)


def _matches(candidate: Candidate, reading: Reading, spec: RopeSpec, layout: str, given: torch.Tensor,
             given_attention: float | None) -> bool:
    values = candidate.for_reading(reading, spec, layout)
    if values is None or values.numel() != given.numel():
        return False
    if given_attention is not None and not _attention_close(given_attention, candidate.attention_factor):
        return False
    if candidate.dtype is not None:
        # a float64 θ rounded to dtype; the user's float32 θ may round to the neighbouring value
        tolerance = float32_tolerance(values)
        low, high = (ports.rounded_to(values * (1 + sign * tolerance), candidate.dtype) for sign in (-1, 1))
        return bool((close(given, low) | close(given, high)).all())
    if candidate.computed_in is not None:
        on_grid = close(given, ports.rounded_to(given, candidate.computed_in))
        step = values.abs() * torch.finfo(candidate.computed_in).eps
        within = (given - values).abs() <= step + float32_tolerance(values) * values.abs()
        return bool((on_grid & within).all())
    return bool(close(given, values).all())


def _rows(report_expected: torch.Tensor, given: torch.Tensor, reading: Reading, spec: RopeSpec,
          layout: str) -> tuple[Row, ...]:
    tolerance = float32_tolerance(report_expected)
    ok = close(given, report_expected)
    rows = []
    pairs = spec.num_pairs
    for index in range(given.numel()):
        expected, value = float(report_expected[index]), float(given[index])
        if reading.form == "pairs":
            pair = index if index < pairs else None
        else:
            pair = pair_of_dimension(index, pairs, layout) if index < spec.rotary_dim else None
        ratio = value / expected if expected else None
        error = abs(value - expected) / expected if expected else None
        rows.append(Row(index, pair, expected, value, ratio, error, float(tolerance[index]), bool(ok[index])))
    return tuple(rows)


def base_text(value: float) -> str:
    """10000.0 -> '10,000'; 2.5 -> '2.5'."""
    if value >= 1e12:
        return f"{value:.6g}"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.6g}"


def _detail(bug: BugClass, candidate: Candidate, spec: RopeSpec, expected_attention: float,
            given_attention: float | None) -> dict:
    detail = {"rope_type": spec.rope_type, "expected_af": expected_attention,
              "given_af": given_attention if given_attention is not None else candidate.attention_factor,
              "beta_fast": spec.beta_fast, "beta_slow": spec.beta_slow, **dict(candidate.detail)}
    for key in ("used_base", "base"):
        if key in detail:
            detail[key] = base_text(detail[key])
    if "used_layout" in detail:
        used, expected = LAYOUT_TITLES[detail["used_layout"]], LAYOUT_TITLES[detail["expected_layout"]]
        # words kept untranslated: a report is shared by readers of every language (explain() translates them)
        detail["used_title"], detail["expected_title"] = Deferred(used), Deferred(expected)
    if "dtype" in detail:
        detail["bits"] = round(-math.log2(torch.finfo(LOW_PRECISION_DTYPES[detail["dtype"]]).eps)) + 1
        detail["error"] = float(torch.finfo(LOW_PRECISION_DTYPES[detail["dtype"]]).eps)
    return detail


def check(spec: RopeSpec, numbers: Sequence[float] | torch.Tensor, attention_factor: float | None = None,
          seq_len: int | None = None, layout: str = "half", form: str = "auto") -> CheckReport:
    """Compare ``numbers`` (θ per pair or per dimension) with transformers' θ for ``spec``, and diagnose."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r}).")
    given = torch.as_tensor(numbers, dtype=torch.float64).reshape(-1)
    if bool((given < 0).any()):
        first = int(torch.nonzero(given < 0)[0])
        raise ValueError(_("Number {index} is negative ({value:g}); inverse frequencies θᵢ are ≥ 0.").format(
            index=first + 1, value=float(given[first])))
    if attention_factor is not None and not (math.isfinite(attention_factor) and attention_factor > 0):
        raise ValueError(_("The attention factor must be a positive number (got {text}).").format(
            text=repr(attention_factor)))
    expected, expected_attention = ports.reference_output(spec, seq_len)
    readings = readings_for(spec, given.numel(), form)
    attention_ok = None if attention_factor is None else _attention_close(attention_factor, expected_attention)

    reports = []
    for reading in readings:
        values = reading.expected(spec, expected, layout)
        rows = _rows(values, given, reading, spec, layout)
        report = CheckReport(spec, seq_len, layout, reading, expected, values, given, expected_attention,
                             attention_factor, rows, attention_ok, ())
        if report.verdict == "mismatch":
            report = report._replace(diagnosis=_diagnose(spec, seq_len, layout, reading, given, attention_factor,
                                                         expected_attention))
        reports.append(report)
    for wanted in (lambda r: r.verdict == "match", lambda r: bool(r.diagnosis), lambda r: True):
        chosen = next((r for r in reports if wanted(r)), None)
        if chosen is not None:
            return chosen
    raise AssertionError("unreachable")


def _diagnose(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading, given: torch.Tensor,
              given_attention: float | None, expected_attention: float) -> tuple[Diagnosis, ...]:
    """Every single bug that reproduces θᵢ and the attention factor; failing that, θᵢ and the attention factor
    diagnosed apart (each by a single bug), then two θ bugs at once. Empty: nothing known reproduces them."""
    found = _single_bugs(spec, seq_len, layout, reading, given, given_attention)
    if found:
        return found
    expected_values = reading.expected(spec, ports.reference_output(spec, seq_len)[0], layout)
    theta_ok = bool(close(given, expected_values).all())
    attention_ok = given_attention is None or _attention_close(given_attention, expected_attention)
    theta = () if theta_ok else (_single_bugs(spec, seq_len, layout, reading, given, None, theta_only=True)
                                 or _two_theta_bugs(spec, seq_len, layout, reading, given))
    if attention_ok:
        return theta
    attention = _single_bugs(spec, seq_len, layout, reading, expected_values, given_attention, attention_only=True)
    if not theta or not attention:
        return ()
    first = attention[0]
    also = Diagnosis(first.name, ATTENTION_TOO, {**first.detail, "summary": Deferred(BUG_CLASSES[first.name].summary)},
                     reading)
    return tuple(_together(t, also) for t in theta)


def _single_bugs(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading, given: torch.Tensor,
                 given_attention: float | None, theta_only: bool = False,
                 attention_only: bool = False) -> tuple[Diagnosis, ...]:
    found = []
    # specific bugs first: a fitted parameter is the answer only where none of them is (and costs the most to try)
    for name, bug in sorted(BUG_CLASSES.items(), key=lambda item: item[1].fitted):
        if not bug.applies(spec) or (theta_only and bug.attention_only) or (attention_only and not bug.attention_only):
            continue
        if bug.fitted and any(not BUG_CLASSES[d.name].fitted for d in found):
            break
        for candidate in bug.variants(spec, seq_len, layout, given):
            if _matches(candidate, reading, spec, layout, given, given_attention):
                found.append(_diagnosis(name, bug, candidate, spec, seq_len, reading, given_attention))
                break
    # a fitted parameter is the answer only where no specific bug is, and a fitted base (which explains any plain θ)
    # only where no other fitted parameter is
    specific = [d for d in found if not BUG_CLASSES[d.name].fitted]
    if specific:
        return tuple(specific)
    if len(found) > 1:
        found = [d for d in found if d.name != "wrong_default_base"]
    return tuple(found)


def _diagnosis(name: str, bug: BugClass, candidate: Candidate, spec: RopeSpec, seq_len: int | None,
               reading: Reading, given_attention: float | None) -> Diagnosis:
    detail = _detail(bug, candidate, spec, ports.reference_output(spec, seq_len)[1], given_attention)
    return Diagnosis(name, candidate.sentence or bug.explanation, detail, reading)


TWO_BUGS = N_("Two bugs at once: {first} and {second}.")
ROUNDED_TOO = N_("On top of that the θᵢ were rounded to {dtype} (a buffer cast to, or computed in, half precision).")
ATTENTION_TOO = N_("And the attention factor is {given_af:.6g} instead of {expected_af:.6g}: {summary}")
LAID_OUT_TOO = N_("On top of that the values are laid out {used_title} for a checkpoint that expects "
                  "{expected_title}.")


def _together(first: Diagnosis, second: Diagnosis) -> Diagnosis:
    return Diagnosis(f"{first.name}+{second.name}", TWO_BUGS, {}, first.reading, (first, second))


def _two_theta_bugs(spec: RopeSpec, seq_len: int | None, layout: str, reading: Reading,
                    given: torch.Tensor) -> tuple[Diagnosis, ...]:
    """Pairs of θ bugs: any bug's output rounded to half precision or laid out in the other pairing, and any bug
    acting on the config another bug changed (partial rotary ignored, scaling dropped, truncate flipped, the base
    rounded, LongRoPE's other factors)."""
    theta_classes = {n: b for n, b in BUG_CLASSES.items() if not b.attention_only}
    found: list[Diagnosis] = []
    outputs = [(n, b) for n, b in theta_classes.items()
               if b.applies(spec) and n not in ("low_precision", "interleaved_vs_half")]
    for name, bug in outputs:
        for candidate in bug.variants(spec, seq_len, layout, given):
            transforms = [("low_precision", dataclasses.replace(candidate, dtype=dtype),
                           Diagnosis("low_precision", ROUNDED_TOO, {"dtype": dtype_name}, reading))
                          for dtype_name, dtype in LOW_PRECISION_DTYPES.items()
                          if candidate.dtype is None and candidate.computed_in is None]
            if reading.form == "dims" and not reading.full_head and candidate.form == "pairs" and \
                    not candidate.full_head:
                wrong = other_layout(layout)
                laid_out = Candidate(per_dimension(candidate.values, wrong), candidate.attention_factor, form="dims")
                detail = {"used_title": Deferred(LAYOUT_TITLES[wrong]), "expected_title": Deferred(LAYOUT_TITLES[layout])}
                transforms.append(("interleaved_vs_half", laid_out,
                                   Diagnosis("interleaved_vs_half", LAID_OUT_TOO, detail, reading)))
            for _other, changed, part in transforms:
                if _matches(changed, reading, spec, layout, given, None):
                    found.append(_together(_diagnosis(name, bug, candidate, spec, seq_len, reading, None), part))
                    break
            else:
                continue
            break
    for first_name, first in theta_classes.items():
        if first.spec_change is None or not first.applies(spec):
            continue
        changed = first.spec_change(spec, seq_len)
        if changed is None:
            continue
        changed_spec, changed_len, full_head = changed
        first_part = _diagnosis(first_name, first, first.variants(spec, seq_len, layout, given)[0], spec, seq_len,
                                reading, None)
        for name, bug in theta_classes.items():
            if name == first_name or not bug.applies(changed_spec):
                continue
            for candidate in bug.variants(changed_spec, changed_len, layout, given):
                if full_head:
                    candidate = dataclasses.replace(candidate, full_head=True)
                if _matches(candidate, reading, spec, layout, given, None):
                    second = _diagnosis(name, bug, candidate, changed_spec, changed_len, reading, None)
                    if not any(d.name in (f"{first_name}+{name}", f"{name}+{first_name}") for d in found):
                        found.append(_together(first_part, second))
                    break
    return tuple(found)


# ---- words ---------------------------------------------------------------------------------------------


def where_text(report: CheckReport) -> str:
    """Where the given curve first leaves the expected one, e.g. 'pair 29 (λ ≈ 2,087 tokens)'."""
    index = report.first_part
    if index is None:
        return _("no pair (the θᵢ agree)")
    row = report.rows[index]
    if row.pair is None:
        return _("pair {index}, which the model does not rotate").format(index=index)
    wavelength = 2 * math.pi / float(report.expected[row.pair])
    if report.reading.form == "pairs":
        return _("pair {index} (λ ≈ {wavelength:,.0f} tokens)").format(index=index, wavelength=wavelength)
    return _("dimension {index} (pair {pair}, λ ≈ {wavelength:,.0f} tokens)").format(
        index=index, pair=row.pair, wavelength=wavelength)


def explain(report: CheckReport, diagnosis: Diagnosis) -> str:
    """The diagnosis's sentence (for two bugs at once: their titles, then each one's sentence), in the current
    language."""
    if diagnosis.parts:
        first, second = (_(BUG_CLASSES[p.name].title) for p in diagnosis.parts)
        return " ".join([_(TWO_BUGS).format(first=first, second=second),
                         *(explain(report, part) for part in diagnosis.parts)])
    detail = {name: _(value) if isinstance(value, Deferred) else value for name, value in diagnosis.detail.items()}
    return _(diagnosis.sentence).format(where=where_text(report), **detail)


def diagnosis_title(name: str) -> str:
    """A diagnosis's title from its name: the bug's, or both joined for two bugs at once ('a+b'), translated."""
    return diagnosis_title_in(BUG_CLASSES, name)


def diagnosis_references(name: str) -> tuple[str, ...]:
    """The public threads of every bug a diagnosis's name names, without repeats."""
    return diagnosis_references_in(BUG_CLASSES, name)


def report_json(report: CheckReport) -> dict:
    """The CLI's ``--json`` output."""
    def number(value: float | None) -> float | None:
        return None if value is None or not math.isfinite(value) else value

    return {
        "verdict": report.verdict,
        "max_rel_err": number(report.max_rel_err),
        "diagnosis": [d.name for d in report.diagnosis],
        "explanations": {d.name: explain(report, d) for d in report.diagnosis},
        "read_as": {"form": report.reading.form, "whole_head": report.reading.full_head, "layout": report.layout},
        "attention_factor": {"expected": report.expected_attention, "given": report.given_attention,
                             "rel_err": report.attention_rel_err},
        "first_part": report.first_part,
        "pairs": [{"index": r.index, "pair": r.pair, "expected": r.expected, "given": r.given,
                   "ratio": number(r.ratio), "rel_err": number(r.rel_err), "tolerance": r.tolerance, "ok": r.ok}
                  for r in report.rows],
    }


def report_text(report: CheckReport) -> str:
    """A terminal summary: verdict, diagnosis, and the entries that differ."""
    spec = report.spec
    lines = [f"RoPE: {spec.rope_type}, base {base_text(spec.base)}, {spec.rotary_dim} of {spec.head_dim} dimensions "
             f"rotated, L = {spec.original_max_position_embeddings:,}"
             + (f", factor {spec.factor:g}" if ports.is_scaled(spec) else "")
             + (f", seq_len {report.seq_len:,}" if report.seq_len is not None else "")]
    form = "per pair" if report.reading.form == "pairs" else f"per dimension, expected layout {report.layout}"
    lines.append(f"Read {report.given.numel()} numbers {form}" + (" for the whole head" if report.reading.full_head
                                                                   else "") + ".")
    verdict = "MATCH" if report.verdict == "match" else "MISMATCH"
    lines.append(f"Verdict: {verdict} (max relative error {report.max_rel_err:.3g}; tolerance 8·ε₃₂·(1 + |ln θ|))")
    if report.given_attention is not None:
        lines.append(f"Attention factor: given {report.given_attention:.9g}, expected {report.expected_attention:.9g}"
                     f" ({'ok' if report.attention_ok else 'differs'})")
    if report.verdict == "mismatch":
        if report.diagnosis:
            for diagnosis in report.diagnosis:
                lines.append(f"Diagnosis: {diagnosis.name}: {explain(report, diagnosis)}")
        else:
            lines.append(f"Diagnosis: no single known bug reproduces these numbers; the curves part at "
                         f"{where_text(report)}.")
    differing = [r for r in report.rows if not r.ok]
    if differing:
        lines.append(f"{len(differing)} of {len(report.rows)} entries differ; the first ones:")
        lines.append(f"{'index':>6} {'pair':>5} {'expected θ':>14} {'given θ':>14} {'ratio':>10} {'rel err':>9}")
        for r in differing[:12]:
            ratio = f"{r.ratio:.6g}" if r.ratio is not None else "-"
            error = f"{r.rel_err:.2e}" if r.rel_err is not None else "-"
            pair = str(r.pair) if r.pair is not None else "-"
            lines.append(f"{r.index:>6} {pair:>5} {r.expected:>14.8g} {r.given:>14.8g} {ratio:>10} {error:>9}")
    return "\n".join(lines)




OTHER_KIND_SENTENCES = {
    "theirs": N_("The θᵢ are the {other} layers' RoPE (base {other_base}, {other_type}) instead of the {kind} "
                 "layers' own: the port gave one kind of layer another kind's numbers; the curves part at {where}."),
    "their_scaling": N_("The θᵢ are the {kind} layers' base {base} with the {other} layers' {other_type} scaling: "
                        "the port scaled every layer alike; the curves part at {where}."),
    "their_base": N_("The θᵢ are the {other} layers' base {other_base} with the {kind} layers' {rope_type} scaling: "
                     "the port used one base for every layer; the curves part at {where}."),
}


def _with_scaling_of(spec: RopeSpec, other: RopeSpec) -> RopeSpec:
    """``spec``'s base and widths with ``other``'s scaling (its rope type and the method's parameters)."""
    keep = {"head_dim": spec.head_dim, "base": spec.base, "partial_rotary_factor": spec.partial_rotary_factor}
    return dataclasses.replace(other, **keep)


def check_layers(model, kind, numbers, attention_factor: float | None = None, seq_len: int | None = None,
                 layout: str = "half", form: str = "auto") -> CheckReport:
    """``check`` against one kind of a model's layers; numbers that miss it but are another rotary kind's θᵢ
    (or one kind's base with the other's scaling) are named as that port, the way a bug class is."""
    report = check(kind.spec, numbers, attention_factor, seq_len, layout, form)
    if report.verdict == "match":
        return report
    # a hybrid model's other kinds first: their numbers are a more specific cause than a fitted base
    spec = kind.spec
    for other in model.rotary_kinds:
        if other.layer_type == kind.layer_type or other.spec == spec:
            continue
        tries = (("theirs", other.spec), ("their_scaling", _with_scaling_of(spec, other.spec)),
                 ("their_base", spec.replace(base=other.spec.base)))
        for which, candidate in tries:
            if candidate == spec:
                continue
            try:
                found = check(candidate, numbers, None, seq_len, layout, form)
            except ValueError:
                continue
            if found.verdict != "match":
                continue
            from pe_core.layers import LAYER_TYPE_TITLES

            detail = {"kind": Deferred(LAYER_TYPE_TITLES.get(kind.layer_type, kind.layer_type)),
                      "other": Deferred(LAYER_TYPE_TITLES.get(other.layer_type, other.layer_type)),
                      "base": base_text(spec.base), "other_base": base_text(other.spec.base),
                      "rope_type": spec.rope_type, "other_type": other.spec.rope_type, "port": which}
            diagnosis = Diagnosis("other_layer_kind", OTHER_KIND_SENTENCES[which], detail, report.reading)
            return report._replace(diagnosis=(diagnosis,))
    return report
