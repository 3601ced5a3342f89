# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Every committed sweep, drawn
#
# A sweep runs a chapter over a grid of parameter values (`python -m ntputils.book sweep`) and its
# table, once published (`python -m ntputils.book sweep-table NAME --publish`), is committed under
# `results/sweeps/NAME/`. This page draws every committed table with the same code, so a newly published
# sweep gets its pictures at the next build with nothing written for it. For each table:
#
# * **Provenance**: the chapter, number of points, profile, commit, machine and wall time of the sweep,
#   and whether the table is current or **STALE** (code it ran has changed since; the line names the
#   commands that refresh it). A stale table is drawn all the same, under that line.
# * **Recorded values against each numeric axis** (an axis such as `d` or `lr`; not `seed`): one panel
#   per recorded value that differs between points, one line per value of the other swept axes (named
#   in the legend). Over seeds, the line is the **mean** and the shaded band runs from the smallest to
#   the largest seed's value (a **min-max band**). An axis whose values span a factor of eight or more
#   is drawn on a log scale. Values that are the same at every point are listed, not drawn; a table
#   swept only over seeds (a paper-profile run) has no numeric axis and no such picture.
# * **Points x claims, and wall time**: one row per point (labelled with its values of the varying
#   axes), one column per pre-registered claim, each cell coloured by the claim's outcome at that point:
#   green *reproduced*, orange *deviates*, red *not reproduced*, grey *not run*; a dark row is a point
#   that failed, a white cell a claim the point did not judge. Beside it, a bar per point gives its wall
#   time in seconds (red: a failed point).
#
# A scratch sweep (under `sweeps/NAME/`, not committed) gets the same page as a standalone report:
# `python -m ntputils.book sweep-report NAME`.

# %% tags=["parameters"]
profile = "cpu"  # every profile draws the same tables (the page computes nothing)
seed = 0         # unused (nothing random)
device = "auto"  # unused (nothing runs on a device)
names = []       # tables to draw (results/sweeps/<name>); []: every committed table
scratch = False  # True: read the scratch sweeps/<name>/ (sweep-report) instead

# %% tags=["hide-input"]
# %matplotlib inline
import base64
import io
import json
import os
import textwrap
from html import escape
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display

from ntputils.chapter import provenance_text, published, setup_chapter
from ntputils.paths import REPO_ROOT
from ntputils.plots.sweeps import (
    constant_metrics,
    metric_figures,
    numeric_axes,
    points_figure,
    varying_metrics,
)

run = setup_chapter(globals())
# the project the committed-table reader reads (NTPBOOK_ROOT, as for published(); the sweep-report sets it)
ROOT = Path(os.environ.get("NTPBOOK_ROOT") or REPO_ROOT)


def wrapped(text: str) -> str:
    """``text`` with its long lines wrapped for the page (commands are broken at spaces only)."""
    return "\n".join(textwrap.fill(line, 88, break_long_words=False, break_on_hyphens=False,
                                    subsequent_indent="    ") for line in text.splitlines())


def committed_names() -> list[str]:
    """Every committed table: the folders of results/sweeps with a provenance."""
    base = ROOT / "results" / "sweeps"
    return sorted(p.name for p in base.iterdir() if (p / "provenance.json").is_file()) if base.is_dir() else []


def scratch_sweep(name: str) -> tuple[pd.DataFrame, dict, str]:
    """(table, axes, provenance text) of the scratch sweep sweeps/<name>/ (its table and plan)."""
    folder = ROOT / "sweeps" / name
    plan = json.loads((folder / "sweep.json").read_text())
    parquet = folder / "table.parquet"
    table = pd.read_parquet(parquet) if parquet.is_file() else pd.read_csv(folder / "table.csv")
    text = (f"scratch sweep {name} of {plan.get('chapter')}: {plan.get('points')} points, profile "
            f"{plan.get('profile')}, commit {plan.get('git')}, {plan.get('machine')}, finished "
            f"{plan.get('finished', 'not yet')}, wall {plan.get('wall_s', '?')} s\nnot committed: "
            f"`python -m ntputils.book sweep-table {name} --publish` commits it")
    return table, dict(plan.get("axes", {})), text


def show_figure(fig: plt.Figure, caption: str, alt: str) -> None:
    """``fig`` as a captioned figure. This page draws its figures in a loop (one set per table), and a
    cell's caption would caption every output of the cell, headings included: each figure carries its own.
    The figures are laid out by matplotlib's constrained layout, so the PNG is saved without
    ``bbox_inches="tight"`` (its extra pass over every text's extent cost a quarter of the page's time)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    display(HTML(f'<figure><img src="data:image/png;base64,{data}" alt="{escape(alt)}" style="max-width: 100%">'
                 f"<figcaption>{escape(caption)}</figcaption></figure>"))


def summary(table: pd.DataFrame) -> str:
    """What the table holds, counted."""
    points = table.drop_duplicates("point_id")
    failed = int((points["status"] != "ok").sum())
    count = {k: table.loc[table["kind"] == k, "metric"].nunique() for k in ("record", "compare", "check")}
    return (f"points: {len(points)}" + (f" ({failed} failed)" if failed else "") + f"; recorded values: "
            f"{count['record']}; pre-registered claims: {count['compare']}; checks: {count['check']}")


def no_curves(table: pd.DataFrame, axes: dict) -> str:
    """Why a table has no curves: the true reason, from what the table holds."""
    xs = numeric_axes(table, axes)
    if not xs:
        return "no curves: no swept axis besides seed has two or more numeric values"
    if varying_metrics(table):
        return "no curves"
    if not constant_metrics(table):
        return "no curves: no point finished with a recorded number"
    return (f"no curves: no recorded value changes with {' or '.join(xs)} (each is the same at every "
            "point: listed below)")


def draw(name: str) -> None:
    """The section of one table: provenance, counts, the pictures, the values that never change."""
    display(Markdown(f"## `{name}`"))
    if scratch:
        table, axes, text = scratch_sweep(name)
    else:
        try:
            pub = published(name)
        except FileNotFoundError as err:  # a garbled committed table: named, not drawn
            print(f"not drawn: {err}")
            return
        table, axes, text = pub["table"], pub["provenance"]["axes"], provenance_text(name, pub)
        if pub["stale"]:
            display(Markdown("**STALE**: the code this table ran has changed since it was made; "
                             "the pictures show the table as committed."))
    swept = ", ".join(f"{axis} = {list(values)}" for axis, values in axes.items())
    print(wrapped(f"{text}\nswept: {swept}\n{summary(table)}"))
    figures = metric_figures(table, axes)
    if not figures:
        print(wrapped(no_curves(table, axes)))
    for fig in figures:
        show_figure(fig, f"{name}: the recorded values that differ between points, against each swept axis "
                         "(over seeds: the mean with a min-max band).",
                    f"Line plots of {name}'s recorded values against its swept parameters.")
    fig = points_figure(table, axes)
    if fig is not None:
        show_figure(fig, f"{name}: every point's claims by outcome, beside the point's wall time.",
                    f"A grid of {name}'s points by claims coloured by outcome, and a bar chart of wall times.")
    same = constant_metrics(table)
    if same:
        listed = ", ".join(f"<code>{escape(k)}</code> = {v:.6g}" for k, v in same.items())
        display(HTML(f"<details><summary>recorded values that are the same at every point (not drawn): "
                     f"{len(same)}</summary><p>{listed}</p></details>"))


shown = list(names) or committed_names()
print(wrapped(f"{len(shown)} {'scratch' if scratch else 'committed'} table(s): {', '.join(shown)}"))
for _name in shown:
    draw(_name)
