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

import hashlib
import json
import sys
import tomllib
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
    """The cache key of one chapter run (``package_digest``: :func:`ntputils_digest` of that chapter)."""
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
    imports neither :mod:`ntputils.book.sweep_table` nor :mod:`ntputils.book.paper_profile`): a newly
    published table re-executes the chapters that render it, so no page shows an old table as current.

    The tables read are the folders ``<root>/results/sweeps/<name>/`` whose ``name`` is a string literal
    of the chapter source, plus ``<prefix>-paper`` for a chapter that shows its paper-profile run
    (``prefix``: ``a05``). When none is found that way (a name computed at run time), every table under
    ``<root>/results/`` counts, so a change can only re-execute too much, never too little."""
    uses_sweeps = "ntputils.book.sweep_table" in source_text
    uses_paper = "ntputils.book.paper_profile" in source_text
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
