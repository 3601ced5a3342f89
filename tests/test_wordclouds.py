"""Tests for ntputils.plots.wordclouds: deterministic word clouds, panels, grid and tree layouts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

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
