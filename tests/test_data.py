"""Tests of ntputils.data: NTP data as a sparse V x m count matrix (paper B sec. 3.1)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ntputils import data as D

# counts[z, j]: 3 next tokens after context 0 (tokens 0, 0, 2), 4 after context 1 (token 1 four times),
# 1 after context 2 (token 3)
COUNTS = np.array([[2, 0, 0],
                   [0, 4, 0],
                   [1, 0, 0],
                   [0, 0, 1]])


@pytest.fixture
def small() -> D.NTPData:
    return D.from_counts(COUNTS, vocab=["a", "b", "c", "d"])


# ---- derived quantities ------------------------------------------------------------------------
def test_sizes_and_pi(small):
    assert (small.V, small.m, small.n) == (4, 3, 8)
    np.testing.assert_allclose(small.pi, [3 / 8, 4 / 8, 1 / 8])
    np.testing.assert_array_equal(small.support_sizes, [2, 1, 1])


def test_P_columns_are_distributions(small):
    P = small.P
    assert sp.issparse(P)
    np.testing.assert_allclose(np.asarray(P.sum(axis=0)).ravel(), 1.0, atol=1e-15)
    np.testing.assert_allclose(P.toarray()[:, 0], [2 / 3, 0, 1 / 3, 0])


def test_P_columns_sum_to_one_random():
    rng = np.random.default_rng(3)
    C = rng.integers(0, 4, size=(9, 20)) * (rng.random((9, 20)) < 0.4)
    C[0] += 1  # no empty column
    P = D.from_counts(C).P.toarray()
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-14)
    np.testing.assert_allclose(P, C / C.sum(axis=0), atol=1e-15)


def test_support_matrix(small):
    S = small.S
    assert sp.issparse(S)
    np.testing.assert_array_equal(S.toarray(), (COUNTS > 0).astype(int))


def test_support_matrix_large_counts_stay_one():
    # counts that are multiples of 256 must not wrap to 0 in the int8 support matrix
    C = np.array([[256, 0], [1, 512]])
    np.testing.assert_array_equal(D.from_counts(C).S.toarray(), [[1, 0], [1, 1]])


def test_entropy_hand_computed(small):
    # H = -sum_j pi_j sum_z p log p; contexts 1 and 2 are deterministic (entropy 0)
    h0 = -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3))
    assert small.entropy == pytest.approx(3 / 8 * h0, rel=1e-14)


def test_entropy_zero_for_one_hot():
    d = D.from_counts(np.eye(4, dtype=int) * 3)
    assert d.entropy == 0.0


def test_labels_and_subset(small):
    assert small.token_str(2) == "c"
    assert small.context_str(1) == "b"  # default 1-tuple contexts (j,) labelled by vocab
    sub = small.subset([2, 0])
    np.testing.assert_array_equal(sub.counts.toarray(), COUNTS[:, [2, 0]])
    assert sub.contexts == [(2,), (0,)]
    with pytest.raises(ValueError, match="empty corpus"):
        small.subset([])


def test_from_pairs_counts():
    d = D.from_pairs([(0, 1), (1, 2), (0, 1), (0, 1)], [2, 0, 2, 1], vocab_size=3)
    assert d.contexts == [(0, 1), (1, 2)]  # order of first appearance
    np.testing.assert_array_equal(d.counts.toarray(), [[0, 1], [1, 0], [2, 0]])


# ---- from_sequences ----------------------------------------------------------------------------
SEQS = [[0, 1, 2, 0, 1, 2, 3], [2, 0]]


def test_from_sequences_hand_example_length_1():
    # windows: 0->1, 1->2, 2->0, 0->1, 1->2, 2->3 | 2->0 ; context (2,) is the most frequent (3x)
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=1)
    assert d.contexts == [(2,), (0,), (1,)]
    expected = np.array([[2, 0, 0],    # token 0 after (2,) twice
                         [0, 2, 0],    # token 1 after (0,) twice
                         [0, 0, 2],    # token 2 after (1,) twice
                         [1, 0, 0]])   # token 3 after (2,) once
    np.testing.assert_array_equal(d.counts.toarray(), expected)
    assert d.n == 7


def test_from_sequences_never_crosses_sequence_boundaries():
    # the crossing window would be (3,) -> 2 (end of seq 1, start of seq 2)
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=1)
    assert (3,) not in d.contexts
    # and the 2-token seq contributes only the pair (2,) -> 0, nothing of length 2
    d2 = D.from_sequences(SEQS, vocab_size=4, context_lengths=2)
    assert d2.n == 5 and all(len(c) == 2 for c in d2.contexts)
    assert (3, 2) not in d2.contexts and (2, 3) not in d2.contexts


def test_from_sequences_two_lengths():
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=[1, 2])
    assert d.n == 7 + 5
    col = {c: j for j, c in enumerate(d.contexts)}
    C = d.counts.toarray()
    assert C[2, col[(0, 1)]] == 2          # (0,1)->2 twice
    assert C[0, col[(1, 2)]] == 1 and C[3, col[(1, 2)]] == 1
    assert C[1, col[(2, 0)]] == 1


def test_from_sequences_max_contexts_keeps_most_frequent():
    seqs = [[5, 1, 5, 2, 5, 3, 4, 1, 4, 2, 0, 1]]
    # context counts: (5,) 3x, (1,) 2x, (4,) 2x, (2,) 2x, (3,) 1x, (0,) 1x
    full = D.from_sequences(seqs, vocab_size=6, context_lengths=1)
    assert full.contexts[0] == (5,)
    np.testing.assert_array_equal(full.context_counts, sorted(full.context_counts, reverse=True))
    d = D.from_sequences(seqs, vocab_size=6, context_lengths=1, max_contexts=3)
    assert d.m == 3
    assert d.contexts == [(5,), (1,), (2,)]  # ties (2x) broken by first appearance: 1, 2 before 4
    np.testing.assert_array_equal(d.context_counts, [3, 2, 2])
    # the kept columns are exactly the corresponding columns of the full data
    full_col = {c: j for j, c in enumerate(full.contexts)}
    kept = [full_col[c] for c in d.contexts]
    np.testing.assert_array_equal(d.counts.toarray(), full.counts.toarray()[:, kept])


def test_from_sequences_min_context_count():
    seqs = [[5, 1, 5, 2, 5, 3, 4, 1, 4, 2, 0, 1]]
    d = D.from_sequences(seqs, vocab_size=6, context_lengths=1, min_context_count=2)
    assert set(d.contexts) == {(5,), (1,), (4,), (2,)}


def test_from_sequences_next_vocab_drop():
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=1, next_vocab=[2, 0], oov="drop",
                         vocab=list("abcd"))
    # (0,) only ever precedes 1 (out of vocabulary) -> disappears; (2,)->3 dropped
    assert d.contexts == [(1,), (2,)]
    assert d.V == 2 and d.vocab == ["c", "a"]
    np.testing.assert_array_equal(d.counts.toarray(), [[2, 0], [0, 2]])  # row 0 = token 2, row 1 = token 0
    assert d.context_str(1) == "c"  # contexts keep the original ids, labelled by the full vocab


def test_from_sequences_next_vocab_unk():
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=1, next_vocab=[2, 0], oov="unk",
                         vocab=list("abcd"))
    assert d.vocab == ["c", "a", "<unk>"]
    assert d.contexts == [(2,), (0,), (1,)]
    np.testing.assert_array_equal(d.counts.toarray(), [[0, 0, 2],
                                                       [2, 0, 0],
                                                       [1, 2, 0]])
    assert d.n == 7  # nothing is lost with "unk"


# ---- bad input ----------------------------------------------------------------------------------
def test_bad_counts():
    with pytest.raises(ValueError, match="empty corpus"):
        D.from_counts(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="no next token"):
        D.from_counts(np.array([[1, 0], [2, 0]]))
    with pytest.raises(ValueError, match="nonnegative"):
        D.from_counts(np.array([[1, -1], [2, 3]]))
    with pytest.raises(ValueError, match="integer"):
        D.from_counts(np.array([[1.5, 1.0], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="2-D"):
        D.from_counts(np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="negative"):
        D.from_counts(sp.csc_array(np.array([[1, -2], [2, 3]])))


def test_bad_labels_shape_mismatch():
    with pytest.raises(ValueError, match="shape mismatch.*contexts"):
        D.from_counts(COUNTS, contexts=[(0,), (1,)])
    with pytest.raises(ValueError, match="shape mismatch.*vocab"):
        D.from_counts(COUNTS, vocab=["a", "b"])
    with pytest.raises(ValueError, match="shape mismatch"):
        D.from_pairs([(0,), (1,)], [0], vocab_size=3)


def test_bad_sequences():
    with pytest.raises(ValueError, match="empty corpus"):
        D.from_sequences([], vocab_size=4, context_lengths=1)
    with pytest.raises(ValueError, match="empty corpus"):
        D.from_sequences([[], []], vocab_size=4, context_lengths=1)
    with pytest.raises(ValueError, match="empty corpus"):
        D.from_sequences([[0, 1]], vocab_size=4, context_lengths=2)  # no window has a next token
    with pytest.raises(ValueError, match="oov"):
        D.from_sequences(SEQS, vocab_size=4, context_lengths=1, next_vocab=[0], oov="ignore")
    with pytest.raises(ValueError, match="context_lengths"):
        D.from_sequences(SEQS, vocab_size=4, context_lengths=0)
    with pytest.raises(ValueError, match="token ids"):
        D.from_sequences([[0, 7]], vocab_size=4, context_lengths=1)
    with pytest.raises(ValueError, match="empty corpus"):
        D.from_sequences([[0, 1, 1]], vocab_size=4, context_lengths=1, next_vocab=[3], oov="drop")
    with pytest.raises(ValueError, match="repeated"):
        D.from_sequences(SEQS, vocab_size=4, context_lengths=1, next_vocab=[1, 1])
    with pytest.raises(ValueError, match="context_lengths has repeated"):  # would double-count pairs
        D.from_sequences(SEQS, vocab_size=4, context_lengths=[1, 2, 1])


def test_from_sequences_numpy_integer_length():
    d = D.from_sequences(SEQS, vocab_size=4, context_lengths=np.int64(1))
    assert d.contexts == [(2,), (0,), (1,)]
