"""Which ``ntputils`` modules a chapter executes: its import graph, read statically with ``ast``.

Every ``import`` / ``from ... import`` statement counts, wherever it stands (module level, inside a
cell's ``if``, inside a function body: lazy imports are followed too), and so do
``importlib.import_module("ntputils.x")`` / ``__import__("ntputils.x")`` calls with a literal name.
Module names are resolved to files of the package tree (``pkg/__init__.py`` or ``pkg/mod.py``):

* ``import ntputils.a.b`` executes ``ntputils/__init__.py``, ``ntputils/a/__init__.py`` and
  ``ntputils/a/b.py`` (parent packages are always included);
* ``from ntputils.a import x`` imports ``ntputils.a`` and, if ``x`` is a submodule, ``ntputils.a.x``;
* relative imports (``from .common import f``, ``from .. import x``) are resolved against the
  importing module;
* lazy re-exports (PEP 562, :mod:`ntputils.lazy`): when ``ntputils/a/__init__.py`` defines a literal
  dict ``_LAZY = {"x": "ntputils.a.mod", ...}``, ``from ntputils.a import x`` adds ``ntputils.a.mod``
  (and what it imports), not every ``_LAZY`` target; so does the attribute use ``a.x`` of a name
  ``a`` bound to that package by an import (``from ntputils import a`` ... ``a.x(...)``), and
  ``a.sub`` of a submodule ``sub`` adds ``ntputils.a.sub``; ``from ntputils.a import *`` adds every
  ``_LAZY`` target;
* names that resolve to no file (third-party packages, attributes) are ignored.

The runner's own subpackage ``book/`` is never part of the result. Only the standard library is used
and nothing of ``ntputils`` is imported: the tree is read as text, from a folder or from a
``{relative path: bytes}`` mapping (the tests edit such a mapping in memory).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
EXCLUDED_SUBPACKAGES = ("book",)
_IMPORT_FUNCTIONS = ("import_module", "__import__")


class PackageTree:
    """The ``*.py`` sources of one package, addressed by path relative to the package folder.

    ``read(rel)`` returns a file's bytes, or ``None`` if there is no such file.
    """

    def __init__(self, name: str, read: Callable[[str], bytes | None]):
        self.name = name
        self._read = read
        self._cache: dict[str, bytes | None] = {}
        self._module_imports: dict[str, set[str]] = {}  # rel -> files it imports directly
        self._lazy: dict[str, dict[str, str]] = {}  # package __init__ rel -> its literal _LAZY dict

    @classmethod
    def from_dir(cls, package_dir: Path = PACKAGE_DIR) -> PackageTree:
        package_dir = Path(package_dir)

        def read(rel: str) -> bytes | None:
            try:
                return (package_dir / rel).read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None

        return cls(package_dir.name, read)

    @classmethod
    def from_files(cls, name: str, files: Mapping[str, bytes]) -> PackageTree:
        return cls(name, lambda rel: files.get(rel))

    def source(self, rel: str) -> bytes | None:
        if rel not in self._cache:
            self._cache[rel] = self._read(rel)
        return self._cache[rel]

    # ------------------------------------------------------------ names -> files
    def module_file(self, module: str) -> str | None:
        """The file (relative posix path) of a dotted module name of this package, or ``None``."""
        parts = module.split(".")
        if parts[0] != self.name:
            return None
        rest = parts[1:]
        if rest and rest[0] in EXCLUDED_SUBPACKAGES:
            return None
        stem = "/".join(rest)
        candidates = [f"{stem}/__init__.py", f"{stem}.py"] if stem else ["__init__.py"]
        for rel in candidates:
            if self.source(rel) is not None:
                return rel
        return None

    def with_parents(self, module: str) -> list[str]:
        """The files executed by importing ``module``: each parent package's ``__init__.py``, then its own."""
        parts = module.split(".")
        files = [self.module_file(".".join(parts[:i])) for i in range(1, len(parts) + 1)]
        return [f for f in files if f is not None]

    # ------------------------------------------------------------ the graph
    def imports_of(self, source: str | bytes, module: str | None = None,
                   is_package: bool = False) -> set[str]:
        """The files (relative paths) that executing ``source`` imports directly, parents included.

        ``module`` is the dotted name of ``source`` (``None`` for a chapter: relative imports are then
        ignored); ``is_package`` says whether it is a package's ``__init__.py``.
        """
        files: set[str] = set()
        tree = ast.parse(source)
        for name, names in _imported_names(tree, module, is_package):
            if name.split(".")[0] != self.name:
                continue
            files.update(self.with_parents(name))
            lazy = self.lazy_exports(name)
            for sub in names:
                if sub == "*":
                    for target in sorted(set(lazy.values())):
                        files.update(self.with_parents(target))
                    continue
                rel = self.module_file(f"{name}.{sub}")
                if rel is not None:
                    files.update(self.with_parents(f"{name}.{sub}"))
                if sub in lazy:
                    files.update(self.with_parents(lazy[sub]))
        bound = {local: target for local, target in _bindings(tree, module, is_package).items()
                 if target.split(".")[0] == self.name}
        for local, attrs in _attribute_chains(tree, set(bound)):
            files.update(self._attribute_files(bound[local], attrs))
        return files

    def lazy_exports(self, module: str) -> dict[str, str]:
        """The literal ``_LAZY`` dict (name -> defining module) of package ``module``'s ``__init__.py``,
        or ``{}`` (not a package, no such dict, or not a literal of strings)."""
        rel = self.module_file(module)
        if rel is None or not rel.endswith("__init__.py"):
            return {}
        if rel not in self._lazy:
            self._lazy[rel] = _literal_lazy(self.source(rel) or b"")
        return self._lazy[rel]

    def _attribute_files(self, module: str, attrs: list[str]) -> set[str]:
        """The files that evaluating ``module.attrs[0].attrs[1]...`` imports through lazy packages."""
        files: set[str] = set()
        for attr in attrs:
            rel = self.module_file(module)
            if rel is None or not rel.endswith("__init__.py"):
                break  # a plain module: its attributes import nothing
            lazy = self.lazy_exports(module)
            if attr in lazy:
                files.update(self.with_parents(lazy[attr]))
            if self.module_file(f"{module}.{attr}") is None:
                break
            module = f"{module}.{attr}"
            files.update(self.with_parents(module))
        return files

    def closure(self, source: str | bytes) -> list[str]:
        """Sorted files of every module of this package that ``source`` (a chapter) imports, transitively."""
        seen: set[str] = set()
        todo = sorted(self.imports_of(source))
        while todo:
            rel = todo.pop()
            if rel in seen:
                continue
            seen.add(rel)
            todo.extend(sorted(self._imports_of_file(rel) - seen))
        return sorted(seen)

    def _imports_of_file(self, rel: str) -> set[str]:
        if rel not in self._module_imports:
            found: set[str] = set()
            text = self.source(rel)
            if text is not None:
                try:
                    found = self.imports_of(text, _module_name(self.name, rel), rel.endswith("__init__.py"))
                except SyntaxError:  # a broken module still counts (its bytes are hashed), imports nothing
                    pass
            self._module_imports[rel] = found
        return self._module_imports[rel]

    def digest(self, files: Iterable[str]) -> str:
        """sha256 over the relative paths and contents of ``files``."""
        h = hashlib.sha256()
        for rel in sorted(set(files)):
            h.update(rel.encode() + b"\0" + (self.source(rel) or b"") + b"\0")
        return h.hexdigest()


def _module_name(package: str, rel: str) -> str:
    parts = rel[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _imported_names(tree: ast.AST, module: str | None, is_package: bool) -> list[tuple[str, list[str]]]:
    """(absolute module name, names taken from it) for every import anywhere in ``tree``."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, module, is_package)
            if base is not None:
                found.append((base, [a.name for a in node.names]))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            arg = node.args[0]
            if fname in _IMPORT_FUNCTIONS and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if not arg.value.startswith("."):
                    found.append((arg.value, []))
    return found


def _bindings(tree: ast.AST, module: str | None, is_package: bool) -> dict[str, str]:
    """Local name -> the dotted name it is bound to, for every import anywhere in ``tree`` (scopes are
    not told apart: a name bound to a module anywhere counts everywhere, which only adds files)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, module, is_package)
            if base is not None:
                for alias in node.names:
                    if alias.name != "*":
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    return bound


def _attribute_chains(tree: ast.AST, names: set[str]) -> list[tuple[str, list[str]]]:
    """``(name, [attr, ...])`` for every attribute chain ``name.attr...`` in ``tree`` rooted at one of
    ``names`` (each ``ast.Attribute`` node gives its own chain: ``a.b.c`` gives ``a.b`` and ``a.b.c``)."""
    chains = []
    for node in ast.walk(tree):
        attrs: list[str] = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if attrs and isinstance(node, ast.Name) and node.id in names:
            chains.append((node.id, attrs[::-1]))
    return chains


def _literal_lazy(source: bytes) -> dict[str, str]:
    """The module-level ``_LAZY = {"name": "module", ...}`` of ``source`` (string literals only)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id == "_LAZY" and isinstance(value, ast.Dict):
            pairs = list(zip(value.keys, value.values, strict=True))
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Constant)
                   and isinstance(v.value, str) for k, v in pairs):
                return {k.value: v.value for k, v in pairs}  # type: ignore[union-attr]
    return {}


def _resolve_from(node: ast.ImportFrom, module: str | None, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    if module is None:
        return None
    package = module.split(".") if is_package else module.split(".")[:-1]
    up = node.level - 1
    if up > len(package) - 1:
        return None
    base = package[: len(package) - up]
    return ".".join(base + ([node.module] if node.module else []))
