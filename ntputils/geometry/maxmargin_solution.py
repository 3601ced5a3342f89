"""The result type of the max-margin program (Paper A, Eq. (NTP-SVM)): the solution ``L^mm`` with its
certificate, shared by the cvxpy reference (:mod:`ntputils.geometry.maxmargin`) and the ADMM solver
(:mod:`ntputils.geometry.maxmargin_admm`), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MaxMarginSolution"]


@dataclass
class MaxMarginSolution:
    """A solution of the NTP-SVM (Paper A, Eq. (NTP-SVM), Sec. 4) with how it was obtained and how good it is.

    ``lower_bound <= ||L^mm||_* <= nuclear_norm`` rigorously (up to floating-point rounding) whenever
    ``max_violation`` is ~0 and a lower bound is given.

    Attributes
    ----------
    L: the logit matrix (``V x m`` float64), feasible up to ``max_violation``.
    nuclear_norm: ``||L||_*`` (LAPACK singular values), an upper bound on the optimum.
    max_violation: largest violation of the equality / margin constraints (>= 0).
    lower_bound: a certified lower bound ``<S, Lambda>`` on the optimum (dual point ``Lambda`` with
        ``1^T Lambda = 0``, ``Lambda <= 0`` off the support, ``||Lambda||_op <= 1``); ``nan`` when
        the solver gives none (cvxpy).
    rel_gap: ``(nuclear_norm - lower_bound) / nuclear_norm`` (``nan`` without a lower bound).
    solver: ``"cvxpy/<SOLVER>"`` or ``"admm/<device>/<dtype>"``.
    seconds: wall-clock seconds of the solve.
    converged: cvxpy: status ``"optimal"``; ADMM: ``rel_gap <= gap_tol`` and ``max_violation <= tol``.
    iterations: ADMM iterations (0 for cvxpy, whose status is in ``info``).
    rank: number of singular values of ``L`` above ``rank_tol * sigma_max`` (ADMM; ``None`` for cvxpy).
    dual: the dual point (``||dual||_op = 1``, column sums 0, ``<= 0`` off the support), ADMM only.
    rho: the final ADMM penalty (reused by warm starts), ADMM only.
    history: one dict per ADMM certificate check (iteration, seconds, norm, bound, gap, rho, residuals).
    info: solver details (cvxpy: ``status``, ``objective``; ADMM: unique-column count, tolerances
        and the two violation components).
    """

    L: np.ndarray
    nuclear_norm: float
    max_violation: float
    lower_bound: float = float("nan")
    rel_gap: float = float("nan")
    solver: str = ""
    seconds: float = 0.0
    converged: bool = True
    iterations: int = 0
    rank: int | None = None
    dual: np.ndarray | None = None
    rho: float | None = None
    history: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
