"""A sweep point's identity (chapter code, data, pins, parameters; not the library's source) and its
adoption on resume: a finished point is adopted only while the trace it stored hashes the same under the
current code, else it is re-run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ntputils.book.fingerprint import trace_digest
from ntputils.book.project import Project
from ntputils.sweeps.spec import plan_sweep
from ntputils.sweeps.store import point_current, point_dir
from ntputils.sweeps.sweep import classify

from chapters import FIXTURES, chapter_text

CHAPTER = chapter_text("scaled_value")  # records scaled(x + seed) of the library module FIXTURE
FIXTURE = (FIXTURES / "fixture_scale.py").read_text()


def chapter_project(root: Path, chapters: dict[str, str]) -> Project:
    (root / "notebooks").mkdir(parents=True)
    for name, text in chapters.items():
        (root / "notebooks" / f"{name}.py").write_text(text)
    return Project(root)


def test_point_identity_is_chapter_code_data_pins_and_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("NTP_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data" / "mnist").mkdir(parents=True)
    data = tmp_path / "data" / "mnist" / "train-labels-idx1-ubyte.gz"
    data.write_bytes(b"first")
    project = chapter_project(tmp_path / "proj", {"t01_scale": CHAPTER})

    def ids() -> list[str]:
        return [p.id for p in plan_sweep(project, "t01", ["seed=0,1"]).points]

    first = ids()
    assert first == ids() and len(set(first)) == 2
    source = project.notebooks_dir / "t01_scale.py"
    source.write_text(CHAPTER.replace("# the library computes it", "# edited comment")
                      .replace("# # A chapter", "# # A retitled chapter"))
    assert ids() == first  # comments and prose are not code
    data.write_bytes(b"second, longer")
    assert ids() != first  # the shared data is part of a point's identity
    data.write_bytes(b"first")
    (project.root / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy==1.0"]\n')
    assert ids() != first  # so are the pins
    (project.root / "pyproject.toml").unlink()
    source.write_text(CHAPTER.replace("scaled(x + seed)", "scaled(x + seed + 0)"))
    assert ids() != first  # and the chapter's code


def test_resume_adopts_a_point_only_while_its_trace_hashes_the_same(tmp_path):
    """A finished point is adopted when the code it ran is unchanged (a docstring, a comment or an
    uncalled function edited); it is re-run when a function it called changed, and when it stored no
    trace digest (nothing to compare)."""
    project = chapter_project(tmp_path, {"t01_scale": CHAPTER})
    plan = plan_sweep(project, "t01", ["seed=0,1"])
    trace = {"functions": ["fixture_scale.py:scaled"], "modules": ["fixture_scale.py"]}
    before = {"fixture_scale.py": FIXTURE.encode()}
    ok, legacy = plan.points
    for point, digest in ((ok, trace_digest(trace, before)), (legacy, None)):
        d = point_dir(project, plan.name, point.id)
        d.mkdir(parents=True)
        (d / "result.json").write_text(json.dumps({"id": point.id, "status": "ok", "fingerprint": {
            "chapter_code": plan.chapter_code, "trace": trace, "trace_digest": digest}}))

    def states(source: str) -> tuple[list, list]:
        done, failed, todo, stale = classify(project, plan, False, {"fixture_scale.py": source.encode()})
        assert not failed and stale == todo
        return [p.id for p in done], [p.id for p in todo]

    assert states(FIXTURE) == ([ok.id], [legacy.id])
    for neutral in (FIXTURE.replace('"""A library module of the test."""', '"""Edited."""'),
                    FIXTURE.replace("    factor = SCALE\n", "    factor = SCALE  # a comment\n"),
                    FIXTURE.replace("return x - 1", "return x - 2")):  # an uncalled function
        assert states(neutral) == ([ok.id], [legacy.id]), neutral
    for moved in (FIXTURE.replace("return factor * x", "return x * factor"),
                  FIXTURE.replace("SCALE = 2", "SCALE = 3")):
        assert states(moved) == ([], [ok.id, legacy.id]), moved
    assert not point_current({"status": "ok", "fingerprint": {"trace": trace}})


@pytest.fixture()
def copied_package(tmp_path):
    """A scratch copy of ntputils (runner and kernels import it) with a module the chapter calls, and a
    project with a finished 2-point sweep of that chapter."""
    src = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[1] / "ntputils", src / "ntputils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "ntputils" / "fixture_scale.py").write_text(FIXTURE)
    root = tmp_path / "proj"
    chapter_project(root, {"t01_scale": CHAPTER})
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    env["PYTHONPATH"] = str(src)

    def book(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ntputils.book", "--root", str(root), *args], cwd=src,
                              env=env, capture_output=True, text=True, timeout=300)

    def sweep() -> subprocess.CompletedProcess:
        out = book("sweep", "t01", "-p", "seed=0,1", "--name", "t01-s", "--workers", "1", "--no-progress")
        assert out.returncode == 0, out.stdout + out.stderr
        return out

    first = sweep()
    assert "2 to run" in first.stdout, first.stdout
    return src / "ntputils" / "fixture_scale.py", root / "sweeps" / "t01-s", sweep, book


def test_resume_reruns_exactly_the_points_whose_called_code_changed(copied_package):
    module, folder, sweep, book = copied_package
    results = sorted(folder.glob("points/*/result.json"))
    assert len(results) == 2
    for path in results:
        fp = json.loads(path.read_text())["fingerprint"]
        assert "fixture_scale.py:scaled" in fp["trace"]["functions"] and fp["trace_digest"]
    finished = {p: json.loads(p.read_text())["finished"] for p in results}

    for neutral in (FIXTURE.replace("def scaled(x):", 'def scaled(x):\n    """Twice x."""'),
                    FIXTURE.replace("return x - 1", "return x - 2")):  # an uncalled function
        module.write_text(neutral)
        out = sweep()
        assert "2 done" in out.stdout and "0 to run" in out.stdout, out.stdout
    assert {p: json.loads(p.read_text())["finished"] for p in results} == finished  # adopted

    module.write_text(FIXTURE.replace("factor", "k"))  # a changed line of the called function
    refused = book("sweep-table", "t01-s", "--publish")
    assert refused.returncode == 2 and "ran code that has changed since" in refused.stdout, refused.stdout
    out = sweep()
    assert "0 done" in out.stdout and "2 to run (2 of them done before" in out.stdout, out.stdout
    after = {p: json.loads(p.read_text()) for p in results}
    assert all(after[p]["finished"] != finished[p] for p in results)  # re-run, not adopted
    assert all(r["results"]["value"]["value"] in (2, 4) for r in after.values())
    assert "2 done" in sweep().stdout  # current again
    assert book("sweep-table", "t01-s", "--publish").returncode == 0

    # the chapter's own code changed since the points ran: publishing would replace a current committed
    # table with one that is stale at once
    committed = folder.parents[1] / "results" / "sweeps" / "t01-s"
    before = {f.name: f.read_bytes() for f in committed.iterdir()}
    chapter = folder.parents[1] / "notebooks" / "t01_scale.py"
    chapter.write_text(chapter.read_text() + "\n# %%\nprint('an edit')\n")
    refused = book("sweep-table", "t01-s", "--publish")
    assert refused.returncode == 2 and "would be stale at once" in refused.stdout, refused.stdout
    assert {f.name: f.read_bytes() for f in committed.iterdir()} == before
