r"""Negative controls of paper A's claims: the same measurement where the paper's mechanism is absent.

A claim registered with a control (:func:`ntputils.chapter.preregister`, ``controls=``) is judged by its rule
on the control's value too; a control that passes reads "cannot fail". The controls built here:

* :func:`permuted_labels`: group labels (e.g. support groups) shuffled over the columns, group sizes kept:
  "same support" no longer defines a group (subspace collapse, paper A Prop. 1);
* :func:`spectrum_matched_random`: a random matrix with the singular values of a given one and Haar-random
  singular vectors: a target of the same shape and spectrum that training has no reason to approach
  (directional convergence to $\boldsymbol L^{\rm mm}$);
* :func:`random_f_perp` and :func:`residual_ratio_control`: $\boldsymbol L^{\rm in}$ plus a random
  $\mathcal F^\perp$ matrix of a given norm: the logits' norm split kept, their $\mathcal F^\perp$ direction
  random (the residual ratio $\|\boldsymbol L_k-\boldsymbol L^{\rm in}\|_F/\|\boldsymbol L_k\|_F$);
* :func:`random_f_target` and :func:`distance_curve`: a random matrix in $\mathcal F$ with the norm of
  $\boldsymbol L^{\rm in}$, the in-support target replaced by an unrelated one, and the distance of
  $\mathcal P_{\mathcal F}(\boldsymbol L_k)$ to it along training (Fig. 6c).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ntputils.analysis.convergence import residual_ratio
from ntputils.geometry.logits import batched_project_F, project_F

__all__ = ["permuted_labels", "spectrum_matched_random", "random_f_perp", "residual_ratio_control",
           "random_f_target", "distance_curve"]

SupportLike = np.ndarray | sp.sparray | sp.spmatrix


def permuted_labels(labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """``labels`` randomly permuted over the columns (seeded): every group keeps its size, its members
    are random columns. A claim about groups defined by a shared property (same support) is measured
    with these labels as its control."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {labels.shape}")
    return labels[np.random.default_rng(seed).permutation(labels.size)]


def _haar(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """An n x k matrix with orthonormal columns, uniformly distributed (QR of a Gaussian, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, k)))
    return Q * np.sign(np.where(np.diag(R) == 0, 1.0, np.diag(R)))


def spectrum_matched_random(X: np.ndarray, seed: int = 0, rank_tol: float = 1e-9) -> np.ndarray:
    r"""A random matrix of ``X``'s shape with ``X``'s singular values (those above ``rank_tol`` times the
    largest) and Haar-random left and right singular vectors: same shape, spectrum, rank and norms as
    ``X``, an unrelated direction. Seeded: same seed, same matrix."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a finite two-dimensional array")
    s = np.linalg.svd(X, compute_uv=False)
    if not s.size or s[0] == 0:
        raise ValueError("X is zero: it has no spectrum to match")
    s = s[s > rank_tol * s[0]]
    rng = np.random.default_rng(seed)
    return (_haar(X.shape[0], s.size, rng) * s) @ _haar(X.shape[1], s.size, rng).T


def random_f_perp(S: SupportLike, norm: float, seed: int = 0) -> np.ndarray:
    r"""A random matrix in $\mathcal F^\perp$ (equal entries on every support, anything off it) with
    Frobenius norm ``norm``: a Gaussian matrix minus its projection on $\mathcal F$, rescaled."""
    shape = S.shape
    G = np.random.default_rng(seed).standard_normal(shape)
    R = G - project_F(G, S)
    return R * (float(norm) / np.linalg.norm(R))


def residual_ratio_control(L: np.ndarray, L_in: np.ndarray, S: SupportLike, seed: int = 0) -> float:
    r"""The residual ratio of $\boldsymbol L^{\rm in}+\boldsymbol R$, $\boldsymbol R$ a random
    $\mathcal F^\perp$ matrix with $\|\boldsymbol R\|_F=\|\boldsymbol L-\boldsymbol L^{\rm in}\|_F$: the
    control of :func:`~ntputils.analysis.convergence.residual_ratio` (the same norms, the direction of the
    diverging part random). Equal to ``residual_ratio(L, L_in)`` up to the cross term of ``L``'s F-part, so
    a rule on the ratio that the trained logits pass, this control passes too: the ratio measures norms,
    not direction."""
    L, L_in = np.asarray(L, dtype=np.float64), np.asarray(L_in, dtype=np.float64)
    R = random_f_perp(S, np.linalg.norm(L - L_in), seed=seed)
    return residual_ratio(L_in + R, L_in)


def random_f_target(L_in: np.ndarray, S: SupportLike, seed: int = 0) -> np.ndarray:
    r"""A random matrix in $\mathcal F$ (each column zero-mean on its support, 0 off it) with the Frobenius
    norm of ``L_in``: an in-support target unrelated to the data's log-odds."""
    G = project_F(np.random.default_rng(seed).standard_normal(np.shape(L_in)), S)
    return G * (np.linalg.norm(L_in) / np.linalg.norm(G))


def distance_curve(Ls: Sequence[np.ndarray], S: SupportLike, target: np.ndarray) -> np.ndarray:
    r"""$\|\mathcal P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol T\|_F$ for every snapshot ``L_k`` of ``Ls``:
    the curve of Fig. 6c with the target $\boldsymbol L^{\rm in}$ replaced by ``target`` (e.g.
    :func:`random_f_target`)."""
    support = (S.toarray() if sp.issparse(S) else np.asarray(S)) > 0
    return np.linalg.norm(batched_project_F(np.stack(Ls), support) - target, axis=(1, 2))
