"""Measuring the learning of singular modes in training histories (paper B sec. 4.4, App. D, Figs. 12-19).

Paper B's "rate of learning" statements are about the singular values ``s_k(L_t)`` of the logit
matrix ``L_t = W_t H_t`` during training: under the square loss from a small initialization the k-th
value jumps from ~0 to ``sigma_k`` (the k-th singular value of ``S~ = U Sigma V^T``) at a time
``T_k ~ 1/sigma_k`` (Prop. 1, :mod:`ntputils.analysis.dynamics`). This module turns snapshots into those
quantities:

* :func:`singular_value_curves` -- ``s_1(L_t) >= s_2(L_t) >= ...`` per snapshot;
* :func:`mode_amplitudes` -- ``u_k^T L_t v_k``: the same per concept k, tracked by identity;
* :func:`crossing_times` -- the first time each curve reaches a level (e.g. ``sigma_k / 2``: the
  half-time of mode k, or ``0.9 sigma_k``), linearly interpolated between snapshots;
* :func:`fit_inverse_sigma` -- the least-squares line ``T_k = a / sigma_k + b`` and its R^2;
* :func:`complement_norm` -- ``||L - U U^T L V V^T||_F``, the part of the logits outside the
  singular subspaces of ``S~`` (Fig. 12, right);
* :func:`relative_error` -- ``||A - B||_F / ||B||_F`` (Gram matrices and logits against their limits,
  Fig. 12, middle-left);
* :func:`richardson` -- Richardson extrapolation of gradient-descent curves to the gradient-flow
  limit (GD with step ``eta`` is the explicit Euler scheme of the flow, error ``O(eta)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def singular_value_curves(Ls: Sequence[np.ndarray] | np.ndarray, k: int | None = None) -> np.ndarray:
    """Singular values (descending) of each logit snapshot: array (len(Ls), k) (k = min(V, m) if None)."""
    arr = np.asarray(Ls, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[0] == 0:
        raise ValueError(f"expected a non-empty stack of matrices (T, V, m), got shape {arr.shape}")
    s = np.linalg.svd(arr, compute_uv=False)
    if k is not None:
        if not 1 <= k <= s.shape[1]:
            raise ValueError(f"k must be in 1..{s.shape[1]}, got {k}")
        s = s[:, :k]
    return s


def crossing_times(t: np.ndarray, curves: np.ndarray, levels: np.ndarray | float) -> np.ndarray:
    """First time each curve reaches its level (linear interpolation between samples; ``nan`` if never).

    ``curves`` is (T, K) sampled at the increasing times ``t`` (T,); ``levels`` is (K,) or a scalar.
    A curve already at or above its level at ``t[0]`` crosses at ``t[0]``.
    """
    t = np.asarray(t, dtype=np.float64)
    c = np.asarray(curves, dtype=np.float64)
    if c.ndim == 1:
        c = c[:, None]
    if t.ndim != 1 or c.shape[0] != t.size:
        raise ValueError(f"shape mismatch: times {t.shape} vs curves {c.shape} (need T x K)")
    if t.size > 1 and np.any(np.diff(t) <= 0):
        raise ValueError("times must be strictly increasing")
    lev = np.broadcast_to(np.asarray(levels, dtype=np.float64), (c.shape[1],))
    above = c >= lev
    first = np.argmax(above, axis=0)  # first sample at or above the level (0 if none: masked below)
    prev = np.maximum(first - 1, 0)
    cols = np.arange(c.shape[1])
    c0, c1 = c[prev, cols], c[first, cols]
    frac = np.divide(lev - c0, c1 - c0, out=np.zeros_like(c0), where=first > 0)
    out = t[prev] + frac * (t[first] - t[prev])
    out[~above.any(axis=0)] = np.nan
    return out


def fit_inverse_sigma(times: np.ndarray, sigma: np.ndarray) -> tuple[float, float, float]:
    """Least-squares fit ``T_k = a / sigma_k + b``; returns ``(a, b, R^2)``.

    Prop. 1 predicts the half-time ``t_k = (2 delta + log sigma_k) / (2 sigma_k)`` for the aligned
    initialization of scale ``e^{-delta}``: slope ``a ~ delta`` (time of the halved loss).
    """
    T = np.asarray(times, dtype=np.float64)
    x = 1.0 / np.asarray(sigma, dtype=np.float64)
    if T.shape != x.shape or T.ndim != 1 or T.size < 2:
        raise ValueError(f"need matching 1-D arrays of >= 2 times and singular values, got {T.shape}, "
                         f"{x.shape}")
    if not np.all(np.isfinite(T)):
        raise ValueError("some learning times are not finite (a mode never reached its level)")
    X = np.c_[x, np.ones_like(x)]
    (a, b), *_ = np.linalg.lstsq(X, T, rcond=None)
    resid = T - X @ np.array([a, b])
    total = np.sum((T - T.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / total if total > 0 else 1.0
    return float(a), float(b), float(r2)


def complement_norm(L: np.ndarray, U: np.ndarray, Vt: np.ndarray) -> float:
    """``||L - U U^T L V V^T||_F``: the logits outside ``span{u_i v_j^T}``.

    ``U`` (V x r) and ``Vt`` (r x m) have orthonormal columns / rows (the SVD factors of S~).
    """
    L = np.asarray(L, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    Vt = np.asarray(Vt, dtype=np.float64)
    if U.shape[0] != L.shape[0] or Vt.shape[1] != L.shape[1] or U.shape[1] != Vt.shape[0]:
        raise ValueError(f"shape mismatch: L {L.shape}, U {U.shape}, Vt {Vt.shape}")
    inside = U @ (U.T @ L @ Vt.T) @ Vt
    return float(np.linalg.norm(L - inside))


def relative_error(A: np.ndarray, B: np.ndarray) -> float:
    """``||A - B||_F / ||B||_F`` (B is the reference and must be non-zero)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"shape mismatch: {A.shape} vs {B.shape}")
    nb = np.linalg.norm(B)
    if nb == 0:
        raise ValueError("relative_error: the reference is the zero matrix")
    return float(np.linalg.norm(A - B) / nb)


def richardson(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Extrapolate first-order (Euler / gradient-descent) results to step size 0.

    ``curves[i]`` is the same quantity computed with step ``eta / 2^i`` and sampled at the same
    times. With the error expansion ``c_1 eta + c_2 eta^2 + O(eta^3)``: two curves give
    ``2 f(eta/2) - f(eta)`` (error ``O(eta^2)``); three give
    ``(8 f(eta/4) - 6 f(eta/2) + f(eta)) / 3`` (error ``O(eta^3)``).
    """
    if len(curves) not in (2, 3):
        raise ValueError(f"richardson takes 2 or 3 curves (steps eta, eta/2[, eta/4]), got {len(curves)}")
    arrs = [np.asarray(c, dtype=np.float64) for c in curves]
    if any(a.shape != arrs[0].shape for a in arrs):
        raise ValueError(f"shape mismatch: {[a.shape for a in arrs]}")
    if len(arrs) == 2:
        return 2.0 * arrs[1] - arrs[0]
    return (8.0 * arrs[2] - 6.0 * arrs[1] + arrs[0]) / 3.0


def mode_amplitudes(Ls: Sequence[np.ndarray] | np.ndarray, U: np.ndarray, Vt: np.ndarray) -> np.ndarray:
    """``c_k(L_t) = u_k^T L_t v_k`` for every snapshot and mode: array (len(Ls), r).

    Unlike the sorted singular values, these follow each concept by identity, so curves of different
    modes may cross. Under the aligned dynamics of Prop. 1 they equal ``sigma_k a_k(t)``.
    """
    arr = np.asarray(Ls, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    Vt = np.asarray(Vt, dtype=np.float64)
    if (arr.ndim != 3 or U.shape[0] != arr.shape[1] or Vt.shape[1] != arr.shape[2]
            or U.shape[1] != Vt.shape[0]):
        raise ValueError(f"shape mismatch: logits {arr.shape}, U {U.shape}, Vt {Vt.shape}")
    return np.einsum("zk,tzj,kj->tk", U, arr, Vt)
