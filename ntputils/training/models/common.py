"""Pieces shared by every model: RMSNorm, the NTP model interface, padding and seeded construction.

Every model maps an input (a context of token ids, or an image) to a *context embedding*
``h_j`` in R^d and scores the V classes with an untied, bias-free output layer, so that the
logits are exactly ``l_j = W h_j`` (paper A eq. (1); paper B sec. 2). The training loop and the
snapshots in :class:`ntputils.training.history.History` only use three methods:

* ``context_embeddings(x) -> [B, d]``: the ``h_j`` fed to the output layer (after the final norm);
* ``output_weight() -> [V, d]``: the word-embedding matrix ``W`` (rows = words);
* ``forward(x) -> [B, V]``: the logits ``h_j^T w_z`` of the last position only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict

import torch
from torch import nn


class RMSNorm(nn.Module):
    """Root-mean-square normalization ``x / sqrt(mean(x^2) + eps) * g`` (Zhang & Sennrich, 2019)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))  # half/bf16 -> fp32, fp64 stays fp64
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class NTPModel(nn.Module):
    """Base class: logits = ``W h`` with ``W = self.output.weight`` (V x d) and no bias.

    Subclasses set ``self.config`` (a dataclass), ``self.output`` (``nn.Linear(d, V, bias=False)``)
    and implement :meth:`context_embeddings`.

    The logits W h_theta(x_j) of Paper B, Eq. (1).
    """

    config: object
    output: nn.Linear

    def context_embeddings(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def output_weight(self) -> torch.Tensor:
        """The decoder / word-embedding matrix ``W`` (V x d); row ``z`` is the embedding of word ``z``."""
        return self.output.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, V]`` of the next token after each input (last position only)."""
        return self.output(self.context_embeddings(x))

    def describe(self) -> dict:
        """Class name, config and parameter count (goes into ``History.meta``)."""
        return {
            "model": type(self).__name__,
            "config": asdict(self.config),  # type: ignore[call-overload]
            "parameters": sum(p.numel() for p in self.parameters()),
        }


class TokenModel(NTPModel):
    """An :class:`NTPModel` over left-padded token contexts (transformer, LSTM): ``config.pad_id`` pads."""

    @property
    def pad_id(self) -> int:
        return self.config.pad_id  # type: ignore[attr-defined]

    @staticmethod
    def check_tokens(tokens: torch.Tensor) -> None:
        """Tokens must be a ``[batch, length]`` tensor of ids."""
        if tokens.ndim != 2:
            raise ValueError(f"tokens must be [batch, length], got shape {tuple(tokens.shape)}")


def init_normal_(module: nn.Module, std: float = 0.02) -> None:
    """Initialize every Linear / Embedding weight from N(0, std^2) and every bias at 0."""
    for sub in module.modules():
        if isinstance(sub, (nn.Linear, nn.Embedding)):
            nn.init.normal_(sub.weight, mean=0.0, std=std)
            if getattr(sub, "bias", None) is not None:
                nn.init.zeros_(sub.bias)


def residual_init_std(n_layers: int, std: float = 0.02) -> float:
    """GPT-2-style init ``std / sqrt(2 n_layers)`` for the projections that feed the residual stream."""
    return std / math.sqrt(2 * n_layers)


def seeded(build: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Construct a model under ``torch.manual_seed(seed)`` without touching the global RNG stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def left_pad(contexts: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """Stack contexts of possibly different lengths into a LongTensor ``[m, T_max]``, left-padded.

    Left padding keeps the last real token at position ``T_max - 1`` for every row, which is where
    the models read ``h_j``. Fixed-length contexts (paper A: 5 tokens, Fig. 3: 6 tokens) come back
    unchanged.
    """
    if len(contexts) == 0:
        raise ValueError("no contexts to pad (empty list)")
    lengths = [len(c) for c in contexts]
    if min(lengths) == 0:
        raise ValueError("empty context (length 0) cannot be embedded")
    t_max = max(lengths)
    if min(lengths) == t_max:
        return torch.as_tensor([list(c) for c in contexts], dtype=torch.long)
    out = torch.full((len(contexts), t_max), pad_id, dtype=torch.long)
    for i, c in enumerate(contexts):  # one row per context, not per V x m entry
        out[i, t_max - len(c):] = torch.as_tensor(list(c), dtype=torch.long)
    return out
