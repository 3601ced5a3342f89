"""Per-chapter and HTML locks of the build (``fcntl.flock`` on ``.cache/book/locks/*.lock``).

A chapter's lock is held from before its kernel starts until its results are installed (a second build is
refused, exit 3); the HTML step waits for the book-wide lock. ``flock`` locks die with their process.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ntputils.book.project import Project


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class ChapterBusy(RuntimeError):
    """Another process is building the chapter (its lock is held)."""


def _open_lock(project: Project, name: str) -> tuple[Path, IO[str]]:
    path = project.cache_dir / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path, path.open("a+")


def _holder(f: IO[str]) -> str:
    try:
        f.seek(0)
        return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def _mark(f: IO[str]) -> None:
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()


@contextmanager
def chapter_locks(project: Project, names: Iterable[str]) -> Iterator[None]:
    """Hold the locks of the chapters ``names`` (non-blocking); raise :class:`ChapterBusy` if one is held."""
    held: list[IO[str]] = []
    try:
        for name in sorted(set(names)):
            path, f = _open_lock(project, name)
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(f)
                f.close()
                raise ChapterBusy(
                    f"chapter {name} is being built by another process (pid {holder}, lock {path}); "
                    "wait for that build to finish, then run again"
                ) from None
            _mark(f)
            held.append(f)
        yield
    finally:
        for f in held:
            f.close()  # releases its lock


@contextmanager
def html_lock(project: Project, say=print) -> Iterator[None]:
    """Hold the book-wide lock of the HTML step, waiting (with one message) while another build holds it."""
    path, f = _open_lock(project, "html")
    with f:  # closing the file releases the lock
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another build's HTML step (pid {_holder(f)}, lock {path}) ...")
            fcntl.flock(f, fcntl.LOCK_EX)
        _mark(f)
        yield
