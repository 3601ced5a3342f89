"""Shared helpers of the benchmark scripts: worker subprocesses, machine facts, JSON and tables."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def machine_info() -> dict:
    """CPU, memory, library versions and the current load (other jobs share the cores)."""
    import numpy
    import scipy
    import torch

    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "loadavg": os.getloadavg(),
    }
    try:
        import cvxpy

        info["cvxpy"] = cvxpy.__version__
    except ImportError:  # pragma: no cover
        info["cvxpy"] = None
    try:
        with open("/proc/meminfo") as fh:
            info["mem_total_gb"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:  # pragma: no cover
        pass
    return info


def run_worker(module: str, args: list[str], timeout: float, mem_limit_gb: float | None = None) -> dict:
    """Run ``python -m module worker ARGS`` in a fresh process and parse the JSON it prints last.

    Returns the worker's dict plus ``wall_seconds`` and load averages; on timeout/crash returns
    ``{"status": "timeout" | "failed", ...}`` with what is known.
    """
    cmd = [sys.executable, "-m", module, "worker", *args]

    def limit() -> None:  # runs in the child: cap the address space so a runaway solve cannot OOM the host
        if mem_limit_gb:
            cap = int(mem_limit_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=limit,
            cwd=Path(__file__).resolve().parents[1],
        )
    except subprocess.TimeoutExpired:
        return {
            "status": "timeout",
            "timeout_seconds": timeout,
            "wall_seconds": time.perf_counter() - t0,
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
        }
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {
            "status": "failed",
            "returncode": proc.returncode,
            "stderr_tail": proc.stderr[-2000:],
            "wall_seconds": wall,
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
        }
    out = json.loads(lines[-1])
    out.update(wall_seconds=wall, loadavg_before=load_before, loadavg_after=os.getloadavg())
    out.setdefault("status", "ok")
    return out


def dispatch_worker(argv: list[str] | None, worker: Callable[[list[str]], None]) -> list[str] | None:
    """The other end of :func:`run_worker`: for ``worker ARGS`` call ``worker(ARGS)`` and return ``None``;
    otherwise return the command-line arguments (``sys.argv[1:]`` when ``argv`` is ``None``) to parse."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        worker(argv[1:])
        return None
    return argv


def write_json(name: str, payload: dict) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / name
    payload = {"created": datetime.now(UTC).isoformat(timespec="seconds"), **payload}
    path.write_text(json.dumps(payload, indent=1, default=float) + "\n")
    return path


def fmt(x, spec: str = ".3g", missing: str = "-") -> str:
    if x is None:
        return missing
    if isinstance(x, str):
        return x
    try:
        return format(x, spec)
    except (TypeError, ValueError):
        return str(x)


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
