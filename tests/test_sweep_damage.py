"""A full disk, a read-only sweep folder and damaged results (#47 items 4-5): each is one line naming the
file and the problem, a non-zero exit, no traceback, and no partial file that reads as whole. The disk and
permission faults are simulated (the tests run as root, where chmod stops nothing)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import pandas as pd
import pytest

from ntputils import cli
from ntputils.book import build as book_build
from ntputils.book.project import Project
from ntputils.sweeps import sweep
from ntputils.sweeps.spec import plan_sweep
from ntputils.sweeps.store import sweep_dir

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
    real_os_open = os.open

    def read_only_os(path, flags, *args, **kwargs):  # filelock opens the lock file with os.open
        if Path(path).is_relative_to(folder) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_os_open(path, flags, *args, **kwargs)
    folder.mkdir(parents=True)
    monkeypatch.setattr(Path, "open", read_only)
    monkeypatch.setattr(os, "open", read_only_os)
    code = cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=1", "--no-progress"])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_FAILED, out
    assert f"cannot write {folder / '.lock'}: Read-only file system" in out, out
    assert "Traceback" not in out


# ------------------------------------------------------------------ damaged results, wrong words


@pytest.fixture
def tiny(tmp_path) -> Project:
    """A project with the fixture chapters of the publish tests (t01_tiny, t02_other)."""
    from test_faults_publish import make_project

    return make_project(tmp_path)


def test_a_result_with_seconds_that_are_not_a_number_is_named(tiny, capsys):
    from test_faults_publish import fake_sweep

    folder = fake_sweep(tiny, "s1", 2)
    damaged = folder / "points" / "s1-00" / "result.json"
    damaged.write_text(damaged.read_text().replace('"seconds": 0.1', '"seconds": "NaN"'))
    code = cli.main(["--root", str(tiny.root), "sweep-table", "s1"])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE, out
    assert f"{damaged} is damaged: its seconds are 'NaN', not a finite number" in out, out
    assert not (folder / "table.parquet").exists()


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_sweep_report_out_that_is_not_a_folder_is_named(tiny, capsys, where):
    from test_faults_publish import fake_sweep

    fake_sweep(tiny, "s1", 2)
    add_chapter(tiny.root, "c03_sweeps", "tiny")  # the page is never run: --out is checked first
    afile = tiny.root / "afile"
    afile.write_text("not a folder")
    out_dir = afile if where == "a file" else afile / "report"
    code = cli.main(["--root", str(tiny.root), "sweep-report", "s1", "--out", str(out_dir)])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE and str(out_dir) in out and "Traceback" not in out, out
    assert ("is a file, not a folder" if where == "a file" else "Not a directory") in out, out


def test_recertify_of_a_header_only_table_says_so(tiny, capsys):
    from test_faults_publish import committed_dir, fake_sweep

    from ntputils.sweeps.table import publish

    fake_sweep(tiny, "s1", 2)
    publish(tiny, "s1")
    table = committed_dir(tiny, "s1") / "table.csv"
    table.write_text(table.read_text().splitlines()[0] + "\n")
    code = cli.main(["--root", str(tiny.root), "recertify", "s1", "--force", "--no-progress"])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE, out
    assert f"{table} has no rows (only its header)" in out and "re-run point" not in out, out
    assert not (tiny.root / "sweeps" / "recertify-s1").exists()


def test_a_publish_that_cannot_remove_the_old_folder_names_it(tiny, capsys, monkeypatch):
    from test_faults_publish import committed_dir, fake_sweep

    from ntputils.sweeps import table as sweep_table

    fake_sweep(tiny, "s1", 2)
    assert cli.main(["--root", str(tiny.root), "sweep-table", "s1", "--publish"]) == 0

    def stuck(path, onerror=None, **kwargs):
        onerror(os.rmdir, str(path), (PermissionError, PermissionError(13, "Permission denied"), None))
    monkeypatch.setattr(sweep_table.shutil, "rmtree", stuck)
    assert cli.main(["--root", str(tiny.root), "sweep-table", "s1", "--publish", "--force"]) == 0
    err = capsys.readouterr().err
    (stray,) = committed_dir(tiny, "s1").parent.glob(".s1.publish-*")
    assert f"the publish's temporary folder {stray} could not be removed" in err, err
    assert "Permission denied" in err and "not part of the committed table" in err, err
