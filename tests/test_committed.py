"""The chapter side's reader of committed results (:mod:`ntputils.committed`): what it reads, the currency
the runner hands it (and what it says without), the five-seed view, and that it runs no runner code."""

from __future__ import annotations

import json
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

from ntputils import committed
from ntputils.committed import (
    CURRENCY_ENV,
    POINT_ENV,
    RECORD_ENV,
    SEEDS_REPRODUCED_AT,
    UNCHECKED,
    UnreadableTable,
    beside_cpu,
    provenance_text,
    published,
    seed_tables,
    seed_verdict,
    seeds_command,
    seeds_view,
    shown_committed,
    state_line,
    table_digest,
)

HEAD = "point_id,seed,profile,kind,metric,value,value_text,outcome,items,status,seconds\n"


def write_table(root: Path, name: str, body: str, **prov) -> Path:
    folder = root / "results" / "sweeps" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "provenance.json").write_text(json.dumps(
        {"name": name, "chapter": f"{name.partition('-')[0]}_tiny", "profile": "cpu", "axes": {"seed": [0]},
         "points": 1,
         "git": "abc", "wall_s": 12.5, "command": f"python -m ntputils.book sweep t01 --name {name}",
         **prov}))
    (folder / "table.csv").write_text(HEAD + body)
    return folder


def seeds_body(outcomes: dict[str, list[str]]) -> str:
    """A five-seed table: one point per seed, each claim's outcome at that seed (value = the seed)."""
    lines = []
    for seed in range(5):
        for key, per_seed in outcomes.items():
            lines.append(f"p{seed},{seed},cpu,compare,{key},{seed}.5,,{per_seed[seed]},,ok,1.0\n")
    return "".join(lines)


R, D = "reproduced", "deviates"


@pytest.fixture
def root(tmp_path, monkeypatch):
    for var in (CURRENCY_ENV, POINT_ENV, RECORD_ENV):
        monkeypatch.delenv(var, raising=False)
    write_table(tmp_path, "t01-paper", "p0,0,paper,compare,big,499.5,,reproduced,A:Fig 1,ok,3.0\n")
    return tmp_path


def test_outside_the_runner_currency_is_not_checked_and_never_claimed(root):
    pub = published("t01-paper", root)
    assert pub["stale"] is None and pub["recertify_seconds"] is None
    assert pub["refresh"].endswith("&& python -m ntputils.book sweep-table t01-paper --publish")
    text = provenance_text("t01-paper", pub)
    assert UNCHECKED in text and "current" not in text.replace("currency", "")
    view = beside_cpu("t01", {}, root)
    assert view.stale is None and UNCHECKED in view.html() and "STALE" not in view.html()
    assert "[currency not checked]" in view.text()


def test_the_runners_currency_file_says_current_or_stale(root, tmp_path, monkeypatch):
    handed = tmp_path / "currency.json"
    monkeypatch.setenv(CURRENCY_ENV, str(handed))
    handed.write_text(json.dumps({"t01-paper": {"stale": False, "current_hash": "h",
                                                "recertify_seconds": 3}}))
    pub = published("t01-paper", root)
    assert pub["stale"] is False and pub["current_hash"] == "h"
    assert "current (the code it ran is unchanged)" in provenance_text("t01-paper", pub)
    handed.write_text(json.dumps({"t01-paper": {"stale": True, "current_hash": "g", "recertify_seconds": 3}}))
    view = beside_cpu("t01", {}, root)
    assert view.stale and "STALE" in view.html() and "[STALE]" in view.text()
    assert "Re-certify (about 3 s of point time): `python -m ntputils.book recertify t01-paper`" in view.state
    handed.write_text("{}")  # a table the runner did not see (published since): not checked
    assert published("t01-paper", root)["stale"] is None


def test_a_tables_cost_counts_the_trainings_its_points_reloaded(tmp_path, monkeypatch):
    """A point whose recorded training walls exceed its own wall reloaded them: remaking the table on a fresh
    machine costs both, and the page says so; a point that trained within its wall counts its wall only."""
    monkeypatch.delenv(CURRENCY_ENV, raising=False)
    body = ("p0,0,paper,record,t09_train_wall_sts_tf,5000.0,,,,ok,40.0\n"   # reloaded: 5000 s > 40 s
            "p0,0,paper,record,t09_train_wall_sts_lstm,2000.0,,,,ok,40.0\n"
            "p0,0,paper,compare,big,1.0,,reproduced,A:Fig 1,ok,40.0\n"
            "p1,1,paper,record,t09_train_seconds,30.0,,,,ok,100.0\n"          # trained here: 30 s < 100 s
            "p1,1,paper,compare,big,1.0,,reproduced,A:Fig 1,ok,100.0\n")
    write_table(tmp_path, "t09-paper", body, wall_s=140.0)
    table, prov = committed.read_committed("t09-paper", tmp_path)
    cost = committed.remake_cost(table)
    assert cost["per_point"] == {"p0": 7040.0, "p1": 100.0} and cost["seconds"] == 7140.0
    assert (cost["reloaded"], cost["points"], cost["training"]) == (1, 2, 7030.0)
    assert committed.wall_text(prov, cost) == (
        "wall 140.0 s (1 of 2 points reloaded trainings that took 1 h 57 min when they ran)")
    stale = {"t09-paper": {"stale": True, "current_hash": "x", "recertify_seconds": 7040.0}}
    line = state_line("t09-paper", published("t09-paper", tmp_path, currency=stale))
    assert "Re-certify (about 1 h 57 min of point time)" in line, line
    assert "refresh it whole (about 1 h 59 min of point time without its training checkpoints)" in line, line
    assert "reloaded trainings" in provenance_text("t09-paper", published("t09-paper", tmp_path))


def test_the_tables_a_chapter_reads_are_noted_beside_its_record(root, tmp_path, monkeypatch):
    record = tmp_path / "work" / "record.json"
    record.parent.mkdir()
    monkeypatch.setenv(RECORD_ENV, str(record))
    published("t01-paper", root)
    with pytest.raises(FileNotFoundError, match="no published sweep 'nope'"):
        published("nope", root)
    noted = json.loads((record.parent / "tables.json").read_text())
    assert noted == {"t01-paper": table_digest(root / "results" / "sweeps" / "t01-paper"), "nope": None}


def test_the_record_variable_is_the_chapters():
    from ntputils.chapter import RECORD_ENV as chapter_record_env

    assert RECORD_ENV == chapter_record_env


def test_a_sweep_point_reads_no_committed_table(tmp_path, monkeypatch):
    monkeypatch.setenv(POINT_ENV, "d-below-V/0123")
    with pytest.raises(FileNotFoundError, match="sweep point"):
        published("d-below-V", tmp_path)


@pytest.mark.parametrize("garble", [
    ("table.csv", 'point_id,kind\n"unterminated\n'), ("table.csv", "a,b\n1,2\n"),
    ("provenance.json", "{not json"), ("provenance.json", '{"name": "x"}'),
])
def test_a_garbled_committed_table_is_named_to_the_chapter_that_renders_it(tmp_path, garble, monkeypatch):
    monkeypatch.delenv(POINT_ENV, raising=False)
    folder = tmp_path / "results" / "sweeps" / "x-paper"
    folder.mkdir(parents=True)
    (folder / "provenance.json").write_text('{"name": "x-paper", "chapter": "x", "axes": {"seed": [0]}}')
    (folder / "table.csv").write_text("point_id,kind,metric,value\np,record,m,1\n")
    (folder / garble[0]).write_text(garble[1])
    with pytest.raises(UnreadableTable, match=r"results/sweeps/x-paper cannot be read.*git checkout") as err:
        published("x-paper", tmp_path)
    assert str(tmp_path) not in str(err.value)  # no machine path on a page
    with pytest.raises(FileNotFoundError, match="no published sweep 'y' in results/sweeps/y$"):
        published("y", tmp_path)


def test_the_seed_verdict_is_fixed_at_four_of_five():
    assert SEEDS_REPRODUCED_AT == 4
    assert seed_verdict([R, R, R, R, D]) == "reproduced"
    assert seed_verdict([R, R, R, D, D]) == "fragile"
    assert seed_verdict([D] * 5) == "deviates"
    assert seed_verdict(["not run"] * 5) == "not run"


def test_a_stale_line_says_when_another_python_made_the_table(root):
    # a fingerprint holds Python's minor version: the line must not blame the code when Python moved
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    other = "3.9" if here != "3.9" else "3.10"
    for name, python in (("t03-seeds", f"{here}.4"), ("t04-seeds", f"{other}.1")):
        write_table(root, name, seeds_body({"a": [R] * 5}), versions={"python": python})
    same = state_line("t03-seeds", published("t03-seeds", root, currency={"t03-seeds": {"stale": True}}))
    moved = state_line("t04-seeds", published("t04-seeds", root, currency={"t04-seeds": {"stale": True}}))
    assert same.startswith("STALE: code this table ran has changed since it was made. Re-certify")
    assert moved.startswith(f"STALE: it was made with Python {other} and this run is Python {here}")
    assert f"make book PYTHON=python{other}" in moved and "recertify t04-seeds" in moved
    # fingerprint format 3 leaves Python out: such a table is stale only because of its code
    write_table(root, "t05-seeds", seeds_body({"a": [R] * 5}), versions={"python": f"{other}.1"},
                fingerprint={"version": 3})
    newer = state_line("t05-seeds", published("t05-seeds", root, currency={"t05-seeds": {"stale": True}}))
    assert newer.startswith("STALE: code this table ran has changed since it was made. Re-certify")


def test_the_five_seed_view_says_whether_this_page_is_its_seed_point(root):
    # seeds_body: claim "a" measures seed + 0.5 at every seed; this page's run is a point of the table
    # only at the cpu profile with no parameter but profile, seed or device set
    write_table(root, "t02-seeds", seeds_body({"a": [R, R, D, R, R], "b": [R] * 5}),
                axes={"seed": [0, 1, 2, 3, 4]}, points=5)
    cur = {"t02-seeds": {"stale": False}}

    def page(seed=2, a=2.5, a_outcome=D, **over):
        return {"profile": "cpu", "seed": seed, "injected": ["seed"], **over,
                "comparisons": [{"key": "a", "measured": a, "outcome": a_outcome},
                                {"key": "b", "measured": seed + 0.5, "outcome": R}]}

    same = seeds_view("t02", page(), root, currency=cur)
    assert same.same_seed.startswith("This page's run is seed 2 of this table: claims measured by both: 2,")
    assert escape(same.same_seed) in same.html()
    assert "is seed 2" in seeds_view("t02", page(a=2.5 * (1 + 1e-9)), root, currency=cur).same_seed
    off = seeds_view("t02", page(a=2.6, a_outcome=R), root, currency=cur).same_seed
    assert off.startswith("This page's run and seed 2 of this table differ in 1 of 2 claims")
    assert "a: this page 2.6 (reproduced), table 2.5 (deviates)" in off
    outcome_only = seeds_view("t02", page(a_outcome=R), root, currency=cur).same_seed
    assert "differ in 1" in outcome_only
    skipped = page(a_outcome="not run", a=None)  # a claim this run did not measure is left out
    assert "claims measured by both: 1, each" in seeds_view("t02", skipped, root, currency=cur).same_seed
    for other in (page(profile="paper"), page(injected=["seed", "steps"]), page(seed=7), {}, None):
        assert seeds_view("t02", other, root, currency=cur).same_seed == ""


def test_the_five_seed_view_counts_each_claim(root):
    write_table(root, "t01-seeds", seeds_body({"four": [R, R, D, R, R], "three": [R, D, R, D, R],
                                               "none": [D] * 5}), axes={"seed": [0, 1, 2, 3, 4]}, points=5)
    record = {"comparisons": [{"key": "three", "claim": "the third claim", "rule": ">= 1"}]}
    view = seeds_view("t01", record, root, currency={"t01-seeds": {"stale": False}})
    rows = view.rows.set_index("claim")
    assert list(rows.index) == ["four", "the third claim", "none"]
    assert rows.loc["four", "reproduced"] == "4/5" and rows.loc["four", "verdict"] == "reproduced"
    third = rows.loc["the third claim"]
    assert (third["reproduced"], third["rule"], third["verdict"]) == ("3/5", ">= 1", "fragile")
    assert rows.loc["none", "reproduced"] == "0/5" and rows.loc["none", "verdict"] == "deviates"
    assert rows.loc["four", "seed 2"] == "2.5 (deviates)"
    assert rows.loc["four", "seed 4"] == "4.5 (reproduced)"
    assert "Five seeds" in view.html() and "STALE" not in view.html()
    stale = seeds_view("t01", record, root, currency={"t01-seeds": {"stale": True}})
    assert "STALE" in stale.html() and "recertify t01-seeds" in stale.html()
    claims = seed_tables(root, {"t01-seeds": {"stale": True}})["t01"]
    assert claims["stale"] is True and claims["claims"]["three"]["k"] == 3
    assert claims["claims"]["three"]["n"] == 5 and claims["claims"]["three"]["verdict"] == "fragile"
    assert claims["claims"]["four"]["outcomes"][2] == D and claims["claims"]["four"]["values"][4] == 4.5
    assert seed_tables(root)["t01"]["stale"] is None  # no runner: not checked


def test_a_failed_seed_point_counts_against_the_claim(root):
    body = seeds_body({"c": [R] * 5}).replace("p4,4,cpu,compare,c,4.5,,reproduced,,ok,1.0\n",
                                                "p4,4,cpu,point,,,,error,,failed,1.0\n")
    write_table(root, "t02-seeds", body)
    c = seed_tables(root)["t02"]["claims"]["c"]
    assert (c["k"], c["n"], c["outcomes"][4], c["verdict"]) == (4, 5, "failed", "reproduced")


def test_without_a_seed_table_one_line_names_the_command(root):
    view = seeds_view("t01", {}, root)
    assert not view.found
    assert seeds_command("t01") == ("python -m ntputils.book sweep t01 -p seed=0,1,2,3,4 --name t01-seeds "
                                    "--workers 2 && python -m ntputils.book sweep-table t01-seeds --publish")
    assert escape(seeds_command("t01")) in view.html() and view.html().count("<p>") == 1


def test_show_paper_profile_shows_both_views(root, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj.data))
    monkeypatch.setenv(committed.ROOT_ENV, str(root))
    view = committed.show_paper_profile("t01", {}, "cpu")
    assert view.found and not view.seeds.found
    assert "Paper-profile run" in shown[0] and "No committed five-seed run of t01" in shown[0]
    assert committed.show_paper_profile("t01", {}, "paper") is None


def test_the_chapter_side_imports_nothing_of_the_runner():
    code = ("import sys\nfrom ntputils.chapter import provenance_text, published, show_paper_profile\n"
            "import ntputils.committed\n"
            "assert not [m for m in sys.modules if m.startswith('ntputils.book')], sys.modules")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr


def test_shown_committed_prints_where_a_table_comes_from_or_why_there_is_none(root, monkeypatch, capsys):
    pub = shown_committed("t01-paper", root)
    out = capsys.readouterr().out
    assert pub is not None and pub["table"]["metric"].tolist() == ["big"]
    assert out.startswith("sweep t01-paper: 1 points, profile cpu, commit abc") and UNCHECKED in out
    assert shown_committed("t01-nothing", root) is None
    assert "no committed sweep: no published sweep 't01-nothing'" in capsys.readouterr().out
    monkeypatch.setenv(POINT_ENV, "p0")  # a sweep point shows no committed table
    assert shown_committed("t01-paper", root) is None
    assert "this run is a sweep point (p0)" in capsys.readouterr().out


def test_sweep_command_is_read_back_by_the_runner_as_the_same_sweep():
    """What a page prints is a command the runner parses into the axes, name, workers and profile given."""
    import shlex

    from ntputils.cli import parser
    from ntputils.sweeps.spec import parse_axes

    axes = {"n_stories": 100, "n_layers": (2, 4), "lr": [1.5e-3], "seed": 0}
    sweep, _, publish = committed.sweep_command("a07", axes, "a07-x", 2, profile="paper").partition(" && ")
    args = parser().parse_args(shlex.split(sweep)[3:])
    assert (args.chapter, args.name, args.workers, args.profile) == ("a07", "a07-x", 2, "paper")
    assert parse_axes(args.params) == {"n_stories": [100], "n_layers": [2, 4], "lr": [1.5e-3], "seed": [0]}
    assert publish == "python -m ntputils.book sweep-table a07-x --publish"
    assert committed.refresh_command("t01") == (
        "python -m ntputils.book sweep t01 --profile paper -p seed=0 --name t01-paper --workers 1"
        " && python -m ntputils.book sweep-table t01-paper --publish")


def test_recorded_values_has_one_row_per_finished_point(tmp_path):
    import pandas as pd

    body = ("p0,0,cpu,record,a,1.0,,,,ok,1\np0,0,cpu,record,b,2.0,,,,ok,1\n"
            "p0,0,cpu,compare,a,1.0,,reproduced,,ok,1\np1,1,cpu,record,a,3.0,,,,ok,1\n"
            "p1,1,cpu,record,b,4.0,,,,ok,1\np2,2,cpu,record,a,9.0,,,,failed,1\n")
    (tmp_path / "t.csv").write_text(HEAD + body)
    wide = committed.recorded_values(pd.read_csv(tmp_path / "t.csv"), "seed")
    assert wide.to_dict() == {"a": {0: 1.0, 1: 3.0}, "b": {0: 2.0, 1: 4.0}}


def test_control_values_are_the_controls_of_the_finished_points(tmp_path):
    """The control rows of a table (the value each claim's negative control took at each point), one row per
    finished point: a failed point's and the recorded values stay out."""
    import pandas as pd

    body = ("p0,0,cpu,record,a,1.0,,,,ok,1\np0,0,cpu,compare,a,1.0,,reproduced,,ok,1\n"
            "p0,0,cpu,control,a,0.5,,fails,,ok,1\np1,1,cpu,control,a,0.7,,passes,,ok,1\n"
            "p1,1,cpu,control,b,2.0,,fails,,ok,1\np2,2,cpu,control,a,9.0,,fails,,failed,1\n")
    (tmp_path / "t.csv").write_text(HEAD + body)
    wide = committed.control_values(pd.read_csv(tmp_path / "t.csv"), "seed")
    assert wide.fillna(-1).to_dict() == {"a": {0: 0.5, 1: 0.7}, "b": {0: -1, 1: 2.0}}


def test_a_table_of_another_chapter_or_without_its_columns_is_not_shown(root):
    body = seeds_body({"a": [R] * 5})
    write_table(root, "t05-seeds", body, axes={"seed": [0, 1, 2, 3, 4]}, points=5, chapter="t01_tiny")
    view = seeds_view("t05", None, root, currency={})
    assert not view.found and "is of chapter t01_tiny, not of t05" in view.error
    write_table(root, "t06-paper", body, chapter="t01_tiny")
    assert "is of chapter t01_tiny, not of t06" in beside_cpu("t06", {}, root, currency={}).error
    five = {"axes": {"seed": [0, 1, 2, 3, 4]}, "points": 5}
    write_table(root, "t07-seeds", body.replace(",0,cpu,", ",,cpu,"), **five)
    assert "column seed of whole numbers" in seeds_view("t07", None, root, currency={}).error
    (root / "results" / "sweeps" / "t07-seeds" / "table.csv").write_text(
        HEAD.replace(",outcome", "") + "p0,0,cpu,compare,a,1.0,,,ok,1\n")
    assert "no column outcome" in seeds_view("t07", None, root, currency={}).error


def test_five_identical_seed_values_are_one_measurement_and_cannot_fail_is_no_reproduction():
    import math

    from ntputils.committed import CANNOT_FAIL, SEED_NOT_USED, SEED_SAME_COUNT

    same = ["reproduced"] * 5
    assert seed_verdict(same, [0.25] * 5) == SEED_NOT_USED  # the seed entered no computation
    # five seeded trainings can reach the same step or share: the same whole number is not "seed not used"
    for whole in (1.0, 0, 49, math.inf, True):
        assert seed_verdict(same, [whole] * 5) == SEED_SAME_COUNT, whole
    assert seed_verdict(same, [1.0] * 4 + [0.0]) == "reproduced"  # whole numbers that differ count
    assert seed_verdict(same, [0.25, 0.25, 0.25, 0.25, 0.2500001]) == "reproduced"
    assert seed_verdict(same, [0.25] * 4 + [None]) == "reproduced"  # a value missing: not shown identical
    assert seed_verdict(["not run"] * 5, [None] * 5) == "not run"
    assert seed_verdict([CANNOT_FAIL] * 2 + ["reproduced"] * 3, [1, 2, 3, 4, 5]) == CANNOT_FAIL
    assert seed_verdict([CANNOT_FAIL] * 5, [1, 2, 3, 4, 5]) == CANNOT_FAIL
    assert seed_verdict([CANNOT_FAIL] * 2 + ["deviates"] * 3, [1, 2, 3, 4, 5]) == "deviates"


# ----------------------------------------------------------------------------------------------
# the section at a glance: a dot plot per view, the tables folded below it
# ----------------------------------------------------------------------------------------------

def marks(rows, lanes) -> dict[str, int]:
    """gid -> how many artists of a dot plot carry it (``dot``, ``inf``, ``no number``, ``bound``)."""
    fig = committed.dot_figure(rows, lanes)
    gids = [line.get_gid() for line in fig.axes[0].lines if line.get_gid()]
    return {g: gids.count(g) for g in set(gids)}


def png_of(html: str) -> bytes:
    import base64
    import re

    (data,) = re.findall(r"<img src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    return base64.b64decode(data)


def folded_tables(html: str) -> str:
    """The part of a view's html inside its ``<details>``, checking every table is in it."""
    start, end = html.index("<details><summary>"), html.index("</details>")
    assert html.count("<details>") == 1 and start < html.index("<table") and html.rindex("</table>") < end
    return html[start:end]


CPU = {"comparisons": [{"key": "big", "claim": "the mean is big", "rule": ">= 100", "measured": 4.5,
                        "outcome": D, "low": 100.0, "high": None},
                       {"key": "later", "claim": "needs the paper run", "rule": ">= 1", "measured": None,
                        "outcome": "not run", "low": 1.0, "high": None}],
       "results": {"mean": {"value": 4.5}}}


def test_the_paper_view_is_a_dot_plot_with_its_tables_one_click_away(root):
    view = beside_cpu("t01", CPU, root, currency={"t01-paper": {"stale": True}})
    html = view.html()
    png = png_of(html)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(png[16:20], "big") == 800  # 800 px wide: a text column, 10 pt type at 1:1
    assert committed.PLOT_FONT_PT >= 10 and "width='800'" in html
    inside = folded_tables(html)
    assert "Claims (rule fixed before either run)" in inside and "Recorded values" in inside
    assert "<summary>The numbers: 2 claims and 1 recorded values" in html
    # what says where the numbers come from and whether they are current stays visible
    for line in ("Paper-profile run <code>t01-paper</code>", "STALE", "recertify t01-paper"):
        assert line in html and line not in inside
    assert html.index("STALE") < html.index("<img") < html.index("<details>")
    # the cpu run's 4.5 and the paper run's 499.5 are dots; 'later' has no number in either run: an x in
    # each lane, none left out; the cpu run's bound of each claim is a bar (the paper table records none)
    assert marks(view.dots, committed.PAPER_LANES) == {"dot": 2, "no number": 2, "bound": 2}
    assert [(d.value, d.outcome) for d in view.dots[0].dots] == [(4.5, D), (499.5, R)]
    assert view.dots[0].note == "differ" and view.dots[1].note == ""  # 'later' is not in the paper run


def test_the_seed_view_draws_one_dot_per_seed_value(root):
    write_table(root, "t01-seeds", seeds_body({"four": [R, R, D, R, R], "none": [D] * 5}),
                axes={"seed": [0, 1, 2, 3, 4]}, points=5)
    view = seeds_view("t01", None, root, currency={"t01-seeds": {"stale": True}})
    html = view.html()
    assert png_of(html).startswith(b"\x89PNG")
    inside = folded_tables(html)
    assert "2.5 (deviates)" in inside and "STALE" in html and "STALE" not in inside
    assert "<summary>The numbers: 2 claims x 5 seeds" in html
    assert [lane for lane, _ in view.lanes] == [f"seed {s}" for s in range(5)]
    assert marks(view.dots, view.lanes) == {"dot": 10}
    four = view.dots[0]
    assert [d.value for d in four.dots] == [0.5, 1.5, 2.5, 3.5, 4.5]
    assert [d.outcome for d in four.dots] == [R, R, D, R, R] and four.note == "4/5"
    assert "claims, verdicts" in view.text() and "[STALE]" in view.text()


def test_a_seed_without_a_number_is_drawn_as_a_mark_not_left_out(root):
    # seed 4's point failed, seed 3 measured a list (no number), seed 2 measured inf
    body = seeds_body({"c": [R] * 5}).replace("p4,4,cpu,compare,c,4.5,,reproduced,,ok,1.0\n",
                                                "p4,4,cpu,point,,,,error,,failed,1.0\n")
    body = body.replace("p3,3,cpu,compare,c,3.5,,", 'p3,3,cpu,compare,c,,"[1, 2]",')
    body = body.replace("p2,2,cpu,compare,c,2.5,", "p2,2,cpu,compare,c,inf,")
    write_table(root, "t02-seeds", body)
    view = seeds_view("t02", None, root, currency={})
    (row,) = view.dots
    assert [d.outcome for d in row.dots] == [R, R, R, R, "failed"]
    assert marks(view.dots, view.lanes) == {"dot": 2, "inf": 1, "no number": 2}
    assert "alt='dot plot: 1 claims, 5 measurements'" in view.html()


def test_a_rules_bound_is_one_bar_or_one_per_run_where_it_differs():
    from ntputils.committed import Dot, DotRow

    lanes = [(f"seed {s}", "o") for s in range(5)]
    same = DotRow("same", [Dot(s, 0.9 + s / 100, R, 0.5, None) for s in range(5)])
    chance = DotRow("chance", [Dot(s, 0.9, R, 0.5 + s / 100, float("nan")) for s in range(5)])
    between = DotRow("between", [Dot(0, 1.0, R, 0.9, 1.1)])
    assert marks([same], lanes)["bound"] == 1
    assert marks([chance], lanes)["bound"] == 5  # each seed's own chance level
    assert marks([between], lanes)["bound"] == 2


def test_each_row_has_its_own_axis_and_says_when_it_is_logarithmic():
    from ntputils.committed import Dot, DotRow, row_scale

    position, lo, hi, log = row_scale(DotRow("drop", [Dot(0, 1.6e5, R, 100.0), Dot(1, 8e4, R, 100.0)]))
    assert (lo, hi, log) == (100.0, 1.6e5, True)
    assert position(100.0) == pytest.approx(committed._PAD) and position(1.6e5) == pytest.approx(
        1 - committed._PAD)
    position, lo, hi, log = row_scale(DotRow("x", [Dot(0, -1.2, R, None, -0.1), Dot(1, "[1]", D)]))
    assert (lo, hi, log) == (-1.2, -0.1, False)
    assert row_scale(DotRow("equal", [Dot(0, 30, R, 30, 30)]))[0](30) == 0.5
    assert row_scale(DotRow("none", [Dot(0, None, "not run"), Dot(1, "inf", D)])) is None


def test_a_long_claim_key_is_cut_in_the_middle():
    label = committed._label("sim_W_theory_Synthetic_LSTM_offdiag", 1.0, lambda t: len(t) / 20)
    assert label.startswith("sim_W_th") and label.endswith("offdiag") and "\u2026" in label
    assert len(label) <= 20 and committed._label("short", 1.0, lambda t: len(t) / 20) == "short"


def test_a_plot_that_cannot_be_drawn_leaves_the_tables(root, monkeypatch):
    def broken(*args, **kw):
        raise RuntimeError("no backend")

    monkeypatch.setattr(committed, "dot_figure", broken)
    html = beside_cpu("t01", CPU, root, currency={}).html()
    assert "(no dot plot: RuntimeError: no backend)" in html and "<img" not in html
    assert "499.5" in folded_tables(html)


def test_a_seed_table_that_sets_another_parameter_has_no_same_seed_line():
    """b04-seeds runs at data_sample=0.9, the book at 1.0: its seed-0 point is not the page's run, so the
    page does not compare them (a difference there is the data's, not the machine's)."""
    from ntputils.committed import fixed_parameters, same_seed_line

    claims = {"c": {"outcomes": {0: "reproduced"}, "values": {0: 1.0}}}
    record = {"profile": "cpu", "seed": 0, "injected": [],
              "comparisons": [{"key": "c", "outcome": "deviates", "measured": 2.0}]}
    plain = {"axes": {"seed": [0, 1, 2, 3, 4]}}
    sampled = {"axes": {"seed": [0, 1, 2, 3, 4], "data_sample": [0.9]}}
    assert fixed_parameters(plain) == {} and fixed_parameters(sampled) == {"data_sample": [0.9]}
    assert "differ in 1 of 1 claims" in same_seed_line(claims, record, plain)
    assert same_seed_line(claims, record, sampled) == ""
