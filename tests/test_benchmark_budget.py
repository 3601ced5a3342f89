"""The issue-17 budget benchmark (benchmarks/lmm_budget.py): the columns of the Performance page
come from these functions, so their logic is tested on a small real-text problem."""

from __future__ import annotations

import pytest

from benchmarks import lmm_budget


def test_first_reaching_finds_the_first_recorded_iteration():
    hist = [{"iter": 10, "nuclear_norm": 10.1, "rel_gap": 1e-2},
            {"iter": 20, "nuclear_norm": 10.0001, "rel_gap": 1e-4},
            {"iter": 30, "nuclear_norm": 10.000001, "rel_gap": 5e-7}]
    assert lmm_budget.first_reaching(hist, 10.0, "primal") == 30  # (10.000001 - 10) / 10 = 1e-7
    assert lmm_budget.first_reaching(hist, 9.99999, "primal") is None
    assert lmm_budget.first_reaching(hist, 10.0, "gap") == 30
    assert lmm_budget.first_reaching(hist[:2], 10.0, "gap") is None


def test_components_time_every_step_and_sum_them_into_the_floor():
    out = lmm_budget.components("tinystories", 60, 300)
    assert out["unique_columns"] <= 300 and set(out["steps"]) == {"float64", "float32"}
    for s in out["steps"].values():
        parts = [s[k] for k in ("projection", "gram", "eigh", "apply", "anderson5", "certificate/10")]
        assert all(p is not None and p >= 0 for p in parts)
        assert s["floor"] == pytest.approx(sum(parts))
        assert 0 < s["svt_rank"] <= 60
    payload = {"components": [{**out, "status": "ok", "target_s": 60.0, "target_gb": None}]}
    table = lmm_budget.format_components(payload)
    assert table.count("\n") == 3 and "tinystories" in table  # header, rule, two dtypes


def test_a_solve_records_the_iteration_where_the_certificate_reaches_the_gap():
    row = lmm_budget.solve("tinystories", 60, 300, {"anderson": 5})
    assert row["converged"] and row["rel_gap"] <= lmm_budget.GAP
    g = lmm_budget.first_reaching(row["history"], row["lower_bound"], "gap")
    assert g is not None and g <= row["iterations"] and row["history"][-1]["iter"] == row["iterations"]
