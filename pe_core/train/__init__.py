"""The tiny-model experiment, in the files a reader expects (nanoGPT-style):

- ``pe_core.model``: the transformer and its position encodings (``ENCODINGS``);
- ``config``: the experiment as data (``ExperimentConfig``, its hash, the default ``Grid``);
- ``loop``: the one training loop (``TrainingRun``; fine-tuning is the same loop from a checkpoint), which
  sees a batch of models (``TrainingBatch``: runs that share shapes train together);
- ``evaluate``: per-position loss and accuracy at each length, for each method of ``INFERENCE_METHODS``;
- ``experiment``: train → evaluate → fine-tune as a generator of ``Status`` records, one run or a batch of
  them (``run_experiments``: the seeds of one experiment together);
- ``shipped``: the default grid's results, which ship with the app and fill an empty store;
- ``schema``: the JSON of a finished run (``RunRecord``), for the CLI and the store;
- ``store``: the run store (SQLite by default, PostgreSQL for a shared server);
- ``service``: stored results at once, one run per config, a queue for the rest;
- ``worker``: training workers that drain the store's queue from any machine (``--worker``);
- ``attention``: each head's attention and its entropy per method, from a run's stored weights;
- ``spectrum``: how the toy's rotary spectrum compares with real models';
- ``__main__``: the CLI, ``python -m pe_core.train --help``.
"""

from pe_core.device import cpu_threads
from pe_core.train.config import (
    DEFAULT_GRID,
    DEFAULT_SEEDS,
    FINE_TUNABLE,
    RESULTS_VERSION,
    ExperimentConfig,
    Grid,
    TrainConfig,
    batch_size_for,
)
from pe_core.train.evaluate import AS_TRAINED, INFERENCE_METHODS, Evaluation, LengthResult, evaluate
from pe_core.train.experiment import (
    EVALUATING,
    FINE_TUNING,
    TRAINING,
    ExperimentBatch,
    ExperimentRun,
    RunUpdate,
    Status,
    batch_groups,
    run_experiment,
    run_experiments,
)
from pe_core.train.loop import Progress, TrainingBatch, TrainingRun
from pe_core.train.schema import SCHEMA_VERSION, Checkpoint, Cost, FineTuneResult, MethodResult, RecordError, RunRecord
from pe_core.train.store import RunStore, StoreError, open_store

__all__ = [
    "AS_TRAINED", "DEFAULT_GRID", "DEFAULT_SEEDS", "EVALUATING", "FINE_TUNABLE", "FINE_TUNING", "INFERENCE_METHODS",
    "RESULTS_VERSION", "SCHEMA_VERSION", "TRAINING", "Checkpoint", "Cost", "Evaluation", "ExperimentBatch", "ExperimentConfig", "ExperimentRun", "FineTuneResult", "Grid",
    "LengthResult", "MethodResult", "Progress", "RecordError", "RunRecord", "RunStore", "RunUpdate", "Status",
    "StoreError", "TrainConfig", "TrainingBatch", "TrainingRun", "batch_groups", "batch_size_for", "cpu_threads",
    "evaluate", "main", "open_store", "run_experiment", "run_experiments",
]


def main(argv=None):
    """The CLI (see ``python -m pe_core.train --help``)."""
    from pe_core.train.__main__ import main as cli

    return cli(argv)
