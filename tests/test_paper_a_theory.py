"""Tests for the helpers added for the paper A theory chapters (a02-a04)."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.data.synthetic import random_ntp_data
from ntputils.training import ufm


def test_random_ntp_data_supports_and_counts():
    data = random_ntp_data(8, 10, min_size=1, max_size=4, max_count=4, seed=3)
    assert (data.V, data.m) == (8, 10)
    sizes = data.support_sizes
    assert sizes.min() >= 1 and sizes.max() <= 4
    counts = data.counts.toarray()
    assert counts[counts > 0].min() >= 1 and counts.max() <= 4
    np.testing.assert_allclose(data.P.toarray().sum(axis=0), 1.0)


def test_random_ntp_data_is_deterministic_and_seed_dependent():
    a = random_ntp_data(6, 9, seed=1).counts.toarray()
    b = random_ntp_data(6, 9, seed=1).counts.toarray()
    c = random_ntp_data(6, 9, seed=2).counts.toarray()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_random_ntp_data_rejects_bad_max_count():
    with pytest.raises(ValueError, match="max_count"):
        random_ntp_data(5, 5, max_count=0)


@pytest.mark.parametrize("lam", [0.1, 0.05, 0.02])
def test_nuclear_prox_gradient_reaches_tolerance_and_kkt(lam):
    """The FISTA solver must stop on its residual (it used to restart forever at the optimum) and the
    result must satisfy the optimality condition -grad CE(L) in lam * d||L||_*."""
    data = random_ntp_data(8, 10, min_size=1, max_size=4, max_count=4, seed=0)
    L, info = ufm.nuclear_prox_gradient(data, lam, tol=1e-10, max_iter=20_000)
    assert info["converged"] and info["iterations"] < 20_000
    P, pi = data.P.toarray(), data.pi
    Z = np.exp(L - L.max(axis=0))
    G = (Z / Z.sum(axis=0) - P) * pi  # gradient of sum_j pi_j CE(softmax(l_j), p_j)
    U, s, Vt = np.linalg.svd(L, full_matrices=False)
    r = int((s > 1e-8 * s[0]).sum()) if s[0] > 0 else 0
    # subgradient: -G = lam (U_r V_r^T + Z) with ||Z||_op <= 1 and Z orthogonal to U_r, V_r
    assert np.linalg.norm(G, 2) <= lam * (1 + 1e-6)
    np.testing.assert_allclose(-U[:, :r].T @ G @ Vt[:r].T, lam * np.eye(r), atol=1e-7)


def test_factorized_gd_matches_convex_solution():
    """Lemma 1 on a tiny instance: NTP-UFM by GD (d >= V) reaches the convex minimizer, balanced."""
    data = random_ntp_data(5, 6, min_size=1, max_size=3, max_count=3, seed=0)
    lam = 0.1
    L_cvx, info = ufm.nuclear_prox_gradient(data, lam, tol=1e-10)
    hist = ufm.train(data, d=5, loss="ce", lam=lam, steps=1500, lr=2.0, optimizer="gd", log_steps=3,
                     progress=False)
    W, H, L = hist.W[-1], hist.H[-1], hist.L[-1]
    assert np.linalg.norm(L - L_cvx) <= 1e-5 * np.linalg.norm(L_cvx)
    np.testing.assert_allclose(W.T @ W, H @ H.T, atol=1e-6)
    nuc = np.linalg.svd(L, compute_uv=False).sum()
    np.testing.assert_allclose([np.linalg.norm(W) ** 2, np.linalg.norm(H) ** 2], [nuc, nuc], rtol=1e-6)
    assert abs(hist.final["loss"] - info["objective"]) <= 1e-8


def test_group_cosine_stats():
    from ntputils.analysis.metrics import group_cosine_stats

    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    A = np.stack([a, 2 * a, b, a + 0.1 * b], axis=1)
    st = group_cosine_stats(A, np.array([0, 0, 1, 0]))
    assert st["within_min"] == pytest.approx(1 / np.sqrt(1.01))
    assert st["between_mean"] == pytest.approx(np.mean([0.0, 0.0, 0.1 / np.sqrt(1.01)]))
    singletons = group_cosine_stats(A, np.arange(4))
    assert np.isnan(singletons["within_mean"])
    with pytest.raises(ValueError, match="shape mismatch"):
        group_cosine_stats(A, np.zeros(3))
