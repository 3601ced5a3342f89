"""The record of one sweep point (``sweeps/<name>/points/<id>/result.json``), whatever executed it.

Two executors make points: the book's papermill child, started from a Dask worker
(:func:`ntputils.sweeps.sweep.run_point`), and the in-process executor of the GPU machine
(:mod:`ntputils.gpu.device_run`). Both build the result here, so a table, ``publish`` and ``adopt`` read
one contract. Standard library only (the GPU machine's image has neither Dask nor papermill).
"""

from __future__ import annotations

import hashlib
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ntputils.book.environment import machine
from ntputils.book.fingerprint import is_runner, trace_digest
from ntputils.tracing import PACKAGE_DIR

POINT_THREADS = 1  # BLAS threads of a point's process, whichever executor (recorded in its result)


def point_meta(task: dict[str, Any], record: dict[str, Any], trace: dict[str, Any] | None, status: str,
               data: str | None = None) -> dict[str, Any]:
    """What a point recorded (``record``: the chapter's record file), its task and its code fingerprint
    (``trace``: what it executed; ``data``: the data digest to hash with it, default the data root's)."""
    return {"chapter": task["chapter"], "point": task["id"], "status": status,
            "parameters": task["parameters"], "resolved": task["resolved"],
            "profile": record.get("profile", task["resolved"].get("profile")),
            "seed": record.get("seed", task["resolved"].get("seed")),
            "device": record.get("device", "unknown (setup_chapter not called)"),
            "checks": record.get("checks", []), "comparisons": record.get("comparisons", []),
            "results": record.get("results", {}), "code_hash": task["code_hash"], "git": task["git"],
            "fingerprint": {"chapter_code": task.get("chapter_code", ""), "trace": trace,
                            "trace_digest": trace_digest(trace, data=data) if trace else None}}


def note_error(directory: Path, meta: dict[str, Any], outcome: dict[str, Any]) -> None:
    """A failed point: ``error.txt`` (the error line and traceback of ``outcome``), the error in ``meta``."""
    error = f"{outcome.get('ename', 'Error')}: {outcome.get('evalue', '')}"
    (directory / "error.txt").write_text(error + "\n\n" + (outcome.get("traceback") or "(no traceback)"))
    meta.update(error=error, cell=outcome.get("cell"))


def point_result(task: dict[str, Any], meta: dict[str, Any], *, seconds: float, executor_s: float,
                 cells_s: float, chapter_wall_s: Any, attempt: int, **extra: Any) -> dict[str, Any]:
    """``result.json`` of a finished point: ``meta`` (:func:`point_meta`, with ``error`` when it failed),
    the timings (``executor_s``: papermill's or the in-process executor's seconds), attempt, host and the
    machine that finished it (:func:`ntputils.book.environment.machine`; ``extra`` may name another, e.g. the
    GPU's): a sweep resumed on other machines keeps each point's own in its provenance."""
    return {**meta, "id": task["id"], "overrides": task["overrides"], "seconds": round(seconds, 3),
            "timing": {"papermill_s": round(executor_s, 3), "cells_s": round(cells_s, 3),
                       "record_s": round(seconds - executor_s, 3), "chapter_wall_s": chapter_wall_s},
            "attempt": attempt, "run": task["run"], "worker_pid": os.getpid(), "host": socket.gethostname(),
            "machine": machine(), "finished": datetime.now(UTC).isoformat(timespec="milliseconds"), **extra}


def source_digests(trace: dict[str, Any] | None) -> dict[str, str]:
    """``{module: sha256 of its bytes}`` for every ``ntputils`` module of ``trace`` (runner modules left out):
    what a point that ran under another Python leaves for the check that the code here is the code it ran
    (a normalized-AST digest differs between Python versions: 3.12's ``ast.dump`` shows ``type_params``)."""
    out = {}
    for rel in sorted(set((trace or {}).get("modules", []))):
        if not is_runner(rel):
            path = PACKAGE_DIR / rel
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<missing>"
    return out
