"""Tests of ntputils.training.ufm: NTP-UFM training (paper A Def. 1), Lemma 1 and the regularization
path (Def. 2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import logsumexp, softmax

from ntputils import data as D
from ntputils import geometry as G
from ntputils.data import synthetic as syn
from ntputils.training import ufm


def _random_data(V: int, m: int, seed: int, max_count: int = 4) -> D.NTPData:
    rng = np.random.default_rng(seed)
    S = syn.random_supports(V, m, min_size=1, max_size=3, seed=seed)
    return D.from_counts((S * rng.integers(1, max_count + 1, size=S.shape)).astype(int))


def _ce(L: np.ndarray, data: D.NTPData) -> float:
    """pi-weighted soft-label cross-entropy, computed independently of ntputils."""
    logsm = L - logsumexp(L, axis=0, keepdims=True)
    return float(-(data.pi * (data.P.toarray() * logsm).sum(axis=0)).sum())


@pytest.fixture(scope="module")
def data8() -> D.NTPData:
    return _random_data(6, 8, seed=3)


@pytest.fixture(scope="module")
def tiny() -> D.NTPData:
    return _random_data(5, 6, seed=2, max_count=3)


# ---- the losses are what the docstring says ------------------------------------------------------
def test_logged_losses_match_their_formulas(data8):
    St = G.centered_support(data8.S)
    h = ufm.train(data8, d=4, loss="ce", lam=0.1, steps=3, log_steps=[0, 3], progress=False)
    W, H = h.W[0], h.H[0]
    ce = _ce(W @ H, data8)
    assert h.scalars["ce"][0] == pytest.approx(ce, rel=1e-12)
    assert h.scalars["ce_minus_H"][0] == pytest.approx(ce - data8.entropy, rel=1e-12)
    assert h.scalars["loss"][0] == pytest.approx(ce + 0.05 * (np.sum(W**2) + np.sum(H**2)), rel=1e-12)
    assert h.scalars["norm_L"][0] == pytest.approx(np.linalg.norm(W @ H), rel=1e-12)
    assert h.snap_steps == [0, 3]

    h = ufm.train(data8, d=4, loss="square", steps=1, log_steps=[0], progress=False)
    assert h.scalars["loss"][0] == pytest.approx(0.5 * np.sum((St - h.L[0]) ** 2), rel=1e-12)
    assert "ce" not in h.scalars

    omega = np.linspace(0.5, 2.0, data8.m)
    h = ufm.train(data8, d=4, loss="weighted_square", omega=omega, steps=1, log_steps=[0], progress=False)
    assert h.scalars["loss"][0] == pytest.approx(0.5 * np.sum(((St - h.L[0]) * omega) ** 2), rel=1e-12)


def test_ce_loss_function_matches_numpy(data8):
    L = np.random.default_rng(0).standard_normal((data8.V, data8.m))
    value = ufm.ce_loss(torch.from_numpy(L), torch.from_numpy(data8.P.toarray()), torch.from_numpy(data8.pi))
    assert float(value) == pytest.approx(_ce(L, data8), rel=1e-13)


def test_one_gd_step_is_a_gradient_step(data8):
    """GD with step lr: W1 = W0 - lr (G H0^T), H1 = H0 - lr (W0^T G) with G = (softmax(L) - P) diag(pi)."""
    lr = 0.7
    h = ufm.train(data8, d=3, loss="ce", lr=lr, steps=1, log_steps=[0, 1], progress=False)
    W0, H0 = h.W[0], h.H[0]
    Gm = (softmax(W0 @ H0, axis=0) - data8.P.toarray()) * data8.pi
    np.testing.assert_allclose(h.W[1], W0 - lr * Gm @ H0.T, atol=1e-14)
    np.testing.assert_allclose(h.H[1], H0 - lr * W0.T @ Gm, atol=1e-14)


# ---- implicit geometry of unregularized training ----------------------------------------------------
def test_ce_reaches_entropy_and_PF_converges_to_Lin(data8):
    Lin = G.in_support_logits(data8.P)
    h = ufm.train(data8, d=8, loss="ce", optimizer="adam", lr=0.05, steps=2000, log_steps=12, progress=False)
    gaps = np.asarray(h.scalars["ce_minus_H"])
    assert gaps[0] > 0.5
    assert gaps[-1] < 1e-3
    assert np.all(gaps >= -1e-12)  # CE >= H always
    dist = [np.linalg.norm(G.project_F(L, data8.S) - Lin) for L in h.L]
    assert dist[0] > 0.5 * np.linalg.norm(Lin)
    # P_F(L) -> L^in as CE -> H: judged at the logged step closest to H. Not at the last step: late in
    # the run Adam's steps spike as the gradients vanish (the gap jumps back up for a few steps), and
    # where a spike falls depends on the CPU's rounding (seen: gap 1.8e-5 -> 5e-4, distance 0.1% -> 7%)
    best = int(np.argmin(gaps))
    assert best >= len(gaps) // 2 and dist[best] < 0.05 * np.linalg.norm(Lin)
    # the logits diverge in norm (supports are not full): ||L_k|| grows well past ||L^in||
    assert h.scalars["norm_L"][-1] > 2 * np.linalg.norm(Lin)


def test_same_seed_same_numbers(data8):
    kw = dict(d=4, loss="ce", optimizer="adamw", lr=0.05, weight_decay=1e-3, steps=50, log_steps=5,
              progress=False)
    a = ufm.train(data8, seed=11, **kw)
    b = ufm.train(data8, seed=11, **kw)
    c = ufm.train(data8, seed=12, **kw)
    assert a.scalars == b.scalars
    for x, y in zip(a.L, b.L, strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.scalars["loss"] != c.scalars["loss"]
    assert not np.array_equal(a.W[0], c.W[0])


def test_explicit_init_and_scale(data8):
    rng = np.random.default_rng(1)
    W0, H0 = rng.standard_normal((data8.V, 3)), rng.standard_normal((3, data8.m))
    h = ufm.train(data8, d=3, init=(W0, H0), steps=0, log_steps=[0], progress=False)
    np.testing.assert_array_equal(h.W[0], W0)
    np.testing.assert_array_equal(h.L[0], W0 @ H0)
    h = ufm.train(data8, d=200, init="normal", init_scale=0.01, steps=0, log_steps=[0], progress=False)
    assert np.std(h.W[0]) == pytest.approx(0.01, rel=0.05)


# ---- ridge: balancedness and Lemma 1 ----------------------------------------------------------------
def test_ridge_balancedness_and_lemma1(tiny):
    """At lam > 0, GD on NTP-UFM (d >= V) converges to W^T W = H H^T and L = W H = argmin CE + lam ||L||_*."""
    lam = 0.05
    h = ufm.train(tiny, d=6, loss="ce", lam=lam, optimizer="gd", lr=3.0, steps=800, log_steps=4,
                  progress=False)
    W, H, L = h.W[-1], h.H[-1], h.L[-1]
    W0, H0 = h.W[0], h.H[0]
    assert np.linalg.norm(W0.T @ W0 - H0 @ H0.T) > 0.5 * np.linalg.norm(H0 @ H0.T)  # not balanced at init
    assert np.linalg.norm(W.T @ W - H @ H.T) <= 1e-8 * np.linalg.norm(H @ H.T)
    Lc, info = ufm.nuclear_prox_gradient(tiny, lam, tol=1e-10)
    assert info["converged"]
    assert np.linalg.norm(L - Lc) <= 1e-6 * np.linalg.norm(Lc)
    nuc = G.nuclear_norm(L)
    assert np.sum(W**2) == pytest.approx(nuc, rel=1e-8)
    assert np.sum(H**2) == pytest.approx(nuc, rel=1e-8)
    # equal optimal values: CE + lam/2 (||W||^2 + ||H||^2) == CE + lam ||L||_*
    assert h.final["loss"] == pytest.approx(info["objective"], rel=1e-10)


def test_nuclear_prox_gradient_kkt_certificate(tiny):
    """KKT: -grad CE(L_lam) lies in lam * d||L_lam||_*, i.e. U^T (-G) V = lam I and ||G||_op <= lam."""
    for lam in (0.05, 0.005):
        L, info = ufm.nuclear_prox_gradient(tiny, lam, tol=1e-10)
        assert info["converged"] and info["residual"] < 1e-10
        Gm = (softmax(L, axis=0) - tiny.P.toarray()) * tiny.pi
        U, s, Vt = G.svd_factors(L, rank_tol=1e-6)
        r = s.size
        assert 1 <= r < min(L.shape)
        np.testing.assert_allclose(U.T @ (-Gm) @ Vt.T, lam * np.eye(r), atol=1e-7)
        assert np.linalg.norm(Gm, 2) <= lam * (1 + 1e-6)
        assert info["objective"] == pytest.approx(_ce(L, tiny) + lam * G.nuclear_norm(L), rel=1e-12)


def test_nuclear_prox_gradient_zero_above_lam_max(tiny):
    """L_lam = 0 iff lam >= ||grad CE(0)||_op (then -G(0) lies in lam times the unit op-norm ball)."""
    G0 = (np.full((tiny.V, tiny.m), 1.0 / tiny.V) - tiny.P.toarray()) * tiny.pi
    lam_max = ufm.lambda_max(tiny)
    assert lam_max == pytest.approx(np.linalg.norm(G0, 2), rel=1e-14)
    L, info = ufm.nuclear_prox_gradient(tiny, 1.01 * lam_max)
    assert np.all(L == 0) and info["converged"]
    L, _ = ufm.nuclear_prox_gradient(tiny, 0.9 * lam_max)
    assert np.linalg.matrix_rank(L, tol=1e-8) == 1


def test_regularization_path_theorem1_trends(tiny):
    """As lam -> 0: P_F(L_lam) -> L^in, CE -> H, ||L_lam|| grows, direction -> L^mm (slowly)."""
    Lin = G.in_support_logits(tiny.P)
    Lmm = G.max_margin_logits(tiny.S, eps=1e-9)
    lams = [1e-4, 1e-1, 1e-2, 1e-3]  # any order: results come back in the order of lams
    path = ufm.regularization_path(tiny, lams, tol=1e-8, progress=False)
    assert [p[0] for p in path] == lams
    path = sorted(path, key=lambda p: -p[0])  # decreasing lam
    assert all(info["converged"] for _, _, info in path)
    in_err = [np.linalg.norm(G.project_F(L, tiny.S) - Lin) for _, L, _ in path]
    ce_gap = [_ce(L, tiny) - tiny.entropy for _, L, _ in path]
    norms = [np.linalg.norm(L) for _, L, _ in path]
    dir_err = []
    for _, L, _ in path:
        perp = L - G.project_F(L, tiny.S)
        dir_err.append(np.linalg.norm(perp / np.linalg.norm(perp) - Lmm / np.linalg.norm(Lmm)))
    assert np.all(np.diff(in_err) < 0) and in_err[-1] < 1e-3
    assert np.all(np.diff(ce_gap) < 0) and 0 < ce_gap[-1] < 1e-3
    assert np.all(np.diff(norms) > 0)
    assert np.all(np.diff(dir_err) < 0)
    assert dir_err[-1] < 0.5 * dir_err[0]
    # the CE gap of L_lam scales like lam (one decade per decade) once the path is in the log regime
    assert ce_gap[-1] / ce_gap[-2] == pytest.approx(0.1, rel=0.2)


# ---- bad input ----------------------------------------------------------------------------------------
def test_train_bad_input(data8):
    kw = dict(steps=1, progress=False)
    with pytest.raises(ValueError, match="unknown loss"):
        ufm.train(data8, d=2, loss="hinge", **kw)
    with pytest.raises(ValueError, match="unknown optimizer"):
        ufm.train(data8, d=2, optimizer="lbfgs", **kw)
    with pytest.raises(ValueError, match="unknown init"):
        ufm.train(data8, d=2, init="orthogonal", **kw)
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        ufm.train(data8, d=0, **kw)
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        ufm.train(data8, d=2.5, **kw)
    with pytest.raises(ValueError, match="learning rate"):
        ufm.train(data8, d=2, lr=0.0, **kw)
    with pytest.raises(ValueError, match="steps"):
        ufm.train(data8, d=2, steps=-1, progress=False)
    with pytest.raises(ValueError, match="needs omega"):
        ufm.train(data8, d=2, loss="weighted_square", **kw)
    with pytest.raises(ValueError, match="shape mismatch: omega"):
        ufm.train(data8, d=2, loss="weighted_square", omega=np.ones(3), **kw)
    with pytest.raises(ValueError, match="shape mismatch: target"):
        ufm.train(data8, d=2, loss="square", target=np.ones((2, 2)), **kw)
    with pytest.raises(ValueError, match="shape mismatch: init"):
        ufm.train(data8, d=2, init=(np.ones((data8.V, 3)), np.ones((3, data8.m))), **kw)
    with pytest.raises(ValueError, match="d >= rank"):
        ufm.train(data8, d=1, loss="square", init="aligned", **kw)
    with pytest.raises(ValueError, match="unknown device"):
        ufm.train(data8, d=2, device="tpu", **kw)


def test_path_bad_input(tiny):
    with pytest.raises(ValueError, match="lam must be > 0"):
        ufm.nuclear_prox_gradient(tiny, 0.0)
    with pytest.raises(ValueError, match="lams is empty"):
        ufm.regularization_path(tiny, [], progress=False)


def test_lambda_max_is_where_the_path_leaves_zero(tiny):
    """L_lambda = 0 at 1.01 lambda_max (prox returns 0) and rank >= 1 at 0.9 lambda_max."""
    lam_max = ufm.lambda_max(tiny)
    L_above, _ = ufm.nuclear_prox_gradient(tiny, 1.01 * lam_max)
    L_below, _ = ufm.nuclear_prox_gradient(tiny, 0.9 * lam_max)
    assert np.all(L_above == 0)
    assert np.linalg.matrix_rank(L_below, tol=1e-8) >= 1


def test_path_quantities_follow_theorem_1_and_match_logit_geometry(tiny):
    """Along the path: ||L|| grows as lambda decreases, CE - H >= 0, and every row equals logit_geometry."""
    from ntputils.analysis.regularization_path import logit_geometry, path_quantities

    L_mm = G.max_margin_logits(tiny.S)
    lams = [2.0 * ufm.lambda_max(tiny), 1e-2, 1e-3]
    path = ufm.regularization_path(tiny, lams, tol=1e-9, progress=False)
    pq = path_quantities(tiny, path, L_mm)
    assert pq["norm_L"][0] == 0 and np.isnan(pq["dir_L"][0]) and np.isnan(pq["gram_W"][0])  # L = 0 here
    assert np.all(np.diff(pq["norm_L"]) > 0) and np.all(pq["ce_gap"] >= -1e-12)
    Wt, Ht = G.mm_embeddings(L_mm)
    row = logit_geometry(path[-1][1], tiny.S.toarray(), G.in_support_logits(tiny.P), L_mm, Wt, Ht)
    for key, value in row.items():
        assert pq[key][-1] == value
    # with explicit balanced factors the Gram distances are those of the factors given
    W, H = G.mm_embeddings(path[-1][1])
    assert logit_geometry(path[-1][1], tiny.S.toarray(), G.in_support_logits(tiny.P), L_mm, Wt, Ht,
                          W=W, H=H)["gram_H"] == row["gram_H"]
