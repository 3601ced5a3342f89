"""The reproduction scorecard is generated from the chapters' records (ntputils.reports.scorecard)."""

from pathlib import Path

import pytest
import yaml

from ntputils.reports import scorecard
from ntputils.reports.scorecard import (
    CATALOGUE_FILE,
    evidence,
    item_status,
    read_catalogue,
    render_scorecard,
)

REPO = Path(__file__).resolve().parents[1]
CATALOGUE = read_catalogue()
ITEM_IDS = {item for item, *_ in CATALOGUE}
#: the rendering tests run on the real catalogue without its partial notes and data sets (tested apart), so
#: that the statuses they assert are those of the evidence alone
@pytest.fixture(autouse=True)
def test_catalogue(tmp_path, monkeypatch, request):
    if "real_catalogue" in request.keywords:
        return
    real = yaml.safe_load(CATALOGUE_FILE.read_text())
    entries = [{k: v for k, v in e.items() if k not in ("partial", "data")} for e in real]
    path = tmp_path / "items.yaml"
    path.write_text(yaml.safe_dump(entries))
    monkeypatch.setattr(scorecard, "read_catalogue", lambda: read_catalogue(path))
    real_item_data = scorecard.item_data
    monkeypatch.setattr(scorecard, "item_data", lambda: real_item_data(path))


@pytest.mark.real_catalogue
def test_catalogue_covers_every_figure_of_both_papers():
    assert {f"A:Fig {i}" for i in range(1, 19)} <= ITEM_IDS
    assert {f"B:Fig {i}" for i in range(1, 26)} <= ITEM_IDS
    results = {"A:Lemma 1", "A:Thm 1", "A:Thm 2", "A:Cor 1", "A:Prop 1", "A:Prop 2", "A:Prop 3", "B:Prop 1",
               "B:STEP", "B:orthant", "B:kmeans", "B:GPT-2"}
    assert results <= ITEM_IDS
    assert len(ITEM_IDS) == len(CATALOGUE)  # ids are unique
    for item, _title, chapters, why, _partial in CATALOGUE:
        assert chapters or why, f"{item}: no chapter and no reason"


@pytest.mark.real_catalogue
def test_catalogue_file_has_only_known_fields_and_real_chapters(tmp_path):
    """``book/scorecard_items.yaml`` is edited by hand: a misspelt field (read as absent) or chapter fails."""
    entries = yaml.safe_load(CATALOGUE_FILE.read_text())
    for e in entries:
        assert {"id", "title"} <= set(e) <= {"id", "title", "chapters", "why", "partial", "data"}, e
        assert set(e.get("data", [])) <= set(scorecard.read_datasets()), e  # every data set is catalogued
        # partial (what of the paper's scale did not run) needs evidence: an item no chapter reproduces
        # has only its why; with chapters, why says why the evidence differs from the paper
        assert not ("partial" in e and not e.get("chapters")), e
    prefixes = {p.name.split("_")[0] for p in (REPO / "notebooks").glob("*.py")}
    assert {c for *_, chapters, _why, _partial in CATALOGUE for c in chapters} <= prefixes
    assert CATALOGUE_FILE.parent == REPO / "book" and len(CATALOGUE) == len(entries)
    mine = tmp_path / "items.yaml"
    mine.write_text('- id: "X:Fig 1"\n  title: "Paper X Fig. 1: a test"\n  chapters: [a01, a02]\n'
                    '- id: "X:Fig 2"\n  title: "Paper X Fig. 2"\n  why: "a schematic"\n')
    assert read_catalogue(mine) == [("X:Fig 1", "Paper X Fig. 1: a test", ("a01", "a02"), "", ""),
                                    ("X:Fig 2", "Paper X Fig. 2", (), "a schematic", "")]


def _states():
    return {
        "a05_ufm_training": {
            "comparisons": [
                {"key": "gap", "claim": "CE - H small", "rule": "<= 0.001", "outcome": "reproduced",
                 "measured": 2e-4, "items": ["A:Fig 5"], "control": "the untrained model",
                 "control_value": 0.7, "control_passes": False},
                {"key": "sim", "claim": "sim above chance", "rule": ">= chance + 0.1", "outcome": "deviates",
                 "measured": 0.75, "chance": 0.70, "note": "short run", "items": ["A:Fig 6"]},
                {"key": "big", "claim": "paper profile", "rule": ">= 0.9", "outcome": "not run",
                 "measured": None, "items": ["A:Fig 4"]},
            ],
            "checks": [{"claim": "feasible", "passed": True, "sanity": True, "items": ["A:Fig 1"]},
                       {"claim": "KKT", "passed": True, "items": ["A:Fig 6"]},
                       {"claim": "typo", "passed": True, "items": ["A:Fig 99"]}],
        }
    }


def test_status_of_each_item_follows_its_evidence():
    ev = evidence(_states())
    assert item_status(ev["A:Fig 5"], ("a05",)) == "reproduced"
    assert item_status(ev["A:Fig 6"], ("a05",)) == "deviates"  # one deviation outweighs a passing check
    assert item_status(ev["A:Fig 4"], ("a05",)) == "not run"
    assert "A:Fig 1" not in ev  # sanity lines are not evidence
    assert item_status([], ("a05",)) == "unscored" and item_status([], ()) == "not reproduced"


def test_rendered_page_lists_all_items_with_reasons_and_flags_unknown_ids():
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"})
    rows = [line for line in page.splitlines() if line.startswith("| Paper")]
    assert len(rows) == len(CATALOGUE)
    assert "**deviates**" in page and "(short run)" in page and "[a05](a05_ufm_training.ipynb)" in page
    # the deviation, folded below the table: measured, chance, rule, outcome
    assert ("- sim above chance: 0.75 (chance 0.7); control: no control; rule \\>= chance + 0.1: "
            "**deviates** (short run)") in page
    assert "- CE - H small: 0.0002; control: the untrained model: 0.7 (fails); rule" in page
    assert "1 reproduced, 1 deviates, 1 not run" not in page  # tallies are per item
    fig6 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 6:"))
    assert "| 1 deviates; 1/1 checks |" in fig6
    assert page.count(":::{dropdown}") == 3  # A:Fig 4, 5, 6 have evidence
    assert "a schematic without data" in page  # Paper B Fig. 8
    assert "unknown items: A:Fig 99" in page


def test_unavailable_claims_list_the_item_as_not_reproduced_with_the_reason():
    states = {"b07_gpt2_semantics": {"comparisons": [
        {"key": "g", "claim": "GPT-2 grid", "rule": ">= 0.5", "outcome": "not reproduced", "measured": None,
         "note": "GPT-2 weights not available offline", "items": ["B:Fig 7"]}]}}
    ev = evidence(states)
    assert item_status(ev["B:Fig 7"], ("b07",)) == "not reproduced"
    page = render_scorecard(states, {"b07": "b07_gpt2_semantics"})
    row = next(line for line in page.splitlines() if "Fig. 7:" in line and line.startswith("|"))
    assert "**not reproduced**" in row
    assert ("GPT-2 grid: -; control: no control; rule \\>= 0.5: **not reproduced** (GPT-2 weights not "
            "available offline)") in page


# ---------------------------------------------------------------- issue 26: failed, not executed, unscored
def test_items_of_failed_and_never_executed_chapters_are_not_unscored():
    from ntputils.reports.scorecard import LAST_GOOD

    assert item_status([], ("a05",), {"a05": "failed"}) == "failed"
    assert item_status([], ("a05",), {"a05": "not executed"}) == "not executed"
    assert item_status([], ("a05",), {"a05": "ok"}) == "unscored"
    assert item_status([], ("a05", "a06"), {"a05": "ok", "a06": "failed"}) == "failed"
    assert item_status([], ("a05",), {}) == "not executed"  # a chapter the build does not know never ran
    runs = {"a05": "last good", "a02": "failed", "a03": "not executed", "a04": "ok", "a06": "ok"}
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, runs=runs)
    row = {line.split(" | ")[0][2:]: line for line in page.splitlines() if line.startswith("| Paper")}
    fig5 = next(v for k, v in row.items() if "A Fig. 5 " in k)
    assert f"**reproduced** (a05: {LAST_GOOD})" in fig5  # the last good run's verdict, marked
    assert "**failed**" in next(v for k, v in row.items() if "Lemma 1" in k)  # a02 failed, no good run
    assert "**not executed**" in next(v for k, v in row.items() if "Thm. 2" in k)  # a03
    assert "**unscored**" in next(v for k, v in row.items() if "Prop. 1: subspace" in k)  # a04 ran
    # A:Fig 1 (a05, a06): a05's last good run names it only in a sanity line; a06 ran and names nothing
    assert "**unscored**" in next(v for k, v in row.items() if "A Fig. 1:" in k)
    assert "failed 1, not executed " in page  # counted apart from unscored


def _chapter_project(root):
    from ntputils.book.project import Project

    (root / "notebooks").mkdir()
    (root / "book").mkdir()
    chapters = ["a02_lemma", "a03_path", "a05_ufm"]
    for name in chapters:
        (root / "notebooks" / f"{name}.py").write_text("# %%\nx = 1\n")
    toc = "format: jb-book\nroot: book/intro\nchapters:\n"
    toc += "".join(f"  - file: book/{c}\n" for c in chapters)
    (root / "_toc.yml").write_text(toc + "  - file: book/scorecard\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    return Project(root)


def test_written_scorecard_keeps_the_last_good_verdict_of_a_failed_chapter(tmp_path):
    import json

    from ntputils.book.pages import write_pages
    from ntputils.reports.scorecard import LAST_GOOD

    project = _chapter_project(tmp_path)
    good = {"status": "ok", "chapter": "a05_ufm", "comparisons": _states()["a05_ufm_training"]["comparisons"],
            "checks": [], "latest_failure": {"error": "RuntimeError: boom", "executed_at": "2026-02-02"}}
    nb = {"cells": [], "metadata": {"ntpbook": good}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "book" / "a05_ufm.ipynb").write_text(json.dumps(nb))
    failed_dir = project.failed_dir()
    failed_dir.mkdir(parents=True)
    (failed_dir / "a02_lemma.json").write_text(json.dumps({"status": "failed", "error": "boom"}))
    write_pages(project, project.toc_chapters())
    page = project.scorecard_page.read_text()
    # the seam: the state snapshot alone (a file) renders the same page, without the runner
    from ntputils.reports.scorecard import scorecard_from_snapshot
    from ntputils.reports.status import render_status

    state = json.loads((project.cache_dir / "state.json").read_text())
    assert scorecard_from_snapshot(state, project.root)[0] == page
    assert render_status(state) == project.status_page.read_text()
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert f"**reproduced** (a05: {LAST_GOOD})" in fig5 and "[a05](a05_ufm.ipynb)" in fig5
    assert "**failed**" in next(line for line in page.splitlines() if "Lemma 1" in line)
    assert "**not executed**" in next(line for line in page.splitlines() if "Thm. 2" in line)
    # a partial build that does not render a05's page links no page of it (no dangling xref under -W)
    write_pages(project, project.toc_chapters(), current={"a05_ufm": False})
    fig5 = next(line for line in project.scorecard_page.read_text().splitlines()
                if line.startswith("| Paper A Fig. 5 "))
    assert "[a05](" not in fig5 and "| a05 |" in fig5


def test_a_run_with_overrides_is_never_counted_as_the_books_run():
    states = _states()
    page = render_scorecard(states, {"a05": "a05_ufm_training"}, runs={"a05": "ok"},
                            overrides={"a05": "steps=500, d=32"})
    row = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "**not the book's run** (a05 ran with overrides steps=500, d=32; that run's verdict: reproduced)" \
        in row
    assert "Statuses: reproduced 0, partial 0, fragile 0, deviates 0" in page
    assert "not the book's run 3." in page  # A:Fig 4, 5 and 6: every item a05 gives evidence for
    plain = render_scorecard(states, {"a05": "a05_ufm_training"}, runs={"a05": "ok"})
    assert "reproduced 1, partial 0, fragile 0, deviates 1" in plain and "**not the book's run**" not in plain


def _paper(outcome: str, stale: bool = False, item: str = "A:Fig 5") -> dict:
    import pandas as pd

    table = pd.DataFrame([{"kind": "compare", "status": "ok", "metric": "gap", "value": 0.01,
                           "outcome": outcome, "items": item}])
    return {"a05": {"table": table, "stale": stale,
                    "provenance": {"git": "abcdef123", "finished": "2026-11-25T10:00:00"}}}


def test_the_paper_profile_decides_where_it_ran():
    from ntputils.reports.scorecard import decided_claims

    ev = evidence(_states())["A:Fig 5"]
    paper = lambda o, stale=False, control="fails": [  # noqa: E731
        {"chapter": "a05", "key": "gap", "outcome": o, "stale": stale, "control": control}]
    assert decided_claims(ev, paper("deviates"), [])[0] | {} == {
        "chapter": "a05", "key": "gap", "kind": "compare", "outcome": "deviates", "by": "paper profile",
        "control": "fails"}
    deviating_cpu = [{**ev[0], "outcome": "deviates"}]
    assert decided_claims(deviating_cpu, paper("reproduced"), [])[0]["outcome"] == "reproduced"  # a preview
    stale = decided_claims(ev, paper("deviates", stale=True), [])
    assert stale[0]["outcome"] == "reproduced"  # STALE: no say
    assert decided_claims(ev, paper("not run"), [])[0]["by"] == "cpu run"
    only_paper = decided_claims([], paper("reproduced", control="none"), [])
    assert only_paper[0]["by"] == "paper profile" and only_paper[0]["control"] == "none"

    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, _paper("deviates"))
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "**deviates** (the paper profile decides 1 claim (cpu run: reproduced))" in fig5
    assert "| a05 (abcdef1, 2026-11-25): 1 deviates |" in fig5  # with the table's commit and date
    assert "paper profile: 0.01, **deviates**" in page
    stale = render_scorecard(_states(), {"a05": "a05_ufm_training"}, _paper("deviates", stale=True))
    fig5 = next(line for line in stale.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **reproduced** |" in fig5


def test_each_runs_control_and_note_stay_with_that_runs_outcome():
    """The cpu run's note follows the cpu outcome, and the paper profile's own control (value and verdict)
    follows its outcome: a paper-profile line never carries the cpu run's reading of its control."""
    import pandas as pd

    states = {"a05_ufm_training": {"comparisons": [
        {"key": "gap", "claim": "CE - H small", "rule": "<= 0.001", "outcome": "cannot fail",
         "measured": 2e-4, "items": ["A:Fig 5"], "control": "the untrained model", "control_value": 1e-4,
         "control_passes": True, "note": "the cpu run's control passes"}]}}
    table = pd.DataFrame([
        {"kind": "compare", "status": "ok", "metric": "gap", "value": 0.0005, "outcome": "reproduced",
         "items": "A:Fig 5"},
        {"kind": "control", "status": "ok", "metric": "gap", "value": 0.8, "outcome": "fails",
         "items": "A:Fig 5"}])
    paper = {"a05": {"table": table, "stale": False,
                     "provenance": {"git": "abcdef123", "finished": "2026-11-25T10:00:00"}}}
    page = render_scorecard(states, {"a05": "a05_ufm_training"}, paper)
    line = next(x for x in page.splitlines() if x.startswith("- CE - H small:"))
    assert line.endswith("**cannot fail** (the cpu run's control passes); "
                         "paper profile: 0.0005 (control 0.8, fails), **reproduced**"), line
    without = {"a05": {**paper["a05"], "table": table[table["kind"] == "compare"]}}
    page = render_scorecard(states, {"a05": "a05_ufm_training"}, without)
    assert "paper profile: 0.0005, **reproduced**" in page  # a table made without a control shows none


def test_a_claim_that_cannot_fail_or_has_no_control_makes_its_item_partial_at_best():
    from ntputils.reports.scorecard import caps, final_status

    def claim(outcome="reproduced", control="fails"):
        return {"kind": "compare", "outcome": outcome, "control": control}

    check = {"kind": "check", "outcome": "reproduced", "control": "check"}
    assert final_status("reproduced", [claim()], "A:Fig 5") == ("reproduced", [])
    assert final_status("reproduced", [claim(), claim("cannot fail", "passes")], "A:Fig 5") == (
        "partial", ["1 claim cannot fail (the negative control passes the same rule)"])
    assert final_status("reproduced", [claim(control="none")] * 2, "A:Fig 5")[1] == [
        "2 claims without a negative control"]
    assert caps("A:Fig 2", [check]) == [
        "checks only: a mathematical fact does not reproduce a figure's empirical content"]
    assert caps("A:Thm 1", [check]) == []  # a theorem is reproduced by its checks
    assert final_status("reproduced", [claim(), claim("deviates", "passes")], "A:Fig 5") == ("deviates", [])
    assert final_status("reproduced", [claim("fragile")], "A:Fig 5") == ("fragile", [])
    assert final_status("reproduced", [claim()], "A:Fig 5", partial="12 layers not run") == (
        "partial", ["12 layers not run"])
    assert final_status("failed", [claim()], "A:Fig 5") == ("failed", [])
    states = {"a05_ufm_training": {"comparisons": [
        {"key": "k", "claim": "keeps growing", "rule": ">= 1", "outcome": "cannot fail", "measured": 1.2,
         "control": "a constant-rate path", "control_value": 1.0, "control_passes": True,
         "items": ["A:Fig 5"]}]}}
    page = render_scorecard(states, {"a05": "a05_ufm_training"})
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **partial** |" in fig5 and "| 1 cannot fail |" in fig5
    assert "- at best partial: 1 claim cannot fail" in page
    assert "Judged claims: 0 with a negative control that fails their rule (evidence), 1 cannot fail" in page


def test_the_build_reports_unknown_item_names_and_unscored_items():
    from ntputils.reports.scorecard import coverage_problems

    problems = coverage_problems(_states(), {"a04": "ok", "a05": "ok", "a06": "ok"})
    assert "scorecard: a record names the unknown item 'A:Fig 99' (a05_ufm_training)" in problems
    # A:Fig 1 (chapters a04, a05, a06): all ran, only a sanity line names it
    assert any(p.startswith("scorecard: 'A:Fig 1' is unscored: a04, a05, a06 ran") for p in problems)
    assert not any("'A:Fig 5'" in p or "'A:Fig 6'" in p for p in problems)  # named by claims
    assert not any("'A:Fig 1'" in p for p in coverage_problems(_states(), {"a05": "ok"}))  # a06 never ran


# ---------------------------------------------------------------- issue 27: seeds, partial, one verdict
def _seeds(outcomes: list[str], stale: bool = False) -> dict:
    from ntputils.committed import seed_verdict

    return {"a05": {"stale": stale, "provenance": {}, "claims": {"gap": {
        "k": outcomes.count("reproduced"), "n": len(outcomes), "outcomes": dict(enumerate(outcomes)),
        "values": {i: 1e-4 * (i + 1) for i in range(len(outcomes))}, "verdict": seed_verdict(outcomes)}}}}


def test_five_seeds_decide_too_a_fragile_claim_is_fragile():
    from ntputils.reports.scorecard import decided_claims

    ev = evidence(_states())["A:Fig 5"]
    seed_rows = lambda verdict, stale=False: [{"chapter": "a05", "key": "gap", "verdict": verdict,  # noqa: E731
                                               "stale": stale}]
    outcome = lambda seeds: decided_claims(ev, [], seeds)[0]["outcome"]  # noqa: E731
    assert outcome(seed_rows("reproduced")) == "reproduced"
    assert outcome(seed_rows("fragile")) == "fragile"
    assert outcome(seed_rows("deviates")) == "deviates"
    assert outcome(seed_rows("fragile", stale=True)) == "reproduced"  # STALE: no say
    assert outcome(seed_rows("deterministic (seed not used)")) == "reproduced"  # one measurement, no say
    from ntputils.committed import SEED_SAME_COUNT
    deviating_cpu = [{**ev[0], "outcome": "deviates"}]
    assert decided_claims(deviating_cpu, [], seed_rows(SEED_SAME_COUNT))[0]["outcome"] == "deviates"
    assert outcome(seed_rows(SEED_SAME_COUNT)) == "reproduced"  # unknown whether five runs: no say
    assert decided_claims([{**ev[0], "outcome": "deviates"}], [], seed_rows("fragile"))[0]["outcome"] == \
        "deviates"  # the worst of the evidence

    reproduced = ["reproduced"] * 4 + ["deviates"]
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, seeds=_seeds(reproduced))
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **reproduced** |" in fig5 and "a05: 1/1 claims hold at \\>= 4 of 5 seeds" in fig5
    assert "seeds 0-4: 4/5 reproduced (0.0001, 0.0002, 0.0003, 0.0004, 0.0005), **reproduced**" in page
    fragile = ["reproduced"] * 3 + ["deviates"] * 2
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, seeds=_seeds(fragile))
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "**fragile**" in fig5 and "(others: 3/5)" in fig5
    assert "decided by the five seeds (cpu run: reproduced)" in fig5


def test_a_partial_item_names_what_did_not_run(monkeypatch, tmp_path):
    path = tmp_path / "items.yaml"
    path.write_text('- id: "A:Fig 5"\n  title: "Paper A Fig. 5 curves"\n  chapters: [a05]\n'
                    '  partial: "the paper trained 30,000 steps, we train 200"\n')
    monkeypatch.setattr(scorecard, "read_catalogue", lambda: read_catalogue(path))
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"})
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **partial** |" in fig5
    assert "- at best partial: the paper trained 30,000 steps, we train 200" in page


def test_measured_mappings_and_baselines_read_as_text():
    states = {"a05_ufm_training": {"comparisons": [
        {"key": "k", "claim": "sim high", "rule": "> chance + 0.1", "outcome": "reproduced",
         "measured": {"d=8": 0.5, "d=16": 0.25}, "chance": 0.6,
         "baselines": {"Gaussian": 0.1, "untrained": 0.6},
         "items": ["A:Fig 5"]}]}}
    page = render_scorecard(states, {"a05": "a05_ufm_training"})
    assert "- sim high: d=8: 0.5; d=16: 0.25 (chance: Gaussian 0.1, untrained 0.6)" in page


def test_an_empty_seeds_cell_says_why():
    from ntputils.reports.scorecard import _seeds_cell

    check = {"kind": "check", "chapter": "a02_lemma", "outcome": "reproduced"}
    claim = {"kind": "compare", "chapter": "a07_tf", "key": "k", "outcome": "reproduced"}
    assert _seeds_cell([], [check], {}) == "- (checks only)"
    assert _seeds_cell([], [check, claim], {}) == "- (no five-seed table of a07)"
    assert _seeds_cell([], [], {}) == "-"


@pytest.mark.real_catalogue
def test_an_item_on_a_rebuilt_or_sampled_data_set_is_partial_with_the_measured_differences():
    from ntputils.reports.scorecard import data_caps, item_data, read_datasets

    datasets = read_datasets()
    assert {d["kind"] for d in datasets.values()} <= {"paper", "rebuild", "sample"}
    uses = item_data()
    assert uses["A:Fig 1"] == ("STS",) and uses["B:Fig 9"] == ("MNIST",)
    states = {"a05_ufm_training": {"comparisons": [
        {"key": "a05_sts_m", "measured": 371, "paper": 403, "outcome": "deviates", "items": []}],
        "results": {}}}
    (cap,) = data_caps(("STS",), datasets, states)
    assert cap.startswith("partial (data): Paper A's Simplified TinyStories is a rebuild: rebuilt from")
    assert "a05_sts_m = 371 (paper 403)" in cap and "a05_sts_n: not measured in this build" in cap
    assert data_caps(("MNIST",), datasets, states) == []  # the paper's own data caps nothing
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        data_caps(("nope",), datasets, states)
    page = render_scorecard({"a05_ufm_training": {"comparisons": [
        {"key": "g", "claim": "CE - H small", "rule": "<= 0.001", "outcome": "reproduced", "measured": 1e-4,
         "items": ["A:Fig 4"], "control": "the untrained model", "control_value": 1.0,
         "control_passes": False}]}}, {"a05": "a05_ufm_training"})
    row = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 4"))
    assert "| **partial** |" in row
    assert "- at best partial: partial (data): Paper A's Synthetic data set is a rebuild" in page
    assert "- at best partial: partial (data): Paper A's Simplified TinyStories is a rebuild" in page


def test_a_data_set_of_unknown_kind_is_refused(tmp_path):
    from ntputils.reports.scorecard import read_datasets

    path = tmp_path / "datasets.yaml"
    path.write_text('- id: X\n  title: "x"\n  kind: "reconstructed"\n')
    with pytest.raises(ValueError, match="'X' has kind 'reconstructed', not one of paper, rebuild, sample"):
        read_datasets(path)


def test_the_headline_counts_items_per_paper_and_reaches_the_readme(tmp_path):
    from collections import Counter

    from ntputils.book.pages import write_readme_headline
    from ntputils.book.project import Project
    from ntputils.reports.scorecard import README_MARKS, headline

    statuses = {"A:Fig 1": "partial", "A:Fig 2": "reproduced", "A:Fig 7": "not reproduced",
                "A:Fig 8": "unscored", "B:Fig 3": "deviates", "B:Fig 9": "fragile"}
    top = headline(statuses, {"A": Counter({"controlled": 3, "cannot fail": 1, "no control": 2})})
    assert top.startswith("**Paper A**, 4 numbered figures and results: 1 reproduced, 1 partial, 0 fragile, "
                          "0 deviating, 1 not available, 1 not judged in this build; of its 6 judged claims, "
                          "1 cannot fail")
    assert ("**Paper B**, 2 numbered figures and results: 0 reproduced, 0 partial, 1 fragile, 1 deviating"
            in top)
    assert "of its 0 judged claims" in top
    real = Path(__file__).resolve().parents[1] / "README.md"
    assert real.read_text().count(README_MARKS[0]) == 1  # the README carries the marks the writer needs

    root = tmp_path / "p"
    (root / "book").mkdir(parents=True)
    (root / "notebooks").mkdir()
    project = Project(root)
    readme = root / "README.md"
    readme.write_text(f"# X\n\nintro\n{README_MARKS[0]}\nold\n{README_MARKS[1]}\n\nrest\n")
    with pytest.raises(ValueError, match="build the book first"):
        write_readme_headline(project)
    project.headline_page.write_text(f"{top} [The scorecard](scorecard.md) gives each item's evidence.\n")
    write_readme_headline(project)
    text = readme.read_text()
    assert "old" not in text and text.endswith("\n\nrest\n") and "](book/scorecard.md)" in text
    assert "**Paper A**, 4 numbered figures" in text and "(Scorecard of the build at commit none" in text
    write_readme_headline(project)  # idempotent: one block
    assert readme.read_text() == text
    readme.write_text("no marks")
    with pytest.raises(ValueError, match="needs one pair of headline marks"):
        write_readme_headline(project)


def _toy_repo(tmp_path):
    """A git repository with one chapter, ``notebooks/z01_toy.py``, and ``commit(text, message)`` that
    replaces its text and commits it."""
    import subprocess

    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    chapter = root / "notebooks" / "z01_toy.py"
    subprocess.run(["git", "init", "-q", str(root)], check=True)

    def commit(text: str, message: str) -> None:
        chapter.write_text(text)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
                        message], check=True)

    return root, commit


def test_rule_changes_after_a_chapter_ran_are_read_from_git(tmp_path):
    from ntputils.reports.rule_history import registered, rule_calls, rule_changes

    root, commit = _toy_repo(tmp_path)
    commit('claims = preregister({"z01_gap": ("gap", at_most(0.95, "bar"))})\n', "first")
    commit('claims = preregister({"z01_gap": ("gap", at_most(0.95, "bar"), "X:Fig 1")})\n', "re-wrap")
    commit('claims = preregister({"z01_gap": ("gap", at_most(0.9, "bar"), "X:Fig 1")})\n', "move the bar")
    (change,) = rule_changes(root, "z01_toy")  # the re-wrap kept the same rule call: not a change
    assert change.subject == "move the bar" and not change.after_table
    assert rule_calls(change.old) == ['at_most(0.95,"bar")']
    assert rule_calls(change.new) == ['at_most(0.9,"bar")']
    assert registered(root, "z01_gap")[0] and registered(root, "never_there") == ("", "")
    page = render_scorecard({}, {}, root=root)
    assert "## Rules changed after their chapter had run" in page  # no chapter ran here: the section is empty
    assert "## Negative controls changed after their chapter had run" in page


def test_control_changes_after_a_chapter_ran_are_read_from_git(tmp_path):
    """A control rewritten after the chapter's first commit is listed, with the rule untouched; a control
    added, or re-wrapped, is not a change."""
    from ntputils.reports.rule_history import control_changes, rule_changes
    from ntputils.reports.scorecard import control_history_lines

    root, commit = _toy_repo(tmp_path)
    rule = 'claims = preregister({"z01_gap": ("gap", at_most(0.95, "bar"))})\n'
    commit(rule + "value = run(seed)\n", "first")
    commit(rule + "value = run(seed)\ncontrol = run(seed, shuffled=True)\n", "add a control")
    commit(rule + "value = run(seed)\ncontrol = run(seed,  shuffled=True)  # re-spaced\n", "re-space")
    commit(rule + "value = run(seed)\ncontrol = run(seed, shuffled=True, steps=0)\n", "move the control")
    (change,) = control_changes(root, "z01_toy")
    assert change.subject == "move the control" and not change.after_table
    assert change.old == ("control = run(seed,  shuffled=True)  # re-spaced",)
    assert change.new == ("control = run(seed, shuffled=True, steps=0)",)
    assert rule_changes(root, "z01_toy") == ()  # the rule never changed
    table = control_history_lines(root, ["z01_toy"])
    assert any(line.startswith("| z01 | ") and "move the control" in line and line.endswith("| 1 | 1 |")
               for line in table), table


def test_every_committed_run_that_judged_a_claim_reaches_its_row():
    import pandas as pd

    from ntputils.reports.scorecard import decided_claims, other_evidence

    table = pd.DataFrame([{"kind": "compare", "status": "ok", "metric": "gap", "value": v, "outcome": o,
                           "items": "A:Fig 5", "point_id": p}
                          for p, (v, o) in enumerate([(0.5, "deviates"), (0.3, "deviates"),
                                                      (1e-4, "reproduced")])])
    others = {"a05-ladder": {"table": table, "stale": False, "prefix": "a05",
                             "provenance": {"git": "abc1234", "finished": "2026-11-26T00:00:00"}}}
    ors = other_evidence(others)["A:Fig 5"]
    assert {r["table"] for r in ors} == {"a05-ladder"} and len(ors) == 3
    ev = evidence(_states())["A:Fig 5"]
    (claim,) = decided_claims(ev, [], [], ors)
    assert claim["outcome"] == "deviates" and claim["by"] == "cpu run and a05-ladder"
    assert claim["worse_by"] == ["a05-ladder"]  # what made the verdict worse than the cpu run's
    stale = [{**r, "stale": True} for r in ors]
    assert decided_claims(ev, [], [], stale)[0]["outcome"] == "reproduced"  # STALE: no say
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, others=others)
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "**deviates**" in fig5 and "a05-ladder (abc1234, 2026-11-26): 1 reproduced, 2 deviates" in fig5
    assert "(decided by a05-ladder (cpu run: reproduced))" in fig5  # the row names the run that decided
    assert "; a05-ladder: 1 reproduced, 2 deviates" in page  # the claim's evidence names the run


def test_a_cpu_run_that_disagrees_with_the_seeds_tables_run_of_its_seed_is_machine_fragile():
    """The book's cpu run (seed 0) and a current seeds table's seed-0 point ran the same code with the same
    seed and parameters: where their outcomes differ, the claim's outcome follows the machine (the table was
    made on another one), so it is fragile (machine) -- unless the seeds' own verdict is worse."""
    from ntputils.committed import MACHINE_FRAGILE, seed_verdict
    from ntputils.reports.scorecard import decided_claims

    [row] = [r for r in evidence(_states())["A:Fig 5"] if r["kind"] == "compare"][:1]

    def decided(cpu: str, outcomes: list[str]) -> dict:
        seeds = [{"chapter": "a05", "key": row["key"], "outcomes": dict(enumerate(outcomes)),
                  "verdict": seed_verdict(outcomes), "stale": False}]
        return decided_claims([{**row, "outcome": cpu, "seed": 0}], [], seeds)[0]

    agree = decided("reproduced", ["reproduced"] * 5)
    assert agree["outcome"] == "reproduced" and not agree["twin_differs"]
    flipped = decided("reproduced", ["deviates"] + ["reproduced"] * 4)  # 4/5: the seeds alone say reproduced
    assert flipped["outcome"] == MACHINE_FRAGILE and flipped["twin_differs"]
    assert flipped["worse_by"] == ["a05-seeds' seed 0 (deviates there, reproduced here)"]
    assert decided("deviates", ["reproduced"] * 5)["outcome"] == MACHINE_FRAGILE  # not a plain deviation
    assert decided("reproduced", ["deviates"] * 5)["outcome"] == "deviates"  # the seeds' verdict is worse
    assert decided("reproduced", ["failed"] + ["reproduced"] * 4)["outcome"] == "reproduced"  # no twin
    # a seeds table that sets another parameter (b04's data_sample=0.9) has no point that is the book's run
    other_data = [{"chapter": "a05", "key": row["key"], "outcomes": dict(enumerate(["deviates"] * 5)),
                   "verdict": "deviates", "stale": False, "twin": False}]
    apart = decided_claims([{**row, "outcome": "reproduced", "seed": 0}], [], other_data)[0]
    assert apart["outcome"] == "deviates" and not apart["twin_differs"]  # the seeds' verdict, no twin
    other_data[0]["outcomes"] = dict(enumerate(["deviates"] + ["reproduced"] * 4))
    other_data[0]["verdict"] = seed_verdict(["deviates"] + ["reproduced"] * 4)
    assert decided_claims([{**row, "outcome": "reproduced", "seed": 0}], [], other_data)[0]["outcome"] \
        == "reproduced"
    states = _states()
    states["a05_ufm_training"]["seed"] = 0
    page = render_scorecard(states, {"a05": "a05_ufm_training"},
                            seeds=_seeds(["deviates"] + ["reproduced"] * 4))
    states["a05_ufm_training"]["profile"] = "paper"  # not a point of the (cpu-profile) seeds table
    assert all(r.get("seed") is None for r in evidence(states)["A:Fig 5"])
    states["a05_ufm_training"]["profile"] = "cpu"
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **fragile** (1 claim fragile (machine): the same code and seed gave another outcome when " \
           "its seeds table was made; decided by a05-seeds' seed 0 (deviates there, reproduced " \
           "here)" in fig5, fig5
