"""A small decoder-only transformer for NTP on distinct contexts (paper A Figs. 1, 3, 6; paper B Fig. 3).

Architecture (Llama-2 style, as the authors' code; paper A Fig. 1: 4 layers, d=128):

    x_0 = E[tokens] (+ positional encoding, optional; the paper's runs use none)
    x_{l+1/2} = x_l + Attn(RMSNorm(x_l))            causal multi-head SDPA, no biases
    x_{l+1}   = x_{l+1/2} + SwiGLU(RMSNorm(x_{l+1/2}))   down(silu(gate x) * up x)
    h_j = RMSNorm(x_L)[last position],   logits l_j = W h_j   (untied, bias-free W: V x d)

Only the last position is scored (the paper's non-autoregressive "fixed-length context -> next
token" setup), so ``h_j`` is the context embedding of the NTP-UFM view and the rows of ``W`` are
the word embeddings. Without positional encoding the model still sees order through the causal
mask (Haviv et al., 2022).

Contexts of different lengths are *left*-padded with ``config.pad_id`` (see
:func:`ntputils.training.models.left_pad`); pad keys are masked out of the attention, so with
``pos_encoding`` "none" or "rope" a padded context has exactly the embedding of the unpadded one.
Paper A's datasets have fixed length (5 tokens; 6 for Fig. 3), where no mask is built.

Sizes: the head width is ``2 * floor(d / n_heads / 2)`` as in the authors' code (d=128 with 6
heads gives 6 x 20 = 120 attention channels); the SwiGLU width is ``ffn_hidden`` if given, else
``4 d`` (the authors' Model.py for Fig. 1), or with ``multiple_of`` set the Llama rule
``multiple_of * ceil(8 d / 3 / multiple_of)`` (the legacy Fig. 3 code: d=512, 32 -> 1376).
Init: every weight N(0, 0.02^2); the attention output and the SwiGLU ``up`` projection (the
authors' ``wo``/``w3``) use ``0.02 / sqrt(2 n_layers)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .common import RMSNorm, TokenModel, init_normal_, residual_init_std

POS_ENCODINGS = ("none", "learned", "rope")


@dataclass
class TransformerConfig:
    """Hyper-parameters of :class:`NTPTransformer` (defaults = paper A Fig. 1: 4 layers, d=128, 6 heads)."""

    vocab_size: int
    context_vocab_size: int | None = None
    d: int = 128
    n_layers: int = 4
    n_heads: int = 6
    ffn_hidden: int | None = None
    multiple_of: int | None = None
    pos_encoding: str = "none"
    max_len: int = 64
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.context_vocab_size is None:
            self.context_vocab_size = self.vocab_size
        for name in ("vocab_size", "context_vocab_size", "d", "n_layers", "n_heads", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"unknown pos_encoding {self.pos_encoding!r}; expected one of {POS_ENCODINGS}")
        if self.head_dim < 2:
            raise ValueError(f"d={self.d} is too small for n_heads={self.n_heads} (head width < 2)")

    @property
    def head_dim(self) -> int:
        return 2 * (self.d // self.n_heads // 2)

    @property
    def hidden(self) -> int:
        if self.ffn_hidden is not None:
            return self.ffn_hidden
        if self.multiple_of is not None:
            return self.multiple_of * math.ceil(8 * self.d / 3 / self.multiple_of)
        return 4 * self.d

    @property
    def pad_id(self) -> int:
        """Token id used for left padding (one extra row of the input embedding)."""
        return int(self.context_vocab_size)  # type: ignore[arg-type]


def rope_tables(head_dim: int, max_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of the rotary angles ``t * theta^(-2i/head_dim)``, each ``[max_len, head_dim/2]``."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive channel pairs of ``x [B, T, heads, head_dim]`` by the position angles."""
    work = torch.promote_types(x.dtype, torch.float32)  # half/bf16 -> fp32, fp64 stays fp64
    x1, x2 = x.to(work).unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = cos[:, None, :].to(work), sin[:, None, :].to(work)
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    return out.type_as(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        inner = cfg.n_heads * cfg.head_dim
        self.qkv = nn.Linear(cfg.d, 3 * inner, bias=False)
        self.proj = nn.Linear(inner, cfg.d, bias=False)

    def forward(self, x: torch.Tensor, rope: tuple | None, mask: torch.Tensor | None) -> torch.Tensor:
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).unbind(2)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, heads, T, head_dim]
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(y.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ffn_norm = RMSNorm(cfg.d, cfg.norm_eps)
        self.ffn = SwiGLU(cfg.d, cfg.hidden)

    def forward(self, x: torch.Tensor, rope: tuple | None, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), rope, mask)
        return x + self.ffn(self.ffn_norm(x))


class NTPTransformer(TokenModel):
    """Decoder-only transformer whose context embedding is the final-norm state of the last position.

    The transformers of Paper A, Figs. 1 and 3 and Paper B, Fig. 3.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = cfg = config
        self.tok_emb = nn.Embedding(cfg.pad_id + 1, cfg.d)  # last row = padding token
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d) if cfg.pos_encoding == "learned" else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d, cfg.norm_eps)
        self.output = nn.Linear(cfg.d, cfg.vocab_size, bias=False)
        if cfg.pos_encoding == "rope":
            cos, sin = rope_tables(cfg.head_dim, cfg.max_len, cfg.rope_theta)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        init_normal_(self)
        for block in self.blocks:
            for weight in (block.attn.proj.weight, block.ffn.up.weight):
                nn.init.normal_(weight, mean=0.0, std=residual_init_std(cfg.n_layers))

    def hidden_states(self, tokens: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states of every position, ``[B, T, d]`` (causal: position t sees tokens <= t)."""
        self.check_tokens(tokens)
        T = tokens.shape[1]
        if T > self.config.max_len:
            raise ValueError(f"context length {T} exceeds max_len={self.config.max_len}")
        x = self.tok_emb(tokens)
        valid = tokens != self.pad_id
        mask = None
        if not bool(valid.all()):
            causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
            eye = torch.eye(T, dtype=torch.bool, device=tokens.device)  # pad queries attend to themselves
            mask = (causal & (valid[:, None, :] | eye))[:, None]  # [B, 1, T, T], True = attend
        if self.pos_emb is not None:
            positions = (valid.long().cumsum(1) - 1).clamp(min=0)  # first real token -> position 0
            x = x + self.pos_emb(positions)
        rope = (self.rope_cos[:T], self.rope_sin[:T]) if self.config.pos_encoding == "rope" else None
        for block in self.blocks:
            x = block(x, rope, mask)
        return self.norm(x)

    def context_embeddings(self, tokens: torch.Tensor) -> torch.Tensor:
        """``h_j`` = RMSNorm of the last position's final hidden state, ``[B, d]``."""
        return self.hidden_states(tokens)[:, -1]
