"""Tests for ntputils.analysis.purity: class labels, purity vs random clusters, block density."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ntputils.analysis.concepts import sign_string
from ntputils.analysis.purity import (
    NO_SPACE,
    ClassLabels,
    RandomBaseline,
    best_cluster_for_class,
    block_support_density,
    class_purities,
    cluster_purity,
    lexical_labels,
    partition_purity,
    purity_table,
    random_partition_purity,
    summarize_purity,
)


@pytest.fixture(scope="module")
def big_labels() -> ClassLabels:
    """200 words, class "a" = first 20 (base rate 0.1), class "b" = words 100..199 (0.5)."""
    words = [f"w{i}" for i in range(200)]
    return ClassLabels.from_mapping(words, {"a": set(words[:20]), "b": set(words[100:])})


# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------
def test_from_mapping_builds_membership_and_base_rates(labels):
    assert labels.classes == ("extra", "noun", "past", "verb")
    assert labels.member.shape == (10, 4)
    np.testing.assert_allclose(labels.base_rate, [0.0, 0.4, 0.4, 0.6])
    assert labels.coverage == pytest.approx(0.9)  # "ing" has no class
    assert labels.of(4) == ["noun", "verb"]
    with pytest.raises(ValueError, match="unknown class 'adj'"):
        labels.index("adj")
    reduced = labels.without("verb", "extra")
    assert reduced.classes == ("noun", "past")
    np.testing.assert_array_equal(reduced.member, labels.member[:, [1, 2]])
    with pytest.raises(ValueError, match="unknown class"):
        labels.without("adj")
    with pytest.raises(ValueError, match="every class"):
        labels.without(*labels.classes)


def test_class_labels_validates_shape():
    with pytest.raises(ValueError, match="member must be"):
        ClassLabels(("a", "b"), ("x",), np.zeros((3, 1), dtype=bool))
    with pytest.raises(ValueError, match="empty vocabulary"):
        ClassLabels.from_mapping([], {"x": set()})


def test_lexical_labels_adds_tokenizer_class_with_custom_classifier():
    def toy(word: str) -> set[str]:
        return {"noun"} if word.lstrip("#") in {"dog", "The"} else set()

    lab = lexical_labels(["#dog", "ing", "The", "#xyz", ","], classify=toy)
    no_space = {lab.words[i] for i in np.flatnonzero(lab.member[:, lab.index(NO_SPACE)])}
    assert no_space == {"ing", "The"}  # "#..." starts a word, "," has no letter
    assert lab.of(2) == sorted(["noun", NO_SPACE])  # token classes add to the lexical ones
    lab2 = lexical_labels(["#dog", "ing"], classify=toy, tokenizer_class=False)
    assert NO_SPACE not in lab2.classes


def test_lexical_labels_default_lexicon():
    lab = lexical_labels(["#said", "#January", "#dog", "#42"])
    assert "past-tense verb" in lab.of(0)
    assert "month" in lab.of(1)
    assert "noun" in lab.of(2)
    assert "number" in lab.of(3)


# ---------------------------------------------------------------------------------------------
# purity
# ---------------------------------------------------------------------------------------------
def test_purity_counts_unlabelled_words_and_prefers_specific_class(labels):
    # cluster: 3 past-tense verbs + the unlabelled "ing"
    pur = cluster_purity([0, 1, 2, 9], labels)
    assert pur.best_class == "past"  # excess 0.75 - 0.4 beats "verb" 0.75 - 0.6
    assert pur.purity == pytest.approx(0.75)
    assert pur.base_rate == pytest.approx(0.4)
    assert pur.excess == pytest.approx(0.35)
    assert (pur.size, pur.n_labelled) == (4, 3)
    np.testing.assert_allclose(class_purities([0, 1, 2, 9], labels), [0.0, 0.0, 0.75, 0.75])
    forced = cluster_purity([0, 1, 2, 9], labels, cls="verb")
    assert forced.best_class == "verb" and forced.excess == pytest.approx(0.15)


def test_purity_rejects_bad_clusters(labels):
    with pytest.raises(ValueError, match="empty cluster"):
        class_purities([], labels)
    with pytest.raises(ValueError, match="distinct"):
        cluster_purity([1, 1], labels)
    with pytest.raises(ValueError, match="out of range"):
        cluster_purity([10], labels)
    with pytest.raises(ValueError, match="integer"):
        cluster_purity(np.array([0.5]), labels)


def test_random_baseline_is_seeded_and_order_independent(big_labels):
    a = RandomBaseline(big_labels, n_draws=200, seed=3)
    b = RandomBaseline(big_labels, n_draws=200, seed=3)
    a.purities(5)
    np.testing.assert_array_equal(a.purities(10), b.purities(10))  # b never drew size 5
    c = RandomBaseline(big_labels, n_draws=200, seed=4)
    assert not np.array_equal(a.purities(10), c.purities(10))


def test_random_baseline_statistics(big_labels):
    base = RandomBaseline(big_labels, n_draws=3000, seed=0)
    pur = base.purities(20)
    assert pur.shape == (3000, 2)
    np.testing.assert_allclose(pur * 20, np.round(pur * 20))  # subsets of 20 words: multiples of 1/20
    np.testing.assert_allclose(pur.mean(axis=0), big_labels.base_rate, atol=0.01)  # hypergeometric mean
    excess = pur - big_labels.base_rate
    np.testing.assert_allclose(base.best_excess(20), excess.max(axis=1))
    best = base.best_purity(20)
    assert np.all((best == pur[:, 0]) | (best == pur[:, 1]))
    mean, p95 = base.class_quantiles(20, "a")
    assert mean == pytest.approx(0.1, abs=0.01) and 0.15 <= p95 <= 0.3
    # the full vocabulary as one "random cluster" has purity = base rate exactly
    np.testing.assert_allclose(base.purities(200), np.tile(big_labels.base_rate, (3000, 1)))


def test_random_baseline_rejects_bad_input(big_labels):
    with pytest.raises(ValueError, match="n_draws"):
        RandomBaseline(big_labels, n_draws=10)
    with pytest.raises(ValueError, match="size"):
        RandomBaseline(big_labels, n_draws=50).purities(0)
    with pytest.raises(ValueError, match="size"):
        RandomBaseline(big_labels, n_draws=50).purities(201)


def test_beats_random_has_the_nominal_false_positive_rate(big_labels):
    base = RandomBaseline(big_labels, n_draws=2000, seed=0)
    rng = np.random.default_rng(123)
    hits = [base.beats(cluster_purity(rng.choice(200, 15, replace=False), big_labels)) for _ in range(400)]
    assert np.mean(hits) < 0.1  # ~5% expected for random clusters
    assert base.beats(cluster_purity(np.arange(15), big_labels))  # all in class "a"


def test_purity_table_and_summary(big_labels):
    base = RandomBaseline(big_labels, n_draws=500, seed=0)
    rng = np.random.default_rng(0)
    clusters = {"pure a": np.arange(12), "pure b": np.arange(100, 130), "tiny": [150, 151],
                "random": rng.choice(200, 12, replace=False), "empty": []}
    table = purity_table(clusters, big_labels, base)
    assert list(table["cluster"]) == ["pure a", "pure b", "tiny", "random"]  # empty clusters dropped
    assert {"best class", "purity", "random p95", "beats random", "members"} <= set(table.columns)
    assert table.set_index("cluster").loc["pure a", "beats random"]
    assert table.set_index("cluster").loc["pure b", "purity"] == 1.0
    assert table.set_index("cluster").loc["pure a", "members"].startswith("w0 w1")
    summary = summarize_purity(table, min_size=10)
    assert summary["clusters"] == 4 and summary["tested"] == 3
    assert summary["beat random"] >= 2 / 3
    assert np.isnan(summarize_purity(table, min_size=100)["beat random"])
    with pytest.raises(ValueError, match="same ClassLabels"):
        purity_table(clusters, ClassLabels.from_mapping(big_labels.words, {"a": {"w0"}}), base)


def test_partition_purity_against_random(big_labels):
    clusters = [np.arange(20), np.arange(100, 200), np.arange(20, 100)]
    # "a" 20/20; "b" 100/100; the rest: best excess is "a" (0 - 0.1) vs "b" (0 - 0.5) -> purity 0
    assert partition_purity(clusters, big_labels) == pytest.approx(120 / 200)
    base = RandomBaseline(big_labels, n_draws=300, seed=0)
    rand = random_partition_purity([20, 100, 80], base)
    assert rand < 0.45
    with pytest.raises(ValueError):
        partition_purity([[]], big_labels)
    with pytest.raises(ValueError):
        random_partition_purity([0], base)


def test_best_cluster_for_class(labels):
    clusters = {"x": [0, 1, 9], "y": [0, 1, 2, 3, 4, 5], "z": [0, 1, 2, 3, 6, 7]}
    name, pur = best_cluster_for_class(clusters, labels, "past", min_size=3)
    assert name == "y" and pur.purity == pytest.approx(4 / 6)  # y and z tie (4/6, same size): first wins
    name, _ = best_cluster_for_class(clusters, labels, "verb", min_size=3)
    assert name == "y"
    name, pur = best_cluster_for_class({"small": [0, 1], "big": [0, 1, 6]}, labels, "past", min_size=2)
    assert name == "small" and pur.purity == 1.0
    with pytest.raises(ValueError, match="min_size"):
        best_cluster_for_class(clusters, labels, "past", min_size=10)
    with pytest.raises(ValueError, match="unknown class"):
        best_cluster_for_class(clusters, labels, "adj")


def test_block_support_density_dense_and_sparse():
    S = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1]])
    assert block_support_density(S, [0, 2], [0, 2]) == pytest.approx(1.0)
    assert block_support_density(S, [1], [0, 1]) == 0.0
    assert block_support_density(sp.csc_array(S), [0, 1], [1, 2]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        block_support_density(S, [], [0])


def test_small_helpers():
    assert sign_string((1, -1, 1)) == "(+,-,+)"


def test_purity_table_is_a_dataframe(labels):
    base = RandomBaseline(labels, n_draws=50, seed=0)
    table = purity_table({"a": [0, 1]}, labels, base)
    assert isinstance(table, pd.DataFrame) and len(table) == 1


def test_best_of_n_is_selection_aware(labels):
    from ntputils.analysis.purity import RandomBaseline, best_of_n

    base = RandomBaseline(labels, n_draws=200, seed=0)
    cls = "past"
    members = np.flatnonzero(labels.member[:, labels.index(cls)])
    one = best_of_n({"a": members[:3]}, base, cls, min_size=1, n_boot=500)
    many = best_of_n({i: members[:3] for i in range(30)}, base, cls, min_size=1, n_boot=500)
    assert one.observed == many.observed == 1.0
    # choosing among more candidates raises the chance level of the best one
    assert many.mean > one.mean and many.p95 >= one.p95
    assert one.n_candidates == 1 and many.n_candidates == 30
    with pytest.raises(ValueError, match="min_size"):
        best_of_n({"a": members[:3]}, base, cls, min_size=10)
