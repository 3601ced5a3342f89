"""Concepts as singular dimensions of S~ (and of a pretrained LM's embeddings): orthant clustering,
typicality, concept representations, word/context orthant agreement.

Notation (paper B sec. 4, Definition 1, App. A.3 and App. B). With the SVD ``S~ = U Sigma V^T``
(``U``: V x r, ``V``: m x r), concept ``k`` is the k-th singular dimension; ``u_k`` (column of U) is
its *word-analyzer vector*, ``v_k`` (column of V) its *context-analyzer vector*. Every function here
takes an **analyzer matrix** ``A`` whose rows are items and whose columns are concepts:

* words:    ``A = U``       (V x r, row z = ``[u_1[z], ..., u_r[z]]``)
* contexts: ``A = Vt.T``    (m x r, row j = ``[v_1[j], ..., v_r[j]]``)

**Concept dimensions are 0-based column indices** (numpy convention): the paper's
``K = {k_1, ..., k_p} = {1, 2, 4}`` is ``dims=(0, 1, 3)`` here. Use :func:`paper_dims` to convert.

Definition 1 (paper B). For ``K = {k_1..k_p}`` and a sign configuration
``C = [c_{k_1}, ..., c_{k_p}] in {+1, -1}^p``:

* item z is a *member* of C iff ``sign(A[z, k_i]) = c_{k_i}`` for every i (the p-dimensional
  orthant of the selected concept coordinates); entries with ``|A[z, k]| <= zero_tol`` have sign 0
  and belong to no orthant along that dimension;
* the *typicality* of a member is ``Typicality(z; C) = sum_i |A[z, k_i]|`` (L1 norm of row z
  restricted to K).

The 2^p configurations partition the items (up to zero entries); a configuration on K is nested in
the configuration on any prefix of K with the same leading signs (paper B Fig. 2B: animal >
mammal > feline).

Concept representations (paper B sec. 4.2 and App. B eq. 4): for embeddings W (V x d) and
H (d x m),

    u^d_k = P_W W^T u_k = W^T u_k,     v^d_k = P_H H v_k = H v_k = sum_j v_k[j] h_j,

with ``P_W = W^T (W W^T)^{-dagger} W`` and ``P_H = H (H^T H)^{-dagger} H^T`` the projections onto
the spans of the word and context embeddings (both are the identity on these vectors). For the
limit geometry ``W = U Sigma^{1/2} R^T``, ``H = R Sigma^{1/2} V^T`` both equal
``sqrt(sigma_k) R e_k`` (the paper prints ``sigma_k R e_k``; the direction ``R e_k`` is what
matters), so word and context concepts coincide.

The k-means variant (paper B sec. 5, App. A.3) clusters the rows of ``A[:, :p]`` with
``k = 2^p`` clusters, for comparison with the 2^p orthants.

API: :func:`sign_patterns`, :func:`typicality`, :func:`orthant_members`, :func:`orthant_labels`,
:func:`orthant_clusters` (all 2^p configurations, top members by typicality),
:func:`orthant_hierarchy` (nested prefixes, Fig. 2B), :func:`matched_clusters` (word and context
clusters with the same configuration, Fig. 6), :func:`clusters_table` (pandas summary),
:func:`orient_signs` (flip concepts to a stated sign convention), :func:`paper_dims`,
:func:`sign_configurations`, :func:`concept_representations` (eq. 4), :func:`row_space_projector`,
:func:`concept_coordinates` (Fig. 10), :func:`cosine_columns`, :func:`kmeans_on_analyzers`,
:func:`sign_string`, and for pretrained models :func:`decoder_concepts`, :func:`context_concepts`,
:func:`orthant_agreement`.

Concepts of a pretrained LM (paper B App. F.2). For a pretrained model the data-sparsity matrix S~ of
its training corpus is out of reach, so paper B reads the concepts from the embeddings. With the thin
SVD of the decoder ``W`` (V x d, rows = words)

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

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ntputils.geometry.logits import svd_factors

DEFAULT_ZERO_TOL = 1e-12


class OrthantCluster(NamedTuple):
    """Members of one sign configuration, sorted by decreasing typicality.

    Paper B, Def. 1: the members of one orthant and their typicality.
    """

    indices: np.ndarray
    typicality: np.ndarray


class MatchedCluster(NamedTuple):
    """A sign configuration that is non-empty for both words and contexts (paper B Fig. 6).
    """

    words: OrthantCluster
    contexts: OrthantCluster


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------
def _analyzers(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"analyzer matrix must be 2-D (items x concepts), got shape {A.shape}")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(f"analyzer matrix is empty: shape {A.shape}")
    return A


def _dims(dims: Iterable[int], r: int) -> np.ndarray:
    out = np.asarray(list(dims) if not isinstance(dims, np.ndarray) else dims)
    if out.ndim != 1 or out.size == 0:
        raise ValueError(f"dims must be a non-empty sequence of concept indices, got {dims!r}")
    if not np.issubdtype(out.dtype, np.integer):
        raise ValueError(f"dims must be integers (0-based concept indices), got {dims!r}")
    if np.unique(out).size != out.size:
        raise ValueError(f"dims must not repeat a concept, got {out.tolist()}")
    if out.min() < 0 or out.max() >= r:
        raise ValueError(f"dims {out.tolist()} out of range for {r} concepts (0-based: 0..{r - 1})")
    return out.astype(np.intp)


def _signs(signs: Iterable[int], p: int) -> np.ndarray:
    out = np.asarray(list(signs), dtype=np.int64)
    if out.shape != (p,):
        raise ValueError(f"need one sign per selected dimension ({p}), got {list(signs)!r}")
    if not np.all(np.isin(out, (-1, 1))):
        raise ValueError(f"signs must be +1 or -1, got {out.tolist()}")
    return out


def paper_dims(K: Iterable[int]) -> tuple[int, ...]:
    """Convert the paper's 1-based concept set ``K`` (e.g. ``{1, 2, 4}``) to 0-based ``dims``.

    The concept set K of Paper B, Sec. 4.3 (1-based in the paper).
    """
    K = list(K)
    if not K or any(int(k) != k or k < 1 for k in K):
        raise ValueError(f"paper concept indices are integers >= 1, got {K!r}")
    return tuple(int(k) - 1 for k in K)


def sign_configurations(p: int) -> list[tuple[int, ...]]:
    """All ``2^p`` configurations ``C in {+1,-1}^p`` in a fixed order (``(+1,...,+1)`` first).

    The 2^p signature configurations of Paper B, Sec. 4.3.
    """
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    return list(itertools.product((1, -1), repeat=p))


def sign_string(config: Iterable[int]) -> str:
    """A sign configuration ``C = [c_{k_1}, ..., c_{k_p}]`` (paper B Definition 1) as text:
    ``(1, -1, 1)`` -> ``"(+,-,+)"``.
    """
    return "(" + ",".join("+" if c > 0 else "-" for c in config) + ")"


# ---------------------------------------------------------------------------------------------
# Definition 1: membership and typicality
# ---------------------------------------------------------------------------------------------
def sign_patterns(A: np.ndarray, dims: Iterable[int], zero_tol: float = DEFAULT_ZERO_TOL) -> np.ndarray:
    """``sign(A[z, k_i])`` for every item z and selected dimension: an (n, p) int8 array in {-1, 0, +1}.

    Row z is the sign configuration of item z on ``dims``; a 0 (``|entry| <= zero_tol``) means
    "neutral" and excludes z from every orthant of ``dims``. Word and context patterns are
    directly comparable because ``u_k`` and ``v_k`` share the sign of ``sigma_k u_k v_k^T``.

    Paper B, Def. 1 (the signs that decide orthant membership).
    """
    A = _analyzers(A)
    d = _dims(dims, A.shape[1])
    if zero_tol < 0:
        raise ValueError(f"zero_tol must be >= 0, got {zero_tol}")
    sub = A[:, d]
    return np.where(np.abs(sub) <= zero_tol, 0, np.sign(sub)).astype(np.int8)


def typicality(A: np.ndarray, dims: Iterable[int]) -> np.ndarray:
    r"""$\mathrm{Typicality}(z;C)=\sum_{i\in[p]}\lvert\boldsymbol u_{k_i}[z]\rvert$ for every row $z$ of the
    analyzer matrix, Paper B, Def. 1; shape (n,).
    """
    A = _analyzers(A)
    d = _dims(dims, A.shape[1])
    return np.abs(A[:, d]).sum(axis=1)


def orthant_members(A: np.ndarray, dims: Iterable[int], signs: Iterable[int],
                    zero_tol: float = DEFAULT_ZERO_TOL) -> np.ndarray:
    r"""$\{z:\mathrm{sign}(\boldsymbol u_{k_i}[z])=c_{k_i}\ \forall i\in[p]\}$, the members of the orthant $C$
    of Paper B, Def. 1; ascending indices.
    """
    pat = sign_patterns(A, dims, zero_tol)
    c = _signs(signs, pat.shape[1])
    return np.flatnonzero(np.all(pat == c, axis=1))


def _sorted_cluster(members: np.ndarray, typ: np.ndarray, top: int | None) -> OrthantCluster:
    order = members[np.argsort(-typ[members], kind="stable")]
    if top is not None:
        order = order[:top]
    return OrthantCluster(order, typ[order])


def orthant_clusters(A: np.ndarray, dims: Iterable[int], top: int | None = 40,
                     zero_tol: float = DEFAULT_ZERO_TOL) -> dict[tuple[int, ...], OrthantCluster]:
    """Orthant-based clustering on ``dims``: every one of the 2^p configurations -> its top members.

    Returns ``{C: OrthantCluster(indices, typicality)}`` for all ``C`` of :func:`sign_configurations`
    (empty configurations map to empty arrays), members sorted by decreasing typicality (ties by
    index) and cut to the ``top`` most typical (paper B uses top-40 word clouds); ``top=None`` keeps all.
    """
    if top is not None and (int(top) != top or top < 1):
        raise ValueError(f"top must be a positive integer or None, got {top!r}")
    dims = tuple(dims)  # used three times: a generator must not be consumed by the first use
    code = orthant_labels(A, dims, zero_tol)
    typ = typicality(A, dims)
    configs = sign_configurations(len(dims))
    return {config: _sorted_cluster(np.flatnonzero(code == i), typ, top) for i, config in enumerate(configs)}


def orthant_labels(A: np.ndarray, dims: Iterable[int], zero_tol: float = DEFAULT_ZERO_TOL) -> np.ndarray:
    """Orthant of every item as an integer label: the position of its configuration in
    :func:`sign_configurations` (0 = all positive), or -1 for items with a zero (neutral) entry.

    Handy for comparing orthant clustering with :func:`kmeans_on_analyzers`
    (e.g. ``sklearn.metrics.adjusted_rand_score``).

    Orthant-based clustering of Paper B, Sec. 4.3 and Def. 1.
    """
    pat = sign_patterns(A, dims, zero_tol)
    p = pat.shape[1]
    weights = 2 ** np.arange(p - 1, -1, -1)  # (+,...,+) -> 0, ..., (-,...,-) -> 2^p - 1, as itertools.product
    code = np.full(pat.shape[0], -1, dtype=np.int64)
    valid = np.all(pat != 0, axis=1)
    code[valid] = ((pat[valid] < 0).astype(np.int64) * weights).sum(axis=1)
    return code


def orthant_hierarchy(A: np.ndarray, dims: Iterable[int], signs: Iterable[int],
                      zero_tol: float = DEFAULT_ZERO_TOL) -> list[np.ndarray]:
    """Members of the nested configurations ``C[:1]`` on ``K[:1]``, ``C[:2]`` on ``K[:2]``, ... (Fig. 2B).

    Entry ``p-1`` holds the members of the first ``p`` signs on the first ``p`` dims; each set
    contains the next (adding a dimension can only refine an orthant).

    Paper B, Fig. 2B and Fig. 11: finer categories as concept dimensions are added.
    """
    A = _analyzers(A)
    d = _dims(dims, A.shape[1])
    c = _signs(signs, d.size)
    return [orthant_members(A, d[:p], c[:p], zero_tol) for p in range(1, d.size + 1)]


def matched_clusters(A_words: np.ndarray, A_contexts: np.ndarray, dims: Iterable[int], top: int | None = 40,
                     min_size: int = 1, zero_tol: float = DEFAULT_ZERO_TOL
                     ) -> dict[tuple[int, ...], MatchedCluster]:
    """Configurations with at least ``min_size`` members among both words and contexts (paper B Fig. 6).

    ``A_words = U`` and ``A_contexts = Vt.T`` must come from the same SVD (same concepts, same
    signs). Since ``S~[z, j] = sum_k sigma_k u_k[z] v_k[j]``, a context and a word in the same
    orthant of the top concepts tend to have ``S~[z, j] > 0``: the words are typical next tokens of
    the contexts. Returns ``{C: MatchedCluster(words, contexts)}`` in :func:`sign_configurations`
    order, each side cut to ``top`` members (``min_size`` is tested before the cut).
    """
    Aw, Ac = _analyzers(A_words), _analyzers(A_contexts)
    if Aw.shape[1] != Ac.shape[1]:
        raise ValueError("word and context analyzers need the same concepts: "
                         f"{Aw.shape[1]} vs {Ac.shape[1]} columns")
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")
    dims = tuple(dims)
    words = orthant_clusters(Aw, dims, top=None, zero_tol=zero_tol)
    ctxs = orthant_clusters(Ac, dims, top=None, zero_tol=zero_tol)
    out: dict[tuple[int, ...], MatchedCluster] = {}
    for config, wc in words.items():
        cc = ctxs[config]
        if len(wc.indices) >= min_size and len(cc.indices) >= min_size:
            cut = slice(None) if top is None else slice(0, top)
            out[config] = MatchedCluster(OrthantCluster(wc.indices[cut], wc.typicality[cut]),
                                         OrthantCluster(cc.indices[cut], cc.typicality[cut]))
    return out


def clusters_table(clusters: Mapping[tuple[int, ...], OrthantCluster], names: Sequence[str] | None = None,
                   dims: Iterable[int] | None = None, skip_empty: bool = True):
    """A ``pandas.DataFrame`` summary of :func:`orthant_clusters`: configuration, size, members.

    ``names`` labels items (words or context strings); ``dims`` (0-based) only sets the column
    header of the configuration in the paper's 1-based notation, e.g. ``C on K={1,2,4}``.

    Orthant-based clusters of Paper B, Sec. 4.3 (Figs. 4 and 22-25).
    """
    import pandas as pd

    header = "C" if dims is None else "C on K={" + ",".join(str(int(k) + 1) for k in dims) + "}"
    rows = []
    for config, cl in clusters.items():
        if skip_empty and len(cl.indices) == 0:
            continue
        labels = [names[i] if names is not None else str(i) for i in cl.indices]
        rows.append({header: "[" + ",".join(f"{c:+d}" for c in config) + "]", "size": len(cl.indices),
                     "members (by typicality)": ", ".join(labels)})
    return pd.DataFrame(rows, columns=[header, "size", "members (by typicality)"])


# ---------------------------------------------------------------------------------------------
# sign orientation
# ---------------------------------------------------------------------------------------------
def orient_signs(U: np.ndarray, Vt: np.ndarray, anchors: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Flip concept k (``u_k`` and ``v_k`` together) so that ``U[anchors[k], k] > 0``.

    ``anchors`` maps a 0-based concept to a word (row of U) that must come out positive, e.g.
    ``{0: vocab.index("dog")}`` reproduces "animals positive on dim 1" of paper B Fig. 1.
    ``U diag(s) Vt`` is unchanged. Concepts not in ``anchors`` keep their sign.
    """
    U = np.array(U, dtype=np.float64, copy=True)
    Vt = np.array(Vt, dtype=np.float64, copy=True)
    if U.ndim != 2 or Vt.ndim != 2 or U.shape[1] != Vt.shape[0]:
        raise ValueError(f"shape mismatch: U {U.shape} and Vt {Vt.shape} must be (V, r) and (r, m)")
    for k, row in anchors.items():
        if not 0 <= k < U.shape[1]:
            raise ValueError(f"concept {k} out of range (0-based, r={U.shape[1]})")
        if not 0 <= row < U.shape[0]:
            raise ValueError(f"anchor row {row} out of range (V={U.shape[0]})")
        if U[row, k] == 0:
            raise ValueError(f"anchor row {row} has u_{k + 1}[z] = 0: it cannot fix the sign of concept {k}")
        if U[row, k] < 0:
            U[:, k] *= -1.0
            Vt[k] *= -1.0
    return U, Vt


# ---------------------------------------------------------------------------------------------
# concept representations (App. B, eq. 4)
# ---------------------------------------------------------------------------------------------
def _concept_index(k: int | Sequence[int] | None, r: int) -> tuple[np.ndarray, bool]:
    if k is None:
        return np.arange(r), False
    scalar = np.isscalar(k)
    idx = np.atleast_1d(np.asarray(k))
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"concept index must be integer(s), got {k!r}")
    if idx.size == 0 or idx.min() < 0 or idx.max() >= r:
        raise ValueError(f"concept index {k!r} out of range for r={r} concepts (0-based)")
    return idx.astype(np.intp), scalar


def row_space_projector(A: np.ndarray) -> np.ndarray:
    """``A^T (A A^T)^{dagger} A`` (d x d): the orthogonal projector onto the row space of A.

    ``P_W = row_space_projector(W)`` and ``P_H = row_space_projector(H.T)`` of paper B App. B.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {A.shape}")
    return np.linalg.pinv(A) @ A


def concept_representations(W: np.ndarray, H: np.ndarray, U: np.ndarray, Vt: np.ndarray,
                            k: int | Sequence[int] | None = None, project: bool = False
                            ) -> tuple[np.ndarray, np.ndarray]:
    """``u^d_k = W^T u_k`` and ``v^d_k = H v_k`` (paper B sec. 4.2, App. B eq. 4).

    Parameters
    ----------
    W, H: word embeddings (V x d, rows) and context embeddings (d x m, columns).
    U, Vt: word analyzers (V x r, columns ``u_k``) and context analyzers (r x m, rows ``v_k``).
    k: 0-based concept index (returns two (d,) vectors), a sequence (two (d, len(k)) arrays,
        column i for concept ``k[i]``) or ``None`` for all r concepts.
    project: apply ``P_W`` / ``P_H`` explicitly as printed in eq. (4). Mathematically a no-op
        (``W^T u_k`` lies in the row space of W, ``H v_k`` in the column space of H); kept to check
        that claim numerically.
    """
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    Vt = np.asarray(Vt, dtype=np.float64)
    if W.ndim != 2 or H.ndim != 2 or W.shape[1] != H.shape[0]:
        raise ValueError(f"shape mismatch: W {W.shape} and H {H.shape} must be (V, d) and (d, m)")
    if U.ndim != 2 or U.shape[0] != W.shape[0]:
        raise ValueError(f"shape mismatch: U {U.shape} needs {W.shape[0]} rows (one per word)")
    if Vt.ndim != 2 or Vt.shape[1] != H.shape[1] or Vt.shape[0] != U.shape[1]:
        raise ValueError(f"shape mismatch: Vt {Vt.shape} must be (r={U.shape[1]}, m={H.shape[1]})")
    idx, scalar = _concept_index(k, U.shape[1])
    u_d = W.T @ U[:, idx]
    v_d = H @ Vt[idx].T
    if project:
        u_d = row_space_projector(W) @ u_d
        v_d = row_space_projector(H.T) @ v_d
    return (u_d[:, 0], v_d[:, 0]) if scalar else (u_d, v_d)


def concept_coordinates(X: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """Signed projections of embeddings on unit concept axes: ``X @ reps / ||reps||`` (paper B Fig. 10).

    ``X`` holds embeddings as rows (``W`` for words, ``H.T`` for contexts), ``reps`` concept
    representations as columns (d x K) or a single (d,) vector.
    """
    X = np.asarray(X, dtype=np.float64)
    R = np.asarray(reps, dtype=np.float64)
    single = R.ndim == 1
    R = R[:, None] if single else R
    if X.ndim != 2 or R.ndim != 2 or X.shape[1] != R.shape[0]:
        raise ValueError(f"shape mismatch: embeddings {X.shape} (n x d) vs concept representations "
                         f"{R.shape} (d x K)")
    norms = np.linalg.norm(R, axis=0)
    if np.any(norms == 0):
        raise ValueError("a concept representation is the zero vector: it defines no axis")
    out = X @ (R / norms)
    return out[:, 0] if single else out


def cosine_columns(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cosine similarity of matching columns of A and B (e.g. ``cos(u^d_k, v^d_k)`` for every k).

    Used to compare word and context concept representations, Paper B, Eq. (4), App. B.
    """
    A = np.atleast_2d(np.asarray(A, dtype=np.float64).T).T
    B = np.atleast_2d(np.asarray(B, dtype=np.float64).T).T
    if A.shape != B.shape:
        raise ValueError(f"shape mismatch: {A.shape} vs {B.shape}")
    na, nb = np.linalg.norm(A, axis=0), np.linalg.norm(B, axis=0)
    if np.any(na == 0) or np.any(nb == 0):
        raise ValueError("cosine of a zero column is undefined")
    return (A * B).sum(axis=0) / (na * nb)


# ---------------------------------------------------------------------------------------------
# k-means on analyzer coordinates (sec. 5, App. A.3)
# ---------------------------------------------------------------------------------------------
def kmeans_on_analyzers(A: np.ndarray, p: int, k: int | None = None, seed: int = 0, n_init: int = 10,
                        sigma: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """k-means (k-means++ seeding, ``n_init`` restarts) on the rows of ``A[:, :p]``.

    The paper's spectral variant uses ``k = 2^p`` (default) and Euclidean distances between the
    unscaled analyzer rows; pass ``sigma`` (the singular values) to weight column k by
    ``sigma_k`` instead (not specified by the paper). Returns ``(labels (n,), centers (k, p))``;
    the same seed gives the same clustering: the fit runs on one thread, since scikit-learn's Lloyd
    iterations sum in per-thread chunks and another thread count can end in another local optimum.

    The k-means variant of Paper B, Sec. 5.1 and App. A.3 (Figs. 5, 20, 21).
    """
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    A = _analyzers(A)
    if not 1 <= p <= A.shape[1]:
        raise ValueError(f"p must be in 1..{A.shape[1]} (number of concepts), got {p}")
    k = 2**p if k is None else k
    if not 1 <= k <= A.shape[0]:
        raise ValueError(f"k must be in 1..{A.shape[0]} (number of items), got {k}")
    X = A[:, :p]
    if sigma is not None:
        s = np.asarray(sigma, dtype=np.float64)
        if s.ndim != 1 or s.size < p:
            raise ValueError(f"sigma must hold at least p={p} singular values, got shape {s.shape}")
        X = X * s[:p]
    with threadpool_limits(1):
        km = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed).fit(X)
    return km.labels_.astype(np.intp), km.cluster_centers_


# ---------------------------------------------------------------------------------------------
# concepts of a pretrained LM (App. F.2) and the word/context orthant agreement
# ---------------------------------------------------------------------------------------------
class DecoderConcepts(NamedTuple):
    """``W = U diag(sqrt_sigma) R``: word concepts ``U`` (V x r), ``sqrt_sigma`` (r,), ``R`` (r x d).

    Word concepts of a pretrained decoder, Paper B, Sec. 5.1 and App. F.2.
    """

    U: np.ndarray
    sqrt_sigma: np.ndarray
    R: np.ndarray

    @property
    def sigma(self) -> np.ndarray:
        """``sigma_k`` of the paper's notation (squares of the singular values of W)."""
        return self.sqrt_sigma**2


def decoder_concepts(W: np.ndarray, rank_tol: float = 1e-9) -> DecoderConcepts:
    """Thin SVD of the decoder ``W`` (V x d), signs as :func:`ntputils.geometry.svd_factors`.

    Word concepts of a pretrained LM, Paper B, Sec. 5.1, App. F.2 (Figs. 7, 15-17).
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or min(W.shape) == 0:
        raise ValueError(f"W must be a non-empty (V, d) matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W has non-finite entries")
    U, s, Rt = svd_factors(W, rank_tol=rank_tol)
    return DecoderConcepts(U, s, Rt)


def context_concepts(H: np.ndarray, concepts: DecoderConcepts) -> np.ndarray:
    """``V = H^T R^T Sigma^{-1/2}`` (m x r) for last-layer states ``H`` (d x m).

    Context concepts of a pretrained LM, Paper B, Sec. 5.1 (which prints R where its transpose is meant).
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != concepts.R.shape[1]:
        raise ValueError(f"shape mismatch: H {H.shape} must be (d, m) with d = {concepts.R.shape[1]}")
    return (H.T @ concepts.R.T) / concepts.sqrt_sigma


class OrthantAgreement(NamedTuple):
    """Agreement of context orthants with the orthants of their observed next tokens (module docstring).

    Tests the word-context cluster pairing of Paper B, Fig. 6 (our measure, beyond the paper).
    """

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

    Tests the word-context cluster pairing of Paper B, Fig. 6 (our measure, beyond the paper).
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


# ---------------------------------------------------------------------------------------------
# orthant clusters with their purity table (Figs. 15-17, 22-25)
# ---------------------------------------------------------------------------------------------
def orthant_purity(A: np.ndarray, p: int, labels, baseline, top: int | None = 40):
    r"""Orthant clusters of the analyzer rows ``A`` on :math:`\mathcal K=\{1,\dots,p\}` and its purity table.

    For every sign configuration :math:`C\in\{\pm1\}^p` (paper B, Definition 1) the cluster
    :math:`\{z:\ \operatorname{sign}(\boldsymbol u_k[z])=c_k\ \forall k\in\mathcal K\}`, cut to its ``top``
    members by typicality on :math:`\mathcal K` (:func:`typicality`, :func:`orthant_clusters`); the table
    (:func:`ntputils.analysis.purity.purity_table`, one row per non-empty cluster, named
    :func:`sign_string` of :math:`C`) gives the best class, its purity and the random-cluster baseline.
    ``labels`` is a :class:`~ntputils.analysis.purity.ClassLabels`, ``baseline`` a
    :class:`~ntputils.analysis.purity.RandomBaseline` built on it.

    Paper B, Definition 1 and Figs. 15-17 (GPT-2), 22-25 (orthant grids of STS / WikiText).
    Returns ``(clusters, table)``: the ``{C: OrthantCluster}`` dict and the ``pandas.DataFrame``.
    """
    from ntputils.analysis.purity import purity_table  # a sibling module: imported where needed

    clusters = orthant_clusters(A, range(p), top=top)
    table = purity_table({sign_string(C): cl.indices for C, cl in clusters.items()}, labels, baseline)
    return clusters, table
