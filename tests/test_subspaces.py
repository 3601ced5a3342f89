"""Principal angles and clustering agreement (:mod:`ntputils.analysis.subspaces`, chapter c02): exact
values on constructed subspaces, invariance under rotations within a subspace, the k/n chance level by
Monte Carlo (tolerance from the estimator's standard error), and the ARI's chance level."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.analysis.subspaces import clustering_agreement, principal_cosines, subspace_overlap


def _basis(n: int, k: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, k)))
    return q


def test_identical_rotated_and_orthogonal_subspaces():
    A = _basis(30, 6, 0)
    R = _basis(6, 6, 1)  # an orthogonal 6 x 6 matrix
    o = subspace_overlap(A, A @ R, [6])
    assert o.overlap[0] == pytest.approx(1.0, abs=1e-12) and o.worst[0] == pytest.approx(1.0, abs=1e-12)
    # a rotation mixes the leading columns, so the top-k for k < 6 are different subspaces in general
    assert subspace_overlap(A, A @ R, [2]).overlap[0] < 1 - 1e-6
    Q = _basis(30, 12, 2)
    o = subspace_overlap(Q[:, :6], Q[:, 6:], [1, 3, 6])
    np.testing.assert_allclose(o.overlap, 0.0, atol=1e-12)
    np.testing.assert_allclose(o.chance, np.array([1, 3, 6]) / 30)


def test_known_angle_between_two_planes():
    theta = 0.3
    A = np.eye(4)[:, :2]
    B = np.column_stack([np.eye(4)[:, 0], np.cos(theta) * np.eye(4)[:, 1] + np.sin(theta) * np.eye(4)[:, 2]])
    np.testing.assert_allclose(principal_cosines(A, B), [1.0, np.cos(theta)], atol=1e-12)
    o = subspace_overlap(A, B, [1, 2])
    np.testing.assert_allclose(o.overlap, [1.0, (1 + np.cos(theta) ** 2) / 2], atol=1e-12)
    np.testing.assert_allclose(o.worst, [1.0, np.cos(theta)], atol=1e-12)


def test_chance_level_is_k_over_n():
    n, k, draws = 40, 5, 600
    A = _basis(n, k, 0)
    vals = np.array([subspace_overlap(A, _basis(n, k, 100 + i), [k]).overlap[0] for i in range(draws)])
    se = vals.std(ddof=1) / np.sqrt(draws)
    assert abs(vals.mean() - k / n) < 5 * se  # E[overlap] = k/n exactly


def test_bad_bases_and_ks_are_named():
    A = _basis(10, 3, 0)
    with pytest.raises(ValueError, match="not orthonormal"):
        subspace_overlap(2 * A, A, [1])
    with pytest.raises(ValueError, match="different spaces"):
        principal_cosines(A, _basis(11, 3, 1))
    with pytest.raises(ValueError, match="different spaces"):
        subspace_overlap(A, _basis(11, 3, 1), [1, 2])
    with pytest.raises(ValueError, match="every k must be in 1..3"):
        subspace_overlap(A, A, [0, 4])


def test_clustering_agreement_and_its_chance():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 8, size=400)
    same = clustering_agreement(a, (a + 3) % 8, draws=100)  # the same partition, other names
    assert same.ari == pytest.approx(1.0)
    assert abs(same.chance_mean) < 0.01 and same.chance_p95 < 0.05
    unrelated = clustering_agreement(a, rng.integers(0, 8, size=400), draws=100)
    assert unrelated.ari < unrelated.chance_p95 + 0.03
    again = clustering_agreement(a, (a + 3) % 8, draws=100)
    assert again == same  # same seed, same chance draws
    with pytest.raises(ValueError, match="same items"):
        clustering_agreement(a, a[:-1])
