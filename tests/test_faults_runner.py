"""Issue 16, runner faults: bad options are refused before any kernel starts, concurrent builds of one
chapter are refused, a failure keeps the last good notebook (shown under a banner), stale and orphan
pages are removed, the browser check flags stale pages, and Ctrl-C stops papermill and kernel at once.

Concurrency and Ctrl-C use real processes and signals on a throw-away project with tiny chapters.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ntputils import cli
from ntputils.book import build as book_build
from ntputils.book import html
from ntputils.book.execute import FAILED_BANNER_TAG, read_meta, run_id
from ntputils.book.params import chapter_spec, read_source
from ntputils.book.project import Project
from ntputils.chapter import ParameterError
from tests.browser_check import staleness

from chapters import add_chapter, chapter_text

REPO = Path(__file__).resolve().parents[1]

CHAPTER = chapter_text("sleeps")  # writes kernel.pid, sleeps sleep_s, checks n > 0

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Chapters
    chapters:
      - file: book/a01_sleepy
"""


def make_project(root: Path, text: str | None = None) -> Project:
    source = add_chapter(root, "a01_sleepy", "sleeps", paper=True)
    if text is not None:  # a variant of the fixture
        source.write_text(text)
    (root / "book").mkdir()
    (root / "_toc.yml").write_text(TOC)
    (root / "book" / "intro.md").write_text("# Intro\n")
    return Project(root)


def fake_good_notebook(project: Project, key: str = "k" * 64) -> Path:
    """A valid executed notebook with ``ok`` metadata (what a previous good run left)."""
    meta = {"key": key, "status": "ok", "chapter": "a01_sleepy", "parameters": {"profile": "cpu"},
            "resolved": {"profile": "cpu", "n": 1}, "profile": "cpu", "seed": 0, "device": "cpu",
            "executed_at": "2026-01-01T00:00:00+00:00", "git": "abc1234", "checks": [], "seconds": 1.0}
    nb = {"cells": [{"id": "title", "cell_type": "markdown", "metadata": {}, "source": "# A sleepy chapter"}],
          "metadata": {"ntpbook": meta}, "nbformat": 4, "nbformat_minor": 5}
    path = project.executed(project.chapters()[0])
    path.write_text(json.dumps(nb))
    return path


def cli_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ntputils.book", "--root", str(root), *args]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        return (Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]) != "Z"
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        found = children.get(todo.pop(), [])
        out += found
        todo += found
    return out


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


# ---------------------------------------------------------------- validation before any kernel
@pytest.mark.parametrize("timeout", [-1.0, 0.0, float("nan"), float("inf")])
def test_bad_timeout_refused_before_anything_runs(tmp_path, capsys, timeout):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    before = good.read_bytes()
    assert book_build.build(project, make_html=False, timeout=timeout) == book_build.EXIT_USAGE
    assert "--timeout must be a positive finite number" in capsys.readouterr().out
    assert good.read_bytes() == before and not (project.cache_dir / "work").exists()


@pytest.mark.parametrize("text", ["-1", "0", "nan", "inf", "abc"])
def test_bad_timeout_on_the_command_line(text, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parser().parse_args(["build", "--timeout", text])
    assert exc.value.code == 2
    assert "--timeout" in capsys.readouterr().err


@pytest.mark.parametrize("override, message", [
    ({"device": "tpu"}, "unknown device 'tpu'"),
    ({"device": "cuda:x"}, "unknown device"),
    ({"seed": 2**70}, "'seed' must be an int in [0, 2**63 - 1]"),
    ({"seed": -1}, "'seed' must be an int in"),
    ({"n": "abc"}, "must be of type int"),
])
def test_device_and_seed_checked_before_the_kernel(tmp_path, capsys, override, message):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    before = good.read_bytes()
    t0 = time.time()
    assert book_build.build(project, make_html=False, overrides=override) == book_build.EXIT_USAGE
    assert message in capsys.readouterr().out
    assert time.time() - t0 < 5 and good.read_bytes() == before  # no kernel, nothing deleted


def test_conflicting_profiles_refused(tmp_path, capsys):
    project = make_project(tmp_path)
    code = book_build.build(project, profile="paper", overrides={"profile": "cpu"}, make_html=False)
    assert code == book_build.EXIT_USAGE
    assert "conflicting profiles" in capsys.readouterr().out


def test_repeated_only_accumulates():
    args = cli.parser().parse_args(["build", "--only", "b01", "--only", "a01", "a02"])
    assert args.only == ["b01", "a01", "a02"]


def test_nonexistent_root_is_an_error(tmp_path, capsys):
    assert cli.main(["--root", str(tmp_path / "nope"), "list"]) == book_build.EXIT_USAGE
    assert "no project there" in capsys.readouterr().out


def test_unparseable_parameters_cell_or_profile_file_is_an_error_not_skipped(tmp_path):
    project = make_project(tmp_path, CHAPTER.replace("n = 1 ", "n = 1 +* 2 "))
    source = project.chapters()[0].source
    paper = source.with_name("a01_sleepy.paper.yaml")
    with pytest.raises(ParameterError, match="parameters cell of a01_sleepy does not parse"):
        chapter_spec("a01_sleepy", read_source(source), source)
    source.write_text(CHAPTER)
    for text, message in (("profile: paper\nn: [1,\n", "cannot read profile 'paper' of a01_sleepy"),
                          ("n: 2\n", "with `profile: paper`"),
                          ("profile: paper\nn: 2.5\n", "must be of type int"),
                          ("profile: paper\nm: 2\n", "unknown parameter 'm'")):
        paper.write_text(text)
        with pytest.raises(ParameterError, match=message):
            chapter_spec("a01_sleepy", read_source(source), source)
    paper.write_text("profile: paper\nn: 2\n")
    spec = chapter_spec("a01_sleepy", read_source(source), source)
    assert spec.resolve({"profile": "paper"})["n"] == 2 and spec.resolve({})["n"] == 1
    assert spec.injected(spec.resolve({"profile": "paper"})) == {"profile": "paper", "n": 2}
    with pytest.raises(ParameterError, match="must be of type int"):
        spec.resolve({"n": "abc"})
    with pytest.raises(ParameterError, match="unknown profile 'gpu'"):
        spec.resolve({"profile": "gpu"})


def test_unparseable_parameters_fail_the_chapter_and_keep_the_good_notebook(tmp_path, capsys):
    project = make_project(tmp_path, CHAPTER.replace("n = 1 ", "n = 1 +* 2 "))
    good = fake_good_notebook(project)
    assert book_build.build(project, make_html=False, overrides={"n": "abc"}) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "does not parse" in out
    meta = read_meta(good)
    assert meta["status"] == "ok" and "does not parse" in meta["latest_failure"]["error"]


# ---------------------------------------------------------------- a failure keeps the good result
def test_failed_run_keeps_last_good_notebook_with_banner(tmp_path, capsys):
    """Real kernels: a good run (n=1), then a failing run (n=-1): the good notebook stays, marked."""
    project = make_project(tmp_path)
    chapter = project.chapters()[0]
    assert book_build.build(project, make_html=False) == book_build.EXIT_OK
    good_meta = read_meta(project.executed(chapter))
    assert book_build.build(project, make_html=False, overrides={"n": -1}) == book_build.EXIT_FAILED
    capsys.readouterr()
    nb = json.loads(project.executed(chapter).read_text())
    meta = nb["metadata"]["ntpbook"]
    assert meta["key"] == good_meta["key"] and meta["resolved"]["n"] == 1  # the good run, unchanged
    assert "n positive" in meta["latest_failure"]["error"]
    banner = [c for c in nb["cells"] if FAILED_BANNER_TAG in c["metadata"].get("tags", [])]
    assert len(banner) == 1 and "Latest run failed" in "".join(banner[0]["source"])
    assert good_meta["executed_at"] in "".join(banner[0]["source"]).replace("\\", "")
    keys = book_build.KeyCalculator(project)
    assert not keys.is_current(chapter) and keys.renderable(chapter)
    status = project.status_page.read_text()
    assert "| [a01_sleepy](a01_sleepy.ipynb) | failed |" in status
    # the chapter is not a cache hit any more, and the next good run removes the banner
    assert book_build.build(project, make_html=False) == book_build.EXIT_OK
    assert "[cached]" not in capsys.readouterr().out
    nb = json.loads(project.executed(chapter).read_text())
    assert "latest_failure" not in nb["metadata"]["ntpbook"]
    assert not any(FAILED_BANNER_TAG in c["metadata"].get("tags", []) for c in nb["cells"])
    # every run used its own work folder, removed afterwards; no shared record file
    assert list((project.cache_dir / "work").iterdir()) == []
    assert not (project.cache_dir / "records").exists()


# ---------------------------------------------------------------- concurrency (real processes)
def test_second_concurrent_build_of_a_chapter_is_refused(tmp_path):
    project = make_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(cli_cmd(tmp_path, "build", "--only", "a01", "--no-html", "-p", "sleep_s=4.0",
                                     "-p", "n=3"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env)
    try:
        wait_for(lambda: (tmp_path / "kernel.pid").exists(), 120, "the first build's kernel")
        second = subprocess.run(cli_cmd(tmp_path, "build", "--only", "a01", "--force", "--no-html",
                                        "-p", "n=7"), capture_output=True, text=True, env=env, timeout=60)
        assert second.returncode == book_build.EXIT_BUSY, second.stdout + second.stderr
        assert "a01_sleepy is being built by another process" in second.stdout
        assert f"pid {first.pid}" in second.stdout
        out, _ = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, out
    meta = read_meta(project.executed(project.chapters()[0]))
    assert meta["resolved"]["n"] == 3 and meta["status"] == "ok"  # the first build's run, intact


# ---------------------------------------------------------------- Ctrl-C (real signal)
def test_one_ctrl_c_stops_papermill_and_kernel_and_keeps_the_good_result(tmp_path):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    before = good.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # a terminal's Ctrl-C: SIGINT at its default disposition in the build (a test run from a background
    # job, e.g. `make test &`, inherits SIGINT ignored, and Python then never raises KeyboardInterrupt)
    proc = subprocess.Popen(cli_cmd(tmp_path, "build", "--only", "a01", "--no-html", "-p", "sleep_s=600.0"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(lambda: (tmp_path / "kernel.pid").exists(), 120, "the kernel to start")
        kernel = int((tmp_path / "kernel.pid").read_text())
        tree = descendants(proc.pid)
        assert kernel in tree and len(tree) >= 2  # papermill, the build's child, and its kernel
        assert Path(f"/proc/{tree[0]}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"papermill"]
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        elapsed = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == book_build.EXIT_INTERRUPTED, out
    assert elapsed < 30
    assert "interrupted: stopped 1 running chapter(s)" in out and "Traceback" not in out
    wait_for(lambda: not any(alive(p) for p in tree), 10, f"papermill/kernel {tree} to die")
    assert good.read_bytes() == before  # the previous good result is untouched
    assert project.status_page.exists()
    assert list((project.cache_dir / "work").iterdir()) == []


# ---------------------------------------------------------------- stale / orphan HTML
def _fake_page(project: Project, name: str, text: str) -> Path:
    page = project.html_dir / "book" / f"{name}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


def test_prune_removes_orphan_and_stale_pages(tmp_path):
    project = make_project(tmp_path)
    (project.notebooks_dir / "a02_other.py").write_text(CHAPTER)
    keep = _fake_page(project, "a01_sleepy", "ok")
    stale = _fake_page(project, "a02_other", "old")
    orphan = _fake_page(project, "a09_removed", "old")
    intro = _fake_page(project, "intro", "intro")
    removed = html.prune_pages(project, {"a01_sleepy"}, toc_entries={"book/intro", "book/a01_sleepy"})
    assert sorted(removed) == ["book/a02_other.html", "book/a09_removed.html"]
    assert keep.exists() and intro.exists() and not stale.exists() and not orphan.exists()


def test_browser_staleness_check(tmp_path, monkeypatch):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    meta = read_meta(good)
    keys = book_build.KeyCalculator(project)
    page = _fake_page(project, "a01_sleepy", f"<p>{run_id(meta)}</p>")
    problems = staleness(project, page, keys)
    assert any("is not current" in p for p in problems)  # the fake key is not the chapter's key
    monkeypatch.setattr(keys, "renderable", lambda chapter: True)
    assert staleness(project, page, keys) == []
    page.write_text("<p>an older build</p>")
    assert any("does not show the run" in p for p in staleness(project, page, keys))
    good.unlink()
    assert any("orphan page" in p for p in staleness(project, page, keys))


def test_failed_chapter_page_is_rebuilt_with_the_banner(tmp_path, capsys):
    """End to end with jupyter-book: after a failed run the page shows the last good run under a
    'latest run failed' banner, and the browser check's staleness rules accept exactly that page."""
    project = make_project(tmp_path)
    status = "  - caption: Reference\n    chapters:\n      - file: book/status\n"
    (tmp_path / "_toc.yml").write_text(TOC + status)
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    shutil.copy(REPO / "book" / "references.bib", tmp_path / "book" / "references.bib")
    assert book_build.build(project, make_html=False) == book_build.EXIT_OK
    page = project.html_dir / "book" / "a01_sleepy.html"
    assert book_build.build(project, overrides={"n": -1}) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "building HTML" in out
    text = page.read_text()
    assert "Latest run failed" in text and "n positive" in text
    assert staleness(project, page, book_build.KeyCalculator(project)) == []
    # a page built before the failure (no banner) would be flagged
    page.write_text(text.replace("Latest run failed", "Latest run"))
    assert any("banner" in p for p in staleness(project, page, book_build.KeyCalculator(project)))


# ---------------------------------------------------------------- issue 26: no orphans, whatever ends it
def _spawn(code: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env,
                            **kwargs)


def test_papermill_gets_the_parent_death_signal_when_the_build_is_killed():
    """The build's own Popen options for papermill (``_die_with_parent``): SIGKILL of the parent ends
    the child at once."""
    parent = _spawn(
        "import os, subprocess, sys, time\n"
        "from ntputils.book.execute import _die_with_parent\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
        "                         start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(120)\n")
    try:
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait()
        wait_for(lambda: not alive(child), 10, "the child to die with its parent")
    finally:
        parent.kill()


def test_the_kernel_exits_when_its_papermill_is_killed(tmp_path):
    """What a SIGKILLed build relies on: its papermill gets SIGKILL (above) and cannot stop its kernel, which
    runs in a session of its own; the kernel exits by itself (jupyter_client's JPY_PARENT_PID)."""
    from ntputils.book.execute import papermill_command, worker_env, write_input, write_params

    project = make_project(tmp_path)
    files = {name: tmp_path / name for name in ("in.ipynb", "out.ipynb", "params.yaml")}
    write_input(project.chapters()[0].source, files["in.ipynb"])
    write_params({"sleep_s": 600.0}, files["params.yaml"])
    papermill = subprocess.Popen(papermill_command(*files.values(), tmp_path), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 env=worker_env(project, tmp_path / "record.json", threads=1))
    kernel = None
    try:
        wait_for(lambda: (tmp_path / "kernel.pid").exists(), 120, "the kernel to start")
        kernel = int((tmp_path / "kernel.pid").read_text())
        assert os.getsid(kernel) == kernel != os.getsid(papermill.pid)  # its own session
        environ = Path(f"/proc/{kernel}/environ").read_bytes().split(b"\0")
        assert f"JPY_PARENT_PID={papermill.pid}".encode() in environ
        papermill.kill()
        papermill.wait()
        wait_for(lambda: not alive(kernel), 10, "the kernel to exit after its papermill")
    finally:
        papermill.kill()
        if kernel is not None and alive(kernel):
            os.kill(kernel, signal.SIGKILL)


def test_a_dead_builds_work_folder_and_survivors_are_reaped_live_ones_kept(tmp_path):
    """A work folder whose chapter lock nobody holds is a dead build's: what runs for it is killed and the
    folder removed; a folder of a chapter whose lock a build holds is kept."""
    from ntputils.book.execute import reap_stale_runs
    from ntputils.book.locks import chapter_locks
    from ntputils.chapter import RECORD_ENV

    project = make_project(tmp_path)
    work = project.cache_dir / "work"
    work.mkdir(parents=True)
    dead = work / "a01_sleepy.abc"
    dead.mkdir()
    (dead / "run.log").write_text("half a run")
    survivor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                start_new_session=True,
                                env={**os.environ, RECORD_ENV: str(dead / "record.json")})
    live = work / "a02_other.live"
    live.mkdir()
    try:
        wait_for(lambda: alive(survivor.pid), 5, "the survivor")
        with chapter_locks(project, ["a02_other"]):
            removed, killed = reap_stale_runs(project)
        assert removed == [dead] and killed == [survivor.pid]
        assert survivor.wait(timeout=10) == -signal.SIGKILL
        assert live.exists()
    finally:
        if survivor.poll() is None:
            survivor.kill()


def _build_proc(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(cli_cmd(tmp_path, "build", "--only", "a01", "--no-html", *args),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


@pytest.mark.slow
def test_sigkill_of_the_build_takes_papermill_and_kernel_and_the_next_build_reaps_its_folder(tmp_path):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    before = good.read_bytes()
    proc = _build_proc(tmp_path, "-p", "sleep_s=600.0")
    try:
        wait_for(lambda: (tmp_path / "kernel.pid").exists(), 120, "the kernel to start")
        kernel = int((tmp_path / "kernel.pid").read_text())
        tree = descendants(proc.pid)
        assert kernel in tree and len(tree) >= 2
        proc.kill()  # SIGKILL: no handler runs in the build
        proc.wait()
        wait_for(lambda: not any(alive(p) for p in tree), 15, f"papermill/kernel {tree} to die")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert good.read_bytes() == before
    assert len(list((project.cache_dir / "work").iterdir())) == 1  # the dead build's folder
    (tmp_path / "kernel.pid").unlink()
    again = subprocess.run(cli_cmd(tmp_path, "build", "--only", "a01", "--no-html", "--force"),
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    assert again.returncode == 0, again.stdout
    assert "removed 1 work folder(s) of dead builds" in again.stdout
    assert list((project.cache_dir / "work").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_of_the_build_is_handled_like_ctrl_c(tmp_path, sig):
    project = make_project(tmp_path)
    good = fake_good_notebook(project)
    before = good.read_bytes()
    proc = _build_proc(tmp_path, "-p", "sleep_s=600.0")
    try:
        wait_for(lambda: (tmp_path / "kernel.pid").exists(), 120, "the kernel to start")
        tree = descendants(proc.pid)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, out
    assert f"terminated ({signal.Signals(sig).name}): stopped 1 running chapter(s)" in out
    assert "Traceback" not in out
    wait_for(lambda: not any(alive(p) for p in tree), 10, f"papermill/kernel {tree} to die")
    assert good.read_bytes() == before and project.status_page.exists()
    assert list((project.cache_dir / "work").iterdir()) == []
