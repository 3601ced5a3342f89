"""The rate of learning: how fast the square-loss NTP-UFM learns each concept (paper B sec. 4.4, Prop. 1,
App. D, Figs. 3, 12-19; Saxe et al. 2014).

One home for every learning-time statement of the book, in three parts.

**Closed form (paper B App. D, Prop. 1, eqs. 6-9).** For the square-loss proxy
``min_{W,H} 1/2 ||S~ - W H||_F^2`` (paper B eq. 5, halved), with the SVD ``S~ = U Sigma V^T`` and the
aligned small initialization ``W(0) = e^{-delta} U R^T``, ``H(0) = e^{-delta} R V^T`` (``R^T R = I``),
gradient flow keeps the factors aligned: ``W(t) = U Sigma^{1/2} A(t)^{1/2} R^T``,
``H(t) = R Sigma^{1/2} A(t)^{1/2} V^T``, ``L(t) = U Sigma A(t) V^T`` with

    a_i(t) = 1 / (1 + (sigma_i e^{2 delta} - 1) e^{-2 sigma_i t})                      (eq. 7)

Time convention: ``t`` is gradient-flow time of the HALVED loss, so gradient descent with step
size ``eta`` reaches time ``t = eta * k`` after ``k`` steps. (With the unhalved loss of eq. 5,
replace t by 2t.) Each mode is a logistic curve in ``t``: it jumps from ~0 to ``sigma_i`` around
``t_i = delta / sigma_i + log(sigma_i)/(2 sigma_i)``, i.e. ``T_i = 1/sigma_i`` in the rescaled
time ``t / delta`` as ``delta -> infinity`` (eq. 8).

**Predicted learning times.** :func:`predicted_learning_times` is ``T_k = 1/sigma_k`` (eq. 8); for a
class of contexts it is ``T_c = 1/sigma_{depth(c)}`` with the *concept depth* of the class
(:func:`concept_energy`, :func:`concept_depth`): the centered target of class c,
``s~_c = (I - 1 1^T / V) 1_{S_c}``, has coordinates ``x_c[k] = u_k^T s~_c`` on the concepts, and its depth
is the smallest ``k`` with ``sum_{i<=k} x_c[i]^2 >= level * ||x_c||^2`` (paper B sec. 4.4, Fig. 3).

**Measured learning times** in training histories (paper B Figs. 3, 12-19):

* :func:`singular_value_curves` -- ``s_1(L_t) >= s_2(L_t) >= ...`` per snapshot;
* :func:`mode_amplitudes` -- ``u_k^T L_t v_k``: the same per concept k, tracked by identity;
* :func:`crossing_times` -- the first time each curve reaches a level (e.g. ``sigma_k / 2``: the
  half-time of mode k), linearly interpolated between snapshots;
* :func:`learning_times` -- the first time each curve reaches ``level`` (default 90%) of its limit;
* :func:`class_learning_times` -- the first recorded step from which a class stays learned, read from
  confusion matrices (:mod:`ntputils.analysis.confusion`);
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

from ntputils.analysis.confusion import first_step_holding, learned_classes
from ntputils.geometry.spectral import require_finite


# ---------------------------------------------------------------------------------------------
# closed form (Prop. 1)
# ---------------------------------------------------------------------------------------------
def _check(sigma: np.ndarray) -> np.ndarray:
    sigma = np.atleast_1d(np.asarray(sigma, dtype=np.float64))
    if sigma.ndim != 1 or np.any(sigma <= 0):
        raise ValueError("sigma must be a 1-D array of positive singular values")
    return sigma


def saxe_factors(t: float | np.ndarray, sigma: np.ndarray, delta: float) -> np.ndarray:
    r"""$a_i(t)=1/\big(1+(\sigma_ie^{2\delta}-1)e^{-2\sigma_it}\big)$, Paper B, Prop. 1, Eq. (7).

    Shape ``(len(t), len(sigma))`` (or ``(len(sigma),)`` for scalar t); ``t`` is gradient-flow time of
    the halved square loss.
    """
    sigma = _check(sigma)
    tt = np.asarray(t, dtype=np.float64)
    if np.any(tt < 0):
        raise ValueError("time t must be >= 0")
    expo = np.exp(-2.0 * np.multiply.outer(tt, sigma))
    return 1.0 / (1.0 + (sigma * np.exp(2.0 * delta) - 1.0) * expo)


def saxe_singular_values(t: float | np.ndarray, sigma: np.ndarray, delta: float) -> np.ndarray:
    """Singular values ``sigma_i a_i(t)`` of ``L(t)`` under the aligned initialization (paper B, Prop. 1).
    """
    return _check(sigma) * saxe_factors(t, sigma, delta)


def saxe_logits(t: float, U: np.ndarray, sigma: np.ndarray, Vt: np.ndarray, delta: float) -> np.ndarray:
    """``L(t) = U Sigma A(t) V^T`` (paper B, Prop. 1, eq. 6).
    """
    return (U * saxe_singular_values(t, sigma, delta)) @ Vt


def half_time(sigma: np.ndarray, delta: float) -> np.ndarray:
    """Time at which mode i reaches half its final value (paper B, Prop. 1, eq. 7).

    ``a_i(t) = 1/2`` <=> ``t = log(sigma_i e^{2 delta} - 1) / (2 sigma_i)``; defined when the mode
    starts below its target (``sigma_i e^{2 delta} > 1``), otherwise ``ValueError``.
    """
    sigma = _check(sigma)
    arg = sigma * np.exp(2.0 * delta) - 1.0
    if np.any(arg <= 0):
        raise ValueError("half_time needs sigma_i e^{2 delta} > 1 (every mode starting below its target)")
    return np.log(arg) / (2.0 * sigma)


def aligned_init(U: np.ndarray, Vt: np.ndarray, d: int, delta: float, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``W(0) = e^{-delta} U R^T``, ``H(0) = e^{-delta} R V^T``; ``R`` (d x r) random with ``R^T R = I``
    (the aligned small initialization of paper B, Prop. 1).
    """
    r = U.shape[1]
    if d < r:
        raise ValueError(f"aligned initialization needs d >= rank r = {r}, got d = {d}")
    rng = np.random.default_rng(seed)
    R, _ = np.linalg.qr(rng.standard_normal((d, r)))
    scale = np.exp(-delta)
    return scale * U @ R.T, scale * R @ Vt


# ---------------------------------------------------------------------------------------------
# control paths: the same concepts learned in another order or at one rate (negative controls)
# ---------------------------------------------------------------------------------------------
ORDERS = ("kept", "inverted", "constant")


def hierarchy_half_times(sigma: np.ndarray, order: str, last: float) -> np.ndarray:
    """Half-time of every concept of a control logit path (negative controls of paper B Fig. 3 and Prop. 1).

    ``"kept"``: ``h_k = last * sigma_min / sigma_k`` (Prop. 1's order: large ``sigma_k`` first, the slowest
    concept at ``last``); ``"inverted"``: the same times in reverse (concept k gets the time of concept
    ``r + 1 - k``: small ``sigma_k`` first, the hierarchy inverted); ``"constant"``: every concept at the
    median of the kept times (one rate for all: no hierarchy of rates).
    """
    sigma = _check(sigma)
    if not np.isfinite(last) or last <= 0:
        raise ValueError(f"last must be a positive time, got {last}")
    kept = last * sigma.min() / sigma
    if order == "kept":
        return kept
    if order == "inverted":
        return kept[::-1].copy()
    if order == "constant":
        return np.full(sigma.size, float(np.median(kept)))
    raise ValueError(f"unknown order {order!r}; expected one of {ORDERS}")


def concept_path(t: np.ndarray, U: np.ndarray, sigma: np.ndarray, Vt: np.ndarray, half_times: np.ndarray,
                 scale: float, width: float = 0.15) -> np.ndarray:
    """Logits ``L(t) = scale * U diag(sigma_k a_k(t)) V^T`` at the times ``t`` (``(T, V, m)``): every concept
    k of ``S~ = U Sigma V^T`` grows along a logistic ``a_k(t) = 1 / (1 + exp(-(t - h_k) / (width h_k)))``
    from ~0 to 1 around its half-time ``h_k`` (:func:`hierarchy_half_times`).

    The shape of Prop. 1's solution (eq. 7, modes growing one by one to ``scale * S~``) with the order of
    the concepts as a free choice: the negative controls of a learning-order read-out (paper B Fig. 3),
    which should tell ``"kept"`` from ``"inverted"`` and ``"constant"``.
    """
    sigma = _check(sigma)
    h = np.asarray(half_times, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if h.shape != sigma.shape or np.any(h <= 0):
        raise ValueError(f"half_times must be {sigma.shape} positive times, got {h}")
    if width <= 0 or not np.isfinite(scale):
        raise ValueError(f"width must be > 0 and scale finite, got {width}, {scale}")
    a = 1.0 / (1.0 + np.exp(-(t[:, None] - h) / (width * h)))
    return scale * np.einsum("zk,tk,kj->tzj", U * sigma, a, Vt)


def control_half_times(t: np.ndarray, U: np.ndarray, sigma: np.ndarray, Vt: np.ndarray, order: str,
                       width: float = 0.15) -> np.ndarray:
    """Half-times ``T_k`` (first ``t`` with ``s_k(L_t) >= sigma_k / 2``, the sorted singular values of
    :func:`singular_value_curves` read by :func:`crossing_times`) of the control path ``order``
    (:func:`hierarchy_half_times`, the slowest concept at half of ``t``'s span; :func:`concept_path` to
    ``S~`` itself, scale 1) on the time grid ``t``: the same read-out as a trained run's half-times, where
    the concepts are learned in another order (paper B Figs. 12, 18; negative controls of a rate-of-learning
    claim)."""
    t = np.asarray(t, dtype=np.float64)
    sigma = _check(sigma)
    L = concept_path(t, U, sigma, Vt, hierarchy_half_times(sigma, order, float(t[-1] - t[0]) / 2), 1.0, width)
    return crossing_times(t, singular_value_curves(L, k=sigma.size), sigma / 2)


# ---------------------------------------------------------------------------------------------
# predicted learning times: T_k = 1/sigma_k and the concept depth of a class
# ---------------------------------------------------------------------------------------------
def predicted_learning_times(sigma: np.ndarray, depth: np.ndarray | None = None) -> np.ndarray:
    """``T_k = 1/sigma_k`` (paper B, Prop. 1, eq. 8: mode k is learned at rescaled time
    ``t/delta = 1/sigma_k``).

    With ``depth`` (1-based concept depths of classes, :func:`concept_depth`) returns the predicted
    learning time of every class, ``T_c = 1/sigma_{depth(c)}`` (paper B sec. 4.4, Fig. 3).
    """
    T = 1.0 / _check(sigma)
    if depth is None:
        return T
    depth = np.asarray(depth, dtype=np.intp)
    if np.any(depth < 1) or np.any(depth > T.size):
        raise ValueError(f"depth must lie in 1..{T.size}")
    return T[depth - 1]


def concept_energy(masks: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Share of each class target on each concept: ``E[c, k] = x_c[k]^2 / ||x_c||^2``, ``x_c = U^T s~_c``
    (paper B sec. 4.4, Fig. 3).

    ``s~_c = (I - 1 1^T / V) 1_{S_c}`` is the centered indicator of ``S_c`` (rows of ``masks``, see
    :func:`ntputils.analysis.confusion.support_masks`); ``U`` (V x r) holds the word-analyzer vectors
    of S~. Rows sum to 1 when ``s~_c`` lies in span(U) (true for the support of any context of the data).
    """
    masks = np.asarray(masks, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    if masks.ndim != 2 or U.ndim != 2 or masks.shape[1] != U.shape[0]:
        raise ValueError(f"shape mismatch: masks {masks.shape} (k, V) and U {U.shape} (V, r)")
    centered = masks - masks.mean(axis=1, keepdims=True)
    norms = np.sum(centered**2, axis=1)
    if np.any(norms == 0):
        raise ValueError("a class covering the whole vocabulary has a zero centered target")
    x = centered @ U
    return x**2 / norms[:, None]


def concept_depth(energy: np.ndarray, level: float = 0.9) -> np.ndarray:
    """Smallest (1-based) ``k`` with ``sum_{i<=k} E[c, i] >= level`` for every class (r if never reached)
    (paper B sec. 4.4, Fig. 3; ``E`` from :func:`concept_energy`).
    """
    energy = np.asarray(energy, dtype=np.float64)
    if energy.ndim != 2:
        raise ValueError(f"energy must be (classes, concepts), got shape {energy.shape}")
    if not 0 < level <= 1:
        raise ValueError(f"level must lie in (0, 1], got {level}")
    reached = np.cumsum(energy, axis=1) >= level - 1e-12
    return np.where(reached.any(axis=1), np.argmax(reached, axis=1) + 1, energy.shape[1])


# ---------------------------------------------------------------------------------------------
# measured learning: singular-value curves, crossing times, learning times
# ---------------------------------------------------------------------------------------------
def singular_value_curves(Ls: Sequence[np.ndarray] | np.ndarray, k: int | None = None) -> np.ndarray:
    """Singular values ``s_1(L_t) >= s_2(L_t) >= ...`` of each logit snapshot ``L_t``: array (len(Ls), k)
    (k = min(V, m) if None); paper B sec. 4.4, Figs. 12-19.
    """
    arr = np.asarray(Ls, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[0] == 0:
        raise ValueError(f"expected a non-empty stack of matrices (T, V, m), got shape {arr.shape}")
    require_finite(arr, "singular_value_curves: the logit snapshots")
    s = np.linalg.svd(arr, compute_uv=False)
    if k is not None:
        if not 1 <= k <= s.shape[1]:
            raise ValueError(f"k must be in 1..{s.shape[1]}, got {k}")
        s = s[:, :k]
    return s


def mode_amplitudes(Ls: Sequence[np.ndarray] | np.ndarray, U: np.ndarray, Vt: np.ndarray) -> np.ndarray:
    """``c_k(L_t) = u_k^T L_t v_k`` for every snapshot and mode: array (len(Ls), r) (paper B App. D, Fig. 13).

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


def crossing_times(t: np.ndarray, curves: np.ndarray, levels: np.ndarray | float) -> np.ndarray:
    """First time each curve reaches its level (linear interpolation between samples; ``nan`` if never).

    ``curves`` is (T, K) sampled at the increasing times ``t`` (T,); ``levels`` is (K,) or a scalar.
    A curve already at or above its level at ``t[0]`` crosses at ``t[0]``. With ``levels = sigma / 2``
    these are the measured half-times of paper B, Prop. 1 (Figs. 12-19).
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


def learning_times(t: np.ndarray, curves: np.ndarray, limits: np.ndarray | float, level: float = 0.9
                   ) -> np.ndarray:
    """Measured learning time of every mode: the first time ``curves[:, k]`` reaches ``level * limits[k]``.

    ``= crossing_times(t, curves, level * limits)`` (linear interpolation, ``nan`` if never). The default
    90% of the limit is the learning time of paper B App. D, Fig. 13 (``limits = sigma`` for the mode
    amplitudes ``u_k^T L_t v_k``); ``level=0.5`` gives the half-times of Prop. 1.
    """
    if not 0 < level <= 1:
        raise ValueError(f"level must lie in (0, 1], got {level}")
    return crossing_times(t, curves, level * np.asarray(limits, dtype=np.float64))


def class_learning_times(confusions: np.ndarray, steps: Sequence[int], disjoint: np.ndarray,
                         threshold: float = 0.9) -> np.ndarray:
    """Measured learning time of every class from confusion matrices ``(T, k, k)`` at ``steps``
    (paper B sec. 4.4, Fig. 3): the first recorded step from which the class stays learned
    (:func:`ntputils.analysis.confusion.learned_classes`, recall >= ``threshold`` and no context of a
    disjoint class predicted as the class) to the end of training; ``nan`` = never.
    """
    return first_step_holding(steps, learned_classes(confusions, disjoint, threshold))


def fit_inverse_sigma(times: np.ndarray, sigma: np.ndarray) -> tuple[float, float, float]:
    """Least-squares fit ``T_k = a / sigma_k + b``; returns ``(a, b, R^2)`` (paper B, Prop. 1, Fig. 12).

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
    """``||L - U U^T L V V^T||_F``: the logits outside ``span{u_i v_j^T}`` (paper B App. D, Fig. 12 right).

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
    """``||A - B||_F / ||B||_F`` (B is the reference and must be non-zero; paper B App. D, Fig. 12).
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape != B.shape:
        raise ValueError(f"shape mismatch: {A.shape} vs {B.shape}")
    nb = np.linalg.norm(B)
    if nb == 0:
        raise ValueError("relative_error: the reference is the zero matrix")
    return float(np.linalg.norm(A - B) / nb)


def richardson(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Extrapolate first-order (Euler / gradient-descent) results to step size 0 (the gradient flow of
    paper B, Prop. 1).

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
