"""Similarity metrics used in the papers' figures (paper A Figs. 1, 3-6; spec sec. 1.8).

* ``corr(A)``: cosine similarity between the columns of A,
  ``[corr(A)]_{ik} = a_i^T a_k / (||a_i|| ||a_k||)``. Use ``corr(H)`` for contexts (m x m) and
  ``corr(W.T)`` for words (V x V).
* ``sim(A, B)``: the structure term of SSIM between the two similarity matrices,
  ``SIM(X, Y) = (sigma_XY + C) / (sigma_X sigma_Y + C)`` with ``X = corr(A)``, ``Y = corr(B)``,
  means/deviations over all entries and ``C = 1e-5`` -- the Pearson correlation of the entries of
  the two cosine-similarity matrices. (The authors' code uses ``ddof=1`` for sigma_X, sigma_Y
  and ``ddof=0`` for sigma_XY, so their ``SIM(X, X) = (N-1)/N``; we use ``ddof=0`` throughout so
  that ``sim(A, A) = 1``. The difference is below 1/N, invisible in every figure.)
* ``normalized_distance(A, B) = || A/||A||_F - B/||B||_F ||_F`` in [0, 2].
"""

from __future__ import annotations

import numpy as np

SIM_C = 1e-5


def corr(A: np.ndarray) -> np.ndarray:
    """Cosine similarity of the columns of ``A`` (n x n for A with n columns).

    Zero columns have no direction: their rows/columns in the result are 0 (diagonal included).
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"corr expects a 2-D matrix, got shape {A.shape}")
    norms = np.linalg.norm(A, axis=0)
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    An = A * inv
    return An.T @ An


def structural_similarity(X: np.ndarray, Y: np.ndarray, C: float = SIM_C) -> float:
    """``SIM(X, Y) = (sigma_XY + C) / (sigma_X sigma_Y + C)`` over all entries of two equal-shape arrays."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.shape != Y.shape:
        raise ValueError(f"shape mismatch: {X.shape} vs {Y.shape}")
    xc = X - X.mean()
    yc = Y - Y.mean()
    return float((np.mean(xc * yc) + C) / (X.std() * Y.std() + C))


def sim(A: np.ndarray, B: np.ndarray, C: float = SIM_C) -> float:
    """``sim(A, B) = SIM(corr(A), corr(B))`` (paper A Fig. 6d-e). A and B need the same number of columns."""
    A = np.asarray(A)
    B = np.asarray(B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"sim compares column geometries: need equal column counts, "
                         f"got {A.shape} and {B.shape}")
    return structural_similarity(corr(A), corr(B), C)


def normalized_distance(A: np.ndarray, B: np.ndarray) -> float:
    """``|| A/||A||_F - B/||B||_F ||_F`` (0 = same direction, 2 = opposite)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"shape mismatch: {A.shape} vs {B.shape}")
    na, nb = np.linalg.norm(A), np.linalg.norm(B)
    if na == 0 or nb == 0:
        raise ValueError("normalized_distance is undefined for a zero matrix")
    return float(np.linalg.norm(A / na - B / nb))


def gram_distance(A: np.ndarray, B: np.ndarray) -> float:
    """Normalized distance of the column Gram matrices ``A^T A`` and ``B^T B`` (rotation invariant)."""
    return normalized_distance(np.asarray(A).T @ np.asarray(A), np.asarray(B).T @ np.asarray(B))


def group_cosine_stats(A: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    """Cosine similarities of the columns of ``A`` within and between groups (subspace collapse).

    ``groups[i]`` labels column i (e.g. contexts with the same support set share a label). Over
    distinct pairs ``i != k``: ``within_mean`` / ``within_min`` of ``corr(A)[i, k]`` for equal labels,
    ``between_mean`` for different labels (NaN where there is no such pair). Collapse of every
    group onto one direction means ``within_min -> 1``.
    """
    C = corr(A)
    g = np.asarray(groups)
    if g.shape != (C.shape[0],):
        raise ValueError(f"shape mismatch: {g.size} group labels for {C.shape[0]} columns")
    same = g[:, None] == g[None, :]
    off = ~np.eye(g.size, dtype=bool)
    within, between = C[same & off], C[~same]
    return {
        "within_mean": float(within.mean()) if within.size else float("nan"),
        "within_min": float(within.min()) if within.size else float("nan"),
        "between_mean": float(between.mean()) if between.size else float("nan"),
    }
