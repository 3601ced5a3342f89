"""``python -m ntputils.book sweep-status NAME`` on a fake sweep folder: points done, failed, running and
pending, the ETA, the slowest point and the last error, with the driver alive (this process holds the
sweep's lock) and dead (its started points are interrupted); read-only; the ``/proc/locks`` parser;
the dashboard link only where the cluster has a dashboard.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ntputils import cli
from ntputils.committed import duration
from ntputils.sweeps import cluster as sweep_cluster
from ntputils.sweeps.store import LOCK, lock_holder


def iso(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).isoformat(timespec="milliseconds")


def fake_sweep(root: Path) -> Path:
    """6 points: a (ok, 10 s), b (ok, 30 s), c (error, 20 s), d (started 5 s ago), e and f (pending)."""
    (root / "notebooks").mkdir(parents=True)
    d = root / "sweeps" / "fake"
    ids = ["a", "b", "c", "d", "e", "f"]
    (d / "points").mkdir(parents=True)
    (d / "sweep.json").write_text(json.dumps({"chapter": "t01_tiny", "axes": {"x": list(range(6))},
                                              "point_ids": ids, "command": "python -m ntputils.book sweep "
                                              "t01 -p x=0:6 --name fake"}))
    for i, (pid, status, seconds, ago) in enumerate([("a", "ok", 10.0, 300), ("b", "ok", 30.0, 200),
                                                      ("c", "error", 20.0, 100)]):
        p = d / "points" / pid
        p.mkdir()
        (p / "attempts").write_text(json.dumps({"pid": 1, "host": "h", "started": iso(ago + seconds)}) + "\n")
        result = {"id": pid, "status": status, "seconds": seconds, "overrides": {"x": i},
                  "finished": iso(ago)}
        if status == "error":
            result["error"] = "RuntimeError: x = 2 fails on purpose\nsecond line"
        (p / "result.json").write_text(json.dumps(result))
    running = d / "points" / "d"
    running.mkdir()
    (running / "params.json").write_text(json.dumps({"overrides": {"x": 3}}))
    (running / "attempts").write_text(json.dumps({"pid": 1, "host": "h", "started": iso(65)}) + "\n"
                                      + json.dumps({"pid": 2, "host": "h", "started": iso(5)}) + "\n")
    (d / "points" / "e").mkdir()
    (d / "points" / "e" / "params.json").write_text(json.dumps({"overrides": {"x": 4}}))
    return d


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(folder.rglob("*"))}


def status(root: Path, capsys, name: str = "fake") -> tuple[int, str]:
    code = cli.main(["--root", str(root), "sweep-status", name])
    return code, capsys.readouterr().out


@pytest.mark.skipif(not os.access("/proc/locks", os.R_OK), reason="needs /proc/locks (Linux)")
def test_status_of_a_running_sweep_from_another_terminal(tmp_path, capsys):
    d = fake_sweep(tmp_path)
    with (d / LOCK).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # this process plays the driver
        before = snapshot(d)
        code, out = status(tmp_path, capsys)
        assert snapshot(d) == before  # read-only: nothing written, not even a lock file
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # and the driver's lock is still exclusively ours
    assert code == 0, out
    assert f"sweep fake: t01_tiny, 6 point(s); driver running (pid {os.getpid()})" in out
    assert "done 2, failed 1, running 1, pending 2" in out
    # mean 20 s per finished point: d needs 15 s more, e and f 20 s each, one point runs at a time
    assert "ETA ~55 s (mean 20.0 s per finished point, 3 left, 1 in parallel)" in out, out
    assert "slowest: b (x=1) 30.0 s" in out
    error_txt = d / "points" / "c" / "error.txt"
    assert f"last error: c (x=2): RuntimeError: x = 2 fails on purpose (see {error_txt})" in out
    assert "second line" not in out
    assert "running: d (x=3) for 5 s, attempt 2" in out, out


@pytest.mark.skipif(not os.access("/proc/locks", os.R_OK), reason="needs /proc/locks (Linux)")
def test_a_point_running_past_the_mean_makes_the_eta_unknown_not_zero(tmp_path, capsys):
    """A point that has already run longer than the finished points' mean (a06-paper: the STS point, hours,
    beside a 24-minute Synthetic one) left the ETA at "~0 s"; it says the mean does not predict it."""
    d = fake_sweep(tmp_path)
    attempts = d / "points" / "d" / "attempts"
    attempts.write_text(attempts.read_text().splitlines()[0] + "\n")  # its one attempt started 65 s ago
    with (d / LOCK).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, out = status(tmp_path, capsys)
    assert code == 0, out
    assert "ETA ~" not in out, out
    assert ("ETA unknown: 1 running point(s) have run longer than the finished points' mean (20.0 s), so "
            "points differ in cost; the rest needs ~40 s at that mean") in out, out


def test_status_after_the_driver_died_counts_started_points_as_interrupted(tmp_path, capsys):
    d = fake_sweep(tmp_path)
    (d / LOCK).touch()  # a driver ran; nobody holds the lock now
    code, out = status(tmp_path, capsys)
    assert code == 0, out
    assert "no driver running" in out and "done 2, failed 1, running 0, pending 3" in out, out
    assert "1 pending point(s) were interrupted" in out and "t01 -p x=0:6 --name fake`" in out
    assert "ETA" not in out and "running:" not in out
    assert "slowest: b (x=1) 30.0 s" in out


def test_status_of_a_sweep_without_finished_points_has_no_eta(tmp_path, capsys):
    d = fake_sweep(tmp_path)
    for pid in "abc":
        (d / "points" / pid / "result.json").unlink()
    code, out = status(tmp_path, capsys)
    assert code == 0 and "done 0, failed 0, running 0, pending 6" in out and "slowest" not in out, out


@pytest.mark.parametrize(("name", "message"), [("nope", "no sweep named 'nope'"), ("../x", "sweep name")])
def test_status_of_an_unknown_or_bad_name_exits_2(tmp_path, capsys, name, message):
    fake_sweep(tmp_path)
    code, out = status(tmp_path, capsys, name)
    assert code == 2 and out.startswith("error:") and message in out, out


def test_lock_holder_reads_only_exclusive_flocks_of_that_file(tmp_path):
    lock = tmp_path / ".lock"
    lock.touch()
    st = lock.stat()
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    locks = tmp_path / "locks"
    locks.write_text(f"1: POSIX  ADVISORY  WRITE 11 {dev}:{st.st_ino} 0 EOF\n"
                     f"2: FLOCK  ADVISORY  READ  12 {dev}:{st.st_ino} 0 EOF\n"
                     f"3: FLOCK  ADVISORY  WRITE 13 {dev}:{st.st_ino + 1} 0 EOF\n")
    # a POSIX lock, a shared flock (sweep-table --publish), another file's flock
    assert lock_holder(lock, locks) is None
    locks.write_text(locks.read_text() + f"4: FLOCK  ADVISORY  WRITE 14 {dev}:{st.st_ino} 0 EOF\n"
                                         f"4: -> FLOCK  ADVISORY  WRITE 15 {dev}:{st.st_ino} 0 EOF\n")
    assert lock_holder(lock, locks) == 14
    assert lock_holder(lock, tmp_path / "no-such-file") is False
    assert lock_holder(tmp_path / "never-locked", locks) is None


def test_duration_text():
    assert [duration(s) for s in (4.4, 59.6, 65, 3599, 7620)] == ["4 s", "1 min 00 s", "1 min 05 s",
                                                                   "59 min 59 s", "2 h 07 min"]


class FakeClient:
    dashboard_link = "http://head:8787/status"

    def __init__(self, services):
        self.services = services

    def scheduler_info(self):
        return {"services": self.services}


def test_dashboard_link_only_where_the_cluster_serves_a_dashboard(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "bokeh" else real(name))
    assert sweep_cluster.dashboard_link(FakeClient({"dashboard": 8787})) == "http://head:8787/status"
    assert sweep_cluster.dashboard_link(FakeClient({})) is None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bokeh" else real(name))
    assert sweep_cluster.dashboard_link(FakeClient({"dashboard": 8787})) is None  # bokeh serves the pages



def test_the_sweeps_local_cluster_serves_a_dashboard_on_this_machine():
    """bokeh is pinned: the LocalCluster a sweep opens (:func:`sweep_cluster.connect`) has a dashboard on
    this machine, on a free port, and :func:`dashboard_link` gives its address (which ``sweep`` prints)."""
    pytest.importorskip("bokeh")
    with sweep_cluster.connect(workers=0) as client:
        link = sweep_cluster.dashboard_link(client)
    assert link is not None and link.startswith("http://127.0.0.1:") and link.endswith("/status"), link
