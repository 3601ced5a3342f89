"""The HTML step: toc/notebook consistency, then ``jupyter-book build -W -n --keep-going``.

Every toc chapter is always in the book: a chapter without a current executed notebook (never run here,
stale, or failed with no earlier good run) is rendered, in a ``--partial``/``--only`` build, from a
placeholder page ``book/<chapter>.md`` that carries the chapter's title, says it was not built in this
build and gives the command that builds it. Chapter and figure numbers and cross-references to it do not
move; :mod:`ntputils.reports.sphinx_ext` keeps a stale ``book/<chapter>.ipynb`` beside a placeholder out of
the book.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from ntputils.book.project import (
    PAGE_SUFFIXES,
    Chapter,
    Project,
    ProjectError,
    read_json,
    strip_suffix,
    write_text_atomic,
)
from ntputils.reports.placeholders import PLACEHOLDER_MARK, is_placeholder

#: the CSS class of a placeholder's admonition: how the browser check knows a placeholder page
NOT_BUILT_CLASS = "ntpbook-not-built"
TITLE = re.compile(r"^# # (.+?)\s*$", re.MULTILINE)


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


def partial_toc(project: Project) -> Path | None:
    """For ``--partial`` builds: a copy of the toc without its entries that have no file, other than
    chapters (a chapter without a current notebook is a placeholder page, never left out: that would
    renumber the chapters after it); ``None`` when no entry is missing."""
    toc = project.toc()
    rel = project.book_dir.relative_to(project.root).as_posix()
    sources = {c.name for c in project.chapters()}

    def wanted(entry: str) -> bool:
        entry = strip_suffix(entry)
        name = entry.rpartition("/")[2]
        return (entry == f"{rel}/{name}" and name in sources) or _exists(project, entry)

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
    if pruned == toc:
        return None
    path = project.cache_dir / "_toc.partial.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(pruned, sort_keys=False))
    return path


def placeholder_path(project: Project, chapter: Chapter) -> Path:
    """``book/<chapter>.md``: the page of a chapter not built in this build."""
    return project.book_dir / f"{chapter.name}.md"


def chapter_title(chapter: Chapter) -> str:
    """The chapter's title: the first ``# # Title`` line of its source (its name when it has none)."""
    try:
        match = TITLE.search(chapter.source.read_text())
    except OSError:
        match = None
    return match.group(1) if match else chapter.name


def build_command(chapter: Chapter) -> str:
    """The command that builds ``chapter``, as run from the checkout's root."""
    return f".venv/bin/python -m ntputils.book build --only {chapter.short}"


def not_built_reason(project: Project, chapter: Chapter) -> str:
    """Why ``chapter`` has no current executed notebook (a phrase)."""
    if project.executed(chapter).exists():
        return ("its executed notebook is stale: its source, its parameters, the `ntputils` code it ran, the "
                "pinned packages, its data or a committed table it read changed since it ran")
    if read_json(project.failed_dir() / f"{chapter.name}.json"):
        return "its latest run failed and there is no earlier good run to show"
    return "it has not been executed in this checkout"


def placeholder_text(project: Project, chapter: Chapter) -> str:
    """The placeholder page of ``chapter``: its title, that it was not built in this build, and how to
    build it. It shows no result, so it can never be read as one."""
    return (
        f"{PLACEHOLDER_MARK} written by `python -m ntputils.book build` for a chapter not built in this "
        "build; replaced by the chapter once it is built. Do not edit.\n"
        f"# {chapter_title(chapter)}\n\n"
        f"````{{admonition}} Not built in this build\n:class: warning {NOT_BUILT_CLASS}\n"
        f"This chapter (`{chapter.name}`) was **not built in this build**: "
        f"{not_built_reason(project, chapter)}. "
        "This page shows none of its results; it keeps the chapter's place, so that the numbers of the "
        "chapters and figures and the links to it are those of the full book.\n\n"
        "Build it (and this page) from the root of the checkout with\n\n"
        f"```bash\n{build_command(chapter)}\n```\n\n"
        "or the whole book with `make book`.\n````\n"
    )


def write_placeholders(project: Project, renderable: Iterable[str]) -> list[Chapter]:
    """Write the placeholder page of every toc chapter not ``renderable`` and remove every other placeholder
    (a chapter built since, or no longer in the toc); return the chapters given a placeholder. A page
    ``book/<chapter>.md`` that is not a placeholder is never overwritten (:class:`ProjectError`)."""
    renderable = set(renderable)
    missing = [c for c in project.toc_chapters() if c.name not in renderable]
    for chapter in missing:
        path = placeholder_path(project, chapter)
        if path.exists() and not is_placeholder(path):
            raise ProjectError(f"{path.relative_to(project.root)} is not a placeholder page: it would hide "
                               f"chapter {chapter.name} (rename it)")
    keep = {placeholder_path(project, c) for c in missing}
    for path in project.book_dir.glob("*.md") if project.book_dir.is_dir() else []:
        if path not in keep and is_placeholder(path):
            path.unlink()
    for chapter in missing:
        path = placeholder_path(project, chapter)
        text = placeholder_text(project, chapter)
        if not path.exists() or path.read_text() != text:
            write_text_atomic(path, text)
    return missing


def jupyter_book(project: Project, toc: Path | None = None) -> int:
    """Run ``jupyter-book build -W -n --keep-going --all`` (``--all``: no stale navigation bars) on the
    project; return its exit code."""
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(project.root),
           "-W", "-n", "--keep-going", "--all", "--builder", "html"]
    if toc is not None:
        cmd += ["--toc", str(toc)]
    if not Path(cmd[0]).exists():  # a python without the console script beside it
        cmd[0] = shutil.which("jupyter-book") or "jupyter-book"
    # the Sphinx extension (ntputils.reports.sphinx_ext) is this runner's, not another checkout's install
    package_parent = str(Path(__file__).resolve().parents[2])
    env = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [package_parent,
                                                                    os.environ.get("PYTHONPATH", "")]))}
    return subprocess.run(cmd, cwd=project.root, env=env).returncode


def check_ready(project: Project, current: dict[str, bool], partial: bool = False) -> None:
    """Raise :class:`ProjectError` listing every toc/notebook problem."""
    problems = toc_problems(project, current, partial)
    if problems:
        raise ProjectError("cannot build the HTML:\n  - " + "\n  - ".join(problems))


def prune_pages(project: Project, renderable: set[str], toc_entries: set[str] | None = None) -> list[str]:
    """Remove from ``_build/html`` the pages of chapters not ``renderable`` (a placeholder's page is of a
    renderable page) and, given ``toc_entries``, the book folder's pages that toc does not list; return the
    removed pages (relative paths)."""
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
