"""ntputils.plots.sweeps on a small synthetic tidy table: what each picture draws (lines, bands, labels,
the colour of every grid cell, the bars), not only that it draws."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from ntputils.plots.sweeps import (  # noqa: E402
    MAX_WIDTH_IN,
    OUTCOME_COLORS,
    STATUS_COLORS,
    constant_metrics,
    metric_figures,
    numeric_axes,
    ordered_points,
    points_figure,
    varying_metrics,
)

AXES = {"dataset": ["syn", "sts"], "d": [2, 4, 8], "seed": [0, 1]}
FAILED = ("sts", 8, 1)  # this point raised: one kind="point" row, no values


def loss(dataset: str, d: int, seed: int) -> float:
    return (1.0 if dataset == "syn" else 2.0) / d + 0.1 * seed


def outcome(dataset: str, d: int) -> str:
    return "reproduced" if d > 2 else ("deviates" if dataset == "syn" else "not run")


def seconds(dataset: str, d: int, seed: int) -> float:
    return 10.0 * d + seed + (100.0 if dataset == "sts" else 0.0)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rows = []
    for dataset in AXES["dataset"]:
        for d in AXES["d"]:
            for seed in AXES["seed"]:
                base = {"point_id": f"{dataset}-{d}-{seed}", "dataset": dataset, "d": d, "seed": seed,
                        "profile": "cpu", "status": "ok", "seconds": seconds(dataset, d, seed), "attempts": 1}
                if (dataset, d, seed) == FAILED:
                    rows.append(base | {"kind": "point", "metric": "", "value": np.nan, "outcome": "error",
                                        "status": "failed"})
                    continue
                rows += [base | {"kind": "record", "metric": "loss", "value": loss(dataset, d, seed),
                                 "outcome": ""},
                         base | {"kind": "record", "metric": "V", "value": 30.0, "outcome": ""},
                         base | {"kind": "record", "metric": "label", "value": np.nan, "outcome": ""},
                         base | {"kind": "record", "metric": "gap", "value": float(d), "outcome": ""},
                         base | {"kind": "compare", "metric": "c_small", "value": 0.5,
                                 "outcome": outcome(dataset, d)},
                         base | {"kind": "check", "metric": "an identity", "value": np.nan,
                                 "outcome": "pass"}]
                if dataset == "syn":  # a claim judged only on one dataset
                    rows.append(base | {"kind": "compare", "metric": "c_syn_only", "value": 1.0,
                                        "outcome": "reproduced"})
    rows.reverse()  # the pictures order points by the axes, not by the table
    return pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_axes_metrics_and_point_order(table):
    assert numeric_axes(table, AXES) == ["d"]  # seed is averaged, dataset is not a number
    assert varying_metrics(table) == ["gap", "loss"]  # table order (reversed rows); V is constant
    assert constant_metrics(table) == {"V": 30.0}  # "label" (text) is neither
    points = ordered_points(table, AXES)
    assert list(points["point_id"][:3]) == ["syn-2-0", "syn-2-1", "syn-4-0"]
    assert list(points["label"][:2]) == ["syn, 2, 0", "syn, 2, 1"]
    assert len(points) == 12


def test_metric_figure_has_a_line_per_dataset_with_the_seed_mean_and_a_min_max_band(table):
    (fig,) = metric_figures(table, AXES)  # 2 metrics fit one figure
    panels = fig.axes
    assert [ax.get_title() for ax in panels] == ["gap", "loss"]
    assert all(ax.get_xlabel() == "d" for ax in panels)
    assert "mean over 2 seeds, band: min-max over seeds" in fig._suptitle.get_text()
    ax = panels[1]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["syn", "sts"]
    syn, sts = lines
    assert list(syn.get_xdata()) == [2, 4, 8]
    np.testing.assert_allclose(syn.get_ydata(), [loss("syn", d, 0) + 0.05 for d in (2, 4, 8)])
    # sts at d=8 has only seed 0 (seed 1 failed): its mean is seed 0's value
    np.testing.assert_allclose(sts.get_ydata(), [loss("sts", 2, 0) + 0.05, loss("sts", 4, 0) + 0.05,
                                                 loss("sts", 8, 0)])
    assert len(ax.collections) == 2  # one band per line
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(loss("syn", 8, 0))
    assert band[:, 1].max() == pytest.approx(loss("syn", 2, 1))
    assert syn.get_color() != sts.get_color()
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["syn", "sts"]
    assert legend.get_title().get_text() == "dataset"


def test_many_metrics_are_split_evenly_and_log_axes_follow_the_range(table):
    wide = table.assign(d=table["d"] * 100)  # 200..800: a factor of 4, linear
    figs = metric_figures(wide, AXES, per_figure=1)
    assert [[ax.get_title() for ax in f.axes] for f in figs] == [["gap"], ["loss"]]
    assert "(1/2)" in figs[0]._suptitle.get_text() and figs[0].axes[0].get_xscale() == "linear"
    spread = table.assign(d=table["d"].map({2: 1, 4: 10, 8: 100}))  # a factor of 100: log
    (fig,) = metric_figures(spread, AXES)
    assert fig.axes[0].get_xscale() == "log"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "10", "100"]


def test_no_numeric_axis_no_metric_figure(table):
    assert metric_figures(table, {"dataset": AXES["dataset"], "seed": AXES["seed"]}) == []
    one = table[table["point_id"] == "syn-2-0"]
    assert metric_figures(one, AXES) == []  # one point: nothing varies


def test_points_figure_colours_each_cell_by_its_outcome(table):
    fig = points_figure(table, AXES)
    grid, times = fig.axes
    points = ordered_points(table, AXES)
    assert [t.get_text() for t in grid.get_xticklabels()] == ["c_small", "c_syn_only"]
    assert [t.get_text() for t in grid.get_yticklabels()] == list(points["label"])
    assert grid.get_ylabel() == "point (dataset, d, seed)"
    (image,) = grid.images
    codes = image.get_array()
    assert codes.shape == (12, 2)

    def colour(i: int, j: int):
        return image.cmap(image.norm(codes[i, j]))

    for i, row in points.iterrows():
        key = (row["dataset"], row["d"], row["seed"])
        if key == FAILED:
            expected = ["point failed", "point failed"]
        else:
            expected = [outcome(row["dataset"], row["d"]),
                        "reproduced" if row["dataset"] == "syn" else "not judged"]
        for j, name in enumerate(expected):
            assert colour(i, j) == to_rgba(OUTCOME_COLORS[name]), (key, j, name)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "reproduced (13)", "deviates (2)", "not run (2)", "point failed (2)", "not judged (5)"]


def test_wall_time_bars_follow_the_grid_rows(table):
    fig = points_figure(table, AXES)
    times = fig.axes[1]
    points = ordered_points(table, AXES)
    bars = times.patches
    assert [b.get_width() for b in bars] == [seconds(r.dataset, r.d, r.seed) for r in points.itertuples()]
    assert [b.get_y() + b.get_height() / 2 for b in bars] == list(range(12))
    failed = int(np.flatnonzero(points["status"] == "failed")[0])
    assert to_rgba(bars[failed].get_facecolor()) == to_rgba(STATUS_COLORS["failed"])
    assert to_rgba(bars[0].get_facecolor()) == to_rgba(STATUS_COLORS["ok"])
    total = sum(seconds(a, d, s) for a in AXES["dataset"] for d in AXES["d"] for s in AXES["seed"])
    assert times.get_xlabel() == f"wall time per point (s); total {total:.0f} s"


def test_points_figure_without_claims_is_wall_time_alone_and_none_without_either(table):
    plain = table[~table["kind"].isin(["compare"]) & (table["status"] == "ok")]
    fig = points_figure(plain, AXES)
    (times,) = fig.axes
    assert len(times.patches) == 11 and times.get_yticklabels()[0].get_text() == "syn, 2, 0"
    assert points_figure(plain.drop(columns="seconds"), AXES) is None


def test_a_points_figure_with_many_claims_stays_within_the_legible_width(table):
    """100 claims would ask for 17 in of grid; the figure stays at most MAX_WIDTH_IN wide, every claim
    still a column of its own."""
    ok = table[table["status"] == "ok"]
    many = pd.concat([ok[ok["kind"] == "compare"].assign(metric=f"claim {i:03d}") for i in range(100)]
                     + [ok[ok["kind"] != "compare"]])
    fig = points_figure(many, AXES)
    grid = fig.axes[0]
    assert len(grid.get_xticklabels()) == 100 and grid.images[0].get_array().shape[1] == 100
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN
    few = points_figure(table, AXES)  # a small figure keeps its natural width
    assert few.get_size_inches()[0] < MAX_WIDTH_IN / 2
    plt.close("all")
