"""The training lesson: one vocabulary with the CLI and the JSON, and figures read from the store."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from i18n import use_language
from lessons import training as lesson
from pe_core.jobs import JobLimiter
from pe_core.train import ExperimentConfig, open_store
from pe_core.train.__main__ import _parser
from pe_core.train.service import TrainingService, use_service


def test_the_settings_the_cli_and_the_json_name_the_same_knobs():
    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    settings = set(lesson.Settings.controls())
    assert settings - fields == {"shown"}  # the one view setting
    assert lesson.experiment_config(lesson.Settings()) == ExperimentConfig()  # page defaults = CLI defaults
    options = {a.dest for a in _parser()._actions}
    assert fields <= options
    assert set(ExperimentConfig().to_json()) == fields
    assert lesson.LESSON.expensive is True


def test_figures_of_a_stored_run_and_the_cheap_ones_without_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PE_TRAIN_THREADS", "1")
    service = TrainingService(open_store(str(tmp_path / "runs.sqlite3")), JobLimiter(1, 4), device="cpu")
    previous = use_service(service)
    lesson.LESSON.clear_caches()
    try:
        settings = lesson.Settings.from_mapping({"L": 16, "dm": 32, "nh": 2, "hd": 16, "nl": 1, "steps": 20,
                                                 "x": (1, 2), "m": ("direct", "ntk"), "ft": ("yarn",), "fts": 10})
        for name in lesson.CHEAP_FIGURES:  # drawn before anything is trained
            assert lesson.LESSON.figure(name, settings).layout.title.text
        assert service.store.count() == 0 and lesson.LESSON.stored(settings) is None
        figures = lesson.LESSON.all_figures(settings)  # compute trains (as the export CLI does) and stores
        assert service.store.count() == 1 and lesson.LESSON.stored(settings) is not None
        record = lesson.LESSON.stored(settings)
        seeds = figures["methods-seeds"]
        assert [t.meta for t in seeds.data[:3]] == [{"method": "direct"}, {"method": "ntk"}, {"method": "yarn"}]
        assert seeds.data[1].x[0] == pytest.approx(record.result("ntk", 32).mean_accuracy)
        (rope, *marks) = figures["seeds"].data  # each encoding once, in its own look
        assert rope.meta == {"encoding": "rope"} and rope.x[0] == pytest.approx(record.result("direct", 32).mean_accuracy)
        assert list(figures["per-length"].data[0].y) == pytest.approx(
            [record.result("direct", n).mean_accuracy for n in (16, 32)])
        assert "1 seeds" not in figures["per-length"].layout.title.text
        # the encodings table: each encoding once, with its training cost
        header, rows = figures["table"].data[0].header.values, figures["table"].data[0].cells.values
        assert list(header[-2:]) == ["<b>train tokens/s</b>", "<b>memory, MiB</b>"]
        assert list(rows[0]) == ["RoPE, direct extrapolation"] and list(rows[1]) == ["1"]
        assert list(rows[-2]) == [f"{record.cost.tokens_per_s / 1000:.1f}k"]
        assert list(rows[-1]) == [f"{record.cost.memory_bytes / 2**20:.1f}*"]  # counted (a CPU run)
        assert "measured on CPU (1 thread)." in lesson.LESSON.caption("table", settings)
        with use_language("zh"):  # the stored label, in the reader's language
            chinese = lesson.LESSON.caption("table", settings)
        assert "CPU（1 个线程）" in chinese and "。 " not in chinese  # Chinese runs its sentences together
        methods = figures["methods-table"].data[0].cells.values
        assert list(methods[0]) == ["Direct extrapolation", "NTK-aware", "YaRN, 10 fine-tuning steps"]
        assert methods[3][1] == f"{100 * record.result('ntk', 32).mean_accuracy:.1f} ± 0.0"
        # Su's published numbers beside the toy's, for the methods this run measured
        su = figures["su"].data[0].cells.values
        assert su[0][0] == "Direct extrapolation" and list(su[1][:2]) == ["Baseline", "Baseline-log n *"]
        assert su[2][0] == "49.41" and su[3][0] == "23.16"
        assert su[5][0] == f"{100 * record.result('direct', 32).mean_accuracy:.1f} ± 0.0"  # 2× is this run's longest
        assert su[5][1] == "–" and su[5][4] == f"{100 * record.result('ntk', 32).mean_accuracy:.1f} ± 0.0"
        assert "49.40 rather than 49.41" in lesson.LESSON.caption("su", settings)
        # accuracy along the fine-tune: YaRN, measured before, at the checkpoints and at the end
        (curve, target) = figures["fine-tune-curve"].data
        tune = record.fine_tune("yarn")
        assert curve.meta == {"method": "yarn"} and list(curve.x) == [0, 1, 2, 5, 8, 10]
        assert list(curve.y) == pytest.approx([c.accuracy for c in tune.curve])
        assert curve.y[0] == pytest.approx(tune.before.mean_accuracy) and curve.y[-1] == pytest.approx(tune.after.mean_accuracy)
        assert list(target.y) == pytest.approx([record.result("direct", 16).mean_accuracy] * 2)
    finally:
        use_service(previous)
        lesson.LESSON.clear_caches()


def test_every_encoding_draws_how_it_sees_position_without_training():
    from pe_core.model import ENCODINGS

    titles = {}
    for encoding in ENCODINGS:
        settings = lesson.Settings.from_mapping({"enc": encoding})
        figure = lesson.LESSON.figure("position", settings)
        titles[encoding] = figure.layout.title.text
    assert "Transformer-XL's R" in titles["xl"] and "(width 64, base 50)" in titles["xl"]
    deberta = lesson.LESSON.figure("position", lesson.Settings.from_mapping({"enc": "deberta"}))
    assert "k = 64" in titles["deberta"] and list(deberta.data[0].y[:2]) == [64, 65] and deberta.data[0].y[-1] == 127


@contextlib.contextmanager
def serving(store):
    """The pages read ``store`` through a training service of their own; the store is closed after."""
    service = TrainingService(store, JobLimiter(1, 4), device="cpu")
    previous = use_service(service)
    try:
        yield service
    finally:
        use_service(previous)
        store.close()


def test_a_new_runs_time_is_read_off_the_stored_runs_that_do_its_work(tmp_path):
    from lessons.training import duration_text, store_text
    from pe_core.train.shipped import seed_store, shipped_records

    store = open_store(str(tmp_path / "runs.sqlite3"))
    seed_store(store)

    def median_of(encoding=None):
        times = sorted(r.total_seconds for r in shipped_records() if encoding in (None, r.config.encoding))
        return times[len(times) // 2]

    rope = ExperimentConfig()
    alibi = rope.replace(encoding="alibi")
    with serving(store) as service:
        assert service.estimate_s(rope) == pytest.approx(median_of("rope"))
        assert service.estimate_s(alibi) == pytest.approx(median_of("alibi"))
        # a RoPE run evaluates and fine-tunes every method: the shape's median alone would understate it
        assert median_of("rope") > 2 * median_of("alibi")
        # work no stored run does is read off every run of its shape, scaled to its steps
        assert service.estimate_s(rope.replace(fine_tune=("pi",), steps=2000)) == pytest.approx(2 * median_of())
        text = store_text()
    assert f"Shipped runs like this one took about {duration_text(median_of('rope'))} each" in text


def test_the_missing_runs_time_adds_each_encodings_own_time(tmp_path):
    from lessons.training import Settings, duration_text, missing_runs, store_text
    from pe_core.train.shipped import shipped

    longer = {"steps": 2000}  # an experiment nothing shipped for: this server's own runs tell its time
    store = open_store(str(tmp_path / "runs.sqlite3"))
    own = {}
    for record in shipped().records:  # the default grid's (the retrieval experiment's ship beside them)
        if record.config.seed == 0 and record.config.encoding in ("rope", "alibi"):
            stored = dataclasses.replace(record, config=record.config.replace(**longer))
            store.put(stored)
            own[record.config.encoding] = stored.total_seconds
    with serving(store):
        settings = dataclasses.replace(Settings(), **longer)
        missing = missing_runs(settings)
        text = store_text(settings)
    counts = {encoding: sum(c.encoding == encoding for c in missing) for encoding in ("rope", "alibi")}
    assert len(missing) == 38 and counts == {"rope": 4, "alibi": 4}
    # an encoding without a stored run of its own costs what this server's runs of the shape cost (their median)
    shape_s = max(own.values())
    expected = counts["rope"] * own["rope"] + counts["alibi"] * own["alibi"] + 30 * shape_s
    assert f"A new run like this one takes about {duration_text(own['rope'])}" in text
    assert f"The 38 missing runs take about {duration_text(expected)}" in text


def test_the_shipped_runs_time_is_the_shipped_files_even_where_a_store_kept_an_older_files(tmp_path):
    from lessons.training import duration_text, store_text
    from pe_core.train.shipped import shipped_records

    store = open_store(str(tmp_path / "runs.sqlite3"))
    for record in shipped_records():  # as an older file seeded them: the same runs, timed on a loaded machine
        store.put(dataclasses.replace(record, total_seconds=25 * record.total_seconds))
    with serving(store) as service:
        text = store_text()
        estimate = service.estimate_s(ExperimentConfig())
        service.store.enqueue(ExperimentConfig(seed=7), "shape")
        (entry,) = service.queue_view()
    rope = sorted(r.total_seconds for r in shipped_records() if r.config.encoding == "rope")
    assert f"Shipped runs like this one took about {duration_text(rope[len(rope) // 2])} each" in text
    # the queue's times and a new run's estimate read the same file, not the store's older times
    assert estimate == entry.remaining_s == rope[len(rope) // 2]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_accuracy_tables_fit_a_desktop_page_with_each_mean_and_spread_on_one_line(language):
    from figures import training as draw
    from lessons.training import LESSON
    from ui.chart import TABLE_MIN_WIDTH

    assert TABLE_MIN_WIDTH <= 800  # a 1280 px desktop's page column
    with use_language(language):
        for name in ("table", "methods-table"):
            table = LESSON.figure(name).data[0]
            columns = [draw.TABLE_WIDTH * w / sum(table.columnwidth) for w in table.columnwidth]
            for row in zip(*table.cells.values, strict=True):
                for cell, width in list(zip(row, columns, strict=True))[2:]:
                    assert draw._wrapped_lines(cell, width, draw.CELL_FONT_SIZE) == 1, (name, cell, width)


def test_the_time_before_the_click_and_the_progress_lines_come_from_one_estimate(tmp_path):
    """Before "Train this experiment" the page names the run it trains and its time; once it trains, the progress
    line's time left starts from the same estimate (the service's for the job), and says where it was measured."""
    from types import SimpleNamespace

    from lessons.training import duration_text, run_estimate, time_text, what_one_run_trains
    from pe_core.train.shipped import seed_store, shipped

    store = open_store(str(tmp_path / "runs.sqlite3"))
    seed_store(store)
    config = ExperimentConfig(seed=3)  # not shipped: its time is read off the shipped runs like it
    with serving(store) as service:
        seconds, device = run_estimate(config)
        assert seconds == pytest.approx(service.estimate_s(config)) and device == shipped().training_device
        before = time_text(config)
        job = SimpleNamespace(fraction=0.0, remaining_s=lambda: seconds)  # a job that has not measured its speed
        during = time_text(config, job)
        measured = time_text(config, SimpleNamespace(fraction=0.5, remaining_s=lambda: 480.0))
    assert f"took about {duration_text(seconds)} each on" in before and "here" not in before
    assert during == f"about {duration_text(seconds)} left, going by runs on {device}"
    assert measured == "about 8 min left at the speed so far"
    assert what_one_run_trains(config).startswith(f"This button trains one run: RoPE, seed 3, {config.steps:,} steps")
