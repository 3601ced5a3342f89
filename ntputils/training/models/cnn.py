"""A 3-layer CNN and imbalanced digit data for paper B Fig. 9 (confusion-matrix evolution).

    features(x) = AvgPool(ReLU(conv3(MaxPool(ReLU(conv2(ReLU(conv1 x)))))))  in R^d,  logits = W features(x)

With one-hot labels a classification set is an NTP data set whose contexts are the images, each
with a single next "token" (its class), so the same :class:`ntputils.training.history.History` applies:
``H`` holds the penultimate features (d x n), ``W`` the bias-free last layer (classes x d).

Paper B trains on imbalanced MNIST (2 majority classes x 100 images, 2 minority classes x 10):
``source="mnist"`` reads the official IDX files with numpy (:mod:`ntputils.data.mnist`);
scikit-learn's 8x8 digits (``source="sklearn"``, about 180 images per digit ship with the package)
are a fast fixture, handled by the same architecture through its global average pooling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .common import NTPModel


@dataclass
class CNNConfig:
    """Hyper-parameters of :class:`SmallCNN` (``d`` = channels of the last conv layer).

    The 3-layer CNN of Paper B, Fig. 9.
    """

    n_classes: int
    in_channels: int = 1
    channels: tuple[int, int, int] = (32, 64, 64)
    grid: int = 1  # 1: global average pooling; g > 1: average-pool to g x g and flatten (d = c3 g^2)

    def __post_init__(self) -> None:
        self.channels = tuple(int(c) for c in self.channels)  # type: ignore[assignment]
        if len(self.channels) != 3 or min(self.channels) < 1:
            raise ValueError(f"channels must be three positive widths, got {self.channels}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {self.n_classes}")
        if self.grid < 1:
            raise ValueError(f"grid must be >= 1, got {self.grid}")

    @property
    def d(self) -> int:
        return self.channels[-1] * self.grid**2


class SmallCNN(NTPModel):
    """Three 3x3 conv layers (ReLU; 2x2 max-pool after the second), average pool, linear head.

    ``grid=1``: global average pooling (d = c3); ``grid=g``: average-pooled to g x g and flattened
    (d = c3 g^2), which keeps where in the image a feature fires.

    The 3-layer CNN of Paper B, Fig. 9.
    """

    def __init__(self, config: CNNConfig):
        super().__init__()
        self.config = cfg = config
        c1, c2, c3 = cfg.channels
        self.conv1 = nn.Conv2d(cfg.in_channels, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.conv3 = nn.Conv2d(c2, c3, 3, padding=1)
        self.output = nn.Linear(cfg.d, cfg.n_classes, bias=False)

    def context_embeddings(self, images: torch.Tensor) -> torch.Tensor:
        """Penultimate features ``[B, d]`` (the "context embeddings" h of the images)."""
        if images.ndim != 4 or images.shape[1] != self.config.in_channels:
            raise ValueError(
                f"images must be [batch, {self.config.in_channels}, height, width], got {tuple(images.shape)}"
            )
        x = F.relu(self.conv1(images))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        if self.config.grid == 1:
            return x.mean(dim=(2, 3))
        return F.adaptive_avg_pool2d(x, self.config.grid).flatten(1)


def imbalanced_digits(
    classes: Sequence[int] = (0, 1, 2, 3),
    per_class: Sequence[int] = (100, 100, 10, 10),
    *,
    source: str = "sklearn",
    seed: int = 0,
    mnist_root: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``[n, 1, s, s]`` in [0, 1] and labels ``[n]`` (0..k-1 in the order of ``classes``).

    Draws ``per_class[i]`` images of digit ``classes[i]`` without replacement (seeded); the
    default is paper B Fig. 9's Maj1, Maj2 (100 each), Min1, Min2 (10 each) -- which digits the
    paper used is UNKNOWN. ``source`` is ``"sklearn"`` (8x8) or ``"mnist"`` (28x28, the official
    files under ``mnist_root``, default ``$NTP_DATA_DIR/mnist``).
    """
    if len(classes) != len(per_class) or len(classes) < 2:
        raise ValueError(f"classes {list(classes)} and per_class {list(per_class)} need equal lengths >= 2")
    if source == "sklearn":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        images, targets = bunch.images / 16.0, bunch.target
    elif source == "mnist":
        images, targets = load_mnist(mnist_root)
    else:
        raise ValueError(f"unknown source {source!r}; expected 'sklearn' or 'mnist'")
    rng = np.random.default_rng(seed)
    picks, labels = [], []
    for label, (digit, count) in enumerate(zip(classes, per_class, strict=True)):
        pool = np.flatnonzero(targets == digit)
        if count > len(pool):
            raise ValueError(f"digit {digit}: asked for {count} images, the {source} set has {len(pool)}")
        picks.append(rng.choice(pool, size=count, replace=False))
        labels.append(np.full(count, label))
    idx = np.concatenate(picks)
    x = torch.as_tensor(np.asarray(images)[idx], dtype=torch.float32)[:, None]
    return x, torch.as_tensor(np.concatenate(labels), dtype=torch.long)


def load_mnist(root: str | None = None, train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """MNIST images ``[N, 28, 28]`` in [0, 1] and labels, from the official gzip IDX files.

    ``root``: the folder with the four ``*-ubyte.gz`` files (default ``$NTP_DATA_DIR/mnist``); read
    with numpy and md5-checked by :func:`ntputils.data.mnist.load_mnist` (no torchvision).

    Data of Paper B, Fig. 9.
    """
    from ntputils.data.mnist import load_mnist as read_mnist

    images, labels = read_mnist("train" if train else "test", folder=root)
    return images / 255.0, labels.astype(np.int64)
