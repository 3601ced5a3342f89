"""Reusable figures of the book: labelled heatmaps, paper A Fig. 1 / Fig. 4 grids and Fig. 6 curve panels.

Conventions (as in paper A Figs. 1, 3, 4 and 6): cosine-similarity heatmaps in ``viridis`` on [-1, 1]; logit
heatmaps in
``hot``; curves against the training step on log axes, drawn at ``step + 1`` so the initialization
(step 0) is visible. Matrices follow the book's V x m convention: rows = words z, columns =
contexts j; ``corr`` of a matrix is the cosine similarity of its *columns* (so ``corr(H)`` compares
contexts and ``corr(W.T)`` words, :func:`ntputils.analysis.metrics.corr`).

The panel functions take :class:`~ntputils.training.history.History` objects (or the
:class:`~ntputils.analysis.convergence.ConvergenceCurves` computed from them), so the NTP-UFM chapter and the
network chapters draw the same figures from their own runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.ticker import FixedLocator

from ntputils.analysis.convergence import ConvergenceCurves, GeometryReference
from ntputils.analysis.metrics import corr, structural_similarity
from ntputils.training.history import History

CORR_CMAP = "viridis"
LOGIT_CMAP = "hot"
#: colours of the paper's Fig. 6 runs (authors' plotting code)
#: widest figure (inches at 100 dpi) whose 10 pt labels stay legible in the book's 672 px text column
#: (at least 7 px: :mod:`ntputils.reports.png`)
MAX_WIDTH_IN = 12.8
PAPER_COLORS = {"Synthetic UFM": "gold", "Synthetic TF": "darkorange", "STS UFM": "deepskyblue",
                "STS TF": "steelblue"}


# ---------------------------------------------------------------------------------------------
# heatmaps
# ---------------------------------------------------------------------------------------------
def thinned_ticks(n: int, max_labels: int, candidates: Sequence[int] | None = None) -> np.ndarray:
    """At most ``max_labels`` tick positions in ``range(n)``, at least ``ceil(n / max_labels)`` apart.

    Without ``candidates``: evenly spaced (all positions when ``n <= max_labels``). With
    ``candidates`` (e.g. the first item of every block): kept greedily in increasing order, skipping
    any closer than the minimum spacing to the last kept one, so labels never overlap.
    """
    if n < 0 or max_labels < 1:
        raise ValueError(f"need n >= 0 and max_labels >= 1, got n={n}, max_labels={max_labels}")
    step = max(1, int(np.ceil(n / max_labels)))
    if candidates is None:
        return np.arange(0, n, step)
    cand = np.unique(np.asarray(candidates, dtype=int))
    if cand.size and (cand[0] < 0 or cand[-1] >= n):
        raise ValueError(f"tick positions must lie in [0, {n})")
    kept: list[int] = []
    for c in cand:
        if not kept or c - kept[-1] >= step:
            kept.append(int(c))
    return np.asarray(kept, dtype=int)


def _label_axis(ax: Axes, which: str, labels: Sequence[str] | None, n: int, max_labels: int,
                ticks: Sequence[int] | None, fontsize: float | None) -> None:
    """Label the rows (``which="y"``) or columns (``"x"``) of a heatmap, thinned to ``max_labels``.

    When labels are thinned, every row/column gets a short minor tick and every labelled one a long
    major tick, and the axis label says how many rows carry a label, so that a label can be matched to
    its row (a thinned label otherwise floats between rows).
    """
    if labels is None:
        return
    if len(labels) != n:
        raise ValueError(f"shape mismatch: {len(labels)} {which}-labels for {n} {which} entries")
    pos = thinned_ticks(n, max_labels, ticks)
    size = fontsize if fontsize is not None else float(np.clip(300 / max(len(pos), 1), 3, 8))
    text = [labels[i] for i in pos]
    axis = ax.xaxis if which == "x" else ax.yaxis
    if which == "x":
        ax.set_xticks(pos, text, rotation=90, fontsize=size)
    else:
        ax.set_yticks(pos, text, fontsize=size)
    if len(pos) < n:
        axis.set_minor_locator(FixedLocator(np.arange(n)))
        ax.tick_params(axis=which, which="minor", length=1.5, width=0.4)
        ax.tick_params(axis=which, which="major", length=5, width=0.8)
        name = axis.get_label_text()
        axis.set_label_text(f"{name} ({len(pos)} of {n} labelled: long ticks)".strip())


def heatmap(ax: Axes, M: np.ndarray, *, cmap: str, vmin: float | None = None, vmax: float | None = None,
            title: str = "", xlabel: str = "", ylabel: str = "", xticklabels: Sequence[str] | None = None,
            yticklabels: Sequence[str] | None = None, max_labels: int = 40,
            xticks: Sequence[int] | None = None, yticks: Sequence[int] | None = None,
            fontsize: float | None = None, colorbar: str | None = "", norm: Normalize | None = None,
            ) -> AxesImage:
    """Draw matrix ``M`` with labelled axes; ``colorbar=None`` omits the colour bar, a string labels it.

    ``norm`` (instead of ``vmin``/``vmax``) maps values to colours, e.g. a
    :class:`matplotlib.colors.TwoSlopeNorm` centred at 0 for a matrix whose negative entries are small
    (the centered support S~, whose off-support entries are -|S_j|/V), so they get a full colour too.
    Tick labels are thinned to at most ``max_labels`` per axis (:func:`thinned_ticks`; ``xticks`` /
    ``yticks`` give candidate positions, e.g. block starts).

    The heatmaps of Paper A, Figs. 1, 3 and 4.
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2:
        raise ValueError(f"heatmap expects a 2-D matrix, got shape {M.shape}")
    if norm is not None and (vmin is not None or vmax is not None):
        raise ValueError("heatmap: pass either norm or vmin/vmax, not both")
    im = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, norm=norm, interpolation="nearest", aspect="auto")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if xticklabels is None:
        ax.set_xticks([])
    if yticklabels is None:
        ax.set_yticks([])
    _label_axis(ax, "x", xticklabels, M.shape[1], max_labels, xticks, fontsize)
    _label_axis(ax, "y", yticklabels, M.shape[0], max_labels, yticks, fontsize)
    if colorbar is not None:
        cb = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.02)
        cb.set_label(colorbar, fontsize=7)
        cb.ax.tick_params(labelsize=6)
    return im


def corr_heatmap(ax: Axes, A: np.ndarray, labels: Sequence[str] | None = None, *, title: str = "",
                 kind: str = "context", order: Sequence[int] | None = None, max_labels: int = 40,
                 ticks: Sequence[int] | None = None, tick_axes: str = "xy", fontsize: float | None = None,
                 colorbar: str | None = "cosine similarity", is_corr: bool = False) -> AxesImage:
    """Heatmap of ``corr(A)`` (cosine similarity of the columns of ``A``; viridis on [-1, 1]).

    ``kind`` names what the columns are (``"context"`` -> axes "context j", ``"word"`` -> "word z");
    ``order`` permutes the items (e.g. :func:`ntputils.analysis.convergence.support_group_order`), ``labels``
    are in the original item order and go on the axes named in ``tick_axes`` (``"xy"``, ``"x"``,
    ``"y"`` or ``""``); ``ticks`` are candidate positions in the *ordered* matrix.
    ``is_corr=True`` means ``A`` already is a correlation matrix.

    The corr panels of Paper A, Figs. 1, 3 and 4.
    """
    C = np.asarray(A, dtype=np.float64) if is_corr else corr(A)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"a correlation matrix is square, got shape {C.shape}")
    idx = np.arange(C.shape[0]) if order is None else np.asarray(order)
    if idx.shape != (C.shape[0],):
        raise ValueError(f"shape mismatch: order has {idx.size} entries for {C.shape[0]} items")
    if labels is not None and len(labels) != C.shape[0]:
        raise ValueError(f"shape mismatch: {len(labels)} labels for {C.shape[0]} items")
    names = None if labels is None else [labels[i] for i in idx]
    axis = {"context": "context j", "word": "word z"}.get(kind, kind)
    return heatmap(ax, C[np.ix_(idx, idx)], cmap=CORR_CMAP, vmin=-1.0, vmax=1.0, title=title, xlabel=axis,
                   ylabel=axis, xticklabels=names if "x" in tick_axes else None,
                   yticklabels=names if "y" in tick_axes else None, max_labels=max_labels, xticks=ticks,
                   yticks=ticks, fontsize=fontsize, colorbar=colorbar)


def logit_heatmap(ax: Axes, L: np.ndarray, *, word_labels: Sequence[str] | None = None,
                  context_labels: Sequence[str] | None = None, title: str = "", vmin: float | None = None,
                  vmax: float | None = None, word_order: Sequence[int] | None = None,
                  context_order: Sequence[int] | None = None, max_labels: int = 40,
                  colorbar: str | None = "logit") -> AxesImage:
    """Heatmap (``hot``) of a V x m logit-like matrix: rows = words z, columns = contexts j.

    Default colour range: the 1st to 99th percentile of the entries.

    The logit panels of Paper A, Fig. 4.
    """
    L = np.asarray(L, dtype=np.float64)
    if L.ndim != 2:
        raise ValueError(f"logit heatmap expects a V x m matrix, got shape {L.shape}")
    r = np.arange(L.shape[0]) if word_order is None else np.asarray(word_order)
    c = np.arange(L.shape[1]) if context_order is None else np.asarray(context_order)
    lo, hi = np.percentile(L, [1, 99])
    for labels, n, what in ((word_labels, L.shape[0], "word"), (context_labels, L.shape[1], "context")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"shape mismatch: {len(labels)} {what} labels for {n} {what}s")
    return heatmap(ax, L[np.ix_(r, c)], cmap=LOGIT_CMAP, vmin=lo if vmin is None else vmin,
                   vmax=hi if vmax is None else vmax, title=title, xlabel="context j", ylabel="word z",
                   xticklabels=None if context_labels is None else [context_labels[i] for i in c],
                   yticklabels=None if word_labels is None else [word_labels[i] for i in r],
                   max_labels=max_labels, colorbar=colorbar)


# ---------------------------------------------------------------------------------------------
# Fig. 1 and Fig. 4 grids
# ---------------------------------------------------------------------------------------------
def geometry_comparison(panels: Mapping[str, tuple[np.ndarray, np.ndarray]], *,
                        context_labels: Sequence[str] | None = None, word_labels: Sequence[str] | None = None,
                        context_order: Sequence[int] | None = None, word_order: Sequence[int] | None = None,
                        context_ticks: Sequence[int] | None = None, max_labels: int = 40,
                        panel_size: float = 4.2, suptitle: str = "") -> Figure:
    """Paper A Fig. 1 (and Fig. 3): ``corr`` of contexts (left) and of words (right), one row per source.

    ``panels`` maps a source's name to ``(context_matrix, word_matrix)`` whose *columns* are the items:
    e.g. ``{"NTP-UFM": (H, W.T), "theory": (H_mm, W_mm.T), "proxy": (S_tilde, S_tilde.T)}``. Every
    panel below the first row is annotated with its ``SIM`` to the first row (paper A Fig. 6 metric).
    The paper sets the sources side by side; one row each keeps the figure at most
    :data:`MAX_WIDTH_IN` wide, so its labels stay legible in the text column. Every row labels its
    y axes (contexts at the candidate positions ``context_ticks``, e.g. the first context of every support
    group; words), the last row the words' x axis; one colour bar serves all panels.
    """
    if not panels:
        raise ValueError("geometry_comparison needs at least one panel")
    names = list(panels)
    size = (min(MAX_WIDTH_IN, 2 * panel_size + 3), panel_size * len(names))  # + 3 in: labels, colour bar
    fig, axes = plt.subplots(len(names), 2, figsize=size, squeeze=False, layout="constrained")
    first = [corr(panels[names[0]][0]), corr(panels[names[0]][1])]
    kinds = (("context", context_labels, context_order, context_ticks),
             ("word", word_labels, word_order, None))
    for row, name in enumerate(names):
        for col, (kind, labels, order, ticks) in enumerate(kinds):
            C = corr(panels[name][col])
            title = f"{name}: corr({kind}s)"
            if row > 0:
                title += f"\nsim to {names[0]} = {structural_similarity(C, first[col]):.3f}"
            tick_axes = "y" + ("x" if kind == "word" and row == len(names) - 1 else "")
            im = corr_heatmap(axes[row, col], C, labels, title=title, kind=kind, order=order, ticks=ticks,
                              max_labels=max_labels, tick_axes=tick_axes, is_corr=True, colorbar=None)
    _shared_colorbar(fig, im, axes, "cosine similarity")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def _shared_colorbar(fig: Figure, im: AxesImage, axes: np.ndarray, label: str) -> None:
    """One colour bar for the heatmaps ``axes`` (all drawn on ``im``'s scale), right of them."""
    cb = fig.colorbar(im, ax=axes, shrink=min(1.0, 2.0 / axes.shape[0]), aspect=30, pad=0.02)
    cb.set_label(label, fontsize=8)
    cb.ax.tick_params(labelsize=7)


def nearest_snapshots(hist: History, steps: Sequence[int]) -> list[int]:
    """Indices (into ``hist.snap_steps``) of the snapshots closest to the requested steps.

    Selects the snapshots of Paper A, Fig. 4.
    """
    if not hist.snap_steps:
        raise ValueError("history has no snapshots")
    have = np.asarray(hist.snap_steps)
    return [int(np.argmin(np.abs(have - s))) for s in steps]


def snapshot_grid(hist: History, ref: GeometryReference, steps: Sequence[int], *,
                  context_order: Sequence[int] | None = None, word_order: Sequence[int] | None = None,
                  context_labels: Sequence[str] | None = None, word_labels: Sequence[str] | None = None,
                  max_labels: int = 40, theory: bool = True, proxy: bool = True, panel_size: float = 2.6,
                  suptitle: str = "") -> Figure:
    """Paper A Fig. 4: ``corr(H_k)``, ``corr(W_k^T)`` and ``L_k``, one row per snapshot.

    The snapshots nearest to ``steps`` come first, then (``theory``) ``H^mm, W^mm, L^mm`` and
    (``proxy``) ``S~`` (contexts), ``S~^T`` (words), ``S~`` (logits). The paper sets the snapshots side by
    side; one row each keeps the figure at most :data:`MAX_WIDTH_IN` wide (legible in the text column).
    Logit panels have their own colour range and bar (they grow during training); ``L^mm`` and ``S~`` use
    [-0.5, 1] as the authors' plots; one bar serves the correlation panels. ``context_labels`` /
    ``word_labels`` (original item order) label the y axes of every row.
    """
    rows: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, tuple[float | None, float | None]]] = []
    for i in nearest_snapshots(hist, steps):
        rows.append((f"step {hist.snap_steps[i]}", hist.H[i], hist.W[i].T, hist.L[i], (None, None)))
    if theory:
        if ref.L_mm is None:
            raise ValueError("theory=True needs a GeometryReference with L_mm")
        rows.append(("theory (mm)", ref.H_mm, ref.W_mm.T, ref.L_mm, (-0.5, 1.0)))
    if proxy:
        rows.append(("proxy (S~)", ref.S_tilde, ref.S_tilde.T, ref.S_tilde, (-0.5, 1.0)))
    size = (min(MAX_WIDTH_IN, 3 * panel_size + 4), panel_size * len(rows))  # + 4 in: labels, colour bars
    fig, axes = plt.subplots(len(rows), 3, figsize=size, squeeze=False, layout="constrained")
    for r, (name, Hc, Wc, Lc, (lo, hi)) in enumerate(rows):
        corr_heatmap(axes[r, 0], Hc, context_labels, title=f"{name}: corr(H)", kind="context",
                     order=context_order, max_labels=max_labels, tick_axes="y", colorbar=None)
        im = corr_heatmap(axes[r, 1], Wc, word_labels, title=f"{name}: corr(W^T)", kind="word",
                          order=word_order, max_labels=max_labels, tick_axes="y", colorbar=None)
        logit_heatmap(axes[r, 2], Lc, word_labels=word_labels, title=f"{name}: logits", vmin=lo, vmax=hi,
                      word_order=word_order, context_order=context_order, max_labels=max_labels,
                      colorbar="logit")
    _shared_colorbar(fig, im, axes[:, :2], "cosine similarity")
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# ---------------------------------------------------------------------------------------------
# Fig. 6 curves
# ---------------------------------------------------------------------------------------------
def _color(colors: Mapping[str, str] | None, label: str, i: int) -> str:
    if colors and label in colors:
        return colors[label]
    return PAPER_COLORS.get(label, f"C{i}")


def _scalar_curve(run: History | ConvergenceCurves, name: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(run, ConvergenceCurves):
        return run.steps, getattr(run, name)
    if isinstance(run, History):
        return run.curve(name)
    raise TypeError(f"expected a History or ConvergenceCurves, got {type(run).__name__}")


def plot_ce_gap(ax: Axes, runs: Mapping[str, History | ConvergenceCurves],
                colors: Mapping[str, str] | None = None
                ) -> Axes:
    """Fig. 6(a): CE - H against step + 1, log-log.

    Paper A, Fig. 6a.
    """
    for i, (label, run) in enumerate(runs.items()):
        s, v = _scalar_curve(run, "ce_minus_H")
        ax.loglog(s + 1, np.maximum(v, np.finfo(float).tiny), color=_color(colors, label, i), label=label)
    ax.set(xlabel="step k + 1", ylabel="CE - H", title="(a) CE approaches H")
    ax.legend(fontsize=7)
    return ax


def plot_norms(ax: Axes, runs: Mapping[str, History | ConvergenceCurves],
               colors: Mapping[str, str] | None = None
                ) -> Axes:
    """Fig. 6(b): ``||W_k||_F`` (dashed) and ``||H_k||_F`` (solid), log-log.

    Paper A, Fig. 6b.
    """
    for i, (label, run) in enumerate(runs.items()):
        c = _color(colors, label, i)
        s, w = _scalar_curve(run, "norm_W")
        _, h = _scalar_curve(run, "norm_H")
        ax.loglog(s + 1, h, color=c, ls="-", label=f"{label} ||H||")
        ax.loglog(s + 1, w, color=c, ls="--", label=f"{label} ||W||")
    ax.set(xlabel="step k + 1", ylabel="Frobenius norm", title="(b) norms grow")
    ax.legend(fontsize=7)
    return ax


def _series(run: ConvergenceCurves) -> ConvergenceCurves:
    if not isinstance(run, ConvergenceCurves):
        raise TypeError("snapshot panels need ConvergenceCurves (ntputils.analysis.convergence_curves), "
                        f"got {type(run).__name__}")
    return run


def plot_projection_error(ax: Axes, runs: Mapping[str, ConvergenceCurves],
                          colors: Mapping[str, str] | None = None
                ) -> Axes:
    """Fig. 6(c): ``||P_F(L_k) - L^in||_F``, log-log.

    Paper A, Fig. 6c.
    """
    for i, (label, run) in enumerate(runs.items()):
        r = _series(run)
        ax.loglog(r.snap_steps + 1, r.proj_error, color=_color(colors, label, i), label=label)
    ax.set(xlabel="step k + 1", ylabel="||P_F(L_k) - L^in||_F", title="(c) projection on F -> L^in")
    ax.legend(fontsize=7)
    return ax


def plot_sim_curves(ax: Axes, runs: Mapping[str, ConvergenceCurves], target: str = "proxy",
                    colors: Mapping[str, str] | None = None
                ) -> Axes:
    """Fig. 6(d) (``target="proxy"``: vs S~) or 6(e) (``"mm"``: vs H^mm, W^mm); H solid, W dashed.

    Paper A, Fig. 6d-e.
    """
    if target not in ("proxy", "mm"):
        raise ValueError(f"unknown target {target!r}; valid: 'proxy', 'mm'")
    tname = ("S~", "S~^T") if target == "proxy" else ("H^mm", "W^mm^T")
    for i, (label, run) in enumerate(runs.items()):
        r = _series(run)
        c = _color(colors, label, i)
        ax.semilogx(r.snap_steps + 1, getattr(r, f"sim_H_{target}"), color=c, ls="-",
                    label=f"{label} sim(H_k, {tname[0]})")
        ax.semilogx(r.snap_steps + 1, getattr(r, f"sim_W_{target}"), color=c, ls="--",
                    label=f"{label} sim(W_k^T, {tname[1]})")
    ax.set(xlabel="step k + 1", ylabel="sim", ylim=(-0.05, 1.05),
           title="(d) similarity to proxy" if target == "proxy" else "(e) similarity to theory")
    ax.legend(fontsize=6)
    return ax


def plot_direction_distance(ax: Axes, runs: Mapping[str, ConvergenceCurves],
                            colors: Mapping[str, str] | None = None
                ) -> Axes:
    """Normalized distance of ``L_k`` to ``L^mm`` (solid) and to ``S~`` (dotted).

    The direction error of Paper A, Thm. 1.
    """
    for i, (label, run) in enumerate(runs.items()):
        r = _series(run)
        c = _color(colors, label, i)
        ax.semilogx(r.snap_steps + 1, r.dist_L_mm, color=c, ls="-", label=f"{label} vs L^mm")
        ax.semilogx(r.snap_steps + 1, r.dist_L_proxy, color=c, ls=":", label=f"{label} vs S~")
    ax.set(xlabel="step k + 1", ylabel="|| L_k/||L_k|| - T/||T|| ||_F", title="direction of L_k")
    ax.legend(fontsize=6)
    return ax


CONVERGENCE_PANELS = ("ce", "norms", "proj", "sim_proxy", "sim_mm", "direction")


def convergence_panels(runs: Mapping[str, ConvergenceCurves], panels: Sequence[str] = CONVERGENCE_PANELS[:5],
                colors: Mapping[str, str] | None = None, panel_size: float = 3.6, ncols: int | None = None,
                suptitle: str = "") -> Figure:
    """Paper A Fig. 6: the chosen panels (names in :data:`CONVERGENCE_PANELS`), one curve per run.

    Panels fill a grid of ``ncols`` columns (default: all in one row); unused cells are hidden.
    """
    unknown = [p for p in panels if p not in CONVERGENCE_PANELS]
    if unknown or not panels:
        raise ValueError(f"unknown Fig. 6 panel(s) {unknown}; valid: {CONVERGENCE_PANELS}")
    if not runs:
        raise ValueError("convergence_panels needs at least one run")
    ncols = len(panels) if ncols is None else max(1, min(ncols, len(panels)))
    nrows = int(np.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_size * ncols, panel_size * nrows), squeeze=False,
                             layout="constrained")
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    draw = {"ce": plot_ce_gap, "norms": plot_norms, "proj": plot_projection_error,
            "sim_proxy": lambda ax, r, colors: plot_sim_curves(ax, r, "proxy", colors),
            "sim_mm": lambda ax, r, colors: plot_sim_curves(ax, r, "mm", colors),
            "direction": plot_direction_distance}
    for ax, name in zip(axes.ravel(), panels, strict=False):
        draw[name](ax, runs, colors=colors)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def legend_below(fig: Figure, ncol: int = 3, mark_dashed: bool = True, fontsize: float = 7) -> Figure:
    """Move every panel's legend into one figure legend under the panels (so no legend covers a curve).

    Entries are collected from all axes (a label shown once); with ``mark_dashed`` every dashed curve
    also gets sparse open markers and is drawn on top, so a dashed curve lying on a solid one stays
    visible. Returns ``fig``.

    Figure legibility of Paper A, Figs. 3 and 6 (chapters a05, a06, a07).
    """
    handles, labels = [], []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        if mark_dashed:
            for line in ax.get_lines():
                if line.get_linestyle() == "--":
                    line.set(marker="o", markersize=3.5, markerfacecolor="none", markevery=0.1, zorder=3)
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False)
    return fig
