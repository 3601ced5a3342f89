"""Tests of ntputils.analysis.pretrained_concepts: decoder/context concepts and the orthant agreement
statistic."""

import numpy as np
import pytest

from ntputils.analysis.concepts import orthant_labels
from ntputils.analysis.pretrained_concepts import context_concepts, decoder_concepts, orthant_agreement


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
