r"""Theorem 1-2 quantities of paper A along a regularization path or a gradient-descent run.

For logits :math:`\boldsymbol L` (a point :math:`\boldsymbol L_\lambda` of the regularization path, or the
GD iterate :math:`\boldsymbol L_k=\boldsymbol W_k\boldsymbol H_k`), Paper A, Theorem 1 predicts

* :math:`\mathcal P_{\mathcal F}(\boldsymbol L)\to\boldsymbol L^{\rm in}` (in-support part, eq. of Theorem 1),
* :math:`\|\boldsymbol L\|_F\to\infty` and
  :math:`\boldsymbol L-\mathcal P_{\mathcal F}(\boldsymbol L)` converging in direction to
  :math:`\boldsymbol L^{\rm mm}`,

and Theorem 2 that the balanced factors converge in direction to those of :math:`\boldsymbol L^{\rm mm}`
(compared through their Gram matrices, which removes the rotation :math:`\boldsymbol R`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ntputils.analysis.metrics import gram_distance, normalized_distance
from ntputils.geometry import in_support_logits, mm_embeddings, project_F

__all__ = ["direction_error", "logit_geometry", "path_quantities"]


def direction_error(A: np.ndarray, B: np.ndarray) -> float:
    r"""Normalized distance of :math:`\boldsymbol A` to :math:`\boldsymbol B`,
    :math:`\big\|\tfrac{\boldsymbol A}{\|\boldsymbol A\|}-\tfrac{\boldsymbol B}{\|\boldsymbol B\|}\big\|_F`
    (:func:`ntputils.analysis.metrics.normalized_distance`), ``NaN`` when :math:`\boldsymbol A=0` (the path is
    exactly zero for :math:`\lambda\ge\lambda_{\max}`).

    Paper A, Theorem 1 (convergence in direction).
    """
    return normalized_distance(A, B) if np.linalg.norm(A) > 0 else np.nan


def logit_geometry(L: np.ndarray, S: np.ndarray, L_in: np.ndarray, L_target: np.ndarray,
                   W_target: np.ndarray, H_target: np.ndarray,
                   W: np.ndarray | None = None, H: np.ndarray | None = None) -> dict[str, float]:
    r"""The six Theorem 1-2 quantities of one logit matrix :math:`\boldsymbol L` (Paper A, Theorems 1-2).

    With :math:`\boldsymbol L_{\mathcal F}=\mathcal P_{\mathcal F}(\boldsymbol L)` (projection onto the
    in-support subspace :math:`\mathcal F` of the support ``S``):

    * ``proj_error`` :math:`=\|\boldsymbol L_{\mathcal F}-\boldsymbol L^{\rm in}\|_F`,
    * ``norm_L`` :math:`=\|\boldsymbol L\|_F`,
    * ``dir_perp``: :func:`direction_error` of :math:`\boldsymbol L-\boldsymbol L_{\mathcal F}` to
      :math:`\boldsymbol L^{\rm mm}` (``L_target``), ``dir_L`` the same for :math:`\boldsymbol L` itself,
    * ``gram_W`` / ``gram_H``: Gram distances of :math:`\boldsymbol W\boldsymbol W^\top` to
      :math:`\boldsymbol W^{\rm mm}\boldsymbol W^{\rm mm\top}` and of :math:`\boldsymbol H^\top\boldsymbol H`
      to
      :math:`\boldsymbol H^{\rm mm\top}\boldsymbol H^{\rm mm}` (``W_target``, ``H_target``).

    ``W``, ``H`` are the factors (e.g. trained by GD); if not given, the balanced factors of Lemma 1
    (:func:`ntputils.geometry.mm_embeddings` of ``L``) are used, and the Gram distances are ``NaN`` when
    :math:`\boldsymbol L=0`.
    """
    L_F = project_F(L, S)
    out = {"proj_error": np.linalg.norm(L_F - L_in), "norm_L": np.linalg.norm(L),
           "dir_perp": direction_error(L - L_F, L_target), "dir_L": direction_error(L, L_target)}
    if W is None or H is None:
        if np.linalg.norm(L) > 0:
            W, H = mm_embeddings(L)  # balanced factors of Lemma 1
        else:
            out["gram_W"] = np.nan
            out["gram_H"] = np.nan
            return out
    out["gram_W"] = gram_distance(W.T, W_target.T)
    out["gram_H"] = gram_distance(H, H_target)
    return out


def path_quantities(nd, path: Iterable[tuple[float, np.ndarray, dict]],
                    L_target: np.ndarray) -> dict[str, np.ndarray]:
    r"""Theorem 1-2 quantities (:func:`logit_geometry`) along a regularization path, plus the solver's
    ``ce_gap`` :math:`=\mathrm{CE}(\boldsymbol L_\lambda)-H`, ``nuc`` :math:`=\|\boldsymbol L_\lambda\|_*`,
    ``converged`` and ``iterations`` (arrays aligned with the lambdas).

    ``path`` is the output of :func:`ntputils.training.ufm.regularization_path` (``(lam, L, info)`` triples)
    on the data ``nd``; ``L_target`` is :math:`\boldsymbol L^{\rm mm}`. Paper A, Theorem 1 (the
    :math:`\lambda\to0` path of :math:`\min\mathcal L(\boldsymbol L)+\lambda\|\boldsymbol L\|_*`) and
    Theorem 2 (balanced factors).
    """
    Sd = nd.S.toarray()
    Lin = in_support_logits(nd.P)
    Wt, Ht = mm_embeddings(L_target)
    out: dict[str, list] = {k: [] for k in ("proj_error", "norm_L", "dir_perp", "dir_L", "ce_gap", "gram_W",
                                            "gram_H", "nuc", "converged", "iterations")}
    for _, L, info in path:
        for key, value in logit_geometry(L, Sd, Lin, L_target, Wt, Ht).items():
            out[key].append(value)
        out["ce_gap"].append(info["ce"] - nd.entropy)
        out["nuc"].append(info["nuclear_norm"])
        out["converged"].append(info["converged"])
        out["iterations"].append(info["iterations"])
    return {k: np.asarray(v) for k, v in out.items()}
