"""The fixture chapters of the runner tests: jupytext files under ``tests/fixtures/chapters/``, each named
for what it does (``passes_check``, ``fails_check``, ``sleeps``, ``records_values`` ...), some with a
``<name>.paper.yaml`` profile file beside them. A test copies the ones it needs into its throw-away project
with :func:`add_chapter`, or reads one with :func:`chapter_text` to write a variant of it.

``tests/fixtures/fixture_scale.py`` is the library module that ``scaled_value`` calls (copied into a
scratch ``ntputils`` by the tests that edit it).
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHAPTERS = FIXTURES / "chapters"


def chapter_text(fixture: str) -> str:
    """The source of the fixture chapter ``tests/fixtures/chapters/<fixture>.py``."""
    return (CHAPTERS / f"{fixture}.py").read_text()


def add_chapter(root: Path, name: str, fixture: str, *, paper: bool = False) -> Path:
    """Copy fixture chapter ``fixture`` to ``root/notebooks/<name>.py`` (and, with ``paper``, its
    ``<fixture>.paper.yaml`` to ``<name>.paper.yaml``); returns the copied chapter's path."""
    notebooks = root / "notebooks"
    notebooks.mkdir(parents=True, exist_ok=True)
    path = notebooks / f"{name}.py"
    path.write_text(chapter_text(fixture))
    if paper:
        (notebooks / f"{name}.paper.yaml").write_text((CHAPTERS / f"{fixture}.paper.yaml").read_text())
    return path
