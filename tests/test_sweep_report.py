"""``python -m ntputils.book sweep-report NAME``: a real tiny scratch sweep (2 workers, one failing
point) drawn by the book's sweeps page (``notebooks/c03_sweeps.py``, copied into a throw-away project)
into an executed notebook and a standalone HTML page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ntputils import cli
from ntputils.book import build as book_build

from chapters import add_chapter

REPO = Path(__file__).resolve().parents[1]

def env() -> dict[str, str]:
    e = os.environ.copy()
    e.pop("MPLBACKEND", None)
    return e


def test_sweep_report_draws_a_scratch_sweep(tmp_path, capfd):
    add_chapter(tmp_path, "t01_tiny", "records_claim")
    shutil.copy(REPO / "notebooks" / "c03_sweeps.py", tmp_path / "notebooks")
    sweep = subprocess.run([sys.executable, "-m", "ntputils.book", "--root", str(tmp_path), "sweep", "t01",
                            "-p", "x=1,2,3,4", "-p", "seed=0,1", "-p", "fail_at=4", "--name", "tiny",
                            "--workers", "2", "--no-progress"],
                           env=env(), capture_output=True, text=True, timeout=300)
    assert sweep.returncode == 1 and "6 ok, 2 error" in sweep.stdout, sweep.stdout + sweep.stderr

    out = tmp_path / "elsewhere"
    capfd.readouterr()
    code = cli.main(["--root", str(tmp_path), "sweep-report", "tiny", "--out", str(out)])
    printed, errors = capfd.readouterr()  # the file descriptors: what the kernel prints too
    assert code == 0, printed + errors
    # the kernel's warnings go to the report's log, not the console
    assert "without encryption" not in printed + errors and "IPKernelApp" not in printed + errors
    assert "Kernel is running over TCP without encryption" in (out / "tiny.log").read_text()
    assert f"(log: {out / 'tiny.log'})" in printed
    assert (tmp_path / "sweeps" / "tiny" / "table.parquet").is_file()  # collected from the points
    nb = json.loads((out / "tiny.ipynb").read_text())
    injected = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
    source = "".join(injected["source"])
    assert 'names = ["tiny"]' in source and "scratch = True" in source
    html = (out / "tiny.html").read_text()
    # the two pictures: the recorded value against x (size is constant: listed), the points x claims grid
    assert len(re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{100,}', html)) == 2
    assert "scratch sweep tiny of t01_tiny: 8 points" in html
    assert "swept: x = [1, 2, 3, 4], seed = [0, 1], fail_at = [4]" in html
    assert "points: 8 (2 failed); recorded values: 2; pre-registered claims: 1; checks: 0" in html
    assert "the same at every point (not drawn): 1" in html and "<code>size</code> = 7" in html
    # a scratch sweep is not "every committed sweep": titled as what it is, the list of what is drawn kept
    assert "Every committed sweep" not in html and "<h1>Scratch sweep <code>tiny</code>, drawn</h1>" in html
    assert "not committed and not part of the book" in html and "<strong>Provenance</strong>" in html
    assert "Scratch sweep `tiny`, drawn" in "".join(json.loads((out / "tiny.ipynb").read_text())["cells"][0]
                                                    ["source"])
    assert "_ntpbook_tracing" not in html and "Traceback" not in html
    assert "no curves" not in html

    # a sweep whose recorded values do not change with its axis: the true reason there are no curves
    flat = tmp_path / "sweeps" / "flat"
    flat.mkdir()
    shutil.copy(tmp_path / "sweeps" / "tiny" / "sweep.json", flat)
    table = pd.read_parquet(tmp_path / "sweeps" / "tiny" / "table.parquet")
    table.loc[(table["kind"] == "record") & (table["metric"] == "square"), "value"] = 4.0
    table.to_parquet(flat / "table.parquet")
    assert cli.main(["--root", str(tmp_path), "sweep-report", "flat", "--out", str(out)]) == 0
    html = (out / "flat.html").read_text()
    assert "no curves: no recorded value changes with x (each is the same at every point" in html, html
    assert "no numeric axis with two or more values besides seed" not in html  # the old, wrong reason


def test_sweep_report_of_no_such_sweep_exits_2(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO / "notebooks" / "c03_sweeps.py", tmp_path / "notebooks")
    assert cli.main(["--root", str(tmp_path), "sweep-report", "nothing"]) == book_build.EXIT_USAGE
    assert "error: no sweep named 'nothing'" in capsys.readouterr().out
    assert cli.main(["--root", str(tmp_path), "sweep-report", "../up"]) == book_build.EXIT_USAGE
    assert not (tmp_path / "sweeps").exists()
