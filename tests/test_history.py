"""Tests of ntputils.training.history: the training-history format and log-spaced steps."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.training.history import History, log_spaced_steps


def _history() -> History:
    rng = np.random.default_rng(0)
    h = History(meta={"loss": "ce", "d": 3, "lr": 0.5, "seed": 7})
    for step in (0, 1, 10):
        h.log(step, loss=1.0 / (step + 1), norm_W=float(step))
    for step in (0, 10):
        h.snapshot(step, rng.standard_normal((4, 3)), rng.standard_normal((3, 5)))
    return h


def test_log_and_curve():
    h = _history()
    assert h.steps == [0, 1, 10]
    steps, values = h.curve("loss")
    np.testing.assert_array_equal(steps, [0, 1, 10])
    np.testing.assert_allclose(values, [1.0, 0.5, 1 / 11])
    assert h.final == {"loss": pytest.approx(1 / 11), "norm_W": 10.0}
    with pytest.raises(KeyError, match="no scalar"):
        h.curve("ce")
    with pytest.raises(ValueError, match="differ"):
        h.log(11, loss=0.1)  # missing norm_W


def test_snapshot_stores_copies_and_logits():
    h = History()
    W, H = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    h.snapshot(5, W, H)
    W[0, 0] = 100.0  # mutating the caller's array does not change the snapshot
    assert h.W[0][0, 0] == 1.0
    np.testing.assert_array_equal(h.L[0], np.ones((2, 3)) @ H)
    assert h.L[0].dtype == np.float64 and h.snap_steps == [5]
    with pytest.raises(ValueError, match="shape mismatch"):
        h.snapshot(6, np.ones((2, 3)), np.ones((2, 4)))


@pytest.mark.parametrize("name", ["hist.npz", "hist"])  # a path without suffix must round-trip too
def test_save_load_roundtrip(tmp_path, name):
    h = _history()
    path = tmp_path / name
    h.save(path)
    assert path.exists()
    g = History.load(path)
    assert g.steps == h.steps and g.snap_steps == h.snap_steps
    assert g.scalars == h.scalars
    assert g.meta == h.meta
    for a, b in ((g.W, h.W), (g.H, h.H), (g.L, h.L)):
        assert len(a) == len(b) == 2
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_save_load_empty_history(tmp_path):
    h = History(meta={"note": "nothing logged"})
    h.save(tmp_path / "empty.npz")
    g = History.load(tmp_path / "empty.npz")
    assert g.steps == [] and g.W == [] and g.scalars == {} and g.meta == h.meta


def test_log_spaced_steps_properties():
    for steps, num in [(1000, 10), (30000, 60), (7, 40), (1, 5)]:
        s = log_spaced_steps(steps, num)
        assert s[0] == 0 and s[-1] == steps
        assert s == sorted(set(s))  # strictly increasing, no duplicates
        assert all(isinstance(x, int) for x in s)
        assert len(s) <= num + 1
    assert log_spaced_steps(7, 40) == list(range(8))  # small runs: every step
    s = log_spaced_steps(10_000, 20)
    ratios = np.diff(np.log([x for x in s if x >= 20]))  # above the rounding range
    np.testing.assert_allclose(ratios, np.log(10_000) / 19, rtol=0.05)  # uniform in log(step)
    assert log_spaced_steps(1000, 10) == [0, 1, 2, 5, 10, 22, 46, 100, 215, 464, 1000]
    assert log_spaced_steps(0) == [0]
    assert 0 not in log_spaced_steps(100, 5, include_zero=False)
    with pytest.raises(ValueError, match="steps"):
        log_spaced_steps(-1)
    with pytest.raises(ValueError, match="num"):
        log_spaced_steps(10, 0)


def test_at_initialization_is_the_step_0_snapshot():
    hist = History()
    hist.snapshot(0, np.ones((3, 2)), np.zeros((2, 4)))
    hist.snapshot(5, 2 * np.ones((3, 2)), np.ones((2, 4)))
    W0, H0 = hist.at_initialization()
    assert (W0 == 1).all() and (H0 == 0).all()
    late = History()
    late.snapshot(5, np.ones((3, 2)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="step 0"):
        late.at_initialization()
