"""Execute one chapter: jupytext -> ipynb -> papermill, in a worker process with its own environment.

The worker (``python -m ntputils.book.worker SPEC.json``, :mod:`ntputils.book.worker`) converts the
source, runs papermill into a scratch notebook and writes a result JSON. The parent then either
installs the executed notebook as ``book/<chapter>.ipynb`` (atomically, with the cache key and the
run record in its metadata) or, on failure, deletes ``book/<chapter>.ipynb`` and keeps the failed
notebook under ``.cache/book/failed/`` -- a failed chapter never leaves a notebook that looks current.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ntputils.book.environment import git_commit, package_versions
from ntputils.book.project import Chapter, Project
from ntputils.chapter_contract import RECORD_ENV

META_KEY = "ntpbook"
PROGRESS_BAR = re.compile(r"\d+%\||\d+it \[")  # tqdm: " 42%|####   | 42/100 [...]" or "17it [00:01, ...]"
# tqdm.auto warns in every kernel without ipywidgets (which we do not want: widgets need a CDN)
KERNEL_WARNING_FILTERS = ("ignore:IProgress not found",)


@dataclass
class RunResult:
    """Outcome of one chapter in one build: ``status`` is ``ok``, ``failed`` or ``cached``."""

    chapter: Chapter
    status: str
    seconds: float = 0.0
    error: str = ""
    traceback: str = ""
    log: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _paths(project: Project, chapter: Chapter) -> dict[str, Path]:
    c = project.cache_dir
    return {
        "spec": c / "work" / f"{chapter.name}.spec.json",
        "input": c / "work" / f"{chapter.name}.in.ipynb",
        "output": c / "work" / f"{chapter.name}.out.ipynb",
        "result": c / "work" / f"{chapter.name}.result.json",
        "record": c / "records" / f"{chapter.name}.json",
        "log": c / "logs" / f"{chapter.name}.log",
        "failed_nb": project.failed_dir() / f"{chapter.name}.ipynb",
        "failed_json": project.failed_dir() / f"{chapter.name}.json",
    }


def worker_env(project: Project, record: Path, threads: int | None) -> dict[str, str]:
    """The kernel's environment: no ``MPLBACKEND`` (it silently drops figures), a writable
    ``MPLCONFIGDIR``, the record path for :mod:`ntputils.runtime`, optional thread caps."""
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    env.setdefault("MPLCONFIGDIR", str(project.root / ".mplconfig"))
    env[RECORD_ENV] = str(record)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONWARNINGS"] = ",".join(filter(None, [env.get("PYTHONWARNINGS", ""), *KERNEL_WARNING_FILTERS]))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if threads:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setdefault(var, str(threads))
    return env


def _load_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _add_run_banner(nb, meta: dict[str, Any], link_status: bool) -> None:
    """Insert a markdown cell under the chapter title saying how the page was produced."""
    import nbformat

    params = ", ".join(f"`{k}={v!r}`" for k, v in meta.get("resolved", {}).items()
                       if k not in ("profile", "seed", "device")) or "none"
    checks = meta.get("checks", [])
    passed = sum(1 for c in checks if c.get("passed"))
    status = "see the [status page](status.md)" if link_status else "see the status page"
    text = (
        "```{admonition} How this page was produced\n:class: note\n"
        f"Executed by `python -m ntputils.book build` with profile **{meta.get('profile')}** on device "
        f"**{meta.get('device')}** (seed {meta.get('seed')}) in {meta.get('seconds', 0):.1f} s; "
        f"parameters: {params}. Checks: {passed}/{len(checks)} passed; {status}.\n```"
    )
    banner = nbformat.v4.new_markdown_cell(text)
    banner.metadata["tags"] = ["ntpbook-run-banner"]
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# "):
        title, _, rest = first.source.lstrip().partition("\n")
        first.source = title
        cells = [first, banner]
        if rest.strip():
            cells.append(nbformat.v4.new_markdown_cell(rest.strip("\n")))
        nb.cells = cells + nb.cells[1:]
    else:
        nb.cells.insert(0, banner)


def is_progress_bar(text: str) -> bool:
    """True for stderr text made only of tqdm progress-bar states or blank lines (log noise).

    A closed tqdm bar leaves a lone newline in its own stderr output; that counts as noise too.
    """
    pieces = [p for p in re.split(r"[\r\n]+", text) if p.strip()]
    return all(PROGRESS_BAR.search(p) for p in pieces)


def drop_progress_bars(nb) -> int:
    """Remove stderr stream outputs that only hold progress bars; return how many were removed."""
    removed = 0
    for cell in nb.cells:
        outputs = cell.get("outputs")
        if not outputs:
            continue
        keep = [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr"
                                           and is_progress_bar(o.get("text", "")))]
        removed += len(outputs) - len(keep)
        cell["outputs"] = keep
    return removed


def install_executed(project: Project, chapter: Chapter, executed_nb: Path, meta: dict[str, Any],
                     link_status: bool) -> Path:
    """Post-process the papermill output and move it atomically to ``book/<chapter>.ipynb``."""
    import nbformat

    nb = nbformat.read(executed_nb, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nb.metadata.pop("widgets", None)  # widget state would make the HTML load JavaScript from a CDN
    drop_progress_bars(nb)  # they stay in the papermill log (.cache/book/logs/<chapter>.log)
    _add_run_banner(nb, meta, link_status)
    nb.metadata[META_KEY] = meta
    target = project.executed(chapter)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    return target


def read_meta(path: Path) -> dict[str, Any]:
    """The ``ntpbook`` metadata of an executed notebook (``{}`` if absent or unreadable)."""
    try:
        with path.open() as f:
            return json.load(f).get("metadata", {}).get(META_KEY, {})
    except (OSError, ValueError):
        return {}


def stop_worker(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGINT the worker (papermill then shuts its kernel down), SIGKILL its group if it lingers."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def run_chapter(project: Project, chapter: Chapter, parameters: dict[str, Any], resolved: dict[str, Any],
                key: str, *, timeout: float | None = None, threads: int | None = None,
                link_status: bool = True) -> RunResult:
    """Execute ``chapter`` with papermill ``parameters`` and install or discard the result."""
    p = _paths(project, chapter)
    for path in p.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    for name in ("output", "result", "record", "failed_nb", "failed_json"):
        p[name].unlink(missing_ok=True)
    spec = {"source": str(chapter.source), "input": str(p["input"]), "output": str(p["output"]),
            "result": str(p["result"]), "parameters": parameters, "cwd": str(project.root)}
    p["spec"].write_text(json.dumps(spec, indent=1))

    start = time.time()
    timed_out = False
    with p["log"].open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "ntputils.book.worker", str(p["spec"])],
                                stdout=log, stderr=subprocess.STDOUT, cwd=project.root,
                                env=worker_env(project, p["record"], threads), start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_worker(proc)
        except BaseException:  # Ctrl-C: the worker runs in its own session and would survive us
            stop_worker(proc)
            raise
    seconds = round(time.time() - start, 2)

    result = _load_json(p["result"])
    record = _load_json(p["record"])
    meta = {
        "key": key, "chapter": chapter.name, "status": "ok", "parameters": parameters, "resolved": resolved,
        "profile": record.get("profile", resolved.get("profile")),
        "seed": record.get("seed", resolved.get("seed")),
        "device": record.get("device", "unknown (setup_chapter not called)"),
        "checks": record.get("checks", []), "comparisons": record.get("comparisons", []),
        "results": record.get("results", {}), "seconds": seconds,
        "executed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": package_versions(), "git": git_commit(project.root),
    }
    if record.get("params"):
        meta["resolved"] = {"profile": meta["profile"], "seed": meta["seed"], "device": meta["device"],
                            **record["params"]}

    if not timed_out and result.get("status") == "ok" and p["output"].exists():
        install_executed(project, chapter, p["output"], meta, link_status)
        return RunResult(chapter, "ok", seconds, log=p["log"], meta=meta)

    # failure: never leave a notebook that looks current
    project.executed(chapter).unlink(missing_ok=True)
    if timed_out:
        error, tb = f"TimeoutError: chapter did not finish within {timeout:.0f} s", ""
    elif result:
        error, tb = f"{result.get('ename')}: {result.get('evalue')}", result.get("traceback", "")
    else:
        error = f"worker exited with code {proc.returncode} without a result"
        tb = "\n".join(p["log"].read_text(errors="replace").splitlines()[-40:])
    meta.update(status="failed", error=error, traceback=tb, cell=result.get("cell"))
    if p["output"].exists():
        p["output"].replace(p["failed_nb"])
    p["failed_json"].write_text(json.dumps(meta, indent=1, default=str))
    return RunResult(chapter, "failed", seconds, error=error, traceback=tb, log=p["log"], meta=meta)
