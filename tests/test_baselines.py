"""Chance levels of similarity claims (ntputils.analysis.baselines)."""

import numpy as np
import pytest

from ntputils.analysis.baselines import offdiagonal_sim, random_sim, shuffled_sim, similarity_with_chance
from ntputils.analysis.metrics import sim
from ntputils.data import random_supports
from ntputils.geometry import centered_support


@pytest.fixture(scope="module")
def proxy():
    return centered_support(random_supports(12, 40, min_size=1, max_size=3, seed=0))


def test_offdiagonal_sim_is_one_for_identical_geometry_and_excludes_the_diagonal(proxy):
    assert offdiagonal_sim(proxy, 2.0 * proxy) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(1)
    R = rng.standard_normal(proxy.shape)
    # the diagonals (all ones) inflate sim: off the diagonal an unrelated matrix scores lower
    assert offdiagonal_sim(R, proxy) < sim(R, proxy)


def test_random_matrices_score_well_above_zero_with_sim_and_near_zero_off_diagonal(proxy):
    mean, std = random_sim(proxy.shape, proxy, draws=20, seed=0)
    off_mean, off_std = random_sim(proxy.shape, proxy, draws=20, seed=0, offdiagonal=True)
    assert mean > 0.2  # the shared unit diagonal alone gives a high chance level
    assert abs(off_mean) < 4 * off_std / np.sqrt(20) + 0.05  # unrelated off-diagonals: about 0
    assert mean - off_mean > 0.1
    assert random_sim(proxy.shape, proxy, draws=5, seed=3) == random_sim(proxy.shape, proxy, draws=5, seed=3)


def test_shuffling_columns_breaks_the_pairing(proxy):
    mean, _ = shuffled_sim(proxy, proxy, draws=20, seed=0)
    assert mean < 0.9 < sim(proxy, proxy)


def test_report_and_bad_input(proxy):
    rep = similarity_with_chance(proxy, proxy, draws=5)
    assert rep.value == pytest.approx(1.0) and rep.offdiagonal == pytest.approx(1.0)
    assert rep.random_mean < rep.value and set(rep.as_dict()) >= {"value", "random_mean", "shuffled_mean"}
    with pytest.raises(ValueError, match="draws"):
        random_sim(proxy.shape, proxy, draws=1)
    with pytest.raises(ValueError, match="column"):
        offdiagonal_sim(proxy[:, :5], proxy)


def test_the_untrained_baseline_is_the_same_metric_on_the_initial_matrix(proxy):
    rng = np.random.default_rng(0)
    A0 = proxy + 0.5 * rng.standard_normal(proxy.shape)  # an "untrained" matrix already close to the target
    rep = similarity_with_chance(proxy, proxy, draws=5, untrained=A0)
    assert rep.untrained == pytest.approx(sim(A0, proxy))
    assert rep.untrained_offdiagonal == pytest.approx(offdiagonal_sim(A0, proxy))
    assert rep.baseline == max(rep.random_mean, rep.untrained)
    assert rep.baselines() == {"Gaussian": rep.random_mean, "untrained": rep.untrained}
    assert similarity_with_chance(proxy, proxy, draws=5).baseline == rep.random_mean
    with pytest.raises(ValueError, match="shape"):
        similarity_with_chance(proxy, proxy, draws=5, untrained=A0[:, :3])


def test_the_shuffled_control_of_a_similarity_keeps_the_spectrum_and_breaks_the_pairing():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((6, 30))
    A = B + 0.05 * rng.standard_normal(B.shape)  # nearly B: high similarity
    rep = similarity_with_chance(A, B, draws=10, seed=1)
    assert rep.value > 0.9 and rep.offdiagonal > 0.9
    control = rep.control
    assert control.value == rep.shuffled_mean
    # the pairing broken: the off-diagonal control sits near the random level, far below the value
    assert abs(control.offdiagonal) < 0.3 < rep.offdiagonal
    assert rep.shuffled_offdiagonal_mean == shuffled_sim(A, B, draws=10, seed=1, offdiagonal=True)[0]
