"""Inside the model: attention per method read from stored weights, against the model's own forward pass."""

from __future__ import annotations

import math

import pytest
import torch

from pe_core.model import TinyTransformer
from pe_core.train import ExperimentConfig, open_store
from pe_core.train.attention import (
    INSIDE_METHODS,
    attention_probabilities,
    entropy,
    inside,
    kept_weights,
    model_bytes,
    model_from_bytes,
    pooled,
)
from pe_core.train.evaluate import use_method
from tests.test_store import fake_record

CONFIG = ExperimentConfig(d_model=32, n_head=2, head_size=16, n_layer=2, train_length=16, steps=2, multiples=(1, 4))


def trained_like() -> TinyTransformer:
    """A model with weights large enough that attention is far from uniform (no training needed here)."""
    torch.manual_seed(0)
    model = TinyTransformer(CONFIG.model_config())
    with torch.no_grad():
        for block in model.blocks:
            block.attention.qkv.weight.mul_(12.0)
    return model.eval()


@pytest.mark.parametrize("method", [*INSIDE_METHODS, "rerope_logn", "leaky_rerope", "ntk_logn"])
def test_the_probabilities_are_the_ones_each_layer_attends_with(method):
    """Each layer's output is its probabilities times its values, projected: the probabilities the model used."""
    model = trained_like()
    idx = torch.randint(0, CONFIG.model_config().vocab_size, (2, 64))
    outputs = []
    hooks = [b.attention.register_forward_hook(lambda module, args, output: outputs.append((args[0], output)))
             for b in model.blocks]
    probabilities = attention_probabilities(model, idx, method)
    spec_before = model.rotary.spec
    use_method(model, method, 64)
    with torch.no_grad():
        model(idx)
    for hook in hooks:
        hook.remove()
    assert probabilities.shape == (2, 2, 2, 64, 64)
    assert torch.allclose(probabilities.sum(-1), torch.ones(2, 2, 2, 64))
    assert probabilities.triu(1).abs().max() == 0  # causal
    for layer, (x, output) in enumerate(outputs[-2:]):
        attention = model.blocks[layer].attention
        v = attention.qkv(x).view(2, 64, 3, 2, 16)[:, :, 2].transpose(1, 2)
        y = (probabilities[layer] @ v).transpose(1, 2).reshape(2, 64, 32)
        torch.testing.assert_close(attention.out(y), output, atol=2e-5, rtol=1e-4)
    model.set_rope(spec_before)


def test_the_rope_set_up_is_restored_and_other_encodings_are_refused():
    model = trained_like()
    before = (model.rotary.spec, model.rotary.logn, model.rotary.window)
    attention_probabilities(model, torch.zeros(1, 64, dtype=torch.long), "rerope_logn")
    assert (model.rotary.spec, model.rotary.logn, model.rotary.window) == before
    alibi = TinyTransformer(CONFIG.replace(encoding="alibi").model_config())
    with pytest.raises(ValueError, match="RoPE model"):
        attention_probabilities(alibi, torch.zeros(1, 8, dtype=torch.long), "direct")


def test_entropy_is_log_n_for_uniform_attention_and_zero_for_one_key():
    n = torch.arange(1, 9)
    uniform = torch.tril(torch.ones(8, 8)) / n[:, None]
    assert torch.allclose(entropy(uniform), n.double().log())
    assert entropy(torch.eye(8)).abs().max() == 0


def test_log_n_holds_the_entropy_down_past_l_and_yarn_sharpens_everywhere():
    """Su's argument on this model: past L, log-n scaling lowers each query's entropy below direct extrapolation's
    (the logits × log_L n > 1), within L it changes nothing; YaRN's temperature lowers it at every position."""
    model = trained_like()
    windows = torch.randint(0, CONFIG.model_config().vocab_size, (4, 64))
    seen = inside(model, windows, ("direct", "direct_logn", "yarn", "pi"))
    direct, logn, yarn, pi = seen.entropies.mean((1, 2))  # [T] each: mean over layers and heads
    train = CONFIG.train_length
    assert torch.allclose(direct[:train], logn[:train])
    assert bool((logn[train + 1:] < direct[train + 1:]).all())
    assert bool((yarn[1:] < pi[1:]).all())  # YaRN's interpolation plus 1/t > 1: sharper than PI's alone
    assert seen.maps.shape == (4, 2, 2, 64, 64) and seen.length == 64
    assert torch.allclose(seen.maps.sum(-1), torch.ones(4, 2, 2, 64, dtype=torch.float64))


def test_pooled_maps_keep_each_querys_mean_attention():
    maps = torch.rand(2, 64, 64, dtype=torch.float64)
    small = pooled(maps, 16)
    assert small.shape == (2, 16, 16)
    assert torch.allclose(small[:, 3, 5], maps[:, 12:16, 20:24].mean((-1, -2)))
    assert pooled(maps, 64) is maps


def test_weights_round_trip_through_the_store(tmp_path):
    model = trained_like()
    record = fake_record()
    with open_store(str(tmp_path / "runs.sqlite3")) as store:
        assert store.put(record, model_bytes(model)) and store.weights("nope") is None
        again = model_from_bytes(CONFIG, store.weights(record.hash))
    idx = torch.randint(0, CONFIG.model_config().vocab_size, (1, 16))
    with torch.no_grad():
        assert torch.equal(again(idx), model(idx))
    assert kept_weights(CONFIG.replace(encoding="alibi"), model) is None  # only RoPE runs keep theirs


def test_the_training_lesson_draws_a_stored_runs_attention_from_its_kept_weights(tmp_path, monkeypatch):
    from figures.training import log_binned
    from lessons import training as lesson
    from pe_core.jobs import JobLimiter
    from pe_core.train.service import TrainingService, use_service

    monkeypatch.setenv("PE_TRAIN_THREADS", "1")
    service = TrainingService(open_store(str(tmp_path / "runs.sqlite3")), JobLimiter(1, 4), device="cpu")
    previous = use_service(service)
    lesson.LESSON.clear_caches()
    try:
        settings = lesson.Settings.from_mapping({"L": 16, "dm": 32, "nh": 2, "hd": 16, "nl": 2, "steps": 20,
                                                 "x": (1, 4), "m": ("direct",), "ft": (), "fts": 10})
        maps = lesson.LESSON.figure("attention-maps", settings)  # trains the run, which keeps its weights
        config = lesson.LESSON.config(settings)
        assert service.store.weights(config.hash) is not None
        # four heads × (as trained at L, then direct, YaRN and log n at 4 L), on one log colour scale
        assert len(maps.data) == 16 and {t.meta["method"] for t in maps.data} == {"direct", "yarn"}
        first, direct = maps.data[0], maps.data[1]
        assert (len(first.z), len(direct.z)) == (16, 64)  # 64 positions fit: nothing pooled
        model = lesson.run_model(config)
        windows = lesson.evaluation_windows(load_corpus_once(), 64, 64 * lesson.INSIDE_WINDOWS)
        expected = inside(model, windows[:lesson.INSIDE_WINDOWS, :-1], ("direct",)).maps[0]
        head = [t.name for t in maps.data].index("layer 1, head 1 · Direct extrapolation, 4× L")
        assert torch.allclose(torch.tensor(maps.data[head].customdata), expected[0, 0].float(), atol=1e-6)
        # the maps' "what to notice": each method's share of attention on the last L keys, read off the drawn maps
        maps_caption = lesson.LESSON.caption("attention-maps", settings)
        for title in ("Direct extrapolation", "YaRN"):
            drawn = [torch.tensor(t.customdata, dtype=torch.float64) for t in maps.data
                     if t.name.endswith(f"· {title}, 4× L")]
            assert len(drawn) == 4
            shares = [sum(float(m[i, max(0, i - 15):i + 1].sum()) for i in range(16, 64)) / 48 for m in drawn]
            assert f"{sum(shares) / 4:.0%} with {title}" in maps_caption, (title, maps_caption)
        entropy_figure = lesson.LESSON.figure("attention-entropy", settings)
        curves = {t.name: t for t in entropy_figure.data}
        assert [t.meta for t in entropy_figure.data[:5]] == [{"method": m} for m in ("direct", "pi", "ntk", "yarn")] + \
            [{"method": "direct", "logn": True}]
        direct_curve, logn_curve = curves["Direct extrapolation"], curves["Direct extrapolation + log n"]
        within = [i for i, n in enumerate(direct_curve.x) if n < 16]
        assert [direct_curve.y[i] for i in within] == pytest.approx([logn_curve.y[i] for i in within])
        assert list(curves["attention spread evenly: ln n"].y[:3]) == pytest.approx([0.0, math.log(2), math.log(3)])
        # the caption's numbers are the drawn points: each curve's last (a bin of n, not n = 64 alone) and direct
        # extrapolation's point whose bin holds L
        caption = lesson.LESSON.caption("attention-entropy", settings)
        edges = sorted({round(x) for x in torch.logspace(0, math.log10(65), 65, dtype=torch.float64).tolist()})
        last_low, at_l = edges[-2], next(low for low, high in zip(edges, edges[1:], strict=False) if low <= 16 < high)
        assert last_low < 64 and f"At the curves' last point (n = {last_low}–64): direct extrapolation" in caption
        for name, shown in (("Direct extrapolation", "direct extrapolation"), ("YaRN", "YaRN"),
                            ("Position Interpolation", "Position Interpolation")):
            assert f"{shown} {curves[name].y[-1]:.2f}" in caption, name
        assert f"with log n {curves['Direct extrapolation + log n'].y[-1]:.2f}" in caption
        l_point = [i for i, n in enumerate(direct_curve.x) if n >= math.sqrt(at_l * at_l)][0]
        assert f"against {direct_curve.y[l_point]:.2f} at the point that holds L" in caption
        spread = sum(math.log(n) for n in range(last_low, 65)) / (65 - last_low)
        assert f"spread evenly, {spread:.2f}." in caption
        # an encoding without scaling methods says why there is nothing to draw (and trains nothing for it)
        alibi = lesson.Settings.from_mapping({"enc": "alibi", "L": 16, "dm": 32, "nh": 2, "hd": 16, "nl": 1,
                                              "steps": 20, "x": (1, 2)})
        note = lesson.LESSON.figure("attention-maps", alibi).layout.annotations[0].text
        assert "read from RoPE runs" in note
        x, y = log_binned([2.0] * 5 + [4.0] * 5)
        assert x[:5] == pytest.approx([1, 2, 3, 4, 5]) and y[-1] == pytest.approx(4.0)
    finally:
        use_service(previous)
        lesson.LESSON.clear_caches()


def load_corpus_once():
    from pe_core.data import load_corpus

    return load_corpus()
