"""``sweep-report NAME [--out DIR]``: the book's sweeps page (chapter :data:`PAGE`) run by papermill on one
scratch sweep, written to ``DIR`` (default ``sweeps/NAME/report/``) as ``NAME.ipynb`` and ``NAME.html``,
titled as a scratch sweep (not the book's committed sweeps); what papermill and the kernel print (e.g.
ipykernel's "Kernel is running over TCP without encryption") goes to ``NAME.log`` there."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from html import escape
from pathlib import Path

from ntputils.book.execute import ANSI, HIDDEN, environment, run_papermill, worker_env, write_currency
from ntputils.book.project import Project, ProjectError, os_problem
from ntputils.book.sweep_store import sweep_dir, sweep_plan
from ntputils.book.sweep_table import write_table
from ntputils.committed import CURRENCY_ENV

PAGE = "c03"
STYLE = ("body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;line-height:1.45}"
         "pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap}img{max-width:100%}"
         "pre.error{background:#fde8e8}table{border-collapse:collapse}td{padding:0 .6em}")


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
    executed, page, log = out / f"{name}.ipynb", out / f"{name}.html", out / f"{name}.log"
    work = Path(tempfile.mkdtemp(prefix=f"sweep-report-{name}-"))
    try:
        spec = {"source": str(chapter.source), "input": str(work / "input.ipynb"), "output": str(executed),
                "parameters": {"names": [name], "scratch": True}, "cwd": str(project.root)}
        env = worker_env(project, work / "record.json", None)
        write_currency(project, work / "currency.json")
        env[CURRENCY_ENV] = str(work / "currency.json")
        with environment(env), output_to(log):
            result = run_papermill(spec)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result.get("status") != "ok":
        print(f"error: the sweeps page failed on {name}: {result.get('ename', 'no result')}: "
              f"{result.get('evalue', '')}\n{result.get('traceback', '')}\n(log: {log})")
        return 1
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    scratch_title(nb, name)
    nbformat.write(nb, executed)
    page.write_text(notebook_html(nb, f"scratch sweep {name}"))
    print(f"wrote {executed} and {page} (log: {log})")
    return 0


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """This process's file descriptors 1 and 2 write to ``log`` inside the block, and so do the processes
    it starts (papermill's kernel: ipykernel's warnings); the console gets the report's own lines only."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with log.open("ab") as f:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            try:
                yield
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(OSError, ValueError):
                        stream.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


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


def notebook_html(nb, title: str) -> str:
    """A standalone HTML page of an executed notebook's markdown and outputs (no code, no hidden cells)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    parts = []
    for cell in nb.cells:
        if set(HIDDEN["tags"]) & set(cell.metadata.get("tags", [])):
            continue
        if cell.cell_type == "markdown":
            parts.append(md.render(cell.source))
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if output.output_type == "stream":
                parts.append(f"<pre>{escape(output.text)}</pre>")
            elif output.output_type == "error":
                trace = ANSI.sub("", "\n".join(output.traceback))
                parts.append(f'<pre class="error">{escape(trace)}</pre>')
            elif "image/png" in data:
                png = data["image/png"]
                png = png if isinstance(png, str) else base64.b64encode(png).decode()
                parts.append(f'<p><img src="data:image/png;base64,{png.strip()}"></p>')
            elif "text/html" in data:
                parts.append(data["text/html"])
            elif "text/markdown" in data:
                parts.append(md.render(data["text/markdown"]))
            elif "text/plain" in data:
                parts.append(f"<pre>{escape(data['text/plain'])}</pre>")
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
