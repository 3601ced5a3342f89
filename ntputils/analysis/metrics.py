"""Similarity metrics of the papers' figures, for one matrix and batched over training snapshots
(paper A sec. 5, Figs. 1, 3-6).

* ``corr(A)``: cosine similarity between the columns of A,
  ``[corr(A)]_{ik} = a_i^T a_k / (||a_i|| ||a_k||)``. Use ``corr(H)`` for contexts (m x m) and
  ``corr(W.T)`` for words (V x V).
* ``sim(A, B)``: the structure term of SSIM between the two similarity matrices,
  ``SIM(X, Y) = (sigma_XY + C) / (sigma_X sigma_Y + C)`` with ``X = corr(A)``, ``Y = corr(B)``,
  means/deviations over all entries and ``C = 1e-5`` -- the Pearson correlation of the entries of
  the two cosine-similarity matrices. *Degenerate inputs raise* :class:`DegenerateSimilarityError`:
  when ``sigma_X sigma_Y <= C`` (e.g. ``corr`` of a zero or fully collapsed matrix is constant) the
  ratio is ``C/C = 1`` whatever the matrices are, so a dead model would get a perfect score; a
  constant similarity matrix is similar to nothing, and a chapter computing it fails.
  (The authors' code uses ``ddof=1`` for sigma_X, sigma_Y
  and ``ddof=0`` for sigma_XY, so their ``SIM(X, X) = (N-1)/N``; we use ``ddof=0`` throughout so
  that ``sim(A, A) = 1``. The difference is below 1/N, invisible in every figure.)
* ``normalized_distance(A, B) = || A/||A||_F - B/||B||_F ||_F`` in [0, 2].
* within/between-group cosine statistics of ``corr(A)`` (subspace collapse, paper A Prop. 1):
  :func:`group_cosine_stats`, :func:`group_contrast`.
* ``batched_*``: the same metrics for a stack of snapshots (axis 0), vectorized, as the curves of
  paper A Fig. 6 need them (:mod:`ntputils.analysis.convergence`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ntputils.geometry.spectral import require_finite

SIM_C = 1e-5


class DegenerateSimilarityError(ValueError):
    """SIM is undefined: a similarity matrix is (numerically) constant, ``sigma_X sigma_Y <= C``."""


def _finite(A: np.ndarray, what: str) -> np.ndarray:
    if np.iscomplexobj(A):
        raise ValueError(f"{what} must be real, got a complex array")
    A = np.asarray(A, dtype=np.float64)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{what} has {int((~np.isfinite(A)).sum())} non-finite entries (NaN or inf)")
    return A


def _unit_columns(A: np.ndarray, axis: int) -> np.ndarray:
    """``A`` with its columns (along ``axis``) scaled to unit norm, zero columns kept zero; overflow safe
    (each column is divided by its largest absolute entry before its norm is taken: entries ~1e200
    do not overflow to inf)."""
    scale = np.max(np.abs(A), axis=axis, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    As = A / safe
    norms = np.linalg.norm(As, axis=axis, keepdims=True)
    return np.divide(As, norms, out=np.zeros_like(As), where=norms > 0)
#: largest float64 working set (bytes) of one chunk of stacked m x m correlation matrices
CHUNK_BYTES = 256 * 2**20


def corr(A: np.ndarray) -> np.ndarray:
    r"""$\mathrm{corr}(\boldsymbol A)_{ik}=\boldsymbol a_i^\top\boldsymbol a_k/(\lVert\boldsymbol
    a_i\rVert\lVert\boldsymbol a_k\rVert)$ over the columns, as in Paper A, Fig. 1.

    Cosine similarity of the columns of ``A`` (n x n for A with n columns).

    Zero columns have no direction: their rows/columns in the result are 0 (diagonal included).
    Non-finite or complex entries raise; huge entries (~1e200) are normalised without overflow.
    """
    A = _finite(A, "corr input")
    if A.ndim != 2:
        raise ValueError(f"corr expects a 2-D matrix, got shape {A.shape}")
    An = _unit_columns(A, axis=0)
    return An.T @ An


def structural_similarity(X: np.ndarray, Y: np.ndarray, C: float = SIM_C) -> float:
    """``SIM(X, Y) = (sigma_XY + C) / (sigma_X sigma_Y + C)`` over all entries of two equal-shape arrays.

    The SIM of Paper A, Fig. 6d-e (C = 1e-5, as the authors' code).

    Raises :class:`DegenerateSimilarityError` when ``sigma_X sigma_Y <= C``: then the value is
    ``~C/C = 1`` for any pair (a constant matrix, e.g. ``corr`` of a zero matrix, is similar to nothing).
    """
    X = _finite(X, "SIM input X")
    Y = _finite(Y, "SIM input Y")
    if X.shape != Y.shape:
        raise ValueError(f"shape mismatch: {X.shape} vs {Y.shape}")
    sx, sy = X.std(), Y.std()
    _check_spread(np.array([sx]), sy, C)
    xc = X - X.mean()
    yc = Y - Y.mean()
    return float((np.mean(xc * yc) + C) / (sx * sy + C))


def _check_spread(sx: np.ndarray, sy: float, C: float) -> None:
    """Raise :class:`DegenerateSimilarityError` if some ``sigma_X sigma_Y <= C`` (see module docstring)."""
    bad = np.flatnonzero(sx * sy <= C)
    if bad.size:
        which = "" if sx.size == 1 else f" (snapshots {bad[:5].tolist()}{'...' if bad.size > 5 else ''})"
        raise DegenerateSimilarityError(
            f"SIM is undefined for a (numerically) constant similarity matrix{which}: sigma_X = "
            f"{float(sx[bad[0]]):.3g}, sigma_Y = {sy:.3g}, sigma_X sigma_Y <= C = {C:g}; a zero or collapsed "
            "embedding (corr constant) is not similar to anything")


def sim(A: np.ndarray, B: np.ndarray, C: float = SIM_C) -> float:
    r"""$\mathrm{SIM}(\mathrm{corr}(\boldsymbol A),\mathrm{corr}(\boldsymbol B))=(\sigma_{XY}+C)/(\sigma_X
    \sigma_Y+C)$, $C=10^{-5}$, Paper A, Fig. 6d-e.

    ``sim(A, B) = SIM(corr(A), corr(B))``. A and B need the same number of columns.
    """
    A = np.asarray(A)
    B = np.asarray(B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"sim compares column geometries: need equal column counts, "
                         f"got {A.shape} and {B.shape}")
    return structural_similarity(corr(A), corr(B), C)


def normalized_distance(A: np.ndarray, B: np.ndarray) -> float:
    r"""$\big\lVert\boldsymbol A/\lVert\boldsymbol A\rVert_F-\boldsymbol B/\lVert\boldsymbol
    B\rVert_F\big\rVert_F$, the direction error of Paper A, Thm. 1 (0 = same direction, 2 = opposite).
    """
    A = require_finite(np.asarray(A, dtype=np.float64), "normalized_distance: A")
    B = require_finite(np.asarray(B, dtype=np.float64), "normalized_distance: B")
    if A.shape != B.shape:
        raise ValueError(f"shape mismatch: {A.shape} vs {B.shape}")
    na, nb = np.linalg.norm(A), np.linalg.norm(B)
    if na == 0 or nb == 0:
        raise ValueError("normalized_distance is undefined for a zero matrix")
    return float(np.linalg.norm(A / na - B / nb))


def gram_distance(A: np.ndarray, B: np.ndarray) -> float:
    """Normalized distance of the column Gram matrices ``A^T A`` and ``B^T B`` (rotation invariant).

    A rotation-invariant version of the direction error of Paper A, Thm. 1 ; embeddings are defined up to a
    rotation R, Paper B, Sec. 3.2.
    """
    return normalized_distance(np.asarray(A).T @ np.asarray(A), np.asarray(B).T @ np.asarray(B))


def _group_pairs(A: np.ndarray, groups: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entries ``corr(A)[i, k]`` over distinct pairs ``i != k`` of the same group, and over pairs of
    different groups (both 1-D, row-major order)."""
    C = corr(A)
    g = np.asarray(groups)
    if g.shape != (C.shape[0],):
        raise ValueError(f"shape mismatch: {g.size} group labels for {C.shape[0]} columns")
    same = g[:, None] == g[None, :]
    off = ~np.eye(g.size, dtype=bool)
    return C[same & off], C[~same]


def group_cosine_stats(A: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    """Cosine similarities of the columns of ``A`` within and between groups (subspace collapse,
    paper A Prop. 1).

    ``groups[i]`` labels column i (e.g. contexts with the same support set share a label). Over
    distinct pairs ``i != k``: ``within_mean`` / ``within_min`` of ``corr(A)[i, k]`` for equal labels,
    ``between_mean`` for different labels (NaN where there is no such pair). Collapse of every
    group onto one direction means ``within_min -> 1``.
    """
    within, between = _group_pairs(A, groups)
    return {
        "within_mean": float(within.mean()) if within.size else float("nan"),
        "within_min": float(within.min()) if within.size else float("nan"),
        "between_mean": float(between.mean()) if between.size else float("nan"),
    }


def group_contrast(A: np.ndarray, group: Sequence[int] | np.ndarray) -> tuple[float, float]:
    """``(within_mean, between_mean)`` of :func:`group_cosine_stats`: the mean of ``corr(A)[i, k]`` over pairs
    ``i != k`` of the same group and over pairs of different groups (paper A Prop. 1, Fig. 3).

    With ``A = H`` and ``group`` = support groups (e.g.
    :attr:`ntputils.analysis.network_runs.ContextSelection.group`), subspace collapse means a *within*
    mean near 1; for the proxy ``S~`` with single-token supports the *between* mean is ``-1/(V-1)``.
    Raises if a mean is undefined (no such pairs).
    """
    within, between = _group_pairs(A, group)
    if not within.size or not between.size:
        raise ValueError("group_contrast needs at least two groups and a group with two members")
    return float(within.mean()), float(between.mean())


# ---------------------------------------------------------------------------------------------
# batched over snapshots (stacks along axis 0)
# ---------------------------------------------------------------------------------------------
def batched_corr(A: np.ndarray) -> np.ndarray:
    """``corr`` of every matrix of a stack: (K, r, n) -> (K, n, n) cosine similarities of the columns.

    Zero columns give zero rows/columns, as :func:`corr`.

    corr as in Paper A, Fig. 1, for many snapshots at once.
    """
    A = _finite(A, "batched_corr input")
    if A.ndim != 3:
        raise ValueError(f"batched_corr expects a (K, r, n) stack, got shape {A.shape}")
    An = _unit_columns(A, axis=1)
    return np.matmul(An.transpose(0, 2, 1), An)


def batched_structural_similarity(X: np.ndarray, Y: np.ndarray, C: float = SIM_C) -> np.ndarray:
    """``SIM(X_k, Y)`` for a stack ``X`` (K, n, n) against one ``Y`` (n, n) (ddof 0, as
    :func:`structural_similarity`).

    The SIM of Paper A, Fig. 6d-e, for many snapshots at once. Raises
    :class:`DegenerateSimilarityError` if any snapshot (or the target) is numerically constant.
    """
    X = _finite(X, "SIM input X")
    Y = _finite(Y, "SIM input Y")
    if X.ndim != 3 or X.shape[1:] != Y.shape:
        raise ValueError(f"shape mismatch: stack {X.shape} vs target {Y.shape}")
    sx, sy = X.std(axis=(1, 2)), float(Y.std())
    _check_spread(sx, sy, C)
    xc = X - X.mean(axis=(1, 2), keepdims=True)
    yc = Y - Y.mean()
    cov = np.einsum("kij,ij->k", xc, yc) / Y.size
    return (cov + C) / (sx * sy + C)


#: float64 copies of a chunk of stacked snapshots that batched_sim holds at once: the stack, its
#: column-scaled copy, a temporary and the unit-column result (:func:`_unit_columns`)
STACK_COPIES = 4


def sim_chunk(rows: int, n: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """How many ``rows x n`` snapshots :func:`batched_sim` stacks at once: as many as keep
    :data:`STACK_COPIES` copies of the stack plus three ``n x n`` correlation blocks each within
    ``chunk_bytes`` (at least one)."""
    return max(1, int(chunk_bytes // (8 * (STACK_COPIES * rows * n + 3 * n * n))))


def batched_sim(As: Sequence[np.ndarray] | np.ndarray, B: np.ndarray, C: float = SIM_C,
                chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """``sim(A_k, B) = SIM(corr(A_k), corr(B))`` for every ``A_k`` (same column count as ``B``).

    Snapshots are processed in chunks (:func:`sim_chunk`) so that a chunk's stacked snapshots and their
    n x n correlation matrices stay below ``chunk_bytes`` (vectorized within a chunk; each snapshot's
    value does not depend on the chunking). The sim curves of paper A Fig. 6d-e.
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2:
        raise ValueError(f"target must be 2-D, got shape {B.shape}")
    As = list(As)
    if not As:
        return np.zeros(0)
    n = B.shape[1]
    for A in As:
        if np.ndim(A) != 2 or np.shape(A)[1] != n:
            raise ValueError(f"sim compares column geometries: snapshot {np.shape(A)} vs target {B.shape}")
    Y = batched_corr(B[None])[0]
    per = sim_chunk(max(np.shape(A)[0] for A in As), n, chunk_bytes)
    out = [batched_structural_similarity(batched_corr(np.stack(As[i:i + per])), Y, C)
           for i in range(0, len(As), per)]
    return np.concatenate(out)


def batched_normalized_distance(Ls: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``|| L_k/||L_k||_F - T/||T||_F ||_F`` for a stack (K, V, m); NaN for a zero ``L_k`` (the directional
    convergence of paper A Fig. 6).
    """
    Ls = require_finite(np.asarray(Ls, dtype=np.float64), "batched_normalized_distance: the stack")
    T = require_finite(np.asarray(target, dtype=np.float64), "batched_normalized_distance: the target")
    if Ls.ndim != 3 or Ls.shape[1:] != T.shape:
        raise ValueError(f"shape mismatch: stack {Ls.shape} vs target {T.shape}")
    nT = np.linalg.norm(T)
    if nT == 0:
        raise ValueError("normalized distance to a zero target is undefined")
    nL = np.linalg.norm(Ls, axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = Ls / np.where(nL > 0, nL, np.nan)[:, None, None]
    return np.linalg.norm(unit - T / nT, axis=(1, 2))
