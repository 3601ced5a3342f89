r"""How close two SVD geometries are: principal angles between top-$k$ singular subspaces, and the
agreement of two clusterings with its shuffled-label chance level.

Paper B reads concepts off the SVD of the proxy $\widetilde{\boldsymbol S}$; paper A says the logits
converge in direction to $\boldsymbol L^{\rm mm}$ (its Eq. (NTP-SVM), Sec. 4), whose SVD factors are the
geometry of words and contexts. Whether the proxy's top concepts are the theory's is a question about
**subspaces** (the singular vectors of a near-degenerate singular value are not individually defined):
for orthonormal bases $\boldsymbol A_k,\boldsymbol B_k\in\mathbb R^{n\times k}$ the cosines of the
principal angles are the singular values of $\boldsymbol A_k^\top\boldsymbol B_k$, and their mean square

$$\mathrm{overlap}_k=\tfrac1k\|\boldsymbol A_k^\top\boldsymbol B_k\|_F^2\in[0,1]$$

is 1 iff the two subspaces coincide. For a uniformly random $k$-dimensional subspace of an
$n$-dimensional space, $\mathbb E[\mathrm{overlap}_k]=k/n$ exactly (the chance level).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ntputils.geometry.spectral import require_finite


def _orthonormal(A: np.ndarray, name: str, func: str) -> np.ndarray:
    A = require_finite(np.asarray(A, dtype=np.float64), f"{func}: the basis {name}")
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D basis (n x k), got shape {A.shape}")
    G = A.T @ A
    err = float(np.abs(G - np.eye(A.shape[1])).max()) if A.size else 0.0
    if err > 1e-8:
        raise ValueError(f"the columns of {name} are not orthonormal (max |A^T A - I| = {err:.1e})")
    return A


def principal_cosines(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""Cosines of the principal angles between span(A) and span(B), largest first (orthonormal columns,
    same number of rows): the singular values of $\boldsymbol A^\top\boldsymbol B$, clipped to [0, 1].
    """
    A, B = _orthonormal(A, "A", "principal_cosines"), _orthonormal(B, "B", "principal_cosines")
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"A and B live in different spaces: {A.shape[0]} vs {B.shape[0]} rows")
    return np.clip(np.linalg.svd(A.T @ B, compute_uv=False), 0.0, 1.0)


@dataclass(frozen=True)
class SubspaceOverlap:
    """Per k: the mean squared principal cosine (``overlap``), the smallest cosine (``worst``, the cosine of
    the largest principal angle) and the chance level ``chance = k / ambient_dim``."""

    k: np.ndarray
    overlap: np.ndarray
    worst: np.ndarray
    chance: np.ndarray


def subspace_overlap(A: np.ndarray, B: np.ndarray, ks: Sequence[int], ambient_dim: int | None = None
                     ) -> SubspaceOverlap:
    r"""$\mathrm{overlap}_k$ of the leading $k$ columns of two orthonormal bases, for each k of ``ks``.

    ``ambient_dim``: the dimension of the space random subspaces are drawn from for the chance level
    (default: the number of rows; ``n - 1`` for vectors orthogonal to $\mathbb 1$, e.g. the word analyzers
    of a centered matrix).
    """
    A, B = _orthonormal(A, "A", "subspace_overlap"), _orthonormal(B, "B", "subspace_overlap")
    n = A.shape[0]
    dim = n if ambient_dim is None else int(ambient_dim)
    ks = np.asarray(list(ks), dtype=int)
    if ks.size == 0 or ks.min() < 1 or ks.max() > min(A.shape[1], B.shape[1], dim):
        raise ValueError(f"every k must be in 1..{min(A.shape[1], B.shape[1], dim)}, got {ks.tolist()}")
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"A and B live in different spaces: {A.shape[0]} vs {B.shape[0]} rows")
    overlap = np.empty(ks.size)
    worst = np.empty(ks.size)
    for i, k in enumerate(ks):  # at most a few dozen k, each a k x k SVD
        c = principal_cosines(A[:, :k], B[:, :k])
        overlap[i], worst[i] = float(np.mean(c**2)), float(c.min())
    return SubspaceOverlap(k=ks, overlap=overlap, worst=worst, chance=ks / dim)


@dataclass(frozen=True)
class Agreement:
    """Adjusted Rand index of two clusterings and its chance level over shuffled labels (mean, 95th
    percentile)."""

    ari: float
    chance_mean: float
    chance_p95: float


def clustering_agreement(a: np.ndarray, b: np.ndarray, draws: int = 200, seed: int = 0) -> Agreement:
    """ARI of labelings ``a`` and ``b`` of the same items, and the ARI of ``a`` with ``draws`` random
    permutations of ``b`` (same cluster sizes, no relation to ``a``): the chance level.
    """
    from sklearn.metrics import adjusted_rand_score

    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"two 1-D labelings of the same items are needed, got {a.shape} and {b.shape}")
    if draws < 1:
        raise ValueError(f"draws must be positive, got {draws}")
    rng = np.random.default_rng(seed)
    chance = np.array([adjusted_rand_score(a, rng.permutation(b)) for _ in range(draws)])
    return Agreement(ari=float(adjusted_rand_score(a, b)), chance_mean=float(chance.mean()),
                     chance_p95=float(np.quantile(chance, 0.95)))
