"""No private attribute of any library anywhere in ``ntputils`` (issue #48): the runner and the package use
documented APIs only, so a library's patch release cannot break them silently.

Read from the source (AST), every ``X._name`` (not a ``__dunder__``), every ``getattr``/``setattr``/
``hasattr``/``delattr`` with a ``"_name"`` string and every import of a private name or from a private
module is flagged unless the name is the project's own: ``self._x``/``cls._x``, an attribute that
``ntputils`` gives its own objects (``self._x = ...``, a method or a class-level name), or a module-level
private name of ``ntputils`` reached through an ``ntputils`` module. What is allowed beyond that is listed
in ``ALLOWED``, with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ntputils

PACKAGE = Path(ntputils.__file__).resolve().parent

# (file relative to the package, "base.attribute") -> why it is not a library's private attribute
ALLOWED = {
    ("book/execute.py", "os._exit"): "a documented public function of the standard library "
                                     "(docs.python.org/3/library/os.html#os._exit), the exit of a "
                                     "preexec_fn child after fork",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _trees() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(), str(p))
            for p in sorted(PACKAGE.rglob("*.py"))}


def own_private_names(trees: dict[str, ast.Module]) -> tuple[set[str], set[str]]:
    """The private names ``ntputils`` defines itself: (attributes of its objects: ``self._x = ...``, a
    method or a class-level name; module-level names: a ``def``, a ``class`` or an assignment)."""
    attributes: set[str] = set()
    module_level: set[str] = set()

    def assigned(node: ast.AST) -> list[ast.AST]:
        if isinstance(node, ast.Assign):
            return node.targets
        return [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else []

    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                module_level.add(node.name)
            module_level |= {leaf.id for t in assigned(node) for leaf in ast.walk(t)
                             if isinstance(leaf, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        attributes.add(item.name)
                    attributes |= {leaf.id for t in assigned(item) for leaf in ast.walk(t)
                                   if isinstance(leaf, ast.Name)}
            attributes |= {leaf.attr for t in assigned(node) for leaf in ast.walk(t)
                           if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name)
                           and leaf.value.id in ("self", "cls")}
    return {n for n in attributes if _private(n)}, {n for n in module_level if _private(n)}


def project_modules(tree: ast.Module) -> set[str]:
    """The names a file binds to ``ntputils`` modules (``import ntputils.x as m``, ``from ntputils
    import x``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names
                      if a.name.split(".")[0] == "ntputils"}
        elif isinstance(node, ast.ImportFrom) and (node.level
                                                   or (node.module or "").split(".")[0] == "ntputils"):
            names |= {a.asname or a.name for a in node.names}
    return names


def private_uses(trees: dict[str, ast.Module]) -> list[tuple[str, int, str]]:
    """(file, line, what) of every use of a private name that is not the project's own."""
    attributes, module_level = own_private_names(trees)
    found = []
    for path, tree in trees.items():
        modules = project_modules(tree)
        for node in ast.walk(tree):
            what = None
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = ast.unparse(node.value)
                own = node.attr in attributes or (base.split(".")[0] in modules and node.attr in module_level)
                if base not in ("self", "cls") and not own:
                    what = f"{base}.{node.attr}"
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                  and _private(node.args[1].value) and node.args[1].value not in attributes):
                what = f"{node.func.id}({ast.unparse(node.args[0])}, {node.args[1].value!r})"
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "ntputils":
                    names = [a.name for a in node.names if _private(a.name)]
                    if any(_private(part) for part in node.module.split(".")) or names:
                        what = f"from {node.module} import {', '.join(names or [a.name for a in node.names])}"
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] != "ntputils"
                         and any(_private(part) for part in a.name.split("."))]
                what = f"import {', '.join(names)}" if names else None
            if what is not None and (path, what) not in ALLOWED:
                found.append((path, node.lineno, what))
    return found


def test_no_private_attribute_of_any_library_anywhere_in_ntputils():
    assert private_uses(_trees()) == []


def test_the_check_flags_a_librarys_private_attribute_and_not_the_projects_own():
    source = '''
import os
from dask_jobqueue.core import _job_id_from_submit_output
from distributed import _concurrent_futures_thread_pool
import filelock._core
class Watch:
    def __init__(self, cluster):
        self._cluster = cluster
    def jobs(self, client):
        n = len(self._cluster._scheduled)   # a library's private state through a project attribute
        getattr(client, "_pending")
        other = Watch(None)
        return n, client._bar, other._cluster, _helper(), os._helper, os.fspath(".")
def _helper():
    return 1
'''
    trees = {"fake.py": ast.parse(source), **_trees()}
    found = {what for path, _, what in private_uses(trees) if path == "fake.py"}
    assert found == {"self._cluster._scheduled", "client._bar", "getattr(client, '_pending')", "os._helper",
                     "from dask_jobqueue.core import _job_id_from_submit_output",
                     "from distributed import _concurrent_futures_thread_pool",
                     "import filelock._core"}, found
