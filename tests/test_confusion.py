"""Tests of ntputils.analysis.confusion: class mapping, confusion matrices (one counter, shared with the
training loop), learned classes, group probabilities and milestones."""

import numpy as np
import pytest

from ntputils.analysis.confusion import (
    confusion_matrix,
    confusion_milestones,
    disjoint_classes,
    first_step_holding,
    group_probability,
    learned_classes,
    predict_support_class,
    softmax_columns,
    spearman,
    support_masks,
    within_group_probability,
)
from ntputils.training.loop import confusion_matrix as loop_confusion_matrix

# nested toy classes on V = 6 words: A = {0,1,2,3} ⊃ A1 = {0,1}; B = {4,5}
SUPPORTS = [(0, 1, 2, 3), (0, 1), (4, 5)]


def test_one_confusion_counter():
    assert confusion_matrix is loop_confusion_matrix


def test_nearest_rule_recovers_exact_targets_and_total_rule_cannot_predict_subclasses():
    masks = support_masks(SUPPORTS, 6)
    P = (masks / masks.sum(1, keepdims=True)).T  # column c = the target of class c
    assert predict_support_class(P, masks).tolist() == [0, 1, 2]
    # the total probability on A is >= the total on its subset A1, so A1 is never chosen
    assert predict_support_class(P, masks, rule="total").tolist() == [0, 0, 2]
    rng = np.random.default_rng(0)
    P_random = softmax_columns(rng.normal(size=(6, 200)) * 3)
    assert 1 not in predict_support_class(P_random, masks, rule="total")


def test_nearest_rule_ties_go_to_the_first_class_and_batches_over_snapshots():
    masks = support_masks([(0, 1), (2, 3)], 4)
    uniform = np.full((4, 3), 0.25)
    assert predict_support_class(uniform, masks).tolist() == [0, 0, 0]
    stacked = np.stack([uniform, np.eye(4)[:, [0, 2, 3]]])
    assert predict_support_class(stacked, masks).tolist() == [[0, 0, 0], [0, 1, 1]]


def test_softmax_columns_sum_to_one_and_are_shift_invariant():
    L = np.random.default_rng(1).normal(size=(2, 5, 7)) * 50
    P = softmax_columns(L)
    assert np.allclose(P.sum(axis=1), 1)
    assert np.allclose(P, softmax_columns(L + 1000.0))


def test_confusion_matrix_matches_counts_and_batches():
    true = np.array([0, 0, 1, 2, 2, 2])
    pred = np.array([0, 1, 1, 2, 0, 2])
    C = confusion_matrix(true, pred, 3)
    assert C.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    both = confusion_matrix(true, np.stack([pred, true]), 3)
    assert np.array_equal(both[0], C) and np.array_equal(both[1], np.diag([2, 1, 3]))
    with pytest.raises(ValueError, match="class indices"):
        confusion_matrix(true, pred + 1, 3)


def test_learned_needs_recall_and_no_disjoint_false_positives():
    disjoint = disjoint_classes(support_masks(SUPPORTS, 6))
    assert disjoint.tolist() == [[False, False, True], [False, False, True], [True, True, False]]
    collapsed = np.array([[2, 0, 0], [1, 0, 0], [2, 0, 0]])  # everything predicted as A
    assert learned_classes(collapsed, disjoint).tolist() == [False, False, False]
    coarse = np.array([[2, 0, 0], [1, 0, 0], [0, 0, 2]])  # A1 predicted as its superclass A: A counts
    assert learned_classes(coarse, disjoint).tolist() == [True, False, True]


def test_first_step_holding_ignores_flickers():
    steps = [0, 10, 20, 30, 40]
    flags = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [1, 1, 0], [1, 1, 1]], dtype=bool)
    assert first_step_holding(steps, flags).tolist() == [20, 10, 40]
    assert np.isnan(first_step_holding(steps, np.array([1, 1, 1, 1, 0], dtype=bool)))
    with pytest.raises(ValueError, match="increasing"):
        first_step_holding([0, 0, 1, 2, 3], flags)


def test_group_probabilities_and_confusion_milestones():
    labels = np.array([0, 1, 2, 3])
    # step 0: uniform; step 1: majority pair separated, minorities sent to the majorities; step 2: perfect
    P = np.stack([np.full((4, 4), 0.25),
                  np.array([[1, 0, .5, .5], [0, 1, .5, .5], [0, 0, 0, 0], [0, 0, 0, 0]]),
                  np.eye(4)])
    assert within_group_probability(P, labels, [0, 1]).tolist() == [0.5, 1.0, 1.0]
    assert group_probability(P, labels, [2, 3]).tolist() == [0.5, 0.0, 1.0]
    C = confusion_matrix(labels, np.argmax(P, axis=1), 4)
    milestones = confusion_milestones(C, [0, 1, 2], majority=[0, 1], minority=[2, 3])
    assert milestones == {"majorities": 1.0, "majority-minority": 2.0, "all": 2.0}
    with pytest.raises(ValueError, match="disjoint"):
        confusion_milestones(C, [0, 1, 2], majority=[0, 1], minority=[1, 2])
    with pytest.raises(ValueError, match="no sample"):
        group_probability(P[:, :, :2], labels[:2], [2, 3])

def test_confusion_bad_input_and_spearman():
    with pytest.raises(ValueError, match="empty support"):
        support_masks([(0,), ()], 3)
    with pytest.raises(ValueError, match="shape mismatch"):
        predict_support_class(np.ones((5, 2)), support_masks(SUPPORTS, 6))
    assert spearman(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 45])) == pytest.approx(1.0)


def test_confusion_matrix_of_the_training_loop_tensors():
    """The one counter also takes the CPU tensors of the training loop, with the counts (and int64 dtype)
    of the former ``np.bincount(labels * k + preds).reshape(k, k)``."""
    import torch

    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 5, (40,), generator=g)
    preds = torch.randint(0, 5, (40,), generator=g)
    C = confusion_matrix(labels, preds, 5)
    expected = np.bincount(labels.numpy() * 5 + preds.numpy(), minlength=25).reshape(5, 5)
    assert C.dtype == expected.dtype and np.array_equal(C, expected)
    assert C.tolist() == expected.tolist()
    assert confusion_matrix(labels.numpy(), preds.numpy(), 5).tolist() == expected.tolist()


def test_near_rule_predicts_a_class_only_within_its_radius():
    from ntputils.analysis.confusion import target_radii

    masks = support_masks(SUPPORTS, 6)
    targets = masks / masks.sum(1, keepdims=True)
    r = target_radii(masks)
    # A = uniform on 4, A1 = uniform on 2 of them: ||u_A - u_A1||_1 = 1; B is 2 away from both
    assert np.allclose(r, [0.5, 0.5, 1.0])
    assert predict_support_class(targets.T, masks, rule="near").tolist() == [0, 1, 2]
    # the uniform distribution is nearest to A (the largest support) but near no target
    uniform = np.full((6, 1), 1 / 6)
    assert predict_support_class(uniform, masks).tolist() == [0]
    assert predict_support_class(uniform, masks, rule="near").tolist() == [3]
    C = confusion_matrix(np.array([0]), predict_support_class(uniform, masks, rule="near"), 4)
    assert C[0, 3] == 1
    D = disjoint_classes(masks, no_target=True)
    assert D.shape == (4, 4) and D[3].all() and D[:, 3].all() and not D[0, 1]
    with pytest.raises(ValueError, match="at least two"):
        target_radii(masks[:1])
    with pytest.raises(ValueError, match="same support"):
        target_radii(np.vstack([masks, masks[:1]]))
