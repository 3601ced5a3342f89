"""Tests for ntputils.analysis.concepts: Definition 1 of paper B, concept representations, k-means,
concepts of a pretrained LM (decoder/context concepts) and the orthant agreement statistic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ntputils.analysis.concepts import (
    clusters_table,
    concept_coordinates,
    concept_representations,
    context_concepts,
    cosine_columns,
    decoder_concepts,
    kmeans_on_analyzers,
    matched_clusters,
    orient_signs,
    orthant_agreement,
    orthant_clusters,
    orthant_hierarchy,
    orthant_labels,
    orthant_members,
    paper_dims,
    row_space_projector,
    sign_configurations,
    sign_patterns,
    typicality,
)
from ntputils.geometry import centered_support, svd_factors


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(scope="module")
def hierarchical_svd():
    """S~ of a small nested-category support matrix (animals > mammals > felines, plants)."""
    words = ["dog", "cat", "tiger", "eagle", "trout", "oak", "rose", "moss"]
    classes = {
        "animal": ["dog", "cat", "tiger", "eagle", "trout"],
        "mammal": ["dog", "cat", "tiger"],
        "feline": ["cat", "tiger"],
        "plant": ["oak", "rose", "moss"],
        "flower": ["rose"],
        "bird": ["eagle"],
    }
    S = np.array([[w in members for members in classes.values()] for w in words], dtype=float)
    U, s, Vt = svd_factors(centered_support(S))
    return words, list(classes), S, U, s, Vt


# ---------------------------------------------------------------------------------------------
# Definition 1
# ---------------------------------------------------------------------------------------------
def test_paper_dims_and_configurations():
    assert paper_dims({1, 2, 4}) == (0, 1, 3)
    configs = sign_configurations(3)
    assert len(configs) == 8 == len(set(configs))
    assert configs[0] == (1, 1, 1) and configs[-1] == (-1, -1, -1)
    with pytest.raises(ValueError, match=">= 1"):
        paper_dims([0, 1])
    with pytest.raises(ValueError, match="p must be"):
        sign_configurations(0)


def test_sign_patterns_and_zero_tolerance():
    A = np.array([[0.5, -0.2], [1e-15, 0.3], [-0.1, -0.4]])
    pat = sign_patterns(A, [0, 1])
    np.testing.assert_array_equal(pat, [[1, -1], [0, 1], [-1, -1]])
    # a neutral entry excludes the item from every orthant along that dimension
    assert orthant_members(A, [0], [1]).tolist() == [0]
    assert orthant_members(A, [0], [-1]).tolist() == [2]
    assert orthant_members(A, [1], [1]).tolist() == [1]
    np.testing.assert_array_equal(sign_patterns(A, [0], zero_tol=0.0), [[1], [1], [-1]])


def test_typicality_is_l1_norm_on_selected_dims(rng):
    A = rng.standard_normal((30, 6))
    dims = (0, 2, 5)
    np.testing.assert_allclose(typicality(A, dims), np.abs(A[:, dims]).sum(axis=1))
    np.testing.assert_allclose(typicality(A, [3]), np.abs(A[:, 3]))


def test_orthant_members_match_definition_brute_force(rng):
    A = rng.standard_normal((50, 5))
    dims = (1, 3, 4)
    for signs in itertools.product((1, -1), repeat=3):
        expected = [z for z in range(50)
                    if all(np.sign(A[z, k]) == c for k, c in zip(dims, signs, strict=True))]
        assert orthant_members(A, dims, signs).tolist() == expected


def test_orthant_clusters_partition_and_ordering(rng):
    A = rng.standard_normal((200, 4))
    clusters = orthant_clusters(A, (0, 1, 2), top=None)
    assert list(clusters) == sign_configurations(3)
    allmembers = np.concatenate([c.indices for c in clusters.values()])
    assert sorted(allmembers.tolist()) == list(range(200))  # a partition (no zero entries here)
    typ = typicality(A, (0, 1, 2))
    for cl in clusters.values():
        np.testing.assert_allclose(cl.typicality, typ[cl.indices])
        assert np.all(np.diff(cl.typicality) <= 0)
    assert list(orthant_clusters(A, (k for k in range(3)), top=None)) == list(clusters)  # generators work
    top = orthant_clusters(A, (0, 1, 2), top=5)
    for config, cl in top.items():
        np.testing.assert_array_equal(cl.indices, clusters[config].indices[:5])
    labels = orthant_labels(A, (0, 1, 2))
    for i, config in enumerate(sign_configurations(3)):
        assert set(np.flatnonzero(labels == i)) == set(clusters[config].indices)


def test_orthant_clusters_keep_empty_configurations():
    A = np.array([[1.0, 1.0], [2.0, 0.5]])
    clusters = orthant_clusters(A, (0, 1))
    assert len(clusters) == 4
    assert clusters[(1, 1)].indices.tolist() == [1, 0]  # typicality 2.5 before 2.0
    assert all(len(clusters[c].indices) == 0 for c in [(1, -1), (-1, 1), (-1, -1)])


def test_hierarchy_is_nested_and_semantic(hierarchical_svd):
    words, _, _, U, _, _ = hierarchical_svd
    A = U
    # find the orthant of "cat" on the first three concepts and refine
    cat = words.index("cat")
    signs = np.sign(A[cat, :3]).astype(int)
    levels = orthant_hierarchy(A, (0, 1, 2), signs)
    for coarse, fine in itertools.pairwise(levels):
        assert set(fine) <= set(coarse)
    assert cat in levels[-1]
    # the coarsest level separates the animals from the plants
    animals = {words.index(w) for w in ["dog", "cat", "tiger", "eagle", "trout"]}
    assert set(levels[0].tolist()) == animals or set(levels[0].tolist()).isdisjoint(animals)


def test_invalid_inputs_raise_value_error(rng):
    A = rng.standard_normal((10, 3))
    with pytest.raises(ValueError, match="out of range"):
        orthant_members(A, [3], [1])
    with pytest.raises(ValueError, match="repeat"):
        typicality(A, [0, 0])
    with pytest.raises(ValueError, match="one sign per"):
        orthant_members(A, [0, 1], [1])
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        orthant_members(A, [0], [0])
    with pytest.raises(ValueError, match="2-D"):
        typicality(np.ones(3), [0])
    with pytest.raises(ValueError, match="integers"):
        typicality(A, [0.5])
    with pytest.raises(ValueError, match="top"):
        orthant_clusters(A, [0], top=0)


def test_matched_clusters_share_configurations(hierarchical_svd):
    _, _, S, U, _, Vt = hierarchical_svd
    matched = matched_clusters(U, Vt.T, (0, 1), top=3)
    words = orthant_clusters(U, (0, 1), top=None)
    ctxs = orthant_clusters(Vt.T, (0, 1), top=None)
    assert matched  # at least one configuration is shared
    for config, pair in matched.items():
        assert len(words[config].indices) and len(ctxs[config].indices)
        np.testing.assert_array_equal(pair.words.indices, words[config].indices[:3])
        np.testing.assert_array_equal(pair.contexts.indices, ctxs[config].indices[:3])
    for config in set(words) - set(matched):
        assert len(words[config].indices) == 0 or len(ctxs[config].indices) == 0
    with pytest.raises(ValueError, match="same concepts"):
        matched_clusters(U, Vt.T[:, :2], (0,))


def test_clusters_table(hierarchical_svd):
    words, _, _, U, _, _ = hierarchical_svd
    table = clusters_table(orthant_clusters(U, (0, 1), top=None), words, dims=(0, 1))
    assert list(table.columns) == ["C on K={1,2}", "size", "members (by typicality)"]
    assert table["size"].sum() == np.count_nonzero(np.all(np.abs(U[:, :2]) > 1e-12, axis=1))


def test_orient_signs_keeps_product(hierarchical_svd):
    words, _, _, U, s, Vt = hierarchical_svd
    oak = words.index("oak")
    U2, Vt2 = orient_signs(U, Vt, {0: oak, 1: oak})
    assert U2[oak, 0] > 0 and U2[oak, 1] > 0
    np.testing.assert_allclose((U2 * s) @ Vt2, (U * s) @ Vt, atol=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        orient_signs(U, Vt, {U.shape[1]: 0})


# ---------------------------------------------------------------------------------------------
# concept representations (App. B eq. 4)
# ---------------------------------------------------------------------------------------------
def _limit_geometry(U, s, Vt, d, seed=0):
    R, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, U.shape[1])))
    return (U * np.sqrt(s)) @ R.T, R @ (np.sqrt(s)[:, None] * Vt), R


def test_concept_representations_coincide_for_limit_geometry(hierarchical_svd):
    _, _, _, U, s, Vt = hierarchical_svd
    W, H, R = _limit_geometry(U, s, Vt, d=12)
    u_d, v_d = concept_representations(W, H, U, Vt)
    expected = R * np.sqrt(s)  # column k = sqrt(sigma_k) R e_k
    np.testing.assert_allclose(u_d, expected, atol=1e-12)
    np.testing.assert_allclose(v_d, expected, atol=1e-12)
    np.testing.assert_allclose(cosine_columns(u_d, v_d), 1.0, atol=1e-12)
    # the projections P_W, P_H of eq. (4) do not change these vectors
    up, vp = concept_representations(W, H, U, Vt, project=True)
    np.testing.assert_allclose(up, u_d, atol=1e-10)
    np.testing.assert_allclose(vp, v_d, atol=1e-10)
    np.testing.assert_allclose(row_space_projector(W), R @ R.T, atol=1e-10)


def test_concept_representation_shapes_and_errors(rng, hierarchical_svd):
    _, _, _, U, s, Vt = hierarchical_svd
    W, H, _ = _limit_geometry(U, s, Vt, d=12)
    u1, v1 = concept_representations(W, H, U, Vt, 1)
    assert u1.shape == v1.shape == (12,)
    u2, _ = concept_representations(W, H, U, Vt, [0, 2])
    assert u2.shape == (12, 2)
    np.testing.assert_allclose(u2[:, 1], concept_representations(W, H, U, Vt, 2)[0])
    with pytest.raises(ValueError, match="shape mismatch"):
        concept_representations(W[:-1], H, U, Vt)
    with pytest.raises(ValueError, match="out of range"):
        concept_representations(W, H, U, Vt, U.shape[1])


def test_concept_coordinates_sign_follows_analyzers(hierarchical_svd):
    _, _, _, U, s, Vt = hierarchical_svd
    W, H, _ = _limit_geometry(U, s, Vt, d=12, seed=3)
    u_d, v_d = concept_representations(W, H, U, Vt, [0, 1])
    # limit geometry: w_z^T u^d_k / ||u^d_k|| = sqrt(sigma_k) u_k[z], the sign of the word analyzer
    coords_w = concept_coordinates(W, u_d)
    np.testing.assert_allclose(coords_w, U[:, :2] * np.sqrt(s[:2]), atol=1e-12)
    coords_h = concept_coordinates(H.T, v_d[:, 0])
    np.testing.assert_allclose(coords_h, Vt[0] * np.sqrt(s[0]), atol=1e-12)
    with pytest.raises(ValueError, match="zero vector"):
        concept_coordinates(W, np.zeros(12))


# ---------------------------------------------------------------------------------------------
# k-means on analyzers
# ---------------------------------------------------------------------------------------------
def test_kmeans_recovers_separated_orthants_and_is_deterministic(rng):
    from sklearn.metrics import adjusted_rand_score

    centers = np.array(list(itertools.product((1.0, -1.0), repeat=2)))
    A = np.hstack([np.repeat(centers, 25, axis=0) + 0.05 * rng.standard_normal((100, 2)),
                   rng.standard_normal((100, 3))])
    labels, cents = kmeans_on_analyzers(A, p=2, seed=0)
    assert cents.shape == (4, 2)
    assert adjusted_rand_score(labels, orthant_labels(A, (0, 1))) == pytest.approx(1.0)
    labels2, _ = kmeans_on_analyzers(A, p=2, seed=0)
    np.testing.assert_array_equal(labels, labels2)
    with pytest.raises(ValueError, match="p must be"):
        kmeans_on_analyzers(A, p=6)
    with pytest.raises(ValueError, match="k must be"):
        kmeans_on_analyzers(A, p=2, k=500)


def test_kmeans_fits_on_one_thread_whatever_the_callers_limit(rng, monkeypatch):
    # the book's kernel and a sweep point cap threads differently; Lloyd's per-thread partial sums
    # would let the same seed give other clusters under another cap
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_info, threadpool_limits

    seen = []
    fit = KMeans.fit

    def spy(self, X, *args, **kwargs):
        seen.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] in ("openmp", "blas"))
        return fit(self, X, *args, **kwargs)

    monkeypatch.setattr(KMeans, "fit", spy)
    with threadpool_limits(2):
        kmeans_on_analyzers(rng.standard_normal((40, 3)), p=2, seed=0)
    assert seen and set(seen) == {1}


# ---------------------------------------------------------------------------------------------
# concepts of a pretrained LM (paper B App. F.2)
# ---------------------------------------------------------------------------------------------
def test_context_concepts_factor_the_logits_as_u_sigma_vt():
    rng = np.random.default_rng(0)
    W, H = rng.normal(size=(30, 6)), rng.normal(size=(6, 40))
    c = decoder_concepts(W)
    assert np.allclose((c.U * c.sqrt_sigma) @ c.R, W)
    assert np.allclose(c.U.T @ c.U, np.eye(6)) and np.allclose(c.R @ c.R.T, np.eye(6))
    V = context_concepts(H, c)
    assert V.shape == (40, 6)
    assert np.allclose(W @ H, (c.U * c.sigma) @ V.T)  # L = U Sigma V^T


def test_context_concepts_recover_v_of_a_planted_svd():
    rng = np.random.default_rng(1)
    U, _ = np.linalg.qr(rng.normal(size=(20, 4)))
    V, _ = np.linalg.qr(rng.normal(size=(15, 4)))
    R, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    sigma = np.array([5.0, 3.0, 2.0, 1.0])
    W = U * np.sqrt(sigma) @ R
    H = R.T * np.sqrt(sigma) @ V.T  # H = R^T Sigma^{1/2} V^T: the NTP-UFM limit geometry
    c = decoder_concepts(W)
    signs = np.sign(np.sum(c.U * U, axis=0))  # svd_factors fixes its own signs
    assert np.allclose(c.sigma, sigma)
    assert np.allclose(context_concepts(H, c) * signs, V)


def test_decoder_concepts_bad_input():
    with pytest.raises(ValueError, match="non-finite"):
        decoder_concepts(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="shape mismatch"):
        context_concepts(np.ones((3, 5)), decoder_concepts(np.eye(4)))


def test_orthant_agreement_counts_matches_and_chance():
    word_codes = np.array([0, 0, 1, 1])
    ctx = np.array([0, 0, 1, 1, 1, 0])
    nxt = np.array([0, 1, 2, 3, 0, 2])  # next-token codes 0, 0, 1, 1, 0, 1
    out = orthant_agreement(word_codes, ctx, nxt, n_configs=2, min_contexts=1)
    assert out.rate == pytest.approx(4 / 6)
    assert out.chance == pytest.approx(0.5 * 0.5 + 0.5 * 0.5)
    assert out.ratio == pytest.approx(4 / 3)
    assert np.allclose(out.enrichment, [(2 / 3) / 0.5, (2 / 3) / 0.5])
    assert out.contexts.tolist() == [3, 3]
    sparse = orthant_agreement(word_codes, ctx, nxt, n_configs=2, min_contexts=4)
    assert np.all(np.isnan(sparse.enrichment))


def test_orthant_agreement_of_shared_sign_patterns_and_bad_input():
    rng = np.random.default_rng(2)
    U = rng.normal(size=(50, 3))
    nxt = rng.integers(0, 50, size=500)
    V = U[nxt] + 0.01 * rng.normal(size=(500, 3))  # each context carries its next token's pattern
    out = orthant_agreement(orthant_labels(U, range(3)), orthant_labels(V, range(3)), nxt, n_configs=8)
    assert out.rate > 0.95 and out.ratio > 4
    with pytest.raises(ValueError, match="next token ids"):
        orthant_agreement(np.zeros(3, dtype=int), np.zeros(2, dtype=int), np.array([0, 3]), n_configs=2)
    with pytest.raises(ValueError, match="context_codes"):
        orthant_agreement(np.zeros(3, dtype=int), np.array([0, 5]), np.array([0, 1]), n_configs=2)


def test_orthant_purity_tables_the_orthant_clusters(rng):
    """orthant_purity = orthant_clusters on K={1..p} + one purity-table row per non-empty configuration."""
    from ntputils.analysis.concepts import orthant_purity, sign_string
    from ntputils.analysis.purity import ClassLabels, RandomBaseline

    A = rng.standard_normal((30, 4))
    words = tuple(f"w{i}" for i in range(30))
    labels = ClassLabels(words, ("pos", "neg"), np.c_[A[:, 0] > 0, A[:, 0] <= 0])
    baseline = RandomBaseline(labels, n_draws=50, seed=0)
    clusters, table = orthant_purity(A, 2, labels, baseline, top=5)
    expected = orthant_clusters(A, range(2), top=5)
    assert list(clusters) == list(expected)
    assert all(np.array_equal(clusters[C].indices, expected[C].indices) for C in clusters)
    assert list(table["cluster"]) == [sign_string(C) for C, cl in clusters.items() if cl.indices.size]
    # the first concept's sign *is* the class here: every orthant cluster is pure
    assert np.allclose(table["purity"], 1.0)
