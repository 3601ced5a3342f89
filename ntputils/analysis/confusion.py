"""Confusion of classes during training: which classes a network tells apart, and when (paper B sec. 4.4,
Figs. 3 and 9, App. A.4).

Paper B sec. 4.4 reads the order in which concepts are learned from confusion matrices of a network
during training: on the organism data (Fig. 3) the classes are the *support sets* of the contexts
("Animals" = {dog, ..., shark}, "Mammals", ...), and on imbalanced one-hot data (Fig. 9) the classes
are the labels. This module maps predictions to classes and counts them; the learning times read from
these matrices, and their prediction ``T_c = 1/sigma_{depth(c)}`` from the SVD of S~, are in
:mod:`ntputils.analysis.dynamics` (:func:`~ntputils.analysis.dynamics.class_learning_times`).

Support-set classes (Fig. 3). A context ``j`` of class ``c`` has the target ``u_c`` = uniform on the
support ``S_c`` (every pair of the organism table occurs once). The paper does not say how a
predicted distribution ``p_j = softmax(l_j)`` maps to a class. We use the **nearest target**

    pred(j) = argmin_c ||p_j - u_c||_1                          (total-variation distance, ties -> lowest c),

which returns c exactly when the model has learned ``p_j = u_c``. It returns *some* class for every
distribution, also one far from every target: at initialization ``p_j`` is near uniform, whose nearest
targets are the largest supports (Animals, Plants), so any small tilt along concept 1 makes the broad
classes "learned" at once, whatever the rate of learning (issue #44: logit paths with the concept
hierarchy kept, removed or inverted all learn Animals and Plants at the first step). The **near-target**
rule (``rule="near"``) predicts c only when ``p_j`` is within the radius of its target,

    pred(j) = c   if ||p_j - u_c||_1 < r_c,   r_c = 1/2 min_{c' != c} ||u_c - u_c'||_1   (target_radii),
    pred(j) = k   ("near no target") otherwise;

the balls are disjoint (triangle inequality), so a prediction is unique and always the nearest target,
and a class is predicted only once its distribution has come close to its own target. The alternative rule
``argmax_c sum_{z in S_c} p_j[z]`` ("largest total probability", ``rule="total"``) cannot tell nested
classes apart: with Mammals ⊂ Animals the total over Animals is never smaller than over Mammals, so
no context is ever predicted as a subclass (tested).

Learned classes. With confusion matrices ``C_t`` (rows true, columns predicted; counted by
:func:`confusion_matrix`, the one counter of the package, shared with the training loop) at recorded
steps ``t``, class ``c`` is *learned at t* when its recall ``C_t[c, c] / sum_b C_t[c, b] >= threshold``
and no context of a class *disjoint* from c (supports that do not intersect) is predicted as c. The
second condition discards the trivial "everything is predicted as c" at initialization, while a
subclass context predicted as its superclass (coarse but not wrong) does not count against the
superclass. A class stays learned from the first recorded step of :func:`first_step_holding`.

One-hot imbalance (Fig. 9, App. A.4). For groups of classes (majorities, minorities) the three tiers of
STEP imbalance are measured on the predicted probabilities: :func:`within_group_probability` (is the
right class preferred inside its group: tiers 1 and 3) and :func:`group_probability` (mass on the right
group: tier 2); :func:`confusion_milestones` finds the steps where the argmax predictions separate the
majorities, stop confusing majorities with minorities, and get everything right.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ntputils.training.loop import confusion_matrix

__all__ = [
    "RULES",
    "confusion_matrix",
    "confusion_milestones",
    "disjoint_classes",
    "first_step_holding",
    "group_probability",
    "learned_classes",
    "predict_support_class",
    "softmax_columns",
    "spearman",
    "support_masks",
    "target_radii",
    "within_group_probability",
]

RULES = ("nearest", "total", "near")


# ---------------------------------------------------------------------------------------------
# support-set classes
# ---------------------------------------------------------------------------------------------
def support_masks(supports: Sequence[Sequence[int]], V: int) -> np.ndarray:
    """0/1 matrix ``(k, V)``: row c is the indicator ``1_{S_c}`` of the support of class c (word indices in
    [0, V)); paper B sec. 4.4, Fig. 3.
    """
    if V < 1:
        raise ValueError(f"V must be >= 1, got {V}")
    if len(supports) == 0:
        raise ValueError("no classes: supports is empty")
    masks = np.zeros((len(supports), V))
    for c, members in enumerate(supports):
        idx = np.asarray(list(members), dtype=np.intp)
        if idx.size == 0:
            raise ValueError(f"class {c} has an empty support")
        if idx.min() < 0 or idx.max() >= V:
            raise ValueError(f"class {c}: word index out of range for V={V}")
        masks[c, idx] = 1.0
    return masks


def softmax_columns(L: np.ndarray) -> np.ndarray:
    """Column-wise softmax of logits ``L`` (``(..., V, m)``): ``P[..., z, j] = softmax(l_j)_z`` (the
    next-token distributions of paper B eq. 3).
    """
    L = np.asarray(L, dtype=np.float64)
    if L.ndim < 2:
        raise ValueError(f"logits must be (V, m) or (T, V, m), got shape {L.shape}")
    E = np.exp(L - L.max(axis=-2, keepdims=True))
    return E / E.sum(axis=-2, keepdims=True)


def target_radii(masks: np.ndarray) -> np.ndarray:
    """``r_c = 1/2 min_{c' != c} ||u_c - u_c'||_1``, ``u_c`` uniform on the support ``S_c`` (rows of
    ``masks``, ``(k, V)``, k >= 2): the radius of the near-target rule (module docstring; paper B Fig. 3).
    Distinct supports give ``r_c > 0``; the balls ``||p - u_c||_1 < r_c`` do not intersect.
    """
    masks = np.asarray(masks, dtype=np.float64)
    if masks.ndim != 2 or masks.shape[0] < 2:
        raise ValueError(f"target_radii needs at least two classes (k, V), got shape {masks.shape}")
    targets = masks / masks.sum(axis=1, keepdims=True)
    sep = np.abs(targets[:, None, :] - targets[None, :, :]).sum(axis=-1)
    np.fill_diagonal(sep, np.inf)
    radii = sep.min(axis=1) / 2
    if np.any(radii <= 0):
        raise ValueError("two classes have the same support: their targets coincide")
    return radii


def predict_support_class(P: np.ndarray, masks: np.ndarray, rule: str = "nearest") -> np.ndarray:
    """Predicted class of every context from its next-token distribution (columns of ``P``, ``(..., V, m)``).

    ``"nearest"``: ``argmin_c ||p_j - u_c||_1`` with ``u_c`` uniform on ``S_c`` (module docstring);
    ``"total"``: ``argmax_c sum_{z in S_c} p_j[z]``; ``"near"``: c when ``||p_j - u_c||_1 < r_c``
    (:func:`target_radii`), else ``k`` = "near no target" (count it with ``confusion_matrix(..., k + 1)``).
    Ties go to the lowest class index.
    Returns integer class indices of shape ``(..., m)`` (paper B sec. 4.4, Fig. 3).
    """
    P = np.asarray(P, dtype=np.float64)
    masks = np.asarray(masks, dtype=np.float64)
    if P.ndim < 2 or masks.ndim != 2 or P.shape[-2] != masks.shape[1]:
        raise ValueError(f"shape mismatch: P {P.shape} (..., V, m) and masks {masks.shape} (k, V)")
    if rule == "total":
        return np.argmax(np.einsum("cz,...zj->...jc", masks, P), axis=-1)
    if rule not in ("nearest", "near"):
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    targets = masks / masks.sum(axis=1, keepdims=True)
    Pj = np.moveaxis(P, -2, -1)  # (..., m, V)
    dist = np.abs(Pj[..., None, :] - targets).sum(axis=-1)  # (..., m, k)
    nearest = np.argmin(dist, axis=-1)
    if rule == "nearest":
        return nearest
    inside = np.take_along_axis(dist, nearest[..., None], axis=-1)[..., 0] < target_radii(masks)[nearest]
    return np.where(inside, nearest, masks.shape[0])


def disjoint_classes(masks: np.ndarray, no_target: bool = False) -> np.ndarray:
    """``D[a, b]`` True iff the supports ``S_a`` and ``S_b`` do not intersect (paper B sec. 4.4, Fig. 3).

    ``no_target``: one more class last, "near no target" of the near-target rule
    (:func:`predict_support_class`), disjoint from every class: ``(k + 1, k + 1)``.
    """
    masks = np.asarray(masks, dtype=np.float64)
    D = (masks @ masks.T) == 0
    return np.pad(D, ((0, 1), (0, 1)), constant_values=True) if no_target else D


def learned_classes(C: np.ndarray, disjoint: np.ndarray, threshold: float = 0.9) -> np.ndarray:
    """Which classes are learned in each confusion matrix ``C`` (``(..., k, k)``): recall >= ``threshold``
    and no context of a disjoint class predicted as the class (module docstring; paper B sec. 4.4, Fig. 3).
    Returns booleans ``(..., k)``.
    """
    C = np.asarray(C, dtype=np.float64)
    if C.shape[-2:] != disjoint.shape or C.shape[-1] != C.shape[-2]:
        raise ValueError(f"shape mismatch: confusion {C.shape} vs disjoint {disjoint.shape}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold}")
    rows = C.sum(axis=-1)
    recall = np.divide(np.diagonal(C, axis1=-2, axis2=-1), rows, out=np.zeros(rows.shape), where=rows > 0)
    wrong = (C * disjoint).sum(axis=-2)  # column b: contexts of classes disjoint from b predicted as b
    return (recall >= threshold) & (wrong == 0)


def first_step_holding(steps: Sequence[int], flags: np.ndarray) -> np.ndarray | float:
    """First recorded step from which each flag holds at every later recorded step; ``nan`` if it fails
    at the last step.

    ``flags`` is ``(T, k)`` booleans at the ``T`` increasing ``steps`` (returns ``(k,)`` floats) or ``(T,)``
    (returns one float). The learning times of paper B Figs. 3 and 9 are such steps.
    """
    steps = np.asarray(steps, dtype=np.float64)
    flags = np.asarray(flags, dtype=bool)
    squeeze = flags.ndim == 1
    flags = flags[:, None] if squeeze else flags
    if flags.ndim != 2 or flags.shape[0] != steps.size or steps.size == 0:
        raise ValueError(f"shape mismatch: {steps.size} steps vs flags {flags.shape}")
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    holds_after = np.flip(np.logical_and.accumulate(np.flip(flags, axis=0), axis=0), axis=0)
    first = np.argmax(holds_after, axis=0)
    out = np.where(holds_after[first, np.arange(flags.shape[1])], steps[first], np.nan)
    return float(out[0]) if squeeze else out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties) of two equal-length vectors (measured vs
    predicted learning times, paper B sec. 4.4, Fig. 3).
    """
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 3:
        raise ValueError(f"spearman needs two vectors of equal length >= 3, got {a.shape}, {b.shape}")
    return float(spearmanr(a, b).statistic)


# ---------------------------------------------------------------------------------------------
# one-hot imbalance (Fig. 9)
# ---------------------------------------------------------------------------------------------
def _check_probs(P: np.ndarray, labels: np.ndarray, group: Sequence[int]) -> tuple[np.ndarray, np.ndarray,
                                                                                      np.ndarray, np.ndarray]:
    P = np.asarray(P, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.intp)
    group = np.asarray(list(group), dtype=np.intp)
    if P.ndim != 3 or P.shape[2] != labels.size:
        raise ValueError(f"P must be (T, classes, n) with n = {labels.size} samples, got {P.shape}")
    if group.size == 0 or group.min() < 0 or group.max() >= P.shape[1]:
        raise ValueError(f"group must be non-empty class indices in [0, {P.shape[1]})")
    members = np.flatnonzero(np.isin(labels, group))
    if members.size == 0:
        raise ValueError(f"no sample has a label in the group {group.tolist()}")
    return P, labels, group, members


def within_group_probability(P: np.ndarray, labels: np.ndarray, group: Sequence[int]) -> np.ndarray:
    """``mean_{j: y_j in G} p_j[y_j] / sum_{c in G} p_j[c]`` at every step (``P``: (T, classes, n)).

    How much the model prefers the right class *inside* the group G: 1/|G| when it cannot tell the
    group's classes apart, 1 when it can (tiers 1 and 3 of STEP imbalance for G = majorities, minorities;
    paper B App. A.4, Fig. 9).
    """
    P, labels, group, members = _check_probs(P, labels, group)
    right = P[:, labels[members], members]
    return (right / P[:, group][:, :, members].sum(axis=1)).mean(axis=1)


def group_probability(P: np.ndarray, labels: np.ndarray, group: Sequence[int]) -> np.ndarray:
    """``mean_{j: y_j in G} sum_{c in G} p_j[c]`` at every step: mass on the right group (tier 2 of STEP
    imbalance; paper B App. A.4, Fig. 9).
    """
    P, labels, group, members = _check_probs(P, labels, group)
    return P[:, group][:, :, members].sum(axis=1).mean(axis=1)


def confusion_milestones(confusions: np.ndarray, steps: Sequence[int], majority: Sequence[int],
                         minority: Sequence[int]) -> dict[str, float]:
    """Steps (``nan`` = never) from which, to the end of training,

    * ``"majorities"``: every majority sample is classified correctly;
    * ``"majority-minority"``: no sample is confused between a majority and a minority class;
    * ``"all"``: every sample is classified correctly (minorities separated as well).

    Paper B App. A.4, Fig. 9.
    """
    C = np.asarray(confusions)
    maj, mino = np.asarray(list(majority), dtype=np.intp), np.asarray(list(minority), dtype=np.intp)
    if C.ndim != 3 or C.shape[1] != C.shape[2]:
        raise ValueError(f"confusions must be (T, k, k), got shape {C.shape}")
    if maj.size == 0 or mino.size == 0 or np.intersect1d(maj, mino).size:
        raise ValueError("majority and minority must be non-empty, disjoint class lists")
    diag = np.diagonal(C, axis1=1, axis2=2)
    majority_right = diag[:, maj].sum(axis=1) == C[:, maj].sum(axis=(1, 2))
    cross = C[:, maj][:, :, mino].sum(axis=(1, 2)) + C[:, mino][:, :, maj].sum(axis=(1, 2))
    all_right = diag.sum(axis=1) == C.sum(axis=(1, 2))
    flags = np.stack([majority_right, cross == 0, all_right], axis=1)
    times = first_step_holding(steps, flags)
    return dict(zip(("majorities", "majority-minority", "all"), times.tolist(), strict=True))
