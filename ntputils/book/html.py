"""The HTML step: toc/notebook consistency, then ``jupyter-book build -W -n --keep-going``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from ntputils.book.project import PAGE_SUFFIXES, Chapter, Project, ProjectError, strip_suffix


def _exists(project: Project, entry: str) -> bool:
    return any((project.root / f"{entry}{s}").exists() for s in PAGE_SUFFIXES)


def toc_problems(project: Project, current: dict[str, bool], partial: bool = False) -> list[str]:
    """Why the HTML cannot be built: sources missing from the toc and (unless ``partial``) toc chapters
    without a ``current`` notebook (name -> bool) and toc entries without a file."""
    problems: list[str] = []
    toc = set(project.toc_files())
    rel = project.book_dir.relative_to(project.root).as_posix()
    for chapter in project.chapters():
        if f"{rel}/{chapter.name}" not in toc:
            problems.append(f"notebook source {chapter.source.relative_to(project.root)} is not in "
                            f"{project.toc_path.name} (add `- file: {rel}/{chapter.name}`)")
    sources = {c.name for c in project.chapters()}
    for entry in project.toc_files():
        name = entry.rpartition("/")[2]
        if name in sources and entry == f"{rel}/{name}":
            if partial:
                continue
            if not project.executed(Chapter(name, Path())).exists():
                problems.append(f"toc chapter {entry} has no executed notebook "
                                f"(run: python -m ntputils.book build --only {name})")
            elif not current.get(name, False):
                problems.append(f"toc chapter {entry}: executed notebook is stale "
                                f"(run: python -m ntputils.book build --only {name})")
        elif not partial and not _exists(project, entry):
            hint = f" and no chapter source notebooks/{name}.py" if entry == f"{rel}/{name}" else ""
            problems.append(f"toc entry {entry} has no file {entry}.md/.ipynb{hint}")
    return problems


def partial_toc(project: Project, keep: set[str]) -> Path:
    """A copy of the toc without the chapter entries not in ``keep`` (for ``--partial`` builds)."""
    toc = project.toc()
    rel = project.book_dir.relative_to(project.root).as_posix()
    sources = {c.name for c in project.chapters()}

    def wanted(entry: str) -> bool:
        name = strip_suffix(entry).rpartition("/")[2]
        if strip_suffix(entry) == f"{rel}/{name}" and name in sources:
            return name in keep
        return _exists(project, strip_suffix(entry))

    def prune(node):
        if isinstance(node, list):
            out = [prune(n) for n in node]
            return [n for n in out if n is not None]
        if isinstance(node, dict):
            if "file" in node and not wanted(node["file"]):
                return None
            node = dict(node)
            for key in ("parts", "chapters", "sections"):
                if key in node:
                    node[key] = prune(node[key])
                    if not node[key]:
                        del node[key]
            if "caption" in node and "chapters" not in node and "file" not in node:
                return None  # an emptied part
            return node
        return node

    pruned = prune(toc)
    path = project.cache_dir / "_toc.partial.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(pruned, sort_keys=False))
    return path


def jupyter_book(project: Project, toc: Path | None = None) -> int:
    """Run ``jupyter-book build -W -n --keep-going --all`` (``--all``: no stale navigation bars) on the
    project; return its exit code."""
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(project.root),
           "-W", "-n", "--keep-going", "--all", "--builder", "html"]
    if toc is not None:
        cmd += ["--toc", str(toc)]
    if not Path(cmd[0]).exists():  # a python without the console script beside it
        cmd[0] = shutil.which("jupyter-book") or "jupyter-book"
    return subprocess.run(cmd, cwd=project.root).returncode


def check_ready(project: Project, current: dict[str, bool], partial: bool = False) -> None:
    """Raise :class:`ProjectError` listing every toc/notebook problem."""
    problems = toc_problems(project, current, partial)
    if problems:
        raise ProjectError("cannot build the HTML:\n  - " + "\n  - ".join(problems))


def prune_pages(project: Project, renderable: set[str], toc_entries: set[str] | None = None) -> list[str]:
    """Remove from ``_build/html`` the pages of chapters not ``renderable`` and, given ``toc_entries``, the
    book folder's pages that toc does not list; return the removed pages (relative paths)."""
    rel = project.book_dir.relative_to(project.root).as_posix()
    folder = project.html_dir / rel
    if not folder.is_dir():
        return []
    chapters = {c.name for c in project.chapters()}
    removed = []
    for page in sorted(folder.glob("*.html")):
        name = page.stem
        orphan = toc_entries is not None and f"{rel}/{name}" not in toc_entries
        stale = name in chapters and name not in renderable
        if orphan or stale:
            page.unlink()
            for extra in (project.html_dir / "_sources" / rel).glob(f"{name}.*"):
                extra.unlink()
            removed.append(page.relative_to(project.html_dir).as_posix())
    return removed
