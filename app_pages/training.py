"""Train a tiny transformer, then watch each encoding and RoPE scaling method read 8× further."""

import functools

import streamlit as st

from ui import params, show_figure
from ui.formula import in_a_row, show_formula
from ui.layout import lazy_expander
from ui.lesson import LessonPage

from i18n import N_, _, ngettext, sentences
from lessons import training as lesson
from pe_core.device import shown_device_label
from pe_core.jobs import QUEUED, ServerBusy
from pe_core.train.service import latest_status, store_problem
from references import cite

POLL_SECONDS = 0.5
JOB, JOB_CONFIG = "tt_job", "tt_job_config"

page = LessonPage(lesson.LESSON)

st.title(_("Train a tiny transformer"))
st.markdown(_(
    "The other pages explain why RoPE's scaling methods should work; this one tests them on a model small "
    "enough for a laptop. A causal transformer learns to predict the next character of Python's own "
    "documentation at a **short length L**, and is then asked to read sequences **2×, 4× and 8× longer** "
    "without further training, as in Su Jianlin's experiment ({source}: trained at 512, tested at 4,096)."
).format(source=cite("su_beta_base")))

with st.sidebar:
    st.header(_("Experiment"))
    page.controls(lesson.EXPERIMENT)
settings = page.working_settings((lesson.EXPERIMENT,))
config = lesson.LESSON.config(settings)
service = lesson.service()
if store_problem():
    st.warning(_("The run store could not be opened, so runs are kept only until the server restarts: {problem}")
               .format(problem=_(store_problem())), icon=":material/warning:")

# --- train, or look up ------------------------------------------------------------------------------
def request() -> None:
    try:
        answer = service.request(config)
    except ServerBusy as err:
        st.session_state["tt_busy"] = str(err)
        return
    if not isinstance(answer, lesson.RunRecord):
        st.session_state[JOB], st.session_state[JOB_CONFIG] = answer, config


def request_missing() -> None:
    try:
        job = service.request_all(lesson.missing_runs(settings), _("seed table"))
    except ServerBusy as err:
        st.session_state["tt_busy"] = str(err)
        return
    if job is not None:
        st.session_state[JOB], st.session_state[JOB_CONFIG] = job, None


def stop() -> None:
    job = st.session_state.get(JOB)
    if job is not None:
        job.withdraw()


record = lesson.LESSON.stored(settings)
job = st.session_state.get(JOB)
busy = job is not None and not job.finished
st.header(_("Train, or show the stored run"))
st.caption(lesson.store_text(settings))
if record is not None:
    st.success(_("This experiment is in the run store: trained on {device}, {created}. Its results are in the "
                 "parts below; nobody needs to train it again.").format(device=shown_device_label(record.device),
                                                    created=lesson.created_text(record.created_at)), icon=":material/check_circle:")
    if busy:  # e.g. the missing seeds training for the seed tables
        st.button(_("Stop"), icon=":material/stop:", on_click=stop)
else:
    paused = service.paused(config)
    label = _("Resume training") if paused is not None else _("Train this experiment")
    st.markdown(sentences([_("Not stored yet. Training runs on the server in the background; you can leave the page "
                             "open."), lesson.what_one_run_trains(config), lesson.time_text(config)]))
    columns = st.columns([2, 1, 3], vertical_alignment="center")
    columns[0].button(label, type="primary", icon=":material/play_arrow:", disabled=busy, on_click=request)
    columns[1].button(_("Stop"), icon=":material/stop:", disabled=not busy, on_click=stop)
    running, waiting = service.limiter.load()
    columns[2].caption(lesson.workers_text() if service.workers() else
                       _("Server: {running} run(s) training, {waiting} waiting; at most {limit} at a time, so a "
                         "class shares one machine.").format(running=running, waiting=waiting,
                                                             limit=service.limiter.max_running))
    if paused is not None and not busy:
        st.info(_("Stopped after {step} of {total} training steps; nothing was stored. Train again to resume "
                  "from there.").format(step=paused.run.step, total=config.steps), icon=":material/pause_circle:")
        show_figure(lesson.live_loss_figure(list(paused.run.history), config), "training_live_loss")
if st.session_state.get("tt_busy"):
    st.warning(st.session_state.pop("tt_busy"), icon=":material/hourglass_top:")


@st.fragment(run_every=POLL_SECONDS if busy else None)
def live_progress() -> None:
    job = st.session_state.get(JOB)
    if job is None:
        return
    status = latest_status(job)
    if job.state == QUEUED:
        wait = job.wait_s()
        text = _("Waiting in line: position {position}.").format(position=job.queue_position())
        if wait is not None:
            text = sentences([text, _("It should start in about {time} (from the runs ahead).").format(
                time=lesson.duration_text(wait))])
        st.warning(text, icon=":material/hourglass_top:")
    elif not job.finished:
        text = lesson.followed_text(job) or (lesson.status_text(status, getattr(job, "batch", None)) if status
                                             else _("Starting…"))
        left = lesson.time_text(st.session_state.get(JOB_CONFIG), job)
        if left:
            text += " · " + left
        st.progress(job.fraction, text=text)
        if job.requests > 1:
            st.caption(_("{count} sessions asked for this run; it trains once for all of them.").format(
                count=job.requests))
    elif job.error:
        st.error(_("The run failed: {error}").format(error=job.error), icon=":material/warning:")
    shown = st.session_state.get(JOB_CONFIG)
    history = [s.progress for s in job.reports() if s.phase == "training" and s.progress is not None]
    if shown is not None and history and not job.finished:
        show_figure(lesson.live_loss_figure(history, shown), "training_live_loss")
    if job.finished and st.session_state.get("tt_seen") != job.id:
        st.session_state["tt_seen"] = job.id
        st.rerun()  # the whole page: the stored results appear below


live_progress()

# --- the parts: the miniature and what the model sees need no run; the others show the stored run's -------
def miniature_part() -> None:
    toy = lesson.toy_facts(page.result((lesson.EXPERIMENT,)))
    st.markdown(_(
        "Direct extrapolation fails through the RoPE pairs that never complete a turn within L: past L they reach "
        "angles training never showed. A toy tells the published story only if it has about the same share of such "
        "pairs as a real model. {llama} (head size {llama_d}, base {llama_base}, L = {llama_L}) has {llama_turning} of "
        "{llama_pairs} pairs turning within L ({llama_source}); the toy's short L gets about the same proportions from "
        "a small base, as the numbers under the figure show. With base {llama_base} the same toy would have only "
        "{usual_turning} of {pairs} pairs turning, and {usual_unseen:.0%} of its angles at {scale}× unseen."
    ).format(llama_source=cite("llama2"), **toy))
    page.figure("spectrum")
    st.markdown(_(
        "YaRN and NTK-by-parts sort pairs by the same turns: a pair turning more than β times within L is kept, one "
        "turning fewer than α times is interpolated, and a ramp runs between ({yarn}). The paper's α = {paper_alpha}, "
        "β = {paper_beta} were found for the Llama family, and it says to tune them case by case: in {llama} they keep "
        "{llama_kept} of {llama_pairs} pairs and interpolate {llama_interpolated}. This toy's fastest pair turns only "
        "{fastest_turns} times within L, so those values would keep {paper_kept} of its {pairs} pairs. Matched, the toy "
        "uses the turns at which the same shares of its pairs fall in each zone: β = {beta}, α = {alpha}, keeping "
        "{kept} pairs and interpolating {interpolated} (the sidebar's “YaRN's α and β” switches to the paper's values)."
    ).format(yarn=cite("yarn", "§3.2"), **toy))


@functools.cache  # once per run: the whole page asks in two parts, each a look-up of every seed's run
def any_run_missing() -> bool:
    return bool(lesson.missing_runs(settings))


def missing_seeds_button(key: str) -> None:
    if any_run_missing():
        missing = len(lesson.missing_runs(settings))
        st.caption(ngettext("This table's means leave out {count} run that is not stored yet; train it to complete "
                            "the table.", "This table's means leave out {count} runs that are not stored yet; train "
                            "them to complete the table.", missing).format(count=missing))
        st.button(_("Train the missing seeds and encodings"), icon=":material/playlist_add:", disabled=busy,
                  on_click=request_missing, key=key)


def encodings_part() -> None:
    st.markdown(_(
        "One run is one draw: a different seed moves accuracy by a point or two. So each number here is a mean "
        "over seeds, with its standard deviation as an error bar; the open tick marks the same rows at L. "
        "**What to look for:** RoPE read directly past L loses accuracy; ALiBi ({alibi}) barely moves, from a "
        "lower start. Compare the rows' error bars before reading much into a point or two."
    ).format(alibi=cite("alibi")))
    page.figure("seeds")
    missing_seeds_button("tt_missing_encodings")
    st.markdown(_(
        "The table adds what each encoding costs to train: characters per second of an optimiser step and the "
        "memory a step needs, for the same batches of the same length. RoPE, ALiBi and T5 change the scores "
        "without extra matrices; Transformer-XL and DeBERTa compute one or two more position terms in every "
        "layer and keep them for the backward pass."
    ))
    page.figure("table")

    st.subheader(_("Two more relative encodings: Transformer-XL and DeBERTa"))
    st.markdown(_(
        "Both start from the four terms of an attention score with absolute positions (content and position of "
        "the query, times content and position of the key) and keep only what depends on the distance. "
        "Transformer-XL ({xl}) replaces the key's position by a sinusoid of the distance, Rᵢ₋ⱼ, with "
        "its own projection, and the query's position by two trained vectors u and v. DeBERTa ({deberta}) keeps "
        "the two cross terms, each against a learned embedding of the distance clipped at k, drops the "
        "position–position term, and divides by √(3d). Here k = L, so every distance past L shares the last "
        "embedding, as T5's last bucket. **What to look for:** both keep their accuracy at 8× L close to their "
        "accuracy at L (the error bars show how far one seed strays), and pay for it in the cost columns: extra "
        "matrices in every layer, slower steps, more memory."
    ).format(xl=cite("transformer_xl", "§3.3"), deberta=cite("deberta", "§3.1")))
    st.latex(r"\text{XL: } a_{ij} = q_i^\top k_j + q_i^\top W_R R_{i-j} + u^\top k_j + v^\top W_R R_{i-j}"
             r"\qquad \text{DeBERTa: } a_{ij} = \frac{Q^c_i{}^\top K^c_j + Q^c_i{}^\top K^r_{\delta(i,j)}"
             r" + K^c_j{}^\top Q^r_{\delta(j,i)}}{\sqrt{3d}}")


def methods_part() -> None:
    st.markdown(_(
        "Every RoPE scaling method, read on the same runs (means over seeds, with error bars, as for the "
        "encodings). **What to look for:** direct extrapolation loses accuracy past L; Position Interpolation loses "
        "far more, already inside L, because at s = 8 neighbouring characters sit 1/8 of a step apart; NTK-aware "
        "scaling ({ntk}) keeps more than direct by stretching mostly the slow pairs; YaRN ({yarn}) keeps at least "
        "as much as NTK-aware; a short fine-tune at the new length ({pi}) brings YaRN back to its accuracy at L and "
        "PI most of the way. The gaps are smaller than in a large model trained for days: compare the rows' error "
        "bars before reading much into a point or two."
    ).format(ntk=cite("ntk_aware"), yarn=cite("yarn"), pi=cite("pi", "§3")))
    page.figure("methods-seeds")
    missing_seeds_button("tt_missing_methods")
    page.figure("methods-table")
    page.figure("per-length")

    st.subheader(_("Tricks at inference: log n and ReRoPE"))
    st.markdown(_(
        "Two of Su Jianlin's fixes need no training. **log n scaling** ({logn}) multiplies each query by "
        "max(1, ln n / ln L), n the number of keys it sees, so attention does not spread thinner over a longer "
        "text. **ReRoPE** ({rerope}) keeps the relative position i − j inside a window w and gives every farther "
        "key the position w, so no angle is new; **Leaky ReRoPE** lets it grow with slope 1/k past w instead. "
        "Because a clipped distance is not a difference of two absolute positions, ReRoPE computes two score "
        "matrices (plain RoPE, and one with the query at position w) and picks per pair: twice the attention "
        "work, and no fused kernel. Here w = L/2 for ReRoPE, and w = L/4, k = 16 for Leaky ReRoPE: Su's "
        "ReRoPE-w256 and Leaky ReRoPE-w128-k16 at L = {su_length}. **What to look for** (in the table above): "
        "log n lifts direct extrapolation and NTK-aware at 8× but not Position Interpolation, whose problem is "
        "crowded neighbours, not diluted attention; ReRoPE keeps more than any scaling method, and with log n "
        "it is as accurate at 8× as at L."
    ).format(logn=cite("logn"), rerope=cite("rerope"), su_length=f"{lesson.SU_TRAIN_LENGTH:,}"))
    show_formula(in_a_row(r"q_i \to \max\!\Big(1, \frac{\ln (i+1)}{\ln L}\Big)\, q_i",
                          r"\text{ReRoPE: } i-j \to \min(i-j,\ w)",
                          r"\text{Leaky: } i-j \to \begin{cases} i-j & i-j < w \\ w + (i-j-w)/k & \text{otherwise} "
                          r"\end{cases}"),
             N_("otherwise"))

    st.subheader(_("Su's table beside the toy"))
    st.markdown(_(
        "Su Jianlin trained a 100 M-parameter model at {train} tokens and measured next-token accuracy at {test} "
        "({beta}, {rerope}). The toy runs the same methods at the same ratio, {scale}×. The absolute numbers "
        "differ (a different model, tokenizer and text); compare the order of the rows and how much of its "
        "accuracy at the training length each method keeps."
    ).format(beta=cite("su_beta_base"), rerope=cite("rerope"), train=f"{lesson.SU_TRAIN_LENGTH:,}",
             test=f"{lesson.SU_TEST_LENGTH:,}", scale=lesson.SU_TEST_LENGTH // lesson.SU_TRAIN_LENGTH))
    page.figure("su")


def run_part() -> None:
    page.figure("loss")

    st.subheader(_("Where does it go wrong?"))
    st.markdown(_(
        "The loss at each position (this seed; averaged over the validation windows, binned for reading) shows "
        "whether a method fails only **past L** (unseen angles) or **everywhere** (it disturbed what the model "
        "relied on inside L, as Position Interpolation does by squeezing neighbours together)."
    ))
    page.controls(lesson.VIEW)
    page.figure("per-position")
    if config.scalable:
        st.latex(r"\text{PI: } \theta'_i = \theta_i / s \qquad \text{NTK-aware: } b' = b\, s^{d/(d-2)} \qquad "
                 r"\text{YaRN: } \theta'_i = (1-\gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i,\ "
                 r"q_m^\top k_n \to \bigl(0.1 \ln s + 1\bigr)^2 q_m^\top k_n")
        st.subheader(_("A few steps of fine-tuning at the longer length"))
        st.markdown(_(
            "{source} found that Position Interpolation, poor without training, recovers after a short fine-tune "
            "at the new length, because it never asks the model for angles it has not seen. A copy of the model is "
            "fine-tuned at L′ with each chosen method (the original stays as trained), and its accuracy at L′ is "
            "measured along the way: the curve shows how many steps each method needs."
        ).format(source=cite("pi", "§3")))
        page.figure("fine-tune-curve")
        page.figure("fine-tune")


def position_part() -> None:
    page.figure("position")


def inside_part() -> None:
    st.markdown(_(
        "Why does direct extrapolation lose focus past L? Su Jianlin's entropy argument ({logn}): a query shares "
        "its attention among the keys it sees in proportion to the exponential of their scores, so with n keys "
        "whose scores keep their spread, the entropy of its attention grows with n, like ln n when the scores are "
        "alike. Past L a query sees more keys than training ever showed it, and its attention grows flatter than "
        "any the model learned to read. **log n scaling** multiplies the logits by max(1, ln n / ln L), which "
        "holds the entropy near its value at L and changes nothing within L. **YaRN** ({yarn}) multiplies them by "
        "one temperature factor 1/t = (0.1 ln s + 1)² over the whole context: sharper attention at every "
        "position, inside L too. The figures read the toy's own weights: each head's attention as trained, at L, "
        "and at the longest length with direct extrapolation, YaRN and log n."
    ).format(logn=cite("logn"), yarn=cite("yarn", "§3.4")))
    page.figure("attention-maps")
    st.markdown(_(
        "**What to look for:** at the longest length, direct extrapolation spreads a query's attention over far "
        "keys that it held to a few at L; log n and YaRN concentrate it again. Below, the entropy of a query's "
        "attention against the number of keys it sees: each method's curve beside ln n, the entropy of attention "
        "spread evenly; the caption gives the numbers of the points drawn last."
    ))
    show_formula(r"H_i = -\sum_{j \le i} p_{ij} \ln p_{ij}, \quad p_{ij} = \frac{e^{\lambda\, s_{ij}}}"
                 r"{\sum_{k \le i} e^{\lambda\, s_{ik}}} \qquad \text{log n: } \lambda = "
                 r"\max\!\Big(1, \frac{\ln (i+1)}{\ln L}\Big) \qquad \text{YaRN: } \lambda = "
                 r"\big(0.1 \ln s + 1\big)^2")
    page.figure("attention-entropy")


def retrieval_part() -> None:
    st.markdown(_(
        "Next-character accuracy scores each method on what the text just before a character predicts: the "
        "perplexity view. It can stay high past L while the model has lost the far context. A second test asks "
        "for something far away: a {digits}-digit passkey (“@@4821”) is planted at a depth of a long context of "
        "docstrings and asked for at its end, and the model must give every digit (exact retrieval). A model "
        "trained on docstrings alone cannot copy a passkey even within L, so this experiment trains the same "
        "model on a mix meant to teach copying (random letters written twice and a planted passkey and its repeat "
        "in {share:.0%} of the training windows); its runs have their own hashes, beside the default "
        "experiment's. The figures say whether it learned to. **DroPE** ({drope}) is fine-tuned beside YaRN: the trained RoPE model with its rotation "
        "removed (attention then sees content only, as in NoPE), recalibrated for the same steps at the same length "
        "as YaRN's fine-tune."
    ).format(digits=lesson.PASSKEY_DIGITS, share=lesson.COPY_FRACTION, drope=cite("drope")))
    page.figure("trap")
    st.markdown(_("**What to look for:** a method far to the right but low down keeps its accuracy and does not "
                  "find the needle. Below, where each method finds it: the depth of the needle against the length."))
    page.figure("needle")


def needs_the_run(draw):
    """``draw``, for a part that shows the stored run's results: without one, a note (nothing is trained)."""
    def part() -> None:
        if record is None:
            st.info(_("No results yet: this experiment is not in the run store. Train it above; its results appear "
                      "here when it finishes."), icon=":material/info:")
            return
        draw()
    return part


drawers = {"miniature": miniature_part, "encodings": encodings_part, "methods": methods_part, "run": run_part,
           "position": position_part, "inside": inside_part, "retrieval": retrieval_part}
page.parts({part.slug: needs_the_run(drawers[part.slug]) if lesson.needs_run(part) else drawers[part.slug]
            for part in lesson.LESSON.parts})

# --- every stored run ---------------------------------------------------------------------------------
def browse_runs() -> None:
    rows = lesson.stored_runs()
    if len(rows) < 2:
        st.caption(_("{count} run(s) stored so far; two are needed to compare.").format(count=len(rows)))
    if rows:
        st.dataframe(lesson.stored_table(rows), hide_index=True, width="stretch")
    if len(rows) >= 2:
        hashes = [row["hash"] for row in rows]
        labels = {row["hash"]: lesson.run_label(row) for row in rows}
        first, second = st.columns(2)
        with first:
            a = params.selectbox(_("Run A"), "cmpa", hashes, 0, format_func=labels.get)
        with second:
            b = params.selectbox(_("Run B"), "cmpb", hashes, 1, format_func=labels.get)
        show_figure(lesson.compare_figure(a, b), "training_compare")
# a link that names two runs to compare opens it
lazy_expander(_("Browse the run store and compare two runs"), "browse", browse_runs,
              expanded=bool({"cmpa", "cmpb"} & set(st.query_params)))


@st.fragment(run_every=POLL_SECONDS * 4)
def training_queue() -> None:
    """The store's queue, read from the store: what every server and worker sharing it trains, and when."""
    st.caption(lesson.workers_text())
    rows = lesson.queue_rows()
    if rows:
        st.dataframe(lesson.queue_table(rows), hide_index=True, width="stretch")
    else:
        st.caption(_("Nothing is waiting: every run asked for is stored."))


lazy_expander(_("The training queue, on every server"), "queue", training_queue)
st.caption(_("The same experiments run headless: python -m pe_core.train --help (--prepare fills the store with "
             "every encoding × 5 seeds; --store chooses the database)."))
