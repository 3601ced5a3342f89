"""The benchmark scripts' worker protocol (benchmarks/common.py): ``run_worker`` starts
``python -m MODULE worker ARGS`` and ``dispatch_worker`` at the other end hands ARGS to the worker."""

from __future__ import annotations

from benchmarks.common import dispatch_worker, run_worker


def test_dispatch_hands_worker_arguments_over_and_returns_the_rest():
    seen = []
    assert dispatch_worker(["worker", "--V", "3"], seen.append) is None
    assert seen == [["--V", "3"]]
    assert dispatch_worker(["--group", "small"], seen.append) == ["--group", "small"]
    assert seen == [["--V", "3"]]  # not called for a plain command line


def test_a_real_worker_round_trip():
    """benchmarks.lmm's certified solver on a 20 x 40 uniform support, in its own process."""
    out = run_worker("benchmarks.lmm", ["--method", "fast", "--kind", "uniform", "--V", "20", "--m", "40"],
                     timeout=300)
    assert out.get("status", "ok") == "ok" and out["method"] == "fast" and out["V"] == 20
    assert out["converged"] and out["rel_gap"] <= 1e-6
