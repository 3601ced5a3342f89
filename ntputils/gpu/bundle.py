"""``python -m ntputils.book device-bundle``: what the GPU machine lacks, and the one command that runs there.

The GPU machine (DEVELOPERS.md) gets a copy of the working tree (<= 64 MiB; git-ignored paths only when
the call names them to carry), has no network, runs a command for at most 10 minutes and returns at
most 8 files of <= 16 MiB. Its image has Python 3.12 with torch (CUDA), numpy, scipy, pandas, pyarrow,
matplotlib, tqdm and transformers (:data:`IMAGE_PACKAGES`), but no papermill, Jupyter, jupytext, cvxpy
or Dask. The bundle, written to the git-ignored folder :data:`BUNDLE_DIR`, holds:

* ``wheels/``: the pure-Python wheels of the in-process executor (IPython and its dependencies, see
  :mod:`ntputils.gpu.device_run` for why not papermill) and the pinned ``sentencepiece`` (a07 trains
  its tokenizer with it; the image's version differs), made with ``pip download --only-binary=:all:
  --python-version 3.12 --platform manylinux2014_x86_64``;
* ``data/``: the data files the selected points read (:data:`CHAPTER_DATA`), with their sha256 and the
  digest of the full data root they come from (the digest in the points' fingerprints);
* ``<name>.ipynb``: the chapter's papermill input notebook (jupytext source and trace cells);
* ``<name>.json``: the plan: the points as ``sweep`` plans them here (ids, resolved parameters, code
  hash), the deadline, the precision and the state folder on the machine.

It prints the size of bundle + tree and the command (both measured against the limits), the paths to
carry and the wall estimate of each point (:func:`wall_estimate`).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ntputils.book.environment import git_commit
from ntputils.book.execute import write_input
from ntputils.book.paper_cost import estimate_lines
from ntputils.book.project import Project, say, write_json_atomic
from ntputils.paths import CORPUS_FOLDERS, data_digest, data_dir
from ntputils.sweeps.spec import SweepPlan, SweepSpecError, plan_sweep

BUNDLE_DIR = ".device"
TREE_LIMIT = 64 * 2**20  # what travels: tracked + untracked-not-ignored files + carried paths
COMMAND_LIMIT = 2000  # characters of one device command
DEADLINE_S = 570  # the whole command, hard bound (timeout)
BUDGET_S = 540  # the runner's own deadline, archive written (pip's install comes before it)
#: torch.compile mode of the transformer's forward on the GPU machine (:mod:`ntputils.gpu.speed`):
#: CUDA graphs replace the eager step's kernel launches, which bound it there (issue #46)
COMPILE_MODE = "reduce-overhead"
STATE_DIR = "/tmp/ntpbook-device"  # on the machine's local disk: results and checkpoints between calls
#: the paper-profile sweep of each network chapter, as ``make paper-gpu`` ran them (device=cuda: never
#: silently on a CPU)
DEFAULT_SWEEP = ("a07", ["seed=0", "device='cuda'"], "paper", "a07-paper")

#: the image's Python packages (KINDS.md, read on the machine on 2026-11-17) that a chapter may import;
#: the rehearsal (tests/test_device_bundle.py) gives a point exactly these, from this machine's .venv
IMAGE_PACKAGES = (
    "certifi", "charset-normalizer", "click", "contourpy", "cycler", "filelock", "fonttools", "fsspec",
    "huggingface-hub", "idna", "jinja2", "joblib", "kiwisolver", "markdown-it-py", "markupsafe",
    "matplotlib", "mdurl", "mpmath", "networkx", "numpy", "packaging", "pandas", "pillow", "pip",
    "psutil", "pyarrow", "pygments", "pyparsing", "python-dateutil", "pyyaml", "regex", "requests",
    "safetensors", "scikit-learn", "scipy", "sentencepiece", "setuptools", "six", "sympy",
    "threadpoolctl", "tokenizers", "torch", "tqdm", "transformers", "typing-extensions", "urllib3",
    "tzdata", "pytz",
)
#: what the image lacks and a point needs: the in-process executor's IPython (pure Python wheels), the
#: pinned sentencepiece (binary), and what a06's Simplified TinyStories needs (pure Python): nltk, which reads
#: WordNet (its dependencies click, joblib, regex and tqdm are in the image; defusedxml is not), and
#: lemminflect; versions as installed here
WHEELS = ("ipython", "ipython-pygments-lexers", "jedi", "parso", "matplotlib-inline", "pexpect", "ptyprocess",
          "prompt-toolkit", "wcwidth", "stack-data", "asttokens", "executing", "pure-eval", "traitlets",
          "sentencepiece", "nltk", "defusedxml", "lemminflect")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")
#: the data files (relative to the data root) each chapter's points read; a chapter not listed carries
#: every corpus folder. The point's child notes what it opened (``data_read`` in its result).
CHAPTER_DATA = {
    "a07_tinystories_transformer": ("tinystories/tinystories_v1_train_head.txt.xz",),
    "a06_transformer_lstm": ("tinystories/tinystories_v1_train_head.txt.xz", "nltk_data/corpora/wordnet.zip",
                             "official-ntp-2024/verysmallset.txt"),
    "b05_transformer_confusion": (),
    "b06_cnn_imbalance": ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
                          "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"),
}


class BundleError(RuntimeError):
    """The bundle cannot be made or would break a limit of the GPU machine (exit code 2)."""


# ---------------------------------------------------------------------------------------------
# the bundle
# ---------------------------------------------------------------------------------------------
def wheel_requirements() -> list[str]:
    """``name==version`` of :data:`WHEELS` as installed here (the versions the tests ran)."""
    out = []
    for name in WHEELS:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            raise BundleError(f"{name} is not installed here: install the project (make install) first, "
                              "so the bundle carries the versions the tests ran") from None
    return out


def download_wheels(target: Path, python_version: str, cache: Path) -> list[Path]:
    """The wheels of :func:`wheel_requirements` for ``python_version`` on manylinux x86-64, downloaded
    once into ``cache`` (pip's own cache too) and copied to ``target``."""
    cache.mkdir(parents=True, exist_ok=True)
    reqs = wheel_requirements()
    have = {p.name for p in cache.glob("*.whl")}
    missing = [r for r in reqs if not any(_wheel_matches(w, r, python_version) for w in have)]
    if missing:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               "--python-version", python_version, "--implementation", "cp",
               *(a for p in PLATFORMS for a in ("--platform", p)), "-d", str(cache), *missing]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode:
            raise BundleError(f"pip download of {', '.join(missing)} failed (needs the package index once; "
                              f"then {cache} holds them): {proc.stderr.strip()[-500:]}")
    target.mkdir(parents=True, exist_ok=True)
    chosen = []
    for req in reqs:
        matches = sorted(w for w in (p.name for p in cache.glob("*.whl"))
                         if _wheel_matches(w, req, python_version))
        if not matches:
            raise BundleError(f"no wheel for {req} (Python {python_version}) in {cache}")
        shutil.copy2(cache / matches[-1], target / matches[-1])
        chosen.append(target / matches[-1])
    return chosen


def _wheel_matches(filename: str, requirement: str, python_version: str) -> bool:
    """Whether wheel ``filename`` is ``requirement`` (``name==version``) for ``python_version``."""
    name, version = requirement.split("==")
    parts = filename[:-4].split("-")
    if len(parts) < 5 or parts[0].lower().replace("_", "-") != name.lower() or parts[1] != version:
        return False
    tags = parts[-3].split(".")
    return (any(t.startswith("py3") for t in tags) or parts[-2] == "abi3"
            or "cp" + python_version.replace(".", "") in tags)


def copy_data(chapter: str, target: Path) -> dict[str, Any]:
    """Copy the data files ``chapter`` reads into ``target``; return ``{"root", "digest", "files"}``: the
    digest of the full data root (what the fingerprints hash) and each copied file's sha256."""
    root = data_dir()
    rels = CHAPTER_DATA.get(chapter)
    if rels is None:
        rels = tuple(p.relative_to(root).as_posix() for folder in CORPUS_FOLDERS if (root / folder).is_dir()
                     for p in sorted((root / folder).rglob("*"))
                     if p.is_file() and not p.name.startswith("README"))
    files = {}
    for rel in rels:
        source = root / rel
        if not source.is_file():
            raise BundleError(f"data file {source} not found: set NTP_DATA_DIR to the data root that holds "
                              f"{rel}")
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / rel)
        files[rel] = hashlib.sha256(source.read_bytes()).hexdigest()
    return {"digest": data_digest(root), "files": files}


def travelling_bytes(root: Path, carried: list[Path]) -> int:
    """Bytes that travel: tracked and untracked-not-ignored files of ``root``, plus the ``carried``
    folders."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
    total = sum((root / rel).stat().st_size for rel in out.decode().split("\0")
                if rel and (root / rel).is_file())
    for folder in carried:
        total += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return total


def device_command(plan_rel: str, state_dir: str = STATE_DIR, deadline_s: int = DEADLINE_S) -> str:
    """The one command the GPU machine runs in the tree's root: install the wheels into a site of its own,
    then :mod:`ntputils.gpu.device_run`, all bounded by ``deadline_s`` (``timeout``)."""
    site = f"{state_dir}/site"
    wheels = str(Path(plan_rel).parent / "wheels")
    inner = (f"python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "
             f"{shlex.quote(site)} {shlex.quote(wheels)}/*.whl && PYTHONPATH={shlex.quote(site)} "
             f"PYTHONUNBUFFERED=1 python3 -m ntputils.gpu.device_run {shlex.quote(plan_rel)} --out \"$1\"")
    pack = "import lzma,sys; sys.stdout.buffer.write(lzma.compress(open(sys.argv[1], 'rb').read()))"
    return (f"L=$(mktemp); timeout -k 5 {deadline_s} bash -c {shlex.quote(inner)} _ \"$OUT\" 2>&1 "
            f"| tee \"$L\"; rc=${{PIPESTATUS[0]}}; python3 -c {shlex.quote(pack)} \"$L\" "
            "> \"$OUT/device-log.txt.xz\"; exit $rc")


@dataclass
class Bundle:
    """What :func:`make_bundle` wrote and measured."""

    folder: Path
    plan_file: Path
    plan: SweepPlan
    command: str
    tree_bytes: int
    wheels: list[Path]


def make_bundle(project: Project, chapter: str, pairs: list[str] | None, *, profile: str | None,
                name: str | None, python_version: str = "3.12", state_dir: str = STATE_DIR,
                budget_s: float = BUDGET_S, precision: str = "tf32", compile_mode: str | None = COMPILE_MODE,
                with_wheels: bool = True,
                wheel_cache: Path | None = None) -> Bundle:
    """Plan the sweep here, write the bundle (replacing an earlier one) and measure it; raises
    :class:`BundleError` or :class:`SweepSpecError` (nothing run). ``wheel_cache``: where downloaded wheels
    are kept (default ``.cache/device-wheels/<python>``); ``with_wheels=False`` leaves them out (a run
    where IPython is installed already)."""
    plan = plan_sweep(project, chapter, pairs, profile=profile, name=name)
    folder = project.root / BUNDLE_DIR
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n")  # ignored even in a checkout whose .gitignore lacks it
    cache = wheel_cache or project.cache_dir / "device-wheels" / python_version
    wheels = download_wheels(folder / "wheels", python_version, cache) if with_wheels else []
    data = {"root": f"{BUNDLE_DIR}/data", **copy_data(plan.chapter.name, folder / "data")}
    write_input(plan.chapter.source, folder / f"{plan.name}.ipynb")
    commit = git_commit(project.root)
    tasks = [{"id": p.id, "chapter": plan.chapter.name, "parameters": {"profile": p.resolved["profile"],
                                                                       **p.overrides},
              "resolved": p.resolved, "inject": p.inject, "overrides": p.overrides,
              "code_hash": plan.code_hash, "chapter_code": plan.chapter_code} for p in plan.points]
    desc = plan.describe() | {"point_ids": [p.id for p in plan.points], "git": commit,
                              "command": plan.command(),
                              "made_by": "device bundle (ntputils.gpu.device_run)"}
    plan_file = folder / f"{plan.name}.json"
    write_json_atomic(plan_file, {"name": plan.name, "chapter": plan.chapter.name, "git": commit,
                                  "notebook": f"{BUNDLE_DIR}/{plan.name}.ipynb", "tasks": tasks, "desc": desc,
                                  "data": data, "state_dir": state_dir, "budget_s": budget_s,
                                  "precision": precision, "compile": compile_mode})
    command = device_command(f"{BUNDLE_DIR}/{plan.name}.json", state_dir)
    tree = travelling_bytes(project.root, [folder])
    if tree > TREE_LIMIT:
        raise BundleError(f"bundle + tree = {tree / 2**20:.1f} MiB, over the {TREE_LIMIT / 2**20:.0f} MiB "
                          "the GPU machine takes; select fewer points or data")
    if len(command) > COMMAND_LIMIT:
        raise BundleError(f"the command is {len(command)} characters, over {COMMAND_LIMIT}")
    return Bundle(folder, plan_file, plan, command, tree, wheels)


def bundle_command(project: Project, chapter: str | None, pairs: list[str] | None, *, profile: str | None,
                   name: str | None, python_version: str = "3.12", state_dir: str | None = None,
                   budget_s: float | None = None) -> int:
    """``device-bundle [CHAPTER -p ... --profile P --name N]`` (default: a07's paper profile): write the
    bundle and print the device command; 0, or 2 with one ``error:`` line."""
    if chapter is None:
        chapter, pairs, profile, name = DEFAULT_SWEEP
        pairs = list(pairs)
    try:
        bundle = make_bundle(project, chapter, pairs, profile=profile, name=name,
                             python_version=python_version, state_dir=state_dir or STATE_DIR,
                             budget_s=budget_s or BUDGET_S)
    except (BundleError, SweepSpecError, OSError, subprocess.SubprocessError) as err:
        say(f"error: {err}")
        return 2
    plan = bundle.plan
    files = sorted(json.loads(bundle.plan_file.read_text())["data"]["files"])
    say(f"bundle {bundle.folder}: {len(plan.points)} point(s) of {plan.chapter.name} (profile "
        f"{plan.profile}), {len(bundle.wheels)} wheels, data {files}")
    say(f"bundle + tree: {bundle.tree_bytes / 2**20:.1f} MiB of {TREE_LIMIT / 2**20:.0f} MiB; command: "
        f"{len(bundle.command)} of {COMMAND_LIMIT} characters")
    for line in estimate_lines(plan.chapter.short):
        say(line)
    say(f"run it on the GPU machine (carry: [\"{BUNDLE_DIR}\"], timeout_s 600; the machine gets the checkout "
        "the session started in, so make the bundle there), at once again if the summary names a point "
        "unfinished (same warm machine: it resumes from its checkpoint under /tmp), then here: "
        "python -m ntputils.book adopt DIR (DIR: the folder the files came back to)")
    print(bundle.command)
    return 0

