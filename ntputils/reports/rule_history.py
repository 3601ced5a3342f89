"""When each claim's rule was registered and which rules changed after a measurement, read from git.

The house rule: a rule is registered before the run that judges it, and changes only in a commit before the
run that judges it, never with the value in view. Git shows when: a claim is *registered* at the first
commit whose chapter source names its key, and a chapter is *first measured* at its first commit (a chapter
is executed before it is committed) or, for what the record can prove, at its first committed table
(``results/sweeps/<prefix>-*``). A commit that removes or rewrites a line holding a rule (``within(``,
``at_least(``, ``at_most(``, ``between(``, ``above_chance(``, or a ``check`` comparing with a number) of a
chapter that existed before it changed a rule the chapter had already measured: the scorecard lists each
such change with its old and new lines. A negative control that changed after a measurement is listed the
same way (:func:`control_changes`): a rule that stays put while its control moves can be tuned just as well.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

RULE_LINE = re.compile(r"\b(within|at_least|at_most|between|above_chance)\(")
#: a check whose pass condition compares with a number (``check("...", x > 0.95, ...)``): a threshold too
CHECK_THRESHOLD = re.compile(r"\bcheck\(.*[<>]=?\s*-?\d")
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class RuleChange:
    """One commit that removed or rewrote rule lines of a chapter the chapter had already measured."""

    chapter: str
    commit: str
    date: str
    subject: str
    old: tuple[str, ...]
    new: tuple[str, ...]
    after_table: bool  # after the chapter's first committed table (a measurement the repository holds)


def _git(root: Path, *args: str) -> str:
    """``git -C root args`` (text); ``""`` when git or the history is not available."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True,
                              timeout=GIT_TIMEOUT_S).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


@lru_cache(maxsize=64)
def _first_table_date(root: Path, prefix: str) -> str:
    """ISO date of the first commit that added a committed table of chapter ``prefix`` (``""``: none)."""
    out = _git(root, "log", "--diff-filter=A", "--format=%cI", "--", f"results/sweeps/{prefix}-*/table.csv")
    dates = sorted(out.split())
    return dates[0] if dates else ""


@lru_cache(maxsize=64)
def rule_changes(root: Path, chapter: str) -> tuple[RuleChange, ...]:
    """The commits that removed or rewrote rule lines of ``notebooks/<chapter>.py`` after its first commit,
    oldest first (:class:`RuleChange`)."""
    return _changes(root, chapter, _rule_lines, lambda lines: sorted(rule_calls(lines)))


@lru_cache(maxsize=64)
def control_changes(root: Path, chapter: str) -> tuple[RuleChange, ...]:
    """The commits that removed or rewrote a code line naming a negative control (an identifier starting
    with ``control``: ``control=``, ``controls={...}``, ``control = ...``) of ``notebooks/<chapter>.py``
    after its first commit, oldest first; a control added is not a change, and lines that only moved or
    re-wrapped (the same lines, spaces and trailing comments removed) are not either. It over-reports by
    design: a renamed variable counts, and a control computed on lines that never name it is missed."""
    return _changes(root, chapter, _control_lines,
                    lambda lines: sorted(TRAILING_COMMENT.sub("", x).replace(" ", "") for x in lines))


def _changes(root: Path, chapter: str, lines_of, normal) -> tuple[RuleChange, ...]:
    """The commits after the first of ``notebooks/<chapter>.py`` whose ``-U0`` diff removes lines
    ``lines_of(diff, "-")`` that differ, after ``normal``, from those it adds."""
    log = _git(root, "log", "--reverse", "-p", "-U0", "--format=\x1e%h\x1f%cI\x1f%s", "--",
               f"notebooks/{chapter}.py")
    first_table = _first_table_date(root, chapter.split("_")[0])
    out = []
    for n, entry in enumerate(e for e in log.split("\x1e") if e.strip()):
        header, _, diff = entry.partition("\n")
        commit, date, subject = (header.split("\x1f") + ["", "", ""])[:3]
        if n == 0:
            continue  # the commit that created the chapter: nothing was measured before it
        removed, added = lines_of(diff, "-"), lines_of(diff, "+")
        if not removed or normal(removed) == normal(added):
            continue  # nothing removed, or the same lines moved or re-wrapped
        out.append(RuleChange(chapter, commit, date, subject, removed, added,
                              bool(first_table) and date > first_table))
    return tuple(out)


def _code_lines(diff: str, sign: str) -> list[str]:
    """The code lines of a ``-U0`` diff starting with ``sign``, stripped (comments left out)."""
    lines = (line[1:].strip() for line in diff.splitlines()
             if line.startswith(sign) and not line.startswith(sign * 3))
    return [line for line in lines if line and not line.startswith("#")]


CONTROL_NAME = re.compile(r"\bcontrol\w*")
TRAILING_COMMENT = re.compile(r"\s+#.*$")


def _control_lines(diff: str, sign: str) -> tuple[str, ...]:
    """The code lines of a ``-U0`` diff starting with ``sign`` that name a control."""
    return tuple(line for line in _code_lines(diff, sign) if CONTROL_NAME.search(line))


def _rule_lines(diff: str, sign: str) -> tuple[str, ...]:
    """The code lines of a ``-U0`` diff starting with ``sign`` that hold a rule call (comments left out)."""
    return tuple(line for line in _code_lines(diff, sign)
                 if RULE_LINE.search(line) or CHECK_THRESHOLD.search(line))


def rule_calls(lines: tuple[str, ...]) -> list[str]:
    """The rule calls (``within(...)``, ..., balanced parentheses) in ``lines``, spaces removed."""
    calls = []
    for line in lines:
        if CHECK_THRESHOLD.search(line) and not RULE_LINE.search(line):
            calls.append(line.replace(" ", ""))  # a check's threshold: the whole line
        for match in RULE_LINE.finditer(line):
            depth, end = 0, len(line)
            for i in range(match.end() - 1, len(line)):
                depth += {"(": 1, ")": -1}.get(line[i], 0)
                if depth == 0:
                    end = i + 1
                    break
            calls.append(line[match.start():end].replace(" ", ""))
    return calls


LITERAL = re.compile(r"[\"']([A-Za-z0-9_\-]+)[\"']")


@lru_cache(maxsize=8)
def _first_literals(root: Path) -> dict[str, tuple[str, str]]:
    """Every identifier-like string literal of the chapters' history -> ``(commit, ISO date)`` of the first
    commit that added a line holding it (one pass over ``git log -p`` of ``notebooks/``)."""
    log = _git(root, "log", "--reverse", "-p", "-U0", "--format=\x1e%h\x1f%cI", "--", "notebooks/")
    first: dict[str, tuple[str, str]] = {}
    for entry in log.split("\x1e"):
        header, _, diff = entry.partition("\n")
        commit, _, date = header.partition("\x1f")
        for line in diff.splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                for literal in LITERAL.findall(line):
                    first.setdefault(literal, (commit, date.strip()))
    return first


def registered(root: Path, key: str) -> tuple[str, str]:
    """``(commit, ISO date)`` of the first commit whose chapters name the claim key ``key`` as a literal;
    ``("", "")`` when none does (a key built in a loop, e.g. ``f"a05_{name}_ce_final"``)."""
    return _first_literals(root).get(key, ("", ""))
