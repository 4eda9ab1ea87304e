"""Shared test helpers: run a page with AppTest and read back the figures it drew."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("PE_EXPLORER_WARMUP", "0")  # nothing here is timed; no background work on two shared cores
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import run_page  # noqa: E402 - needs the repository on sys.path

_DTYPES = {"f8": np.float64, "f4": np.float32, "i1": np.int8, "u1": np.uint8, "i2": np.int16, "u2": np.uint16,
           "i4": np.int32, "u4": np.uint32, "i8": np.int64, "u8": np.uint64}


def _decode(value):
    """Plotly encodes numpy arrays as {'dtype', 'bdata', 'shape'}; turn them back into arrays."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
            if "shape" in value:
                shape = [int(n) for n in str(value["shape"]).split(",")]
                array = array.reshape(shape)
            return array
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def chart_figures(at) -> list[dict]:
    """Every plotly figure an AppTest run drew, as decoded dicts {'data': [...], 'layout': {...}}."""
    return [_decode(json.loads(element.proto.spec)) for element in at.get("plotly_chart")]


def figure_titled(at, text: str) -> dict:
    """The one figure whose title contains ``text``."""
    matches = [f for f in chart_figures(at) if text in str(f["layout"].get("title", {}).get("text", ""))]
    assert len(matches) == 1, f"expected one figure titled like {text!r}, found {len(matches)}"
    return matches[0]


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: one thread avoids OpenMP spin-waiting on a shared 2-core machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def page_runner():
    return run_page
