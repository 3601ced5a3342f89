"""A kernel that dies before its first reply (two kernels starting at once can race for the same TCP
ports) is an infrastructure failure: run_papermill starts it again instead of reporting a failed point."""

import papermill
import pytest

from ntputils.book import execute


@pytest.fixture
def spec(tmp_path):
    src = tmp_path / "c.py"
    src.write_text('# %% tags=["parameters"]\nprofile = "cpu"\n')
    return {"source": str(src), "input": str(tmp_path / "in.ipynb"), "output": str(tmp_path / "out.ipynb"),
            "parameters": {}, "cwd": str(tmp_path)}


def flaky(failures: list[Exception], calls: list[int]):
    def execute_notebook(*args, **kwargs):
        calls.append(1)
        if failures:
            raise failures.pop(0)
    return execute_notebook


def test_a_kernel_that_dies_at_start_is_started_again(spec, monkeypatch):
    calls: list[int] = []
    died = [RuntimeError("Kernel died before replying to kernel_info")] * 2
    monkeypatch.setattr(papermill, "execute_notebook", flaky(list(died), calls))
    assert execute.run_papermill(spec) == {"status": "ok"} and len(calls) == 3

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", flaky(list(died) * 2, calls))
    out = execute.run_papermill(spec)
    assert out["status"] == "failed" and "Kernel died" in out["evalue"] and len(calls) == 3


def test_a_chapter_error_is_not_retried(spec, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(papermill, "execute_notebook", flaky([ValueError("the chapter's own error")], calls))
    out = execute.run_papermill(spec)
    assert out["status"] == "failed" and out["evalue"] == "the chapter's own error" and len(calls) == 1
