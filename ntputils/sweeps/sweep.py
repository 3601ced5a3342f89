"""Parameter sweeps of a chapter on Dask: ``python -m ntputils.book sweep CHAPTER -p KEY=V1,V2 ...``.

Each point runs the chapter through papermill (:func:`ntputils.book.execute.run_papermill`, the build's
executor) from a Dask worker process; ``sweeps/<name>/points/<id>/`` holds ``params.json``, ``attempts``,
``log``, ``executed.ipynb``, ``error.txt``, ``result.json``, the only done marker. Rerunning resumes: points
with a current result are skipped; ``--retry-failed`` reruns errors.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ntputils.book.environment import git_commit, machine, package_versions
from ntputils.book.execute import META_KEY, evidence_problem, run_papermill, trace_path
from ntputils.book.execute import worker_env as kernel_env
from ntputils.book.fingerprint import Package
from ntputils.book.paper_cost import cpu_paper_problem
from ntputils.book.project import Project, os_problem, read_json, say, write_json_atomic, write_text_atomic
from ntputils.committed import POINT_ENV, SweepTableError
from ntputils.sweeps.cluster import (
    ClusterError,
    check_connect_timeout,
    check_scheduler_address,
    check_slurm_tools,
    connect,
    dashboard_link,
    read_slurm_config,
    sweep_job_name,
)
from ntputils.sweeps.point_record import POINT_THREADS, note_error, point_meta, point_result
from ntputils.sweeps.spec import SweepPlan, SweepSpecError, plan_sweep
from ntputils.sweeps.store import (
    RESULT,
    DriverRunning,
    driver_lock,
    note_attempt,
    point_current,
    point_dir,
    read_attempts,
    read_plan,
    sweep_dir,
)
from ntputils.sweeps.table import write_table

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: a LocalCluster left without any worker for this long (its workers died, none restarted) ends the sweep
NO_WORKER_S = 60.0
#: the same for a running scheduler (``--scheduler``), whose workers the user starts, maybe late
SCHEDULER_NO_WORKER_S = 600.0


def _point_env(project: Project, record: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment of a point: one BLAS thread, then ``extra`` (the plan's ``env``), and the
    point's name (``<sweep>/<point id>``), which keeps committed tables out of its record."""
    env = kernel_env(project, record, threads=POINT_THREADS) | dict(extra or {})
    env[POINT_ENV] = f"{record.parent.parent.parent.name}/{record.parent.name}"
    return env


def _cell_seconds(nb) -> float:
    """Sum of papermill's per-cell durations: the chapter's own compute inside the kernel."""
    durations = (cell.get("metadata", {}).get("papermill", {}).get("duration") for cell in nb.cells)
    return sum(float(d) for d in durations if isinstance(d, (int, float)))


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Run one sweep point in a Dask worker process (``task``: see :func:`_execute`); write ``result.json``
    and return its summary. Chapter failures are ``error`` results; only a dying process escapes."""
    import nbformat

    directory = Path(task["dir"])
    directory.mkdir(parents=True, exist_ok=True)
    previous = read_json(directory / RESULT)
    if previous.get("id") == task["id"] and (previous.get("run") == task["run"] or (
            previous.get("status") == "ok" and not task.get("rerun"))):
        return _summary_of(previous)  # Dask recomputes a task whose worker died holding its result
    note_attempt(directory, task["run"], machine())
    for stale in ("executed.ipynb", "error.txt", "record.json", "trace.json", ".input.ipynb", "params.yaml",
                  RESULT):
        (directory / stale).unlink(missing_ok=True)
    project = Project(Path(task["root"]))
    record_path, output = directory / "record.json", directory / "executed.ipynb"
    t0 = time.perf_counter()
    outcome = run_papermill({"source": task["source"], "input": str(directory / ".input.ipynb"),
                             "output": str(output), "parameters": task["inject"], "cwd": str(project.root)},
                            env=_point_env(project, record_path, task.get("env")), log=directory / "log",
                            work=directory)
    t_papermill = time.perf_counter() - t0
    record = read_json(record_path)
    trace = read_json(trace_path(record_path)) or None
    problem = evidence_problem(record)
    if outcome.get("status") == "ok" and problem:  # ran to the end, but its evidence is wrong: a failed point
        outcome = {"status": "error", "ename": problem[0], "evalue": problem[1]}
    status = "ok" if outcome.get("status") == "ok" and output.exists() else "error"
    meta = point_meta(task, record, trace, status) | {"env": task.get("env") or {}}
    cells = 0.0
    if output.exists():
        nb = nbformat.read(output, as_version=4)
        cells = _cell_seconds(nb)
        nb.metadata[META_KEY] = meta
        write_text_atomic(output, nbformat.writes(nb))
    (directory / ".input.ipynb").unlink(missing_ok=True)
    (directory / "params.yaml").unlink(missing_ok=True)
    if status != "ok":
        note_error(directory, meta, outcome)
    seconds = time.perf_counter() - t0
    result = point_result(task, meta, seconds=seconds, executor_s=t_papermill, cells_s=cells,
                          chapter_wall_s=record.get("wall_s"),
                          attempt=len(read_attempts(directory, task["run"])), threads=POINT_THREADS)
    write_json_atomic(directory / RESULT, result)
    return _summary_of(result)


def _summary_of(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: result.get(k) for k in ("id", "status", "seconds", "attempt")}
    return out | {"error": result.get("error", "")}


def plan_conflict(previous: dict[str, Any], plan: SweepPlan) -> str | None:
    """Why ``plan`` may not run under the name of the sweep ``previous`` (another chapter, axes or profile),
    or ``None``."""
    if not previous:
        return None
    old_axes = json.dumps(previous.get("axes"), sort_keys=True, default=repr)
    new_axes = json.dumps(json.loads(json.dumps(plan.axes, default=repr)), sort_keys=True, default=repr)
    what = []
    if previous.get("chapter") != plan.chapter.name:
        what.append(f"chapter {previous.get('chapter')}, not {plan.chapter.name}")
    if old_axes != new_axes:
        what.append(f"axes {old_axes}, not {new_axes}")
    if previous.get("profile") != plan.profile and "profile" not in plan.axes:
        what.append(f"profile {previous.get('profile')}, not {plan.profile}")
    if not what:
        return None
    return (f"sweep {plan.name!r} already exists with another plan ({'; '.join(what)}); its command: "
            f"`{previous.get('command')}`. Choose another --name, or remove sweeps/{plan.name}/ to "
            "replace it")


def classify(project: Project, plan: SweepPlan, retry_failed: bool,
             package: Package | None = None) -> tuple[list, list, list, list]:
    """(points done and current, failed and kept, to run, and those to run whose ok result is stale)."""
    done, failed, todo, stale = [], [], [], []
    memo: dict[str, str] = {}
    for point in plan.points:
        result = read_json(point_dir(project, plan.name, point.id) / RESULT)
        status = result.get("status")
        if status == "ok" and point_current(result, package, memo):
            done.append(point)
        elif status == "ok":
            stale.append(point)
            todo.append(point)
        elif status == "error" and not retry_failed:
            failed.append(point)
        else:
            todo.append(point)
    return done, failed, todo, stale


def run_sweep(project: Project, plan: SweepPlan, *, workers: int = 2, scheduler: str | None = None,
              slurm: Path | None = None, retry_failed: bool = False, connect_timeout: float = 10.0,
              progress: bool = True) -> int:
    """Run the points of ``plan`` that have no result (resume); return the exit code."""
    directory = sweep_dir(project, plan.name)
    started = time.time()
    run = f"{socket.gethostname()}-{os.getpid()}-{started:.6f}"  # this driver run
    try:
        previous = read_plan(directory / "sweep.json")
        if problem := plan_conflict(previous, plan):
            raise SweepTableError(problem)
        with driver_lock(directory):
            done, failed, todo, stale = classify(project, plan, retry_failed)
            commit = git_commit(project.root)
            desc = plan.describe() | {"point_ids": [p.id for p in plan.points], "git": commit,
                                      "machine": machine(), "host": socket.gethostname(),
                                      "versions": package_versions(),
                                      "started": datetime.now(UTC).isoformat(timespec="seconds"),
                                      "command": plan.command()}
            write_json_atomic(directory / "sweep.json", desc)
            say(f"sweep {plan.name}: {plan.chapter.name}, {len(plan.points)} point(s): {len(done)} done, "
                f"{len(failed)} failed earlier (kept; --retry-failed reruns them), {len(todo)} to run"
                + (f" ({len(stale)} of them done before, by code that has changed since)" if stale else ""))
            infra: dict[str, str] = {}
            if todo:
                workers = min(workers, len(todo))  # a LocalCluster worker without a point only costs memory
                where = scheduler or (f"SLURM ({slurm})" if slurm else f"LocalCluster, {workers} worker(s)")
                with connect(workers=workers, scheduler=scheduler, slurm=slurm, timeout=connect_timeout,
                             job_name=sweep_job_name(directory)) as client:
                    say(f"running {len(todo)} point(s) on {where}")
                    if link := dashboard_link(client):
                        say(f"dashboard: {link}")
                    infra = _execute(client, project, plan, todo, commit, run, {p.id for p in stale},
                                     initial=len(done) + len(failed), progress=progress,
                                     no_worker=_no_worker_bound(scheduler, slurm))
            desc["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
            runs = previous.get("runs", []) if previous.get("code_hash") == plan.code_hash else []
            desc["runs"] = [*runs, {"started": desc["started"], "finished": desc["finished"],
                                    "wall_s": round(time.time() - started, 1), "points_run": len(todo),
                                    "git": commit}]
            desc["wall_s"] = round(sum(r["wall_s"] for r in desc["runs"]), 1)  # over resumed runs too
            write_json_atomic(directory / "sweep.json", desc)
            table = write_table(project, plan.name)
    except (ClusterError, DriverRunning, SweepTableError) as err:
        say(f"error: {err}")
        return EXIT_USAGE
    except OSError as err:  # a full disk, a sweep folder that cannot be written
        say(f"error: {os_problem(err)}")
        return EXIT_FAILED
    return _summary(project, plan, infra, table, run)


def _execute(client, project: Project, plan: SweepPlan, todo: list, commit: str, run: str, rerun: set[str], *,
             initial: int, progress: bool, no_worker: tuple[float, str] | None) -> dict[str, str]:
    """Submit the points and wait for them (tqdm bar, :func:`wait_points`); return the infrastructure
    failures. ``run``: this driver run; ``rerun``: ids of points whose finished result is stale."""
    from tqdm.auto import tqdm

    futures = {}
    for point in todo:
        d = point_dir(project, plan.name, point.id)
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomic(d / "params.json", {"chapter": plan.chapter.name, "overrides": point.overrides,
                                              "resolved": point.resolved})
        params = {"profile": point.resolved["profile"], **point.overrides}
        task = {"root": str(project.root), "source": str(plan.chapter.source), "chapter": plan.chapter.name,
                "dir": str(d), "id": point.id, "parameters": params, "resolved": point.resolved,
                "inject": point.inject,
                "overrides": point.overrides, "code_hash": plan.code_hash, "chapter_code": plan.chapter_code,
                "git": commit, "run": run, "rerun": point.id in rerun, "env": dict(plan.env)}
        futures[client.submit(run_point, task, key=f"sweep-{plan.name}-{point.id}", pure=False)] = point
    bar = tqdm(total=len(plan.points), initial=initial, unit="point", desc=plan.name, disable=not progress,
               file=sys.stderr, dynamic_ncols=True)
    with bar:
        return wait_points(client, {fut: (p.id, f"{p.id} {p.overrides}") for fut, p in futures.items()}, bar,
                           no_worker=no_worker)


def _no_worker_bound(scheduler: str | None, slurm: Path | None) -> tuple[float, str] | None:
    """(seconds, what went wrong) after which a cluster without any worker ends the sweep; ``None`` for
    SLURM, whose jobs may wait in the queue for hours (:class:`SlurmWatch` ends a sweep sbatch fails)."""
    if slurm:
        return None
    if scheduler:
        return SCHEDULER_NO_WORKER_S, (f"the scheduler at {scheduler} has had no worker for "
                                       f"{SCHEDULER_NO_WORKER_S:g} s; start some with "
                                       f"`dask worker {scheduler} --nthreads 1`")
    return NO_WORKER_S, (f"KilledWorker: the LocalCluster has had no worker for {NO_WORKER_S:g} s (its "
                         "workers died and none was restarted)")


def wait_points(client, futures: dict[Any, tuple[str, str]], bar, *, no_worker: tuple[float, str] | None,
                poll_s: float = 0.5) -> dict[str, str]:
    """Wait for the point ``futures`` (future -> (point id, label)), writing an ``[error]`` or ``[infra]``
    line above ``bar`` for each that failed; return the infrastructure failures (point id -> message).

    Dask retries a point whose worker died :data:`~ntputils.sweeps.cluster.ALLOWED_FAILURES` times,
    then fails it (``KilledWorker``). With ``no_worker`` (seconds, message), a cluster left without any
    worker for that many seconds ends the wait: each unfinished point is an infrastructure failure with
    that message. The wait polls, so Ctrl-C ends it at once."""
    pending, infra = dict(futures), {}
    workerless_since: float | None = None
    while pending:
        for fut in [f for f in pending if f.done()]:
            point_id, label = pending.pop(fut)
            try:
                out = fut.result()
                if out["status"] != "ok":
                    bar.write(f"[error] {label}: {out['error']}")
            except Exception as err:  # noqa: BLE001 - KilledWorker, lost connection, ...
                infra[point_id] = getattr(err, "msg", None) or f"{type(err).__name__}: {err}"
                bar.write(f"[infra] {label}: {infra[point_id]}")
            fut.release()  # the result is on disk; let the worker drop it
            bar.update(1)
        if not pending:
            break
        if no_worker is not None:
            if client.scheduler_info().get("workers"):
                workerless_since = None
            elif workerless_since is None:
                workerless_since = time.monotonic()
            elif time.monotonic() - workerless_since > no_worker[0]:
                why = f"{no_worker[1]}; the point did not finish"
                client.cancel(list(pending), reason="no worker", msg=why)
                for point_id, label in pending.values():
                    infra[point_id] = why
                    bar.write(f"[infra] {label}: {why}")
                    bar.update(1)
                break
        time.sleep(poll_s)
    return infra


def _summary(project: Project, plan: SweepPlan, infra: dict[str, str], table: Path, run: str) -> int:
    ok, errors, retried = 0, [], 0
    for point in plan.points:
        d = point_dir(project, plan.name, point.id)
        res = read_json(d / RESULT)
        retried += len(read_attempts(d, run)) > 1  # by this run (Dask retries of a lost worker)
        if res.get("status") == "ok":
            ok += 1
        elif res.get("status") == "error":
            errors.append((point, res.get("error", "")))
    say(f"sweep {plan.name}: {ok} ok, {len(errors)} error, {len(infra)} infrastructure failure(s) "
        f"of {len(plan.points)} point(s); {retried} point(s) needed more than one attempt")
    for point, err in errors:
        say(f"  error {point.id} {point.overrides}: {err.splitlines()[0] if err else ''} "
            f"(see {point_dir(project, plan.name, point.id) / 'error.txt'})")
    for pid, err in infra.items():
        say(f"  infrastructure {pid}: {err} (rerun the command to resume)")
    say(f"table: {table} (+ .csv); `python -m ntputils.book sweep-table {plan.name}` prints it")
    return EXIT_OK if ok == len(plan.points) else EXIT_FAILED


def sweep_command(project: Project, chapter: str, pairs: list[str] | None, *, profile: str | None = None,
                  name: str | None = None, workers: int = 2, scheduler: str | None = None,
                  slurm: Path | None = None, retry_failed: bool = False, connect_timeout: float = 10.0,
                  progress: bool = True, allow_cpu: bool = False) -> int:
    """``sweep``: validate (exit 2, nothing written; a network chapter's paper profile without CUDA unless
    ``allow_cpu``), then :func:`run_sweep`."""
    try:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise SweepSpecError("--workers must be an integer >= 1")
        if scheduler and slurm:
            raise SweepSpecError("give either --scheduler or --slurm, not both")
        check_connect_timeout(connect_timeout)
        if scheduler is not None:
            check_scheduler_address(scheduler)
        if slurm is not None:
            read_slurm_config(slurm)
            check_slurm_tools()
        plan = plan_sweep(project, chapter, pairs, profile=profile, name=name)
        if problem := cpu_paper_problem([(plan.chapter.short, p.resolved) for p in plan.points], allow_cpu):
            raise SweepSpecError(problem)
    except (ClusterError, SweepSpecError) as err:
        say(f"error: {err}")
        return EXIT_USAGE
    return run_sweep(project, plan, workers=workers, scheduler=scheduler, slurm=slurm,
                     retry_failed=retry_failed, connect_timeout=connect_timeout, progress=progress)
