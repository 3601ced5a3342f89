"""Issue 26, hostile cases round two, runner side: publishing is all-or-nothing and never loses a committed
table; every sweep / sweep-table argument is checked before work starts; every cluster connection is
bounded in time; garbled files are named, never a raw traceback.

Most tests build a sweep folder by hand (``sweep.json`` + ``points/<id>/result.json``, what the driver
leaves), so they need no Dask cluster and take well under a second; the driver lock is held by a real
process (``flock`` as the driver takes it)."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from ntputils import cli
from ntputils.book.project import Project
from ntputils.sweeps import table as sweep_table
from ntputils.sweeps.cluster import ClusterError, check_scheduler_address, connect
from ntputils.sweeps.spec import SweepSpecError, parse_axes, plan_sweep
from ntputils.sweeps.store import LOCK, DriverRunning, driver_lock, no_driver, sweep_dir
from ntputils.sweeps.table import PublishRefused, SweepTableError, publish

from chapters import add_chapter, chapter_text

TINY = chapter_text("tiny")


def make_project(root: Path) -> Project:
    for name in ("t01_tiny", "t02_other"):
        add_chapter(root, name, "tiny", paper=True)
    return Project(root)


def fake_sweep(project: Project, name: str, n: int = 2, *, chapter: str = "t01_tiny", profile: str = "cpu",
               done: int | None = None, failed: int = 0, code: str = "c" * 64,
               point_code: str | None = None) -> Path:
    """A sweep folder as the driver leaves it: ``n`` points, the first ``done`` with a result (``failed``
    of them errors), the others unfinished."""
    d = sweep_dir(project, name)
    ids = [f"{name}-{i:02d}".replace(".", "_") for i in range(n)]
    desc = {"name": name, "chapter": chapter, "profile": profile, "axes": {"x": list(range(n))},
            "code_hash": code, "points": n, "point_ids": ids, "git": "abc", "machine": "m", "host": "h",
            "started": "2026-01-01T00:00:00+00:00",
            "command": f"python -m ntputils.book sweep t01 --name {name}"}
    (d / "points").mkdir(parents=True, exist_ok=True)
    (d / "sweep.json").write_text(json.dumps(desc))
    for i, pid in enumerate(ids):
        p = d / "points" / pid
        p.mkdir(exist_ok=True)
        if i >= (n if done is None else done):
            (p / "result.json").unlink(missing_ok=True)
            continue
        status = "error" if i < failed else "ok"
        res = {"id": pid, "status": status, "profile": profile, "resolved": {"profile": profile, "x": i},
               "results": {"square": {"value": i * i}}, "comparisons": [], "checks": [],
               "code_hash": point_code or code, "git": "abc", "seconds": 0.1}
        if status == "error":
            res["error"] = "RuntimeError: boom"
        (p / "result.json").write_text(json.dumps(res))
    return d


def committed_dir(project: Project, name: str) -> Path:
    return project.root / "results" / "sweeps" / name


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


def no_strays(project: Project) -> None:
    """Nothing temporary under results/: no hidden folder, no .tmp file."""
    base = project.root / "results"
    strays = [p for p in base.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]
    assert strays == [], strays


def table_cli(project: Project, *args: str) -> int:
    return cli.main(["--root", str(project.root), "sweep-table", *args])


@pytest.fixture
def project(tmp_path) -> Project:
    return make_project(tmp_path)


@pytest.fixture
def good(project) -> dict[str, bytes]:
    """A committed all-ok 3-point table of t01 at the cpu profile."""
    fake_sweep(project, "s1", 3)
    publish(project, "s1")
    return snapshot(committed_dir(project, "s1"))


# ------------------------------------------------------------------------------- publish: refusals
@pytest.mark.parametrize("case, kwargs, message", [
    ("unfinished", {"n": 3, "done": 1}, "2 of its 3 point(s) have no result"),
    ("empty", {"n": 3, "done": 0}, "3 of its 3 point(s) have no result"),
    ("other chapter", {"n": 3, "chapter": "t02_other"}, "it is a sweep of t02_other"),
    ("other profile", {"n": 3, "profile": "paper"}, "its profile is paper"),
    ("fewer points", {"n": 2}, "it has 2 point(s); the committed table"),
    ("failed points", {"n": 3, "failed": 1}, "it has 1 failed point(s)"),
    ("mixed code", {"n": 3, "point_code": "d" * 64}, "made by code hash(es) dddddddddddd"),
])
def test_publish_refuses_what_would_lose_the_committed_table(project, good, capsys, case, kwargs, message):
    fake_sweep(project, "s1", **kwargs)
    assert table_cli(project, "s1", "--publish") == 2, case
    out = capsys.readouterr().out
    assert out.startswith("error: sweep 's1' not published") and message in out and "--force" in out, out
    assert "Traceback" not in out
    assert snapshot(committed_dir(project, "s1")) == good  # nothing written
    no_strays(project)
    # --force is the deliberate replacement
    assert table_cli(project, "s1", "--publish", "--force") == 0
    assert snapshot(committed_dir(project, "s1")) != good
    no_strays(project)


def test_unfinished_sweep_refused_even_without_a_committed_table(project, capsys):
    fake_sweep(project, "s2", 4, done=1)
    assert table_cli(project, "s2", "--publish") == 2
    assert "3 of its 4 point(s) have no result" in capsys.readouterr().out
    assert not committed_dir(project, "s2").exists()


def _hold_lock(path: Path) -> subprocess.Popen:
    """A real process holding the sweep's driver lock the way the driver does."""
    code = ("import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('locked', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_publish_refused_while_the_driver_runs_even_with_force(project, good, capsys):
    d = fake_sweep(project, "s1", 3)
    holder = _hold_lock(d / LOCK)
    try:
        for args in (["--publish"], ["--publish", "--force"]):
            assert table_cli(project, "s1", *args) == 2
            out = capsys.readouterr().out
            assert "driver of sweep 's1' is still running" in out and "--force does not override" in out
        assert snapshot(committed_dir(project, "s1")) == good
    finally:
        holder.kill()
        holder.wait()
    assert table_cli(project, "s1", "--publish") == 0  # the driver is gone (the OS released its lock)


def test_the_driver_holds_its_lock_and_a_publish_keeps_a_driver_out(project):
    d = sweep_dir(project, "s3")
    with driver_lock(d):
        with (d / LOCK).open("r") as f, pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    with no_driver(d), pytest.raises(DriverRunning, match="another sweep driver"), driver_lock(d):
        pass


# ------------------------------------------------------------------------------- publish: the swap
def test_publish_swaps_table_and_provenance_together_and_keeps_extra_files(project, good):
    folder = committed_dir(project, "s1")
    (folder / "NOTES.md").write_text("why this sweep\n")
    (folder / ".table.csv.123.tmp").write_text("stray of an old publish")
    inode = folder.stat().st_ino
    fake_sweep(project, "s1", 4)
    publish(project, "s1")
    new = snapshot(folder)
    assert set(new) == {"table.csv", "provenance.json", "NOTES.md"}  # the stray .tmp is not carried over
    assert new["NOTES.md"] == b"why this sweep\n"
    assert json.loads(new["provenance.json"])["points"] == 4
    assert pd.read_csv(folder / "table.csv").point_id.nunique() == 4
    assert folder.stat().st_ino != inode  # a new folder swapped in, not files rewritten in place
    no_strays(project)


@pytest.mark.parametrize("where", ["exchange", "write"])
def test_a_failing_publish_changes_nothing_and_leaves_no_temporary_folder(project, good, monkeypatch,
                                                                           capsys, where):
    fake_sweep(project, "s1", 4)
    if where == "exchange":
        def boom(a, b):
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(sweep_table, "exchange", boom)
    else:  # the second file (provenance.json) cannot be written
        calls = []
        real = os.fsync

        def fsync(fd):
            calls.append(fd)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            real(fd)
        monkeypatch.setattr(sweep_table.os, "fsync", fsync)
    assert table_cli(project, "s1", "--publish") == 2
    out = capsys.readouterr().out
    assert "cannot publish to" in out and "the committed table is unchanged" in out
    assert snapshot(committed_dir(project, "s1")) == good
    no_strays(project)


def test_publish_without_renameat2_falls_back_to_two_renames(project, good, monkeypatch):
    monkeypatch.setattr(sweep_table, "exchange", lambda a, b: False)
    fake_sweep(project, "s1", 4)
    publish(project, "s1")
    assert json.loads((committed_dir(project, "s1") / "provenance.json").read_text())["points"] == 4
    no_strays(project)


def test_a_killed_publish_leaves_a_folder_the_next_publish_removes(project, good):
    base = project.root / "results" / "sweeps"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = base / f".s1.publish-{dead}-abc"
    stale.mkdir()
    (stale / "table.csv").write_text("half")
    live = base / f".s1.publish-{os.getpid()}-xyz"  # a publish running now (this process)
    live.mkdir()
    publish(project, "s1", force=True)
    assert not stale.exists() and live.exists()
    live.rmdir()
    no_strays(project)


# ------------------------------------------------------------------------------- names and garbled files
@pytest.mark.parametrize("name", ["../evil", "a/b", "/tmp/x", "..", ".", "", ".hidden", "a/../../x", "x" * 81,
                                  "a\nb"])
def test_sweep_table_validates_its_name_before_reading_or_writing(project, capsys, name):
    before = sorted(p for p in project.root.parent.rglob("*"))
    for args in ([name], [name, "--publish"], [name, "--publish", "--force"], [name, "--format", "markdown"]):
        assert table_cli(project, *args) == 2
        out = capsys.readouterr().out
        assert "error: sweep name" in out and "no path separators" in out, out
    assert sorted(p for p in project.root.parent.rglob("*")) == before


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"chapter": "t01_tiny"}', ""])
def test_a_garbled_sweep_json_is_named(project, capsys, text):
    d = fake_sweep(project, "s4", 2)
    (d / "sweep.json").write_text(text)
    for args in (["s4"], ["s4", "--format", "markdown"], ["s4", "--publish"]):
        assert table_cli(project, *args) == 2
        out = capsys.readouterr().out
        assert str(d / "sweep.json") in out and "Traceback" not in out, out
    # the sweep command refuses it too, before anything runs
    assert cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=0,1", "--name", "s4"]) == 2
    assert str(d / "sweep.json") in capsys.readouterr().out


@pytest.mark.parametrize("fname, text", [
    ("table.csv", 'point_id,status\n"unterminated\n'),
    ("table.csv", ""),
    ("table.csv", "a,b\n1,2\n"),
    ("table.csv", b"\xff\xfe\x00garbage"),
    ("provenance.json", "{truncated"),
    ("provenance.json", '{"chapter": "t01_tiny"}'),
])
def test_a_garbled_committed_table_is_named_and_force_replaces_it(project, good, capsys, fname, text):
    path = committed_dir(project, "s1") / fname
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    fake_sweep(project, "s1", 3)
    assert table_cli(project, "s1", "--publish") == 2
    out = capsys.readouterr().out
    assert f"the committed {path}" in out and "git checkout" in out and "Traceback" not in out, out
    assert table_cli(project, "s1", "--publish", "--force") == 0
    assert sweep_table.committed(project, "s1") is not None


def test_sweep_table_reads_a_read_only_sweep_folder(project, capsys, monkeypatch):
    """The sweep folder cannot be written (EROFS; the tests run as root, so chmod would not stop them):
    csv is printed from memory, parquet goes to a temporary folder, publishing only reads it."""
    fake_sweep(project, "s5", 2)

    def readonly(*args, **kwargs):
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(pd.DataFrame, "to_parquet", readonly)
    assert table_cli(project, "s5") == 0
    captured = capsys.readouterr()
    assert "square" in captured.out and "Read-only file system" in captured.err
    assert not (sweep_dir(project, "s5") / "table.csv").exists()
    monkeypatch.undo()
    real = pd.DataFrame.to_parquet

    def only_outside(self, path, *args, **kwargs):
        if str(path).startswith(str(sweep_dir(project, "s5"))):
            raise OSError(30, "Read-only file system")
        return real(self, path, *args, **kwargs)
    monkeypatch.setattr(pd.DataFrame, "to_parquet", only_outside)
    assert table_cli(project, "s5", "--format", "parquet") == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.exists() and not path.is_relative_to(project.root) and len(pd.read_parquet(path)) == 2
    assert table_cli(project, "s5", "--publish") == 0
    assert (committed_dir(project, "s5") / "table.csv").exists()


def test_publish_into_an_unwritable_results_folder_is_a_clear_error(project, capsys):
    fake_sweep(project, "s6", 2)
    (project.root / "results").write_text("a file where the folder should be")
    assert table_cli(project, "s6", "--publish") == 2
    out = capsys.readouterr().out
    assert "cannot write under" in out and "Traceback" not in out


# ------------------------------------------------------------------------------- sweep: one plan per name
@pytest.mark.parametrize("args, what", [
    (["-p", "x=0,1,2"], "axes"),
    (["-p", "x=0,1", "--profile", "paper"], "profile"),
    (["-p", "lr=0.1,0.2"], "axes"),
])
def test_a_second_sweep_under_a_name_with_another_plan_is_refused(project, capsys, args, what):
    d = fake_sweep(project, "s7", 2)
    before = (d / "sweep.json").read_bytes()
    assert cli.main(["--root", str(project.root), "sweep", "t01", *args, "--name", "s7"]) == 2
    out = capsys.readouterr().out
    assert "sweep 's7' already exists with another plan" in out and what in out
    assert "python -m ntputils.book sweep t01 --name s7" in out  # the existing plan's command
    assert (d / "sweep.json").read_bytes() == before
    # another chapter under the name
    assert cli.main(["--root", str(project.root), "sweep", "t02", "-p", "x=0,1", "--name", "s7"]) == 2
    assert "chapter t01_tiny, not t02_other" in capsys.readouterr().out


@pytest.mark.parametrize("values", ["1e999,0.5", "-1e999", "[1.0,1e400]", "{'a':1e999}"])
def test_infinite_values_are_refused_before_a_sweep_or_build_starts(project, values, capsys):
    # papermill would write float('inf'), which a chapter's parameters check refuses as not a literal
    with pytest.raises(SweepSpecError, match="infinite number cannot be passed"):
        plan_sweep(project, "t01", [f"lr={values}", "x=1"], name="big")
    first = values.split(",")[0] if values[0] not in "[{" else values
    build = ["--root", str(project.root), "build", "--only", "t01", "--no-html"]
    assert cli.main([*build, "-p", f"lr={first}"]) == 2
    assert "infinite number cannot be passed" in capsys.readouterr().out
    assert not (project.root / "sweeps" / "big").exists()
    from ntputils.sweeps.spec import _cli_value

    for bad in (float("nan"), float("inf"), [1.0, float("-inf")]):
        with pytest.raises(SweepSpecError, match="cannot be a swept value"):
            _cli_value(bad)


def test_text_that_is_not_utf8_is_refused_before_a_sweep_or_build_starts(project, capsys):
    bad = "ab\udcff"  # what a shell hands Python for the byte 0xff
    with pytest.raises(SweepSpecError, match="not valid UTF-8"):
        plan_sweep(project, "t01", [f"tag={bad},b"], name="u8")
    build = ["--root", str(project.root), "build", "--only", "t01", "--no-html"]
    assert cli.main([*build, "-p", f"tag={bad}"]) == 2
    assert "not valid UTF-8" in capsys.readouterr().out


def test_a_huge_range_is_refused_before_it_is_listed(project):
    for text in ("0:99999999999999999999", "0:1000000000", "10**9:0:-1".replace("10**9", "1000000000")):
        with pytest.raises(SweepSpecError, match="values; a sweep has at most"):
            parse_axes([f"x={text}"])
    assert parse_axes(["x=5:0:-2"]) == {"x": [5, 3, 1]}


def test_an_empty_sweep_name_is_refused(project):
    with pytest.raises(SweepSpecError, match="--name ''"):
        plan_sweep(project, "t01", ["x=1"], name="")


def test_stored_commands_quote_strings_with_commas_spaces_and_ranges(project):
    text = TINY.replace("lr = 0.1 ", "tag = 'a'\nlr = 0.1 ")
    (project.root / "notebooks" / "t03_tags.py").write_text(text)
    plan = plan_sweep(project, "t03", ["tag='a,b','x y','0:3',plain"], name="tags")
    args = shlex.split(plan.command())
    pairs = [args[i + 1] for i, a in enumerate(args) if a == "-p"]
    assert parse_axes(pairs) == {"tag": ["a,b", "x y", "0:3", "plain"]}


# ------------------------------------------------------------------------------- cluster options
@pytest.mark.parametrize("address", ["tcp://", "tcp://host", "foo://host:1", "tcp://host:0", "tcp://host:99999",
                                     "tcp://host:port", "host", "::::", "tcp://a b:1", ""])
def test_a_malformed_scheduler_address_is_exit_2_without_a_traceback(project, capsys, address):
    code = cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=0,1", "--scheduler", address])
    out = capsys.readouterr().out
    assert code == 2 and "error: --scheduler" in out and "Traceback" not in out, out
    assert not (project.root / "sweeps").exists()


def test_well_formed_scheduler_addresses_pass_the_check():
    for address in ("tcp://127.0.0.1:8786", "tcp://head:8786", "tls://head.cluster:8786", "head:8786",
                    "tcp://[::1]:8786"):
        assert check_scheduler_address(address) == address


@pytest.mark.parametrize("text", ["-1", "0", "nan", "inf", "-inf", "abc", ""])
def test_bad_connect_timeout_is_exit_2(project, capsys, text):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=0", "--scheduler", "tcp://h:1",
                  "--connect-timeout", text])
    assert exc.value.code == 2 and "--connect-timeout" in capsys.readouterr().err
    from ntputils.sweeps.sweep import sweep_command

    for value in (-1.0, 0.0, float("nan"), float("inf"), "10", True):
        assert sweep_command(project, "t01", ["x=0"], scheduler="tcp://h:1", connect_timeout=value) == 2
        assert "--connect-timeout must be" in capsys.readouterr().out


@pytest.fixture
def silent_server():
    """A TCP service on 127.0.0.1 that accepts connections and never says anything."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                continue
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    for c in conns:
        c.close()
    srv.close()


def test_a_scheduler_that_accepts_but_never_answers_fails_within_the_timeout(project, capsys, silent_server):
    t0 = time.time()
    code = cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=0,1", "--no-progress",
                     "--scheduler", f"tcp://127.0.0.1:{silent_server}", "--connect-timeout", "1.5"])
    elapsed = time.time() - t0
    out = capsys.readouterr().out
    assert code == 2 and elapsed < 10, (elapsed, out)
    assert f"cannot reach the dask scheduler at tcp://127.0.0.1:{silent_server} within 1.5 s" in out
    assert "no Dask handshake" in out
    with pytest.raises(ClusterError), connect(scheduler=f"tcp://127.0.0.1:{silent_server}", timeout=1.0):
        pass


def test_slurm_without_sbatch_fails_at_once_naming_it(project, capsys, tmp_path, monkeypatch):
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text("jobqueue:\n  slurm:\n    queue: q\n    cores: 2\n    memory: 4GB\n"
                   "    walltime: '01:00:00'\n")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    t0 = time.time()
    code = cli.main(["--root", str(project.root), "sweep", "t01", "-p", "x=0", "--slurm", str(cfg)])
    out = capsys.readouterr().out
    assert code == 2 and time.time() - t0 < 10
    assert "sbatch" in out and "on PATH" in out and "Traceback" not in out
    assert not (project.root / "sweeps").exists()
    with pytest.raises(ClusterError, match="sbatch"), connect(slurm=cfg):
        pass


def test_sweep_table_refuses_an_unknown_format(project, capsys):
    fake_sweep(project, "s8", 1)
    assert sweep_table.table_command(project, "s8", fmt="xlsx") == 2
    assert "--format 'xlsx'" in capsys.readouterr().out


def test_sweep_table_error_types_are_exit_2_not_tracebacks(project, capsys):
    assert table_cli(project, "nope") == 2
    assert "no sweep named 'nope'" in capsys.readouterr().out
    with pytest.raises(SweepTableError):
        sweep_table.check_name("../x")
    with pytest.raises(PublishRefused):
        fake_sweep(project, "s9", 2, done=0)
        publish(project, "s9")


SLEEPY = (TINY.replace("lr = 0.1 ", "sleep_s = 0.0\nlr = 0.1 ")
          .replace("print(x, lr)", "import time\ntime.sleep(sleep_s)"))


@pytest.mark.slow
def test_publishing_a_real_sweep_while_its_driver_runs_and_after_it_was_killed(project, good, capsys):
    """The issue's case: a real driver on a LocalCluster; publish while it runs, then after it is killed
    mid-point: both refused (exit 2), the committed table untouched."""
    import signal

    (project.root / "notebooks" / "t04_sleepy.py").write_text(SLEEPY)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    cmd = [sys.executable, "-m", "ntputils.book", "--root", str(project.root), "sweep", "t04", "-p", "x=0,1",
           "-p", "sleep_s=120", "--name", "s1-real", "--workers", "1", "--no-progress"]
    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    points = sweep_dir(project, "s1-real") / "points"
    try:
        deadline = time.time() + 120
        while not list(points.glob("*/attempts")) and time.time() < deadline:
            time.sleep(0.2)
        assert list(points.glob("*/attempts")), "the first point did not start"
        assert table_cli(project, "s1-real", "--publish") == 2
        assert "driver of sweep 's1-real' is still running" in capsys.readouterr().out
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert table_cli(project, "s1-real", "--publish") == 2
    assert "2 of its 2 point(s) have no result" in capsys.readouterr().out
    assert not committed_dir(project, "s1-real").exists() and snapshot(committed_dir(project, "s1")) == good
    no_strays(project)


def test_a_garbled_attempts_file_is_read_line_by_line(project, capsys):
    d = fake_sweep(project, "sg", 2)
    attempts = d / "points" / "sg-00" / "attempts"
    attempts.write_bytes(b'\xff\xfe{x\n{"run": "r1", "pid": 7}\n')
    from ntputils.sweeps.store import read_attempts

    assert read_attempts(attempts.parent) == [{"run": "r1", "pid": 7}]
    assert table_cli(project, "sg") == 0
    assert cli.main(["--root", str(project.root), "sweep-status", "sg"]) == 0
    assert "Traceback" not in capsys.readouterr().out
