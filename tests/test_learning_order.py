"""Tests of ntputils.analysis.learning_order: class mapping, confusion matrices, learning times, concept
depth."""

import numpy as np
import pytest

from ntputils.analysis.learning_order import (
    class_confusion,
    concept_depth,
    concept_energy,
    confusion_milestones,
    disjoint_classes,
    first_step_holding,
    group_probability,
    learned_classes,
    learning_times,
    predict_support_class,
    predicted_learning_times,
    softmax_columns,
    spearman,
    support_masks,
    within_group_probability,
)
from ntputils.data.corpora.organism import organism, organism_attribute_classes, organism_classes
from ntputils.geometry import centered_support, svd_factors

# nested toy classes on V = 6 words: A = {0,1,2,3} ⊃ A1 = {0,1}; B = {4,5}
SUPPORTS = [(0, 1, 2, 3), (0, 1), (4, 5)]


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


def test_class_confusion_matches_counts_and_batches():
    true = np.array([0, 0, 1, 2, 2, 2])
    pred = np.array([0, 1, 1, 2, 0, 2])
    C = class_confusion(true, pred, 3)
    assert C.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 2]]
    both = class_confusion(true, np.stack([pred, true]), 3)
    assert np.array_equal(both[0], C) and np.array_equal(both[1], np.diag([2, 1, 3]))
    with pytest.raises(ValueError, match="class indices"):
        class_confusion(true, pred + 1, 3)


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


def test_learning_times_from_a_coarse_to_fine_sequence():
    disjoint = disjoint_classes(support_masks(SUPPORTS, 6))
    true = np.array([0, 0, 1, 2])
    preds = np.array([[0, 0, 0, 0], [0, 0, 0, 2], [0, 0, 1, 2]])
    times = learning_times(class_confusion(true, preds, 3), [0, 5, 9], disjoint)
    assert times.tolist() == [5, 9, 5]


def test_concept_energy_of_the_organism_classes():
    data = organism()
    U, sigma, _ = svd_factors(centered_support(data.S.toarray()))
    classes = organism_classes()
    masks = support_masks([[data.vocab.index(w) for w in members] for members in classes.values()], data.V)
    energy = concept_energy(masks, U)
    assert np.allclose(energy.sum(axis=1), 1)  # every class target lies in span(U)
    depth = concept_depth(energy, 0.9)
    names = list(classes)
    assert depth[names.index("Animals")] == depth[names.index("Plants")] == 1  # the top concept
    assert depth.min() == 1 and np.all(depth[[names.index(c) for c in ("Fish", "Birds", "Flowers")]] >= 5)
    T = predicted_learning_times(sigma, depth)
    assert np.argmin(T) in (names.index("Animals"), names.index("Plants"))
    assert set(organism_attribute_classes()) == set(names)


def test_concept_depth_and_bad_input():
    energy = np.array([[0.95, 0.05, 0.0], [0.5, 0.3, 0.2], [0.1, 0.1, 0.1]])
    assert concept_depth(energy, 0.9).tolist() == [1, 3, 3]
    with pytest.raises(ValueError, match="level"):
        concept_depth(energy, 0.0)
    with pytest.raises(ValueError, match="depth"):
        predicted_learning_times(np.array([2.0, 1.0]), np.array([3]))
    with pytest.raises(ValueError, match="empty support"):
        support_masks([(0,), ()], 3)
    with pytest.raises(ValueError, match="shape mismatch"):
        predict_support_class(np.ones((5, 2)), support_masks(SUPPORTS, 6))
    assert spearman(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 45])) == pytest.approx(1.0)


def test_group_probabilities_and_confusion_milestones():
    labels = np.array([0, 1, 2, 3])
    # step 0: uniform; step 1: majority pair separated, minorities sent to the majorities; step 2: perfect
    P = np.stack([np.full((4, 4), 0.25),
                  np.array([[1, 0, .5, .5], [0, 1, .5, .5], [0, 0, 0, 0], [0, 0, 0, 0]]),
                  np.eye(4)])
    assert within_group_probability(P, labels, [0, 1]).tolist() == [0.5, 1.0, 1.0]
    assert group_probability(P, labels, [2, 3]).tolist() == [0.5, 0.0, 1.0]
    C = class_confusion(labels, np.argmax(P, axis=1), 4)
    milestones = confusion_milestones(C, [0, 1, 2], majority=[0, 1], minority=[2, 3])
    assert milestones == {"majorities": 1.0, "majority-minority": 2.0, "all": 2.0}
    with pytest.raises(ValueError, match="disjoint"):
        confusion_milestones(C, [0, 1, 2], majority=[0, 1], minority=[1, 2])
    with pytest.raises(ValueError, match="no sample"):
        group_probability(P[:, :, :2], labels[:2], [2, 3])
