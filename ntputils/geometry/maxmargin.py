"""The max-margin logits ``L^mm``: the NTP-SVM in logit space, its result type and its disk cache.

Paper A, Eq. (NTP-SVM), Sec. 4 (book: Definition ``def-ntp-svm``), with S the V x m support matrix
(``S[z, j] = 1`` iff ``z in S_j``):

.. math::

    L^{mm} = \\arg\\min_{L \\in \\mathbb R^{V\\times m}} \\|L\\|_* \\quad\\text{s.t.}\\quad
    (e_z - e_{z'})^\\top L e_j = 0\\ (z, z' \\in \\mathcal S_j), \\qquad
    (e_z - e_v)^\\top L e_j \\ge 1\\ (z \\in \\mathcal S_j,\\ v \\notin \\mathcal S_j).

``L^mm`` depends only on S and lies in ``F^perp``; ``S~ = (I - 11^T/V) S`` is feasible, hence
``||L^mm||_* <= ||S~||_*``. Its SVD ``U Sigma V^T`` gives ``W^mm = U Sigma^{1/2}`` and
``H^mm = Sigma^{1/2} V^T`` (Paper A Thm. "reg path", Claim "P directional";
:func:`ntputils.geometry.mm_embeddings`).

This module is the one entry point: :func:`max_margin_logits` solves the program with the cvxpy
reference (SCS, the authors' anchor formulation) or with the certified first-order solver of
:mod:`ntputils.geometry.maxmargin_admm`; both return a :class:`MaxMarginSolution`;
:func:`max_margin_cached` stores ``L^mm`` on disk per support pattern (key :func:`support_key`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from ntputils.data.ntp import validate_support
from ntputils.geometry.logits import margin_violation, nuclear_norm
from ntputils.geometry.maxmargin_solution import MaxMarginSolution
from ntputils.hashing import digest
from ntputils.paths import cache_dir

__all__ = [
    "MAX_MARGIN_SOLVERS",
    "MaxMarginSolution",
    "max_margin_cached",
    "max_margin_logits",
    "support_key",
]

MAX_MARGIN_SOLVERS = ("cvxpy", "fast")


# ---------------------------------------------------------------------------------------------
# the cvxpy reference program
# ---------------------------------------------------------------------------------------------
def _difference_rows(plus: np.ndarray, minus: np.ndarray, n: int) -> sp.csr_array:
    """Sparse rows ``e_plus[i] - e_minus[i]`` (one per pair) acting on vectors of length n."""
    k = plus.size
    rows = np.r_[np.arange(k), np.arange(k)]
    return sp.coo_array((np.r_[np.ones(k), -np.ones(k)], (rows, np.r_[plus, minus])), shape=(k, n)).tocsr()


def _cvxpy_constraint_matrices(S: sp.csc_array) -> tuple[sp.csr_array, sp.csr_array]:
    """Sparse operators on ``vec(L)`` (column-major) for the anchor form of the NTP-SVM.

    Anchor ``a_j`` = first support element of column j. Equalities ``L[z,j] - L[a_j,j] = 0``
    (z in S_j, z != a_j) and inequalities ``L[a_j,j] - L[v,j] >= 1`` (v not in S_j); these are
    equivalent to the all-pairs constraints of Paper A, Eq. (NTP-SVM).
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
                      solver: str = "SCS", verbose: bool = False) -> MaxMarginSolution:
    """Paper A, Eq. (NTP-SVM) as a cvxpy program (``min normNuc(L)``, anchor constraints), the reference."""
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
    return MaxMarginSolution(
        L=Lv, nuclear_norm=nuclear_norm(Lv), max_violation=margin_violation(Lv, S),
        lower_bound=float("nan"), solver=f"cvxpy/{solver}", seconds=seconds,
        converged=prob.status == "optimal", info={"status": prob.status, "objective": float(prob.value)},
    )


# ---------------------------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------------------------
def max_margin_logits(
    S: np.ndarray | sp.sparray | sp.spmatrix,
    solver: str = "cvxpy",
    return_info: bool = False,
    **opts,
) -> np.ndarray | tuple[np.ndarray, MaxMarginSolution]:
    r"""$\boldsymbol L^{\rm mm}=\arg\min\lVert\boldsymbol L\rVert_*$ s.t. equal logits on each $\mathcal S_j$
    and in/out margins $\ge1$, Paper A, Eq. (NTP-SVM).

    Paper A, Eq. (NTP-SVM), Sec. 4: ``(e_z - e_z')^T L e_j = 0`` for ``z, z' in S_j`` and
    ``(e_z - e_v)^T L e_j >= 1`` for ``z in S_j``, ``v not in S_j``.

    Parameters
    ----------
    S:
        V x m support matrix (0/1, dense or sparse, every column non-empty, at least one column
        not of full support), checked by :func:`ntputils.data.validate_support`.
    solver:
        ``"cvxpy"`` (SCS, ``eps`` default 1e-8; exact but slow beyond V + m ~ 1500) or ``"fast"``
        (:func:`ntputils.geometry.maxmargin_admm.solve_max_margin`, first-order, certified, CUDA-capable).
    return_info:
        also return the :class:`MaxMarginSolution` with the constraint violation, nuclear norm and,
        where available, a certified lower bound.
    opts:
        forwarded to the solver (``eps``, ``max_iters`` for cvxpy; ``tol``, ``device``,
        ``warm_start``... for the fast solver).
    """
    if solver not in MAX_MARGIN_SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; valid: {MAX_MARGIN_SOLVERS}")
    Sc = validate_support(S)
    if Sc.shape[0] < 2:
        raise ValueError(f"ill-posed input: the NTP-SVM needs V >= 2 words, got shape {Sc.shape}")
    if np.all(np.diff(Sc.indptr) == Sc.shape[0]):
        raise ValueError("ill-posed input: every context has full support, so there is no margin to maximize")
    if solver == "cvxpy":
        res = _max_margin_cvxpy(Sc, **opts)
    else:
        from ntputils.geometry.maxmargin_admm import solve_max_margin  # imports torch: only when asked for

        res = solve_max_margin(Sc, **opts)
    return (res.L, res) if return_info else res.L


# ---------------------------------------------------------------------------------------------
# the disk cache
# ---------------------------------------------------------------------------------------------
def support_key(S: np.ndarray | sp.sparray | sp.spmatrix, solver: str, **opts) -> str:
    """A stable 24-hex-digit key of ``(S, solver, opts)``: :func:`ntputils.hashing.digest` of the shape,
    the support pattern ``1{S > 0}`` (bit-packed) and the solver options.

    ``L^mm`` depends on the data only through S (Paper A, Eq. (NTP-SVM)), so this is the cache key
    of :func:`max_margin_cached`.
    """
    Sd = (S.toarray() if sp.issparse(S) else np.asarray(S)) > 0
    return digest(list(Sd.shape), np.packbits(Sd, axis=None), solver, sorted(opts.items()), length=24)


def max_margin_cached(S: np.ndarray | sp.sparray | sp.spmatrix, solver: str = "cvxpy", cache: bool = True,
                      **opts) -> tuple[np.ndarray, dict]:
    """``L^mm`` of the support ``S`` (Paper A, Eq. (NTP-SVM), Sec. 4; :func:`max_margin_logits`), on disk.

    The result is stored under ``ntputils.paths.cache_dir("lmm")`` as ``<key>.npz`` with the key of
    :func:`support_key`, so every chapter that needs ``L^mm`` of the same support (and solver options)
    solves the program once. Returns ``(L_mm, info)`` with ``info`` = nuclear norm, constraint
    violation, solver, seconds, gap (where the solver certifies one) and ``cached`` (bool).

    A cache entry is trusted only after it verifies: its checksum
    (:func:`ntputils.data.corpora.cache.load_verified`), the shape of ``S``, feasibility (the margin
    violation of the stored ``L`` is at most ``max(1e-6, 10 x`` the stored violation) and, for
    ``V m <= 10^6``, its nuclear norm (relative 1e-8). Otherwise it is recomputed with a warning.
    """
    from ntputils.data.corpora.cache import CacheWarning, load_verified, save_verified

    path = cache_dir("lmm") / f"{support_key(S, solver, **opts)}.npz" if cache else None
    z = load_verified(path, required=("L", "nuclear_norm", "max_violation")) if path is not None else None
    if z is not None:
        info = {k: z[k].item() for k in z if k != "L"}
        L = np.array(z["L"], dtype=np.float64)
        problem = _cached_lmm_problem(L, S, info)
        if problem is None:
            return L, dict(info, cached=True)
        warnings.warn(f"L^mm cache entry {path} (under NTP_CACHE_DIR) {problem}; recomputing it",
                      CacheWarning, stacklevel=2)
    L, res = max_margin_logits(S, solver=solver, return_info=True, **opts)
    info = dict(nuclear_norm=res.nuclear_norm, max_violation=res.max_violation, lower_bound=res.lower_bound,
                rel_gap=res.rel_gap, solver=res.solver, seconds=res.seconds, converged=bool(res.converged))
    if path is not None:
        save_verified(path, {"L": L, **{k: np.asarray(v) for k, v in info.items()}})
    return L, dict(info, cached=False)


def _cached_lmm_problem(L: np.ndarray, S: np.ndarray | sp.sparray | sp.spmatrix, info: dict) -> str | None:
    """Why a cached ``L^mm`` cannot be trusted (``None``: it verifies), see :func:`max_margin_cached`."""
    shape = tuple(S.shape)
    if L.shape != shape:
        return f"holds L of shape {L.shape}, S is {shape}"
    if not np.all(np.isfinite(L)):
        return "holds non-finite entries"
    stored = float(info.get("max_violation", 0.0))
    violation = margin_violation(L, S)
    if violation > max(1e-6, 10 * stored):
        return f"is not feasible: margin violation {violation:.3g} (stored {stored:.3g})"
    if L.size <= 10**6:
        nn, stored_nn = nuclear_norm(L), float(info.get("nuclear_norm", np.nan))
        if not abs(nn - stored_nn) <= 1e-8 * max(1.0, abs(stored_nn)):
            return f"has nuclear norm {nn:.10g}, stored {stored_nn:.10g}"
    return None
