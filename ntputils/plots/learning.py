r"""Paper B's rate-of-learning figures (Proposition 1, eq. (7); Figs. 12, 13, 18, 19).

Each function takes arrays computed by a chapter and returns the drawn :class:`~matplotlib.figure.Figure`
(the chapter shows it). Notation:
:math:`\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top`
is the centered support matrix with singular values :math:`\sigma_k`, :math:`s_k(\boldsymbol L_t)` the
singular values of the logits at time :math:`t=\eta\cdot\text{step}` of gradient descent, and
:math:`\sigma_k a_k(t)` the closed form of eq. (7) for the aligned initialization.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = [
    "balanced_vs_step_figure",
    "closed_form_error_figure",
    "learning_times_figure",
    "rank_limited_figure",
    "gd_dynamics_figure",
    "spread_positions",
    "step_dynamics_figure",
    "step_support_svd_figure",
    "support_svd_figure",
    "weighting_comparison_figure",
]


def support_svd_figure(S: np.ndarray, U: np.ndarray, s: np.ndarray, Vt: np.ndarray, title: str) -> Figure:
    r"""Support matrix :math:`\boldsymbol S` and the SVD
    :math:`\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma
    \boldsymbol V^\top` of its centering (Paper B, Fig. 12 top): four panels (``S``, ``U``, the singular
    values :math:`\sigma_k` as bars, ``V^T``) and a colorbar shared by ``U`` and ``V^T``.
    """
    fig, axes = plt.subplots(1, 4, figsize=(12.5, 3.4), gridspec_kw={"width_ratios": [12, 7, 7, 12]},
                             layout="constrained")
    axes[0].imshow(S, cmap="Greys", vmin=0, vmax=1)
    axes[0].set_title("support matrix S")
    lim = np.abs(np.r_[U.ravel(), Vt.ravel()]).max()
    im = axes[1].imshow(U, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[1].set_title("U (word analyzers)")
    axes[2].bar(np.arange(1, s.size + 1), s, color="gray")
    axes[2].set_title(r"$\Sigma$: singular values")
    axes[2].set_xlabel("k")
    axes[3].imshow(Vt, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[3].set_title(r"$V^\top$ (context analyzers)")
    for ax in (axes[0], axes[3]):
        ax.set_xlabel("context j")
    for ax in (axes[0], axes[1]):
        ax.set_ylabel("word z")
    axes[1].set_xlabel("k")
    axes[3].set_ylabel("k")
    fig.colorbar(im, ax=axes[3], shrink=0.8, label="entry")
    fig.suptitle(title)
    return fig


def gd_dynamics_figure(t: np.ndarray, curves: Mapping[str, Mapping[str, np.ndarray]], closed_form: np.ndarray,
                       colors: Mapping[str, str], title: str) -> Figure:
    r"""Gradient descent on the square-loss NTP-UFM :math:`\tfrac12\|\widetilde{\boldsymbol S}-\boldsymbol W
    \boldsymbol H\|_F^2` against Proposition 1 of Paper B (Fig. 12 bottom), one colour per run.

    ``curves[name]`` holds, on the time grid ``t``: ``loss``, ``norm_W``, ``norm_H``; the relative errors
    ``gram_W`` (:math:`\boldsymbol W\boldsymbol W^\top` vs
    :math:`\boldsymbol U\boldsymbol\Sigma\boldsymbol U^\top`),
    ``gram_H`` (:math:`\boldsymbol H^\top\boldsymbol H` vs
    :math:`\boldsymbol V\boldsymbol\Sigma\boldsymbol V^\top`),
    ``logits`` (:math:`\boldsymbol L_t` vs :math:`\widetilde{\boldsymbol S}`); ``sv`` (:math:`T\times r`, the
    :math:`s_k(\boldsymbol L_t)`) and ``comp`` (:math:`\|\boldsymbol L_t-\boldsymbol U\boldsymbol U^\top
    \boldsymbol L_t\boldsymbol V\boldsymbol V^\top\|_F`). ``closed_form`` is
    :math:`\sigma_k a_k(t)` of eq. (7)
    (:math:`T\times r`, dashed). Four panels, two by two (12 inches wide: legible in a book's text column).
    """
    r = closed_form.shape[1]
    fig, grid = plt.subplots(2, 2, figsize=(12, 8.4), layout="constrained")
    axes = grid.ravel()
    for name, c in curves.items():
        col = colors[name]
        axes[0].semilogy(t, c["loss"], color=col, label=f"{name}: loss")
        axes[0].semilogy(t, c["norm_W"], color=col, ls="--", label=rf"{name}: $\|W\|_F$")
        axes[0].semilogy(t, c["norm_H"], color=col, ls=":", label=rf"{name}: $\|H\|_F$")
        axes[1].semilogy(t, c["gram_W"], color=col, label=rf"{name}: $WW^\top$ vs $U\Sigma U^\top$")
        axes[1].semilogy(t, c["gram_H"], color=col, ls="--", label=rf"{name}: $H^\top H$ vs $V\Sigma V^\top$")
        axes[1].semilogy(t, c["logits"], color=col, ls=":", label=rf"{name}: $L$ vs $\widetilde{{S}}$")
        axes[2].plot(t, c["sv"], color=col, lw=1.5, label=[f"{name}: $s_k(L_t)$"] + [None] * (r - 1))
        axes[3].semilogy(t, np.maximum(c["comp"], 1e-18), color=col, label=name)
    axes[2].plot(t, closed_form, "k--", lw=1, label=["eq. (7): $\\sigma_k a_k(t)$"] + [None] * (r - 1))
    axes[0].set_title("loss and parameter norms")
    axes[1].set_title(r"relative error to the limit of Prop. 1")
    axes[2].set_title(r"singular values of $L_t$ (dashed: eq. 7)")
    axes[3].set_title(r"$\|L_t - UU^\top L_t VV^\top\|_F$ (outside U, V)")
    for ax in axes:
        ax.set_xlabel(r"time $t=\eta\cdot$step")
        ax.legend(fontsize=7)
    axes[2].set_ylabel(r"$s_k(L_t)$")
    fig.suptitle(title)
    return fig


def closed_form_error_figure(t: np.ndarray, etas: Sequence[float], curves: Sequence[np.ndarray],
                             extrapolated: np.ndarray, closed_form: np.ndarray) -> Figure:
    r"""Distance :math:`\max_k|s_k(\boldsymbol L_t)-\sigma_k a_k(t)|` of aligned-initialization GD (one
    curve per
    step size :math:`\eta`) and of its Richardson extrapolation :math:`\eta\to0` to the closed form of
    Paper B, eq. (7) (the check behind Fig. 12). One panel.
    """
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for eta, c in zip(etas, curves, strict=True):
        ax.semilogy(t, np.abs(c - closed_form).max(axis=1) + 1e-16, label=rf"GD, $\eta$={eta:g}")
    ax.semilogy(t, np.abs(extrapolated - closed_form).max(axis=1) + 1e-16, "k",
                label="Richardson extrapolation")
    ax.set_xlabel(r"time $t$")
    ax.set_ylabel(r"$\max_k |s_k(L_t)-\sigma_k a_k(t)|$")
    ax.set_title("aligned initialization: distance of GD to the closed form (eq. 7)")
    ax.legend()
    return fig


def learning_times_figure(t_sq: np.ndarray, sv_sq: np.ndarray, T_sq: np.ndarray, t_ce: np.ndarray,
                          sv_ce: np.ndarray, T_ce: np.ndarray, sigma: np.ndarray,
                          fit: tuple[float, float, float], title: str) -> Figure:
    r"""Singular values :math:`s_k(\boldsymbol L_t)` under the square loss (saturating at
    :math:`\sigma_k`) and
    the CE loss (growing without bound), with the half-times :math:`T_k` (:math:`s_k=\sigma_k/2`, dots), and
    :math:`T_k` against :math:`1/\sigma_k` (Paper B, Fig. 18; Proposition 1 predicts
    :math:`T_k\approx\tfrac{1}{\sigma_k}\log(\cdot)`, learning in the order of :math:`\sigma_k`).
    ``fit = (slope, intercept, R^2)`` of the least-squares line of the square-loss :math:`T_k` on
    :math:`1/\sigma_k`. Three panels: the two losses above, the learning times below.
    """
    slope_sq, icpt_sq, r2_sq = fit
    r = sigma.size
    fig, panels = plt.subplot_mosaic([[0, 1], [2, 2]], figsize=(12, 8.6), layout="constrained")
    axes = [panels[i] for i in range(3)]
    cmap = plt.get_cmap("viridis")
    for k in range(r):
        col = cmap(k / max(r - 1, 1))
        axes[0].plot(t_sq, sv_sq[:, k], color=col, label=rf"$s_{k + 1}$, $\sigma_{k + 1}$={sigma[k]:.2f}")
        axes[0].axhline(sigma[k], color=col, ls=":", lw=0.8)
        axes[0].plot(T_sq[k], sigma[k] / 2, "o", color=col)
        axes[1].semilogx(t_ce[1:], sv_ce[1:, k], color=col, label=rf"$s_{k + 1}$")
        axes[1].plot(T_ce[k], sigma[k] / 2, "o", color=col)
    axes[0].set_title("(left) square loss: saturation at the singular values of $\\widetilde{S}$")
    axes[1].set_title("(right) CE loss: unbounded growth, order preserved")
    for ax in axes[:2]:
        ax.set_xlabel(r"time $t=\eta\cdot$step")
        ax.set_ylabel(r"$s_k(L_t)$")
    # the curves rise early (left of the panels): legends go to the right, where the curves are flat;
    # on the square-loss panel above the plateaus s_2.. and below the plateau s_1 (a gap made by the y range)
    axes[0].set_ylim(-0.05 * sigma[0], 1.45 * sigma[0])
    axes[0].legend(fontsize=8, loc="upper right", ncol=2)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.8))
    x = 1 / sigma
    axes[2].plot(x, T_sq, "o", color="tab:purple", label=f"square loss (R$^2$={r2_sq:.3f})")
    axes[2].plot(x, slope_sq * x + icpt_sq, color="tab:purple", lw=1)
    axes[2].plot(x, T_ce, "s", mfc="none", color="tab:orange", label="CE")
    axes[2].set_xlabel(r"$1/\sigma_k$")
    axes[2].set_ylabel(r"half-time $T_k$ (log scale)")
    axes[2].set_yscale("log")
    axes[2].set_title(r"learning times vs $1/\sigma_k$ (line: least-squares fit, square loss)")
    axes[2].legend()
    fig.suptitle(title)
    return fig


def rank_limited_figure(t: np.ndarray, sv: np.ndarray, sigma: np.ndarray, d: int = 3) -> Figure:
    r"""Square-loss GD with :math:`d<V`: the :math:`d` learned singular values
    :math:`s_k(\boldsymbol L_t)` converge
    to the top :math:`\sigma_1,\dots,\sigma_d` of :math:`\widetilde{\boldsymbol S}` (Eckart-Young;
    Paper B, Fig. 19). ``sv`` is :math:`T\times(\ge d)`; every :math:`\sigma_k` is drawn as a grey line
    (dashed for the top :math:`d`). One panel.
    """
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(7.5, 4.3), layout="constrained")
    for k in range(d):
        ax.plot(t, sv[:, k], color=cmap(k / 5), label=rf"$s_{k + 1}(L_t)$")
    for k in range(sigma.size):
        ax.axhline(sigma[k], color="gray", ls=":" if k >= d else "--", lw=0.9)
    # labels of the sigma lines right of the axes, pushed apart where singular values are close, each
    # joined to its line
    label_y = spread_positions(sigma, min_gap=0.075 * (sigma.max() - min(0.0, sigma.min())))
    for k in range(sigma.size):
        ax.annotate(rf"$\sigma_{k + 1}={sigma[k]:.2f}$", xy=(1.0, sigma[k]),
                    xycoords=("axes fraction", "data"), xytext=(1.06, label_y[k]),
                    textcoords=("axes fraction", "data"), fontsize=8, va="center",
                    arrowprops={"arrowstyle": "-", "color": "gray", "lw": 0.6}, annotation_clip=False)
    ax.set_xlabel(r"time $t=\eta\cdot$step")
    ax.set_ylabel("singular value")
    ax.set_title(rf"Fig. 19: d = {d} < V: learned singular values vs those of $\widetilde{{S}}$ "
                 rf"(dashed: top {d})")
    ax.legend(loc="lower right")
    return fig


def spread_positions(values: Sequence[float], min_gap: float) -> np.ndarray:
    """Label positions as close as possible to ``values`` with every two at least ``min_gap`` apart.

    Sorted values are pushed apart in clusters: a cluster of labels that would be closer than
    ``min_gap`` is spread evenly, ``min_gap`` apart, around its mean (repeated until no two clusters
    collide). Returns the positions in the order of ``values``. Used for the labels of horizontal
    reference lines (Paper B, Fig. 19).
    """
    v = np.asarray(values, dtype=float)
    if min_gap < 0:
        raise ValueError(f"min_gap must be >= 0, got {min_gap}")
    order = np.argsort(v)
    clusters = [[float(x)] for x in v[order]]  # each cluster: its members' values (sorted)
    centres = [x[0] for x in clusters]

    def lowest(i: int) -> float:
        return centres[i] - min_gap * (len(clusters[i]) - 1) / 2

    merged = True
    while merged:
        merged = False
        for i in range(len(clusters) - 1):
            top_i = lowest(i) + min_gap * (len(clusters[i]) - 1)
            if lowest(i + 1) - top_i < min_gap - 1e-12:
                clusters[i] += clusters.pop(i + 1)
                centres[i] = float(np.mean(clusters[i]))
                centres.pop(i + 1)
                merged = True
                break
    pos = np.concatenate([lowest(i) + min_gap * np.arange(len(c)) for i, c in enumerate(clusters)])
    out = np.empty_like(pos)
    out[order] = pos
    return out


# --- STEP imbalance (Paper B, App. A.4 / D.1, Fig. 13) ---------------------------------------------------

# colour of the three singular-value tiers of the STEP-imbalanced support matrix (tier 1, 2, 3)
_STEP_TIER_COLORS = ("tab:red", "tab:purple", "tab:blue")


def _tier_colors(tier_of_mode: np.ndarray) -> np.ndarray:
    """The colour of every mode: ``_STEP_TIER_COLORS`` indexed by its (0-based) tier."""
    return np.array(_STEP_TIER_COLORS)[np.asarray(tier_of_mode)]


def step_support_svd_figure(S: np.ndarray, R: int, U: np.ndarray, s: np.ndarray, Vt: np.ndarray,
                            s_numerical: np.ndarray, tier_of_mode: np.ndarray) -> Figure:
    r"""The one-hot STEP-imbalanced support matrix :math:`\boldsymbol S` (``V x m``, majorities first, ratio
    :math:`R`) and the closed-form SVD :math:`\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma
    \boldsymbol V^\top` of its centering (Paper B, Fig. 13 top): four panels (``S``, ``U``, the singular
    values :math:`\sigma_k` as bars coloured by tier with the numerical SVD ``s_numerical`` as black
    ticks, ``V^T``; ``S`` and ``U`` above, ``V^T`` and the bars below) and a colorbar shared by ``U`` and
    ``V^T``. ``tier_of_mode[k]`` is the 0-based tier
    (1 red, 2 purple, 3 blue) of mode ``k``.
    """
    V, m = S.shape
    r = s.size
    fig, panels = plt.subplot_mosaic([[0, 1], [3, 2]], figsize=(12, 7.4), layout="constrained",
                                     width_ratios=[m, r + 2])
    axes = [panels[i] for i in range(4)]
    axes[0].imshow(S, cmap="Greys", vmin=0, vmax=1, aspect="auto")
    axes[0].set_title(f"support S (V={V}, R={R}, m={m})")
    axes[0].set_xlabel("context j")
    axes[0].set_ylabel("word z (majorities first)")
    lim = np.abs(np.r_[U.ravel(), Vt.ravel()]).max()
    im = axes[1].imshow(U, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    axes[1].set_title("U (closed form)")
    axes[1].set_xlabel("k")
    axes[1].set_xticks(range(r), range(1, r + 1))
    axes[2].bar(np.arange(1, r + 1), s, color=_tier_colors(tier_of_mode))
    axes[2].plot(np.arange(1, r + 1), s_numerical, "k_", ms=14, label="numerical SVD")
    axes[2].set_title(r"$\Sigma$: three tiers")
    axes[2].set_xlabel("k")
    axes[2].set_xticks(range(1, r + 1))
    axes[2].legend(fontsize=8)
    axes[3].imshow(Vt, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    axes[3].set_title(r"$V^\top$ (closed form, with the $1/\sqrt{R}$ fix)")
    axes[3].set_xlabel("context j")
    axes[3].set_ylabel("k")
    axes[3].set_yticks(range(r), range(1, r + 1))
    fig.colorbar(im, ax=axes[3], shrink=0.8, label="entry")
    fig.suptitle(r"Fig. 13 (top): one-hot STEP-imbalanced S and the SVD of $\widetilde{S}$")
    return fig


def step_dynamics_figure(t: np.ndarray, curves: Mapping[str, np.ndarray], tier_of_mode: np.ndarray,
                         closed_form: np.ndarray | None, panel_title: str, title: str,
                         overlay: np.ndarray | None = None) -> Figure:
    r"""One GD run of the (weighted) square-loss NTP-UFM on the STEP-imbalanced support (Paper B, Fig. 13
    middle and bottom), in the four panels of Fig. 12 (two by two).

    ``curves`` holds, on the time grid ``t``: ``loss``, ``norm_W``, ``norm_H``; the relative errors
    ``logits`` (:math:`\boldsymbol L_t` vs its limit) and ``gram_W`` (:math:`\boldsymbol W\boldsymbol W^\top`
    vs :math:`\boldsymbol U\boldsymbol\Sigma\boldsymbol U^\top`); ``amplitudes`` (:math:`T\times r`, the mode
    amplitudes :math:`c_k(t)=\boldsymbol u_k^\top\boldsymbol L_t\boldsymbol v_k`, coloured by
    ``tier_of_mode``) and ``comp`` (:math:`\|\boldsymbol L_t-\boldsymbol U\boldsymbol U^\top\boldsymbol L_t
    \boldsymbol V\boldsymbol V^\top\|_F`, floored at 1e-18). ``closed_form`` is :math:`\sigma_k a_k(t)` of
    eq. (7) (dashed). With ``overlay`` (:math:`T\times r`, Fig. 13 bottom: the amplitudes of the unweighted
    logits :math:`\boldsymbol L=\boldsymbol W\boldsymbol H'\boldsymbol\Omega^{-1}`) the amplitudes are
    redrawn black and the overlay is drawn in the tier colours.
    """
    colors = _tier_colors(tier_of_mode)
    sv = curves["amplitudes"]
    fig, grid = plt.subplots(2, 2, figsize=(12, 8), layout="constrained")
    axes = grid.ravel()
    # curves that can coincide (balanced norms; the two errors) are drawn wide and light under thin dark
    # dashes, so both stay visible where they overlap
    axes[0].semilogy(t, curves["loss"], "k", label="loss")
    axes[0].semilogy(t, curves["norm_H"], color="0.7", lw=4, label=r"$\|H\|_F$ (wide grey)")
    axes[0].semilogy(t, curves["norm_W"], "k--", lw=1, label=r"$\|W\|_F$ (dashed)")
    axes[1].semilogy(t, curves["logits"], color="tab:blue", lw=4, alpha=0.5, label="logits vs limit (wide)")
    axes[1].semilogy(t, curves["gram_W"], "--", color="tab:orange", lw=1.2,
                     label=r"$WW^\top$ vs $U\Sigma U^\top$ (dashed)")
    amp_lw = 1.5 if overlay is None else 1.0
    for k in range(sv.shape[1]):
        axes[2].plot(t, sv[:, k], color=colors[k], lw=amp_lw, zorder=3)
    if closed_form is not None:
        axes[2].plot(t, closed_form, "k--", lw=0.8, zorder=4)
    axes[3].semilogy(t, np.maximum(curves["comp"], 1e-18))
    axes[0].set_title("loss and norms")
    axes[1].set_title("relative error to the limit")
    axes[2].set_title(panel_title)
    axes[3].set_title(r"$\|L - UU^\top L VV^\top\|_F$")
    for ax in axes:
        ax.set_xlabel(r"time $t=\eta\cdot$step")
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    axes[2].set_ylabel(r"$u_k^\top L_t v_k$")
    if overlay is not None:
        # the black curves (amplitudes of the weighted logits, all -> 1) go on top, dashed, over wide
        # light tier-coloured curves of the unweighted logits: where a tier curve also ends at 1 both show
        for line in axes[2].lines[: sv.shape[1]]:
            line.set(color="k", ls=(0, (4, 2)), zorder=4)
        for k in range(overlay.shape[1]):
            axes[2].plot(t, overlay[:, k], color=colors[k], lw=3.5, alpha=0.55, zorder=2)
        axes[2].legend(handles=[plt.Line2D([], [], color="k", ls=(0, (4, 2)), lw=1,
                                           label="weighted (black, dashed)"),
                                plt.Line2D([], [], color="0.5", lw=3.5, alpha=0.55,
                                           label="unweighted L (wide, tier colour)")],
                       fontsize=8, loc="lower right")
    fig.suptitle(title)
    return fig


def weighting_comparison_figure(t: np.ndarray, runs: Sequence[tuple[np.ndarray, str]],
                                tier_of_mode: np.ndarray, *, title: str) -> Figure:
    r"""Mode amplitudes :math:`\boldsymbol u_k^\top\boldsymbol L_t\boldsymbol v_k` of the logits
    :math:`\boldsymbol L=\boldsymbol W\boldsymbol H` for several weightings :math:`\boldsymbol\Omega` of the
    square loss (Paper B, Eq. 10, with GD on :math:`(\boldsymbol W,\boldsymbol H)`; not a figure of the
    paper, a companion of Paper B, Fig. 13), one panel per ``(amplitudes, panel title)`` of ``runs`` (shared
    y axis), coloured by tier; ``title`` says what the panels share (the initialization, say).
    """
    colors = _tier_colors(tier_of_mode)
    fig, axes = plt.subplots(1, len(runs), figsize=(min(12.5, 5.5 * len(runs)), 4.2), layout="constrained",
                             sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (sv, ttl) in zip(axes, runs, strict=True):
        for k in range(sv.shape[1]):
            ax.plot(t, sv[:, k], color=colors[k])
        ax.set_title(ttl)
        ax.set_xlabel(r"time $t=\eta\cdot$step")
    axes[0].set_ylabel(r"$u_k^\top L_t v_k$ (tier 1 red, 2 purple, 3 blue)")
    fig.suptitle(title)
    return fig


def balanced_vs_step_figure(s_balanced: np.ndarray, s_step: np.ndarray, tier_of_mode: np.ndarray,
                            R: int) -> Figure:
    r"""Nonzero singular values :math:`\sigma_k(\widetilde{\boldsymbol S})` of the balanced one-hot support
    :math:`\mathbb I_V\otimes\mathbb 1_k^\top` (one tier, green) next to those of the STEP-imbalanced one with
    ratio :math:`R` (three tiers, tier colours) (App. A.4; not a figure of the paper, a companion of
    Paper B, Fig. 13). One panel.
    """
    fig, ax = plt.subplots(figsize=(6.5, 3.4), layout="constrained")
    ax.bar(np.arange(1, s_balanced.size + 1) - 0.2, s_balanced, width=0.4, color="tab:green",
           label="balanced")
    ax.bar(np.arange(1, s_step.size + 1) + 0.2, s_step, width=0.4, color=_tier_colors(tier_of_mode),
           label=f"STEP, R={R}")
    ax.set_xlabel("k")
    ax.set_ylabel(r"$\sigma_k(\widetilde{S})$")
    ax.set_title("balanced one-hot: one tier; STEP imbalance: three tiers")
    ax.legend()
    return fig
