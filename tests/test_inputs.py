"""Reading θᵢ from what engineers paste or upload, and refusing what cannot be θᵢ with a clear sentence."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest
import torch

from pe_core.inputs import numbers_text, parse_numbers, read_config, read_inv_freq, read_numbers, read_tensors

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


# ---- state dicts: a checkpoint's or a module's inv_freq buffers -------------------------------------------------


def safetensors_bytes(tensors: dict) -> bytes:
    from safetensors.torch import save

    return save(tensors)


def gemma3_module_state(full: torch.Tensor, sliding: torch.Tensor) -> dict:
    """A Gemma 3 rotary module's buffers, as transformers names them (one θ per layer type, and the originals)."""
    return {"model.rotary_emb.full_attention_inv_freq": full,
            "model.rotary_emb.full_attention_original_inv_freq": full * 8,
            "model.rotary_emb.sliding_attention_inv_freq": sliding,
            "model.rotary_emb.sliding_attention_original_inv_freq": sliding.clone()}


def test_a_module_state_dict_is_read_by_its_inv_freq_key():
    theta = torch.tensor(VALUES, dtype=torch.float64)
    state = {"model.embed_tokens.weight": torch.ones(4, 2), "model.rotary_emb.inv_freq": theta,
             "model.rotary_emb.original_inv_freq": theta * 4}
    for name, data in (("model.pt", pt(state)), ("model.bin", pt(state)),
                       ("model.safetensors", safetensors_bytes(state)), ("nested.pt", pt({"state_dict": state}))):
        read = read_inv_freq(data, name)
        assert read.values == tuple(VALUES), name
        assert read.key.endswith("rotary_emb.inv_freq") and "original" not in read.key
    assert read_inv_freq(pt(theta), "theta.pt").key is None


def test_per_layer_type_buffers_are_picked_by_layer_type():
    full = torch.tensor(VALUES, dtype=torch.float32) / 8
    sliding = torch.tensor(VALUES, dtype=torch.float32)
    data = safetensors_bytes(gemma3_module_state(full, sliding))
    read = read_inv_freq(data, "gemma3.safetensors", "sliding_attention")
    assert read.key == "model.rotary_emb.sliding_attention_inv_freq"
    assert read.values == tuple(sliding.double().tolist())
    assert read_inv_freq(data, "gemma3.safetensors", "full_attention").values == tuple(full.double().tolist())
    with pytest.raises(ValueError, match="--layer-type.*full_attention_inv_freq.*sliding_attention_inv_freq"):
        read_inv_freq(data, "gemma3.safetensors")  # two different θ and no layer type: the keys are listed
    with pytest.raises(ValueError, match="no inv_freq for chunked_attention layers"):
        read_inv_freq(data, "gemma3.safetensors", "chunked_attention")


def test_per_layer_copies_of_one_buffer_are_one_reading():
    theta = torch.tensor(VALUES, dtype=torch.float64)
    state = {f"model.layers.{i}.self_attn.rotary_emb.inv_freq": theta.clone() for i in range(3)}
    assert read_inv_freq(pt(state), "old.pt").key == "model.layers.0.self_attn.rotary_emb.inv_freq"
    state["model.layers.2.self_attn.rotary_emb.inv_freq"] = theta * 2
    with pytest.raises(ValueError, match="several different inv_freq"):
        read_inv_freq(pt(state), "old.pt")


def test_read_tensors_reads_every_container():
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    buffer = io.BytesIO()
    np.savez(buffer, q=q.numpy(), k=k.numpy())
    for name, data in (("out.pt", pt({"q": q, "k": k})), ("out.pt", pt((q, k))),
                       ("out.safetensors", safetensors_bytes({"q": q, "k": k})), ("out.npz", buffer.getvalue())):
        tensors = read_tensors(data, name)
        assert torch.equal(tensors["q"], q) and torch.equal(tensors["k"], k), name
    with pytest.raises(ValueError, match="could not be read as .safetensors"):
        read_tensors(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}", "out.safetensors")
    with pytest.raises(ValueError, match="unknown file type"):
        read_tensors(b"1", "out.csv")


def test_safetensors_without_the_package_says_how_to_proceed(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_safetensors(name, *args, **kwargs):
        if name.startswith("safetensors"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_safetensors)
    with pytest.raises(ValueError, match="needs the safetensors package"):
        read_numbers(b"12345678", "model.safetensors")


def test_check_cli_reads_the_layer_types_own_buffer(tmp_path, capsys):
    from pathlib import Path

    from pe_core import rope_frequencies
    from pe_core.check import main
    from pe_core.config import layer_map

    config_path = Path(__file__).parent / "data" / "model_configs" / "google--gemma-3-27b-it.json"
    model = layer_map(json.loads(config_path.read_text()))
    theta = {kind.layer_type: rope_frequencies(kind.spec).inv_freq.to(torch.float32) for kind in model.rotary_kinds}
    state = tmp_path / "rotary.safetensors"
    state.write_bytes(safetensors_bytes(gemma3_module_state(theta["full_attention"], theta["sliding_attention"])))
    for layer_type in ("sliding_attention", "full_attention"):
        assert main([str(config_path), "--inv-freq", str(state), "--layer-type", layer_type, "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["verdict"] == "match"
        assert result["inv_freq_key"] == f"model.rotary_emb.{layer_type}_inv_freq"
    # without --layer-type: the layers context extension scales (full attention), and the key is named
    assert main([str(config_path), "--inv-freq", str(state)]) == 0
    assert "model.rotary_emb.full_attention_inv_freq" in capsys.readouterr().out
