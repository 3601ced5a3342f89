"""Tests for ntputils.plots.wordclouds: deterministic word clouds, panels, grid and tree layouts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ntputils.plots.figures import MAX_WIDTH_IN
from ntputils.plots.wordclouds import BLANK_TOKEN, CloudPanel, CloudRenderer, cluster_panel, display_token


def test_display_token():
    assert display_token("#the") == "#the"
    assert display_token(" ") == BLANK_TOKEN
    assert display_token("#") == "#" + BLANK_TOKEN
    assert display_token("\n") == "\\n"
    assert display_token(". ⏎ They") == ". \\n They"


# ---------------------------------------------------------------------------------------------
# word clouds
# ---------------------------------------------------------------------------------------------
def test_cloud_images_are_deterministic_and_cached():
    words, weights = ["#alpha", "#beta", "#gamma", "#delta"], [0.4, 0.3, 0.2, 0.1]
    r1 = CloudRenderer(width=80, height=50, max_font_size=14, seed=0)
    img = r1.image(words, weights)
    assert img.shape == (50, 80, 3) and img.dtype == np.uint8
    assert (img < 250).any()  # something was drawn on the white background
    r1.image(words, weights)
    assert r1.n_rendered == 1  # second call served from the cache
    r2 = CloudRenderer(width=80, height=50, max_font_size=14, seed=0)
    np.testing.assert_array_equal(r2.image(words, weights), img)


def test_cloud_frequencies_and_validation():
    freqs = CloudRenderer.frequencies(["#a", " ", "#a"], [0.1, 0.2, 0.3])
    assert freqs == {"#a": 0.3, BLANK_TOKEN: 0.2}
    with pytest.raises(ValueError, match="differ in length"):
        CloudRenderer.frequencies(["#a"], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        CloudRenderer.frequencies(["#a"], [0.0])
    with pytest.raises(ValueError, match="at least one word"):
        CloudRenderer.frequencies([], [])
    with pytest.raises(ValueError, match="20 x 20"):
        CloudRenderer(width=10, height=10)
    with pytest.raises(ValueError, match="font"):
        CloudRenderer(min_font_size=30, max_font_size=10)


def test_grid_and_tree_layouts(labels):
    r = CloudRenderer(width=60, height=40, max_font_size=10, seed=0)
    full = cluster_panel("C=(+)", [0, 1, 2], [0.3, 0.2, 0.1], labels.words, labels)
    assert full.title == "C=(+)\npast 1.00"
    empty = CloudPanel("C=(-)", [], [])
    fig = r.grid([full, empty, full], ncols=2, title="grid")
    assert len(fig.axes) == 4  # 2 x 2, the last one switched off
    assert fig.axes[1].texts[0].get_text() == "empty"
    plt.close(fig)
    levels = [[full], [full, empty], [full, empty, full, empty]]
    fig = r.tree(levels)
    assert len(fig.axes) == 7
    plt.close(fig)
    fig = r.tree(levels, stack_last=True)
    assert len(fig.axes) == 7
    plt.close(fig)
    with pytest.raises(ValueError, match="twice"):
        r.tree([[full], [full]])
    with pytest.raises(ValueError, match="at least one panel"):
        r.grid([])
    with pytest.raises(ValueError, match="differ in shape"):
        cluster_panel("x", [0, 1], [0.1], labels.words)


def test_wide_grids_and_trees_fit_the_text_column(labels):
    """An 8-column grid of 2.3 in cells (18.4 in) is reflowed to 4 columns in configuration order; a grid
    still too wide, and a wide tree, get smaller cells; none is wider than MAX_WIDTH_IN."""
    r = CloudRenderer(width=60, height=40, max_font_size=10, seed=0)
    panels = [CloudPanel(f"C{i}", [], []) for i in range(16)]
    fig = r.grid(panels, ncols=8, cell=(2.3, 1.75))
    boxes = [ax.get_position() for ax in fig.axes]
    columns = sorted({round(b.x0, 3) for b in boxes})
    assert len(columns) == 4 and fig.get_size_inches()[0] <= MAX_WIDTH_IN
    assert [ax.get_title() for ax in fig.axes] == [f"C{i}" for i in range(16)]
    assert [round(b.x0, 3) for b in boxes[:5]] == [*columns, columns[0]]  # row by row, in order
    plt.close(fig)
    fig = r.grid(panels[:4], ncols=4, cell=(4.2, 2.8))  # 16.8 in: smaller cells, same 4 columns
    assert fig.get_size_inches()[0] == pytest.approx(MAX_WIDTH_IN)
    assert len({round(ax.get_position().x0, 3) for ax in fig.axes}) == 4
    plt.close(fig)
    narrow = r.grid(panels[:2], ncols=2, cell=(3.6, 2.5))  # 7.2 in: unchanged
    assert tuple(narrow.get_size_inches()) == pytest.approx((7.2, 3.0))
    plt.close(narrow)
    levels = [[panels[0]], panels[:2], panels[:4], panels[:8], panels[:16]]
    fig = r.tree(levels, cell=(2.2, 1.9), stack_last=True)  # 8 cells of 2.2 in: 17.6 in
    assert fig.get_size_inches()[0] == pytest.approx(MAX_WIDTH_IN)
    plt.close(fig)


def test_long_titles_are_wrapped_inside_their_cells():
    """b04's Fig. 4 panels have titles of about 70 characters at 9 pt, wider than a 3.2 in cell: each line
    is wrapped so that the drawn title is no wider than its panel, and the figure no wider than the grid."""
    r = CloudRenderer(width=60, height=40, max_font_size=10, seed=0)
    long = ("STS Present-tense verb: K={1..5}, C=(-,-,-,+,+)\n"
            "base-form verb purity 1.00 (best-of-68 random p95 0.67)")
    fig = r.grid([CloudPanel(long, [], [])] * 4, ncols=4, cell=(4.0, 2.8), fontsize=9,
                 title="Fig. 4 (ours): clusters with the highest purity for the paper's classes (top: STS, "
                       "bottom: WikiText) and a few more words to make it long")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.title.get_window_extent(renderer).width <= ax.get_window_extent(renderer).width * 1.02
    assert fig.get_tightbbox(renderer).width <= MAX_WIDTH_IN + 0.05
    shown = fig.axes[0].get_title()
    assert shown.count("\n") > long.count("\n") and shown.split() == long.split()  # wrapped, no word lost
    plt.close(fig)


def test_layout_tokens_are_left_out_of_clouds():
    from ntputils.plots.wordclouds import is_layout

    for token in ("⏎", "#", " ", "\n", "⏎⏎", "<unk>", "#<unk>", "<|endoftext|>"):
        assert is_layout(token), token
    for token in ("#the", "ing", "#⏎x", "#<e2 80>"):
        assert not is_layout(token), token
    freqs = CloudRenderer.frequencies(["#a", "⏎", "#<unk>", "#"], [0.1, 0.5, 0.4, 0.3], drop_layout=True)
    assert freqs == {"#a": 0.1}
    r = CloudRenderer(width=40, height=30, max_font_size=8)
    assert (r.image(["⏎"], [1.0]) == 255).all() and r.n_rendered == 0
