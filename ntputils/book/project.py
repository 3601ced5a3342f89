"""Project layout (chapter sources, executed notebooks, caches, the toc) and small helpers.

The root is configurable (``Project(root=...)``, ``--root``): tests run the runner on a throw-away project.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntputils.committed import default_root


def say(*args: Any) -> None:
    """Print and flush; a closed terminal (SIGHUP) is ignored, so it never stops a cleanup."""
    with contextlib.suppress(OSError):
        print(*args, flush=True)


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ``{}`` when it is missing or unreadable (a run that never wrote it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; moved onto ``path`` (``os.replace``) when the block
    succeeds, removed when it fails, so readers see the old file or the whole new one. An ``OSError`` of
    the block (a full disk, a read-only folder) is raised again naming ``path``, not the temporary file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def os_problem(err: OSError) -> str:
    """One line for an ``OSError`` naming its path, with the words a full disk deserves."""
    where = err.filename or "(no path)"
    if err.errno == errno.ENOSPC:
        return f"no space left on the device holding {where}: free some space, then rerun the command"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write {where}: {err.strerror} (a read-only or another user's folder?)"
    return f"{where}: {err.strerror or err}"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace`` (:func:`atomic_output`)."""
    with atomic_output(path) as tmp:
        tmp.write_text(text)


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, default=str))


def seconds_problem(value: Any) -> str | None:
    """Why ``value`` is not a positive finite number of seconds (``"must be ..."``), or ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number of seconds, got {value!r}"
    if not (math.isfinite(value) and value > 0):
        return f"must be a positive finite number of seconds, got {value!r}"
    return None


class ProjectError(RuntimeError):
    """The project is inconsistent (unknown chapter, toc/notebook mismatch, ...)."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``name`` (e.g. ``a01_ntp_as_soft_labels``) and its jupytext source."""

    name: str
    source: Path

    @property
    def short(self) -> str:
        """The stable prefix, e.g. ``a01``."""
        return self.name.split("_", 1)[0]


@dataclass(frozen=True)
class Project:
    """A book project rooted at ``root`` (holds ``_config.yml``, ``_toc.yml``, ``notebooks/``, ``book/``)."""

    root: Path

    @classmethod
    def default(cls) -> Project:
        """``$NTPBOOK_ROOT`` or the checkout that holds this package."""
        return cls(default_root())

    @property
    def notebooks_dir(self) -> Path:
        return self.root / "notebooks"

    @property
    def book_dir(self) -> Path:
        return self.root / "book"

    @property
    def cache_dir(self) -> Path:
        return self.root / ".cache" / "book"

    @property
    def build_dir(self) -> Path:
        return self.root / "_build"

    @property
    def html_dir(self) -> Path:
        return self.build_dir / "html"

    @property
    def toc_path(self) -> Path:
        return self.root / "_toc.yml"

    @property
    def pyproject(self) -> Path:
        return self.root / "pyproject.toml"

    @property
    def status_page(self) -> Path:
        return self.book_dir / "status.md"

    @property
    def scorecard_page(self) -> Path:
        return self.book_dir / "scorecard.md"

    @property
    def headline_page(self) -> Path:
        """The scorecard's headline (per paper: reproduced, partial, deviating, ...), for the intro."""
        return self.book_dir / "headline.md"

    def in_toc(self, page: Path) -> bool:
        """Whether the generated page ``page`` (under the root) is an entry of the toc."""
        return strip_suffix(page.relative_to(self.root).as_posix()) in self.toc_files()

    def executed(self, chapter: Chapter) -> Path:
        """The executed notebook ``book/<chapter>.ipynb`` that the book renders."""
        return self.book_dir / f"{chapter.name}.ipynb"

    def failed_dir(self) -> Path:
        return self.cache_dir / "failed"

    def chapters(self) -> list[Chapter]:
        """Every ``notebooks/*.py`` chapter source, sorted by name (= reading order within a paper)."""
        if not self.notebooks_dir.is_dir():
            return []
        sources = sorted(self.notebooks_dir.glob("*.py"))
        return [Chapter(p.stem, p) for p in sources if not p.name.startswith("_")]

    def select(self, selectors: Iterable[str] | None) -> list[Chapter]:
        """Chapters named by ``selectors`` (full name, or a prefix such as ``a01``); all if empty."""
        chapters = self.chapters()
        if not selectors:
            return chapters
        picked: list[Chapter] = []
        for sel in selectors:
            sel = Path(sel).stem if sel.endswith((".py", ".ipynb")) else sel
            matches = [c for c in chapters if c.name == sel or c.name.startswith(sel + "_") or c.short == sel]
            if len(matches) != 1:
                names = ", ".join(c.name for c in chapters) or "(none)"
                what = "no chapter" if not matches else f"{len(matches)} chapters"
                raise ProjectError(f"{what} matches {sel!r}; chapters in {self.notebooks_dir}: {names}")
            if matches[0] not in picked:
                picked.append(matches[0])
        return picked

    def toc(self, path: Path | None = None) -> dict[str, Any]:
        """The parsed toc (default ``_toc.yml``); :class:`ProjectError` when it does not exist."""
        import yaml

        path = path or self.toc_path
        if not path.exists():
            raise ProjectError(f"no table of contents at {path}")
        return yaml.safe_load(path.read_text()) or {}

    def toc_files(self, toc_path: Path | None = None) -> list[str]:
        """Every ``file:`` entry of the toc (default ``_toc.yml``), root first, without suffix."""
        toc = self.toc(toc_path)
        return [strip_suffix(f) for f in ([toc["root"]] if "root" in toc else []) + list(_walk_files(toc))]

    def toc_chapters(self) -> list[Chapter]:
        """Chapters in toc order (toc entries ``book/<name>`` whose source ``notebooks/<name>.py`` exists)."""
        by_name = {c.name: c for c in self.chapters()}
        rel = self.book_dir.relative_to(self.root).as_posix()
        entries = (e.rpartition("/") for e in self.toc_files())
        return [by_name[name] for folder, _, name in entries if folder == rel and name in by_name]


PAGE_SUFFIXES = (".md", ".ipynb", ".rst")


def strip_suffix(path: str) -> str:
    for suffix in PAGE_SUFFIXES:
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


def _walk_files(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "file" in node:
            yield node["file"]
        for key in ("parts", "chapters", "sections"):
            yield from _walk_files(node.get(key, []))
    elif isinstance(node, list):
        for item in node:
            yield from _walk_files(item)
