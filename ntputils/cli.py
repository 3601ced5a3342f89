"""Command line: ``python -m ntputils.book COMMAND`` (``ntpbook COMMAND``); ``--help`` lists the commands.

One parser for every job, each handed to the package that does it: building the book
(:mod:`ntputils.book.build`), sweeps and committed tables (:mod:`ntputils.sweeps`), the GPU machine
(:mod:`ntputils.gpu`). ``ntpbook`` and ``python -m ntputils.book`` both call :func:`main`. Exit codes: as
:mod:`ntputils.book.build` says (0 ok, 1 failed, 2 bad usage, 3 busy, 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
A reader that goes away (``ntpbook sweep-table NAME | head``) ends any command quietly with 0, in one
place: :func:`main`.
"""
from __future__ import annotations

import argparse
import contextlib
import select
import signal
import sys
import threading
from pathlib import Path

from ntputils.book.build import (
    EXIT_OK,
    EXIT_USAGE,
    Terminated,
    build,
    exit_code,
    list_chapters,
    terminate,
    write_status_pages,
)
from ntputils.book.execute import interrupt_all
from ntputils.book.keys import KeyCalculator
from ntputils.book.params import parse_overrides
from ntputils.book.project import Project, say, seconds_problem
from ntputils.chapter import ParameterError


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
    st.add_argument("--diff", action="store_true",
                    help="what differs from the committed results/sweeps/NAME/table.csv: rows in one only, "
                         "values bit-identical, the largest moves, outcomes flipped (writes nothing)")

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


def stdout_reader_gone() -> bool:
    """Whether ``sys.stdout`` is a pipe whose reading end is closed (``POLLERR`` on its descriptor), as
    after ``ntpbook sweep-table NAME | head`` once ``head`` has exited. False for a terminal, a file, an
    open pipe, a stdout without a descriptor, or a platform without ``poll``."""
    if not hasattr(select, "poll"):
        return False
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def main(argv: list[str] | None = None) -> int:
    """The command line; SIGTERM and SIGHUP are handled like Ctrl-C while it runs (main thread only).

    A :class:`BrokenPipeError` ends the command with 0 when stdout's reader has gone (nothing is left to
    say to anyone); stdout is then closed, so the interpreter's last flush has nothing to complain about.
    Any other broken pipe (a worker's, a socket's) is raised as it is."""
    saved = {}
    if threading.current_thread() is threading.main_thread():
        saved = {sig: signal.signal(sig, terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        code = _main(argv)
        if sys.stdout is not None:  # None when started with stdout closed (``ntpbook list >&-``)
            sys.stdout.flush()  # inside the try: a last buffered line to a gone reader fails here
        return code
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        with contextlib.suppress(OSError):
            sys.stdout.close()
        return EXIT_OK
    except KeyboardInterrupt as err:
        interrupt_all()
        say("terminated" if isinstance(err, Terminated) else "interrupted (Ctrl-C)")
        return exit_code(err)
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
        write_status_pages(project, KeyCalculator(project), set())
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
        from ntputils.sweeps.sweep import sweep_command

        return sweep_command(project, args.chapter, args.params, profile=args.profile, name=args.name,
                             workers=args.workers, scheduler=args.scheduler, slurm=args.slurm,
                             retry_failed=args.retry_failed, connect_timeout=args.connect_timeout,
                             progress=args.progress, allow_cpu=args.allow_cpu)
    if args.command == "sweep-table":
        from ntputils.sweeps.table import table_command

        if args.diff and (args.publish or args.force or args.format != "csv"):
            print("error: --diff prints a comparison and writes nothing; run --publish (or --format) on its "
                  "own after it")
            return 2
        if args.diff:
            from ntputils.sweeps.compare import diff_command

            return diff_command(project, args.name)
        return table_command(project, args.name, args.format, args.publish, args.force)
    if args.command == "sweep-report":
        from ntputils.sweeps.report import report_command

        return report_command(project, args.name, args.out)
    if args.command == "geometry":
        from ntputils.book.geometry import geometry_command

        return geometry_command(project, args.model, args.corpus, tokenizer=args.tokenizer,
                                context_lengths=args.context_lengths, contexts=args.contexts,
                                documents=args.documents, words=args.words, device=args.device,
                                params=args.params, out=args.out)
    if args.command == "sweep-status":
        from ntputils.sweeps.status import status_command

        return status_command(project, args.name)
    if args.command == "recertify":
        from ntputils.sweeps.recertify import recertify_command

        return recertify_command(project, args.names, all_tables=args.all_tables, extra=args.points,
                                 workers=args.workers, force=args.force, progress=args.progress)
    if args.command == "spread":
        from ntputils.sweeps.spread import spread_command

        return spread_command(project, args.names, points=args.points, workers=args.workers,
                              progress=args.progress)
    if args.command == "device-bundle":
        from ntputils.gpu.bundle import bundle_command

        return bundle_command(project, args.chapter, args.params, profile=args.profile, name=args.name,
                              python_version=args.python, state_dir=args.state_dir, budget_s=args.budget)
    if args.command == "adopt":
        from ntputils.gpu.adopt import adopt_command

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
