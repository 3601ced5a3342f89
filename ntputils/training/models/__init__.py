"""Networks trained on NTP data: a decoder-only transformer, a 2-layer LSTM and a small CNN.

All share the interface of :class:`~ntputils.training.models.common.NTPModel`:
``forward(x) -> logits [B, V]`` (last position only), ``context_embeddings(x) -> h [B, d]`` and
``output_weight() -> W [V, d]`` with ``logits = h W^T`` exactly (no output bias), so the
snapshots W, H, L = W H of :mod:`ntputils.training.loop` have the meaning of the NTP-UFM's.
Every name is imported from its submodule on first use (:mod:`ntputils.lazy`);
:func:`~ntputils.training.models.registry.build_model` builds any of them by kind.

>>> model = build_model("transformer", vocab_size=104, d=128, n_layers=4, n_heads=6, seed=0)
"""

from __future__ import annotations

from ntputils.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (see ntputils.lazy)
_LAZY = {
    "CNNConfig": "ntputils.training.models.cnn",
    "SmallCNN": "ntputils.training.models.cnn",
    "imbalanced_digits": "ntputils.training.models.cnn",
    "load_mnist": "ntputils.training.models.cnn",
    "NTPModel": "ntputils.training.models.common",
    "RMSNorm": "ntputils.training.models.common",
    "left_pad": "ntputils.training.models.common",
    "seeded": "ntputils.training.models.common",
    "NTPLSTM": "ntputils.training.models.lstm",
    "LSTMConfig": "ntputils.training.models.lstm",
    "NTPTransformer": "ntputils.training.models.transformer",
    "TransformerConfig": "ntputils.training.models.transformer",
    "MODELS": "ntputils.training.models.registry",
    "build_model": "ntputils.training.models.registry",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
