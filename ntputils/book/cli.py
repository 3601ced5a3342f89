"""Command line: ``python -m ntputils.book build|list|status|browser|sweep|sweep-*|recertify|spread``.

``build`` executes the chapters whose cache key changed, writes the status page and runs jupyter-book.
Exit codes: 0 ok, 1 a chapter or the HTML build failed, 2 bad usage, 3 a selected chapter's lock is
held by another build, 130 Ctrl-C (SIGTERM 143, SIGHUP 129; running chapters stopped, results kept).
"""
from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntputils.book import html
from ntputils.book.device_bundle import cpu_paper_problem
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
from ntputils.book.params import chapter_limits, parse_overrides, read_source
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


def _terminate(signum, _frame) -> None:
    raise Terminated(signum)


def _exit_code(err: KeyboardInterrupt) -> int:
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
            _write_pages(project, keys, set())
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        how = (f"terminated ({signal.Signals(err.signum).name})" if isinstance(err, Terminated)
               else "interrupted")
        say(f"{how}: stopped {stopped} running chapter(s); previous results kept, status page written")
        return _exit_code(err)
    finally:
        pool.shutdown(wait=True)
    if to_run:
        say(f"executed {len(to_run)} chapter(s) in {time.time() - t0:.1f} s")

    executed_now = {r.chapter.name for r in results if r.status == "ok"}
    failures = [r for r in results if r.status == "failed"]
    if failures:
        _print_failures(failures)
    if not make_html:
        _write_pages(project, keys, executed_now)
        return EXIT_FAILED if failures else EXIT_OK
    with html_lock(project, say=say):
        code = _build_html(project, keys, executed_now, partial)
    return EXIT_FAILED if failures else code


def _write_pages(project: Project, keys: KeyCalculator, executed_now: set[str]) -> dict[str, bool]:
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
    current = _write_pages(project, keys, executed_now)
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


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m ntputils.book", description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=None, help="project root (default: this checkout)")
    sub = ap.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="execute changed chapters with papermill, then build the HTML")
    b.add_argument("--profile", default=None, help="parameter profile: cpu (default) or paper")
    b.add_argument("--only", nargs="+", action="extend", metavar="CHAPTER",
                   help="chapters to execute (name or prefix, e.g. a01); repeatable, the lists add up")
    b.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", dest="params",
                   help="override a chapter parameter (Python literal), repeatable")
    b.add_argument("--force", action="store_true", help="re-execute even if the cache key is unchanged")
    b.add_argument("--jobs", type=int, default=1, help="chapters executed in parallel (default 1)")
    b.add_argument("--no-html", dest="html", action="store_false", help="only execute, skip jupyter-book")
    b.add_argument("--partial", action="store_true",
                   help="build the HTML although some chapters have no current notebook: each of those is a "
                        "page that says it is not built in this build (implied by --only)")
    b.add_argument("--timeout", type=_seconds, default=None,
                   help="seconds allowed per chapter, positive and finite (default: none)")
    b.add_argument("--allow-cpu", action="store_true",
                   help="run a network chapter's paper profile although torch sees no CUDA device")

    sub.add_parser("list", help="chapters and whether their executed notebook is current")
    stp = sub.add_parser("status", help="regenerate book/status.md, the scorecard and its headline only")
    stp.add_argument("--readme", action="store_true",
                     help="also write the scorecard's headline into README.md (between its headline marks)")

    sw = sub.add_parser("sweep", help="run a chapter over the cartesian product of parameter values on Dask")
    sw.add_argument("chapter", help="chapter (name or prefix, e.g. a05)")
    sw.add_argument("-p", "--param", action="append", metavar="KEY=V1,V2|A:B", dest="params",
                    help="an axis: values (Python literals) or a range a:b (= a..b-1), repeatable")
    sw.add_argument("--profile", default=None, help="parameter profile of every point (default cpu)")
    sw.add_argument("--name", default=None, help="sweep name: folder sweeps/NAME (default: chapter prefix)")
    sw.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    where = sw.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                       help="use a running dask scheduler instead of a LocalCluster")
    where.add_argument("--slurm", type=Path, default=None, metavar="CONFIG.yaml",
                       help="start workers as SLURM jobs (dask-jobqueue; queue, cores, memory, walltime)")
    sw.add_argument("--retry-failed", action="store_true", help="rerun points whose result is an error")
    sw.add_argument("--connect-timeout", type=_seconds, default=10.0,
                    help="seconds to reach --scheduler, handshake included (positive, finite; default 10)")
    sw.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    sw.add_argument("--allow-cpu", action="store_true",
                    help="run a network chapter's paper profile although torch sees no CUDA device")

    st = sub.add_parser("sweep-table", help="the tidy table of a sweep (csv, parquet or markdown)")
    st.add_argument("name", help="sweep name")
    st.add_argument("--format", choices=("csv", "parquet", "markdown"), default="csv")
    st.add_argument("--publish", action="store_true",
                    help="copy the table and its provenance to results/sweeps/NAME/ (committed)")
    st.add_argument("--force", action="store_true",
                    help="with --publish: replace a committed all-ok table even if this sweep has "
                         "failed points")

    sr = sub.add_parser("sweep-report", help="draw a scratch sweep (sweeps/NAME) with the book's sweeps "
                                             "page: an executed notebook and an HTML page")
    sr.add_argument("name", help="sweep name")
    sr.add_argument("--out", type=Path, default=None, metavar="DIR", help="default: sweeps/NAME/report/")

    ge = sub.add_parser("geometry", help="the papers' geometry of a model folder on a corpus (chapter d01): "
                                         "an executed notebook and an HTML page")
    ge.add_argument("--model", required=True, metavar="DIR",
                    help="a Hugging Face causal LM folder (save_pretrained) or a model folder of this book")
    ge.add_argument("--corpus", required=True, metavar="PATH",
                    help="a .txt / .txt.xz file or a folder of them (data:REL: $NTP_DATA_DIR/REL)")
    ge.add_argument("--tokenizer", metavar="PATH", help="tokenizer folder or file (default: the model's)")
    ge.add_argument("--context-length", type=int, action="append", dest="context_lengths", metavar="N",
                    help="tokens per context, repeatable (default: 6)")
    ge.add_argument("--contexts", type=int, metavar="N", help="contexts kept (default 0: all distinct ones)")
    ge.add_argument("--documents", type=int, metavar="N", help="first documents read (default 0: all)")
    ge.add_argument("--words", type=int, metavar="N", help="most frequent next tokens of the word claims "
                                                           "(default 0: all that occur)")
    ge.add_argument("--device", help="auto (default), cpu or cuda")
    ge.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", dest="params",
                    help="any other parameter of chapter d01 (Python literal), repeatable")
    ge.add_argument("--out", type=Path, default=None, metavar="DIR", help="default: geometry/<model name>/")

    ss = sub.add_parser("sweep-status", help="points done, failed, running and pending of a sweep, its ETA, "
                                             "slowest point and last error (read-only: safe while it runs)")
    ss.add_argument("name", help="sweep name")

    rc = sub.add_parser("recertify", help="re-run a sample of a committed table's points under the current "
                                          "code; if every value is unchanged, move it to the current code")
    rc.add_argument("names", nargs="*", metavar="NAME", help="committed tables (results/sweeps/NAME)")
    rc.add_argument("--all", dest="all_tables", action="store_true", help="every committed table")
    rc.add_argument("--points", type=int, default=1, help="extra points drawn at random (default 1)")
    rc.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    rc.add_argument("--force", action="store_true", help="re-run even a table that is current")
    rc.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")

    sp = sub.add_parser("spread", help="re-run a committed table's fastest point(s) under other CPU code "
                                       "paths (torch's scalar kernels, another thread count) and write each "
                                       "value's spread beside the table (spread.json) for recertify")
    sp.add_argument("names", nargs="*", metavar="NAME", help="committed tables (results/sweeps/NAME)")
    sp.add_argument("--points", type=int, default=1, help="the N fastest points (default 1)")
    sp.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    sp.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    db = sub.add_parser("device-bundle", help="write .device/ (wheels, data, plan) and print the one command "
                                              "that runs the points on the GPU machine (default: a07-paper)")
    db.add_argument("chapter", nargs="?", default=None, help="chapter (default: a07 at the paper profile)")
    db.add_argument("-p", "--param", action="append", metavar="KEY=V1,V2", dest="params",
                    help="an axis, as for sweep (default with no chapter: seed=0, device='cuda')")
    db.add_argument("--profile", default=None, help="parameter profile of every point")
    db.add_argument("--name", default=None, help="sweep name (default: chapter prefix)")
    db.add_argument("--python", default="3.12", help="Python of the wheels (default 3.12, the image's)")
    db.add_argument("--state-dir", default=None, help="the machine's folder for results and checkpoints "
                                                      "(default /tmp/ntpbook-device)")
    db.add_argument("--budget", type=_seconds, default=None,
                    help="seconds the runner may use before writing its archive (default 540)")

    ad = sub.add_parser("adopt", help="publish the sweep a device command returned (DIR holds NAME.tar.xz) "
                                      "to results/sweeps/NAME/, if its code is the current code")
    ad.add_argument("dir", type=Path, help="folder with the returned files")
    ad.add_argument("--force", action="store_true",
                    help="replace a committed all-ok table even if this sweep has failed points")

    br = sub.add_parser("browser", help="check the built HTML in headless Chromium")
    br.add_argument("--screenshot", default="a01", help="chapter (prefix) to screenshot")
    br.add_argument("--chromium", default=None, help="chromium binary (default: chromium on PATH)")
    return ap


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if problem := seconds_problem(value):
        raise argparse.ArgumentTypeError(problem)
    return value


def main(argv: list[str] | None = None) -> int:
    """The command line; SIGTERM and SIGHUP are handled like Ctrl-C while it runs (main thread only)."""
    saved = {}
    if threading.current_thread() is threading.main_thread():
        saved = {sig: signal.signal(sig, _terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _main(argv)
    except KeyboardInterrupt as err:
        interrupt_all()
        say("terminated" if isinstance(err, Terminated) else "interrupted (Ctrl-C)")
        return _exit_code(err)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.root is not None and not (args.root / "notebooks").is_dir():
        say(f"error: --root {args.root}: no project there (no folder {args.root / 'notebooks'})")
        return EXIT_USAGE
    project = Project(args.root.resolve()) if args.root else Project.default()
    if args.command == "build":
        try:
            overrides = parse_overrides(args.params)
        except ParameterError as err:
            say(f"error: {err}")
            return EXIT_USAGE
        if args.jobs < 1:
            say("error: --jobs must be >= 1")
            return EXIT_USAGE
        return build(project, profile=args.profile, only=args.only, overrides=overrides, force=args.force,
                     jobs=args.jobs, make_html=args.html, partial=args.partial, timeout=args.timeout,
                     allow_cpu=args.allow_cpu)
    if args.command == "list":
        return list_chapters(project)
    if args.command == "status":
        if not project.toc_path.exists():
            say(f"error: no table of contents at {project.toc_path}")
            return EXIT_USAGE
        _write_pages(project, KeyCalculator(project), set())
        say(f"wrote {project.status_page}")
        if args.readme:
            from ntputils.book.pages import write_readme_headline

            try:
                write_readme_headline(project)
            except ValueError as err:
                say(f"error: {err}")
                return EXIT_USAGE
            say(f"wrote the headline into {project.root / 'README.md'}")
        return EXIT_OK
    if args.command == "sweep":
        from ntputils.book.sweep import sweep_command

        return sweep_command(project, args.chapter, args.params, profile=args.profile, name=args.name,
                             workers=args.workers, scheduler=args.scheduler, slurm=args.slurm,
                             retry_failed=args.retry_failed, connect_timeout=args.connect_timeout,
                             progress=args.progress, allow_cpu=args.allow_cpu)
    if args.command == "sweep-table":
        from ntputils.book.sweep_table import table_command

        return table_command(project, args.name, args.format, args.publish, args.force)
    if args.command == "sweep-report":
        from ntputils.book.sweep_report import report_command

        return report_command(project, args.name, args.out)
    if args.command == "geometry":
        from ntputils.book.geometry import geometry_command

        return geometry_command(project, args.model, args.corpus, tokenizer=args.tokenizer,
                                context_lengths=args.context_lengths, contexts=args.contexts,
                                documents=args.documents, words=args.words, device=args.device,
                                params=args.params, out=args.out)
    if args.command == "sweep-status":
        from ntputils.book.sweep_status import status_command

        return status_command(project, args.name)
    if args.command == "recertify":
        from ntputils.book.recertify import recertify_command

        return recertify_command(project, args.names, all_tables=args.all_tables, extra=args.points,
                                 workers=args.workers, force=args.force, progress=args.progress)
    if args.command == "spread":
        from ntputils.book.spread import spread_command

        return spread_command(project, args.names, points=args.points, workers=args.workers,
                              progress=args.progress)
    if args.command == "device-bundle":
        from ntputils.book.device_bundle import bundle_command

        return bundle_command(project, args.chapter, args.params, profile=args.profile, name=args.name,
                              python_version=args.python, state_dir=args.state_dir, budget_s=args.budget)
    if args.command == "adopt":
        from ntputils.book.adopt import adopt_command

        return adopt_command(project, args.dir, force=args.force)
    if args.command == "browser":  # a test of the built book, kept with the tests: tests/browser_check.py
        import subprocess
        import sys

        if not (project.root / "tests" / "browser_check.py").is_file():
            print(f"error: no tests/browser_check.py under {project.root} (the check needs a checkout)")
            return EXIT_USAGE
        cmd = [sys.executable, "-m", "tests.browser_check", "--screenshot", args.screenshot or "",
               *(["--chromium", args.chromium] if args.chromium else [])]
        return subprocess.run(cmd, cwd=project.root, check=False).returncode
    return EXIT_USAGE  # pragma: no cover
