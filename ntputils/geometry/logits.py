"""Logit geometry of NTP: S~, the subspace F, L^in, the NTP-SVM constraints and SVD factors.

``L^mm`` itself (the NTP-SVM solve, its result type and disk cache) lives in
:mod:`ntputils.geometry.maxmargin`.

Notation (paper A sec. 3-4; paper B sec. 3.2, eqs. 2-3), with S the V x m support matrix:

* ``S~ = (I_V - 1 1^T / V) S``: the centered support (data-sparsity) matrix, paper B eq. (2).
* ``F = span{(e_z - e_z') e_j^T : z, z' in S_j}``: logit directions that change in-support
  log-odds. Its orthogonal projection keeps, in every column, the in-support entries minus their
  in-support mean and zeroes the rest.
* ``L^in``: the unique element of F whose in-support differences equal the log-odds
  ``log(p_{j,z} / p_{j,z'})``: in-support ``log p_{j,z}`` minus its mean over ``S_j``, else 0.
* ``L^mm``: the minimum-nuclear-norm logit matrix with equal logits inside every support and a
  margin of at least 1 between each in-support and each off-support logit (the NTP-SVM in logit
  space). It depends only on S; ``S~`` is feasible, hence ``||L^mm||_* <= ||S~||_*``.
* ``L^mm = U Sigma V^T`` gives ``W^mm = U Sigma^{1/2}`` and ``H^mm = Sigma^{1/2} V^T`` (up to a
  rotation R, which no cosine similarity or Gram matrix sees).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ntputils.geometry.spectral import fix_signs, require_finite  # fix_signs: the one sign rule (re-exported)


# ---------------------------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------------------------
def _dense(A: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)


def _real_values(A: np.ndarray | sp.sparray | sp.spmatrix, name: str) -> np.ndarray:
    """The stored values of ``A`` (all entries if dense) as float64; raises for complex, non-numeric
    or non-finite entries."""
    values = A.data if sp.issparse(A) else np.asarray(A)
    if np.iscomplexobj(values):
        raise ValueError(f"{name} must be real, got a complex matrix")
    if values.dtype == object or not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {values.dtype}")
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} has {int((~np.isfinite(values)).sum())} non-finite entries (NaN/inf)")
    return values


def _binary(S: np.ndarray | sp.sparray | sp.spmatrix) -> None:
    """Raise unless every entry of the support matrix ``S`` is 0 or 1 (finite, real)."""
    values = _real_values(S, "support matrix S")
    bad = (values != 0) & (values != 1)
    if np.any(bad):
        raise ValueError(f"support matrix S must be binary 0/1: found {int(bad.sum())} other entries "
                         f"(e.g. {values[bad].ravel()[0]:g}); use S = (P > 0)")


# ---------------------------------------------------------------------------------------------
# S~, F, L^in
# ---------------------------------------------------------------------------------------------
def centered_support(S: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""$\widetilde{\boldsymbol S}=(\mathbb I_V-\frac1V\mathbb 1_V\mathbb 1_V^\top)\boldsymbol S$ as a dense V
    x m array, Paper B, Eq. (2).

    Entry ``[z, j]`` is ``1 - |S_j|/V`` in the support and ``-|S_j|/V`` outside; columns sum to 0.
    For large sparse S use :func:`concepts` instead, which never forms this dense matrix.
    """
    _binary(S)
    Sd = _dense(S).astype(np.float64)
    if Sd.ndim != 2:
        raise ValueError(f"S must be 2-D, got shape {Sd.shape}")
    return Sd - Sd.mean(axis=0, keepdims=True)


def in_support_logits(P: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""$\boldsymbol L^{\rm in}[z,j]=\log\hat p_{j,z}-\frac1{\lvert\mathcal S_j\rvert}\sum_{z'\in\mathcal
    S_j}\log\hat p_{j,z'}$ for $z\in\mathcal S_j$, 0 elsewhere: the finite component of
    Paper A, Thm. 1 (Fig. 2).

    ``L^in`` (V x m): in each column, ``log p_{j,z}`` minus its mean over the support, 0 elsewhere.

    ``P`` holds the soft labels (columns are distributions). The result lies in F and reproduces
    every in-support log-odds: ``L^in[z,j] - L^in[z',j] = log(p_{j,z}/p_{j,z'})``.
    """
    _real_values(P, "P")
    Pc = sp.csc_array(P if sp.issparse(P) else np.asarray(P), dtype=np.float64)
    Pc.eliminate_zeros()
    if Pc.ndim != 2:
        raise ValueError("P must be 2-D")
    if np.any(Pc.data < 0):
        raise ValueError("P must be nonnegative")
    sizes = np.diff(Pc.indptr)
    if np.any(sizes == 0):
        raise ValueError("P has an empty column (a context without next-token probability)")
    col = np.repeat(np.arange(Pc.shape[1]), sizes)
    logp = np.log(Pc.data)
    means = np.bincount(col, weights=logp, minlength=Pc.shape[1]) / sizes
    out = np.zeros(Pc.shape)
    out[Pc.indices, col] = logp - means[col]
    return out


def project_F(L: np.ndarray, S: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""$\mathcal P_{\mathcal F}(\boldsymbol L)$: each column restricted to $\mathcal S_j$ minus its mean over
    $\mathcal S_j$, 0 elsewhere (the subspace $\mathcal F$ of Paper A, Thm. 1 and Fig. 6c).

    Orthogonal projection of ``L`` (V x m) onto F: in-support entries minus their mean, 0 elsewhere.

    ``L - project_F(L, S)`` is the component in the orthogonal complement F^perp (equal logits on
    every support), where ``L^mm`` lives.
    """
    L = _real_values(np.asarray(L), "L").reshape(np.shape(L))
    _binary(S)
    Sd = _dense(S) > 0
    if L.shape != Sd.shape:
        raise ValueError(f"shape mismatch: L is {L.shape} but S is {Sd.shape}")
    sizes = Sd.sum(axis=0)
    if np.any(sizes == 0):
        raise ValueError("S has an empty column")
    means = np.where(Sd, L, 0.0).sum(axis=0) / sizes
    return np.where(Sd, L - means, 0.0)


# ---------------------------------------------------------------------------------------------
# the NTP-SVM constraints (L^mm itself: ntputils.geometry.maxmargin)
# ---------------------------------------------------------------------------------------------
def _masked_extremes(L: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column: (min, max) over the support and max over the off-support (``-inf`` if none)."""
    in_min = np.where(mask, L, np.inf).min(axis=0)
    in_max = np.where(mask, L, -np.inf).max(axis=0)
    off_max = np.where(mask, -np.inf, L).max(axis=0)
    return in_min, in_max, off_max


def constraint_violations(L: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(equality violation, margin violation) of ``L`` for the NTP-SVM constraints (Paper A, Eq. (NTP-SVM)).

    With ``mask`` the boolean V x m support pattern: ``eq = max_j (max_{S_j} l_j - min_{S_j} l_j)``
    and ``ineq = max_j (1 - (min_{z in S_j} l_zj - max_{v notin S_j} l_vj))_+``. Shared by
    :func:`margin_violation` and the certificates of :mod:`ntputils.geometry.maxmargin_admm`.
    """
    in_min, in_max, off_max = _masked_extremes(L, mask)
    eq = float(np.max(in_max - in_min))
    ineq = float(np.max(np.maximum(1.0 - (in_min - off_max), 0.0)))
    return eq, ineq


def margin_violation(L: np.ndarray, S: np.ndarray | sp.sparray | sp.spmatrix) -> float:
    """Largest violation of the NTP-SVM constraints (Paper A, Eq. (NTP-SVM)) by ``L`` (0 if feasible).

    Per column j with support values ``a = L[S_j, j]`` and off-support values ``b``: equality
    violation ``max(a) - min(a)`` and margin violation ``max(0, 1 - (min(a) - max(b)))``; the result
    is the larger of the two maxima over j (:func:`constraint_violations`).
    """
    L = require_finite(np.asarray(L, dtype=np.float64), "margin_violation: L")
    Sd = _dense(S) > 0
    if L.shape != Sd.shape:
        raise ValueError(f"shape mismatch: L is {L.shape} but S is {Sd.shape}")
    return max(constraint_violations(L, Sd))


def nuclear_norm(A: np.ndarray) -> float:
    """``||A||_*``: the sum of singular values (the objective of Paper A, Eq. (NTP-SVM)).
    """
    A = require_finite(A, "nuclear_norm: the matrix")
    return float(np.linalg.svd(np.asarray(A, dtype=np.float64), compute_uv=False).sum())


# ---------------------------------------------------------------------------------------------
# SVD factors
# ---------------------------------------------------------------------------------------------
def svd_factors(A: np.ndarray, rank_tol: float = 1e-9, k: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Thin SVD $\boldsymbol A=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top$ with the sign rule: the
    largest-$\lvert\cdot\rvert$ entry of every $\boldsymbol u_k$ is positive; the factorization
    of Paper B, Eq. (3).

    Thin SVD ``A = U diag(s) Vt`` keeping singular values ``> rank_tol * s_max`` (at most k).

    Signs follow :func:`ntputils.geometry.spectral.fix_signs` (largest-|entry| of each ``u_k`` positive,
    ties to the lowest index), so figures are stable across runs and machines.
    """
    A = require_finite(_dense(A), "svd_factors: the matrix")
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    keep = s > rank_tol * (s[0] if s.size else 0.0)
    if k is not None:
        keep[k:] = False
    U, Vt = fix_signs(U[:, keep], Vt[keep])
    return U, s[keep], Vt


def mm_embeddings(L: np.ndarray, rank_tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    r"""$(\boldsymbol W^{\rm mm},\boldsymbol H^{\rm mm})=(\boldsymbol U\boldsymbol\Sigma^{1/2},\
    \boldsymbol\Sigma^{1/2}\boldsymbol V^\top)$ from the SVD $\boldsymbol L=\boldsymbol
    U\boldsymbol\Sigma\boldsymbol V^\top$, Paper A, Thm. 2; Paper B, Sec. 3.2.

    ``(W, H)`` with ``W = U Sigma^{1/2}`` (V x r) and ``H = Sigma^{1/2} V^T`` (r x m), so ``W @ H == L``.

    The rank cut keeps singular values ``> rank_tol * sigma_max`` (the authors' code cuts at
    1e-6); it drops only numerical noise of first-order solvers. The factors are the SVD factors
    of paper A Thm. 2 with R = I; any rotation ``W R^T, R H`` gives the same corr / Gram matrices.
    """
    U, s, Vt = svd_factors(L, rank_tol=rank_tol)
    r = np.sqrt(s)
    return U * r, r[:, None] * Vt


def concepts(S: np.ndarray | sp.sparray | sp.spmatrix, k: int, **opts
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Top-$k$ SVD $(\boldsymbol U_k,\boldsymbol\Sigma_k,\boldsymbol V_k^\top)$ of $\widetilde{\boldsymbol
    S}$ from sparse $\boldsymbol S$, centering applied implicitly, Paper B, Eq. (3), Sec. 4.2.

    Top-k SVD ``(U, sigma, Vt)`` of ``S~ = (I - 1 1^T/V) S`` without forming S~ (paper B eq. 3).

    Column ``u_k`` of U is the k-th word-analyzer vector, row ``v_k`` of Vt the k-th
    context-analyzer vector (paper B sec. 4). Centering is applied implicitly as a linear
    operator on sparse S (:func:`ntputils.geometry.spectral.centered_topk_svd`); signs follow
    :func:`fix_signs`.
    """
    from ntputils.geometry import spectral

    return spectral.centered_topk_svd(S, k, **opts)


def batched_project_F(Ls: np.ndarray, support: np.ndarray) -> np.ndarray:
    """:func:`project_F` of every matrix of a stack ``Ls`` (K, V, m): ``P_F(L_k)``, in-support entries minus
    their support mean, 0 elsewhere (paper A sec. 3; the projection error of paper A Fig. 6c).

    ``support`` is the dense boolean V x m support matrix S.
    """
    Ls = np.asarray(Ls, dtype=np.float64)
    S = np.asarray(support, dtype=bool)
    if Ls.ndim != 3 or Ls.shape[1:] != S.shape:
        raise ValueError(f"shape mismatch: logit stack {Ls.shape} vs support {S.shape}")
    sizes = S.sum(axis=0)
    if np.any(sizes == 0):
        raise ValueError("support has an empty column")
    means = np.where(S, Ls, 0.0).sum(axis=1, keepdims=True) / sizes
    return np.where(S, Ls - means, 0.0)
