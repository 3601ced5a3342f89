"""Every chapter's parameters cell is read by papermill's own parser without a warning (issue #49: a line
with a second ``=``, even in its comment, is dropped with "Unable to parse line ...", and papermill then
calls a real parameter "unknown")."""

from __future__ import annotations

import logging
from pathlib import Path

import jupytext
import nbformat
import papermill as pm
import pytest

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[a-d][0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem[:3])
def test_parameters_cell_parses_without_warnings(path: Path, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    nb_path = tmp_path / f"{path.stem}.ipynb"
    nbformat.write(jupytext.read(path), nb_path)
    with caplog.at_level(logging.WARNING, logger="papermill"):
        params = pm.inspect_notebook(str(nb_path))
    assert not [r.getMessage() for r in caplog.records], path.name
    assert {"profile", "seed", "device"} <= set(params), path.name
