"""Passkey retrieval (needle in a haystack) and DroPE: the scorer, the probes, the training mix, the fine-tune."""

from __future__ import annotations

import pytest
import torch

from pe_core.data import VOCABULARY, decode, load_corpus
from pe_core.model import ModelConfig, TinyTransformer
from pe_core.train import ExperimentConfig, run_experiment
from pe_core.train.config import DEFAULT_GRID, RESULTS_VERSION
from pe_core.train.evaluate import DROPE, FINE_TUNABLE, evaluate_one, retrieve, use_method
from pe_core.train.retrieval import (
    DEPTHS,
    DIGIT_IDS,
    NEEDLE_MARKER,
    PASSKEY_DIGITS,
    accuracy_by_depth,
    chance,
    exact_hits,
    exact_probability,
    make_probes,
    needle_length,
    needle_start,
    plant_copies,
    score,
)
from pe_core.train.schema import RunRecord

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    monkeypatch.setenv("PE_TRAIN_THREADS", "1")


def copier_logits(tokens: torch.Tensor) -> torch.Tensor:
    """Hand-made logits of a perfect copier: at every position, all weight on the next character."""
    logits = torch.zeros(*tokens.shape, len(VOCABULARY))
    logits[:, :-1].scatter_(-1, tokens[:, 1:, None], 50.0)
    return logits


@pytest.fixture(scope="module")
def text():
    return load_corpus().validation[:20_000]


# ---- the probes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [16, 64, 512])
def test_the_needle_sits_exactly_where_its_depth_says_and_the_query_ends_the_probe(text, length):
    probes = make_probes(text, length, trials=3)
    n = needle_length()
    room = length - 2 * n
    assert probes.tokens.shape == (len(DEPTHS) * 3, length)
    for row, (tokens, passkey, start) in enumerate(zip(probes.tokens, probes.passkeys, probes.starts, strict=True)):
        depth = DEPTHS[row // 3]
        assert int(start) == round(depth * room)
        needle = NEEDLE_MARKER + "".join(map(str, passkey.tolist()))
        assert decode(tokens[start:start + n]) == needle
        assert decode(tokens[-n:]) == needle
    assert probes.starts[0] == 0 and probes.starts[-1] == room  # depth 0: first character; 1: just before the query


def test_needle_start_refuses_what_does_not_fit():
    assert needle_start(12, 1.0) == 0
    with pytest.raises(ValueError, match="no room"):
        needle_start(11, 0.5)
    with pytest.raises(ValueError, match="depth"):
        needle_start(64, 1.5)


def test_probes_are_the_same_for_every_model_and_differ_per_trial(text):
    a, b = make_probes(text, 64), make_probes(text, 64)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.passkeys, b.passkeys)
    assert len({tuple(p.tolist()) for p in a.passkeys}) > len(a.passkeys) // 2


# ---- the scorer -----------------------------------------------------------------------------------------

def test_a_perfect_copier_retrieves_every_passkey_at_every_depth(text):
    probes = make_probes(text, 128)
    logits = copier_logits(probes.tokens)
    hits = exact_hits(logits, probes.passkeys)
    assert hits.all()
    assert accuracy_by_depth(hits, len(DEPTHS)) == (1.0,) * len(DEPTHS)
    assert torch.allclose(exact_probability(logits, probes.passkeys), torch.ones(len(hits)), atol=1e-3)


def test_a_uniform_model_scores_chance():
    generator = torch.Generator().manual_seed(0)
    digits = 2
    passkeys = torch.randint(0, 10, (40_000, digits), generator=generator)
    uniform = torch.zeros(len(passkeys), 8, len(VOCABULARY))
    # the probability of the exact passkey is 10^-digits for every probe
    assert torch.allclose(exact_probability(uniform, passkeys), torch.full((len(passkeys),), chance(digits)))
    # top-1 with ties to the first digit: right only for the passkey 00, a 1-in-100 draw
    assert exact_hits(uniform, passkeys).double().mean() == pytest.approx(chance(digits), abs=0.0015)
    assert chance() == 10.0 ** -PASSKEY_DIGITS


def test_one_wrong_digit_fails_the_probe(text):
    probes = make_probes(text, 64, trials=1)
    logits = copier_logits(probes.tokens)
    wrong = (probes.passkeys[0, -1] + 1) % 10
    logits[0, -2, DIGIT_IDS[wrong]] = 100.0  # the last digit's prediction
    hits = exact_hits(logits, probes.passkeys)
    assert not hits[0] and hits[1:].all()


def test_scoring_every_depth_at_once_equals_one_by_one(text):
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig(n_layer=1, n_head=2, d_model=32, train_length=16, max_positions=64))
    probes = make_probes(text, 64, trials=1)
    together = retrieve(model, probes, "yarn")
    assert model.rope_spec == model.config.default_rope()  # the method's set-up is undone
    use_method(model, "yarn", 64)
    with torch.no_grad():
        batched = model.eval()(probes.tokens)
        alone = torch.cat([model(probes.tokens[r:r + 1]) for r in range(len(probes.tokens))])
    torch.testing.assert_close(alone, batched, rtol=0, atol=1e-3)  # the batch changes only float rounding
    hits = exact_hits(alone, probes.passkeys)
    assert together.accuracy == accuracy_by_depth(hits, len(DEPTHS))
    assert together == score(model, probes, "yarn")._replace(seconds=together.seconds)


# ---- the training mix -----------------------------------------------------------------------------------

def test_planted_copies_hold_a_needle_and_its_later_repeat(text):
    generator = torch.Generator().manual_seed(3)
    batch = torch.stack([text[i:i + 65] for i in range(0, 6400, 100)]).clone()
    before = batch.clone()
    plant_copies(batch, 0.5, generator)
    changed = (batch != before).any(1)
    assert 16 < int(changed.sum()) < 48  # about half the rows
    for row in batch[changed]:
        line = decode(row)
        first = line.find(NEEDLE_MARKER)
        needle = line[first:first + needle_length()]
        assert needle[2:].isdigit() and line.find(needle, first + needle_length()) > first
    assert torch.equal(plant_copies(before.clone(), 0.0, generator), before)


# ---- DroPE ----------------------------------------------------------------------------------------------

def test_a_dropped_rope_model_has_no_rotation_left():
    torch.manual_seed(1)
    model = TinyTransformer(ModelConfig(n_layer=2, n_head=2, d_model=32, train_length=16, max_positions=64)).eval()
    idx = torch.randint(0, 90, (1, 32))
    idx[0, 3] = idx[0, 20] = 42  # the same content at two offsets from the last query (28 and 11 back)
    use_method(model, DROPE, 32)
    cos, sin = model.rotary.cos_sin(32, torch.device("cpu"), torch.float32)
    assert torch.equal(cos, torch.ones_like(cos)) and torch.equal(sin, torch.zeros_like(sin))
    q, k = _layer0_qk(model, idx)
    scores = q[:, -1] @ k.transpose(-1, -2)[0] if q.dim() == 2 else torch.einsum("hd,htd->ht", q[:, -1], k)
    torch.testing.assert_close(scores[:, 3], scores[:, 20], rtol=0, atol=0)  # NoPE: the offset does not count
    model.set_rope(None)  # the rotation back: the same content scores differently at the two offsets
    q, k = _layer0_qk(model, idx)
    scores = torch.einsum("hd,htd->ht", q[:, -1], k)
    assert (scores[:, 3] - scores[:, 20]).abs().max() > 1e-3


def test_drope_is_a_fine_tune_and_its_model_keeps_no_rotation(text):
    assert DROPE in FINE_TUNABLE
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig(n_layer=1, n_head=2, d_model=32, train_length=16, max_positions=64))
    windows = torch.stack([text[i:i + 65] for i in range(0, 800, 100)])
    use_method(model, DROPE, 64)
    dropped = evaluate_one(model, windows, DROPE)
    model.set_rope(None)
    plain = evaluate_one(model, windows, "direct")
    assert dropped.mean_loss != pytest.approx(plain.mean_loss, abs=1e-6)
    assert not model.rotary.dropped  # evaluate_one restored the set-up it found


def _layer0_qk(model, idx):
    """The first layer's rotated queries and keys [heads, T, d] (the attention's own code path)."""
    captured = {}
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention

    def spy(q, k, v, **kwargs):
        captured.setdefault("qk", (q[0].float(), k[0].float()))
        return original(q, k, v, **kwargs)

    F.scaled_dot_product_attention = spy
    try:
        model(idx)
    finally:
        F.scaled_dot_product_attention = original
    return captured["qk"]


# ---- the experiment -------------------------------------------------------------------------------------

def test_an_experiment_with_retrieval_scores_every_method_length_and_fine_tune_and_keeps_old_hashes():
    config = ExperimentConfig(d_model=32, n_head=2, head_size=16, n_layer=1, train_length=16, steps=4,
                              multiples=(1, 2), eval_tokens=128, methods=("direct", "pi", "dynamic"),
                              fine_tune=("pi", DROPE), fine_tune_steps=2, copy_fraction=0.5, retrieval=True)
    record = run_experiment(config, device="cpu")
    keys = [(e.method, e.length, e.tuned) for e in record.retrieval]
    assert keys == [(m, n, False) for n in (16, 32) for m in ("direct", "pi", "dynamic")] + \
        [(m, n, True) for m in ("pi", DROPE) for n in (16, 32)]
    for entry in record.retrieval:
        assert entry.depths == DEPTHS and all(a in {0, 0.25, 0.5, 0.75, 1} for a in entry.accuracy)
    assert {f.method for f in record.fine_tunes} == {"pi", DROPE}
    again = RunRecord.from_json(record.to_json())
    assert again.retrieval == record.retrieval and again.hash == record.hash
    # the knobs at their old values name the old experiments: stored and shipped runs keep their hashes
    plain = config.replace(copy_fraction=0.0, retrieval=False, fine_tune=("pi",))
    assert "copy_fraction" not in plain._identity() and "retrieval" not in plain._identity()
    assert config.hash != plain.hash
    assert DEFAULT_GRID.base.copy_fraction == 0.0 and RESULTS_VERSION == 2
    assert "retrieval" not in RunRecord.from_json(record.to_json() | {"retrieval": []}).to_json()
