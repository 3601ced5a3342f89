r"""The papers' geometry read from any model on any corpus (chapter d01, ``ntpbook geometry``).

Paper A predicts the geometry of a model trained on a corpus from the corpus' support matrix
$\boldsymbol S\in\{0,1\}^{V\times m}$: context embeddings $\boldsymbol H$ correlate like the columns of the
proxy $\widetilde{\boldsymbol S}=(\boldsymbol I-\tfrac1V\boldsymbol 1\boldsymbol 1^\top)\boldsymbol S$
(Sec. 5, Fig. 1), word embeddings $\boldsymbol W$ like its rows. Paper B reads concepts as the SVD factors
$\widetilde{\boldsymbol S}=\sum_k\sigma_k\boldsymbol u_k\boldsymbol v_k^\top$ (eq. 2). For a vocabulary of
50,257 tokens $\widetilde{\boldsymbol S}$ is a dense matrix of billions of entries; this module keeps
$\boldsymbol S$ sparse:

* :func:`proxy_context_matrix` -- a matrix with the column correlations of $\widetilde{\boldsymbol S}$,
  of at most $m$ rows (the Gram matrix $\widetilde{\boldsymbol S}^\top\widetilde{\boldsymbol S}=
  \boldsymbol S^\top\boldsymbol S-\tfrac1V\boldsymbol c\boldsymbol c^\top$, $\boldsymbol c$ the support
  sizes, factored), so $\operatorname{sim}(\boldsymbol H,\widetilde{\boldsymbol S})$ costs $O(m^2)$ memory;
* :func:`proxy_word_matrix` -- $\widetilde{\boldsymbol S}^\top$ restricted to some words;
* :func:`frequent_next_tokens` -- the words a word-geometry claim is judged on;
* :func:`concept_coordinates_of_logits` and :func:`sign_agreement` -- Paper B's concepts in a model:
  the centered logits $\boldsymbol W\boldsymbol H$ read along the context analyzers $\boldsymbol v_k$
  should give the word analyzers $\boldsymbol u_k$ (since $\widetilde{\boldsymbol S}\boldsymbol v_k=
  \sigma_k\boldsymbol u_k$), sign by sign, if the model learned the concepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ntputils.data.ntp import NTPData


def _support(S: np.ndarray | sp.sparray | sp.spmatrix) -> sp.csc_array:
    A = sp.csc_array(S, dtype=np.float64)
    if A.ndim != 2 or min(A.shape) == 0:
        raise ValueError(f"the support matrix must be a non-empty V x m matrix, got shape {A.shape}")
    return A


def proxy_context_matrix(S: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""A matrix ``X`` (r x m, r <= min(V, m)) with ``X^T X`` = $\widetilde{\boldsymbol S}^\top
    \widetilde{\boldsymbol S}$, hence ``corr(X) = corr(S~)`` (Paper A, Fig. 1's $\operatorname{corr}
    (\widetilde{\boldsymbol S})$) for ``S`` of any vocabulary size.

    ``S~`` itself (dense) when ``V <= m``; else ``Lambda^{1/2} Q^T`` of the eigendecomposition of the
    m x m Gram matrix ``S^T S - c c^T / V`` (``c`` = column sums), which is computed sparse.
    """
    A = _support(S)
    V, m = A.shape
    col = np.asarray(A.sum(axis=0)).ravel()
    if V <= m:
        return A.toarray() - col[None, :] / V
    G = (A.T @ A).toarray() - np.outer(col, col) / V
    lam, Q = np.linalg.eigh((G + G.T) / 2)
    keep = lam > lam.max() * 1e-12 if lam.max() > 0 else np.zeros_like(lam, dtype=bool)
    return (Q[:, keep] * np.sqrt(lam[keep])).T


def proxy_word_matrix(S: np.ndarray | sp.sparray | sp.spmatrix,
                      rows: Sequence[int] | np.ndarray) -> np.ndarray:
    r"""$\widetilde{\boldsymbol S}^\top$ restricted to the words ``rows`` (m x len(rows), dense): row ``z``
    of $\widetilde{\boldsymbol S}$ is ``S[z] - c / V``."""
    A = _support(S)
    idx = np.asarray(rows, dtype=np.int64)
    if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= A.shape[0]:
        raise ValueError(f"rows must be a non-empty list of word ids in [0, {A.shape[0]})")
    col = np.asarray(A.sum(axis=0)).ravel()
    return (A[idx].toarray() - col[None, :] / A.shape[0]).T


def frequent_next_tokens(data: NTPData, n_words: int = 0) -> np.ndarray:
    """Ids of the words that occur as a next token, the ``n_words`` most frequent (0: all), sorted by id.

    A word that never follows a kept context has a row of ``S~`` equal to every other such row; it
    would agree with any embedding that puts those words together, so word claims leave it out.
    """
    freq = np.asarray(data.counts.sum(axis=1)).ravel()
    present = np.flatnonzero(freq > 0)
    if n_words and present.size > n_words:
        present = present[np.lexsort((present, -freq[present]))][:n_words]
    return np.sort(present)


def concept_coordinates_of_logits(W: np.ndarray, H: np.ndarray, Vt: np.ndarray,
                                  rows: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
    r"""$(\boldsymbol I-\tfrac1V\boldsymbol 1\boldsymbol 1^\top)\boldsymbol W\boldsymbol H\boldsymbol v_k$
    for each context analyzer $\boldsymbol v_k$ (rows of ``Vt``), restricted to ``rows``: (n x K).

    The logits are centered over all V words (softmax ignores a constant per context). If the logits
    point along $\widetilde{\boldsymbol S}$ (Paper A, Thm. 1 with the proxy), column ``k`` is
    $\propto\sigma_k\boldsymbol u_k$ (Paper B, eq. 2).
    """
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    Vt = np.atleast_2d(np.asarray(Vt, dtype=np.float64))
    if W.ndim != 2 or H.ndim != 2 or W.shape[1] != H.shape[0] or Vt.shape[1] != H.shape[1]:
        raise ValueError(f"shape mismatch: W {W.shape} (V x d), H {H.shape} (d x m), Vt {Vt.shape} (K x m)")
    C = W @ (H @ Vt.T)
    C -= C.mean(axis=0, keepdims=True)
    return C if rows is None else C[np.asarray(rows, dtype=np.int64)]


def sign_agreement(A: np.ndarray, B: np.ndarray) -> float:
    """Share of the entries of two equal-shape matrices with the same sign (a zero agrees with nothing).

    Paper B's orthants (Def. 1) coordinate by coordinate: 1 when every word lies on the same side of
    every concept in both.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.shape != B.shape or A.size == 0:
        raise ValueError(f"sign_agreement needs two non-empty matrices of one shape: {A.shape}, {B.shape}")
    return float(np.mean((np.sign(A) == np.sign(B)) & (A != 0)))


class AgreementWithChance(NamedTuple):
    """:func:`sign_agreement` of a model's concept coordinates with ``U``, its chance level (rows of the
    coordinates permuted) and its spread over the permutations."""

    value: float
    chance: float
    chance_sd: float


def agreement_with_chance(C: np.ndarray, U: np.ndarray, draws: int = 20, seed: int = 0
                          ) -> AgreementWithChance:
    """:func:`sign_agreement` (C, U) beside the mean over ``draws`` permutations of C's rows (words)."""
    rng = np.random.default_rng(seed)
    C = np.asarray(C, dtype=np.float64)
    shuffled = [sign_agreement(C[rng.permutation(C.shape[0])], U) for _ in range(draws)]
    return AgreementWithChance(sign_agreement(C, U), float(np.mean(shuffled)),
                               float(np.std(shuffled, ddof=1)))


__all__ = ["AgreementWithChance", "agreement_with_chance", "concept_coordinates_of_logits",
           "frequent_next_tokens", "proxy_context_matrix", "proxy_word_matrix", "sign_agreement"]
