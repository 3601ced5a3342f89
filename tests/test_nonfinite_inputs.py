"""A diverged run's matrix (NaN or inf) fails the SVD-based and distance functions with an error that names
the function and the argument, not numpy's bare ``LinAlgError`` and not a silent NaN or a finite number."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ntputils.analysis.dynamics import singular_value_curves
from ntputils.analysis.metrics import batched_normalized_distance, gram_distance, normalized_distance
from ntputils.analysis.subspaces import principal_cosines, subspace_overlap
from ntputils.geometry.logits import margin_violation, mm_embeddings, nuclear_norm, svd_factors
from ntputils.geometry.spectral import centered_operator, centered_topk_svd

RNG = np.random.default_rng(0)
A = RNG.standard_normal((5, 6))
S = np.eye(5, 6)
Q = np.linalg.qr(RNG.standard_normal((5, 2)))[0]


def spoiled(M: np.ndarray, value: float) -> np.ndarray:
    out = np.array(M, dtype=np.float64)
    out.flat[out.size // 2] = value
    return out


CASES = {
    "nuclear_norm": (lambda X: nuclear_norm(X), A, "nuclear_norm"),
    "svd_factors": (lambda X: svd_factors(X), A, "svd_factors"),
    "mm_embeddings": (lambda X: mm_embeddings(X), A, "svd_factors"),
    "singular_value_curves": (lambda X: singular_value_curves([A, X]), A, "singular_value_curves"),
    "principal_cosines": (lambda X: principal_cosines(X, Q), Q, "principal_cosines: the basis A"),
    "principal_cosines (B)": (lambda X: principal_cosines(Q, X), Q, "principal_cosines: the basis B"),
    "subspace_overlap": (lambda X: subspace_overlap(Q, X, [1]), Q, "subspace_overlap: the basis B"),
    "centered_topk_svd": (lambda X: centered_topk_svd(X, 2), A, "centered_topk_svd: S"),
    "centered_topk_svd (sparse)": (lambda X: centered_topk_svd(sp.csc_array(X), 2), A,
                                   "centered_topk_svd: S"),
    "centered_operator": (lambda X: centered_operator(X), A, "centered_operator: S"),
    "normalized_distance": (lambda X: normalized_distance(A, X), A, "normalized_distance: B"),
    "gram_distance": (lambda X: gram_distance(X, A), A, "normalized_distance: A"),
    "batched_normalized_distance": (lambda X: batched_normalized_distance(np.stack([A, X]), A), A,
                                    "the stack"),
    "margin_violation": (lambda X: margin_violation(X, S), A, "margin_violation: L"),
}


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", sorted(CASES))
def test_non_finite_input_is_a_named_value_error(name, value):
    func, clean, where = CASES[name]
    func(clean)  # the clean input works
    with pytest.raises(ValueError, match=where) as err:
        func(spoiled(clean, value))
    assert not isinstance(err.value, np.linalg.LinAlgError)
