"""Static parameter checks: a chapter's parameters cell and profile files, read without running it."""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntputils.chapter import (
    DEFAULT_PROFILE,
    ParameterError,
    check_names,
    injected,
    parameter_defaults,
    resolve_parameters,
)

LIMITS_NAME = "LIMITS"


@dataclass(frozen=True)
class ChapterSpec:
    """What a chapter declares: its parameters-cell values and its profiles' values (``cpu``: none)."""

    name: str
    defaults: dict[str, Any]
    profiles: dict[str, dict[str, Any]]

    def resolve(self, overrides: dict[str, Any], limits: dict[str, Any] | None = None) -> dict[str, Any]:
        """The parameters cell updated by the profile's file and then ``overrides``: the runner's one check
        of parameter values, for a build and for every sweep point. Each value must reach the kernel
        (:func:`injectable_problem`), have a name, the type and profile of the chapter's own rules
        (:func:`~ntputils.chapter.resolve_parameters`, which the kernel applies once more) and lie in
        ``limits`` (the chapter's ``LIMITS``, :func:`chapter_limits`). Raises :class:`ParameterError`."""
        where = f" for chapter {self.name}"
        for name, value in overrides.items():
            if problem := injectable_problem(value):
                raise ParameterError(f"-p {name}={value!r}: {problem}")
        check_names(list(overrides), list(self.defaults), where=where)
        profile = overrides.get("profile", self.defaults["profile"])
        if profile not in self.profiles:
            raise ParameterError(f"unknown profile {profile!r}{where}; it defines {sorted(self.profiles)}")
        resolved = resolve_parameters(self.defaults, {**self.profiles[profile], **overrides}, where=where)
        if problems := check_limits(resolved, limits or {}):
            raise ParameterError("; ".join(f"{p} (chapter {self.name})" for p in problems))
        return resolved

    def injected(self, resolved: dict[str, Any]) -> dict[str, Any]:
        """What papermill injects for ``resolved``: the values unlike the parameters cell's."""
        return injected(self.defaults, resolved)


def read_source(source: Path):
    """The chapter source (jupytext py:percent) as an nbformat notebook."""
    import jupytext

    return jupytext.read(source, fmt="py:percent")


def profile_files(source: Path | None) -> dict[str, Path]:
    """``{profile: path}`` of the chapter's sibling profile files ``<stem>.<profile>.yaml``."""
    if source is None:
        return {}
    return {p.name[len(source.stem) + 1:-len(".yaml")]: p
            for p in sorted(source.parent.glob(f"{source.stem}.*.yaml"))}


def read_profile(path: Path, profile: str, chapter: str) -> dict[str, Any]:
    """A profile file's values; it must be a mapping that names its own profile."""
    import yaml

    try:
        values = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ParameterError(f"cannot read profile {profile!r} of {chapter} ({path}): {err}") from None
    if not isinstance(values, dict) or values.get("profile") != profile:
        raise ParameterError(f"{path} must be a mapping of parameter values with `profile: {profile}`")
    return values


def chapter_spec(name: str, nb, source: Path | None = None) -> ChapterSpec:
    """Parse the ``parameters`` cell of ``nb`` and the profile files beside ``source``; check them."""
    params_cells = [c for c in nb.cells
                    if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if not params_cells:
        raise ParameterError(f"chapter {name} has no code cell tagged 'parameters'")
    defaults = parameter_defaults(params_cells[0].source, f"the parameters cell of {name}")
    profiles = {defaults["profile"]: {}}
    for profile, path in profile_files(source).items():
        if profile == defaults["profile"]:
            raise ParameterError(f"{path}: the {profile!r} values are the parameters cell's; remove the file")
        profiles[profile] = read_profile(path, profile, name)
    spec = ChapterSpec(name, defaults, profiles)
    for profile in profiles:
        spec.resolve({"profile": profile})  # every profile must be valid
    if DEFAULT_PROFILE not in profiles:
        raise ParameterError(f"the parameters cell of {name} must hold the {DEFAULT_PROFILE!r} values")
    return spec


def literal_assignment(nb, target: str, chapter: str) -> Any:
    """The value of the first top-level ``target = <literal>`` in the chapter's code cells, or ``None``; a
    cell that mentions ``target`` but does not parse, or a non-literal value, raises ``ParameterError``."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:  # IPython magic and shell lines blanked
            tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                       for line in cell.source.splitlines()))
        except SyntaxError as err:
            if target in cell.source:
                raise ParameterError(f"the cell defining {target} of chapter {chapter} does not parse "
                                     f"(line {err.lineno}: {err.msg}); up-front parameter validation "
                                     "needs it") from None
            continue  # other IPython syntax; the kernel reports real errors
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == target):
                try:
                    return ast.literal_eval(node.value)
                except ValueError:
                    raise ParameterError(f"{target} of chapter {chapter} must be a literal dict") from None
    return None


def parse_value(text: str) -> Any:
    """``-p`` values: Python literals (``10``, ``1e-3``, ``True``, ``None``, ``[1, 2]``) or else a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def injectable_problem(value: Any) -> str | None:
    """Why papermill cannot hand ``value`` to a kernel, or ``None``: an infinite number (papermill writes
    ``float('inf')``, which the parameters check refuses as not a literal) or text that is not UTF-8 (the
    notebook is UTF-8 JSON); lists and dicts are searched."""
    if isinstance(value, float) and math.isinf(value):
        return "an infinite number cannot be passed to a chapter (give a large finite value)"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{value!r} is not valid UTF-8 text"
    if isinstance(value, dict):
        value = [*value, *value.values()]
    parts = value if isinstance(value, list | tuple) else ()
    return next(filter(None, map(injectable_problem, parts)), None)


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``["steps=10", "device=cpu"]`` -> ``{"steps": 10, "device": "cpu"}``."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ParameterError(f"-p expects NAME=VALUE, got {pair!r}")
        out[name.strip()] = parse_value(value.strip())
    return out


def chapter_limits(nb, name: str) -> dict[str, Any]:
    """The chapter's optional literal ``LIMITS = {param: (low, high) or {allowed, ...}}`` (or ``{}``):
    ``(low, high)`` inclusive, ``None`` open. A range bounds a number, or each number of a list value
    (``"ps": (1, 8)``); a key ``"len(param)"`` bounds the length of a list value
    (``"len(ps)": (1, None)``)."""
    limits = literal_assignment(nb, LIMITS_NAME, name)
    if limits is None:
        return {}
    ok = isinstance(limits, dict) and all(
        (isinstance(v, tuple) and len(v) == 2)
        or (isinstance(v, (set, frozenset)) and not LENGTH.fullmatch(str(k))) for k, v in limits.items())
    if not ok:
        raise ParameterError(f"{LIMITS_NAME} of chapter {name} must map names to (low, high) "
                             "or to a set of allowed values (a key len(name): to (low, high))")
    return {str(k): v if isinstance(v, tuple) else frozenset(v) for k, v in limits.items()}


LENGTH = re.compile(r"len\((\w+)\)")  # a LIMITS key that bounds the length of a list parameter


def _outside(value: Any, limit: tuple[Any, Any]) -> bool:
    low, high = limit
    return (low is not None and value < low) or (high is not None and value > high)


def _range_text(limit: tuple[Any, Any]) -> str:
    low, high = limit
    return f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_limits(resolved: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    """Problems of one resolved point against ``limits`` (``[]`` if none): a number outside its range, a
    list with a number outside it, a list whose length is outside its ``len(name)`` range, a value not in its
    set."""
    problems = []
    for key, limit in limits.items():
        if length := LENGTH.fullmatch(key):
            value = resolved.get(length.group(1))
            if isinstance(value, (list, tuple)) and _outside(len(value), limit):
                problems.append(f"{length.group(1)}={value!r} has {len(value)} entries, outside the "
                                f"chapter's limits {_range_text(limit)}")
            continue
        value = resolved.get(key)
        if isinstance(limit, frozenset):
            if value not in limit:
                allowed = sorted(limit, key=repr)
                problems.append(f"{key}={value!r} is not one of the chapter's values {allowed}")
        elif _is_number(value):
            if _outside(value, limit):
                problems.append(f"{key}={value!r} is outside the chapter's limits {_range_text(limit)}")
        elif isinstance(value, (list, tuple)):
            bad = [v for v in value if _is_number(v) and _outside(v, limit)]
            if bad:
                problems.append(f"{key}={value!r} holds {', '.join(map(repr, bad))}, outside the chapter's "
                                f"limits {_range_text(limit)}")
    return problems
