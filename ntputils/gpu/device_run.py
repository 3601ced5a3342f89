"""Run a device bundle's points on the GPU machine: ``python3 -m ntputils.gpu.device_run PLAN --out DIR``.

:mod:`ntputils.gpu.bundle` prepares, on a machine with the whole toolchain, everything a point
needs (the chapter's input notebook, the points, their code hash, the data files and the wheels the
image lacks) and prints the one command that runs this module there. This module imports only the
standard library and ``ntputils`` modules that the image can import (no Dask, papermill, jupytext or
nbformat), and works in three steps:

1. checks each carried data file against the sha256 recorded when the bundle was made (the data digest
   hashed into the points' fingerprints is that of the full data root the files were taken from);
2. runs each point that has no ``ok`` result yet in a child process (``--point``), bounded by the
   deadline; the state lives under ``/tmp`` (``state_dir``), so a second command on the same machine
   skips finished points and resumes a training from its last checkpoint (``NTP_CACHE_DIR``);
3. writes the sweep folder (``sweep.json`` and each point's ``result.json``, ``attempts``, ``log``,
   ``error.txt``) as one ``<name>.tar.xz`` and a one-screen ``<name>-summary.txt`` into ``--out``, which
   ``python -m ntputils.book adopt DIR`` publishes.

**Why an in-process executor, not papermill.** papermill runs a notebook through a Jupyter kernel:
ipykernel, jupyter_client, nbclient, nbformat, pyzmq and tornado, of which pyzmq and tornado are binary
wheels (cp312 there, cp311 here) and nbformat needs jsonschema's binary ``rpds-py``. The GPU machine
needs none of that protocol: the notebook is known, its cells run one after another, and the record a
point leaves is written by the chapter itself (``NTPBOOK_RECORD``, ``NTPBOOK_TRACE``). The child runs
the same input notebook papermill would get (:func:`ntputils.book.execute.write_input`: the jupytext
source with the two trace cells, converted when the bundle was made), injects the parameters the way
papermill does (a ``# Parameters`` cell after the ``parameters`` cell, which ``setup_chapter`` reads
from IPython's ``In``) and runs every cell in an IPython ``InteractiveShell`` (magics such as
``%matplotlib inline`` and ``display`` work as in a kernel; outputs go to the point's log). Its wheels are
all pure Python (IPython and its dependencies), so the same files install under Python 3.11 and 3.12,
and the rehearsal (``tests/test_device_bundle.py``) installs exactly the bundle's wheels. The result is
built by :mod:`ntputils.sweeps.point_record`, as a papermill point's is; no executed notebook is kept.

**Speed and progress** (:mod:`ntputils.gpu.speed`, on CUDA only, as the plan asks): TF32 while a
module trains (the geometry is evaluated in float32), the transformer's forward compiled with CUDA graphs
after a probe, and a progress line (step, milliseconds a step, seconds left) at steps 1, 10, 100, 1,000 and
every 30 s, kept in ``progress.json`` so that the summary of a point the deadline stopped says how far it got.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tarfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ntputils.book.environment import machine, package_versions
from ntputils.book.execute import _die_with_parent, evidence_problem, trace_path, worker_env
from ntputils.book.project import Project, read_json, write_json_atomic
from ntputils.committed import POINT_ENV
from ntputils.gpu.speed import PROGRESS_ENV, speed_up, watch_training
from ntputils.sweeps.point_record import POINT_THREADS, note_error, point_meta, point_result, source_digests
from ntputils.sweeps.store import RESULT, note_attempt, read_attempts

COLLECT_S = 20.0  # seconds kept free before the deadline to write the archive
MIN_START_S = 30.0  # a point is not started with less time than this left
INJECTED_MARKER = "# Parameters"


class DataMismatch(RuntimeError):
    """A carried data file is missing or is not the file the bundle recorded."""


def check_data(root: Path, data: dict[str, Any]) -> None:
    """Raise :class:`DataMismatch` unless every file of ``data["files"]`` (relative path -> sha256) is
    under ``root`` with that digest."""
    for rel, digest in sorted(data["files"].items()):
        path = root / rel
        if not path.is_file():
            raise DataMismatch(f"data file {path} is missing: the bundle was made with it; make the bundle "
                               "again (make device-bundle) and carry .device")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise DataMismatch(f"data file {path} is not the one the bundle recorded (sha256 differs); make "
                               "the bundle again")


def versions() -> dict[str, str]:
    """Python, the packages a table reports, and CUDA's version as torch sees it."""
    out = package_versions(("torch", "numpy", "scipy", "pandas", "sentencepiece", "ipython"))
    try:
        import torch

        out["cuda"] = str(torch.version.cuda)
    except ImportError:  # pragma: no cover - the image holds torch
        out["cuda"] = "none"
    return out


def accelerator() -> dict[str, Any]:
    """The device the points see: ``{"device": "cuda"|"cpu", "gpu": model or None, "gpu_memory_gb"}``."""
    import torch

    if not torch.cuda.is_available():
        return {"device": "cpu", "gpu": None, "gpu_memory_gb": None}
    props = torch.cuda.get_device_properties(0)
    return {"device": "cuda", "gpu": props.name, "gpu_memory_gb": round(props.total_memory / 2**30, 1)}


def environment_of(plan: dict[str, Any]) -> dict[str, Any]:
    """What the provenance records of the machine and the run's settings."""
    acc = accelerator()
    made_on = f"{acc['gpu']}, {machine()}" if acc["gpu"] else machine()
    return {**acc, "versions": versions(), "os_cpus": os.cpu_count(), "threads": POINT_THREADS,
            "precision": plan.get("precision", "fp32") if acc["device"] == "cuda" else "fp32",
            "compile": plan.get("compile") if acc["device"] == "cuda" else None,
            "executor": "in-process IPython (ntputils.gpu.device_run)",
            "machine": made_on}


# ---------------------------------------------------------------------------------------------
# the child: one point's notebook in an IPython shell
# ---------------------------------------------------------------------------------------------
def injected_cell(inject: dict[str, Any]) -> str:
    """papermill's injected-parameters cell: ``# Parameters`` and one ``name = literal`` line each."""
    return "\n".join([INJECTED_MARKER, *(f"{k} = {v!r}" for k, v in inject.items())]) + "\n"


def code_cells(notebook: dict[str, Any], inject: dict[str, Any]) -> list[str]:
    """The notebook's code cells with the injected cell after the one tagged ``parameters``."""
    out = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        out.append("".join(source) if isinstance(source, list) else str(source))
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            out.append(injected_cell(inject))
    return out


def run_cells(notebook: Path, inject: dict[str, Any], precision: str, compile_mode: str | None = None,
              steps: int | None = None) -> dict[str, Any]:
    """Run the notebook's code cells in an IPython shell, stopping at the first error; return the outcome
    (``status`` ``ok`` or ``failed`` with ``ename``, ``evalue``, ``traceback``, ``cell``), ``cells_s`` and
    the speed-ups applied (``speed``). ``steps``: the training's length, for the progress lines."""
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        def enable_gui(self, gui: str | None = None) -> None:
            """``%matplotlib inline`` needs no event loop (the base class raises)."""

    shell = Shell.instance()
    speed = speed_up(precision, compile_mode)
    progress = os.environ.get(PROGRESS_ENV)
    watch_training(steps, Path(progress) if progress else None)
    cells = code_cells(json.loads(notebook.read_text()), inject)
    t0 = time.perf_counter()
    for number, source in enumerate(cells, 1):
        print(f"----- cell {number} of {len(cells)} ({time.perf_counter() - t0:.1f} s) -----", flush=True)
        result = shell.run_cell(source, store_history=True)
        sys.stdout.flush()
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            return {"status": "failed", "ename": type(error).__name__, "evalue": str(error), "cell": number,
                    "traceback": "".join(traceback.format_exception(error)),
                    "cells_s": time.perf_counter() - t0, "speed": speed}
    return {"status": "ok", "cells_s": time.perf_counter() - t0, "speed": speed}


def note_data_reads(root: Path) -> set[str]:
    """Note (in the returned set, as paths relative to ``root``) every file under the data root ``root``
    this process opens from now on, except the reads of the data digest (``file_sha256``), which hashes
    every file there: what a point needs carried (``data_read`` in its result)."""
    seen: set[str] = set()
    prefix = str(root) + os.sep

    def hook(event: str, args: tuple) -> None:
        if event != "open" or not isinstance(args[0], (str, os.PathLike)):
            return
        path = os.fspath(args[0])
        if not isinstance(path, str) or not os.path.abspath(path).startswith(prefix):
            return
        frame = inspect.currentframe().f_back  # the opener's frame
        while frame is not None:
            if frame.f_code.co_name == "file_sha256":
                return
            frame = frame.f_back
        seen.add(os.path.relpath(os.path.abspath(path), root))

    sys.addaudithook(hook)
    return seen


def point_child(task_file: Path) -> int:
    """``--point TASK``: run one point's notebook; write the outcome beside the task file."""
    task = json.loads(task_file.read_text())
    reads = note_data_reads(Path(os.environ.get("NTP_DATA_DIR", "/nonexistent")).resolve())
    try:
        outcome = run_cells(Path(task["notebook"]), task["inject"], task.get("precision", "fp32"),
                            task.get("compile"), task.get("resolved", {}).get("steps"))
    except Exception as err:  # noqa: BLE001 - the shell itself failed: the point's error
        outcome = {"status": "failed", "ename": type(err).__name__, "evalue": str(err), "cells_s": 0.0,
                   "traceback": traceback.format_exc()}
    write_json_atomic(task_file.with_name("outcome.json"), outcome | {"data_read": sorted(reads)})
    return 0


# ---------------------------------------------------------------------------------------------
# the driver: every point, bounded by the deadline, then the archive
# ---------------------------------------------------------------------------------------------
def _child_command(task_file: Path) -> list[str]:
    return [sys.executable, "-m", "ntputils.gpu.device_run", "--point", str(task_file)]


def run_point(root: Path, plan: dict[str, Any], task: dict[str, Any], sweep: Path, env: dict[str, str],
              run: str, seconds_left: float, *, made_on: str) -> dict[str, Any] | None:
    """Run one point in a child process for at most ``seconds_left``; return its result, or ``None`` when
    the deadline stopped it (its training checkpoint stays for the next command). ``made_on`` is the
    description the driver recorded once for the command (:func:`environment_of`)."""
    directory = sweep / "points" / task["id"]
    directory.mkdir(parents=True, exist_ok=True)
    write_json_atomic(directory / "params.json", {"chapter": plan["chapter"], "overrides": task["overrides"],
                                                  "resolved": task["resolved"]})
    note_attempt(directory, run, made_on)
    for stale in ("error.txt", "record.json", "trace.json", "outcome.json", RESULT):
        (directory / stale).unlink(missing_ok=True)
    record_path = directory / "record.json"
    task_file = directory / "task.json"
    write_json_atomic(task_file, {**task, "notebook": str(root / plan["notebook"]),
                                  "precision": plan.get("precision", "fp32"), "compile": plan.get("compile")})
    child_env = worker_env(Project(root), record_path, threads=POINT_THREADS) | env
    child_env[POINT_ENV] = f"{plan['name']}/{task['id']}"
    child_env[PROGRESS_ENV] = str(directory / "progress.json")
    t0 = time.perf_counter()
    with (directory / "log").open("a") as log:
        # a process group of its own (killed whole at the deadline) in this session, dying with this driver:
        # a new session would outlive the command on the machine and train on beside the next one
        proc = subprocess.Popen(_child_command(task_file), stdout=log, stderr=subprocess.STDOUT, cwd=root,
                                env=child_env, process_group=0, preexec_fn=_die_with_parent(os.getpid()))
        try:
            proc.wait(timeout=max(seconds_left, 1.0))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.write(f"\n[device_run] stopped at the deadline after {time.perf_counter() - t0:.0f} s; run "
                      "the same command again on this machine to resume from the last checkpoint\n")
            return None
    executor_s = time.perf_counter() - t0
    outcome = read_json(directory / "outcome.json") or {
        "status": "failed", "ename": "ChildDied", "evalue": f"the point's process exited with code "
                                                           f"{proc.returncode} without an outcome (see log)"}
    record = read_json(record_path)
    trace = read_json(trace_path(record_path)) or None
    if outcome.get("status") == "ok" and (problem := evidence_problem(record)):
        outcome = {"status": "failed", "ename": problem[0], "evalue": problem[1],
                   "data_read": outcome.get("data_read")}
    status = "ok" if outcome.get("status") == "ok" else "error"
    full_task = {**task, "git": plan["git"], "run": run}
    meta = point_meta(full_task, record, trace, status, data=plan["data"]["digest"])
    meta["fingerprint"] |= {"sources": source_digests(trace), "data_digest": plan["data"]["digest"],
                            "python": platform.python_version()}
    if status != "ok":
        note_error(directory, meta, outcome)
    result = point_result(full_task, meta, seconds=time.perf_counter() - t0, executor_s=executor_s,
                          cells_s=float(outcome.get("cells_s") or 0.0), chapter_wall_s=record.get("wall_s"),
                          attempt=len(read_attempts(directory, run)), threads=POINT_THREADS,
                          data_read=outcome.get("data_read"), machine=made_on)
    write_json_atomic(directory / RESULT, result)
    return result


def progress_text(sweep: Path, point: str) -> str:
    """`` at step N of S (X ms a step, ~T s to go)`` from the point's ``progress.json``, or ``""``."""
    p = read_json(sweep / "points" / point / "progress.json")
    if not p.get("step"):
        return ""
    of = f" of {p['steps']:,}" if p.get("steps") else ""
    left = f", ~{p['seconds_left']:.0f} s to go" if p.get("seconds_left") is not None else ""
    return f" at step {p['step']:,}{of} ({p['ms_per_step']} ms a step{left})"


def archive(sweep: Path, out: Path, name: str, lines: list[str]) -> Path:
    """``<name>.tar.xz`` of the sweep folder (no task or outcome scratch files) and the summary text."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.tar.xz"
    skip = {"task.json", "outcome.json", ".lock"}
    with tarfile.open(target, "w:xz") as tar:
        tar.add(sweep, arcname=name, filter=lambda info: None if Path(info.name).name in skip else info)
    (out / f"{name}-summary.txt").write_text("\n".join(lines) + "\n")
    return target


def drive(plan_path: Path, out: Path, deadline: float) -> int:
    """Run the plan's unfinished points until ``deadline`` (epoch seconds), then archive; 0 when every
    point is ok, 1 when one failed, 3 when the deadline left points unfinished, 2 for a bad bundle."""
    root = Path.cwd()
    plan = json.loads(plan_path.read_text())
    name = plan["name"]
    state = Path(plan["state_dir"])
    sweep = state / "sweeps" / name
    data_root = root / plan["data"]["root"]
    lines = [f"device run of {name} ({plan['chapter']}, {len(plan['tasks'])} point(s)), started "
             f"{datetime.now(UTC).isoformat(timespec='seconds')}"]
    try:
        check_data(data_root, plan["data"])
    except DataMismatch as err:
        print(f"error: {err}", flush=True)
        return 2
    started = time.time()
    run = f"{socket.gethostname()}-{os.getpid()}-{started:.6f}"
    env = {"NTP_DATA_DIR": str(data_root), "NTP_CACHE_DIR": str(state / "cache"), "PYTHONUNBUFFERED": "1",
           "MPLCONFIGDIR": str(state / "mplconfig")}
    desc = read_json(sweep / "sweep.json")
    runs = desc.get("runs", []) if desc.get("code_hash") == plan["desc"]["code_hash"] else []
    environment = environment_of(plan)
    desc = {**plan["desc"], "machine": environment["machine"], "host": socket.gethostname(),
            "versions": environment["versions"], "environment": environment,
            "started": desc.get("started") or datetime.now(UTC).isoformat(timespec="seconds")}
    sweep.mkdir(parents=True, exist_ok=True)
    write_json_atomic(sweep / "sweep.json", desc)
    lines.append(f"machine: {environment['machine']}; versions: {environment['versions']}; precision "
                 f"{environment['precision']}")
    counts = {"ok": 0, "error": 0, "unfinished": 0}
    for task in plan["tasks"]:
        previous = read_json(sweep / "points" / task["id"] / RESULT)
        if previous.get("status") == "ok" and previous.get("id") == task["id"]:
            counts["ok"] += 1
            lines.append(f"point {task['id']} {task['overrides']}: ok earlier ({previous.get('seconds')} s)")
            continue
        left = deadline - time.time() - COLLECT_S
        if left < MIN_START_S:
            counts["unfinished"] += 1
            lines.append(f"point {task['id']} {task['overrides']}: not started ({left:.0f} s left)")
            continue
        print(f"[device_run] point {task['id']} {task['overrides']}: running (at most {left:.0f} s)",
              flush=True)
        result = run_point(root, plan, task, sweep, env, run, left, made_on=environment["machine"])
        if result is None:
            counts["unfinished"] += 1
            lines.append(f"point {task['id']}: stopped at the deadline{progress_text(sweep, task['id'])} "
                         "(checkpointed; the same command resumes)")
            continue
        counts[result["status"]] += 1
        lines.append(f"point {task['id']} {task['overrides']}: {result['status']} in "
                     f"{result['seconds']:.0f} s"
                     + (f": {result.get('error')}" if result.get("error") else ""))
    finished = datetime.now(UTC).isoformat(timespec="seconds")
    desc["finished"] = finished
    desc["runs"] = [*runs, {"started": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
                            "finished": finished, "wall_s": round(time.time() - started, 1),
                            "points_run": sum(counts.values()), "git": plan["git"]}]
    desc["wall_s"] = round(sum(r["wall_s"] for r in desc["runs"]), 1)
    write_json_atomic(sweep / "sweep.json", desc)
    lines.append(f"{counts['ok']} ok, {counts['error']} error, {counts['unfinished']} unfinished; wall "
                 f"{desc['wall_s']} s over {len(desc['runs'])} command(s)")
    if counts["unfinished"]:
        lines.append("unfinished points: run the same command again on this machine (it resumes)")
    lines.append(f"adopt: python -m ntputils.book adopt DIR (DIR: the folder holding {name}.tar.xz)")
    target = archive(sweep, out, name, lines)
    print("\n".join(lines), flush=True)
    print(f"[device_run] wrote {target} ({target.stat().st_size / 2**20:.2f} MiB)", flush=True)
    return 3 if counts["unfinished"] else (1 if counts["error"] else 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m ntputils.gpu.device_run",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("plan", nargs="?", type=Path, help="the bundle's plan (.device/plan.json)")
    ap.add_argument("--out", type=Path, help="folder for the archive and summary ($OUT)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="epoch seconds by which the archive is written (default: the plan's budget from "
                         "now)")
    ap.add_argument("--point", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.point:
        return point_child(args.point)
    if args.plan is None or args.out is None:
        ap.error("give the plan and --out")
    budget = float(json.loads(args.plan.read_text()).get("budget_s", 540))
    return drive(args.plan, args.out, args.deadline if args.deadline is not None else time.time() + budget)


if __name__ == "__main__":
    sys.exit(main())
