"""Where sweep points run: an embedded ``LocalCluster``, a running scheduler, or SLURM (dask-jobqueue).

* default: ``distributed.LocalCluster(processes=True, threads_per_worker=1)`` -- papermill changes
  the process's working directory, so one point per worker *process*, never threads;
* ``--scheduler tcp://HOST:8786``: ``distributed.Client(address, timeout=...)`` to a scheduler
  started with ``dask scheduler`` and workers started with ``dask worker tcp://HOST:8786
  --nworkers N --nthreads 1`` (each worker needs this checkout and its environment at the same path);
* ``--slurm CONFIG.yaml``: ``dask_jobqueue.SLURMCluster`` from a small YAML (:func:`slurm_cluster`).

In every case the scheduler retries a task whose worker died up to
``distributed.scheduler.allowed-failures`` times (:data:`ALLOWED_FAILURES`) before giving up with
``KilledWorker``; such points count as infrastructure failures, not as results.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ALLOWED_FAILURES = 3
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SLURM_REQUIRED = ("queue", "cores", "memory", "walltime")
SLURM_OPTIONAL = ("account", "jobs", "processes", "lifetime", "job_extra_directives", "local_directory",
                  "log_directory", "python", "job_script_prologue", "interface")


class ClusterError(RuntimeError):
    """The cluster could not be reached or configured (exit code 2)."""


SCHEDULER_RE = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
SCHEMES = ("tcp", "tls")
SLURM_TOOLS = ("sbatch", "squeue", "scancel")


def check_scheduler_address(address: Any) -> str:
    """``tcp://HOST:PORT`` (or ``tls://``, or ``HOST:PORT``) with a port in 1..65535; raises
    :class:`ClusterError` naming the problem (checked before anything runs)."""
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
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ClusterError(f"--connect-timeout must be a number of seconds, got {timeout!r}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ClusterError(f"--connect-timeout must be a positive finite number of seconds, got {timeout!r}")
    return float(timeout)


def check_slurm_tools() -> None:
    """``--slurm`` submits with ``sbatch`` and watches with ``squeue``: fail at once where one is missing
    (dask-jobqueue would only log the error and wait for workers forever)."""
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        raise ClusterError(f"--slurm needs SLURM's {', '.join(missing)} on PATH, and this machine has no "
                           f"{missing[0]}: run the sweep on the cluster's login node")


def dask_config() -> dict[str, Any]:
    """The dask settings of every sweep (retries of killed workers, no work stealing of running points)."""
    return {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            "distributed.scheduler.work-stealing": False}


def worker_env(threads: int = 1) -> dict[str, str]:
    """Environment of each worker process: BLAS/OpenMP threads capped (2 workers on 2 cores scale)."""
    return {var: str(threads) for var in THREAD_VARS}


def _seconds(text: str) -> int:
    """``"HH:MM:SS"``, ``"MM:SS"`` or ``"D-HH:MM:SS"`` (SLURM walltime) -> seconds."""
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    h, m, s = parts
    return ((days * 24 + h) * 60 + m) * 60 + s


def read_slurm_config(path: Path) -> dict[str, Any]:
    """The SLURM YAML: ``queue``, ``cores``, ``memory``, ``walltime`` (required); ``account``, ``jobs``
    (default 1), ``processes`` (default ``cores``: one single-threaded worker per core), ``lifetime``
    (default: the walltime less the larger of 5 minutes and a tenth of it) and a few
    pass-through dask-jobqueue options. Raises :class:`ClusterError` naming what is wrong."""
    import yaml

    try:
        cfg = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ClusterError(f"cannot read the SLURM config {path}: {err}") from None
    if not isinstance(cfg, dict):
        raise ClusterError(f"the SLURM config {path} must be a mapping")
    missing = [k for k in SLURM_REQUIRED if k not in cfg]
    unknown = [k for k in cfg if k not in SLURM_REQUIRED + SLURM_OPTIONAL]
    if missing or unknown:
        raise ClusterError(f"SLURM config {path}: missing {missing}, unknown {unknown}; "
                           f"keys: {', '.join(SLURM_REQUIRED + SLURM_OPTIONAL)}")
    if not isinstance(cfg["cores"], int) or cfg["cores"] < 1:
        raise ClusterError(f"SLURM config {path}: cores must be a positive int, got {cfg['cores']!r}")
    try:
        wall = _seconds(str(cfg["walltime"]))
    except ValueError:
        msg = f"SLURM config {path}: walltime must be HH:MM:SS, got {cfg['walltime']!r}"
        raise ClusterError(msg) from None
    if wall < 120:
        raise ClusterError(f"SLURM config {path}: walltime {cfg['walltime']} is under 2 minutes")
    cfg.setdefault("jobs", 1)
    cfg.setdefault("processes", cfg["cores"])
    if "lifetime" not in cfg:
        cfg["lifetime"] = f"{max(60, min(wall - 300, int(wall * 0.9)))}s"
    return cfg


def slurm_cluster(cfg: dict[str, Any]):
    """A ``dask_jobqueue.SLURMCluster`` for ``cfg`` (see :func:`read_slurm_config`); not yet scaled.

    Workers are single-threaded processes (``processes`` per job, ``cores`` cores per job) and retire
    gracefully after ``--lifetime`` (shorter than the walltime, so SLURM never kills a running point
    unannounced; a retired worker's tasks move to the others).
    """
    from dask_jobqueue import SLURMCluster

    kwargs = {k: cfg[k] for k in ("account", "local_directory", "log_directory", "python", "interface")
              if k in cfg}
    prologue = [f"export {k}={v}" for k, v in worker_env().items()]
    prologue += list(cfg.get("job_script_prologue", []))
    return SLURMCluster(
        queue=cfg["queue"], cores=cfg["cores"], processes=cfg["processes"], memory=str(cfg["memory"]),
        walltime=str(cfg["walltime"]), job_extra_directives=list(cfg.get("job_extra_directives", [])),
        worker_extra_args=["--lifetime", str(cfg["lifetime"]), "--lifetime-stagger", "60s"],
        job_script_prologue=prologue, **kwargs)


@contextlib.contextmanager
def connect(*, workers: int = 2, scheduler: str | None = None, slurm: Path | None = None,
            timeout: float = 10.0) -> Iterator[Any]:
    """A ``distributed.Client`` on the chosen cluster (closed, with its cluster, on exit).

    Raises :class:`ClusterError` when the scheduler is unreachable within ``timeout`` seconds or the
    SLURM config is invalid.
    """
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(dask_config()):
        if scheduler:
            check_scheduler_address(scheduler)
            timeout = check_connect_timeout(timeout)
            client = _bounded_client(scheduler, timeout)
            try:
                yield client
            finally:
                client.close()
            return
        if slurm:
            check_slurm_tools()
            cluster = slurm_cluster(read_slurm_config(slurm))
            cluster.scale(jobs=int(read_slurm_config(slurm)["jobs"]))
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, env=worker_env(), silence_logs=40)
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()


def _unreachable(scheduler: str, timeout: float, why: str) -> ClusterError:
    return ClusterError(f"cannot reach the dask scheduler at {scheduler} within {timeout:g} s ({why}); start "
                        f"one with `dask scheduler` and workers with `dask worker {scheduler} --nthreads 1`")


def handshake(scheduler: str, timeout: float) -> None:
    """Open a comm to ``scheduler`` and exchange Dask's handshake, all within ``timeout`` seconds; raises
    :class:`ClusterError` (a service that accepts connections but is not a Dask scheduler never answers
    the handshake, and ``distributed.Client`` alone would wait for it past its timeout)."""
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


def _bounded_client(scheduler: str, timeout: float):
    """``distributed.Client(scheduler)`` after a bounded :func:`handshake`, itself built in a daemon thread
    given ``timeout`` more seconds: the command never waits much past ``2 * timeout``."""
    from distributed import Client

    handshake(scheduler, timeout)
    box: dict[str, Any] = {}

    def make() -> None:
        try:
            box["client"] = Client(scheduler, timeout=f"{timeout}s")
        except BaseException as err:  # noqa: BLE001 - reported by the caller
            box["error"] = err

    thread = threading.Thread(target=make, name="ntpbook-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5.0)
    if thread.is_alive():
        raise _unreachable(scheduler, timeout, "the scheduler accepted the connection but never registered "
                                               "this client")
    if "error" in box:
        err = box["error"]
        raise _unreachable(scheduler, timeout, f"{type(err).__name__}: {err}") from None
    return box["client"]
