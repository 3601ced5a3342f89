"""Word and context concepts of a pretrained LM from its decoder and last-layer states (paper B App. F.2).

For a pretrained model the data-sparsity matrix S~ of its training corpus is out of reach, so paper B
reads the concepts from the embeddings (spec sec. 1.9 "GPT-2 concepts"). With the thin SVD of the
decoder ``W`` (V x d, rows = words)

    W = U Sigma^{1/2} R,        U: V x r (U^T U = I),  R: r x d (R R^T = I),

the columns of ``U`` are the *word concepts* (word-analyzer vectors; the singular values of ``W`` are
``sqrt(sigma_k)``). For contexts with last-layer states ``H`` (d x m, the decoder inputs) the *context
concepts* are

    V = H^T R^T Sigma^{-1/2}     (m x r; the paper prints ``H^T R Sigma^{-1/2}`` with its R transposed),

which makes the logits factor as in the SVD of S~: ``L = W H = U Sigma V^T`` (exact when ``d = r``; V is
not orthonormal, since H covers only a sample of contexts).

Coupling of word and context orthants (our test, beyond the paper). Paper B Fig. 6 pairs a context
orthant with the word orthant of the same sign configuration on ``K = {1..p}``. With the observed next
token ``y_j`` of every context, the **agreement rate** is the share of contexts whose next token lies in
the word orthant of their own configuration, ``mean_j 1[code(y_j) = code(j)]``; under independence of
the two codes it would be ``chance = sum_C P(code(j) = C) P(code(y_j) = C)``. The **enrichment** of a
configuration C is ``P(code(y_j) = C | code(j) = C) / P(code(y_j) = C)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ntputils.geometry.logits import svd_factors


class DecoderConcepts(NamedTuple):
    """``W = U diag(sqrt_sigma) R``: word concepts ``U`` (V x r), ``sqrt_sigma`` (r,), ``R`` (r x d)."""

    U: np.ndarray
    sqrt_sigma: np.ndarray
    R: np.ndarray

    @property
    def sigma(self) -> np.ndarray:
        """``sigma_k`` of the paper's notation (squares of the singular values of W)."""
        return self.sqrt_sigma**2


def decoder_concepts(W: np.ndarray, rank_tol: float = 1e-9) -> DecoderConcepts:
    """Thin SVD of the decoder ``W`` (V x d), signs as :func:`ntputils.geometry.svd_factors`."""
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or min(W.shape) == 0:
        raise ValueError(f"W must be a non-empty (V, d) matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W has non-finite entries")
    U, s, Rt = svd_factors(W, rank_tol=rank_tol)
    return DecoderConcepts(U, s, Rt)


def context_concepts(H: np.ndarray, concepts: DecoderConcepts) -> np.ndarray:
    """``V = H^T R^T Sigma^{-1/2}`` (m x r) for last-layer states ``H`` (d x m)."""
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != concepts.R.shape[1]:
        raise ValueError(f"shape mismatch: H {H.shape} must be (d, m) with d = {concepts.R.shape[1]}")
    return (H.T @ concepts.R.T) / concepts.sqrt_sigma


class OrthantAgreement(NamedTuple):
    """Agreement of context orthants with the orthants of their observed next tokens (module docstring)."""

    rate: float
    chance: float
    enrichment: np.ndarray  # (n_configs,), nan where fewer than min_contexts contexts
    contexts: np.ndarray  # (n_configs,) number of contexts per configuration

    @property
    def ratio(self) -> float:
        """``rate / chance``."""
        return self.rate / self.chance


def orthant_agreement(word_codes: np.ndarray, context_codes: np.ndarray, next_tokens: np.ndarray,
                      n_configs: int, min_contexts: int = 50) -> OrthantAgreement:
    """Agreement of ``context_codes[j]`` with ``word_codes[next_tokens[j]]``.

    Codes are orthant labels in ``0..n_configs-1`` (e.g. :func:`ntputils.analysis.concepts.orthant_labels`);
    ``-1`` (a zero coordinate) never agrees and is excluded from the per-configuration statistics.
    """
    word_codes = np.asarray(word_codes, dtype=np.int64)
    context_codes = np.asarray(context_codes, dtype=np.int64)
    next_tokens = np.asarray(next_tokens, dtype=np.int64)
    if context_codes.shape != next_tokens.shape or context_codes.ndim != 1 or context_codes.size == 0:
        raise ValueError(f"context_codes {context_codes.shape} and next_tokens {next_tokens.shape} must be "
                         "non-empty vectors of equal length")
    if next_tokens.min() < 0 or next_tokens.max() >= word_codes.size:
        raise ValueError(f"next token ids must lie in [0, {word_codes.size})")
    for name, codes in (("word_codes", word_codes), ("context_codes", context_codes)):
        if codes.min() < -1 or codes.max() >= n_configs:
            raise ValueError(f"{name} must lie in -1..{n_configs - 1}")
    next_codes = word_codes[next_tokens]
    valid_ctx, valid_next = context_codes >= 0, next_codes >= 0
    m = context_codes.size
    p_ctx = np.bincount(context_codes[valid_ctx], minlength=n_configs) / m
    p_next = np.bincount(next_codes[valid_next], minlength=n_configs) / m
    agree = valid_ctx & (context_codes == next_codes)
    counts = np.bincount(context_codes[valid_ctx], minlength=n_configs)
    hits = np.bincount(context_codes[agree], minlength=n_configs)
    with np.errstate(divide="ignore", invalid="ignore"):
        enrichment = np.where((counts >= min_contexts) & (p_next > 0), hits / counts / p_next, np.nan)
    return OrthantAgreement(float(agree.mean()), float(np.sum(p_ctx * p_next)), enrichment, counts)
