"""Top-k SVD of the centered support matrix without densifying it (paper B eqs. 2-3, "concepts").

Paper B reads semantic *concepts* off the SVD ``S~ = U Sigma V^T`` of the centered support matrix

.. math::  \\widetilde S = (\\mathbb I_V - \\tfrac1V \\mathbb 1_V \\mathbb 1_V^\\top)\\, S ,

(columns ``u_k`` analyse words, rows ``v_k^T`` analyse contexts). ``S~`` is dense even when ``S``
is very sparse (every entry of a column is shifted by ``-|S_j|/V``), so at GPT-2 scale
(``V = 50,257``, ``m = 500,000``) it would take 200 GB. Here ``S~`` is only ever applied as a linear
operator: ``S~ x = S x - 1 (1^T S x) / V`` and ``S~^T y = S^T (y - mean(y) 1)``, each costing one
sparse product plus ``O(V + m)``.

Methods (``centered_topk_svd(..., method=...)``):

* ``"dense"``: forms ``S~`` and calls LAPACK (``numpy.linalg.svd``); used for small inputs.
* ``"arpack"``: implicitly restarted Lanczos (``scipy.sparse.linalg.svds``) on the operator, to
  machine-precision tolerance by default.
* ``"randomized"``: block subspace iteration with Rayleigh-Ritz on a block of ``k + oversample``
  vectors (Halko, Martinsson & Tropp 2011, alg. 4.4/5.1), iterated until every requested
  singular triplet has residual ``max(||S~ v - s u||, ||S~^T u - s v||) <= tol * s_1``.

**Sign rule** (:func:`fix_signs`). Singular vectors are unique only up to a common sign per pair
(and up to a rotation inside a repeated singular value). To make figures identical across runs,
methods and machines, each pair ``(u_k, v_k)`` is flipped so that the entry of ``u_k`` with the
largest absolute value is positive; entries within a relative ``1e-6`` of that maximum count as
tied and the one with the lowest index wins (so numerical noise cannot flip the choice).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ntputils.device import limit_threads

__all__ = [
    "fix_signs",
    "centered_operator",
    "centered_topk_svd",
    "svd_residuals",
    "SVD_METHODS",
]

SVD_METHODS = ("auto", "dense", "arpack", "randomized")
TIE_RTOL = 1e-6


def fix_signs(U: np.ndarray, Vt: np.ndarray, *, tie_rtol: float = TIE_RTOL) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic signs: flip ``(u_k, v_k)`` so that the largest-|entry| of ``u_k`` is positive.

    Ties (entries with ``|u_ik| >= (1 - tie_rtol) max_i |u_ik|``) go to the lowest row index.
    ``U diag(s) Vt`` is unchanged. Returns new float64 arrays.

    The sign convention for the SVD of Paper B, Eq. (3).
    """
    U = np.array(U, dtype=np.float64, copy=True)
    Vt = np.array(Vt, dtype=np.float64, copy=True)
    if U.ndim != 2 or Vt.ndim != 2 or U.shape[1] != Vt.shape[0]:
        raise ValueError(
            f"fix_signs needs U (V x k) and Vt (k x m) with matching k, got {U.shape} and {Vt.shape}"
        )
    if U.shape[1] == 0 or U.shape[0] == 0:
        return U, Vt
    absU = np.abs(U)
    top = absU.max(axis=0)
    idx = np.argmax(absU >= (1.0 - tie_rtol) * top, axis=0)  # first index within the tie band
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1.0
    return U * signs, Vt * signs[:, None]


def require_finite(A: np.ndarray, what: str) -> np.ndarray:
    """``np.asarray(A)``, or ``ValueError`` naming ``what`` when it holds NaN or inf: LAPACK would raise a
    bare ``LinAlgError`` (or return garbage) for the SVD of a diverged run's matrix."""
    arr = np.asarray(A)
    if arr.size and not np.isfinite(arr).all():
        bad = int(arr.size - np.isfinite(arr).sum())
        raise ValueError(f"{what}: {bad} of {arr.size} entries are NaN or infinite; its SVD is undefined")
    return arr


def _as_matrix(S: np.ndarray | sp.sparray | sp.spmatrix, func: str) -> np.ndarray | sp.csc_array:
    if sp.issparse(S):
        if len(S.shape) != 2:
            raise ValueError(f"S must be 2-D (V x m), got shape {S.shape}")
        A = sp.csc_array(S, dtype=np.float64)
        A.sum_duplicates()
        data = A.data
    else:
        A = np.asarray(S)
        if A.ndim != 2:
            raise ValueError(f"S must be 2-D (V x m), got shape {A.shape}")
        if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
            raise ValueError(f"S must be numeric, got dtype {A.dtype}")
        A = A.astype(np.float64)
        data = A
    if min(A.shape) < 1:
        raise ValueError(f"S is empty: shape {A.shape}")
    require_finite(data, f"{func}: S")
    return A


def centered_operator(S: np.ndarray | sp.sparray | sp.spmatrix) -> spla.LinearOperator:
    """``S~ = (I - 11^T/V) S`` as a ``scipy.sparse.linalg.LinearOperator`` (nothing densified).

    Paper B, Eq. (2).
    """
    A = _as_matrix(S, "centered_operator")
    V, m = A.shape
    At = A.T.tocsr() if sp.issparse(A) else A.T  # CSR of S^T for fast S^T y

    def matmat(X: np.ndarray) -> np.ndarray:
        Y = A @ X
        return Y - Y.sum(axis=0, keepdims=True) / V

    def rmatmat(Y: np.ndarray) -> np.ndarray:
        Y = np.asarray(Y)
        return At @ (Y - Y.mean(axis=0, keepdims=True))

    return spla.LinearOperator(
        (V, m),
        dtype=np.float64,
        matvec=lambda x: matmat(np.asarray(x).reshape(m, 1)).ravel(),
        rmatvec=lambda y: rmatmat(np.asarray(y).reshape(V, 1)).ravel(),
        matmat=matmat,
        rmatmat=rmatmat,
    )


def svd_residuals(op: spla.LinearOperator, U: np.ndarray, s: np.ndarray, Vt: np.ndarray) -> np.ndarray:
    """Per triplet: ``max(||A v - s u||, ||A^T u - s v||) / s_1`` (0 = exact singular triplet).

    Accuracy check of the SVD of Paper B, Eq. (3).
    """
    if s.size == 0:
        return np.zeros(0)
    r1 = np.linalg.norm(op.matmat(Vt.T) - U * s, axis=0)
    r2 = np.linalg.norm(op.rmatmat(U) - Vt.T * s, axis=0)
    return np.maximum(r1, r2) / max(float(s[0]), np.finfo(float).tiny)


def _dense_topk(A: np.ndarray | sp.csc_array, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    D = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)
    D = D - D.mean(axis=0, keepdims=True)
    U, s, Vt = np.linalg.svd(D, full_matrices=False)
    return U[:, :k], s[:k], Vt[:k]


def _arpack_topk(
    op: spla.LinearOperator, k: int, seed: int, tol: float, maxiter: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    V, m = op.shape
    rng = np.random.default_rng(seed)
    v0 = rng.standard_normal(min(V, m))
    ncv = min(max(2 * k + 1, 20), min(V, m) - 1)
    U, s, Vt = spla.svds(op, k=k, ncv=ncv, tol=tol, v0=v0, maxiter=maxiter, solver="arpack")
    order = np.argsort(s)[::-1]
    return U[:, order], s[order], Vt[order]


def _randomized_topk(
    op: spla.LinearOperator, k: int, seed: int, tol: float, oversample: int | None, max_iter: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    V, m = op.shape
    ell = min(k + (oversample if oversample is not None else max(10, k)), min(V, m))
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(op.matmat(rng.standard_normal((m, ell))))
    tol = max(tol, 1e-13)
    it = 0
    while it < max_iter:
        it += 1
        Z = op.rmatmat(Q)  # m x ell  = S~^T Q
        P, R = np.linalg.qr(Z)  # S~^T Q = P R  ->  Q^T S~ = R^T P^T
        Ub, s, Wt = np.linalg.svd(R.T)
        Y = op.matmat(P)  # V x ell  = S~ P
        U, Vmat = Q @ Ub[:, :k], P @ Wt[:k].T
        # residuals of the Ritz triplets: S~ v - s u and S~^T u - s v (the latter is 0 by construction)
        res = np.linalg.norm(Y @ Wt[:k].T - U * s[:k], axis=0) / max(float(s[0]), np.finfo(float).tiny)
        if np.max(res) <= tol:
            break
        Q, _ = np.linalg.qr(Y)
    return U, s[:k], Vmat.T, it


def centered_topk_svd(
    S: np.ndarray | sp.sparray | sp.spmatrix,
    k: int,
    *,
    method: str = "auto",
    seed: int = 0,
    dense_threshold: int = 4_000_000,
    tol: float = 0.0,
    oversample: int | None = None,
    max_iter: int = 300,
    blas_threads: int | None = 1,
    return_info: bool = False,
):
    """Top-k SVD ``(U, sigma, Vt)`` of ``S~ = (I - 11^T/V) S`` (paper B eq. 2), signs by :func:`fix_signs`.

    Parameters
    ----------
    S:
        ``V x m`` matrix (usually the 0/1 support matrix; any real matrix works), dense or sparse.
    k:
        number of singular triplets, ``1 <= k <= min(V, m)``.
    method:
        ``"auto"`` (dense when ``V * m <= dense_threshold``, else ``"arpack"``), ``"dense"``,
        ``"arpack"`` or ``"randomized"`` (see the module docstring).
    seed:
        seed of the random start vector/block (results are deterministic for a given seed).
    tol:
        ARPACK tolerance (0 = machine precision) / randomized residual target relative to
        ``sigma_1`` (0 means 1e-13).
    blas_threads:
        BLAS/LAPACK threads during the computation (None: library default); see :func:`limit_threads`.
    return_info:
        also return a dict with the method, seconds, iterations and the max relative residual.

    Returns ``U`` (V x k, orthonormal columns = word-analyzer directions), ``sigma`` (k,
    descending) and ``Vt`` (k x m, orthonormal rows = context-analyzer directions).
    """
    if method not in SVD_METHODS:
        raise ValueError(f"unknown method {method!r}; valid: {SVD_METHODS}")
    A = _as_matrix(S, "centered_topk_svd")
    V, m = A.shape
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= min(V, m):
        raise ValueError(f"k must be an integer in [1, min(V, m)] = [1, {min(V, m)}], got {k!r}")
    k = int(k)
    if method == "auto":
        method = "dense" if V * m <= dense_threshold or k >= min(V, m) - 1 else "arpack"
    if method == "arpack" and k >= min(V, m) - 1:
        raise ValueError(
            f"ARPACK needs k < min(V, m) - 1 = {min(V, m) - 1}; use method='dense' or 'randomized'"
        )
    t0 = time.perf_counter()
    iterations = 1
    op = centered_operator(A)
    with limit_threads(None, blas_threads):
        if method == "dense":
            U, s, Vt = _dense_topk(A, k)
        elif method == "arpack":
            U, s, Vt = _arpack_topk(op, k, seed, tol, None)
        else:
            U, s, Vt, iterations = _randomized_topk(op, k, seed, tol, oversample, max_iter)
    U, Vt = fix_signs(U, Vt)
    if not return_info:
        return U, s, Vt
    info = {
        "method": method,
        "seconds": time.perf_counter() - t0,
        "iterations": iterations,
        "max_residual": float(np.max(svd_residuals(op, U, s, Vt))) if s.size else 0.0,
    }
    return U, s, Vt, info
