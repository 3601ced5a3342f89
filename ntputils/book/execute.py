"""Execute one chapter: jupytext -> ipynb (two hidden trace cells) -> ``python -m papermill`` as a child.

:func:`run_papermill` is the one executor of the book: the build's chapters, each sweep point (in its Dask
worker) and the page reports (``sweep-report``, ``geometry``) all run through it. A good build run becomes
``book/<chapter>.ipynb`` with its provenance; a failed one keeps the last good notebook under a "latest run
failed" banner. Interrupts and ``--timeout`` SIGKILL papermill and what its run started.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ntputils.book.environment import git_commit, package_versions
from ntputils.book.fingerprint import run_key
from ntputils.book.locks import ChapterBusy, chapter_locks, pid_alive
from ntputils.book.project import (
    Chapter,
    Project,
    read_json,
    write_json_atomic,
    write_text_atomic,
)
from ntputils.chapter import RECORD_ENV, unjudged_claims
from ntputils.committed import CURRENCY_ENV, ROOT_ENV, tables_path
from ntputils.reports.status import overrides_text
from ntputils.tracing import TRACE_ENV

META_KEY = "ntpbook"
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
FAILED_BANNER_TAG = "ntpbook-failed-banner"
RUN_BANNER_TAG = "ntpbook-run-banner"
KERNEL_NAME = "python3"
START_TIMEOUT_S = 180  # a kernel's start on a loaded machine
_ACTIVE: dict[int, tuple[subprocess.Popen, Path]] = {}
_ACTIVE_LOCK = threading.Lock()
INTERRUPTED = threading.Event()
PROGRESS_BAR = re.compile(r"\d+%\||\d+it \[")  # tqdm: " 42%|####   | 42/100 [...]" or "17it [00:01, ...]"
# tqdm.auto warns in every kernel without ipywidgets (which we do not want: widgets need a CDN)
KERNEL_WARNING_FILTERS = ("ignore:IProgress not found",)


@dataclass
class RunResult:
    """Outcome of one chapter in one build: ``status`` ``ok``, ``failed``, ``cached`` or ``interrupted``."""

    chapter: Chapter
    status: str
    seconds: float = 0.0
    error: str = ""
    traceback: str = ""
    log: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _paths(project: Project, chapter: Chapter, work: Path) -> dict[str, Path]:
    """Files of one run: scratch files in its folder ``work``, the published log and failure."""
    return {
        "input": work / "in.ipynb",
        "output": work / "out.ipynb",
        "record": work / "record.json",
        "currency": work / "currency.json",
        "run_log": work / "run.log",
        "log": project.cache_dir / "logs" / f"{chapter.name}.log",
        "failed_nb": project.failed_dir() / f"{chapter.name}.ipynb",
        "failed_json": project.failed_dir() / f"{chapter.name}.json",
    }


def processes_of(work: Path) -> list[int]:
    """Live processes of the run in work folder ``work``: their environment points the record file into it."""
    import psutil

    needle = f"{work}{os.sep}"
    return [p.pid for p in psutil.process_iter(["environ"]) if p.pid != os.getpid()
            and (p.info["environ"] or {}).get(RECORD_ENV, "").startswith(needle) and pid_alive(p.pid)]


def kill_groups(pids: list[int]) -> None:
    """SIGKILL the process group of each of ``pids`` (the process alone when that fails)."""
    for pid in pids:
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def reap_stale_runs(project: Project) -> tuple[list[Path], list[int]]:
    """Remove the work folders whose chapter lock no build holds (a dead build's), killing what still runs
    for them; return (folders removed, pids killed)."""
    root = project.cache_dir / "work"
    removed, killed = [], []
    for work in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            with chapter_locks(project, [work.name.rpartition(".")[0]]):
                pids = processes_of(work)
                kill_groups(pids)
                shutil.rmtree(work, ignore_errors=True)
        except ChapterBusy:
            continue
        removed.append(work)
        killed += pids
    return removed, killed


PR_SET_PDEATHSIG = 1
try:
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


def _die_with_parent(parent: int):
    """``preexec_fn`` of papermill: SIGKILL when the build ``parent`` dies (``PR_SET_PDEATHSIG``)."""
    def preexec() -> None:
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return preexec


def worker_env(project: Project, record: Path, threads: int | None) -> dict[str, str]:
    """The kernel's environment: no ``MPLBACKEND`` (it drops figures), the record and trace paths, this
    runner's ``ntputils`` first on ``PYTHONPATH``, optional BLAS thread caps."""
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    env.setdefault("MPLCONFIGDIR", str(project.root / ".mplconfig"))
    env[RECORD_ENV] = str(record)
    env[TRACE_ENV] = str(trace_path(record))
    env[ROOT_ENV] = str(project.root)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), env.get("PYTHONPATH", "")]))
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONWARNINGS"] = ",".join(filter(None, [env.get("PYTHONWARNINGS", ""), *KERNEL_WARNING_FILTERS]))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if threads:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setdefault(var, str(threads))
    return env


def trace_path(record: Path) -> Path:
    """Where the kernel writes what it ran (:mod:`ntputils.tracing`)."""
    return record.with_name("trace.json")


def write_currency(project: Project, path: Path) -> dict[str, Any]:
    """Write (and return) the currency of every committed table to ``path``, the file that a kernel's
    ``CURRENCY_ENV`` names (:mod:`ntputils.committed`)."""
    from ntputils.book.currency import currencies

    handed = currencies(project)
    write_json_atomic(path, handed)
    return handed


def _plain(text: Any, limit: int = 300) -> str:
    """Text safe inside a MyST admonition (one line, no markup, at most ``limit`` characters)."""
    out = " ".join(str(text).split())
    if len(out) > limit:
        out = out[: limit - 3] + "..."
    for ch in ("\\", "`", "*", "_", "$", "{", "}", "[", "]", "<", ">", "|"):
        out = out.replace(ch, "\\" + ch)
    return out


def _params_text(meta: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={v!r}`".replace("\n", " ") for k, v in meta.get("resolved", {}).items()
                     if k not in ("profile", "seed", "device")) or "none"


def _overrides_note(meta: dict[str, Any]) -> str:
    return f" (overrides: {_plain(overrides_text(meta))}; not the book's run)" if overrides_text(meta) else ""


def _insert_under_title(nb, text: str, tag: str) -> None:
    """Insert a markdown cell ``text`` tagged ``tag`` under the chapter title (splitting the title cell)."""
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text, metadata={"tags": [tag]})
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# "):
        title, _, rest = first.source.lstrip().partition("\n")
        first.source = title
        cells = [first, cell]
        if rest.strip():
            cells.append(nbformat.v4.new_markdown_cell(rest.strip("\n")))
        nb.cells = cells + nb.cells[1:]
    else:
        nb.cells.insert(0, cell)


def failure_banner_text(shown: dict[str, Any], failure: dict[str, Any]) -> str:
    """The "latest run failed" admonition of a page that shows an older, good run."""
    return (
        "```{admonition} Latest run failed — showing an older run\n:class: danger\n"
        f"The latest run of this chapter (at {_plain(failure.get('executed_at'))}, git commit "
        f"{_plain(failure.get('git', '-'))}, profile {_plain(failure.get('profile'))}, parameters: "
        f"{_params_text(failure) if failure.get('resolved') else '-'}{_overrides_note(failure)}) **failed**: "
        f"{_plain(failure.get('error'))}. This page shows the run of "
        f"**{_plain(shown.get('executed_at'))}**, git commit **{_plain(shown.get('git', '-'))}**, profile "
        f"**{_plain(shown.get('profile'))}**, parameters: {_params_text(shown)}{_overrides_note(shown)}.\n```"
    )


def _add_run_banner(nb, meta: dict[str, Any], link_status: bool) -> None:
    """Insert a markdown cell under the chapter title saying how the page was produced."""
    params = _params_text(meta)
    checks = meta.get("checks", [])
    passed = sum(1 for c in checks if c.get("passed"))
    status = "see the [status page](status.md)" if link_status else "see the status page"
    # a run with -p overrides is not the book's run: a warning box, not the blue note of a normal run
    head = ("How this page was produced: with overrides, not the book's run\n:class: warning"
            if overrides_text(meta) else "How this page was produced\n:class: note")
    text = (
        f"```{{admonition}} {head}\n"
        f"Executed by `python -m ntputils.book build` with profile **{meta.get('profile')}** on device "
        f"**{meta.get('device')}** (seed {meta.get('seed')}) in {meta.get('seconds', 0):.1f} s; "
        f"parameters: {params}{_overrides_note(meta)}. Checks: {passed}/{len(checks)} passed; {status}. "
        f"Run id: {run_id(meta)}.\n```"
    )
    _insert_under_title(nb, text, RUN_BANNER_TAG)


def evidence_problem(record: dict[str, Any]) -> tuple[str, str] | None:
    """(error name, message) when a run's claims are not each judged exactly once, else ``None``: a claim
    pre-registered and never judged is missing evidence; one judged twice (e.g. in a loop over datasets)
    has two verdicts, of which the scorecard would show the worst and the committed views the last."""
    if unjudged := unjudged_claims(record):
        return "UnjudgedClaims", (f"pre-registered and never judged: {', '.join(unjudged)} (judge each one, "
                                  "claim.judge(...) or compare(key, ...), or remove its registration)")
    outcomes: dict[str, list[str]] = {}
    for row in record.get("comparisons", []):
        outcomes.setdefault(str(row.get("key")), []).append(str(row.get("outcome")))
    if twice := {k: v for k, v in outcomes.items() if len(v) > 1}:
        shown = "; ".join(f"{k} ({', '.join(v)})" for k, v in twice.items())
        return "ClaimJudgedTwice", f"judged more than once: {shown} (one key per case, judged once)"
    return None


def run_id(meta: dict[str, Any]) -> str:
    """A short id of a run shown on its page (the browser check matches page and notebook with it)."""
    stamp = re.sub(r"[^0-9T]", "", str(meta.get("executed_at", "")))
    return f"ntpbook.{str(meta.get('key') or 'nokey')[:12]}.{stamp or 'notime'}"


def is_progress_bar(text: str) -> bool:
    """True for stderr text made only of tqdm progress-bar states or blank lines."""
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
    drop_progress_bars(nb)  # they stay in the papermill log
    _add_run_banner(nb, meta, link_status)
    nb.metadata[META_KEY] = meta
    target = project.executed(chapter)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, nbformat.writes(nb))
    return target


def keep_last_good(project: Project, chapter: Chapter, failure: dict[str, Any]) -> bool:
    """After a failed run: mark the last good ``book/<chapter>.ipynb`` with the failure banner (and
    ``latest_failure``) and return True; a notebook that is not a good run is removed (False)."""
    import nbformat

    target = project.executed(chapter)
    if not target.exists():
        return False
    try:
        nb = nbformat.read(target, as_version=4)
        meta = dict(nb.metadata.get(META_KEY, {}))
    except Exception:  # noqa: BLE001 - any unreadable file is not a result
        meta = {}
    if meta.get("status") != "ok":
        target.unlink(missing_ok=True)
        return False
    nb.cells = [c for c in nb.cells if FAILED_BANNER_TAG not in c.metadata.get("tags", [])]
    fields = ("executed_at", "git", "error", "profile", "parameters", "resolved")
    summary = {k: failure.get(k) for k in fields}
    meta["latest_failure"] = summary
    _insert_under_title(nb, failure_banner_text(meta, summary), FAILED_BANNER_TAG)
    nb.metadata[META_KEY] = meta
    write_text_atomic(target, nbformat.writes(nb))
    return True


def read_meta(path: Path) -> dict[str, Any]:
    """The ``ntpbook`` metadata of an executed notebook (``{}`` if absent or unreadable)."""
    return read_json(path).get("metadata", {}).get(META_KEY, {})


TRACE_START = "import ntputils.tracing as _ntpbook_tracing\n_ntpbook_tracing.start()"
TRACE_FINISH = "_ntpbook_tracing.finish();"
HIDDEN = {"tags": ["remove-cell"]}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # IPython tracebacks are coloured


def add_trace_cells(nb):
    """Add hidden cells that start tracing before the first code cell and finish it after the last."""
    import nbformat

    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first, nbformat.v4.new_code_cell(TRACE_START, metadata=dict(HIDDEN)))
    nb.cells.append(nbformat.v4.new_code_cell(TRACE_FINISH, metadata=dict(HIDDEN)))
    return nb


def write_input(source: Path, target: Path) -> None:
    """papermill's input notebook: the jupytext source with the trace cells and the ``python3`` kernelspec."""
    import jupytext
    import nbformat

    nb = add_trace_cells(jupytext.read(source, fmt="py:percent"))
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, target)


def write_params(parameters: dict[str, Any], target: Path) -> None:
    """papermill's ``-f`` file in YAML (its YAML 1.1 loader reads JSON's ``1e-05`` as a string); tuples
    become lists."""
    import yaml

    target.write_text(yaml.safe_dump(json.loads(json.dumps(parameters))))


def notebook_error(path: Path) -> dict[str, Any]:
    """The error of the cell papermill marked failed in the notebook at ``path`` (``ename``, ``evalue``,
    ``traceback``, ``cell``), or ``{}``."""
    for cell in read_json(path).get("cells", []):
        if not cell.get("metadata", {}).get("papermill", {}).get("exception"):
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return {"ename": out.get("ename"), "evalue": ANSI.sub("", str(out.get("evalue"))),
                        "traceback": ANSI.sub("", "\n".join(out.get("traceback", []))),
                        "cell": cell.get("execution_count")}
    return {}


#: a kernel that dies before its first reply ran no cell (two kernels started at once can race for the
#: same TCP ports): an infrastructure failure, retried, never the chapter's result
KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond")
KERNEL_START_ATTEMPTS = 3


def kill_run(proc: subprocess.Popen, work: Path) -> None:
    """SIGKILL papermill, then every process of its run (:func:`processes_of`)."""
    if proc.poll() is None:  # once reaped, its pid may be another process's
        kill_groups([proc.pid])
    proc.wait()
    kill_groups(processes_of(work))


def interrupt_all() -> int:
    """Ctrl-C: stop every running papermill and its kernel at once; return how many were running."""
    INTERRUPTED.set()
    with _ACTIVE_LOCK:
        runs = list(_ACTIVE.values())
    for proc, work in runs:
        kill_run(proc, work)
    return len(runs)


def run_chapter(project: Project, chapter: Chapter, parameters: dict[str, Any], resolved: dict[str, Any],
                key: str, *, inject: dict[str, Any] | None = None, timeout: float | None = None,
                threads: int | None = None, link_status: bool = True) -> RunResult:
    """Execute ``chapter`` in a work folder of its own, papermill injecting ``inject`` (default
    ``parameters``); install or record the result. The caller holds the chapter's lock."""
    (project.cache_dir / "work").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{chapter.name}.", dir=project.cache_dir / "work"))
    try:
        return _run_in(project, chapter, parameters, resolved, key, work, timeout, threads, link_status,
                       parameters if inject is None else inject)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def papermill_command(notebook: Path, output: Path, params: Path, cwd: Path) -> list[str]:
    """The papermill command line of a run (the kernel runs in ``cwd``; cell outputs go to its log)."""
    return [sys.executable, "-m", "papermill", str(notebook), str(output), "-f", str(params),
            "--cwd", str(cwd), "-k", KERNEL_NAME, "--log-output", "--start-timeout", str(START_TIMEOUT_S)]


def run_papermill(spec: dict[str, Any], *, env: dict[str, str], log: Path, work: Path,
                  timeout: float | None = None) -> dict[str, Any]:
    """Execute a chapter: ``python -m papermill`` as a child process, supervised. The one executor of the
    build, of sweep points (in their Dask workers) and of the page reports.

    ``spec``: ``source`` (the jupytext chapter), ``input`` and ``output`` (notebooks), ``parameters``
    (injected), ``cwd``; ``env``: the kernel's environment (:func:`worker_env`, whose record path lies in
    ``work``: every process of the run is found by it); ``log``: what papermill and the kernel print.

    Why a child and not papermill's API in the calling process: the child's environment is ``env`` without
    touching ``os.environ`` of a threaded process (a Dask worker), its output goes to ``log`` without
    redirecting the caller's file descriptors, a timeout is a bound on ``wait``, and a kill of the caller
    (``PR_SET_PDEATHSIG``), Ctrl-C (:func:`interrupt_all`) or a timeout SIGKILLs papermill with its kernel
    and what that started (:func:`kill_run`).

    Returns ``{"status": "ok"}``, ``{"status": "failed", "ename", "evalue", "traceback"[, "cell"]}``,
    ``{"status": "timeout", ...}`` or ``{"status": "interrupted", ...}``; never raises for the chapter's
    sake. A kernel that fails to start is started again (:data:`KERNEL_START_ATTEMPTS` in all)."""
    notebook, output, params = Path(spec["input"]), Path(spec["output"]), work / "params.yaml"
    try:
        write_input(Path(spec["source"]), notebook)
        write_params(spec["parameters"], params)
    except Exception as err:  # noqa: BLE001 - a source that does not convert is a failed chapter
        log.write_text(tb := traceback.format_exc())
        return {"status": "failed", "ename": type(err).__name__, "evalue": str(err), "traceback": tb}
    cmd = papermill_command(notebook, output, params, Path(spec["cwd"]))
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        output.unlink(missing_ok=True)
        code, timed_out = _supervised(cmd, env, log, work, Path(spec["cwd"]), timeout, append=attempt > 1)
        if code is None or INTERRUPTED.is_set():
            return {"status": "interrupted", "ename": "KeyboardInterrupt", "evalue": "interrupted (Ctrl-C)"}
        if timed_out:
            return {"status": "timeout", "ename": "TimeoutError",
                    "evalue": f"chapter did not finish within {timeout:g} s", "traceback": ""}
        if code == 0 and output.exists():
            return {"status": "ok"}
        if failure := notebook_error(output):
            return {"status": "failed", **failure}
        # no error cell: papermill itself failed (a kernel that died or did not start); its log says why
        tail = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()][-40:]
        if attempt < KERNEL_START_ATTEMPTS and any(m in line for line in tail for m in KERNEL_START_FAILURES):
            continue
        return {"status": "failed", "ename": "PapermillFailed",
                "evalue": f"papermill exited with code {code}" + (f": {tail[-1]}" if tail else ""),
                "traceback": "\n".join(tail)}
    raise AssertionError("unreachable")  # pragma: no cover


def _supervised(cmd: list[str], env: dict[str, str], log: Path, work: Path, cwd: Path, timeout: float | None,
                append: bool) -> tuple[int | None, bool]:
    """Run papermill's ``cmd`` with its output to ``log``; return (exit code, timed out); ``None`` when an
    interrupt came first."""
    timed_out = False
    with log.open("a" if append else "w") as out:
        with _ACTIVE_LOCK:  # interrupt_all sees this run, or it had set INTERRUPTED before
            if INTERRUPTED.is_set():
                return None, False
            # a session of its own: a terminal's Ctrl-C reaches the build only, which stops the run itself
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                    start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))
            _ACTIVE[proc.pid] = (proc, work)
        try:
            proc.wait(timeout=timeout)  # a bound per chapter: papermill's --execution-timeout is per cell
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.pop(proc.pid, None)
            kill_run(proc, work)  # after a normal exit too: what the kernel started may outlive it
    return proc.returncode, timed_out


def _run_in(project: Project, chapter: Chapter, parameters: dict[str, Any], resolved: dict[str, Any],
            key: str, work: Path, timeout: float | None, threads: int | None, link_status: bool,
            inject: dict[str, Any]) -> RunResult:
    p = _paths(project, chapter, work)
    for path in p.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    start, handed = time.time(), {}
    try:
        handed = write_currency(project, p["currency"])
    except Exception as err:  # noqa: BLE001 - a committed table that cannot be read fails the chapter
        p["run_log"].write_text(tb := traceback.format_exc())
        outcome = {"status": "failed", "ename": type(err).__name__, "evalue": str(err), "traceback": tb}
    else:
        env = worker_env(project, p["record"], threads) | {CURRENCY_ENV: str(p["currency"])}
        outcome = run_papermill({"source": str(chapter.source), "input": str(p["input"]),
                                 "output": str(p["output"]), "parameters": inject, "cwd": str(project.root)},
                                env=env, log=p["run_log"], work=work, timeout=timeout)
    seconds = round(time.time() - start, 2)
    if outcome["status"] == "interrupted" or INTERRUPTED.is_set():
        return RunResult(chapter, "interrupted", seconds, error="interrupted (Ctrl-C)")
    shutil.copyfile(p["run_log"], p["log"])

    record = read_json(p["record"])
    trace = read_json(trace_path(p["record"])) or None
    tables = read_json(tables_path(p["record"]))
    meta = {
        "key": key, "trace": trace, "trace_key": run_key(key, trace),
        "tables": tables,  # committed tables read: name -> digest then, and whether each was stale then
        "currency": {name: (handed.get(name) or {}).get("stale") for name in tables},
        "chapter": chapter.name, "status": "ok", "parameters": parameters, "resolved": resolved,
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

    problem = evidence_problem(record)
    if outcome["status"] == "ok" and not problem:
        install_executed(project, chapter, p["output"], meta, link_status)
        p["failed_json"].unlink(missing_ok=True)
        p["failed_nb"].unlink(missing_ok=True)
        return RunResult(chapter, "ok", seconds, log=p["log"], meta=meta)

    failure = outcome if outcome["status"] != "ok" else {"ename": problem[0], "evalue": problem[1]}
    error, tb = f"{failure['ename']}: {failure['evalue']}", failure.get("traceback", "")
    meta.update(status="failed", error=error, traceback=tb, cell=failure.get("cell"))
    return record_failure(project, chapter, meta, p["output"], log=p["log"])


def record_failure(project: Project, chapter: Chapter, meta: dict[str, Any], failed_nb: Path | None = None,
                   log: Path | None = None) -> RunResult:
    """Keep the failure (``.cache/book/failed/<chapter>.{json,ipynb}``) and the last good notebook."""
    meta.setdefault("executed_at", datetime.now(UTC).isoformat(timespec="seconds"))
    meta.setdefault("git", git_commit(project.root))
    meta.setdefault("seconds", 0.0)
    failed_dir = project.failed_dir()
    failed_dir.mkdir(parents=True, exist_ok=True)
    if failed_nb is not None and failed_nb.exists():
        os.replace(failed_nb, failed_dir / f"{chapter.name}.ipynb")
    meta["kept_last_good"] = keep_last_good(project, chapter, meta)
    write_json_atomic(failed_dir / f"{chapter.name}.json", meta)
    return RunResult(chapter, "failed", float(meta.get("seconds", 0.0)), error=meta.get("error", ""),
                     traceback=meta.get("traceback", ""), log=log, meta=meta)
