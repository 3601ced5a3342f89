"""Tests of ntputils.analysis.dynamics: closed-form square-loss dynamics (paper B Prop. 1, eqs. 6-9),
singular-value curves, crossing and learning times, 1/sigma fits, Richardson extrapolation, concept depth
and the class learning times read from confusion matrices."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils import data as D
from ntputils import geometry as G
from ntputils.analysis import dynamics as dyn
from ntputils.analysis.confusion import confusion_matrix, disjoint_classes, support_masks
from ntputils.analysis.dynamics import (
    class_learning_times,
    complement_norm,
    concept_depth,
    concept_energy,
    crossing_times,
    fit_inverse_sigma,
    half_time,
    learning_times,
    mode_amplitudes,
    predicted_learning_times,
    relative_error,
    richardson,
    saxe_singular_values,
    singular_value_curves,
)
from ntputils.data import synthetic as syn
from ntputils.data.corpora.organism_templates import organism, organism_attribute_classes, organism_classes
from ntputils.geometry import centered_support, svd_factors
from ntputils.training import ufm

# nested toy classes on V = 6 words: A = {0,1,2,3} ⊃ A1 = {0,1}; B = {4,5}
SUPPORTS = [(0, 1, 2, 3), (0, 1), (4, 5)]

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
    np.testing.assert_allclose(dyn.half_time(SIGMA, big) / big, dyn.predicted_learning_times(SIGMA),
                               rtol=1e-2)
    np.testing.assert_allclose(dyn.predicted_learning_times(SIGMA), 1 / SIGMA)
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


def test_singular_value_curves_sorted_and_cut():
    rng = np.random.default_rng(0)
    Ls = rng.standard_normal((5, 6, 4))
    s = singular_value_curves(Ls)
    assert s.shape == (5, 4)
    assert np.all(np.diff(s, axis=1) <= 0)
    np.testing.assert_allclose(s[2], np.linalg.svd(Ls[2], compute_uv=False))
    assert singular_value_curves(Ls, k=2).shape == (5, 2)
    with pytest.raises(ValueError, match="k must be"):
        singular_value_curves(Ls, k=5)


def test_crossing_times_interpolate_and_flag_misses():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    curves = np.array([[0.0, 2.0, 5.0], [1.0, 2.0, 5.0], [2.0, 2.0, 5.0], [3.0, 2.0, 5.0]])
    out = crossing_times(t, curves, [1.5, 3.0, 1.0])
    np.testing.assert_allclose(out[0], 1.5)
    assert np.isnan(out[1])
    assert out[2] == 0.0
    with pytest.raises(ValueError, match="increasing"):
        crossing_times(t[::-1], curves, 1.0)


def test_crossing_times_recover_saxe_half_times():
    sigma = np.array([3.0, 1.5, 0.7])
    delta = 5.0
    t = np.linspace(0, 30, 30001)
    curves = saxe_singular_values(t, sigma, delta)
    np.testing.assert_allclose(crossing_times(t, curves, sigma / 2), half_time(sigma, delta), atol=1e-5)


def test_fit_inverse_sigma_exact_line_and_saxe_slope():
    sigma = np.array([4.0, 2.0, 1.0, 0.5])
    a, b, r2 = fit_inverse_sigma(3.0 / sigma + 1.0, sigma)
    assert (a, b, r2) == pytest.approx((3.0, 1.0, 1.0))
    # Saxe half-times: slope ~ delta, nearly linear in 1/sigma for large delta
    a, _, r2 = fit_inverse_sigma(half_time(sigma, 8.0), sigma)
    assert r2 > 0.99 and a == pytest.approx(8.0, rel=0.1)
    with pytest.raises(ValueError, match="not finite"):
        fit_inverse_sigma(np.array([1.0, np.nan]), np.array([1.0, 2.0]))


def test_complement_norm_and_relative_error():
    rng = np.random.default_rng(1)
    U, _ = np.linalg.qr(rng.standard_normal((6, 2)))
    V, _ = np.linalg.qr(rng.standard_normal((5, 2)))
    inside = U @ rng.standard_normal((2, 2)) @ V.T
    assert complement_norm(inside, U, V.T) < 1e-12
    outside = rng.standard_normal((6, 5))
    outside -= U @ (U.T @ outside @ V) @ V.T
    assert complement_norm(inside + outside, U, V.T) == pytest.approx(np.linalg.norm(outside))
    assert relative_error(2 * inside, inside) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="zero matrix"):
        relative_error(inside, np.zeros_like(inside))


def test_richardson_removes_euler_error_on_logistic_growth():
    sigma, delta, T = 2.0, 4.0, 6.0

    def euler(eta):
        x, out = np.exp(-delta), []
        for _ in range(int(round(T / eta)) + 1):
            out.append(x * x)
            x = x + eta * (sigma - x * x) * x
        return np.array(out)

    eta = 0.02
    curves = [euler(eta), euler(eta / 2)[::2], euler(eta / 4)[::4]]
    exact = saxe_singular_values(np.arange(curves[0].size) * eta, np.array([sigma]), delta)[:, 0]
    errs = [np.abs(c - exact).max() for c in curves]
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.1)  # first order
    assert np.abs(richardson(curves[:2]) - exact).max() < errs[1] / 5
    assert np.abs(richardson(curves) - exact).max() < errs[1] / 50
    with pytest.raises(ValueError, match="2 or 3"):
        richardson(curves[:1])


def test_mode_amplitudes_follow_modes_by_identity():
    rng = np.random.default_rng(2)
    U, _ = np.linalg.qr(rng.standard_normal((7, 3)))
    V, _ = np.linalg.qr(rng.standard_normal((9, 3)))
    # mode 3 overtakes mode 1: sorted singular values swap, amplitudes keep identities
    amps = np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 5.0]])
    Ls = np.stack([(U * a) @ V.T for a in amps])
    np.testing.assert_allclose(mode_amplitudes(Ls, U, V.T), amps, atol=1e-12)
    np.testing.assert_allclose(singular_value_curves(Ls)[:, :3], [[3, 2, 1], [5, 3, 2]], atol=1e-12)
    with pytest.raises(ValueError, match="shape mismatch"):
        mode_amplitudes(Ls, U[:-1], V.T)


def test_learning_times_from_a_coarse_to_fine_sequence():
    disjoint = disjoint_classes(support_masks(SUPPORTS, 6))
    true = np.array([0, 0, 1, 2])
    preds = np.array([[0, 0, 0, 0], [0, 0, 0, 2], [0, 0, 1, 2]])
    times = class_learning_times(confusion_matrix(true, preds, 3), [0, 5, 9], disjoint)
    assert times.tolist() == [5, 9, 5]


def test_concept_energy_of_the_organism_classes():
    data = organism()
    U, sigma, _ = svd_factors(centered_support(data.S.toarray()))
    classes = organism_classes()
    masks = support_masks([[data.vocab.index(w) for w in members] for members in classes.values()], data.V)
    energy = concept_energy(masks, U)
    assert np.allclose(energy.sum(axis=1), 1)  # every class target lies in span(U)
    depth = concept_depth(energy, 0.9)
    names = list(classes)
    assert depth[names.index("Animals")] == depth[names.index("Plants")] == 1  # the top concept
    assert depth.min() == 1 and np.all(depth[[names.index(c) for c in ("Fish", "Birds", "Flowers")]] >= 5)
    T = predicted_learning_times(sigma, depth)
    assert np.argmin(T) in (names.index("Animals"), names.index("Plants"))
    assert set(organism_attribute_classes()) == set(names)


def test_concept_depth_and_bad_input():
    energy = np.array([[0.95, 0.05, 0.0], [0.5, 0.3, 0.2], [0.1, 0.1, 0.1]])
    assert concept_depth(energy, 0.9).tolist() == [1, 3, 3]
    with pytest.raises(ValueError, match="level"):
        concept_depth(energy, 0.0)
    with pytest.raises(ValueError, match="depth"):
        predicted_learning_times(np.array([2.0, 1.0]), np.array([3]))


def test_predicted_learning_times_are_one_over_sigma_bit_for_bit():
    sigma = np.array([2.3, 1.7, 0.9, 0.31])
    depth = np.array([1, 3, 3, 4, 2])
    assert np.array_equal(predicted_learning_times(sigma), 1.0 / sigma)
    assert np.array_equal(predicted_learning_times(sigma, depth), 1.0 / sigma[depth - 1])


def test_learning_times_are_crossings_of_a_fraction_of_the_limit():
    """``learning_times(t, c, limit)`` is bit-for-bit ``crossing_times(t, c, 0.9 * limit)`` (paper B
    Fig. 13)."""
    sigma = np.array([3.0, 1.5, 0.7])
    t = np.linspace(0, 30, 3001)
    curves = saxe_singular_values(t, sigma, 5.0)
    for limit in (sigma, np.ones(3)):
        assert np.array_equal(learning_times(t, curves, limit), crossing_times(t, curves, 0.9 * limit),
                              equal_nan=True)
    assert np.array_equal(learning_times(t, curves, sigma, level=0.5), crossing_times(t, curves, sigma / 2))
    with pytest.raises(ValueError, match="level"):
        learning_times(t, curves, sigma, level=0.0)


def test_control_paths_order_the_concepts_and_end_at_scale_times_S():
    sigma = np.array([4.0, 2.0, 1.0])
    kept = dyn.hierarchy_half_times(sigma, "kept", 100.0)
    assert np.allclose(kept, [25.0, 50.0, 100.0])
    assert np.allclose(dyn.hierarchy_half_times(sigma, "inverted", 100.0), [100.0, 50.0, 25.0])
    assert np.allclose(dyn.hierarchy_half_times(sigma, "constant", 100.0), 50.0)
    with pytest.raises(ValueError, match="unknown order"):
        dyn.hierarchy_half_times(sigma, "shuffled", 100.0)
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.normal(size=(5, 3)))
    Vt = np.linalg.qr(rng.normal(size=(4, 3)))[0].T
    t = np.arange(0, 1001)
    L = dyn.concept_path(t, U, sigma, Vt, kept, scale=2.0)
    assert L.shape == (t.size, 5, 4)
    assert np.allclose(L[-1], 2.0 * (U * sigma) @ Vt, atol=1e-6)
    assert np.abs(L[0]).max() < 0.01 * np.abs(L[-1]).max()
    amp = dyn.mode_amplitudes(L, U, Vt) / (2.0 * sigma)
    half = dyn.crossing_times(t.astype(float), amp, 0.5)
    assert np.allclose(half, kept, atol=1.0)  # each concept is half-learned at its half-time


def test_control_half_times_read_the_path_like_a_run():
    sigma = np.array([4.0, 2.0, 1.0])
    rng = np.random.default_rng(1)
    U, _ = np.linalg.qr(rng.normal(size=(5, 3)))
    Vt = np.linalg.qr(rng.normal(size=(4, 3)))[0].T
    t = np.linspace(0.0, 200.0, 2001)
    kept = dyn.control_half_times(t, U, sigma, Vt, "kept")
    assert np.allclose(kept, [25.0, 50.0, 100.0], atol=1.0)  # last = half the span, h_k ~ 1/sigma_k
    const = dyn.control_half_times(t, U, sigma, Vt, "constant")
    assert np.ptp(const) < 1.0  # one rate: every concept half-learned at once
