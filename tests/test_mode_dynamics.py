"""Tests for ntputils.analysis.mode_dynamics: singular-value curves, crossing times, fits, Richardson."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.analysis.dynamics import half_time, saxe_singular_values
from ntputils.analysis.mode_dynamics import (
    complement_norm,
    crossing_times,
    fit_inverse_sigma,
    mode_amplitudes,
    relative_error,
    richardson,
    singular_value_curves,
)


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
