"""Top-k SVD of the centered support matrix (:mod:`ntputils.geometry.spectral`) on small inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ntputils.data import zipf_supports
from ntputils.geometry.spectral import centered_operator, centered_topk_svd, fix_signs, svd_residuals


def centered_dense(S) -> np.ndarray:
    D = S.toarray() if sp.issparse(S) else np.asarray(S, dtype=np.float64)
    return D - D.mean(axis=0, keepdims=True)


@pytest.fixture(scope="module")
def support() -> sp.csc_array:
    # distinct singular values (checked below), so singular vectors are unique up to sign
    return zipf_supports(120, 900, max_support=20, exponent=1.0, seed=3)


def test_operator_applies_centering_implicitly(support):
    op = centered_operator(support)
    D = centered_dense(support)
    rng = np.random.default_rng(0)
    x, X = rng.standard_normal(support.shape[1]), rng.standard_normal((support.shape[1], 3))
    y, Y = rng.standard_normal(support.shape[0]), rng.standard_normal((support.shape[0], 2))
    np.testing.assert_allclose(op @ x, D @ x, atol=1e-12)
    np.testing.assert_allclose(op.matmat(X), D @ X, atol=1e-12)
    np.testing.assert_allclose(op.rmatvec(y), D.T @ y, atol=1e-12)
    np.testing.assert_allclose(op.rmatmat(Y), D.T @ Y, atol=1e-12)
    np.testing.assert_allclose(np.ones(support.shape[0]) @ (op.matmat(X)), 0, atol=1e-11)  # columns sum to 0


@pytest.mark.parametrize("method", ["arpack", "randomized"])
def test_sparse_methods_match_dense_svd(support, method):
    k = 12
    U0, s0, Vt0 = centered_topk_svd(support, k, method="dense")
    assert np.min(-np.diff(s0)) > 1e-3 * s0[0]  # well separated: vectors comparable entrywise
    U, s, Vt = centered_topk_svd(support, k, method=method)
    np.testing.assert_allclose(s, s0, rtol=0, atol=1e-8 * s0[0])
    np.testing.assert_allclose(U, U0, atol=1e-8)  # same signs thanks to the sign rule
    np.testing.assert_allclose(Vt, Vt0, atol=1e-8)
    full = np.linalg.svd(centered_dense(support), compute_uv=False)
    np.testing.assert_allclose(s0, full[:k], rtol=1e-12)


def test_dense_result_is_a_valid_svd(support):
    U, s, Vt, info = centered_topk_svd(support, 8, return_info=True)
    assert info["method"] == "dense"  # small input -> dense fallback
    assert info["max_residual"] < 1e-12
    np.testing.assert_allclose(U.T @ U, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(8), atol=1e-12)
    assert np.all(np.diff(s) <= 0)
    assert np.max(svd_residuals(centered_operator(support), U, s, Vt)) < 1e-12


def test_signs_are_stable_across_seeds_and_methods(support):
    a = centered_topk_svd(support, 10, method="arpack", seed=0)
    b = centered_topk_svd(support, 10, method="arpack", seed=7)
    c = centered_topk_svd(support, 10, method="randomized", seed=11)
    for other in (b, c):
        np.testing.assert_allclose(other[0], a[0], atol=1e-8)
        np.testing.assert_allclose(other[2], a[2], atol=1e-8)
    U = a[0]
    top = np.argmax(np.abs(U), axis=0)
    assert np.all(U[top, np.arange(U.shape[1])] > 0)


def test_fix_signs_rule():
    U = np.array([[0.6, -0.5], [-0.8, 0.5], [0.0, 0.70710678]])
    Vt = np.array([[1.0, 2.0], [3.0, 4.0]])
    U2, Vt2 = fix_signs(U, Vt)
    np.testing.assert_allclose(U2[:, 0], [-0.6, 0.8, 0.0])  # largest |entry| (row 1) made positive
    np.testing.assert_allclose(Vt2[0], [-1.0, -2.0])
    np.testing.assert_allclose(U2[:, 1], U[:, 1])  # row 2 is the largest, already positive
    s = np.array([2.0, 1.0])
    np.testing.assert_allclose(U2 * s @ Vt2, U * s @ Vt)  # product unchanged
    tie = np.array([[-0.5], [0.5], [0.1]])
    np.testing.assert_allclose(
        fix_signs(tie, np.ones((1, 2)))[0][:, 0], [0.5, -0.5, -0.1]
    )  # tie: lowest index
    near_tie = np.array([[-0.5], [0.5 + 1e-9], [0.1]])  # within the 1e-6 tie band: still the lowest index
    assert fix_signs(near_tie, np.ones((1, 1)))[0][0, 0] > 0
    again = fix_signs(U2, Vt2)
    np.testing.assert_array_equal(again[0], U2)


def test_dense_and_sparse_inputs_agree():
    S = zipf_supports(30, 80, max_support=5, seed=1)
    a = centered_topk_svd(S, 5)
    b = centered_topk_svd(S.toarray(), 5)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"k": 0}, "k must be"),
        ({"k": 31}, "k must be"),
        ({"k": 2.5}, "k must be"),
        ({"k": 3, "method": "lanczos"}, "unknown method"),
        ({"k": 29, "method": "arpack"}, "ARPACK needs"),
    ],
)
def test_bad_arguments_raise(kwargs, msg):
    S = zipf_supports(30, 80, max_support=5, seed=1)
    with pytest.raises(ValueError, match=msg):
        centered_topk_svd(S, **kwargs)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="2-D"):
        centered_topk_svd(np.ones(5), 1)
    with pytest.raises(ValueError, match="centered_topk_svd: S: 1 of 4 entries are NaN or infinite"):
        centered_topk_svd(np.array([[1.0, np.nan], [0.0, 1.0]]), 1)
    with pytest.raises(ValueError, match="empty"):
        centered_topk_svd(np.zeros((0, 4)), 1)
    with pytest.raises(ValueError, match="matching k"):
        fix_signs(np.ones((3, 2)), np.ones((3, 4)))
