"""Static parameter checks: read a chapter's ``PROFILES`` and parameters cell without running it.

The runner rejects unknown or ill-typed ``-p NAME=VALUE`` overrides *before* any kernel starts, with
the same rules as :func:`ntputils.runtime.setup_chapter` applies inside the kernel (both call
:func:`ntputils.runtime.resolve_parameters`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntputils.chapter_contract import ParameterError, check_names, resolve_parameters, valid_parameter_names

PROFILES_NAME = "PROFILES"


@dataclass(frozen=True)
class ChapterSpec:
    """What a chapter declares: its ``PROFILES`` (or ``None``) and its parameters-cell defaults."""

    name: str
    profiles: dict[str, dict[str, Any]] | None
    defaults: dict[str, Any]

    @property
    def valid(self) -> list[str]:
        """The parameter names a caller may set."""
        if self.profiles is None:
            return list(self.defaults)
        return valid_parameter_names(self.profiles)

    def resolve(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """Parameters-cell defaults updated by ``overrides``, merged with the profile and type-checked."""
        where = f" for chapter {self.name}"
        try:
            check_names(list(overrides), self.valid, where=where)
            values = {**self.defaults, **overrides}
            if self.profiles is None:
                return values
            return resolve_parameters(self.profiles, values)
        except ParameterError as err:
            msg = str(err)
            raise ParameterError(msg if where in msg else f"{msg}{where}") from None


def read_source(source: Path):
    """The chapter source (jupytext py:percent) as an nbformat notebook."""
    import jupytext

    return jupytext.read(source, fmt="py:percent")


def _literal_assignments(code: str, what: str) -> dict[str, Any]:
    tree = ast.parse(code)
    out: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            raise ParameterError(f"{what} may only hold `name = literal` lines (line {node.lineno})")
        try:
            out[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError:
            raise ParameterError(
                f"{what}: {node.targets[0].id} (line {node.lineno}) must be a literal (number, string, "
                "None, list, dict)"
            ) from None
    return out


def chapter_spec(name: str, nb) -> ChapterSpec:
    """Parse ``PROFILES`` (first top-level assignment in any code cell) and the ``parameters`` cell."""
    params_cells = [c for c in nb.cells
                    if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if not params_cells:
        raise ParameterError(f"chapter {name} has no code cell tagged 'parameters'")
    defaults = _literal_assignments(params_cells[0].source, f"the parameters cell of {name}")
    profiles = literal_assignment(nb, PROFILES_NAME, name)
    spec = ChapterSpec(name, profiles, defaults)
    if profiles is not None:
        try:
            check_names(list(defaults), spec.valid, where=f" in the parameters cell of {name}")
        except ParameterError as err:
            raise ParameterError(f"{err} (declare the name in PROFILES)") from None
        spec.resolve({})  # the chapter's own defaults must be valid
    return spec


def literal_assignment(nb, target: str, chapter: str) -> Any:
    """The value of the first top-level ``target = <literal>`` in the chapter's code cells (``None`` if
    there is none): how ``PROFILES`` and the sweep runner's ``LIMITS`` are read without running the
    chapter. IPython magic lines are blanked first; a cell that mentions ``target`` but does not parse,
    or a non-literal value, raises ``ParameterError`` (validation is never skipped silently)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(_without_magics(cell.source))
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


def _without_magics(source: str) -> str:
    """The cell with IPython magic/shell lines (``%...``, ``!...``) blanked, so ``ast`` can parse it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def parse_value(text: str) -> Any:
    """``-p`` values: Python literals (``10``, ``1e-3``, ``True``, ``None``, ``[1, 2]``) or else a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``["steps=10", "device=cpu"]`` -> ``{"steps": 10, "device": "cpu"}``."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ParameterError(f"-p expects NAME=VALUE, got {pair!r}")
        out[name.strip()] = parse_value(value.strip())
    return out
