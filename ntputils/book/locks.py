"""Per-chapter and HTML locks of the build (``filelock.FileLock`` on ``.cache/book/locks/*.lock``).

A chapter's lock is held from before its kernel starts until its results are installed (a second build is
refused, exit 3); the HTML step waits for the book-wide lock. FileLock takes ``flock`` on Linux, so a lock
dies with its process; the holder writes its pid into the file for the refusal message.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

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


def _write_pid(fd: int) -> None:
    """FileLock's ``on_acquired``: the holder's pid, written through the locked descriptor."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _lock(project: Project, name: str) -> FileLock:
    path = project.cache_dir / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, on_acquired=_write_pid)


def _holder(lock: FileLock) -> str:
    try:
        return Path(lock.lock_file).read_text().strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def chapter_locks(project: Project, names: Iterable[str]) -> Iterator[None]:
    """Hold the locks of the chapters ``names`` (non-blocking); raise :class:`ChapterBusy` if one is held."""
    with ExitStack() as held:
        for name in sorted(set(names)):
            lock = _lock(project, name)
            try:
                held.enter_context(lock.acquire(blocking=False))
            except Timeout:
                raise ChapterBusy(
                    f"chapter {name} is being built by another process (pid {_holder(lock)}, lock "
                    f"{lock.lock_file}); wait for that build to finish, then run again") from None
        yield


@contextmanager
def html_lock(project: Project, say=print) -> Iterator[None]:
    """Hold the book-wide lock of the HTML step, waiting (with one message) while another build holds it."""
    lock = _lock(project, "html")
    try:
        held = lock.acquire(blocking=False)
    except Timeout:
        say(f"waiting for another build's HTML step (pid {_holder(lock)}, lock {lock.lock_file}) ...")
        held = lock.acquire()
    with held:
        yield
