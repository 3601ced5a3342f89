"""One chapter run by papermill with given parameters into a folder of its own: ``NAME.ipynb``, a standalone
``NAME.html`` and ``NAME.log`` (what papermill and the kernel print). The door of ``sweep-report`` (the sweeps
page on one scratch sweep) and of ``geometry`` (chapter d01 on a reader's model and corpus)."""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from ntputils.book.execute import ANSI, HIDDEN, run_papermill, worker_env, write_currency
from ntputils.book.project import Chapter, Project
from ntputils.committed import CURRENCY_ENV

STYLE = ("body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;line-height:1.45}"
         "pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap}img{max-width:100%}"
         "pre.error{background:#fde8e8}table{border-collapse:collapse}td{padding:0 .6em}")


def run_page(project: Project, chapter: Chapter, parameters: dict[str, Any], out: Path, name: str, title: str,
             retitle: Callable[[Any], None] | None = None) -> int:
    """Run ``chapter`` with ``parameters`` into ``out`` (made if missing); exit code 0, or 1 when the page
    failed (its error and the log's path printed). ``retitle`` may edit the executed notebook before the
    HTML is written."""
    out.mkdir(parents=True, exist_ok=True)
    executed, page, log = out / f"{name}.ipynb", out / f"{name}.html", out / f"{name}.log"
    work = Path(tempfile.mkdtemp(prefix=f"page-{name}-"))
    try:
        spec = {"source": str(chapter.source), "input": str(work / "input.ipynb"), "output": str(executed),
                "parameters": parameters, "cwd": str(project.root)}
        write_currency(project, work / "currency.json")
        env = worker_env(project, work / "record.json", None) | {CURRENCY_ENV: str(work / "currency.json")}
        result = run_papermill(spec, env=env, log=log, work=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result.get("status") != "ok":
        print(f"error: {title} failed: {result.get('ename', 'no result')}: {result.get('evalue', '')}\n"
              f"{result.get('traceback', '')}\n(log: {log})")
        return 1
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    if retitle is not None:
        retitle(nb)
        nbformat.write(nb, executed)
    page.write_text(notebook_html(nb, title))
    print(f"wrote {executed} and {page} (log: {log})")
    return 0


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
