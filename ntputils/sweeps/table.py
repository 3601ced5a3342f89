"""Sweep tables: ``sweeps/<name>/points/*/result.json`` as one tidy table, and publishing it.

One row per point x recorded value (``kind`` record), comparison (compare) or check (check); a failed point
is one ``point`` row. ``--publish`` writes ``table.csv`` and ``provenance.json`` to ``results/sweeps/<name>/``
all or nothing (one atomic folder swap), refused (:class:`PublishRefused`) when it could lose a result.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ntputils.book.currency import current_fingerprint
from ntputils.book.locks import pid_alive
from ntputils.book.project import Project, atomic_output, read_json
from ntputils.committed import (
    RESULTS_DIR,
    TRAINING_TIME,
    SweepTableError,
    UnreadableTable,
    check_name,
    read_committed,
)
from ntputils.sweeps.store import (
    RESULT,
    DriverRunning,
    attempt_machines,
    no_driver,
    point_current,
    point_dir,
    read_attempts,
    sweep_dir,
    sweep_plan,
)

COLUMNS_TAIL = ["profile", "kind", "metric", "value", "value_text", "outcome", "items", "status", "seconds",
                "attempts", "code_hash", "git_commit", "error", "low", "high"]


def _number(value: Any) -> tuple[float, str]:
    if isinstance(value, (bool, int, float)):
        return float(value), ""
    if isinstance(value, str):
        try:
            x = float(value)  # runtime stores inf/nan as text
        except ValueError:
            return math.nan, value
        return x, ""
    return math.nan, json.dumps(value)


def _bounds(comparison: dict[str, Any]) -> dict[str, float]:
    """A judged claim's rule bounds (``low``, ``high``; NaN: open or not recorded) as table columns."""
    return {k: math.nan if comparison.get(k) is None else float(comparison[k]) for k in ("low", "high")}


def result_problem(res: dict[str, Any]) -> str | None:
    """What makes a point's ``result.json`` unusable for its table (a field of the wrong type, seconds that
    are not a finite number), or ``None``."""
    seconds = res.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not math.isfinite(seconds)):
        return f"its seconds are {seconds!r}, not a finite number"
    if res.get("status") not in ("ok", "error"):
        return f"its status is {res.get('status')!r}, not 'ok' or 'error'"
    for key, kind in (("resolved", dict), ("results", dict), ("comparisons", list), ("checks", list)):
        if not isinstance(res.get(key, kind()), kind):
            return f"its {key} is a {type(res[key]).__name__}, not a {kind.__name__}"
    return None


def collect(project: Project, name: str):
    """The tidy table of the points of sweep ``name``'s latest plan: ``point_id``, the swept parameters,
    :data:`COLUMNS_TAIL`."""
    import pandas as pd

    desc = sweep_plan(project, name)
    axes = list(desc["axes"])
    out: list[dict[str, Any]] = []
    for pid in desc["point_ids"]:
        d = point_dir(project, name, pid)
        res = read_json(d / RESULT)
        if not res:
            continue
        if problem := result_problem(res):
            raise SweepTableError(f"{d / RESULT} is damaged: {problem}; remove it and rerun the sweep's "
                                  f"command (`{desc.get('command')}`) to run the point again")
        base = {"point_id": pid, **{k: res.get("resolved", {}).get(k) for k in axes},
                "profile": res.get("profile"), "status": res.get("status"), "seconds": res.get("seconds"),
                "attempts": len(read_attempts(d)), "code_hash": res.get("code_hash"),
                "git_commit": res.get("git"), "error": res.get("error", "")}
        if res.get("status") != "ok":
            out.append(base | {"kind": "point", "metric": "", "value": math.nan, "value_text": "",
                               "outcome": "error"})
            continue
        found = [("record", metric, entry.get("value") if isinstance(entry, dict) else entry, "", {})
                 for metric, entry in res.get("results", {}).items()]
        found += [("compare", comp.get("key", ""), comp.get("measured"), comp.get("outcome", ""),
                   {"items": ";".join(comp.get("items", []))} | _bounds(comp))
                  for comp in res.get("comparisons", [])]
        found += [("control", comp.get("key", ""), comp.get("control_value"),
                   "passes" if comp.get("control_passes") else "fails",
                   {"items": ";".join(comp.get("items", []))} | _bounds(comp))
                  for comp in res.get("comparisons", []) if comp.get("control_value") is not None]
        found += [("check", chk.get("claim", ""), chk.get("measured"),
                   "pass" if chk.get("passed") else "fail", {}) for chk in res.get("checks", [])]
        for kind, metric, measured, outcome, extra in found:
            value, text = _number(measured)
            out.append(base | {"kind": kind, "metric": metric, "value": value, "value_text": text,
                               "outcome": outcome} | extra)
    return pd.DataFrame(out, columns=["point_id", *axes, *COLUMNS_TAIL])


def _write(df, folder: Path) -> Path:
    """``df`` as ``table.parquet`` and ``table.csv`` in ``folder`` (each whole or not at all:
    :func:`atomic_output`); the parquet path."""
    with atomic_output(folder / "table.parquet") as tmp:
        df.to_parquet(tmp, index=False)
    with atomic_output(folder / "table.csv") as tmp:
        df.to_csv(tmp, index=False)
    return folder / "table.parquet"


def write_table(project: Project, name: str) -> Path:
    """Write ``table.parquet`` and ``table.csv`` into ``sweeps/<name>/``; return the parquet path."""
    return _write(collect(project, name), sweep_dir(project, name))


def _md_table(header: list[str], body: list[list[Any]]) -> list[str]:
    cell = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    return (["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(cell(v) for v in row) + " |" for row in body])


def markdown(project: Project, name: str) -> str:
    """A provenance line, one row per point (swept values, status, seconds, claims, checks), then each
    recorded value's min / median / max over the points."""
    df, desc = collect(project, name), sweep_plan(project, name)
    axes = list(desc["axes"])
    prov = (f"Sweep `{name}` of {desc.get('chapter')} ({desc.get('points')} points, profile "
            f"{desc.get('profile')}): commit {desc.get('git')}, {desc.get('machine')}, finished "
            f"{desc.get('finished', 'not yet')}, wall {desc.get('wall_s', '?')} s; code hash "
            f"{str(desc.get('code_hash', ''))[:12]}. Refresh: `{desc.get('command')}`.")
    points = []
    for _pid, g in df.groupby("point_id", sort=False):
        first = g.iloc[0]
        claims = g[g["kind"] == "compare"]["outcome"].value_counts()
        checks = g[g["kind"] == "check"]
        points.append([*(first[a] for a in axes), first["status"], f"{first['seconds']:.1f}",
                       ", ".join(f"{n} {o}" for o, n in claims.items()) or "-",
                       f"{int((checks['outcome'] == 'pass').sum())}/{len(checks)}" if len(checks) else "-"])
    rec = df[(df["kind"] == "record") & df["value"].notna()]
    values = [[metric, f"{v.min():.4g}", f"{v.median():.4g}", f"{v.max():.4g}", len(v)]
              for metric, v in rec.groupby("metric", sort=False)["value"]]
    out = [prov, "", *_md_table([*axes, "status", "seconds", "claims", "checks"], points)]
    if values:
        out += ["", *_md_table(["recorded value", "min", "median", "max", "points"], values)]
    return "\n".join(out)


class PublishRefused(RuntimeError):
    """Publishing would lose or misrepresent a committed result (exit code 2, nothing written)."""


PROVENANCE_KEYS = ("name", "chapter", "profile", "axes", "points", "code_hash", "git", "machine", "host",
                   "versions", "environment", "started", "finished", "wall_s", "command")


def points_run(project: Project, name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per point: its resolved parameters, device, the machine that finished it and those its attempts
    started on (:func:`~ntputils.sweeps.store.attempt_machines`: a training resumed from its checkpoint on
    another machine names both), BLAS threads, seconds, the chapter's own wall time and the training seconds
    it recorded (values :data:`~ntputils.committed.TRAINING_TIME` names; a reload records its training's)."""
    out = {}
    for pid in ids:
        res = read_json(point_dir(project, name, pid) / RESULT)
        train = [float(v.get("value") if isinstance(v, dict) else v)
                 for k, v in (res.get("results") or {}).items() if TRAINING_TIME.search(k)
                 and isinstance(v.get("value") if isinstance(v, dict) else v, (int, float))]
        out[pid] = {"resolved": res.get("resolved"), "device": res.get("device"),
                    "machine": res.get("machine"),
                    "attempt_machines": attempt_machines(point_dir(project, name, pid)),
                    "threads": res.get("threads"),
                    "seconds": res.get("seconds"),
                    "chapter_wall_s": (res.get("timing") or {}).get("chapter_wall_s"),
                    "train_s": round(sum(train), 1) if train else None}
    return out


def committed(project: Project, name: str) -> tuple[Any, dict[str, Any]] | None:
    """:func:`ntputils.committed.read_committed` of ``results/sweeps/<name>/``, ``None`` when it has neither
    file; a missing or garbled file raises :class:`SweepTableError` naming it."""
    folder = project.root / RESULTS_DIR / "sweeps" / check_name(name)
    try:
        table, prov = read_committed(name, project.root)
        if "status" in table.columns:
            return table, prov
        path, why = folder / "table.csv", "has no column status"
    except UnreadableTable as err:
        path, why = err.path, f"is unreadable ({err.why})"
    except FileNotFoundError:
        if not (folder / "table.csv").exists():
            return None
        path, why = folder / "provenance.json", "is missing"
    raise SweepTableError(f"the committed {path} {why}; restore it from git (git checkout -- {folder}) or "
                          "replace it with --publish --force")


def publish_problems(project: Project, name: str, desc: dict[str, Any], df, old,
                     fingerprint: dict[str, Any] | None = None) -> list[str]:
    """Why publishing the sweep (plan ``desc``, table ``df``, its points' :func:`table_fingerprint`) over
    the committed ``old`` could lose or misrepresent a result (``[]``: it may go ahead)."""
    problems = []
    ids = list(desc.get("point_ids", []))
    results = {pid: read_json(point_dir(project, name, pid) / RESULT) for pid in ids}
    unfinished = [pid for pid, res in results.items() if not res.get("status")]
    if unfinished:
        problems.append(f"{len(unfinished)} of its {len(ids)} point(s) have no result (unfinished: the "
                        f"driver stopped before them); run its command again to finish them: "
                        f"`{desc.get('command')}`")
    hashes = {res.get("code_hash") for res in results.values() if res.get("status")}
    if hashes - {desc.get("code_hash")}:
        problems.append("its points were made by code hash(es) "
                        + ", ".join(sorted(str(h)[:12] for h in hashes))
                        + f", not all the plan's {str(desc.get('code_hash'))[:12]}")
    memo: dict[str, str] = {}
    moved = [pid for pid, res in results.items() if res.get("status") == "ok"
             and (res.get("fingerprint") or {}).get("trace_digest") and not point_current(res, memo=memo)]
    if moved:
        problems.append(f"{len(moved)} of its point(s) ran code that has changed since (their traces no "
                        f"longer hash as when they ran); run its command again to re-run them: "
                        f"`{desc.get('command')}`")
    elif fingerprint and (current_fingerprint(project, desc.get("chapter", ""), fingerprint)
                          != fingerprint["digest"]):
        problems.append("the table would be stale at once: the chapter's code or the pins changed since its "
                        f"points ran; run its command again to re-run them: `{desc.get('command')}`")
    if not ids:
        problems.append("its plan lists no points")
    if old is None:
        return problems
    table, prov = old
    where = f"the committed table {project.root / RESULTS_DIR / 'sweeps' / name}"
    if prov.get("chapter") != desc.get("chapter"):
        problems.append(f"it is a sweep of {desc.get('chapter')}; {where} is of {prov.get('chapter')}")
    if prov.get("profile") != desc.get("profile"):
        problems.append(f"its profile is {desc.get('profile')}; {where} has profile {prov.get('profile')}")
    n_old = table["point_id"].nunique()
    if len(ids) < n_old:
        problems.append(f"it has {len(ids)} point(s); {where} has {n_old}")
    failed = df.loc[df["status"] != "ok", "point_id"].nunique()
    if failed and (table["status"] == "ok").all():
        problems.append(f"it has {failed} failed point(s) and {where} has none")
    return problems


def publish(project: Project, name: str, force: bool = False) -> Path:
    """Write the table and its provenance to ``results/sweeps/<name>/``, all or nothing; raises
    :class:`PublishRefused` while the driver runs and, unless ``force``, for :func:`publish_problems`."""
    desc = sweep_plan(project, name)
    try:
        with no_driver(sweep_dir(project, name)):
            df = collect(project, name)
            old = None
            try:
                old = committed(project, name)
            except SweepTableError:
                if not force:
                    raise
            fingerprint = table_fingerprint(project, desc)
            problems = publish_problems(project, name, desc, df, old, fingerprint)
            if problems and not force:
                raise PublishRefused(f"sweep {name!r} not published: " + "; ".join(problems)
                                     + " (--force publishes it anyway, replacing the committed table)")
            with contextlib.suppress(OSError):  # the scratch copy; the sweep folder may be read-only
                write_table(project, name)
            df["code_hash"] = df["code_hash"].astype("string").str[:16]
            prov = {k: desc.get(k) for k in PROVENANCE_KEYS if k != "environment" or desc.get(k)}
            prov["points_run"] = points_run(project, name, list(desc.get("point_ids", [])))
            prov["fingerprint"] = fingerprint
            return _swap_in(project, name, {"table.csv": df.to_csv(index=False),
                                            "provenance.json": json.dumps(prov, indent=1) + "\n"})
    except DriverRunning as err:
        raise PublishRefused(f"sweep {name!r} not published: {err} (--force does not override this)"
                             ) from None


TMP_RE = re.compile(r"^\.(?P<name>.+)\.publish-(?P<pid>\d+)-[^/]*$")


def clean_stale_publish_dirs(base: Path) -> None:
    """Remove the hidden temporary folders in ``base`` of publishes that died (killed before the swap)."""
    for d in base.glob(".*.publish-*"):
        m = TMP_RE.match(d.name)
        if m and not pid_alive(int(m.group("pid"))):
            shutil.rmtree(d, ignore_errors=True)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_in(project: Project, name: str, files: dict[str, str]) -> Path:
    """Write ``files`` (and the committed folder's other files) into a hidden folder and swap it in."""
    base = project.root / RESULTS_DIR / "sweeps"
    out = base / name
    try:
        base.mkdir(parents=True, exist_ok=True)
        clean_stale_publish_dirs(base)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.publish-{os.getpid()}-", dir=base))
    except OSError as err:
        raise SweepTableError(f"cannot write under {base} ({type(err).__name__}: {err.strerror or err}); "
                              "publishing needs a writable results/sweeps/") from None
    try:
        try:
            if out.is_dir():
                for item in out.iterdir():
                    if item.name in files or (item.name.startswith(".") and item.name.endswith(".tmp")):
                        continue
                    if item.is_dir():
                        shutil.copytree(item, tmp / item.name, symlinks=True)
                    else:
                        shutil.copy2(item, tmp / item.name, follow_symlinks=False)
            for fname, text in files.items():
                with (tmp / fname).open("w") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
            tmp.chmod(0o755)  # mkdtemp makes 0700; the committed folder is an ordinary one
            if not out.exists():
                os.rename(tmp, out)
            elif not exchange(tmp, out):
                old = tmp.with_name(tmp.name + ".old")
                os.rename(out, old)
                os.rename(tmp, out)
                tmp = old
        except OSError as err:
            raise SweepTableError(f"cannot publish to {out} ({type(err).__name__}: {err}); the committed "
                                  "table is unchanged") from None
    finally:
        _remove_or_say(tmp)  # after a swap: the old folder
    return out


def _remove_or_say(folder: Path) -> None:
    """Remove a publish's hidden folder; where it cannot be (a file another user owns, a busy mount), say
    so on stderr, naming it, instead of leaving a stray in ``results/sweeps/`` without a word."""
    failures: list[BaseException] = []
    shutil.rmtree(folder, onerror=lambda _fn, _path, exc: failures.append(exc[1]))
    if folder.exists():
        why = failures[0] if failures else "it is still there"
        print(f"warning: the publish's temporary folder {folder} could not be removed ({why}); it is not "
              f"part of the committed table: remove it by hand (rm -r '{folder}')", file=sys.stderr)


def table_fingerprint(project: Project, desc: dict[str, Any]) -> dict[str, Any] | None:
    """The code fingerprint of a sweep's points (their chapter code and the union of their traces), or
    ``None`` when a point has no trace or the points ran different chapter code."""
    from ntputils.book.fingerprint import FINGERPRINT_VERSION, code_fingerprint, dependency_pins, merge_traces

    traces, codes = [], set()
    for pid in desc.get("point_ids", []):
        fp = read_json(point_dir(project, desc["name"], pid) / RESULT).get("fingerprint") or {}
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


def table_command(project: Project, name: str, fmt: str = "csv", do_publish: bool = False,
                  force: bool = False) -> int:
    """``sweep-table NAME [--format csv|parquet|markdown] [--publish [--force]]``: 0, or 2 with one
    ``error:`` line. A read-only sweep folder's table is made in memory or a temporary folder."""
    if fmt not in ("csv", "parquet", "markdown"):
        print(f"error: --format {fmt!r}: use csv, parquet or markdown")
        return 2
    try:
        if do_publish:
            out = publish(project, name, force=force)
            print(f"published {out / 'table.csv'} and {out / 'provenance.json'}")
            return 0
        if fmt == "markdown":
            print(markdown(project, name))
            return 0
        df = collect(project, name)
    except (FileNotFoundError, SweepTableError, PublishRefused) as err:
        print(f"error: {err}")
        return 2
    try:
        parquet = _write(df, sweep_dir(project, name))
    except OSError as err:  # a read-only sweep folder: csv from memory, parquet in a temporary folder
        parquet = None if fmt == "csv" else _write(df, Path(tempfile.mkdtemp(prefix=f"sweep-table-{name}-")))
        print(f"note: cannot write into {sweep_dir(project, name)} ({err.strerror or err}); the table was "
              "made without it" + (f"; written to {parquet.parent}" if parquet else ""), file=sys.stderr)
    if fmt == "parquet":
        print(parquet)
    else:
        print(df.to_csv(index=False), end="")
    return 0


