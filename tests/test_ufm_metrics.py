"""Tests of ntputils.analysis.convergence and the batched metrics (ntputils.analysis.metrics,
ntputils.geometry.logits.batched_project_F): the vectorized Fig. 6 metrics agree with the per-matrix
definitions."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.analysis.convergence import (
    SNAPSHOT_METRICS,
    GeometryReference,
    convergence_curves,
    snapshot_metrics,
    support_group_order,
    word_order,
)
from ntputils.analysis.metrics import (
    batched_corr,
    batched_normalized_distance,
    batched_sim,
    batched_structural_similarity,
    corr,
    normalized_distance,
    sim,
    structural_similarity,
)
from ntputils.data import from_counts
from ntputils.geometry import (
    centered_support,
    margin_violation,
    max_margin_cached,
    max_margin_logits,
    nuclear_norm,
    project_F,
    support_key,
)
from ntputils.geometry.logits import batched_project_F
from ntputils.training.history import History
from ntputils.training.ufm import train


@pytest.fixture(scope="module")
def data():
    """V = 6 words, m = 8 contexts; contexts 0/3, 1/5 and 2/6/7 share supports (collapse groups)."""
    rng = np.random.default_rng(0)
    supports = [[0, 1], [2, 3, 4], [1, 5], [0, 1], [3], [2, 3, 4], [1, 5], [1, 5]]
    counts = np.zeros((6, 8), dtype=int)
    for j, sup in enumerate(supports):
        counts[sup, j] = rng.integers(1, 5, size=len(sup))
    return from_counts(counts)


@pytest.fixture(scope="module")
def ref(data):
    # S~ lies in F^perp (constant on every support), so it can stand in for L^mm in the algebraic tests
    return GeometryReference.from_data(data, L_mm=centered_support(data.S))


@pytest.fixture(scope="module")
def hist(data):
    return train(data, d=10, steps=300, lr=0.5, optimizer="gd", log_steps=12, seed=1, progress=False)


def test_batched_corr_matches_corr():
    A = np.random.default_rng(1).normal(size=(4, 3, 7))
    A[2, :, 1] = 0.0  # a zero column has no direction
    C = batched_corr(A)
    for k in range(4):
        np.testing.assert_allclose(C[k], corr(A[k]), atol=1e-12)


def test_batched_sim_matches_sim_and_is_one_on_itself():
    rng = np.random.default_rng(2)
    B = rng.normal(size=(5, 9))
    As = [rng.normal(size=(3, 9)) for _ in range(5)] + [B, 2.0 * B]
    got = batched_sim(As, B, chunk_bytes=1)  # chunk of one snapshot at a time
    np.testing.assert_allclose(got, [sim(A, B) for A in As], atol=1e-12)
    np.testing.assert_allclose(got[-2:], 1.0, atol=1e-12)
    X = np.stack([corr(A) for A in As])
    np.testing.assert_allclose(batched_structural_similarity(X, corr(B)),
                               [structural_similarity(x, corr(B)) for x in X], atol=1e-12)


def test_batched_project_and_distance_match_definitions(data):
    Ls = np.random.default_rng(3).normal(size=(3, data.V, data.m))
    S = data.S.toarray() > 0
    P = batched_project_F(Ls, S)
    T = centered_support(data.S)
    for k in range(3):
        np.testing.assert_allclose(P[k], project_F(Ls[k], data.S), atol=1e-12)
    np.testing.assert_allclose(batched_normalized_distance(Ls, T), [normalized_distance(L, T) for L in Ls],
                               atol=1e-12)


def test_snapshot_metrics_match_loop_over_snapshots(hist, ref):
    got = snapshot_metrics(hist, ref)
    assert set(got) == set(SNAPSHOT_METRICS)
    for k, (W, H, L) in enumerate(zip(hist.W, hist.H, hist.L, strict=True)):
        proj_error = np.linalg.norm(project_F(L, ref.support) - ref.L_in)
        assert got["proj_error"][k] == pytest.approx(proj_error, abs=1e-10)
        assert got["sim_H_proxy"][k] == pytest.approx(sim(H, ref.S_tilde), abs=1e-10)
        assert got["sim_W_proxy"][k] == pytest.approx(sim(W.T, ref.S_tilde.T), abs=1e-10)
        assert got["sim_H_mm"][k] == pytest.approx(sim(H, ref.H_mm), abs=1e-10)
        assert got["sim_W_mm"][k] == pytest.approx(sim(W.T, ref.W_mm.T), abs=1e-10)
        assert got["dist_L_mm"][k] == pytest.approx(normalized_distance(L, ref.L_mm), abs=1e-10)


def test_training_drives_the_fig6_metrics(hist, ref):
    series = convergence_curves(hist, ref, label="toy")
    assert series.steps.shape == series.ce_minus_H.shape == series.norm_W.shape
    assert series.snap_steps.shape == series.proj_error.shape
    assert series.ce_minus_H[-1] < 0.1 * series.ce_minus_H[0]
    assert series.norm_H[-1] > series.norm_H[0] and series.norm_W[-1] > series.norm_W[0]
    assert series.proj_error[-1] < series.proj_error[0]
    assert series.sim_H_proxy[-1] > series.sim_H_proxy[0]
    assert set(series.final) >= {"ce_minus_H", "sim_W_mm"}


def test_exact_decomposition_gives_perfect_scores(data, ref):
    """L = c L^mm + L^in: P_F(L) = L^in exactly and the direction tends to L^mm; (W^mm, H^mm) scores 1."""
    hist = History()
    for c in (1.0, 1e6):
        hist.snapshot(0, np.hstack([ref.W_mm, np.eye(data.V)]), np.vstack([c * ref.H_mm, ref.L_in]))
    # a rescaled max-margin factorization, zero-padded to the same width d
    hist.snapshot(0, np.hstack([3.0 * ref.W_mm, np.zeros((data.V, data.V))]),
                  np.vstack([ref.H_mm / 2.0, np.zeros((data.V, data.m))]))
    got = snapshot_metrics(hist, ref)
    np.testing.assert_allclose(got["proj_error"][:2], 0.0, atol=1e-6)
    assert got["dist_L_mm"][1] < 1e-5 < got["dist_L_mm"][0]
    assert got["sim_H_mm"][1] == pytest.approx(1.0, abs=1e-6)
    assert got["sim_H_mm"][2] == pytest.approx(1.0, abs=1e-12)
    assert got["sim_W_mm"][2] == pytest.approx(1.0, abs=1e-12)
    assert got["dist_L_mm"][2] == pytest.approx(0.0, abs=1e-12)


def test_theory_metrics_are_nan_without_lmm(data, hist):
    got = snapshot_metrics(hist, GeometryReference.from_data(data))
    assert np.all(np.isnan(got["sim_H_mm"])) and np.all(np.isnan(got["dist_L_mm"]))
    assert np.all(np.isfinite(got["sim_H_proxy"]))


def test_subset_of_contexts_uses_the_restricted_targets(data, ref, hist):
    cols = [4, 0, 2]
    sub = History(meta={"snapshot_contexts": cols})
    for W, H in zip(hist.W, hist.H, strict=True):
        sub.snapshot(0, W, H[:, cols])
    got = snapshot_metrics(sub, ref)
    for k, (W, H) in enumerate(zip(sub.W, sub.H, strict=True)):
        assert got["sim_H_mm"][k] == pytest.approx(sim(H, ref.H_mm[:, cols]), abs=1e-10)
        # the word side always compares with all contexts
        assert got["sim_W_proxy"][k] == pytest.approx(sim(W.T, ref.S_tilde.T), abs=1e-10)
    with pytest.raises(ValueError, match="indices"):
        ref.restrict([data.m])


def test_bad_input_raises(data, ref, hist):
    with pytest.raises(ValueError, match="no snapshots"):
        snapshot_metrics(History(), ref)
    with pytest.raises(ValueError, match="shape mismatch"):
        GeometryReference.from_data(data, L_mm=np.zeros((2, 2)))
    bare = History()
    bare.log(0, loss=1.0)
    bare.snapshot(0, hist.W[0], hist.H[0])
    with pytest.raises(ValueError, match="ce_minus_H"):
        convergence_curves(bare, ref)
    with pytest.raises(ValueError, match="column geometries"):
        batched_sim([np.ones((2, 3))], np.ones((2, 4)))


def test_support_group_order_makes_identical_supports_adjacent(data):
    order, group = support_group_order(data.S)
    assert order.tolist() == [0, 3, 1, 5, 2, 6, 7, 4]
    assert group.tolist() == [0, 0, 1, 1, 2, 2, 2, 3]
    words = word_order(data.S, order)
    assert sorted(words.tolist()) == list(range(data.V))
    assert words.tolist()[:2] == [0, 1]  # the support of the first group comes first


def test_max_margin_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path))
    S = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 0], [0, 1, 1]])
    L1, info1 = max_margin_cached(S, eps=1e-7)
    L2, info2 = max_margin_cached(S, eps=1e-7)
    assert not info1["cached"] and info2["cached"]
    np.testing.assert_array_equal(L1, L2)
    # the cached point solves the NTP-SVM of *this* S: feasible, with the optimal nuclear norm of a
    # fresh solve (points are not compared: the optimum need not be unique)
    assert margin_violation(L1, S) <= 1e-6
    assert nuclear_norm(L1) == pytest.approx(nuclear_norm(max_margin_logits(S, eps=1e-7)), rel=1e-5)
    assert info2["solver"] == info1["solver"]
    assert support_key(S, "cvxpy", eps=1e-7) != support_key(S[:, :2], "cvxpy", eps=1e-7)
    assert support_key(S, "cvxpy") != support_key(S, "cvxpy", eps=1e-7)


def test_reference_repr_is_compact(ref):
    text = repr(ref.restrict([0, 1]))
    assert text.startswith("GeometryReference(V=6, m=2") and "subset of 2 contexts" in text


def test_batched_sim_chunks_by_the_stacked_snapshots_with_values_independent_of_the_chunking():
    """The chunk bounds the stacked snapshots too (tall d x n snapshots used to be stacked all at once),
    and a snapshot's value does not depend on which chunk it fell into (bit for bit)."""
    import tracemalloc

    from ntputils.analysis.metrics import STACK_COPIES, sim_chunk

    rng = np.random.default_rng(4)
    B = rng.normal(size=(2000, 12))
    As = [rng.normal(size=(2000, 12)) for _ in range(40)]
    whole = batched_sim(As, B, chunk_bytes=2**40)
    for chunk_bytes in (1, 2**20, 5 * 2**20):
        assert np.array_equal(batched_sim(As, B, chunk_bytes=chunk_bytes), whole)
    per = sim_chunk(2000, 12, 2**20)
    assert per == 2**20 // (8 * (STACK_COPIES * 2000 * 12 + 3 * 12 * 12)) and per < len(As)
    tracemalloc.start()
    batched_sim(As, B, chunk_bytes=2**20)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    stack_all = STACK_COPIES * 8 * 40 * 2000 * 12  # what stacking every snapshot at once costs
    assert peak < stack_all / 4
