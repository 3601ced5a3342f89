"""Negative controls of paper A's claims (ntputils.analysis.controls)."""

import numpy as np
import pytest

from ntputils.analysis.controls import (
    distance_curve,
    permuted_labels,
    random_f_perp,
    random_f_target,
    residual_ratio_control,
    spectrum_matched_random,
)
from ntputils.analysis.convergence import residual_ratio
from ntputils.analysis.metrics import normalized_distance
from ntputils.data import random_supports
from ntputils.geometry import centered_support, project_F


@pytest.fixture(scope="module")
def support():
    return random_supports(12, 40, min_size=1, max_size=3, seed=0)


def test_permuted_labels_keep_group_sizes_and_are_seeded():
    labels = np.repeat(np.arange(10), 4)
    out = permuted_labels(labels, seed=3)
    assert np.array_equal(np.bincount(out), np.bincount(labels))
    assert not np.array_equal(out, labels)
    assert np.array_equal(out, permuted_labels(labels, seed=3))
    with pytest.raises(ValueError):
        permuted_labels(labels.reshape(2, -1))


def test_spectrum_matched_random_keeps_the_spectrum_and_loses_the_direction(support):
    X = centered_support(support)
    R = spectrum_matched_random(X, seed=1)
    s_X, s_R = np.linalg.svd(X, compute_uv=False), np.linalg.svd(R, compute_uv=False)
    assert R.shape == X.shape
    assert np.allclose(s_R[: np.linalg.matrix_rank(X)], s_X[: np.linalg.matrix_rank(X)])
    assert np.linalg.matrix_rank(R) == np.linalg.matrix_rank(X)
    assert normalized_distance(R, X) > 1.0  # about sqrt(2): an unrelated direction
    assert np.array_equal(R, spectrum_matched_random(X, seed=1))
    with pytest.raises(ValueError):
        spectrum_matched_random(np.zeros((3, 4)))


def test_random_f_perp_lies_in_f_perp_with_the_norm_asked(support):
    R = random_f_perp(support, 5.0, seed=2)
    assert np.linalg.norm(R) == pytest.approx(5.0)
    assert np.abs(project_F(R, support)).max() < 1e-12


def test_residual_ratio_control_matches_the_norm_split(support):
    L_in = project_F(np.random.default_rng(0).standard_normal(support.shape), support)
    L = L_in + random_f_perp(support, 30.0, seed=5)  # logits with their F-part exactly L^in
    # only the norms enter the ratio: the control with a random F-perp direction gives the same number
    assert residual_ratio_control(L, L_in, support, seed=9) == pytest.approx(residual_ratio(L, L_in))


def test_random_f_target_and_distance_curve(support):
    L_in = project_F(np.random.default_rng(0).standard_normal(support.shape), support)
    T = random_f_target(L_in, support, seed=4)
    assert np.linalg.norm(T) == pytest.approx(np.linalg.norm(L_in))
    assert np.allclose(project_F(T, support), T)
    Ls = [np.zeros(support.shape), L_in, L_in + random_f_perp(support, 3.0)]
    curve = distance_curve(Ls, support, L_in)
    assert curve[0] == pytest.approx(np.linalg.norm(L_in))
    assert curve[1] == pytest.approx(0) and curve[2] < 1e-9
    assert distance_curve(Ls, support, T)[-1] > 0.5 * np.linalg.norm(L_in)  # the random target is not reached
