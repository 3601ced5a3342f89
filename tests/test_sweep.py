"""Parameter sweeps on Dask (``python -m ntputils.book sweep``): spec validation before any work, a real
2-worker ``LocalCluster`` with real faults (a worker killed by pid, the driver killed, a raising
point), resume, the tidy table, an unreachable scheduler, the SLURM job script, reproducibility, and
one smoke sweep of the real chapter a01.

The fault tests run the command in a subprocess on a throw-away project whose tiny chapter writes its
record through the runner's record file (the protocol of :mod:`ntputils.chapter`, without importing
torch, so a point takes about a second)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dask.config
import pandas as pd
import pytest

from ntputils import cli
from ntputils.book import build as book_build
from ntputils.book.project import Project
from ntputils.sweeps.cluster import (
    ALLOWED_FAILURES,
    HEARTBEAT_FAILED,
    connect,
    heartbeat_in_one_line,
    read_slurm_config,
    slurm_cluster,
)
from ntputils.sweeps.spec import SweepSpecError, parse_axes, plan_sweep
from ntputils.sweeps.store import point_dir, read_attempts, sweep_dir
from ntputils.sweeps.table import collect, markdown

from chapters import add_chapter

REPO = Path(__file__).resolve().parents[1]

def make_project(root: Path) -> Project:
    add_chapter(root, "t01_tiny", "records_values", paper=True)
    return Project(root)


def sweep_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ntputils.book", "--root", str(root), "sweep", "t01", "--no-progress",
            *args]


def env() -> dict[str, str]:
    e = os.environ.copy()
    e.pop("MPLBACKEND", None)
    return e


def results(project: Project, name: str) -> dict[str, dict]:
    out = {}
    for d in (sweep_dir(project, name) / "points").iterdir():
        r = d / "result.json"
        out[d.name] = json.loads(r.read_text()) if r.exists() else {}
    return out


def wait_for(pred, timeout: float, what: str) -> None:
    t0 = time.time()
    while not pred():
        if time.time() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------ specs
def test_axes_values_ranges_and_their_errors():
    assert parse_axes(["d=2,4,8", "seed=0:3", "lr=1e-3,0.1", "data=sts,synthetic"]) == {
        "d": [2, 4, 8], "seed": [0, 1, 2], "lr": [1e-3, 0.1], "data": ["sts", "synthetic"]}
    assert parse_axes(["s=1:7:2", "v=[1,2],[3,4]"]) == {"s": [1, 3, 5], "v": [[1, 2], [3, 4]]}
    for bad, msg in [(["d="], "no values"), (["d=5:5"], "range is empty"), (["d=1,,2"], "empty value"),
                     (["d=1,2,1"], "duplicate value 1"), (["d=1", "d=2"], "given twice"),
                     (["1d=2"], "KEY=V1"), (["d"], "KEY=V1"), (["d=0:4:0"], "step cannot be 0")]:
        with pytest.raises(SweepSpecError, match=msg):
            parse_axes(bad)


@pytest.mark.parametrize("args, msg", [
    (["-p", "y=1,2"], "unknown parameter 'y'"),
    (["-p", "x=1,abc"], "parameter 'x' must be of type int"),
    (["-p", "x=1:1"], "range is empty"),
    (["-p", "x=3,3"], "duplicate value 3"),
    (["-p", "x=1,5000"], r"x=5000 is outside the chapter's limits \[0, 1000\]"),
    (["-p", "seed=-1,0"], r"seed.*must be an int in \[0"),
    (["-p", "name=a,c"], r"name='c' is not one of the chapter's values \['a', 'b'\]"),
    (["-p", "x=1", "--profile", "huge"], "unknown profile 'huge'"),
    (["-p", "x=1", "--name", "../evil"], "--name"),
    ([], "at least one -p"),
])
def test_bad_sweep_specs_are_rejected_before_anything_is_written(tmp_path, capsys, args, msg):
    project = make_project(tmp_path)
    code = cli.main(["--root", str(tmp_path), "sweep", "t01", *args])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE
    assert "error:" in out
    assert re.search(msg, out), out
    assert not (project.root / "sweeps").exists()


def test_unknown_chapter_and_points_that_resolve_alike(tmp_path):
    project = make_project(tmp_path)
    with pytest.raises(SweepSpecError, match="no chapter matches 'zz'"):
        plan_sweep(project, "zz", ["x=1"])
    # sleep is a float: 0 becomes 0.0, the same point
    with pytest.raises(SweepSpecError, match="resolve to the same parameters"):
        plan_sweep(project, "t01", ["sleep=0,0.0"])


def test_point_ids_follow_code_cells_and_parameters_not_prose(tmp_path):
    project = make_project(tmp_path)
    plan = plan_sweep(project, "t01", ["x=1,2", "seed=0:2"])
    assert len(plan.points) == 4 and len({p.id for p in plan.points}) == 4
    assert [p.overrides for p in plan.points][:2] == [{"x": 1, "seed": 0}, {"x": 1, "seed": 1}]
    src = project.notebooks_dir / "t01_tiny.py"
    src.write_text(src.read_text().replace("# # A tiny chapter for sweeps", "# # Renamed prose"))
    same = plan_sweep(project, "t01", ["x=1,2", "seed=0:2"])
    assert [p.id for p in same.points] == [p.id for p in plan.points]
    src.write_text(src.read_text().replace("cfg[\"x\"] ** 2", "cfg[\"x\"] ** 3"))
    changed = plan_sweep(project, "t01", ["x=1,2", "seed=0:2"])
    assert not {p.id for p in changed.points} & {p.id for p in plan.points}
    assert changed.code_hash != plan.code_hash
    assert plan_sweep(project, "t01", ["x=1"], profile="paper").points[0].resolved["profile"] == "paper"


# ------------------------------------------------------------------------------------------ cluster
def test_unreachable_scheduler_fails_quickly_with_a_clear_message(tmp_path, capsys):
    make_project(tmp_path)
    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.time()
    code = cli.main(["--root", str(tmp_path), "sweep", "t01", "-p", "x=1,2", "--no-progress",
                     "--scheduler", f"tcp://127.0.0.1:{port}", "--connect-timeout", "2"])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE
    assert time.time() - t0 < 20
    assert f"cannot reach the dask scheduler at tcp://127.0.0.1:{port} within 2 s" in out
    assert "dask scheduler" in out and "dask worker" in out
    assert not list((tmp_path / "sweeps" / "t01").glob("points/*"))


SLURM_YAML = ("jobqueue:\n  slurm:\n    queue: compute\n    cores: 4\n    memory: 16GB\n"
              "    walltime: '02:00:00'\n")


def test_slurm_job_script_has_the_requested_resources(tmp_path):
    """``--slurm FILE`` is a dask config file merged over dask's config (here an account and a queue
    as ``~/.config/dask/`` or ``DASK_JOBQUEUE__SLURM__*`` would set them): the file wins, the rest stays."""
    cfg_path = tmp_path / "slurm.yaml"
    cfg_path.write_text(SLURM_YAML)
    import dask_jobqueue  # noqa: F401 - registers the jobqueue.* defaults before they are set over

    with dask.config.set({"jobqueue.slurm.account": "proj42", "jobqueue.slurm.queue": "elsewhere"}):
        cfg = read_slurm_config(cfg_path)
    assert dask.config.get("jobqueue.slurm.cores", None) is None  # read, not set: connect() scopes it
    with dask.config.set(cfg), slurm_cluster() as cluster:
        script = cluster.job_script()
    for line in ["#SBATCH -p compute", "#SBATCH -A proj42", "#SBATCH --cpus-per-task=4",
                 "#SBATCH -t 02:00:00", "--nworkers 4", "--nthreads 1", "--lifetime 6480s",
                 "export OMP_NUM_THREADS=1"]:
        assert line in script, (line, script)  # lifetime: walltime minus a tenth, before SLURM kills them
    assert "#SBATCH --mem=15G" in script or "#SBATCH --mem=16G" in script, script


@pytest.mark.parametrize(("text", "message"), [
    ("queue: q\ncores: 4\nmemory: 4GB\nwalltime: '01:00:00'\n", "no `jobqueue: slurm:` section"),
    ("jobqueue:\n  slurm:\n    cores: 4\n    walltime: '01:00:00'\n", "cores and memory"),
    (SLURM_YAML.replace("'02:00:00'", "soon"), "walltime must be"),
    ("jobqueue: [\n", "malformed"),
])
def test_slurm_config_that_dask_jobqueue_refuses_exits_2_before_anything_runs(tmp_path, capsys, text,
                                                                              message):
    make_project(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code = cli.main(["--root", str(tmp_path), "sweep", "t01", "-p", "x=1", "--slurm", str(bad)])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE and f"SLURM config {bad}" in out and message in out, out
    assert not (tmp_path / "sweeps").exists()


def test_slurm_sweep_submits_the_configured_number_of_jobs(tmp_path, monkeypatch):
    """A fake ``sbatch`` records what :func:`connect` submits: ``ntpbook.slurm-jobs`` jobs, each with
    the file's settings (dask-jobqueue reads them when it makes a job, so they stay set meanwhile)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "submitted"
    log.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\ncp "$1" {log}/job$$\necho "Submitted batch job $$"\n')
    for tool in ("squeue", "scancel"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cfg_path = tmp_path / "slurm.yaml"
    cfg_path.write_text(SLURM_YAML + "ntpbook:\n  slurm-jobs: 3\n")
    with connect(slurm=cfg_path):
        deadline = time.time() + 20
        while len(list(log.iterdir())) < 3 and time.time() < deadline:
            time.sleep(0.1)
    scripts = [p.read_text() for p in sorted(log.iterdir())]
    assert len(scripts) == 3, scripts
    assert all("#SBATCH -p compute" in s and "--lifetime 6480s" in s for s in scripts), scripts


def test_killed_worker_is_retried_and_every_point_runs_exactly_once(tmp_path):
    """2 worker processes, 6 points; SIGKILL the worker running a point after 2 points finished."""
    assert ALLOWED_FAILURES >= 3
    project = make_project(tmp_path)
    proc = subprocess.Popen(sweep_cmd(tmp_path, "-p", "x=0:6", "-p", "sleep=1.5", "--workers", "2"),
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        points = sweep_dir(project, "t01") / "points"

        def finished() -> list[Path]:
            return [d for d in points.glob("*") if (d / "result.json").exists()] if points.exists() else []

        def running() -> list[Path]:
            return [d for d in points.glob("*") if (d / "record.json").exists()
                    and not (d / "result.json").exists()] if points.exists() else []

        wait_for(lambda: len(finished()) >= 2 and running(), 120, "two finished points and a running one")
        victim = running()[0]
        done_before = {d.name: (d / "result.json").stat().st_mtime_ns for d in finished()}
        pid = read_attempts(victim)[-1]["pid"]
        os.kill(pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    res = results(project, "t01")
    assert len(res) == 6 and all(r["status"] == "ok" for r in res.values()), out
    attempts = {pid_: len(read_attempts(points / pid_)) for pid_ in res}
    assert attempts[victim.name] == 2, attempts
    assert all(n == 1 for p, n in attempts.items() if p != victim.name), attempts
    assert read_attempts(victim)[0]["pid"] == pid != read_attempts(victim)[1]["pid"]
    for name, mtime in done_before.items():  # finished points were not recomputed
        assert (points / name / "result.json").stat().st_mtime_ns == mtime
    table = collect(project, "t01")
    squares = table[table.metric == "square"]
    assert sorted(squares.x) == list(range(6)) and (squares.value == squares.x ** 2).all()
    assert squares.loc[squares.point_id == victim.name, "attempts"].item() == 2
    assert "1 point(s) needed more than one attempt" in out



@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_driver_alone_stops_its_workers_and_kernels(tmp_path, sig):
    """``kill PID`` (or Ctrl-C) of the driver, not of its process group: it exits at once and no worker or
    kernel outlives it; the running point has no result (it runs again on resume). A driver started with
    `nohup ... &` and SIGTERMed while its point trained a network once waited in the cluster's close for
    that point (not reproduced by this sleeping fixture; the driver now ends its descendants itself)."""
    import psutil

    project = make_project(tmp_path)
    cmd = sweep_cmd(tmp_path, "-p", "x=0:2", "-p", "sleep=300.0", "--workers", "1")
    ignore_int = sig == signal.SIGTERM  # as `nohup ... &` starts it: SIGINT ignored, inherited by workers
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_int
                            else None)
    points = sweep_dir(project, "t01") / "points"
    try:
        wait_for(lambda: points.exists() and any((d / "record.json").exists() for d in points.glob("*")),
                 120, "a running point")
        tree = psutil.Process(proc.pid).children(recursive=True)
        assert any("ipykernel" in " ".join(p.cmdline()) for p in tree), [p.cmdline() for p in tree]
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), out
    assert ("terminated" if sig == signal.SIGTERM else "interrupted") in out
    assert "Traceback" not in out and "resource_tracker" not in out, out  # a quiet stop
    _, alive = psutil.wait_procs(tree, timeout=10)
    assert alive == [], [p.cmdline() for p in alive]
    assert not list(points.glob("*/result.json"))

def test_killed_driver_resumes_where_it_stopped(tmp_path):
    project = make_project(tmp_path)
    cmd = sweep_cmd(tmp_path, "-p", "x=0:6", "-p", "sleep=1.0", "--workers", "2")
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    points = sweep_dir(project, "t01") / "points"
    try:
        wait_for(lambda: points.exists() and len(list(points.glob("*/result.json"))) >= 2, 120,
                 "two finished points")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its cluster and kernels: a dead login session
        proc.wait()
    first = {d.name for d in points.glob("*") if (d / "result.json").exists()}
    assert 2 <= len(first) < 6
    time.sleep(0.5)
    rerun = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(first)} done" in rerun.stdout
    res = results(project, "t01")
    assert len(res) == 6 and all(r["status"] == "ok" for r in res.values())
    for name in first:
        assert len(read_attempts(points / name)) == 1
    table = pd.read_csv(sweep_dir(project, "t01") / "table.csv")
    assert sorted(table[table.metric == "square"].x) == list(range(6))
    assert set(pd.read_parquet(sweep_dir(project, "t01") / "table.parquet").point_id) == set(res)


def test_failing_point_is_an_error_row_others_finish_and_values_are_bit_identical(tmp_path):
    project = make_project(tmp_path)
    run = subprocess.run(sweep_cmd(tmp_path, "-p", "x=1,2,3", "-p", "fail_at=2", "--workers", "2"),
                         env=env(), capture_output=True, text=True, timeout=180)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 ok, 1 error" in run.stdout and "RuntimeError: x = 2 fails on purpose" in run.stdout, (
        f"stdout:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}")  # the whole summary when it differs
    table = collect(project, "t01")
    err = table[table.status == "error"]
    assert len(err) == 1 and err.x.item() == 2 and "fails on purpose" in err.error.item()
    bad_dir = point_dir(project, "t01", err.point_id.item())
    error_text = (bad_dir / "error.txt").read_text()
    assert error_text.startswith("RuntimeError: x = 2 fails on purpose")
    assert "Traceback" in error_text and "raise RuntimeError" in error_text  # the kernel's traceback
    assert sorted(table[table.metric == "square"].x) == [1, 3]
    md = markdown(project, "t01")
    assert "| error |" in md and "Refresh: `python -m ntputils.book sweep t01 -p x=1,2,3 -p fail_at=2" in md
    # page width: one row per point with a handful of columns, then each value's range over the points
    assert max(line.count("|") - 1 for line in md.splitlines() if line.startswith("|")) <= 8
    assert "| square | 1 | 5 | 9 | 2 |" in md

    # resume without --retry-failed: nothing runs, still exit 1
    again = subprocess.run(sweep_cmd(tmp_path, "-p", "x=1,2,3", "-p", "fail_at=2"), env=env(),
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "0 to run" in again.stdout
    assert len(read_attempts(bad_dir)) == 1
    # --retry-failed runs it once more: a second start in its log, but not a retry of this run
    retry = subprocess.run(sweep_cmd(tmp_path, "-p", "x=1,2,3", "-p", "fail_at=2", "--retry-failed"),
                           env=env(), capture_output=True, text=True, timeout=120)
    assert retry.returncode == 1 and "1 to run" in retry.stdout, retry.stdout
    assert "0 point(s) needed more than one attempt" in retry.stdout, retry.stdout
    first, second = read_attempts(bad_dir)
    assert first["run"] != second["run"] and read_attempts(bad_dir, second["run"]) == [second]

    # the same point (x=3, fail_at=2) in another sweep: bit-identical recorded values
    other = subprocess.run(sweep_cmd(tmp_path, "-p", "x=3", "-p", "fail_at=2", "--name", "again", "--workers",
                                     "1"), env=env(), capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stdout + other.stderr
    (a,) = [r for r in results(project, "t01").values() if r.get("resolved", {}).get("x") == 3]
    (b,) = results(project, "again").values()
    assert a["id"] == b["id"]
    assert json.dumps(a["results"], sort_keys=True) == json.dumps(b["results"], sort_keys=True)
    assert a["results"]["top_singular_value"]["value"] > 0


def test_smoke_sweep_of_chapter_a01_on_a_local_cluster(tmp_path):
    """The CI smoke sweep: the real chapter a01 x 2 seeds through a real LocalCluster (2 workers)."""
    root = REPO
    name = f"smoke-test-{os.getpid()}"
    run = subprocess.run([sys.executable, "-m", "ntputils.book", "sweep", "a01", "-p", "seed=0:2",
                          "--name", name, "--workers", "2", "--no-progress"],
                         env=env(), capture_output=True, text=True, timeout=300, cwd=root)
    project = Project(root)
    try:
        assert run.returncode == 0, run.stdout + run.stderr
        table = collect(project, name)
        assert set(table.seed) == {0, 1} and (table.status == "ok").all()
        assert (table[table.kind == "check"].outcome == "pass").all() and (table.kind == "check").any()
        rec = table[table.kind == "record"].pivot(index="metric", columns="seed", values="value")
        assert {"a01_V", "a01_n", "a01_H"} <= set(rec.index)
        # the dataset is drawn with data_seed, not seed: both points see the same data
        assert (rec.loc[["a01_V", "a01_n", "a01_H"], 0] == rec.loc[["a01_V", "a01_n", "a01_H"], 1]).all()
        assert set(table[table.kind == "compare"].metric) >= {"a01_V", "a01_n", "a01_H"}
    finally:
        import shutil

        shutil.rmtree(sweep_dir(project, name), ignore_errors=True)


def test_kernel_warnings_stay_off_the_sweep_console_and_go_to_the_point_log(tmp_path):
    """ipykernel's "Kernel is running over TCP without encryption" (the kernel's stderr, inherited from the
    worker process) went to the sweep's console once per point; it belongs in the point's log. The
    console does give the Dask dashboard's address."""
    project = make_project(tmp_path)
    run = subprocess.run(sweep_cmd(tmp_path, "-p", "x=4", "--workers", "1"), env=env(), capture_output=True,
                         text=True, timeout=180)
    console = run.stdout + run.stderr
    assert run.returncode == 0, console
    assert "1 ok, 0 error" in run.stdout
    assert "without encryption" not in console and "IPKernelApp" not in console, console
    assert "dashboard: http://127.0.0.1:" in run.stdout  # where Dask users look first (bokeh is pinned)
    (point,) = (sweep_dir(project, "t01") / "points").iterdir()
    log = (point / "log").read_text()
    assert "Executing notebook with kernel" in log  # papermill's log, with the kernel's stderr after it
    assert "Kernel is running over TCP without encryption" in log, log


def test_a_failed_heartbeat_is_one_line_in_every_worker():
    """Dask logs a failed heartbeat with a traceback, while the worker goes on; a sweep's workers say it in
    one line (the same record, its traceback and arguments dropped); other records keep theirs."""
    import logging

    try:
        raise OSError("Stream is closed")
    except OSError:
        exc = sys.exc_info()
    worker = ("distributed.worker", logging.ERROR, __file__, 1)
    record = logging.LogRecord(*worker, HEARTBEAT_FAILED + ".", (), exc)
    assert heartbeat_in_one_line(record) and record.exc_info is None
    text = logging.Formatter().format(record)
    assert "Traceback" not in text and "\n" not in text and "heartbeat" in text
    other = logging.LogRecord(*worker, "Compute failed %s", ("x",), exc)
    assert heartbeat_in_one_line(other) and "Traceback" in logging.Formatter().format(other)
    with connect(workers=1) as client:
        installed = client.run(lambda: heartbeat_in_one_line in logging.getLogger(worker[0]).filters)
    assert list(installed.values()) == [True]
