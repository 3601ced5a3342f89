"""No sweep waits forever (#47): a LocalCluster left without any worker ends the wait with an
infrastructure failure, and SLURM's ``sbatch`` failing, hanging or printing garbage ends the sweep with its
message (fake ``sbatch``/``squeue``/``scancel`` scripts on ``PATH``; no cluster needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chapters import add_chapter


class Bar:
    """A stand-in for the tqdm bar: the lines written above it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def write(self, text: str) -> None:
        self.lines.append(text)

    def update(self, n: int) -> None:
        self.n += n


def local_cluster():
    """One worker thread in this process (fast to start and stop)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)


RELEASE = threading.Event()


def _held_point() -> None:
    """A point that runs until the test releases it (its thread: processes=False)."""
    RELEASE.wait(60)


def test_a_cluster_left_without_workers_ends_the_wait_with_an_infrastructure_failure():
    """The point's worker is gone and none replaces it (a nanny that did not restart its worker): the
    wait ends after ``no_worker_s`` with an ``[infra]`` line, instead of waiting for a worker forever."""
    from distributed import Client

    from ntputils.sweeps.sweep import wait_points

    RELEASE.clear()
    with local_cluster() as cluster, Client(cluster) as client:
        fut = client.submit(_held_point, pure=False)
        deadline = time.monotonic() + 30
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.scale(0)
        t0 = time.monotonic()
        bar = Bar()
        infra = wait_points(client, {fut: ("p1", "p1 {'x': 1}")}, bar, poll_s=0.1,
                            no_worker=(1.0, "KilledWorker: no worker for 1 s"))
        took = time.monotonic() - t0
        RELEASE.set()
    assert took < 15, took
    assert infra == {"p1": "KilledWorker: no worker for 1 s; the point did not finish"}, infra
    assert bar.n == 1 and bar.lines[0].startswith("[infra] p1 {'x': 1}: KilledWorker"), bar.lines


def test_points_that_finish_or_fail_are_reported_once():
    from distributed import Client

    from ntputils.sweeps.sweep import wait_points

    def point(status: str) -> dict:
        if status == "die":
            raise RuntimeError("lost")
        return {"status": status, "error": "E: bad" if status == "error" else ""}

    with local_cluster() as cluster, Client(cluster) as client:
        futs = {client.submit(point, s, pure=False): (s, s) for s in ("ok", "error", "die")}
        bar = Bar()
        infra = wait_points(client, futs, bar, no_worker=(5.0, "no worker"), poll_s=0.05)
    assert infra == {"die": "RuntimeError: lost"} and bar.n == 3, infra
    assert sorted(bar.lines) == ["[error] error: E: bad", "[infra] die: RuntimeError: lost"], bar.lines



# ------------------------------------------------------------------------ SLURM with fake tools

SLURM_YAML = ("jobqueue:\n  slurm:\n    queue: compute\n    cores: 1\n    memory: 1GB\n"
              "    walltime: '02:00:00'\n")
SBATCH = {
    "fails": "echo 'sbatch: error: Batch job submission failed: Invalid account' >&2\nexit 1\n",
    "hangs": "exec sleep 600\n",
    "garbage": "echo 'Maintenance 00:00-04:00, try later'\n",
    "empty": "exit 0\n",
}


def fake_slurm(tmp_path: Path, sbatch: str) -> dict[str, str]:
    """An environment whose ``sbatch`` runs ``sbatch`` (shell) and whose ``squeue``/``scancel`` say
    nothing; ``squeue`` logs its calls to ``tmp_path/squeue.log``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "sbatch").write_text("#!/bin/sh\n" + sbatch)
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'squeue.log'}\nexit 0\n")
    (bin_dir / "scancel").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def slurm_sweep(tmp_path: Path, yaml_text: str = SLURM_YAML) -> list[str]:
    add_chapter(tmp_path, "t01_tiny", "records_values", paper=True)
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text(yaml_text)
    return [sys.executable, "-m", "ntputils.book", "--root", str(tmp_path), "sweep", "t01", "--no-progress",
            "-p", "x=1", "--slurm", str(cfg)]


@pytest.mark.slow
@pytest.mark.parametrize(("sbatch", "message"), [
    ("fails", "no job submitted: sbatch failed: sbatch: error: Batch job submission failed: Invalid account"),
    ("garbage", "sbatch printed no job id ('Submitted batch job N'): 'Maintenance 00:00-04:00, try later'"),
    ("empty", "sbatch printed no job id"),
])
def test_sbatch_that_fails_or_prints_no_job_id_ends_the_sweep_with_its_message(tmp_path, sbatch, message):
    """Not squeue polled forever, not job "00" with a made-up ending: one line with sbatch's words."""
    run = subprocess.run(slurm_sweep(tmp_path), env=fake_slurm(tmp_path, SBATCH[sbatch]), capture_output=True,
                         text=True, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 2 and message in run.stdout, out
    assert "Traceback" not in out and "[slurm] job" not in out, out


def test_a_hanging_sbatch_is_killed_after_its_timeout(tmp_path, monkeypatch):
    """sbatch bounded by SBATCH_TIMEOUT_S (coreutils' timeout), then a ClusterError naming the bound."""
    from ntputils.sweeps import cluster as sweep_cluster

    monkeypatch.setattr(sweep_cluster, "SBATCH_TIMEOUT_S", 2.0)
    for key, value in fake_slurm(tmp_path, SBATCH["hangs"]).items():
        monkeypatch.setenv(key, value)
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text(SLURM_YAML)
    t0 = time.monotonic()
    with pytest.raises(sweep_cluster.ClusterError, match="sbatch gave no answer within 2 s"), \
            sweep_cluster.connect(slurm=cfg):
        pass
    assert time.monotonic() - t0 < 30


@pytest.mark.slow
def test_sigterm_while_sbatch_hangs_ends_the_driver_quietly(tmp_path):
    """``kill`` of a driver waiting for sbatch: it ends within seconds, saying so, without tracebacks."""
    proc = subprocess.Popen(slurm_sweep(tmp_path), env=fake_slurm(tmp_path, SBATCH["hangs"]),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 50  # until sbatch runs (under coreutils' timeout), hanging
        while not any(p.name() == "timeout" for p in _children(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143 and "terminated" in out, out
    assert "Traceback" not in out, out
    assert took < 20, took


def _children(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


SLURM_BASE = "jobqueue:\n  slurm:\n    cores: 1\n    memory: 1GB\n"


@pytest.mark.parametrize(("text", "message"), [
    (SLURM_BASE + "    walltime: '00:00:10'\n", "walltime '00:00:10' is under a minute"),
    (SLURM_BASE + "    walltime: '-01:00:00'\n", "walltime must be [D-]HH:MM:SS, got '-01:00:00'"),
    (SLURM_BASE + "    walltime: 0\n", "walltime must be [D-]HH:MM:SS, got '0'"),
    (SLURM_BASE + "    walltime: '01:99:00'\n", "walltime must be [D-]HH:MM:SS"),
    (SLURM_BASE + "    walltime: 2:00:00\n", "quote it in the YAML file: an unquoted HH:MM:SS is read as"),
    (SLURM_BASE + "    walltime: '00:10:00'\n    worker-extra-args: ['--lifetime', '10m']\n",
     "--lifetime 600 s (+ stagger 0 s) is not shorter than the walltime 00:10:00"),
    (SLURM_BASE + "    walltime: '00:10:00'\n    worker-extra-args: ['--lifetime', 'soon']\n",
     "--lifetime 'soon' is not a duration"),
    (SLURM_BASE + "    walltime: '01:00:00'\nntpbook:\n  slurm-jobs: 2.5\n",
     "ntpbook.slurm-jobs must be a positive integer (jobs to keep), got 2.5"),
    (SLURM_BASE + "    walltime: '01:00:00'\nntpbook:\n  slurm-jobs: -1\n", "got -1"),
    (SLURM_BASE + "    walltime: '01:00:00'\nntpbook:\n  slurm-jobs: abc\n", "got 'abc'"),
    (SLURM_BASE + "    walltime: '01:00:00'\nntpbook:\n  slurm-jobs: 0\n", "got 0"),
    (SLURM_BASE + "    walltime: '01:00:00'\nntpbook:\n  slurm-job: 2\n", "unknown key ntpbook.slurm-job"),
    (SLURM_BASE + "    walltime: '01:00:00'\n    partiton: gpu\n", "unknown key jobqueue.slurm.partiton"),
    (SLURM_BASE + "    walltime: '01:00:00'\n  pbs:\n    cores: 1\n", "unknown key jobqueue.pbs"),
])
def test_slurm_settings_are_checked_before_anything_is_submitted(tmp_path, capsys, text, message):
    from ntputils import cli
    from ntputils.book import build as book_build

    add_chapter(tmp_path, "t01_tiny", "records_values", paper=True)
    bad = tmp_path / "slurm.yaml"
    bad.write_text(text)
    code = cli.main(["--root", str(tmp_path), "sweep", "t01", "-p", "x=1", "--slurm", str(bad)])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE and f"SLURM config {bad}: " in out and message in out, out
    assert not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize(("walltime", "lifetime"), [("00:01:00", "30s"), ("00:10:00", "300s"),
                                                    ("02:00:00", "6480s"), ("1-00:00:00", "77760s")])
def test_the_workers_lifetime_ends_before_the_walltime(tmp_path, walltime, lifetime):
    import dask.config

    from ntputils.sweeps.cluster import _lifetime, _seconds, read_slurm_config, slurm_job_kwargs

    cfg = tmp_path / "slurm.yaml"
    cfg.write_text(SLURM_BASE + f"    walltime: '{walltime}'\n")
    with dask.config.set(read_slurm_config(cfg)):
        args = slurm_job_kwargs()["worker_extra_args"]
    life, stagger = _lifetime(args)
    assert f"{life:.0f}s" == lifetime and life + stagger < _seconds(walltime), args


# ------------------------------------------------------------------ SlurmWatch: public API only


def test_the_slurm_code_touches_no_private_attribute_of_any_library():
    """Job replacement goes through dask-jobqueue's documented API (``scale``, ``scale_down``, ``sync``,
    ``workers``, ``job_cls``, a job's ``start``/``submit_command``/``job_id_regexp``): no ``obj._name``
    other than this module's own (``self._...``) and no edit of a cluster's ``worker_spec``."""
    import re

    from ntputils.sweeps import cluster as sweep_cluster

    source = Path(sweep_cluster.__file__).read_text()
    private = [m.group(0) for m in re.finditer(r"(\w+)\.(_[A-Za-z]\w*)", source) if m.group(1) != "self"]
    assert private == [], private
    assert "worker_spec" not in source


class FakeJob:
    def __init__(self, job_id: str | None, submit_error: str | None = None):
        self.job_id, self.submit_error, self.name = job_id, submit_error, None


class FakeCluster:
    """What :class:`SlurmWatch` may use of a ``SLURMCluster``: ``workers``, ``scale``, ``scale_down``,
    ``sync``; the calls are recorded."""

    def __init__(self, jobs: dict[str, FakeJob]):
        self.workers, self.calls = dict(jobs), []

    def scale(self, jobs: int) -> None:
        self.calls.append(("scale", jobs))

    async def scale_down(self, names: list[str]) -> None:
        self.calls.append(("scale_down", sorted(names)))
        for name in names:
            self.workers.pop(name, None)

    def sync(self, func, *args):
        import asyncio

        return asyncio.run(func(*args))


class FakeClient:
    def __init__(self, pending: list[str]):
        self.futures = {key: type("State", (), {"status": "pending"})() for key in pending}
        self.cancelled: list[tuple[list[str], str]] = []

    def scheduler_info(self) -> dict:
        return {"workers": {}}

    def processing(self) -> dict:
        return {}

    def cancel(self, futures, reason: str, msg: str) -> None:
        self.cancelled.append(([f.key for f in futures], msg))


def slurm_watch(tmp_path: Path, monkeypatch, cluster, client):
    import dask.config

    from ntputils.sweeps.cluster import SlurmWatch, read_slurm_config

    env = fake_slurm(tmp_path, SBATCH["empty"])
    (tmp_path / "bin" / "squeue").write_text("#!/bin/sh\necho 101\n")  # job 101 alive, 102 gone
    monkeypatch.setenv("PATH", env["PATH"])
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text(SLURM_YAML + "ntpbook:\n  slurm-jobs: 2\n")
    lines: list[str] = []
    monkeypatch.setattr("distributed.Future", lambda key, client: type("F", (), {"key": key})())
    with dask.config.set(read_slurm_config(cfg)):
        return SlurmWatch(client, cluster, cfg, say=lines.append), lines


def test_a_job_slurm_ended_is_replaced_through_scale_down_and_scale(tmp_path, monkeypatch):
    cluster = FakeCluster({"SLURMCluster-0": FakeJob("101"), "SLURMCluster-1": FakeJob("102")})
    watch, lines = slurm_watch(tmp_path, monkeypatch, cluster, FakeClient([]))
    watch.poll()
    assert cluster.calls == [("scale_down", ["SLURMCluster-1"]), ("scale", 2)], cluster.calls
    assert "[slurm] job 102 ended: ended" in lines, lines
    watch.poll()  # said once, dropped once; the cluster keeps its two jobs
    assert cluster.calls[2:] == [("scale", 2)] and lines.count("[slurm] job 102 ended: ended") == 1


def test_a_replacement_sbatch_that_fails_ends_the_waiting_points(tmp_path, monkeypatch):
    cluster = FakeCluster({"SLURMCluster-0": FakeJob("101"),
                           "SLURMCluster-2": FakeJob(None, "sbatch failed: QOSMaxSubmitJobPerUserLimit")})
    client = FakeClient(["sweep-t01-a", "sweep-t01-b"])
    watch, lines = slurm_watch(tmp_path, monkeypatch, cluster, client)
    watch.poll()
    watch.poll()
    ((keys, msg),) = client.cancelled
    assert sorted(keys) == ["sweep-t01-a", "sweep-t01-b"] and "QOSMaxSubmitJobPerUserLimit" in msg, msg
    assert any("could not be submitted" in line for line in lines), lines


def test_each_kind_of_cluster_has_its_no_worker_bound():
    from ntputils.sweeps.sweep import NO_WORKER_S, SCHEDULER_NO_WORKER_S, _no_worker_bound

    local, scheduler = _no_worker_bound(None, None), _no_worker_bound("tcp://head:8786", None)
    assert local[0] == NO_WORKER_S and local[1].startswith("KilledWorker: the LocalCluster has had no worker")
    assert scheduler[0] == SCHEDULER_NO_WORKER_S and "dask worker tcp://head:8786" in scheduler[1]
    assert _no_worker_bound(None, Path("slurm.yaml")) is None  # queued jobs may wait for hours
