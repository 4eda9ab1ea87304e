"""The default grid's results ship with the app: they are the code's runs, under the code's hashes.

When one of these fails, the code now names or computes the shipped runs differently: retrain them
with the command in the message (about half an hour on two CPU cores) and commit the new data.
"""

from __future__ import annotations

import pytest
import torch

from pe_core.train import DEFAULT_GRID, RESULTS_VERSION, TrainingRun, open_store
from pe_core.train.config import RETRIEVAL_GRID
from pe_core.train.evaluate import DROPE, evaluate_one, evaluation_windows
from pe_core.train.retrieval import DEPTHS, TRIALS_PER_DEPTH
from pe_core.train.schema import DIGITS
from pe_core.train.shipped import (
    REGENERATE,
    REGENERATE_RETRIEVAL,
    RESULTS_FILE,
    RETRIEVAL_FILE,
    WEIGHTS_CONFIG,
    seed_store,
    shipped,
    shipped_model,
    shipped_retrieval,
)

STEPS_CHECKED = 5
STALE = f"The shipped results no longer match the code; regenerate them with `{REGENERATE}` and commit " \
        "pe_core/train/data/."


@pytest.fixture(scope="module")
def found():
    data = shipped()
    assert data is not None, f"{RESULTS_FILE} is missing; make it with `{REGENERATE}`."
    return data


def test_the_shipped_runs_are_the_default_grids_runs_under_todays_hashes(found):
    grid = {c.hash: c for c in DEFAULT_GRID.configs()}
    assert found.grid == DEFAULT_GRID, STALE
    for record in found.records:
        assert record.results_version == RESULTS_VERSION, STALE
        assert record.hash in grid, STALE
        assert record.config == grid[record.hash]
    assert len({r.hash for r in found.records}) == len(found.records)
    assert {r.hash for r in found.records} == set(grid), "every run of the grid ships"


def test_each_encodings_shipped_run_starts_as_the_code_trains_it_today(found):
    # the first steps from the same seed: the same initial weights, batches, model and optimiser
    firsts = {}
    for record in found.records:
        firsts.setdefault(record.config.encoding, record)
    for record in firsts.values():
        config = record.config
        run = TrainingRun(config.model_config(), config.train_config(), device="cpu")
        losses = [p.loss for p in run.steps(STEPS_CHECKED)]
        shipped_losses = [p.loss for p in record.loss_curve[:STEPS_CHECKED]]
        assert losses == pytest.approx(shipped_losses, abs=2 * 10 ** -DIGITS), f"{config.encoding}: {STALE}"


def test_the_shipped_weights_give_the_shipped_runs_evaluation(found):
    record = next(r for r in found.records if r.hash == WEIGHTS_CONFIG.hash)
    model = shipped_model(WEIGHTS_CONFIG)
    assert model is not None, STALE
    from pe_core.data import load_corpus

    corpus = load_corpus()
    for method, length in (("direct", WEIGHTS_CONFIG.train_length), ("yarn", WEIGHTS_CONFIG.longest)):
        windows = evaluation_windows(corpus, length, WEIGHTS_CONFIG.eval_tokens)
        measured = evaluate_one(model, windows, method)
        stored = record.result(method, length)
        assert measured.mean_accuracy == pytest.approx(stored.mean_accuracy, abs=1e-4), STALE
        torch.testing.assert_close(measured.accuracy.float(), torch.tensor(stored.accuracy).float(), rtol=0,
                                   atol=2 * 10 ** -DIGITS, msg=STALE)
    assert shipped_model(WEIGHTS_CONFIG.replace(seed=1)) is None  # only this run's weights ship


def test_a_fresh_store_starts_with_the_shipped_runs_once(found, tmp_path):
    with open_store(str(tmp_path / "runs.sqlite3")) as store:
        ships = len(found.records) + len(shipped_retrieval().records if shipped_retrieval() else ())
        assert seed_store(store) == ships
        assert store.count() == ships
        assert seed_store(store) == 0  # the next start adds nothing
        record = found.records[0]
        assert store.get(record.hash).results == record.results


def test_the_shipped_file_is_compact():
    assert RESULTS_FILE.stat().st_size < 3 * 2 ** 20


# ---- the retrieval experiment's runs (passkey retrieval and DroPE) ---------------------------------------

STALE_RETRIEVAL = f"The shipped retrieval results no longer match the code; regenerate them with " \
                  f"`{REGENERATE_RETRIEVAL}` and commit pe_core/train/data/."


@pytest.fixture(scope="module")
def retrieval_found():
    data = shipped_retrieval()
    assert data is not None, f"{RETRIEVAL_FILE} is missing; make it with `{REGENERATE_RETRIEVAL}`."
    return data


def test_the_shipped_retrieval_runs_are_the_retrieval_grids_runs_under_todays_hashes(retrieval_found):
    grid = {c.hash: c for c in RETRIEVAL_GRID.configs()}
    assert retrieval_found.grid == RETRIEVAL_GRID, STALE_RETRIEVAL
    assert {r.hash for r in retrieval_found.records} == set(grid), "every run of the retrieval grid ships"
    assert len(retrieval_found.records) == len(RETRIEVAL_GRID.seeds) == 3
    for record in retrieval_found.records:
        assert record.results_version == RESULTS_VERSION and record.config == grid[record.hash], STALE_RETRIEVAL
        c = record.config
        # every method at every length, and every fine-tune (DroPE among them) at every length, every depth
        expected = [(m, n, False) for n in c.lengths for m in c.evaluated_methods] + \
                   [(m, n, True) for m in c.fine_tuned_methods for n in c.lengths]
        assert [(e.method, e.length, e.tuned) for e in record.retrieval] == expected
        trials = TRIALS_PER_DEPTH
        for entry in record.retrieval:
            assert entry.depths == DEPTHS
            assert all(round(a * trials) == pytest.approx(a * trials, abs=1e-9) for a in entry.accuracy)
        assert DROPE in {f.method for f in record.fine_tunes}


def test_the_shipped_retrieval_runs_start_as_the_code_trains_them_today(retrieval_found):
    record = retrieval_found.records[0]
    config = record.config
    run = TrainingRun(config.model_config(), config.train_config(), device="cpu")
    losses = [p.loss for p in run.steps(STEPS_CHECKED)]
    shipped_losses = [p.loss for p in record.loss_curve[:STEPS_CHECKED]]
    assert losses == pytest.approx(shipped_losses, abs=2 * 10 ** -DIGITS), STALE_RETRIEVAL


def test_a_fresh_store_starts_with_both_shipped_experiments(found, retrieval_found, tmp_path):
    with open_store(str(tmp_path / "both.sqlite3")) as store:
        assert seed_store(store) == len(found.records) + len(retrieval_found.records)
        record = retrieval_found.records[0]
        assert store.get(record.hash).retrieval == record.retrieval


def test_the_shipped_retrieval_file_is_compact():
    assert RETRIEVAL_FILE.stat().st_size < 2 ** 20
