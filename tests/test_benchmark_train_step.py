"""The training-step benchmark (benchmarks/train_step.py): a tiny transformer through both loops, the row
the driver writes from them, and the page's table."""

from __future__ import annotations

import pytest

from benchmarks import train_step
from benchmarks.common import run_worker


def _check_loop(out: dict, loop: str) -> None:
    assert out["loop"] == loop and out["spec"] == "tiny" and out["threads"] == 1
    assert out["steps"] == 6 and out["parameters"] > 0
    for unit in ("cpu_ms", "wall_ms"):
        assert out[unit]["median"] > 0 and out[unit]["p25"] <= out[unit]["median"] <= out[unit]["p75"]
    assert out["setup_cpu_s"] >= 0 and len(out["loadavg_start"]) == 3


def test_worker_measures_both_loops_and_the_driver_combines_them():
    ours = train_step.measure("tiny", "ours", threads=1, budget=1.0, steps=6)
    bare = train_step.measure("tiny", "bare", threads=1, budget=1.0, steps=6)
    _check_loop(ours, "ours")
    _check_loop(bare, "bare")
    # 6 measured steps after the warm-up: one of them logged (every LOG_EVERY-th), the rest hot
    assert ours["cpu_ms"]["n"] + ours["logged_cpu_ms"]["n"] == 6 and ours["logged_cpu_ms"]["n"] >= 1
    assert "logged_cpu_ms" not in bare and bare["cpu_ms"]["n"] == 6
    load = {"status": "ok", "loadavg_before": [1.0, 1.0, 1.0]}
    row = train_step.combine("tiny", 1, ours | load, bare | load)
    assert row["status"] == "ok" and row["ratio_cpu"] > 0 and row["ratio_wall"] > 0
    assert row["ours_at_cadence_cpu_ms"] >= row["ours_cpu_ms"]
    assert isinstance(row["meets_goal"], bool)
    table = train_step.format_table([row])
    assert table.count("\n") == 2 and "`tiny`" in table
    assert ("| met |" in table) is row["meets_goal"] and ("**not met**" in table) is not row["meets_goal"]


@pytest.mark.slow  # a fresh process importing torch: > 10 s on the shared machine
def test_a_real_worker_round_trip():
    out = run_worker("benchmarks.train_step", ["--spec", "tiny", "--loop", "bare", "--steps", "6"],
                     timeout=120)
    assert out["status"] == "ok" and out["cpu_ms"]["median"] > 0 and out["wall_ms"]["median"] > 0
    assert out["wall_seconds"] > 0 and len(out["loadavg_before"]) == 3


def test_profile_covers_the_hot_steps_and_names_the_top_functions():
    loops = {loop: train_step.profile("tiny", loop, threads=1, steps=4) | {"status": "ok"}
             for loop in ("ours", "bare")}
    for p in loops.values():
        assert p["steps"] == 4 and p["total_ms_per_step"] > 0 and p["top"]
        assert p["top"][0]["own_ms_per_step"] >= p["top"][-1]["own_ms_per_step"]
    intro, blank, table, _ = train_step.profile_lines({"profiles": {"tiny": loops}})
    assert intro.startswith("`tiny`: cProfile of 4 hot steps") and blank == ""
    assert table.startswith("| function | ours, ms a step |")
    assert "<method" not in table and "<built-in" not in table


@pytest.mark.parametrize(("entry", "name"), [
    ("<method 'run_backward' of 'torch._C._EngineBase' objects>", "_EngineBase.run_backward"),
    ("<built-in method torch.lstm>", "torch.lstm"),
    ("<built-in method torch._C._nn.adaptive_avg_pool2d>", "torch.nn.functional.adaptive_avg_pool2d"),
    ("adam.py:347(_single_tensor_adam)", "_single_tensor_adam (adam.py)"),
    ("~", "~"),
])
def test_profile_entries_are_named_as_a_reader_names_them(entry, name):
    assert train_step.function_name(entry) == name


def test_step_counts_flops_match_the_closed_form_and_views_launch_nothing():
    """One NTP-UFM step: logits W H (V x d times d x m) forward, the two gradient products backward,
    6 V d m FLOPs in all; the launch count leaves the views out, so it is below the ATen operations."""
    from benchmarks.step_counts import UFM, count

    shape = UFM["ufm-synthetic"]
    c = count("ufm-synthetic")
    assert c["flop_per_step"] == 6 * shape["V"] * shape["d"] * shape["m"]
    assert 0 < c["launches_per_step"] < c["aten_ops_per_step"]
    tiny = count("tiny")
    assert tiny["flop_per_step"] > 0 and 0 < tiny["launches_per_step"] < tiny["aten_ops_per_step"]
