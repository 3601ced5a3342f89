"""Tests of ntputils.analysis.network_runs: heatmap context selection, history subsets, cached training
runs."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from ntputils.analysis.metrics import sim
from ntputils.analysis.network_runs import (
    data_fingerprint,
    geometry_reference,
    history_subset,
    run_key,
    support_group_selection,
    train_and_compare,
)
from ntputils.data import from_counts
from ntputils.geometry import margin_violation
from ntputils.training.history import History


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path))
    return tmp_path


def grouped_data():
    """V = 5; groups: A = {0,1} x 4 contexts, B = {2} x 3, C = {0,3,4} x 2, D = {1,2,3} x 4.

    Counts of context j: column sum; within A the counts are 1, 5, 2, 5 (ties: later column first).
    """
    supports = [(0, 1)] * 4 + [(2,)] * 3 + [(0, 3, 4)] * 2 + [(1, 2, 3)] * 4
    scale = [1, 5, 2, 5, 1, 1, 1, 1, 1, 3, 1, 2, 1]
    counts = np.zeros((5, len(supports)), dtype=np.int64)
    for j, (s, c) in enumerate(zip(supports, scale, strict=True)):
        counts[list(s), j] = c
    contexts = [(j % 3, j // 3) for j in range(len(supports))]
    return from_counts(counts, contexts)


def test_selection_orders_groups_by_support_size_and_contexts_by_count():
    data = grouped_data()
    sel = support_group_selection(data, n_contexts=100, per_group=3, min_group=3)
    # groups with >= 3 contexts: D (size 3), A (size 2), B (size 1); C has only 2 contexts
    assert sel.support_size.tolist() == [3, 2, 1]
    assert sel.group_size.tolist() == [4, 4, 3]
    assert sel.n_groups == 3
    D, A, B = (sel.columns[sel.group == g] for g in range(3))
    assert D.tolist() == [9, 11, 12]  # counts 9, 6, 3, 3: most frequent first, ties: later column first
    assert A.tolist() == [3, 1, 2]  # counts 10, 10, 4: the tie 3 vs 1 goes to the later column
    assert B.tolist() == [6, 5, 4]  # all equal: later columns first
    assert np.array_equal(sel.count, data.context_counts[sel.columns])
    S = data.S.toarray()
    for g in range(3):  # every group shares one support
        cols = sel.columns[sel.group == g]
        assert (S[:, cols] == S[:, cols[:1]]).all()


def test_selection_stops_after_enough_contexts_and_rejects_bad_input():
    data = grouped_data()
    sel = support_group_selection(data, n_contexts=3, per_group=3, min_group=3)
    assert sel.columns.size == 3 and sel.n_groups == 1
    with pytest.raises(ValueError, match="no support set"):
        support_group_selection(data, min_group=10)
    with pytest.raises(ValueError, match="positive"):
        support_group_selection(data, per_group=0)


def test_history_subset_restricts_columns_and_records_them():
    rng = np.random.default_rng(0)
    hist = History(meta={"snapshot_contexts": [4, 2, 7]})
    hist.log(0, loss=1.0)
    for step in (0, 5):
        hist.snapshot(step, rng.normal(size=(3, 2)), rng.normal(size=(2, 3)))
    sub = history_subset(hist, [7, 4])
    assert sub.meta["snapshot_contexts"] == [7, 4]
    for k in range(2):
        assert np.array_equal(sub.H[k], hist.H[k][:, [2, 0]])
        assert np.allclose(sub.L[k], hist.W[k] @ hist.H[k][:, [2, 0]])
    assert sub.scalars == hist.scalars and sub.steps == hist.steps
    with pytest.raises(ValueError, match="not among"):
        history_subset(hist, [3])


def test_fingerprints_change_with_the_data_and_the_configuration():
    data = grouped_data()
    counts = data.counts.toarray()
    counts[0, 0] += 1
    other = from_counts(sp.csc_array(counts), data.contexts)
    assert data_fingerprint(data) != data_fingerprint(other)
    key = run_key("lstm", 0, {"d": 4}, {"steps": 3}, data)
    assert key == run_key("lstm", 0, {"d": 4}, {"steps": 3}, data)
    assert key != run_key("lstm", 1, {"d": 4}, {"steps": 3}, data)
    assert key != run_key("lstm", 0, {"d": 4}, {"steps": 4}, data)


def test_the_thread_count_is_part_of_the_run_key(cache):
    """Two torch threads change a mini-batch run in the third decimal: a run cached under one thread count is
    trained again, in a directory of its own, under another (it was reloaded as the other's)."""
    data = grouped_data()
    assert run_key("lstm", 0, {"d": 4}, {"steps": 3}, data, num_threads=1) != run_key(
        "lstm", 0, {"d": 4}, {"steps": 3}, data, num_threads=2)
    args = dict(model_config={"d": 8}, train_config={"steps": 3, "batch_size": 4, "log_steps": 2}, seed=0,
                device="cpu", progress=False)
    one = train_and_compare("lstm", data, num_threads=1, **args)
    two = train_and_compare("lstm", data, num_threads=2, **args)
    assert not one.cached and not two.cached and one.checkpoint_dir != two.checkpoint_dir
    assert train_and_compare("lstm", data, num_threads=1, **args).cached


def test_geometry_reference_theory_factors_reproduce_a_feasible_lmm(cache):
    data = grouped_data()
    ref = geometry_reference(data)
    assert margin_violation(ref.L_mm, data.S) < 1e-6
    assert np.allclose(ref.W_mm @ ref.H_mm, ref.L_mm, atol=1e-6)
    assert ref.info["lmm"]["rel_gap"] < 1e-5
    assert geometry_reference(data).info["lmm"]["cached"]  # second call reads the disk cache
    assert geometry_reference(data, theory=False).L_mm is None


def test_train_and_compare_trains_then_reloads_the_finished_run(cache):
    data = grouped_data()
    ref = geometry_reference(data)
    train_config = {"steps": 30, "lr": 1e-2, "weight_decay": 0.0, "schedule": "constant", "log_steps": 5}
    args = dict(model_config={"d": 16, "n_layers": 1}, train_config=train_config, seed=3, label="tiny lstm",
                device="cpu", progress=False)
    first = train_and_compare("lstm", data, ref, **args)
    assert not first.cached and first.checkpoint_dir.is_relative_to(cache / "runs")
    assert first.history.steps[-1] == 30 and first.series.snap_steps[-1] == 30
    assert first.final["ce_minus_H"] < first.history.scalars["ce_minus_H"][0]
    assert first.series.sim_H_proxy[-1] == pytest.approx(sim(first.history.H[-1], ref.S_tilde))
    again = train_and_compare("lstm", data, ref, **args)
    assert again.cached
    assert again.history.scalars == first.history.scalars
    for a, b in zip(again.history.H, first.history.H, strict=True):
        assert np.array_equal(a, b)
    x = torch.as_tensor([list(c) for c in data.contexts])
    with torch.no_grad():  # the returned model is the trained one
        assert torch.allclose(again.model.context_embeddings(x).double().T,
                              torch.as_tensor(first.history.H[-1]), atol=1e-5)


def test_train_and_compare_rejects_bad_configurations(cache):
    data = grouped_data()
    with pytest.raises(ValueError, match="unknown training argument"):
        train_and_compare("lstm", data, model_config={"d": 4}, train_config={"steps": 1, "learning_rate": 1})
    with pytest.raises(ValueError, match="needs 'steps'"):
        train_and_compare("lstm", data, model_config={"d": 4}, train_config={"lr": 1e-3})
    with pytest.raises(ValueError, match="taken from the data"):
        train_and_compare("lstm", data, model_config={"d": 4, "vocab_size": 9}, train_config={"steps": 1})
