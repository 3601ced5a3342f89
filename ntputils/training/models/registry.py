"""The model registry: :data:`MODELS` (kind -> config class, model class) and :func:`build_model`.

It imports every network (transformer, LSTM, CNN), so only code that builds a model by its kind
depends on all three; code that needs one network imports that network's module.
"""

from __future__ import annotations

from ntputils.training.models.cnn import CNNConfig, SmallCNN
from ntputils.training.models.common import NTPModel, seeded
from ntputils.training.models.lstm import NTPLSTM, LSTMConfig
from ntputils.training.models.transformer import NTPTransformer, TransformerConfig

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


__all__ = ["MODELS", "build_model"]
