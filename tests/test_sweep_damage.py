"""A full disk, a read-only sweep folder and damaged results (#47 items 4-5): each is one line naming the
file and the problem, a non-zero exit, no traceback, and no partial file that reads as whole. The disk and
permission faults are simulated (the tests run as root, where chmod stops nothing)."""

from __future__ import annotations

import contextlib
import errno
from pathlib import Path

import pandas as pd
import pytest

from ntputils.book import cli, sweep
from ntputils.book.project import Project
from ntputils.book.sweep_spec import plan_sweep
from ntputils.book.sweep_store import sweep_dir

from chapters import add_chapter


@pytest.fixture
def project(tmp_path) -> Project:
    add_chapter(tmp_path, "t01_tiny", "records_values", paper=True)
    return Project(tmp_path)


@pytest.fixture
def no_cluster(monkeypatch):
    """The driver without Dask: no cluster, and its points 'ran' without writing a result."""
    @contextlib.contextmanager
    def connect(**kwargs):
        yield None
    monkeypatch.setattr(sweep, "connect", connect)
    monkeypatch.setattr(sweep, "_execute", lambda *args, **kwargs: {})


def test_a_full_disk_names_the_path_and_leaves_no_partial_table(project, no_cluster, monkeypatch, capsys):
    def full(self, path, *args, **kwargs):
        Path(path).write_bytes(b"PAR1 half a table")  # what a write cut by ENOSPC leaves
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    plan = plan_sweep(project, "t01", ["x=1"])
    code = sweep.run_sweep(project, plan, progress=False)
    out = capsys.readouterr().out
    folder = sweep_dir(project, "t01")
    assert code == sweep.EXIT_FAILED, out
    assert f"no space left on the device holding {folder / 'table.parquet'}" in out, out
    assert not (folder / "table.parquet").exists() and not list(folder.glob(".*.tmp")), list(folder.iterdir())


def test_resuming_into_a_read_only_sweep_folder_is_one_line(project, monkeypatch, capsys):
    folder = sweep_dir(project, "t01")
    real_open = Path.open

    def read_only(self, mode="r", *args, **kwargs):
        if self.is_relative_to(folder) and any(c in mode for c in "wax+"):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_open(self, mode, *args, **kwargs)
    folder.mkdir(parents=True)
    monkeypatch.setattr(Path, "open", read_only)
    code = cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_FAILED and f"cannot write {folder / '.lock'}: Read-only file system" in out, out
    assert "Traceback" not in out
