"""The book runner on a throw-away project: static parameter checks, cache hits and misses, failure
handling (every chapter runs, no stale notebook survives), toc consistency and the status page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ntputils import cli
from ntputils.book import build as book_build
from ntputils.book import html
from ntputils.book.execute import read_meta, run_chapter
from ntputils.book.pages import snapshot
from ntputils.book.params import check_limits, parse_overrides
from ntputils.book.project import Project, ProjectError
from ntputils.chapter import ParameterError
from ntputils.reports.placeholders import is_placeholder, placeholder_exclusions
from ntputils.reports.status import render_status

from chapters import chapter_text

REPO = Path(__file__).resolve().parents[1]

GOOD = chapter_text("passes_check")
FAILING = chapter_text("fails_check")

TOC = """\
format: jb-book
root: book/intro
parts:
  - caption: Chapters
    chapters:
      - file: book/a01_good
      - file: book/a02_failing
  - caption: Reference
    chapters:
      - file: book/status
"""


def make_project(root: Path, chapters: dict[str, str], toc: str = TOC) -> Project:
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    for name, text in chapters.items():
        (root / "notebooks" / f"{name}.py").write_text(text)
    (root / "_toc.yml").write_text(toc)
    (root / "book" / "intro.md").write_text("# Intro\n\nSee $a+b$.\n")
    return Project(root)


def test_select_by_prefix_and_unknown_chapter(tmp_path):
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    assert [c.name for c in project.select(["a01"])] == ["a01_good"]
    assert [c.name for c in project.select(["a02_failing.py", "a01_good"])] == ["a02_failing", "a01_good"]
    with pytest.raises(ProjectError, match="no chapter matches 'b01'.*a01_good, a02_failing"):
        project.select(["b01"])
    assert [c.name for c in project.toc_chapters()] == ["a01_good", "a02_failing"]


def test_unknown_parameter_fails_at_once_naming_it(tmp_path, capsys):
    project = make_project(tmp_path, {"a01_good": GOOD})
    code = cli.main(["--root", str(tmp_path), "build", "--only", "a01", "-p", "foo=1"])
    out = capsys.readouterr().out
    assert code == book_build.EXIT_USAGE
    assert "unknown parameter 'foo'" in out
    assert "valid parameters: profile, seed, device, steps, lr" in out
    assert not project.cache_dir.exists()  # nothing was executed


def test_ill_typed_parameter_and_unknown_profile_fail_at_once(tmp_path, capsys):
    make_project(tmp_path, {"a01_good": GOOD})
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01", "-p", "steps=2.5"]) \
            == book_build.EXIT_USAGE
    assert "'steps' must be of type int" in capsys.readouterr().out
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01", "--profile", "gpu"]) \
            == book_build.EXIT_USAGE
    assert "unknown profile 'gpu'" in capsys.readouterr().out


def test_parse_overrides():
    assert parse_overrides(["steps=10", "lr=1e-3", "device=cpu", "sizes=[1, 2]", "flag=True"]) == {
        "steps": 10, "lr": 1e-3, "device": "cpu", "sizes": [1, 2], "flag": True}
    with pytest.raises(ParameterError, match="NAME=VALUE"):
        parse_overrides(["steps"])


def test_malformed_parameters_cell_fails_that_chapter_only(tmp_path, capsys, monkeypatch):
    bad = GOOD.replace("steps = 3", "steps = int('3')")
    project = make_project(tmp_path, {"a01_good": bad})
    stale = project.executed(project.chapters()[0])
    stale.write_text("{}")
    assert book_build.build(project, make_html=False) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "must be a literal" in out and "a01_good" in out
    assert not stale.exists()


def test_cache_logic_without_kernels(tmp_path, monkeypatch, capsys):
    """Hit when nothing changed; miss on source, parameter or package change; --force overrides."""
    project = make_project(tmp_path, {"a01_good": GOOD})
    chapter = project.chapters()[0]
    calls = []

    def fake_run(project, chapter, parameters, resolved, key, **kw):
        calls.append(parameters)
        meta = {"key": key, "status": "ok", "parameters": parameters, "resolved": resolved, "seconds": 1.0}
        project.executed(chapter).write_text(json.dumps({"cells": [], "metadata": {"ntpbook": meta}}))
        return book_build.RunResult(chapter, "ok", 1.0, meta=meta)

    monkeypatch.setattr(book_build, "run_chapter", fake_run)
    assert book_build.build(project, make_html=False) == 0
    assert book_build.build(project, make_html=False) == 0
    assert len(calls) == 1 and "[cached] a01_good" in capsys.readouterr().out
    assert book_build.build(project, make_html=False, overrides={"steps": 4}) == 0  # parameter change
    assert book_build.build(project, make_html=False, overrides={"steps": 4}) == 0
    assert book_build.build(project, make_html=False, force=True, overrides={"steps": 4}) == 0
    assert calls == [{"profile": "cpu"}, {"profile": "cpu", "steps": 4}, {"profile": "cpu", "steps": 4}]
    keys = book_build.KeyCalculator(project)
    assert keys.is_current(chapter)
    # what the run executed of ntputils: a docstring edit keeps it current, a code edit does not
    from ntputils.book.fingerprint import run_key

    nb = json.loads(project.executed(chapter).read_text())
    meta = nb["metadata"]["ntpbook"]
    meta["trace"] = {"functions": ["m.py:f"], "modules": ["m.py"]}
    meta["trace_key"] = run_key(meta["key"], meta["trace"], {"m.py": b"def f():\n    return 1\n"})
    project.executed(chapter).write_text(json.dumps(nb))
    for source, current in [(b"def f():\n    return 1\n", True),
                            (b"def f():\n    'doc'\n    return 1  # c\n", True),
                            (b"def f():\n    return 2\n", False), (b"def g():\n    return 1\n", False)]:
        assert book_build.KeyCalculator(project, {"m.py": source}).is_current(chapter) == current, source
    chapter.source.write_text(GOOD.replace("> 0", ">= 1"))
    assert not book_build.KeyCalculator(project).is_current(chapter)  # source changed
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy==1.0"]\n')
    chapter.source.write_text(GOOD.replace("> 0", ">= 1").replace(">= 1", "> 0"))
    assert not book_build.KeyCalculator(project).is_current(chapter)  # pins changed


def test_every_chapter_runs_failure_is_reported_and_leaves_no_notebook(tmp_path, capsys):
    """Real papermill runs: a02 fails its check, a01 still executes (with the injected steps=5);
    then a01 is a cache hit."""
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    good, failing = project.chapters()
    project.executed(failing).write_text('{"metadata": {"ntpbook": {"status": "ok", "key": "old"}}}')

    assert book_build.build(project, make_html=True, overrides={"steps": 5}) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "FAILED: a02_failing: AssertionError: check failed: n exceeds five" in out
    assert "Traceback" in out or "----> 1 check(" in out  # the failing cell's traceback
    assert "1 chapter(s) failed: a02_failing" in out
    assert "HTML build skipped" in out
    assert not project.executed(failing).exists()  # the stale notebook is gone
    assert (project.failed_dir() / "a02_failing.ipynb").exists()

    meta = read_meta(project.executed(good))
    assert meta["status"] == "ok" and meta["profile"] == "cpu" and meta["device"] == "cpu"
    assert meta["resolved"]["steps"] == 5 and meta["checks"][0]["passed"] is True  # injected by papermill
    assert meta["parameters"] == {"profile": "cpu", "steps": 5}
    nb = json.loads(project.executed(good).read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert injected and "remove-cell" in injected[0]["metadata"]["tags"]
    assert "How this page was produced" in "".join(nb["cells"][1]["source"])

    status = project.status_page.read_text()
    assert "| [a01_good](a01_good.ipynb) | ok, overrides: steps=5 | cpu | cpu |" in status
    assert "| a02\\_failing | failed |" in status and "**FAIL**" in status
    # each chapter's tables are folded under a one-line count, left open where a check failed
    assert "<details><summary>" in status and "<details open><summary>" in status

    before = project.executed(good).read_bytes()
    assert book_build.build(project, only=["a01"], make_html=False, overrides={"steps": 5}) == 0
    assert "[cached] a01_good" in capsys.readouterr().out
    assert project.executed(good).read_bytes() == before


def test_kernel_rejects_unknown_injected_parameter(tmp_path):
    """Bypass the runner's static check: setup_chapter itself fails on a papermill-injected name."""
    project = make_project(tmp_path, {"a01_good": GOOD})
    chapter = project.chapters()[0]
    result = run_chapter(project, chapter, {"profile": "cpu", "foo": 1}, {}, "key")
    assert result.status == "failed"
    assert "ParameterError" in result.error and "'foo'" in result.error and "valid parameters" in result.error
    assert not project.executed(chapter).exists()


def test_toc_problems_and_partial_toc(tmp_path):
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING, "a03_extra": GOOD})
    (tmp_path / "book" / "status.md").write_text("# Status\n")
    problems = html.toc_problems(project, current={})
    assert any("notebooks/a03_extra.py is not in _toc.yml" in p for p in problems)
    assert any("book/a01_good has no executed notebook" in p for p in problems)
    project.executed(project.chapters()[0]).write_text("{}")
    problems = html.toc_problems(project, current={"a01_good": False})
    assert any("book/a01_good: executed notebook is stale" in p for p in problems)
    with pytest.raises(ProjectError, match="cannot build the HTML"):
        html.check_ready(project, current={})
    partial = html.toc_problems(project, current={}, partial=True)
    assert len(partial) == 1 and "a03_extra" in partial[0]
    assert html.partial_toc(project) is None  # every entry has a file or is a chapter: nothing left out
    (tmp_path / "book" / "status.md").unlink()
    pruned = html.partial_toc(project).read_text()  # chapters stay (a placeholder page each)
    assert "book/a01_good" in pruned and "a02_failing" in pruned and "book/status" not in pruned


def test_a_partial_build_keeps_every_chapter_as_a_placeholder_page(tmp_path, monkeypatch):
    """`--only`/`--partial`: every toc chapter stays in the book (so no chapter or figure number moves); one
    without a current notebook is a placeholder with its title, "not built in this build" and the command
    that builds it; building it replaces the placeholder, and a hand-written page is never overwritten."""
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    (tmp_path / "book" / "status.md").write_text("# Status\n")
    a01, a02 = project.chapters()
    written = html.write_placeholders(project, renderable={"a01_good"})
    assert written == [a02]
    page = html.placeholder_path(project, a02)
    text = page.read_text()
    assert is_placeholder(page) and not html.placeholder_path(project, a01).exists()
    assert text.splitlines()[1] == f"# {html.chapter_title(a02)}" and html.chapter_title(a02) != a02.name
    assert "not built in this build" in text and html.NOT_BUILT_CLASS in text
    assert ".venv/bin/python -m ntputils.book build --only a02" in text
    assert "it has not been executed in this checkout" in text
    # the toc of the partial build lists every chapter, in the full book's order
    assert project.toc_files(html.partial_toc(project)) == project.toc_files()
    # a stale notebook beside its placeholder is kept out of the book (two files for one page otherwise)
    assert placeholder_exclusions(tmp_path) == ["book/a02_failing.ipynb"]
    project.executed(a02).write_text("{}")
    html.write_placeholders(project, renderable={"a01_good"})
    assert "its executed notebook is stale" in page.read_text()
    # built: the placeholder goes
    assert html.write_placeholders(project, renderable={"a01_good", "a02_failing"}) == []
    assert not page.exists() and placeholder_exclusions(tmp_path) == []
    page.write_text("# my notes\n")
    with pytest.raises(ProjectError, match="not a placeholder page"):
        html.write_placeholders(project, renderable={"a01_good"})
    assert page.read_text() == "# my notes\n"


def test_placeholder_pages_of_the_real_book_carry_each_chapters_title(tmp_path):
    """The real toc: every chapter's placeholder has the chapter's own title (its number in the book comes
    from its place in the toc, which a placeholder keeps)."""
    project = Project(REPO)
    for chapter in project.toc_chapters():
        title = html.chapter_title(chapter)
        assert title != chapter.name and not title.startswith("#"), chapter.name


def test_status_page_escapes_and_sums(tmp_path):
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    good, failing = project.chapters()
    meta = {"status": "ok", "key": "k", "profile": "cpu", "device": "cpu", "seed": 0, "seconds": 270.0,
            "resolved": {"profile": "cpu", "seed": 0, "device": "cpu", "steps": 3},
            "checks": [{"claim": "|L| < $1$", "passed": True, "measured": 0.5, "paper": "x|y", "tol": None}],
            "versions": {"python": "3.11", "torch": "2.13.0"}, "git": "abc"}
    project.executed(good).write_text(json.dumps({"metadata": {"ntpbook": meta}}))
    text = render_status(snapshot(project, [good, failing]))
    assert "| 270.0 | 10.0 % | 1/1 passed |" in text
    assert "\\|L\\| \\< \\$1\\$" in text and "x\\|y" in text
    assert "Not executed yet." in text and "`steps=3`" in text
    assert "| a02\\_failing | not executed | - |" in text
    assert "versions: python 3.11, torch 2.13.0" in text


@pytest.mark.slow
def test_html_build_and_browser_check(tmp_path):
    """End to end on a tiny book: papermill, jupyter-book -W, and (if Chromium exists) the browser check."""
    project = make_project(tmp_path, {"a01_good": chapter_text("plots")})
    toc = TOC.replace("      - file: book/a02_failing\n", "") + "      - file: book/references\n"
    (tmp_path / "_toc.yml").write_text(toc)
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    shutil.copy(REPO / "book" / "references.bib", tmp_path / "book" / "references.bib")
    shutil.copy(REPO / "book" / "references.md", tmp_path / "book" / "references.md")
    shutil.copytree(REPO / "book" / "_static", tmp_path / "book" / "_static")  # _config.yml names it
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nSee $a+b$ and {cite}`zhao2024implicit`.\n")
    # what a killed sweep point leaves behind: its input notebook, whose glue roles have no values
    point = tmp_path / "sweeps" / "s" / "points" / "p"
    point.mkdir(parents=True)
    (point / ".input.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "{glue:text}`never_recorded`"}],
         "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert book_build.build(project) == 0
    assert (project.html_dir / "index.html").exists()
    assert (project.html_dir / "book" / "a01_good.html").exists()
    assert (project.html_dir / "book" / "status.html").exists()
    if shutil.which("chromium") is None:
        pytest.skip("chromium not installed")
    pytest.importorskip("playwright")
    from tests.browser_check import check_book

    results, shot = check_book(project, screenshot="a01", out=lambda *a: None)
    assert all(not r.problems for r in results), [r.problems for r in results if r.problems]
    assert shot is not None and shot.stat().st_size > 10_000
    page = next(r for r in results if r.page.name == "a01_good.html")
    assert page.images >= 1 and page.mjx >= 1


def test_environment_yml_agrees_with_pyproject():
    """environment.yml installs the project itself (so the pins are pyproject's) on the same Python."""
    import tomllib

    import yaml

    env = yaml.safe_load((REPO / "environment.yml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = env["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python="))
    assert project["requires-python"] == ">=" + python.split("=")[1]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip == ['-e ".[dev]"'] or pip == ["-e .[dev]"]
    pins = project["dependencies"] + project["optional-dependencies"]["dev"]
    assert all("==" in p for p in pins), [p for p in pins if "==" not in p]
    assert "torch==2.13.0" in pins


def test_kernel_environment_and_progress_bar_cleanup(tmp_path, monkeypatch):
    import nbformat

    from ntputils.book.execute import drop_progress_bars, worker_env

    monkeypatch.setenv("MPLBACKEND", "Agg")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)  # the result must not depend on the caller's shell
    env = worker_env(Project(tmp_path), tmp_path / "rec.json", threads=1)
    assert "MPLBACKEND" not in env  # it would silently drop every figure
    assert env["NTPBOOK_RECORD"] == str(tmp_path / "rec.json") and env["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # a thread count the user set explicitly is kept
    assert worker_env(Project(tmp_path), tmp_path / "rec.json", threads=1)["OMP_NUM_THREADS"] == "2"
    assert env["MPLCONFIGDIR"] and "ignore:IProgress not found" in env["PYTHONWARNINGS"]

    def stream(name, text):
        return nbformat.v4.new_output("stream", name=name, text=text)

    cell = nbformat.v4.new_code_cell("train()")
    cell.outputs = [stream("stderr", "\rUFM:   0%|          | 0/10 [00:00<?, ?it/s]\rUFM: 100%|##| 10/10\n"),
                    stream("stderr", "UserWarning: something real\n"), stream("stdout", "50%| not stderr")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert drop_progress_bars(nb) == 1
    assert [o["text"] for o in nb.cells[0].outputs] == ["UserWarning: something real\n", "50%| not stderr"]


def test_parameters_reach_papermill_with_their_types(tmp_path):
    """papermill reads its ``-f`` file with a YAML 1.1 loader, to which JSON's ``1e-05`` and ``Infinity`` are
    strings: the runner writes YAML, and papermill's own reader gets the values back."""
    from papermill.iorw import read_yaml_file

    from ntputils.book.execute import write_params

    params = {"lr": 1e-05, "t_max": float("inf"), "low": -float("inf"), "big": 10**18, "tiny": 2.5e-300,
              "name": "yes", "day": "2026-01-01", "shape": (2, 3), "none": None, "flag": True}
    write_params(params, tmp_path / "params.yaml")
    assert read_yaml_file(str(tmp_path / "params.yaml")) == {**params, "shape": [2, 3]}


@pytest.mark.slow
def test_timeout_stops_papermill_and_kernel(tmp_path):
    project = make_project(tmp_path, {"a01_good": chapter_text("sleeps")})  # writes kernel.pid, sleeps
    result = run_chapter(project, project.chapters()[0], {"profile": "cpu", "sleep_s": 600.0}, {}, "key",
                         timeout=40)
    assert result.status == "failed" and "did not finish within 40 s" in result.error
    import os
    import time

    pid = int((tmp_path / "kernel.pid").read_text())
    for _ in range(30):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(1)
    else:
        pytest.fail(f"kernel {pid} still alive after the timeout")


def test_progress_bar_noise_is_recognized_but_real_stderr_is_kept():
    from ntputils.book.execute import is_progress_bar

    assert is_progress_bar(" 42%|####      | 42/100 [00:01<00:02, 30.1it/s]\r100%|##########| 100/100\n")
    assert is_progress_bar("\n")  # a closed bar's trailing newline
    assert not is_progress_bar("UserWarning: the solver did not converge\n")
    assert not is_progress_bar(" 42%|####| 42/100\nValueError: bad input\n")


# ---------------------------------------------------------------- per-chapter cache keys

TINY_PACKAGE = {
    "__init__.py": '"""tiny"""\n',
    "base.py": "X = 1\n",  # imported by both chapters (A directly via only_a, B lazily via lazy)
    "only_a.py": "from ntputils import base\n",
    "only_b.py": "import os\n",
    "sub/__init__.py": "from .deep import f\n",
    "sub/deep.py": "def f():\n    from ntputils import lazy  # inside a function body\n    return lazy.Y\n",
    "lazy.py": "from . import base\nY = 2\n",
    "unused.py": "Z = 3\n",
    "book/__init__.py": "from ntputils.book import cli\n",
    "book/cli.py": "from ntputils import unused\n",
}
CHAPTER_A = "import numpy as np\nimport ntputils.only_a\n"
CHAPTER_B = ("from ntputils import only_b\nfrom ntputils.sub import f\n\n"
             "def g():\n    import ntputils.book.cli  # the runner is never part of a key\n")


def test_cache_of_a_chapter_survives_edits_of_modules_it_did_not_run(tmp_path):
    """The CLI path: after editing a module only chapter B's run executed, A is current and B is stale;
    an edit of the runner (``book/``, which B's run called) re-executes nothing."""
    from ntputils.book.fingerprint import run_key

    traces = {"a01_good": {"functions": [], "modules": ["__init__.py", "base.py", "only_a.py"]},
              "a02_failing": {"functions": ["book/cli.py:main"],
                              "modules": ["__init__.py", "book/cli.py", "lazy.py", "only_b.py"]}}
    package_dir = tmp_path / "pkg" / "ntputils"
    for rel, text in TINY_PACKAGE.items():
        (package_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (package_dir / rel).write_text(text)
    project = make_project(tmp_path / "proj", {"a01_good": GOOD + CHAPTER_A, "a02_failing": GOOD + CHAPTER_B})
    keys = book_build.KeyCalculator(project, package_dir)
    for chapter in project.chapters():
        _, key = keys.key(chapter, {"profile": "cpu"})
        meta = {"key": key, "status": "ok", "parameters": {"profile": "cpu"}, "trace": traces[chapter.name],
                "trace_key": run_key(key, traces[chapter.name], package_dir)}
        project.executed(chapter).write_text(json.dumps({"cells": [], "metadata": {"ntpbook": meta}}))
    (package_dir / "book" / "cli.py").write_text("def main():\n    return 2\n")
    assert all(book_build.KeyCalculator(project, package_dir).is_current(c) for c in project.chapters())
    (package_dir / "lazy.py").write_text("from . import base\nY = 3\n")
    keys = book_build.KeyCalculator(project, package_dir)
    current = {c.name: keys.is_current(c) for c in project.chapters()}
    assert current == {"a01_good": True, "a02_failing": False}


# ---------------------------------------------------------------- the committed tables a run read

def publish_table(root: Path, name: str, rows: int = 1) -> Path:
    folder = root / "results" / "sweeps" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "provenance.json").write_text(json.dumps({"name": name, "chapter": "x", "axes": {"seed": [0]}}))
    (folder / "table.csv").write_text("point_id,seed,profile,kind,metric,value,outcome,seconds\n"
                                      + "p,0,cpu,record,m,1,,0.5\n" * rows)
    return folder


def test_tables_current_compares_exactly_the_tables_a_run_read(tmp_path):
    from ntputils.committed import table_digest

    (tmp_path / "notebooks").mkdir()
    keys = book_build.KeyCalculator(Project(tmp_path))
    s1 = publish_table(tmp_path, "s1")
    publish_table(tmp_path, "s2")
    meta = {"tables": {"s1": table_digest(s1), "new": None}}
    assert keys.tables_current(meta) and keys.tables_current({}) and keys.tables_current({"tables": {}})
    publish_table(tmp_path, "s2", rows=2)  # a table the run did not read
    assert keys.tables_current(meta)
    publish_table(tmp_path, "new")  # a table it looked for and did not find
    assert not keys.tables_current(meta)
    meta["tables"]["new"] = table_digest(tmp_path / "results" / "sweeps" / "new")
    (s1 / "notes.md").write_text("a note beside the table\n")  # any file of the folder counts
    assert not keys.tables_current(meta)


def test_a_table_that_went_stale_since_the_run_makes_its_page_stale(tmp_path):
    """The run was handed each table's currency (meta ``currency``: name -> stale then); a table whose
    code changed since (here: one without a fingerprint is stale) makes the page that showed it stale."""
    from ntputils.committed import table_digest

    (tmp_path / "notebooks").mkdir()
    s1 = publish_table(tmp_path, "s1")
    meta = {"tables": {"s1": table_digest(s1), "new": None}, "currency": {"s1": False, "new": None}}
    assert not book_build.KeyCalculator(Project(tmp_path)).tables_current(meta)  # shown current, stale now
    meta["currency"]["s1"] = True
    assert book_build.KeyCalculator(Project(tmp_path)).tables_current(meta)
    keys = book_build.KeyCalculator(Project(tmp_path))
    assert keys.tables_current({"tables": meta["tables"]})  # an older run


def test_publishing_a_table_reexecutes_exactly_the_chapters_that_read_it(tmp_path, capsys):
    """Real papermill runs: ``published`` notes each table it reads (found or not) with its digest, the
    runner keeps that list with the run, and the build key covers exactly those tables: a newly published
    or republished table re-executes its readers and nothing else, so no page shows an old table as
    current."""
    from ntputils.committed import table_digest

    project = make_project(tmp_path, {"a01_reader": chapter_text("reads_table"),
                                     "a02_quiet": chapter_text("tiny")})
    reader, quiet = project.chapters()

    def build() -> list[str]:
        capsys.readouterr()
        assert book_build.build(project, make_html=False) == 0
        return sorted(line.split()[1] for line in capsys.readouterr().out.splitlines()
                      if line.startswith("[run]"))

    assert build() == ["a01_reader", "a02_quiet"]
    assert read_meta(project.executed(reader))["tables"] == {"s1": None}
    assert read_meta(project.executed(reader))["currency"] == {"s1": None}
    assert read_meta(project.executed(quiet))["tables"] == {}
    assert build() == []
    publish_table(tmp_path, "s2")
    assert build() == []  # a table no run read
    s1 = publish_table(tmp_path, "s1")
    assert not book_build.KeyCalculator(project).is_current(reader)  # its page would show the old table
    assert build() == ["a01_reader"]
    assert read_meta(project.executed(reader))["tables"] == {"s1": table_digest(s1)}
    assert read_meta(project.executed(reader))["currency"] == {"s1": True}  # no fingerprint: stale
    assert "s1 stale=True" in project.executed(reader).read_text()  # the kernel read the runner's verdict
    publish_table(tmp_path, "s1", rows=2)
    assert build() == ["a01_reader"]
    assert build() == []


def test_only_builds_the_html_of_what_exists_and_names_the_rest(tmp_path, monkeypatch, capsys):
    """`build --only a01` on a fresh clone renders a01 (partial by default) and says how to build the
    toc chapters left out; a full build keeps refusing the HTML of a book with unbuilt chapters."""
    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    (tmp_path / "book" / "status.md").write_text("# Status\n")

    def fake_run(project, chapter, parameters, resolved, key, **kw):
        meta = {"key": key, "status": "ok", "parameters": parameters, "resolved": resolved, "seconds": 1.0}
        project.executed(chapter).write_text(json.dumps({"cells": [], "metadata": {"ntpbook": meta}}))
        return book_build.RunResult(chapter, "ok", 1.0, meta=meta)

    tocs = []
    monkeypatch.setattr(book_build, "run_chapter", fake_run)
    monkeypatch.setattr(html, "jupyter_book", lambda project, toc=None, quiet=False: tocs.append(toc) or 0)
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01"]) == book_build.EXIT_OK
    out = capsys.readouterr().out
    assert "has no executed notebook" not in out and "HTML built" in out
    assert "not built yet (or stale): a02;" in out
    assert "build them with `python -m ntputils.book build --only a02`" in out
    assert tocs[0] is None  # the whole toc: a02 is its placeholder page, numbers do not move
    placeholder = tmp_path / "book" / "a02_failing.md"
    assert is_placeholder(placeholder) and "not built in this build" in placeholder.read_text()
    assert cli.main(["--root", str(tmp_path), "build"]) \
            == book_build.EXIT_OK  # builds a02 too: nothing left out
    assert tocs[1] is None and not placeholder.exists()
    project.executed(project.chapters()[1]).unlink()
    assert book_build.build(project, make_html=True) \
            == book_build.EXIT_OK  # a02 re-executed, a full build again
    project.executed(project.chapters()[1]).unlink()
    monkeypatch.setattr(book_build, "run_chapter",
        lambda *a, **kw: book_build.RunResult(a[1], "failed", error="boom"))
    capsys.readouterr()
    assert book_build.build(project, make_html=True) == book_build.EXIT_FAILED  # full build: strict
    out = capsys.readouterr().out
    assert "toc chapter book/a02_failing has no executed notebook" in out and "HTML build skipped" in out


def test_overrides_are_shown_by_status_list_scorecard_and_failure_banner(tmp_path, capsys):
    """A run with -p overrides is flagged on the status page, by `list` and by the scorecard (never
    counted as the book's run); the failure banner names the failed run's parameters."""
    from ntputils.book.execute import failure_banner_text

    toc = TOC.replace("- file: book/status\n", "- file: book/status\n      - file: book/scorecard\n")
    project = make_project(tmp_path, {"a05_good": GOOD}, toc=toc.replace("a01_good", "a05_good"))
    chapter = project.chapters()[0]
    meta = {"status": "ok", "key": "k", "profile": "cpu", "device": "cpu", "seed": 0, "seconds": 1.0,
            "parameters": {"profile": "cpu", "steps": 500, "lr": 0.25},
            "resolved": {"profile": "cpu", "seed": 0, "device": "cpu", "steps": 500, "lr": 0.25},
            "checks": [{"claim": "KKT", "passed": True, "items": ["A:Fig 5"]}]}
    project.executed(chapter).write_text(json.dumps({"cells": [], "metadata": {"ntpbook": meta}}))
    assert cli.main(["--root", str(tmp_path), "status"]) == 0
    assert cli.main(["--root", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    assert "overrides: steps=500, lr=0.25 (not the book's run)" in out
    status = project.status_page.read_text()
    assert "| stale, overrides: steps=500, lr=0.25 |" in status  # key "k" is not the real one
    assert "**overrides** `steps=500, lr=0.25`: not the book's run" in status
    assert "build --only a05` without `-p`" in status
    card = project.scorecard_page.read_text()
    assert ("**not the book's run** (a05 ran with overrides steps=500, lr=0.25; that run's verdict: "
            "reproduced)") in card
    failure = {"executed_at": "2026-01-02T00:00:00", "git": "abc", "error": "AssertionError: x",
               "profile": "cpu", "parameters": {"profile": "cpu", "steps": 7},
               "resolved": {"profile": "cpu", "steps": 7, "lr": 0.5}}
    banner = failure_banner_text(meta, failure)
    latest = banner.split("**failed**")[0]
    assert "`steps=7`, `lr=0.5` (overrides: steps=7; not the book's run)" in latest
    assert "(overrides: steps=500, lr=0.25; not the book's run)" in banner.split("**failed**")[1]


def test_build_checks_the_chapters_limits_before_anything_runs(tmp_path, capsys):
    cell = '# %% tags=["parameters"]'
    limited = GOOD.replace(cell, f'# %%\nLIMITS = {{"steps": (1, 10)}}\n\n{cell}')
    project = make_project(tmp_path, {"a01_good": limited})
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01", "-p", "steps=50"]) \
            == book_build.EXIT_USAGE
    assert "steps=50 is outside the chapter's limits [1, 10] (chapter a01_good)" in capsys.readouterr().out
    assert not project.cache_dir.exists()  # nothing was executed
    bad = GOOD.replace(cell, f'# %%\nLIMITS = {{"steps": 3}}\n\n{cell}')
    (tmp_path / "notebooks" / "a01_good.py").write_text(bad)
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01"]) == book_build.EXIT_USAGE
    assert "LIMITS of chapter a01_good must map names" in capsys.readouterr().out


def test_limits_bound_a_lists_length_and_each_of_its_numbers(tmp_path, capsys):
    """``"len(xs)": (1, 3)`` bounds the length of a list parameter, ``"xs": (0, 9)`` each number in it (an
    empty list or an out-of-range entry is refused before anything runs); a number keeps its own range."""
    limits = {"len(xs)": (1, 3), "xs": (0, 9), "n": (1, None)}
    assert check_limits({"xs": [0, 9], "n": 1}, limits) == []
    assert check_limits({"xs": [], "n": 1}, limits) == [
        "xs=[] has 0 entries, outside the chapter's limits [1, 3]"]
    assert check_limits({"xs": [1, 10, -1], "n": 0}, limits) == [
        "xs=[1, 10, -1] holds 10, -1, outside the chapter's limits [0, 9]",
        "n=0 is outside the chapter's limits [1, inf]"]
    assert check_limits({"xs": [1, 2, 3, 4], "n": 2}, limits) == [
        "xs=[1, 2, 3, 4] has 4 entries, outside the chapter's limits [1, 3]"]
    cell = '# %% tags=["parameters"]'
    limited = GOOD.replace(cell, f'# %%\nLIMITS = {{"len(steps)": {{1, 2}}}}\n\n{cell}')
    make_project(tmp_path, {"a01_good": limited})
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01"]) == book_build.EXIT_USAGE
    assert "a key len(name): to (low, high)" in capsys.readouterr().out


def test_a01_declares_the_t_max_range_its_check_holds_in(tmp_path, capsys):
    """a01's check "CE(L_t) -> H" holds for t_max in [18, 30] only (derived in the chapter): t_max=10 is
    refused before any kernel starts."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / "a01_ntp_as_soft_labels.py", tmp_path / "notebooks")
    (tmp_path / "_toc.yml").write_text(TOC.replace("a01_good", "a01_ntp_as_soft_labels"))
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01", "-p", "t_max=10.0"]) \
            == book_build.EXIT_USAGE
    assert "t_max=10.0 is outside the chapter's limits [18.0, 30.0]" in capsys.readouterr().out


def test_a_claim_registered_and_never_judged_fails_the_chapter(tmp_path, capsys):
    """Real papermill run: the notebook runs to its end, but a pre-registered claim that no cell judged
    is missing evidence, so the chapter fails naming it (and no notebook is installed as current)."""
    project = make_project(tmp_path, {"a01_unjudged": chapter_text("leaves_claim_unjudged")})
    (chapter,) = project.chapters()
    assert book_build.build(project, make_html=False) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "UnjudgedClaims: pre-registered and never judged: forgotten" in out
    assert not project.executed(chapter).exists()


def test_a_claim_judged_twice_fails_the_chapter(tmp_path, capsys):
    """A claim judged in a loop (two verdicts for one key): the scorecard would show the worse and the
    committed views the last, so the run fails naming the key and both outcomes."""
    text = chapter_text("leaves_claim_unjudged").replace(
        "_ = claims.judged.judge(1.0)", "_ = claims.judged.judge(1.0)\n_ = claims.judged.judge(-1.0)\n"
        "_ = claims.forgotten.judge(1.0)")
    project = make_project(tmp_path, {"a01_twice": text})
    (chapter,) = project.chapters()
    assert book_build.build(project, make_html=False) == book_build.EXIT_FAILED
    out = capsys.readouterr().out
    assert "ClaimJudgedTwice: judged more than once: judged (reproduced, deviates)" in out, out
    assert not project.executed(chapter).exists()
    from ntputils.book.execute import evidence_problem

    assert evidence_problem({"preregistered": ["a"], "comparisons": [{"key": "a", "outcome": "x"}]}) is None


def test_a_run_with_overrides_has_a_warning_banner_a_normal_run_a_note():
    """The "How this page was produced" box of a run with -p overrides is a warning (not the book's run),
    not the blue note of a normal run."""
    import nbformat

    from ntputils.book.execute import RUN_BANNER_TAG, _add_run_banner

    def banner(parameters):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title\n\nText.")])
        _add_run_banner(nb, {"profile": "cpu", "device": "cpu", "seed": 0, "parameters": parameters,
                             "resolved": {"profile": "cpu", "steps": 3}}, link_status=True)
        (cell,) = [c for c in nb.cells if RUN_BANNER_TAG in c.metadata.get("tags", [])]
        return cell.source

    normal = banner({"profile": "cpu"})
    assert ":class: note" in normal and "warning" not in normal
    overridden = banner({"profile": "cpu", "steps": 3})
    assert ":class: warning" in overridden and ":class: note" not in overridden
    assert "with overrides, not the book's run" in overridden.splitlines()[0]
    assert "(overrides: steps=3; not the book's run)" in overridden


def test_no_page_links_a_chapter_by_its_notebook_file():
    """A link ``[text](<chapter>.ipynb)`` resolves only while the executed notebook exists: in a partial
    build the chapter is a placeholder page (``book/<chapter>.md``) and the link fails the build (-W).
    Pages link a chapter by its name: ``{doc}`text <chapter>```."""
    project = Project(REPO)
    names = "|".join(c.name for c in project.chapters())
    link = __import__("re").compile(rf"\]\((?:\./)?(?:book/)?({names})\.ipynb[)#]")
    pages = [*project.book_dir.glob("*.md"), *project.notebooks_dir.glob("*.py"),
             REPO / "benchmarks" / "performance_template.md"]  # book/performance.md is made from it
    generated = {project.status_page, project.scorecard_page, project.headline_page}
    found = [f"{p.name}: {m.group(0)}" for p in pages if p not in generated and not is_placeholder(p)
             for m in link.finditer(p.read_text())]
    assert not found, found


def test_the_browser_check_takes_a_placeholder_page_for_what_it_is(tmp_path):
    """A placeholder page shows no run, so the browser check does not call it an orphan or stale page, as
    long as the chapter has no current notebook; once it has one, the page is stale."""
    from ntputils.book.keys import KeyCalculator
    from tests.browser_check import is_not_built_page, staleness

    project = make_project(tmp_path, {"a01_good": GOOD, "a02_failing": FAILING})
    page = project.html_dir / "book" / "a02_failing.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<div class="admonition warning {html.NOT_BUILT_CLASS}">not built in this build</div>')
    assert is_not_built_page(page.read_text())
    assert staleness(project, page, KeyCalculator(project)) == []
    page.write_text("<h1>a02</h1>")  # a page of a run whose notebook is gone
    assert any("orphan page" in p for p in staleness(project, page, KeyCalculator(project)))


@pytest.mark.slow
def test_only_on_a_fresh_project_builds_the_whole_book_with_placeholders(tmp_path):
    """End to end through jupyter-book -W: `--only a01` with a02 never run (and then with a stale a02
    notebook) exits 0; a02 is its placeholder page, numbered 2. as in the full book, its stale notebook
    not shown."""
    project = make_project(tmp_path, {"a01_good": chapter_text("plots"), "a02_good": GOOD})
    toc = TOC.replace("a02_failing", "a02_good").replace("  - caption: Chapters\n",
                                                         "  - caption: Chapters\n    numbered: true\n")
    (tmp_path / "_toc.yml").write_text(toc)
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    shutil.copytree(REPO / "book" / "_static", tmp_path / "book" / "_static")
    shutil.copy(REPO / "book" / "references.bib", tmp_path / "book" / "references.bib")
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01"]) == book_build.EXIT_OK
    page = (project.html_dir / "book" / "a02_good.html").read_text()
    text = __import__("re").sub(r"<[^>]+>", "", page)  # the command's words are highlighted apart
    assert html.NOT_BUILT_CLASS in page and "ntputils.book build --only a02" in text
    assert '<span class="section-number">2. </span>' in page
    # a stale notebook of a02 beside its placeholder: kept out of the book (one page, no -W warning)
    shutil.copy(project.executed(project.chapters()[0]), project.executed(project.chapters()[1]))
    assert cli.main(["--root", str(tmp_path), "build", "--only", "a01"]) == book_build.EXIT_OK
    page = (project.html_dir / "book" / "a02_good.html").read_text()
    assert html.NOT_BUILT_CLASS in page and "its executed notebook is stale" in page
    first = (project.html_dir / "book" / "a01_good.html").read_text()
    assert '<span class="section-number">1. </span>' in first and html.NOT_BUILT_CLASS not in first


def test_the_runner_packages_are_outside_every_fingerprint(tmp_path):
    """Issue #48: the runner (``book/``), sweeps (``sweeps/``), the GPU path (``gpu/``) and the command line
    (``cli.py``) are never part of a trace digest, so a change to any of them leaves every committed table
    current; a math module beside them is part of it."""
    from ntputils.book.fingerprint import is_runner, trace_digest

    package_dir = tmp_path / "ntputils"
    files = {"__init__.py": "", "base.py": "def f():\n    return 1\n",
             "cli.py": "def main():\n    return 0\n",
             **{f"{d}/__init__.py": "" for d in ("book", "sweeps", "gpu")},
             **{f"{d}/m.py": "def g():\n    return 1\n" for d in ("book", "sweeps", "gpu")}}
    for rel, text in files.items():
        (package_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (package_dir / rel).write_text(text)
    runner = ["cli.py", "book/m.py", "sweeps/m.py", "gpu/m.py"]
    trace = {"functions": ["base.py:f", "cli.py:main", "book/m.py:g", "sweeps/m.py:g", "gpu/m.py:g"],
             "modules": ["__init__.py", "base.py", *runner]}
    assert [is_runner(e) for e in trace["functions"]] == [False, True, True, True, True]
    before = trace_digest(trace, package_dir)
    for rel in runner:
        (package_dir / rel).write_text((package_dir / rel).read_text().replace("1", "2").replace("0", "3"))
    assert trace_digest(trace, package_dir) == before
    (package_dir / "base.py").write_text("def f():\n    return 2\n")
    assert trace_digest(trace, package_dir) != before


def test_no_committed_trace_names_a_runner_module():
    """What makes the test above enough: no committed table's points ran runner code in their kernel."""
    from ntputils.book.fingerprint import is_runner

    for prov in sorted((REPO / "results" / "sweeps").glob("*/provenance.json")):
        trace = (json.loads(prov.read_text()).get("fingerprint") or {}).get("trace") or {}
        hits = [e for e in trace.get("functions", []) + trace.get("modules", []) if is_runner(e)
                and not e.startswith("committed.py")]
        assert hits == [], prov
