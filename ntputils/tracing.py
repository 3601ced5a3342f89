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

import json
import os
import sys
import threading
from pathlib import Path

TRACE_ENV = "NTPBOOK_TRACE"
PACKAGE_DIR = Path(__file__).resolve().parent
_PREFIX = str(PACKAGE_DIR) + os.sep
_SEEN: set = set()  # code objects of ntputils functions that ran
_OTHER: set = set()  # code objects outside ntputils (checked once each)


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
    functions = {item_name(c.co_filename, c.co_qualname) for c in list(_SEEN)}
    modules = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and str(Path(path).resolve()).startswith(_PREFIX) and path.endswith(".py"):
            modules.add(Path(path).resolve().relative_to(PACKAGE_DIR).as_posix())
    own = Path(__file__).name  # the tracer's own frames are not the chapter's
    return {"functions": sorted(f for f in functions if f and not f.startswith(own + ":")),
            "modules": sorted(modules - {own})}


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
