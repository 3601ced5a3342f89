"""Cache keys and fingerprints, made from what a run executed (:mod:`ntputils.tracing`).

The runner (``ntputils/book/``), sweeps (``ntputils/sweeps/``), the GPU path (``ntputils/gpu/``), the
command line (``ntputils/cli.py``) and the reader of committed tables (``ntputils/committed.py``) are never
part of a key or fingerprint.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ntputils.paths import data_digest
from ntputils.tracing import Package, TraceSources, normalized_code

EXCLUDED_SUBPACKAGES = ("book", "sweeps", "gpu")
EXCLUDED_MODULES = ("committed.py", "cli.py")  # committed tables shown, the command line: no result


def dependency_pins(pyproject: Path) -> list[str]:
    """The ``[project] dependencies`` of ``pyproject.toml`` (sorted), or ``[]`` if there is none."""
    if not pyproject.exists():
        return []
    data = tomllib.loads(pyproject.read_text())
    return sorted(data.get("project", {}).get("dependencies", []))


@functools.lru_cache(maxsize=256)
def source_digest(source_text: str) -> str:
    """sha256 of a chapter's cells as jupytext reads them (type, source, metadata), which is what a run
    executes and its page renders. The notebook header is left out: saving a chapter in Jupyter Lab
    without an edit rewrites it (jupytext adds ``format_version`` and ``jupytext_version``, Lab the
    kernel's ``display_name``), and the runner sets the kernel itself. A source jupytext cannot read:
    its text."""
    import jupytext

    try:
        nb = jupytext.reads(source_text, fmt="py:percent")
    except Exception:  # noqa: BLE001 - an unreadable source still has a key; its run fails
        return hashlib.sha256(source_text.encode()).hexdigest()
    cells = [{"cell_type": c.cell_type, "source": c.source, "metadata": c.metadata} for c in nb.cells]
    return hashlib.sha256(json.dumps(cells, sort_keys=True, default=repr).encode()).hexdigest()


def chapter_key(source_text: str, resolved: dict[str, Any], pins: list[str]) -> str:
    """A build's key before the run: the chapter's cells (:func:`source_digest`), resolved parameters, pins
    and Python minor version (:func:`run_key` adds what the run executed)."""
    return _key({"cells": source_digest(source_text)}, resolved, pins)


def legacy_chapter_key(source_text: str, resolved: dict[str, Any], pins: list[str]) -> str:
    """The key of a run recorded before :func:`chapter_key` read the cells (issue #49): the sha256 of the
    whole source text. Such a run stays current until its chapter's text changes."""
    return _key({"source": hashlib.sha256(source_text.encode()).hexdigest()}, resolved, pins)


def _key(source: dict[str, str], resolved: dict[str, Any], pins: list[str]) -> str:
    payload = {
        **source,
        "parameters": resolved,
        "pins": pins,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()


#: modules that read the shared data root: a run that imported one has the data's digest in its trace digest
DATA_READERS = frozenset({"data/corpora/readers.py", "data/corpora/wordnet.py",
                          "data/corpora/gpt2_tokenizer.py", "data/mnist.py"})

#: the format of :func:`trace_digest` (a point's stored trace digest of another format is never current)
TRACE_VERSION = 2
#: a table fingerprint's format (:func:`code_fingerprint`): 3 leaves out the Python version, which 2 held,
#: so a table made under another Python (the GPU machine's 3.12) is current when its code is unchanged;
#: the interpreter is recorded in the table's provenance instead. Versions 2 and 3 are both read.
FINGERPRINT_VERSION = 3
READ_VERSIONS = (2, 3)


def is_runner(entry: str) -> bool:
    """Whether a trace entry is of the runner (``book/``, ``sweeps/``, ``gpu/``, ``cli.py``) or the reader of
    committed tables (``committed.py``), which no fingerprint includes."""
    return entry.split("/", 1)[0] in EXCLUDED_SUBPACKAGES or entry.split(":", 1)[0] in EXCLUDED_MODULES


def trace_digest(trace: dict[str, list[str]], package: Package | None = None, data: str | None = None) -> str:
    """sha256 of the normalized code of every traced function and module skeleton (``package``: default
    the installed ``ntputils``), plus the data's digest when a data reader ran; runner entries excluded.
    ``data``: that digest as given (the GPU machine carries only the files its points read, checked
    against the digests of a full data root: :mod:`ntputils.gpu.bundle`), default the data root's."""
    sources = TraceSources(package)
    h = hashlib.sha256(f"v{TRACE_VERSION}".encode())
    for rel in sorted({m for m in trace.get("modules", []) if not is_runner(m)}):
        h.update(b"M\0" + rel.encode() + b"\0" + sources.module_code(rel).encode() + b"\0")
    for item in sorted({f for f in trace.get("functions", []) if not is_runner(f)}):
        h.update(b"F\0" + item.encode() + b"\0" + sources.function_code(item).encode() + b"\0")
    if DATA_READERS & set(trace.get("modules", [])):
        h.update(b"D\0" + (data or data_digest()).encode())
    return h.hexdigest()


def chapter_code_digest(cells: list[str]) -> str:
    """sha256 of a chapter's normalized code cells (one that does not parse: its text without comments)."""
    h = hashlib.sha256()
    for cell in cells:
        try:
            text = normalized_code(ast.parse(cell))
        except SyntaxError:
            text = "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith("#"))
        h.update(text.encode() + b"\0")
    return h.hexdigest()


def chapter_code_of(nb) -> str:
    """:func:`~ntputils.book.fingerprint.chapter_code_digest` of a chapter notebook's code cells."""
    return chapter_code_digest([c.source for c in nb.cells if c.cell_type == "code"])


def merge_traces(traces: Iterable[dict[str, list[str]] | None]) -> dict[str, list[str]]:
    """The union of several runs' traces (a sweep's points)."""
    functions: set[str] = set()
    modules: set[str] = set()
    for t in traces:
        functions.update((t or {}).get("functions", []))
        modules.update((t or {}).get("modules", []))
    return {"functions": sorted(functions), "modules": sorted(modules)}


def code_fingerprint(chapter_code: str, trace: dict[str, list[str]], pins: list[str],
                     package: Package | None = None, version: int = FINGERPRINT_VERSION) -> str:
    """The fingerprint of a run's code: the chapter's code digest, :func:`trace_digest` and the pins (format
    ``version``; format 2 also held the Python minor version)."""
    payload = {"version": version, "chapter": chapter_code, "ntputils": trace_digest(trace, package),
               "pins": pins}
    if version == 2:
        payload["python"] = f"{sys.version_info.major}.{sys.version_info.minor}"
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def run_key(static_key: str, trace: dict[str, list[str]] | None, package: Package | None = None) -> str:
    """A build's cache key: :func:`chapter_key` combined with :func:`trace_digest` (``untraced:`` without a
    trace)."""
    if not trace:
        return f"untraced:{static_key}"
    return hashlib.sha256(f"{static_key}\0{trace_digest(trace, package)}".encode()).hexdigest()
