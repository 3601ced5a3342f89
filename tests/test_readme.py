"""A new user's first hour (issues 29 and 49): the commands of the README and of the book's part *Using
this book* work as written from a fresh clone's root; the console script, bare pytest, JupyterLab pairing
and the licence.

Every ``ntpbook`` / ``python -m ntputils.book`` command line of those pages' ```bash blocks (and
``make ... BOOK_ARGS=...``) must parse with the current CLI; a ``build`` line's chapters and ``-p``
values must pass the build's static checks (chapter, names, types, LIMITS), a ``sweep`` line must plan,
a ``papermill -p NAME VALUE`` must name a parameter of the chapter it runs, a ``make TARGET`` must be a
Makefile target. Each command must start with something a fresh clone has at its root: ``make``, a tool of
``.venv/bin/``, a script of ``.ci/``, or a bare tool only after the block activated an environment (no
``sudo``); files it names exist, and temporary files are unique (``mktemp``). ``list`` is run for real
(cheap); executing chapters is left to the build tests. The README stays short (at most 150 lines) and
points to every page of the part.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from ntputils import cli
from ntputils.book import build as book_build
from ntputils.book.params import chapter_limits, chapter_spec, check_limits, parse_overrides, read_source
from ntputils.book.project import Project
from ntputils.sweeps.spec import plan_sweep

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
README_MAX_LINES = 150
GUIDE_CAPTION = "Using this book"
PROJECT = Project(REPO)
CLI_PREFIXES = (["python", "-m", "ntputils.book"], [".venv/bin/python", "-m", "ntputils.book"], ["ntpbook"],
                [".venv/bin/ntpbook"])
#: tools a fresh clone has only in .venv/bin (bare, they need an activated environment)
VENV_TOOLS = {"python", "python3", "ntpbook", "pytest", "papermill", "jupytext", "jupyter", "dask", "ruff",
              "pip", "lint-imports", "jupyter-book"}
#: commands that need no project environment
SHELL_WORDS = {"source", "conda", "unset"}
ACTIVATE = (["source", ".venv/bin/activate"], ["conda", "activate"])


def guide_part() -> dict:
    """The toc part that holds the user guide."""
    parts = [p for p in PROJECT.toc().get("parts", []) if p.get("caption") == GUIDE_CAPTION]
    assert len(parts) == 1, f"_toc.yml needs one part captioned {GUIDE_CAPTION!r}"
    return parts[0]


GUIDE = [REPO / f"{entry['file']}.md" for entry in guide_part()["chapters"]]
DOCS = {"README.md": README, **{p.relative_to(REPO).as_posix(): p.read_text() for p in GUIDE}}


def blocks(text: str) -> list[str]:
    """The ```bash blocks of ``text`` (an indented block too), continuations joined."""
    found = re.findall(r"^([ \t]*)```bash\n(.*?)^\1```", text, flags=re.S | re.M)
    return [textwrap.dedent(block).replace("\\\n", " ") for _, block in found]


def split(line: str) -> list[list[str]]:
    """One command line split like the shell does (comments dropped, ``&&`` separating commands, leading
    ``NAME=value`` assignments and ``export`` lines dropped; ``$(...)`` is one word)."""
    words = shlex.split(re.sub(r"\$\([^)]*\)", "SUBSTITUTED", line), comments=True)
    out: list[list[str]] = []
    cmd: list[str] = []
    for w in words + ["&&"]:
        if w != "&&":
            cmd.append(w)
            continue
        while cmd and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", cmd[0]):  # NTP_DATA_DIR=... make book
            cmd = cmd[1:]
        if cmd and cmd[0] != "export":
            out.append(cmd)
        cmd = []
    return out


def block_commands(block: str) -> list[tuple[list[str], bool]]:
    """The commands of one block, each with whether an environment was activated before it in the block."""
    out, active = [], False
    for line in block.splitlines():
        for cmd in split(line):
            out.append((cmd, active))
            active = active or any(cmd[: len(a)] == a for a in ACTIVATE)
    return out


def doc_commands(text: str) -> list[tuple[list[str], bool]]:
    return [c for block in blocks(text) for c in block_commands(block)]


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
    assert book_build.validate_options(args.profile, overrides, args.timeout) is None
    parameters = {"profile": overrides.pop("profile", None) or args.profile or "cpu", **overrides}
    keys = book_build.KeyCalculator(PROJECT)
    for chapter in PROJECT.select(args.only):
        resolved, _ = keys.key(chapter, parameters)
        assert not check_limits(resolved, chapter_limits(read_source(chapter.source), chapter.name))


WHERE = [(doc, cmd, active) for doc, text in DOCS.items() for cmd, active in doc_commands(text)]
ALL = [cmd for _, cmd, _ in WHERE]
RUNNER = [(cmd, args) for cmd in ALL if (args := cli_args(cmd)) is not None]


def test_the_readme_is_short_and_leads_to_the_guide():
    """At most 150 lines: what the book is, the two commands, the headline, where to read on (every page of
    the guide, by a link that exists)."""
    assert len(README.splitlines()) <= README_MAX_LINES
    assert [cmd for cmd, _ in block_commands(blocks(README)[0])] == [["make", "book"], ["make", "test"]]
    links = set(re.findall(r"\]\(([^)#]+)\)", README))
    assert {p.relative_to(REPO).as_posix() for p in GUIDE} <= links
    generated = {PROJECT.scorecard_page.relative_to(REPO).as_posix()}  # the headline's link (make book)
    assert all((REPO / link).exists() for link in links - generated if "://" not in link), links


def test_the_guide_is_an_unnumbered_part_after_the_numbered_ones():
    """The guide's pages are no chapters and move no chapter number: an unnumbered part after every numbered
    one; its pages link to pages that exist."""
    parts = PROJECT.toc()["parts"]
    index = parts.index(guide_part())
    assert not guide_part().get("numbered") and not any(p.get("numbered") for p in parts[index:])
    assert GUIDE and all(p.exists() for p in GUIDE)
    for page in GUIDE:
        for link in re.findall(r"\]\(([^)#:]+\.md)[)#]", page.read_text()):
            assert (page.parent / link).exists(), f"{page.name}: {link}"


def test_the_guide_has_runner_commands():
    subcommands = {args[0] for _, args in RUNNER if args}
    assert {"build", "list", "sweep", "sweep-table", "sweep-report", "sweep-status", "recertify", "spread",
            "device-bundle", "adopt", "status"} <= subcommands
    sweeps = [args for _, args in RUNNER if args[:1] == ["sweep"]]
    assert any("--scheduler" in a for a in sweeps) and any("--slurm" in a for a in sweeps)  # three clusters


@pytest.mark.parametrize("args", [a for _, a in RUNNER], ids=[" ".join(a)[:60] for _, a in RUNNER])
def test_each_guide_runner_command_parses_and_passes_the_static_checks(args):
    try:
        parsed = cli.parser().parse_args(args)
    except SystemExit as err:  # argparse: unknown flag or subcommand
        pytest.fail(f"command does not parse (exit {err.code}): {' '.join(args)}")
    if parsed.command == "build":
        check_build(parsed)
    elif parsed.command == "sweep":
        plan_sweep(PROJECT, parsed.chapter, parsed.params, profile=parsed.profile, name=parsed.name)


@pytest.mark.parametrize(("doc", "cmd", "active"), WHERE,
                         ids=[f"{d}: {' '.join(c)[:50]}" for d, c, _ in WHERE])
def test_each_command_runs_as_written_from_a_fresh_clone(doc, cmd, active):
    """No ``sudo`` (a root box has none; the scripts call it themselves), no bare venv tool before
    activation, no fixed temporary name; the scripts and files it names exist."""
    tool = cmd[0]
    if tool.startswith(".venv/bin/"):
        assert tool.removeprefix(".venv/bin/") in VENV_TOOLS, tool
    elif tool.startswith(".ci/"):
        assert os.access(REPO / tool, os.X_OK), f"{tool} is not an executable script of the clone"
    elif tool in VENV_TOOLS:
        assert active, f"{doc}: bare {tool!r} before `source .venv/bin/activate`: write .venv/bin/{tool}"
    else:
        assert tool == "make" or tool in SHELL_WORDS, f"{doc}: {tool!r} is not at a fresh clone's root"
    assert not any(w.startswith("/tmp/") for w in cmd), f"{doc}: a fixed temporary name; use $(mktemp -d)"
    written = set(re.findall(r"^# (\S+)$", DOCS[doc], flags=re.M))  # files a page's code block defines
    for word in cmd[1:]:
        if re.fullmatch(r"[\w./-]+\.(py|ya?ml|toml)", word) and word not in written:
            assert (REPO / word).exists(), f"{doc}: {word} does not exist in the clone"


def test_venv_tools_exist_where_the_guide_calls_them():
    """``.venv/bin/TOOL`` exists once ``make book`` installed the project (checked in the venv running the
    tests, if make made it); ``make lab`` adds ``jupyter lab``."""
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not list(venv.glob(".ntpbook-installed-*")):
        pytest.skip("not run from a venv that make installed")
    used = {cmd[0].removeprefix(".venv/bin/") for cmd in ALL if cmd[0].startswith(".venv/bin/")}
    assert used and all((venv / "bin" / t).exists() for t in used), sorted(used)


def test_dask_commands_use_real_options():
    """The own-scheduler commands: each ``--option`` is one ``.venv/bin/dask scheduler|worker`` knows."""
    dask_cmds = [cmd for cmd in ALL if cmd[0] == ".venv/bin/dask"]
    assert {cmd[1] for cmd in dask_cmds} == {"scheduler", "worker"}
    dask = Path(sys.prefix) / "bin" / "dask"
    if not dask.exists():
        pytest.skip("no dask console script in this environment")
    for cmd in dask_cmds:
        help_text = subprocess.run([str(dask), cmd[1], "--help"], capture_output=True, text=True,
                                   timeout=120).stdout
        for option in (w for w in cmd[2:] if w.startswith("--")):
            assert option in help_text, f"dask {cmd[1]} has no {option}"


def test_readme_make_targets_exist():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), flags=re.M))
    used = {w for cmd in ALL if cmd[0] == "make" for w in cmd[1:2] if "=" not in w}
    assert used and used <= targets
    assert {"book", "test", "lab", "device-bundle", "slurm-test"} <= used


def test_readme_papermill_parameters_exist_in_the_chapter():
    """The "Without the runner" example: jupytext makes the notebook papermill runs, with real -p names,
    in a folder of its own (``mktemp -d``)."""
    text = DOCS[next(d for d, c, _ in WHERE if Path(c[0]).name == "papermill")]
    temporary = set(re.findall(r"^(\w+)=\$\(mktemp -d\)$", text, flags=re.M))
    sources = {cmd[-1]: cmd[cmd.index("-o") + 1] for cmd in ALL if Path(cmd[0]).name == "jupytext"}
    runs = [cmd for cmd in ALL if Path(cmd[0]).name == "papermill"]
    assert runs and all(Path(cmd[0]).parent.as_posix() == ".venv/bin" for cmd in runs + [
        c for c in ALL if Path(c[0]).name == "jupytext"])  # the tools live in the venv
    for cmd in runs:
        assert all(re.match(r"\$(\w+)/", path) and re.match(r"\$(\w+)/", path)[1] in temporary
                   for path in cmd[1:3]), cmd  # unique names: no collision on a shared machine
        chapter = next(src for src, nb in sources.items() if nb == cmd[1])
        spec = chapter_spec("readme", read_source(REPO / chapter))
        names = [cmd[i + 1] for i, w in enumerate(cmd) if w == "-p"]
        values = {n: parse_overrides([f"{n}={cmd[cmd.index(n) + 1]}"])[n] for n in names}
        resolved = spec.resolve(values)
        assert not check_limits(resolved, chapter_limits(read_source(REPO / chapter), "readme"))


def test_list_runs_for_real(capsys):
    assert cli.main(["list"]) == book_build.EXIT_OK
    assert "a01_ntp_as_soft_labels" in capsys.readouterr().out


def test_console_script_bare_pytest_lint_exclusion_and_license():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["ntpbook"] == "ntputils.cli:main"
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
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not list(venv.glob(".ntpbook-installed-*")):
        pytest.skip("not run from a venv that make installed (make would install into this Python)")
    done = subprocess.run(["make", "-s", "paper-gpu", f"VENV={venv}"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0
    assert "no CUDA device" in done.stderr
    assert "sweep" not in done.stdout
