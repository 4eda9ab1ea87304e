"""Check a RoPE implementation: a model's expected θᵢ against the user's, a verdict, and the bug that explains them.

The numbers are text in the settings (pasted, or an uploaded file the page turned into text with
``pe_core.inputs``), so a link, the CLI and the tests all read the same values.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import torch

from figures import layers as draw_layers
from figures import practitioner as draw
from figures import probe as draw_probe
from i18n import N_, _, sentences
from lessons.base import FigureSpec, Lesson, SettingsError, cached, figure_registry, override, setting
from lessons.model_source import MODEL, ModelSettings, config_of
from lessons.rope_setup import (
    LAYER_CHOICES,
    described_kind,
    kind_rows,
    layer_choice_title,
    offered_layer_choices,
)
from pe_core import RopeSpec, preset_by_name, rope_frequencies
from pe_core import probe as rotation_probe
from pe_core.check import (
    BUG_CLASSES,
    LAYOUT_NAMES,
    LAYOUT_TITLES,
    LAYOUTS,
    CheckReport,
    applicable_classes,
    check_layers,
    explain,
    report_json,
    where_text,
)
from pe_core.config import extended_length, layer_map
from pe_core.inputs import numbers_text, parse_numbers
from pe_core.layers import LayerKind, LayerMap, layer_type_title
from pe_core.probe_files import probe_files

NUMBERS = "numbers"
ROTATION = "rotation"  # the rotation probe's example port
DEFAULT_PRESET = "Llama-3.1-8B"
MAX_SEQ_LEN = 1 << 22


def _float32(values) -> list[float]:
    """What a float32 implementation outputs (the values an engineer would paste)."""
    return torch.as_tensor(values, dtype=torch.float64).to(torch.float32).to(torch.float64).tolist()


def example_numbers(spec: RopeSpec, bug: str | None = None, seq_len: int | None = None) -> tuple[str, str]:
    """(θ text, attention factor text) of a float32 implementation of ``spec``: correct, or with ``bug``."""
    if bug is None:
        frequencies = rope_frequencies(spec, seq_len)
        return numbers_text(_float32(frequencies.inv_freq)), f"{frequencies.attention_factor:.9g}"
    values, attention = BUG_CLASSES[bug].perturb(spec, seq_len)
    return numbers_text(_float32(values)), f"{attention:.9g}"


# The page opens on an implementation with a bug a per-pair list cannot show: Llama 3.1's θ laid out
# interleaved for a checkpoint that pairs dimensions half-split.
DEFAULT_NUMBERS = example_numbers(preset_by_name(DEFAULT_PRESET).spec, "interleaved_vs_half")[0]
CORRECT_NUMBERS = example_numbers(preset_by_name(DEFAULT_PRESET).spec)[0]


MODEL_LAYOUT = "model"  # the pairing the model's own transformers class rotates


def _layout_title(layout: str) -> str:
    return _("the model's own") if layout == MODEL_LAYOUT else _(LAYOUT_TITLES[layout])


@dataclasses.dataclass(frozen=True)
class Settings(ModelSettings):
    preset: str = override(ModelSettings, "preset", DEFAULT_PRESET,
                           examples=("Llama-2-7B", "Qwen2.5-7B-Instruct (+YaRN x4)"))
    numbers: str = setting(DEFAULT_NUMBERS, N_("Your θᵢ"), key="theta", widget="text", group=NUMBERS,
                           examples=(CORRECT_NUMBERS,),
                           help=N_("One θᵢ per rotated pair (your inv_freq buffer, in pair order), or one value per "
                                   "rotated dimension as your code lays them out (the angle table at position 1). "
                                   "Commas, spaces or new lines; a JSON list; a printed tensor."))
    attention: str = setting("", N_("Your attention factor (optional)"), key="af", widget="text", group=NUMBERS,
                             examples=("2.0",), placeholder="1.0",
                             help=N_("The factor your RoPE multiplies cos and sin by (transformers' "
                                     "attention_scaling). Leave empty to check the θᵢ only."))
    seq_len: int = setting(0, N_("Sequence length the θᵢ are for (0: none)"), key="len", widget="number",
                           group=NUMBERS, min_value=0, max_value=MAX_SEQ_LEN, step=1, examples=(200_000,),
                           help=N_("Dynamic NTK and LongRoPE change θᵢ with the sequence length; give the length "
                                   "your implementation ran at (0: none, as at model init)."))
    layout: str = setting(MODEL_LAYOUT, N_("Pairing the checkpoint expects"), key="layout", widget="radio",
                          group=NUMBERS, options=(MODEL_LAYOUT, *LAYOUTS), format=_layout_title, horizontal=False,
                          help=N_("Only per-dimension values show the pairing. The model's own is what its "
                                  "transformers class rotates (interleaved for DeepSeek-V3 and GLM-4, half-split for "
                                  "Llama); Meta's original checkpoints and GGUF 'norm' models expect interleaved."))
    rotation: str = setting(rotation_probe.CORRECT, N_("Example port's rotation"), key="rot", widget="selectbox",
                            group=ROTATION, options=(rotation_probe.CORRECT, *rotation_probe.PROBE_BUGS),
                            format=lambda name: rotation_example_title(name), examples=("cos_sin_low_precision",),
                            help=N_("What the probe's figure shows until you upload your own rotary's output: "
                                    "a correct port, or one with the bug named."))
    layer_type: str = setting("auto", N_("Layers checked"), key="layers", widget="radio", group=MODEL,
                              options=LAYER_CHOICES, format=layer_choice_title, horizontal=False,
                              offered=offered_layer_choices,
                              help=N_("A hybrid model (Gemma 3, gpt-oss, EXAONE 4, ...) keeps a RoPE per kind of "
                                      "layer: pick the kind your numbers are for."))


class CheckedLayers(NamedTuple):
    layers: LayerMap
    kind: LayerKind
    note: str | None  # why the kind checked is not the one asked for (the model has none of those)


def checked_layers(settings: Settings) -> CheckedLayers:
    """The model's layers and the kind the settings check: a kind the model lacks falls back to its default with a
    note, a kind without RoPE is refused (``SettingsError``: there is nothing to check)."""
    try:
        layers = layer_map(config_of(settings.source, settings.preset, settings.config))
    except ValueError as err:
        raise SettingsError(str(err)) from err
    asked = [kind for kind in layers.kinds if kind.layer_type == settings.layer_type]
    if asked and not any(kind.has_rope for kind in asked):
        raise SettingsError(_("The {layers} layers of this model apply no position encoding (NoPE): there are no "
                              "θᵢ to check. Pick another kind under Layers checked.").format(
            layers=layer_type_title(settings.layer_type)))
    kind, note = described_kind(layers, settings.layer_type)
    return CheckedLayers(layers, kind, note)


def checked_kind(settings: Settings) -> LayerKind:
    return checked_layers(settings).kind


def checked_layout(settings: Settings, kind: LayerKind) -> str:
    return kind.layout if settings.layout == MODEL_LAYOUT else settings.layout


def parse_attention(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text.strip())
    except ValueError as err:
        raise SettingsError(_("The attention factor {text!r} is not a number.").format(text=text.strip()[:40])) from err
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(_("The attention factor must be a positive number (got {text}).").format(text=text.strip()))
    return value


class Result:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = config_of(settings.source, settings.preset, settings.config)
        self.layers, self.kind, self.layer_note = checked_layers(settings)
        self.spec = self.kind.spec
        try:
            numbers = parse_numbers(settings.numbers, _("Your θᵢ"))
            self.report: CheckReport = check_layers(self.layers, self.kind, numbers, parse_attention(settings.attention),
                                                    settings.seq_len or None, checked_layout(settings, self.kind))
        except SettingsError:
            raise
        except ValueError as err:
            raise SettingsError(str(err)) from err

    @property
    def explanations(self) -> tuple[tuple[str, str], ...]:
        """(bug name, its sentence) for every class that reproduces the numbers, in the reader's language (made on
        every call: a result is shared by every session, whatever its language)."""
        return tuple((d.name, explain(self.report, d)) for d in self.report.diagnosis)

    @property
    def where(self) -> str:
        return where_text(self.report)

    def json(self) -> dict:
        return report_json(self.report)

    @functools.cached_property
    def rotation(self) -> RotationResult:
        """The rotation probe's verdict on the example port the settings name."""
        return example_rotation(self.kind, self.settings.rotation)

    def summary(self) -> str:
        report = self.report
        form = (_("one θᵢ per pair") if report.reading.form == "pairs"
                else _("one value per rotated dimension, {layout} expected").format(
                    layout=_(LAYOUT_NAMES[report.layout])))
        if report.reading.full_head:
            form = _("{form}, for the whole head").format(form=form)
        text = _("{count} numbers read as {form}; largest relative error {error}.").format(
            count=report.given.numel(), form=form, error=_error_text(report.max_rel_err))
        if report.given_attention is not None:
            text = sentences([text, _("Attention factor {given:.9g} against {expected:.9g}.").format(
                given=report.given_attention, expected=report.expected_attention)])
        return text

    def notes(self) -> list[str]:
        """Cautions about the input: rounded numbers, a list that cannot show the pairing."""
        notes = []
        digits = _significant_digits(self.settings.numbers)
        if digits is not None and digits <= 6:
            notes.append(_("Your numbers carry at most {digits} significant digits; float32 needs 9 to be checked "
                           "exactly (paste tolist() output or upload a .npy / .pt file).").format(digits=digits))
        if self.report.reading.form == "pairs":
            notes.append(_("One θᵢ per pair cannot show the pairing; give one value per rotated dimension to check "
                           "it."))
        return notes

    def table(self) -> list[dict]:
        per_dimension = self.report.reading.form == "dims"
        rows = []
        for row in self.report.rows:
            entry = {_("dimension") if per_dimension else _("pair"): row.index}
            if per_dimension:
                entry[_("pair")] = row.pair
            entry.update({_("expected θ"): row.expected, _("your θ"): row.given,
                          _("ratio"): row.ratio, _("relative error"): row.rel_err,
                          _("tolerance"): row.tolerance, _("ok"): "✓" if row.ok else "✗"})
            rows.append(entry)
        return rows


def _error_text(value: float) -> str:
    return "∞" if not math.isfinite(value) else f"{value:.2e}"


def _significant_digits(text: str) -> int | None:
    """The most significant digits any pasted number carries (None if there is nothing to count)."""
    import re

    mantissas = re.findall(r"(?<![\w.])[-+]?(\d*\.?\d+)(?:[eE][-+]?\d+)?", text)
    counts = [len(m.replace(".", "").lstrip("0")) for m in mantissas if m.strip(".0")]
    return max(counts) if counts else None


CORRECT = "correct"  # the example menu's entry for an implementation without a bug


def example_choices(settings: Settings) -> tuple[str, ...]:
    """The page's example menu: a correct implementation, then every bug class that applies to the model."""
    try:
        spec = checked_kind(settings).spec
        return (CORRECT, *applicable_classes(spec, settings.seq_len or None))
    except ValueError:
        return (CORRECT,)


def example_shown(settings: Settings, choices: tuple[str, ...]) -> str | None:
    """The example of ``choices`` whose numbers the settings hold (a correct implementation on a match, else the
    first bug class that reproduces them), or None for numbers no example gives: the menu then shows no example
    rather than "a correct implementation" beside a mismatch."""
    try:
        report = LESSON.result(settings).report
    except ValueError:
        return None
    if report.verdict == "match":
        return CORRECT
    return next((d.name for d in report.diagnosis if d.name in choices), None)


def example_title(choice: str) -> str:
    return _("a correct implementation") if choice == CORRECT else _("with the bug: {title}").format(
        title=_(BUG_CLASSES[choice].title))


def fill_example(state, settings: Settings, choice: str | None) -> None:
    """Put an example implementation's numbers into the page's number widgets (``state``: the widgets' values);
    no choice changes nothing."""
    if choice is None:
        return
    try:
        spec = checked_kind(settings).spec
    except ValueError:
        return
    numbers, attention = example_numbers(spec, None if choice == CORRECT else choice, settings.seq_len or None)
    controls = Settings.controls()
    state[controls["numbers"].key] = numbers
    state[controls["attention"].key] = attention


def compute(settings: Settings) -> Result:
    return Result(settings)


def _theta(result: Result, style):
    report = result.report
    return draw.check_theta_figure(
        expected=report.expected_values, given=report.given, ok=[r.ok for r in report.rows],
        per_dimension=report.reading.form == "dims", first_part=report.first_part,
        verdict=report.verdict, seq_len=report.seq_len,
        attention=(report.expected_attention, report.given_attention, report.attention_ok))


def _error(result: Result, style):
    report = result.report
    return draw.check_error_figure(
        errors=[r.rel_err for r in report.rows], tolerances=[r.tolerance for r in report.rows],
        ok=[r.ok for r in report.rows], per_dimension=report.reading.form == "dims")


def _theta_caption(result: Result) -> str:
    report = result.report
    if report.verdict == "match":
        return _("Every entry is within float32 tolerance of transformers' value.")
    return _("The curves part at {where}.").format(where=result.where)


def theta_file_reader(settings: Settings):
    """The θ uploader's reader: a file's numbers as the settings' text, a state dict read for the layers the
    settings check where the model keeps one inv_freq per layer type."""
    from pe_core.inputs import read_inv_freq

    try:
        layer_type = checked_kind(settings).layer_type
        several = len(layer_map(config_of(settings.source, settings.preset, settings.config)).rotary_kinds) > 1
    except (SettingsError, ValueError):
        layer_type, several = None, False

    def read(data: bytes, name: str) -> str:
        return numbers_text(read_inv_freq(data, name, layer_type if several else None).values)
    return read


# ---- the rotation probe -----------------------------------------------------------------------------------------


def rotation_example_title(name: str) -> str:
    if name == rotation_probe.CORRECT:
        return _("a correct rotary")
    return _("with the bug: {title}").format(title=_(rotation_probe.PROBE_BUGS[name].title))


class RotationResult:
    """The rotation probe's verdict on one port's output (an example's or an upload's) for one kind of layer."""

    def __init__(self, kind: LayerKind, report: rotation_probe.ProbeReport, note: str | None = None) -> None:
        self.kind, self.report, self.note = kind, report, note

    @property
    def explanations(self) -> tuple[tuple[str, str], ...]:
        """(bug name, its sentence) in the reader's language (made on every call, as for the θ check)."""
        return tuple((d.name, rotation_probe.explain(self.report, d)) for d in self.report.diagnosis)

    @property
    def where(self) -> str:
        return rotation_probe.where_text(self.report)

    def marks(self) -> tuple[tuple[int, str], ...]:
        """The lengths the figure marks: L, and L′ where scaling extends it."""
        spec = self.kind.spec
        marks = [(spec.original_max_position_embeddings, "L")]
        if rotation_probe.built_length(spec) != spec.original_max_position_embeddings:
            marks.append((rotation_probe.built_length(spec), "L′"))
        return tuple(marks)


def example_rotation(kind: LayerKind, name: str) -> RotationResult:
    """The verdict on an example port's output: correct, or with bug class ``name`` (a correct one, with a note,
    where that class cannot occur for these layers)."""
    tensors = rotation_probe.example_output(kind, name)
    note = None
    if tensors is None:
        note = N_("That bug cannot occur for these layers; a correct rotary is shown.")
        tensors = rotation_probe.example_output(kind, rotation_probe.CORRECT)
    return RotationResult(kind, rotation_probe.check_kind(kind, tensors), note)


@cached(max_entries=16)
def uploaded_rotation(kind: LayerKind, data: bytes, name: str) -> RotationResult:
    """The verdict on an uploaded output of the probe (rotated q and k, or cos and sin)."""
    from pe_core.inputs import read_tensors

    try:
        report = rotation_probe.check_kind(kind, read_tensors(data, name))
    except ValueError as err:
        raise SettingsError(str(err)) from err
    return RotationResult(kind, report)


@cached(max_entries=16)
def probe_zip(kind: LayerKind) -> bytes:
    """The probe of these layers (probe.pt, .npy, .safetensors) and the script that runs a rotary on it, zipped."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        files = probe_files(rotation_probe.probe_for(kind), "config.json", kind.layer_type, kind)
        for name, data in files.items():
            archive.writestr(f"rope-probe/{name}", data)
    return buffer.getvalue()


def rotation_figure(rotation: RotationResult):
    report = rotation.report
    return draw_probe.rotation_error_figure(
        positions=report.positions.tolist(), errors=report.error.tolist(), tolerances=report.tolerance.tolist(),
        beyond=(report.ratio > 1).tolist(), first_part=report.first_part, verdict=report.verdict, marks=rotation.marks())


def _rotation(result: Result, style):
    return rotation_figure(result.rotation)


def _rotation_caption(result: Result) -> str:
    if result.rotation.report.verdict == "match":
        return _("Every token is within float32 tolerance of the reference rotation.")
    return _("The error leaves float32 tolerance at {where}.").format(where=result.rotation.where)


def _layer_map(result: Result, style):
    context = extended_length(result.config)
    return draw_layers.layer_map_figure(kind_rows(result.layers, result.kind, context),
                                        num_layers=result.layers.num_layers, context=context, note=result.layer_note)


FIGURES = figure_registry(
    FigureSpec("theta", draw.CHECK_THETA_TITLE, _theta, groups=(MODEL, NUMBERS), caption=_theta_caption),
    FigureSpec("error", draw.CHECK_ERROR_TITLE, _error, groups=(MODEL, NUMBERS),
               caption=N_("Relative error per entry against the float32 tolerance 8·ε₃₂·(1 + |ln θᵢ|); "
                          "points above it are where your numbers differ.")),
    FigureSpec("rotation", draw_probe.ROTATION_TITLE, _rotation, groups=(MODEL, ROTATION), caption=_rotation_caption),
    FigureSpec("layer-map", draw_layers.TITLE, _layer_map, groups=(MODEL,),
               caption=N_("Each bar is one layer, as tall as the tokens it can attend to; hollow, hatched bars apply "
                          "no position encoding. Your numbers are checked against the outlined kind."),
               showcase=(("preset", "Gemma-3-4B-it"),)),
)

LESSON = Lesson(
    name="check",
    title=N_("Check a RoPE implementation"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Paste or upload your θᵢ: a verdict against transformers to float32 precision, and which known bug "
               "(swapped YaRN betas, ignored factor, wrong pairing, low precision, ...) reproduces them exactly."),
)

