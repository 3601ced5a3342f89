"""A chapter saved in Jupyter Lab without an edit stays current (issue #49): the chapter key reads the
cells jupytext parses, not the header that jupytext (``format_version``, ``jupytext_version``) and Lab (the
kernel's ``display_name``) rewrite on a save; an edit of a cell still changes it."""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_configuration_file

from ntputils.book.fingerprint import chapter_key, legacy_chapter_key
from ntputils.book.keys import KeyCalculator
from ntputils.book.project import Project

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.name for p in (REPO / "notebooks").glob("*.py") if not p.name.startswith("_"))
RESOLVED = {"profile": "cpu", "seed": 0, "device": "cpu"}
PINS = ["jupytext==1.19.6"]


def lab_save(source: Path, target: Path) -> str:
    """What Lab's jupytext contents manager does on a save of the unedited chapter: read it with the
    project's jupytext.toml, the kernel (ipykernel's python3 spec) set, and write it back."""
    config = load_jupytext_configuration_file(str(REPO / "jupytext.toml"))
    nb = jupytext.read(source, config=config)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    jupytext.write(nb, target, fmt="py:percent", config=config)
    return target.read_text()


@pytest.mark.parametrize("name", CHAPTERS)
def test_a_save_without_an_edit_keeps_the_key(tmp_path, name):
    source = REPO / "notebooks" / name
    text = source.read_text()
    saved = lab_save(source, tmp_path / name)
    assert "jupytext_version" in saved  # the save did rewrite the header (the case of the issue)
    assert chapter_key(saved, RESOLVED, PINS) == chapter_key(text, RESOLVED, PINS)
    # a second save (now with the header jupytext wrote) keeps it too
    assert chapter_key(lab_save(tmp_path / name, tmp_path / f"2{name}"), RESOLVED, PINS) \
        == chapter_key(text, RESOLVED, PINS)


def test_an_edit_of_a_cell_or_its_metadata_changes_the_key():
    text = (REPO / "notebooks" / CHAPTERS[0]).read_text()
    base = chapter_key(text, RESOLVED, PINS)
    assert chapter_key(text.replace("# %% [markdown]\n", "# %% [markdown]\n# One more line.\n#\n", 1),
                       RESOLVED, PINS) != base
    assert chapter_key(text + "\n# %%\nx = 1\n", RESOLVED, PINS) != base
    assert chapter_key(text.replace("# %% [markdown]", "# %% [markdown] tags=[\"remove-cell\"]", 1),
                       RESOLVED, PINS) != base
    assert chapter_key(text, {**RESOLVED, "seed": 1}, PINS) != base
    assert chapter_key("# %%\nnot a chapter (\n", RESOLVED, PINS)  # unreadable: keyed by its text


def test_a_run_recorded_under_the_old_key_stays_current(tmp_path):
    """The key of a run recorded before this change (the whole text's sha256) is still accepted, so no
    executed notebook goes stale by the change of the key alone; a changed text is a new key either way."""
    (tmp_path / "notebooks").mkdir()
    name = CHAPTERS[0]
    (tmp_path / "notebooks" / name).write_text((REPO / "notebooks" / name).read_text())
    project = Project(tmp_path)
    keys = KeyCalculator(project)
    chapter = project.chapters()[0]
    resolved, key = keys.key(chapter, {"profile": "cpu"})
    old = legacy_chapter_key(chapter.source.read_text(), resolved, keys.pins)
    assert old != key
    assert keys.key_matches(chapter, {"profile": "cpu"}, key)
    assert keys.key_matches(chapter, {"profile": "cpu"}, old)
    assert not keys.key_matches(chapter, {"profile": "cpu"}, "something else")
