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

import hashlib
import json
import math
import random
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
    prov["fingerprint"] = table_fingerprint(project, desc)
    write_text_atomic(out / "provenance.json", json.dumps(prov, indent=1) + "\n")
    return out


def table_fingerprint(project: Project, desc: dict[str, Any]) -> dict[str, Any] | None:
    """The code fingerprint of a sweep's points (:func:`~ntputils.book.fingerprint.code_fingerprint`):
    their common chapter code and the union of what each executed of ``ntputils``; ``None`` when a point
    has no trace or the points ran different chapter code (the table is then judged by its code hash)."""
    from ntputils.book.fingerprint import FINGERPRINT_VERSION, code_fingerprint, dependency_pins, merge_traces
    from ntputils.book.sweep import point_dir

    traces, codes = [], set()
    for pid in desc.get("point_ids", []):
        fp = _read(point_dir(project, desc["name"], pid) / "result.json").get("fingerprint") or {}
        if not fp.get("trace") or not fp.get("chapter_code"):
            return None
        traces.append(fp["trace"])
        codes.add(fp["chapter_code"])
    if len(codes) != 1:
        return None
    trace = merge_traces(traces)
    (code,) = codes
    return {"version": FINGERPRINT_VERSION, "chapter_code": code, "trace": trace,
            "digest": code_fingerprint(code, trace, dependency_pins(project.pyproject))}


def current_fingerprint(project: Project, chapter: str, fingerprint: dict[str, Any]) -> str | None:
    """What ``fingerprint["digest"]`` would be under the current code: the chapter's code cells now and
    the current source of every function and module in ``fingerprint["trace"]`` (``None``: no such
    chapter, or a fingerprint of another version)."""
    from ntputils.book.fingerprint import FINGERPRINT_VERSION, code_fingerprint, dependency_pins
    from ntputils.book.params import read_source
    from ntputils.book.project import ProjectError
    from ntputils.book.sweep_spec import chapter_code_of

    if fingerprint.get("version") != FINGERPRINT_VERSION:
        return None
    try:
        (chap,) = project.select([chapter])
        code = chapter_code_of(read_source(chap.source))
    except (ProjectError, OSError, ValueError, SyntaxError):
        return None
    return code_fingerprint(code, fingerprint.get("trace") or {}, dependency_pins(project.pyproject))


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
    fingerprint = prov.get("fingerprint")
    if fingerprint:  # what its points executed, re-hashed under the current code
        current = current_fingerprint(project, prov["chapter"], fingerprint)
        stale = current is None or current != fingerprint.get("digest")
    else:  # a table made before run-time traces: the static code hash of its chapter's imports
        pairs = [f"{k}=" + ",".join(map(str, v)) for k, v in prov["axes"].items() if k != "profile"]
        try:
            plan = plan_sweep(project, prov["chapter"], pairs[:1] or ["seed=0"],
                              profile=prov.get("profile") if "profile" not in prov["axes"] else None,
                              name=name)
            current = plan.code_hash
        except SweepSpecError:
            current = None
        stale = current != prov.get("code_hash")
    refresh = f"{prov.get('command')} && python -m ntputils.book sweep-table {name} --publish"
    recertify = f"python -m ntputils.book recertify {name}"
    return {"table": table, "provenance": prov, "current_hash": current, "stale": stale, "refresh": refresh,
            "recertify": recertify, "recertified": recertified(prov),
            "full_seconds": prov.get("wall_s"), "recertify_seconds": recertify_estimate(table)}


def recertified(prov: dict[str, Any]) -> dict[str, Any] | None:
    """The latest re-certification of a committed table (``provenance["history"]``), or ``None``."""
    entries = [h for h in prov.get("history", []) if h.get("event") == "recertified"]
    return entries[-1] if entries else None


def recertify_estimate(table) -> float | None:
    """Seconds a re-certification of ``table`` takes (its sampled points' recorded seconds), or ``None``."""
    try:
        points = sample_points(table, extra=0, name="estimate")
    except (KeyError, ValueError):
        return None
    per_point = table.drop_duplicates("point_id").set_index("point_id")["seconds"]
    return float(sum(float(per_point.get(p, 0.0) or 0.0) for p in points))


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


def axes_of(table) -> list[str]:
    """The swept parameters of a tidy table: the columns between ``point_id`` and ``profile``."""
    cols = list(table.columns)
    return cols[1: cols.index("profile")]


def sample_points(table, *, extra: int = 1, name: str) -> list[str]:
    """The point ids a re-certification re-runs (see the module docstring), in table order."""
    points = table.drop_duplicates("point_id").reset_index(drop=True)
    ids = list(points["point_id"])
    if len(ids) <= 1:
        return ids
    seconds = {p: (float(s) if s == s and s is not None else math.inf)
               for p, s in zip(points["point_id"], points["seconds"], strict=True)}
    chosen: set[str] = set()
    for axis in axes_of(table):
        for value in points[axis].drop_duplicates():
            same = [p for p, v in zip(points["point_id"], points[axis], strict=True) if same_value(v, value)]
            chosen.add(min(same, key=lambda p: (seconds[p], p)))
    rest = sorted(set(ids) - chosen)
    rng = random.Random(int(hashlib.sha256(name.encode()).hexdigest()[:12], 16))
    chosen.update(rng.sample(rest, min(max(extra, 0), len(rest))))
    return [p for p in ids if p in chosen]


def same_value(a: Any, b: Any) -> bool:
    """Whether two axis values are equal (numbers as numbers: CSV reads 5e-05 back as a float)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a) == str(b)
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def state_line(name: str, pub: dict[str, Any]) -> str:
    """Whether a committed table (:func:`published`) is current, re-certified or STALE; a STALE line
    names both ways to refresh it and what each costs (from the table's recorded times)."""
    rec = pub.get("recertified")
    if not pub["stale"]:
        if rec:
            return (f"current: re-certified at {str(rec.get('commit'))[:12]} on {rec.get('date')} by "
                    f"re-running {rec.get('points')} of {rec.get('of')} points")
        return "current (the code it ran is unchanged)"
    est = pub.get("recertify_seconds")
    cost = f"about {est:.0f} s of point time" if est is not None else "a sample of its points"
    return (f"STALE: code this table ran has changed since it was made. Re-certify ({cost}): "
            f"`{pub['recertify']}`; or refresh it whole (about {pub.get('full_seconds')} s wall): "
            f"`{pub['refresh']}`")


def provenance_text(name: str, pub: dict[str, Any]) -> str:
    """Two lines for a chapter that shows a committed table: where it comes from and :func:`state_line`."""
    prov = pub["provenance"]
    return (f"sweep {prov.get('name', name)}: {prov.get('points')} points, profile {prov.get('profile')}, "
            f"commit {prov.get('git')}, {prov.get('machine')}, finished {prov.get('finished')}, wall "
            f"{prov.get('wall_s')} s\n{state_line(name, pub)}")
