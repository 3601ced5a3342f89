"""Verdicts that hold across CPUs (issue #45, item 3): a judged claim records its rule's bounds, ``spread``
measures each committed value's spread across CPU code paths of one machine, ``recertify`` compares each
value within its own spread, and a claim whose rule bound lies inside that spread reads "fragile
(machine)" on the committed views and the scorecard.

The unit tests build tables in memory; the end-to-end test publishes a one-point sweep of a fixture chapter
whose value follows the environment its kernel was started with (``ATEN_CPU_CAPABILITY``,
``OMP_NUM_THREADS``), measures its spread and re-certifies an edited copy of it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ntputils import chapter as runtime
from ntputils.committed import (
    FLOAT_RTOL,
    MACHINE_FRAGILE,
    SPREAD_MULTIPLE,
    crosses_bound,
    machine_fragile,
    seed_claims,
    value_tolerance,
)
from ntputils.sweeps.recertify import differences
from ntputils.sweeps.spread import measure, merge, relative_spread, variants

from chapters import add_chapter

CELL = 'profile = "cpu"  # these values\nseed = 0         # seeds\ndevice = "cpu"   # cpu\n'


@pytest.fixture()
def chapter_run(monkeypatch):
    monkeypatch.delenv(runtime.RECORD_ENV, raising=False)
    runtime.setup_chapter({"In": ["", CELL, "run = setup_chapter(globals())"],
                           **runtime.literal_assignments(CELL, "cell")})


def test_a_judged_claim_records_the_bounds_of_its_rule(chapter_run):
    claims = runtime.preregister({
        "w": ("near the paper", runtime.within(0.5, abs_tol=0.1)),
        "lo": ("at least", runtime.at_least(1.0)), "hi": ("at most", runtime.at_most(2.0)),
        "in": ("between", runtime.between(0.1, 0.9)), "ch": ("above chance", runtime.above_chance(0.05)),
        "tr": ("beats the untrained model", runtime.at_least(0.2))})
    claims.w.judge(0.55)
    claims.lo.judge(1.5)
    claims.hi.judge(1.5)
    claims["in"].judge(0.5)
    claims.ch.judge(0.4, chance=0.25)
    claims.tr.judge(0.7, baselines={"Gaussian": 0.1, runtime.UNTRAINED: 0.6})
    rows = {r["key"]: (r["low"], r["high"]) for r in runtime.current_record()["comparisons"]}
    assert rows["w"] == pytest.approx((0.4, 0.6))
    assert rows["lo"] == (1.0, None) and rows["hi"] == (None, 2.0) and rows["in"] == (0.1, 0.9)
    assert rows["ch"] == pytest.approx((0.3, None))  # chance + margin
    assert rows["tr"] == (0.6, None)  # the untrained model's score is the bound that decides
    json.dumps(runtime.current_record(), allow_nan=False)  # no infinity reaches the record


def test_a_band_crosses_a_bound_and_a_spread_widens_the_tolerance():
    assert value_tolerance(None) == FLOAT_RTOL and value_tolerance(0.0) == FLOAT_RTOL
    assert value_tolerance(1e-3) == pytest.approx(SPREAD_MULTIPLE * 1e-3)
    assert crosses_bound(1.0, 1e-3, 1.0005, None) and crosses_bound(1.0, 1e-3, None, 0.9995)
    assert not crosses_bound(1.0, 1e-3, 0.5, None) and not crosses_bound(1.0, 1e-3, math.nan, math.nan)
    assert not crosses_bound(math.inf, 1.0, 0.5, None) and not crosses_bound("text", 1.0, 0.5, None)


def table_of(rows: list[dict]) -> pd.DataFrame:
    base = {"status": "ok", "value_text": "", "low": math.nan, "high": math.nan}
    return pd.DataFrame([base | r for r in rows])


def test_a_claim_is_machine_fragile_when_its_value_or_its_controls_band_holds_a_bound():
    p = {"point_id": "p", "seed": 0}
    table = table_of([
        p | {"kind": "compare", "metric": "near", "value": 1.0, "outcome": "deviates", "low": 1.0005},
        p | {"kind": "compare", "metric": "far", "value": 1.0, "outcome": "reproduced", "low": 0.5},
        p | {"kind": "compare", "metric": "ctl", "value": 2.0, "outcome": "reproduced", "low": 1.0},
        p | {"kind": "control", "metric": "ctl", "value": 0.9999, "outcome": "fails", "low": 1.0},
        p | {"kind": "record", "metric": "near", "value": 1.0, "outcome": ""}])
    spread = {"spread": {"compare": {"near": 1e-3, "far": 1e-3, "ctl": 0.0}, "control": {"ctl": 1e-3}}}
    assert machine_fragile(table, spread) == [True, False, True, False, False]
    assert machine_fragile(table, {}) == [False] * 5
    assert machine_fragile(table.drop(columns=["low", "high"]), spread) == [False] * 5  # an older table


def test_a_seed_that_may_flip_makes_the_verdict_machine_fragile_only_when_it_could_change_it():
    def seeds(outcomes, fragile):
        return table_of([{"point_id": f"s{s}", "seed": s, "kind": "compare", "metric": "c", "value": 0.1 * s,
                          "outcome": o, "machine_fragile": s in fragile} for s, o in enumerate(outcomes)])

    four = ["reproduced"] * 4 + ["deviates"]
    claim = seed_claims(seeds(four, {0}))["c"]
    assert claim["machine"] == [0] and claim["machine_fragile"]  # 3 of 5 on a CPU where seed 0 flips
    assert not seed_claims(seeds(["reproduced"] * 5, {0}))["c"]["machine_fragile"]  # 4 of 5 either way
    assert not seed_claims(seeds(four, set()))["c"]["machine_fragile"]


def test_the_scorecard_reads_fragile_machine_and_caps_the_item_at_fragile():
    from ntputils.reports.scorecard import decided_claims, final_status

    ev = [{"chapter": "a05_ufm_training", "key": "gap", "kind": "compare", "outcome": "reproduced",
           "control": "fails", "control_passes": False}]
    paper = [{"chapter": "a05", "key": "gap", "outcome": "reproduced", "stale": False, "control": "fails",
              "machine_fragile": True}]
    decided = decided_claims(ev, paper, [])
    assert decided[0]["outcome"] == MACHINE_FRAGILE
    assert final_status("reproduced", decided) == ("fragile", [])
    seeds = [{"chapter": "a05", "key": "gap", "verdict": "reproduced", "stale": False,
              "machine_fragile": True}]
    assert decided_claims(ev, [], seeds)[0]["outcome"] == MACHINE_FRAGILE
    assert decided_claims(ev, [], [seeds[0] | {"machine_fragile": False}])[0]["outcome"] == "reproduced"


def rows(values: dict[str, float], outcomes: dict[str, str], low: float = 1.0005) -> pd.DataFrame:
    return table_of([{"kind": "compare", "metric": k, "value": v, "outcome": outcomes.get(k, "reproduced"),
                      "low": low if k == "near" else 0.5} for k, v in values.items()])


def test_recertify_compares_each_value_within_its_own_spread_and_reports_machine_flips():
    old = rows({"near": 1.0, "far": 1.0}, {"near": "deviates"})
    new = rows({"near": 1.001, "far": 1.004}, {})
    moved, _, _, fragile = differences(old, new, {})  # no spread recorded: one tolerance, flips refused
    assert len(moved) == 3 and any("outcome 'deviates' -> 'reproduced'" in m for m in moved)
    assert any("no spread recorded" in m for m in moved) and fragile == []
    spread = {"spread": {"compare": {"near": 1e-3, "far": 2e-3}}}
    moved, largest, inexact, fragile = differences(old, new, {}, spread)
    assert moved == [] and inexact == 2 and largest == pytest.approx(0.004 / 1.004)
    assert fragile == [f"compare near: outcome 'deviates' -> 'reproduced', {MACHINE_FRAGILE} (a bound of its "
                       "rule lies inside its value's spread)"]
    far_flip = rows({"near": 1.0, "far": 1.0}, {"far": "deviates"})
    moved, _, _, fragile = differences(far_flip, rows({"near": 1.0, "far": 1.0}, {}), {}, spread)
    assert moved == ["compare far: outcome 'deviates' -> 'reproduced'"] and fragile == []  # no bound near
    beyond = rows({"near": 1.0, "far": 1.1}, {})
    moved = differences(rows({"near": 1.0, "far": 1.0}, {}), beyond, {}, spread)[0]
    assert moved and "its spread 0.002 x 3" in moved[0]


def test_variants_take_the_chapters_thread_parameter_else_the_environment():
    plain = [(v.name, v.env, v.swap) for v in variants({"seed": 0}, ["seed"], isa="AVX2", environ={})]
    assert plain == [("native", {}, {}), ("capability-default", {"ATEN_CPU_CAPABILITY": "default"}, {}),
                     ("threads-2", {"OMP_NUM_THREADS": "2"}, {})]
    assert variants({"seed": 0, "num_threads": 1}, ["seed"], isa="AVX2")[2].swap == {"num_threads": 2}
    assert variants({"seed": 0, "num_threads": 2}, ["seed"], isa="AVX2")[2].swap == {"num_threads": 1}
    assert len(variants({"num_threads": 1}, ["num_threads"], isa="AVX2")) == 2  # the table sweeps threads
    assert not any("OPENBLAS" in k for v in variants({}, [], isa="AVX2", environ={}) for k in v.env)


def test_an_avx512_cpu_also_runs_the_kernels_of_an_avx2_cpu_unless_openblas_is_pinned():
    """The kernels that differ between two CPUs of one model name (AVX-512 against AVX2) become a variant;
    a machine that pins OpenBLAS's kernel (``OPENBLAS_CORETYPE``, e.g. around a faulty one) keeps its pin."""
    names = [v.name for v in variants({"seed": 0}, ["seed"], isa="AVX-512", environ={})]
    assert names == ["native", "capability-default", "threads-2", "avx2"]
    avx2 = variants({"seed": 0}, ["seed"], isa="AVX-512", environ={})[-1]
    assert avx2.env == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                        "OPENBLAS_CORETYPE": "Haswell",
                        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
    assert avx2.swap == {}
    pinned = variants({"seed": 0}, ["seed"], isa="AVX-512", environ={"OPENBLAS_CORETYPE": "Zen"})
    assert "avx2" not in [v.name for v in pinned]


def test_a_values_spread_is_its_largest_relative_difference_over_the_variants_and_points():
    assert relative_spread([1.0, 1.001, 1.002]) == pytest.approx(0.002 / 1.002)
    assert relative_spread([[1.0, 2.0], [1.0, 2.002]]) == pytest.approx(0.001, rel=1e-3)
    assert relative_spread([1.0, math.nan]) is None and relative_spread([2.0, 2.0]) == 0.0
    committed = {("compare", "c"): (0.9, "", "deviates"), ("record", "r"): (5.0, "", "")}
    runs = {"native": {("compare", "c"): (1.0, "", "deviates"), ("record", "r"): (5.0, "", "")},
            "b": {("compare", "c"): (1.01, "", "reproduced")}}
    spread, gaps, flipped = measure(committed, runs)
    # the committed value is not in the spread (recertify compares it within the spread)
    assert spread == {"compare": {"c": pytest.approx(0.01 / 1.01)}, "record": {"r": None}}  # r: not in b
    assert gaps == {"compare": {"c": pytest.approx(0.1)}, "record": {"r": 0.0}}
    assert flipped == ["compare c"]
    assert merge([{"compare": {"c": 0.1}}, {"compare": {"c": 0.2, "d": None}}]) == {
        "compare": {"c": 0.2, "d": None}}


def test_spread_measures_the_code_paths_in_the_kernel_and_recertify_uses_it(tmp_path):
    root = tmp_path / "proj"
    add_chapter(root, "t01_path", "cpu_path_value")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "ATEN_CPU_CAPABILITY",
                                                              "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])

    def book(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ntputils.book", "--root", str(root), *args, ], env=env,
                              capture_output=True, text=True, timeout=300)

    run = book("sweep", "t01", "-p", "seed=0", "--name", "t01-s", "--workers", "1", "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    assert book("sweep-table", "t01-s", "--publish").returncode == 0
    folder = root / "results" / "sweeps" / "t01-s"
    table = pd.read_csv(folder / "table.csv")
    assert table.set_index("metric").loc["near", "low"] == 1.0005 and "high" in table

    assert book("spread").returncode == 2 and book("spread", "nope").returncode == 2
    out = book("spread", "t01-s", "--workers", "1", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    record = json.loads((folder / "spread.json").read_text())
    from ntputils.book.environment import vector_isa

    avx2 = ["avx2"] if vector_isa() == "AVX-512" and "OPENBLAS_CORETYPE" not in env else []  # this CPU's
    assert [v["name"] for v in record["variants"]] == ["native", "capability-default", "threads-2", *avx2]
    assert record["spread"]["compare"]["near"] == pytest.approx(0.002 / 1.002)  # the env reached the kernel
    assert record["spread"]["record"]["value"] == pytest.approx(0.002 / 1.002)
    assert record["outcomes_differ"] == ["compare near"] and record["points"] == [{"seed": 0}]
    assert record["committed_gap"]["compare"]["near"] == 0.0 and record["table_stale"] is False
    scratch = json.loads((root / "sweeps" / "spread-t01-s-capability-default" / "sweep.json").read_text())
    fresh = scratch["env"].pop("NTP_CACHE_DIR")  # every variant recomputes what a cache would hold
    again = book("spread", "t01-s", "--workers", "1", "--no-progress")  # no point of the first run reused
    assert again.returncode == 0 and again.stdout.count("0 done, 0 failed earlier") == len(record["variants"])
    assert scratch["env"] == {"ATEN_CPU_CAPABILITY": "default"} and "spread-capability-default-" in fresh
    assert not Path(fresh).exists() and record["fresh_cache"] is True  # removed after the variant ran

    from ntputils.committed import read_committed

    shown, _ = read_committed("t01-s", root)
    assert dict(zip(shown["metric"], shown["machine_fragile"], strict=True))["near"]
    assert not dict(zip(shown["metric"], shown["machine_fragile"], strict=True))["far"]

    # another machine's table: its values 4e-3 away, the near claim's outcome the other way
    text = (folder / "table.csv").read_text()
    edited = pd.read_csv(folder / "table.csv")
    edited.loc[edited["kind"].isin(["compare", "record"]), "value"] = 1.004
    edited.loc[edited["metric"] == "near", "outcome"] = "reproduced"
    edited.to_csv(folder / "table.csv", index=False)
    out = book("recertify", "t01-s", "--force", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "x its spread measured" in out.stdout and MACHINE_FRAGILE in out.stdout
    (folder / "spread.json").unlink()
    out = book("recertify", "t01-s", "--force", "--no-progress")
    assert out.returncode == 1 and "no spread recorded" in out.stdout, out.stdout
    (folder / "table.csv").write_text(text)


def test_the_scorecard_page_shows_a_machine_fragile_claim_and_its_item_as_fragile():
    from test_scorecard import _states

    from ntputils.reports.scorecard import render_scorecard

    table = table_of([{"point_id": "p", "kind": "compare", "metric": "gap", "value": 2e-4,
                       "outcome": "reproduced", "items": "A:Fig 5", "machine_fragile": True}])
    paper = {"a05": {"table": table, "stale": False, "provenance": {"git": "abcdef1", "finished": "2026"}}}
    page = render_scorecard(_states(), {"a05": "a05_ufm_training"}, paper)
    fig5 = next(line for line in page.splitlines() if line.startswith("| Paper A Fig. 5 "))
    assert "| **fragile** (1 claim fragile (machine): a bound of the rule lies inside" in fig5
    assert f"1 reproduced (1 {MACHINE_FRAGILE})" in fig5
    assert f"paper profile: 0.0002, **reproduced** ({MACHINE_FRAGILE})" in page
