"""One execution path (issue #48): every chapter run of the book, a build's chapter, a sweep point and a
page report (``sweep-report``, ``geometry``), goes through :func:`ntputils.book.execute.run_papermill`,
which starts papermill as a supervised child. Nothing in ``ntputils`` calls papermill's API in the calling
process, and nothing swaps the process's environment or file descriptors around a run (the ways the second
path worked).
The GPU machine's in-process executor (:mod:`ntputils.gpu.device_run`) is the one exception: its image has
no papermill."""

from __future__ import annotations

import ast
from pathlib import Path

import ntputils

PACKAGE = Path(ntputils.__file__).resolve().parent


def _calls(tree: ast.AST) -> set[str]:
    """Dotted names called or imported in ``tree`` (``papermill.execute_notebook``, ``os.dup2``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name):
            names.add(f"{node.func.value.id}.{node.func.attr}")
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_no_chapter_runs_in_process_outside_the_gpu_executor():
    forbidden = {"papermill", "papermill.execute_notebook", "nbclient.NotebookClient", "os.dup2"}
    hits = {str(p.relative_to(PACKAGE)): sorted(_calls(ast.parse(p.read_text())) & forbidden)
            for p in PACKAGE.rglob("*.py") if p.name != "device_run.py"}
    assert {k: v for k, v in hits.items() if v} == {}


def test_sweep_points_and_page_reports_use_the_builds_executor():
    from ntputils.book import execute, page_report
    from ntputils.sweeps import sweep

    for module in (sweep, page_report):
        calls = _calls(ast.parse(Path(module.__file__).read_text()))
        assert "ntputils.book.execute.run_papermill" in calls, module.__name__
    assert sweep.run_papermill is execute.run_papermill is page_report.run_papermill
