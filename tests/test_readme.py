"""A new user's first hour (issue 29): the README's commands exist, the console script, bare pytest,
JupyterLab pairing and the licence.

Every ``ntpbook`` / ``python -m ntputils.book`` command line of the README's ```bash blocks (and
``make ... BOOK_ARGS=...``) must parse with the current CLI; a ``build`` line's chapters and ``-p``
values must pass the build's static checks (chapter, names, types, LIMITS), a ``sweep`` line must plan,
a ``papermill -p NAME VALUE`` must name a parameter of the chapter it runs, a ``make TARGET`` must be a
Makefile target. ``list`` is run for real (cheap); executing chapters is left to the build tests.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from ntputils.book import cli
from ntputils.book.params import chapter_limits, chapter_spec, check_limits, parse_overrides, read_source
from ntputils.book.project import Project
from ntputils.book.sweep_spec import plan_sweep

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
PROJECT = Project(REPO)
CLI_PREFIXES = (["python", "-m", "ntputils.book"], [".venv/bin/python", "-m", "ntputils.book"], ["ntpbook"],
                [".venv/bin/ntpbook"])


def bash_lines() -> list[str]:
    """The command lines of the README's ```bash blocks (continuations joined)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        lines += [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


def commands() -> list[list[str]]:
    """Each line split like the shell does (comments dropped, ``&&`` separating commands)."""
    out = []
    for line in bash_lines():
        words = shlex.split(line, comments=True)
        while words and re.match(r"^[A-Z_]+=", words[0]):  # NTP_DATA_DIR=... make book
            words = words[1:]
        if words and words[0] == "export":
            continue
        cmd: list[str] = []
        for w in words + ["&&"]:
            if w == "&&":
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(w)
    return out


def cli_args(cmd: list[str]) -> list[str] | None:
    """The arguments of a runner command (``None`` if ``cmd`` is another command)."""
    for prefix in CLI_PREFIXES:
        if cmd[: len(prefix)] == prefix:
            return cmd[len(prefix):]
    if cmd[:1] == ["make"]:
        extra = [w.partition("=")[2] for w in cmd if w.startswith("BOOK_ARGS=")]
        profile = [w.partition("=")[2] for w in cmd if w.startswith("PROFILE=")]
        if extra or profile:
            return ["build", *(["--profile", profile[0]] if profile else []), *shlex.split(" ".join(extra))]
    return None


def check_build(args) -> None:
    """The build's static checks, as `build` runs them before any kernel starts."""
    overrides = parse_overrides(args.params)
    assert cli.validate_options(args.profile, overrides, args.timeout) is None
    parameters = {"profile": overrides.pop("profile", None) or args.profile or "cpu", **overrides}
    keys = cli.KeyCalculator(PROJECT)
    for chapter in PROJECT.select(args.only):
        resolved, _ = keys.key(chapter, parameters)
        assert not check_limits(resolved, chapter_limits(read_source(chapter.source), chapter.name))


ALL = commands()
RUNNER = [(cmd, args) for cmd in ALL if (args := cli_args(cmd)) is not None]


def test_the_readme_has_runner_commands():
    subcommands = {args[0] for _, args in RUNNER if args}
    assert {"build", "list", "sweep", "sweep-table", "recertify", "spread"} <= subcommands


@pytest.mark.parametrize("args", [a for _, a in RUNNER], ids=[" ".join(a)[:60] for _, a in RUNNER])
def test_each_readme_runner_command_parses_and_passes_the_static_checks(args):
    try:
        parsed = cli.parser().parse_args(args)
    except SystemExit as err:  # argparse: unknown flag or subcommand
        pytest.fail(f"README command does not parse (exit {err.code}): {' '.join(args)}")
    if parsed.command == "build":
        check_build(parsed)
    elif parsed.command == "sweep":
        plan_sweep(PROJECT, parsed.chapter, parsed.params, profile=parsed.profile, name=parsed.name)


def test_readme_make_targets_exist():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    used = {w for cmd in ALL if cmd[0] == "make" for w in cmd[1:2] if "=" not in w}
    assert used and used <= targets


def test_readme_papermill_parameters_exist_in_the_chapter():
    """The "Without the runner" example: jupytext makes the notebook papermill runs, with real -p names."""
    sources = {cmd[-1]: cmd[cmd.index("-o") + 1] for cmd in ALL if Path(cmd[0]).name == "jupytext"}
    runs = [cmd for cmd in ALL if Path(cmd[0]).name == "papermill"]
    assert runs and all(Path(cmd[0]).parent.as_posix() == ".venv/bin" for cmd in runs + [
        c for c in ALL if Path(c[0]).name == "jupytext"])  # the tools live in the venv
    for cmd in runs:
        chapter = next(src for src, nb in sources.items() if nb == cmd[1])
        spec = chapter_spec("readme", read_source(REPO / chapter))
        names = [cmd[i + 1] for i, w in enumerate(cmd) if w == "-p"]
        values = {n: parse_overrides([f"{n}={cmd[cmd.index(n) + 1]}"])[n] for n in names}
        resolved = spec.resolve(values)
        assert not check_limits(resolved, chapter_limits(read_source(REPO / chapter), "readme"))


def test_list_runs_for_real(capsys):
    assert cli.main(["list"]) == cli.EXIT_OK
    assert "a01_ntp_as_soft_labels" in capsys.readouterr().out


def test_console_script_bare_pytest_lint_exclusion_and_license():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["ntpbook"] == "ntputils.book.cli:main"
    assert "." in meta["tool"]["pytest"]["ini_options"]["pythonpath"]  # `benchmarks` for a bare pytest
    assert "notebooks/*.ipynb" in meta["tool"]["ruff"]["extend-exclude"]  # paired notebooks
    license_text = (REPO / "LICENSE").read_text()
    assert meta["project"]["license"]["text"] == "MIT" and license_text.startswith("MIT License")
    assert "the NTP Geometry Book authors" in license_text


def test_jupytext_pairs_only_the_chapters_and_the_pairs_are_no_chapters(tmp_path):
    from jupytext.config import load_jupytext_configuration_file

    config = load_jupytext_configuration_file(str(REPO / "jupytext.toml"))
    assert config.default_formats(str(REPO / "notebooks" / "a01_ntp_as_soft_labels.py"))
    for other in ("book/a01_ntp_as_soft_labels.ipynb", "ntputils/paths.py", "benchmarks/report.py"):
        assert config.default_formats(str(REPO / other)) is None, other
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "a01_x.py").write_text("# %%\n")
    (tmp_path / "notebooks" / "a01_x.ipynb").write_text("{}")
    assert [c.name for c in Project(tmp_path).chapters()] == ["a01_x"]
    assert [c.name for c in Project(tmp_path).select(["a01_x.ipynb"])] == ["a01_x"]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="with CUDA, make paper-gpu would train")
def test_paper_gpu_stops_without_cuda() -> None:
    """``make paper-gpu`` names the missing CUDA device and starts no sweep on a CPU-only machine."""
    import subprocess
    import sys

    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not list(venv.glob(".ntpbook-installed-*")):
        pytest.skip("not run from a venv that make installed (make would install into this Python)")
    done = subprocess.run(["make", "-s", "paper-gpu", f"VENV={venv}"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    assert "no CUDA device" in done.stderr
    assert "sweep" not in done.stdout
