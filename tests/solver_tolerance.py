"""Tolerances for comparing the *points* returned by iterative convex solvers.

The NTP-SVM ``min ||L||_* s.t. L in C`` (paper A, Eq. NTP-SVM) is convex but not strongly convex, and
its solution need not be unique. What a solver guarantees is an objective accuracy: our certified
solver (``ntputils.geometry.maxmargin_admm``) stops at a relative duality gap
``eps = (||L||_* - lb) / ||L||_* <= gap_tol``.
An objective accuracy says nothing about the point in general, so tests compare points only where
the optimum is provably unique (STEP imbalance, all k-subsets, the symmetric cases where ``S~`` has a
tight dual certificate). There the quadratic growth ``||L||_* - OPT >= kappa ||L - L*||^2 / ||L*||``
near the optimum turns the gap into a distance

    ||L - L*||_F / ||L*||_F <= sqrt(eps / kappa'),

with ``kappa'`` a property of the instance, not of the machine. We take ``kappa' >= 1e-2`` (a factor
10 on ``sqrt(eps)``), which holds with a wide margin on every instance below: measured distances are
at rounding level (1e-15) at ``eps = 1e-10``. A tolerance tighter than ``sqrt(eps)`` would test BLAS
kernels, thread counts and CPUs rather than the solver.
"""

from __future__ import annotations

import math

import numpy as np

#: sqrt(1 / kappa') in the bound above: a factor on sqrt(eps), fixed before any measurement.
GROWTH_FACTOR = 10.0


def point_tolerance(rel_gap: float) -> float:
    """Relative Frobenius distance to the unique optimum allowed at a certified relative gap ``rel_gap``."""
    return GROWTH_FACTOR * math.sqrt(max(float(rel_gap), np.finfo(float).eps))


def relative_distance(A: np.ndarray, B: np.ndarray) -> float:
    """``||A - B||_F / ||B||_F`` (B is the reference point)."""
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(B))
