"""``sweep-report NAME [--out DIR]``: the book's sweeps page (chapter :data:`PAGE`) run by papermill on one
scratch sweep, written to ``DIR`` (default ``sweeps/NAME/report/``) as ``NAME.ipynb`` and ``NAME.html``,
titled as a scratch sweep (not the book's committed sweeps); what papermill and the kernel print (e.g.
ipykernel's "Kernel is running over TCP without encryption") goes to ``NAME.log`` there."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ntputils.book.page_report import run_page
from ntputils.book.project import Project, ProjectError, os_problem
from ntputils.sweeps.store import sweep_dir, sweep_plan
from ntputils.sweeps.table import write_table

PAGE = "c03"


def report_command(project: Project, name: str, out: Path | None = None) -> int:
    """Run the page on sweep ``name``, writing ``NAME.ipynb`` and ``NAME.html`` into ``out``; exit code 0,
    1 (the page failed) or 2 (no such sweep or page)."""
    out = (out or sweep_dir(project, name) / "report").resolve()
    try:
        sweep_plan(project, name)
        (chapter,) = project.select([PAGE])
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {out} is a file, not a folder: give a folder (made if missing)")
        if (sweep_dir(project, name) / "points").is_dir():  # else (or read-only) the table it has
            with contextlib.suppress(OSError):
                write_table(project, name)
        out.mkdir(parents=True, exist_ok=True)
    except (FileNotFoundError, ProjectError, ValueError) as err:  # a bad name or a garbled plan: ValueError
        print(f"error: {err}")  # (SweepTableError, a damaged result, is a ValueError)
        return 2
    except OSError as err:  # --out under a file, or in a folder that cannot be written
        print(f"error: --out: {os_problem(err)}")
        return 2
    return run_page(project, chapter, {"names": [name], "scratch": True}, out, name, f"scratch sweep {name}",
                    retitle=lambda nb: scratch_title(nb, name))


def scratch_title(nb, name: str) -> None:
    """Title the report as the scratch sweep it draws: the page's title and its opening paragraph are of the
    book's committed sweeps; the list of what is drawn for each table stays."""
    first = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")),
                 None)
    if first is None:
        return
    lines = first.source.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("* ")), len(lines))
    end = start
    while end < len(lines) and (lines[end].startswith(("* ", "  ")) or (
            not lines[end].strip() and end + 1 < len(lines) and lines[end + 1].startswith("* "))):
        end += 1
    first.source = "\n".join([
        f"# Scratch sweep `{name}`, drawn", "",
        f"A **scratch sweep** (`sweeps/{name}/`): not committed and not part of the book; "
        f"`python -m ntputils.book sweep-table {name} --publish` commits it. It is drawn by the code of the "
        f"book's page of committed sweeps (chapter {PAGE}). For the sweep:" + ("" if start < end else "."),
        "", *lines[start:end]]).rstrip() + "\n"
