"""Reading θᵢ from what engineers paste or upload, and refusing what cannot be θᵢ with a clear sentence."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
import torch

from pe_core.inputs import numbers_text, parse_numbers, read_config, read_numbers

VALUES = [1.0, 0.8659643530845642, 0.7498942017555237, 1.1920928955078125e-07]


@pytest.mark.parametrize("text", [
    "1.0, 0.8659643530845642, 0.7498942017555237, 1.1920928955078125e-07",
    "[1.0, 0.8659643530845642, 0.7498942017555237, 1.1920928955078125e-07]",
    '{"inv_freq": [1.0, 0.8659643530845642, 0.7498942017555237, 1.1920928955078125e-07]}',
    "tensor([1.0, 0.8659643530845642, 0.7498942017555237, 1.1920928955078125e-07], dtype=torch.float64)",
    "inv_freq\n1.0\n0.8659643530845642\n0.7498942017555237\n1.1920928955078125e-07\n",
    "1.0 0.8659643530845642; 0.7498942017555237\t1.1920928955078125e-07",
])
def test_every_pasted_form_gives_the_same_numbers(text):
    assert parse_numbers(text) == tuple(VALUES)


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("1.0, 0.5, apple", "'apple', is not a number"),
    ("[1.0, NaN]", "NaN"),
    ("1.0, inf", "infinite"),
    ("tensor([1.0000, 0.8660, ..., 0.0001])", "abbreviated"),
    ('{"weights": [1, 2]}', "without an 'inv_freq'"),
    ('["a", 1]', "is not a number"),
])
def test_bad_text_is_refused_with_a_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_numbers(text)


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def pt(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "data"), [
    ("theta.npy", npy(np.array(VALUES))),
    ("theta.npy", npy(np.array([VALUES]))),  # a (1, n) array
    ("theta.pt", pt(torch.tensor(VALUES, dtype=torch.float64))),
    ("model.pt", pt({"model.layers.0.self_attn.rotary_emb.inv_freq": torch.tensor(VALUES, dtype=torch.float64)})),
    ("theta.json", json.dumps(VALUES).encode()),
    ("theta.csv", ("inv_freq\n" + "\n".join(map(repr, VALUES))).encode()),
    ("theta.txt", " ".join(map(repr, VALUES)).encode()),
])
def test_every_file_type_gives_the_same_numbers(name, data):
    assert read_numbers(data, name) == tuple(VALUES)


class Payload:  # a pickled object: never loaded
    pass


@pytest.mark.parametrize(("name", "data", "message"), [
    ("theta.xlsx", b"PK\x03\x04", "unknown file type"),
    ("theta.npy", b"", "empty"),
    ("theta.npy", b"not an npy file at all", "could not be read as .npy"),
    ("theta.npy", npy(np.array([Payload()], dtype=object)), "not a plain .npy array"),
    ("theta.npy", npy(np.ones((4, 4))), "shape"),
    ("theta.npy", npy(np.array([1.0, np.nan])), "NaN"),
    ("theta.pt", b"garbage", "could not be read as a torch file"),
    ("theta.pt", pickle.dumps(Payload()), "could not be read as a torch file"),
    ("theta.pt", pt({"weights": torch.ones(3)}), "no tensor named inv_freq"),
    ("theta.pt", pt(torch.arange(4)), "int64"),
    ("theta.csv", b"\xff\xfe\x00garbage", "not text"),
    ("theta.json", b"[1.0, 2.0, \"three\"]", "is not a number"),
])
def test_bad_files_are_refused_with_a_reason(name, data, message):
    with pytest.raises(ValueError, match=message):
        read_numbers(data, name)


def test_numbers_text_round_trips_exactly():
    values = torch.randn(64, dtype=torch.float64).abs().tolist()
    assert parse_numbers(numbers_text(values)) == tuple(values)
    float32 = torch.tensor(values, dtype=torch.float32).to(torch.float64).tolist()
    assert parse_numbers(numbers_text(float32)) == tuple(float32)


def test_read_config(tmp_path):
    assert read_config("Llama-2-7B")["hidden_size"] == 4096
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"head_dim": 64, "rope_theta": 1e6}))
    assert read_config(str(path))["rope_theta"] == 1e6
    assert read_config('{"head_dim": 64}') == {"head_dim": 64}
    with pytest.raises(ValueError, match="neither a preset"):
        read_config("no-such-model")
    with pytest.raises(ValueError, match="JSON object"):
        read_config("[1, 2]")
