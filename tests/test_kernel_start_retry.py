"""A kernel that dies before its first reply (two kernels starting at once can race for the same TCP
ports) is an infrastructure failure: run_papermill starts papermill again instead of reporting a failed
chapter. A chapter's own error (an error cell) is never retried. The child here stands in for papermill:
a small script that says what papermill says, or writes the notebook papermill would."""

import json
import sys

import pytest

from ntputils.book import execute

FAKE = r'''
import json, pathlib, sys
out, count, plan = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3].split(",")
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
what = plan[min(n, len(plan) - 1)]
if what == "died":
    print("papermill.exceptions.PapermillExecutionError: Kernel died before replying to kernel_info")
    sys.exit(1)
cell = {"cell_type": "code", "execution_count": 1, "metadata": {"papermill": {}}, "outputs": [],
        "source": ""}
if what == "error":
    cell["metadata"]["papermill"]["exception"] = True
    cell["outputs"] = [{"output_type": "error", "ename": "ValueError", "evalue": "the chapter's own error",
                        "traceback": ["ValueError: the chapter's own error"]}]
out.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
sys.exit(1 if what == "error" else 0)
'''


@pytest.fixture
def run(tmp_path, monkeypatch):
    src = tmp_path / "c.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\n')
    script, count = tmp_path / "fake_papermill.py", tmp_path / "count"
    script.write_text(FAKE)

    def go(plan: str):
        count.unlink(missing_ok=True)
        fake = [sys.executable, str(script), str(tmp_path / "out.ipynb"), str(count), plan]
        monkeypatch.setattr(execute, "papermill_command", lambda *args: fake)
        spec = {"source": str(src), "input": str(tmp_path / "in.ipynb"),
                "output": str(tmp_path / "out.ipynb"), "parameters": {}, "cwd": str(tmp_path)}
        out = execute.run_papermill(spec, env={"PATH": "/usr/bin:/bin"}, log=tmp_path / "run.log",
                                    work=tmp_path)
        return out, int(count.read_text())
    return go


def test_a_kernel_that_dies_at_start_is_started_again(run):
    assert run("died,died,ok") == ({"status": "ok"}, 3)
    out, calls = run("died")
    assert out["status"] == "failed" and "Kernel died" in out["evalue"] and calls == 3


def test_a_chapter_error_is_not_retried(run):
    out, calls = run("error")
    assert out["status"] == "failed" and out["evalue"] == "the chapter's own error" and calls == 1


def test_a_source_that_does_not_convert_fails_before_papermill(tmp_path):
    spec = {"source": str(tmp_path / "missing.py"), "input": str(tmp_path / "in.ipynb"),
            "output": str(tmp_path / "out.ipynb"), "parameters": {}, "cwd": str(tmp_path)}
    out = execute.run_papermill(spec, env={}, log=tmp_path / "run.log", work=tmp_path)
    assert out["status"] == "failed" and "missing.py" in out["evalue"]
    assert not (tmp_path / "out.ipynb").exists() and json.dumps(out)
