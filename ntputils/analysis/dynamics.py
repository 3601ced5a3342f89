"""Closed-form learning dynamics of the square-loss NTP-UFM (paper B App. D, Prop. 1, eqs. 6-9).

For the square-loss proxy ``min_{W,H} 1/2 ||S~ - W H||_F^2`` (paper B eq. 5, halved), with the
SVD ``S~ = U Sigma V^T`` and the aligned small initialization
``W(0) = e^{-delta} U R^T``, ``H(0) = e^{-delta} R V^T`` (``R^T R = I``), gradient flow keeps the
factors aligned: ``W(t) = U Sigma^{1/2} A(t)^{1/2} R^T``, ``H(t) = R Sigma^{1/2} A(t)^{1/2} V^T``,
``L(t) = U Sigma A(t) V^T`` with

    a_i(t) = 1 / (1 + (sigma_i e^{2 delta} - 1) e^{-2 sigma_i t})                      (eq. 7)

Time convention: ``t`` is gradient-flow time of the HALVED loss, so gradient descent with step
size ``eta`` reaches time ``t = eta * k`` after ``k`` steps. (With the unhalved loss of eq. 5,
replace t by 2t.) Each mode is a logistic curve in ``t``: it jumps from ~0 to ``sigma_i`` around
``t_i = delta / sigma_i + log(sigma_i)/(2 sigma_i)``, i.e. ``T_i = 1/sigma_i`` in the rescaled
time ``t / delta`` as ``delta -> infinity`` (eq. 8).
"""

from __future__ import annotations

import numpy as np


def _check(sigma: np.ndarray) -> np.ndarray:
    sigma = np.atleast_1d(np.asarray(sigma, dtype=np.float64))
    if sigma.ndim != 1 or np.any(sigma <= 0):
        raise ValueError("sigma must be a 1-D array of positive singular values")
    return sigma


def saxe_factors(t: float | np.ndarray, sigma: np.ndarray, delta: float) -> np.ndarray:
    """``a_i(t)`` of eq. (7); shape ``(len(t), len(sigma))`` (or ``(len(sigma),)`` for scalar t)."""
    sigma = _check(sigma)
    tt = np.asarray(t, dtype=np.float64)
    if np.any(tt < 0):
        raise ValueError("time t must be >= 0")
    expo = np.exp(-2.0 * np.multiply.outer(tt, sigma))
    return 1.0 / (1.0 + (sigma * np.exp(2.0 * delta) - 1.0) * expo)


def saxe_singular_values(t: float | np.ndarray, sigma: np.ndarray, delta: float) -> np.ndarray:
    """Singular values ``sigma_i a_i(t)`` of ``L(t)`` under the aligned initialization."""
    return _check(sigma) * saxe_factors(t, sigma, delta)


def saxe_logits(t: float, U: np.ndarray, sigma: np.ndarray, Vt: np.ndarray, delta: float) -> np.ndarray:
    """``L(t) = U Sigma A(t) V^T`` (eq. 6)."""
    return (U * saxe_singular_values(t, sigma, delta)) @ Vt


def half_time(sigma: np.ndarray, delta: float) -> np.ndarray:
    """Time at which mode i reaches half its final value.

    ``a_i(t) = 1/2`` <=> ``t = log(sigma_i e^{2 delta} - 1) / (2 sigma_i)``; defined when the mode
    starts below its target (``sigma_i e^{2 delta} > 1``), otherwise ``ValueError``.
    """
    sigma = _check(sigma)
    arg = sigma * np.exp(2.0 * delta) - 1.0
    if np.any(arg <= 0):
        raise ValueError("half_time needs sigma_i e^{2 delta} > 1 (every mode starting below its target)")
    return np.log(arg) / (2.0 * sigma)


def learning_times(sigma: np.ndarray) -> np.ndarray:
    """Limit learning times ``T_i = 1/sigma_i`` in rescaled time ``t/delta`` (eq. 8)."""
    return 1.0 / _check(sigma)


def aligned_init(U: np.ndarray, Vt: np.ndarray, d: int, delta: float, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``W(0) = e^{-delta} U R^T``, ``H(0) = e^{-delta} R V^T``; ``R`` (d x r) random with ``R^T R = I``."""
    r = U.shape[1]
    if d < r:
        raise ValueError(f"aligned initialization needs d >= rank r = {r}, got d = {d}")
    rng = np.random.default_rng(seed)
    R, _ = np.linalg.qr(rng.standard_normal((d, r)))
    scale = np.exp(-delta)
    return scale * U @ R.T, scale * R @ Vt
