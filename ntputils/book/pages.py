"""The generated pages of a build: the runner writes its state snapshot ``.cache/book/state.json`` (what only
the runner knows: the chapters' records, which pages this build renders, the committed tables' currency,
the environment), then renders ``book/status.md``, ``book/scorecard.md`` and ``book/headline.md`` from it
with the pure renderers of :mod:`ntputils.reports`, which read no runner state.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ntputils.book.environment import git_commit, machine, package_versions
from ntputils.book.execute import read_meta
from ntputils.book.project import Chapter, Project, read_json, write_json_atomic
from ntputils.reports.scorecard import README_MARKS, scorecard_from_snapshot
from ntputils.reports.status import render_status


def chapter_state(project: Project, chapter: Chapter) -> dict[str, Any]:
    """The executed notebook's metadata (``failed`` with ``shown`` when its latest run failed), else the
    failure record, else ``{"status": "missing"}``."""
    meta = read_meta(project.executed(chapter))
    if meta and meta.get("latest_failure"):
        failure = meta["latest_failure"]
        return {**meta, "status": "failed", "error": failure.get("error"), "shown": True,
                "failed_at": failure.get("executed_at")}
    if meta:
        return meta
    return read_json(project.failed_dir() / f"{chapter.name}.json") or {"status": "missing"}


def snapshot(project: Project, chapters: list[Chapter], executed_now: set[str] | None = None,
             current: dict[str, bool] | None = None) -> dict[str, Any]:
    """The build's state for the page renderers (:mod:`ntputils.reports.status` says its fields);
    ``current``: chapter name -> whether this build renders its page (``None``: all)."""
    from ntputils.book.currency import currencies

    executed_now = executed_now or set()
    return {
        "chapters": [{"name": c.name, "short": c.short, "state": chapter_state(project, c),
                      "current": True if current is None else bool(current.get(c.name, False)),
                      "executed_now": c.name in executed_now} for c in chapters],
        "scorecard_in_toc": project.in_toc(project.scorecard_page),
        "currency": currencies(project),
        "environment": {"packages": package_versions(), "git": git_commit(project.root), "machine": machine(),
                        "built_at": datetime.now(UTC).isoformat(timespec="seconds")},
    }


def write_pages(project: Project, chapters: list[Chapter], executed_now: set[str] | None = None,
                current: dict[str, bool] | None = None) -> list[str]:
    """Write the snapshot, then the status page and (if the toc lists it) the scorecard and its headline;
    return the scorecard's coverage problems for the build to print."""
    state = snapshot(project, chapters, executed_now, current)
    project.cache_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(project.cache_dir / "state.json", state)
    project.status_page.parent.mkdir(parents=True, exist_ok=True)
    project.status_page.write_text(render_status(state))
    if not state["scorecard_in_toc"]:
        return []
    page, top, problems = scorecard_from_snapshot(state, project.root)
    project.scorecard_page.write_text(page)
    project.headline_page.write_text(f"{top} [The scorecard](scorecard.md) gives each item's evidence.\n")
    return problems


def write_readme_headline(project: Project) -> None:
    """Put the scorecard's headline (``book/headline.md``, written with the scorecard) into ``README.md``
    between :data:`README_MARKS`, with the commit it was made at. ``ValueError`` when either is missing."""
    readme = project.root / "README.md"
    if not project.headline_page.exists():
        raise ValueError(f"no headline yet ({project.headline_page}): build the book first")
    text = readme.read_text()
    start, end = README_MARKS
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{readme} needs one pair of headline marks: {start} ... {end}")
    top = project.headline_page.read_text().strip().replace("](scorecard.md)", "](book/scorecard.md)")
    block = f"{start}\n{top} (Scorecard of the build at commit {git_commit(project.root)}.)\n{end}"
    head, rest = text.split(start)
    readme.write_text(head + block + rest.split(end, 1)[1])
