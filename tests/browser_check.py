"""Browser test of the built book: Playwright drives Debian's headless Chromium over every page (``file://``).

Per page: images loaded, MathJax typeset without errors, no traceback shown, no http(s) request, no JavaScript
exception, not stale (:func:`staleness`), :mod:`tests.page_lint` passed, and the first figure opens at
full size (``book/_static/figure_zoom.js``). Screenshot of one chapter: ``_build/screenshots/<chapter>.png``.

A test of the built book, so it lives with the tests: ``make browser-test`` (``python -m tests.browser_check
--screenshot a01`` from the checkout's root; ``python -m ntputils.book browser`` runs the same).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ntputils.book.keys import KeyCalculator
from ntputils.book.project import Project
from ntputils.reports.png import png_dpi
from tests.page_lint import lint_page, path_needles

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = ["--disable-gpu", "--disable-quic"]  # on top of Playwright's own (headless, no sandbox, ...)
VIEWPORT = {"width": 1280, "height": 1600}
#: a phone: the index page and one chapter are checked at this width too (wide things scroll with a cue)
PHONE_VIEWPORT = {"width": 390, "height": 844}
SCREENSHOT_CLIP = {"x": 0, "y": 0, "width": 100_000, "height": 12_000}  # trimmed to the page's size
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "_panels_static"}
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
PAGE_TIMEOUT_S = 60.0
META_REFRESH = re.compile(r'<meta[^>]+http-equiv="refresh"[^>]+content="\d+;\s*url=([^"]+)"', re.IGNORECASE)
NETWORK = re.compile(r"^https?://")

# Runs inside each page after the load event; returns a JSON-able report.
CHECK_JS = r"""
(async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, sleep(20000)]);
  }
  const root = document.querySelector('article') || document.querySelector('main') || document.body;
  const imgs = [...root.querySelectorAll('img')];
  await Promise.race([
    Promise.all(imgs.map((i) => i.complete ? null : new Promise((r) => { i.onload = r; i.onerror = r; }))),
    sleep(20000),
  ]);
  const height = document.documentElement.scrollHeight;  // as the page opens, its folds closed
  // every folded <details> opened, as a reader's click opens it: what it holds is checked as then shown
  // (book/_static/scroll_cue.js recomputes its cues on the "toggle" events, dispatched as tasks)
  root.querySelectorAll('details:not([open])').forEach((d) => { d.open = true; });
  await sleep(50);
  // two frames: book/_static/scroll_cue.js has run after the last layout change
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const text = (e, n) => (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, n);
  const maths = [...document.querySelectorAll('span.math, div.math')];
  const report = {
    title: document.title,
    images: imgs.map((i) => ({src: i.getAttribute('src') || '', loaded: i.complete && i.naturalWidth > 0})),
    math: maths.length,
    untypeset: maths.filter((e) => !e.querySelector('mjx-container')).map((e) => text(e, 80)),
    mjx: document.querySelectorAll('mjx-container').length,
    merror: [...document.querySelectorAll('mjx-merror')].map((e) => text(e, 120)),
    errors: [...root.querySelectorAll('.output.traceback, .output.error, .system-message, .problematic')]
      .map((e) => e.className + ': ' + text(e, 200)),
    traceback_outputs: [...root.querySelectorAll('.cell_output, .output')]
      .filter((e) => /Traceback \(most recent call last\)/.test(e.textContent || ''))
      .map((e) => text(e, 200)),
    stderr_outputs: root.querySelectorAll('.output.stderr').length,
    // facts for tests/page_lint.py: text outputs, figures, wide things and the visible text
    outputs: [...root.querySelectorAll('.cell_output')].flatMap((c, index) =>
      [...c.querySelectorAll('.output.text_plain, .output.stream')].map((o) =>
        ({index, result: o.classList.contains('text_plain'),
          text: (o.querySelector('pre') || o).textContent.slice(0, 1e4)}))),  // pre: not the copy button
    figures: [...root.querySelectorAll('.cell_output img, figure img')].map((i, index) => {
      const fig = i.closest('figure'), cap = fig && fig.querySelector('figcaption');
      return {index, src: i.getAttribute('src') || '', alt: i.getAttribute('alt'), natural: i.naturalWidth,
              rendered: i.getBoundingClientRect().width,
              caption: fig ? (cap ? text(cap.querySelector('.caption-text') || cap, 200) : '') : null};
    }),
    // wide things (book/_static/scroll_cue.js): each display equation, table, figure and output block whose
    // content does not fit its box: clipped (cut, no scrolling), scrolled with or without a visible cue, or
    // sticking out of the page column
    overflow: [['equation', "mjx-container[display='true'], div.math mjx-container"], ['table', 'table'],
               ['figure', '.cell_output img, figure img'], ['output', '.cell_output pre']]
      .flatMap(([kind, selector]) => [...new Set(root.querySelectorAll(selector))].map((el, index) => {
        const name = kind === 'figure' ? (el.getAttribute('src') || '').split('/').pop().slice(0, 24)
                                       : text(el, 60);
        const edge = (e) => e.getBoundingClientRect().left + e.clientLeft + e.clientWidth;
        const cued = (s) => s.classList.contains('ntp-overflows') && [s, s.parentElement].some((e) => {
          const cue = e && e.nextElementSibling;
          return cue && cue.classList.contains('ntp-scroll-cue') && cue.offsetHeight > 0;
        });
        const box = el.getBoundingClientRect(), right = box.left + Math.max(box.width, el.scrollWidth);
        for (let a = el; a && a !== root && a !== document.body; a = a.parentElement) {
          const overflowX = getComputedStyle(a).overflowX;
          if (overflowX === 'visible') continue;
          const inner = a === el ? a.scrollWidth > a.clientWidth + 1 : right > edge(a) + 1;
          if (!inner) continue;
          const state = !/auto|scroll/.test(overflowX) ? 'clipped' : cued(a) ? 'cued' : 'uncued';
          return {kind, index, name, state, width: Math.round(right - a.getBoundingClientRect().left),
                  box: a.clientWidth};
        }
        const page = root.getBoundingClientRect();
        return right > page.right + 1
          ? {kind, index, name, state: 'page', width: Math.round(right - page.left), box: root.clientWidth}
          : null;
      })).filter((x) => x),
    height,
    text: document.body.innerText,
  };
  // book/_static/figure_zoom.js: the first figure opens at its natural size on click and Escape closes it
  const first = root.querySelector('.cell_output img');
  if (first) {
    first.click();
    const view = document.querySelector('.figure-zoom:not([hidden])');
    const big = view && view.querySelector('img');
    if (big && !big.complete) {
      await Promise.race([new Promise((r) => { big.onload = r; big.onerror = r; }), sleep(5000)]);
    }
    report.zoom = {opened: !!big, natural: big ? big.naturalWidth : 0,
                   shown: big ? big.getBoundingClientRect().width : 0};
    document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}));
    report.zoom.closed = !document.querySelector('.figure-zoom:not([hidden])');
  }
  return report;
})()
"""


class ChromiumError(RuntimeError):
    """Chromium (or Playwright) is missing, could not be started or stopped answering."""


#: report lists -> the label each item is shown with
PROBLEM_LABELS = {"merror": "MathJax error", "errors": "error shown",
                  "traceback_outputs": "traceback in output", "external": "network request",
                  "js_exceptions": "JavaScript exception", "failed_loads": "resource failed to load"}


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium binary: ``explicit``, ``$CHROMIUM`` or the first of the usual names on PATH."""
    for name in (explicit, os.environ.get("CHROMIUM"), *CHROMIUM_NAMES):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    raise ChromiumError("no Chromium found; install it (Debian: apt-get install -y chromium) or set CHROMIUM")


def page_loader(context: Any) -> tuple[Any, Callable[[str], dict[str, Any]]]:
    """One tab of ``context`` (reused: a new tab per page doubles the time) and ``load(url)``, which navigates
    it, waits for the load event, runs :data:`CHECK_JS` and adds the http(s) requests (blocked), the other
    failed loads and the uncaught JavaScript exceptions of that page to the report."""
    tab = context.new_page()
    seen: dict[str, list[str]] = {}

    def block(route: Any) -> None:
        seen["external"].append(route.request.url)
        route.abort()

    def failure(request: Any) -> None:  # blocked ones are network requests; aborted = cancelled
        if not NETWORK.match(request.url) and request.failure != "net::ERR_ABORTED":
            seen["failed_loads"].append(f"{request.failure} ({request.resource_type})")

    tab.route(NETWORK, block)
    tab.on("requestfailed", failure)
    tab.on("pageerror", lambda err: seen["js_exceptions"].append(err.stack or str(err)))

    def load(url: str) -> dict[str, Any]:
        seen.update(external=[], failed_loads=[], js_exceptions=[])
        tab.goto(url, wait_until="load")
        return {**tab.evaluate(CHECK_JS), **seen, "external": sorted(set(seen["external"]))}

    return tab, load


# ------------------------------------------------------------------------- expectations


@dataclass
class PageResult:
    page: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    images: int = 0
    mjx: int = 0
    width: int = VIEWPORT["width"]  # the viewport it was checked at
    height: int = 0  # the page's height there, in CSS px


def html_pages(html_dir: Path) -> list[Path]:
    """Every built ``*.html`` page (assets folders left out)."""
    return [path for path in sorted(html_dir.rglob("*.html"))
            if not set(path.relative_to(html_dir).parts[:-1]) & SKIP_DIRS]


def notebook_expectations(nb_path: Path) -> tuple[int, bool]:
    """(number of images shown: image outputs and ``<img>`` of HTML outputs, whether the code plots with
    matplotlib) of an executed notebook."""
    cells = [c for c in json.loads(nb_path.read_text()).get("cells", []) if c.get("cell_type") == "code"]
    plots = any("plt." in src or "matplotlib" in src for src in ("".join(c.get("source", [])) for c in cells))
    hidden = {"remove-output", "remove-cell"}
    shown = [c for c in cells if not hidden & set(c.get("metadata", {}).get("tags", []))]
    outputs = [o for c in shown for o in c.get("outputs", [])]
    images = sum(any(m in o.get("data", {}) for m in IMAGE_MIMES) for o in outputs)
    images += sum("".join(o.get("data", {}).get("text/html", "")).count("<img ") for o in outputs)
    return images, plots


def _nonempty_file(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0


def image_dpi(page: Path, src: str) -> float | None:
    """The dpi recorded in the PNG ``src`` of ``page`` (a file beside it or a data URI), or None."""
    parsed = urlparse(src)
    if parsed.scheme == "data":
        head, _, body = src.partition(",")
        return png_dpi(base64.b64decode(body)) if head.endswith(";base64") else None
    path = (page.parent / unquote(parsed.path)).resolve()
    return png_dpi(path.read_bytes()[:4096]) if not parsed.scheme and path.is_file() else None


def zoom_problems(zoom: dict[str, Any] | None) -> list[str]:
    """What is wrong with the full-size view of a page's first figure (``book/_static/figure_zoom.js``):
    it must open on click at the image's natural width (where a 10 pt label is 13.9 px at 100 dpi) and
    close on Escape. ``None``: the page has no figure."""
    if zoom is None:
        return []
    if not zoom["opened"]:
        return ["figure 1 does not open at full size on click (book/_static/figure_zoom.js not loaded?)"]
    out = []
    if abs(zoom["shown"] - zoom["natural"]) > 1:
        out.append(f"figure 1 opens at {zoom['shown']:.0f} px, not at its natural {zoom['natural']} px")
    if not zoom["closed"]:
        out.append("figure 1's full-size view does not close with Escape")
    return out


def evaluate(page: Path, report: dict[str, Any], notebook: Path | None,
             needles: Iterable[str] = ()) -> PageResult:
    """Turn one page report into problems (failures) and notes; ``needles``: the build machine's paths."""
    res = PageResult(page, images=len(report["images"]), mjx=report["mjx"], height=report.get("height", 0))
    res.problems += lint_page(report, needles, lambda src: image_dpi(page, src))
    for img in report["images"]:
        src, parsed = img["src"], urlparse(img["src"])
        if parsed.scheme in ("http", "https"):
            res.problems.append(f"image from the network: {src}")
        elif parsed.scheme != "data" and not _nonempty_file((page.parent / unquote(parsed.path)).resolve()):
            res.problems.append(f"image file missing: {src}")
        elif not img["loaded"]:
            res.problems.append(f"image did not load: {src}")
    res.problems += zoom_problems(report.get("zoom"))
    if report["untypeset"]:
        first = report["untypeset"][0]
        res.problems.append(f"{len(report['untypeset'])} math element(s) not typeset, e.g. {first!r}")
    if report["math"] and not report["mjx"]:
        res.problems.append("page has math but MathJax typeset nothing")
    for key, label in PROBLEM_LABELS.items():
        res.problems += [f"{label}: {item}" for item in report[key]]
    if report["stderr_outputs"]:
        res.notes.append(f"{report['stderr_outputs']} stderr output(s) (warnings/progress) shown")
    if notebook is not None and notebook.exists():
        expected, plots = notebook_expectations(notebook)
        if plots and expected == 0:
            res.problems.append("the chapter plots but its notebook has no image output (MPLBACKEND set?)")
        if res.images < expected:
            res.problems.append(f"{res.images} image(s) on the page but the notebook has "
                                f"{expected} image output(s)")
    return res


def is_not_built_page(text: str) -> bool:
    """Whether the HTML ``text`` is a chapter's "not built in this build" placeholder page."""
    from ntputils.book.html import NOT_BUILT_CLASS

    return NOT_BUILT_CLASS in text


def staleness(project: Project, page: Path, keys) -> list[str]:
    """Why the built chapter ``page`` is stale (empty if it is not a chapter page or is fine).

    ``keys`` is a :class:`ntputils.book.keys.KeyCalculator` of ``project``.
    """
    from ntputils.book.execute import read_meta, run_id

    rel = page.relative_to(project.html_dir)
    book_rel = project.book_dir.relative_to(project.root)
    if rel.parent != book_rel:
        return []
    chapters = {c.name: c for c in project.chapters()}
    chapter = chapters.get(page.stem)
    if chapter is None:
        return []
    nb = project.executed(chapter)
    text = page.read_text(errors="replace")
    if is_not_built_page(text):  # a placeholder: it shows no result, so it is stale only once one exists
        return [f"stale page: 'not built' but {nb.relative_to(project.root)} is current now; rebuild the "
                "HTML"] if keys.renderable(chapter) else []
    if not nb.exists():
        return [f"orphan page: {nb.relative_to(project.root)} does not exist"]
    meta = read_meta(nb)
    problems = []
    if not keys.renderable(chapter):
        problems.append(f"stale page: {nb.relative_to(project.root)} is not current (source, parameters, "
                        "ntputils, pins or data changed since it ran)")
    if run_id(meta) not in text:
        problems.append(f"stale page: it does not show the run of {nb.relative_to(project.root)} "
                        f"({run_id(meta)}); rebuild the HTML")
    if meta.get("latest_failure") and "Latest run failed" not in text:
        problems.append("the latest run failed but the page has no 'latest run failed' banner")
    return problems


def check_book(project: Project, screenshot: str | None = "a01", chromium: str | None = None,
               out=print) -> tuple[list[PageResult], Path | None]:
    """Load every page of ``_build/html``; return the per-page results and the screenshot path."""
    html_dir, book_rel = project.html_dir, project.book_dir.relative_to(project.root)
    pages = html_pages(html_dir)
    if not pages:
        raise ChromiumError(f"no HTML pages under {html_dir}; run `make book` first")
    candidates = sorted((html_dir / book_rel).glob(f"{screenshot}*.html")) if screenshot else [None]
    if not candidates:
        raise ChromiumError(f"no built page for chapter {screenshot!r} under {html_dir / book_rel}")
    shot_page, shot_path = candidates[0], project.build_dir / "screenshots" / f"{screenshot}.png"
    binary = find_chromium(chromium)
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        raise ChromiumError("Playwright is not installed: pip install -e '.[dev]'") from err

    keys, results = KeyCalculator(project), []
    needles = path_needles(str(project.root), os.path.expanduser("~"))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport=VIEWPORT)
            context.set_default_timeout(PAGE_TIMEOUT_S * 1000)
            tab, load = page_loader(context)
            for page in pages:
                rel = page.relative_to(html_dir)
                redirect = META_REFRESH.search(page.read_text(errors="replace")[:4000])
                if redirect:  # e.g. index.html -> book/intro.html: the target is checked as its own page
                    target = (page.parent / unquote(urlparse(redirect.group(1)).path)).resolve()
                    results.append(PageResult(page, problems=[] if target.is_file() else
                                              [f"redirect target missing: {target}"]))
                    out(f"[{'ok  ' if target.is_file() else 'FAIL'}] {rel}: redirect to {redirect.group(1)}")
                    continue
                nb = project.root / rel.with_suffix(".ipynb")
                shown = nb.exists() and not is_not_built_page(page.read_text(errors="replace"))
                res = evaluate(page, load(page.as_uri()), nb if shown else None, needles)
                res.problems += staleness(project, page, keys)
                results.append(res)
                out(f"[{'ok  ' if not res.problems else 'FAIL'}] {rel}: {res.images} image(s), {res.mjx} "
                    "typeset math" + (f"; {'; '.join(res.notes)}" if res.notes else ""))
                for p in res.problems:
                    out(f"         - {p}")
                if page == shot_page:
                    tab.screenshot(path=shot_path, full_page=True, clip=SCREENSHOT_CLIP)
                    out(f"         screenshot: {shot_path}")
            phone = browser.new_context(viewport=PHONE_VIEWPORT)
            phone.set_default_timeout(PAGE_TIMEOUT_S * 1000)
            _, load = page_loader(phone)
            for page in phone_pages(project, pages, shot_page):
                rel = page.relative_to(html_dir)
                nb = project.root / rel.with_suffix(".ipynb")
                res = evaluate(page, load(page.as_uri()), nb if nb.exists() else None, needles)
                res.width = PHONE_VIEWPORT["width"]
                results.append(res)
                out(f"[{'ok  ' if not res.problems else 'FAIL'}] {rel} at {res.width} px: {res.images} "
                    f"image(s), {res.mjx} typeset math")
                for p in res.problems:
                    out(f"         - {p}")
            browser.close()
    except PlaywrightError as err:
        raise ChromiumError(f"Chromium via Playwright: {err}") from err
    tallest = tallest_chapter(project, results)
    if tallest:
        out(f"tallest chapter page: {tallest.page.relative_to(html_dir)}, {tallest.height} px "
            f"at {tallest.width} px")
    return results, shot_path if screenshot else None


def phone_pages(project: Project, pages: list[Path], chapter: Path | None) -> list[Path]:
    """The pages checked at :data:`PHONE_VIEWPORT` too: the page ``index.html`` leads to and ``chapter``
    (the screenshot's chapter; else the first chapter page)."""
    html_dir, out = project.html_dir, []
    index = html_dir / "index.html"
    if index.is_file():
        redirect = META_REFRESH.search(index.read_text(errors="replace")[:4000])
        target = (index.parent / unquote(urlparse(redirect.group(1)).path)).resolve() if redirect else index
        if target.is_file():
            out.append(target)
    if chapter is None:
        chapter = next((p for p in pages if is_chapter(project, p)), None)
    if chapter is not None and chapter.resolve() not in out:
        out.append(chapter.resolve())
    return [p for p in pages if p.resolve() in out]


def is_chapter(project: Project, page: Path) -> bool:
    """Whether ``page`` is a chapter's page (a notebook source of that name, or an executed notebook beside
    the page's path in the project)."""
    rel = page.relative_to(project.html_dir)
    if rel.parent != project.book_dir.relative_to(project.root):
        return False
    return (page.stem in {c.name for c in project.chapters()}
            or (project.root / rel.with_suffix(".ipynb")).is_file())


def tallest_chapter(project: Project, results: list[PageResult]) -> PageResult | None:
    """The tallest chapter page at :data:`VIEWPORT`'s width (None: no chapter page was checked)."""
    chapters = [r for r in results
                if r.width == VIEWPORT["width"] and r.height and is_chapter(project, r.page)]
    return max(chapters, key=lambda r: r.height, default=None)


def run_browser_check(project: Project, screenshot: str | None = "a01", chromium: str | None = None) -> int:
    """CLI entry: 0 when every page passes, 1 otherwise."""
    try:
        results, shot = check_book(project, screenshot, chromium)
    except ChromiumError as err:
        print(f"browser check error: {err}")
        return 1
    bad = [r for r in results if r.problems]
    print(f"browser check: {len(results)} page(s), {len(bad)} with problems"
          + (f"; screenshot {shot}" if shot else ""))
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tests.browser_check", description=__doc__.split("\n")[0])
    ap.add_argument("--screenshot", default="a01", help="chapter prefix to screenshot ('' for none)")
    ap.add_argument("--chromium", default=None, help="path of the Chromium binary (default: found on PATH)")
    args = ap.parse_args(argv)
    return run_browser_check(Project.default(), screenshot=args.screenshot or None, chromium=args.chromium)


if __name__ == "__main__":
    raise SystemExit(main())
