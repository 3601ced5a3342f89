"""Where sweep points run: a ``LocalCluster`` of single-threaded worker processes, a running scheduler
(``--scheduler``) or SLURM (``--slurm``, dask-jobqueue; :class:`SlurmWatch` replaces ended jobs). A task
whose worker died is retried :data:`ALLOWED_FAILURES` times, then counts as an infrastructure failure."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import logging
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from ntputils.book.project import seconds_problem

ALLOWED_FAILURES = 3
#: every sweep: retries of killed workers, no work stealing, no queueing on busy workers
DASK_CONFIG = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
               "distributed.scheduler.work-stealing": False, "distributed.scheduler.worker-saturation": 1.0}
#: each worker process: BLAS/OpenMP threads capped
WORKER_ENV = {var: "1" for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
#: a LocalCluster's Dask dashboard (bokeh serves it): this machine only, on a free port (two sweeps at
#: once must not fight over 8787); the sweep prints its address (:func:`dashboard_link`)
LOCAL_DASHBOARD = "127.0.0.1:0"


#: what a worker logs, with a traceback, when one heartbeat to the scheduler fails (a busy machine, or the
#: scheduler closing at the end of a sweep); the worker goes on, and a point it loses is retried
HEARTBEAT_FAILED = "Failed to communicate with scheduler during heartbeat"
HEARTBEAT_NOTE = ("a worker's heartbeat to the scheduler failed (a busy machine, or the sweep closing); "
                  "the worker goes on, and a point it loses runs again")


def heartbeat_in_one_line(record: logging.LogRecord) -> bool:
    """Logging filter of the workers: a failed heartbeat is said in one line, without Dask's traceback."""
    if str(record.msg).startswith(HEARTBEAT_FAILED):
        record.msg, record.args, record.exc_info, record.exc_text = HEARTBEAT_NOTE, (), None, None
    return True


class QuietHeartbeat(WorkerPlugin):
    """Worker plugin that installs :func:`heartbeat_in_one_line` on ``distributed.worker``'s logger."""

    name = "ntpbook-quiet-heartbeat"

    def setup(self, worker: Any) -> None:
        logging.getLogger("distributed.worker").addFilter(heartbeat_in_one_line)


class ClusterError(RuntimeError):
    """The cluster could not be reached or configured (exit code 2)."""


SCHEDULER_RE = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
SCHEMES = ("tcp", "tls")
SLURM_TOOLS = ("sbatch", "squeue", "scancel")


def check_scheduler_address(address: Any) -> str:
    """``tcp://HOST:PORT`` (or ``tls://``, or ``HOST:PORT``, port 1..65535); else :class:`ClusterError`."""
    m = SCHEDULER_RE.match(address) if isinstance(address, str) else None
    if m is None:
        raise ClusterError(f"--scheduler {address!r} is not an address; expected tcp://HOST:PORT, "
                           "e.g. tcp://head:8786")
    if (m.group("scheme") or "tcp") not in SCHEMES:
        raise ClusterError(f"--scheduler {address!r}: unsupported protocol {m.group('scheme')!r} "
                           f"(use {' or '.join(s + '://' for s in SCHEMES)})")
    if not 1 <= int(m.group("port")) <= 65535:
        raise ClusterError(f"--scheduler {address!r}: port {m.group('port')} is not in 1..65535")
    return address


def check_connect_timeout(timeout: Any) -> float:
    """A positive finite number of seconds; raises :class:`ClusterError`."""
    if problem := seconds_problem(timeout):
        raise ClusterError(f"--connect-timeout {problem}")
    return float(timeout)


def check_slurm_tools() -> None:
    """Raise :class:`ClusterError` where ``sbatch``, ``squeue`` or ``scancel`` is missing (dask-jobqueue
    would wait for workers forever)."""
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        raise ClusterError(f"--slurm needs SLURM's {', '.join(missing)} on PATH, and this machine has no "
                           f"{missing[0]}: run the sweep on the cluster's login node")


#: SLURM's walltime as a sweep accepts it: ``[D-]HH:MM:SS`` or ``MM:SS``
WALLTIME_RE = re.compile(r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)$")
#: seconds one ``sbatch`` may take (a hung controller); it is then killed and the sweep ends with a message
SBATCH_TIMEOUT_S = 60.0
#: what ``sbatch`` prints for a submitted job (``... on cluster NAME`` in a federation); anything else is
#: refused, not read as a job id
SBATCH_JOB_RE = r"(?m)^Submitted batch job (?P<job_id>[1-9][0-9]*)\b"


def _seconds(text: str) -> int:
    """SLURM's walltime ``[D-]HH:MM:SS`` (or ``MM:SS``) -> seconds; ``ValueError`` otherwise."""
    m = WALLTIME_RE.match(text.strip())
    if m is None or int(m["s"]) > 59 or (m["h"] is not None and int(m["m"]) > 59):
        raise ValueError(f"walltime must be [D-]HH:MM:SS, got {text!r}")
    d, h, mi, s = (int(m[k] or 0) for k in "dhms")
    return ((d * 24 + h) * 60 + mi) * 60 + s


def _lifetime(args: list[Any]) -> tuple[float, float] | None:
    """``(--lifetime, --lifetime-stagger)`` seconds in a worker's arguments, or ``None`` without a
    lifetime; ``ValueError`` for one that is not a duration."""
    from dask.utils import parse_timedelta

    found: dict[str, float] = {}
    args = [str(a) for a in args]
    for i, arg in enumerate(args):
        for flag in ("--lifetime", "--lifetime-stagger"):
            value = arg.partition("=")[2] if arg.startswith(flag + "=") else (
                args[i + 1] if arg == flag and i + 1 < len(args) else None)
            if value is not None:
                try:
                    found[flag] = float(parse_timedelta(value))
                except (ValueError, TypeError, KeyError):
                    raise ValueError(f"worker-extra-args: {flag} {value!r} is not a duration") from None
    return (found["--lifetime"], found.get("--lifetime-stagger", 0.0)) if "--lifetime" in found else None


def slurm_job_kwargs() -> dict[str, Any]:
    """What a sweep adds to dask's ``jobqueue.slurm`` settings: one single-threaded worker per core (unless
    ``processes`` is set), capped BLAS threads and, unless given, a worker
    ``--lifetime`` (with ``--lifetime-stagger``) ending before the walltime (so SLURM never kills a point
    unannounced)."""
    import dask.config

    def get(key: str) -> Any:
        return dask.config.get(f"jobqueue.slurm.{key}")

    extra = list(get("worker-extra-args") or [])
    if not any(str(arg).startswith("--lifetime") for arg in extra):
        wall = _seconds(str(get("walltime")))
        lifetime = max(wall // 2, min(wall - 300, int(wall * 0.9)))
        extra += ["--lifetime", f"{lifetime}s", "--lifetime-stagger", f"{min(60, lifetime // 10)}s"]
    prologue = [f"export {k}={v}" for k, v in WORKER_ENV.items()] + list(get("job-script-prologue") or [])
    return {"processes": get("processes") or get("cores"), "worker_extra_args": extra,
            "job_script_prologue": prologue}


def slurm_settings_problem(own: dict[str, Any]) -> str | None:
    """What is wrong with a ``--slurm`` file's settings ``own`` (read alone) merged into dask's config (set
    now), or ``None``: a key dask-jobqueue does not know, a walltime that is not ``[D-]HH:MM:SS``, under a
    minute or not longer than the workers' lifetime, or a ``slurm-jobs`` that is not a positive integer."""
    import dask.config

    defaults = _jobqueue_slurm_defaults()
    for section, allowed in (("jobqueue", {"slurm"}), ("ntpbook", {"slurm-jobs"})):
        for key in own.get(section) or {}:
            if str(key).replace("_", "-") not in allowed:
                return f"unknown key {section}.{key} (allowed here: {', '.join(sorted(allowed))})"
    for key in dask.config.get("jobqueue.slurm", {}, config=own) or {}:
        if str(key).replace("_", "-") not in defaults:
            return (f"unknown key jobqueue.slurm.{key}: dask-jobqueue's SLURMCluster has no such setting "
                    "(see its docs for the list)")
    walltime = str(dask.config.get("jobqueue.slurm.walltime"))
    try:
        wall = _seconds(walltime)
        life = _lifetime(slurm_job_kwargs()["worker_extra_args"])
    except ValueError as err:
        raw = dask.config.get("jobqueue.slurm.walltime")
        quote = (f"; quote it in the YAML file: an unquoted HH:MM:SS is read as the number {raw}"
                 if isinstance(raw, int) and not isinstance(raw, bool) and raw > 59 else "")
        return f"{err}{quote}"
    if wall < 60:
        return f"walltime {walltime!r} is under a minute (SLURM's shortest); give [D-]HH:MM:SS >= 00:01:00"
    if life and life[0] + life[1] >= wall:
        return (f"the workers' --lifetime {life[0]:g} s (+ stagger {life[1]:g} s) is not shorter than the "
                f"walltime {walltime} ({wall} s): SLURM would kill points unannounced; lower the lifetime "
                "or raise the walltime")
    jobs = dask.config.get("ntpbook.slurm-jobs", 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        return f"ntpbook.slurm-jobs must be a positive integer (jobs to keep), got {jobs!r}"
    return None


def _jobqueue_slurm_defaults() -> set[str]:
    """The keys of dask-jobqueue's ``jobqueue.slurm`` settings (its defaults file)."""
    import dask_jobqueue
    import yaml

    with open(Path(dask_jobqueue.__file__).parent / "jobqueue.yaml") as f:
        return {str(k).replace("_", "-") for k in yaml.safe_load(f)["jobqueue"]["slurm"]}


def read_slurm_config(path: Path) -> dict[str, Any]:
    """Dask's config with the dask config file ``path`` (which must set ``jobqueue.slurm``) merged over it,
    checked (:func:`slurm_settings_problem`, then a job script written); raises :class:`ClusterError`."""
    import dask.config
    from dask_jobqueue.slurm import SLURMJob  # its import registers the jobqueue.* defaults

    if not Path(path).is_file():
        raise ClusterError(f"--slurm {path}: no such file")
    try:
        own = dask.config.collect([str(path)], env={})  # dask's YAML reader; raises ValueError
        if not isinstance(dask.config.get("jobqueue.slurm", None, config=own), dict):
            raise ValueError("no `jobqueue: slurm:` section (it is a dask config file, "
                             "see book/using/sweeps.md)")
        cfg = dask.config.merge(dask.config.config, own)
        with dask.config.set(cfg):
            if problem := slurm_settings_problem(own):
                raise ValueError(problem)
            SLURMJob("tcp://check:8786", name="check", **slurm_job_kwargs()).job_script()
    except (ValueError, TypeError) as err:
        raise ClusterError(f"SLURM config {path}: {err}") from None
    return cfg


def slurm_cluster(job_name: str | None = None):
    """An unscaled ``SLURMCluster`` of :func:`sweep_job_class` jobs from dask's ``jobqueue.slurm`` settings
    and :func:`slurm_job_kwargs`; ``job_name`` names its jobs unless the settings name them."""
    import dask.config
    from dask_jobqueue import SLURMCluster

    kwargs = slurm_job_kwargs()
    if job_name and dask.config.get("jobqueue.slurm.name", None) in (None, "dask-worker"):
        kwargs["job_name"] = job_name
    return SLURMCluster(job_cls=sweep_job_class(), **kwargs)


@functools.cache
def sweep_job_class() -> type:
    """dask-jobqueue's ``SLURMJob`` with ``sbatch`` bounded by :data:`SBATCH_TIMEOUT_S` (coreutils'
    ``timeout``), only ``Submitted batch job N`` read as a job id (:data:`SBATCH_JOB_RE`), and why a
    submission failed kept as ``submit_error`` (the public ``submit_command``, ``job_id_regexp`` and
    ``start`` of a dask-jobqueue job class; ``job_cls`` of ``SLURMCluster``)."""
    from dask_jobqueue.slurm import SLURMJob
    from distributed.core import Status

    class SweepJob(SLURMJob):
        job_id_regexp = SBATCH_JOB_RE
        submit_error: str | None = None

        @property
        def submit_command(self) -> str:  # type: ignore[override]
            return f"timeout -k 5 {SBATCH_TIMEOUT_S:g} sbatch"

        async def start(self) -> None:
            try:
                await super().start()
            except Exception as err:
                self.submit_error = submit_failure(err)
                self.status = Status.failed  # what SpecCluster's close expects of a job that did not start
                err.ntpbook_said = True  # type: ignore[attr-defined] # the sweep says it: no traceback
                raise

    return SweepJob


def said_elsewhere(record: logging.LogRecord) -> bool:
    """Logging filter: drop the traceback Dask's event loop logs for a job submission that failed (the
    sweep ends with :func:`submit_failure`'s line instead)."""
    return not (record.exc_info and getattr(record.exc_info[1], "ntpbook_said", False))


def submit_failure(err: Exception) -> str:
    """One line saying why dask-jobqueue could not submit a job (its ``RuntimeError`` for a command that
    failed, its ``ValueError`` for output without a job id)."""
    text = str(err)
    if "Exit code: 124" in text:
        return f"sbatch gave no answer within {SBATCH_TIMEOUT_S:g} s (killed; is the SLURM controller up?)"
    if isinstance(err, ValueError) and "output is:" in text:
        out = " ".join(text.partition("output is:")[2].split())
        return f"sbatch printed no job id ('Submitted batch job N'): {out[:300]!r}"
    said = text.partition("stderr:")[2] or text.partition("stdout:")[2] or text
    return f"sbatch failed: {' '.join(said.split())[:500] or type(err).__name__}"


def wait_for_submission(cluster, jobs: int, timeout: float | None = None) -> list[str]:
    """Wait until ``cluster`` (of :func:`sweep_job_class` jobs) has submitted ``jobs`` jobs and return their
    ids; :class:`ClusterError` with ``sbatch``'s message as soon as one submission failed, or after
    ``timeout`` seconds (default :data:`SBATCH_TIMEOUT_S` and a margin)."""
    limit = SBATCH_TIMEOUT_S + 15 if timeout is None else timeout
    deadline = time.monotonic() + limit
    while True:
        started = list(cluster.workers.values())
        if failed := [job.submit_error for job in started if getattr(job, "submit_error", None)]:
            raise ClusterError(f"--slurm: no job submitted: {failed[0]}")
        ids = [str(job.job_id) for job in started if getattr(job, "job_id", None)]
        if len(ids) >= jobs:
            return ids
        if time.monotonic() > deadline:
            raise ClusterError(f"--slurm: sbatch submitted {len(ids)} of {jobs} job(s) within {limit:g} s")
        time.sleep(0.1)


def sweep_job_name(directory: Path) -> str:
    """The SLURM job name of a sweep's workers: ``ntpbook-<name>-<hash of its folder>``."""
    import hashlib

    digest = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:8]
    return f"ntpbook-{Path(directory).name}-{digest}"


def cancel_leftover_jobs(job_name: str, say: Callable[[str], None] = print, wait: float = 60.0) -> list[str]:
    """``scancel`` this user's jobs named ``job_name`` (a dead driver's) and wait at most ``wait`` s for them
    to go."""
    user = ["-u", getpass.getuser(), "-n", job_name]
    ids = (_run(["squeue", "-h", "-o", "%i", *user]) or "").split()
    if not ids:
        return []
    _run(["scancel", *ids])
    deadline = time.monotonic() + wait
    while (_run(["squeue", "-h", "-o", "%i", *user]) or "").split() and time.monotonic() < deadline:
        time.sleep(1.0)
    say(f"[slurm] cancelled job(s) {', '.join(ids)} left by an earlier driver of this sweep (SIGKILL?); "
        "their unfinished points run again")
    return ids


@contextlib.contextmanager
def connect(*, workers: int = 2, scheduler: str | None = None, slurm: Path | None = None,
            timeout: float = 10.0, job_name: str | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` on the chosen cluster (closed with it on exit); with ``slurm``,
    ``ntpbook.slurm-jobs`` jobs named ``job_name`` kept by :class:`SlurmWatch`. Raises :class:`ClusterError`
    for an unreachable scheduler or an invalid SLURM config."""
    with contextlib.ExitStack() as stack:
        try:
            client, cluster = _open(stack, workers=workers, scheduler=scheduler, slurm=slurm, timeout=timeout,
                                    job_name=job_name)
            with client, (SlurmWatch(client, cluster, slurm) if slurm else contextlib.nullcontext()):
                yield client
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP of the driver
            if not scheduler:
                stop_local_workers()  # a LocalCluster's workers and kernels, or an sbatch still running
            raise


def _open(stack: contextlib.ExitStack, *, workers: int, scheduler: str | None, slurm: Path | None,
          timeout: float, job_name: str | None) -> tuple[Any, Any]:
    """(client, cluster) of :func:`connect`, entered on ``stack`` (``cluster`` is ``None`` with
    ``scheduler``); with ``slurm``, once its jobs are submitted (:func:`wait_for_submission`)."""
    import dask
    from distributed import Client, LocalCluster

    stack.enter_context(dask.config.set(DASK_CONFIG))
    cluster = None
    if scheduler:
        check_scheduler_address(scheduler)
        client = _client(scheduler, check_connect_timeout(timeout))
    else:
        if slurm:
            check_slurm_tools()
            tornado_log = logging.getLogger("tornado.application")
            tornado_log.addFilter(said_elsewhere)
            stack.callback(tornado_log.removeFilter, said_elsewhere)
            stack.enter_context(dask.config.set(read_slurm_config(slurm)))
            cluster = stack.enter_context(slurm_cluster(job_name))
            if job_name and cluster.job_name == job_name:
                cancel_leftover_jobs(job_name, say=SlurmWatch.write)
            jobs = int(dask.config.get("ntpbook.slurm-jobs", 1))
            cluster.scale(jobs=jobs)
            wait_for_submission(cluster, jobs)
        else:
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=LOCAL_DASHBOARD,
                env=WORKER_ENV, silence_logs=40))
        client = Client(cluster)
    client.register_plugin(QuietHeartbeat())
    return client, cluster


def stop_local_workers(timeout: float = 5.0) -> int:
    """End this process's descendants at once: the LocalCluster's worker processes and the kernels their
    points run, or an ``sbatch`` still running (psutil; SIGTERM, then SIGKILL after ``timeout`` s). Without
    it a killed driver waits for the running point (or sbatch) to finish while the cluster closes. Returns
    how many processes it ended; an unfinished point has no result and runs again when the sweep resumes."""
    import psutil

    def tracker(proc: psutil.Process) -> bool:
        with contextlib.suppress(psutil.Error):
            return "multiprocessing.resource_tracker" in " ".join(proc.cmdline())
        return False

    # multiprocessing's resource tracker is left alone: it ends with this process, and killing it first
    # makes every dying worker print a traceback
    procs = [p for p in psutil.Process().children(recursive=True) if not tracker(p)]
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=timeout)
    return len(procs)


def dashboard_link(client) -> str | None:
    """The address of the cluster's Dask dashboard, or ``None`` (it needs ``bokeh``)."""
    import importlib.util

    if importlib.util.find_spec("bokeh") is None:
        return None
    try:
        return client.dashboard_link if "dashboard" in client.scheduler_info().get("services", {}) else None
    except Exception:  # noqa: BLE001 - a link is a courtesy
        return None


def _run(cmd: list[str], timeout: float = 20.0) -> str | None:
    """Output of a SLURM command, or ``None`` when it fails (the controller may be busy for a moment)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def slurm_job_end(job_id: str) -> str:
    """How a SLURM job ended, e.g. ``TIMEOUT (reason TimeLimit) after 00:01:02 of walltime 00:01:00``
    (``ended`` once the controller forgot it)."""
    out = _run(["scontrol", "show", "job", "-o", str(job_id)]) or ""
    fields = dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", out))
    if "JobState" not in fields:
        return "ended"
    reason = fields.get("Reason", "None")
    return (f"{fields['JobState']}{f' (reason {reason})' if reason not in ('None', '') else ''} after "
            f"{fields.get('RunTime', '?')} of walltime {fields.get('TimeLimit', '?')}")


class SlurmWatch:
    """A thread that replaces the sweep's SLURM jobs that ended (dask-jobqueue does not), saying how each
    ended, and cancels a point cut :attr:`CUTS` times after running half a job's time or more (it cannot fit
    in one job). It uses the cluster's public API only: ``workers`` (job objects with their ``job_id``),
    ``scale_down`` (ended jobs), ``scale(jobs=...)`` (new ones) and ``sync``; the workers retire through
    ``--lifetime``/``--lifetime-stagger`` and Dask retries their points (``allowed-failures``)."""

    POLL_S = 5.0
    CUTS = 2

    def __init__(self, client, cluster, config: Path | None, say: Callable[[str], None] | None = None):
        import dask.config

        self.client, self.cluster, self.config = client, cluster, config
        self.jobs = int(dask.config.get("ntpbook.slurm-jobs", 1))
        self.walltime = str(dask.config.get("jobqueue.slurm.walltime"))
        wall = float(_seconds(self.walltime))
        life = _lifetime(slurm_job_kwargs()["worker_extra_args"])
        self.lifetime = life[0] if life else None
        self.budget = min(wall, self.lifetime or wall)
        self.say = say or self.write
        self.known: dict[str, str] = {}  # job id -> job name, every job seen
        self.endings: dict[str, str] = {}  # job id -> how it ended
        self.addr_job: dict[str, str] = {}  # worker address -> job id
        self.running: dict[Any, tuple[str, float, float]] = {}  # key -> (worker, first seen, last seen)
        self.cuts: dict[Any, list[tuple[float, str]]] = {}  # key -> (seconds run, how the job ended)
        self.given_up: set[Any] = set()
        self.submit_failed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ntpbook-slurm-watch", daemon=True)

    @staticmethod
    def write(text: str) -> None:
        """Print a line to stdout above the progress bar, if any."""
        from tqdm.auto import tqdm

        tqdm.write(text, file=sys.stdout)
        sys.stdout.flush()

    def __enter__(self) -> SlurmWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        with contextlib.suppress(Exception):  # a sweep shorter than one poll: its jobs are still named
            self._announce()

    def _loop(self) -> None:
        while not self._stop.wait(self.POLL_S):
            try:
                self.poll()
            except Exception as err:  # noqa: BLE001 - the watch must never take the sweep down
                self.say(f"[slurm] watching the jobs failed once ({type(err).__name__}: {err})")

    def poll(self) -> None:
        """One look at the jobs (replacing those SLURM ended) and at the points they run."""
        if self._ended_jobs() is not None:
            ended = [name for name, job in list(self.cluster.workers.items())
                     if str(getattr(job, "job_id", None)) in self.endings]
            if ended:  # dropped from the cluster (their specs too), so that scale submits new jobs
                self.cluster.sync(self.cluster.scale_down, ended)
        self.cluster.scale(jobs=self.jobs)  # also resubmits a job whose workers the cluster saw leave
        self._check_submissions()
        self._track_points()

    def _check_submissions(self) -> None:
        """A replacement job sbatch could not submit ends the sweep: its unfinished points are cancelled
        with sbatch's words (they would wait for a worker forever)."""
        from distributed import Future

        failed = [job.submit_error for job in list(self.cluster.workers.values())
                  if getattr(job, "submit_error", None)]
        if not failed or self.submit_failed:
            return
        self.submit_failed = True
        msg = f"no worker: a replacement SLURM job could not be submitted ({failed[0]})"
        pending = [key for key, state in list(self.client.futures.items()) if state.status == "pending"]
        self.say(f"[slurm] {msg}")
        self.given_up.update(pending)
        self.client.cancel([Future(key, self.client) for key in pending], reason="sbatch", msg=msg)

    def _ended_jobs(self) -> dict[str, str] | None:
        """Job id -> how it ended, for the jobs ``squeue`` no longer lists (``None`` when it failed)."""
        self._announce()
        out = _run(["squeue", "-h", "-o", "%i", "-u", getpass.getuser()])
        if out is None:
            return None
        alive = set(out.split())
        ended = {job_id: slurm_job_end(job_id) for job_id in self.known
                 if job_id not in alive and job_id not in self.endings}
        self.endings.update(ended)
        for job_id, how in ended.items():
            self.say(f"[slurm] job {job_id} ended: {how}")
        return ended

    def _announce(self) -> None:
        """Say each job of the cluster once, when its id is first seen."""
        for name, job in list(self.cluster.workers.items()):
            job_id = str(getattr(job, "job_id", None) or "")
            if job_id and job_id not in self.known:
                self.known[job_id] = name
                self.say(f"[slurm] job {job_id} submitted ({name})")

    def _track_points(self) -> None:
        now = time.monotonic()
        info = self.client.scheduler_info().get("workers", {})
        names = {str(getattr(job, "name", n)): str(getattr(job, "job_id", "")) for n, job in
                 list(self.cluster.workers.items())}
        for addr, w in info.items():  # "SLURMCluster-3" or, several workers per job, "SLURMCluster-3-0"
            name = str(w.get("name", ""))
            job_id = names.get(name) or names.get(name.rpartition("-")[0])
            if job_id:
                self.addr_job[addr] = job_id
        processing = self.client.processing()
        for addr, keys in processing.items():
            for key in keys:
                seen = self.running.get(key)
                self.running[key] = (addr, seen[1] if seen and seen[0] == addr else now, now)
        states = self.client.futures
        for key, (addr, first, last) in list(self.running.items()):
            if key in processing.get(addr, ()):
                continue
            del self.running[key]
            state = states.get(key)
            if addr in info or state is None or state.status != "pending":
                continue  # it finished, or its worker still lives
            job_id, ran = self.addr_job.get(addr, "?"), last - first
            self.say(f"[slurm] point {key} was cut after running {ran:.0f} s: its worker (job {job_id}) "
                     "left; it runs again on another worker")
            if ran >= self.budget / 2:
                self.cuts.setdefault(key, []).append((ran, job_id))
            if len(self.cuts.get(key, [])) >= self.CUTS and key not in self.given_up:
                self._give_up(key)

    def _give_up(self, key: Any) -> None:
        from distributed import Future

        runs = " and ".join(f"{ran:.0f} s" for ran, _ in self.cuts[key])
        jobs = "; ".join(f"job {job_id}: {self.endings.get(job_id) or slurm_job_end(job_id)}"
                         for _, job_id in self.cuts[key])
        retire = f"; workers retire after {self.lifetime:.0f} s (--lifetime)" if self.lifetime else ""
        msg = (f"point cut {len(self.cuts[key])} times by the end of its SLURM job after running {runs} "
               f"({jobs}): it needs longer than a job's walltime (jobqueue.slurm.walltime = "
               f"{self.walltime}{retire}); raise the walltime in {self.config}")
        self.given_up.add(key)  # the sweep prints the message (an infrastructure failure of the point)
        self.client.cancel([Future(key, self.client)], reason="walltime", msg=msg)


def _unreachable(scheduler: str, timeout: float, why: str) -> ClusterError:
    return ClusterError(f"cannot reach the dask scheduler at {scheduler} within {timeout:g} s ({why}); start "
                        f"one with `dask scheduler` and workers with `dask worker {scheduler} --nthreads 1`")


def handshake(scheduler: str, timeout: float) -> None:
    """Open a comm to ``scheduler`` with Dask's handshake within ``timeout`` seconds; else
    :class:`ClusterError`."""
    from distributed.comm import connect as comm_connect

    async def probe() -> None:
        comm = await comm_connect(scheduler, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(probe(), timeout))
    except TimeoutError:
        raise _unreachable(scheduler, timeout, "no Dask handshake: is it a dask scheduler?") from None
    except Exception as err:  # noqa: BLE001 - refused, unknown host, TLS without certificates, ...
        raise _unreachable(scheduler, timeout, f"{type(err).__name__}: {err}") from None


def _client(scheduler: str, timeout: float):
    """``distributed.Client(scheduler)`` after :func:`handshake`, within ``timeout`` seconds (Dask's own)."""
    from distributed import Client

    handshake(scheduler, timeout)
    try:
        return Client(scheduler, timeout=f"{timeout}s")
    except Exception as err:  # noqa: BLE001 - e.g. it accepted the handshake but never registered this client
        raise _unreachable(scheduler, timeout, f"{type(err).__name__}: {err}") from None
