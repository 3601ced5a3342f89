"""The paper profile beside the cpu run (:mod:`ntputils.committed`) and the scorecard's
paper-profile column: a real one-point paper-profile sweep of a tiny chapter, published, read back next
to a cpu record; stale after a code edit; a clear message (and the command) when nothing is committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ntputils.book.currency import currencies
from ntputils.book.environment import machine
from ntputils.book.project import Project
from ntputils.committed import beside_cpu as _beside_cpu
from ntputils.committed import paper_tables, read_committed, refresh_command, sweep_name
from ntputils.reports.scorecard import render_scorecard
from ntputils.sweeps.store import attempt_machines, note_attempt, read_attempts
from ntputils.sweeps.table import PublishRefused, publish

from chapters import CHAPTERS, add_chapter, chapter_text

TINY = chapter_text("records_check_and_claim")
PAPER = (CHAPTERS / "records_check_and_claim.paper.yaml").read_text()  # the paper profile's file (n: 1000)

CPU_RECORD = {"checks": [{"claim": "mean = (n - 1) / 2", "passed": True}],
              "comparisons": [{"key": "big_mean", "claim": "the mean is at least 100", "rule": ">= 100",
                               "measured": 4.5, "outcome": "deviates", "items": ["A:Fig 1"]},
                              {"key": "cpu_only", "claim": "only the cpu run judges this", "rule": "-",
                               "measured": 1, "outcome": "reproduced", "items": []}],
              "results": {"mean": {"value": 4.5}, "cpu_only_value": {"value": 2}}}


def beside_cpu(prefix: str, record: dict, project: Project):
    """The view as a chapter run by the build shows it: with the currency the runner hands over."""
    return _beside_cpu(prefix, record, project.root, currencies(project))


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    root = tmp_path_factory.mktemp("paper-profile")
    add_chapter(root, "t01_tiny", "records_check_and_claim", paper=True)
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    cmd = [sys.executable, "-m", "ntputils.book", "--root", str(root), "sweep", "t01", "--profile", "paper",
           "-p", "seed=0", "--name", sweep_name("t01"), "--workers", "1", "--no-progress"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    proj = Project(root)
    publish(proj, sweep_name("t01"))
    return proj


def test_the_paper_run_stands_beside_the_cpu_record(project):
    view = beside_cpu("t01", CPU_RECORD, project)
    assert view.found and not view.stale
    claims = view.claims.set_index("key")
    assert claims.loc["big_mean", "cpu"] == "4.5" and claims.loc["big_mean", "cpu outcome"] == "deviates"
    assert claims.loc["big_mean", "paper"] == "499.5"
    assert claims.loc["big_mean", "paper outcome"] == "reproduced"
    assert claims.loc["cpu_only", "paper outcome"] == "not in the paper run"
    records = view.records.set_index("value")
    assert records.loc["mean", "cpu"] == "4.5" and records.loc["mean", "paper"] == "499.5"
    assert records.loc["cpu_only_value", "paper"] == "-"
    assert view.checks == (1, 1, 1, 1)
    assert view.counts() == {"reproduced": 1, "not in the paper run": 1}
    html = view.html()
    assert "STALE" not in html and "paper run 1/1" in html and view.provenance["profile"] == "paper"


def test_scorecard_tallies_the_paper_run_per_item(project):
    paper = paper_tables(project.root, currencies(project))
    assert set(paper) == {"t01"}
    md = render_scorecard({"t01_tiny": CPU_RECORD}, {"t01": "t01_tiny"}, paper)
    (row,) = [line for line in md.splitlines() if line.startswith("| Paper A Fig. 1:")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    # the paper profile decides where it ran (reproduced; the cpu run deviates, a preview); the item is
    # at best partial: the claim has no negative control, and A Fig. 1's data and scale are not the paper's
    assert cells[1] == "**partial** (the paper profile decides 1 claim (cpu run: deviates))"
    assert "- at best partial: 1 claim without a negative control" in md
    assert cells[3] == "- (no five-seed table of t01)"  # the reason the column is empty
    assert cells[4].startswith("t01 (") and cells[4].endswith("): 1 reproduced")  # by its scorecard item
    assert "t01 of 20" in md and "(STALE)" not in md


def test_a_code_edit_makes_the_committed_table_stale(project):
    src = project.root / "notebooks" / "t01_tiny.py"
    text = src.read_text()
    try:
        src.write_text(text.replace("mean = sum(range(cfg[\"n\"])) / cfg[\"n\"]",
                                    "mean = sum(range(cfg[\"n\"])) / cfg[\"n\"] + 0"))
        view = beside_cpu("t01", CPU_RECORD, project)
        assert view.stale and "STALE" in view.html() and refresh_command("t01") in view.text() + view.refresh
        md = render_scorecard({"t01_tiny": CPU_RECORD}, {"t01": "t01_tiny"},
                              paper_tables(project.root, currencies(project)))
        assert ", STALE): 1 reproduced" in md  # "t01 (<commit>, <date>, STALE): ..."
        src.write_text(text.replace("# A tiny chapter", "# A tiny chapter (prose only)"))
        assert not beside_cpu("t01", CPU_RECORD, project).stale  # markdown is not code
    finally:
        src.write_text(text)


def test_no_committed_table_names_the_command_that_makes_it(project):
    view = beside_cpu("t09", CPU_RECORD, project)
    assert not view.found
    assert "python -m ntputils.book sweep t09 --profile paper -p seed=0 --name t09-paper" in view.html()
    assert "sweep-table t09-paper --publish" in view.text()


def test_a_failed_paper_run_is_shown_as_failed(project):
    src = project.root / "notebooks" / "t02_broken.py"
    src.write_text(TINY.replace("mean = sum(", "raise RuntimeError('the paper run breaks here')\n"
                                "mean = sum("))
    src.with_name("t02_broken.paper.yaml").write_text(PAPER)
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    cmd = [sys.executable, "-m", "ntputils.book", "--root", str(project.root), "sweep", "t02", "--profile",
           "paper", "-p", "seed=0", "--name", sweep_name("t02"), "--workers", "1", "--no-progress"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    try:
        assert run.returncode == 1, run.stdout + run.stderr
        publish(project, sweep_name("t02"))
        view = beside_cpu("t02", CPU_RECORD, project)
        assert view.found and "the paper run breaks here" in view.failed
        assert "FAILED" in view.html() and "FAILED" in view.text()
        assert (view.claims["paper outcome"] == "not in the paper run").all()
    finally:
        src.unlink()
        import shutil

        shutil.rmtree(project.root / "results" / "sweeps" / sweep_name("t02"), ignore_errors=True)


def test_published_table_keeps_checks_and_claim_items(project):
    import pandas as pd

    folder = project.root / "results" / "sweeps" / sweep_name("t01")
    table = pd.read_csv(folder / "table.csv")
    assert set(table.kind) == {"record", "compare", "check"}
    assert table[table.kind == "compare"]["items"].tolist() == ["A:Fig 1"]
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["profile"] == "paper" and prov["points"] == 1 and Path(folder).is_dir()


def test_a_failed_sweep_does_not_replace_a_good_committed_table(project):
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    src = project.root / "notebooks" / "t01_tiny.py"
    text = src.read_text()
    cmd = [sys.executable, "-m", "ntputils.book", "--root", str(project.root), "sweep", "t01", "-p", "seed=0",
           "--name", "t01-other", "--workers", "1", "--no-progress"]
    folder = project.root / "results" / "sweeps" / "t01-other"
    try:
        assert subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180).returncode == 0
        publish(project, "t01-other")
        good = (folder / "table.csv").read_bytes(), (folder / "provenance.json").read_bytes()
        src.write_text(text.replace("mean = sum(", "raise RuntimeError('broken')\nmean = sum("))
        assert subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180).returncode == 1
        with pytest.raises(PublishRefused, match="1 failed point"):
            publish(project, "t01-other")
        assert ((folder / "table.csv").read_bytes(), (folder / "provenance.json").read_bytes()) == good
        cli = subprocess.run([sys.executable, "-m", "ntputils.book", "--root", str(project.root),
                              "sweep-table", "t01-other", "--publish"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and "--force" in cli.stdout
        publish(project, "t01-other", force=True)
        assert (folder / "table.csv").read_bytes() != good[0]
    finally:
        src.write_text(text)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def test_each_point_names_the_machine_that_finished_it(project):
    """A sweep resumed across machines keeps each point's own machine in the published provenance."""
    _, prov = read_committed(sweep_name("t01"), project.root)
    [point] = prov["points_run"].values()
    assert point["machine"] == machine() and point["threads"] == 1
    assert point["attempt_machines"] == [machine()]  # one attempt, on this machine


def test_a_point_resumed_on_other_machines_names_each_once_in_order(tmp_path):
    note_attempt(tmp_path, "run-1", "Linux x86_64, 2 CPUs (AMD EPYC, AVX2)")
    note_attempt(tmp_path, "run-2", "NVIDIA H200, Linux x86_64, 16 CPUs")
    note_attempt(tmp_path, "run-3", "Linux x86_64, 2 CPUs (AMD EPYC, AVX2)")
    with (tmp_path / "attempts").open("a") as f:  # an attempt written before attempts named their machine
        f.write(json.dumps({"pid": 1, "host": "h", "run": "run-0", "started": "2026-11-01T00:00:00"}) + "\n")
    assert [a["run"] for a in read_attempts(tmp_path)] == ["run-1", "run-2", "run-3", "run-0"]
    assert attempt_machines(tmp_path) == ["Linux x86_64, 2 CPUs (AMD EPYC, AVX2)",
                                          "NVIDIA H200, Linux x86_64, 16 CPUs"]
