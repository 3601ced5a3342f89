"""A sweep's folder ``sweeps/<name>/``: its plan ``sweep.json``, the driver's ``.lock`` and one folder per
point (``attempts``, ``result.json``, the only done marker). The one place that finds, reads and locks
them, for the driver, the table, ``sweep-status`` and ``sweep-report``."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout, lock_descriptor

from ntputils.book.fingerprint import Package, trace_digest
from ntputils.book.project import Project
from ntputils.committed import SweepTableError, check_name

SWEEPS_DIR = "sweeps"
RESULT = "result.json"
LOCK = ".lock"


def sweep_dir(project: Project, name: str) -> Path:
    """``<root>/sweeps/<name>``."""
    return project.root / SWEEPS_DIR / name


def point_dir(project: Project, name: str, pid: str) -> Path:
    return sweep_dir(project, name) / "points" / pid


def read_attempts(directory: Path, run: str | None = None) -> list[dict[str, Any]]:
    """The starts of a point (one JSON object per line of its ``attempts`` file); with ``run``, only those
    of that driver run (a resumed or re-certifying sweep keeps the earlier runs' lines)."""
    try:
        lines = (directory / "attempts").read_text(errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out if run is None else [a for a in out if a.get("run") == run]


def note_attempt(directory: Path, run: str, machine: str) -> None:
    """Append this start to the point's ``attempts``: pid, host, the driver ``run``, the ``machine``
    (:func:`ntputils.book.environment.machine`, or the GPU's description) and the time. A point whose training
    resumes from its checkpoint across commands keeps where each stretch ran (:func:`attempt_machines`)."""
    line = {"pid": os.getpid(), "host": socket.gethostname(), "run": run, "machine": machine,
            "started": datetime.now(UTC).isoformat(timespec="milliseconds")}
    with (directory / "attempts").open("a") as f:
        f.write(json.dumps(line) + "\n")


def attempt_machines(directory: Path) -> list[str]:
    """The machines the point's attempts started on, each once, in the order first seen (attempts written
    before they named their machine are left out)."""
    named = (a["machine"] for a in read_attempts(directory) if isinstance(a.get("machine"), str))
    return list(dict.fromkeys(named))


def read_plan(path: Path) -> dict[str, Any]:
    """``sweep.json`` (``{}`` if there is none); :class:`SweepTableError` naming it when it is not a plan."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SweepTableError(f"{path} is unreadable ({type(err).__name__}: {err}); remove the folder "
                              f"{path.parent} to start the sweep over") from None
    if (not isinstance(data, dict) or not isinstance(data.get("axes"), dict)
            or not isinstance(data.get("point_ids"), list) or not isinstance(data.get("chapter"), str)):
        raise SweepTableError(f"{path} is not a sweep plan (expected chapter, axes and point_ids); remove "
                              f"the folder {path.parent} to start the sweep over")
    return data


def sweep_plan(project: Project, name: str) -> dict[str, Any]:
    """The plan of the existing sweep ``name``; :class:`FileNotFoundError` or :class:`SweepTableError`."""
    path = sweep_dir(project, check_name(name)) / "sweep.json"
    plan = read_plan(path)
    if not plan:
        raise FileNotFoundError(f"no sweep named {name!r} under {path.parent.parent}")
    return plan


class DriverRunning(RuntimeError):
    """The sweep's driver holds its lock: its points are still running."""


@contextlib.contextmanager
def driver_lock(directory: Path) -> Iterator[None]:
    """One driver per sweep: ``filelock.FileLock`` on ``.lock`` (``flock``: it dies with its process), else
    :class:`DriverRunning`."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        held = FileLock(directory / LOCK).acquire(blocking=False)
    except Timeout:
        raise DriverRunning(f"another sweep driver (or a sweep-table --publish) is running on "
                            f"{directory}") from None
    with held:
        yield


@contextlib.contextmanager
def no_driver(directory: Path) -> Iterator[None]:
    """Hold the sweep's lock for reading, so no driver starts meanwhile; :class:`DriverRunning` when a
    driver (or another publish) holds it. The lock file is opened read-only (filelock's
    ``lock_descriptor``), so a sweep folder that cannot be written is still read."""
    try:
        f = (directory / LOCK).open("r")
    except FileNotFoundError:
        yield
        return
    with f:  # closing it releases the lock
        if not lock_descriptor(f.fileno(), blocking=False):
            raise DriverRunning(f"the driver of sweep {directory.name!r} is still running (it, or another "
                                f"publish, holds {directory / LOCK}); wait for it to finish")
        yield


def lock_holder(lock: Path, locks: Path = Path("/proc/locks")) -> int | None | bool:
    """The pid holding an exclusive ``flock`` on ``lock`` (read without taking it), ``None`` when nobody
    does, ``False`` when that cannot be known (no ``/proc/locks``)."""
    try:
        st = lock.stat()
    except OSError:
        return None  # no lock file: no driver has ever run
    try:
        lines = locks.read_text().splitlines()
    except OSError:
        return False
    for parts in map(str.split, lines):  # "1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF"
        if len(parts) < 6 or parts[1] != "FLOCK" or parts[3] != "WRITE":
            continue  # a waiter ("1: -> FLOCK ..."), a POSIX lock, a shared flock
        try:
            major, minor, inode = parts[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == (os.major(st.st_dev), os.minor(st.st_dev),
                                                                 st.st_ino):
                return int(parts[4])
        except ValueError:
            continue
    return None


def point_current(result: dict[str, Any], package: Package | None = None,
                  memo: dict[str, str] | None = None) -> bool:
    """Whether a finished point's stored trace rehashes to its stored digest under the current code (False
    without both); ``memo`` (trace -> digest) is shared by one sweep's points."""
    fp = result.get("fingerprint") or {}
    if not (fp.get("trace") and fp.get("trace_digest")):
        return False
    memo = {} if memo is None else memo
    key = json.dumps(fp["trace"], sort_keys=True)
    if key not in memo:
        memo[key] = trace_digest(fp["trace"], package)
    return memo[key] == fp["trace_digest"]
