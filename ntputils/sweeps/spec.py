"""Sweep specifications: parse ``-p key=v1,v2`` / ``-p key=a:b`` axes, expand them, validate every point.

Every point is resolved by the chapter's rules and checked against its literal ``LIMITS`` (``{name: (low,
high)}`` inclusive, ``None`` open, or ``{name: {allowed values}}``) before anything runs. A point's id hashes
the chapter's normalized code, the data, the pins, the Python version and its resolved parameters.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Any

from ntputils.book.fingerprint import chapter_code_of, dependency_pins
from ntputils.book.params import ChapterSpec, chapter_limits, chapter_spec, parse_value, read_source
from ntputils.book.project import Chapter, Project, ProjectError
from ntputils.chapter import ParameterError
from ntputils.committed import NAME_RE

RANGE_RE = re.compile(r"^(-?\d+):(-?\d+)(?::(-?\d+))?$")
MAX_POINTS = 100_000


class SweepSpecError(ValueError):
    """A sweep specification is malformed or a point is rejected by the chapter (exit code 2)."""


@dataclass(frozen=True)
class Point:
    """One point: its id, swept values, resolved parameters and what papermill injects."""

    id: str
    overrides: dict[str, Any]
    resolved: dict[str, Any]
    inject: dict[str, Any]


@dataclass(frozen=True)
class SweepPlan:
    """A validated sweep: chapter, profile, axes (in command-line order), points and the code hash."""

    name: str
    chapter: Chapter
    profile: str
    axes: dict[str, list[Any]]
    points: list[Point]
    code_hash: str
    chapter_code: str  # normalized code cells (fingerprint.chapter_code_digest)
    env: dict[str, str] = field(default_factory=dict)  # set in each point's kernel (e.g. a CPU code path)

    def command(self) -> str:
        """The command that (re)runs this sweep (ranges written out as lists)."""
        axes = " ".join("-p " + shlex.quote(pair) for pair in axis_pairs(self.axes))
        prof = f" --profile {self.profile}" if "profile" not in self.axes else ""
        return f"python -m ntputils.book sweep {self.chapter.short} {axes}{prof} --name {self.name}"

    def describe(self) -> dict[str, Any]:
        """The JSON-able description stored as ``sweeps/<name>/sweep.json``."""
        return {"name": self.name, "chapter": self.chapter.name, "profile": self.profile,
                "axes": self.axes, "code_hash": self.code_hash, "points": len(self.points)} | (
                    {"env": dict(self.env)} if self.env else {})


def _literal(value: Any) -> str:
    """``repr`` that ``ast.literal_eval`` reads back; NaN or an infinity raises :class:`SweepSpecError`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SweepSpecError(f"{value!r} cannot be a swept value: no command could give it again, and "
                             "papermill cannot pass it to a chapter")
    if isinstance(value, list):
        return "[" + ",".join(_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ",".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_literal(k)}:{_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def axis_pairs(axes: dict[str, list[Any]]) -> list[str]:
    """``-p`` arguments (``key=v1,v2``) that :func:`parse_axes` reads back as ``axes``."""
    return [f"{k}=" + ",".join(_cli_value(v) for v in vals) for k, vals in axes.items()]


def _cli_value(value: Any) -> str:
    """A value as ``-p`` reads it back (strings unquoted when they are not literals)."""
    if (isinstance(value, str) and parse_value(value) == value and not RANGE_RE.match(value.strip())
            and value == value.strip() and not set(value) & set(",'\"()[]{}")):
        return value
    return _literal(value)


def parse_axis_values(key: str, text: str) -> list[Any]:
    """``"2,4,8"`` -> ``[2, 4, 8]``; ``"0:5"`` -> ``[0, 1, 2, 3, 4]`` (``a:b:step``); Python literals, else
    strings. Raises :class:`SweepSpecError` for an empty list, an empty or a duplicate value."""
    text = text.strip()
    m = RANGE_RE.match(text)
    if m:
        a, b, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
        if step == 0:
            raise SweepSpecError(f"-p {key}={text}: a range step cannot be 0")
        span = range(a, b, step)
        try:
            too_many = len(span) > MAX_POINTS
        except OverflowError:  # more than sys.maxsize values
            too_many = True
        if too_many:
            raise SweepSpecError(f"-p {key}={text}: the range has more than {MAX_POINTS} values; a sweep has "
                                 f"at most {MAX_POINTS} points")
        values: list[Any] = list(span)
        if not values:
            raise SweepSpecError(f"-p {key}={text}: the range is empty (a:b means a, a+1, ..., b-1)")
        return values
    if not text:
        raise SweepSpecError(f"-p {key}=: no values given")
    parts = _split_top_level(text)
    if any(not p.strip() for p in parts):
        raise SweepSpecError(f"-p {key}={text}: empty value in the list")
    values = [parse_value(p.strip()) for p in parts]
    for i, v in enumerate(values):
        if repr(v) in map(repr, values[:i]):
            raise SweepSpecError(f"-p {key}={text}: duplicate value {v!r}")
    return values


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quotes, so ``[1,2],[3,4]`` gives two list values."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_axes(pairs: list[str] | None) -> dict[str, list[Any]]:
    """``["d=2,4", "seed=0:3"]`` -> ``{"d": [2, 4], "seed": [0, 1, 2]}`` (a key given twice is an error)."""
    axes: dict[str, list[Any]] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise SweepSpecError(f"-p expects KEY=V1,V2,... or KEY=A:B, got {pair!r}")
        if key in axes:
            raise SweepSpecError(f"-p {key} is given twice; list all its values in one -p {key}=...")
        axes[key] = parse_axis_values(key, text)
    return axes


def code_hash(chapter_code: str, pins: list[str]) -> str:
    """sha256 of the chapter's normalized code cells, the shared data's digest, pins and Python version."""
    from ntputils.paths import data_digest

    payload = {"chapter": chapter_code, "data": data_digest(), "pins": pins,
               "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def point_id(code: str, resolved: dict[str, Any]) -> str:
    """The id of a point: 16 hex digits of sha256(code hash, resolved parameters)."""
    payload = json.dumps({"code": code, "parameters": resolved}, sort_keys=True, default=repr)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def plan_sweep(project: Project, chapter_sel: str, pairs: list[str] | None, *, profile: str | None = None,
               name: str | None = None) -> SweepPlan:
    """Validate a sweep and list its points; raises :class:`SweepSpecError` (nothing is written)."""
    try:
        (chapter,) = project.select([chapter_sel])
    except ProjectError as err:
        raise SweepSpecError(str(err)) from None
    name = chapter.short if name is None else name
    if not NAME_RE.match(name):
        raise SweepSpecError(f"--name {name!r}: use letters, digits, '.', '_' or '-' (at most 80)")
    axes = parse_axes(pairs)
    if not axes:
        raise SweepSpecError("a sweep needs at least one -p KEY=V1,V2,... axis")
    total = math.prod(len(values) for values in axes.values())
    if total > MAX_POINTS:
        raise SweepSpecError(f"the sweep has {total} points; at most {MAX_POINTS} are allowed")
    if "profile" in axes and profile is not None:
        raise SweepSpecError("give the profile either as --profile or as -p profile=..., not both")
    try:
        nb = read_source(chapter.source)
        spec: ChapterSpec = chapter_spec(chapter.name, nb, chapter.source)
    except (ParameterError, SyntaxError) as err:
        raise SweepSpecError(f"chapter {chapter.name} is malformed: {err}") from None
    try:
        limits = chapter_limits(nb, chapter.name)
    except ParameterError as err:
        raise SweepSpecError(str(err)) from None
    chapter_code = chapter_code_of(nb)
    chash = code_hash(chapter_code, dependency_pins(project.pyproject))

    problems: list[str] = []
    points: list[Point] = []
    seen: dict[str, dict[str, Any]] = {}
    base = {"profile": profile} if profile is not None else {}
    for combo in itertools.product(*axes.values()):
        overrides = dict(zip(axes, combo, strict=True))
        try:
            resolved = spec.resolve({**base, **overrides}, limits)
        except ParameterError as err:
            problems.append(str(err))
            continue
        pid = point_id(chash, resolved)
        if pid in seen:
            problems.append(f"points {seen[pid]} and {overrides} resolve to the same parameters")
            continue
        seen[pid] = overrides
        points.append(Point(pid, overrides, resolved, spec.injected(resolved)))
    problems = list(dict.fromkeys(problems))  # each once, in order
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
        raise SweepSpecError("invalid sweep of " + chapter.name + ":\n  " + "\n  ".join(shown))
    resolved_profile = points[0].resolved["profile"] if points else (profile or "cpu")
    plan = SweepPlan(name, chapter, resolved_profile, axes, points, chash, chapter_code)
    plan.command()  # the stored command must give this sweep again
    return plan


