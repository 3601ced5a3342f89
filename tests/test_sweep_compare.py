"""``python -m ntputils.book sweep-table NAME --diff``: a sweep's table against its committed one, matched on
the swept parameters, kind and metric (point ids change with the code), read-only."""

import json
import math
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from ntputils import cli
from ntputils.sweeps.compare import diff_lines, table_diff

COLUMNS = ["point_id", "x", "profile", "kind", "metric", "value", "value_text", "outcome"]


def _table(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def test_rows_are_matched_on_parameters_kind_and_metric_not_point_ids():
    old = _table([("p0", 0, "cpu", "record", "a", 1.0, "", ""),
                  ("p0", 0, "cpu", "compare", "c", 0.49, "", "deviates"),
                  ("p0", 0, "cpu", "control", "c", 0.1, "", "fails"),
                  ("p0", 0, "cpu", "record", "gone", 2.0, "", ""),
                  ("p1", 1, "cpu", "record", "a", math.nan, "", ""),
                  ("p1", 1, "cpu", "record", "t", math.nan, '{"k": 1}', "")])
    new = _table([("q0", 0, "cpu", "record", "a", 1.0, "", ""),  # another id, the same point
                  ("q0", 0, "cpu", "compare", "c", 0.51, "", "reproduced"),
                  ("q0", 0, "cpu", "control", "c", 0.1, "", "fails"),
                  ("q0", 0, "cpu", "record", "added", 3.0, "", ""),
                  ("q1", 1, "cpu", "record", "a", math.nan, "", ""),  # NaN = NaN
                  ("q1", 1, "cpu", "record", "t", math.nan, '{"k": 2}', "")])
    d = table_diff(old, new)
    assert (d.compared, d.identical) == (5, 3)
    assert d.only_old == [("0", "record", "gone")] and d.only_new == [("0", "record", "added")]
    (flip,) = d.flips
    assert flip == (("0", "compare", "c"), 0.49, 0.51, "deviates", "reproduced")
    assert [m[0] for m in d.moved] == [("1", "record", "t"), ("0", "compare", "c")]  # text first: inf
    assert d.moved[1][3] == pytest.approx(0.02 / 0.49)
    lines = diff_lines("fake", d)
    assert lines[0] == ("sweep fake against results/sweeps/fake/table.csv: 5 rows in both, 3 bit-identical, "
                        "2 moved, 1 outcome(s) flipped; 1 row(s) only in the committed table, 1 only in the "
                        "new one")
    assert "  compare c [0]: 0.49 -> 0.51, deviates -> reproduced" in lines
    assert "  record t [1]: '{\"k\": 1}' -> '{\"k\": 2}' (relative inf)" in lines
    assert "only in the committed table: record gone [0]" in lines


def test_tables_of_different_parameters_are_refused():
    other = _table([]).rename(columns={"x": "y"})
    with pytest.raises(ValueError, match=r"different parameters: committed \['x'\], new \['y'\]"):
        table_diff(_table([]), other)


def _fake_sweep(root: Path, values: dict[int, float]) -> None:
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    d = root / "sweeps" / "fake"
    (d / "points").mkdir(parents=True)
    ids = [f"p{x}" for x in values]
    (d / "sweep.json").write_text(json.dumps({"chapter": "t01_tiny", "axes": {"x": list(values)},
                                              "point_ids": ids, "command": "sweep t01 --name fake"}))
    for (x, v), pid in zip(values.items(), ids, strict=True):
        (d / "points" / pid).mkdir()
        (d / "points" / pid / "result.json").write_text(json.dumps({
            "id": pid, "status": "ok", "seconds": 1.0, "profile": "cpu", "resolved": {"x": x},
            "results": {"m": {"value": v}},
            "comparisons": [{"key": "c", "measured": v,
                             "outcome": "reproduced" if v >= 0.5 else "deviates"}]}))


def test_the_command_compares_with_the_committed_table_and_writes_nothing(tmp_path, capsys):
    root = tmp_path
    _fake_sweep(root, {0: 0.4, 1: 0.7})
    code = cli.main(["--root", str(root), "sweep-table", "fake", "--diff"])
    out = capsys.readouterr().out
    committed = root / "results" / "sweeps" / "fake" / "table.csv"
    assert code == 2 and f"error: no committed table {committed} to compare sweep 'fake' with" in out, out
    committed.parent.mkdir(parents=True)
    assert cli.main(["--root", str(root), "sweep-table", "fake"]) == 0  # the table, as the sweep has it
    committed.write_text(capsys.readouterr().out.replace("0.4,", "0.6,").replace("deviates", "reproduced"))
    before = sorted(p.name for p in (root / "sweeps" / "fake").iterdir())
    code = cli.main(["--root", str(root), "sweep-table", "fake", "--diff"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 rows in both, 2 bit-identical, 2 moved, 1 outcome(s) flipped" in out, out
    assert "  compare c [0]: 0.6 -> 0.4, reproduced -> deviates" in out, out
    assert sorted(p.name for p in (root / "sweeps" / "fake").iterdir()) == before  # read-only


def test_diff_with_publish_is_refused_before_anything_is_read(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    for extra in (["--publish"], ["--format", "markdown"], ["--force"]):
        assert cli.main(["--root", str(tmp_path), "sweep-table", "fake", "--diff", *extra]) == 2
        assert "error: --diff prints a comparison and writes nothing" in capsys.readouterr().out
    assert not (tmp_path / "results").exists()


def _stdout_without_reader():
    """A stdout on a real pipe whose reading end is closed (``... | head`` after head exits)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return os.fdopen(write_end, "w")


@pytest.mark.parametrize("command", [["sweep-table", "fake"], ["sweep-table", "fake", "--diff"],
                                     ["sweep-table", "fake", "--format", "markdown"],
                                     ["sweep-status", "fake"]])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, capsys, monkeypatch, command):
    _fake_sweep(tmp_path, {0: 0.4, 1: 0.7})
    committed = tmp_path / "results" / "sweeps" / "fake" / "table.csv"
    committed.parent.mkdir(parents=True)
    assert cli.main(["--root", str(tmp_path), "sweep-table", "fake"]) == 0
    committed.write_text(capsys.readouterr().out)
    monkeypatch.setattr(sys, "stdout", _stdout_without_reader())
    assert cli.main(["--root", str(tmp_path), *command]) == 0  # no BrokenPipeError
    assert sys.stdout.closed  # so the interpreter's last flush cannot fail either


def test_a_broken_pipe_that_is_not_stdout_is_raised(monkeypatch):
    def worker_gone(argv):
        raise BrokenPipeError(32, "Broken pipe")  # a worker's or a socket's pipe; stdout is fine

    monkeypatch.setattr(cli, "_main", worker_gone)
    with pytest.raises(BrokenPipeError):
        cli.main(["list"])


def test_a_command_started_without_stdout_still_runs(tmp_path, monkeypatch):
    _fake_sweep(tmp_path, {0: 0.4, 1: 0.7})
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets for ``ntpbook ... >&-``
    assert cli.main(["--root", str(tmp_path), "sweep-table", "fake"]) == 0
