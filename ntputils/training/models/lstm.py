"""A 2-layer LSTM for NTP on distinct contexts (paper A, camera-ready LSTM runs, from the authors' code).

    e_t = E[token_t],   (s_t^1, s_t^2) = LSTM_2(e_1..e_t),   h_j = RMSNorm(s_T^2),   l_j = W h_j

The context embedding is the RMS-normalized last hidden state of the top layer (the authors'
camera-ready adds the RMSNorm); ``W`` (V x d) is an untied output layer. Unlike the authors'
``nn.Linear`` we keep no output bias, so the logits are exactly ``W H`` as in the NTP-UFM.
Left-padded contexts (pad id ``config.pad_id``) are packed so that ``h_j`` is read after the
last real token and padding never enters the recurrence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from .common import RMSNorm, TokenModel, init_normal_


@dataclass
class LSTMConfig:
    """Hyper-parameters of :class:`NTPLSTM` (``d`` = hidden size = embedding width of ``h_j``)."""

    vocab_size: int
    context_vocab_size: int | None = None
    d: int = 128
    d_input: int | None = None
    n_layers: int = 2
    norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        if self.context_vocab_size is None:
            self.context_vocab_size = self.vocab_size
        if self.d_input is None:
            self.d_input = self.d
        for name in ("vocab_size", "context_vocab_size", "d", "d_input", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def pad_id(self) -> int:
        return int(self.context_vocab_size)  # type: ignore[arg-type]


class NTPLSTM(TokenModel):
    """Stacked LSTM; ``h_j`` = RMSNorm(top-layer hidden state after the last real token)."""

    def __init__(self, config: LSTMConfig):
        super().__init__()
        self.config = cfg = config
        self.tok_emb = nn.Embedding(cfg.pad_id + 1, cfg.d_input)
        self.lstm = nn.LSTM(cfg.d_input, cfg.d, num_layers=cfg.n_layers, batch_first=True)
        self.norm = RMSNorm(cfg.d, cfg.norm_eps)
        self.output = nn.Linear(cfg.d, cfg.vocab_size, bias=False)
        init_normal_(self)  # embedding, output ~ N(0, 0.02^2); the LSTM keeps U(-1/sqrt(d), 1/sqrt(d))

    def context_embeddings(self, tokens: torch.Tensor) -> torch.Tensor:
        """``h_j`` = RMSNorm of the top layer's hidden state after the last real token, ``[B, d]``."""
        self.check_tokens(tokens)
        valid = tokens != self.pad_id
        if bool(valid.all()):
            _, (h_n, _) = self.lstm(self.tok_emb(tokens))
        else:
            lengths = valid.sum(1)
            if int(lengths.min()) == 0:
                raise ValueError("a context consists of padding only")
            T = tokens.shape[1]
            # left padding -> right padding: row i is rolled left by its number of pads
            shift = (torch.arange(T, device=tokens.device)[None, :] + (T - lengths)[:, None]) % T
            right = torch.gather(tokens, 1, shift)
            packed = pack_padded_sequence(self.tok_emb(right), lengths.cpu(), batch_first=True,
                                          enforce_sorted=False)
            _, (h_n, _) = self.lstm(packed)
        return self.norm(h_n[-1])
