"""Train a tiny transformer live, then watch each encoding and RoPE scaling method extrapolate."""

from __future__ import annotations

import functools
import json
import math

import streamlit as st

from figures import training as figs
from pe_core.data import EVAL_CHARACTERS_PER_LENGTH, load_corpus
from pe_core.jobs import QUEUED, ServerBusy, server_limiter
from pe_core.methods import METHOD_TITLES, METHODS
from pe_core.model import (
    ENCODING_TITLES,
    POSITION_ENCODINGS,
    ROPE_PAIRINGS,
    ModelConfig,
    parameter_count,
    position_wavelengths,
)
from pe_core.train import (
    DEFAULT_METHODS,
    FINE_TUNE_METHODS,
    Experiment,
    TrainConfig,
    TrainingRun,
    batch_size_for,
    method_title,
    run_json,
    summary_table,
)
from ui import params, show_figure, user_errors

WIDTHS = (32, 64, 96, 128, 192, 256)
HEADS = (1, 2, 4, 8)
LAYERS = (1, 2, 3, 4)
TRAIN_LENGTHS = (16, 32, 64, 128, 256)
STEPS = (20, 50, 100, 200, 300, 400, 600, 800, 1000, 1500, 2000)
BASES = (100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0)
MULTIPLES = (1, 2, 4, 8, 16)
FINE_TUNE_STEPS = (10, 25, 50, 100, 200)
MAX_RUNS_KEPT = 8
POLL_SECONDS = 0.5

EXPERIMENT, JOB, RUNS, SEEN, EXPLAIN_BUSY = "tt_experiment", "tt_job", "tt_runs", "tt_seen_job", "tt_busy_message"


@st.cache_data(max_entries=1)
def training_characters() -> int:
    return load_corpus().train.numel()


st.title("Train a tiny transformer")
st.markdown(
    "The other pages explain why RoPE's scaling methods should work; this one tests them, shrunk to run in a "
    "minute on a laptop: a small causal transformer learns to predict the next character of Python's own documentation at a **short "
    "length L**, and is then asked to read sequences **2×, 4× and 8× longer** without any further training. "
    "Choose an encoding in the sidebar, press **Start**, and watch the loss fall; then see which encodings and "
    "which RoPE scaling methods survive the longer sequences."
)

# --- settings (sidebar, bound to the URL) -----------------------------------------------------
with st.sidebar:
    st.header("Experiment")
    encoding = params.selectbox("Position encoding", "enc", POSITION_ENCODINGS, POSITION_ENCODINGS.index("rope"),
                                format_func=ENCODING_TITLES.get)
    pairing = "half"
    if encoding == "rope":
        pairing = params.radio("RoPE pairs dimensions", "pair", ROPE_PAIRINGS, format_func={
            "half": "half-split (i, i + d/2)", "interleaved": "interleaved (2i, 2i + 1)"}.get, horizontal=True)
    if encoding in ("rope", "sinusoidal"):
        base = params.select_slider("Base b", "base", BASES, 10_000.0, format_func=lambda v: f"{v:,.0f}")
    else:
        base = 10_000.0
    train_length = params.select_slider("Training length L (characters)", "L", TRAIN_LENGTHS, 64)
    steps = params.select_slider("Training steps", "steps", STEPS, 600)
    width = params.select_slider("Width d_model", "dm", WIDTHS, 128)
    heads = params.select_slider("Heads", "nh", HEADS, 4)
    layers = params.select_slider("Layers", "nl", LAYERS, 2)
    seed = params.number_input("Seed", "seed", 0, 10_000, 0, step=1)
    multiples = params.multiselect("Evaluate at lengths (multiples of L)", "x", MULTIPLES, (1, 2, 4, 8))
    methods: list[str] = list(DEFAULT_METHODS)
    if encoding == "rope":
        methods = params.multiselect("RoPE scaling methods to evaluate", "m", METHODS, DEFAULT_METHODS,
                                     format_func=METHOD_TITLES.get)

with st.expander("About the data, the model and the training"):
    st.markdown(
        "**Data.** The docstrings of Python's standard library, read from the source files that ship with every "
        "Python (nothing is downloaded): about 0.8 million characters for training and 80 thousand for "
        "validation. Validation holds out *whole modules* (one in ten), and a docstring that appears twice is "
        "kept once, so no text is in both. Characters are tokens: printable ASCII and newline.\n\n"
        "**Model.** A decoder-only transformer in the style of nanoGPT: token embedding (tied to the output "
        "layer), pre-LayerNorm blocks of causal self-attention (`scaled_dot_product_attention`) and a GELU MLP. "
        "Only the position handling changes between runs: none, learned or sinusoidal vectors added to the "
        "input, RoPE rotating queries and keys, or ALiBi / T5 biases added to the attention scores.\n\n"
        "**Training.** AdamW, warm-up then cosine decay, batches of 2,048 characters, seeded: the same "
        "settings give the same run. **Evaluation** averages the loss at each position over evenly spaced "
        "validation windows of each length, without any further training."
    )

multiples = sorted(set(multiples) | {1})  # the training length is always measured: it is the reference
model_config = None
with user_errors("These model settings"):
    model_config = ModelConfig(
        n_layer=layers, n_head=heads, d_model=width, train_length=train_length,
        max_positions=train_length * max(multiples), position=encoding, rope_base=base, rope_pairing=pairing,
    )
train_config = TrainConfig(steps=steps, batch_size=batch_size_for(train_length), seed=int(seed))
settings = {"model": model_config, "train": train_config, "multiples": tuple(multiples), "methods": tuple(methods)}


def submit(name: str, work) -> None:
    """Queue ``work`` on the server-wide limiter; one job per session (buttons are disabled meanwhile)."""
    job = st.session_state.get(JOB)
    if job is not None and not job.finished:
        return
    try:
        st.session_state[JOB] = server_limiter().submit(name, work)
    except ServerBusy as err:
        st.session_state[EXPLAIN_BUSY] = str(err)


def start(model_config: ModelConfig, train_config: TrainConfig, multiples: tuple, methods: tuple, settings: dict):
    job = st.session_state.get(JOB)
    if job is not None and not job.finished:
        return  # one training job at a time per session
    experiment = Experiment(TrainingRun(model_config, train_config), multiples, methods or DEFAULT_METHODS,
                            EVAL_CHARACTERS_PER_LENGTH, settings=settings)
    st.session_state[EXPERIMENT] = experiment
    submit(f"train-{model_config.position}", experiment.train_work)


def stop() -> None:
    job = st.session_state.get(JOB)
    if job is not None:
        job.stop()


experiment: Experiment | None = st.session_state.get(EXPERIMENT)
job = st.session_state.get(JOB)
busy = job is not None and not job.finished

if model_config is not None:
    characters = train_config.steps * train_config.batch_size * train_length
    corpus_size = training_characters()
    st.caption(
        f"This run: {parameter_count(model_config):,} parameters; {train_config.steps:,} steps of "
        f"{train_config.batch_size} sequences × {train_length} characters = {characters:,} characters "
        f"({characters / corpus_size:.1f} passes over the {corpus_size:,}-character training text); then "
        f"evaluation at L' = {', '.join(f'{train_length * m:,}' for m in multiples)}."
    )

# --- start / stop ---------------------------------------------------------------------------------------
start_column, stop_column, status_column = st.columns([1, 1, 4], vertical_alignment="center")
start_column.button("Start", type="primary", icon=":material/play_arrow:", disabled=busy or model_config is None,
                    on_click=start, args=(model_config, train_config, tuple(multiples), tuple(methods), settings))
stop_column.button("Stop", icon=":material/stop:", disabled=not busy, on_click=stop)
running, waiting = server_limiter().load()
status_column.caption(
    f"Server: {running} training job(s) running, {waiting} waiting (at most {server_limiter().max_running} "
    "at a time, so a whole class can share one machine)."
)
if st.session_state.get(EXPLAIN_BUSY):
    st.warning(st.session_state.pop(EXPLAIN_BUSY), icon="⏳")

if experiment is not None and experiment.settings != settings and not busy:
    st.info("The results below are from your last run; the settings in the sidebar have changed since. "
            "Press **Start** to train with the new settings (the last run stays until then).", icon="ℹ️")


# --- live progress (polled by a fragment, so training never blocks this or any other session) --------
@st.fragment(run_every=POLL_SECONDS if busy else None)
def live_progress() -> None:
    job = st.session_state.get(JOB)
    experiment = st.session_state.get(EXPERIMENT)
    if experiment is None:
        st.caption("No run yet in this browser session.")
        return
    if job is not None and job.state == QUEUED:
        st.warning(f"The server is busy: your job is queued (position {job.queue_position()}). It starts by itself "
                   "when the running job finishes; you can leave this page open.", icon="⏳")
    elif job is not None and not job.finished:
        st.progress(job.fraction, text=job.phase)
    elif job is not None and job.error:
        st.error(f"The job failed: {job.error}", icon="⚠️")
    run = experiment.run
    history = list(run.history)  # a snapshot: the training thread keeps appending
    validation = [(p.step, p.validation_loss) for p in history if p.validation_loss is not None]
    # drawn even before the first step, so the full run that starts a job already shows this figure
    show_figure(figs.loss_curve_figure(
        [p.step for p in history], [p.loss for p in history], validation, experiment.unigram_baseline,
        total_steps=run.train_config.steps,
    ), "tt_loss")
    if history:
        latest = history[-1]
        recent = history[-20:]
        speed = sum(p.tokens_per_s for p in recent) / len(recent)
        st.caption(
            f"{ENCODING_TITLES[run.model_config.position]} · {parameter_count(run.model_config):,} parameters · "
            f"step {latest.step:,}/{latest.total_steps:,} · training loss {latest.loss:.3f} nats/char · "
            f"{speed:,.0f} characters/s · {latest.elapsed_s:.0f} s of training · device {run.device.type}"
        )
    if job is not None and job.finished and st.session_state.get(SEEN) != job.id:
        st.session_state[SEEN] = job.id
        if job.state != "failed":
            st.rerun()  # the whole page, so the results section below is drawn


live_progress()


def what_the_model_sees() -> None:
    """How the chosen encoding represents position, drawn before any training (from the sidebar settings)."""
    if model_config is None:
        return
    st.subheader("What the model sees of position")
    longest = train_length * max(multiples)
    wavelengths = position_wavelengths(model_config)
    if wavelengths is not None:
        unseen = int((wavelengths > train_length).sum())
        kind = "RoPE pair" if encoding == "rope" else "sin/cos pair"
        st.markdown(
            f"Each {kind} turns with its own wavelength λ = 2π·b^(2i/d). The {unseen} of {wavelengths.numel()} "
            f"pairs above the dotted line never complete a turn within L = {train_length}, so at L' = {longest:,} "
            "they produce angles the model never saw: that is what direct extrapolation stumbles on, and what "
            "PI, NTK-aware and YaRN rescale (each differently)."
        )
        show_figure(figs.position_figure(model_config, longest), "tt_wavelengths")
    elif encoding == "alibi":
        st.markdown("ALiBi has nothing to extrapolate: each head subtracts a fixed penalty proportional to "
                    "distance, and the penalty for distances past L is just the same line continued.")
        show_figure(figs.position_figure(model_config, longest), "tt_alibi")
    elif encoding == "t5":
        st.markdown("T5 learns one bias per head and distance bucket; buckets grow logarithmically and every "
                    "distance past the last boundary (here L) shares the last bucket, so longer inputs reuse "
                    "trained values.")
        show_figure(figs.position_figure(model_config, longest), "tt_t5")
    elif encoding == "learned":
        st.markdown(f"A learned table has a row per position; rows {train_length:,} to {longest - 1:,} get no "
                    "gradient in training and keep their random initial values.")
    else:
        st.markdown("Without any position encoding the model can only infer order from the causal mask (how "
                    "many tokens it can see), which it must learn to count.")


if experiment is None:
    what_the_model_sees()
    st.stop()

run = experiment.run
if not busy and not run.done:
    st.info(f"This run was stopped after {run.step} of {run.train_config.steps} steps; its model and loss curve "
            "are kept. Resume training, or evaluate the partly trained model as it is.", icon="⏸️")
    resume_column, evaluate_column = st.columns(2)
    resume_column.button("Resume training", icon=":material/resume:", on_click=submit,
                         args=("resume", experiment.train_work))
    evaluate_column.button("Evaluate as it is", icon=":material/query_stats:", on_click=submit,
                           args=("evaluate", experiment.evaluate_work))

evaluation = experiment.evaluation
expected_results = len(experiment.lengths) * (len(experiment.methods) if experiment.encoding == "rope" else 1)
if run.done and not busy and (evaluation is None or len(evaluation.results) < expected_results):
    st.info("The evaluation was stopped before it finished; what was measured is shown below.", icon="⏸️")
    st.button("Evaluate again", icon=":material/query_stats:", on_click=submit,
              args=("evaluate", experiment.evaluate_work))
if evaluation is None or not evaluation.results:
    st.stop()

# --- results ---------------------------------------------------------------------------------------------
final_validation = next((p.validation_loss for p in reversed(run.history) if p.validation_loss is not None), None)
st.subheader("What the model learned")
if final_validation is not None:
    st.markdown(
        f"Validation loss **{final_validation:.3f}** nats per character, against **{experiment.unigram_baseline:.3f}** "
        "for a model that knows only how often each character occurs: the difference is what the model learned "
        "from context (order, words, syntax) in its short training."
    )

st.subheader("Accuracy at the training length and beyond")
st.markdown(
    "Next-character accuracy over whole sequences, as in Su Jianlin's table (seed 001: trained at 512, tested at "
    "4096 = 8×). At the training length every RoPE method has s = 1 and *is* plain RoPE, so the first column "
    "must be identical for all of them: a quick check that each method is implemented as a pure change of scale. "
    "(The copy of Su's table in seed 001 shows 49.91 % for two rows and 49.41 % for the third; they are the same "
    "model, so that is a transcription slip.)"
)
header, rows = summary_table(evaluation)
show_figure(figs.results_table_figure(header, rows), "tt_table")
if experiment.encoding == "rope":
    st.markdown(
        "**What to look for** (the claims of seeds 000-002, reproduced at toy scale): direct extrapolation gets "
        "steadily worse past L; Position Interpolation is worse still, and already *inside* L, because at s = 8 "
        "neighbouring characters sit 1/8 of a step apart, closer than anything seen in training; NTK-aware "
        "scaling keeps most of the accuracy by stretching only the slow pairs; YaRN keeps at least as much. "
        "Train the other encodings too: ALiBi stays flat, sinusoidal and learned absolute positions collapse."
    )
if "ntk_by_parts" in evaluation.methods:
    fastest_turns = evaluation.train_length / (2 * math.pi)  # r = L/λ of the fastest pair (θ_0 = 1)
    if fastest_turns < 32:
        st.caption(
            f"Why NTK-by-parts does poorly here: its γ(r) (YaRN paper, eq. 18) keeps a pair's frequency only "
            f"if the pair turns more than β = 32 times within L, but at L = {evaluation.train_length} even the "
            f"fastest pair turns only {fastest_turns:.1f} times, so every pair is partly interpolated and local "
            "order blurs as with PI. β = 32 was chosen for L = 2048-4096. The YaRN reference code ramps over the "
            "pair index between the pairs with 32 and 1 turns, clamped at index 0, so it keeps the fastest pairs."
        )

lengths = evaluation.lengths
shown = params.select_slider("Show per-position loss at L' =", "show", lengths, max(lengths),
                             format_func=lambda n: f"{n:,} ({n // evaluation.train_length}×)")
curves = [figs.Curve(method_title(m), evaluation.get(m, shown).loss, i)
          for i, m in enumerate(evaluation.methods) if (m, shown) in evaluation]
st.markdown(
    "Where does it go wrong? The loss at each position (averaged over the validation windows, binned for "
    "reading) shows whether a method fails only **past L** (unseen positions or angles) or **everywhere** "
    "(it disturbed what the model relied on inside L, as Position Interpolation does by squeezing neighbours "
    "together)."
)
show_figure(figs.per_position_figure(
    curves, evaluation.train_length,
    title=f"Loss at each position, evaluated at L' = {shown:,} ({shown // evaluation.train_length}× L)"),
    "tt_positions")
complete = [m for m in evaluation.methods if all((m, n) in evaluation for n in lengths)]
show_figure(figs.length_figure(
    [n // evaluation.train_length for n in lengths],
    [figs.Curve(method_title(m), [evaluation.get(m, n).mean_loss for n in lengths], evaluation.methods.index(m))
     for m in complete]), "tt_lengths")

if experiment.encoding == "rope":
    st.latex(r"\text{PI: } \theta_i' = \theta_i / s \qquad \text{NTK-aware: } b' = b\, s^{d/(d-2)} \qquad "
             r"\text{Dynamic NTK: NTK-aware with } s = \max(1,\ \ell / L)")
    st.latex(r"\text{YaRN: } \theta_i' = (1-\gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i, \quad "
             r"q_m^\top k_n \;\to\; \Big(0.1 \ln s + 1\Big)^2\, q_m^\top k_n")
    st.caption(
        "s = L'/L; d is the head size; γ_i ramps from 0 (interpolate) to 1 (keep) with the number of turns pair "
        "i makes within L. YaRN's factor multiplies cos and sin, so the logits get its square. Dynamic NTK is "
        "scored as in generation: positions in each block of L use the frequencies for the length ℓ reached so far."
    )
elif experiment.encoding == "alibi":
    st.latex(r"\mathrm{score}(i, j) = q_i^\top k_j / \sqrt{d} \;-\; m_h\,(i - j), \qquad "
             r"m_h = 2^{-8h/H},\ h = 1..H")
    st.caption("With H heads the slopes are a geometric sequence starting at 2^(−8/H) (Press et al. 2022). "
               "Seed 000 writes m_n = 2^(−8/n), which is not the paper's formula: for 8 heads it gives 1/256, "
               "1/16, …, 1/2 (slopes growing with the head index) instead of the paper's 1/2, 1/4, …, 1/256.")

# --- fine-tuning at the longer length ------------------------------------------------------------------------
longer = [m for m in experiment.multiples if m > 1]
if experiment.encoding == "rope" and longer:
    st.subheader("A few steps of fine-tuning at the longer length")
    st.markdown(
        "Chen et al. (2023) found that Position Interpolation, poor without training, recovers after a short "
        "fine-tune at the new length, because it never asks the model for angles it has not seen. Fine-tune a "
        "copy of this model at L' with one method (the original stays as it is) and compare."
    )
    tune_columns = st.columns(3)
    with tune_columns[0]:
        tune_method = params.selectbox("Method", "ftm", FINE_TUNE_METHODS, format_func=METHOD_TITLES.get)
    with tune_columns[1]:
        tune_multiple = params.select_slider("At (× L)", "ftx", longer, max(longer), format_func=lambda m: f"{m}×")
    with tune_columns[2]:
        tune_steps = params.select_slider("Steps", "fts", FINE_TUNE_STEPS, 50)
    st.button("Fine-tune", icon=":material/tune:", disabled=busy, on_click=submit, args=(
        f"fine-tune-{tune_method}",
        functools.partial(experiment.fine_tune_work, tune_method, tune_multiple, tune_steps)))
    for tune in experiment.fine_tunes:
        if tune.before is None or tune.after is None:
            continue
        reference = None
        if ("direct", tune.length) in evaluation:
            reference = evaluation.get("direct", tune.length).loss
        show_figure(figs.fine_tune_figure(
            tune.before.loss, tune.after.loss, evaluation.train_length, method_title=method_title(tune.method),
            steps=tune.steps, reference=reference, reference_name="Direct extrapolation, no fine-tuning"),
            f"tt_tune_{tune.method}_{tune.length}")
        st.caption(f"{method_title(tune.method)} at L' = {tune.length:,}: mean loss {tune.before.mean_loss:.3f} → "
                   f"{tune.after.mean_loss:.3f} nats, accuracy {tune.before.mean_accuracy:.1%} → "
                   f"{tune.after.mean_accuracy:.1%} after {tune.steps} steps.")

# --- every run of this session, side by side -------------------------------------------------------------------
runs: list[dict] = st.session_state.setdefault(RUNS, [])
signature = (experiment.serial, run.step, len(evaluation.results))
if not any(entry["signature"] == signature for entry in runs) and len(evaluation.results) == len(
        evaluation.methods) * len(lengths):
    best_rope = {}
    for method in evaluation.methods:
        label = ENCODING_TITLES[experiment.encoding]
        if experiment.encoding == "rope":
            label = f"RoPE + {method_title(method)}"
        best_rope[label] = {n // evaluation.train_length: evaluation.get(method, n).mean_loss for n in lengths}
    runs[:] = [e for e in runs if e["id"] != experiment.serial] + [
        {"signature": signature, "id": experiment.serial, "curves": best_rope, "L": evaluation.train_length,
         "steps": run.step}]
    del runs[:-MAX_RUNS_KEPT]
if len(runs) > 1:
    st.subheader("All runs of this session")
    st.markdown("Train each encoding in turn (change **Position encoding** and press Start) to compare how they "
                "extrapolate; the last few runs are kept here.")
    shared = sorted(set.intersection(*(set(c) for e in runs for c in e["curves"].values())))
    comparison = [figs.Curve(f"{label} (L={entry['L']}, {entry['steps']} steps)", [values[m] for m in shared], i)
                  for i, (entry, label, values) in enumerate(
                      (e, lab, v) for e in runs for lab, v in e["curves"].items())]
    show_figure(figs.length_figure(shared, comparison, title="Mean loss against evaluation length, every run"),
                "tt_runs")

what_the_model_sees()

st.download_button("Download this run as JSON", lambda: json.dumps(run_json(run, evaluation, experiment.fine_tunes)),
                   file_name=f"tiny-transformer-{experiment.encoding}.json", mime="application/json",
                   icon=":material/download:")
st.caption("The same experiment runs headless with `python -m pe_core.train --help`.")
