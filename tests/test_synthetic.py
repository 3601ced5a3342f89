"""Tests of ntputils.data.synthetic: STEP imbalance closed forms (paper B A.4 / D.1) and random supports."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils import geometry as G
from ntputils.data import synthetic as syn

STEP_CASES = [(4, 1), (4, 10), (6, 3), (10, 5), (12, 2)]


def _eigenspace_projectors(U: np.ndarray, s: np.ndarray, tol: float = 1e-8) -> dict[float, np.ndarray]:
    """{singular value: projector onto the span of its singular vectors} (unique even for repeats)."""
    out: dict[float, np.ndarray] = {}
    for value in np.unique(np.round(s, 8)):
        cols = np.abs(s - value) < tol
        out[float(value)] = U[:, cols] @ U[:, cols].T
    return out


def test_step_support_structure():
    S = syn.step_imbalanced_support(6, 3)
    assert S.shape == (6, 12)
    np.testing.assert_array_equal(S.sum(axis=0), 1)  # one-hot
    np.testing.assert_array_equal(S.sum(axis=1), [3, 3, 3, 1, 1, 1])  # majority words: R contexts each
    np.testing.assert_array_equal(np.argmax(S, axis=0), [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 4, 5])


@pytest.mark.parametrize("V, R", STEP_CASES)
def test_step_closed_form_singular_values(V, R):
    U, s, Vt = syn.step_closed_form(V, R)
    h = V // 2
    expected = np.r_[np.full(h - 1, np.sqrt(R)), np.sqrt((R + 1) / 2), np.ones(h - 1)]
    np.testing.assert_allclose(s, expected, atol=1e-15)
    numeric = np.linalg.svd(G.centered_support(syn.step_imbalanced_support(V, R)), compute_uv=False)
    assert numeric.size == V and numeric[-1] < 1e-12  # rank V - 1
    np.testing.assert_allclose(numeric[: V - 1], np.sort(s)[::-1], atol=1e-10)


@pytest.mark.parametrize("V, R", STEP_CASES)
def test_step_closed_form_factors(V, R):
    S = syn.step_imbalanced_support(V, R)
    St = G.centered_support(S)
    U, s, Vt = syn.step_closed_form(V, R)
    m = (R + 1) * V // 2
    assert U.shape == (V, V - 1) and Vt.shape == (V - 1, m)
    np.testing.assert_allclose((U * s) @ Vt, St, atol=1e-10)
    np.testing.assert_allclose(U.T @ U, np.eye(V - 1), atol=1e-10)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(V - 1), atol=1e-10)
    np.testing.assert_allclose(np.ones(V) @ U, 0.0, atol=1e-10)  # word analyzers are orthogonal to 1
    # repeated singular values: compare the projectors onto each singular subspace with numpy's SVD
    Un, sn, Vtn = np.linalg.svd(St, full_matrices=False)
    Un, sn, Vtn = Un[:, : V - 1], sn[: V - 1], Vtn[: V - 1]
    PU, PUn = _eigenspace_projectors(U, s), _eigenspace_projectors(Un, sn)
    PV, PVn = _eigenspace_projectors(Vt.T, s), _eigenspace_projectors(Vtn.T, sn)
    assert sorted(PU) == pytest.approx(sorted(PUn), abs=1e-8)
    assert sorted(PV) == pytest.approx(sorted(PVn), abs=1e-8)
    for value, proj in zip(sorted(PU), sorted(PUn), strict=True):
        np.testing.assert_allclose(PU[value], PUn[proj], atol=1e-10)
    for value, proj in zip(sorted(PV), sorted(PVn), strict=True):
        np.testing.assert_allclose(PV[value], PVn[proj], atol=1e-10)
    # the simple middle mode separates majority from minority words: u = [-1, 1] / sqrt(V)
    mid = V // 2 - 1
    np.testing.assert_allclose(U[:, mid], np.r_[-np.ones(V // 2), np.ones(V // 2)] / np.sqrt(V), atol=1e-15)


@pytest.mark.parametrize("V, R", STEP_CASES)
def test_step_weights_make_all_singular_values_one(V, R):
    S = syn.step_imbalanced_support(V, R)
    omega = syn.step_weights(V, R)
    assert omega.shape == (S.shape[1],)
    s = np.linalg.svd(G.centered_support(S) * omega, compute_uv=False)
    np.testing.assert_allclose(s[: V - 1], 1.0, atol=1e-10)
    assert s[-1] < 1e-12
    # S~ Omega = U Vtilde^T with the same U as the closed form
    U, _, _ = syn.step_closed_form(V, R)
    Vtil = (G.centered_support(S) * omega).T @ U
    np.testing.assert_allclose(Vtil.T @ Vtil, np.eye(V - 1), atol=1e-10)


def test_one_hot_balanced_all_singular_values_equal():
    S = syn.one_hot_balanced_support(5, 3)
    assert S.shape == (5, 15)
    s = np.linalg.svd(G.centered_support(S), compute_uv=False)
    np.testing.assert_allclose(s[:4], np.sqrt(3), atol=1e-12)
    assert s[4] < 1e-12


def test_all_subsets_support():
    S = syn.all_subsets_support(5, 2)
    assert S.shape == (5, 10)
    np.testing.assert_array_equal(S.sum(axis=0), 2)
    assert len({tuple(c) for c in S.T}) == 10  # all distinct
    np.testing.assert_array_equal(S.sum(axis=1), 4)  # each word is in C(4, 1) = 4 subsets
    s = np.linalg.svd(G.centered_support(S), compute_uv=False)
    np.testing.assert_allclose(s[:4], np.sqrt(3), atol=1e-12)  # symmetric: S~ S~^T = 3 (I - 11^T/5)


def test_random_supports_sizes_and_determinism():
    S = syn.random_supports(10, 50, min_size=2, max_size=4, seed=3)
    assert S.shape == (10, 50)
    assert set(np.unique(S)) <= {0.0, 1.0}
    sizes = S.sum(axis=0)
    assert sizes.min() >= 2 and sizes.max() <= 4 and len(set(sizes)) == 3
    np.testing.assert_array_equal(S, syn.random_supports(10, 50, min_size=2, max_size=4, seed=3))
    assert not np.array_equal(S, syn.random_supports(10, 50, min_size=2, max_size=4, seed=4))


def test_random_supports_zipf_prefers_frequent_tokens():
    S = syn.random_supports(20, 2000, min_size=1, max_size=2, seed=0, zipf_exponent=1.5)
    sizes = S.sum(axis=0)
    assert sizes.min() >= 1 and sizes.max() <= 2
    freq = S.sum(axis=1)
    assert freq[0] > freq[5] > freq[19]
    # with k = 1, Gumbel-top-1 samples exactly from w ~ 1/rank^s
    S1 = syn.random_supports(6, 20000, min_size=1, max_size=1, seed=1, zipf_exponent=1.0)
    w = 1 / np.arange(1, 7)
    np.testing.assert_allclose(S1.mean(axis=1), w / w.sum(), atol=0.01)


def test_random_ntp_data():
    d = syn.random_ntp_data(8, 10, min_size=1, max_size=3, max_count=4, seed=5)
    assert (d.V, d.m) == (8, 10)
    C = d.counts.toarray()
    np.testing.assert_array_equal(C > 0, syn.random_supports(8, 10, 1, 3, seed=5) > 0)
    assert C[C > 0].min() >= 1 and C.max() <= 4 and len(np.unique(C[C > 0])) > 1
    np.testing.assert_array_equal(C, syn.random_ntp_data(8, 10, 1, 3, 4, seed=5).counts.toarray())
    with pytest.raises(ValueError, match="max_count"):
        syn.random_ntp_data(8, 10, max_count=0)


def test_synthetic_bad_input():
    with pytest.raises(ValueError, match="even V"):
        syn.step_imbalanced_support(5, 2)
    with pytest.raises(ValueError, match="R must be"):
        syn.step_closed_form(6, 0)
    with pytest.raises(ValueError, match="min_size"):
        syn.random_supports(5, 4, min_size=0)
    with pytest.raises(ValueError, match="min_size"):
        syn.random_supports(5, 4, max_size=5)
    with pytest.raises(ValueError, match="m must be"):
        syn.random_supports(5, 0)
    with pytest.raises(ValueError, match="k < V"):
        syn.all_subsets_support(4, 4)
