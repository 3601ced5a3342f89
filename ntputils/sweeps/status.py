"""``python -m ntputils.book sweep-status NAME``: points done, failed, running, pending, ETA, slowest point,
last error. Read-only: it finds the driver in ``/proc/locks`` and never takes a lock."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from ntputils.book.project import Project, read_json
from ntputils.committed import SweepTableError, duration
from ntputils.sweeps.store import (
    LOCK,
    RESULT,
    lock_holder,
    point_dir,
    read_attempts,
    sweep_dir,
    sweep_plan,
)

EXIT_OK, EXIT_USAGE = 0, 2


def _label(result: dict[str, Any]) -> str:
    overrides = result.get("overrides") or {}
    return f"{result.get('id')} ({', '.join(f'{k}={v!r}' for k, v in overrides.items())})"


def _seconds_since(attempt: dict[str, Any], now: float) -> float:
    try:
        return max(0.0, now - datetime.fromisoformat(attempt["started"]).timestamp())
    except (KeyError, TypeError, ValueError):
        return 0.0


def status_lines(project: Project, name: str, plan: dict[str, Any], now: float | None = None) -> list[str]:
    """What ``sweep-status`` prints. A started point without a result is running while the driver holds
    the lock, else interrupted (and pending)."""
    now = time.time() if now is None else now
    driver = lock_holder(sweep_dir(project, name) / LOCK)
    done, failed, running, pending, interrupted = [], [], [], [], 0
    for pid in plan["point_ids"]:
        d = point_dir(project, name, str(pid))
        res, attempts = read_json(d / RESULT), read_attempts(d)
        if res.get("status") in ("ok", "error"):
            (done if res["status"] == "ok" else failed).append(res)
        elif attempts and driver is not None:
            point = {"id": pid, "overrides": read_json(d / "params.json").get("overrides", {})}
            this_run = read_attempts(d, attempts[-1].get("run"))  # starts by the running driver
            running.append((point, _seconds_since(attempts[-1], now), len(this_run)))
        else:
            interrupted += bool(attempts)
            pending.append(pid)
    if driver is None:
        said = "no driver running"
    elif driver is False:
        said = "driver unknown (no /proc/locks on this machine)"
    else:
        said = f"driver running (pid {driver})"
    lines = [f"sweep {name}: {plan['chapter']}, {len(plan['point_ids'])} point(s); {said}",
             f"  done {len(done)}, failed {len(failed)}, running {len(running)}, pending {len(pending)}"]
    if interrupted:
        lines.append(f"  {interrupted} pending point(s) were interrupted (started, no result); run the "
                     "sweep's command again (with its --slurm, --scheduler or --workers) to finish them: "
                     f"`{plan.get('command', '')}`")
    times = [float(r["seconds"]) for r in done + failed if isinstance(r.get("seconds"), (int, float))]
    left = len(running) + len(pending)
    if driver is not None and left and times:  # the finished points' mean time x what is left / in parallel
        mean, parallel = sum(times) / len(times), max(1, len(running))
        work = sum(max(mean - elapsed, 0.0) for _, elapsed, _ in running) + mean * len(pending)
        overdue = sum(elapsed > mean for _, elapsed, _ in running)
        if overdue:  # the mean does not predict a point that has outrun it: no estimate pretends it does
            lines.append(f"  ETA unknown: {overdue} running point(s) have run longer than the finished "
                         f"points' mean ({mean:.1f} s), so points differ in cost"
                         + (f"; the rest needs ~{duration(work / parallel)} at that mean" if work else ""))
        else:
            lines.append(f"  ETA ~{duration(work / parallel)} (mean {mean:.1f} s per finished point, {left} "
                         f"left, {parallel} in parallel)")
    elif driver is not None and left:
        lines.append("  ETA: unknown until a point finishes")
    if done or failed:
        slowest = max(done + failed, key=lambda r: float(r.get("seconds") or 0.0))
        lines.append(f"  slowest: {_label(slowest)} {float(slowest.get('seconds') or 0.0):.1f} s")
    if failed:
        last = max(failed, key=lambda r: str(r.get("finished", "")))
        first = (str(last.get("error") or "").strip().splitlines() or ["(no message)"])[0]
        where = point_dir(project, name, str(last.get("id"))) / "error.txt"
        lines.append(f"  last error: {_label(last)}: {first} (see {where})")
    for point, elapsed, attempt in running:
        again = f", attempt {attempt}" if attempt > 1 else ""
        lines.append(f"  running: {_label(point)} for {duration(elapsed)}{again}")
    return lines


def status_command(project: Project, name: str) -> int:
    """``sweep-status NAME``: 0, or 2 with one ``error:`` line (a bad name, no such sweep, a garbled plan)."""
    try:
        plan = sweep_plan(project, name)
    except (FileNotFoundError, SweepTableError) as err:
        print(f"error: {err}", flush=True)
        return EXIT_USAGE
    print("\n".join(status_lines(project, name, plan)), flush=True)
    return EXIT_OK
