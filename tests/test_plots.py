"""Smoke tests of ntputils.plots: every figure is produced with the expected panels and axis labels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ntputils.analysis.convergence import GeometryReference, fig6_series, support_group_order  # noqa: E402
from ntputils.data import from_counts  # noqa: E402
from ntputils.geometry import centered_support  # noqa: E402
from ntputils.plots import (  # noqa: E402
    corr_heatmap,
    fig6_panels,
    geometry_comparison,
    logit_heatmap,
    nearest_snapshots,
    plot_ce_gap,
    plot_norms,
    snapshot_grid,
    thinned_ticks,
)
from ntputils.training.ufm import train  # noqa: E402


@pytest.fixture(scope="module")
def run():
    counts = np.array([[2, 0, 1, 0, 1], [1, 0, 0, 3, 2], [0, 2, 0, 1, 0], [0, 1, 2, 0, 0]])
    data = from_counts(counts, vocab=["a", "b", "c", "d"], contexts=[(0,), (1,), (2,), (3,), (0, 1)])
    ref = GeometryReference.from_data(data, L_mm=centered_support(data.S))
    hist = train(data, d=6, steps=50, lr=0.5, log_steps=8, seed=0, progress=False)
    return data, ref, hist


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_thinned_ticks():
    assert thinned_ticks(5, 40).tolist() == [0, 1, 2, 3, 4]
    assert len(thinned_ticks(403, 40)) <= 40
    # candidate positions (block starts) closer than n / max_labels = 10 to the last kept one are dropped
    assert thinned_ticks(100, 10, [0, 3, 12, 15, 30, 31, 99]).tolist() == [0, 12, 30, 99]
    with pytest.raises(ValueError):
        thinned_ticks(10, 0)
    with pytest.raises(ValueError):
        thinned_ticks(10, 5, [10])


def test_corr_heatmap_labels_and_thinning():
    fig, ax = plt.subplots()
    A = np.random.default_rng(0).normal(size=(3, 100))
    labels = [f"ctx {i}" for i in range(100)]
    im = corr_heatmap(ax, A, labels, title="corr(H)", kind="context", max_labels=10)
    assert ax.get_xlabel() == ax.get_ylabel() == "context j"
    assert im.get_clim() == (-1.0, 1.0) and im.get_cmap().name == "viridis"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert 0 < len(ticks) <= 10 and ticks[0] == "ctx 0"
    with pytest.raises(ValueError, match="labels"):
        corr_heatmap(ax, A, labels[:5])


def test_logit_heatmap_uses_hot_and_word_context_axes():
    fig, ax = plt.subplots()
    im = logit_heatmap(ax, np.arange(12.0).reshape(3, 4), word_labels=["x", "y", "z"], title="L")
    assert im.get_cmap().name == "hot"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("context j", "word z")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]


def test_geometry_comparison_fig1_layout(run):
    data, ref, hist = run
    order, _ = support_group_order(ref.support)
    fig = geometry_comparison({"UFM": (hist.H[-1], hist.W[-1].T), "theory": (ref.H_mm, ref.W_mm.T),
                               "proxy": (ref.S_tilde, ref.S_tilde.T)},
                              context_labels=[data.context_str(j) for j in range(data.m)],
                              word_labels=data.vocab, context_order=order)
    axes = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert len(axes) == 6
    assert axes[0].get_xlabel() == "context j" and axes[3].get_xlabel() == "word z"
    assert "sim to UFM" in axes[1].get_title()
    # words: labels on the first column's y axis and every x axis; contexts: first column's y axis only
    ordered_words = [t.get_text() for t in axes[3].get_yticklabels()]
    assert sorted(ordered_words) == sorted(data.vocab)
    assert [t.get_text() for t in axes[4].get_xticklabels()] == ordered_words
    assert axes[1].get_yticklabels() == [] and axes[0].get_xticklabels() == []
    assert [t.get_text() for t in axes[0].get_yticklabels()][0] == data.context_str(int(order[0]))


def test_snapshot_grid_fig4_layout(run):
    _, ref, hist = run
    assert nearest_snapshots(hist, [0, 10**6]) == [0, len(hist.snap_steps) - 1]
    fig = snapshot_grid(hist, ref, [0, 10, 50], word_labels=run[0].vocab)
    axes = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert [t.get_text() for t in axes[5].get_yticklabels()] == run[0].vocab  # first column, words row
    assert len(axes) == 3 * 5
    titles = [a.get_title() for a in axes]
    assert any("theory" in t for t in titles) and any("proxy" in t for t in titles)
    assert {a.get_xlabel() for a in axes} == {"context j", "word z"}


def test_fig6_panels_axes_and_scales(run):
    data, ref, hist = run
    series = {"toy UFM": fig6_series(hist, ref, label="toy UFM")}
    fig = fig6_panels(series, panels=("ce", "norms", "proj", "sim_proxy", "sim_mm"), ncols=3)
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 5 and len(fig.axes) == 6  # a 2 x 3 grid with the last cell hidden
    assert axes[0].get_ylabel() == "CE - H"
    assert axes[0].get_xscale() == "log" and axes[0].get_yscale() == "log"
    assert axes[2].get_ylabel() == "||P_F(L_k) - L^in||_F"
    assert axes[3].get_ylabel() == "sim" and all(a.get_xlabel() == "step k + 1" for a in axes)
    assert "theory" in axes[4].get_title()
    # the logged-curve panels also take History objects directly
    fig, (a1, a2) = plt.subplots(1, 2)
    plot_ce_gap(a1, {"h": hist})
    plot_norms(a2, {"h": hist})
    assert len(a2.get_lines()) == 2
    with pytest.raises(ValueError, match="unknown"):
        fig6_panels(series, panels=("nope",))
