"""Word clouds of concept clusters (paper B sec. 5, App. F, Figs. 4-6 and 11; chapters b04, b07).

Paper B shows orthant clusters (Definition 1) and k-means clusters of the word-analyzer rows as word
clouds of the 40 most typical members, font size proportional to
``Typicality(z; C) = sum_{k in K} |u_k[z]|``. This module renders those clouds deterministically:
:class:`CloudPanel` (one cloud), :func:`cluster_panel` (a panel of a cluster, titled with its best class
and purity from :mod:`ntputils.analysis.purity`), :class:`CloudRenderer` (images, grids and binary trees
of panels) and :func:`display_token` (the visible form of a BPE token).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ntputils.analysis.purity import TOKEN_START, ClassLabels, cluster_purity
from ntputils.plots.figures import MAX_WIDTH_IN

#: a grid never has more columns than this when it would be wider than :data:`MAX_WIDTH_IN` (a cloud keeps
#: at least a quarter of the text column, so its middle-sized words stay readable inline)
MIN_COLUMNS_KEPT = 4

BLANK_TOKEN = "<sp>"
#: Display bodies that are layout or markup, not words: left out of clouds when ``drop_layout``.
LAYOUT_MARKS = ("\\n", "⏎", "⇥", "\\r")
MARKUP_TOKENS = ("<unk>", "<|endoftext|>", "<other>")


def is_layout(token: str) -> bool:
    """True for a token that shows no word: blank, newline/tab marks only, ``<unk>`` or ``<|endoftext|>``.

    Paper B's clouds (Sec. 5.1, Figs. 4-7) show words; such tokens are real next tokens but carry no word,
    so :class:`CloudRenderer` leaves them out of the image (the cluster and its purity keep them).
    """
    body = display_token(token)
    body = body[len(TOKEN_START):] if body.startswith(TOKEN_START) else body
    if body in (BLANK_TOKEN, *MARKUP_TOKENS):
        return True
    for mark in LAYOUT_MARKS:
        body = body.replace(mark, "")
    return not body.strip()


def display_token(token: str) -> str:
    """Visible form of a token for a cloud: ``#`` (word start) is kept, a blank body becomes ``<sp>``,
    newline marks (``\\n``, ``⏎``) become ``\\n`` and tab marks ``\\t``.

    Word clouds of Paper B, Sec. 5.1 (# marks a token start).
    """
    # ASCII marks in the image: the cloud font has no glyph for "⏎" / "⇥" (tables keep them)
    shown = token.replace("\n", "\\n").replace("⏎", "\\n").replace("⇥", "\\t")
    if not shown.strip().strip(TOKEN_START).strip():
        return (TOKEN_START if shown.startswith(TOKEN_START) else "") + BLANK_TOKEN
    return shown.strip()


class CloudPanel(NamedTuple):
    """One word cloud of a grid: title, words and weights (typicality); empty words = empty orthant.

    Word clouds of Paper B, Sec. 5.1; size proportional to typicality, Paper B, Def. 1.
    """

    title: str
    words: Sequence[str]
    weights: Sequence[float]


def cluster_panel(title: str, indices: Sequence[int], weights: Sequence[float], names: Sequence[str],
                  labels: ClassLabels | None = None) -> CloudPanel:
    """A :class:`CloudPanel` of the members ``indices`` (display ``names``, font ~ ``weights``).

    With ``labels`` a second title line gives the best class and its purity, e.g. ``noun 0.90``.

    Word clouds of Paper B, Sec. 5.1 (Figs. 4-7).
    """
    idx = np.asarray(indices, dtype=np.intp)
    w = np.asarray(weights, dtype=np.float64)
    if idx.shape != w.shape:
        raise ValueError(f"indices and weights differ in shape: {idx.shape} vs {w.shape}")
    if labels is not None and idx.size:
        pur = cluster_purity(idx, labels)
        title = f"{title}\n{pur.best_class} {pur.purity:.2f}"
    return CloudPanel(title, [names[i] for i in idx], w.tolist())


@dataclass
class CloudRenderer:
    """Deterministic word clouds (``wordcloud.WordCloud.generate_from_frequencies``), cached by content.

    Font size is proportional to the weight (``relative_scaling=1``): the largest word gets
    ``max_font_size`` and word ``z`` about ``max_font_size * weight[z] / max(weight)`` (wordcloud shrinks
    a word that does not fit). Layout and colours depend only on ``seed`` and the words/weights, so the
    same input gives the same image. ``n_rendered`` counts images actually drawn (cache misses).

    Word clouds of Paper B, Sec. 5.1 (Figs. 4-7).
    """

    width: int = 300
    height: int = 180
    max_font_size: int = 40
    min_font_size: int = 5
    seed: int = 0
    colormap: str = "viridis"
    drop_layout: bool = True
    n_rendered: int = 0
    _cache: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.width < 20 or self.height < 20:
            raise ValueError(f"cloud size must be at least 20 x 20 pixels, got {self.width} x {self.height}")
        if not 1 <= self.min_font_size <= self.max_font_size:
            raise ValueError(f"need 1 <= min_font_size <= max_font_size, got {self.min_font_size}, "
                             f"{self.max_font_size}")

    @staticmethod
    def frequencies(words: Sequence[str], weights: Sequence[float],
                    drop_layout: bool = False) -> dict[str, float]:
        """``{display token: weight}``; tokens that display alike keep their largest weight.

        ``drop_layout`` leaves out :func:`is_layout` tokens (newline, blank, ``<unk>``); the result may
        then be empty.
        """
        w = np.asarray(weights, dtype=np.float64)
        if len(words) != w.size:
            raise ValueError(f"words and weights differ in length: {len(words)} vs {w.size}")
        if w.size == 0:
            raise ValueError("a word cloud needs at least one word")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("word-cloud weights must be finite and positive (typicality > 0)")
        out: dict[str, float] = {}
        for word, weight in zip(words, w, strict=True):
            if drop_layout and is_layout(word):
                continue
            key = display_token(word)
            out[key] = max(out.get(key, 0.0), float(weight))
        return out

    def image(self, words: Sequence[str], weights: Sequence[float]) -> np.ndarray:
        """(height, width, 3) uint8 image of the cloud."""
        from wordcloud import WordCloud

        freqs = self.frequencies(words, weights, drop_layout=self.drop_layout)
        if not freqs:
            return np.full((self.height, self.width, 3), 255, dtype=np.uint8)
        key = tuple(sorted((k, round(v, 12)) for k, v in freqs.items()))
        if key not in self._cache:
            cloud = WordCloud(width=self.width, height=self.height, random_state=self.seed,
                              background_color="white", colormap=self.colormap, prefer_horizontal=1.0,
                              relative_scaling=1.0, max_words=len(freqs), max_font_size=self.max_font_size,
                              min_font_size=self.min_font_size, margin=1)
            self._cache[key] = cloud.generate_from_frequencies(freqs).to_array()
            self.n_rendered += 1
        return self._cache[key]

    def draw(self, ax, panel: CloudPanel, fontsize: float = 8, width: float | None = None) -> None:
        """Draw one panel on a matplotlib axis (a note instead of a cloud for an empty panel); its title is
        wrapped to ``width`` inches when given."""
        ax.set_xticks([])
        ax.set_yticks([])
        if len(panel.words) == 0:
            ax.text(0.5, 0.5, "empty", ha="center", va="center", fontsize=fontsize, color="0.5",
                    transform=ax.transAxes)
            for spine in ax.spines.values():
                spine.set_color("0.85")
        elif self.drop_layout and all(is_layout(w) for w in panel.words):
            ax.text(0.5, 0.5, "only newline / blank /\n<unk> tokens", ha="center", va="center",
                    fontsize=fontsize, color="0.4", transform=ax.transAxes)
        else:
            ax.imshow(self.image(panel.words, panel.weights), interpolation="bilinear")
            for spine in ax.spines.values():
                spine.set_color("0.7")
        title = panel.title if width is None else wrapped(panel.title, width, fontsize)
        ax.set_title(title, fontsize=fontsize)

    def grid(self, panels: Sequence[CloudPanel], ncols: int = 8, cell: tuple[float, float] = (2.3, 1.75),
             title: str = "", fontsize: float = 7):
        """A figure with the panels in rows of ``ncols`` (empty panels get a note). Returns the figure.

        A grid wider than :data:`MAX_WIDTH_IN` is reflowed: ``ncols`` is halved (order kept, so a grid of
        ``2^p`` sign configurations stays in configuration order) while it is above
        :data:`MIN_COLUMNS_KEPT`, and the cells are then scaled down to fit."""
        import matplotlib.pyplot as plt

        if not panels:
            raise ValueError("grid needs at least one panel")
        if ncols < 1:
            raise ValueError(f"ncols must be >= 1, got {ncols}")
        ncols = min(ncols, len(panels))
        while ncols > MIN_COLUMNS_KEPT and cell[0] * ncols > MAX_WIDTH_IN:
            ncols //= 2
        cell = _fitted(cell, ncols)
        nrows = -(-len(panels) // ncols)
        size = (cell[0] * ncols, cell[1] * nrows + 0.5)
        fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=False, layout="constrained")
        for ax, panel in zip(axes.flat, panels, strict=False):
            self.draw(ax, panel, fontsize, cell[0])
        for ax in axes.flat[len(panels):]:
            ax.axis("off")
        if title:
            fig.suptitle(wrapped(title, size[0], fontsize + 4), fontsize=fontsize + 4)
        return fig

    def tree(self, levels: Sequence[Sequence[CloudPanel]], cell: tuple[float, float] = (1.2, 1.5),
             title: str = "", fontsize: float = 6, stack_last: bool = False):
        """Binary-tree layout: level ``i`` holds ``2 * len(level i-1)`` panels, each spanning its children.

        Panel ``j`` of a level splits into panels ``2j`` and ``2j+1`` of the next (the two signs of the
        added concept, as in :func:`ntputils.analysis.concepts.sign_configurations` order). With
        ``stack_last`` the two children of each panel of the last-but-one level are drawn one above the
        other below it (two rows, half the width), which keeps deep trees readable. Cells are scaled down so
        that the figure is at most :data:`MAX_WIDTH_IN` wide.
        """
        import matplotlib.pyplot as plt

        if not levels:
            raise ValueError("tree needs at least one level")
        for i, level in enumerate(levels):
            if not level or (i and len(level) != 2 * len(levels[i - 1])):
                raise ValueError("each tree level must have twice as many panels as the previous one")
        if stack_last and len(levels) < 2:
            raise ValueError("stack_last needs at least two levels")
        width = len(levels[-2]) if stack_last else len(levels[-1])
        nrows = len(levels) + (1 if stack_last else 0)
        cell = _fitted(cell, width)
        fig = plt.figure(figsize=(cell[0] * width, cell[1] * nrows + 0.5), layout="constrained")
        spec = fig.add_gridspec(nrows, width)
        for row, level in enumerate(levels):
            if stack_last and row == len(levels) - 1:
                for j, panel in enumerate(level):
                    self.draw(fig.add_subplot(spec[row + j % 2, j // 2]), panel, fontsize, cell[0])
                continue
            span = width // len(level)
            for j, panel in enumerate(level):
                ax = fig.add_subplot(spec[row, j * span:(j + 1) * span])
                self.draw(ax, panel, fontsize, span * cell[0])
        if title:
            fig.suptitle(wrapped(title, cell[0] * width, fontsize + 5), fontsize=fontsize + 5)
        return fig


def _fitted(cell: tuple[float, float], ncols: int) -> tuple[float, float]:
    """``cell`` (width, height in inches) scaled down, if need be, so that ``ncols`` cells span at most
    :data:`MAX_WIDTH_IN`."""
    scale = min(1.0, MAX_WIDTH_IN / (cell[0] * ncols))
    return cell[0] * scale, cell[1] * scale


def wrapped(title: str, width: float, fontsize: float) -> str:
    """``title`` with each line wrapped to ``width`` inches at ``fontsize`` points (a character counted as
    0.55 em, about the mean width of the default DejaVu Sans in such titles)."""
    chars = max(12, int(width * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) if line else line for line in title.split("\n"))
