"""Sweep tables: collect ``sweeps/<name>/points/*/result.json`` into one tidy table.

One row per point x recorded value (``kind="record"``: :func:`ntputils.runtime.record`), per
pre-registered comparison (``kind="compare"``: measured value and outcome) and per check
(``kind="check"``); a failed point is one ``kind="point"`` row with its error. Columns::

    point_id, <swept parameters...>, profile, kind, metric, value, value_text, outcome, items,
    status, seconds, attempts, code_hash, git_commit, error

(``items``: the scorecard items a comparison is evidence for, ``;``-separated.)

``value`` is the number (NaN for non-numeric values, which are in ``value_text`` as JSON). Written as
``sweeps/<name>/table.parquet`` (pyarrow) and ``table.csv``; ``sweep-table NAME --format markdown``
prints one row per point for the book. ``--publish`` copies the CSV and the provenance (command,
commit, machine, date, wall time, code hash) to ``results/sweeps/<name>/``, the committed folder the
book renders from (:func:`published`), which also tells whether the table is stale.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ntputils.book.project import Project

RESULTS_DIR = "results"
COLUMNS_TAIL = ["profile", "kind", "metric", "value", "value_text", "outcome", "items", "status", "seconds",
                "attempts", "code_hash", "git_commit", "error"]


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _number(value: Any) -> tuple[float, str]:
    if isinstance(value, bool):
        return float(value), ""
    if isinstance(value, (int, float)):
        return float(value), ""
    if isinstance(value, str):
        try:
            x = float(value)  # runtime stores inf/nan as text
        except ValueError:
            return math.nan, value
        return x, ""
    return math.nan, json.dumps(value)


def rows(project: Project, name: str) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    """(table rows, swept parameter names, sweep.json) of the points of the sweep's latest plan."""
    from ntputils.book.sweep import point_dir, read_attempts, sweep_dir

    desc = _read(sweep_dir(project, name) / "sweep.json")
    if not desc:
        raise FileNotFoundError(f"no sweep named {name!r} under {sweep_dir(project, name).parent}")
    axes = list(desc.get("axes", {}))
    out: list[dict[str, Any]] = []
    for pid in desc.get("point_ids", []):
        d = point_dir(project, name, pid)
        res = _read(d / "result.json")
        if not res:
            continue
        base = {"point_id": pid, **{k: res.get("resolved", {}).get(k) for k in axes},
                "profile": res.get("profile"), "status": res.get("status"), "seconds": res.get("seconds"),
                "attempts": len(read_attempts(d)), "code_hash": res.get("code_hash"),
                "git_commit": res.get("git"), "error": res.get("error", "")}
        if res.get("status") != "ok":
            out.append(base | {"kind": "point", "metric": "", "value": math.nan, "value_text": "",
                               "outcome": "error"})
            continue
        for metric, entry in res.get("results", {}).items():
            value, text = _number(entry.get("value") if isinstance(entry, dict) else entry)
            out.append(base | {"kind": "record", "metric": metric, "value": value, "value_text": text,
                               "outcome": ""})
        for comp in res.get("comparisons", []):
            value, text = _number(comp.get("measured"))
            out.append(base | {"kind": "compare", "metric": comp.get("key", ""), "value": value,
                               "value_text": text, "outcome": comp.get("outcome", ""),
                               "items": ";".join(comp.get("items", []))})
        for chk in res.get("checks", []):
            value, text = _number(chk.get("measured"))
            out.append(base | {"kind": "check", "metric": chk.get("claim", ""), "value": value,
                               "value_text": text, "outcome": "pass" if chk.get("passed") else "fail"})
    return out, axes, desc


def collect(project: Project, name: str):
    """The tidy table of sweep ``name`` as a pandas DataFrame (columns in the module docstring)."""
    import pandas as pd

    data, axes, _ = rows(project, name)
    columns = ["point_id", *axes, *COLUMNS_TAIL]
    return pd.DataFrame(data, columns=columns)


def write_table(project: Project, name: str) -> Path | None:
    """Write ``table.parquet`` and ``table.csv`` into ``sweeps/<name>/``; return the parquet path."""
    from ntputils.book.sweep import sweep_dir

    try:
        df = collect(project, name)
    except FileNotFoundError:
        return None
    d = sweep_dir(project, name)
    parquet = d / "table.parquet"
    df.to_parquet(parquet, index=False)
    df.to_csv(d / "table.csv", index=False)
    return parquet


def wide(df, axes: list[str]):
    """One row per point: the swept parameters, status, seconds, then one column per recorded value."""
    import pandas as pd

    base_cols = ["point_id", *axes, "status", "seconds", "attempts"]
    base = df[base_cols].drop_duplicates("point_id").set_index("point_id")
    rec = df[df["kind"] == "record"]
    if rec.empty:
        return base.reset_index()
    vals = rec.assign(shown=[f"{v:.6g}" if not math.isnan(v) else t
                             for v, t in zip(rec["value"], rec["value_text"], strict=True)])
    pivot = vals.pivot(index="point_id", columns="metric", values="shown")
    return pd.concat([base, pivot], axis=1).reset_index()


def markdown(project: Project, name: str) -> str:
    """The sweep as a markdown table (one row per point) under a provenance line."""
    df = collect(project, name)
    _, axes, desc = rows(project, name)
    table = wide(df, axes).fillna("")
    header = "| " + " | ".join(map(str, table.columns)) + " |"
    sep = "|" + "|".join("---" for _ in table.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    prov = (f"Sweep `{name}` of {desc.get('chapter')} ({desc.get('points')} points, profile "
            f"{desc.get('profile')}): commit {desc.get('git')}, {desc.get('machine')}, finished "
            f"{desc.get('finished', 'not yet')}, wall {desc.get('wall_s', '?')} s; code hash "
            f"{str(desc.get('code_hash', ''))[:12]}. Refresh: `{desc.get('command')}`.")
    return "\n".join([prov, "", header, sep, *body])


class PublishRefused(RuntimeError):
    """Publishing would replace a committed table whose points all succeeded by one with failed points."""


def publish(project: Project, name: str, force: bool = False) -> Path:
    """Write the table (CSV: records, comparisons, checks and failed points; the code hash shortened)
    and its provenance to ``results/sweeps/<name>/`` (the committed folder), each file atomically.

    A sweep with failed points does not replace a committed table whose points all succeeded
    (:class:`PublishRefused`, nothing written) unless ``force``: a failure never destroys a good result."""
    import pandas as pd

    from ntputils.book.sweep import sweep_dir, write_text_atomic

    write_table(project, name)
    src = sweep_dir(project, name)
    desc = _read(src / "sweep.json")
    out = project.root / RESULTS_DIR / "sweeps" / name
    df = pd.read_parquet(src / "table.parquet")
    failed = df.loc[df["status"] != "ok", "point_id"].nunique()
    if failed and not force and (out / "table.csv").exists():
        old = pd.read_csv(out / "table.csv")
        if (old["status"] == "ok").all():
            raise PublishRefused(f"sweep {name!r} has {failed} failed point(s) and the committed table "
                                 f"{out / 'table.csv'} has none: not replaced (--force publishes anyway)")
    out.mkdir(parents=True, exist_ok=True)
    df["code_hash"] = df["code_hash"].str[:16]
    write_text_atomic(out / "table.csv", df.to_csv(index=False))
    prov = {k: desc.get(k) for k in ("name", "chapter", "profile", "axes", "points", "code_hash", "git",
                                     "machine", "host", "versions", "started", "finished", "wall_s",
                                     "command")}
    write_text_atomic(out / "provenance.json", json.dumps(prov, indent=1) + "\n")
    return out


def published(project: Project, name: str) -> dict[str, Any]:
    """A committed sweep: ``table`` (DataFrame), ``provenance`` and ``stale`` (the chapter's code hash
    changed since the table was made: its code cells or the ``ntputils`` modules it imports),
    ``current_hash`` and ``refresh`` (the commands that rebuild it)."""
    import pandas as pd

    from ntputils.book.sweep_spec import SweepSpecError, plan_sweep

    folder = project.root / RESULTS_DIR / "sweeps" / name
    prov = _read(folder / "provenance.json")
    if not prov:
        raise FileNotFoundError(f"no published sweep {name!r} in {folder}")
    table = pd.read_csv(folder / "table.csv")
    pairs = [f"{k}=" + ",".join(map(str, v)) for k, v in prov["axes"].items() if k != "profile"]
    try:
        plan = plan_sweep(project, prov["chapter"], pairs[:1] or ["seed=0"],
                          profile=prov.get("profile") if "profile" not in prov["axes"] else None, name=name)
        current = plan.code_hash
    except SweepSpecError:
        current = None
    refresh = f"{prov.get('command')} && python -m ntputils.book sweep-table {name} --publish"
    return {"table": table, "provenance": prov, "current_hash": current,
            "stale": current != prov.get("code_hash"), "refresh": refresh}


def table_command(project: Project, name: str, fmt: str = "csv", do_publish: bool = False,
                  force: bool = False) -> int:
    """``sweep-table NAME [--format csv|parquet|markdown] [--publish [--force]]``; returns the exit code."""
    try:
        if do_publish:
            try:
                out = publish(project, name, force=force)
            except PublishRefused as err:
                print(f"error: {err}")
                return 1
            print(f"published {out / 'table.csv'} and {out / 'provenance.json'}")
            return 0
        if fmt == "markdown":
            print(markdown(project, name))
            return 0
        path = write_table(project, name)
        if path is None:
            raise FileNotFoundError(f"no sweep named {name!r}")
        if fmt == "parquet":
            print(path)
        else:
            print(path.with_suffix(".csv").read_text(), end="")
        return 0
    except FileNotFoundError as err:
        print(f"error: {err}")
        return 2
