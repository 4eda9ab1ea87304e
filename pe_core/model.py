"""A tiny decoder-only transformer with pluggable position handling, in the style of nanoGPT.

Position handling (``ModelConfig.position``):

- ``none``: no positional encoding (NoPE); the causal mask alone breaks the symmetry.
- ``learned``: a trained table of absolute position vectors added to the token embeddings
  (GPT-2). Rows past the training length never receive a gradient, so they stay at their
  random initialisation: that is what "direct extrapolation" means for this encoding.
- ``sinusoidal``: PE(m, 2i) = sin(m·b^(−2i/d)), PE(m, 2i+1) = cos(m·b^(−2i/d)) added to the
  token embeddings, which are scaled by √d_model first as in Vaswani et al. 2017 (§3.4) so
  that the fixed unit-amplitude waves do not drown them; b = ``rope_base``.
- ``rope``: queries and keys rotated pair by pair (Su et al. 2021), pairs either half-split
  (x_i, x_{i+d/2}) as in GPT-NeoX / transformers, or interleaved (x_{2i}, x_{2i+1}) as in
  RoFormer and Meta's LLaMA code. The angles come from ``pe_core.rope`` for any ``RopeSpec``,
  set at evaluation time with ``set_rope``: the frequencies are recomputed for the current
  sequence length (so dynamic NTK sees it) and cos/sin are multiplied by the spec's attention
  factor (so YaRN's temperature scales q·k by its square), as transformers does.
- ``alibi``: a fixed bias −slope_h·(i−j) added to attention scores (Press et al. 2022).
- ``t5``: a learned bias per head and relative-distance bucket, shared by all layers (Raffel
  et al. 2020), with causal (one-directional) buckets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from i18n import N_
from pe_core.biases import alibi_slopes, t5_relative_bucket
from pe_core.family import sinusoidal_encoding
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies, rotation_angles, wavelengths


class EncodingDef(NamedTuple):
    """One way of telling the model where a token is (the registry below, as ``pe_core.methods.METHODS``)."""

    title: str  # N_()-marked
    reference: str  # the source that introduced it (a key of the References page)
    uses_base: bool = False  # reads ``rope_base`` (RoPE's and the sinusoidal table's b)
    scalable: bool = False  # has RoPE scaling methods (evaluated per method, fine-tunable)


ENCODINGS: dict[str, EncodingDef] = {
    "none": EncodingDef(N_("No position encoding (NoPE)"), "nope"),
    "learned": EncodingDef(N_("Learned absolute"), "vaswani"),
    "sinusoidal": EncodingDef(N_("Sinusoidal absolute"), "vaswani", uses_base=True),
    "rope": EncodingDef(N_("RoPE"), "roformer", uses_base=True, scalable=True),
    "alibi": EncodingDef(N_("ALiBi"), "alibi"),
    "t5": EncodingDef(N_("T5 relative bias"), "t5"),
}
POSITION_ENCODINGS = tuple(ENCODINGS)
ENCODING_TITLES = {name: encoding.title for name, encoding in ENCODINGS.items()}
ROPE_PAIRINGS = ("half", "interleaved")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 98
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 128
    train_length: int = 64  # the sequence length the model is trained at (L)
    max_positions: int = 4096  # rows of the learned position table (only ``learned`` uses it)
    position: str = "rope"
    rope_base: float = 10000.0  # also the base of the sinusoidal encoding
    rope_pairing: str = "half"
    t5_num_buckets: int = 32
    t5_max_distance: int | None = None  # None: the training length (so every bucket is trained), ≥ num_buckets
    dropout: float = 0.0
    head_size: int | None = None  # None: d_model / n_head; else heads × head_size may differ from d_model

    def __post_init__(self) -> None:
        if self.position not in POSITION_ENCODINGS:
            raise ValueError(f"position must be one of {', '.join(POSITION_ENCODINGS)} (got {self.position!r}).")
        if self.rope_pairing not in ROPE_PAIRINGS:
            raise ValueError(f"rope_pairing must be 'half' or 'interleaved' (got {self.rope_pairing!r}).")
        for name in ("vocab_size", "n_layer", "n_head", "d_model", "train_length", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r}).")
        if self.head_size is None and self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head}).")
        if self.head_size is not None and (not isinstance(self.head_size, int) or self.head_size < 1):
            raise ValueError(f"head_size must be a positive integer (got {self.head_size!r}).")
        if self.position == "rope" and self.head_dim % 2:
            raise ValueError(f"RoPE rotates pairs, so the head size must be even (got {self.head_dim}).")
        if self.position == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"The sinusoidal encoding needs an even d_model (got {self.d_model}).")
        if self.max_positions < self.train_length:
            raise ValueError("max_positions must be at least the training length.")

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.n_head

    @property
    def attention_width(self) -> int:
        """Heads × head size: the width of queries, keys and values."""
        return self.n_head * self.head_dim

    def default_rope(self) -> RopeSpec:
        """Plain RoPE with this model's head size and base, trained at ``train_length``."""
        return RopeSpec(head_dim=self.head_dim, base=self.rope_base, original_max_position_embeddings=self.train_length)

    def replace(self, **changes) -> ModelConfig:
        return replace(self, **changes)


def t5_buckets_by_distance(config: ModelConfig, length: int) -> torch.Tensor:
    """The causal T5 bucket of each distance 0 .. length−1 (query i attends to key i − distance)."""
    max_distance = config.t5_max_distance or max(config.train_length, config.t5_num_buckets)
    return t5_relative_bucket(-torch.arange(length), bidirectional=False, num_buckets=config.t5_num_buckets,
                              max_distance=max_distance)


def position_wavelengths(config: ModelConfig) -> torch.Tensor | None:
    """λ = 2π/θ of each rotating pair (RoPE) or sin/cos pair (sinusoidal); None for other encodings."""
    if config.position == "rope":
        return wavelengths(rope_frequencies(config.default_rope()).inv_freq)
    if config.position == "sinusoidal":
        return wavelengths(default_inv_freq(config.rope_base, config.d_model))
    return None


def sinusoidal_table(length: int, d_model: int, base: float) -> torch.Tensor:
    """[length, d_model] float64 with sin in even and cos in odd columns (Vaswani et al. 2017, §3.5)."""
    return sinusoidal_encoding(range(length), d_model, base)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pairing: str) -> torch.Tensor:
    """Rotate each pair of ``x``'s first 2·pairs features by its angle (cos/sin: [T, pairs]).

    ``half`` pairs feature i with i + rotary_dim/2; ``interleaved`` pairs 2i with 2i+1. Features
    past the rotary part (partial rotary) pass unchanged.
    """
    pairs = cos.shape[-1]
    rotary, rest = x[..., : 2 * pairs], x[..., 2 * pairs :]
    if pairing == "half":
        first, second = rotary[..., :pairs], rotary[..., pairs:]
        rotated = torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)
    else:
        first, second = rotary[..., 0::2], rotary[..., 1::2]
        rotated = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1).flatten(-2)
    return torch.cat((rotated, rest), dim=-1)


class Rotary(nn.Module):
    """cos/sin of RoPE's angles for the current spec and sequence length (cached per length)."""

    def __init__(self, spec: RopeSpec, pairing: str):
        super().__init__()
        self.pairing = pairing
        self.spec = spec
        self._cache: dict = {}

    def set_spec(self, spec: RopeSpec) -> None:
        self.spec = spec
        self._cache.clear()

    def cos_sin(self, length: int, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        key = (length, device, dtype)
        if key not in self._cache:
            frequencies = rope_frequencies(self.spec, seq_len=length)
            angles = rotation_angles(frequencies.inv_freq, range(length))  # float64: exact angles
            factor = frequencies.attention_factor
            # float64 is computed on the CPU and cast there: MPS has no float64
            cos, sin = (angles.cos() * factor).to(dtype), (angles.sin() * factor).to(dtype)
            self._cache = {key: (cos.to(device), sin.to(device))}
        return self._cache[key]


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.attention_width, bias=False)
        self.out = nn.Linear(config.attention_width, config.d_model, bias=False)
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor, rotary: Rotary | None, bias: torch.Tensor | None) -> torch.Tensor:
        batch, length, _width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        if rotary is not None:
            # rotated in float32 even under bf16 autocast: low-precision angles blur positions
            cos, sin = rotary.cos_sin(length, x.device, torch.float32)
            q = rotate(q.float(), cos, sin, rotary.pairing).to(v.dtype)
            k = rotate(k.float(), cos, sin, rotary.pairing).to(v.dtype)
        dropout = self.dropout if self.training else 0.0
        if bias is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        else:  # the bias already holds −inf above the diagonal
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout)
        return self.out(y.transpose(1, 2).reshape(batch, length, self.n_head * self.head_dim))


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm_attention = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.norm_mlp = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, 4 * config.d_model), nn.GELU(), nn.Linear(4 * config.d_model, config.d_model)
        )

    def forward(self, x: torch.Tensor, rotary: Rotary | None, bias: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attention(self.norm_attention(x), rotary, bias)
        return x + self.mlp(self.norm_mlp(x))


class TinyTransformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = (
            nn.Embedding(config.max_positions, config.d_model) if config.position == "learned" else None
        )
        self.t5_bias = nn.Embedding(config.t5_num_buckets, config.n_head) if config.position == "t5" else None
        self.rotary = Rotary(config.default_rope(), config.rope_pairing) if config.position == "rope" else None
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.norm_final = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # weight tying, as in GPT-2
        self.apply(self._init_weights)
        for name, parameter in self.named_parameters():
            if name.endswith("out.weight") or name.endswith("mlp.2.weight"):
                # GPT-2: residual projections scaled down with depth
                nn.init.normal_(parameter, std=0.02 / math.sqrt(2 * config.n_layer))
        if self.t5_bias is not None:
            nn.init.zeros_(self.t5_bias.weight)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def set_rope(self, spec: RopeSpec | None) -> None:
        """Use ``spec``'s frequencies from now on (None: the plain RoPE the model was trained with)."""
        if self.rotary is None:
            raise ValueError(f"set_rope needs a RoPE model (this one uses {self.config.position!r}).")
        spec = spec or self.config.default_rope()
        if spec.head_dim != self.config.head_dim:
            raise ValueError(f"The spec's head_dim ({spec.head_dim}) must equal the model's ({self.config.head_dim}).")
        self.rotary.set_spec(spec)

    @property
    def rope_spec(self) -> RopeSpec | None:
        return None if self.rotary is None else self.rotary.spec

    def attention_bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """[heads, T, T] additive bias (with −inf above the diagonal) for ALiBi and T5, else None."""
        if self.config.position not in ("alibi", "t5"):
            return None
        positions = torch.arange(length, device=device)
        relative = positions[None, :] - positions[:, None]  # key − query: ≤ 0 where attention is allowed
        future = relative > 0
        if self.config.position == "alibi":
            slopes = alibi_slopes(self.config.n_head).to(dtype).to(device)
            bias = slopes[:, None, None] * relative.clamp(max=0).to(dtype)
        else:
            # a bucket depends only on the distance: T bucket computations, then a T×T lookup
            buckets = t5_buckets_by_distance(self.config, length).to(device)[(-relative).clamp(min=0)]
            bias = self.t5_bias(buckets).permute(2, 0, 1).to(dtype)
        return bias.masked_fill(future, float("-inf"))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits [batch, T, vocab] for token ids [batch, T]."""
        length = idx.shape[1]
        x = self.token_embedding(idx)
        if self.config.position == "learned":
            if length > self.config.max_positions:
                raise ValueError(
                    f"The learned table has {self.config.max_positions:,} positions; {length:,} were asked for."
                )
            x = x + self.position_embedding(torch.arange(length, device=idx.device))
        elif self.config.position == "sinusoidal":
            table = sinusoidal_table(length, self.config.d_model, self.config.rope_base).to(x.dtype).to(x.device)
            x = x * math.sqrt(self.config.d_model) + table
        bias = self.attention_bias(length, x.device, x.dtype)
        for block in self.blocks:
            x = block(x, self.rotary, bias)
        return self.lm_head(self.norm_final(x))

    def token_losses(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy (nats) of each next-token prediction, [batch, T]."""
        logits = self(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none").view_as(targets)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def parameter_count(config: ModelConfig) -> int:
    """Parameters of a model with this config, counted without building it (tests check the formula)."""
    width = config.d_model
    inner = config.attention_width
    per_block = 4 * width * inner + 2 * (4 * width * width) + 4 * width + width + 2 * (2 * width)  # attn, mlp, norms
    count = config.vocab_size * width + config.n_layer * per_block + 2 * width  # tied embedding, final norm
    if config.position == "learned":
        count += config.max_positions * width
    if config.position == "t5":
        count += config.t5_num_buckets * config.n_head
    return count
