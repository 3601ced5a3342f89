"""``build`` and ``list``: execute the chapters whose key changed, write the status page, run jupyter-book.

Exit codes: 0 ok, 1 a chapter or the HTML build failed, 2 bad usage, 3 a selected chapter's lock is
held by another build, 130 Ctrl-C (SIGTERM 143, SIGHUP 129; running chapters stopped, results kept).
The command line that calls it is :mod:`ntputils.cli`.
"""
from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ntputils.book import html
from ntputils.book.execute import (
    INTERRUPTED,
    RunResult,
    interrupt_all,
    read_meta,
    reap_stale_runs,
    record_failure,
    run_chapter,
)
from ntputils.book.keys import KeyCalculator
from ntputils.book.locks import ChapterBusy, chapter_locks, html_lock
from ntputils.book.pages import write_pages
from ntputils.book.paper_cost import cpu_paper_problem
from ntputils.book.params import chapter_limits, read_source
from ntputils.book.project import Chapter, Project, ProjectError, say, seconds_problem
from ntputils.chapter import DEFAULT_PROFILE, ParameterError
from ntputils.reports.status import overrides_text

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_BUSY, EXIT_INTERRUPTED = 3, 130


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C (running chapters stopped, previous results kept)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def terminate(signum, _frame) -> None:
    raise Terminated(signum)


def exit_code(err: KeyboardInterrupt) -> int:
    return 128 + err.signum if isinstance(err, Terminated) else EXIT_INTERRUPTED


@dataclass
class Planned:
    chapter: Chapter
    parameters: dict[str, Any]
    resolved: dict[str, Any]
    key: str


def _print_failures(failures: list[RunResult]) -> None:
    for r in failures:
        say("")
        say("=" * 100)
        say(f"FAILED: {r.chapter.name}: {r.error}")
        if r.log is not None:
            say(f"(log: {r.log})")
        say("-" * 100)
        say(r.traceback.rstrip() or "(no traceback)")
    say("=" * 100)
    say(f"{len(failures)} chapter(s) failed: {', '.join(r.chapter.name for r in failures)}")


def build(project: Project, *, profile: str | None = None, only: list[str] | None = None,
          overrides: dict[str, Any] | None = None, force: bool = False, jobs: int = 1, make_html: bool = True,
          partial: bool = False, timeout: float | None = None, allow_cpu: bool = False) -> int:
    """Execute the selected chapters (cache permitting) and build the HTML; return the exit code. A network
    chapter's paper profile without CUDA is refused unless ``allow_cpu`` (:func:`cpu_paper_problem`)."""
    overrides = dict(overrides or {})
    problem = validate_options(profile, overrides, timeout)
    if problem:
        say(f"error: {problem}")
        return EXIT_USAGE
    parameters = {"profile": overrides.pop("profile", None) or profile or DEFAULT_PROFILE, **overrides}
    partial = partial or bool(only)  # rerunning some chapters: the rest are 'not built' pages
    try:
        selected = project.select(only)
    except ProjectError as err:
        say(f"error: {err}")
        return EXIT_USAGE
    device = {"device": parameters.get("device", "auto"), "profile": parameters["profile"]}
    if problem := cpu_paper_problem([(c.short, device) for c in selected], allow_cpu):
        say(f"error: {problem}")
        return EXIT_USAGE
    keys = KeyCalculator(project)

    # 1. static checks of every selected chapter, before any kernel starts
    planned: list[Planned] = []
    broken: list[RunResult] = []
    usage_errors: list[str] = []
    for chapter in selected:
        try:
            keys.spec(chapter)
        except (ParameterError, SyntaxError) as err:  # the chapter itself is malformed
            broken.append(RunResult(chapter, "failed", error=f"{type(err).__name__}: {err}",
                                    traceback="(static check of the chapter source; nothing was executed)"))
            continue
        try:  # the one check of the values, LIMITS included, as for a sweep point
            limits = chapter_limits(read_source(chapter.source), chapter.name)
            resolved, key = keys.key(chapter, parameters, limits)
        except ParameterError as err:
            usage_errors.append(str(err))
            continue
        planned.append(Planned(chapter, parameters, resolved, key))
    if usage_errors:
        for msg in usage_errors:
            say(f"error: {msg}")
        return EXIT_USAGE

    # 2. cache
    to_run: list[Planned] = []
    results: list[RunResult] = list(broken)
    for plan in planned:
        meta = read_meta(project.executed(plan.chapter))
        if (not force and meta.get("status") == "ok" and not meta.get("latest_failure")
                and keys.key_matches(plan.chapter, plan.parameters, meta.get("key"))
                and keys.run_current(meta)):
            say(f"[cached] {plan.chapter.name}: up to date ({meta.get('seconds', 0):.1f} s when executed)")
            results.append(RunResult(plan.chapter, "cached", meta.get("seconds", 0.0), meta=meta))
        else:
            to_run.append(plan)

    # 3. execute (all of them, whatever fails), holding the locks of the chapters it writes; first remove
    # what a dead build (SIGKILL) left: its work folders and processes still running for them
    removed, killed = reap_stale_runs(project)
    if removed:
        say(f"removed {len(removed)} work folder(s) of dead builds"
            + (f"; stopped their leftover processes {killed}" if killed else ""))
    try:
        with chapter_locks(project, [p.chapter.name for p in to_run] + [r.chapter.name for r in broken]):
            return _execute_and_publish(project, keys, parameters, to_run, broken, results, jobs=jobs,
                                        timeout=timeout, make_html=make_html, partial=partial)
    except ChapterBusy as err:
        say(f"error: {err}")
        return EXIT_BUSY


def validate_options(profile: str | None, overrides: dict[str, Any], timeout: float | None) -> str | None:
    """What is wrong with the build options (checked before any kernel starts), or ``None``."""
    if timeout is not None and (problem := seconds_problem(timeout)):
        return f"--timeout {problem}"
    given = overrides.get("profile")
    if profile is not None and given is not None and given != profile:
        return (f"conflicting profiles: --profile {profile} and -p profile={given}; give the profile once")
    return None


def _execute_and_publish(project: Project, keys: KeyCalculator, parameters: dict[str, Any],
                         to_run: list[Planned], broken: list[RunResult], results: list[RunResult], *,
                         jobs: int, timeout: float | None, make_html: bool, partial: bool) -> int:
    for r in broken:
        r.meta = record_failure(project, r.chapter, {"chapter": r.chapter.name, "status": "failed",
                                                     "error": r.error, "traceback": r.traceback}).meta
    toc_has_status = project.toc_path.exists() and project.in_toc(project.status_page)
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None
    if to_run:
        say(f"executing {len(to_run)} chapter(s) at profile {parameters['profile']!r} with {jobs} job(s)")

    def execute(plan: Planned) -> RunResult:
        say(f"[run]    {plan.chapter.name} ...")
        r = run_chapter(project, plan.chapter, plan.parameters, plan.resolved, plan.key,
                        inject=keys.spec(plan.chapter)[0].injected(plan.resolved), timeout=timeout,
                        threads=threads, link_status=toc_has_status)
        if r.status == "interrupted":  # the main thread reports the interruption (one line)
            return r
        checks = r.meta.get("checks", [])
        passed = sum(1 for c in checks if c.get("passed"))
        outcome = "ok" if r.status == "ok" else f"FAILED ({r.error.splitlines()[0] if r.error else ''})"
        say(f"[{r.status:6s}] {plan.chapter.name}: {outcome} in {r.seconds:.1f} s, "
            f"checks {passed}/{len(checks)}")
        return r

    t0 = time.time()
    INTERRUPTED.clear()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        results += list(pool.map(execute, to_run))
    except KeyboardInterrupt as err:
        # a second Ctrl-C (or SIGTERM, SIGHUP) must not interrupt the cleanup
        saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM,
                                                                     signal.SIGHUP)}
        try:
            stopped = interrupt_all()
            pool.shutdown(wait=True, cancel_futures=True)
            write_status_pages(project, keys, set())
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        how = (f"terminated ({signal.Signals(err.signum).name})" if isinstance(err, Terminated)
               else "interrupted")
        say(f"{how}: stopped {stopped} running chapter(s); previous results kept, status page written")
        return exit_code(err)
    finally:
        pool.shutdown(wait=True)
    if to_run:
        say(f"executed {len(to_run)} chapter(s) in {time.time() - t0:.1f} s")

    executed_now = {r.chapter.name for r in results if r.status == "ok"}
    failures = [r for r in results if r.status == "failed"]
    if failures:
        _print_failures(failures)
    if not make_html:
        write_status_pages(project, keys, executed_now)
        return EXIT_FAILED if failures else EXIT_OK
    with html_lock(project, say=say):
        code = _build_html(project, keys, executed_now, partial)
    return EXIT_FAILED if failures else code


def write_status_pages(project: Project, keys: KeyCalculator, executed_now: set[str]) -> dict[str, bool]:
    """Write the status page and scorecard; return chapter -> renderable (current, or last good run
    shown under a failure banner)."""
    current = {c.name: keys.renderable(c) for c in project.chapters()}
    if project.toc_path.exists():
        for problem in write_pages(project, project.toc_chapters(), executed_now, current):
            say(problem)
    return current


def _build_html(project: Project, keys: KeyCalculator, executed_now: set[str], partial: bool) -> int:
    """4. HTML: the status page links exactly the renderable chapters, i.e. those rendered; in a partial
    build every other toc chapter is a placeholder page (:func:`html.write_placeholders`), so no chapter
    or figure number moves."""
    current = write_status_pages(project, keys, executed_now)
    renderable = {name for name, ok in current.items() if ok}
    toc_path, shown = None, set(renderable)
    try:
        html.check_ready(project, current, partial=partial)
        placeholders = html.write_placeholders(project, renderable)  # none in a full build
        if partial:
            toc_path = html.partial_toc(project)
            if toc_path is not None:
                dropped = [f for f in project.toc_files() if f not in project.toc_files(toc_path)]
                say(f"partial build: leaving out {len(dropped)} toc entries without a file: "
                    + ", ".join(dropped))
            if placeholders:
                missing = " ".join(c.short for c in placeholders)
                shown |= {c.name for c in placeholders}
                say(f"not built yet (or stale): {missing}; their pages say so (\"not built in this build\"); "
                    f"build them with `python -m ntputils.book build --only {missing}` (or all: "
                    "`python -m ntputils.book build`)")
    except ProjectError as err:
        say(f"error: {err}")
        removed = html.prune_pages(project, renderable)
        say("HTML build skipped" + (f"; removed {len(removed)} stale page(s) from {project.html_dir}: "
                                    + ", ".join(removed) if removed else ""))
        return EXIT_FAILED
    say("building HTML: jupyter-book build -W -n --keep-going")
    t0 = time.time()
    code = html.jupyter_book(project, toc=toc_path)
    kept = set(project.toc_files(toc_path))
    removed = html.prune_pages(project, shown, toc_entries=kept)
    if removed:
        say(f"removed {len(removed)} orphan or stale page(s) from {project.html_dir}: {', '.join(removed)}")
    if code != 0:
        say(f"jupyter-book build failed (exit {code}); warnings are errors (-W)")
        return EXIT_FAILED
    say(f"HTML built in {time.time() - t0:.1f} s: {project.html_dir / 'index.html'}")
    return EXIT_OK


def list_chapters(project: Project) -> int:
    keys = KeyCalculator(project)
    for chapter in project.chapters():
        meta = read_meta(project.executed(chapter))
        if not meta:
            state = "not executed"
        else:
            state = "current" if keys.is_current(chapter) else "stale"
            state += f" ({meta.get('profile')}, {meta.get('seconds', 0):.1f} s)"
            if overrides_text(meta):
                state += f" overrides: {overrides_text(meta)} (not the book's run)"
        say(f"{chapter.short:5s} {chapter.name:40s} {state}")
    return EXIT_OK
