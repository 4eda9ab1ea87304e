"""Inside the model: each head's attention at the training length and beyond, per method, and its entropy.

Su Jianlin's entropy argument (kexue.fm/archives/8823): a query that sees n keys whose scores keep
their spread spreads its attention over more of them as n grows, so the entropy of its attention
grows with n (like log n when the scores are alike), and past the training length L the model reads
attention flatter than any it learned from. log-n scaling multiplies the logits by max(1, log_L n),
holding the entropy near its value at L. YaRN (Peng et al. 2023, §3.4) multiplies them by one
1/t = (0.1 ln s + 1)² for the whole extended context: sharper attention at every position.

Computed from a run's stored weights (``model_bytes`` / ``model_from_bytes``): the model runs with a
method as evaluation sets it up (``pe_core.train.evaluate.use_method``), and each layer's attention
probabilities are computed from the same normalised input, projections, rotation and scaling the
layer's own forward pass uses.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import torch

from pe_core.model import TinyTransformer, rectified_scores, rotate
from pe_core.train.config import ExperimentConfig
from pe_core.train.evaluate import use_method

INSIDE_METHODS = ("direct", "pi", "ntk", "yarn", "direct_logn")  # what changes the logits' scale or angles
WINDOWS_PER_PASS = 4  # windows whose attention is held at once (4 × heads × layers × T² floats)


def model_bytes(model: TinyTransformer) -> bytes:
    """A trained model's weights as the store keeps them."""
    buffer = io.BytesIO()
    torch.save({name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}, buffer)
    return buffer.getvalue()


def kept_weights(config: ExperimentConfig, model: TinyTransformer) -> bytes | None:
    """What a finished run stores of its weights: a RoPE model's (the views inside it run RoPE's methods), else
    nothing (about half a megabyte a run saved)."""
    return model_bytes(model) if config.scalable else None


def model_from_bytes(config: ExperimentConfig, data: bytes) -> TinyTransformer:
    """The trained model of ``config`` from its stored weights (on the CPU, in evaluation mode)."""
    model = TinyTransformer(config.model_config())
    model.load_state_dict(torch.load(io.BytesIO(data), map_location="cpu", weights_only=True))
    return model.eval()


def _layer_probabilities(model: TinyTransformer, block_index: int, x: torch.Tensor) -> torch.Tensor:
    """[batch, heads, T, T]: the attention of block ``block_index`` for its normalised input ``x``."""
    attention, rotary = model.blocks[block_index].attention, model.rotary
    batch, length, _width = x.shape
    q, k, _v = attention.qkv(x).view(batch, length, 3, attention.n_head, attention.head_dim).permute(2, 0, 3, 1, 4)
    q, k = q.float(), k.float()
    if rotary.window is not None and length > rotary.window:
        if rotary.logn:
            q = q * rotary.logn_scale(length, x.device, torch.float32)
        scores = rectified_scores(q, k, rotary)
    else:
        cos, sin = rotary.cos_sin(length, x.device, torch.float32)
        q, k = rotate(q, cos, sin, rotary.pairing), rotate(k, cos, sin, rotary.pairing)
        if rotary.logn:
            q = q * rotary.logn_scale(length, x.device, torch.float32)
        scores = q @ k.transpose(-1, -2)
    future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
    return (scores / math.sqrt(attention.head_dim)).masked_fill(future, float("-inf")).softmax(-1)


@torch.no_grad()
def attention_probabilities(model: TinyTransformer, idx: torch.Tensor, method: str) -> torch.Tensor:
    """[layers, batch, heads, T, T]: every head's attention over token ids ``idx`` [batch, T] with ``method`` set
    up for T (a key of ``INFERENCE_METHODS``; the model's RoPE set-up is restored afterwards)."""
    rotary = model.rotary
    if rotary is None:
        raise ValueError(f"Attention per scaling method needs a RoPE model (this one uses {model.config.position!r}).")
    before = (rotary.spec, rotary.logn, rotary.window, rotary.leak)
    inputs: list[torch.Tensor] = []
    hooks = [block.attention.register_forward_pre_hook(lambda module, args: inputs.append(args[0]))
             for block in model.blocks]
    try:
        use_method(model, method, idx.shape[1])
        model(idx)
        return torch.stack([_layer_probabilities(model, i, x) for i, x in enumerate(inputs)])
    finally:
        for hook in hooks:
            hook.remove()
        spec, logn, window, leak = before
        model.set_rope(spec, logn=logn, window=window, leak=leak)


def entropy(probabilities: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each query's attention (the last axis sums to 1), in float64."""
    p = probabilities.double()
    return -torch.special.xlogy(p, p).sum(-1)


class Inside:
    """What the attention of a run's model looks like at one length per method, averaged over text windows."""

    def __init__(self, methods: Sequence[str], maps: torch.Tensor, entropies: torch.Tensor):
        self.methods = tuple(methods)
        self.maps = maps  # [methods, layers, heads, T, T] mean attention over the windows
        self.entropies = entropies  # [methods, layers, heads, T] mean entropy (nats) of the query at each position

    @property
    def length(self) -> int:
        return self.maps.shape[-1]


@torch.no_grad()
def inside(model: TinyTransformer, windows: torch.Tensor, methods: Sequence[str] = INSIDE_METHODS) -> Inside:
    """Mean attention maps and per-position entropies of ``model`` on token ids ``windows`` [count, T], for each
    method set up for T."""
    maps, entropies = [], []
    for method in methods:
        total_map, total_entropy = None, None
        for part in torch.split(windows, WINDOWS_PER_PASS):
            probabilities = attention_probabilities(model, part, method)  # [layers, batch, heads, T, T]
            part_map, part_entropy = probabilities.double().sum(1), entropy(probabilities).sum(1)
            total_map = part_map if total_map is None else total_map + part_map
            total_entropy = part_entropy if total_entropy is None else total_entropy + part_entropy
        maps.append(total_map / len(windows))
        entropies.append(total_entropy / len(windows))
    return Inside(methods, torch.stack(maps), torch.stack(entropies))


def pooled(maps: torch.Tensor, size: int) -> torch.Tensor:
    """[..., T, T] attention averaged over blocks to at most ``size`` × ``size`` (what a screen can show): each
    cell the mean attention of the queries and keys it covers."""
    length = maps.shape[-1]
    block = max(1, math.ceil(length / size))
    if block == 1:
        return maps
    flat = maps.reshape(-1, 1, length, length)
    return torch.nn.functional.avg_pool2d(flat, block, ceil_mode=True).reshape(*maps.shape[:-2], -1,
                                                                              math.ceil(length / block))
