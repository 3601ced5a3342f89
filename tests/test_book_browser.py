"""The browser check (Playwright + Chromium) on hand-written pages: a broken page is flagged with every
problem it has (page lint included: a stray repr, a machine path, uncaptioned and illegible figures, a
clipped equation, a table sticking out of the page, one that scrolls without a cue), a good page passes at
1280 px and at a phone's 390 px (wide things scroll with book/_static/scroll_cue.js's cue, a figure keeps
its legible width), the screenshot is capped, the tallest chapter page is reported, and a missing Chromium
is a clear error."""

from __future__ import annotations

import base64
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from ntputils.book.project import Project
from tests.browser_check import ChromiumError, check_book, find_chromium, run_browser_check, zoom_problems

REPO = Path(__file__).resolve().parents[1]

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
                       "AAAABJRU5ErkJggg==")

GOOD = """<html><body><article><p>fine</p><img src="data:image/png;base64,{b64}"><img src="../pic.png">
<div class="cell_output"><div class="output stream"><pre>rank in [30, 31]</pre></div>
<figure><img src="../pic.png" alt="A one-pixel plot."><figcaption><span class="caption-number">Fig. 1 </span>
<span class="caption-text">A caption.</span></figcaption></figure></div>
<div class="cell_output"><div style="overflow-x: auto">
<table style="width: 3000px"><tr><td>wide</td></tr></table></div>
<div style="overflow-x: auto"><details><summary>folded seeds</summary>
<table style="width: 2800px"><tr><td>folded wide</td></tr></table></details></div>
<figure><div class="ntp-scroll ntp-figure-scroll" style="--ntp-min-width: 1008px">
<img src="../wide.png" alt="A wide plot kept legible."></div><figcaption>Legible.</figcaption></figure></div>
<div class="math"><mjx-container display="true" style="display: block; overflow-x: auto">
<mjx-math style="display: inline-block; width: 2000px">a wide sum</mjx-math></mjx-container></div>
<div style="height: 20000px">a long page</div></article>
<link rel="stylesheet" href="../_static/scroll_cue.css">
<script src="../_static/figure_zoom.js"></script><script src="../_static/scroll_cue.js"></script>
</body></html>"""

BROKEN = """<html><body><article>
<img src="missing.png"><img src="http://example.invalid/x.png">
<div class="cell_output"><pre>Traceback (most recent call last):
  File "x.py", line 1
ValueError: bad</pre></div>
<div class="output error">an error output</div>
<span class="math">x^2</span>
<div class="cell_output"><div class="output text_plain"><pre>('reproduced', 'deviates')</pre></div>
<img src="../pic.png" alt="../_images/4a30a3f8ba3b713246f22629f87f054ea79aad5cb2f22c99315eebf00bda69d7.png">
<figure><img src="../wide.png" alt="A wide plot." style="width: 300px">
<figcaption>Shrunk.</figcaption></figure>
</div>
<p>written to ROOT/results/x.csv</p><table style="width: 3000px"><tr><td>wide</td></tr></table>
<script>fetch("https://example.invalid/data.json").catch(() => null); throw new Error("boom");</script>
</article></body></html>"""


# wide things without the book's scroll_cue.js/css: a display equation cut off by its box, a table that
# scrolls with nothing to show it, an output block likewise
WIDE = """<html><body><article>
<div class="math" style="overflow: hidden"><mjx-container display="true" style="display: block">
<mjx-math style="display: inline-block; width: 2000px">a cut sum</mjx-math></mjx-container></div>
<div class="cell_output"><div class="output text_html" style="overflow-x: auto">
<table style="width: 2500px"><tr><td>no cue</td></tr></table></div>
<pre style="overflow-x: auto">provenance: """ + "x" * 400 + """</pre></div>
</article></body></html>"""


def wide_png(width: int = 2000) -> bytes:
    """A white ``width`` x 1 PNG without a pHYs chunk (so: matplotlib's default 100 dpi)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" + b"\xff" * width)) + chunk(b"IEND", b""))


def have_chromium() -> bool:
    try:
        find_chromium()
    except ChromiumError:
        return False
    return True


needs_chromium = pytest.mark.skipif(not have_chromium(), reason="chromium not installed")


def make_site(root, broken: bool) -> Project:
    html = root / "_build" / "html"
    (html / "book").mkdir(parents=True)
    (html / "pic.png").write_bytes(PNG)
    (html / "wide.png").write_bytes(wide_png())
    (html / "_static").mkdir()
    for name in ("figure_zoom.js", "scroll_cue.js", "scroll_cue.css"):
        shutil.copy(REPO / "book" / "_static" / name, html / "_static")
    (html / "book" / "a01_good.html").write_text(GOOD.format(b64=base64.b64encode(PNG).decode()))
    (html / "index.html").write_text('<meta http-equiv="refresh" content="0; url=book/a01_good.html">')
    if broken:
        # loaded just before the good page
        (html / "book" / "a00_broken.html").write_text(BROKEN.replace("ROOT", str(root)))
        (html / "gone.html").write_text('<meta http-equiv="refresh" content="0; url=book/nowhere.html">')
        (html / "book" / "a02_wide.html").write_text(WIDE)
    return Project(root)


@needs_chromium
def test_broken_page_is_flagged_good_page_passes(tmp_path):
    pytest.importorskip("playwright")
    project = make_site(tmp_path, broken=True)
    lines: list[str] = []
    results, shot = check_book(project, screenshot="a01", out=lines.append)
    by_name = {r.page.name: r for r in results if r.width == 1280}
    assert set(by_name) == {"a01_good.html", "index.html", "a00_broken.html", "gone.html", "a02_wide.html"}
    assert by_name["a01_good.html"].problems == [] and by_name["a01_good.html"].images == 4
    # the phone width: the index's page (the good page) once more; its wide figure, table and equation
    # scroll with a cue, and the figure keeps its 1008 px: 7.0 px labels
    phone = [r for r in results if r.width == 390]
    assert [(r.page.name, r.problems) for r in phone] == [("a01_good.html", [])]
    assert "[ok  ] book/a01_good.html at 390 px: 4 image(s), 1 typeset math" in lines
    assert by_name["index.html"].problems == []
    assert by_name["gone.html"].problems[0].startswith("redirect target missing:")
    problems = by_name["a00_broken.html"].problems
    expected = ["image file missing: missing.png", "image from the network: http://example.invalid/x.png",
                "1 math element(s) not typeset, e.g. 'x^2'", "page has math but MathJax typeset nothing",
                "error shown: output error: an error output",
                "network request: http://example.invalid/x.png", "network request: https://example.invalid/data.json",
                "resource failed to load: net::ERR_FILE_NOT_FOUND (image)",
                "figure 1 does not open at full size on click (book/_static/figure_zoom.js not loaded?)"]
    for problem in expected:
        assert problem in problems, (problem, problems)
    assert any(p.startswith("traceback in output: Traceback (most recent call last)") for p in problems)
    assert any(p.startswith("JavaScript exception: Error: boom") for p in problems)
    lint = [p for p in problems
            if p.startswith(("raw output", "machine path", "uncaptioned", "illegible", "wide"))]
    assert lint == [
        "raw output in cell output 1: a Python tuple repr \"('reproduced', 'deviates')\"",
        f"machine path '{project.root}/results/x.csv' in the page text",
        "uncaptioned figure: figure 1 (pic.png): not in a figure with a caption",
        "illegible figure: figure 2 (wide.png): illegible: shown at 300 of 2000 px, a 10 pt label at 100 dpi "
        "renders 2.1 px (< 7)",
        "wide table 1 ('wide'): 3000 px in a 1264 px box sticks out of the page column (no box of its own "
        "scrolls)"], problems
    wide = by_name["a02_wide.html"].problems
    uncued = "scrolls sideways but nothing shows it (no scroll cue: book/_static/scroll_cue.js not loaded?)"
    assert wide[:2] == [
        "wide equation 1 ('a cut sum'): 2000 px in a 1264 px box is cut off: its box does not scroll",
        f"wide table 1 ('no cue'): 2500 px in a 1264 px box {uncued}"], wide
    assert len(wide) == 3 and wide[2].endswith(uncued)
    assert wide[2].startswith("wide output 1 ('provenance: xxx")
    assert any(line.startswith("[FAIL] book/a00_broken.html: 4 image(s), 0 typeset math") for line in lines)
    assert "tallest chapter page: book/a01_good.html" not in lines  # no chapter: no notebook beside it
    # the screenshot of the 20000 px page is capped at 12000 px (PNG IHDR: width, height)
    assert shot == project.build_dir / "screenshots" / "a01.png"
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert width == 1280 and height == 12000

    assert run_browser_check(project, screenshot="a01") == 1
    (project.html_dir / "book" / "a00_broken.html").unlink()
    (project.html_dir / "gone.html").unlink()
    (project.html_dir / "book" / "a02_wide.html").unlink()
    assert run_browser_check(project, screenshot="a01") == 0


def test_missing_chromium_or_pages_is_a_clear_error(tmp_path, monkeypatch, capsys):
    project = make_site(tmp_path, broken=False)
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert run_browser_check(project, screenshot="a01") == 1
    assert "browser check error: no Chromium found" in capsys.readouterr().out
    assert run_browser_check(project, screenshot="b07") == 1
    assert "no built page for chapter 'b07'" in capsys.readouterr().out


def test_zoom_problems_name_what_the_full_size_view_got_wrong():
    assert zoom_problems(None) == []  # a page without figures
    assert zoom_problems({"opened": True, "natural": 1811, "shown": 1811.0, "closed": True}) == []
    assert zoom_problems({"opened": True, "natural": 1811, "shown": 672.0, "closed": False}) == [
        "figure 1 opens at 672 px, not at its natural 1811 px",
        "figure 1's full-size view does not close with Escape"]
