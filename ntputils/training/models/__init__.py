"""Networks trained on NTP data: a decoder-only transformer, a 2-layer LSTM and a small CNN.

All share the interface of :class:`~ntputils.training.models.common.NTPModel`:
``forward(x) -> logits [B, V]`` (last position only), ``context_embeddings(x) -> h [B, d]`` and
``output_weight() -> W [V, d]`` with ``logits = h W^T`` exactly (no output bias), so the
snapshots W, H, L = W H of :mod:`ntputils.training.loop` have the meaning of the NTP-UFM's.

>>> model = build_model("transformer", vocab_size=104, d=128, n_layers=4, n_heads=6, seed=0)
"""

from __future__ import annotations

from .cnn import CNNConfig, SmallCNN, imbalanced_digits, load_mnist
from .common import NTPModel, RMSNorm, left_pad, seeded
from .lstm import NTPLSTM, LSTMConfig
from .transformer import NTPTransformer, TransformerConfig

MODELS = {
    "transformer": (TransformerConfig, NTPTransformer),
    "lstm": (LSTMConfig, NTPLSTM),
    "cnn": (CNNConfig, SmallCNN),
}


def build_model(kind: str, *, seed: int = 0, **config) -> NTPModel:
    """Construct ``kind`` ("transformer" | "lstm" | "cnn") from config fields, initialized under ``seed``.

    The global torch RNG is left untouched, so the same ``seed`` always gives the same weights.
    """
    if kind not in MODELS:
        raise ValueError(f"unknown model kind {kind!r}; expected one of {sorted(MODELS)}")
    config_cls, model_cls = MODELS[kind]
    cfg = config_cls(**config)
    return seeded(lambda: model_cls(cfg), seed)  # type: ignore[return-value]


__all__ = [
    "CNNConfig",
    "LSTMConfig",
    "MODELS",
    "NTPLSTM",
    "NTPModel",
    "NTPTransformer",
    "RMSNorm",
    "SmallCNN",
    "TransformerConfig",
    "build_model",
    "imbalanced_digits",
    "left_pad",
    "load_mnist",
    "seeded",
]
