"""``python -m ntputils.book sweep-status NAME``: points done, failed, running, pending, ETA, slowest point,
last error. Read-only: it finds the driver in ``/proc/locks`` and never takes a lock."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ntputils.book.project import Project, read_json
from ntputils.book.sweep_store import LOCK, RESULT, read_attempts, sweep_dir

EXIT_OK, EXIT_USAGE = 0, 2


def lock_holder(lock: Path, locks: Path = Path("/proc/locks")) -> int | None | bool:
    """The pid holding an exclusive ``flock`` on ``lock``, ``None`` when nobody does, ``False`` when that
    cannot be known (no ``/proc/locks``)."""
    try:
        st = lock.stat()
    except OSError:
        return None  # no lock file: no driver has ever run
    try:
        lines = locks.read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        parts = line.split()
        if "->" in parts:  # a waiter (``1: -> FLOCK ...``): it does not hold the lock
            continue
        if len(parts) < 6 or parts[1] != "FLOCK" or parts[3] != "WRITE":
            continue
        try:
            major, minor, inode = parts[5].split(":")
            if (int(inode) == st.st_ino and int(major, 16) == os.major(st.st_dev)
                    and int(minor, 16) == os.minor(st.st_dev)):
                return int(parts[4])
        except ValueError:
            continue
    return None


def _started(attempt: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(attempt["started"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class SweepState:
    """What :func:`sweep_state` found; ``running`` holds (point id, overrides, seconds, attempt)."""

    name: str
    chapter: str
    total: int
    driver: int | None | bool
    done: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    running: list[tuple[str, dict[str, Any], float, int]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    command: str = ""


def sweep_state(project: Project, name: str, now: float | None = None) -> SweepState:
    """Read ``sweeps/<name>/`` (``FileNotFoundError`` without a ``sweep.json``); a started point without a
    result is running while the driver holds the lock, else interrupted (and pending)."""
    from ntputils.book.sweep_store import read_plan

    directory = sweep_dir(project, name)
    plan = read_plan(directory / "sweep.json")  # SweepFileError (a ValueError) when garbled
    if not plan:
        raise FileNotFoundError(f"no sweep named {name!r} (no {directory / 'sweep.json'})")
    now = time.time() if now is None else now
    driver = lock_holder(directory / LOCK)
    state = SweepState(name, plan["chapter"], len(plan["point_ids"]), driver, command=plan.get("command", ""))
    for pid in plan["point_ids"]:
        d = directory / "points" / str(pid)
        res = read_json(d / RESULT)
        if res.get("status") == "ok":
            state.done.append(res)
        elif res.get("status") == "error":
            state.failed.append(res)
        elif attempts := read_attempts(d):
            if driver is None:
                state.interrupted.append(pid)
                state.pending.append(pid)
            else:
                t0 = _started(attempts[-1])
                overrides = read_json(d / "params.json").get("overrides", {})
                state.running.append((pid, overrides, max(0.0, now - t0) if t0 else 0.0, len(attempts)))
        else:
            state.pending.append(pid)
    return state


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def eta(state: SweepState) -> tuple[float, float, int] | None:
    """(seconds left, mean seconds per finished point, points in parallel), or ``None`` without a finished
    point or with nothing left."""
    times = [float(r["seconds"]) for r in state.done + state.failed
             if isinstance(r.get("seconds"), (int, float))]
    left = len(state.running) + len(state.pending)
    if not times or not left:
        return None
    mean = sum(times) / len(times)
    work = sum(max(mean - elapsed, 0.0) for _, _, elapsed, _ in state.running) + mean * len(state.pending)
    parallel = max(1, len(state.running))
    return work / parallel, mean, parallel


def _label(result: dict[str, Any]) -> str:
    overrides = result.get("overrides") or {}
    return f"{result.get('id')} ({', '.join(f'{k}={v!r}' for k, v in overrides.items())})"


def report(project: Project, state: SweepState) -> list[str]:
    """The lines ``sweep-status`` prints."""
    if state.driver is None:
        driver = "no driver running"
    elif state.driver is False:
        driver = "driver unknown (no /proc/locks on this machine)"
    else:
        driver = f"driver running (pid {state.driver})"
    lines = [f"sweep {state.name}: {state.chapter}, {state.total} point(s); {driver}",
             f"  done {len(state.done)}, failed {len(state.failed)}, running {len(state.running)}, "
             f"pending {len(state.pending)}"]
    if state.interrupted:
        lines.append(f"  {len(state.interrupted)} pending point(s) were interrupted (started, no result); "
                     "run the sweep's command again (with its --slurm, --scheduler or --workers) to finish "
                     f"them: `{state.command}`")
    left = eta(state)
    if left is not None and state.driver is not None:
        seconds, mean, parallel = left
        lines.append(f"  ETA ~{duration(seconds)} (mean {mean:.1f} s per finished point, "
                     f"{len(state.running) + len(state.pending)} left, {parallel} in parallel)")
    elif state.driver is not None and (state.running or state.pending):
        lines.append("  ETA: unknown until a point finishes")
    finished = state.done + state.failed
    if finished:
        slowest = max(finished, key=lambda r: float(r.get("seconds") or 0.0))
        lines.append(f"  slowest: {_label(slowest)} {float(slowest.get('seconds') or 0.0):.1f} s")
    if state.failed:
        last = max(state.failed, key=lambda r: str(r.get("finished", "")))
        first = (str(last.get("error") or "").strip().splitlines() or ["(no message)"])[0]
        where = sweep_dir(project, state.name) / "points" / str(last.get("id")) / "error.txt"
        lines.append(f"  last error: {_label(last)}: {first} (see {where})")
    for pid, overrides, elapsed, attempt in state.running:
        again = f", attempt {attempt}" if attempt > 1 else ""
        lines.append(f"  running: {_label({'id': pid, 'overrides': overrides})} for {duration(elapsed)}"
                     + again)
    return lines


def status_command(project: Project, name: str) -> int:
    """``sweep-status NAME``: 0, or 2 with one ``error:`` line (a bad name, no such sweep, a garbled plan)."""
    from ntputils.book.sweep_store import SweepFileError
    from ntputils.book.sweep_table import SweepTableError, check_name

    try:
        check_name(name)
        state = sweep_state(project, name)
    except (FileNotFoundError, SweepTableError, SweepFileError) as err:
        print(f"error: {err}", flush=True)
        return EXIT_USAGE
    print("\n".join(report(project, state)), flush=True)
    return EXIT_OK
