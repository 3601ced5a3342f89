"""What a chapter run executed of ``ntputils``: the functions called and the modules imported.

The book runner puts two hidden cells around every chapter it executes (build and sweep points):
``start()`` first, ``finish()`` last. In between, a ``sys.settrace`` hook (called once per new Python
frame, never per line: it returns ``None``) notes the code objects of ``ntputils`` functions. ``finish``
writes ``{"functions": ["analysis/metrics.py:batched_sim", ...], "modules": ["analysis/metrics.py",
...]}`` to the file named by ``NTPBOOK_TRACE``. The runner turns that list into the fingerprint of the
run (:func:`ntputils.book.fingerprint.trace_digest`): a docstring, a comment or an edit of a function
the run never called leaves the fingerprint, and so every result of the run, current.

Only the standard library is used, so importing this module adds nothing to what a chapter executes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

TRACE_ENV = "NTPBOOK_TRACE"
PACKAGE_DIR = Path(__file__).resolve().parent
_PREFIX = str(PACKAGE_DIR) + os.sep
_SEEN: set = set()  # code objects of ntputils functions that ran
_OTHER: set = set()  # code objects outside ntputils (checked once each)
_NOTED: set[str] = set()  # entries counted as run without running (:func:`note`)


_MONITORING = getattr(sys, "monitoring", None)  # Python >= 3.12: per-code events that can be disabled
_TOOL = 5  # a sys.monitoring tool id (0-5; 5 is not reserved by debuggers, coverage or profilers)


def _on_start(code, offset):  # noqa: ANN001 - the sys.monitoring PY_START signature
    if code.co_filename.startswith(_PREFIX):
        _SEEN.add(code)
    return _MONITORING.DISABLE  # each code object reports once: no cost afterwards


def _on_call(frame, event, arg):  # noqa: ANN001 - the sys.settrace signature
    code = frame.f_code
    if code in _SEEN or code in _OTHER:
        return None
    (_SEEN if code.co_filename.startswith(_PREFIX) else _OTHER).add(code)
    return None


def start(force: bool = False) -> None:
    """Begin noting the ``ntputils`` functions this process calls (this thread and new threads).

    Only when the runner asked for a trace (``NTPBOOK_TRACE`` set) or ``force``: a chapter opened in
    Jupyter or run with bare papermill is not slowed by the hook."""
    _SEEN.clear()
    _OTHER.clear()
    _NOTED.clear()
    if not (force or os.environ.get(TRACE_ENV)):
        return
    if _MONITORING is not None:
        _MONITORING.use_tool_id(_TOOL, "ntpbook-trace")
        _MONITORING.register_callback(_TOOL, _MONITORING.events.PY_START, _on_start)
        _MONITORING.set_events(_TOOL, _MONITORING.events.PY_START)
        return
    threading.settrace(_on_call)
    sys.settrace(_on_call)


def item_name(filename: str, qualname: str) -> str | None:
    """``"<file relative to ntputils>:<qualified name of the top-level def or class method>"``.

    A nested function, lambda or comprehension counts as the function that defines it (its source is
    part of that function's); code run at module level (``<module>``, module-level comprehensions)
    returns ``None``: the module's own entry covers it."""
    rel = Path(filename).resolve().relative_to(PACKAGE_DIR).as_posix()
    outer = qualname.split(".<locals>", 1)[0]
    if outer.startswith("<") or not outer:
        return None
    return f"{rel}:{outer}"


def snapshot() -> dict[str, list[str]]:
    """The functions called since :func:`start` and the ``ntputils`` modules imported, sorted."""
    functions = {item_name(c.co_filename, c.co_qualname) for c in list(_SEEN)} | _NOTED
    modules = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and str(Path(path).resolve()).startswith(_PREFIX) and path.endswith(".py"):
            modules.add(Path(path).resolve().relative_to(PACKAGE_DIR).as_posix())
    own = Path(__file__).name  # the tracer's own frames are not the chapter's
    return {"functions": sorted(f for f in functions if f and not f.startswith(own + ":")),
            "modules": sorted(modules - {own})}


def note(items: Iterable[str]) -> None:
    """Count trace entries (``"file.py:Qual.name"``) as run by this process: code whose result the run
    reuses without running it (a finished training checkpoint reloaded, :mod:`ntputils.training.loop`)."""
    _NOTED.update(items)


def finish() -> dict[str, list[str]]:
    """Stop tracing; write :func:`snapshot` to the file named by ``NTPBOOK_TRACE`` (if set); return it."""
    if _MONITORING is not None:
        if _MONITORING.get_tool(_TOOL) == "ntpbook-trace":
            _MONITORING.set_events(_TOOL, 0)
            _MONITORING.register_callback(_TOOL, _MONITORING.events.PY_START, None)
            _MONITORING.free_tool_id(_TOOL)
    else:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    trace = snapshot()
    target = os.environ.get(TRACE_ENV)
    if target:
        path = Path(target)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(trace, indent=0))
        os.replace(tmp, path)
    return trace


# ---------------------------------------------------------------------------------------------
# the normalized source of trace entries (the runner's fingerprints, the training checkpoints)
# ---------------------------------------------------------------------------------------------
#: where the sources a trace names are read: a package folder, or ``{relative path: bytes}`` (tests)
Package = Path | Mapping[str, bytes]

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
    """``ast.dump`` without positions, comments or docstrings."""
    return ast.dump(_strip_docstrings(node), include_attributes=False)


def _is_definition(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return (isinstance(stmt, (ast.Assign, ast.AnnAssign))
            and all(isinstance(t, ast.Name) and t.id in _SKIPPED_ASSIGNMENTS for t in targets))


def skeleton(body: list[ast.stmt]) -> str:
    """The normalized statements of a module or class body other than definitions, imports, ``__all__`` and
    ``_LAZY`` (a new or edited function leaves it unchanged, a changed constant does not)."""
    kept = [s for s in body if not _is_definition(s)]
    return normalized_code(ast.Module(body=kept, type_ignores=[]))


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _reader(package: Package | None) -> Callable[[str], bytes | None]:
    """``read(rel)``: the bytes of the package file ``rel``, or ``None`` if there is none."""
    if isinstance(package, Mapping):
        return package.get
    folder = Path(package or PACKAGE_DIR)

    def read(rel: str) -> bytes | None:
        try:
            return (folder / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    return read


class TraceSources:
    """The normalized source of trace entries in a package (:data:`Package`; files parsed once)."""

    def __init__(self, package: Package | None = None):
        self._read = _reader(package)
        self._parsed: dict[str, ast.Module | None] = {}

    def module(self, rel: str) -> ast.Module | None:
        if rel not in self._parsed:
            text = self._read(rel)
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
        """Normalized source of ``"file.py:Qual.name"``: a function's definition or a class's head and
        :func:`skeleton`; ``"<missing>"`` when it no longer exists."""
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


def file_entries(rel: str, package: Package | None = None) -> list[str]:
    """The trace entries a module defines: ``"rel:name"`` for each top-level function and class and
    ``"rel:Class.method"`` for each method (``[]`` if the file is missing or does not parse)."""
    mod = TraceSources(package).module(rel)
    out: list[str] = []
    for node in getattr(mod, "body", []):
        if isinstance(node, _DEFINITIONS):
            out.append(f"{rel}:{node.name}")
        if isinstance(node, ast.ClassDef):
            out += [f"{rel}:{node.name}.{sub.name}" for sub in node.body if isinstance(sub, _DEFINITIONS)]
    return out


def code_digests(items: Iterable[str], package: Package | None = None) -> dict[str, str]:
    """``{entry: sha256 of its normalized source}`` (:meth:`TraceSources.function_code`: docstrings,
    comments and positions do not count)."""
    sources = TraceSources(package)
    return {item: hashlib.sha256(sources.function_code(item).encode()).hexdigest() for item in sorted(items)}
