"""The fingerprint of what ran (:mod:`ntputils.tracing`, :func:`ntputils.book.fingerprint.trace_digest`)
and re-certification of committed tables (``python -m ntputils.book recertify``).

The unit tests edit a package held in memory; the end-to-end test copies ``ntputils`` into a scratch
folder, adds a module that a tiny chapter calls, publishes a 2-point sweep of it and then edits that
module three ways: a docstring (the table stays current, nothing re-runs), a rename inside the called
function (re-run, identical values, re-certified) and a changed constant (re-run, values moved,
refused, the committed files byte for byte as they were)."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ntputils.book.currency import sample_points
from ntputils.book.fingerprint import chapter_code_digest, merge_traces, trace_digest
from ntputils.sweeps.recertify import differences

from chapters import FIXTURES, add_chapter

MOD = b'''"""A module."""

SCALE = 2


def called(x):
    """Doubles."""
    y = SCALE * x  # the product
    return y


def uncalled(x):
    return x - 1


class Box:
    size = 3

    def get(self):
        return self.size
'''
TRACE = {"functions": ["m.py:called", "m.py:Box", "m.py:Box.get"], "modules": ["m.py"]}


def digest(source: bytes, trace=TRACE) -> str:
    return trace_digest(trace, {"m.py": source})


@pytest.mark.parametrize("edit", [
    (b'"""Doubles."""', b'"""Doubles its argument; Used in: a05."""'),  # a docstring
    (b"# the product", b"# twice x"),  # a comment
    (b"def uncalled(x):\n    return x - 1", b"def uncalled(x):\n    return x - 2"),  # an uncalled function
    (b"def uncalled(x)", b"def renamed_uncalled(x)"),  # a rename of what never ran
    (b"class Box:", b"def new_function():\n    return 1\n\n\nclass Box:"),  # a new function
    (b"    y = SCALE * x  # the product\n    return y", b"    y = (\n        SCALE * x\n    )\n    return y"),
])
def test_edits_that_cannot_move_a_value_keep_the_fingerprint(edit):
    old, new = edit
    assert old in MOD
    assert digest(MOD.replace(old, new)) == digest(MOD)


@pytest.mark.parametrize("edit", [
    (b"y = SCALE * x", b"y = SCALE * x + 0"),  # a changed line of a called function
    (b"SCALE = 2", b"SCALE = 3"),  # a module constant
    (b"size = 3", b"size = 4"),  # a class attribute of a class that ran
    (b"return self.size", b"return -self.size"),  # a called method
    (b"def called(x)", b"def called_renamed(x)"),  # a called function that is gone
])
def test_edits_of_what_ran_change_the_fingerprint(edit):
    old, new = edit
    assert old in MOD
    assert digest(MOD.replace(old, new)) != digest(MOD)


def test_runner_entries_do_not_count_and_traces_merge():
    files = {"m.py": MOD, "book/show.py": b"def show():\n    return 1\n",
             "committed.py": b"X = 1\n\n\ndef shown():\n    return 1\n"}
    trace = merge_traces([TRACE, {"functions": ["book/show.py:show"], "modules": ["book/show.py"]},
                          {"functions": ["committed.py:shown"], "modules": ["committed.py"]}])
    assert trace["functions"] == sorted([*TRACE["functions"], "book/show.py:show", "committed.py:shown"])
    before = trace_digest(trace, files)
    files["book/show.py"] = b"def show():\n    return 2\n"
    files["committed.py"] = b"X = 2\n\n\ndef shown():\n    return 2\n"  # the reader of committed tables
    assert trace_digest(trace, files) == before


def test_run_key_reads_traced_sources_from_a_folder_or_a_mapping(tmp_path):
    from ntputils.book.fingerprint import run_key

    (tmp_path / "m.py").write_bytes(MOD)
    trace = {"functions": ["m.py:called"], "modules": ["m.py"]}
    assert run_key("k", trace, tmp_path) == run_key("k", trace, {"m.py": MOD})
    edited = {"m.py": MOD.replace(b"SCALE = 2", b"SCALE = 3")}
    assert run_key("k", trace, edited) != run_key("k", trace, tmp_path)
    assert run_key("k", None).startswith("untraced:")


def test_chapter_code_digest_ignores_comments_and_docstrings_not_code():
    base = chapter_code_digest(["x = 1\n", "def f():\n    return x\n"])
    assert chapter_code_digest(["x = 1  # one\n", "def f():\n    '''doc'''\n    return x\n"]) == base
    assert chapter_code_digest(["x = 2\n", "def f():\n    return x\n"]) != base
    assert chapter_code_digest(["%matplotlib inline\nx = 1\n"]) != base  # a magic cell still counts


def test_code_digests_see_code_not_docstrings_and_list_every_definition():
    from ntputils.tracing import code_digests, file_entries

    src = b'class C:\n    def m(self):\n        return 1\n\n\ndef f(x):\n    """doc"""\n    return x + 1\n'
    assert file_entries("t.py", {"t.py": src}) == ["t.py:C", "t.py:C.m", "t.py:f"]
    base = code_digests(["t.py:f", "t.py:C.m"], {"t.py": src})
    redoc = src.replace(b'"""doc"""', b'"""other words"""  # and a comment')
    assert code_digests(["t.py:f", "t.py:C.m"], {"t.py": redoc}) == base
    edited = code_digests(["t.py:f", "t.py:C.m"], {"t.py": src.replace(b"x + 1", b"x + 2")})
    assert edited["t.py:f"] != base["t.py:f"] and edited["t.py:C.m"] == base["t.py:C.m"]
    assert file_entries("gone.py", {}) == []


def test_tracer_notes_called_functions_and_imported_modules(tmp_path):
    import ntputils.tracing as tracing
    from ntputils import hashing

    tracing.start()  # no trace asked for: no hook
    assert sys.gettrace() is None
    os.environ[tracing.TRACE_ENV] = str(tmp_path / "trace.json")
    try:
        tracing.start()
        hashing.digest("a", 1)
        (lambda: [i for i in range(3)])()
        trace = tracing.finish()
    finally:
        os.environ.pop(tracing.TRACE_ENV)
    assert json.loads((tmp_path / "trace.json").read_text()) == trace
    assert "hashing.py" in trace["modules"] and "tracing.py" not in trace["modules"]
    assert "hashing.py:digest" in trace["functions"]
    assert not any(f.startswith("tracing.py:") for f in trace["functions"])
    assert sys.gettrace() is None


def test_sample_is_the_cheapest_point_per_axis_value_plus_a_seeded_draw():
    rows = [{"point_id": f"p{d}{s}", "d": d, "seed": s, "profile": "cpu", "seconds": 10.0 * d + s}
            for d in (2, 4, 8) for s in (0, 1, 2)]
    table = pd.DataFrame(rows)
    picked = sample_points(table, extra=0, name="t")
    assert set(picked) == {"p20", "p40", "p80", "p21", "p22"}  # every d at seed 0; seeds 1, 2 at d=2
    one = sample_points(table, extra=1, name="t")
    assert set(picked) < set(one) and len(one) == len(picked) + 1
    assert sample_points(table, extra=1, name="t") == one  # seeded: the same draw every time
    assert sample_points(table.iloc[:1], extra=3, name="t") == ["p20"]  # a one-point table: whole


def rows_of(values: dict[str, float], outcome: str = "") -> pd.DataFrame:
    return pd.DataFrame([{"kind": "record", "metric": k, "value": v, "value_text": "", "outcome": outcome}
                         for k, v in values.items()])


def test_differences_accept_bit_identity_stated_tolerances_and_float_noise_only():
    a = rows_of({"x": 0.5, "t": 12.0, "n": math.nan})
    assert differences(a, rows_of({"x": 0.5, "t": 12.0, "n": math.nan}), {}) == ([], 0.0, 0, [])
    moved, _, _, _ = differences(a, rows_of({"x": 0.5, "t": 30.0, "n": math.nan}), {})
    assert moved and "t" in moved[0]
    assert differences(a, rows_of({"x": 0.5, "t": 30.0, "n": math.nan}), {"t": math.inf})[0] == []
    moved, largest, inexact, _ = differences(a, rows_of({"x": 0.5 + 1e-9, "t": 12.0, "n": math.nan}), {})
    assert moved == [] and inexact == 1 and 0 < largest < 1e-8
    assert differences(a, rows_of({"x": 0.51, "t": 12.0, "n": math.nan}), {})[0]
    assert differences(a, rows_of({"x": 0.5, "t": 12.0}), {})[0] == ["record n: missing in the re-run"]
    text = pd.DataFrame([{"kind": "check", "metric": "r", "value": math.nan, "outcome": "pass",
                          "value_text": '{"12": 1.69e-16, "30": 2.03e-15}'}])
    near = text.assign(value_text='{"12": 1.69e-16, "30": 2.2e-15}')
    far = text.assign(value_text='{"12": 1.69e-16, "30": 0.1}')
    assert differences(text, near, {})[0] == [] and differences(text, far, {})[0]
    flipped = differences(rows_of({"x": 0.5}, "reproduced"), rows_of({"x": 0.5}, "deviates"), {})[0]
    assert flipped == ["record x: outcome 'reproduced' -> 'deviates'"]


FIXTURE = (FIXTURES / "fixture_scale.py").read_text()  # the library module scaled_value calls


@pytest.fixture()
def copied_package(tmp_path):
    """A scratch copy of ntputils (runner and kernel import it) with a module the chapter calls, and a
    project with a 2-point sweep of that chapter published."""
    src = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[1] / "ntputils", src / "ntputils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (src / "ntputils" / "fixture_scale.py").write_text(FIXTURE)
    root = tmp_path / "proj"
    add_chapter(root, "t01_scale", "scaled_value", paper=True)
    env = os.environ.copy()
    env.pop("MPLBACKEND", None)
    env["PYTHONPATH"] = str(src)

    def book(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ntputils.book", "--root", str(root), *args], cwd=src,
                              env=env, capture_output=True, text=True, timeout=300)

    run = book("sweep", "t01", "-p", "seed=0,1", "--name", "t01-s", "--workers", "2", "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    pub = book("sweep-table", "t01-s", "--publish")
    assert pub.returncode == 0, pub.stdout + pub.stderr
    return src / "ntputils" / "fixture_scale.py", root / "results" / "sweeps" / "t01-s", book


def test_recertify_keeps_current_certifies_a_neutral_edit_and_refuses_a_moved_value(copied_package):
    module, committed, book = copied_package
    prov = json.loads((committed / "provenance.json").read_text())
    assert "fixture_scale.py:scaled" in prov["fingerprint"]["trace"]["functions"]

    module.write_text(FIXTURE.replace("def scaled(x):", 'def scaled(x):\n    """Twice x."""'))
    out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 0 and "current" in out.stdout and "re-running" not in out.stdout, out.stdout

    module.write_text(FIXTURE.replace("factor", "k"))  # a rename inside the called function
    before = {p.name: p.read_bytes() for p in committed.iterdir()}
    with (committed.parents[2] / "sweeps" / "t01-s" / ".lock").open() as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # as a `sweep-table t01-s --publish` holds it
        out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 1 and "a sweep driver or a publish of t01-s is running" in out.stdout, out.stdout
    assert {p.name: p.read_bytes() for p in committed.iterdir()} == before
    out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 0 and "re-certified" in out.stdout, out.stdout + out.stderr
    after = json.loads((committed / "provenance.json").read_text())
    (entry,) = after["history"]
    assert entry["event"] == "recertified" and entry["points"] == entry["of"] == 2
    assert after["fingerprint"]["digest"] != prov["fingerprint"]["digest"]
    assert book("recertify", "--all", "--no-progress").stdout.count("current") == 1

    before = {p.name: p.read_bytes() for p in committed.iterdir()}
    module.write_text(FIXTURE.replace("SCALE = 2", "SCALE = 3"))
    out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 1 and "NOT re-certified" in out.stdout, out.stdout + out.stderr
    assert "record value: 2.0 -> 3.0" in out.stdout and "outcome 'deviates' -> 'reproduced'" in out.stdout
    assert {p.name: p.read_bytes() for p in committed.iterdir()} == before
    assert "this machine is" not in out.stdout  # made here: nothing to say about the hardware
    elsewhere = "Linux x86_64, 2 CPUs (Other CPU)"
    (committed / "provenance.json").write_text(json.dumps(after | {"machine": elsewhere}))
    out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 1 and f"the table was made on {elsewhere}; this machine is" in out.stdout

    assert book("recertify", "nope").returncode == 2
    assert book("recertify").returncode == 2


def test_a_committed_table_is_read_back_verbatim(tmp_path):
    from ntputils.sweeps.recertify import read_committed_table

    path = tmp_path / "table.csv"
    path.write_text("point_id,d,profile,kind,metric,value,value_text,outcome,seconds\n"
                    "p,2,cpu,compare,c,,null,not run,1.5\np,2,cpu,record,x,0.1234567890123456789,,,1.5\n"
                    "p,2,cpu,record,y,inf,,,\n")
    table = read_committed_table(path)
    assert list(table["value_text"]) == ["null", "", ""] and list(table["outcome"]) == ["not run", "", ""]
    assert table["value"][1] == float("0.1234567890123456789") and table["value"][2] == math.inf
    assert math.isnan(table["value"][0]) and math.isnan(table["seconds"][2]) and table["d"][0] == 2


def test_provenance_names_the_cpu_model(tmp_path):
    """A table's ``machine`` names the CPU model: training floats can move between CPU models, and a failed
    re-certification must be traceable to that."""
    from ntputils.book.environment import cpu_model, machine

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t: fpu\n")
    assert cpu_model(info) == "AMD EPYC 9R14"
    assert cpu_model(tmp_path / "missing") != ""
    assert f"({cpu_model()}" in machine()


def test_provenance_names_the_vector_kernels_two_cpus_of_one_model_name_may_differ_in(tmp_path):
    """A VM's "AMD EPYC" may run AVX-512 or only AVX2 kernels, and trained values differ between the two:
    the machine line says which."""
    from ntputils.book.environment import vector_isa

    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: AMD EPYC\nflags\t: fpu avx2 fma avx512f avx512bw avx512vl avx512dq\n")
    assert vector_isa(info) == "AVX-512"
    info.write_text("model name\t: AMD EPYC\nflags\t: fpu avx2 fma avx512f\n")  # no AVX512 kernels of torch
    assert vector_isa(info) == "AVX2"
    info.write_text("model name\t: old\nflags\t: fpu sse2\n")
    assert vector_isa(info) == "" and vector_isa(tmp_path / "missing") == ""


@pytest.mark.slow
def test_recertify_that_reuses_an_earlier_scratch_result_says_so(copied_package):
    """The first re-certification ran the points but could not move the provenance (a publish held the
    lock); the second adopts their current results: it says it reused them, not that it re-ran them, and
    records no run time of its own."""
    module, committed, book = copied_package
    module.write_text(FIXTURE.replace("factor", "k"))
    with (committed.parents[2] / "sweeps" / "t01-s" / ".lock").open() as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        first = book("recertify", "t01-s", "--no-progress")
    assert first.returncode == 1 and "re-running 2 of 2 point(s) under" in first.stdout, first.stdout
    out = book("recertify", "t01-s", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    assert ("re-running 0 of 2 point(s) and reusing 2 current result(s) of an earlier re-certification "
            "(sweeps/recertify-t01-s/)") in out.stdout, out.stdout
    assert "(0.0 s of point time in this run;" in out.stdout, out.stdout
    (entry,) = json.loads((committed / "provenance.json").read_text())["history"]
    assert (entry["rerun"], entry["reused"], entry["seconds"]) == (0, 2, 0.0), entry
