"""What the run-time trace costs: chapters executed by papermill with and without ``ntputils.tracing``.

Each chapter runs at its cpu profile through the runner's own notebook (the two hidden trace cells
included) twice in a row, once with ``NTPBOOK_TRACE`` set (the hook on) and once without (the cells run,
the hook stays off), in alternating order so that a change of load hits both; one BLAS/torch thread.
Writes ``benchmarks/results/trace_overhead.json``; the Performance page shows the ratios.

    python -m benchmarks.trace_overhead [--chapters a05 b05 c01]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine_info, write_json

DEFAULT_CHAPTERS = ("a05", "b05", "c01")


def run_once(source: Path, traced: bool, root: Path) -> dict:
    """Execute one chapter (cpu profile) the way a sweep point does, in a fresh kernel, with the
    hook on or off; its wall and summed cell seconds."""
    import nbformat

    from ntputils.book.execute import run_papermill, trace_path, worker_env
    from ntputils.book.project import Project
    from ntputils.tracing import TRACE_ENV

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = worker_env(Project(root), work / "record.json", threads=1)
        if not traced:
            env.pop(TRACE_ENV, None)
        t0 = time.perf_counter()
        result = run_papermill({"source": str(source), "input": str(work / "in.ipynb"),
                                "output": str(work / "out.ipynb"), "parameters": {"profile": "cpu"},
                                "cwd": str(root)}, env=env, log=work / "run.log", work=work)
        wall = time.perf_counter() - t0
        if result["status"] != "ok":
            raise RuntimeError(f"{source.name} failed: {result.get('ename')}: {result.get('evalue')}")
        out = nbformat.read(work / "out.ipynb", as_version=4)
        cells = sum(float(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0)
                    for c in out.cells)
        trace_file = trace_path(work / "record.json")
        trace = json.loads(trace_file.read_text()) if trace_file.exists() else None
    return {"traced": traced, "wall_s": round(wall, 2), "cells_s": round(cells, 2),
            "functions": len(trace["functions"]) if trace else None}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chapters", nargs="+", default=list(DEFAULT_CHAPTERS))
    args = ap.parse_args(argv)
    from ntputils.book.project import Project

    project = Project.default()
    rows = []
    for i, short in enumerate(args.chapters):
        (chapter,) = project.select([short])
        order = (True, False) if i % 2 == 0 else (False, True)
        runs = {r["traced"]: r for r in (run_once(chapter.source, t, project.root) for t in order)}
        row = {"chapter": chapter.name, "cells_traced_s": runs[True]["cells_s"],
               "cells_untraced_s": runs[False]["cells_s"], "wall_traced_s": runs[True]["wall_s"],
               "wall_untraced_s": runs[False]["wall_s"], "functions_traced": runs[True]["functions"],
               "ratio_cells": round(runs[True]["cells_s"] / max(runs[False]["cells_s"], 1e-9), 3)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    write_json("trace_overhead.json", {"machine": machine_info(), "rows": rows})


if __name__ == "__main__":
    main()
