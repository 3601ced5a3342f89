"""Browser test of the built book: headless Chromium loads every page from ``file://`` (no network).

Per page it asserts that
  * every ``<img>`` in the article resolves to an existing file and actually loaded (``naturalWidth > 0``);
    a chapter page shows at least as many images as its executed notebook has image outputs, and a
    chapter that plots has image outputs at all (the ``MPLBACKEND`` trap drops figures silently);
  * every math element (``span.math`` / ``div.math``) was typeset by the bundled MathJax
    (contains an ``<mjx-container>``) and MathJax reported no TeX error (``<mjx-merror>``);
  * no error is shown: no error output (``.output.traceback``/``.output.error``), no docutils
    ``system-message``/``problematic`` node, no cell output containing
    ``Traceback (most recent call last)`` (prose is not inspected, so text *about* tracebacks is fine);
  * the page requests nothing over http(s) and has no uncaught JavaScript exception;
  * a chapter page is not stale (:func:`staleness`): its notebook exists and is current (or is the last
    good run of a chapter whose latest run failed, and then the page shows the "latest run failed"
    banner), and the page shows that notebook's run (its run id), not an older build.
It saves a screenshot of one chapter to ``_build/screenshots/<chapter>.png``.

Chromium is driven through the DevTools protocol over ``--remote-debugging-pipe`` (file descriptors
3/4, NUL-separated JSON), so no extra Python package is needed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ntputils.book.project import Project

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-features=NetworkTimeServiceQuerying", "--disable-dev-shm-usage", "--hide-scrollbars",
    "--mute-audio", "--remote-debugging-pipe",
)
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "_panels_static"}
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
PAGE_TIMEOUT_S = 60.0
META_REFRESH = re.compile(r'<meta[^>]+http-equiv="refresh"[^>]+content="\d+;\s*url=([^"]+)"', re.IGNORECASE)

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
  const text = (e, n) => (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, n);
  const maths = [...document.querySelectorAll('span.math, div.math')];
  return {
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
  };
})()
"""


class ChromiumError(RuntimeError):
    """Chromium could not be started or stopped answering."""


#: report lists -> the label each item is shown with
PROBLEM_LABELS = {
    "merror": "MathJax error",
    "errors": "error shown",
    "traceback_outputs": "traceback in output",
    "external": "network request",
    "js_exceptions": "JavaScript exception",
    "failed_loads": "resource failed to load",
}


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium binary: ``explicit``, ``$CHROMIUM`` or the first of the usual names on PATH."""
    for name in (explicit, os.environ.get("CHROMIUM"), *CHROMIUM_NAMES):
        if name and shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    raise ChromiumError("no Chromium found; install it (Debian: apt-get install -y chromium) or set CHROMIUM")


class Browser:
    """A headless Chromium driven over the DevTools pipe (one page target, flattened session)."""

    def __init__(self, binary: str, width: int = 1280, height: int = 1600):
        self.profile = tempfile.mkdtemp(prefix="ntpbook-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands -> Chromium reads fd 3
        self._res_r, res_w = os.pipe()  # Chromium writes fd 4 -> we read
        argv = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]
        shell = f"exec {shlex.join(argv)} 3<&{cmd_r} 4>&{res_w}"
        self.log = open(Path(self.profile) / "chromium.log", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(["bash", "-c", shell], pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        os.close(cmd_r)
        os.close(res_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    # --------------------------------------------------------------------- protocol
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.time()
            if left <= 0:
                raise ChromiumError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if ready:
                chunk = os.read(self._res_r, 1 << 20)
                if not chunk:
                    raise ChromiumError(f"Chromium exited (see {self.log.name})")
                self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False,
             timeout: float = PAGE_TIMEOUT_S) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = PAGE_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.time() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    # --------------------------------------------------------------------- pages
    def load(self, url: str) -> dict[str, Any]:
        """Navigate, wait for the load event, run :data:`CHECK_JS`; add network/JS problems."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")
        result = self.call("Runtime.evaluate", {"expression": CHECK_JS, "awaitPromise": True,
                                                "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise ChromiumError(f"check script failed on {url}: {result['exceptionDetails']}")
        report = result["result"]["value"]
        requests = [e["params"]["request"]["url"] for e in self.events
                    if e.get("method") == "Network.requestWillBeSent"]
        report["external"] = sorted({u for u in requests if u.startswith(("http://", "https://"))})
        report["failed_loads"] = [
            f"{e['params'].get('errorText')} ({e['params'].get('type')})" for e in self.events
            if e.get("method") == "Network.loadingFailed" and not e["params"].get("canceled")
        ]
        report["js_exceptions"] = [
            e["params"]["exceptionDetails"].get("exception", {}).get("description")
            or e["params"]["exceptionDetails"].get("text") for e in self.events
            if e.get("method") == "Runtime.exceptionThrown"
        ]
        return report

    def screenshot(self, path: Path, max_height: int = 12000) -> None:
        """A PNG of the whole page (up to ``max_height`` CSS pixels tall)."""
        metrics = self.call("Page.getLayoutMetrics", session=True)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
        params = {"format": "png", "clip": clip, "captureBeyondViewport": True}
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except (ChromiumError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._res_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------- expectations


@dataclass
class PageResult:
    page: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    images: int = 0
    mjx: int = 0


def html_pages(html_dir: Path) -> list[Path]:
    """Every built ``*.html`` page (assets folders left out)."""
    pages = []
    for path in sorted(html_dir.rglob("*.html")):
        rel = path.relative_to(html_dir)
        if not (set(rel.parts[:-1]) & SKIP_DIRS):
            pages.append(path)
    return pages


def notebook_expectations(nb_path: Path) -> tuple[int, bool]:
    """(number of image outputs shown, whether the code plots with matplotlib) of an executed notebook."""
    nb = json.loads(nb_path.read_text())
    images = 0
    plots = False
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        plots = plots or "plt." in source or "matplotlib" in source
        tags = cell.get("metadata", {}).get("tags", [])
        if "remove-output" in tags or "remove-cell" in tags:
            continue
        for out in cell.get("outputs", []):
            if any(m in out.get("data", {}) for m in IMAGE_MIMES):
                images += 1
    return images, plots


def evaluate(page: Path, report: dict[str, Any], notebook: Path | None) -> PageResult:
    """Turn one page report into problems (failures) and notes."""
    res = PageResult(page, images=len(report["images"]), mjx=report["mjx"])
    for img in report["images"]:
        src = img["src"]
        parsed = urlparse(src)
        if parsed.scheme in ("http", "https"):
            res.problems.append(f"image from the network: {src}")
            continue
        if parsed.scheme == "data":
            target_ok = True
        else:
            target = (page.parent / unquote(parsed.path)).resolve()
            target_ok = target.is_file() and target.stat().st_size > 0
            if not target_ok:
                res.problems.append(f"image file missing: {src}")
        if target_ok and not img["loaded"]:
            res.problems.append(f"image did not load: {src}")
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


def staleness(project: Project, page: Path, keys) -> list[str]:
    """Why the built chapter ``page`` is stale (empty if it is not a chapter page or is fine).

    ``keys`` is a :class:`ntputils.book.cli.KeyCalculator` of ``project``.
    """
    from ntputils.book.execute import read_meta, run_id
    from ntputils.book.project import Chapter

    rel = page.relative_to(project.html_dir)
    book_rel = project.book_dir.relative_to(project.root)
    if rel.parent != book_rel:
        return []
    chapters = {c.name: c for c in project.chapters()}
    chapter = chapters.get(page.stem)
    if chapter is None:
        return []
    nb = project.executed(Chapter(page.stem, Path()))
    if not nb.exists():
        return [f"orphan page: {nb.relative_to(project.root)} does not exist"]
    meta = read_meta(nb)
    text = page.read_text(errors="replace")
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
    html_dir = project.html_dir
    pages = html_pages(html_dir)
    if not pages:
        raise ChromiumError(f"no HTML pages under {html_dir}; run `make book` first")
    shot_page = None
    if screenshot:
        book_rel = project.book_dir.relative_to(project.root)
        candidates = sorted((html_dir / book_rel).glob(f"{screenshot}*.html"))
        if not candidates:
            raise ChromiumError(f"no built page for chapter {screenshot!r} under {html_dir / book_rel}")
        shot_page = candidates[0]
    shot_path = project.build_dir / "screenshots" / f"{screenshot}.png" if screenshot else None
    results = []
    from ntputils.book.cli import KeyCalculator

    keys = KeyCalculator(project)
    with Browser(find_chromium(chromium)) as browser:
        for page in pages:
            rel = page.relative_to(html_dir)
            redirect = META_REFRESH.search(page.read_text(errors="replace")[:4000])
            if redirect:  # e.g. index.html -> book/intro.html: the target is checked as its own page
                target = (page.parent / unquote(urlparse(redirect.group(1)).path)).resolve()
                missing = [] if target.is_file() else [f"redirect target missing: {target}"]
                res = PageResult(page, problems=missing)
                results.append(res)
                out(f"[{'ok  ' if not res.problems else 'FAIL'}] {rel}: redirect to {redirect.group(1)}")
                continue
            nb = project.root / rel.with_suffix(".ipynb")
            report = browser.load(page.as_uri())
            res = evaluate(page, report, nb if nb.exists() else None)
            res.problems += staleness(project, page, keys)
            results.append(res)
            state = "ok  " if not res.problems else "FAIL"
            out(f"[{state}] {rel}: {res.images} image(s), {res.mjx} typeset math"
                + (f"; {'; '.join(res.notes)}" if res.notes else ""))
            for p in res.problems:
                out(f"         - {p}")
            if page == shot_page and shot_path is not None:
                browser.screenshot(shot_path)
                out(f"         screenshot: {shot_path}")
    return results, shot_path


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
