"""The memory estimate chapter a05 checks its parameters against (:mod:`ntputils.analysis.ufm_memory`): it
must not be below what the Fig. 6 step really allocates, and it must add the runs up."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

from ntputils.analysis.convergence import GeometryReference, convergence_curves
from ntputils.analysis.ufm_memory import (
    convergence_curves_bytes,
    snapshots_bytes,
    training_bytes,
    ufm_runs_bytes,
)
from ntputils.data.corpora import paper_a_synthetic
from ntputils.geometry import centered_support
from ntputils.training.history import History


@pytest.mark.parametrize("d", [200, 3000])
def test_fig6_series_allocates_no_more_than_the_estimate(d):
    """tracemalloc sees every numpy allocation: convergence_curves' peak over what was held before it."""
    data = paper_a_synthetic()
    ref = GeometryReference.from_data(data, centered_support(data.S))  # any V x m matrix will do as L^mm
    rng = np.random.default_rng(0)
    hist = History()
    n = 12
    for k in range(n):
        hist.log(k, ce_minus_H=1.0 / (k + 1), norm_W=1.0, norm_H=1.0)
        hist.snapshot(k, rng.standard_normal((data.V, d)), rng.standard_normal((d, data.m)))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        convergence_curves(hist, ref)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert 0 < peak <= convergence_curves_bytes(data.V, data.m, d, n)


def test_runs_add_their_snapshots_and_take_the_largest_transient():
    shapes, d, n = [(30, 16), (106, 371)], 128, 43
    total = ufm_runs_bytes(shapes, d, n)
    kept = sum(snapshots_bytes(V, m, d, n) for V, m in shapes)
    transient = max(max(training_bytes(V, m, d), convergence_curves_bytes(V, m, d, n)) for V, m in shapes)
    assert total >= kept + transient
    assert snapshots_bytes(106, 371, 1000, 2) == 8 * 2 * (106 * 1000 + 1000 * 371 + 106 * 371)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="shapes is empty"):
        ufm_runs_bytes([], 10, 5)
    with pytest.raises(ValueError, match="must be >= 1"):
        ufm_runs_bytes([(3, 4)], 0, 5)


def test_a05_refuses_a_d_that_cannot_fit_before_the_solves_and_the_training(tmp_path):
    """The real chapter with d = 10^6 (hundreds of GiB): a ParameterError naming d and n_log, raised in the
    cell that builds the datasets, so no L^mm solve and no training cell has run."""
    import json
    from pathlib import Path

    import jupytext
    import papermill

    from ntputils.book.execute import KERNEL_NAME

    root = Path(__file__).resolve().parents[1]
    src = tmp_path / "a05.ipynb"
    jupytext.write(jupytext.read(root / "notebooks" / "a05_ufm_training.py"), src)
    out = tmp_path / "out.ipynb"
    with pytest.raises(papermill.PapermillExecutionError, match="lower d or n_log"):
        papermill.execute_notebook(src, out, parameters={"d": 10**6}, kernel_name=KERNEL_NAME,
                                   language="python", cwd=str(root), progress_bar=False)
    cells = json.loads(out.read_text())["cells"]
    ran = [c for c in cells if c["cell_type"] == "code" and c.get("execution_count")]
    assert "ufm_runs_bytes" in "".join(ran[-1]["source"])  # the failing cell is the memory check
    calls = re.compile(r"ufm\.train\(|max_margin_\w+\(")
    assert not any(calls.search("".join(c["source"])) for c in ran)
