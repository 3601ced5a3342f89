"""``python -m ntputils.book recertify NAME|--all``: re-certify committed sweep tables by sampled re-runs.

For each axis value the fastest point, plus ``--points N`` drawn with a seed from the table's name, runs under
the current code; if every value and outcome equals the committed one (or is within tolerance) the
provenance moves to the current fingerprint (a ``recertified`` history entry); else nothing is written.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from datetime import UTC, datetime
from typing import Any

from ntputils.book.currency import axes_of, checked, same_value, sample_points
from ntputils.book.environment import git_commit, machine
from ntputils.book.project import Project, read_json, write_text_atomic
from ntputils.committed import (
    FLOAT_RTOL,
    MACHINE_FRAGILE,
    SPREAD_MULTIPLE,
    crosses_bound,
    read_spread,
    spread_of,
    value_gap,
    value_tolerance,
    wall_text,
)
from ntputils.sweeps.spec import Point, SweepPlan, SweepSpecError, axis_pairs, plan_sweep
from ntputils.sweeps.store import RESULT, DriverRunning, driver_lock, point_dir, sweep_dir, sweep_plan
from ntputils.sweeps.sweep import classify, run_sweep, say
from ntputils.sweeps.table import RESULTS_DIR, collect, table_fingerprint

EXIT_OK, EXIT_MOVED, EXIT_USAGE = 0, 1, 2
COMPARED_KINDS = ("record", "compare", "check")


def read_committed_table(path):
    """A committed ``table.csv`` as written: text verbatim (``"null"`` stays), ``value`` and ``seconds`` by
    Python's ``float`` (bit for bit)."""
    import pandas as pd

    table = pd.read_csv(path, keep_default_na=False, dtype={"value": str, "seconds": str, "value_text": str,
                                                              "outcome": str, "metric": str, "kind": str})

    def number(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return math.nan

    table["value"] = [number(v) for v in table["value"]]
    table["seconds"] = [number(v) for v in table["seconds"]]
    return table


def row_values(df, kinds: tuple[str, ...] = COMPARED_KINDS) -> dict[tuple[str, str], tuple[float, str, str]]:
    """(kind, metric) -> (value, value_text, outcome) of one point's rows of ``kinds``."""
    out = {}
    for kind, metric, value, text, outcome in zip(df["kind"], df["metric"], df["value"], df["value_text"],
                                                  df["outcome"], strict=True):
        if kind in kinds:
            out[(kind, str(metric))] = (float(value), "" if text != text else str(text),
                                        "" if outcome != outcome else str(outcome))
    return out


def _tolerances(result: dict[str, Any]) -> dict[str, float]:
    """``record(..., tol=...)`` tolerances of a point's result (metric -> absolute tolerance)."""
    entries = (result.get("results") or {}).items()
    return {m: float(e["tol"]) for m, e in entries if isinstance(e, dict) and e.get("tol") is not None}


def _bounds(df) -> dict[str, tuple[Any, Any]]:
    """Claim key -> its rule's (low, high) in one point's rows (tables made before bounds were recorded:
    none)."""
    if "low" not in df or "high" not in df:
        return {}
    rows = df[df["kind"] == "compare"]
    return {str(m): (lo, hi) for m, lo, hi in zip(rows["metric"], rows["low"], rows["high"], strict=True)}


def differences(old, new, tolerances: dict[str, float], spread: dict[str, Any] | None = None
                ) -> tuple[list[str], float, int, list[str]]:
    """(what moved, largest relative difference accepted, values not bit-identical, claims whose outcome
    flipped inside their value's spread) between two points' rows: outcomes match exactly, values bit for
    bit, within their record's ``tol``, or within :func:`~ntputils.committed.value_gap` of their own
    tolerance: ``max(FLOAT_RTOL, SPREAD_MULTIPLE * spread)`` where ``spread`` (a table's ``spread.json``)
    records one, else ``FLOAT_RTOL``. A claim whose outcome flips while a bound of its rule lies inside
    its value's band (or its control's) is :data:`~ntputils.committed.MACHINE_FRAGILE`: reported, not
    moved."""
    spread = spread or {}
    a, b = row_values(old), row_values(new)
    controls = row_values(old, ("control",)) | row_values(new, ("control",))
    bounds = _bounds(old) | _bounds(new)
    moved, largest, inexact, fragile = [], 0.0, 0, []
    for key in sorted(set(a) | set(b)):
        kind, metric = key
        if key not in a or key not in b:
            moved.append(f"{kind} {metric}: {'only in the re-run' if key in b else 'missing in the re-run'}")
            continue
        (va, ta, oa), (vb, tb, ob) = a[key], b[key]
        s = spread_of(spread, kind, metric)
        rtol = value_tolerance(s)
        if oa != ob:
            low, high = bounds.get(metric, (None, None))
            control = (controls.get(("control", metric)) or (math.nan,))[0]
            banded = [(s, va), (s, vb), (spread_of(spread, "control", metric), control)]
            if kind == "compare" and any(crosses_bound(v, value_tolerance(sv), low, high)
                                         for sv, v in banded if sv is not None):
                fragile.append(f"{kind} {metric}: outcome {oa!r} -> {ob!r}, {MACHINE_FRAGILE} (a bound of "
                               "its rule lies inside its value's spread)")
            else:
                moved.append(f"{kind} {metric}: outcome {oa!r} -> {ob!r}")
        if ta == tb and (va == vb or (math.isnan(va) and math.isnan(vb))):
            continue
        tol = tolerances.get(metric, -1.0) if kind == "record" else -1.0
        diff = abs(va - vb) if math.isfinite(va) and math.isfinite(vb) else math.inf
        try:  # text values (e.g. a dict of residuals per d) element by element
            gap = value_gap(va, vb, rtol) if ta == tb else value_gap(json.loads(ta), json.loads(tb), rtol)
        except ValueError:
            gap = None
        if ta == tb and (diff <= tol or math.isinf(tol)):
            gap = 0.0  # within the tolerance its record states
        if gap is None:
            shown = (f"{va!r} -> {vb!r} (difference {diff:.3g})" if not (ta or tb)
                     else f"{ta or va!r} -> {tb or vb!r}")
            within = (f"its spread {s:.3g} x {SPREAD_MULTIPLE:g}" if s is not None
                      else f"FLOAT_RTOL {FLOAT_RTOL:g}, no spread recorded")
            moved.append(f"{kind} {metric}: {shown}, beyond {rtol:.3g} ({within})")
        else:
            inexact += 1
            largest = max(largest, gap)
    return moved, largest, inexact, fragile


def plan_points(project: Project, name: str, prov: dict[str, Any], table, sample: list[str], *,
                swap: dict[str, Any] | None = None) -> tuple[SweepPlan, dict[str, Point]]:
    """The committed sweep's plan under the current code (named ``name``) and, per sampled committed point
    id, its point in it; ``swap``: parameters set to one value in every point (e.g. a thread count).
    Raises :class:`SweepSpecError` naming what cannot be planned or matched."""
    swap = swap or {}
    axes = dict(prov["axes"]) | {k: [v] for k, v in swap.items()}
    profile = prov.get("profile") if "profile" not in prov["axes"] else None
    try:
        plan = plan_sweep(project, prov["chapter"], axis_pairs(axes), profile=profile, name=name)
    except SweepSpecError as err:
        raise SweepSpecError(f"the committed sweep cannot be planned under the current code: {err}") from None
    cols = [c for c in axes_of(table) if c not in swap]
    matched: dict[str, Point] = {}
    for pid in sample:
        row = table[table["point_id"] == pid].iloc[0]
        hit = [p for p in plan.points if all(same_value(p.overrides.get(k), row[k]) for k in cols)]
        if len(hit) != 1:
            raise SweepSpecError(f"committed point {pid} ({', '.join(f'{k}={row[k]}' for k in cols)}) "
                                 "matches no point of the current plan")
        matched[pid] = hit[0]
    return plan, matched


def device_problem(prov: dict[str, Any]) -> str | None:
    """Why a table cannot be re-certified on this machine: it was made on a CUDA device (its provenance's
    ``environment``) and torch sees none here, so a re-run would compare CPU values with GPU values."""
    made_on = (prov.get("environment") or {}).get("device")
    if made_on != "cuda":
        return None
    import torch

    if torch.cuda.is_available():
        return None
    gpu = prov["environment"].get("gpu") or "a GPU"
    return (f"it was made on {gpu} (cuda) and torch sees no CUDA device here; a re-certification compares "
            "runs on the same kind of device, so run it on a machine with CUDA (or refresh it with the "
            "device bundle: make device-bundle)")


def readable_table(project: Project, name: str) -> dict[str, Any] | None:
    """The committed table ``name`` checked (:func:`checked`), or ``None`` after an error line naming it."""
    try:
        return checked(project, name)
    except (FileNotFoundError, KeyError, ValueError) as err:
        say(f"error: {name}: cannot read the committed table: {err}")
        return None


def recertify(project: Project, name: str, *, extra: int = 1, workers: int = 2, force: bool = False,
              progress: bool = True) -> int:
    """Re-certify one committed table; returns the exit code (0 current or re-certified, 1 moved)."""
    folder = project.root / RESULTS_DIR / "sweeps" / name
    pub = readable_table(project, name)
    if pub is None:
        return EXIT_USAGE
    prov = pub["provenance"]
    read = {f: (folder / f).read_bytes() for f in ("table.csv", "provenance.json")}
    if not pub["stale"] and not force:
        say(f"{name}: current (run-time fingerprint); nothing to re-run")
        return EXIT_OK
    if problem := device_problem(prov):
        say(f"error: {name}: {problem}")
        return EXIT_USAGE
    table = read_committed_table(folder / "table.csv")
    if table.empty:
        say(f"error: {name}: {folder / 'table.csv'} has no rows (only its header): there is no point to "
            f"re-run; run the full sweep again and publish it: {pub['refresh']}")
        return EXIT_USAGE
    sample = sample_points(table, extra=extra, name=name)
    try:
        spread = read_spread(folder)
        plan, matched = plan_points(project, name, prov, table, sample)
    except (SweepSpecError, ValueError) as err:
        say(f"error: {name}: {err}")
        return EXIT_USAGE
    scratch = f"recertify-{name}"
    sub = dataclasses.replace(plan, name=scratch, points=list(matched.values()))
    n = table["point_id"].nunique()
    reused = {p.id for p in classify(project, sub, retry_failed=True)[0]}  # current results in the scratch
    runs = f"re-running {len(sample) - len(reused)} of {n} point(s)" + (
        f" and reusing {len(reused)} current result(s) of an earlier re-certification (sweeps/{scratch}/)"
        if reused else "")
    say(f"{name}: {runs} under the current code (committed run of all {n}: {wall_text(prov, pub['remake'])})")
    code = run_sweep(project, sub, workers=workers, retry_failed=True, progress=progress)
    if code != 0:
        say(f"{name}: NOT re-certified: a sampled point failed or could not run (see sweeps/{scratch}/); "
            "the table is unchanged")
        return EXIT_MOVED
    new = collect(project, scratch)
    moved: list[str] = []
    fragile: list[str] = []
    largest, inexact, compared, seconds = 0.0, 0, 0, 0.0
    for pid, point in matched.items():
        result = read_json(point_dir(project, scratch, point.id) / RESULT)
        if point.id not in reused:
            seconds += float(result.get("seconds") or 0)  # the run time of the points run now
        old_rows = table[table["point_id"] == pid]
        diff, big, off, flips = differences(old_rows, new[new["point_id"] == point.id], _tolerances(result),
                                            spread)
        where = f"[{', '.join(f'{k}={v}' for k, v in point.overrides.items())}]"
        moved += [f"{where} {d}" for d in diff]
        fragile += [f"{where} {d}" for d in flips]
        largest, inexact = max(largest, big), inexact + off
        compared += int(old_rows["kind"].isin(COMPARED_KINDS).sum())
    if moved:
        say(f"{name}: NOT re-certified: {len(moved)} value(s) moved; the table is unchanged and a full "
            f"re-run is due: {pub['refresh']}")
        if prov.get("machine") and prov["machine"] != machine():
            say(f"  the table was made on {prov['machine']}; this machine is {machine()}: trained values "
                "follow the CPU's vector kernels, so moves beyond the tolerance may come from the hardware")
        for line in moved[:40]:
            say(f"  {line}")
        if len(moved) > 40:
            say(f"  ... and {len(moved) - 40} more")
        return EXIT_MOVED
    for line in fragile:
        say(f"  {line}")
    seconds = round(seconds, 1)
    fingerprint = table_fingerprint(project, sweep_plan(project, scratch))
    if fingerprint is None:
        say(f"{name}: NOT re-certified: a sampled point's result in sweeps/{scratch}/ holds no trace of "
            "what it executed")
        return EXIT_MOVED
    entry = {"event": "recertified", "commit": git_commit(project.root),
             "date": datetime.now(UTC).isoformat(timespec="seconds"), "points": len(sample), "of": n,
             "rerun": len(sample) - len(reused), "reused": len(reused),
             "sample": [p.overrides for p in matched.values()], "values": compared,
             "not_bit_identical": inexact, "max_relative_difference": largest,
             "tolerance": _tolerance_text(spread), "fragile_machine": fragile, "seconds": seconds,
             "previous": (prov.get("fingerprint") or {}).get("digest") or prov.get("code_hash")}
    new_prov = dict(prov) | {"fingerprint": fingerprint, "code_hash": plan.code_hash,
                             "history": [*prov.get("history", []), entry]}
    try:  # the table's own sweep lock: no publish of it and no driver of it while the provenance moves
        with driver_lock(sweep_dir(project, name)):
            if {f: (folder / f).read_bytes() for f in read} != read:
                say(f"{name}: NOT re-certified: the committed table changed while its points ran (published "
                    "again?); run recertify again")
                return EXIT_MOVED
            write_text_atomic(folder / "provenance.json", json.dumps(new_prov, indent=1) + "\n")
    except DriverRunning:
        say(f"{name}: NOT re-certified: a sweep driver or a publish of {name} is running; run recertify "
            "again when it has finished")
        return EXIT_MOVED
    say(f"{name}: re-certified at {entry['commit']} by {runs} ({seconds} s of point time in this run; "
        f"the full run: {wall_text(prov, pub['remake'])}); "
        f"{compared - inexact} of {compared} values bit-identical, the rest within tolerance (largest "
        f"relative difference {largest:.3g}; tolerance: {_tolerance_text(spread)})"
        + (f"; {len(fragile)} outcome(s) flipped inside their value's spread ({MACHINE_FRAGILE})"
           if fragile else ""))
    return EXIT_OK


def _tolerance_text(spread: dict[str, Any]) -> str:
    """Which tolerance re-certification used: each value's own (its recorded spread) or the global one."""
    if spread:
        return (f"each value within max({FLOAT_RTOL:g}, {SPREAD_MULTIPLE:g} x its spread measured "
                f"{str(spread.get('date', '?'))[:10]} on {spread.get('machine', '?')}; {FLOAT_RTOL:g} where "
                "none was measured)")
    return (f"one relative tolerance {FLOAT_RTOL:g} (no spread.json: `python -m ntputils.book spread` "
            "measures each value's)")


def recertify_command(project: Project, names: list[str], *, all_tables: bool = False, extra: int = 1,
                      workers: int = 2, force: bool = False, progress: bool = True) -> int:
    """``recertify NAME ... | --all [--points N] [--workers W] [--force]``; returns the exit code."""
    base = project.root / RESULTS_DIR / "sweeps"
    if all_tables == bool(names):
        say("error: give the committed tables' names or --all, not both and not neither")
        return EXIT_USAGE
    if extra < 0 or workers < 1:
        say("error: --points must be >= 0 and --workers >= 1")
        return EXIT_USAGE
    available = sorted(d.name for d in base.glob("*") if (d / "provenance.json").is_file())
    unknown = [n for n in names if n not in available]
    if unknown:
        say(f"error: no committed table named {', '.join(map(repr, unknown))} under {RESULTS_DIR}/sweeps/; "
            f"committed: {', '.join(available) or 'none'}")
        return EXIT_USAGE
    summary = []
    started = datetime.now(UTC).isoformat(timespec="seconds")
    for name in available if all_tables else names:
        t0 = time.time()
        code = recertify(project, name, extra=extra, workers=workers, force=force, progress=progress)
        summary.append((name, code, time.time() - t0))
    if len(summary) > 1:
        say("\nsummary (seconds: this command; full: the committed run's wall time):")
        for name, code, seconds in summary:
            pub_prov = read_json(project.root / RESULTS_DIR / "sweeps" / name / "provenance.json")
            last = (pub_prov.get("history") or [{}])[-1]
            state = {EXIT_OK: "current", EXIT_MOVED: "NOT re-certified", EXIT_USAGE: "error"}[code]
            if code == EXIT_OK and last.get("event") == "recertified" and last.get("date", "") >= started:
                state = (f"re-certified ({last.get('rerun', last.get('points'))} of {last.get('of')} points "
                         f"re-run" + (f", {last['reused']} reused)" if last.get("reused") else ")"))
            say(f"  {name:16s} {state:40s} {seconds:8.1f} s   full: {pub_prov.get('wall_s')} s")
    return max((code for _, code, _ in summary), default=EXIT_OK)
