"""The chapters stand on the chapter side: a notebook imports ``ntputils.chapter`` and the math layers,
never the runner ``ntputils.book`` (import-linter's contracts cover the package; this covers the
notebooks, which are not a package)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))


def imported_modules(source: str) -> set[str]:
    """Every module a chapter source imports (IPython magic lines blanked)."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    out: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def test_the_check_sees_a_runner_import():
    assert "ntputils.sweeps.table" in imported_modules("from ntputils.sweeps.table import x\n")
    assert "ntputils.book" in imported_modules("from ntputils import book\n")
    assert "ntputils.book" in imported_modules("import ntputils.book\n")
    assert not {m for m in imported_modules("from ntputils.chapter import published\n") if "book" in m}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_chapter_imports_the_runner(path):
    runner = sorted(m for m in imported_modules(path.read_text())
                    if m == "ntputils.book" or m.startswith("ntputils.book."))
    assert not runner, f"{path.name} imports the runner: {runner}; use ntputils.chapter"
