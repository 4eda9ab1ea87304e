"""Train a tiny transformer: which encodings and RoPE scaling methods survive 8× the training length?

The settings are the knobs of ``pe_core.train.ExperimentConfig`` (same names), so a page link,
``python -m figures.export --set`` and ``python -m pe_core.train`` describe one experiment the
same way. ``compute`` returns the stored run when the run store has the config's hash, and
trains it (about 26 s of training on a 2-core laptop CPU, then the evaluations and fine-tunes) and stores
it otherwise; the page never waits on that: it asks ``pe_core.train.service`` for a background
job and shows its progress.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import torch

from figures import training as draw
from i18n import N_, _, ngettext, sentences
from lessons import needle
from lessons.base import FigureSpec, Lesson, LessonSettings, Part, cached, figure_registry, setting
from lessons.format import base_text, length_text
from pe_core.biases import alibi_slopes
from pe_core.data import load_corpus, with_start
from pe_core.device import shown_device_label
from pe_core.model import (
    ENCODINGS,
    ROPE_PAIRINGS,
    deberta_rows_by_distance,
    position_wavelengths,
    t5_buckets_by_distance,
)
from pe_core.train import (
    AS_TRAINED,
    DEFAULT_SEEDS,
    FINE_TUNABLE,
    INFERENCE_METHODS,
    ExperimentConfig,
    ExperimentRun,
    RunRecord,
    Status,
)
from pe_core.train.attention import INSIDE_METHODS, Inside, inside, kept_weights, model_from_bytes, pooled
from pe_core.train.config import COPY_FRACTION, YARN_RAMPS
from pe_core.train.evaluate import evaluation_windows
from pe_core.train.published import SU_TABLE, SU_TEST_LENGTH, SU_TRAIN_LENGTH
from pe_core.train.retrieval import PASSKEY_DIGITS, TRIALS_PER_DEPTH, chance
from pe_core.train.schema import MEMORY_PEAK
from pe_core.train.shipped import REGENERATE_RETRIEVAL
from pe_core.train.spectrum import PAPER_RAMP, Spectrum, matched_ramp, ramp_zones, real_spectra, spectrum
from pe_core.train.summary import CostStat, SeedStat, TunePoint, cost_cells, cost_stats, fine_tune_curves, seed_stats

EXPERIMENT, VIEW = "experiment", "view"
DEFAULT = ExperimentConfig()
BASES = (10.0, 20.0, 50.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0)
TRAIN_LENGTHS = (16, 32, 64, 128, 256)
WIDTHS = (32, 64, 96, 128, 192, 256)
HEADS = (1, 2, 4, 8)
HEAD_SIZES = (8, 16, 32, 64, 128)
LAYERS = (1, 2, 3, 4)
STEPS = (20, 50, 100, 200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000)
MULTIPLES = (1, 2, 4, 8, 16)
FINE_TUNE_STEPS = (10, 25, 50, 100, 200, 400)
PAIRING_TITLES = {"half": N_("half-split (i, i + d/2)"), "interleaved": N_("interleaved (2i, 2i + 1)")}
USES_BASE = tuple(name for name, e in ENCODINGS.items() if e.uses_base)
SCALABLE = tuple(name for name, e in ENCODINGS.items() if e.scalable)


def _encoding_title(key: str) -> str:
    return _(ENCODINGS[key].title)


RAMP_TITLES = {"matched": N_("Matched to the toy"), "paper": N_("The paper's (for Llama)")}


def _method_title(key: str) -> str:
    return needle.method_title(key)


@dataclasses.dataclass(frozen=True)
class Settings(LessonSettings):
    """The experiment's knobs (fields of ``ExperimentConfig``) and what the page shows of it."""

    encoding: str = setting(DEFAULT.encoding, N_("Position encoding"), key="enc", widget="selectbox",
                            group=EXPERIMENT, options=tuple(ENCODINGS), format=_encoding_title)
    rope_base: float = setting(DEFAULT.rope_base, N_("Base b"), key="base", group=EXPERIMENT, options=BASES,
                               format=base_text, when={"encoding": USES_BASE},
                               help=N_("θᵢ = b^(−2i/d). The default 50 gives this small head the share of slow "
                                       "pairs Llama 2 has at base 10,000 (see the spectrum figure)."))
    rope_pairing: str = setting(DEFAULT.rope_pairing, N_("RoPE pairs dimensions"), key="pair", widget="radio",
                                group=EXPERIMENT, options=ROPE_PAIRINGS, format=lambda v: _(PAIRING_TITLES[v]),
                                when={"encoding": SCALABLE})
    train_length: int = setting(DEFAULT.train_length, N_("Training length L (characters)"), key="L",
                                group=EXPERIMENT, options=TRAIN_LENGTHS, format=length_text)
    steps: int = setting(DEFAULT.steps, N_("Training steps"), key="steps", group=EXPERIMENT, options=STEPS,
                         help=N_("Optimiser steps; each reads the same number of characters at every L."))
    d_model: int = setting(DEFAULT.d_model, N_("Width"), key="dm", group=EXPERIMENT, options=WIDTHS)
    n_head: int = setting(DEFAULT.n_head, N_("Heads"), key="nh", group=EXPERIMENT, options=HEADS)
    head_size: int = setting(DEFAULT.head_size, N_("Head size d"), key="hd", group=EXPERIMENT, options=HEAD_SIZES,
                             help=N_("What RoPE rotates, in d/2 pairs: 64 as in many real models' heads (128 in "
                                     "Llama's), independent of the width."))
    n_layer: int = setting(DEFAULT.n_layer, N_("Layers"), key="nl", group=EXPERIMENT, options=LAYERS)
    seed: int = setting(DEFAULT.seed, N_("Seed"), key="seed", widget="number", group=EXPERIMENT, min_value=0,
                        max_value=10_000, step=1, examples=(1,),
                        help=N_("Seeds the initial weights and the batches: the same settings give the same run."))
    multiples: tuple[int, ...] = setting(DEFAULT.multiples, N_("Evaluate at lengths (multiples of L)"), key="x",
                                         group=EXPERIMENT, options=MULTIPLES, format=lambda m: f"{m}×")
    methods: tuple[str, ...] = setting(DEFAULT.methods, N_("RoPE methods to evaluate"), key="m",
                                       group=EXPERIMENT, options=tuple(INFERENCE_METHODS), format=_method_title,
                                       when={"encoding": SCALABLE},
                                       help=N_("The scaling methods, and the tricks applied only at inference: "
                                               "log n scaling and ReRoPE."))
    fine_tune: tuple[str, ...] = setting(DEFAULT.fine_tune, N_("Fine-tune at the longest length"), key="ft",
                                         group=EXPERIMENT, options=FINE_TUNABLE, format=_method_title,
                                         when={"encoding": SCALABLE})
    fine_tune_steps: int = setting(DEFAULT.fine_tune_steps, N_("Fine-tuning steps"), key="fts", group=EXPERIMENT,
                                   options=FINE_TUNE_STEPS, when={"encoding": SCALABLE})
    yarn_ramp: str = setting(DEFAULT.yarn_ramp, N_("YaRN's α and β"), key="ramp", widget="radio", group=EXPERIMENT,
                             options=YARN_RAMPS, format=lambda v: _(RAMP_TITLES[v]), when={"encoding": SCALABLE},
                             help=N_("Which pairs YaRN and NTK-by-parts keep and which they interpolate. The "
                                     "paper's α = 1, β = 32 were found for Llama; matched sorts the same shares "
                                     "of this toy's pairs (see A faithful miniature)."))
    shown: int = setting(max(DEFAULT.multiples), N_("Show per-position loss at L′ ="), key="show", group=VIEW,
                         options=MULTIPLES, format=lambda m: f"{m}× L")


EXPERIMENT_FIELDS = tuple(f.name for f in dataclasses.fields(ExperimentConfig))


def experiment_config(settings: Settings) -> ExperimentConfig:
    """The experiment these settings describe (knobs the page does not show keep ExperimentConfig's defaults)."""
    values = {name: getattr(settings, name) for name in Settings.controls() if name in EXPERIMENT_FIELDS}
    return ExperimentConfig(**values)


# ---- where runs come from ----------------------------------------------------------------------


def service():
    """The server's training service (store, limiter); lesson caches are cleared whenever it stores a run."""
    from pe_core.train.service import server_service

    current = server_service()
    if not getattr(current, "_lesson_listener", False):
        current.on_stored(lambda record: LESSON.clear_caches())
        current._lesson_listener = True
    return current


@cached(max_entries=16)
def toy_spectrum(head_dim: int, base: float, train_length: int, scale: int) -> Spectrum:
    return spectrum("toy", head_dim, base, train_length, scale)


@functools.cache
def reference_spectra(scale: int) -> tuple[Spectrum, ...]:
    return real_spectra(scale)


class Result:
    """The experiment: cheap parts at once, the run itself (stored, or trained) when a figure asks."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = experiment_config(settings)

    @property
    def scale(self) -> int:
        return max(max(self.config.multiples), 2)

    @functools.cached_property
    def spectra(self) -> tuple[Spectrum, ...]:
        c = self.config
        return (toy_spectrum(c.head_size, c.rope_base, c.train_length, self.scale), *reference_spectra(self.scale))

    @functools.cached_property
    def record(self) -> RunRecord:
        """The stored run, or a run trained now (and stored, with its weights)."""
        trainer = service()
        record = trainer.stored(self.config)
        if record is None:
            experiment = ExperimentRun(self.config, trainer.corpus, trainer.device)
            for _status in experiment.work():
                pass
            record = experiment.record()
            trainer.store.put(record, kept_weights(self.config, experiment.run.model))
        return record

    @functools.cached_property
    def inside(self) -> tuple[Inside, Inside] | None:
        """The run's attention at L (as trained) and at the longest length per method, from its stored weights;
        None when they were not kept (or the encoding has no scaling methods)."""
        if not self.config.scalable:
            return None
        self.record  # noqa: B018 - a run trained for the page keeps its weights
        model = run_model(self.config)
        if model is None:
            return None
        corpus = service().corpus or load_corpus()
        c = self.config
        windows = [evaluation_windows(corpus, n, INSIDE_WINDOWS * n)[:INSIDE_WINDOWS, :-1] for n in
                   (c.train_length, c.longest)]
        if c.start_token:
            windows = [with_start(w) for w in windows]
        return inside(model, windows[0], ("direct",)), inside(model, windows[1], INSIDE_METHODS)

    @functools.cached_property
    def stats(self) -> list[SeedStat]:
        """Mean ± sd over the default seeds of every encoding and method stored for this experiment's family."""
        self.record  # noqa: B018 - this run is part of its own table
        return seed_stats(service().store.results(self.config.family), self.config, DEFAULT_SEEDS)

    @functools.cached_property
    def records(self) -> list[RunRecord]:
        """Every stored run of this experiment's family, read whole (costs, fine-tune curves)."""
        self.record  # noqa: B018 - this run is one of them
        return service().store.records(self.config.family)

    @functools.cached_property
    def costs(self) -> dict[str, CostStat]:
        """encoding → what its training steps cost, over the default seeds."""
        return {c.encoding: c for c in cost_stats(self.records, self.config, DEFAULT_SEEDS)}

    @functools.cached_property
    def curves(self) -> dict[str, list[TunePoint]]:
        """method → accuracy at the longest length against fine-tuning steps, over the default seeds."""
        return fine_tune_curves(self.records, self.config, DEFAULT_SEEDS)

    def stat(self, encoding: str, method: str, length: int, fine_tuned: bool = False) -> SeedStat | None:
        return next((s for s in self.stats if (s.encoding, s.method, s.length, s.fine_tuned)
                     == (encoding, method, length, fine_tuned)), None)

    @property
    def rows(self) -> list[tuple[str, str, bool]]:
        """(encoding, method, fine-tuned) of every row over seeds, in registry order."""
        return list(dict.fromkeys((s.encoding, s.method, s.fine_tuned) for s in self.stats))

    @property
    def seed_count(self) -> int:
        return max((s.n for s in self.stats), default=0)


def compute(settings: Settings) -> Result:
    return Result(settings)


# ---- text ------------------------------------------------------------------------------------------


def row_name(encoding: str, method: str, fine_tuned: bool, steps: int) -> str:
    if not ENCODINGS[encoding].scalable:
        return _encoding_title(encoding)
    if fine_tuned:
        return _("RoPE + {method}, {steps} fine-tuning steps").format(method=_method_title(method), steps=steps)
    return _("RoPE + {method}").format(method=_method_title(method))


def row_key(encoding: str, method: str) -> tuple[str, str, bool]:
    """(theme key, kind, log-n variant) a row is drawn with: a method's look, or the encoding's."""
    if not ENCODINGS[encoding].scalable:
        return encoding, "encoding", False
    definition = INFERENCE_METHODS[method]
    return definition.style, "method", definition.logn


def toy_facts(result: Result) -> dict[str, Any]:
    """What the prose says about the toy's spectrum, computed: its shares against Llama 2's, the same toy at
    Llama 2's base, and how YaRN's ramp sorts its pairs at the paper's (β, α) and at the matched ones."""
    toy, llama = result.spectra[0], result.spectra[1]
    usual = toy_spectrum(toy.head_dim, llama.base, toy.train_length, toy.scale)
    matched = matched_ramp(toy.base, toy.train_length)
    paper_zones = ramp_zones(toy.head_dim, toy.base, toy.train_length, PAPER_RAMP)
    matched_zones = ramp_zones(toy.head_dim, toy.base, toy.train_length, matched)
    llama_zones = ramp_zones(llama.head_dim, llama.base, llama.train_length, PAPER_RAMP)
    return {"L": length_text(toy.train_length), "d": toy.head_dim, "base": base_text(toy.base),
            "pairs": toy.pairs, "turning": toy.turning, "unseen": toy.unseen_share, "scale": toy.scale,
            "llama": llama.name, "llama_d": llama.head_dim, "llama_base": base_text(llama.base),
            "llama_L": length_text(llama.train_length), "llama_turning": llama.turning, "llama_pairs": llama.pairs,
            "llama_unseen": llama.unseen_share, "usual_turning": usual.turning, "usual_unseen": usual.unseen_share,
            "paper_beta": f"{PAPER_RAMP[0]:g}", "paper_alpha": f"{PAPER_RAMP[1]:g}",
            "llama_kept": llama_zones.kept, "llama_interpolated": llama_zones.interpolated,
            "fastest_turns": f"{float(toy.turns.max()):.1f}", "paper_kept": paper_zones.kept,
            "paper_interpolated": paper_zones.interpolated,
            "beta": f"{matched[0]:.2f}", "alpha": f"{matched[1]:.2f}",
            "kept": matched_zones.kept, "interpolated": matched_zones.interpolated}


def spectrum_name(s: Spectrum, toy: bool) -> str:
    text = _("{name} (d = {d}, b = {base}, L = {L}):<br>{turning} of {pairs} pairs turn within L; "
             "{unseen:.0%} of angles unseen at {scale}×")
    name = _("this toy") if toy else s.name
    return text.format(name=name, d=s.head_dim, base=base_text(s.base), L=length_text(s.train_length),
                       turning=s.turning, pairs=s.pairs, unseen=s.unseen_share, scale=s.scale)


def spectrum_caption(result: Result) -> str:
    toy, *real = result.spectra
    parts = [_("The share of pairs that turn fully within L, and the share of angles at {scale}·L never seen in "
               "training: {toy_turn:.0%} and {toy_unseen:.0%} for this toy.").format(
        scale=result.scale, toy_turn=toy.turning_share, toy_unseen=toy.unseen_share)]
    parts += [_("{name}: {turn:.0%} and {unseen:.0%}.").format(name=s.name, turn=s.turning_share,
                                                               unseen=s.unseen_share) for s in real]
    return sentences(parts)


def seeds_caption(result: Result) -> str:
    n = result.seed_count
    parts = [_("Mean ± standard deviation over {n} seeds ({seeds}) of runs with these settings.").format(
        n=n, seeds=", ".join(str(s) for s in DEFAULT_SEEDS[:n]) if n else "–")]
    if n < len(DEFAULT_SEEDS) or len({e for e, _m, _t in result.rows}) < len(ENCODINGS):
        parts.append(_("Not every seed and encoding is stored yet: the page can train the rest, or run "
                       "python -m pe_core.train --prepare."))
    return sentences(parts)


def cost_caption(result: Result) -> str:
    """What the table's cost columns measure, on which device, and which runs had none measured."""
    costs = [c for c in result.costs.values() if c.seeds]
    parts = [seeds_caption(result)]
    if costs:
        devices = sorted({d for c in costs for d in c.devices})
        parts.append(_("Training cost per encoding: characters per second of an optimiser step (the median step of "
                       "each run, the same batches of the same length for every encoding), measured on {devices}.")
                     .format(devices=", ".join(shown_device_label(d) for d in devices)))
        if any(c.measure != MEMORY_PEAK for c in costs):
            parts.append(_("Memory marked * is counted, not sampled: weights, gradients and AdamW's two moments, "
                           "the weights and gradients of the model's copy that computes the second half of each "
                           "batch, plus every tensor autograd keeps for the backward pass of one step. On CUDA it "
                           "is the measured peak (torch.cuda.max_memory_allocated)."))
    unmeasured = sum(len(c.unmeasured) for c in result.costs.values())
    if unmeasured:
        parts.append(_("{count} run(s) were stored before costs were measured; their cost shows as –.").format(
            count=unmeasured))
    return sentences(parts)


# ---- figures ---------------------------------------------------------------------------------------


def _spectrum(result: Result, style) -> object:
    lines = [draw.SpectrumLine(spectrum_name(s, toy=i == 0), s.turns) for i, s in enumerate(result.spectra)]
    return draw.spectrum_figure(lines, result.scale)


def _position(result: Result, style) -> object:
    model = result.config.model_config()
    longest = result.config.longest
    wavelengths = position_wavelengths(model)
    if wavelengths is not None:
        kind = {"rope": "rope", "sinusoidal": "sinusoidal", "xl": "xl"}[model.position]
        title = {
            "rope": _("Wavelength of each RoPE pair (head size {d}, base {base})"),
            "sinusoidal": _("Wavelength of each sin/cos pair (width {d}, base {base})"),
            "xl": _("Wavelength of each sin/cos pair of Transformer-XL's R (width {d}, base {base})"),
        }[kind].format(d=model.head_dim if kind == "rope" else model.d_model, base=base_text(model.rope_base))
        axis = _("RoPE pair i (fast → slow)") if kind == "rope" else _("sin/cos pair i (fast → slow)")
        return draw.pair_wavelength_figure(wavelengths, model.train_length, longest, title=title, xaxis_title=axis)
    if model.position == "alibi":
        return draw.alibi_bias_figure(alibi_slopes(model.n_head), model.train_length, longest)
    if model.position == "t5":
        return draw.t5_bucket_figure(t5_buckets_by_distance(model, longest), model.train_length)
    if model.position == "deberta":
        return draw.t5_bucket_figure(
            deberta_rows_by_distance(model, longest), model.train_length,
            title=_("DeBERTa's relative embedding row δ for each distance (k = {k}, shared by all layers)").format(
                k=model.span),
            yaxis_title=_("row δ of the relative embeddings"), name=_("row δ"))
    if model.position == "learned":
        return draw.no_position_figure(_("A learned table: one trained vector per position up to L; rows past L "
                                         "never get a gradient and keep their random start."))
    return draw.no_position_figure(_("No position encoding: only the causal mask (how many tokens a query sees) "
                                     "tells the model where it is."))


def _loss(result: Result, style) -> object:
    record = result.record
    curve = record.loss_curve
    return draw.loss_curve_figure([p.step for p in curve], [p.loss for p in curve],
                                  [(p.step, p.validation_loss) for p in curve if p.validation_loss is not None],
                                  record.unigram_baseline, total_steps=record.config.steps)


def _loss_caption(result: Result) -> str:
    record = result.record
    return _("Trained on {device} in {seconds:.0f} s ({created}); {parameters:,} parameters. Final validation loss "
             "{validation:.3f} nats per character, against {baseline:.3f} from letter frequencies alone.").format(
        device=shown_device_label(record.device), seconds=record.training_seconds,
        created=created_text(record.created_at),
        parameters=record.parameters, validation=record.final_validation_loss or float("nan"),
        baseline=record.unigram_baseline)


def _accuracy_cell(stat: SeedStat | None) -> str:
    return "–" if stat is None else f"{100 * stat.mean:.1f} ± {100 * stat.sd:.1f}"


def _length_header(c: ExperimentConfig) -> list[str]:
    return [_("{length} (trained)").format(length=length_text(n)) if n == c.train_length
            else f"{length_text(n)} ({n // c.train_length}×)" for n in c.lengths]


def _seed_count(result: Result, encoding: str, method: str, tuned: bool) -> int:
    return max((s.n for s in result.stats if (s.encoding, s.method, s.fine_tuned) == (encoding, method, tuned)),
               default=0)


def _methods_row_name(method: str, tuned: bool, steps: int) -> str:
    """A row of the RoPE methods: the method, or the method and its fine-tune."""
    if tuned:
        return _("{method}, {steps} fine-tuning steps").format(method=_method_title(method), steps=steps)
    return _method_title(method)


def encoding_rows(result: Result) -> list[tuple[str, str]]:
    """(encoding, method) of the encodings table: each encoding once, RoPE as trained (direct extrapolation)."""
    rows = {}
    for encoding, method, tuned in result.rows:
        if not tuned and encoding not in rows and (method in (AS_TRAINED, "direct")):
            rows[encoding] = method
    return list(rows.items())


def _table(result: Result, style) -> object:
    c = result.config
    header = [_("Encoding"), _("seeds"), *_length_header(c), _("train tokens/s"), _("memory, MiB")]
    rows = []
    for encoding, method in encoding_rows(result):
        name = (_("RoPE, direct extrapolation") if ENCODINGS[encoding].scalable else _encoding_title(encoding))
        rows.append([name, str(_seed_count(result, encoding, method, False)),
                     *(_accuracy_cell(result.stat(encoding, method, n)) for n in c.lengths),
                     *cost_cells(result.costs.get(encoding))])
    return draw.accuracy_table_figure(header, rows, widths=[2.3, 0.8] + [1.3] * len(c.lengths) + [1.6, 1.2])


def _methods_table(result: Result, style) -> object:
    c = result.config
    header = [_("RoPE with"), _("seeds"), *_length_header(c)]
    rows = []
    for encoding, method, tuned in result.rows:
        if not ENCODINGS[encoding].scalable:
            continue
        rows.append([_methods_row_name(method, tuned, c.fine_tune_steps), str(_seed_count(result, encoding, method, tuned)),
                     *(_accuracy_cell(result.stat(encoding, method, n, tuned)) for n in c.lengths)])
    return draw.accuracy_table_figure(header, rows, title=_(draw.METHODS_TABLE_TITLE))


def _seed_chart(result: Result, rows: list[tuple[str, str, bool]], title: str, encodings: bool) -> object:
    """Mean ± sd at the longest length of ``rows`` (encoding, method, fine-tuned), with the mean at L."""
    c = result.config
    drawn = []
    for encoding, method, tuned in rows:
        stat = result.stat(encoding, method, c.longest, tuned)
        if stat is None:
            continue
        at_l = result.stat(encoding, method, c.train_length, False)
        if encodings:
            key, kind, logn = encoding, "encoding", False
            name = _("RoPE, direct extrapolation") if ENCODINGS[encoding].scalable else _encoding_title(encoding)
        else:
            (key, kind, logn), name = row_key(encoding, method), _methods_row_name(method, tuned, c.fine_tune_steps)
        drawn.append(draw.SeedRow(key, kind, name, stat.mean, stat.sd, stat.n, None if at_l is None else at_l.mean,
                                  tuned, logn))
    return draw.seed_chart_figure(
        drawn, title=title,
        longest_label=_("at L′ = {length} ({scale}× L): mean ± sd").format(length=length_text(c.longest),
                                                                      scale=max(c.multiples)),
        train_label=_("at L = {length}: mean").format(length=length_text(c.train_length)))


def _seeds(result: Result, style) -> object:
    rows = [(encoding, method, False) for encoding, method in encoding_rows(result)]
    return _seed_chart(result, rows, _(draw.SEEDS_TITLE), encodings=True)


def _methods_seeds(result: Result, style) -> object:
    rows = [row for row in result.rows if ENCODINGS[row[0]].scalable]
    return _seed_chart(result, rows, _(draw.METHODS_SEEDS_TITLE), encodings=False)


def _per_length(result: Result, style) -> object:
    c = result.config
    curves = []
    for encoding, method, tuned in result.rows:
        if tuned:
            continue
        stats = [result.stat(encoding, method, n) for n in c.lengths]
        if any(s is None for s in stats):
            continue
        key, kind, logn = row_key(encoding, method)
        curves.append(draw.Keyed(key, kind, row_name(encoding, method, False, 0), [s.mean for s in stats],
                                 [s.sd for s in stats], logn))
    return draw.per_length_figure(list(c.multiples), curves, seeds=result.seed_count)


def su_length(result: Result) -> int:
    """Where the toy is compared with Su's 4,096 = 8 × 512: at 8·L if measured, else the longest length."""
    c = result.config
    multiple = SU_TEST_LENGTH // SU_TRAIN_LENGTH
    return c.train_length * multiple if multiple in c.multiples else c.longest


def _su(result: Result, style) -> object:
    c = result.config
    at = su_length(result)
    header = [_("Method"), _("Su's row"), _("Su: {length} (trained)").format(length=length_text(SU_TRAIN_LENGTH)),
              _("Su: {length} ({scale}×)").format(length=length_text(SU_TEST_LENGTH),
                                                 scale=SU_TEST_LENGTH // SU_TRAIN_LENGTH),
              _("toy: {length} (trained)").format(length=length_text(c.train_length)),
              _("toy: {length} ({scale}×)").format(length=length_text(at), scale=at // c.train_length)]
    rows = []
    for row in SU_TABLE:
        toy = [_accuracy_cell(result.stat("rope", row.method, n)) if row.method in c.methods else "–"
               for n in (c.train_length, at)]
        rows.append([_method_title(row.method), row.label + (" *" if row.trained_logn else ""),
                     f"{row.at_train:.2f}", f"{row.at_test:.2f}", *toy])
    return draw.accuracy_table_figure(header, rows, title=_(draw.SU_TITLE), widths=[2.6, 1.9, 1.1, 1.1, 1.2, 1.2])


def _su_caption(result: Result) -> str:
    trained = next(r.at_train for r in SU_TABLE if r.trained_logn)
    plain = next(r.at_train for r in SU_TABLE if not r.trained_logn)
    return _("Su's numbers as published (next-token accuracy in %, a 100 M-parameter model trained at {train} "
             "tokens and tested at {test} on text that does not repeat, no fine-tuning); the toy's are mean ± sd "
             "over its seeds. Su's rows marked * come from a model pre-trained with log n scaling (their accuracy at "
             "{train} is {trained:.2f} rather than {plain:.2f}); the toy multiplies its logits by "
             "max(1, ln n / ln L) only at inference, as Su's ReRoPE + log n row does.").format(
        train=f"{SU_TRAIN_LENGTH:,}", test=f"{SU_TEST_LENGTH:,}", trained=trained, plain=plain)


INSIDE_WINDOWS = 16  # validation windows the attention figures average over
INSIDE_MAP_CELLS = 64  # an attention map is pooled to at most this many cells a side
INSIDE_MAP_METHODS = ("direct", "yarn", "direct_logn")  # the maps' methods at the longest length
INSIDE_HEADS = 4  # at most this many heads' maps: those whose attention spreads most past L
INSIDE_SLIDE_HEADS = 1  # on a 16:9 slide: one row of maps, large enough to read


def run_model(config: ExperimentConfig):
    """The trained model of a stored run: its weights in the store, or the shipped default run's; else None."""
    from pe_core.train.shipped import shipped_model

    data = service().store.weights(config.hash)
    return model_from_bytes(config, data) if data is not None else shipped_model(config)


def _inside_note(result: Result, title: str) -> object:
    if not result.config.scalable:
        text = _("Attention per scaling method is read from RoPE runs; this run uses {encoding}.").format(
            encoding=_encoding_title(result.config.encoding))
    else:
        text = _("This run's weights were not kept (it was trained before runs kept them, or from the command "
                 "line), so its attention cannot be drawn.")
    figure = draw.no_position_figure(text)
    figure.update_layout(title=dict(text=title))
    return figure


def head_name(layer: int, head: int) -> str:
    return _("layer {layer}, head {head}").format(layer=layer + 1, head=head + 1)


def _attention_maps(result: Result, style) -> object:
    if result.inside is None:
        return _inside_note(result, _(draw.ATTENTION_MAPS_TITLE))
    at_train, at_longest = result.inside
    c = result.config
    heads = _inside_heads(result, INSIDE_SLIDE_HEADS if style.slide else INSIDE_HEADS)
    panels = []
    for flat in heads:
        layer, head = divmod(flat, c.n_head)
        row = head_name(layer, head)
        panels.append(draw.AttentionPanel(row, _("as trained, L = {length}").format(length=c.train_length), "direct",
                                          pooled(at_train.maps[0, layer, head], INSIDE_MAP_CELLS), c.train_length))
        for method in INSIDE_MAP_METHODS:
            index = at_longest.methods.index(method)
            panels.append(draw.AttentionPanel(
                row, _("{method}, {scale}× L").format(method=_method_title(method), scale=max(c.multiples)),
                INFERENCE_METHODS[method].style, pooled(at_longest.maps[index, layer, head], INSIDE_MAP_CELLS),
                c.longest))
    return draw.attention_maps_figure(panels, c.train_length)


def _inside_heads(result: Result, count: int) -> list[int]:
    """The ``count`` heads (flat layer × head indices, in order) whose attention spreads most past L with direct
    extrapolation: the entropy's rise from the query at L to the last."""
    _at_train, at_longest = result.inside
    entropies = at_longest.entropies[at_longest.methods.index("direct")]  # [layers, heads, T]
    rise = (entropies[..., -1] - entropies[..., result.config.train_length - 1]).flatten()
    return sorted(rise.argsort(descending=True)[:count].tolist())


def recent_shares(result: Result) -> dict[str, float]:
    """Per method drawn at the longest length: the share of a query's attention on its last L keys (the span
    training showed it), averaged over the queries past L and the heads the maps show."""
    _at_train, at_longest = result.inside
    c = result.config
    length, train = at_longest.length, c.train_length
    queries = torch.arange(train, length)
    keys = torch.arange(length)
    recent = ((keys[None, :] <= queries[:, None]) & (keys[None, :] > queries[:, None] - train)).to(torch.float64)
    shares = {}
    for method in INSIDE_MAP_METHODS:
        index = at_longest.methods.index(method)
        per_head = [(at_longest.maps[index, flat // c.n_head, flat % c.n_head][train:].to(torch.float64) * recent)
                    .sum(-1).mean() for flat in _inside_heads(result, INSIDE_HEADS)]
        shares[method] = float(torch.stack(per_head).mean())
    return shares


def _attention_maps_caption(result: Result) -> str:
    if result.inside is None:
        return ""
    c = result.config
    shown = min(INSIDE_HEADS, c.n_layer * c.n_head)
    shares = recent_shares(result)
    notice = _("**What to notice:** below the dotted line (queries past L), how much of each row's colour stays "
               "near the diagonal, on the last L keys: {shares} of a query's attention on the shown heads.").format(
        shares=", ".join(_("{share:.0%} with {method}").format(share=share, method=_method_title(method))
                         for method, share in shares.items()))
    return sentences([notice, _(
        "Each map is one head's attention averaged over {windows} windows of held-out text: a row is a query, "
             "a column a key, the colour the share of the query's attention on the key (log scale; blank: the "
             "future, which a causal model cannot see). The dotted lines mark L. Shown: {shown} of the model's "
             "{heads} heads, those whose attention spreads most past L with direct extrapolation.").format(
        windows=INSIDE_WINDOWS, shown=shown, heads=c.n_layer * c.n_head)])


def _entropy_curves(result: Result) -> list[tuple[str, torch.Tensor]]:
    """(method, mean entropy at n = 1 … longest keys) per method: what the entropy figure draws, binned."""
    _at_train, at_longest = result.inside
    return [(method, at_longest.entropies[index].mean((0, 1))) for index, method in enumerate(at_longest.methods)]


def _attention_entropy(result: Result, style) -> object:
    if result.inside is None:
        return _inside_note(result, _(draw.ATTENTION_ENTROPY_TITLE))
    curves = []
    for method, values in _entropy_curves(result):
        key, kind, logn = row_key("rope", method)
        curves.append(draw.Keyed(key, kind, _method_title(method), values, logn=logn))
    return draw.attention_entropy_figure(curves, result.config.train_length)


def _keys_text(low: int, high: int) -> str:
    return f"n = {low}" if low == high else f"n = {low}–{high}"


def _attention_entropy_caption(result: Result) -> str:
    """The numbers of the drawn points: each curve's last point (the mean over its last bin of n) and direct
    extrapolation's point whose bin holds n = L, read with the figure's own binning."""
    if result.inside is None:
        return ""
    c = result.config
    drawn = {method: draw.log_binned(values)[1] for method, values in _entropy_curves(result)}
    bins = draw.log_bins(c.longest)
    at_l = next(index for index, (low, high) in enumerate(bins) if low <= c.train_length <= high)
    even = draw.log_binned(torch.arange(1, c.longest + 1, dtype=torch.float64).log())[1][-1]
    return _("Mean over the model's {heads} heads and {windows} windows; each point averages the queries that see "
             "the n of one bin. At the curves' last point ({last}): direct extrapolation {direct:.2f} nats against "
             "{at_l:.2f} at the point that holds L ({at_l_keys}); with log n {logn:.2f}; YaRN {yarn:.2f}; Position "
             "Interpolation {pi:.2f}; spread evenly, {even:.2f}.").format(
        heads=c.n_layer * c.n_head, windows=INSIDE_WINDOWS, last=_keys_text(*bins[-1]), direct=drawn["direct"][-1],
        at_l=drawn["direct"][at_l], at_l_keys=_keys_text(*bins[at_l]), logn=drawn["direct_logn"][-1],
        yarn=drawn["yarn"][-1], pi=drawn["pi"][-1], even=even)


def shown_length(result: Result) -> int:
    c = result.config
    wanted = c.train_length * result.settings.shown
    return wanted if wanted in c.lengths else c.longest


def _per_position(result: Result, style) -> object:
    record, c = result.record, result.config
    length = shown_length(result)
    curves = []
    for method in record.methods:
        key, kind, logn = row_key(c.encoding, method)
        curves.append(draw.Keyed(key, kind, row_name(c.encoding, method, False, 0),
                                 record.result(method, length).loss, logn=logn))
    return draw.per_position_figure(curves, c.train_length, length)


def _fine_tune(result: Result, style) -> object:
    record, c = result.record, result.config
    curves = []
    for tune in record.fine_tunes:
        title = _method_title(tune.method)
        curves.append(draw.Keyed(tune.method, "method", _("{method}, no fine-tuning").format(method=title),
                                 tune.before.loss, spread=()))
        curves.append(draw.Keyed(tune.method, "method", _("{method}, after fine-tuning").format(method=title),
                                 tune.after.loss))
    return draw.fine_tune_figure(curves, c.train_length, c.longest, c.fine_tune_steps)


def _fine_tune_caption(result: Result) -> str:
    record = result.record
    if not record.fine_tunes:
        return _("No method was fine-tuned: choose some under “Fine-tune at the longest length” (RoPE only).")
    return sentences(_("{method}: accuracy at L′ {before:.1%} → {after:.1%}.").format(
        method=_method_title(f.method), before=f.before.mean_accuracy, after=f.after.mean_accuracy)
        for f in record.fine_tunes)


def _tune_curve(result: Result, style) -> object:
    c = result.config
    curves = []
    for method, points in result.curves.items():
        key, kind, logn = row_key(c.encoding if c.scalable else "rope", method)
        curves.append(draw.StepCurve(key, kind, _method_title(method), [p.step for p in points],
                                     [p.mean for p in points], [p.sd for p in points], logn))
    target = result.stat("rope", "direct", c.train_length) if "direct" in c.methods else None
    seeds = max((p.n for points in result.curves.values() for p in points), default=0)
    return draw.fine_tune_curve_figure(
        curves, c.fine_tune_steps, longest_label=length_text(c.longest), scale=max(c.multiples), seeds=seeds,
        target=None if target is None else target.mean,
        target_label=_("RoPE at L = {length}, not fine-tuned").format(length=length_text(c.train_length)))


def _tune_curve_caption(result: Result) -> str:
    curves = result.curves
    if not curves:
        return _("No method was fine-tuned: choose some under “Fine-tune at the longest length” (RoPE only).")
    parts = []
    for method, points in curves.items():
        first, last = points[0], points[-1]
        parts.append(_("{method}: {before:.1%} → {after:.1%} after {steps} steps.").format(
            method=_method_title(method), before=first.mean, after=last.mean, steps=last.step))
    lead = _("Accuracy at the longest length, mean over {n} seeds, measured along one fine-tune per seed (the "
             "learning rate warms up, then decays over the whole fine-tune).").format(
        n=max(p.n for points in curves.values() for p in points))
    return sentences([lead, *parts])


# ---- the retrieval experiment (its shipped runs: the same figures whatever this page's settings) -------------


def _no_retrieval(title: str) -> object:
    figure = draw.no_position_figure(_("The retrieval experiment's results are not installed: make them with "
                                       "{command}.").format(command=REGENERATE_RETRIEVAL))
    figure.update_layout(title=dict(text=title))
    return figure


def needle_rows() -> list[needle.Row]:
    """The heatmaps' rows: RoPE's methods as trained, then its fine-tunes (DroPE among them), then the encodings."""
    rows = needle.shipped_rows()
    untuned = [needle.find(rows, "rope", m) for m in needle.HEATMAP_METHODS]
    tuned = [r for r in rows if r.encoding == "rope" and r.tuned]
    others = [r for r in rows if r.encoding != "rope"]
    return [r for r in (*untuned, *tuned, *others) if r is not None]


def _needle(result: Result, style) -> object:
    rows = needle_rows()
    if not rows:
        return _no_retrieval(_(draw.NEEDLE_TITLE))
    panels = [draw.NeedlePanel(needle.row_title(r), r.depths, r.lengths, r.grid) for r in rows]
    columns = 3 if style.slide else 4
    return draw.needle_figure(panels, rows[0].lengths[0], columns=columns)


def _needle_caption(result: Result) -> str:
    rows = needle.shipped_rows()
    if not rows:
        return ""
    first = rows[0]
    return sentences([
        _("Exact retrieval of a {digits}-digit passkey planted at a depth of the context and asked for at its end, "
          "mean over {n} seeds ({trials} probes per cell and seed; a guess scores {chance:.2%}).").format(
            digits=PASSKEY_DIGITS, n=first.seeds, trials=TRIALS_PER_DEPTH, chance=chance()),
        _("The model was trained on docstrings with random letters written twice and a passkey and its repeat "
          "planted in {share:.0%} of the windows, a mix meant to teach it to copy (a model trained on docstrings "
          "alone retrieves nothing, even at L).").format(
            share=COPY_FRACTION)])


def trap_points() -> list[draw.TrapPoint]:
    points = []
    for r in needle.shipped_rows():
        key, kind = (r.method if r.method != "drope" else "drope", "method") if r.encoding == "rope" else \
            (r.encoding, "encoding")
        if r.encoding == "rope":
            key = INFERENCE_METHODS[r.method].style if r.method in INFERENCE_METHODS else r.method
        points.append(draw.TrapPoint(key, kind, needle.row_title(r), r.accuracy, r.accuracy_sd, r.retrieval[-1],
                                     r.retrieval_sd[-1], open_marker=r.tuned or r.method.endswith("_logn")))
    return points


def _trap(result: Result, style) -> object:
    rows = needle.shipped_rows()
    if not rows:
        return _no_retrieval(_(draw.TRAP_TITLE))
    numbers = needle.trap_numbers(rows)
    return draw.trap_figure(trap_points(), chance=chance(), highlight=numbers.get("method") or numbers.get("best"))


def trap_text() -> str:
    """The two sentences of what the trap teaches, with the shipped numbers (empty without them)."""
    numbers = needle.trap_numbers(needle.shipped_rows())
    if not numbers:
        return ""
    if numbers["method"] is not None:
        return sentences([
            _("Next-character accuracy is a local score: {method} still predicts {accuracy:.1%} of characters at "
              "{scale}× L, yet it finds the planted passkey {long:.0%} of the time there, against {short:.0%} at "
              "L.").format(method=numbers["method"], accuracy=numbers["trap_accuracy"], scale=numbers["scale"],
                           long=numbers["trap_long"], short=numbers["trap_short"]),
            _("A method that keeps its perplexity past L has not shown it can use the far context: retrieval has to "
              "be measured on its own.")])
    return sentences([
        _("Next-character accuracy is a local score: {best} still predicts {accuracy:.1%} of characters at {scale}× L "
          "({at_train:.1%} at L), yet no method finds the planted passkey, not even at L (the best: {short:.0%} of "
          "probes; a guess: {chance:.2%}).").format(best=numbers["best"], accuracy=numbers["accuracy"],
                                                   scale=numbers["scale"], at_train=numbers["at_train"],
                                                   short=numbers["best_short"], chance=numbers["chance"]),
        _("High accuracy far out is no evidence that a model can fetch a fact from far away: this tiny model, trained "
          "with the copying mix, never learned to copy, and only a retrieval test shows it.")])


FIGURES = figure_registry(
    FigureSpec("spectrum", draw.SPECTRUM_TITLE, _spectrum, groups=(EXPERIMENT,), caption=spectrum_caption),
    FigureSpec("position", draw.POSITION_TITLE, _position, groups=(EXPERIMENT,)),
    FigureSpec("loss", draw.LOSS_TITLE, _loss, groups=(EXPERIMENT,), caption=_loss_caption),
    FigureSpec("seeds", draw.SEEDS_TITLE, _seeds, groups=(EXPERIMENT,), caption=seeds_caption),
    FigureSpec("table", draw.TABLE_TITLE, _table, groups=(EXPERIMENT,), caption=cost_caption),
    FigureSpec("methods-seeds", draw.METHODS_SEEDS_TITLE, _methods_seeds, groups=(EXPERIMENT,),
               caption=seeds_caption),
    FigureSpec("methods-table", draw.METHODS_TABLE_TITLE, _methods_table, groups=(EXPERIMENT,),
               caption=seeds_caption),
    FigureSpec("per-length", draw.PER_LENGTH_TITLE, _per_length, groups=(EXPERIMENT,)),
    FigureSpec("su", draw.SU_TITLE, _su, groups=(EXPERIMENT,), caption=_su_caption),
    FigureSpec("per-position", draw.PER_POSITION_TITLE, _per_position, groups=(EXPERIMENT, VIEW)),
    FigureSpec("fine-tune", draw.FINE_TUNE_TITLE, _fine_tune, groups=(EXPERIMENT,), caption=_fine_tune_caption),
    FigureSpec("fine-tune-curve", draw.TUNE_CURVE_TITLE, _tune_curve, groups=(EXPERIMENT,),
               caption=_tune_curve_caption),
    FigureSpec("attention-maps", draw.ATTENTION_MAPS_TITLE, _attention_maps, groups=(EXPERIMENT,),
               caption=_attention_maps_caption),
    FigureSpec("attention-entropy", draw.ATTENTION_ENTROPY_TITLE, _attention_entropy, groups=(EXPERIMENT,),
               caption=_attention_entropy_caption),
    FigureSpec("needle", draw.NEEDLE_TITLE, _needle, caption=_needle_caption),
    FigureSpec("trap", draw.TRAP_TITLE, _trap, caption=lambda result: trap_text()),
)
CHEAP_FIGURES = ("spectrum", "position", "needle", "trap")  # drawn without a run (the last two: shipped runs)


# ---- what the page shows while a run is in flight, and the browse view ------------------------------


def live_loss_figure(progress, config: ExperimentConfig) -> object:
    """The loss curve of a run in flight (or stopped), from its ``Progress`` records."""
    history = list(progress)
    return draw.loss_curve_figure([p.step for p in history], [p.loss for p in history],
                                  [(p.step, p.validation_loss) for p in history if p.validation_loss is not None],
                                  total_steps=config.steps,
                                  title=_("Training loss so far ({encoding})").format(
                                      encoding=_encoding_title(config.encoding)))


def created_text(created_at: str) -> str:
    """When a run was stored, to the minute (a record keeps an ISO timestamp)."""
    return created_at[:16].replace("T", " ")


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return _("{seconds:.0f} s").format(seconds=max(1, seconds))
    return _("{minutes:.0f} min").format(minutes=seconds / 60)


def status_text(status, batch: tuple[int, int, int] | None = None) -> str:
    """What runs now, in words: encoding, phase, method, step i of N (``batch``: the first and last of the runs
    training together now, and how many runs the job has)."""
    from pe_core.train import EVALUATING, FINE_TUNING

    encoding = _encoding_title(status.encoding)
    if status.phase == EVALUATING:
        text = _("{encoding}: evaluating {method} ({step} of {total} lengths × methods)").format(
            encoding=encoding, method=_method_title(status.method), step=status.step, total=status.total)
    elif status.phase == FINE_TUNING:
        text = _("{encoding}: fine-tuning {method}, step {step} of {total}").format(
            encoding=encoding, method=_method_title(status.method), step=status.step, total=status.total)
    else:
        text = _("{encoding}: training, step {step} of {total}").format(encoding=encoding, step=status.step,
                                                                       total=status.total)
    if batch is not None:
        first, last, count = batch
        text = (_("Run {index} of {count} · {text}").format(index=first, count=count, text=text) if first == last
                else _("Runs {first}–{last} of {count}, together · {text}").format(first=first, last=last, count=count,
                                                                                 text=text))
    return text


def missing_runs(settings: Settings) -> list[ExperimentConfig]:
    """The runs of this experiment's seed table not stored yet (every encoding × the default seeds)."""
    from pe_core.train import Grid

    config = experiment_config(settings.applicable())
    grid = Grid(base=config.replace(seed=DEFAULT_SEEDS[0]), seeds=DEFAULT_SEEDS)
    store = service().store
    return [c for c in grid.configs() if c.hash not in store]


def store_text(settings: Settings | None = None) -> str:
    """What the store holds of an experiment's seed table (the default one: the runs that ship with the app) and
    what training the rest costs, both read from the store (its runs' measured times on their devices)."""
    from pe_core.train import Grid
    from pe_core.train.service import seconds_like, timed_runs
    from pe_core.train.shipped import shipped

    settings = settings or Settings()
    config = experiment_config(settings.applicable())
    total = len(Grid(base=config.replace(seed=DEFAULT_SEEDS[0]), seeds=DEFAULT_SEEDS).configs())
    missing = missing_runs(settings)
    texts = [ngettext("{stored} of this experiment's {total} run (every encoding × {seeds} seeds) is stored.",
                      "{stored} of this experiment's {total} runs (every encoding × {seeds} seeds) are stored.",
                      total).format(stored=total - len(missing), total=total, seeds=len(DEFAULT_SEEDS))]
    ships = shipped()
    if ships is not None and config.replace(seed=DEFAULT_SEEDS[0]).family == ships.grid.base.family:
        texts.append(_("{count} of them shipped with the app (trained on {device}).").format(
            count=len(ships.records), device=shown_device_label(ships.training_device)))
    own_runs, shipped_runs = timed_runs(service().store)
    own_s, shipped_s = seconds_like(own_runs, config), seconds_like(shipped_runs, config)
    run_s = own_s if own_s is not None else shipped_s
    if run_s is not None:
        if own_s is not None:
            texts.append(_("A new run like this one takes about {time}, going by the runs this server stored.").format(
                time=duration_text(run_s)))
        else:
            texts.append(_("Shipped runs like this one took about {time} each on {device}; this server's own "
                           "runs will tell its time.").format(time=duration_text(run_s),
                                                             device=shown_device_label(ships.training_device)))
        if missing and own_s is not None:
            by_encoding: dict[str, list[ExperimentConfig]] = {}
            for run in missing:
                by_encoding.setdefault(run.encoding, []).append(run)
            # an encoding's runs cost what its stored runs cost (a RoPE run also evaluates and fine-tunes its methods)
            all_s = sum(len(runs) * (seconds_like(own_runs, runs[0]) or own_s)
                        for runs in by_encoding.values())
            texts.append(ngettext("The {count} missing run takes about {all}.", "The {count} missing runs take about "
                                  "{all}: the seeds of an encoding train together as one batch.", len(missing)).format(
                count=len(missing), all=duration_text(all_s)))
    return sentences(texts)


def run_estimate(config: ExperimentConfig) -> tuple[float | None, str | None]:
    """(seconds, device) a run like ``config`` takes: the median of this server's own stored runs like it (device
    None: measured here), else of the shipped runs like it (device: where those trained, as a record stores it);
    (None, None) when nothing like it is known. The training service's estimate for a job is the same number
    (``TrainingService.estimate_s``): the page's time before the click and the progress line's agree."""
    from pe_core.train.service import seconds_like, timed_runs
    from pe_core.train.shipped import shipped

    own_runs, shipped_runs = timed_runs(service().store)
    own_s = seconds_like(own_runs, config)
    if own_s is not None:
        return own_s, None
    shipped_s = seconds_like(shipped_runs, config)
    ships = shipped()
    if shipped_s is None or ships is None:
        return None, None
    return shipped_s, ships.training_device


def time_text(config: ExperimentConfig | None, job: Any = None) -> str:
    """How long a run like ``config`` takes, one sentence from one estimate (``run_estimate``): before the click
    (``job`` None) the estimate and where it was measured; while ``job`` trains, the time left, from the same
    estimate until the run has measured its own speed (after 3 % of it), then from that speed (``config`` None: a
    job of many runs, whose estimate is the sum of theirs)."""
    seconds, device = run_estimate(config) if config is not None else (None, None)
    if job is None:
        if seconds is None:
            return _("No run like it has been timed yet: the progress bar will tell its time.")
        if device is None:
            return _("Runs like this one took about {time} here.").format(time=duration_text(seconds))
        return _("Shipped runs like this one took about {time} each on {device}; this server has timed none yet, "
                 "so the progress bar will tell its own time.").format(time=duration_text(seconds),
                                                                      device=shown_device_label(device))
    left = job.remaining_s()
    if left is None:
        return ""
    if job.fraction >= 0.03:
        return _("about {time} left at the speed so far").format(time=duration_text(left))
    if config is None:
        return _("about {time} left").format(time=duration_text(left))
    if device is None:
        return _("about {time} left, going by this server's runs").format(time=duration_text(left))
    return _("about {time} left, going by runs on {device}").format(time=duration_text(left),
                                                                  device=shown_device_label(device))


def what_one_run_trains(config: ExperimentConfig) -> str:
    """What "Train this experiment" trains: one run (the encoding, seed and steps the controls set), not the
    experiment's seed table."""
    return _("This button trains one run: {encoding}, seed {seed}, {steps} steps. The rest of the experiment's "
             "runs (every encoding × every seed) train from “Train the missing seeds and encodings” below.").format(encoding=_encoding_title(config.encoding),
                                                               seed=config.seed, steps=f"{config.steps:,}")


def stored_runs(limit: int = 500) -> list[dict]:
    """The browse view's rows: one per stored run, newest first."""
    rows = []
    for run in service().store.runs(limit):
        config = run.config
        rows.append({
            "hash": run.hash, "encoding": _encoding_title(run.encoding), "seed": run.seed,
            "L": config.get("train_length"), "base": config.get("rope_base") if run.encoding in USES_BASE else None,
            "size": f"{config.get('d_model')}, {config.get('n_head')}×{config.get('head_size')}, "
                    f"{config.get('n_layer')}",
            "steps": config.get("steps"), "device": shown_device_label(run.device),
            "seconds": round(run.total_seconds, 1),
            "created": created_text(run.created_at), "code": run.code_version,
        })
    return rows


# The browse view's column headers (the rows keep these keys; ``stored_table`` shows the headers)
STORED_COLUMNS = {"hash": N_("hash"), "encoding": N_("encoding"), "seed": N_("seed"), "L": "L", "base": N_("base"),
                  "size": N_("width, heads × d, layers"), "steps": N_("steps"), "device": N_("device"),
                  "seconds": N_("seconds"), "created": N_("created"), "code": N_("code version")}


def stored_table(rows: list[dict]) -> list[dict]:
    """``stored_runs`` rows as the browse view shows them: the same values under translated headers."""
    return [{_(STORED_COLUMNS[key]): value for key, value in row.items()} for row in rows]


# The training queue's column headers (``queue_rows`` keeps these keys; ``queue_table`` shows the headers)
QUEUE_COLUMNS = {"position": N_("in line"), "experiment": N_("experiment"), "requests": N_("requests"),
                 "state": N_("state"), "trainer": N_("trainer"), "device": N_("device"), "done": N_("done"),
                 "time": N_("time left")}
QUEUE_STATES = {"queued": N_("waiting"), "running": N_("training")}


def queue_rows() -> list[dict]:
    """The store's queue as every app instance sees it: one row per run asked for and not stored yet."""
    rows = []
    for entry in service().queue_view():
        job, config = entry.job, entry.job.config
        seconds = entry.wait_s if job.state == "queued" else entry.remaining_s
        rows.append({
            "position": entry.position or None,
            "experiment": _("{encoding}, seed {seed}, L = {L}, {steps} steps").format(
                encoding=_encoding_title(config["encoding"]), seed=config["seed"], L=config["train_length"],
                steps=config["steps"]),
            "requests": job.requests, "state": _(QUEUE_STATES[job.state]),
            "trainer": job.worker or "", "device": shown_device_label(job.device) if job.device else "",
            "done": f"{job.fraction:.0%}",
            "time": "" if seconds is None else (_("starts in {time}") if job.state == "queued" else "{time}").format(
                time=duration_text(seconds)),
        })
    return rows


def queue_table(rows: list[dict]) -> list[dict]:
    return [{_(QUEUE_COLUMNS[key]): value for key, value in row.items()} for row in rows]


def workers_text() -> str:
    """Who trains the queue: the workers on the store, or this server itself."""
    workers = service().workers()
    if not workers:
        return _("No training worker is connected to the run store: this server trains the runs asked for here, "
                 "at most {limit} at a time.").format(limit=service().limiter.max_running)
    names = ", ".join(f"{w.name} ({shown_device_label(w.device)}, {w.trained})" for w in workers)
    return ngettext("{count} training worker drains the store's queue (name, device, runs stored): {names}.",
                    "{count} training workers drain the store's queue (name, device, runs stored): {names}.",
                    len(workers)).format(count=len(workers), names=names)


def followed_text(job) -> str | None:
    """A job a worker trains, as its page follows it in the store's queue (None for a job this server runs)."""
    row = getattr(job, "store_job", None)
    if row is None:
        return None
    if row.state == "queued":
        ahead = [e for e in service().queue_view() if e.job.id == row.id]
        text = _("Queued on the run store for a training worker: position {position}.").format(
            position=ahead[0].position if ahead else "?")
        if ahead and ahead[0].wait_s is not None:
            text = sentences([text, _("It should start in about {time}.").format(
                time=duration_text(ahead[0].wait_s))])
        return text
    where = _("trained by {trainer} on {device}").format(trainer=row.worker or "?",
                                                         device=shown_device_label(row.device or "?"))
    status = row.status
    if status:
        return status_text(Status(**status, fraction=row.fraction), getattr(job, "batch", None)) + " · " + where
    return where


def run_label(row: dict) -> str:
    return _("{encoding}, seed {seed}, L = {L}, {steps} steps ({short})").format(**row, short=row["hash"][:8])


def _record_curves(record: RunRecord) -> list:
    c = record.config
    curves = []
    for method in record.methods:
        key, kind, logn = row_key(c.encoding, method)
        curves.append(draw.Keyed(key, kind, row_name(c.encoding, method, False, 0),
                                 [record.result(method, n).mean_accuracy for n in c.lengths], logn=logn))
    return curves


def compare_figure(first_hash: str, second_hash: str) -> object:
    """Accuracy against length of two stored runs (the lengths both measured)."""
    store = service().store
    first, second = store.get(first_hash), store.get(second_hash)
    if first is None or second is None:
        raise ValueError(_("That run is no longer in the store."))
    shared = sorted(set(first.config.multiples) & set(second.config.multiples))

    def curves(record: RunRecord) -> list:
        keep = [record.config.multiples.index(m) for m in shared]
        return [curve._replace(values=[curve.values[i] for i in keep]) for curve in _record_curves(record)]

    return draw.compare_figure(shared, curves(first), curves(second), first_label=_("A"), second_label=_("B"))


@dataclasses.dataclass(frozen=True, eq=False)
class TrainingLesson(Lesson):
    """A lesson whose compute may train a model: the registry-wide tests and benchmarks skip it."""

    expensive: bool = True

    def config(self, settings: LessonSettings | None = None) -> ExperimentConfig:
        return experiment_config((settings or self.settings()).applicable())

    def stored(self, settings: LessonSettings | None = None) -> RunRecord | None:
        """The stored run of these settings, or None (a database lookup; never trains)."""
        return service().stored(self.config(settings))


LESSON = TrainingLesson(
    name="training",
    title=N_("Train a tiny transformer"),
    settings=Settings,
    compute=compute,
    figures=FIGURES,
    summary=N_("Train a small model at a short length and watch each encoding and RoPE scaling method at 8× "
               "that length, averaged over seeds."),
    parts=(
        Part("miniature", N_("The miniature"), N_("A faithful miniature"), ("spectrum",)),
        Part("encodings", N_("Encodings"), N_("Every encoding at the longest length"), ("seeds", "table")),
        Part("methods", N_("RoPE methods"), N_("Every RoPE method at the longest length"),
             ("methods-seeds", "methods-table", "per-length", "su")),
        Part("run", N_("This run"), N_("What this run learned, and where it goes wrong"),
             ("loss", "per-position", "fine-tune-curve", "fine-tune")),
        Part("position", N_("Position"), N_("What the model sees of position"), ("position",)),
        Part("inside", N_("Inside"), N_("Inside the model: where attention goes past L"),
             ("attention-maps", "attention-entropy")),
        Part("retrieval", N_("Retrieval"), N_("Good accuracy can hide a lost needle"), ("trap", "needle")),
    ),
)


def needs_run(part: Part) -> bool:
    """Whether ``part`` shows a run's results (a page without the stored run says so instead of training)."""
    return not set(part.figures) <= set(CHEAP_FIGURES)
