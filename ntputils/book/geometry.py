"""``geometry --model DIR --corpus PATH [...]``: chapter :data:`PAGE` (the papers' geometry of any model on
any corpus) run by papermill on a reader's model folder and text, written to ``--out`` (default
``geometry/NAME/``, NAME the model folder's name) as ``NAME.ipynb``, ``NAME.html`` and ``NAME.log``.

Paths are made absolute here (the page runs in the project root); the chapter's ``LIMITS`` and parameter
types are checked before the kernel starts (:meth:`~ntputils.book.params.ChapterSpec.resolve`), and a missing
model folder or corpus is named before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ntputils.book.page_report import run_page
from ntputils.book.params import ParameterError, chapter_limits, chapter_spec, parse_overrides, read_source
from ntputils.book.project import Project, ProjectError, os_problem

PAGE = "d01"
DATA_PREFIX = "data:"  # a path under $NTP_DATA_DIR, resolved by the chapter


def _absolute(value: str, what: str) -> str:
    if value.startswith(DATA_PREFIX):
        return value
    path = Path(value).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{what} {path} does not exist")
    return str(path.resolve())


def geometry_command(project: Project, model: str, corpus: str, *, tokenizer: str | None = None,
                     context_lengths: list[int] | None = None, contexts: int | None = None,
                     documents: int | None = None, words: int | None = None, device: str | None = None,
                     params: list[str] | None = None, out: Path | None = None) -> int:
    """Run the page on ``model`` and ``corpus`` (``params``: ``-p NAME=VALUE`` of any other parameter); exit
    code 0, 1 (the page failed) or 2 (bad arguments)."""
    try:
        params: dict[str, Any] = parse_overrides(params)
        params["model"] = _absolute(model, "--model")
        params["corpus"] = _absolute(corpus, "--corpus")
        if tokenizer is not None:
            params["tokenizer"] = _absolute(tokenizer, "--tokenizer")
        for key, value in (("context_lengths", context_lengths), ("n_contexts", contexts),
                           ("max_documents", documents), ("n_words", words), ("device", device)):
            if value is not None:
                params[key] = value
        params.setdefault("max_documents", 0)  # a reader's corpus: every document unless told otherwise
        (chapter,) = project.select([PAGE])
        nb = read_source(chapter.source)
        spec = chapter_spec(chapter.name, nb, chapter.source)
        injected = spec.injected(spec.resolve(params, chapter_limits(nb, chapter.name)))
        name = Path(params["model"]).name or "model"
        out = (out or project.root / "geometry" / name).resolve()
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out {out} is a file, not a folder: give a folder (made if missing)")
    except (FileNotFoundError, ProjectError, ParameterError, ValueError) as err:
        print(f"error: {err}")
        return 2
    try:
        return run_page(project, chapter, injected, out, name, f"the geometry of {name}")
    except OSError as err:
        print(f"error: --out: {os_problem(err)}")
        return 2
