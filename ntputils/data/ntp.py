"""NTP training data as sparse soft-label classification (paper A sec. 2, paper B sec. 3.1).

A training set of ``n`` (context, next-token) pairs over a vocabulary ``[V]`` with ``m`` distinct
contexts is summarised by the count matrix ``counts`` (V x m, sparse): ``counts[z, j]`` is the
number of times token ``z`` follows context ``j``. Everything else is derived from it:

* ``n = sum_{z,j} counts[z, j]`` and ``pi_j = (1/n) sum_z counts[z, j]`` (empirical context
  probability, paper B eq. 1),
* ``P = [p_1, ..., p_m]`` with ``p_j = counts[:, j] / sum_z counts[z, j]`` (soft labels; columns
  sum to 1),
* ``S[z, j] = 1{P[z, j] > 0}`` (the support matrix; paper B eq. 2),
* ``H = - sum_j pi_j sum_{z in S_j} p_{j,z} log p_{j,z}`` (the empirical entropy, the lower bound
  of the NTP cross-entropy loss, reached only as ||L|| -> infinity unless every support is [V]).

All matrices stay ``scipy.sparse`` so the object scales to V, m in the 10^5 range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

OOV_POLICIES = ("drop", "unk")


@dataclass(frozen=True, eq=False)
class NTPData:
    r"""Counts $n\hat\pi_j\hat p_{j,z}$ as a sparse $V\times m$ matrix, with $\boldsymbol P=[\hat{\boldsymbol
    p}_1,\ldots,\hat{\boldsymbol p}_m]$, $\boldsymbol S$, $\hat\pi$, $n$ and the entropy $\mathcal H$ derived
    from it, Paper B, Sec. 3.1, Eq. (1).

    Sparse NTP training data (counts V x m) with optional token strings.

    Parameters
    ----------
    counts:
        ``scipy.sparse.csc_array`` of shape (V, m) with nonnegative integer entries; every column
        has at least one nonzero (every context has a next token).
    contexts:
        ``m`` tuples of token ids (the distinct contexts, in column order).
    vocab:
        ``V`` strings, the next-token vocabulary (row labels), or ``None``.
    context_vocab:
        strings for the ids used inside ``contexts`` when they index a different vocabulary
        than ``vocab`` (e.g. word-level contexts with a restricted next-token set); ``None`` means
        contexts use ``vocab``.
    """

    counts: sp.csc_array
    contexts: list[tuple[int, ...]]
    vocab: list[str] | None = None
    context_vocab: list[str] | None = None

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def V(self) -> int:
        """Vocabulary size (rows)."""
        return self.counts.shape[0]

    @property
    def m(self) -> int:
        """Number of distinct contexts (columns)."""
        return self.counts.shape[1]

    @property
    def n(self) -> int:
        """Number of (context, next-token) training pairs."""
        return int(self.counts.sum())

    # ---- derived matrices ----------------------------------------------------------------------
    @property
    def context_counts(self) -> np.ndarray:
        """``n pi_j``: occurrences of each context (length m)."""
        return np.asarray(self.counts.sum(axis=0)).ravel()

    @property
    def pi(self) -> np.ndarray:
        """Empirical context probabilities ``pi_j`` (length m, sums to 1)."""
        c = self.context_counts.astype(np.float64)
        return c / c.sum()

    @property
    def P(self) -> sp.csc_array:
        """Soft labels ``P`` (V x m, sparse): column j is the next-token distribution ``p_j``."""
        return sp.csc_array(self.counts.astype(np.float64) @ sp.diags_array(1.0 / self.context_counts))

    @property
    def S(self) -> sp.csc_array:
        """Support matrix ``S`` (V x m, sparse 0/1): ``S[z, j] = 1`` iff ``z`` follows context ``j``."""
        s = self.counts.copy().astype(np.int8)
        s.data[:] = 1
        return sp.csc_array(s)

    @property
    def support_sizes(self) -> np.ndarray:
        """``|S_j|`` for every context (length m)."""
        return np.diff(self.counts.indptr)

    @property
    def entropy(self) -> float:
        """Empirical entropy ``H = -sum_j pi_j sum_z p_{j,z} log p_{j,z}`` (NTP loss lower bound)."""
        P = self.P
        col = np.repeat(np.arange(self.m), np.diff(P.indptr))
        p = P.data
        return float(-np.sum(self.pi[col] * p * np.log(p))) + 0.0  # + 0.0 turns -0.0 into 0.0

    # ---- labels --------------------------------------------------------------------------------
    def token_str(self, z: int) -> str:
        """String of next-token ``z`` (its id if there is no vocabulary)."""
        return self.vocab[z] if self.vocab is not None else str(z)

    def context_str(self, j: int, sep: str = " ") -> str:
        """String of context ``j`` (token strings joined by ``sep``)."""
        words = self.context_vocab if self.context_vocab is not None else self.vocab
        ids = self.contexts[j]
        if words is None:
            return sep.join(str(t) for t in ids)
        return sep.join(words[t] for t in ids)

    def subset(self, columns: Sequence[int] | np.ndarray) -> NTPData:
        """The data restricted to the given contexts (columns), rows unchanged."""
        cols = np.asarray(columns, dtype=np.int64)
        if cols.size == 0:
            raise ValueError("subset: no columns selected (empty corpus)")
        return NTPData(sp.csc_array(self.counts[:, cols]), [self.contexts[j] for j in cols],
                       self.vocab, self.context_vocab)

    def __repr__(self) -> str:
        return f"NTPData(V={self.V}, m={self.m}, n={self.n}, H={self.entropy:.4f})"


def _canonical_nonempty(mat: sp.csc_array, dtype: type, what: str) -> sp.csc_array:
    """``mat`` as canonical CSC of ``dtype`` (explicit zeros dropped, indices sorted); raises
    ``ValueError`` when a column has no nonzero (``|S_j| = 0``: a context without next token),
    worded by the format string ``what`` (fields ``n``: how many, ``first``: the first indices)."""
    mat = sp.csc_array(mat, dtype=dtype)
    mat.eliminate_zeros()
    mat.sort_indices()
    empty = np.flatnonzero(np.diff(mat.indptr) == 0)
    if empty.size:
        raise ValueError(what.format(n=empty.size, first=empty[:5].tolist()))
    return mat


#: largest total count n accepted (float64 holds every integer up to 2**53 exactly; int64 sums stay exact)
MAX_TOTAL_COUNT = 2**53


def _token_ids(values: Any, what: str) -> np.ndarray:
    """``values`` as an int64 array of token ids; raises for non-integer, non-finite, complex or bool ids
    (a float id is never truncated silently)."""
    arr = np.asarray(values)
    if arr.size == 0:
        return arr.astype(np.int64).reshape(arr.shape)
    if arr.dtype == bool or np.iscomplexobj(arr) or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{what} must be integer token ids, got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{what} must be integer token ids, got non-integer values (e.g. "
                             f"{arr[(~np.isfinite(arr)) | (arr != np.round(arr))].ravel()[0]!r})")
        if np.abs(arr).max() >= 2**62:
            raise ValueError(f"{what}: token ids too large")
    return arr.astype(np.int64)


def _validate_counts(counts: sp.sparray | sp.spmatrix | np.ndarray) -> sp.csc_array:
    """Check a count matrix and return it as canonical CSC int64 (explicit zeros dropped, indices sorted).

    ``counts[z, j]`` (V x m) is the number of times token ``z`` follows context ``j`` (paper A Sec. 2;
    paper B Sec. 3.1). Raises ``ValueError`` for a shape that is not 2-D or empty ("empty corpus"),
    non-numeric, negative or non-integer entries, or a context without next token (an empty column,
    found by the same rule as :func:`validate_support`).
    """
    if sp.issparse(counts):
        mat = sp.csc_array(counts)
        values = mat.data
    else:
        arr = np.asarray(counts)
        if arr.ndim != 2:
            raise ValueError(f"counts must be a 2-D (V x m) matrix, got shape {arr.shape}")
        mat = sp.csc_array(arr)
        values = arr
    if mat.shape[0] == 0 or mat.shape[1] == 0:
        raise ValueError(f"empty corpus: counts has shape {mat.shape}")
    if np.iscomplexobj(values):
        raise ValueError("counts must be real: got a complex matrix")
    if not np.issubdtype(np.asarray(values).dtype, np.number):
        raise ValueError("counts must be numeric")
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"counts must be finite: found {int((~np.isfinite(values)).sum())} NaN/inf entries")
    if values.sum() > MAX_TOTAL_COUNT:
        raise ValueError(f"counts too large: the total n = {values.sum():.4g} exceeds 2**53 (counts and the "
                         "statistics derived from them would overflow or lose exactness)")
    if np.any(values < 0):
        raise ValueError("counts must be nonnegative: found negative entries")
    if np.any(values != np.round(values)):
        raise ValueError("counts must be integers: found non-integer entries")
    return _canonical_nonempty(
        mat.astype(np.int64), np.int64,
        "{n} context(s) have no next token (empty columns, first: {first}); "
        "every context needs at least one next-token occurrence",
    )


def validate_support(S: np.ndarray | sp.sparray | sp.spmatrix) -> sp.csc_array:
    """Check a support matrix ``S in {0,1}^{V x m}`` and return it as canonical CSC (int8 ones).

    ``S[z, j] = 1{p_{j,z} > 0}``, i.e. column ``j`` is the indicator of the support set ``S_j`` of
    context ``j`` (paper A Sec. 2; paper B Eq. (2)); the package's one validator of support matrices
    (the NTP-SVM solvers of :mod:`ntputils.geometry` call it). Raises ``ValueError`` naming the
    problem: not 2-D, empty shape, non-finite or non-binary entries, or an empty column (a context
    without next token, for which the NTP-SVM has no constraint that fixes its scale).
    """
    if sp.issparse(S):
        if len(S.shape) != 2:
            raise ValueError(f"support matrix S must be 2-D (V x m), got shape {S.shape}")
        mat = sp.csc_array(S)
        mat.sum_duplicates()
        data = np.asarray(mat.data)
    else:
        arr = np.asarray(S)
        if arr.ndim != 2:
            raise ValueError(f"support matrix S must be 2-D (V x m), got shape {arr.shape}")
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise ValueError(f"support matrix S must be numeric 0/1, got dtype {arr.dtype}")
        mat = sp.csc_array(arr)
        data = np.asarray(mat.data)
    V, m = mat.shape
    if V < 1 or m < 1:
        raise ValueError(f"support matrix S is empty: shape {mat.shape}")
    if data.size and not np.all(np.isfinite(data.astype(np.float64))):
        raise ValueError("support matrix S has non-finite entries (NaN/inf); it must be binary 0/1")
    nonbinary = (data != 0) & (data != 1)
    if np.any(nonbinary):
        bad = data[nonbinary][:3].tolist()
        raise ValueError(
            f"support matrix S must be binary 0/1, found values {bad} "
            "(pass S = (P > 0) for a probability/count matrix)"
        )
    return _canonical_nonempty(
        mat, np.int8,
        "support matrix S has {n} empty column(s) (contexts without a next token), first: {first}",
    )


def from_counts(
    counts: sp.sparray | sp.spmatrix | np.ndarray,
    contexts: Sequence[Sequence[int]] | None = None,
    vocab: Sequence[str] | None = None,
    context_vocab: Sequence[str] | None = None,
) -> NTPData:
    r"""Validated :class:`NTPData` from a $V\times m$ count matrix $[n\hat\pi_j\hat p_{j,z}]_{z,j}$,
    Paper B, Sec. 3.1.

    ``contexts`` defaults to the 1-tuples ``(j,)`` (abstract contexts). Raises ``ValueError`` for an
    empty corpus, non-2-D input, negative or non-integer counts, a context without next token,
    or label lists whose lengths do not match the shape.
    """
    mat = _validate_counts(counts)
    V, m = mat.shape
    ctx = ([(j,) for j in range(m)] if contexts is None
           else [tuple(int(t) for t in _token_ids(list(c), "contexts")) for c in contexts])
    if len(ctx) != m:
        raise ValueError(f"shape mismatch: {len(ctx)} contexts for a counts matrix with m={m} columns")
    if vocab is not None and len(vocab) != V:
        raise ValueError(f"shape mismatch: vocab has {len(vocab)} entries but counts has V={V} rows")
    if context_vocab is not None:
        used = max((t for c in ctx for t in c), default=-1)
        if used >= len(context_vocab):
            raise ValueError(f"shape mismatch: contexts use token id {used} but context_vocab has "
                             f"{len(context_vocab)} entries")
    return NTPData(mat, ctx, list(vocab) if vocab is not None else None,
                   list(context_vocab) if context_vocab is not None else None)


def from_pairs(
    contexts: Sequence[Sequence[int]], next_tokens: Sequence[int], vocab_size: int,
    vocab: Sequence[str] | None = None, context_vocab: Sequence[str] | None = None,
) -> NTPData:
    """Build :class:`NTPData` from ``n`` (context, next-token) pairs.

    Distinct contexts become columns in order of first appearance; repeated pairs add up.

    The training set T_n of Paper B, Sec. 3.1, grouped into distinct contexts.
    """
    if len(contexts) == 0:
        raise ValueError("empty corpus: no (context, next-token) pairs")
    if len(contexts) != len(next_tokens):
        raise ValueError(f"shape mismatch: {len(contexts)} contexts but {len(next_tokens)} next tokens")
    index: dict[tuple[int, ...], int] = {}
    cols = np.fromiter((index.setdefault(tuple(c), len(index)) for c in contexts), dtype=np.int64,
                       count=len(contexts))
    rows = _token_ids(next_tokens, "next_tokens").ravel()
    if rows.min() < 0 or rows.max() >= vocab_size:
        raise ValueError(f"next-token ids must lie in [0, {vocab_size}); "
                         f"got range [{rows.min()}, {rows.max()}]")
    counts = sp.coo_array((np.ones(rows.size, dtype=np.int64), (rows, cols)), shape=(vocab_size, len(index)))
    return from_counts(counts.tocsc(), list(index), vocab, context_vocab)


def from_sequences(
    seqs: Iterable[Sequence[int]],
    vocab_size: int,
    context_lengths: Sequence[int] | int,
    *,
    max_contexts: int | None = None,
    next_vocab: Sequence[int] | None = None,
    oov: str = "drop",
    min_context_count: int = 1,
    vocab: Sequence[str] | None = None,
) -> NTPData:
    r"""Every window $\boldsymbol x_{i:i+T}$ of each length $T$ inside each sequence, paired with its next
    token $x_{i+T}$; the sliding-window contexts of Paper B, Sec. 5.1.

    For each sequence ``x`` and each length ``T`` in ``context_lengths``, every window
    ``x[i:i+T]`` followed by a token ``x[i+T]`` is one (context, next-token) pair; windows never
    cross sequence boundaries.

    Options
    -------
    max_contexts:
        keep only the ``max_contexts`` most frequent contexts (ties broken by first appearance).
        Selection happens *after* the OOV policy, so kept contexts have non-empty supports.
    next_vocab:
        restrict next tokens to these ids; rows of the result are re-indexed to
        ``0..len(next_vocab)-1`` in the given order (contexts keep their original ids, and
        ``vocab`` -- if given -- labels the contexts while the rows get ``vocab[next_vocab]``).
    oov:
        policy for a next token outside ``next_vocab``: ``"drop"`` removes that pair (a context
        left with no in-vocabulary next token disappears); ``"unk"`` maps it to an extra last row
        ``"<unk>"``.
    min_context_count:
        drop contexts seen fewer times than this (after the OOV policy).
    """
    if oov not in OOV_POLICIES:
        raise ValueError(f"unknown oov policy {oov!r}; valid: {OOV_POLICIES}")
    lengths = ([int(context_lengths)] if isinstance(context_lengths, int | np.integer)
               else [int(T) for T in context_lengths])
    if not lengths or min(lengths) < 1:
        raise ValueError(f"context_lengths must be positive integers, got {context_lengths}")
    if len(set(lengths)) != len(lengths):  # a repeated length would count each of its pairs twice
        raise ValueError(f"context_lengths has repeated values: {context_lengths}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int | np.integer) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    arrays = [_token_ids(s, "sequence tokens").ravel() for s in seqs]
    if not arrays or all(a.size == 0 for a in arrays):
        raise ValueError("empty corpus: no token sequences")
    for a in arrays:
        if a.size and (a.min() < 0 or a.max() >= vocab_size):
            raise ValueError(f"token ids must lie in [0, {vocab_size})")

    # windows per length, vectorized with sliding_window_view on each sequence
    ctx_keys: list[np.ndarray] = []
    nxt: list[np.ndarray] = []
    for T in lengths:
        for a in arrays:
            if a.size <= T:
                continue
            win = np.lib.stride_tricks.sliding_window_view(a[:-1], T)
            ctx_keys.append(np.concatenate([np.full((win.shape[0], 1), T), win,
                                            np.full((win.shape[0], max(lengths) - T), -1)], axis=1))
            nxt.append(a[T:])
    if not ctx_keys:
        raise ValueError(f"empty corpus: no sequence is longer than the context lengths {lengths}")
    keys = np.concatenate(ctx_keys)
    targets = np.concatenate(nxt)

    row_labels = list(vocab) if vocab is not None else None
    V_out = vocab_size
    if next_vocab is not None:
        nv = np.asarray(next_vocab, dtype=np.int64)
        if np.unique(nv).size != nv.size:
            raise ValueError("next_vocab has repeated ids")
        remap = np.full(vocab_size, -1, dtype=np.int64)
        remap[nv] = np.arange(nv.size)
        targets = remap[targets]
        V_out = nv.size
        if row_labels is not None:
            row_labels = [row_labels[i] for i in nv]
        if oov == "drop":
            keep = targets >= 0
            keys, targets = keys[keep], targets[keep]
        else:
            targets = np.where(targets >= 0, targets, V_out)
            V_out += 1
            if row_labels is not None:
                row_labels.append("<unk>")
    if targets.size == 0:
        raise ValueError("empty corpus: every next token fell outside next_vocab")

    uniq, first, inverse, ctx_count = np.unique(keys, axis=0, return_index=True, return_inverse=True,
                                                return_counts=True)
    inverse = inverse.ravel()
    keep = ctx_count >= min_context_count
    order = np.lexsort((first, -ctx_count))  # most frequent first, ties by first appearance
    order = order[keep[order]]
    if max_contexts is not None:
        order = order[:max_contexts]
    if order.size == 0:
        raise ValueError("empty corpus: no context survives the filters")
    col_of = np.full(uniq.shape[0], -1, dtype=np.int64)
    col_of[order] = np.arange(order.size)
    cols = col_of[inverse]
    sel = cols >= 0
    counts = sp.coo_array((np.ones(int(sel.sum()), dtype=np.int64), (targets[sel], cols[sel])),
                          shape=(V_out, order.size)).tocsc()
    contexts = [tuple(int(t) for t in row[1:1 + row[0]]) for row in uniq[order]]
    ctx_vocab = list(vocab) if (vocab is not None and next_vocab is not None) else None
    return from_counts(counts, contexts, row_labels, ctx_vocab)
