"""Tests of ntputils.analysis.metrics: corr, sim (SSIM structure term), normalized distances,
within/between-group cosine statistics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from ntputils.analysis import metrics as M


@pytest.fixture
def A() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((6, 9))


# ---- corr ------------------------------------------------------------------------------------------
def test_corr_of_orthonormal_columns_is_identity():
    Q = ortho_group.rvs(7, random_state=1)[:, :5]
    np.testing.assert_allclose(M.corr(Q), np.eye(5), atol=1e-14)


def test_corr_hand_example():
    A = np.array([[1.0, 1.0, -2.0], [0.0, 1.0, 0.0]])
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(M.corr(A), [[1, s, -1], [s, 1, -s], [-1, -s, 1]], atol=1e-15)


def test_corr_properties(A):
    C = M.corr(A)
    assert C.shape == (9, 9)
    np.testing.assert_allclose(np.diag(C), 1.0, atol=1e-14)
    np.testing.assert_allclose(C, C.T, atol=1e-15)
    assert np.all(np.abs(C) <= 1 + 1e-14)
    assert np.linalg.eigvalsh(C).min() > -1e-12  # a Gram matrix of unit vectors


def test_corr_scale_and_rotation_invariance(A):
    d = np.random.default_rng(2).uniform(0.1, 10.0, size=9)
    np.testing.assert_allclose(M.corr(A * d), M.corr(A), atol=1e-14)  # positive column scaling
    np.testing.assert_allclose(M.corr(-3.0 * A), M.corr(A), atol=1e-14)
    Q = ortho_group.rvs(6, random_state=3)
    np.testing.assert_allclose(M.corr(Q @ A), M.corr(A), atol=1e-13)
    # a sign flip of one column flips its row and column
    B = A.copy()
    B[:, 2] *= -1
    C, CB = M.corr(A), M.corr(B)
    np.testing.assert_allclose(CB[2, [0, 1, 3]], -C[2, [0, 1, 3]], atol=1e-14)


def test_corr_zero_column_gives_zero_row():
    A = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 0.0]])
    C = M.corr(A)
    assert np.all(C[1] == 0) and np.all(C[:, 1] == 0)
    assert C[0, 2] == pytest.approx(1 / np.sqrt(2))


def test_corr_rejects_non_matrix():
    with pytest.raises(ValueError, match="2-D"):
        M.corr(np.ones(3))


# ---- sim ---------------------------------------------------------------------------------------------
def test_sim_self_is_one(A):
    assert M.sim(A, A) == pytest.approx(1.0, abs=1e-12)


def test_sim_invariances(A):
    d = np.random.default_rng(4).uniform(0.1, 10.0, size=9)
    Q = ortho_group.rvs(6, random_state=5)
    assert M.sim(A, A * d) == pytest.approx(1.0, abs=1e-12)
    assert M.sim(A, Q @ A) == pytest.approx(1.0, abs=1e-12)
    # different embedding dimensions are fine: only the column geometry is compared
    B = np.vstack([Q @ A, np.zeros((3, 9))])
    assert M.sim(A, B) == pytest.approx(1.0, abs=1e-12)


def test_sim_is_the_pearson_correlation_of_the_corr_entries(A):
    B = np.random.default_rng(6).standard_normal((4, 9))
    X, Y = M.corr(A).ravel(), M.corr(B).ravel()
    xc, yc = X - X.mean(), Y - Y.mean()
    expected = (np.mean(xc * yc) + 1e-5) / (X.std() * Y.std() + 1e-5)
    value = M.sim(A, B)
    assert value == pytest.approx(expected, rel=1e-12)
    assert value == pytest.approx(np.corrcoef(X, Y)[0, 1], abs=1e-3)  # C = 1e-5 is a tiny regularizer
    assert -1 <= value < 0.9
    assert M.sim(A, B) == pytest.approx(M.sim(B, A), rel=1e-14)


def test_sim_detects_a_different_cluster_structure():
    # contexts 0-2 and 3-5 form two orthogonal clusters in A; in B the clusters are {0,1,2,3} vs {4,5}
    e1, e2 = np.eye(2)
    A = np.column_stack([e1, e1, e1, e2, e2, e2])
    B = np.column_stack([e1, e1, e1, e1, e2, e2])
    assert M.sim(A, B) == pytest.approx(np.corrcoef(M.corr(A).ravel(), M.corr(B).ravel())[0, 1], abs=1e-4)
    assert 0.3 < M.sim(A, B) < 0.9
    X = M.corr(A)
    assert M.structural_similarity(X, -X) == pytest.approx(-1.0, abs=1e-4)


def test_sim_shape_mismatch():
    with pytest.raises(ValueError, match="column"):
        M.sim(np.ones((3, 4)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="shape mismatch"):
        M.structural_similarity(np.ones((3, 3)), np.ones((4, 4)))


# ---- normalized distances --------------------------------------------------------------------------
def test_normalized_distance_properties(A):
    B = np.random.default_rng(7).standard_normal((6, 9))
    assert M.normalized_distance(A, 3.5 * A) == pytest.approx(0.0, abs=1e-14)
    assert M.normalized_distance(A, -A) == pytest.approx(2.0, abs=1e-14)
    assert M.normalized_distance(A, B) == pytest.approx(M.normalized_distance(B, A), rel=1e-14)
    assert M.normalized_distance(A, B) == pytest.approx(M.normalized_distance(2 * A, 0.1 * B), rel=1e-12)
    assert 0 < M.normalized_distance(A, B) < 2
    # ||a - b||^2 = 2 - 2 cos: orthogonal matrices (as vectors) are at distance sqrt(2)
    E1 = np.zeros((2, 2))
    E1[0, 0] = 1.0
    E2 = np.zeros((2, 2))
    E2[1, 1] = 4.0
    assert M.normalized_distance(E1, E2) == pytest.approx(np.sqrt(2), rel=1e-14)


def test_normalized_distance_errors():
    with pytest.raises(ValueError, match="shape mismatch"):
        M.normalized_distance(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="zero matrix"):
        M.normalized_distance(np.zeros((2, 2)), np.ones((2, 2)))


def test_gram_distance_is_rotation_invariant(A):
    Q = ortho_group.rvs(6, random_state=8)
    assert M.gram_distance(A, Q @ A) == pytest.approx(0.0, abs=1e-12)
    assert M.gram_distance(A, A * np.arange(1, 10)) > 0.1


# ---- group contrast ----------------------------------------------------------------------------
def test_group_contrast_of_collapsed_and_orthogonal_groups():
    e = np.eye(3)
    A = np.column_stack([e[0], 2 * e[0], e[1], e[1], 3 * e[1], e[2]])
    within, between = M.group_contrast(A, [0, 0, 1, 1, 1, 2])
    assert within == pytest.approx(1.0) and between == pytest.approx(0.0)
    within, between = M.group_contrast(np.column_stack([e[0], -e[0], e[1], e[1]]), [0, 0, 1, 1])
    assert within == pytest.approx(0.0) and between == pytest.approx(0.0)
    with pytest.raises(ValueError, match="shape mismatch"):
        M.group_contrast(A, [0, 1])
    with pytest.raises(ValueError, match="two groups"):
        M.group_contrast(A, [0] * 6)


def test_residual_ratio_is_the_norm_share_outside_L_in():
    """For L = L^in + R with R orthogonal to L^in (Frobenius), the ratio is ||R|| / sqrt(||L^in||^2 + ||R||^2)
    exactly; it is 0 at L = L^in and tends to 1 as R grows (Paper A, Sec. 4)."""
    from ntputils.analysis.convergence import residual_ratio

    rng = np.random.default_rng(0)
    L_in = rng.standard_normal((5, 7))
    R = rng.standard_normal((5, 7))
    R -= (R * L_in).sum() / (L_in * L_in).sum() * L_in
    assert residual_ratio(L_in, L_in) == 0.0
    for t in (0.5, 3.0, 1e4):
        expected = t * np.linalg.norm(R) / np.hypot(np.linalg.norm(L_in), t * np.linalg.norm(R))
        assert residual_ratio(L_in + t * R, L_in) == pytest.approx(expected, rel=1e-12)
    assert residual_ratio(L_in + 1e4 * R, L_in) > 1 - 1e-6
    with pytest.raises(ValueError, match="shape"):
        residual_ratio(L_in, L_in[:, :3])
    with pytest.raises(ValueError, match="zero"):
        residual_ratio(np.zeros((5, 7)), L_in)
