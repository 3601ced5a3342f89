"""Worker process: ``python -m ntputils.book.worker SPEC.json`` runs one chapter through papermill.

It reads the spec written by :func:`ntputils.book.execute.run_chapter`, converts the jupytext source to
an ipynb, executes it with papermill (parameters injected, cwd = project root) and writes a result
JSON: ``{"status": "ok"}`` or ``{"status": "failed", "ename", "evalue", "traceback", "cell"}``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

KERNEL_NAME = "python3"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (IPython tracebacks are coloured)."""
    return ANSI.sub("", text)


TRACE_START = "import ntputils.tracing as _ntpbook_tracing\n_ntpbook_tracing.start()"
TRACE_FINISH = "_ntpbook_tracing.finish();"
HIDDEN = {"tags": ["remove-cell"]}


def add_trace_cells(nb):
    """The chapter with two hidden cells: :func:`ntputils.tracing.start` before its first code cell and
    :func:`ntputils.tracing.finish` after its last (what ran of ``ntputils`` keys its results)."""
    import nbformat

    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first, nbformat.v4.new_code_cell(TRACE_START, metadata=dict(HIDDEN)))
    nb.cells.append(nbformat.v4.new_code_cell(TRACE_FINISH, metadata=dict(HIDDEN)))
    return nb


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Execute the chapter described by ``spec``; return the result dict (never raises)."""
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        nb = add_trace_cells(jupytext.read(spec["source"], fmt="py:percent"))
        nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, spec["input"])
        papermill.execute_notebook(
            spec["input"], spec["output"], parameters=spec["parameters"], kernel_name=KERNEL_NAME,
            language="python", cwd=spec["cwd"], progress_bar=False, log_output=True, start_timeout=180,
        )
        return {"status": "ok"}
    except PapermillExecutionError as err:
        return {"status": "failed", "ename": err.ename, "evalue": strip_ansi(str(err.evalue)),
                "traceback": strip_ansi("\n".join(err.traceback)), "cell": err.exec_count}
    except Exception as err:  # noqa: BLE001 - any failure is reported as a failed chapter
        return {"status": "failed", "ename": type(err).__name__, "evalue": str(err),
                "traceback": traceback.format_exc()}


def _stop_and_exit(signum, _frame) -> None:
    """SIGTERM (the build died: the parent-death signal) or SIGHUP: kill the kernel's process group and
    every other descendant, then exit; nothing of this run outlives the build."""
    own = os.getpgid(0)
    from ntputils.book.execute import descendants

    for pid in descendants(os.getpid()):
        try:
            group = os.getpgid(pid)
            if group != own:
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
    os._exit(128 + signum)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop_and_exit)
    # the kernel polls this pid and exits when it is gone (ipykernel's parent poller): no orphan kernel
    # even when this worker is killed with SIGKILL
    os.environ["JPY_PARENT_PID"] = str(os.getpid())
    spec = json.loads(Path(argv[0]).read_text())
    result = run(spec)
    Path(spec["result"]).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
