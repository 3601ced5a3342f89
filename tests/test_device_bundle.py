"""Issue 46: the GPU machine's bundle, its one command, the in-process executor and ``adopt``.

The fast tests use a fixture chapter in a throw-away git project and run the device runner in this
process's Python (IPython is installed here). The rehearsal (slow) runs a07 at a smoke size through the
printed command in a virtual environment that holds only what the GPU machine's image holds (see
:func:`image_venv`), plus the bundle's wheels installed with ``pip --no-index``; ``adopt`` then publishes
what it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest

from ntputils import cli
from ntputils.book import fingerprint
from ntputils.book.currency import checked
from ntputils.book.fingerprint import FINGERPRINT_VERSION, trace_digest
from ntputils.book.paper_cost import GPU, PAPER_COSTS, estimate_lines, point_costs, step_counts, wall_estimate
from ntputils.book.project import Project
from ntputils.committed import provenance_text, read_committed
from ntputils.gpu.adopt import AdoptRefused, adopt, fingerprint_here
from ntputils.gpu.bundle import (
    COMMAND_LIMIT,
    IMAGE_PACKAGES,
    TREE_LIMIT,
    BundleError,
    device_command,
    make_bundle,
)
from ntputils.gpu.device_run import code_cells, drive, injected_cell
from ntputils.gpu.speed import tf32_while_training
from ntputils.paths import data_digest
from ntputils.sweeps.point_record import source_digests

from chapters import add_chapter

REPO = Path(__file__).resolve().parents[1]


def git_project(root: Path) -> Project:
    """A throw-away project with the fixture chapter ``t01_values`` (records values) in a git repo."""
    add_chapter(root, "t01_values", "records_values", paper=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return Project(root)


def test_a07_paper_wall_estimate_fits_the_budget_only_compiled():
    cost = PAPER_COSTS["a07"]
    fp32, tf32 = wall_estimate(cost, "fp32"), wall_estimate(cost, "tf32")
    graphs = wall_estimate(cost, "tf32", compiled=True)
    # measured on the H200: the eager TF32 step is launch-bound (> 17.6 ms), so only CUDA graphs fit
    assert graphs["wall_s"][1] <= 540 < min(tf32["wall_s"][0], fp32["wall_s"][0])
    assert tf32["launch_ms"][0] >= 17.6 > max(tf32["compute_ms"])
    assert graphs["cpu_h"][0] > 60  # the CPU run the paper profile must not start by accident


def test_the_estimates_launch_counts_are_the_recorded_counts():
    """a07's FLOPs and launches are those ``python -m benchmarks.step_counts`` recorded (so the seconds a
    launch, measured on the H200 against that count, carry over to a06's counts made the same way)."""
    counts = step_counts()
    a07 = counts["a07-tf-paper"]
    assert PAPER_COSTS["a07"].launches_per_step == a07["launches_per_step"]
    assert abs(PAPER_COSTS["a07"].flop_per_step / a07["flop_per_step"] - 1) < 0.01
    assert GPU["launch_s"][0] * a07["launches_per_step"] == pytest.approx(739.0 / 42_000)


def test_a06_point_sums_its_three_trainings_and_prints_no_compiled_row():
    points = point_costs("a06")
    assert list(points) == ["dataset=Synthetic", "dataset=STS"]
    parts = points["dataset=STS"]
    assert [p.source for p in parts] == ["a06-tf-sts-paper", "a06-lstm-sts", "ufm-sts"]
    assert all(p.steps == 30_000 for p in parts)
    whole = wall_estimate(parts)
    alone = [wall_estimate(p) for p in parts]
    extra = GPU["eval_and_setup_s"]
    for i in (0, 1):  # the trainings run one after another: their walls add, set-up once
        assert abs(whole["wall_s"][i] - (sum(a["wall_s"][i] for a in alone) - 2 * extra[i])) <= 2
    with pytest.raises(ValueError, match="no compiled launch count"):
        wall_estimate(parts, compiled=True)
    lines = estimate_lines("a06")
    assert not any("CUDA graphs" in line for line in lines)
    assert sum("a step of each of its 3 trainings, summed" in line for line in lines) == 4
    assert step_counts(Path("/nonexistent/step_counts.json")) == {}


def test_device_command_is_bounded_and_short():
    cmd = device_command(".device/a07-paper.json")
    assert len(cmd) <= COMMAND_LIMIT
    assert "timeout -k 5 570" in cmd and "--no-index --no-deps" in cmd
    assert "--target /tmp/ntpbook-device/site" in cmd
    assert '"$OUT/device-log.txt.xz"' in cmd


def test_injected_cell_follows_the_parameters_cell_as_papermill_puts_it():
    nb = {"cells": [{"cell_type": "markdown", "source": "# t"},
                    {"cell_type": "code", "source": ["x = 1\n", "y = 2"],
                     "metadata": {"tags": ["parameters"]}},
                    {"cell_type": "code", "source": "print(x)", "metadata": {}}]}
    cells = code_cells(nb, {"x": 3, "s": "a'b"})
    assert cells == ["x = 1\ny = 2", injected_cell({"x": 3, "s": "a'b"}), "print(x)"]
    assert cells[1].startswith("# Parameters\n") and "x = 3\n" in cells[1] and "s = \"a'b\"" in cells[1]


def test_bundle_runs_resumes_and_is_adopted_with_its_environment(tmp_path, monkeypatch, capsys):
    project = git_project(tmp_path / "p")
    bundle = make_bundle(project, "t01", ["x=2,3"], profile="paper", name="t01-dev", with_wheels=False,
                         state_dir=str(tmp_path / "state"))
    assert bundle.tree_bytes < TREE_LIMIT and (project.root / ".device" / "t01-dev.ipynb").exists()
    plan = json.loads(bundle.plan_file.read_text())
    assert [t["id"] for t in plan["tasks"]] == [p.id for p in bundle.plan.points]
    monkeypatch.chdir(project.root)
    out = tmp_path / "out"
    assert drive(bundle.plan_file, out, deadline=time.time() + 300) == 0
    assert sorted(p.name for p in out.iterdir()) == ["t01-dev-summary.txt", "t01-dev.tar.xz"]
    # a second command on the same machine skips the finished points
    assert drive(bundle.plan_file, tmp_path / "out2", deadline=time.time() + 300) == 0
    assert (tmp_path / "out2" / "t01-dev-summary.txt").read_text().count("ok earlier") == 2
    with tarfile.open(out / "t01-dev.tar.xz") as tar:
        names = tar.getnames()
    assert not any(n.endswith(("task.json", "outcome.json")) for n in names)

    [published] = adopt(project, out)
    table, prov = read_committed("t01-dev", project.root)
    recorded = set(table.loc[table.kind == "record", "metric"])
    assert recorded == {"started", "square", "top_singular_value", "label"}
    assert (table["status"] == "ok").all() and table["point_id"].nunique() == 2
    env = prov["environment"]
    assert env["device"] == "cpu" and env["threads"] == 1 and env["versions"]["python"].startswith("3.")
    assert env["executor"].startswith("in-process IPython")
    assert {p["resolved"]["x"] for p in prov["points_run"].values()} == {2, 3}
    assert all(p["threads"] == 1 and p["seconds"] > 0 for p in prov["points_run"].values())
    assert prov["fingerprint"]["digest"] and prov["fingerprint"]["version"] == FINGERPRINT_VERSION

    # made on the GPU machine's Python and torch: current here while its code is unchanged, environment shown
    prov["versions"] |= {"python": "3.12.3", "torch": "2.11.0+cu130"}
    prov["environment"] |= {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3", "precision": "tf32"}
    (published / "provenance.json").write_text(json.dumps(prov))
    args = (prov["fingerprint"]["chapter_code"], prov["fingerprint"]["trace"], ["pin==1"])
    here = fingerprint.code_fingerprint(*args), fingerprint.code_fingerprint(*args, version=2)
    monkeypatch.setattr(fingerprint, "sys", SimpleNamespace(version_info=SimpleNamespace(major=3, minor=99)))
    assert fingerprint.code_fingerprint(*args) == here[0]  # the format 2 held Python's minor version
    assert fingerprint.code_fingerprint(*args, version=2) != here[1]
    pub = checked(project, "t01-dev")
    assert pub["stale"] is False
    assert ", made on NVIDIA H100 80GB HBM3 (cuda, tf32), torch 2.11.0+cu130, Python 3.12.3, finished" in (
        provenance_text("t01-dev", pub))


def test_adopt_refuses_a_sweep_made_by_other_code_and_leaves_results_alone(tmp_path, monkeypatch):
    project = git_project(tmp_path / "p")
    bundle = make_bundle(project, "t01", ["x=2"], profile="paper", name="t01-dev", with_wheels=False,
                         state_dir=str(tmp_path / "state"))
    monkeypatch.chdir(project.root)
    assert drive(bundle.plan_file, tmp_path / "out", deadline=time.time() + 300) == 0
    source = project.root / "notebooks" / "t01_values.py"
    source.write_text(source.read_text().replace("record(\"started\", 1)", "record(\"started\", 2)"))
    with pytest.raises(AdoptRefused, match="other code than the current"):
        adopt(project, tmp_path / "out")
    assert not (project.root / "results").exists()
    with pytest.raises(AdoptRefused, match="no <name>.tar.xz"):
        adopt(project, tmp_path)


def test_adopt_recomputes_the_trace_digest_only_for_the_very_files_the_point_ran():
    trace = {"functions": ["hashing.py:digest"], "modules": ["hashing.py"]}
    fp = {"trace": trace, "trace_digest": "made under Python 3.12", "sources": source_digests(trace),
          "data_digest": data_digest()}
    out = fingerprint_here("s", "p", fp)
    assert out["trace_digest"] == trace_digest(trace)
    assert out["trace_digest_there"] == "made under Python 3.12"
    with pytest.raises(AdoptRefused, match=r"differ from the current ones \(hashing.py\)"):
        fingerprint_here("s", "p", fp | {"sources": {"hashing.py": "0" * 64}})
    with pytest.raises(AdoptRefused, match="other data"):
        fingerprint_here("s", "p", fp | {"data_digest": "0" * 64})
    with pytest.raises(AdoptRefused, match="no code fingerprint"):
        fingerprint_here("s", "p", {"trace": trace, "trace_digest": "x"})


def test_deadline_leaves_a_point_unfinished_and_says_how_to_resume(tmp_path, monkeypatch):
    project = git_project(tmp_path / "p")
    bundle = make_bundle(project, "t01", ["sleep=30"], profile="paper", name="t01-slow", with_wheels=False,
                         state_dir=str(tmp_path / "state"))
    monkeypatch.chdir(project.root)
    monkeypatch.setattr("ntputils.gpu.device_run.MIN_START_S", 1.0)
    monkeypatch.setattr("ntputils.gpu.device_run.COLLECT_S", 0.0)
    t0 = time.time()
    assert drive(bundle.plan_file, tmp_path / "out", deadline=time.time() + 8) == 3
    assert time.time() - t0 < 25
    assert "the same command resumes" in (tmp_path / "out" / "t01-slow-summary.txt").read_text()


def test_a_bundle_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    project = git_project(tmp_path / "p")
    monkeypatch.setattr("ntputils.gpu.bundle.TREE_LIMIT", 10)
    with pytest.raises(BundleError, match="over the 0 MiB"):
        make_bundle(project, "t01", ["x=2"], profile="paper", name="t01-dev", with_wheels=False)


@pytest.mark.parametrize("args", [["build", "--only", "a07", "--profile", "paper", "--no-html"],
                                  ["sweep", "a07", "--profile", "paper", "-p", "seed=0"]])
def test_a_network_paper_profile_without_cuda_is_refused_naming_its_cpu_time(args, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert cli.main(["--root", str(REPO), *args]) == 2
    out = capsys.readouterr().out
    assert "--allow-cpu" in out and "61.8-87.5 h" in out


# ---------------------------------------------------------------------------------------------
# the rehearsal: the printed command in an environment holding only the image's packages
# ---------------------------------------------------------------------------------------------
def image_venv(target: Path) -> Path:
    """A virtual environment (no system site-packages) whose site holds links to this .venv's copies of
    :data:`IMAGE_PACKAGES` (the GPU image's packages; missing here ones are skipped) and nothing else; its
    ``bin`` folder (with ``python3``) is returned.

    What differs from the image: Python 3.11 (no CPU torch for 3.12 is reachable here), torch 2.13+cpu
    (the image: 2.11+cu130), numpy and the other versions are this project's pins, not the image's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    site = target / "image-site"
    site.mkdir()
    for name in IMAGE_PACKAGES:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        base = Path(dist.locate_file(""))
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            if top != "__pycache__" and not (site / top).exists() and (base / top).exists():
                (site / top).symlink_to(base / top)
    [purelib] = target.glob("lib/python3*/site-packages")
    (purelib / "image.pth").write_text(str(site) + "\n")
    return target / "bin"


#: the rehearsal's chapters at a smoke size: a07 (the GPU run the machine is lent for first) and a06 (its
#: paper points go to the same machine), each with a value its chapter records
REHEARSALS = {
    "a07": (["steps=3", "n_layers=1", "d=32", "n_heads=2", "device='cpu'", "chance_draws=2", "log_steps=2"],
            "a07_ce_minus_H", "steps"),
    "a06": (["dataset='STS'", "tf_steps_sts=3", "lstm_steps_sts=3", "ufm_steps=3", "tf_layers=1",
             "device='cpu'", "chance_draws=2", "log_steps=2"], "a06_train_wall_sts_tf", "tf_steps_sts"),
    "b05": (["steps=20", "n_layers=1", "device='cpu'"], "b05_depth_max", "steps"),
    "b06": (["steps=3", "channels=[4, 8, 8]", "device='cpu'"], "b06_balanced_per_class", "steps"),
}


@pytest.mark.slow
@pytest.mark.parametrize("chapter", list(REHEARSALS))
def test_rehearsal_the_printed_command_runs_in_the_image_environment_and_adopt_accepts_it(tmp_path, chapter):
    copy = tmp_path / "repo"
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout  # what travels
    for rel in filter(None, files.decode().split("\0")):
        if (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    subprocess.run(["git", "init", "-q", str(copy)], check=True)
    project = Project(copy)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    smoke, metric, steps = REHEARSALS[chapter]
    name = f"{chapter}-smoke"
    try:
        bundle = make_bundle(project, chapter, smoke, profile=None, name=name, python_version=version,
                             state_dir=str(tmp_path / "state"), budget_s=400,
                             wheel_cache=REPO / ".cache" / "device-wheels" / version)
    except BundleError as err:
        pytest.skip(f"the bundle's wheels cannot be had here: {err}")
    bin_dir = image_venv(tmp_path / "venv")
    probe = subprocess.run([bin_dir / "python3", "-c", "import IPython"], capture_output=True, text=True)
    assert "No module named 'IPython'" in probe.stderr  # the image lacks it: only the bundle brings it
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "OUT": str(out)}
    proc = subprocess.run(["bash", "-c", bundle.command], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [f"{name}-summary.txt", f"{name}.tar.xz",
                                                     "device-log.txt.xz"]
    [published] = adopt(project, out)
    [result] = (copy / "sweeps" / name / "points").glob("*/result.json")
    read = json.loads(result.read_text())["data_read"]
    carried = set(json.loads(bundle.plan_file.read_text())["data"]["files"])
    assert set(read) <= carried and bool(read) == bool(carried)  # b05 builds its data in code
    table, prov = read_committed(name, copy)
    assert (table["status"] == "ok").all() and metric in set(table["metric"])
    assert prov["environment"]["versions"]["ipython"] == metadata.version("ipython")
    [point] = prov["points_run"].values()
    assert point["resolved"]["device"] == "cpu" and point["resolved"][steps] == int(
        next(p for p in smoke if p.startswith(f"{steps}=")).partition("=")[2])
    assert point["train_s"] is None or point["train_s"] > 0  # a06 and a07 record their training time


def test_tf32_is_on_while_a_module_trains_and_off_while_it_evaluates(monkeypatch):
    import torch

    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    before = matmul.fp32_precision, conv.fp32_precision
    handle = tf32_while_training()
    try:
        model, x = torch.nn.Linear(2, 2), torch.ones(1, 2)
        model(x)
        assert matmul.fp32_precision == conv.fp32_precision == "tf32"
        model.eval()
        model(x)
        assert matmul.fp32_precision == conv.fp32_precision == "ieee"
    finally:
        handle.remove()
        matmul.fp32_precision, conv.fp32_precision = before
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert tf32_while_training() is None  # nothing registered on a CPU run


def test_recertify_compares_only_runs_on_the_same_kind_of_device():
    import torch

    from ntputils.sweeps.recertify import device_problem

    assert device_problem({}) is None and device_problem({"environment": {"device": "cpu"}}) is None
    problem = device_problem({"environment": {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"}})
    assert (problem is None) == torch.cuda.is_available()
    if problem is not None:
        assert "NVIDIA H100 80GB HBM3" in problem and "same kind of device" in problem


def test_a_paper_profile_without_a_flop_count_is_timed_by_its_committed_table(tmp_path):
    """cpu_paper_problem's estimate of a chapter without a FLOP count is the point time its committed
    <prefix>-paper recorded, the trainings its points reloaded included (never a typed guess)."""
    from ntputils.book.paper_cost import cpu_estimate_text

    folder = tmp_path / "results" / "sweeps" / "t09-paper"
    folder.mkdir(parents=True)
    (folder / "provenance.json").write_text(json.dumps(
        {"name": "t09-paper", "chapter": "t09_tiny", "profile": "paper", "axes": {"seed": [0]}, "points": 1,
         "wall_s": 40.0, "machine": "a test machine"}))
    (folder / "table.csv").write_text(
        "point_id,seed,profile,kind,metric,value,value_text,outcome,items,status,seconds\n"
        "p0,0,paper,record,t09_train_wall_sts_tf,5000.0,,,,ok,40.0\n")
    assert cpu_estimate_text("t09", tmp_path) == (
        "about 1 h 24 min (the point time t09-paper recorded on a test machine, trainings included)")
    assert cpu_estimate_text("t08", tmp_path) == (
        "unknown (no readable committed table t08-paper to time it by)")
