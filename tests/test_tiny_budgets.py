"""Real chapters at the smallest budgets a clumsy user might pass: the page is made, and a claim whose
measurement needs more training reads ``not run`` or ``deviates`` with its reason; or the build stops at a
named check. Never an ``IndexError``/``ValueError`` from numpy half-way through a chapter.

Found by running every chapter at a tiny budget (b05 ``steps=3``, a04 ``ufm_steps=1``, a05 ``steps=2``, b03
``t_max=0.2`` crashed before the fix). Each case runs the chapter as one sweep point in a throw-away project
(``--root``), with the session's fresh cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]

# chapter file stem -> (overrides, {claim: outcome} the point must report), for points that must finish
FINISHES = {
    "b05_transformer_confusion": (["steps=3"], {"order_vs_concepts": "deviates", "broad_by_20": "deviates"}),
    "a04_subspace_collapse": (["ufm_steps=1", "random_sizes=[[10, 20]]"], {"a04_perp_monotone": "not run"}),
    "a05_ufm_training": (["steps=2", "milestones=[]", "n_log=2"],
                         {"a05_STS_direction": "not run", "a05_STS_norms": "not run",
                          "a05_Synthetic_direction": "not run"}),
}


def sweep_point(tmp_path: Path, stem: str, overrides: list[str]) -> pd.DataFrame:
    """Run chapter ``stem`` once with ``overrides`` in a throw-away project; its sweep table."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for source in (REPO / "notebooks").glob(f"{stem}.*"):
        shutil.copy(source, notebooks / source.name)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    args = [sys.executable, "-m", "ntputils.book", "--root", str(tmp_path), "sweep", stem[:3], "--name", "tiny",
            "--workers", "1", "--no-progress"]
    for value in overrides:
        args += ["-p", value]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: the point ended in an error
    return pd.read_parquet(tmp_path / "sweeps" / "tiny" / "table.parquet")


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(FINISHES))
def test_a_chapter_at_a_tiny_budget_finishes_and_says_what_it_could_not_judge(tmp_path, stem):
    overrides, expected = FINISHES[stem]
    table = sweep_point(tmp_path, stem, overrides)
    assert set(table["status"]) == {"ok"}, table["error"].dropna().tolist()
    outcomes = table[table["kind"] == "compare"].set_index("metric")["outcome"]
    assert {k: outcomes.get(k) for k in expected} == expected


@pytest.mark.slow
def test_a_chapter_whose_run_is_too_short_for_a_check_stops_at_that_check(tmp_path):
    """b03 at ``t_max=0.2``: no mode is learned; the build stops at the check of Fig. 13's tiers, by name,
    not at a NaN claim value computed before it."""
    table = sweep_point(tmp_path, "b03_step_imbalance", ["t_max=0.2"])
    errors = table["error"].dropna().unique().tolist()
    assert len(errors) == 1 and "check failed: Fig. 13 middle" in errors[0], errors
