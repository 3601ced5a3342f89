"""Lazy re-exports (PEP 562) for the subpackages' ``__init__.py`` and :mod:`ntputils.chapter`: a name is
imported on first use.

A subpackage lists what it re-exports in a literal dict ``_LAZY = {"name": "ntputils.pkg.submodule"}``
and ends with ``__getattr__, __dir__ = lazy_exports(__name__, _LAZY)``. ``from ntputils.pkg import
name`` (or ``pkg.name``) then imports only ``_LAZY["name"]``, so a chapter executes -- and its run-time
trace records -- only the modules it uses. Attribute access
to a submodule (``pkg.submodule``) imports it, as an eager ``__init__`` would have.

A re-exported name must not equal the name of a submodule of its package (importing the submodule
would rebind the name to the module). This is a bottom module: it imports nothing of ``ntputils``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, lazy: Mapping[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package`` that re-exports ``lazy`` (name -> module).

    ``__getattr__(name)`` imports ``lazy[name]`` with :func:`importlib.import_module`, caches the
    attribute in the package's globals and returns it; an unknown name that is a submodule of the
    package is imported and returned; anything else raises :class:`AttributeError`.
    """
    module = sys.modules[package]
    is_package = hasattr(module, "__path__")
    clashes = [name for name in lazy
               if is_package and importlib.util.find_spec(f"{package}.{name}") is not None]
    if clashes:
        raise ValueError(f"{package} re-exports {clashes}, also names of its submodules: rename one")

    def __getattr__(name: str) -> object:
        target = lazy.get(name)
        if target is not None:
            value = getattr(importlib.import_module(target), name)
            module.__dict__[name] = value
            return value
        if (is_package and not name.startswith("_")
                and importlib.util.find_spec(f"{package}.{name}") is not None):
            return importlib.import_module(f"{package}.{name}")  # binds itself on the package
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(module.__dict__) | set(lazy))

    return __getattr__, __dir__
