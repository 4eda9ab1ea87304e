"""The training lesson: one vocabulary with the CLI and the JSON, and figures read from the store."""

from __future__ import annotations

import dataclasses

import pytest

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
        seeds = figures["seeds"]
        assert [t.meta for t in seeds.data[:3]] == [{"method": "direct"}, {"method": "ntk"}, {"method": "yarn"}]
        assert seeds.data[1].x[0] == pytest.approx(record.result("ntk", 32).mean_accuracy)
        assert list(figures["per-length"].data[0].y) == pytest.approx(
            [record.result("direct", n).mean_accuracy for n in (16, 32)])
        assert "1 seeds" not in figures["per-length"].layout.title.text
    finally:
        use_service(previous)
        lesson.LESSON.clear_caches()
