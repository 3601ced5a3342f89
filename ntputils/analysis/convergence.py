"""The convergence metrics of paper A Fig. 6, computed from a training
:class:`~ntputils.training.history.History`.

Paper A (Thm. "reg path", Claims P logits / P directional / P proxy) predicts that,
as NTP training drives the cross-entropy to its lower bound ``H``, the logits ``L_k = W_k H_k``
split into

* an in-support part: ``P_F(L_k) -> L^in`` (the soft-label log-odds; Fig. 6c), and
* a diverging part in ``F^perp`` whose direction tends to ``L^mm`` (the nuclear-norm NTP-SVM),

so that the embeddings align with the SVD factors ``W^mm = U Sigma^{1/2}``, ``H^mm = Sigma^{1/2} V^T``
of ``L^mm`` (Fig. 6e) and, approximately, with the proxy ``S~`` (Fig. 6d). For every snapshot k this
module evaluates, vectorized over snapshots,

* ``||P_F(L_k) - L^in||_F``                                            (Fig. 6c),
* ``sim(H_k, S~)``, ``sim(W_k^T, S~^T)``                               (Fig. 6d),
* ``sim(H_k, H^mm)``, ``sim(W_k^T, W^mm^T)``                           (Fig. 6e),
* ``|| L_k/||L_k||_F - L^mm/||L^mm||_F ||_F`` and the same with ``S~`` (normalized distances),

with ``sim(A, B) = SIM(corr(A), corr(B))`` of :mod:`ntputils.analysis.metrics`; the logged curves CE - H,
``||W_k||_F``, ``||H_k||_F`` (Fig. 6a, b) come from the history's scalars. The metrics only need a
History (W, H, L snapshots), so they apply unchanged to NTP-UFM runs (:func:`ntputils.training.ufm.train`)
and to networks (:func:`ntputils.training.loop.train_ntp`, whose H may cover a subset of the contexts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ntputils.analysis.metrics import CHUNK_BYTES, batched_normalized_distance, batched_sim
from ntputils.data.ntp import NTPData
from ntputils.geometry.logits import batched_project_F, centered_support, in_support_logits, mm_embeddings
from ntputils.training.history import History


# ---------------------------------------------------------------------------------------------
# the data-determined targets
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GeometryReference:
    """What the data predicts, for a (sub)set of contexts: ``S``, ``L^in``, ``S~``, ``L^mm`` and its factors.

    Attributes
    ----------
    support: boolean V x m support matrix S (``S[z, j]`` iff ``z`` follows context ``j``).
    L_in: V x m in-support logits ``L^in`` (:func:`ntputils.geometry.in_support_logits`).
    S_tilde: V x m centered support ``S~ = (I - 1 1^T/V) S`` (the proxy of ``L^mm``).
    entropy: the empirical entropy ``H`` of the data.
    L_mm: V x m max-margin logits ``L^mm`` or ``None`` (then the ``*_mm`` metrics are NaN).
    W_mm, H_mm: ``U Sigma^{1/2}`` (V x r) and ``Sigma^{1/2} V^T`` (r x m) of ``L^mm`` (or ``None``).
    columns: the context indices of the full data these columns are (``None`` = all, in order).

    The references of Paper A, Fig. 6: L^in, S~ of Paper B, Eq. (2) and L^mm of Paper A, Eq. (NTP-SVM).
    """

    support: np.ndarray
    L_in: np.ndarray
    S_tilde: np.ndarray
    entropy: float
    L_mm: np.ndarray | None = None
    W_mm: np.ndarray | None = None
    H_mm: np.ndarray | None = None
    columns: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        rank = "none" if self.W_mm is None else self.W_mm.shape[1]
        sub = "" if self.columns is None else f", subset of {self.columns.size} contexts"
        return f"GeometryReference(V={self.V}, m={self.m}, H={self.entropy:.4f}, rank L^mm={rank}{sub})"

    @property
    def V(self) -> int:
        """Vocabulary size (rows)."""
        return self.support.shape[0]

    @property
    def m(self) -> int:
        """Number of contexts (columns) covered."""
        return self.support.shape[1]

    @classmethod
    def from_data(cls, data: NTPData, L_mm: np.ndarray | None = None,
                  rank_tol: float = 1e-6) -> GeometryReference:
        """Targets of ``data``; pass ``L_mm`` (e.g. from :func:`ntputils.geometry.max_margin_cached`) for the
        theory metrics.

        ``W^mm, H^mm`` are the SVD factors of ``L^mm`` with singular values below
        ``rank_tol * sigma_max`` cut (:func:`ntputils.geometry.mm_embeddings`).
        """
        S = data.S.toarray() > 0
        W_mm = H_mm = None
        info: dict = {}
        if L_mm is not None:
            L_mm = np.asarray(L_mm, dtype=np.float64)
            if L_mm.shape != S.shape:
                raise ValueError(f"shape mismatch: L_mm is {L_mm.shape} but the data is V x m = {S.shape}")
            W_mm, H_mm = mm_embeddings(L_mm, rank_tol=rank_tol)
            info["rank_mm"] = W_mm.shape[1]
        return cls(support=S, L_in=in_support_logits(data.P), S_tilde=centered_support(data.S),
                   entropy=data.entropy, L_mm=L_mm, W_mm=W_mm, H_mm=H_mm, info=info)

    def restrict(self, columns: Sequence[int] | np.ndarray | None) -> GeometryReference:
        """The targets of a subset of contexts (``None`` = unchanged).

        ``H^mm`` keeps the selected columns of the full factor (not the factor of the restricted
        ``L^mm``), so ``corr(H^mm)`` of the subset is the corresponding block of the full one; ``W^mm``
        and the word-side targets use all contexts, as the full-data theory does.
        """
        if columns is None:
            return self
        cols = np.asarray(columns, dtype=np.int64)
        if cols.ndim != 1 or cols.size == 0 or cols.min() < 0 or cols.max() >= self.m:
            raise ValueError(f"columns must be a non-empty list of indices in [0, {self.m})")
        return GeometryReference(
            support=self.support[:, cols], L_in=self.L_in[:, cols], S_tilde=self.S_tilde[:, cols],
            entropy=self.entropy, L_mm=None if self.L_mm is None else self.L_mm[:, cols],
            W_mm=self.W_mm, H_mm=None if self.H_mm is None else self.H_mm[:, cols],
            columns=cols if self.columns is None else self.columns[cols], info=dict(self.info, full=self),
        )

    def word_targets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Matrices whose columns are the words: ``S~^T`` (m_full x V) and ``W^mm^T`` (r x V).

        For restricted targets the word proxy uses all contexts of the full data.
        """
        full = self.info.get("full", self)
        return full.S_tilde.T, None if full.W_mm is None else full.W_mm.T


# ---------------------------------------------------------------------------------------------
# the Fig. 6 series
# ---------------------------------------------------------------------------------------------
SNAPSHOT_METRICS = ("proj_error", "sim_H_proxy", "sim_W_proxy", "sim_H_mm", "sim_W_mm", "dist_L_mm",
                    "dist_L_proxy")


@dataclass
class ConvergenceCurves:
    """Paper A Fig. 6 curves of one run.

    ``steps`` index the logged scalars ``ce_minus_H``, ``norm_W``, ``norm_H`` (Frobenius norms);
    ``snap_steps`` index the snapshot metrics (names in :data:`SNAPSHOT_METRICS`):
    ``proj_error = ||P_F(L_k) - L^in||_F``, ``sim_H_proxy = sim(H_k, S~)``,
    ``sim_W_proxy = sim(W_k^T, S~^T)``, ``sim_H_mm = sim(H_k, H^mm)``, ``sim_W_mm = sim(W_k^T, W^mm^T)``,
    ``dist_L_mm`` / ``dist_L_proxy`` = normalized distance of ``L_k`` to ``L^mm`` / ``S~``.
    """

    steps: np.ndarray
    ce_minus_H: np.ndarray
    norm_W: np.ndarray
    norm_H: np.ndarray
    snap_steps: np.ndarray
    proj_error: np.ndarray
    sim_H_proxy: np.ndarray
    sim_W_proxy: np.ndarray
    sim_H_mm: np.ndarray
    sim_W_mm: np.ndarray
    dist_L_mm: np.ndarray
    dist_L_proxy: np.ndarray
    label: str = ""

    @property
    def final(self) -> dict[str, float]:
        """The last value of every curve."""
        names = ("ce_minus_H", "norm_W", "norm_H") + SNAPSHOT_METRICS
        return {k: float(getattr(self, k)[-1]) for k in names}


def _scalar(hist: History, name: str) -> np.ndarray:
    if name not in hist.scalars:
        raise ValueError(f"history has no logged scalar {name!r} (logged: {sorted(hist.scalars)})")
    return np.asarray(hist.scalars[name], dtype=np.float64)


def snapshot_metrics(hist: History, ref: GeometryReference,
                     chunk_bytes: int = CHUNK_BYTES) -> dict[str, np.ndarray]:
    """The metrics of :data:`SNAPSHOT_METRICS` at every snapshot of ``hist`` (arrays of length K).

    When the history's H covers a subset of the contexts (``hist.meta["snapshot_contexts"]`` from
    :func:`ntputils.training.loop.train_ntp`), ``ref`` is restricted to it. Theory metrics are NaN when
    ``ref`` has no ``L^mm``.

    The snapshot panels of Paper A, Fig. 6c-e.
    """
    if not hist.snap_steps:
        raise ValueError("history has no snapshots (W, H, L); train with snapshot_steps")
    cols = hist.meta.get("snapshot_contexts")
    sub = ref.restrict(cols) if cols is not None and ref.columns is None else ref
    if hist.L[0].shape != sub.support.shape or hist.W[0].shape[0] != ref.V:
        raise ValueError(f"shape mismatch: snapshots have L {hist.L[0].shape}, "
                         f"targets are V x m = {sub.support.shape}")
    K = len(hist.snap_steps)
    Ls = np.stack(hist.L)
    words_proxy, words_mm = sub.word_targets()
    WT = [w.T for w in hist.W]
    nan = np.full(K, np.nan)
    out = {
        "proj_error": np.linalg.norm(batched_project_F(Ls, sub.support) - sub.L_in, axis=(1, 2)),
        "sim_H_proxy": batched_sim(hist.H, sub.S_tilde, chunk_bytes=chunk_bytes),
        "sim_W_proxy": batched_sim(WT, words_proxy, chunk_bytes=chunk_bytes),
        "sim_H_mm": nan if sub.H_mm is None else batched_sim(hist.H, sub.H_mm, chunk_bytes=chunk_bytes),
        "sim_W_mm": nan if words_mm is None else batched_sim(WT, words_mm, chunk_bytes=chunk_bytes),
        "dist_L_mm": nan if sub.L_mm is None else batched_normalized_distance(Ls, sub.L_mm),
        "dist_L_proxy": batched_normalized_distance(Ls, sub.S_tilde),
    }
    return out


def convergence_curves(hist: History, ref: GeometryReference, label: str = "",
                chunk_bytes: int = CHUNK_BYTES) -> ConvergenceCurves:
    r"""The curves of Paper A, Fig. 6 from one run: $\mathcal L-\mathcal H$, norms, $\lVert\mathcal
    P_{\mathcal F}(\boldsymbol L_k)-\boldsymbol L^{\rm in}\rVert_F$, and sims to $\widetilde{\boldsymbol S}$
    and to $\boldsymbol H^{\rm mm},\boldsymbol W^{\rm mm}$.

    Logged CE - H and norms plus :func:`snapshot_metrics`.
    """
    snaps = snapshot_metrics(hist, ref, chunk_bytes=chunk_bytes)
    return ConvergenceCurves(
        steps=np.asarray(hist.steps), ce_minus_H=_scalar(hist, "ce_minus_H"), norm_W=_scalar(hist, "norm_W"),
        norm_H=_scalar(hist, "norm_H"), snap_steps=np.asarray(hist.snap_steps), label=label, **snaps,
    )


def residual_ratio(L: np.ndarray, L_in: np.ndarray) -> float:
    r"""$\lVert\boldsymbol L_k-\boldsymbol L^{\rm in}\rVert_F/\lVert\boldsymbol L_k\rVert_F$: the share of the
    logits' norm that is not the in-support part ($\boldsymbol L$ and $\boldsymbol L^{\rm in}$ both V x m).

    Paper A, Sec. 4: the logits split as $\boldsymbol L^{\rm in}$ plus a part in $\mathcal F^\perp$ that
    grows without bound (like $\log k$) along $\boldsymbol L^{\rm mm}$, so the ratio tends to 1 (the
    authors' transformer log: 0.9997). Explained in a05 (NTP-UFM) and a06 (transformer).
    """
    L, L_in = np.asarray(L, dtype=np.float64), np.asarray(L_in, dtype=np.float64)
    if L.shape != L_in.shape:
        raise ValueError(f"shape mismatch: L is {L.shape}, L^in is {L_in.shape}")
    norm = np.linalg.norm(L)
    if not norm > 0:
        raise ValueError("L is zero: the residual ratio is undefined")
    return float(np.linalg.norm(L - L_in) / norm)


# ---------------------------------------------------------------------------------------------
# orderings for heatmaps
# ---------------------------------------------------------------------------------------------
def support_group_order(support: np.ndarray | sp.sparray | sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """Order contexts so that those with identical supports are adjacent (subspace-collapse blocks).

    Groups appear in the order of their first context; contexts keep their order inside a group.
    Returns ``(order, group)``: the permutation of ``range(m)`` and the group id of each context in
    the new order (0, 0, 1, 1, 1, 2, ...).

    Makes the subspace-collapse blocks of Paper A, Prop. 1 visible in the heatmaps of Paper A, Figs. 1 and 4.
    """
    S = (support.toarray() if sp.issparse(support) else np.asarray(support)) > 0
    if S.ndim != 2 or S.shape[1] == 0:
        raise ValueError(f"support must be a non-empty V x m matrix, got shape {S.shape}")
    _, first, inverse = np.unique(S.T, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    rank_of_group = np.empty_like(first)
    rank_of_group[np.argsort(first, kind="stable")] = np.arange(first.size)
    group = rank_of_group[inverse]
    order = np.argsort(group, kind="stable")
    return order, group[order]


def support_group_labels(support: np.ndarray | sp.sparray | sp.spmatrix) -> np.ndarray:
    r"""Per-context support-group label, in the original context order: the inverse of
    :func:`support_group_order`.

    Contexts :math:`j, j'` get the same label iff their supports agree,
    :math:`\mathcal S_j=\mathcal S_{j'}` (columns of :math:`\boldsymbol S`); labels number the groups by
    their first context. These are the blocks of
    subspace collapse (Paper A, Theorem 2 / Fig. 5: contexts with equal supports get collinear
    :math:`\boldsymbol h_j^{\rm mm}` and identical :math:`\boldsymbol L^{\rm mm}` columns).
    With ``order, group = support_group_order(S)``: ``labels[order] = group``.
    """
    order, group = support_group_order(support)
    labels = np.empty(group.size, dtype=np.int64)
    labels[order] = group
    return labels


def word_order(support: np.ndarray | sp.sparray | sp.spmatrix,
               context_order: np.ndarray | None = None) -> np.ndarray:
    """Order words by the first (ordered) context whose support holds them, ties by word id.

    With ``context_order`` from :func:`support_group_order`, words that share supports become
    adjacent, so ``corr(W^T)`` shows the same blocks as ``corr(H)``.

    Row order of the heatmaps of Paper A, Figs. 1 and 4.
    """
    S = (support.toarray() if sp.issparse(support) else np.asarray(support)) > 0
    cols = np.arange(S.shape[1]) if context_order is None else np.asarray(context_order)
    Sp = S[:, cols]
    first = np.where(Sp.any(axis=1), Sp.argmax(axis=1), Sp.shape[1])
    return np.lexsort((np.arange(S.shape[0]), first))
