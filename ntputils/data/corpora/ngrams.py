"""Vectorized n-gram contexts: every window of ``T`` consecutive tokens and the token that follows it.

A corpus is a list of token-id sequences concatenated into one array ``tokens`` (length ``N``) with
``seq[i]`` the sequence of position ``i``. The window of length ``T`` starting at ``i`` is the
context ``x = tokens[i:i+T]`` with next token ``z = tokens[i+T]``; it is a training pair only when
``seq[i] == seq[i+T]`` (windows never cross a sequence boundary).

Distinct windows get integer ids by *chaining*: ``id_1[i] = tokens[i]`` and
``id_T[i] = rank of the pair (id_{T-1}[i], tokens[i+T-1])`` among all such pairs, computed with one
``np.unique`` on the packed key ``id_{T-1}[i] * K + tokens[i+T-1]`` (``K`` = token-id bound). The key
stays below ``N * K`` (< 2^63 for any realistic corpus), so the ids are exact -- no hashing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WindowIds:
    """Ids of all windows of one length ``T`` in a concatenated corpus.

    ``ids[i]`` identifies the window starting at position ``i`` (``i < N - T + 1``);
    ``first[k]`` is the first position of the window with id ``k`` (so its tokens are
    ``tokens[first[k]:first[k]+T]``).

    Sliding-window contexts of Paper B, Sec. 5.1.
    """

    length: int
    ids: np.ndarray
    first: np.ndarray


@dataclass(frozen=True)
class Corpus:
    """Token sequences concatenated: ``tokens`` (N,) int64 and ``seq`` (N,) sequence index.

    The corpora of Paper B, Sec. 5.1 (TinyStories, WikiText-2).
    """

    tokens: np.ndarray
    seq: np.ndarray
    bound: int

    @classmethod
    def from_sequences(cls, seqs: Sequence[Sequence[int]] | Sequence[np.ndarray], bound: int | None = None
                       ) -> Corpus:
        """Concatenate sequences; ``bound`` (> every id) defaults to ``max id + 1``."""
        arrays = [np.asarray(s, dtype=np.int64).ravel() for s in seqs]
        arrays = [a for a in arrays if a.size]
        if not arrays:
            raise ValueError("empty corpus: no non-empty token sequence")
        tokens = np.concatenate(arrays)
        if tokens.min() < 0:
            raise ValueError("token ids must be nonnegative")
        top = int(tokens.max()) + 1
        if bound is None:
            bound = top
        elif bound < top:
            raise ValueError(f"bound {bound} is not above the largest token id {top - 1}")
        seq = np.repeat(np.arange(len(arrays), dtype=np.int64), [a.size for a in arrays])
        return cls(tokens, seq, int(bound))

    @property
    def N(self) -> int:
        """Number of tokens."""
        return int(self.tokens.size)

    def window_ids(self, max_length: int) -> list[WindowIds]:
        """Window ids for every length ``1..max_length`` (chained ``np.unique``; see module doc)."""
        if max_length < 1:
            raise ValueError(f"max_length must be positive, got {max_length}")
        out = [WindowIds(1, self.tokens, np.arange(self.bound))]
        ids = self.tokens
        for T in range(2, max_length + 1):
            if self.N < T:
                break
            key = ids[: self.N - T + 1] * self.bound + self.tokens[T - 1:]
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            ids = inverse.ravel().astype(np.int64)
            out.append(WindowIds(T, ids, first.astype(np.int64)))
        return out

    def pairs(self, windows: WindowIds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Training pairs of one length: ``(context ids, next tokens, start positions)``.

        Keeps the windows whose next token exists inside the same sequence.
        """
        T = windows.length
        if self.N <= T:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        start = np.arange(self.N - T, dtype=np.int64)
        valid = self.seq[start] == self.seq[start + T]
        start = start[valid]
        return windows.ids[start], self.tokens[start + T], start


def top_counts(ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most frequent values of ``ids`` (ties: smaller id first) and their counts.

    Frequent-context selection of Paper B, Sec. 5.1.
    """
    if ids.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    counts = np.bincount(ids)
    present = np.flatnonzero(counts)
    order = present[np.lexsort((present, -counts[present]))][:k]
    return order, counts[order]


def pair_counts(cols: np.ndarray, rows: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aggregate (row, col) pairs: distinct ``(rows, cols)`` and how often each occurs.

    The counts behind the soft labels of Paper B, Sec. 3.1.
    """
    key = cols.astype(np.int64) * n_rows + rows.astype(np.int64)
    uniq, counts = np.unique(key, return_counts=True)
    return uniq % n_rows, uniq // n_rows, counts
