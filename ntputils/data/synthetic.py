"""Synthetic support matrices: cases with known geometry (paper B App. A.4 / D.1; paper A symmetric
cases) and random supports (uniform or Zipf-like; :func:`random_supports`, :func:`zipf_supports`).

STEP imbalance (paper B A.4): V/2 majority words with R contexts each and V/2 minority words with
one context each, one-hot supports::

    S = [[I_{V/2} (x) 1_R^T, 0], [0, I_{V/2}]]          (V x m, m = (R+1) V / 2)

Closed form of ``S~ = U Sigma V^T`` (rank V-1):

* ``sigma_1..sigma_{V/2-1} = sqrt(R)``, ``sigma_{V/2} = sqrt((R+1)/2)``, the last ``V/2-1`` equal 1
  (the paper prints the last index as sigma_V; the rank is V-1);
* ``U = [[F, -1/sqrt(V) 1, 0], [0, 1/sqrt(V) 1, F]]`` with the DCT-II block
  ``F[i, j] = sqrt(4/V) cos(pi (2i-1) j / V)``, i in [V/2], j in [V/2-1];
* ``V^T`` rows: ``[F^T (x) 1_R^T / sqrt(R), 0]``, ``sqrt(2/((R+1)V)) [-1_{RV/2}^T, 1_{V/2}^T]``,
  ``[0, F^T]``. The paper prints the first block without the ``1/sqrt(R)``; without it V^T V != I.
* Reweighting ``Omega = diag(1/sqrt(R) 1_{RV/2}, 1_{V/2})`` (eq. 12) makes every singular value of
  ``S~ Omega`` equal to 1, so all modes are learned at once (eq. 10).
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp


def _check_step(V: int, R: int) -> None:
    if V < 4 or V % 2:
        raise ValueError(f"STEP imbalance needs an even V >= 4, got V={V}")
    if R < 1:
        raise ValueError(f"imbalance ratio R must be >= 1, got R={R}")


def step_imbalanced_support(V: int, R: int) -> np.ndarray:
    r"""$\boldsymbol S=[\mathbb I_{V/2}\otimes\mathbb 1_R^\top,\boldsymbol 0;\boldsymbol 0,\mathbb I_{V/2}]$,
    the one-hot STEP-imbalanced support, Paper B, Eq. (11), Fig. 13.

    V x (R+1)V/2; majority contexts first.
    """
    _check_step(V, R)
    h = V // 2
    top = np.hstack([np.kron(np.eye(h), np.ones((1, R))), np.zeros((h, h))])
    bottom = np.hstack([np.zeros((h, R * h)), np.eye(h)])
    return np.vstack([top, bottom])


def _dct_block(V: int) -> np.ndarray:
    h = V // 2
    i = np.arange(1, h + 1)[:, None]
    j = np.arange(1, h)[None, :]
    return np.sqrt(4.0 / V) * np.cos(np.pi * (2 * i - 1) * j / V)


def step_closed_form(V: int, R: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""$(\boldsymbol U,\sigma,\boldsymbol V^\top)$ of $\widetilde{\boldsymbol S}$ for STEP imbalance:
    $\sigma=\sqrt R,\sqrt{(R+1)/2},1$ with a DCT-II $\boldsymbol U$, Paper B, Fig. 13 (App. D.1).

    Closed form with the ``1/sqrt(R)`` fix of the first block of ``V^T`` (module docstring).
    """
    _check_step(V, R)
    h = V // 2
    F = _dct_block(V)
    one = np.ones((h, 1))
    U = np.block([[F, -one / np.sqrt(V), np.zeros((h, h - 1))],
                  [np.zeros((h, h - 1)), one / np.sqrt(V), F]])
    sigma = np.r_[np.full(h - 1, np.sqrt(R)), np.sqrt((R + 1) / 2), np.ones(h - 1)]
    c = np.sqrt(2.0 / ((R + 1) * V))
    Vt = np.vstack([
        np.hstack([np.kron(F.T, np.ones((1, R))) / np.sqrt(R), np.zeros((h - 1, h))]),
        np.hstack([-c * np.ones((1, R * h)), c * np.ones((1, h))]),
        np.hstack([np.zeros((h - 1, R * h)), F.T]),
    ])
    return U, sigma, Vt


def step_weights(V: int, R: int) -> np.ndarray:
    r"""$\boldsymbol\Omega=\mathrm{diag}(R^{-1/2}\mathbb 1_{RV/2},\mathbb 1_{V/2})$, Paper B, Eq. (12): the
    diagonal, $1/\sqrt R$ on majority contexts, 1 on minority contexts.
    """
    _check_step(V, R)
    h = V // 2
    return np.r_[np.full(R * h, 1.0 / np.sqrt(R)), np.ones(h)]


def one_hot_balanced_support(V: int, per_class: int) -> np.ndarray:
    """Balanced one-hot supports ``S = I_V (x) 1_k^T`` (paper B A.4): all singular values of S~ are equal.
    """
    if V < 2 or per_class < 1:
        raise ValueError(f"need V >= 2 and per_class >= 1, got V={V}, per_class={per_class}")
    return np.kron(np.eye(V), np.ones((1, per_class)))


def all_subsets_support(V: int, k: int) -> np.ndarray:
    """Supports = all k-subsets of [V] (one context each), a symmetric case where L^mm = S~.

    A symmetric case of Paper B, Sec. 3.2 (footnote 3), where the proxy S~ is exact.
    """
    if not 1 <= k < V:
        raise ValueError(f"need 1 <= k < V, got k={k}, V={V}")
    cols = list(itertools.combinations(range(V), k))
    S = np.zeros((V, len(cols)))
    rows = np.array(cols).ravel()
    S[rows, np.repeat(np.arange(len(cols)), k)] = 1.0
    return S


def random_supports(V: int, m: int, min_size: int = 1, max_size: int = 3, seed: int = 0,
                    zipf_exponent: float | None = None) -> np.ndarray:
    """Random support matrix ``S in {0,1}^{V x m}`` (dense float64), ``|S_j|`` uniform in min_size..max_size.

    Column ``j`` is the indicator of a support set ``S_j`` (paper A Sec. 2; paper B Eq. (2)) of
    ``|S_j|`` tokens drawn without replacement, uniformly, or with Zipf-like probabilities
    ``~ 1/rank^s`` when ``zipf_exponent = s`` is given (Gumbel-top-k sampling). For large sparse Zipf
    supports drawn like real NTP data (support sizes themselves heavy-tailed) see
    :func:`zipf_supports`; the two generators draw different random numbers and are kept apart.
    """
    if not 1 <= min_size <= max_size < V:
        raise ValueError(f"need 1 <= min_size <= max_size < V, got {min_size}, {max_size}, V={V}")
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, max_size + 1, size=m)
    if zipf_exponent is None:
        keys = rng.random((V, m))
    else:
        w = 1.0 / np.arange(1, V + 1) ** zipf_exponent
        # Gumbel-top-k (Efraimidis-Spirakis) sampling without replacement, vectorized over columns
        keys = np.log(w)[:, None] - np.log(-np.log(rng.random((V, m))))
    order = np.argsort(-keys, axis=0)
    ranks = np.empty_like(order)
    ranks[order, np.arange(m)] = np.arange(V)[:, None]
    return (ranks < sizes).astype(np.float64)


def random_ntp_data(V: int, m: int, min_size: int = 1, max_size: int = 3, max_count: int = 4, seed: int = 0,
                    zipf_exponent: float | None = None):
    """Small random NTP data: supports from :func:`random_supports`, counts uniform in ``{1..max_count}``.

    The soft labels are ``p_j = counts[:, j] / sum_z counts[z, j]`` on the random support ``S_j``, as in
    the small sanity-check instances of chapters a02/a03 (V = 8, m = 10, counts 1-4). Returns an
    :class:`ntputils.data.NTPData`.

    Test instances for Paper A, Thm. 1 and Prop. 1.
    """
    from ntputils.data.ntp import from_counts

    if max_count < 1:
        raise ValueError(f"max_count must be >= 1, got {max_count}")
    S = random_supports(V, m, min_size, max_size, seed=seed, zipf_exponent=zipf_exponent)
    rng = np.random.default_rng([seed, 1])
    counts = S * rng.integers(1, max_count + 1, size=S.shape)
    return from_counts(counts.astype(np.int64))


def zipf_supports(
    V: int, m: int, max_support: int = 50, exponent: float = 1.1, seed: int = 0, size_exponent: float = 1.0
) -> sp.csc_array:
    """Random support matrix ``S in {0,1}^{V x m}`` drawn like real NTP data (sparse CSC, int8 ones).

    Token ``z`` (0-based) has frequency ``p_z ∝ (z + 1)^{-exponent}`` (Zipf's law). Context ``j``
    draws a budget ``k_j in {1..max_support}`` with ``P(k) ∝ k^{-size_exponent}`` (most contexts
    are followed by few distinct tokens) and then ``k_j`` tokens from ``p`` *with* replacement; its
    support ``S_j`` (paper A Sec. 2; paper B Eq. (2)) is the set of distinct tokens drawn, so
    frequent tokens appear in many supports and ``1 <= |S_j| <= max_support``. Same seed -> same
    matrix. The large test and benchmark instances of the NTP-SVM and concept solvers; for small
    dense supports with uniform sizes see :func:`random_supports`.
    """
    if V < 1 or m < 1:
        raise ValueError(f"V and m must be >= 1, got V={V}, m={m}")
    if not 1 <= max_support:
        raise ValueError(f"max_support must be >= 1, got {max_support}")
    if exponent < 0 or size_exponent < 0:
        raise ValueError("exponent and size_exponent must be >= 0")
    rng = np.random.default_rng(seed)
    kmax = min(max_support, V)
    size_p = np.arange(1, kmax + 1, dtype=np.float64) ** (-size_exponent)
    sizes = rng.choice(np.arange(1, kmax + 1), size=m, p=size_p / size_p.sum())
    token_p = np.arange(1, V + 1, dtype=np.float64) ** (-exponent)
    token_p /= token_p.sum()
    rows = rng.choice(V, size=int(sizes.sum()), p=token_p)
    cols = np.repeat(np.arange(m), sizes)
    S = sp.csc_array((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(V, m))
    S.sum_duplicates()
    S.data[:] = 1
    return S
