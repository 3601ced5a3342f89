"""Pictures of a sweep's tidy table: recorded values against the swept axes, claims x points, wall times.

Every function takes ``table``, the tidy table of a sweep (``results/sweeps/<name>/table.csv`` or the
scratch ``sweeps/<name>/table.parquet``: one row per point x value, columns ``point_id, <axes...>,
profile, kind, metric, value, outcome, status, seconds, ...``; ``kind`` is ``record`` (a recorded value),
``compare`` (a pre-registered claim and its outcome), ``check`` or ``point`` (a failed point)), and
``axes``, the swept values ``{axis: [values, ...]}`` of its provenance or plan. Nothing here reads a file
or knows a sweep by name, so a new sweep gets the same pictures with no code.

Seeds: the axis named ``seed`` is never an x axis nor a line of its own. Every curve is the **mean over
the seeds** of a value, with a shaded **band from the smallest to the largest seed's value** (min-max
band; drawn where a mean covers two or more seeds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch

from ntputils.plots.figures import MAX_WIDTH_IN

__all__ = [
    "OUTCOME_COLORS",
    "constant_metrics",
    "draw_outcome_grid",
    "draw_wall_times",
    "metric_figures",
    "numeric_axes",
    "ordered_points",
    "points_figure",
    "varying_metrics",
]

SEED = "seed"
CLAIM_KINDS = ("compare", "claim")
#: the colour of a claim's outcome in the grid; the last two are not outcomes: a point that failed (it
#: judged no claim) and a claim a point did not judge (no row for the pair)
OUTCOME_COLORS = {"reproduced": "#1a9850", "deviates": "#fdae61", "not reproduced": "#d73027",
                  "not run": "#d0d0d0", "point failed": "#3b3b3b", "not judged": "#ffffff"}
STATUS_COLORS = {"ok": "#4575b4", "failed": "#d73027"}
_OUTCOMES = list(OUTCOME_COLORS)


# ---------------------------------------------------------------------------------------------
# what the table holds
# ---------------------------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))


def _text(value: Any) -> str:
    if _is_number(value):
        return f"{float(value):g}"
    return str(value)


def _rank(value: Any, order: Sequence[Any]) -> int:
    """The position of ``value`` among an axis's swept values (numbers compared as numbers: a CSV reads
    ``5e-05`` back as a float); unknown values sort last."""
    for i, v in enumerate(order):
        if _is_number(value) and _is_number(v):
            if float(value) == float(v):
                return i
        elif str(value) == str(v):
            return i
    return len(order)


def _ok_records(table: pd.DataFrame) -> pd.DataFrame:
    """The recorded values of the points that finished, finite numbers only."""
    rec = table[(table["kind"] == "record") & (table["status"] == "ok")]
    values = pd.to_numeric(rec["value"], errors="coerce")
    return rec[np.isfinite(values.to_numpy(dtype=float))].assign(value=values)


def _present(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]]) -> list[str]:
    return [a for a in axes if a in table.columns]


def numeric_axes(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]]) -> list[str]:
    """The swept axes a value is drawn against: every axis but ``seed`` whose values in ``table`` are
    numbers (not booleans), at least two of them distinct."""
    out = []
    for axis in _present(table, axes):
        values = table[axis].dropna().drop_duplicates()
        if axis != SEED and len(values) >= 2 and all(_is_number(v) for v in values):
            out.append(axis)
    return out


def _series_axes(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]], x: str) -> list[str]:
    """The axes that tell the lines of one panel apart: every other axis but ``seed`` with 2+ values."""
    return [a for a in _present(table, axes)
            if a not in (x, SEED) and table[a].astype(str).nunique() > 1]


def varying_metrics(table: pd.DataFrame) -> list[str]:
    """The recorded values (``kind == "record"``) that are numbers and differ between points, in the
    order the table first lists them: the ones :func:`metric_figures` draws."""
    rec = _ok_records(table)
    spread = rec.groupby("metric", sort=False)["value"].agg(lambda v: float(v.max() - v.min()))
    return [m for m, s in spread.items() if s > 0]


def constant_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``{metric: value}`` of the recorded numbers that are the same at every point (a size, a count):
    listed under the pictures rather than drawn as flat lines."""
    rec = _ok_records(table)
    groups = rec.groupby("metric", sort=False)["value"]
    return {m: float(v.iloc[0]) for m, v in groups if float(v.max() - v.min()) == 0}


def ordered_points(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """One row per point (``point_id``, the axes, ``status``, ``seconds``, ``label``), sorted by the axes
    in the order of ``axes`` and of their swept values. ``label`` is the point's values of the axes that
    vary (all axes when none does), e.g. ``"sts, 16, 2"``; :func:`point_label_axes` names them."""
    present = _present(table, axes)
    cols = ["point_id", *present, *[c for c in ("status", "seconds") if c in table.columns]]
    points = table[cols].drop_duplicates("point_id").reset_index(drop=True)
    keys = [points[a].map(lambda v, a=a: _rank(v, list(axes[a]))) for a in present]
    if keys:
        order = np.lexsort([k.to_numpy() for k in reversed(keys)])
        points = points.iloc[order].reset_index(drop=True)
    shown = point_label_axes(points, axes)
    points["label"] = [", ".join(_text(row[a]) for a in shown) if shown else str(row["point_id"])[:10]
                       for _, row in points.iterrows()]
    return points


def point_label_axes(points: pd.DataFrame, axes: Mapping[str, Sequence[Any]]) -> list[str]:
    """The axes a point's label shows: those with 2+ values among ``points``, else all of them."""
    present = _present(points, axes)
    varying = [a for a in present if points[a].astype(str).nunique() > 1]
    return varying or present


# ---------------------------------------------------------------------------------------------
# (a) recorded values against each numeric axis
# ---------------------------------------------------------------------------------------------
def _log_scale(values: np.ndarray) -> bool:
    """A log axis for positive values spanning a factor of 8 or more (e.g. ``d = 2, 4, ..., 256`` or
    learning rates ``5e-5 ... 4e-4``)."""
    values = np.asarray(values, dtype=float)
    return values.size >= 2 and bool(np.all(values > 0)) and values.max() / values.min() >= 8


def metric_figures(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]], *, per_figure: int = 12,
                   ncols: int = 3, metrics: Sequence[str] | None = None) -> list[Figure]:
    """Each recorded value against each numeric axis: one panel per value, at most ``per_figure`` panels
    (``ncols`` a row) per figure, the values split evenly over as few figures as that allows.

    In a panel (title: the value's name; x label: the axis, ticks at its swept values; a log x axis for
    positive values spanning a factor of 8 or more, a log y axis for positive values spanning a factor of
    1000) there is one line per combination of the values of the other swept axes but ``seed`` (the
    figure's legend, titled with those axes' names, lists the values), each the mean over the seeds at
    each x with a min-max band over the seeds where there are 2+. Drawn: ``metrics`` (default
    :func:`varying_metrics`; values that are the same at every point are left to
    :func:`constant_metrics`). No numeric axis, or nothing to draw: ``[]``.
    """
    if per_figure < 1 or ncols < 1:
        raise ValueError(f"per_figure and ncols must be >= 1, got {per_figure}, {ncols}")
    rec = _ok_records(table)
    names = list(varying_metrics(table) if metrics is None else metrics)
    names = [m for m in names if (rec["metric"] == m).any()]
    seeds = rec[SEED].nunique() if SEED in rec.columns and SEED in axes else 1
    figures = []
    for x in numeric_axes(table, axes):
        series = _series_axes(table, axes, x)
        n_fig = math.ceil(len(names) / per_figure)
        for i, chunk in enumerate(np.array_split(np.array(names, dtype=object), n_fig) if n_fig else []):
            band = (f"mean over {seeds} seeds, band: min-max over seeds" if seeds > 1
                    else "one point per value")
            part = f" ({i + 1}/{n_fig})" if n_fig > 1 else ""
            figures.append(_metric_figure(rec, axes, x, series, list(chunk), ncols,
                                          f"recorded values against {x}{part}: {band}"))
    return figures


def _series_keys(rec: pd.DataFrame, axes: Mapping[str, Sequence[Any]], series: list[str]) -> list[tuple]:
    keys = rec[series].drop_duplicates().itertuples(index=False, name=None) if series else [()]
    return sorted(keys, key=lambda k: [_rank(v, list(axes[a])) for a, v in zip(series, k, strict=True)])


def _metric_figure(rec: pd.DataFrame, axes: Mapping[str, Sequence[Any]], x: str, series: list[str],
                   names: list[str], ncols: int, title: str) -> Figure:
    ncols = min(ncols, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, grid = plt.subplots(nrows, ncols, figsize=(2.8 * ncols, 2.3 * nrows + 0.9), squeeze=False,
                             layout="constrained")
    keys = _series_keys(rec, axes, series)
    colors = plt.get_cmap("tab10" if len(keys) <= 10 else "tab20")
    for ax, name in zip(grid.flat, names, strict=False):
        data = rec[rec["metric"] == name]
        for k, key in enumerate(keys):
            sel = data
            for a, v in zip(series, key, strict=True):
                sel = sel[sel[a].astype(str) == str(v)]
            if sel.empty:
                continue
            stats = sel.groupby(x)["value"].agg(["mean", "min", "max", "count"]).sort_index()
            xs = stats.index.to_numpy(dtype=float)
            label = ", ".join(_text(v) for v in key) or name
            color = colors(k % colors.N)
            ax.plot(xs, stats["mean"], marker="o", markersize=3, linewidth=1.3, color=color, label=label)
            if (stats["count"] > 1).any():
                ax.fill_between(xs, stats["min"], stats["max"], color=color, alpha=0.2, linewidth=0)
        _style_panel(ax, data["value"].to_numpy(dtype=float), rec[x].dropna().unique(), x, name)
    for ax in list(grid.flat)[len(names):]:
        fig.delaxes(ax)
    if series:
        handles, labels = grid.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8,
                   frameon=False, title=", ".join(series), title_fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig


def _style_panel(ax: Axes, values: np.ndarray, xs: np.ndarray, x: str, name: str) -> None:
    xs = np.sort(np.asarray(xs, dtype=float))
    if _log_scale(xs):
        ax.set_xscale("log")
        ax.minorticks_off()
    step = max(1, math.ceil(len(xs) / 8))  # ticks at the swept values, at most 8 of them
    ax.set_xticks(xs[::step], [f"{v:g}" for v in xs[::step]])
    if values.size and np.all(values > 0) and values.max() / values.min() >= 1000:
        ax.set_yscale("log")
    ax.set_title(name, fontsize=10)
    ax.set_xlabel(x, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)


# ---------------------------------------------------------------------------------------------
# (b) claims x points and (c) wall time per point
# ---------------------------------------------------------------------------------------------
def claim_outcomes(table: pd.DataFrame, points: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """(claims, outcomes): the pre-registered claims of the table (``kind`` ``compare``; in the order the
    table first lists them) and a points x claims array of outcome names (keys of
    :data:`OUTCOME_COLORS`), one row per row of ``points`` (:func:`ordered_points`)."""
    rows = table[table["kind"].isin(CLAIM_KINDS)]
    claims = list(dict.fromkeys(rows["metric"].astype(str)))
    out = np.full((len(points), len(claims)), "not judged", dtype=object)
    where = {p: i for i, p in enumerate(points["point_id"])}
    col = {c: j for j, c in enumerate(claims)}
    for pid, claim, outcome in zip(rows["point_id"], rows["metric"].astype(str), rows["outcome"],
                                   strict=True):
        if pid in where:
            out[where[pid], col[claim]] = outcome if outcome in OUTCOME_COLORS else "not judged"
    if "status" in points.columns:
        out[(points["status"].astype(str) != "ok").to_numpy(), :] = "point failed"
    return claims, out


def draw_outcome_grid(ax: Axes, table: pd.DataFrame, points: pd.DataFrame, *,
                      max_chars: int = 40) -> AxesImage:
    """Draw the points x claims grid on ``ax``: row = point (``points``, :func:`ordered_points`, labelled
    on the left), column = pre-registered claim (labelled on top, cut at ``max_chars``), cell coloured by
    the claim's outcome at that point (:data:`OUTCOME_COLORS`; a failed point's row is dark grey, a claim
    the point did not judge is white). Returns the image (its array holds indices into
    :data:`OUTCOME_COLORS`)."""
    claims, outcomes = claim_outcomes(table, points)
    codes = np.vectorize(_OUTCOMES.index, otypes=[int])(outcomes) if outcomes.size else \
        np.zeros(outcomes.shape, dtype=int)
    cmap = ListedColormap([OUTCOME_COLORS[o] for o in _OUTCOMES])
    norm = BoundaryNorm(np.arange(len(_OUTCOMES) + 1) - 0.5, len(_OUTCOMES))
    image = ax.imshow(codes, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    shown = [c if len(c) <= max_chars else c[: max_chars - 1] + "…" for c in claims]
    ax.set_xticks(range(len(claims)), shown, rotation=90, fontsize=7.5)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(points)), list(points["label"]), fontsize=_row_fontsize(len(points)))
    ax.set_xticks(np.arange(len(claims) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(points) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=0.6)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("pre-registered claim", fontsize=8)
    ax.xaxis.set_label_position("top")
    return image


def draw_wall_times(ax: Axes, points: pd.DataFrame, *, labels: bool = True):
    """Draw one horizontal bar per point (``points``, :func:`ordered_points`; first point on top): its
    wall time in seconds (``seconds``), blue for a finished point, red for a failed one; the x label
    gives the total. Returns the bars."""
    seconds = pd.to_numeric(points["seconds"], errors="coerce").fillna(0.0).to_numpy(dtype=float)
    status = points["status"].astype(str) if "status" in points.columns else pd.Series(["ok"] * len(points))
    colors = [STATUS_COLORS["ok"] if s == "ok" else STATUS_COLORS["failed"] for s in status]
    y = np.arange(len(points))
    bars = ax.barh(y, seconds, color=colors, height=0.7)
    ax.set_ylim(len(points) - 0.5, -0.5)
    if labels:
        ax.set_yticks(y, list(points["label"]), fontsize=_row_fontsize(len(points)))
    ax.set_xlabel(f"wall time per point (s); total {seconds.sum():.0f} s", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    return bars


def _row_fontsize(n: int) -> float:
    return float(np.clip(500 / max(n, 1), 6, 8))


def points_figure(table: pd.DataFrame, axes: Mapping[str, Sequence[Any]]) -> Figure | None:
    """One figure, one row per point (:func:`ordered_points`; the y labels are its values of the varying
    axes, named in the y label): on the left the points x claims grid of outcomes
    (:func:`draw_outcome_grid`, legend below) when the table has claims or failed points, on the right
    the wall time of each point (:func:`draw_wall_times`) when the table has per-point seconds. ``None``
    when it has neither."""
    points = ordered_points(table, axes)
    claims, outcomes = claim_outcomes(table, points)
    has_grid = bool(claims) or bool((outcomes == "point failed").any())
    has_times = ("seconds" in points.columns
                 and pd.to_numeric(points["seconds"], errors="coerce").notna().any())
    if not (has_grid or has_times) or points.empty:
        return None
    longest = max((min(len(c), 40) for c in claims), default=0)
    height = 1.4 + 0.16 * len(points) + (0.07 * longest if has_grid else 0)
    label_room = 0.055 * max((len(s) for s in points["label"]), default=4) + 0.6
    room = MAX_WIDTH_IN - label_room - 0.4 - (2.4 if has_times else 0)  # for the claims grid
    grid_width = min(max(1.6, 0.17 * len(claims)), max(1.6, room))
    widths = ([grid_width] if has_grid else []) + ([2.4] if has_times else [])
    fig, panels = plt.subplots(1, len(widths), figsize=(sum(widths) + label_room + 0.4, height),
                               gridspec_kw={"width_ratios": widths}, squeeze=False, sharey=True,
                               layout="constrained")
    panels = list(panels.flat)
    shown = point_label_axes(points, axes)
    if has_grid:
        draw_outcome_grid(panels[0], table, points)
        present = [o for o in _OUTCOMES if (outcomes == o).any()]
        counts = {o: int((outcomes == o).sum()) for o in present}
        fig.legend([Patch(facecolor=OUTCOME_COLORS[o], edgecolor="0.5") for o in present],
                   [f"{o} ({counts[o]})" for o in present], loc="outside lower center",
                   ncol=min(len(present), 3), fontsize=8, frameon=False)
    if has_times:
        draw_wall_times(panels[-1], points, labels=not has_grid)
    panels[0].set_ylabel("point (" + ", ".join(shown) + ")", fontsize=8)
    title = f"{len(points)} point{'s' if len(points) != 1 else ''}"
    title += f" x {len(claims)} claims: outcome" if has_grid else ""
    fig.suptitle(title + (" | wall time" if has_times else ""), fontsize=10)
    return fig

