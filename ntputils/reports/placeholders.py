"""Placeholder pages: ``book/<chapter>.md``, written by the build
(:func:`ntputils.book.html.write_placeholders`) for a chapter not built in this build, and how the runner
and the book's Sphinx extension (:mod:`ntputils.reports.sphinx_ext`) know one: its first line is
:data:`PLACEHOLDER_MARK`."""

from __future__ import annotations

from pathlib import Path

#: the first line of a placeholder page (a MyST comment): how the runner and the Sphinx extension know it
PLACEHOLDER_MARK = "% ntpbook-placeholder:"
#: the folder of the book's pages under the project root (``Project.book_dir``)
BOOK_DIR = "book"


def is_placeholder(path: Path) -> bool:
    """Whether ``path`` is a placeholder page (its first line starts with :data:`PLACEHOLDER_MARK`)."""
    try:
        with path.open() as f:
            return f.readline().startswith(PLACEHOLDER_MARK)
    except OSError:
        return False


def placeholder_exclusions(root: Path) -> list[str]:
    """Sphinx ``exclude_patterns`` for the executed notebooks that a placeholder page replaces (a stale
    ``book/<chapter>.ipynb``), relative to ``root``."""
    book = Path(root) / BOOK_DIR
    pages = sorted(book.glob("*.md")) if book.is_dir() else []
    return [p.with_suffix(".ipynb").relative_to(root).as_posix() for p in pages if is_placeholder(p)]
