"""Smoke tests of ntputils.plots: every figure is produced with the expected panels and axis labels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ntputils.analysis.convergence import GeometryReference, convergence_curves, support_group_order  # noqa: E402
from ntputils.data import from_counts  # noqa: E402
from ntputils.geometry import centered_support  # noqa: E402
from ntputils.plots import (  # noqa: E402
    convergence_panels,
    corr_heatmap,
    geometry_comparison,
    logit_heatmap,
    nearest_snapshots,
    plot_ce_gap,
    plot_norms,
    snapshot_grid,
    thinned_ticks,
)
from ntputils.plots.figures import MAX_WIDTH_IN  # noqa: E402
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
    # thinned labels: the axis label says how many rows carry one, every row has a (minor) tick
    assert ax.get_xlabel() == ax.get_ylabel() == "context j (10 of 100 labelled: long ticks)"
    assert set(ax.xaxis.get_minorticklocs()) | set(ax.get_xticks()) == set(range(100))
    assert im.get_clim() == (-1.0, 1.0) and im.get_cmap().name == "viridis"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert 0 < len(ticks) <= 10 and ticks[0] == "ctx 0"
    fig2, ax2 = plt.subplots()
    corr_heatmap(ax2, A[:, :8], labels[:8], kind="context")  # not thinned: plain axis label
    assert ax2.get_xlabel() == "context j"
    with pytest.raises(ValueError, match="labels"):
        corr_heatmap(ax, A, labels[:5])


def test_heatmap_two_slope_norm():
    """A norm centred at 0 gives the small negative entries of S~ the full negative colour."""
    from matplotlib.colors import TwoSlopeNorm

    from ntputils.plots import heatmap

    fig, ax = plt.subplots()
    St = centered_support(np.eye(4)[:, [0, 1, 2, 3, 0]])
    norm = TwoSlopeNorm(vmin=St.min(), vcenter=0.0, vmax=St.max())
    im = heatmap(ax, St, cmap="RdBu_r", norm=norm)
    assert im.norm is norm and norm(St.min()) == 0.0 and norm(0.0) == 0.5
    with pytest.raises(ValueError, match="norm"):
        heatmap(ax, St, cmap="RdBu_r", norm=norm, vmin=-1)


def test_spread_positions_keeps_labels_apart():
    from ntputils.plots import spread_positions

    v = np.array([4.98, 2.83, 2.70, 1.51, 1.41, 1.23])
    pos = spread_positions(v, 0.37)
    order = np.argsort(v)
    assert np.all(np.diff(pos[order]) >= 0.37 - 1e-12)  # apart, order kept
    assert pos[0] == v[0]  # an isolated value keeps its position
    assert np.isclose(pos[[1, 2]].mean(), v[[1, 2]].mean())  # a cluster is spread around its mean
    assert np.array_equal(spread_positions([1.0, 2.0, 3.0], 0.5), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        spread_positions([1.0], -1.0)


def test_concept_labels_do_not_overlap():
    """Labels of nearly coincident points (Paper B Fig. 10) are placed apart from each other."""
    from matplotlib.text import Text

    from ntputils.plots.concepts import concept_plane_figure

    P2 = np.array([[1.0, 1.0], [1.02, 0.98], [-1.0, -1.0], [0.5, -0.5]])
    labels = {0: "stays warm-blooded / feeds milk / has fur", 1: "purrs / has claws / cat family", 2: "x",
              3: "y"}
    dirs = [np.array([1.0, 0.0]), np.array([0.0, 1.0])]
    fig = concept_plane_figure([("ctx", P2, dirs, labels, ["k"] * 4, "^"),
                                ("w", P2, dirs, {}, ["k"] * 4, "o")])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    wanted = {lab.replace(" / ", "\n") for lab in labels.values()}
    texts = [t for t in fig.axes[0].texts if t.get_text() in wanted]
    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the texts, without their leader lines
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_logit_heatmap_uses_hot_and_word_context_axes():
    fig, ax = plt.subplots()
    im = logit_heatmap(ax, np.arange(12.0).reshape(3, 4), word_labels=["x", "y", "z"], title="L")
    assert im.get_cmap().name == "hot"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("context j", "word z")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]


def test_geometry_comparison_one_row_per_source(run):
    data, ref, hist = run
    order, _ = support_group_order(ref.support)
    fig = geometry_comparison({"UFM": (hist.H[-1], hist.W[-1].T), "theory": (ref.H_mm, ref.W_mm.T),
                               "proxy": (ref.S_tilde, ref.S_tilde.T)},
                              context_labels=[data.context_str(j) for j in range(data.m)],
                              word_labels=data.vocab, context_order=order, panel_size=6.0)
    axes = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert len(axes) == 6 and len(fig.axes) == 7  # 3 sources x (contexts, words), one shared colour bar
    assert [a.get_xlabel() for a in axes[:2]] == ["context j", "word z"]
    assert "sim to" not in axes[0].get_title() and "sim to UFM" in axes[2].get_title()
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN  # 2 x 6 in + labels would not be
    # every row labels its y axes; the words' x axis is labelled on the last row only
    ordered_words = [t.get_text() for t in axes[1].get_yticklabels()]
    assert sorted(ordered_words) == sorted(data.vocab)
    assert [t.get_text() for t in axes[5].get_yticklabels()] == ordered_words
    assert [t.get_text() for t in axes[5].get_xticklabels()] == ordered_words
    assert axes[1].get_xticklabels() == [] and axes[0].get_xticklabels() == []
    assert [t.get_text() for t in axes[2].get_yticklabels()][0] == data.context_str(int(order[0]))


def test_snapshot_grid_one_row_per_snapshot(run):
    _, ref, hist = run
    assert nearest_snapshots(hist, [0, 10**6]) == [0, len(hist.snap_steps) - 1]
    fig = snapshot_grid(hist, ref, [0, 10, 50], word_labels=run[0].vocab, panel_size=4.0)
    axes = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert len(axes) == 5 * 3  # 3 snapshots, theory, proxy x (corr(H), corr(W^T), logits)
    assert [t.get_text() for t in axes[1].get_yticklabels()] == run[0].vocab  # first row, words
    assert [t.get_text() for t in axes[13].get_yticklabels()] == run[0].vocab  # every row
    assert "theory" in axes[9].get_title() and "proxy" in axes[12].get_title()
    assert [a.get_xlabel() for a in axes[:3]] == ["context j", "word z", "context j"]
    assert len(fig.axes) - len(axes) == 1 + 5  # the correlations' bar, one bar per logit panel
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN


def test_fig6_panels_axes_and_scales(run):
    data, ref, hist = run
    series = {"toy UFM": convergence_curves(hist, ref, label="toy UFM")}
    fig = convergence_panels(series, panels=("ce", "norms", "proj", "sim_proxy", "sim_mm"), ncols=3)
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
        convergence_panels(series, panels=("nope",))


def test_learning_figures_have_the_papers_panels():
    """Paper B rate-of-learning figures (Figs. 12, 18, 19): one Figure each, with the expected axes."""
    from ntputils.plots.learning import (
        closed_form_error_figure,
        gd_dynamics_figure,
        learning_times_figure,
        rank_limited_figure,
        support_svd_figure,
    )

    rng = np.random.default_rng(0)
    S = (rng.random((5, 7)) < 0.4).astype(float)
    U, s, Vt = np.linalg.svd(centered_support(S), full_matrices=False)
    r = 3
    t = np.linspace(0, 5, 11)
    sv = np.outer(1 - np.exp(-t), s[:r])
    curve = {k: np.exp(-t) + 1e-3 for k in ("loss", "norm_W", "norm_H", "gram_W", "gram_H", "logits", "comp")}
    figs = [
        (support_svd_figure(S, U[:, :r], s[:r], Vt[:r], "top"), 5),  # 4 panels + colorbar
        (gd_dynamics_figure(t, {"SVD": {**curve, "sv": sv}}, sv, {"SVD": "tab:red"}, "bottom"), 4),
        (closed_form_error_figure(t, [0.2, 0.1], [sv, sv + 1e-3], sv, sv), 1),
        (learning_times_figure(t, sv, np.arange(1.0, r + 1), t, sv, np.arange(1.0, r + 1), s[:r],
                               (1.0, 0.0, 1.0), "fig18"), 3),
        (rank_limited_figure(t, sv, s[:r], d=2), 1),
    ]
    for fig, n_axes in figs:
        assert isinstance(fig, plt.Figure) and len(fig.axes) == n_axes
        plt.close(fig)


def test_step_imbalance_figures_have_the_papers_panels():
    """Paper B STEP-imbalance figures (Fig. 13, companions): one Figure each, with the expected axes."""
    from ntputils.plots.learning import (
        balanced_vs_step_figure,
        step_dynamics_figure,
        step_support_svd_figure,
        weighting_comparison_figure,
    )

    V, R = 4, 2
    S = np.zeros((V, (R + 1) * V // 2))
    S[0, :R], S[1, R:2 * R], S[2, 2 * R], S[3, 2 * R + 1] = 1, 1, 1, 1
    U, s, Vt = np.linalg.svd(centered_support(S), full_matrices=False)
    r = V - 1
    U, s, Vt = U[:, :r], s[:r], Vt[:r]
    tiers = np.array([0, 1, 2])
    t = np.linspace(0, 5, 11)
    amp = np.outer(1 - np.exp(-t), s)
    curves = {k: np.exp(-t) + 1e-3 for k in ("loss", "norm_W", "norm_H", "logits", "gram_W", "comp")}
    curves["amplitudes"] = amp
    figs = [
        (step_support_svd_figure(S, R, U, s, Vt, s, tiers), 5),  # 4 panels + colorbar
        (step_dynamics_figure(t, curves, tiers, amp, "amplitudes", "middle"), 4),
        (step_dynamics_figure(t, curves, tiers, None, "amplitudes", "bottom", overlay=0.5 * amp), 4),
        (weighting_comparison_figure(t, [(amp, "a"), (amp, "b"), (amp, "c")], tiers, title="t"), 3),
        (balanced_vs_step_figure(np.ones(r), s, tiers, R), 1),
    ]
    for fig, n_axes in figs:
        assert isinstance(fig, plt.Figure) and len(fig.axes) == n_axes
    # the overlay redraws the amplitudes black and adds one coloured curve per mode
    assert len(figs[2][0].axes[2].lines) == 2 * r
    assert all(line.get_color() == "k" for line in figs[2][0].axes[2].lines[:r])


def test_organism_concept_figures_have_the_papers_panels():
    """Paper B organism-concept figures (Figs. 1, 2A-C, 10): one Figure each, with the expected axes."""
    from ntputils.plots.concepts import (
        concept_plane_figure,
        organism_data_figure,
        organism_embeddings_figure,
        organism_orthants_figure,
        organism_svd_figure,
    )

    rng = np.random.default_rng(0)
    words, attributes = ["a", "b", "c", "d"], ["p", "q", "r", "s", "t"]
    S = np.array([[1, 0, 1, 0, 1], [1, 1, 0, 0, 0], [0, 1, 0, 1, 0], [0, 0, 1, 1, 1]], dtype=float)
    U, s, Vt = np.linalg.svd(centered_support(S), full_matrices=False)
    U, s, Vt = U[:, :3], s[:3], Vt[:3]
    colors4, colors5 = ["tab:blue"] * 4, ["tab:red"] * 5
    Pw, Ph = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    X = Vt.T
    levels = [np.array([0, 1]), np.array([0]), np.array([], dtype=int)]
    P2w, P2h = rng.normal(size=(4, 2)), rng.normal(size=(5, 2))
    dirs = [np.array([1.0, 0.0]), np.array([0.6, 0.8])]
    figs = [
        (organism_svd_figure(U, s, Vt, words, attributes), 4),  # 3 panels + colorbar
        (organism_embeddings_figure(Pw, Ph, colors4, colors5, {0: "a / b"}, {1: "q / r"}, "2A"), 1),
        (organism_orthants_figure(X, levels, {0: "p", 2: "r / s"}), 1),
        (concept_plane_figure([("ctx", P2h, dirs, {0: "p"}, colors5, "^"),
                               ("word", P2w, dirs, {1: "b"}, colors4, "o")]), 2),
        (organism_data_figure(S / S.sum(axis=0), words, attributes), 2),  # panel + colorbar
    ]
    for fig, n_axes in figs:
        assert isinstance(fig, plt.Figure) and len(fig.axes) == n_axes
    assert figs[1][0].axes[0].name == figs[2][0].axes[0].name == "3d"


def test_support_group_labels_inverts_support_group_order():
    """labels[order] == group, and equal labels <=> equal support columns."""
    from ntputils.analysis.convergence import support_group_labels

    S = np.array([[1, 0, 1, 0, 1], [0, 1, 0, 1, 0], [1, 1, 1, 0, 1]])
    order, group = support_group_order(S)
    labels = support_group_labels(S)
    np.testing.assert_array_equal(labels[order], group)
    np.testing.assert_array_equal(labels, [0, 1, 0, 2, 0])
    same = (S.T[:, None, :] == S.T[None, :, :]).all(-1)
    np.testing.assert_array_equal(labels[:, None] == labels[None, :], same)


def test_legend_below_collects_legends_and_marks_dashed() -> None:
    from ntputils.plots import legend_below

    fig, axes = plt.subplots(1, 2, layout="constrained")
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="run A")
        ax.plot([0, 1], [0, 1], ls="--", label="run A (W)")
        ax.legend()
    legend_below(fig)
    assert all(ax.get_legend() is None for ax in axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["run A", "run A (W)"]
    dashed = [ln for ln in axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert dashed[0].get_marker() == "o" and dashed[0].get_zorder() > axes[0].get_lines()[0].get_zorder()
    plt.close(fig)
