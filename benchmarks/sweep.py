"""Benchmark: the sweep runner (``python -m benchmarks.sweep --group overhead|throughput|memory``).

* ``overhead``: per-point cost of the runner against the chapter's own compute. From each point's
  ``result.json``: ``cells_s`` (papermill's per-cell durations: the chapter's compute, its imports
  included), ``papermill_s - cells_s`` (jupytext conversion, kernel start and shutdown, papermill's
  bookkeeping) and ``record_s`` (reading the record, writing the executed notebook's metadata and
  ``result.json``). Chapters: a trivial one (records one value, imports no numerics), the tiny
  chapter that imports :mod:`ntputils.chapter` (torch), and the real chapter a01.
* ``throughput``: a CPU-bound point (numpy matrix products, one BLAS thread, about 8 s of compute)
  x 6 points on a ``LocalCluster`` of 1 and then 2 worker processes; points per minute over the
  span from the first point's start to the last point's end (cluster start-up excluded; the wall
  time of the whole command is reported too). Target of issue 14: >= 1.7x on 2 cores.
* ``memory``: peak RSS of the *driver* process (scheduler included, it runs in the driver; the
  worker processes and kernels are not counted) for sweeps of 10 and 1,000 points of the trivial
  chapter, measured in a fresh process each.

Results: ``benchmarks/results/sweep_<group>.json``; ``python -m benchmarks.report`` puts them on the
Performance page. The machine is shared: the load average at the start is recorded with each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks.common import (
    dispatch_worker,
    fmt,
    machine_info,
    markdown_table,
    peak_rss_mb,
    run_worker,
    write_json,
)

MODULE = "benchmarks.sweep"
REPO = Path(__file__).resolve().parents[1]

_HEADER = '''\
# %% [markdown]
# # {title}

# %% tags=["parameters"]
profile = "cpu"
seed = 0
device = "cpu"
{params}
'''

# records through the runner's record file (the protocol of ntputils.chapter) without importing torch
_RECORD = '''
# %%
import json
import os
from pathlib import Path

from ntputils.chapter import RECORD_ENV

REC = {"checks": [], "comparisons": [], "results": {}}


def record(key, value):
    REC["results"][key] = {"value": value, "paper": None, "unit": None}
    Path(os.environ[RECORD_ENV]).write_text(json.dumps(REC))
'''

TRIVIAL = _HEADER.format(title="Trivial", params="x = 0") + _RECORD + '''
# %%
record("x_plus_seed", (x or 0) + seed)
'''

RUNTIME = _HEADER.format(title="Tiny with the chapter API", params="x = 0") + '''
# %%
from ntputils.chapter import record, setup_chapter

run = setup_chapter(globals())
record("x_plus_seed", x + seed)
'''

CPU = _HEADER.format(title="CPU-bound", params="reps = 700") + _RECORD + '''
# %%
import numpy as np

rng = np.random.default_rng(seed)
A = rng.standard_normal((600, 600)) / 30
acc = 0.0
for _ in range(reps or 700):
    A = np.tanh(A @ A + 0.01)
    acc += float(A[0, 0])
record("acc", acc)
'''


def make_project(root: Path) -> None:
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for name, text in [("t01_trivial", TRIVIAL), ("t02_runtime", RUNTIME), ("t03_cpu", CPU)]:
        (root / "notebooks" / f"{name}.py").write_text(text)


def sweep(root: Path, chapter: str, axes: list[str], name: str, workers: int) -> dict:
    """Run ``sweep`` as a subprocess; return wall seconds and the points' result.json files."""
    cmd = [sys.executable, "-m", "ntputils.book", "--root", str(root), "sweep", chapter, "--name", name,
           "--workers", str(workers), "--no-progress"]
    for a in axes:
        cmd += ["-p", a]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t0
    points = root / "sweeps" / name / "points"
    results = [json.loads(p.read_text()) for p in sorted(points.glob("*/result.json"))]
    return {"returncode": proc.returncode, "wall_s": wall, "loadavg_before": load, "results": results,
            "stdout_tail": proc.stdout[-1500:]}


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def span(results: list[dict], root: Path, name: str) -> float:
    """Seconds from the first point's start (its attempts file) to the last point's end."""
    starts = []
    for r in results:
        lines = (root / "sweeps" / name / "points" / r["id"] / "attempts").read_text().splitlines()
        starts.append(_ts(json.loads(lines[0])["started"]))
    return max(_ts(r["finished"]) for r in results) - min(starts)


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def overhead(root: Path) -> list[dict]:
    rows = []
    for chapter, label, axes, proj in [
        ("t01", "trivial (no numerics)", ["x=0:6"], root),
        ("t02", "tiny, chapter API (imports torch)", ["x=0:6"], root),
        ("a01", "a01 (real chapter)", ["seed=0:4"], REPO),
    ]:
        name = f"bench-overhead-{chapter}-{os.getpid()}"
        out = sweep(proj, chapter, axes, name, workers=1)
        res = [r for r in out["results"] if r.get("status") == "ok"]
        try:
            rows.append({
                "chapter": label, "points": len(res), "workers": 1, "returncode": out["returncode"],
                "total_s": mean([r["seconds"] for r in res]),
                "cells_s": mean([r["timing"]["cells_s"] for r in res]),
                "papermill_overhead_s": mean([r["timing"]["papermill_s"] - r["timing"]["cells_s"]
                                              for r in res]),
                "record_s": mean([r["timing"]["record_s"] for r in res]),
                "first_point_s": res[0]["seconds"] if res else None,
                "wall_s": out["wall_s"], "loadavg_before": out["loadavg_before"],
            })
        finally:
            shutil.rmtree(proj / "sweeps" / name, ignore_errors=True)
    return rows


def throughput(root: Path) -> list[dict]:
    rows = []
    for workers in (1, 2):
        name = f"bench-cpu-{workers}"
        out = sweep(root, "t03", ["seed=0:6"], name, workers=workers)
        res = [r for r in out["results"] if r.get("status") == "ok"]
        s = span(res, root, name) if res else float("nan")
        rows.append({"workers": workers, "points": len(res), "returncode": out["returncode"],
                     "span_s": s, "points_per_min": 60 * len(res) / s if res else None,
                     "cells_s": mean([r["timing"]["cells_s"] for r in res]),
                     "wall_s": out["wall_s"], "loadavg_before": out["loadavg_before"]})
    base = rows[0]["points_per_min"]
    for r in rows:
        r["speedup"] = r["points_per_min"] / base if base and r["points_per_min"] else None
    return rows


def memory(root: Path, timeout: float) -> list[dict]:
    rows = []
    for n in (10, 1000):
        name = f"bench-mem-{n}"
        load = os.getloadavg()[0]
        out = run_worker(MODULE, ["--root", str(root), "sweep", "t01", "-p", f"x=0:{n}", "--name", name,
                                  "--workers", "2", "--no-progress"], timeout=timeout)
        done = len(list((root / "sweeps" / name / "points").glob("*/result.json")))
        rows.append({"points": n, "done": done, "status": out.get("status"),
                     "driver_peak_rss_mb": out.get("peak_rss_mb"),
                     "baseline_rss_mb": out.get("baseline_rss_mb"),
                     "wall_s": out.get("wall_seconds"), "loadavg_before": load})
    return rows


def worker(argv: list[str]) -> None:
    """``python -m benchmarks.sweep worker ARGS``: run the sweep CLI in this process, print peak RSS."""
    from ntputils import cli

    baseline = peak_rss_mb()
    code = cli.main(argv)
    print(json.dumps({"status": "ok" if code == 0 else f"exit {code}", "peak_rss_mb": peak_rss_mb(),
                      "baseline_rss_mb": baseline}))


def format_table(group: str, rows: list[dict]) -> str:
    if group == "overhead":
        return markdown_table(
            ["chapter", "points", "per point (s)", "chapter cells (s)", "kernel + papermill (s)",
             "recording (s)", "first point (s)", "load"],
            [[r["chapter"], str(r["points"]), fmt(r["total_s"]), fmt(r["cells_s"]),
              fmt(r["papermill_overhead_s"]), fmt(r["record_s"], ".2g"), fmt(r["first_point_s"]),
              fmt(r["loadavg_before"], ".2f")] for r in rows])
    if group == "throughput":
        return markdown_table(
            ["workers", "points", "span (s)", "points/min", "speed-up", "compute per point (s)",
             "command wall (s)", "load"],
            [[str(r["workers"]), str(r["points"]), fmt(r["span_s"]), fmt(r["points_per_min"]),
              fmt(r["speedup"], ".2f"), fmt(r["cells_s"]), fmt(r["wall_s"]), fmt(r["loadavg_before"], ".2f")]
             for r in rows])
    return markdown_table(
        ["points", "finished", "driver peak RSS (MB)", "driver RSS before the sweep (MB)", "wall (s)",
         "load"],
        [[str(r["points"]), str(r["done"]), fmt(r["driver_peak_rss_mb"], ".0f"),
          fmt(r["baseline_rss_mb"], ".0f"), fmt(r["wall_s"], ".0f"), fmt(r["loadavg_before"], ".2f")]
         for r in rows])


def verdicts(group: str, rows: list[dict]) -> list[str]:
    if group == "throughput" and len(rows) == 2 and rows[1].get("speedup"):
        s = rows[1]["speedup"]
        return [f"- 2 workers vs 1 on a CPU-bound point: {s:.2f}x; target >= 1.7x -> "
                + ("**met**" if s >= 1.7 else "**not met**") + "."]
    if group == "memory" and len(rows) == 2 and rows[1].get("driver_peak_rss_mb"):
        a, b = rows[0]["driver_peak_rss_mb"], rows[1]["driver_peak_rss_mb"]
        per = (b - a) / (rows[1]["points"] - rows[0]["points"]) * 1024
        base = rows[1].get("baseline_rss_mb") or 0.0
        note = (" The peak was already reached before the sweep started (by the imports that precede it), "
                "so neither the cluster nor the points raised it measurably (the peak RSS is in whole MB)."
                if base >= b - 1 else "")
        return [f"- Driver memory: {b:.0f} MB peak for 1,000 points vs {a:.0f} MB for 10 "
                f"(about {per:.0f} KB per extra point).{note}"]
    if group == "overhead":
        out = []
        for r in rows:
            over = r["papermill_overhead_s"] + r["record_s"]
            out.append(f"- {r['chapter']}: runner overhead {over:.2f} s per point (kernel start, papermill, "
                       f"recording) vs {r['cells_s']:.2f} s in the chapter's cells.")
        return out
    return []


def main(argv: list[str] | None = None) -> None:
    argv = dispatch_worker(argv, worker)
    if argv is None:
        return
    p = argparse.ArgumentParser(prog=MODULE, description=__doc__.splitlines()[0])
    p.add_argument("--group", choices=("overhead", "throughput", "memory"), required=True)
    p.add_argument("--timeout", type=float, default=3600)
    a = p.parse_args(argv)
    info = machine_info()
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(tmp)
        make_project(root)
        if a.group == "overhead":
            rows = overhead(root)
        elif a.group == "throughput":
            rows = throughput(root)
        else:
            rows = memory(root, a.timeout)
    path = write_json(f"sweep_{a.group}.json", {"group": a.group, "machine": info, "rows": rows})
    print(format_table(a.group, rows))
    print("\n".join(verdicts(a.group, rows)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
