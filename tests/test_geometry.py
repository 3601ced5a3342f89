"""Tests of ntputils.geometry: S~, F, L^in, L^mm and SVD factors (paper A sec. 3-4, paper B eqs. 2-3).

The L^mm tests certify optimality independently of the primal solver: the Lagrangian dual of the
NTP-SVM

    min ||L||_*  s.t.  L[z,j] = L[z',j] (z, z' in S_j),  L[z,j] - L[v,j] >= 1 (z in S_j, v notin S_j)

is  max <S, Lam>  s.t.  1^T Lam = 0,  Lam[v,j] <= 0 (v notin S_j),  ||Lam||_op <= 1.
Weak duality (checked on the numbers below): for feasible L with common support value a_j,
<Lam, L> = sum_{j, v notin S_j} (-Lam[v,j]) (a_j - L[v,j]) >= sum_{j, v notin S_j} -Lam[v,j] = <S, Lam>,
and <Lam, L> <= ||Lam||_op ||L||_* <= ||L||_*. Equal primal and dual values certify optimality.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from ntputils import data as D
from ntputils import geometry as G
from ntputils.data import synthetic as syn

from solver_tolerance import point_tolerance, relative_distance


def _random_data(V: int, m: int, seed: int, max_size: int = 3) -> D.NTPData:
    rng = np.random.default_rng(seed)
    S = syn.random_supports(V, m, min_size=1, max_size=max_size, seed=seed)
    return D.from_counts((S * rng.integers(1, 6, size=S.shape)).astype(int))


def _ce(L: np.ndarray, data: D.NTPData) -> float:
    """pi-weighted soft-label cross-entropy, computed independently of ntputils."""
    P = data.P.toarray()
    logsm = L - logsumexp(L, axis=0, keepdims=True)
    return float(-(data.pi * (P * logsm).sum(axis=0)).sum())


def _dual_value(S: np.ndarray) -> tuple[float, np.ndarray]:
    """Solve the dual of the NTP-SVM (module docstring) with cvxpy/SCS."""
    S = np.asarray(S, dtype=np.float64)
    Lam = cp.Variable(S.shape)
    cons = [cp.sum(Lam, axis=0) == 0, cp.multiply(1.0 - S, Lam) <= 0, cp.sigma_max(Lam) <= 1]
    prob = cp.Problem(cp.Maximize(cp.sum(cp.multiply(S, Lam))), cons)
    prob.solve(solver="SCS", eps_abs=1e-10, eps_rel=1e-10, max_iters=200_000)
    return float(prob.value), np.asarray(Lam.value)


# ---- S~ ------------------------------------------------------------------------------------------
def test_centered_support_entries_and_column_sums():
    S = syn.random_supports(7, 12, min_size=1, max_size=4, seed=1)
    St = G.centered_support(S)
    sizes = S.sum(axis=0)
    np.testing.assert_allclose(np.ones(7) @ St, 0.0, atol=1e-14)  # 1^T S~ = 0
    np.testing.assert_allclose(St, np.where(S > 0, 1 - sizes / 7, -sizes / 7), atol=1e-15)
    np.testing.assert_allclose(G.centered_support(sp.csc_array(S)), St)  # sparse input, same result


def test_centered_support_is_feasible_for_the_svm():
    for seed in range(3):
        S = syn.random_supports(8, 10, min_size=1, max_size=4, seed=seed)
        assert G.margin_violation(G.centered_support(S), S) == pytest.approx(0.0, abs=1e-12)


# ---- F, P_F, L^in --------------------------------------------------------------------------------
def test_project_F_is_an_orthogonal_projection():
    rng = np.random.default_rng(0)
    S = syn.random_supports(6, 9, min_size=1, max_size=4, seed=2)
    A, B = rng.standard_normal((2, 6, 9))
    PA, PB = G.project_F(A, S), G.project_F(B, S)
    np.testing.assert_allclose(G.project_F(PA, S), PA, atol=1e-14)  # idempotent
    assert np.sum(PA * B) == pytest.approx(np.sum(A * PB), abs=1e-12)  # self-adjoint
    assert np.sum((A - PA) * PB) == pytest.approx(0.0, abs=1e-12)  # residual orthogonal to F
    assert np.all(PA[S == 0] == 0)  # F lives on the supports
    np.testing.assert_allclose((PA * S).sum(axis=0), 0.0, atol=1e-14)  # in-support mean 0
    # one-element supports carry no log-odds: F has no component there
    assert np.all(PA[:, S.sum(axis=0) == 1] == 0)
    # the complement (equal logits on each support) is annihilated
    C = S * rng.standard_normal(9) - 5 * (1 - S) * rng.random((6, 9))
    np.testing.assert_allclose(G.project_F(C, S), 0.0, atol=1e-14)


def test_project_F_hand_example():
    S = np.array([[1, 0], [1, 1], [0, 1], [1, 0]])
    L = np.array([[1.0, 5.0], [2.0, 4.0], [7.0, 6.0], [6.0, 9.0]])
    np.testing.assert_allclose(G.project_F(L, S), [[-2.0, 0.0], [-1.0, -1.0], [0.0, 1.0], [3.0, 0.0]])


def test_in_support_logits_lies_in_F_and_reproduces_log_odds():
    data = _random_data(8, 12, seed=4, max_size=4)
    S, P = data.S.toarray(), data.P.toarray()
    Lin = G.in_support_logits(data.P)
    np.testing.assert_allclose(G.project_F(Lin, S), Lin, atol=1e-14)
    assert np.all(Lin[S == 0] == 0)
    for j in range(data.m):
        z = np.flatnonzero(S[:, j])
        np.testing.assert_allclose(Lin[z[:, None], j] - Lin[z[None, :], j],
                                   np.log(P[z[:, None], j] / P[z[None, :], j]), atol=1e-13)
        # softmax restricted to the support gives back p_j
        np.testing.assert_allclose(np.exp(Lin[z, j] - logsumexp(Lin[z, j])), P[z, j], rtol=1e-13)
    np.testing.assert_allclose(G.in_support_logits(P), Lin)  # dense input, same result


def test_in_support_logits_hand_example():
    P = np.array([[0.5, 0.0], [0.25, 0.0], [0.25, 1.0]])
    g = (np.log(0.5) + 2 * np.log(0.25)) / 3
    expected = np.array([[np.log(0.5) - g, 0.0], [np.log(0.25) - g, 0.0], [np.log(0.25) - g, 0.0]])
    np.testing.assert_allclose(G.in_support_logits(P), expected, atol=1e-15)


def test_ce_along_Lin_plus_t_St_tends_to_entropy():
    """CE(L^in + t S~) decreases to H: the softmax concentrates on supports with in-support odds of P."""
    data = _random_data(7, 10, seed=5)
    Lin = G.in_support_logits(data.P)
    St = G.centered_support(data.S)
    gaps = [_ce(Lin + t * St, data) - data.entropy for t in (0.0, 2.0, 5.0, 10.0, 20.0, 40.0)]
    assert gaps[0] > 0.1
    assert np.all(np.diff(gaps) < 0)
    # off-support softmax mass of column j is ~ (V - |S_j|) e^{-t}: the gap at t = 20 is ~1e-8
    assert 0 < gaps[4] < 1e-7
    assert abs(gaps[5]) < 1e-14
    # a larger margin direction beats a smaller one at the same t: S~ / 2 is slower
    assert _ce(Lin + 10 * St / 2, data) - data.entropy > gaps[3]


def test_ce_equals_entropy_at_Lin_for_full_supports():
    C = np.array([[1, 3], [2, 1], [5, 1]])
    data = D.from_counts(C)
    assert _ce(G.in_support_logits(data.P), data) == pytest.approx(data.entropy, abs=1e-14)


# ---- margin_violation ------------------------------------------------------------------------------
def test_margin_violation_hand_examples():
    S = np.array([[1, 0], [1, 0], [0, 1]])
    L = np.array([[1.0, 0.0], [1.2, 0.0], [0.0, 0.5]])
    # col 0: unequal support values (0.2), margin min(1, 1.2) - 0 = 1 -> 0; col 1: margin 0.5 -> 0.5
    assert G.margin_violation(L, S) == pytest.approx(0.5)
    L[2, 1] = 3.0
    assert G.margin_violation(L, S) == pytest.approx(0.2)
    L[1, 0] = 1.0
    assert G.margin_violation(L, S) == 0.0


# ---- L^mm: optimality certificates ------------------------------------------------------------------
@pytest.mark.parametrize("V, m, seed", [(6, 8, 0), (8, 12, 1), (10, 15, 2)])
def test_max_margin_strong_duality_random(V, m, seed):
    S = syn.random_supports(V, m, min_size=1, max_size=3, seed=seed)
    L, res = G.max_margin_logits(S, return_info=True, eps=1e-9)
    # primal feasibility and F^perp membership
    assert res.max_violation <= 1e-6
    assert G.margin_violation(L, S) <= 1e-6
    np.testing.assert_allclose(G.project_F(L, S), 0.0, atol=1e-6)
    primal = G.nuclear_norm(L)
    assert res.nuclear_norm == pytest.approx(primal, rel=1e-12)
    # dual feasibility, checked by hand on the returned dual point
    dual, Lam = _dual_value(S)
    assert np.abs(Lam.sum(axis=0)).max() <= 1e-7
    assert Lam[S == 0].max() <= 1e-7
    assert np.linalg.norm(Lam, 2) <= 1 + 1e-7
    assert np.sum(S * Lam) == pytest.approx(dual, rel=1e-9)
    # strong duality: certified optimality
    assert abs(primal - dual) <= 1e-6 * primal
    # L^mm is never worse than the feasible S~, and strictly better on these random supports
    assert primal <= G.nuclear_norm(G.centered_support(S)) * (1 + 1e-9)


def test_max_margin_beats_centered_support_strictly_on_random_supports():
    """S~ is feasible but not optimal in general (random supports: normalized distance ~0.15, lower rank)."""
    S = syn.random_supports(10, 16, min_size=1, max_size=3, seed=7)
    L = G.max_margin_logits(S, eps=1e-9)
    St = G.centered_support(S)
    assert G.nuclear_norm(L) < G.nuclear_norm(St) * (1 - 1e-3)
    d = np.linalg.norm(L / np.linalg.norm(L) - St / np.linalg.norm(St))
    assert d > 0.05


def _certified_gap(S: np.ndarray, L: np.ndarray) -> float:
    """Relative duality gap of a (cvxpy) point, certified by the independent dual of the ADMM solver."""
    from ntputils.geometry.maxmargin_admm import certify

    cert = certify(S, L)
    assert cert["max_violation"] <= 1e-6
    return max(cert["rel_gap"], 0.0)


@pytest.mark.parametrize("V, R", [(4, 2), (4, 5), (6, 3), (8, 2)])
def test_max_margin_equals_centered_support_step_imbalance(V, R):
    """Unique optimum S~ (STEP): the point is compared, at the distance its certified gap allows."""
    S = syn.step_imbalanced_support(V, R)
    L = G.max_margin_logits(S, eps=1e-9)
    St = G.centered_support(S)
    assert G.nuclear_norm(L) == pytest.approx(G.nuclear_norm(St), rel=1e-6)
    # S~ itself (not just its direction): the margin is exactly 1
    assert relative_distance(L, St) <= point_tolerance(_certified_gap(S, L))


def test_max_margin_equals_centered_support_all_2_subsets():
    S = syn.all_subsets_support(5, 2)
    L = G.max_margin_logits(S, eps=1e-9)
    St = G.centered_support(S)
    assert relative_distance(L, St) <= point_tolerance(_certified_gap(S, L))
    assert G.nuclear_norm(L) == pytest.approx(4 * np.sqrt(3), rel=1e-6)  # sigma = sqrt(3) x 4 (V - 1 = 4)


def test_max_margin_identical_supports_identical_columns():
    base = syn.random_supports(8, 6, min_size=1, max_size=3, seed=11)
    S = np.hstack([base, base[:, [0, 3, 3]]])  # columns 6 = 0, 7 = 8 = 3
    L = G.max_margin_logits(S, eps=1e-9)
    np.testing.assert_allclose(L[:, 6], L[:, 0], atol=1e-6)
    np.testing.assert_allclose(L[:, 7], L[:, 3], atol=1e-6)
    np.testing.assert_allclose(L[:, 8], L[:, 3], atol=1e-6)


def test_max_margin_sparse_input_and_full_support_column():
    S = syn.random_supports(6, 7, min_size=1, max_size=3, seed=3)
    S[:, 2] = 1  # one context with full support: only equality constraints there
    L = G.max_margin_logits(sp.csc_array(S), eps=1e-9)
    assert G.margin_violation(L, S) <= 1e-6
    assert np.ptp(L[:, 2]) <= 1e-6


def test_max_margin_fast_solver_agrees_with_cvxpy():
    pytest.importorskip("ntputils.geometry.maxmargin_admm")
    for seed in (0, 1):
        S = syn.random_supports(8, 12, min_size=1, max_size=3, seed=seed)
        Lc = G.max_margin_logits(S, eps=1e-9)
        Lf, res = G.max_margin_logits(S, solver="fast", return_info=True, progress=False)
        assert res.max_violation <= 1e-6
        assert res.rel_gap <= 1e-5
        assert res.lower_bound <= G.nuclear_norm(Lc) * (1 + 1e-6)
        assert G.nuclear_norm(Lf) == pytest.approx(G.nuclear_norm(Lc), rel=1e-5)
        # the optimum of a random instance need not be unique: instead of comparing points, the fast
        # solver's dual certifies the cvxpy point as optimal to the same accuracy
        assert _certified_gap(S, Lc) <= 1e-5


def test_max_margin_bad_input():
    S = syn.random_supports(5, 4, seed=0)
    with pytest.raises(ValueError, match="unknown solver"):
        G.max_margin_logits(S, solver="mosek")
    with pytest.raises(ValueError, match="full support"):
        G.max_margin_logits(np.ones((4, 3)))
    with pytest.raises(ValueError, match="empty column"):
        G.max_margin_logits(np.array([[1, 0], [0, 0], [0, 0]]))
    with pytest.raises(ValueError, match="binary"):
        G.max_margin_logits(2 * S)
    with pytest.raises(ValueError, match="V >= 2"):
        G.max_margin_logits(np.ones((1, 3)))


def test_shape_mismatch_errors():
    S = syn.random_supports(5, 4, seed=0)
    with pytest.raises(ValueError, match="shape mismatch"):
        G.project_F(np.zeros((5, 5)), S)
    with pytest.raises(ValueError, match="shape mismatch"):
        G.margin_violation(np.zeros((4, 4)), S)
    with pytest.raises(ValueError, match="2-D"):
        G.centered_support(np.ones(3))
    with pytest.raises(ValueError, match="empty column"):
        G.in_support_logits(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="nonnegative"):
        G.in_support_logits(np.array([[1.5, 1.0], [-0.5, 0.0]]))


# ---- SVD factors ---------------------------------------------------------------------------------
def test_svd_factors_signs_and_reconstruction():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 4)) @ rng.standard_normal((4, 9))  # rank 4
    U, s, Vt = G.svd_factors(A)
    assert s.shape == (4,)
    np.testing.assert_allclose((U * s) @ Vt, A, atol=1e-12)
    np.testing.assert_allclose(U.T @ U, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(4), atol=1e-12)
    idx = np.argmax(np.abs(U), axis=0)
    assert np.all(U[idx, np.arange(4)] > 0)
    # the sign rule makes the factors of A and of -A differ only in V
    U2, s2, Vt2 = G.svd_factors(-A)
    np.testing.assert_allclose(U2, U, atol=1e-12)
    np.testing.assert_allclose(Vt2, -Vt, atol=1e-12)
    assert G.svd_factors(A, k=2)[1].shape == (2,)


def test_mm_embeddings_factorization():
    S = syn.step_imbalanced_support(6, 3)
    L = G.centered_support(S)
    W, H = G.mm_embeddings(L)
    assert W.shape == (6, 5) and H.shape == (5, 12)  # rank V - 1
    np.testing.assert_allclose(W @ H, L, atol=1e-12)
    np.testing.assert_allclose(W.T @ W, H @ H.T, atol=1e-12)  # balanced: both = Sigma
    assert np.sum(W**2) == pytest.approx(G.nuclear_norm(L), rel=1e-12)
    # rotation-free Gram forms: W W^T = (L L^T)^{1/2}
    evals, evecs = np.linalg.eigh(L @ L.T)
    sqrt_LLt = (evecs * np.sqrt(np.clip(evals, 0, None))) @ evecs.T
    np.testing.assert_allclose(W @ W.T, sqrt_LLt, atol=1e-10)


def test_concepts_match_dense_svd_of_centered_support():
    pytest.importorskip("ntputils.geometry.spectral")
    S = syn.random_supports(12, 20, min_size=1, max_size=4, seed=3)
    U, s, Vt = G.concepts(sp.csc_array(S), 3)
    Ud, sd, Vtd = G.svd_factors(G.centered_support(S), k=3)
    np.testing.assert_allclose(s, sd, rtol=1e-8)
    np.testing.assert_allclose(np.abs(U.T @ Ud), np.eye(3), atol=1e-6)
    np.testing.assert_allclose((U * s) @ Vt, (Ud * sd) @ Vtd, atol=1e-6)
