"""Correctness of the certified NTP-SVM solver :mod:`ntputils.geometry.maxmargin_admm` on small instances
(plus the support validator and Zipf generator of :mod:`ntputils.data` it is tested with)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from ntputils.data import validate_support, zipf_supports
from ntputils.geometry import MaxMarginSolution, max_margin_cached, max_margin_logits, maxmargin_admm
from ntputils.geometry.maxmargin_admm import certify, solve_max_margin

from solver_tolerance import point_tolerance, relative_distance


def centered(S: np.ndarray) -> np.ndarray:
    S = np.asarray(S, dtype=np.float64)
    return S - S.mean(axis=0, keepdims=True)


def random_support(V: int, m: int, seed: int, max_size: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    S = np.zeros((V, m), dtype=np.int8)
    for j in range(m):
        S[rng.choice(V, rng.integers(1, max_size + 1), replace=False), j] = 1
    return S


def cvxpy_lmm(S: np.ndarray) -> tuple[np.ndarray, float]:
    """Reference: the NTP-SVM in cvxpy (all pairs written with one anchor per column), SCS eps 1e-9."""
    import cvxpy as cp

    mask = np.asarray(S, dtype=bool)
    V, m = mask.shape
    L = cp.Variable((V, m))
    onehot = np.zeros((V, m))
    onehot[mask.argmax(axis=0), np.arange(m)] = 1.0  # anchor a_j = first support row
    anchor = cp.sum(cp.multiply(onehot, L), axis=0, keepdims=True)  # (1, m): L[a_j, j]
    B = np.ones((V, 1)) @ anchor
    off = (~mask).astype(float)
    cons = [cp.multiply(off, B - L) >= off, cp.multiply(mask.astype(float), L - B) == 0]
    prob = cp.Problem(cp.Minimize(cp.normNuc(L)), cons)
    prob.solve(solver=cp.SCS, eps_abs=1e-9, eps_rel=1e-9, max_iters=200_000)
    return np.asarray(L.value), float(prob.value)


# ---------------------------------------------------------------------------------------------
# agreement with cvxpy and certificate validity
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("V,m,seed", [(6, 10, 0), (10, 20, 1), (12, 30, 2), (12, 5, 3)])  # last: V > m
def test_matches_cvxpy_and_brackets_optimum(V, m, seed):
    S = random_support(V, m, seed)
    L_ref, opt = cvxpy_lmm(S)
    sol = solve_max_margin(S, gap_tol=1e-9, progress=False)
    assert sol.converged
    assert sol.max_violation <= 1e-9
    # the reported objective is the nuclear norm of the returned point (LAPACK, float64)
    assert sol.nuclear_norm == pytest.approx(np.linalg.svd(sol.L, compute_uv=False).sum(), rel=1e-12)
    # certified bracket: lower_bound <= OPT <= ||L||_*  (cvxpy is accurate to ~1e-8 here)
    assert sol.lower_bound <= opt * (1 + 1e-7)
    assert opt <= sol.nuclear_norm * (1 + 1e-7)
    assert sol.rel_gap <= 1e-9
    assert abs(sol.nuclear_norm - opt) / opt <= 1e-7
    # Both points are optimal to the accuracy of the bracket; the points themselves are NOT compared.
    # The program is not strongly convex and its optimum need not be unique: two points within a
    # relative objective gap eps of OPT may sit ~sqrt(eps) apart or further (measured: 3.8e-5 at
    # eps = 4e-10 on one OpenBLAS kernel, 1e-11 on another). Instead, our dual certifies the cvxpy
    # point too: it is feasible to SCS's accuracy and its norm lies inside our bracket.
    cert = certify(S, L_ref, sol.dual)
    assert cert["max_violation"] <= 1e-6
    assert cert["lower_bound"] <= cert["nuclear_norm"] * (1 + 1e-9)
    assert cert["rel_gap"] <= 1e-6


def test_any_dual_candidate_gives_a_valid_lower_bound():
    S = random_support(8, 16, seed=3)
    sol = solve_max_margin(S, gap_tol=1e-10, progress=False)
    rng = np.random.default_rng(0)
    for _ in range(20):  # random candidates are projected onto the dual cone, then rescaled
        cert = certify(S, sol.L, rng.standard_normal(S.shape))
        assert cert["lower_bound"] <= sol.nuclear_norm * (1 + 1e-12)
    polar = certify(S, sol.L, dual="polar")
    assert polar["lower_bound"] <= sol.nuclear_norm * (1 + 1e-12)
    solved = certify(S, sol.L)  # dual="solve"
    assert solved["rel_gap"] <= 1e-8


def test_certify_reports_violations_and_suboptimality():
    S = random_support(7, 12, seed=4)
    sol = solve_max_margin(S, gap_tol=1e-10, progress=False)
    St = centered(S)  # feasible but (for random supports) not optimal
    cert = certify(S, St, sol.dual)
    assert cert["max_violation"] <= 1e-12
    assert cert["nuclear_norm"] >= sol.nuclear_norm - 1e-9
    bad = sol.L.copy()
    j = int(np.flatnonzero(S[:, 0] == 0)[0])
    bad[j, 0] = bad[S[:, 0] == 1, 0].max() - 0.5  # margin 0.5 instead of 1
    cert = certify(S, bad, dual="none")
    assert cert["ineq_violation"] == pytest.approx(0.5)
    assert np.isnan(cert["lower_bound"]) and np.isnan(cert["rel_gap"])
    bad = sol.L.copy()
    z = np.flatnonzero(S[:, 1] == 1)
    bad[z[0], 1] += 0.25
    assert certify(S, bad, dual="none")["eq_violation"] == pytest.approx(0.25) or z.size == 1


# ---------------------------------------------------------------------------------------------
# cases with a known closed form: L^mm = S~
# ---------------------------------------------------------------------------------------------
def step_one_hot(V: int, R: int) -> np.ndarray:
    """One-hot supports; the first V/2 words are the next token of R contexts each, the rest of one."""
    reps = [R] * (V // 2) + [1] * (V - V // 2)
    return np.repeat(np.eye(V, dtype=np.int8), reps, axis=1)


@pytest.mark.parametrize(
    "S",
    [
        step_one_hot(6, 3),
        step_one_hot(8, 5),
        np.array(
            [[int(z in c) for c in itertools.combinations(range(5), 2)] for z in range(5)], dtype=np.int8
        ),
    ],
    ids=["step-6-3", "step-8-5", "2-subsets-of-5"],
)
def test_symmetric_cases_equal_centered_support(S):
    """Here the optimum is unique and equal to S~ (paper A; the dual certificate Lambda = -U V^T of S~
    is tight), so the point itself is compared, with the tolerance of :func:`point_tolerance`."""
    gap_tol = 1e-10
    sol = solve_max_margin(S, gap_tol=gap_tol, progress=False)
    St = centered(S)
    assert sol.converged and sol.max_violation <= 1e-9
    assert sol.nuclear_norm == pytest.approx(np.linalg.svd(St, compute_uv=False).sum(), rel=1e-8)
    assert relative_distance(sol.L, St) <= point_tolerance(gap_tol)


def test_identical_supports_give_identical_columns_and_dedupe_is_exact():
    base = random_support(9, 7, seed=5)
    S = base[:, [0, 1, 2, 0, 3, 1, 4, 5, 6, 0, 2]]
    sol = solve_max_margin(S, gap_tol=1e-10, progress=False)
    plain = solve_max_margin(S, gap_tol=1e-10, progress=False, dedupe=False)
    assert sol.info["unique_columns"] == 7 and plain.info["unique_columns"] == 11
    for a, b in [(0, 3), (0, 9), (1, 5), (2, 10)]:
        np.testing.assert_allclose(sol.L[:, a], sol.L[:, b], atol=1e-12)
        np.testing.assert_allclose(plain.L[:, a], plain.L[:, b], atol=1e-6)
    assert sol.nuclear_norm == pytest.approx(plain.nuclear_norm, rel=1e-8)
    # the reduced problem's dual certifies the full problem's point (the optimum need not be unique,
    # so the points are not compared entrywise)
    assert certify(S, plain.L, sol.dual)["rel_gap"] <= 1e-8


def test_full_support_columns_and_all_full():
    S = random_support(6, 8, seed=6)
    S[:, 3] = 1  # one context followed by every word: no margin constraint
    sol = solve_max_margin(S, gap_tol=1e-9, progress=False)
    assert sol.converged and sol.max_violation <= 1e-9
    assert np.ptp(sol.L[:, 3]) <= 1e-9  # constant column (equalities only)
    with pytest.raises(ValueError, match="every context has full support"):  # L^mm undefined (issue 16)
        solve_max_margin(np.ones((4, 3)), progress=False)


# ---------------------------------------------------------------------------------------------
# solver behaviour
# ---------------------------------------------------------------------------------------------
def test_warm_start_and_sparse_input_and_determinism():
    S = random_support(10, 25, seed=7)
    sol = solve_max_margin(sp.csr_matrix(S), gap_tol=1e-8, progress=False)
    again = solve_max_margin(S, gap_tol=1e-8, progress=False)
    np.testing.assert_array_equal(sol.L, again.L)
    assert sol.nuclear_norm == again.nuclear_norm
    warm = solve_max_margin(S, gap_tol=1e-8, progress=False, warm_start=sol)
    assert warm.converged and warm.iterations <= 10
    warm_L = solve_max_margin(S, gap_tol=1e-8, progress=False, warm_start=sol.L)
    assert warm_L.converged and warm_L.nuclear_norm == pytest.approx(sol.nuclear_norm, rel=1e-7)


def test_float32_and_history():
    S = random_support(10, 20, seed=8)
    ref = solve_max_margin(S, gap_tol=1e-9, progress=False)
    sol = solve_max_margin(S, gap_tol=1e-4, dtype=torch.float32, progress=False)
    assert sol.converged and sol.solver.endswith("float32")
    assert sol.max_violation <= 1e-5  # certificate is recomputed in float64
    assert sol.lower_bound <= ref.nuclear_norm * (1 + 1e-9) <= sol.nuclear_norm * (1 + 1e-9)
    assert sol.history and {"iter", "rel_gap", "nuclear_norm", "lower_bound"} <= set(sol.history[0])


def test_not_converged_is_reported_or_raised():
    S = random_support(12, 30, seed=9)
    sol = solve_max_margin(S, max_iter=2, gap_tol=1e-12, progress=False)
    assert not sol.converged and sol.iterations == 2
    assert sol.lower_bound <= sol.nuclear_norm and sol.max_violation <= 1e-9  # still a valid bracket
    with pytest.raises(RuntimeError, match="did not converge: gap="):
        solve_max_margin(S, max_iter=2, gap_tol=1e-12, progress=False, strict=True)


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad,msg",
    [
        (np.array([[1, 0], [2, 1]]), "binary"),
        (np.array([[1, 0], [0, 0]]), "empty column"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.ones(3), "2-D"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "non-finite"),
        (np.zeros((0, 3)), "empty"),
        (np.array([["a", "b"]]), "numeric"),
    ],
)
def test_bad_support_raises(bad, msg):
    with pytest.raises(ValueError, match=msg):
        validate_support(bad)
    with pytest.raises(ValueError, match=msg):
        solve_max_margin(bad, progress=False)


def test_bad_options_raise():
    S = random_support(5, 6, seed=10)
    with pytest.raises(ValueError, match="device"):
        solve_max_margin(S, device="tpu", progress=False)
    with pytest.raises(ValueError, match="dtype"):
        solve_max_margin(S, dtype=torch.int32, progress=False)
    with pytest.raises(ValueError, match="shape"):
        solve_max_margin(S, warm_start=np.zeros((2, 2)), progress=False)
    with pytest.raises(ValueError, match="shape"):
        certify(S, np.zeros((5, 5)))
    with pytest.raises(ValueError, match="dual"):
        certify(S, centered(S), dual="magic")


def test_validate_support_canonical():
    S = sp.coo_matrix(([1, 1, 1], ([0, 1, 2], [0, 1, 1])), shape=(3, 2))
    out = validate_support(S)
    assert isinstance(out, sp.csc_array) and out.dtype == np.int8
    np.testing.assert_array_equal(out.toarray(), [[1, 0], [0, 1], [0, 1]])
    assert validate_support(np.array([[True], [False]])).nnz == 1


def test_zipf_supports_shape_and_statistics():
    S = zipf_supports(200, 3000, max_support=50, exponent=1.1, seed=0)
    assert S.shape == (200, 3000) and set(np.unique(S.data)) == {1}
    sizes = np.diff(S.indptr)
    assert sizes.min() >= 1 and sizes.max() <= 50
    freq = np.asarray(S.sum(axis=1)).ravel()
    assert freq[0] > freq[10] > freq[100]  # Zipf: frequent tokens are in many supports
    np.testing.assert_array_equal(S.toarray(), zipf_supports(200, 3000, seed=0).toarray())
    validate_support(S)


def test_unique_columns_grouping():
    S = validate_support(np.array([[1, 0, 1, 1], [0, 1, 0, 0], [1, 1, 1, 0]]))
    first, group, mult = maxmargin_admm._unique_columns(S)
    np.testing.assert_array_equal(first, [0, 1, 3])
    np.testing.assert_array_equal(group, [0, 1, 0, 2])
    np.testing.assert_array_equal(mult, [2, 1, 1])


def test_one_entry_point_one_result_type(tmp_path, monkeypatch):
    """``max_margin_logits`` returns the solver's own :class:`MaxMarginSolution` (no copy, same numbers);
    the disk cache stores exactly what the entry point computes."""
    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path))
    S = random_support(6, 8, seed=4)
    direct = solve_max_margin(S, progress=False)
    L, fast = max_margin_logits(S, solver="fast", return_info=True, progress=False)
    assert isinstance(direct, MaxMarginSolution) and isinstance(fast, MaxMarginSolution)
    np.testing.assert_array_equal(L, direct.L)
    assert fast.rank == direct.rank and fast.iterations == direct.iterations and fast.dual is not None
    _, ref = max_margin_logits(S, return_info=True, eps=1e-8)
    assert isinstance(ref, MaxMarginSolution) and ref.solver == "cvxpy/SCS" and np.isnan(ref.lower_bound)
    L1, info1 = max_margin_cached(S, solver="fast", progress=False)
    L2, info2 = max_margin_cached(S, solver="fast", progress=False)
    assert not info1["cached"] and info2["cached"]
    np.testing.assert_array_equal(L1, direct.L)
    np.testing.assert_array_equal(L2, direct.L)
