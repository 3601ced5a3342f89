"""Cache keys: a chapter is re-executed only when its key changes (no file modification times).

key = sha256 of (chapter source text, resolved parameters, the sources of exactly the ``ntputils``
modules the chapter imports -- transitively, lazy imports inside functions and the parent packages'
``__init__.py`` included, see :mod:`ntputils.book.imports` --, the pinned dependency versions of
``pyproject.toml``, the Python minor version). Editing a module re-executes only the chapters that
import it.

The runner's own package ``ntputils/book/`` is never part of a key: it never runs inside a chapter's
kernel, and editing the status-page generator must not re-execute 45 minutes of chapters.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ntputils.book.imports import EXCLUDED_SUBPACKAGES, PACKAGE_DIR, PackageTree
from ntputils.paths import data_digest

__all__ = ["EXCLUDED_SUBPACKAGES", "PACKAGE_DIR", "PackageTree", "chapter_key", "chapter_modules",
           "dependency_pins", "ntputils_digest"]


def chapter_modules(source_text: str, tree: PackageTree | None = None) -> list[str]:
    """The files (relative to the package folder) of the ``ntputils`` modules a chapter imports,
    transitively."""
    return (tree or PackageTree.from_dir(PACKAGE_DIR)).closure(source_text)


def ntputils_digest(source_text: str, tree: PackageTree | None = None) -> str:
    """sha256 over the relative paths and contents of the modules :func:`chapter_modules` lists."""
    tree = tree or PackageTree.from_dir(PACKAGE_DIR)
    return tree.digest(tree.closure(source_text))


def dependency_pins(pyproject: Path) -> list[str]:
    """The ``[project] dependencies`` of ``pyproject.toml`` (sorted), or ``[]`` if there is none."""
    if not pyproject.exists():
        return []
    data = tomllib.loads(pyproject.read_text())
    return sorted(data.get("project", {}).get("dependencies", []))


def chapter_key(source_text: str, resolved: dict[str, Any], package_digest: str, pins: list[str]) -> str:
    """The static part of a chapter's cache key (``package_digest``: what else the key covers; the build
    passes the digest of the data and committed tables it reads, :class:`ntputils.book.cli.KeyCalculator`,
    and combines the key with the run's trace in :func:`run_key`)."""
    payload = {
        "source": hashlib.sha256(source_text.encode()).hexdigest(),
        "parameters": resolved,
        "ntputils": package_digest,
        "pins": pins,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()


#: modules that read files of the shared data root (corpora, WordNet, the GPT-2 tokenizer, MNIST): a
#: chapter importing any of them (transitively) has the content digest of the data in its keys
DATA_READERS = frozenset({"data/corpora/readers.py", "data/corpora/wordnet.py",
                          "data/corpora/gpt2_tokenizer.py", "data/mnist.py"})


def chapter_data_digest(source_text: str, tree: PackageTree) -> str | None:
    """:func:`ntputils.paths.data_digest` when the chapter ``source_text`` imports a module of
    :data:`DATA_READERS` (transitively), else ``None``: the data part of a chapter's build key and of a
    sweep's point identity, so editing a data file re-executes what reads it."""
    return data_digest() if DATA_READERS & set(tree.closure(source_text)) else None


def published_results_digest(source_text: str, root: Path, prefix: str | None = None) -> str | None:
    """sha256 over the committed result tables a chapter renders, or ``None`` when it renders none (it
    calls neither ``published`` nor ``show_paper_profile``): a newly
    published table re-executes the chapters that render it, so no page shows an old table as current.

    The tables read are the folders ``<root>/results/sweeps/<name>/`` whose ``name`` is a string literal
    of the chapter source, plus ``<prefix>-paper`` for a chapter that shows its paper-profile run
    (``prefix``: ``a05``). When none is found that way (a name computed at run time), every table under
    ``<root>/results/`` counts, so a change can only re-execute too much, never too little."""
    uses_sweeps = "published(" in source_text
    uses_paper = "show_paper_profile(" in source_text
    if not (uses_sweeps or uses_paper):
        return None
    base = root / "results"
    folders = [d for d in sorted((base / "sweeps").glob("*")) if d.is_dir()
               and (f'"{d.name}"' in source_text or f"'{d.name}'" in source_text)]
    if uses_sweeps and not folders:  # a name computed at run time: every table counts
        folders = [base]
    if uses_paper and prefix is not None:
        folders.append(base / "sweeps" / f"{prefix}-paper")
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []:
            rel = path.relative_to(base).as_posix().encode()
            h.update(rel + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# the fingerprint of what ran (run-time trace, :mod:`ntputils.tracing`)
# ----------------------------------------------------------------------------------------------
#: a trace fingerprint's format; a stored fingerprint of another version is never current
FINGERPRINT_VERSION = 2
_SKIPPED_ASSIGNMENTS = frozenset({"__all__", "_LAZY"})


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if (isinstance(sub, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            sub.body = body[1:] or [ast.Pass()]
    return node


def normalized_code(node: ast.AST) -> str:
    """``ast.dump`` without positions, comments or docstrings: what a formatter, a comment or a
    docstring edit cannot change."""
    return ast.dump(_strip_docstrings(node), include_attributes=False)


def _is_definition(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return (isinstance(stmt, (ast.Assign, ast.AnnAssign))
            and all(isinstance(t, ast.Name) and t.id in _SKIPPED_ASSIGNMENTS for t in targets))


def skeleton(body: list[ast.stmt]) -> str:
    """The statements of a module or class body that run when it is executed, without the bodies of
    its functions and classes (those count when called), imports, ``__all__`` and ``_LAZY``: a new
    function or an edit of an uncalled one leaves it unchanged, a changed constant does not."""
    kept = [s for s in body if not _is_definition(s)]
    return normalized_code(ast.Module(body=kept, type_ignores=[]))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class TraceSources:
    """Looks up the normalized source of trace entries in a :class:`PackageTree` (files parsed once)."""

    def __init__(self, tree: PackageTree):
        self.tree = tree
        self._parsed: dict[str, ast.Module | None] = {}

    def module(self, rel: str) -> ast.Module | None:
        if rel not in self._parsed:
            text = self.tree.source(rel)
            try:
                self._parsed[rel] = None if text is None else ast.parse(text)
            except SyntaxError:
                self._parsed[rel] = None
        return self._parsed[rel]

    def module_code(self, rel: str) -> str:
        """The :func:`skeleton` of module ``rel`` (``"<missing>"`` if the file is gone or broken)."""
        mod = self.module(rel)
        return "<missing>" if mod is None else skeleton(mod.body)

    def function_code(self, item: str) -> str:
        """Normalized source of ``"file.py:Qual.name"``: a function's whole definition, or a class's
        :func:`skeleton` (its class-level statements, decorators and bases); ``"<missing>"`` when no
        such definition exists any more (a renamed or removed function that the run called)."""
        rel, _, qualname = item.partition(":")
        mod = self.module(rel)
        node: ast.AST | None = mod
        for part in qualname.split("."):
            body = getattr(node, "body", None) or []
            node = next((s for s in body if isinstance(s, _DEFINITIONS) and s.name == part), None)
            if node is None:
                return "<missing>"
        if isinstance(node, ast.ClassDef):
            head = ast.ClassDef(name=node.name, bases=node.bases, keywords=node.keywords, body=[ast.Pass()],
                                decorator_list=node.decorator_list, type_params=[])
            return normalized_code(head) + skeleton(node.body)
        return normalized_code(node)


def runner_entries(entries: Iterable[str]) -> list[str]:
    """Trace entries of the runner's own package (``book/``): a chapter may call its display helpers
    (the committed tables it shows, whose content is part of the build key), but they compute none of
    its results, so they are not part of a fingerprint (an edit of the status page re-executes nothing)."""
    return [e for e in entries if e.split("/", 1)[0] in EXCLUDED_SUBPACKAGES]


def trace_digest(trace: dict[str, list[str]], tree: PackageTree | None = None) -> str:
    """sha256 over the normalized code of every traced function and every imported module's skeleton
    (:class:`TraceSources`), plus the shared data's digest when a data reader ran; the runner's own
    entries (:func:`runner_entries`) do not count."""
    sources = TraceSources(tree or PackageTree.from_dir(PACKAGE_DIR))
    h = hashlib.sha256(f"v{FINGERPRINT_VERSION}".encode())
    for rel in sorted(set(trace.get("modules", [])) - set(runner_entries(trace.get("modules", [])))):
        h.update(b"M\0" + rel.encode() + b"\0" + sources.module_code(rel).encode() + b"\0")
    for item in sorted(set(trace.get("functions", [])) - set(runner_entries(trace.get("functions", [])))):
        h.update(b"F\0" + item.encode() + b"\0" + sources.function_code(item).encode() + b"\0")
    if DATA_READERS & set(trace.get("modules", [])):
        h.update(b"D\0" + data_digest().encode())
    return h.hexdigest()


def chapter_code_digest(cells: list[str]) -> str:
    """sha256 over a chapter's code cells, normalized (:func:`normalized_code`; a cell that does not
    parse, e.g. with an IPython magic, counts as its text without comment lines)."""
    h = hashlib.sha256()
    for cell in cells:
        try:
            text = normalized_code(ast.parse(cell))
        except SyntaxError:
            text = "\n".join(line for line in cell.splitlines() if not line.lstrip().startswith("#"))
        h.update(text.encode() + b"\0")
    return h.hexdigest()


def merge_traces(traces: Iterable[dict[str, list[str]] | None]) -> dict[str, list[str]]:
    """The union of several runs' traces (a sweep's points)."""
    functions: set[str] = set()
    modules: set[str] = set()
    for t in traces:
        functions.update((t or {}).get("functions", []))
        modules.update((t or {}).get("modules", []))
    return {"functions": sorted(functions), "modules": sorted(modules)}


def code_fingerprint(chapter_code: str, trace: dict[str, list[str]], pins: list[str],
                     tree: PackageTree | None = None) -> str:
    """The fingerprint of a run's code: the chapter's normalized code (:func:`chapter_code_digest`),
    what it executed of ``ntputils`` (:func:`trace_digest`), the pinned dependencies and the Python
    minor version. A result made by code with the same fingerprint would come out the same."""
    payload = {"version": FINGERPRINT_VERSION, "chapter": chapter_code, "ntputils": trace_digest(trace, tree),
               "pins": pins, "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def run_key(static_key: str, trace: dict[str, list[str]] | None, tree: PackageTree | None = None) -> str:
    """A build's cache key: the key of the chapter's source, parameters and pins (:func:`chapter_key`)
    combined with :func:`trace_digest` of what the run executed; ``"untraced"`` keys never match."""
    if not trace:
        return f"untraced:{static_key}"
    return hashlib.sha256(f"{static_key}\0{trace_digest(trace, tree)}".encode()).hexdigest()
