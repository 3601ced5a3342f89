"""Logit geometry of NTP: S~, the subspace F, L^in, L^mm and their SVD factors.

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

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ntputils.geometry.spectral import fix_signs  # the one sign rule of the package (re-exported)

MAX_MARGIN_SOLVERS = ("cvxpy", "fast")


# ---------------------------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------------------------
def _dense(A: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# S~, F, L^in
# ---------------------------------------------------------------------------------------------
def centered_support(S: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    """``S~ = (I - 1 1^T / V) S`` (paper B eq. 2) as a dense V x m array.

    Entry ``[z, j]`` is ``1 - |S_j|/V`` in the support and ``-|S_j|/V`` outside; columns sum to 0.
    For large sparse S use :func:`concepts` instead, which never forms this dense matrix.
    """
    Sd = _dense(S).astype(np.float64)
    if Sd.ndim != 2:
        raise ValueError(f"S must be 2-D, got shape {Sd.shape}")
    return Sd - Sd.mean(axis=0, keepdims=True)


def in_support_logits(P: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    """``L^in`` (V x m): in each column, ``log p_{j,z}`` minus its mean over the support, 0 elsewhere.

    ``P`` holds the soft labels (columns are distributions). The result lies in F and reproduces
    every in-support log-odds: ``L^in[z,j] - L^in[z',j] = log(p_{j,z}/p_{j,z'})``.
    """
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
    """Orthogonal projection of ``L`` (V x m) onto F: in-support entries minus their mean, 0 elsewhere.

    ``L - project_F(L, S)`` is the component in the orthogonal complement F^perp (equal logits on
    every support), where ``L^mm`` lives.
    """
    L = np.asarray(L, dtype=np.float64)
    Sd = _dense(S) > 0
    if L.shape != Sd.shape:
        raise ValueError(f"shape mismatch: L is {L.shape} but S is {Sd.shape}")
    sizes = Sd.sum(axis=0)
    if np.any(sizes == 0):
        raise ValueError("S has an empty column")
    means = (L * Sd).sum(axis=0) / sizes
    return np.where(Sd, L - means, 0.0)


# ---------------------------------------------------------------------------------------------
# L^mm
# ---------------------------------------------------------------------------------------------
def margin_violation(L: np.ndarray, S: np.ndarray | sp.sparray | sp.spmatrix) -> float:
    """Largest violation of the NTP-SVM constraints by ``L`` (0 if feasible).

    Per column j with support values ``a = L[S_j, j]`` and off-support values ``b``: equality
    violation ``max(a) - min(a)`` and margin violation ``max(0, 1 - (min(a) - max(b)))``.
    """
    L = np.asarray(L, dtype=np.float64)
    Sd = _dense(S) > 0
    if L.shape != Sd.shape:
        raise ValueError(f"shape mismatch: L is {L.shape} but S is {Sd.shape}")
    a_max = np.where(Sd, L, -np.inf).max(axis=0)
    a_min = np.where(Sd, L, np.inf).min(axis=0)
    b_max = np.where(Sd, -np.inf, L).max(axis=0)  # -inf for full-support columns
    eq = a_max - a_min
    ineq = np.maximum(0.0, 1.0 - (a_min - b_max))
    return float(max(eq.max(), ineq.max()))


def nuclear_norm(A: np.ndarray) -> float:
    """``||A||_*``: the sum of singular values."""
    return float(np.linalg.svd(np.asarray(A, dtype=np.float64), compute_uv=False).sum())


@dataclass
class MaxMarginResult:
    """``L^mm`` with how it was obtained and how good it is.

    ``lower_bound`` is a certified lower bound on the optimal nuclear norm (``nan`` when the
    solver gives none); ``rel_gap = (nuclear_norm - lower_bound) / nuclear_norm``.
    """

    L: np.ndarray
    nuclear_norm: float
    max_violation: float
    lower_bound: float = float("nan")
    rel_gap: float = float("nan")
    solver: str = ""
    seconds: float = 0.0
    converged: bool = True
    info: dict = field(default_factory=dict)


def _difference_rows(plus: np.ndarray, minus: np.ndarray, n: int) -> sp.csr_array:
    """Sparse rows ``e_plus[i] - e_minus[i]`` (one per pair) acting on vectors of length n."""
    k = plus.size
    rows = np.r_[np.arange(k), np.arange(k)]
    return sp.coo_array((np.r_[np.ones(k), -np.ones(k)], (rows, np.r_[plus, minus])), shape=(k, n)).tocsr()


def _cvxpy_constraint_matrices(S: sp.csc_array) -> tuple[sp.csr_array, sp.csr_array]:
    """Sparse operators on ``vec(L)`` (column-major) for the anchor form of the NTP-SVM.

    Anchor ``a_j`` = first support element of column j. Equalities ``L[z,j] - L[a_j,j] = 0``
    (z in S_j, z != a_j) and inequalities ``L[a_j,j] - L[v,j] >= 1`` (v not in S_j); these are
    equivalent to the all-pairs constraints.
    """
    V, m = S.shape
    Sd = S.toarray() > 0
    anchor = Sd.argmax(axis=0)  # first support row of each column
    anchor_idx = anchor + V * np.arange(m)
    j, z = np.nonzero(Sd.T)  # support entries (column j, row z), column by column
    is_anchor = z == anchor[j]
    zj, jj = z[~is_anchor], j[~is_anchor]
    E = _difference_rows(zj + V * jj, anchor_idx[jj], V * m)
    v, jv = np.nonzero(~Sd)
    D = _difference_rows(anchor_idx[jv], v + V * jv, V * m)
    return E, D


def _max_margin_cvxpy(S: sp.csc_array, eps: float = 1e-8, max_iters: int = 200_000,
                      solver: str = "SCS", verbose: bool = False) -> MaxMarginResult:
    import cvxpy as cp

    if solver.upper() == "CLARABEL" and sum(S.shape) > 150:
        raise ValueError("Clarabel needs O((V+m)^4) memory and aborts the process beyond V+m ~ 150; use SCS")
    V, m = S.shape
    E, D = _cvxpy_constraint_matrices(S)
    L = cp.Variable((V, m))
    x = cp.vec(L, order="F")
    cons = []
    if E.shape[0]:
        cons.append(E @ x == 0)
    if D.shape[0]:
        cons.append(D @ x >= 1)
    else:
        raise ValueError("every context has full support: the margin constraints are empty and L^mm = 0")
    prob = cp.Problem(cp.Minimize(cp.normNuc(L)), cons)
    kwargs: dict = {"verbose": verbose}
    if solver.upper() == "SCS":
        kwargs.update(eps_abs=eps, eps_rel=eps, max_iters=max_iters)
    t0 = time.perf_counter()
    try:
        prob.solve(solver=solver.upper(), **kwargs)
    except cp.error.SolverError as exc:  # pragma: no cover - depends on solver internals
        raise RuntimeError(f"cvxpy/{solver} failed on the NTP-SVM program (V={V}, m={m}): {exc}") from exc
    seconds = time.perf_counter() - t0
    if prob.status in ("infeasible", "infeasible_inaccurate", "unbounded", "unbounded_inaccurate"):
        raise RuntimeError(f"cvxpy/{solver} reports the NTP-SVM program {prob.status} (V={V}, m={m})")
    if L.value is None:
        raise RuntimeError(f"cvxpy/{solver} returned no solution (status {prob.status})")
    Lv = np.asarray(L.value)
    return MaxMarginResult(
        L=Lv, nuclear_norm=nuclear_norm(Lv), max_violation=margin_violation(Lv, S),
        lower_bound=float("nan"), solver=f"cvxpy/{solver}", seconds=seconds,
        converged=prob.status == "optimal", info={"status": prob.status, "objective": float(prob.value)},
    )


def max_margin_logits(
    S: np.ndarray | sp.sparray | sp.spmatrix,
    solver: str = "cvxpy",
    return_info: bool = False,
    **opts,
) -> np.ndarray | tuple[np.ndarray, MaxMarginResult]:
    """``L^mm = argmin ||L||_*`` s.t. equal logits on each support and in/out margins >= 1.

    Parameters
    ----------
    S:
        V x m support matrix (0/1, dense or sparse, every column non-empty, at least one column
        not of full support).
    solver:
        ``"cvxpy"`` (SCS, ``eps`` default 1e-8; exact but slow beyond V + m ~ 1500) or ``"fast"``
        (:func:`ntputils.geometry.maxmargin_admm.solve_max_margin`, first-order, certified, CUDA-capable).
    return_info:
        also return a :class:`MaxMarginResult` with the constraint violation, nuclear norm and,
        where available, a certified lower bound.
    opts:
        forwarded to the solver (``eps``, ``max_iters`` for cvxpy; ``tol``, ``device``,
        ``warm_start``... for the fast solver).
    """
    if solver not in MAX_MARGIN_SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; valid: {MAX_MARGIN_SOLVERS}")
    from ntputils.geometry.maxmargin_admm import validate_support  # the package's one support validator

    Sc = validate_support(S)
    if Sc.shape[0] < 2:
        raise ValueError(f"ill-posed input: the NTP-SVM needs V >= 2 words, got shape {Sc.shape}")
    if np.all(np.diff(Sc.indptr) == Sc.shape[0]):
        raise ValueError("ill-posed input: every context has full support, so there is no margin to maximize")
    if solver == "cvxpy":
        res = _max_margin_cvxpy(Sc, **opts)
    else:
        from ntputils.geometry import maxmargin_admm as lmm_fast

        sol = lmm_fast.solve_max_margin(Sc, **opts)
        res = MaxMarginResult(
            L=sol.L, nuclear_norm=sol.nuclear_norm, max_violation=sol.max_violation,
            lower_bound=sol.lower_bound, rel_gap=sol.rel_gap, solver=sol.solver, seconds=sol.seconds,
            converged=sol.converged, info={"iterations": sol.iterations, "rank": sol.rank},
        )
    return (res.L, res) if return_info else res.L


# ---------------------------------------------------------------------------------------------
# SVD factors
# ---------------------------------------------------------------------------------------------
def svd_factors(A: np.ndarray, rank_tol: float = 1e-9, k: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thin SVD ``A = U diag(s) Vt`` keeping singular values ``> rank_tol * s_max`` (at most k).

    Signs follow :func:`ntputils.geometry.spectral.fix_signs` (largest-|entry| of each ``u_k`` positive,
    ties to the lowest index), so figures are stable across runs and machines.
    """
    A = _dense(A)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    keep = s > rank_tol * (s[0] if s.size else 0.0)
    if k is not None:
        keep[k:] = False
    U, Vt = fix_signs(U[:, keep], Vt[keep])
    return U, s[keep], Vt


def mm_embeddings(L: np.ndarray, rank_tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """``(W, H)`` with ``W = U Sigma^{1/2}`` (V x r) and ``H = Sigma^{1/2} V^T`` (r x m), so ``W @ H == L``.

    The rank cut keeps singular values ``> rank_tol * sigma_max`` (the authors' code cuts at
    1e-6); it drops only numerical noise of first-order solvers. The factors are the SVD factors
    of paper A Thm. 2 with R = I; any rotation ``W R^T, R H`` gives the same corr / Gram matrices.
    """
    U, s, Vt = svd_factors(L, rank_tol=rank_tol)
    r = np.sqrt(s)
    return U * r, r[:, None] * Vt


def concepts(S: np.ndarray | sp.sparray | sp.spmatrix, k: int, **opts
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-k SVD ``(U, sigma, Vt)`` of ``S~ = (I - 1 1^T/V) S`` without forming S~ (paper B eq. 3).

    Column ``u_k`` of U is the k-th word-analyzer vector, row ``v_k`` of Vt the k-th
    context-analyzer vector (paper B sec. 4). Centering is applied implicitly as a linear
    operator on sparse S (:func:`ntputils.geometry.spectral.centered_topk_svd`); signs follow
    :func:`fix_signs`.
    """
    from ntputils.geometry import spectral

    return spectral.centered_topk_svd(S, k, **opts)
