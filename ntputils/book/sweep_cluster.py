"""Where sweep points run: a ``LocalCluster`` of single-threaded worker *processes* (papermill changes
the working directory), a running scheduler (``--scheduler``, bounded connect), or SLURM (``--slurm``:
dask-jobqueue's ``SLURMCluster`` with dask's ``jobqueue.slurm`` config). A task whose worker died is
retried :data:`ALLOWED_FAILURES` times, then counts as an infrastructure failure, not a result.
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
    """SLURM's walltime ``[D-]HH:MM:SS`` (or ``MM:SS``) -> seconds; ``ValueError`` otherwise."""
    days, _, hms = text.rpartition("-")
    try:
        h, m, s = ([0, 0] + [int(p) for p in hms.split(":")])[-3:]
        return ((int(days or 0) * 24 + h) * 60 + m) * 60 + s
    except ValueError:
        raise ValueError(f"walltime must be [D-]HH:MM:SS, got {text!r}") from None


def slurm_job_kwargs() -> dict[str, Any]:
    """What a sweep adds to dask's ``jobqueue.slurm`` settings: one single-threaded worker per core unless
    ``processes`` is set, capped BLAS threads, and (unless ``worker-extra-args`` has one) ``--lifetime``
    the walltime less the larger of 5 minutes and a tenth of it, so SLURM never kills a point unannounced
    (a retired worker's tasks move to the others)."""
    import dask.config

    def get(key: str) -> Any:
        return dask.config.get(f"jobqueue.slurm.{key}")

    extra = list(get("worker-extra-args") or [])
    if not any(str(arg).startswith("--lifetime") for arg in extra):
        wall = _seconds(str(get("walltime")))
        extra += ["--lifetime", f"{max(60, min(wall - 300, int(wall * 0.9)))}s", "--lifetime-stagger", "60s"]
    prologue = [f"export {k}={v}" for k, v in worker_env().items()] + list(get("job-script-prologue") or [])
    return {"processes": get("processes") or get("cores"), "worker_extra_args": extra,
            "job_script_prologue": prologue}


def read_slurm_config(path: Path) -> dict[str, Any]:
    """Dask's config (dask-jobqueue's defaults, ``~/.config/dask/``, ``DASK_CONFIG``, ``DASK_*`` variables)
    with the dask config file ``path`` merged over it, for ``dask.config.set``. ``path`` must set
    ``jobqueue.slurm``; the settings are checked by writing a job script (dask-jobqueue's own checks).
    Raises :class:`ClusterError`."""
    import dask.config
    from dask_jobqueue.slurm import SLURMJob  # its import registers the jobqueue.* defaults

    if not Path(path).is_file():
        raise ClusterError(f"--slurm {path}: no such file")
    try:
        own = dask.config.collect([str(path)], env={})  # dask's YAML reader; raises ValueError
        if not isinstance(dask.config.get("jobqueue.slurm", None, config=own), dict):
            raise ValueError("no `jobqueue: slurm:` section (it is a dask config file, see README.md)")
        cfg = dask.config.merge(dask.config.config, own)
        with dask.config.set(cfg):
            SLURMJob("tcp://check:8786", name="check", **slurm_job_kwargs()).job_script()
    except (ValueError, TypeError) as err:
        raise ClusterError(f"SLURM config {path}: {err}") from None
    return cfg


def slurm_cluster():
    """A ``dask_jobqueue.SLURMCluster`` from dask's ``jobqueue.slurm`` settings (set them, e.g. with
    :func:`read_slurm_config`, for the cluster's whole life) and :func:`slurm_job_kwargs`; not yet scaled."""
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(**slurm_job_kwargs())


@contextlib.contextmanager
def connect(*, workers: int = 2, scheduler: str | None = None, slurm: Path | None = None,
            timeout: float = 10.0) -> Iterator[Any]:
    """A ``distributed.Client`` on the chosen cluster (closed, with its cluster, on exit); ``--slurm``
    starts ``ntpbook.slurm-jobs`` jobs (dask config, default 1). Raises :class:`ClusterError` when the
    scheduler is unreachable within ``timeout`` seconds or the SLURM config is invalid."""
    import dask
    from distributed import Client, LocalCluster

    with contextlib.ExitStack() as stack:
        stack.enter_context(dask.config.set(dask_config()))
        if scheduler:
            check_scheduler_address(scheduler)
            client = _bounded_client(scheduler, check_connect_timeout(timeout))
        else:
            if slurm:
                check_slurm_tools()
                stack.enter_context(dask.config.set(read_slurm_config(slurm)))
                cluster = stack.enter_context(slurm_cluster())
                cluster.scale(jobs=int(dask.config.get("ntpbook.slurm-jobs", 1)))
            else:
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                    env=worker_env(), silence_logs=40))
            client = Client(cluster)
        with client:
            yield client


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
