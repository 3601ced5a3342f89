"""Tests of ntputils.analysis.dynamics: closed-form square-loss dynamics (paper B Prop. 1, eqs. 6-9)."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils import data as D
from ntputils import geometry as G
from ntputils.analysis import dynamics as dyn
from ntputils.data import synthetic as syn
from ntputils.training import ufm

SIGMA = np.array([np.sqrt(3.0), np.sqrt(2.0), 1.0, 0.3])


def test_saxe_factors_initial_and_final_values():
    delta = 2.5
    a0 = dyn.saxe_factors(0.0, SIGMA, delta)
    # L(0) = e^{-2 delta} U V^T: every singular value starts at e^{-2 delta}
    np.testing.assert_allclose(SIGMA * a0, np.exp(-2 * delta), rtol=1e-12)
    np.testing.assert_allclose(dyn.saxe_factors(1e3, SIGMA, delta), 1.0, atol=1e-12)
    assert dyn.saxe_factors(np.array([0.0, 1.0, 2.0]), SIGMA, delta).shape == (3, 4)


def test_saxe_factors_solve_the_mode_ode():
    """Each mode s_i = sigma_i a_i of L(t) obeys the balanced gradient flow ds/dt = 2 s (sigma - s)."""
    delta = 3.0
    t = np.linspace(0.0, 8.0, 41)
    h = 1e-5
    s = dyn.saxe_singular_values(t, SIGMA, delta)
    ds_central = (dyn.saxe_singular_values(t[1:] + h, SIGMA, delta)
                  - dyn.saxe_singular_values(t[1:] - h, SIGMA, delta)) / (2 * h)
    np.testing.assert_allclose(ds_central, 2 * s[1:] * (SIGMA - s[1:]), atol=1e-8)
    assert np.all(np.diff(s, axis=0) > 0)  # monotone growth


def test_half_time_and_learning_order():
    delta = 4.0
    th = dyn.half_time(SIGMA, delta)
    np.testing.assert_allclose(np.diag(dyn.saxe_factors(th, SIGMA, delta)), 0.5, rtol=1e-12)
    assert np.all(np.diff(th) > 0)  # larger sigma learned first
    # rescaled time t / delta -> T_i = 1 / sigma_i as delta -> infinity (eq. 8)
    big = 200.0
    np.testing.assert_allclose(dyn.half_time(SIGMA, big) / big, dyn.learning_times(SIGMA), rtol=1e-2)
    np.testing.assert_allclose(dyn.learning_times(SIGMA), 1 / SIGMA)
    # and the limit step: a_i(delta t) -> 0 before T_i, 1 after
    a = dyn.saxe_factors(big * np.array([0.8, 1.2]) / SIGMA[0], SIGMA[:1], big)
    assert a[0, 0] < 1e-10 and a[1, 0] > 1 - 1e-10


def test_saxe_logits_and_aligned_init():
    S = syn.step_imbalanced_support(6, 3)
    U, s, Vt = G.svd_factors(G.centered_support(S))
    delta = 2.0
    W0, H0 = dyn.aligned_init(U, Vt, d=8, delta=delta, seed=1)
    assert W0.shape == (6, 8) and H0.shape == (8, 12)
    np.testing.assert_allclose(W0 @ H0, np.exp(-2 * delta) * U @ Vt, atol=1e-14)
    # W0^T W0 = e^{-2 delta} R R^T with R R^T a projector
    np.testing.assert_allclose(W0.T @ W0 @ W0.T @ W0, np.exp(-2 * delta) * W0.T @ W0, atol=1e-14)
    np.testing.assert_allclose(dyn.saxe_logits(0.0, U, s, Vt, delta), W0 @ H0, atol=1e-14)
    np.testing.assert_allclose(dyn.saxe_logits(1e3, U, s, Vt, delta), G.centered_support(S), atol=1e-10)
    with pytest.raises(ValueError, match="d >= rank"):
        dyn.aligned_init(U, Vt, d=3, delta=delta)


def test_gradient_descent_matches_saxe_closed_form():
    """GD on 1/2||S~ - WH||^2 from the aligned init: singular values of L_k equal sigma_i a_i(lr * k)."""
    V, R = 4, 3
    S = syn.step_imbalanced_support(V, R)
    data = D.from_counts(S.astype(int))
    sigma = np.linalg.svd(G.centered_support(S), compute_uv=False)[: V - 1]
    np.testing.assert_allclose(sigma, [np.sqrt(3), np.sqrt(2), 1.0], atol=1e-12)
    lr, steps, delta = 1e-3, 2500, 1.0
    hist = ufm.train(data, d=5, loss="square", init="aligned", optimizer="gd", lr=lr, steps=steps,
                     delta=delta, log_steps=25, progress=False)
    errs = []
    for k, L in zip(hist.snap_steps, hist.L, strict=True):
        sv = np.linalg.svd(L, compute_uv=False)
        predicted = dyn.saxe_singular_values(lr * k, sigma, delta)
        errs.append(np.abs(sv[: V - 1] - predicted).max())
        assert sv[V - 1 :].max() < 1e-12  # the aligned init never leaves the span of S~
    assert max(errs) < 1e-3
    # the run covered the whole transition: the slowest mode went from ~0 to ~sigma
    sv_end = np.linalg.svd(hist.L[-1], compute_uv=False)
    assert sv_end[V - 2] > 0.95
    assert np.linalg.svd(hist.L[0], compute_uv=False)[0] == pytest.approx(np.exp(-2 * delta), rel=1e-10)


def test_dynamics_bad_input():
    with pytest.raises(ValueError, match="positive singular values"):
        dyn.saxe_factors(1.0, np.array([1.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match="t must be >= 0"):
        dyn.saxe_factors(-1.0, SIGMA, 1.0)


def test_reweighted_step_modes_are_learned_together():
    """Paper B D.1: S~ Omega has all singular values 1, so GD on 1/2||S~ Omega - W H'||^2 (H' = H Omega)
    from the aligned init learns every mode on the same curve a(t) with sigma = 1."""
    V, R = 4, 4
    S = syn.step_imbalanced_support(V, R)
    target = G.centered_support(S) * syn.step_weights(V, R)
    data = D.from_counts(S.astype(int))
    lr, steps, delta = 1e-3, 2500, 1.0
    hist = ufm.train(data, d=5, loss="square", target=target, init="aligned", optimizer="gd", lr=lr,
                     steps=steps, delta=delta, log_steps=12, progress=False)
    for k, L in zip(hist.snap_steps, hist.L, strict=True):
        sv = np.linalg.svd(L, compute_uv=False)[: V - 1]
        assert np.abs(sv - dyn.saxe_singular_values(lr * k, np.ones(1), delta)).max() < 1e-3
    assert np.linalg.svd(hist.L[-1], compute_uv=False)[V - 2] > 0.9
