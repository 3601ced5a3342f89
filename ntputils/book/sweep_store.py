"""A sweep's folder: ``sweeps/<name>/`` with its plan ``sweep.json``, the driver's ``.lock`` and one
folder per point (``attempts``, ``result.json``, the only done marker). Read by the driver
(:mod:`~ntputils.book.sweep`), the table (:mod:`~ntputils.book.sweep_table`) and ``sweep-status``."""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ntputils.book.fingerprint import Package, trace_digest
from ntputils.book.project import Project

SWEEPS_DIR = "sweeps"
RESULT = "result.json"
LOCK = ".lock"


def sweep_dir(project: Project, name: str) -> Path:
    """``<root>/sweeps/<name>``."""
    return project.root / SWEEPS_DIR / name


def point_dir(project: Project, name: str, pid: str) -> Path:
    return sweep_dir(project, name) / "points" / pid


def read_attempts(directory: Path) -> list[dict[str, Any]]:
    """The starts of a point (one JSON object per line of its ``attempts`` file)."""
    try:
        lines = (directory / "attempts").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


class SweepFileError(ValueError):
    """A sweep's ``sweep.json`` exists but cannot be read (exit code 2, naming the file)."""


def read_plan(path: Path) -> dict[str, Any]:
    """``sweep.json`` (``{}`` if there is none); :class:`SweepFileError` when it is not a readable plan."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SweepFileError(f"{path} is unreadable ({type(err).__name__}: {err}); remove the folder "
                             f"{path.parent} to start the sweep over") from None
    if (not isinstance(data, dict) or not isinstance(data.get("axes"), dict)
            or not isinstance(data.get("point_ids"), list) or not isinstance(data.get("chapter"), str)):
        raise SweepFileError(f"{path} is not a sweep plan (expected chapter, axes and point_ids); remove the "
                             f"folder {path.parent} to start the sweep over")
    return data


class DriverRunning(RuntimeError):
    """The sweep's driver holds its lock: its points are still running."""


@contextlib.contextmanager
def no_driver(directory: Path) -> Iterator[None]:
    """Hold the sweep's lock shared (read-only), so no driver starts meanwhile; raise :class:`DriverRunning`
    when a driver holds it."""
    try:
        f = (directory / LOCK).open("r")
    except FileNotFoundError:
        yield
        return
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DriverRunning(f"the driver of sweep {directory.name!r} is still running (it holds "
                                f"{directory / LOCK}); wait for it to finish") from None
        yield


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
