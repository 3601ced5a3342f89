"""Sweeps on a real SLURM cluster (``pytest -m slurm``; ``.ci/slurm-up`` starts a one-node cluster here).

A 4-point sweep of a tiny chapter through dask-jobqueue, then the faults: a job ``scancel``-ed while
its point runs, the driver killed with its process group, and a walltime shorter than a point. Skipped
where there is no ``sinfo``; with ``NTPBOOK_SLURM_REQUIRED=1`` (``.ci/run``) a missing cluster fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from ntputils.book.project import Project
from ntputils.sweeps.cluster import sweep_job_name
from ntputils.sweeps.store import read_attempts, sweep_dir

from chapters import chapter_text

pytestmark = pytest.mark.slurm

# tests/test_sweep.py's chapter, recording the SLURM job its point ran in too
TINY = chapter_text("records_values").replace(
    'record("started", 1)\n', 'record("started", 1)\nrecord("job", os.environ.get("SLURM_JOB_ID", "none"))\n')


def slurm_answers() -> str | None:
    """Why no SLURM cluster can run the tests (``None``: ``sinfo`` lists an idle or mixed node)."""
    if shutil.which("sinfo") is None:
        return "no sinfo on PATH (start a test cluster with .ci/slurm-up)"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer in 20 s"
    states = set(out.stdout.split())
    if out.returncode != 0 or not states & {"idle", "mixed"}:
        return f"no idle SLURM node (sinfo: {(out.stdout + out.stderr).strip() or out.returncode})"
    return None


@pytest.fixture(scope="module", autouse=True)
def _slurm_cluster():
    why = slurm_answers()
    if why is None:
        return
    if os.environ.get("NTPBOOK_SLURM_REQUIRED") == "1":
        pytest.fail(f"NTPBOOK_SLURM_REQUIRED=1 but {why}")
    pytest.skip(why)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "t01_tiny.py").write_text(TINY)
    return Project(tmp_path)


def config(project: Project, *, jobs: int, walltime: str = "00:10:00") -> tuple[Path, str]:
    """A ``--slurm`` file (one core and one worker per job) and the name of the sweep's jobs."""
    path = project.root / "slurm.yaml"
    path.write_text(f"jobqueue:\n  slurm:\n    cores: 1\n    memory: 1GB\n    walltime: '{walltime}'\n"
                    f"    log-directory: {project.root / 'joblogs'}\nntpbook:\n  slurm-jobs: {jobs}\n")
    return path, sweep_job_name(sweep_dir(project, "t01"))


def command(project: Project, cfg: Path, *params: str) -> list[str]:
    return [sys.executable, "-m", "ntputils.book", "--root", str(project.root), "sweep", "t01",
            "--no-progress", "--slurm", str(cfg), *[a for p in params for a in ("-p", p)]]


def env() -> dict[str, str]:
    e = os.environ.copy()
    e.pop("MPLBACKEND", None)
    return e


def start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env(), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the sweep did not end within {timeout} s:\n{out}")
    return out


def jobs_named(name: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], capture_output=True, text=True, timeout=20)
    return out.stdout.split()


def wait_for(pred, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    t0 = time.time()
    while not pred():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the sweep ended while waiting for {what}:\n{proc.stdout.read()}")
        if time.time() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def results(project: Project) -> dict[str, dict]:
    points = sweep_dir(project, "t01") / "points"
    return {d.name: json.loads((d / "result.json").read_text()) if (d / "result.json").exists() else {}
            for d in points.iterdir()}


def running(project: Project) -> list[Path]:
    """Point folders whose chapter has started (a record) and that have no result yet."""
    points = sweep_dir(project, "t01") / "points"
    if not points.exists():
        return []
    return [d for d in points.iterdir() if (d / "record.json").exists() and not (d / "result.json").exists()]


def job_of(pid: int) -> str:
    """The SLURM job of a process on this machine (its ``SLURM_JOB_ID``)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SLURM_JOB_ID="))


@pytest.fixture
def cleanup():
    """Cancel what a failed test leaves in the queue (the jobs it named)."""
    names: list[str] = []
    yield names
    for name in names:
        subprocess.run(["scancel", "-n", name], capture_output=True, timeout=20)


def test_four_points_run_as_slurm_jobs(project, cleanup):
    cfg, name = config(project, jobs=2)
    cleanup.append(name)
    out = finish(start(command(project, cfg, "x=0:4", "sleep=0.5"), project.root), 300)
    assert "sweep t01: 4 ok, 0 error, 0 infrastructure failure(s) of 4 point(s)" in out, out
    res = results(project)
    assert len(res) == 4 and all(r["status"] == "ok" for r in res.values()), out
    jobs = {r["results"]["job"]["value"] for r in res.values()}
    assert all(j.isdigit() for j in jobs) and 1 <= len(jobs) <= 2, jobs  # ran inside the 2 SLURM jobs
    assert all(f"[slurm] job {j} submitted" in out for j in jobs), out
    assert all(len(read_attempts(sweep_dir(project, "t01") / "points" / p)) == 1 for p in res)
    table = pd.read_csv(sweep_dir(project, "t01") / "table.csv")
    squares = table[table.metric == "square"]
    assert sorted(squares.x) == [0, 1, 2, 3] and (squares.value == squares.x ** 2).all()
    assert "without encryption" not in out
    wait_for(lambda: not jobs_named(name), 60, "the sweep's jobs to leave the queue")


def test_scancelled_job_its_point_reruns_on_a_new_job_and_counts_once(project, cleanup):
    cfg, name = config(project, jobs=1)
    cleanup.append(name)
    proc = start(command(project, cfg, "x=0,1", "sleep=6"), project.root)
    try:
        wait_for(lambda: running(project), 180, "a running point", proc)
        victim = running(project)[0]
        job = job_of(read_attempts(victim)[-1]["pid"])
        subprocess.run(["scancel", job], check=True, timeout=20)
        out = finish(proc, 300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    assert f"[slurm] job {job} ended: CANCELLED" in out, out
    res = results(project)
    assert all(r["status"] == "ok" for r in res.values()) and len(res) == 2, out
    attempts = {p: read_attempts(sweep_dir(project, "t01") / "points" / p) for p in res}
    assert len(attempts[victim.name]) == 2, attempts  # cut once, finished once
    assert all(len(a) == 1 for p, a in attempts.items() if p != victim.name), attempts
    again = res[victim.name]["results"]["job"]["value"]
    assert again.isdigit() and again != job and f"[slurm] job {again} submitted" in out, (job, again, out)
    assert res[victim.name]["attempt"] == 2
    table = pd.read_csv(sweep_dir(project, "t01") / "table.csv")
    squares = table[table.metric == "square"]
    assert sorted(squares.x) == [0, 1]  # the point counts once
    assert squares.loc[squares.point_id == victim.name, "attempts"].item() == 2
    assert "1 point(s) needed more than one attempt" in out


def test_killed_driver_the_same_command_resumes_without_recomputing(project, cleanup):
    """4 points, two short and two long, on 2 jobs: SIGKILL the driver's process group while the long
    ones run, then run the same command at once. Its jobs outlive it (slurmd started them), so the rerun
    first cancels them, then runs what has no result."""
    cfg, name = config(project, jobs=2)
    cleanup.append(name)
    cmd = command(project, cfg, "x=0,1", "sleep=0.5,20")
    proc = start(cmd, project.root)
    points = sweep_dir(project, "t01") / "points"
    try:
        wait_for(lambda: len(list(points.glob("*/result.json"))) >= 2 and running(project), 240,
                 "two finished points and a running one", proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver (and its scheduler): a dead login session
        proc.communicate()
    done = {d.name: (d / "result.json").stat().st_mtime_ns for d in points.iterdir()
            if (d / "result.json").exists()}
    assert 2 <= len(done) < 4
    orphans = jobs_named(name)
    assert orphans  # still running the long points
    rerun = finish(start(cmd, project.root), 300)
    assert f"{len(done)} done" in rerun and "sweep t01: 4 ok" in rerun, rerun
    assert f"[slurm] cancelled job(s) {', '.join(orphans)} left by an earlier driver" in rerun, rerun
    res = results(project)
    assert len(res) == 4 and all(r["status"] == "ok" for r in res.values()), rerun
    for pid, mtime in done.items():  # nothing finished was recomputed
        assert (points / pid / "result.json").stat().st_mtime_ns == mtime
        assert len(read_attempts(points / pid)) == 1
    assert not {r["results"]["job"]["value"] for p, r in res.items() if p not in done} & set(orphans)
    table = pd.read_csv(sweep_dir(project, "t01") / "table.csv")
    assert sorted(table[table.metric == "square"].x) == [0, 0, 1, 1]
    wait_for(lambda: not jobs_named(name), 60, "the sweep's jobs to leave the queue")


def test_walltime_shorter_than_a_point_ends_with_a_message_naming_it(project, cleanup):
    """SLURM's shortest walltime is a minute; a point that sleeps 20 minutes is cut twice, then given up."""
    cfg, name = config(project, jobs=1, walltime="00:01:00")
    cleanup.append(name)
    t0 = time.time()
    out = finish(start(command(project, cfg, "x=7", "sleep=1200"), project.root), 420)
    assert time.time() - t0 < 420
    assert "0 ok, 0 error, 1 infrastructure failure(s)" in out, out
    assert "[slurm] point sweep-t01-" in out and "was cut after running" in out, out  # said at once
    assert "[infra]" in out and "point cut 2 times by the end of its SLURM job" in out, out
    assert "needs longer than a job's walltime (jobqueue.slurm.walltime = 00:01:00" in out, out
    assert f"raise the walltime in {cfg}" in out, out
    (res,) = results(project).values()
    assert res == {}  # no result: the point reruns when the command is run again
    wait_for(lambda: not jobs_named(name), 60, "the sweep's jobs to leave the queue")
