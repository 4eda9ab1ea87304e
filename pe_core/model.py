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
- ``xl``: Transformer-XL's relative attention (Dai et al. 2019, §3.3): the score of query i and
  key j is (qᵢ + u)·kⱼ + (qᵢ + v)·W_R R_{i−j}, with R the sinusoid of the distance (base
  ``rope_base``), W_R a per-layer projection and u, v trainable; the second term enters
  ``F.scaled_dot_product_attention`` as its additive mask.
- ``deberta``: DeBERTa's disentangled attention (He et al. 2021, §3.1): content–content plus
  content-to-position Qᶜᵢ·Kʳ_δ(i,j) and position-to-content Kᶜⱼ·Qʳ_δ(j,i), over relative
  embeddings P (2k rows, shared by all layers) projected per layer, δ the distance clipped at
  k = L, everything divided by √(3d). (The relative part only: no enhanced mask decoder.)

RoPE models can also be run with the inference-time tricks of Su Jianlin's posts (set with
``set_rope``): log-n scaling, each query multiplied by max(1, log_L n) with n the number of
keys it sees, and ReRoPE / Leaky ReRoPE, relative positions i − j inside a window w and w
(or w + (i − j − w)/k) beyond it, computed exactly with two score matrices.
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
from pe_core.family import clipped_log_n_scale, sinusoidal_encoding
from pe_core.relative import deberta_index, sinusoid_table
from pe_core.rope import RopeSpec, default_inv_freq, rope_frequencies, rotation_angles, wavelengths


class EncodingDef(NamedTuple):
    """One way of telling the model where a token is (the registry below, as ``pe_core.methods.METHODS``)."""

    title: str  # N_()-marked
    reference: str  # the source that introduced it (a key of the References page)
    uses_base: bool = False  # reads ``rope_base`` (RoPE's, the sinusoidal table's and Transformer-XL's b)
    scalable: bool = False  # has RoPE scaling methods (evaluated per method, fine-tunable)


ENCODINGS: dict[str, EncodingDef] = {
    "none": EncodingDef(N_("No position encoding (NoPE)"), "nope"),
    "learned": EncodingDef(N_("Learned absolute"), "vaswani"),
    "sinusoidal": EncodingDef(N_("Sinusoidal absolute"), "vaswani", uses_base=True),
    "rope": EncodingDef(N_("RoPE"), "roformer", uses_base=True, scalable=True),
    "alibi": EncodingDef(N_("ALiBi"), "alibi"),
    "t5": EncodingDef(N_("T5 relative bias"), "t5"),
    "xl": EncodingDef(N_("Transformer-XL relative"), "transformer_xl", uses_base=True),
    "deberta": EncodingDef(N_("DeBERTa disentangled"), "deberta"),
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
    rope_base: float = 10000.0  # also the base of the sinusoidal encoding and of Transformer-XL's R
    rope_pairing: str = "half"
    # YaRN's and NTK-by-parts' (β, α) when run at a longer length: pairs turning more than β times within L are
    # kept, fewer than α times interpolated (the paper's values, found for Llama; see pe_core.train.spectrum)
    yarn_ramp: tuple[float, float] = (32.0, 1.0)
    t5_num_buckets: int = 32
    t5_max_distance: int | None = None  # None: the training length (so every bucket is trained), ≥ num_buckets
    deberta_span: int | None = None  # DeBERTa's k (2k relative embeddings); None: the training length
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
        if self.position in ("sinusoidal", "xl") and self.d_model % 2:
            raise ValueError(f"Sinusoids come in sin/cos pairs, so d_model must be even (got {self.d_model}).")
        if self.deberta_span is not None and (not isinstance(self.deberta_span, int) or self.deberta_span < 1):
            raise ValueError(f"deberta_span must be a positive integer (got {self.deberta_span!r}).")
        if self.max_positions < self.train_length:
            raise ValueError("max_positions must be at least the training length.")
        fast, slow = self.yarn_ramp
        if not (math.isfinite(fast) and math.isfinite(slow) and fast > slow > 0):
            raise ValueError(f"yarn_ramp must be (β, α) with β > α > 0 turns (got {self.yarn_ramp!r}).")

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.n_head

    @property
    def attention_width(self) -> int:
        """Heads × head size: the width of queries, keys and values."""
        return self.n_head * self.head_dim

    @property
    def span(self) -> int:
        """DeBERTa's k: distances from −k to k − 1 have their own relative embedding, farther ones share the ends."""
        return self.deberta_span or self.train_length

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


def deberta_rows_by_distance(config: ModelConfig, length: int) -> torch.Tensor:
    """DeBERTa's row δ(i, j) of the relative embeddings for each distance i − j = 0 .. length−1 (clipped at k)."""
    return deberta_index(torch.arange(length), config.span)


def position_wavelengths(config: ModelConfig) -> torch.Tensor | None:
    """λ = 2π/θ of each rotating pair (RoPE) or sin/cos pair (sinusoidal, Transformer-XL's R); else None."""
    if config.position == "rope":
        return wavelengths(rope_frequencies(config.default_rope()).inv_freq)
    if config.position in ("sinusoidal", "xl"):
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
    """cos/sin of RoPE's angles for the current spec and sequence length (cached per length), and the
    inference-time tricks that go with them: log-n scaling and the ReRoPE window."""

    def __init__(self, spec: RopeSpec, pairing: str, train_length: int | None = None):
        super().__init__()
        self.pairing = pairing
        self.spec = spec
        self.train_length = train_length or spec.original_max_position_embeddings
        self.logn = False  # queries × max(1, log_L n)
        self.window: int | None = None  # ReRoPE's w: relative positions beyond it are rectified
        self.leak: float | None = None  # Leaky ReRoPE's k (slope 1/k beyond w); None: ReRoPE (constant w)
        self.dropped = False  # DroPE: the rotation removed (every angle 0: queries and keys as they are, NoPE)
        self._cache: dict = {}

    def set_spec(self, spec: RopeSpec, *, logn: bool = False, window: int | None = None,
                 leak: float | None = None, dropped: bool = False) -> None:
        if window is not None and not (isinstance(window, int) and 1 <= window):
            raise ValueError(f"The ReRoPE window must be a positive whole number of positions (got {window!r}).")
        if leak is not None and (window is None or not leak >= 1):
            raise ValueError("Leaky ReRoPE needs a window and a k ≥ 1 (the slope beyond the window is 1/k).")
        if dropped and (logn or window is not None):
            raise ValueError("A model without rotation (DroPE) takes neither log-n scaling nor a ReRoPE window.")
        self.spec, self.logn, self.window, self.leak, self.dropped = spec, logn, window, leak, dropped
        self._cache.clear()

    def angles_cos_sin(self, positions: torch.Tensor, length: int, device: torch.device,
                       dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin at any (also fractional) positions, with the frequencies for a sequence of ``length``."""
        frequencies = rope_frequencies(self.spec, seq_len=length)
        angles = rotation_angles(frequencies.inv_freq, positions)  # float64: exact angles
        factor = frequencies.attention_factor
        if self.dropped:  # no rotation: cos 1, sin 0 at every position
            angles, factor = torch.zeros_like(angles), 1.0
        # float64 is computed on the CPU and cast there: MPS has no float64
        cos, sin = (angles.cos() * factor).to(dtype), (angles.sin() * factor).to(dtype)
        return cos.to(device), sin.to(device)

    def cos_sin(self, length: int, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        key = (length, device, dtype)
        if key not in self._cache:
            self._cache = {key: self.angles_cos_sin(torch.arange(length), length, device, dtype)}
        return self._cache[key]

    def logn_scale(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """[length, 1]: max(1, log_L n) for the query at position n − 1, which sees n keys (Su 2021)."""
        scale = clipped_log_n_scale(torch.arange(1, length + 1), self.train_length)
        return scale.to(dtype).to(device)[:, None]


def rectified_scores(q: torch.Tensor, k: torch.Tensor, rotary: Rotary) -> torch.Tensor:
    """ReRoPE / Leaky ReRoPE attention logits (before 1/√d and the causal mask), as in Su 2023.

    Two score matrices: a⁽¹⁾ with plain RoPE, and a⁽²⁾ with the query rotated to position
    (i − w)/k + w and the key to j/k (ReRoPE: the query to w, the key not at all), so that
    a⁽²⁾ sees the relative position w + (i − j − w)/k (ReRoPE: w). a⁽¹⁾ where i − j < w, else a⁽²⁾.
    ``q`` and ``k`` are unrotated, [..., T, d].
    """
    length = q.shape[-2]
    device, dtype = q.device, q.dtype
    positions = torch.arange(length, dtype=torch.float64)
    window, leak = rotary.window, rotary.leak
    cos, sin = rotary.cos_sin(length, device, dtype)
    inside = rotate(q, cos, sin, rotary.pairing) @ rotate(k, cos, sin, rotary.pairing).transpose(-1, -2)
    if leak is None:
        query_positions, key_positions = torch.full_like(positions, float(window)), torch.zeros_like(positions)
    else:
        query_positions, key_positions = (positions - window) / leak + window, positions / leak
    q_far = rotate(q, *rotary.angles_cos_sin(query_positions, length, device, dtype), rotary.pairing)
    k_far = rotate(k, *rotary.angles_cos_sin(key_positions, length, device, dtype), rotary.pairing)
    distance = (positions[:, None] - positions[None, :]).to(device)
    return torch.where(distance < window, inside, q_far @ k_far.transpose(-1, -2))


class Positions(NamedTuple):
    """What attention needs to know about position, made once per forward pass for every layer."""

    rotary: Rotary | None = None
    # RoPE's (cos, sin) [T, d/2] when the caller gives them (copies with other specs stacked under vmap), else
    # the rotary's own
    angles: tuple[torch.Tensor, torch.Tensor] | None = None
    bias: torch.Tensor | None = None  # [heads, T, T] additive (ALiBi, T5), −inf above the diagonal
    table: torch.Tensor | None = None  # Transformer-XL: R_r for r = 0 .. T−1; DeBERTa: the 2k relative embeddings
    index: torch.Tensor | None = None  # [T, T] row of ``table`` for query i and key j (XL: i − j; DeBERTa: δ(i, j))
    future: torch.Tensor | None = None  # [T, T] True above the diagonal


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.attention_width, bias=False)
        self.out = nn.Linear(config.attention_width, config.d_model, bias=False)
        self.dropout = config.dropout
        self.position = config.position
        if self.position == "xl":  # W_{k,R} and the global content and position biases u, v of §3.3
            self.xl_w_r = nn.Linear(config.d_model, config.attention_width, bias=False)
            self.xl_u = nn.Parameter(torch.zeros(config.n_head, 1, config.head_dim))
            self.xl_v = nn.Parameter(torch.zeros(config.n_head, 1, config.head_dim))
        elif self.position == "deberta":  # the projections of the relative embeddings, W_{q,r} and W_{k,r}
            self.deberta_q_r = nn.Linear(config.d_model, config.attention_width, bias=False)
            self.deberta_k_r = nn.Linear(config.d_model, config.attention_width, bias=False)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """[rows, heads × d] → [heads, rows, d]."""
        return x.view(x.shape[0], self.n_head, self.head_dim).transpose(0, 1)

    def forward(self, x: torch.Tensor, where: Positions) -> torch.Tensor:
        batch, length, _width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        dropout = self.dropout if self.training else 0.0
        rotary = where.rotary
        if rotary is not None and rotary.window is not None and length > rotary.window:
            y = self._rectified(q, k, v, rotary)
        elif rotary is not None:
            # rotated in float32 even under bf16 autocast: low-precision angles blur positions
            cos, sin = where.angles if where.angles is not None else rotary.cos_sin(length, x.device, torch.float32)
            q = rotate(q.float(), cos, sin, rotary.pairing)
            k = rotate(k.float(), cos, sin, rotary.pairing).to(v.dtype)
            if rotary.logn:
                q = q * rotary.logn_scale(length, x.device, torch.float32)
            y = F.scaled_dot_product_attention(q.to(v.dtype), k, v, is_causal=True, dropout_p=dropout)
        elif self.position == "xl":
            # (qᵢ + v)·W_R R_{i−j}: against every distance once, then gathered per (i, j)
            keys_r = self._heads(self.xl_w_r(where.table.to(x.dtype)))  # [heads, T, d]
            position = ((q + self.xl_v) @ keys_r.transpose(-1, -2)).gather(-1, where.index.expand(batch, self.n_head,
                                                                                                length, length))
            mask = (position / math.sqrt(self.head_dim)).masked_fill(where.future, float("-inf")).to(v.dtype)
            y = F.scaled_dot_product_attention((q + self.xl_u).to(v.dtype), k, v, attn_mask=mask, dropout_p=dropout)
        elif self.position == "deberta":
            scale = 1 / math.sqrt(3 * self.head_dim)
            table = where.table.to(x.dtype)
            index = where.index.expand(batch, self.n_head, length, length)
            content_position = (q @ self._heads(self.deberta_k_r(table)).transpose(-1, -2)).gather(-1, index)
            position_content = (k @ self._heads(self.deberta_q_r(table)).transpose(-1, -2)).gather(-1, index)
            mask = (content_position + position_content.transpose(-1, -2)) * scale
            mask = mask.masked_fill(where.future, float("-inf")).to(v.dtype)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scale)
        elif where.bias is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        else:  # the bias already holds −inf above the diagonal
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=where.bias, dropout_p=dropout)
        return self.out(y.transpose(1, 2).reshape(batch, length, self.n_head * self.head_dim))

    def _rectified(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rotary: Rotary) -> torch.Tensor:
        """Attention with ReRoPE's rectified positions (evaluation: no dropout, no fused kernel)."""
        length = q.shape[-2]
        q, k = q.float(), k.float()
        if rotary.logn:
            q = q * rotary.logn_scale(length, q.device, torch.float32)
        scores = rectified_scores(q, k, rotary) / math.sqrt(self.head_dim)
        future = torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1)
        return (scores.masked_fill(future, float("-inf")).softmax(-1) @ v.float()).to(v.dtype)


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm_attention = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.norm_mlp = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, 4 * config.d_model), nn.GELU(), nn.Linear(4 * config.d_model, config.d_model)
        )

    def forward(self, x: torch.Tensor, where: Positions) -> torch.Tensor:
        x = x + self.attention(self.norm_attention(x), where)
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
        # DeBERTa's P: one table of 2k relative embeddings shared by every layer (each projects it its own way)
        self.deberta_table = nn.Embedding(2 * config.span, config.d_model) if config.position == "deberta" else None
        self.rotary = (Rotary(config.default_rope(), config.rope_pairing, config.train_length)
                       if config.position == "rope" else None)
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
        self._tables: dict = {}

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def set_rope(self, spec: RopeSpec | None, *, logn: bool = False, window: int | None = None,
                 leak: float | None = None, dropped: bool = False) -> None:
        """Use ``spec``'s frequencies from now on (None: the plain RoPE the model was trained with), optionally
        with log-n scaling and ReRoPE's window ``window`` (Leaky ReRoPE: with slope 1/``leak`` beyond it)."""
        if self.rotary is None:
            raise ValueError(f"set_rope needs a RoPE model (this one uses {self.config.position!r}).")
        spec = spec or self.config.default_rope()
        if spec.head_dim != self.config.head_dim:
            raise ValueError(f"The spec's head_dim ({spec.head_dim}) must equal the model's ({self.config.head_dim}).")
        self.rotary.set_spec(spec, logn=logn, window=window, leak=leak, dropped=dropped)

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

    def positions(self, length: int, device: torch.device, dtype: torch.dtype) -> Positions:
        """What every layer's attention needs about position for a sequence of ``length``."""
        c = self.config
        if c.position == "rope":
            return Positions(rotary=self.rotary)
        if c.position not in ("xl", "deberta"):
            return Positions(bias=self.attention_bias(length, device, dtype))
        key = (length, device)
        if key not in self._tables:  # the distances of a length, and XL's sinusoids of them (fixed, so cached)
            positions = torch.arange(length)
            distance = positions[:, None] - positions[None, :]  # i − j
            if c.position == "xl":
                table, index = sinusoid_table(positions, c.d_model, c.rope_base).float(), distance.clamp(min=0)
            else:
                table, index = None, deberta_index(distance, c.span)
            future = distance < 0
            self._tables = {key: (None if table is None else table.to(device), index.to(device), future.to(device))}
        table, index, future = self._tables[key]
        return Positions(table=self.deberta_table.weight if table is None else table, index=index, future=future)

    def forward(self, idx: torch.Tensor, rope_angles: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> torch.Tensor:
        """Logits [batch, T, vocab] for token ids [batch, T]; ``rope_angles``: RoPE's float32 (cos, sin) [T, d/2] to
        use instead of the model's own spec (a stacked batch's copies each bring their own)."""
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
        where = self.positions(length, x.device, x.dtype)
        if rope_angles is not None:
            if self.rotary is None or self.rotary.window is not None:
                raise ValueError("rope_angles replace a RoPE model's plain rotation (no ReRoPE window).")
            where = where._replace(angles=rope_angles)
        for block in self.blocks:
            x = block(x, where)
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
    if config.position == "xl":
        per_block += width * inner + 2 * inner  # W_{k,R}, u, v
    if config.position == "deberta":
        per_block += 2 * width * inner  # W_{q,r}, W_{k,r}
    count = config.vocab_size * width + config.n_layer * per_block + 2 * width  # tied embedding, final norm
    if config.position == "learned":
        count += config.max_positions * width
    if config.position == "t5":
        count += config.t5_num_buckets * config.n_head
    if config.position == "deberta":
        count += 2 * config.span * width
    return count
