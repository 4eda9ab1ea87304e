"""The default grid's results, shipped with the app: a fresh install's store starts with them.

``data/grid_results.json.gz`` holds the finished ``RunRecord`` of every run of ``DEFAULT_GRID``
(every encoding × seeds 0-4, with their evaluations and fine-tunes), each under its config's hash
(which includes ``RESULTS_VERSION``), and ``data/default_rope.pt`` the weights of one of them (the
default RoPE run, seed 0, after pre-training: what the pages that look inside the model read).
``seed_store`` copies the records a store lacks into it when the app opens it. The shipped runs are
trained by ``REGENERATE``; a test fails, naming that command, when the code would name or compute
them differently.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path
from typing import NamedTuple

import torch

from pe_core.model import TinyTransformer
from pe_core.train.config import DEFAULT_GRID, RESULTS_VERSION, RETRIEVAL_GRID, ExperimentConfig, Grid
from pe_core.train.schema import SCHEMA_VERSION, RunRecord

DATA = Path(__file__).resolve().parent / "data"
RESULTS_FILE = DATA / "grid_results.json.gz"
WEIGHTS_FILE = DATA / "default_rope.pt"
WEIGHTS_CONFIG = ExperimentConfig()  # the run whose weights ship: the default RoPE run, seed 0
REGENERATE = "python -m pe_core.train --prepare --ship"
# the retrieval experiment's runs (``RETRIEVAL_GRID``: copying mix, passkey retrieval, DroPE), in a file of their own
RETRIEVAL_FILE = DATA / "retrieval_results.json.gz"
REGENERATE_RETRIEVAL = "python -m pe_core.train --prepare --ship --retrieval-grid"


class Shipped(NamedTuple):
    records: tuple[RunRecord, ...]
    grid: Grid
    training_device: str  # where the shipped runs were trained
    seconds: float  # the shipped runs' seconds there, summed (each run's share of its batch)


@functools.lru_cache(maxsize=1)
def shipped() -> Shipped | None:
    """The shipped results (None when the file is missing: a checkout that never generated them)."""
    return _read(RESULTS_FILE)


@functools.lru_cache(maxsize=1)
def shipped_retrieval() -> Shipped | None:
    """The retrieval experiment's shipped results (``RETRIEVAL_GRID``), or None."""
    return _read(RETRIEVAL_FILE)


def _read(path: Path) -> Shipped | None:
    if not path.exists():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        values = json.load(handle)
    grid = values["grid"]
    return Shipped(tuple(RunRecord.from_json(run) for run in values["runs"]),
                   Grid(ExperimentConfig.from_json(grid["base"]), tuple(grid["encodings"]), tuple(grid["seeds"])),
                   values["training_device"], float(values["seconds"]))


def shipped_records() -> tuple[RunRecord, ...]:
    """Every shipped run: the default grid's, then the retrieval experiment's."""
    return tuple(record for found in (shipped(), shipped_retrieval()) if found is not None
                 for record in found.records)


def seed_store(store) -> int:
    """Put the shipped runs that ``store`` lacks into it (the current results version only); how many.

    Several app instances starting at once on one shared store may race: a run another one put meanwhile
    is simply there."""
    added = 0
    for record in shipped_records():
        if record.results_version != RESULTS_VERSION or record.hash in store:
            continue
        try:
            added += bool(store.put(record))
        except Exception:  # noqa: BLE001 - the backend's own duplicate-key error; fine if the run is there now
            if record.hash not in store:
                raise
    return added


def shipped_model(config: ExperimentConfig) -> TinyTransformer | None:
    """The trained model of ``config`` when its weights ship (the default RoPE run, seed 0), else None."""
    if config.hash != WEIGHTS_CONFIG.hash or not WEIGHTS_FILE.exists():
        return None
    saved = torch.load(WEIGHTS_FILE, map_location="cpu", weights_only=True)
    if saved.get("hash") != config.hash:
        return None
    model = TinyTransformer(config.model_config())
    model.load_state_dict(saved["state_dict"])
    return model.eval()


def write_shipped(records: list[RunRecord], grid: Grid, training_device: str, model: TinyTransformer | None) -> None:
    """Write the shipped results (and ``model``'s weights, the run of ``WEIGHTS_CONFIG``); ``RETRIEVAL_GRID``'s to
    their own file."""
    DATA.mkdir(parents=True, exist_ok=True)
    retrieval = grid == RETRIEVAL_GRID
    path = RETRIEVAL_FILE if retrieval else RESULTS_FILE
    order = {c.hash: i for i, c in enumerate(grid.configs())}
    records = sorted(records, key=lambda r: order.get(r.hash, len(order)))
    values = {"schema_version": SCHEMA_VERSION, "results_version": RESULTS_VERSION,
              "regenerate": REGENERATE_RETRIEVAL if retrieval else REGENERATE,
              "grid": {"base": grid.base.to_json(), "encodings": list(grid.encodings), "seeds": list(grid.seeds)},
              "training_device": training_device,
              "seconds": round(sum(r.total_seconds for r in records), 1),
              "runs": [r.to_json() for r in records]}
    text = json.dumps(values, separators=(",", ":"), sort_keys=True)
    # mtime=0: the same results give the same bytes, so a regeneration that changes nothing changes no file
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as handle:
        handle.write(text.encode("utf-8"))
    if model is not None:
        state = {name: tensor.detach().cpu().clone() for name, tensor in model.state_dict().items()}
        torch.save({"hash": WEIGHTS_CONFIG.hash, "state_dict": state}, WEIGHTS_FILE)
    shipped.cache_clear()
    shipped_retrieval.cache_clear()


def default_grid_missing(store) -> list[ExperimentConfig]:
    """The default grid's configs a store lacks."""
    return [c for c in DEFAULT_GRID.configs() if c.hash not in store]
