"""Real chapters at the smallest budgets a clumsy user might pass: the page is made, and a claim whose
measurement needs more training reads ``not run`` or ``deviates`` with its reason; or the build stops at a
named check. Never an ``IndexError``/``ValueError`` from numpy half-way through a chapter.

Found by running every chapter at a tiny budget: b05 ``steps=3``, a04 ``ufm_steps=1``, a05 ``steps=2``, b03
``t_max=0.2``, c02 at its ``LIMITS`` minimums (``k_max=8``, ``V=20``), b04 ``n_draws=2``, b01 ``d=3`` and b06
``per_class=[1, 1, 1, 1]`` (any class below 4 images: ``zip() argument 2 is shorter``) crashed half-way
(IndexError, NaN claim, a mismatched matmul) before the fix; b06 ``per_class=[]`` gave a bare IndexError
in its first cell, and ``digits=[0, 0, 1, 2]`` ran, drawing the same images into two classes. Each case
runs the chapter as one sweep point in a throw-away project (``--root``), with the session's fresh cache.
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
    # c02 and b04 at the smallest values their LIMITS and up-front checks admit
    "c02_proxy_at_scale": (["V=64", "m=100", "k_max=9", "top=10", "n_draws=20"],
                           {"c02_STS_P5": "not run", "c02_WikiText_P5": "not run"}),
    "b04_semantics_real_text": (["top=10", "n_concepts=7", "n_draws=20", "wikitext_p6_grid=False"], {}),
    "b01_organism_concepts": (["d=6", "steps=1"], {}),
    # the smallest STEP imbalance (R = 2, one image a minority): its sample-image figure has 6 images, not 16
    "b06_cnn_imbalance": (["per_class=[2, 2, 1, 1]", "steps=2"], {"all_by_60": "deviates"}),
}
# chapter stem -> (overrides, the message the runner refuses them with before any kernel starts)
REFUSED = {
    "c02_proxy_at_scale": (["k_max=8"], "k_max=8 is outside the chapter's limits [9, 256]"),
    "b04_semantics_real_text": (["n_draws=2"], "n_draws=2 is outside the chapter's limits [20, inf]"),
    "b01_organism_concepts": (["steps=0"], "steps=0 is outside the chapter's limits [1, inf]"),
    # an empty list of a list parameter: its length is bounded too (before: max() of an empty sequence)
    "a02_ufm_nuclear_norm": (["lams=[]"], "lams=[] has 0 entries, outside the chapter's limits [1, inf]"),
    "b07_gpt2_semantics": (["ps=[]"], "ps=[] has 0 entries, outside the chapter's limits [1, inf]"),
    "b06_cnn_imbalance": (["steps=0"], "steps=0 is outside the chapter's limits [1, inf]"),
    # before: every UFM and L^mm run, then min() of an empty sequence in the random-support claims
    "a04_subspace_collapse": (["random_sizes=[]"], "random_sizes=[] has 0 entries, outside the chapter's"),
}


def sweep(tmp_path: Path, stem: str, overrides: list[str]) -> subprocess.CompletedProcess:
    """``sweep`` of chapter ``stem`` once with ``overrides`` in a throw-away project."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for source in (REPO / "notebooks").glob(f"{stem}.*"):
        shutil.copy(source, notebooks / source.name)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    args = [sys.executable, "-m", "ntputils.book", "--root", str(tmp_path), "sweep", stem[:3],
            "--name", "tiny", "--workers", "1", "--no-progress"]
    for value in overrides:
        args += ["-p", value]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)


def sweep_point(tmp_path: Path, stem: str, overrides: list[str]) -> pd.DataFrame:
    """Run chapter ``stem`` once with ``overrides`` in a throw-away project; its sweep table."""
    done = sweep(tmp_path, stem, overrides)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: the point ended in an error
    return pd.read_parquet(tmp_path / "sweeps" / "tiny" / "table.parquet")


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_values_below_a_chapters_limits_are_refused_before_any_kernel_starts(tmp_path, stem):
    overrides, message = REFUSED[stem]
    done = sweep(tmp_path, stem, overrides)
    assert done.returncode == 2 and message in done.stdout + done.stderr, done.stdout + done.stderr
    assert not (tmp_path / "sweeps" / "tiny" / "points").exists()


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(FINISHES))
def test_a_chapter_at_a_tiny_budget_finishes_and_says_what_it_could_not_judge(tmp_path, stem):
    overrides, expected = FINISHES[stem]
    table = sweep_point(tmp_path, stem, overrides)
    assert set(table["status"]) == {"ok"}, table["error"].dropna().tolist()
    outcomes = table[table["kind"] == "compare"].set_index("metric")["outcome"]
    assert {k: outcomes.get(k) for k in expected} == expected


@pytest.mark.slow
@pytest.mark.parametrize(("stem", "overrides", "message"), [
    # no mode is learned: the check of Fig. 13's tiers, by name, not a NaN claim value computed before it
    ("b03_step_imbalance", ["t_max=0.2"], "check failed: Fig. 13 middle"),
    # below rank(S~), known once the data is read: the first thing the chapter computes
    ("b01_organism_concepts", ["d=5"], "d = 5 is below rank(S~) = 6 of the organism data: pass -p d=6"),
    # two parameters that LIMITS cannot relate, checked in the chapter's first cell
    ("c02_proxy_at_scale", ["V=20"], "2**max(ps) = 64 k-means clusters need V >= that many words (V = 20)"),
    # balanced classes are no STEP imbalance (R = 1), checked before the data is read
    ("b06_cnn_imbalance", ["per_class=[1, 1, 1, 1]"], "per_class = [1, 1, 1, 1] is not the STEP imbalance"),
    # an empty list: the named message, not an IndexError of per_class[0] (stop 60 left it so)
    ("b06_cnn_imbalance", ["per_class=[]"], "per_class = [] is not the STEP imbalance"),
    # a digit named twice would draw the same images into two classes: a silent wrong run before the check
    ("b06_cnn_imbalance", ["digits=[0, 0, 1, 2]"], "digits = [0, 0, 1, 2] must be four distinct digits 0-9"),
    ("b06_cnn_imbalance", ["channels=[16, 32]"], "channels = [16, 32] must be three positive conv widths"),
    # a random support matrix random_supports cannot draw: before, known only after the collapse run
    ("a04_subspace_collapse", ["random_sizes=[[4, 20]]"], "random_sizes entries must be [V, m] with V > max"),
])
def test_a_chapter_stops_with_a_named_reason(tmp_path, stem, overrides, message):
    table = sweep_point(tmp_path, stem, overrides)
    errors = table["error"].dropna().unique().tolist()
    assert len(errors) == 1 and message in errors[0], errors
