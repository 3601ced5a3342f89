r"""Paper B's concept figures on the organism dataset (Figs. 1, 2A-C, 10).

Each function takes arrays computed by a chapter and returns the drawn :class:`~matplotlib.figure.Figure`
(the chapter shows it). Notation: :math:`\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma
\boldsymbol V^\top` is the centered support matrix; the columns :math:`\boldsymbol u_k` of
:math:`\boldsymbol U` are the word analyzers, the columns :math:`\boldsymbol v_k` of :math:`\boldsymbol V`
the context analyzers; :math:`\boldsymbol W` (rows: words) and :math:`\boldsymbol H` (columns: contexts) are
the trained embeddings, and :math:`\boldsymbol u^{\rm d}_k=\boldsymbol W^\top\boldsymbol u_k`,
:math:`\boldsymbol v^{\rm d}_k=\boldsymbol H\boldsymbol v_k` the concept representations (eq. 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from mpl_toolkits.mplot3d import proj3d
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

__all__ = [
    "ORGANISM_GROUP_COLORS",
    "concept_plane_figure",
    "organism_data_figure",
    "organism_embeddings_figure",
    "organism_orthants_figure",
    "organism_svd_figure",
]

#: colour of every category of the organism dataset (mammals blue, other animals green, trees and plants
#: red, flowers orange); the legend of :func:`organism_embeddings_figure` names these colours.
ORGANISM_GROUP_COLORS = {"Felines": "tab:blue", "Mammals": "tab:blue", "Birds": "tab:green",
                         "Fish": "tab:green", "Animals": "tab:green", "Trees": "tab:red", "Plants": "tab:red",
                         "Flowers": "tab:orange"}


# candidate label offsets (points) and alignments, tried in order: beside the point first, then farther out
_OFFSETS = [((6, 4), "left", "bottom"), ((6, -4), "left", "top"), ((-6, 4), "right", "bottom"),
            ((-6, -4), "right", "top"), ((0, 9), "center", "bottom"), ((0, -9), "center", "top")]
_OFFSETS += [((dx * f, dy * f), ha, va) for f in (3, 5, 8) for (dx, dy), ha, va in _OFFSETS]


def _place_labels(ax: Axes, points: np.ndarray, texts: Sequence[str], *,
                  fontsize: float | Sequence[float] = 8, color: str | Sequence[str] = "k") -> None:
    """Annotate ``points`` (``n x 2`` data coordinates, or ``n x 3`` on a 3-D axes) with ``texts`` so that no
    two labels overlap and no label covers a point: each label takes the first free candidate offset of
    ``_OFFSETS`` (the least-overlapping one if none is free), with a thin leader line when it is not beside
    its point. ``fontsize`` and ``color`` are one value or one per label. Needs the axes limits to be final
    (it draws the figure once to measure the texts).
    """
    n_labels = len(texts)
    sizes = [fontsize] * n_labels if np.isscalar(fontsize) else list(fontsize)
    colors = [color] * n_labels if isinstance(color, str) else list(color)
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pts = np.asarray(points, dtype=float)
    if pts.shape[1] == 3:  # 3-D: annotate in the projected 2-D coordinates of the current view
        x2, y2, _ = proj3d.proj_transform(pts[:, 0], pts[:, 1], pts[:, 2], ax.get_proj())
        pts = np.c_[x2, y2]
    disp = ax.transData.transform(pts)
    r = 5.0  # half size (pixels) of the box kept free around every marker
    taken = [Bbox.from_extents(x - r, y - r, x + r, y + r) for x, y in disp]
    # tick labels (3-D axes draw them inside their box) and legends are obstacles too
    axis_objs = [ax.xaxis, ax.yaxis] + ([ax.zaxis] if hasattr(ax, "zaxis") else [])
    ticks = [t.get_window_extent(renderer) for a in axis_objs for t in a.get_ticklabels() if t.get_text()]
    taken += [b for b in ticks if b.overlaps(fig.bbox)]  # 3-D axes report off-canvas boxes for unused ticks
    taken += [leg.get_window_extent(renderer) for leg in [ax.get_legend()] if leg is not None]
    frame = ax.bbox
    if hasattr(ax, "zaxis"):  # keep clear of the z tick labels, drawn inside the right edge of a 3-D axes
        frame = Bbox.from_extents(frame.x0, frame.y0, frame.x1 - 0.12 * frame.width, frame.y1)

    def shared(a: Bbox, b: Bbox) -> float:
        return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))

    def overlap(bb: Bbox) -> float:
        """Area shared with taken boxes plus area outside the axes (pixels^2)."""
        return sum(shared(bb, o) for o in taken) + bb.width * bb.height - shared(bb, frame)

    for (x, y), text, size, col in zip(pts, texts, sizes, colors, strict=True):
        best = None
        for n, (off, ha, va) in enumerate(_OFFSETS):
            arrow = {"arrowstyle": "-", "color": "0.6", "lw": 0.5} if n >= 6 else None  # leader line
            ann = ax.annotate(text, (x, y), xytext=off, textcoords="offset points", ha=ha, va=va,
                              fontsize=size, color=col, arrowprops=arrow, annotation_clip=False)
            # the text alone (an annotation's own extent includes its leader line, which starts at the point)
            ann.update_positions(renderer)
            bb = Text.get_window_extent(ann, renderer).padded(1.5)
            cost = overlap(bb)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, ann, bb)
            else:
                ann.remove()
            if cost == 0.0:
                break
        taken.append(best[2])


def organism_svd_figure(U: np.ndarray, sigma: np.ndarray, Vt: np.ndarray, words: Sequence[str],
                        attributes: Sequence[str]) -> Figure:
    r"""The SVD :math:`\widetilde{\boldsymbol S}=\boldsymbol U\boldsymbol\Sigma\boldsymbol V^\top` of the
    organism data (Paper B, Fig. 1): (A) :math:`\boldsymbol U` (rows: words), (B) the singular values
    :math:`\sigma_k` as labelled bars, (C) :math:`\boldsymbol V` (rows: attributes), with a colorbar shared
    by :math:`\boldsymbol U` and :math:`\boldsymbol V`.
    """
    r = sigma.size
    fig, panels = plt.subplot_mosaic([[0, 2], [1, 1]], figsize=(12, 10), layout="constrained",
                                     height_ratios=[1.6, 1])  # U and V above, the singular values below
    axes = [panels[i] for i in range(3)]
    lim = np.abs(np.r_[U.ravel(), Vt.ravel()]).max()
    im = axes[0].imshow(U, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    axes[0].set_yticks(range(len(words)), words)
    axes[0].set_xticks(range(r), [str(k + 1) for k in range(r)])
    axes[0].set_xlabel("singular dimension k")
    axes[0].set_title("(A) left singular matrix U (rows: words)")
    axes[1].bar(np.arange(1, r + 1), sigma, color="tab:gray")
    for k, s_k in enumerate(sigma, start=1):
        axes[1].text(k, s_k + 0.05, f"{s_k:.3f}", ha="center", fontsize=9)
    axes[1].set_xlabel("singular dimension k")
    axes[1].set_ylabel(r"$\sigma_k$")
    axes[1].set_title(rf"(B) singular values of $\widetilde{{S}}$ (rank {r})")
    axes[2].imshow(Vt.T, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    axes[2].set_yticks(range(len(attributes)), attributes, fontsize=9)
    axes[2].set_xticks(range(r), [str(k + 1) for k in range(r)])
    axes[2].set_xlabel("singular dimension k")
    axes[2].set_title("(C) right singular matrix V (rows: attributes)")
    fig.colorbar(im, ax=axes[2], shrink=0.8, label="analyzer coordinate (entry of U or V)")
    fig.suptitle(r"Fig. 1: SVD of the centered support matrix $\widetilde{S}=U\Sigma V^\top$ "
                 r"(signs: largest |entry| of $u_k$ positive)")
    return fig


def organism_embeddings_figure(Pw: np.ndarray, Ph: np.ndarray, word_colors: Sequence[str],
                               ctx_colors: Sequence[str], word_labels: Mapping[int, str],
                               ctx_labels: Mapping[int, str], title: str) -> Figure:
    r"""Word embeddings (rows of :math:`\boldsymbol W`, dots) and context embeddings (columns of
    :math:`\boldsymbol H`, triangles) in 3-D PCA coordinates ``Pw``, ``Ph`` (Paper B, Fig. 2A), coloured by
    category (:data:`ORGANISM_GROUP_COLORS`). ``word_labels``/``ctx_labels`` map a point's index to its text
    (a context label is shortened to its first name). One 3-D panel.
    """
    fig = plt.figure(figsize=(9, 7.5))
    ax = fig.add_subplot(projection="3d")
    ax.scatter(*Pw.T, c=word_colors, marker="o", s=60, depthshade=False, label="words (rows of W)")
    ax.scatter(*Ph.T, c=ctx_colors, marker="^", s=70, depthshade=False, label="contexts (columns of H)")
    handles = [plt.Line2D([], [], ls="", marker="o", color="gray", label="words (rows of W)"),
               plt.Line2D([], [], ls="", marker="^", color="gray", label="contexts (columns of H)")]
    handles += [plt.Line2D([], [], ls="", marker="s", color=c, label=n) for n, c in
                [("mammals", "tab:blue"), ("other animals", "tab:green"), ("trees, plants", "tab:red"),
                 ("flowers", "tab:orange")]]
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_zlabel("PC 3")
    ax.set_title(title)
    ax.legend(handles=handles, loc="upper left", fontsize=8)
    # labels placed after the view is final, so that none overlaps another or a point
    ctx_texts = [lab.split(" / ")[0] + (" ..." if " / " in lab else "") for lab in ctx_labels.values()]
    _place_labels(ax, np.r_[Pw[list(word_labels)], Ph[list(ctx_labels)]],
                  list(word_labels.values()) + ctx_texts,
                  fontsize=[8] * len(word_labels) + [7] * len(ctx_labels),
                  color=["k"] * len(word_labels) + ["dimgray"] * len(ctx_labels))
    return fig


def _box(ax, lower, upper, color, alpha):
    """Draw the translucent axis-aligned box [lower, upper] (an orthant cut to the plot range)."""
    x0, y0, z0 = lower
    x1, y1, z1 = upper
    corners = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                        [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]])
    faces = [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 5, 4], [2, 3, 7, 6], [1, 2, 6, 5], [0, 3, 7, 4]]
    ax.add_collection3d(Poly3DCollection([corners[f] for f in faces], facecolor=color, alpha=alpha,
                                         edgecolor=color, linewidth=0.5))


def organism_orthants_figure(X: np.ndarray, levels: Sequence[np.ndarray], labels: Mapping[int, str]
                             ) -> Figure:
    r"""Contexts in the coordinates :math:`(\boldsymbol v_1,\boldsymbol v_2,\boldsymbol v_4)[j]` of the
    context analyzers (``X``, one row per attribute) with the nested orthants of Definition 1 on
    :math:`\mathcal K=\{1,2,4\}` drawn as boxes: :math:`[+1]` animal (green) :math:`\supset[+1,+1]` mammal
    (blue) :math:`\supset[+1,+1,-1]` feline (gold) (Paper B, Fig. 2B, whose signs are all :math:`-1`).
    ``levels`` are the member indices of the three configurations (a point takes the colour of the finest
    one it belongs to); ``labels`` maps a point's index to its text. One 3-D panel.
    """
    fig = plt.figure(figsize=(9, 7.5))
    ax = fig.add_subplot(projection="3d")
    lo, hi = X.min(axis=0) - 0.05, X.max(axis=0) + 0.05
    _box(ax, [0, lo[1], lo[2]], [hi[0], hi[1], hi[2]], "green", 0.06)  # c_1 = +1: animal
    _box(ax, [0, 0, lo[2]], [hi[0], hi[1], hi[2]], "blue", 0.08)  # [+1, +1]: mammal
    _box(ax, [0, 0, lo[2]], [hi[0], hi[1], 0], "gold", 0.25)  # [+1, +1, -1]: feline
    finest = np.full(len(X), "lightgray", dtype=object)
    for color, members in zip(["green", "blue", "gold"], levels, strict=True):
        finest[members] = color
    ax.scatter(*X.T, c=list(finest), s=80, edgecolor="k", depthshade=False)
    ax.set_xlabel(r"$v_1$")
    ax.set_ylabel(r"$v_2$")
    ax.set_zlabel(r"$v_4$")
    ax.set_title("Fig. 2B: orthants on K={1,2,4} of the context analyzers\n"
                 "green [+1] animal, blue [+1,+1] mammal, gold [+1,+1,-1] feline (paper: all signs -1)")
    # the animal and feline points nearly coincide in this view: labels are placed apart from each other
    _place_labels(ax, X[list(labels)], [lab.replace(" / ", "\n") for lab in labels.values()], fontsize=7)
    return fig


def concept_plane_figure(panels: Sequence[tuple[str, np.ndarray, Sequence[np.ndarray], Mapping[int, str],
                                                Sequence[str], str]]) -> Figure:
    r"""Embeddings projected on the plane of the two leading concept representations (Paper B, Fig. 10,
    eq. 4), one panel per ``(title, P2, directions, labels, colors, marker)``: ``P2`` (``n x 2``) are the
    points' coordinates in an orthonormal basis of :math:`\mathrm{span}\{\boldsymbol u^{\rm d}_1,
    \boldsymbol u^{\rm d}_2\}` (resp. :math:`\boldsymbol v^{\rm d}_{1,2}`), ``directions`` the two concept
    representations in that basis, drawn as axes (scaled to the points' range, "+" at the positive end);
    ``marker`` ``"^"`` marks context embeddings
    (:math:`\boldsymbol v^{\rm d}_k=\boldsymbol H\boldsymbol v_k`), anything else word embeddings
    (:math:`\boldsymbol u^{\rm d}_k=\boldsymbol W^\top\boldsymbol u_k`).
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(min(12.5, 6.25 * len(panels)), 6.5),
                             layout="constrained", squeeze=False)
    axes = axes[0]
    for ax, (title, P2, directions, _, colors, marker) in zip(axes, panels, strict=True):
        ax.scatter(*P2.T, c=colors, marker=marker, s=70, edgecolor="k", zorder=3)
        span = np.abs(P2).max()
        for k, color in [(0, "tab:blue"), (1, "tab:green")]:
            direction = directions[k]
            direction = direction / np.linalg.norm(direction) * span
            formula = f"$v^d_{k + 1}=Hv_{k + 1}$" if marker == "^" else f"$u^d_{k + 1}=W^\\top u_{k + 1}$"
            ax.plot(*np.c_[-direction, direction], color=color, lw=2, label=f"concept {k + 1}: {formula}")
            ax.annotate("+", direction, color=color, fontsize=16, weight="bold")
        ax.axhline(0, color="gray", lw=0.5)
        ax.axvline(0, color="gray", lw=0.5)
        ax.set_xlabel("coordinate along concept 1")
        ax.set_ylabel("coordinate orthogonal to it, toward concept 2")
        ax.set_title(title)
        # below the panel: a legend inside would compete with the point labels for the free space
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=9)
    fig.suptitle("Fig. 10: trained embeddings projected on the plane of the two leading concept "
                 "representations (eq. 4)")
    fig.get_layout_engine().set(w_pad=0.1)
    fig.canvas.draw()  # fix the layout before measuring the labels
    fig.set_layout_engine("none")
    for ax, (_, P2, _, labels, _, _) in zip(axes, panels, strict=True):
        _place_labels(ax, P2[list(labels)], [lab.replace(" / ", "\n") for lab in labels.values()], fontsize=8)
    return fig


def organism_data_figure(P: np.ndarray, words: Sequence[str], attributes: Sequence[str]) -> Figure:
    r"""The training data :math:`\boldsymbol P^\top` of the organism dataset (Paper B, Fig. 2C): rows are the
    contexts "The organism that [attribute] is", columns the subjects (next tokens), entries
    :math:`\hat p_{j,z}`, with a colorbar. One panel.
    """
    fig, ax = plt.subplots(figsize=(10, 6.5))
    im = ax.imshow(P.T, cmap="Greens", vmin=0, aspect="auto")
    ax.set_xticks(range(len(words)), words, rotation=60, ha="right")
    ax.set_yticks(range(len(attributes)), [f"The organism that {a} is" for a in attributes], fontsize=9)
    ax.set_xlabel("subject (next token)")
    ax.set_ylabel("attribute (context)")
    ax.set_title(r"Fig. 2C: training data $P^\top$ (RECONSTRUCTED table)")
    fig.colorbar(im, ax=ax, label=r"$\hat p_{j,z}$")
    return fig
