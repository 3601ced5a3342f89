"""A chapter's cache key: from its source, parameters and pins, then from what its run executed of
``ntputils`` and the committed tables it read (:class:`KeyCalculator`)."""

from __future__ import annotations

from typing import Any

from ntputils.book.execute import read_meta
from ntputils.book.fingerprint import Package, chapter_key, dependency_pins, legacy_chapter_key, run_key
from ntputils.book.params import ChapterSpec, chapter_spec, read_source
from ntputils.book.project import Chapter, Project
from ntputils.chapter import ParameterError
from ntputils.committed import RESULTS_DIR, table_digest


class KeyCalculator:
    """Cache keys of a project's chapters (``package``: where traced sources are read, default ``ntputils``).

    A key covers the source, resolved parameters, pins and Python version (before the run), what the run
    executed of ``ntputils`` as normalized code, and the committed tables it read with their staleness then.
    """

    def __init__(self, project: Project, package: Package | None = None):
        self.project = project
        self.package = package
        self.pins = dependency_pins(project.pyproject)
        self._specs: dict[str, tuple[ChapterSpec, str]] = {}
        self._stale: dict[str, bool | None] = {}

    def trace_current(self, meta: dict[str, Any]) -> bool:
        """Whether a stored run's trace rehashes to its ``trace_key`` now (True without a trace)."""
        if not meta.get("trace") and not meta.get("trace_key"):
            return True
        return run_key(str(meta.get("key")), meta.get("trace"), self.package) == meta.get("trace_key")

    def tables_current(self, meta: dict[str, Any]) -> bool:
        """Whether every committed table the stored run read (meta ``tables``) has the same digest and is as
        stale as it was then (meta ``currency``)."""
        tables = meta.get("tables") or {}
        base = self.project.root / RESULTS_DIR / "sweeps"
        if not all(table_digest(base / name) == digest for name, digest in tables.items()):
            return False
        return all(self.stale(name) == then for name, then in (meta.get("currency") or {}).items())

    def stale(self, name: str) -> bool | None:
        """Whether committed table ``name`` is stale now (``None``: no readable table), memoized."""
        from ntputils.book.currency import checked

        if name not in self._stale:
            try:
                self._stale[name] = checked(self.project, name)["stale"]
            except (FileNotFoundError, ValueError):
                self._stale[name] = None
        return self._stale[name]

    def run_current(self, meta: dict[str, Any]) -> bool:
        """:meth:`trace_current` and :meth:`tables_current`."""
        return self.trace_current(meta) and self.tables_current(meta)

    def spec(self, chapter: Chapter) -> tuple[ChapterSpec, str]:
        """(spec, source text) of a chapter; raises ``ParameterError`` for a malformed chapter."""
        if chapter.name not in self._specs:
            text = chapter.source.read_text()
            spec = chapter_spec(chapter.name, read_source(chapter.source), chapter.source)
            self._specs[chapter.name] = (spec, text)
        return self._specs[chapter.name]

    def key(self, chapter: Chapter, parameters: dict[str, Any],
            limits: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
        """(resolved parameters, key): :meth:`ChapterSpec.resolve` checks the values (and ``limits``)."""
        spec, text = self.spec(chapter)
        resolved = spec.resolve(parameters, limits)
        return resolved, chapter_key(text, resolved, self.pins)

    def key_matches(self, chapter: Chapter, parameters: dict[str, Any], recorded: Any) -> bool:
        """Whether a run's ``recorded`` key is the chapter's key now: :func:`chapter_key`, or the
        :func:`legacy_chapter_key` of a run recorded before the key read the cells."""
        resolved, key = self.key(chapter, parameters)
        if recorded == key:
            return True
        return recorded == legacy_chapter_key(self.spec(chapter)[1], resolved, self.pins)

    def is_current(self, chapter: Chapter) -> bool:
        """The executed notebook succeeded, its latest run did not fail and its key is the recomputed one."""
        meta = read_meta(self.project.executed(chapter))
        if meta.get("status") != "ok" or meta.get("latest_failure"):
            return False
        try:
            matches = self.key_matches(chapter, dict(meta.get("parameters", {})), meta.get("key"))
        except (ParameterError, SyntaxError, OSError):
            return False
        return matches and self.run_current(meta)

    def renderable(self, chapter: Chapter) -> bool:
        """Current, or the last good run of a chapter whose latest run failed (shown with a banner)."""
        meta = read_meta(self.project.executed(chapter))
        return bool(meta.get("status") == "ok" and meta.get("latest_failure")) or self.is_current(chapter)
