"""``python -m ntputils.book spread NAME [--points N]``: each value's spread across CPU code paths.

Training values move across CPU models (their vector kernels round differently), so one global tolerance
refuses tables for the machine, not the code. This re-runs the fastest point(s) of a committed table, through
the sweep machinery as ``recertify`` does (scratch sweeps ``spread-NAME-<variant>``), under code paths of
this one machine: torch's native vector kernels (as the table ran), torch without them
(``ATEN_CPU_CAPABILITY=default``), the other torch thread count (the chapter's thread parameter, else
``OMP_NUM_THREADS``) and, on a CPU with AVX-512, the kernels of an AVX2-only CPU (``avx2``: torch's, MKL's,
OpenBLAS's and numpy's own), which many machines labelled with the same model name run: two "AMD EPYC"
VMs differed in exactly this (b03's and c02's committed values of the AVX2 one, reproduced to the last digit
under ``avx2`` on the AVX-512 one). A machine whose environment sets ``OPENBLAS_CORETYPE`` itself keeps it (it
may guard against a wrong kernel); the ``avx2`` variant is then left out. Every variant, ``native``
included, runs with an empty cache (``NTP_CACHE_DIR``): a cached intermediate result (an L^mm solve, a
corpus) computed once under one code path would otherwise hide how it depends on the path. Each value's
spread, its largest relative difference over the variants, goes to
``results/sweeps/NAME/spread.json`` (with the committed value's difference from the native re-run,
``committed_gap``, for information), which ``recertify`` and the committed views read
(:func:`ntputils.committed.value_tolerance`, :func:`ntputils.committed.machine_fragile`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from itertools import combinations
from typing import Any

from ntputils.book.currency import axes_of
from ntputils.book.environment import git_commit, machine, vector_isa
from ntputils.book.project import Project, write_text_atomic
from ntputils.committed import SPREAD_FILE, SPREAD_MULTIPLE, value_gap
from ntputils.paths import CACHE_ENV
from ntputils.sweeps.recertify import (
    COMPARED_KINDS,
    EXIT_MOVED,
    EXIT_OK,
    EXIT_USAGE,
    plan_points,
    read_committed_table,
    readable_table,
    row_values,
)
from ntputils.sweeps.spec import SweepSpecError
from ntputils.sweeps.store import DriverRunning, driver_lock, sweep_dir
from ntputils.sweeps.sweep import run_sweep, say
from ntputils.sweeps.table import RESULTS_DIR, collect

#: a chapter parameter that sets torch's thread count (a06, a07: ``num_threads``)
THREAD_PARAMETERS = ("num_threads",)
CAPABILITY_ENV = "ATEN_CPU_CAPABILITY"
#: the kernels an AVX2-only CPU runs, selected on an AVX-512 one (torch's ATen, MKL under torch, OpenBLAS
#: under numpy and scipy, whose Haswell kernels are those of every AVX2 CPU)
AVX2_ENV = {CAPABILITY_ENV: "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
            # numpy 2's AVX-512 dispatch targets (its exp, log, power round differently under them)
            "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
SPREAD_KINDS = (*COMPARED_KINDS, "control")


@dataclasses.dataclass(frozen=True)
class Variant:
    """One CPU code path: its name, the kernel's environment and parameters set in every point."""

    name: str
    env: dict[str, str]
    swap: dict[str, Any]

    def shown(self) -> dict[str, Any]:
        """The variant as ``spread.json`` records it."""
        return {"name": self.name, "env": self.env, "parameters": self.swap}


def variants(resolved: dict[str, Any], axes: list[str], isa: str | None = None,
             environ: Mapping[str, str] | None = None) -> list[Variant]:
    """The code paths a point of parameters ``resolved`` (a table swept over ``axes``) is re-run under:
    ``native`` (as committed: torch's own vector kernels, one thread), ``capability-default`` (torch's
    scalar kernels), ``threads-N`` (the other of 1 and 2 torch threads: through the chapter's thread
    parameter, else ``OMP_NUM_THREADS``; none where the table sweeps the thread count itself) and, where
    this CPU's vector kernels are AVX-512 (``isa``, default :func:`vector_isa`) and ``environ`` (default
    ``os.environ``) leaves ``OPENBLAS_CORETYPE`` unset, ``avx2`` (:data:`AVX2_ENV`)."""
    out = [Variant("native", {}, {}), Variant("capability-default", {CAPABILITY_ENV: "default"}, {})]
    param = next((p for p in THREAD_PARAMETERS if p in resolved), None)
    if param is None:
        out.append(Variant("threads-2", {"OMP_NUM_THREADS": "2"}, {}))
    elif param not in axes:
        other = 1 if resolved[param] == 2 else 2
        out.append(Variant(f"threads-{other}", {}, {param: other}))
    isa = vector_isa() if isa is None else isa
    if isa == "AVX-512" and "OPENBLAS_CORETYPE" not in (os.environ if environ is None else environ):
        out.append(Variant("avx2", dict(AVX2_ENV), {}))
    return out


def _parsed(entry: tuple[float, str, str]) -> Any:
    value, text, _ = entry
    if text:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return value


def relative_spread(values: list[Any]) -> float | None:
    """The largest relative difference between any two of ``values`` (numbers or JSON lists/dicts of one
    shape); ``None`` when two cannot be compared (another shape, NaN against a number)."""
    gaps = [value_gap(u, v, rtol=math.inf) for u, v in combinations(values, 2)]
    return None if None in gaps else max(gaps, default=0.0)


def measure(committed: dict[str, Any], runs: dict[str, dict[str, Any]]) -> tuple[dict, dict, list[str]]:
    """(kind -> metric -> spread over the variants' ``runs``, kind -> metric -> the committed value's
    relative difference from the ``native`` run, values whose outcome differs between variants) of one
    point; values as :func:`~ntputils.sweeps.recertify.row_values` of its rows. The spread leaves the
    committed value out: recertify compares it within the spread, and a spread that held it would accept it
    by construction (and, for a STALE table, fold in what the code changed)."""
    spread: dict[str, dict[str, float | None]] = {}
    gaps: dict[str, dict[str, float | None]] = {}
    flipped = []
    for key, entry in committed.items():
        kind, metric = key
        found = [run[key] for run in runs.values() if key in run]
        spread.setdefault(kind, {})[metric] = (relative_spread([_parsed(e) for e in found])
                                               if len(found) == len(runs) else None)
        native = runs.get("native", {}).get(key)
        gaps.setdefault(kind, {})[metric] = (relative_spread([_parsed(entry), _parsed(native)])
                                             if native else None)
        if len({e[2] for e in found}) > 1:
            flipped.append(f"{kind} {metric}")
    return spread, gaps, flipped


def merge(spreads: list[dict]) -> dict[str, dict[str, float | None]]:
    """The largest spread of each value over points (``None`` wins: not comparable somewhere)."""
    out: dict[str, dict[str, float | None]] = {}
    for one in spreads:
        for kind, metrics in one.items():
            for metric, s in metrics.items():
                have = out.setdefault(kind, {}).get(metric, 0.0)
                out[kind][metric] = None if s is None or have is None else max(have, s)
    return out


def fastest_points(table, n: int) -> list[str]:
    """The ``n`` point ids of ``table`` with the fewest recorded seconds (ok points only), fastest first."""
    ok = table[table["status"] == "ok"] if "status" in table else table
    points = ok.drop_duplicates("point_id")
    seconds = [(float(s) if s == s else math.inf, p) for p, s in zip(points["point_id"], points["seconds"],
                                                                      strict=True)]
    return [p for _, p in sorted(seconds)[:n]]


def spread(project: Project, name: str, *, points: int = 1, workers: int = 2, progress: bool = True) -> int:
    """Measure and write ``spread.json`` of committed table ``name``; returns the exit code (0 written,
    1 a re-run failed: nothing written, 2 usage)."""
    folder = project.root / RESULTS_DIR / "sweeps" / name
    if points < 1 or workers < 1:
        say("error: --points and --workers must be >= 1")
        return EXIT_USAGE
    pub = readable_table(project, name)
    if pub is None:
        return EXIT_USAGE
    prov = pub["provenance"]
    table = read_committed_table(folder / "table.csv")
    sample = fastest_points(table, points)
    if not sample:
        say(f"error: {name}: the committed table has no point that ran ok")
        return EXIT_USAGE
    runs: dict[str, dict[str, dict]] = {pid: {} for pid in sample}
    shown = []
    try:
        _, base = plan_points(project, name, prov, table, sample)
        paths = variants(next(iter(base.values())).resolved, axes_of(table))
        for variant in paths:
            scratch = f"spread-{name}-{variant.name}"
            if sweep_dir(project, scratch).exists():  # a spread measures afresh: an earlier run's points may
                shutil.rmtree(sweep_dir(project, scratch))  # have run under another code path or cache
            plan, matched = plan_points(project, scratch, prov, table, sample, swap=variant.swap)
            say(f"{name}: {variant.name}: re-running {len(sample)} point(s)"
                + (f" with {', '.join(f'{k}={v}' for k, v in variant.env.items())}" if variant.env else ""))
            scratch_root = project.root / ".cache"  # git-ignored; the folder goes when the variant ends
            scratch_root.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=f"spread-{variant.name}-", dir=scratch_root) as fresh:
                sub = dataclasses.replace(plan, points=list(matched.values()),
                                          env={**variant.env, CACHE_ENV: fresh})
                failed = run_sweep(project, sub, workers=workers, progress=progress) != 0
            if failed:
                say(f"{name}: spread NOT measured: a point of variant {variant.name} failed (see "
                    f"sweeps/{scratch}/); nothing written")
                return EXIT_MOVED
            new = collect(project, scratch)
            for pid, point in matched.items():
                runs[pid][variant.name] = row_values(new[new["point_id"] == point.id], SPREAD_KINDS)
            shown.append(variant.shown())
    except SweepSpecError as err:
        say(f"error: {name}: {err}")
        return EXIT_USAGE
    rows = {pid: table[table["point_id"] == pid] for pid in sample}
    measured = [measure(row_values(rows[pid], SPREAD_KINDS), runs[pid]) for pid in sample]
    flipped = sorted({f for *_, flips in measured for f in flips})
    cols = axes_of(table)
    record = {"spread": merge([m[0] for m in measured]), "committed_gap": merge([m[1] for m in measured]),
              "multiple": SPREAD_MULTIPLE, "variants": shown, "fresh_cache": True,
              "points": [{k: _plain(rows[pid].iloc[0][k]) for k in cols} for pid in sample],
              "outcomes_differ": flipped, "machine": machine(), "commit": git_commit(project.root),
              "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "table": (prov.get("fingerprint") or {}).get("digest") or prov.get("code_hash"),
              "table_stale": bool(pub["stale"])}
    try:  # as recertify: no publish of the table while its folder gains a file
        with driver_lock(sweep_dir(project, name)):
            write_text_atomic(folder / SPREAD_FILE, json.dumps(record, indent=1) + "\n")
    except DriverRunning:
        say(f"{name}: spread NOT written: a sweep driver or a publish of {name} is running; run it again "
            "when it has finished")
        return EXIT_MOVED
    values = [s for metrics in record["spread"].values() for s in metrics.values()]
    finite = [s for s in values if s is not None]
    say(f"{name}: spread of {len(values)} value(s) over {', '.join(v['name'] for v in shown)} written to "
        f"{folder / SPREAD_FILE}: largest {max(finite, default=0.0):.3g}, "
        f"{sum(s == 0 for s in finite)} bit-identical, {len(values) - len(finite)} not comparable"
        + (f"; outcomes differ: {', '.join(flipped)}" if flipped else ""))
    return EXIT_OK


def _plain(value: Any) -> Any:
    """A table cell as JSON (numpy scalars -> Python)."""
    return value.item() if hasattr(value, "item") else value


def spread_command(project: Project, names: list[str], *, points: int = 1, workers: int = 2,
                   progress: bool = True) -> int:
    """``spread NAME ... [--points N] [--workers W]``; returns the largest exit code."""
    base = project.root / RESULTS_DIR / "sweeps"
    available = sorted(d.name for d in base.glob("*") if (d / "provenance.json").is_file())
    unknown = [n for n in names if n not in available]
    if not names or unknown:
        say(f"error: name committed tables under {RESULTS_DIR}/sweeps/"
            + (f"; none named {', '.join(map(repr, unknown))}" if unknown else "")
            + f"; committed: {', '.join(available) or 'none'}")
        return EXIT_USAGE
    return max(spread(project, n, points=points, workers=workers, progress=progress) for n in names)
